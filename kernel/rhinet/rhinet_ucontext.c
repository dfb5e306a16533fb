// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User contexts: each process its own NIC context and doorbell page,
 * mapped through rdma_user_mmap_entry; the pages one user may hold are
 * limited. A process joins its process groups here, naming each group's
 * token: only groups the administrator granted on this node to its user
 * or group (rhinet_groups.c).
 */
#include <linux/cred.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_obj.h"

/* ---- user contexts and their doorbell page ------------------------------- */

static_assert(offsetof(struct rhinet_alloc_ucontext_resp, max_areas) ==
	      RHINET_ALLOC_UCONTEXT_RESP_V0_LEN);
static_assert(RHINET_MAX_GROUPS == RHN_MAX_GROUPS_PER_CONTEXT);
static_assert(sizeof_field(struct rhn_admin_set_groups, group) ==
	      RHINET_MAX_GROUPS * sizeof(__le16));

static unsigned int max_contexts_per_user = 64;
module_param(max_contexts_per_user, uint, 0644);
MODULE_PARM_DESC(max_contexts_per_user,
		 "RDMA contexts (doorbell pages) one user may hold; 0: no limit");

/*
 * A user's entry in user_contexts: how many contexts it holds and its NIC
 * account (RHN_ADMIN_CREATE_CONTEXT), which every context of the user
 * shares: the NIC limits the account to its share of each table users
 * fill, as it limits each context. The account is taken with the user's
 * first context and freed with its last.
 */
#define RHINET_ACCOUNT_BITS order_base_2(RHN_MAX_ACCOUNTS)

/*
 * Charges a context to @uid and sets @account, or -EDQUOT when the user
 * holds the most, -EUSERS when every account is taken.
 */
static int rhinet_user_charge(struct rhinet_ib *ib, u32 uid, u32 *account)
{
	unsigned int limit = READ_ONCE(max_contexts_per_user);
	unsigned long v, n;
	u32 acct;
	int ret;

	xa_lock(&ib->user_contexts);
	v = xa_to_value(xa_load(&ib->user_contexts, uid) ?: xa_mk_value(0));
	n = v >> RHINET_ACCOUNT_BITS;
	acct = v & (BIT(RHINET_ACCOUNT_BITS) - 1);
	if (limit && n >= limit) {
		ret = -EDQUOT;
		goto out;
	}
	if (!n) {
		acct = find_next_zero_bit(ib->accounts, RHN_MAX_ACCOUNTS, 1);
		if (acct >= RHN_MAX_ACCOUNTS) {
			ret = -EUSERS;
			goto out;
		}
	}
	ret = xa_err(__xa_store(&ib->user_contexts, uid,
				xa_mk_value((n + 1) << RHINET_ACCOUNT_BITS |
					    acct),
				GFP_ATOMIC));
	if (!ret) {
		__set_bit(acct, ib->accounts);
		*account = acct;
	}
out:
	xa_unlock(&ib->user_contexts);
	return ret;
}

static void rhinet_user_uncharge(struct rhinet_ib *ib, u32 uid)
{
	unsigned long v, n;

	xa_lock(&ib->user_contexts);
	v = xa_to_value(xa_load(&ib->user_contexts, uid) ?: xa_mk_value(0));
	n = v >> RHINET_ACCOUNT_BITS;
	if (n > 1) {
		__xa_store(&ib->user_contexts, uid,
			   xa_mk_value(v - BIT(RHINET_ACCOUNT_BITS)),
			   GFP_ATOMIC);
	} else {
		__xa_erase(&ib->user_contexts, uid);
		if (n)
			__clear_bit(v & (BIT(RHINET_ACCOUNT_BITS) - 1),
				    ib->accounts);
	}
	xa_unlock(&ib->user_contexts);
}

/* ---- process groups ------------------------------------------------------ */

/* Leaves the first @n of @groups; the caller holds groups_lock. */
static void rhinet_groups_leave_locked(struct rhinet_ib *ib,
				       const u16 *groups, u32 n)
{
	struct rhinet_group *g;
	u32 i;

	lockdep_assert_held(&ib->groups_lock);
	for (i = 0; i < n; i++) {
		g = xa_load(&ib->groups, groups[i]);
		if (WARN_ON(!g))
			continue;
		/* A revoked or expired grant goes with its last member. */
		if (!--g->members && !rhinet_group_live(g))
			rhinet_group_drop_locked(ib, groups[i], g);
	}
}

