// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions and memory windows: user MRs over pinned memory
 * (rhinet_mem.c), over a dma-buf another driver exports, or on demand
 * (rhinet_pindown.c), communication areas,
 * rereg, MRs over twin memory, and the kernel's fast-registration MRs.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_obj.h"

#define RHINET_MR_ACCESS                                                   \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
	 IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND)

/* Kernel consumers would need a physical-address MR; none are served. */
struct ib_mr *rhinet_get_dma_mr(struct ib_pd *ibpd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

/*
 * The MR's optional area request: none (no data, or all zero), or struct
 * rhinet_reg_mr_cmd.
 */
static int rhinet_reg_mr_req(struct rhinet_ib *ib, struct ib_udata *udata,
			     struct rhinet_reg_mr_cmd *req)
{
	int ret;

	ret = rhinet_udata_in_optional(udata, req, sizeof(*req));
	if (ret <= 0)
		return ret;
	if (req->comp_mask & ~(RHINET_REG_MR_AREA | RHINET_REG_MR_ON_DEMAND) ||
	    (!(req->comp_mask & RHINET_REG_MR_AREA) && req->area_id)) {
		ibdev_dbg(&ib->ibdev, "reg MR comp_mask %#x area %u refused\n",
			  req->comp_mask, req->area_id);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * Makes the whole MR the process's communication area @area_id. The NIC
 * refuses an ID it has (-EEXIST), a full table (-ENOSPC), and an ID in a
 * group (RHN_AREA_KEY_GROUP) the process is not a member of (-EPERM).
 */
static int rhinet_area_register(struct rhinet_ib *ib, struct rhinet_mr *mr,
				u32 area_id)
{
	struct rhn_admin_cmd cmd = {};
	int ret;

	if (atomic_inc_return(&ib->num_areas) > ib->max_areas) {
		ret = -ENOSPC;
		goto err;
	}
	cmd.hdr.opcode = RHN_ADMIN_REGISTER_AREA;
	cmd.u.register_area.area_id = cpu_to_le32(area_id);
	cmd.u.register_area.key = cpu_to_le32(mr->mem.key);
	cmd.u.register_area.iova = cpu_to_le64(mr->ibmr.iova);
	cmd.u.register_area.length = cpu_to_le64(mr->ibmr.length);
	ret = rhinet_ctx_exec(ib, mr->mem.ctx, &cmd, NULL);
	if (ret)
		goto err;
	mr->has_area = true;
	mr->area_id = area_id;
	return 0;

err:
	atomic_dec(&ib->num_areas);
	ibdev_dbg(&ib->ibdev, "area %u: %d\n", area_id, ret);
	return ret;
}

/* A new MR within the device's count, or an ERR_PTR. */
static struct rhinet_mr *rhinet_mr_new(struct rhinet_ib *ib)
{
	struct rhinet_mr *mr;

	if (atomic_inc_return(&ib->num_mrs) > ib->max_mrs) {
		atomic_dec(&ib->num_mrs);
		return ERR_PTR(-ENOSPC);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&ib->num_mrs);
		return ERR_PTR(-ENOMEM);
	}
	return mr;
}

/* Frees what rhinet_mr_new() gave. */
static void rhinet_mr_free(struct rhinet_ib *ib, struct rhinet_mr *mr)
{
	kfree(mr);
	atomic_dec(&ib->num_mrs);
}

/* An on-demand MR's pages go with it (rhinet_pindown.c). */
static int rhinet_mr_release(struct rhinet_ib *ib, struct rhinet_mr *mr)
{
	return mr->od ? rhinet_od_dereg(ib, mr) :
			rhinet_mem_release(ib, &mr->mem);
}

/*
 * A user MR over the process's memory at @start, or with @fd >= 0 over
 * the dma-buf @fd from byte @start on; both are translated alike.
 */
static struct ib_mr *rhinet_reg_mr(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 iova, int fd, int access,
				   const struct rhinet_reg_mr_cmd *req,
				   struct rhinet_ucontext *uc)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_pd *pd = to_rpd(ibpd);
	struct rhinet_mr *mr;
	int ret;

	/* ibv_reg_mr(IBV_ACCESS_ON_DEMAND): ib_core lets it through only
	 * while query_device says IBK_ON_DEMAND_PAGING; it is the same MR as
	 * the driver request's RHINET_REG_MR_ON_DEMAND.
	 */
	bool on_demand = access & IB_ACCESS_ON_DEMAND ||
			 req->comp_mask & RHINET_REG_MR_ON_DEMAND;

	if (access &
	    ~(RHINET_MR_ACCESS | IB_ACCESS_ON_DEMAND | IB_ACCESS_OPTIONAL)) {
		ibdev_dbg(&ib->ibdev, "MR access %#x not supported\n", access);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (fd >= 0 && on_demand) {
		ibdev_dbg(&ib->ibdev, "dma-buf MR on demand refused\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	mr = rhinet_mr_new(ib);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	if (fd >= 0)
		ret = rhinet_mem_pin_dmabuf(ib, &mr->mem, start, length, iova,
					    fd, access, pd->ctx, pd->pdn);
	else if (on_demand)
		ret = rhinet_od_reg(ib, mr, uc, start, length, iova, access,
				    pd->pdn);
	else
		ret = rhinet_mem_pin(ib, &mr->mem, start, length, iova, access,
				     pd->ctx, pd->pdn);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "MR %#llx+%llu (dma-buf fd %d): %d\n",
			  start, length, fd, ret);
		goto err_free;
	}
	mr->access = access;
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	mr->ibmr.length = length;
	mr->ibmr.iova = iova;
	mr->ibmr.page_size = PAGE_SIZE;
	if (req->comp_mask & RHINET_REG_MR_AREA) {
		ret = rhinet_area_register(ib, mr, req->area_id);
		if (ret)
			goto err_release;
	}
	return &mr->ibmr;

err_release:
	rhinet_mr_release(ib, mr);
err_free:
	rhinet_mr_free(ib, mr);
	return ERR_PTR(ret);
}

/* The driver request and response of both kinds of user MR. */
static struct ib_mr *rhinet_reg_user_mr_fd(struct ib_pd *ibpd, u64 start,
					   u64 length, u64 iova, int fd,
					   int access, struct ib_udata *udata)
{
	struct rhinet_reg_mr_cmd req;
	int ret;

	struct rhinet_reg_mr_resp resp = {};
	struct ib_mr *ibmr;

	ret = rhinet_reg_mr_req(to_rib(ibpd->device), udata, &req);
	if (ret)
		return ERR_PTR(ret);
	ibmr = rhinet_reg_mr(ibpd, start, length, iova, fd, access, &req,
			     rhinet_uctx(udata));
	if (IS_ERR(ibmr) || !udata || udata->outlen < sizeof(resp))
		return ibmr;
	/* The caller asked how its region was translated. */
	resp.page_shift =
		container_of(ibmr, struct rhinet_mr, ibmr)->mem.page_shift;
	ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (ret) {
		rhinet_dereg_mr(ibmr, udata);
		return ERR_PTR(ret);
	}
	return ibmr;
}

struct ib_mr *rhinet_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, struct ib_udata *udata)
{
	return rhinet_reg_user_mr_fd(ibpd, start, length, iova, -1, access,
				     udata);
}

/*
 * ibv_reg_dmabuf_mr: ib_core has checked the access flags against the
 * device and that @offset and @iova share their offset in a page.
 */
struct ib_mr *rhinet_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					u64 length, u64 iova, int fd,
					int access, struct ib_udata *udata)
{
	if (fd < 0) {
		ibdev_dbg(ibpd->device, "dma-buf MR: fd %d\n", fd);
		return ERR_PTR(-EBADF);
	}
	return rhinet_reg_user_mr_fd(ibpd, offset, length, iova, fd, access,
				     udata);
}

