// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Twin memory: the NIC's on-board memory (RHN_ADMIN_ALLOC_TWIN) handed to
 * processes as ibverbs device memory. Each allocation is whole 4 KiB
 * pages and takes one of the NIC's max_twins handles. One process may
 * hold at most a quarter of both, one user (all its processes together)
 * at most a half, so no user can take it all from the others.
 */
#include <linux/dma-mapping.h>
#include <linux/log2.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "rhinet_obj.h"

#define UVERBS_MODULE_NAME rhinet_ib
#include <rdma/uverbs_named_ioctl.h>

/* Of the NIC's twin bytes and handles: a process 1/4, a user 1/2. */
#define RHINET_TWIN_PROCESS_SHIFT 2
#define RHINET_TWIN_USER_SHIFT 1
/* A DM copy goes through a bounce buffer of at most this many bytes. */
#define RHINET_DM_BOUNCE SZ_64K

/*
 * Host access to twin memory (ibv_memcpy_to_dm / ibv_memcpy_from_dm). No
 * BAR maps the NIC's on-board memory, so the NIC copies: @length bytes
 * of the caller's memory at @uaddr go through a DMA-coherent bounce
 * buffer, one RHN_ADMIN_TWIN_WRITE or _READ per piece. A fatal signal
 * stops a long copy between pieces.
 */
static int rhinet_twin_copy(struct rhinet_ib *ib, struct rhinet_dm *dm,
			    u64 offset, u64 uaddr, u64 length, bool to_dm)
{
	struct device *dev = &ib->rdev->pdev->dev;
	size_t size = min_t(u64, PAGE_ALIGN(length), RHINET_DM_BOUNCE);
	dma_addr_t dma;
	void *buf;
	int ret = 0;

	buf = dma_alloc_coherent(dev, size, &dma, GFP_KERNEL | __GFP_NOWARN);
	if (!buf && size > PAGE_SIZE) {
		size = PAGE_SIZE;
		buf = dma_alloc_coherent(dev, size, &dma, GFP_KERNEL);
	}
	if (!buf)
		return -ENOMEM;
	while (length) {
		u32 n = min_t(u64, length, size);
		void __user *u = u64_to_user_ptr(uaddr);
		struct rhn_admin_cmd cmd = {};

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (to_dm && copy_from_user(buf, u, n)) {
			ret = -EFAULT;
			break;
		}
		cmd.hdr.opcode = to_dm ? RHN_ADMIN_TWIN_WRITE :
					 RHN_ADMIN_TWIN_READ;
		cmd.u.twin_copy.handle = cpu_to_le32(dm->handle);
		cmd.u.twin_copy.length = cpu_to_le32(n);
		cmd.u.twin_copy.offset = cpu_to_le64(offset);
		cmd.u.twin_copy.addr = cpu_to_le64(dma);
		ret = rhinet_ctx_exec(ib, dm->uc->ctx, &cmd, NULL);
		if (ret)
			break;
		if (!to_dm && copy_to_user(u, buf, n)) {
			ret = -EFAULT;
			break;
		}
		offset += n;
		uaddr += n;
		length -= n;
	}
	dma_free_coherent(dev, size, buf, dma);
	return ret;
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_DM_COPY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm =
		uverbs_attr_get_obj(attrs, RHINET_IB_ATTR_DM_COPY_HANDLE);
	struct rhinet_dm *dm = to_rdm(ibdm);
	u64 offset, addr, length;
	u32 direction;
	int ret;

	ret = uverbs_copy_from(&offset, attrs, RHINET_IB_ATTR_DM_COPY_OFFSET);
	if (!ret)
		ret = uverbs_copy_from(&addr, attrs,
				       RHINET_IB_ATTR_DM_COPY_ADDR);
	if (!ret)
		ret = uverbs_copy_from(&length, attrs,
				       RHINET_IB_ATTR_DM_COPY_LENGTH);
	if (!ret)
		ret = uverbs_get_const(&direction, attrs,
				       RHINET_IB_ATTR_DM_COPY_DIRECTION);
	if (ret)
		return ret;
	if (direction != RHINET_DM_COPY_TO_DM &&
	    direction != RHINET_DM_COPY_FROM_DM)
		return -EINVAL;
	/* Within the DM as it was asked for (ib_core keeps that length). */
	if (offset > ibdm->length || length > ibdm->length - offset) {
		ibdev_dbg(ibdm->device, "DM copy %llu at %llu of %u B refused\n",
			  length, offset, ibdm->length);
		return -EINVAL;
	}
	if (!length)
		return 0;
	return rhinet_twin_copy(to_rib(ibdm->device), dm, offset, addr, length,
				direction == RHINET_DM_COPY_TO_DM);
}

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_DM_COPY,
			    UVERBS_ATTR_IDR(RHINET_IB_ATTR_DM_COPY_HANDLE,
					    UVERBS_OBJECT_DM,
					    UVERBS_ACCESS_READ, UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_DM_COPY_OFFSET,
					       UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_DM_COPY_ADDR,
					       UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
			    UVERBS_ATTR_PTR_IN(RHINET_IB_ATTR_DM_COPY_LENGTH,
					       UVERBS_ATTR_TYPE(u64), UA_MANDATORY),
			    UVERBS_ATTR_CONST_IN(RHINET_IB_ATTR_DM_COPY_DIRECTION,
						 enum rhinet_dm_copy_direction,
						 UA_MANDATORY));