static void rhinet_groups_leave(struct rhinet_ib *ib, const u16 *groups,
				u32 n)
{
	if (!n)
		return;
	mutex_lock(&ib->groups_lock);
	rhinet_groups_leave_locked(ib, groups, n);
	mutex_unlock(&ib->groups_lock);
}

/*
 * Makes the process a member of its groups. Only a group granted on this
 * node (and neither revoked nor expired), named with its token, by a
 * process of the uid or gid its grant names, is joined; nobody creates a
 * group by naming it. The groups refused are left out and marked in
 * @refused (the provider then closes the context and reports EPERM), so
 * that the command itself succeeds (see rhinet-abi.h).
 */
static void rhinet_groups_join(struct rhinet_ib *ib,
			       const struct rhinet_alloc_ucontext_cmd *req,
			       u16 *groups, u32 *joined, u32 *refused)
{
	struct rhinet_group *g;
	u32 i;

	*joined = 0;
	*refused = 0;
	mutex_lock(&ib->groups_lock);
	for (i = 0; i < req->num_groups; i++) {
		u16 id = req->groups[i].group;

		g = xa_load(&ib->groups, id);
		if (!rhinet_group_may_join(ib, id, g, req->groups[i].token)) {
			*refused |= BIT(i);
			continue;
		}
		g->members++;
		groups[(*joined)++] = id;
	}
	mutex_unlock(&ib->groups_lock);
}

/*
 * The request: none or all zero (an older provider, or one asking for
 * nothing, whatever its length) means no groups; otherwise struct
 * rhinet_alloc_ucontext_cmd under the rules of every request, and the
 * groups must be well formed (-EINVAL).
 */
static int rhinet_ucontext_req(struct rhinet_ib *ib, struct ib_udata *udata,
			       struct rhinet_alloc_ucontext_cmd *req)
{
	const struct rhinet_group_cred *c;
	u32 i, j;
	int ret;

	ret = rhinet_udata_in_optional(udata, req, sizeof(*req));
	if (ret <= 0)
		return ret;
	if (req->comp_mask & ~RHINET_UCONTEXT_CMD_GROUPS) {
		ibdev_dbg(&ib->ibdev, "ucontext comp_mask %#x\n",
			  req->comp_mask);
		return -EOPNOTSUPP;
	}
	/* Not all zero: group data without the bit, a request we do not
	 * know.
	 */
	if (!(req->comp_mask & RHINET_UCONTEXT_CMD_GROUPS))
		return -EOPNOTSUPP;
	if (req->num_groups > RHINET_MAX_GROUPS)
		goto bad;
	for (i = 0; i < RHINET_MAX_GROUPS; i++) {
		c = &req->groups[i];
		if (i >= req->num_groups) {
			if (memchr_inv(c, 0, sizeof(*c)))
				goto bad;
			continue;
		}
		if (!c->group || memchr_inv(c->reserved, 0, sizeof(c->reserved)))
			goto bad;
		for (j = 0; j < i; j++)
			if (req->groups[j].group == c->group)
				goto bad;
	}
	/* Joined groups must be reported (RHINET_UCONTEXT_RESP_GROUPS). */
	if (req->num_groups &&
	    udata->outlen < sizeof(struct rhinet_alloc_ucontext_resp))
		return -EINVAL;
	return 0;

bad:
	ibdev_dbg(&ib->ibdev, "ucontext: %u malformed groups\n",
		  req->num_groups);
	return -EINVAL;
}

/* Tells the NIC the process's groups; its areas may live in them. */
static int rhinet_set_groups(struct rhinet_ib *ib, u32 ctx, const u16 *groups,
			     u32 n)
{
	struct rhn_admin_cmd cmd = {};
	u32 i;

	cmd.hdr.opcode = RHN_ADMIN_SET_GROUPS;
	cmd.u.set_groups.count = cpu_to_le32(n);
	for (i = 0; i < n; i++)
		cmd.u.set_groups.group[i] = cpu_to_le16(groups[i]);
	return rhinet_ctx_exec(ib, ctx, &cmd, NULL);
}