/* Rights and PD change in place (keys kept); a new translation, or a
 * region pinned read-only that becomes writable, makes a new NIC region
 * (new keys) and ib_core then destroys the old one, which drops its
 * translations. An area stays with its MR: such an MR cannot be changed.
 */
struct ib_mr *rhinet_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				   u64 length, u64 iova, int access,
				   struct ib_pd *new_pd,
				   struct ib_udata *udata)
{
	struct rhinet_mr *mr = container_of(ibmr, struct rhinet_mr, ibmr);
	struct rhinet_reg_mr_cmd none = {};
	int ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ERR_PTR(ret);
	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (mr->has_area || mr->od ||
	    (flags & IB_MR_REREG_ACCESS && access & IB_ACCESS_ON_DEMAND)) {
		ibdev_dbg(ibmr->device,
			  "rereg of an area's or on-demand MR, or to one\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (!(flags & IB_MR_REREG_ACCESS) || !ib_access_writable(access) ||
	     ib_access_writable(mr->access))) {
		/* Rights and PD change in place and the keys stay: what the
		 * peers hold keeps working (or stops, if a right went).
		 * Pages pinned read-only must be pinned again to become
		 * writable: that takes the new region below.
		 */
		struct rhinet_ib *ib = to_rib(ibmr->device);
		struct rhn_admin_cmd cmd = {};
		u32 mask = 0;

		if (flags & IB_MR_REREG_ACCESS) {
			if (access & ~(RHINET_MR_ACCESS | IB_ACCESS_OPTIONAL))
				return ERR_PTR(-EOPNOTSUPP);
			mask |= RHN_MODIFY_MR_ACCESS;
			cmd.u.modify_mr.access =
				cpu_to_le32(rhinet_mr_access(access));
		}
		if (flags & IB_MR_REREG_PD) {
			struct rhinet_pd *pd = to_rpd(new_pd);

			if (pd->ctx != mr->mem.ctx)
				return ERR_PTR(-EINVAL);
			mask |= RHN_MODIFY_MR_PD;
			cmd.u.modify_mr.pdn = cpu_to_le32(pd->pdn);
		}
		cmd.hdr.opcode = RHN_ADMIN_MODIFY_MR;
		cmd.u.modify_mr.key = cpu_to_le32(mr->mem.key);
		cmd.u.modify_mr.mask = cpu_to_le32(mask);
		ret = rhinet_ctx_exec(ib, mr->mem.ctx, &cmd, NULL);
		if (ret)
			return ERR_PTR(ret);
		if (flags & IB_MR_REREG_ACCESS)
			mr->access = access;
		return NULL;
	}
	/* A new region would pin the process's memory: a dma-buf's MR is
	 * registered anew with ibv_reg_dmabuf_mr instead.
	 */
	if (mr->mem.umem && mr->mem.umem->is_dmabuf) {
		ibdev_dbg(ibmr->device, "rereg of a dma-buf MR to a new region\n");
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->mem.umem->address;
		length = ibmr->length;
		iova = ibmr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	return rhinet_reg_mr(flags & IB_MR_REREG_PD ? new_pd : ibmr->pd, start,
			     length, iova, -1, access, &none, NULL);
}

/*
 * Fast registration, for the kernel's RDMA consumers: an MR with a page
 * list of max_num_sg entries and no translation until a REG_MR WQE
 * registers it over what ib_map_mr_sg wrote into the list.
 */
struct ib_mr *rhinet_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			      u32 max_num_sg)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_pd *pd = to_rpd(ibpd);
	struct device *dev = &ib->rdev->pdev->dev;
	struct rhn_admin_cmd cmd = {};
	struct rhinet_mr *mr;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (pd->ctx || !max_num_sg || max_num_sg > RHN_VPT_ENTRIES_PER_PAGE)
		return ERR_PTR(-EINVAL);
	mr = rhinet_mr_new(ib);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->pbl.size = RHINET_VPT_PAGE_SIZE;
	mr->pbl.va = dma_alloc_coherent(dev, mr->pbl.size, &mr->pbl.dma,
					GFP_KERNEL);
	if (!mr->pbl.va) {
		ret = -ENOMEM;
		goto err_free;
	}
	cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
	cmd.u.create_mr.pdn = cpu_to_le32(pd->pdn);
	cmd.u.create_mr.table_addr = cpu_to_le64(mr->pbl.dma);
	cmd.u.create_mr.num_pages = cpu_to_le32(max_num_sg);
	cmd.u.create_mr.levels = 1;
	cmd.u.create_mr.key_variant = atomic_inc_return(&ib->key_variant);
	cmd.u.create_mr.flags = RHN_CREATE_MR_F_FAST_REG;
	ret = rhinet_ctx_exec(ib, 0, &cmd, &mr->mem.key);
	if (ret)
		goto err_pbl;
	mr->max_pages = max_num_sg;
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	return &mr->ibmr;