/*
 * ibv_alloc_dm's driver data: the NIC's handle goes back through
 * UVERBS_ATTR_UHW_OUT (struct rhinet_alloc_dm_resp), which the core's
 * DM_ALLOC method does not declare by itself. The copy method is the
 * driver's own on the core's DM object.
 */
ADD_UVERBS_ATTRIBUTES_SIMPLE(rhinet_ib_dm, UVERBS_OBJECT_DM,
			     UVERBS_METHOD_DM_ALLOC, UVERBS_ATTR_UHW());
ADD_UVERBS_METHODS(rhinet_ib_dm_methods, UVERBS_OBJECT_DM,
		   &UVERBS_METHOD(RHINET_IB_METHOD_DM_COPY));

const struct uapi_definition rhinet_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &rhinet_ib_dm),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &rhinet_ib_dm_methods),
	UAPI_DEF_CHAIN(rhinet_mcast_switch_defs),
	UAPI_DEF_CHAIN(rhinet_groups_defs),
	UAPI_DEF_CHAIN(rhinet_db_export_defs),
	UAPI_DEF_CHAIN(rhinet_trigger_defs),
	{},
};

/* total >> shift, in whole units, at least one unit of a nonzero total. */
static u64 rhinet_twin_part(u64 total, unsigned int shift, u64 unit)
{
	return total ? max(round_down(total >> shift, unit), unit) : 0;
}

/* From QUERY_DEVICE: what there is, and what a process and a user get. */
void rhinet_twin_limits(struct rhinet_ib *ib)
{
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	u64 bytes = round_down(le64_to_cpu(hw->twin_bytes), RHN_TWIN_PAGE);
	u32 count = le32_to_cpu(hw->max_twins);

	if (!count)
		bytes = 0;
	ib->twin_total = bytes;
	ib->twin_share.bytes =
		rhinet_twin_part(bytes, RHINET_TWIN_PROCESS_SHIFT, RHN_TWIN_PAGE);
	ib->twin_share.count =
		bytes ? rhinet_twin_part(count, RHINET_TWIN_PROCESS_SHIFT, 1) : 0;
	ib->twin_user_share.bytes =
		rhinet_twin_part(bytes, RHINET_TWIN_USER_SHIFT, RHN_TWIN_PAGE);
	ib->twin_user_share.count =
		bytes ? rhinet_twin_part(count, RHINET_TWIN_USER_SHIFT, 1) : 0;
}

static bool rhinet_twin_fits(const struct rhinet_twin_use *use, u64 bytes,
			     const struct rhinet_twin_use *limit)
{
	return use->bytes + bytes <= limit->bytes && use->count < limit->count;
}

/* Counts @bytes (one allocation) to the process and its user, or -EDQUOT. */
static int rhinet_twin_charge(struct rhinet_ib *ib, struct rhinet_ucontext *uc,
			      u64 bytes)
{
	struct rhinet_twin_use *user;
	int ret = 0;

	mutex_lock(&ib->twin_lock);
	if (!rhinet_twin_fits(&uc->twin, bytes, &ib->twin_share)) {
		ret = -EDQUOT;
		goto out;
	}
	user = xa_load(&ib->user_twins, uc->uid);
	if (!user) {
		user = kzalloc(sizeof(*user), GFP_KERNEL);
		if (!user) {
			ret = -ENOMEM;
			goto out;
		}
		ret = xa_err(xa_store(&ib->user_twins, uc->uid, user,
				      GFP_KERNEL));
		if (ret) {
			kfree(user);
			goto out;
		}
	}
	if (!rhinet_twin_fits(user, bytes, &ib->twin_user_share)) {
		ret = -EDQUOT;
		if (!user->count) {
			xa_erase(&ib->user_twins, uc->uid);
			kfree(user);
		}
		goto out;
	}
	user->bytes += bytes;
	user->count++;
	uc->twin.bytes += bytes;
	uc->twin.count++;
	atomic64_add(bytes, &ib->twin_bytes);
out:
	if (ret == -EDQUOT)
		ibdev_dbg(&ib->ibdev,
			  "twin %llu B: context %u (%llu B in %u) or user %u over its share\n",
			  bytes, uc->ctx, uc->twin.bytes, uc->twin.count,
			  uc->uid);
	mutex_unlock(&ib->twin_lock);
	return ret;
}

