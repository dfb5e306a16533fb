// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User contexts: each process its own NIC context and doorbell page,
 * mapped through rdma_user_mmap_entry; the pages one user may hold are
 * limited.
 */
#include <linux/cred.h>
#include <linux/module.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_ib.h"

/* ---- user contexts and their doorbell page ------------------------------- */

static_assert(offsetof(struct rhinet_alloc_ucontext_resp, max_areas) ==
	      RHINET_ALLOC_UCONTEXT_RESP_V0_LEN);

static unsigned int max_contexts_per_user = 64;
module_param(max_contexts_per_user, uint, 0644);
MODULE_PARM_DESC(max_contexts_per_user,
		 "RDMA contexts (doorbell pages) one user may hold; 0: no limit");

/* Charges a context to @uid, or -EDQUOT when the user holds the most. */
static int rhinet_user_charge(struct rhinet_ib *ib, u32 uid)
{
	unsigned int limit = READ_ONCE(max_contexts_per_user);
	unsigned long n;
	int ret;

	xa_lock(&ib->user_contexts);
	n = xa_to_value(xa_load(&ib->user_contexts, uid) ?: xa_mk_value(0));
	if (limit && n >= limit)
		ret = -EDQUOT;
	else
		ret = xa_err(__xa_store(&ib->user_contexts, uid,
					xa_mk_value(n + 1), GFP_ATOMIC));
	xa_unlock(&ib->user_contexts);
	return ret;
}

static void rhinet_user_uncharge(struct rhinet_ib *ib, u32 uid)
{
	unsigned long n;

	xa_lock(&ib->user_contexts);
	n = xa_to_value(xa_load(&ib->user_contexts, uid) ?: xa_mk_value(0));
	if (n > 1)
		__xa_store(&ib->user_contexts, uid, xa_mk_value(n - 1),
			   GFP_ATOMIC);
	else
		__xa_erase(&ib->user_contexts, uid);
	xa_unlock(&ib->user_contexts);
}

int rhinet_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibuc->device);
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	struct rhinet_ucontext *uc = to_ruc(ibuc);
	struct rhinet_alloc_ucontext_resp resp = {};
	struct rhn_admin_cmd cmd = {};
	u32 uid = from_kuid(&init_user_ns, current_uid());
	struct rhinet_db_entry *db;
	int page, ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	ret = rhinet_user_charge(ib, uid);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "user %u holds %u contexts\n", uid,
			  max_contexts_per_user);
		return ret;
	}
	page = ida_alloc_range(&ib->contexts, 1, ib->db_pages - 1, GFP_KERNEL);
	if (page < 0) {
		rhinet_user_uncharge(ib, uid);
		return page; /* -ENOSPC: every doorbell page is taken */
	}
	cmd.hdr.opcode = RHN_ADMIN_CREATE_CONTEXT;
	ret = rhinet_ctx_exec(ib, page, &cmd, NULL);
	if (ret)
		goto err_page;
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_CREATE_PD;
	ret = rhinet_ctx_exec(ib, page, &cmd, &uc->queue_pdn);
	if (ret)
		goto err_context;
	uc->ctx = page;
	mutex_init(&uc->lock);

	db = kzalloc(sizeof(*db), GFP_KERNEL);
	if (!db) {
		ret = -ENOMEM;
		goto err_pd;
	}
	db->ib = ib;
	db->page = page;
	db->uid = uid;
	ret = rdma_user_mmap_entry_insert(ibuc, &db->rdma, PAGE_SIZE);
	if (ret) {
		kfree(db);
		goto err_pd;
	}
	/* From here on the page is returned by rhinet_mmap_free(). */
	uc->db_entry = &db->rdma;

	resp.db_page = page;
	resp.db_mmap_offset = rdma_user_mmap_get_offset(uc->db_entry);
	resp.db_page_size = RHN_DB_PAGE_SIZE;
	resp.caps = rhinet_read32(ib->rdev, RHN_REG_CAPS);
	resp.node_id = ib->rdev->node_id;
	resp.max_inline = le32_to_cpu(hw->max_inline);
	resp.max_send_sge = le32_to_cpu(hw->max_send_sges);
	resp.max_recv_sge = le32_to_cpu(hw->max_recv_sges);
	resp.max_wq_log_depth = le32_to_cpu(hw->max_wq_log_depth);
	resp.max_cq_log_depth = le32_to_cpu(hw->max_cq_log_depth);
	resp.max_areas = ib->max_areas;
	resp.comp_mask = RHINET_UCONTEXT_RESP_AREAS;
	/* An older provider's response ends before max_areas. */
	ret = rhinet_udata_out(udata, &resp,
			       udata && udata->outlen < sizeof(resp) ?
				       RHINET_ALLOC_UCONTEXT_RESP_V0_LEN :
				       sizeof(resp));
	if (ret)
		goto err_pd;
	return 0;

err_pd:
	rhinet_destroy_object(ib, page, RHN_ADMIN_DESTROY_PD, uc->queue_pdn);
err_context:
	rhinet_destroy_object(ib, page, RHN_ADMIN_DESTROY_CONTEXT, 0);
err_page:
	if (uc->db_entry) {
		rdma_user_mmap_entry_remove(uc->db_entry);
	} else {
		ida_free(&ib->contexts, page);
		rhinet_user_uncharge(ib, uid);
	}
	return ret;
}

/* ib_core has destroyed every object of the context and its mappings are
 * gone (closing the file needs that), or were zapped on device removal.
 */
void rhinet_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct rhinet_ib *ib = to_rib(ibuc->device);
	struct rhinet_ucontext *uc = to_ruc(ibuc);

	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_DESTROY_PD, uc->queue_pdn);
	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_DESTROY_CONTEXT, 0);
	rdma_user_mmap_entry_remove(uc->db_entry);
}

void rhinet_disassociate_ucontext(struct ib_ucontext *ibuc)
{
	/* ib_core zaps the doorbell mapping; nothing else is mapped. */
}

int rhinet_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rhinet_ib *ib = to_rib(ibuc->device);
	struct rdma_user_mmap_entry *entry;
	struct rhinet_db_entry *db;
	int ret;

	/* Also refuses a length other than the page's. */
	entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!entry)
		return -EINVAL;
	db = container_of(entry, struct rhinet_db_entry, rdma);
	if (vma->vm_flags & VM_EXEC) {
		ret = -EPERM;
	} else {
		vma->vm_flags &= ~VM_MAYEXEC;
		ret = rdma_user_mmap_io(ibuc, vma,
					PHYS_PFN(ib->db_bar +
						 (u64)db->page * RHN_DB_PAGE_SIZE),
					PAGE_SIZE,
					pgprot_device(vma->vm_page_prot),
					entry);
	}
	rdma_user_mmap_entry_put(entry);
	return ret;
}

/* The last mapping of a doorbell page is gone: another process may get it. */
void rhinet_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct rhinet_db_entry *db =
		container_of(entry, struct rhinet_db_entry, rdma);

	ida_free(&db->ib->contexts, db->page);
	rhinet_user_uncharge(db->ib, db->uid);
	kfree(db);
}