err_pbl:
	dma_free_coherent(dev, mr->pbl.size, mr->pbl.va, mr->pbl.dma);
err_free:
	rhinet_mr_free(ib, mr);
	return ERR_PTR(ret);
}

static int rhinet_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct rhinet_mr *mr = container_of(ibmr, struct rhinet_mr, ibmr);
	__le64 *list = mr->pbl.va;

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	list[mr->npages++] = cpu_to_le64(addr | RHN_VPTE_VALID);
	return 0;
}

/* Called only while the MR is not registered (the consumer invalidated
 * it), so the NIC reads nothing of the list being rewritten.
 */
int rhinet_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		     unsigned int *sg_offset)
{
	struct rhinet_mr *mr = container_of(ibmr, struct rhinet_mr, ibmr);

	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rhinet_set_page);
}

int rhinet_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibmr->device);
	struct rhinet_mr *mr = container_of(ibmr, struct rhinet_mr, ibmr);
	int ret;

	/* The area first: the NIC keeps an MR with an area. */
	if (mr->has_area) {
		ret = rhinet_destroy_object(ib, mr->mem.ctx,
					    RHN_ADMIN_UNREGISTER_AREA,
					    mr->area_id);
		if (ret)
			return ret;
		mr->has_area = false;
		atomic_dec(&ib->num_areas);
	}
	ret = rhinet_mr_release(ib, mr);
	if (ret)
		return ret;
	/* The NIC forgot the MR: nothing reads its page list any more. */
	if (mr->pbl.va)
		dma_free_coherent(&ib->rdev->pdev->dev, mr->pbl.size,
				  mr->pbl.va, mr->pbl.dma);
	rhinet_mr_free(ib, mr);
	return 0;
}