static void rhinet_twin_uncharge(struct rhinet_ib *ib,
				 struct rhinet_ucontext *uc, u64 bytes)
{
	struct rhinet_twin_use *user;

	mutex_lock(&ib->twin_lock);
	user = xa_load(&ib->user_twins, uc->uid);
	if (!WARN_ON(!user || user->bytes < bytes || !user->count)) {
		user->bytes -= bytes;
		if (!--user->count) {
			xa_erase(&ib->user_twins, uc->uid);
			kfree(user);
		}
	}
	uc->twin.bytes -= bytes;
	uc->twin.count--;
	atomic64_sub(bytes, &ib->twin_bytes);
	mutex_unlock(&ib->twin_lock);
}

struct ib_dm *rhinet_alloc_dm(struct ib_device *ibdev,
			      struct ib_ucontext *ibuc,
			      struct ib_dm_alloc_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct rhinet_ib *ib = to_rib(ibdev);
	struct rhinet_ucontext *uc = to_ruc(ibuc);
	struct ib_udata *udata = &attrs->driver_udata;
	struct rhinet_alloc_dm_resp resp = {};
	struct rhn_admin_cmd cmd = {};
	struct rhinet_dm *dm;
	u64 bytes;
	int ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ERR_PTR(ret);
	if (!ib->twin_total)
		return ERR_PTR(-EOPNOTSUPP);
	/* A twin starts on a page of the NIC's memory; no more than that. */
	if (!attr->length || attr->alignment > ilog2(RHN_TWIN_PAGE)) {
		ibdev_dbg(ibdev, "twin %llu B aligned 2^%u refused\n",
			  attr->length, attr->alignment);
		return ERR_PTR(-EINVAL);
	}
	if (attr->length > ib->twin_share.bytes) {
		ibdev_dbg(ibdev, "twin %llu B beyond a process's %llu B\n",
			  attr->length, ib->twin_share.bytes);
		return ERR_PTR(-EDQUOT);
	}
	bytes = round_up(attr->length, RHN_TWIN_PAGE);
	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	ret = rhinet_twin_charge(ib, uc, bytes);
	if (ret)
		goto err_free;
	cmd.hdr.opcode = RHN_ADMIN_ALLOC_TWIN;
	cmd.u.alloc_twin.length = cpu_to_le64(bytes);
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &dm->handle);
	if (ret) {
		/* NO_RESOURCES: no room (or no handle) left on the NIC. */
		if (ret == -ENOSPC)
			ret = -ENOMEM;
		ibdev_dbg(ibdev, "twin %llu B: %d\n", bytes, ret);
		goto err_uncharge;
	}
	dm->uc = uc;
	dm->bytes = bytes;
	resp.comp_mask = RHINET_ALLOC_DM_RESP_COPY;
	resp.twin_handle = dm->handle;
	if (udata->outlen) {
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (ret)
			goto err_twin;
	}
	return &dm->ibdm;

err_twin:
	rhinet_destroy_object(ib, uc->ctx, RHN_ADMIN_FREE_TWIN, dm->handle);
err_uncharge:
	rhinet_twin_uncharge(ib, uc, bytes);
err_free:
	kfree(dm);
	return ERR_PTR(ret);
}

/* Also when the process dies: ib_core frees its DMs before its context.
 * On a dead NIC the twin went with the NIC: only the counts are undone.
 */
int rhinet_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct rhinet_dm *dm = to_rdm(ibdm);
	struct rhinet_ib *ib = to_rib(ibdm->device);
	int ret;

	ret = rhinet_destroy_object(ib, dm->uc->ctx, RHN_ADMIN_FREE_TWIN,
				    dm->handle);
	if (ret)
		return ret;
	rhinet_twin_uncharge(ib, dm->uc, dm->bytes);
	kfree(dm);
	return 0;
}