int rhinet_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibuc->device);
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	struct rhinet_ucontext *uc = to_ruc(ibuc);
	struct rhinet_alloc_ucontext_resp resp = {};
	struct rhinet_alloc_ucontext_cmd req;
	struct rhn_admin_cmd cmd = {};
	u32 uid = from_kuid(&init_user_ns, current_uid());
	struct rhinet_db_entry *db;
	size_t resp_len;
	u32 refused, account = 0;
	int page, ret;

	INIT_LIST_HEAD(&uc->db_exports);
	ret = rhinet_ucontext_req(ib, udata, &req);
	if (ret)
		return ret;
	ret = rhinet_user_charge(ib, uid, &account);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "user %u: %s\n", uid,
			  ret == -EUSERS ? "every account taken" :
					   "holds max_contexts_per_user");
		return ret;
	}
	rhinet_groups_join(ib, &req, uc->groups, &uc->num_groups, &refused);
	page = ida_alloc_range(&ib->contexts, 1, ib->db_pages - 1, GFP_KERNEL);
	if (page < 0) {
		ret = page; /* -ENOSPC: every doorbell page is taken */
		goto err_groups;
	}
	cmd.hdr.opcode = RHN_ADMIN_CREATE_CONTEXT;
	cmd.u.create_context.account = cpu_to_le32(account);
	ret = rhinet_ctx_exec(ib, page, &cmd, NULL);
	if (ret)
		goto err_page;
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_CREATE_PD;
	ret = rhinet_ctx_exec(ib, page, &cmd, &uc->queue_pdn);
	if (ret)
		goto err_context;
	uc->ctx = page;
	uc->uid = uid;
	mutex_init(&uc->lock);
	if (uc->num_groups) {
		ret = rhinet_set_groups(ib, page, uc->groups, uc->num_groups);
		if (ret)
			goto err_pd;
	}

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
	if (ib->od_ring)
		resp.comp_mask |= RHINET_UCONTEXT_RESP_PIN_ON_DEMAND;
	if (resp.caps & RHN_CAP_RQ_RECORD_READ)
		resp.comp_mask |= RHINET_UCONTEXT_RESP_RQ_DOORBELL_ON_REQUEST;
	if (resp.caps & RHN_CAP_SQ_DOORBELL_ON_REQUEST)
		resp.comp_mask |= RHINET_UCONTEXT_RESP_SQ_DOORBELL_ON_REQUEST;
	if ((resp.caps & RHN_CAP_SQ_DOORBELL_ON_REQUEST) &&
	    (resp.caps & RHN_CAP_SQ_EVENT_INDEX))
		resp.comp_mask |= RHINET_UCONTEXT_RESP_SQ_EVENT_INDEX;
	if (resp.caps & RHN_CAP_CQE_RUNS)
		resp.comp_mask |= RHINET_UCONTEXT_RESP_CQE_RUNS;
	/* Older providers' responses end before max_areas or twin_bytes. */
	if (!udata || udata->outlen >= sizeof(resp)) {
		resp_len = sizeof(resp);
		resp.comp_mask |= RHINET_UCONTEXT_RESP_GROUPS;
		resp.twin_bytes = ib->twin_total;
		resp.twin_share = ib->twin_share.bytes;
		resp.groups_refused = refused;
	} else if (udata->outlen >= offsetofend(typeof(resp), reserved)) {
		resp_len = offsetofend(typeof(resp), reserved);
	} else {
		resp_len = RHINET_ALLOC_UCONTEXT_RESP_V0_LEN;
	}
	ret = rhinet_udata_out(udata, &resp, resp_len);
	if (ret)
		goto err_pd;
	return 0;

err_pd:
	rhinet_destroy_object(ib, page, RHN_ADMIN_DESTROY_PD, uc->queue_pdn);
err_context:
	/* Also takes the context out of its groups on the NIC. */
	rhinet_destroy_object(ib, page, RHN_ADMIN_DESTROY_CONTEXT, 0);
err_page:
	if (uc->db_entry) {
		rdma_user_mmap_entry_remove(uc->db_entry);
		rhinet_groups_leave(ib, uc->groups, uc->num_groups);
		return ret;
	}
	ida_free(&ib->contexts, page);
err_groups:
	rhinet_groups_leave(ib, uc->groups, uc->num_groups);
	rhinet_user_uncharge(ib, uid);
	return ret;
}

/* ib_core has destroyed every object of the context (its twin memory
 * too) and its mappings are gone (closing the file needs that), or were
 * zapped on device removal.
 */
void rhinet_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct rhinet_ib *ib = to_rib(ibuc->device);
	struct rhinet_ucontext *uc = to_ruc(ibuc);

	WARN_ON(uc->twin.bytes || uc->twin.count);
	WARN_ON(atomic64_read(&uc->od_pinned)); /* its MRs are gone */
	/* Before the page can be another context's: no peer reaches it. */
	rhinet_db_exports_revoke(uc);
	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_DESTROY_PD, uc->queue_pdn);
	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_DESTROY_CONTEXT, 0);
	/* The NIC context is gone (or the NIC is): the groups may go. */
	rhinet_groups_leave(ib, uc->groups, uc->num_groups);
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