/*
 * An MR over device memory (ibv_reg_dm_mr): bytes [attr->offset, +length)
 * of the DM's twin, addressed from 0 (ib_core takes only zero-based DM MRs
 * and has checked the range against the DM). The NIC reaches them by the
 * key as it reaches host memory (RHN_CREATE_MR_F_TWIN): a local SGE, a
 * peer's WRITE, READ or atomic. Nothing is pinned; the NIC keeps the twin
 * while the MR exists, as ib_core keeps the DM.
 */
struct ib_mr *rhinet_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			       struct ib_dm_mr_attr *attr,
			       struct uverbs_attr_bundle *attrs)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_dm *dm = to_rdm(ibdm);
	struct rhinet_pd *pd = to_rpd(ibpd);
	struct rhn_admin_cmd cmd = {};
	struct rhinet_mr *mr;
	int ret;

	if (attr->access_flags &
	    ~(RHINET_MR_ACCESS | IB_ZERO_BASED | IB_ACCESS_OPTIONAL)) {
		ibdev_dbg(&ib->ibdev, "DM MR access %#x not supported\n",
			  attr->access_flags);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!(attr->access_flags & IB_ZERO_BASED) || !attr->length ||
	    attr->offset > dm->bytes || attr->length > dm->bytes - attr->offset ||
	    pd->ctx != dm->uc->ctx)
		return ERR_PTR(-EINVAL);
	mr = rhinet_mr_new(ib);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
	cmd.u.create_mr.pdn = cpu_to_le32(pd->pdn);
	cmd.u.create_mr.access =
		cpu_to_le32(rhinet_mr_access(attr->access_flags));
	cmd.u.create_mr.iova = 0;
	cmd.u.create_mr.length = cpu_to_le64(attr->length);
	cmd.u.create_mr.twin = cpu_to_le32(dm->handle);
	cmd.u.create_mr.twin_offset = cpu_to_le64(attr->offset);
	cmd.u.create_mr.key_variant = atomic_inc_return(&ib->key_variant);
	cmd.u.create_mr.flags = RHN_CREATE_MR_F_TWIN;
	ret = rhinet_ctx_exec(ib, pd->ctx, &cmd, &mr->mem.key);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "DM MR %llu at %llu: %d\n", attr->length,
			  attr->offset, ret);
		rhinet_mr_free(ib, mr);
		return ERR_PTR(ret);
	}
	mr->mem.ctx = pd->ctx;
	mr->access = attr->access_flags;
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	mr->ibmr.length = attr->length;
	mr->ibmr.iova = 0;
	mr->ibmr.page_size = PAGE_SIZE;
	return &mr->ibmr;
}

/* ---- memory windows ------------------------------------------------------ */

/*
 * A window is a key of the NIC's MR table: MRs and windows share its
 * entries (max_mr and max_mw are one pool). User space binds and
 * invalidates through its send queues; the kernel only creates and frees.
 */
int rhinet_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibmw->device);
	struct rhinet_ucontext *uc = rhinet_uctx(udata);
	struct rhinet_mw *mw = container_of(ibmw, struct rhinet_mw, ibmw);
	struct rhn_admin_cmd cmd = {};
	int ret;

	if (!uc)
		return -EOPNOTSUPP;
	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	if (atomic_inc_return(&ib->num_mrs) > ib->max_mrs) {
		atomic_dec(&ib->num_mrs);
		return -ENOSPC;
	}
	cmd.hdr.opcode = RHN_ADMIN_CREATE_MW;
	cmd.u.create_mw.pdn = cpu_to_le32(to_rpd(ibmw->pd)->pdn);
	cmd.u.create_mw.type = ibmw->type == IB_MW_TYPE_1 ? 1 : 2;
	cmd.u.create_mw.key_variant = atomic_inc_return(&ib->key_variant);
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &mw->key);
	if (ret) {
		atomic_dec(&ib->num_mrs);
		return ret;
	}
	mw->ctx = uc->ctx;
	ibmw->rkey = mw->key;
	return 0;
}

/* The NIC unbinds it if bound; its region is free of it then. */
int rhinet_dealloc_mw(struct ib_mw *ibmw)
{
	struct rhinet_ib *ib = to_rib(ibmw->device);
	struct rhinet_mw *mw = container_of(ibmw, struct rhinet_mw, ibmw);
	int ret;

	ret = rhinet_destroy_object(ib, mw->ctx, RHN_ADMIN_DESTROY_MW, mw->key);
	if (ret)
		return ret;
	atomic_dec(&ib->num_mrs);
	return 0;
}
