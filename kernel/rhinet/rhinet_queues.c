// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CQs, SRQs and QPs of user processes. Rings and doorbell records live in a
 * buffer the process allocated (layouts in rdma/rhinet-abi.h); the driver
 * checks the request, pins and registers that buffer, and creates the NIC
 * object in the process's context. Posting and polling never enter the
 * kernel: the provider writes WQEs and records and kicks its doorbell page.
 * Kernel CQs and QPs are created in rhinet_kqueues.c.
 */
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_obj.h"

#define RHINET_QP_RECORDS_SIZE sizeof(struct rhn_queue_record)
#define RHINET_QP_BUF_MASK \
	(RHINET_QUEUE_BUF_DMABUF | RHINET_CREATE_QP_MULTI_PRODUCER | \
	 RHINET_CREATE_QP_SQ_EVENT_INDEX)

static struct rhn_host_ref rhinet_ref(const struct rhinet_mem *mem, u64 va)
{
	struct rhn_host_ref r = {
		.addr = cpu_to_le64(va),
		.lkey = cpu_to_le32(mem->key),
	};

	return r;
}

/*
 * The last steps of creating a user queue whose NIC object @handle exists:
 * events can find @obj, the caller learns the number. On failure the NIC
 * object and the buffer go again.
 */
static int rhinet_queue_publish(struct rhinet_ib *ib, struct xarray *xa,
				u8 destroy_op, u32 handle, void *obj,
				struct rhinet_mem *buf, struct ib_udata *udata,
				void *resp, size_t resp_len)
{
	int ret = xa_insert_irq(xa, handle, obj, GFP_KERNEL);

	if (!ret) {
		ret = rhinet_udata_out(udata, resp, resp_len);
		if (!ret)
			return 0;
		xa_erase_irq(xa, handle);
	}
	rhinet_destroy_object(ib, buf->ctx, destroy_op, handle);
	rhinet_mem_release(ib, buf);
	return ret;
}

/* The NIC object first (no more events or DMA), then the pinned buffer. */
static int rhinet_queue_destroy(struct rhinet_ib *ib, struct xarray *xa,
				u8 destroy_op, u32 handle,
				struct rhinet_mem *buf)
{
	int ret = rhinet_destroy_object(ib, buf->ctx, destroy_op, handle);

	if (ret)
		return ret;
	/* Its events are handled now, and after this no handler finds it. */
	rhinet_eq_drain(ib->rdev);
	xa_erase_irq(xa, handle);
	return rhinet_mem_release(ib, buf);
}

/* ---- CQ ------------------------------------------------------------------ */

/* A queue request's buffer: process memory, or a dma-buf's bytes. */
static int rhinet_queue_buf_of(u32 comp_mask, u64 va, u64 len, s32 fd,
			       u64 offset, u32 reserved,
			       struct rhinet_queue_buf *buf)
{
	/* The caller has taken the bits of its own queue type off. */
	if ((comp_mask & ~RHINET_QUEUE_BUF_DMABUF) || reserved)
		return -EOPNOTSUPP;
	*buf = (struct rhinet_queue_buf){ .va = va, .len = len };
	if (comp_mask & RHINET_QUEUE_BUF_DMABUF) {
		buf->dmabuf = true;
		buf->fd = fd;
		buf->offset = offset;
	} else if (fd || offset) {
		return -EINVAL;
	}
	return 0;
}

/*
 * A user CQ's buffer (RHINET_CQ_LAYOUT) for @cqe entries, as create and
 * resize receive it: the request checked, the buffer pinned into @mem.
 */
static int rhinet_ucq_pin(struct rhinet_ib *ib, struct rhinet_ucontext *uc,
			  struct ib_udata *udata, int cqe,
			  struct rhinet_create_cq_cmd *req,
			  struct rhinet_mem *mem, u64 *ring_bytes)
{
	struct rhinet_queue_buf buf;
	int ret = rhinet_udata_in_min(udata, req, RHINET_CREATE_CQ_CMD_V0_LEN,
				      sizeof(*req));

	if (ret)
		return ret;
	/* Runs are the create's to ask for (rhinet_create_cq). */
	ret = rhinet_queue_buf_of(req->comp_mask & ~RHINET_CREATE_CQ_RUNS,
				  req->buf_va, req->buf_len, req->dmabuf_fd,
				  req->dmabuf_offset, req->reserved, &buf);
	if (ret)
		return ret;
	if (req->log_depth < 1 ||
	    req->log_depth > le32_to_cpu(ib->rdev->attr.max_cq_log_depth) ||
	    cqe < 1 || cqe > (1 << req->log_depth)) {
		ibdev_dbg(&ib->ibdev, "CQ of %d entries in 2^%u slots\n", cqe,
			  req->log_depth);
		return -EINVAL;
	}
	*ring_bytes = (u64)RHN_CQE_SIZE << req->log_depth;
	return rhinet_mem_pin_queue(ib, uc, mem, &buf,
				    *ring_bytes + sizeof(struct rhn_cq_record));
}

int rhinet_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibcq->device);
	struct rhinet_ucontext *uc = rhinet_uctx(udata);
	struct rhinet_cq *cq = to_rcq(ibcq);
	struct rhinet_create_cq_resp resp = {};
	struct rhinet_create_cq_cmd req;
	struct rhn_admin_cmd cmd = {};
	u64 ring_bytes;
	int ret;

	if (!uc)
		return rhinet_kcq_create(ib, cq, attr);
	if (attr->flags)
		return -EOPNOTSUPP;
	cq->user = true;
	ret = rhinet_ucq_pin(ib, uc, udata, attr->cqe, &req, &cq->ubuf,
			     &ring_bytes);
	if (ret)
		return ret;
	/* Only a provider that expands runs asks; kernel CQs never do. */
	if ((req.comp_mask & RHINET_CREATE_CQ_RUNS) &&
	    !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_CQE_RUNS)) {
		rhinet_mem_release(ib, &cq->ubuf);
		return -EOPNOTSUPP;
	}

	cmd.hdr.opcode = RHN_ADMIN_CREATE_CQ;
	if (req.comp_mask & RHINET_CREATE_CQ_RUNS)
		cmd.u.create_cq.flags = RHN_CREATE_CQ_F_RUNS;
	cmd.u.create_cq.ring = rhinet_ref(&cq->ubuf, req.buf_va);
	cmd.u.create_cq.record = rhinet_ref(&cq->ubuf, req.buf_va + ring_bytes);
	cmd.u.create_cq.eqn =
		cpu_to_le32(rhinet_eq_of(ib->rdev, attr->comp_vector)->eqn);
	cmd.u.create_cq.log_depth = req.log_depth;
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &cq->cqn);
	if (ret) {
		rhinet_mem_release(ib, &cq->ubuf);
		return ret;
	}
	ibcq->cqe = 1 << req.log_depth;
	resp.cqn = cq->cqn;
	return rhinet_queue_publish(ib, &ib->cqs, RHN_ADMIN_DESTROY_CQ, cq->cqn,
				    cq, &cq->ubuf, udata, &resp, sizeof(resp));
}

/* A user CQ moves to a new buffer (RHINET_CQ_LAYOUT); kernel CQs keep theirs. */
int rhinet_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibcq->device);
	struct rhinet_ucontext *uc = rhinet_uctx(udata);
	struct rhinet_cq *cq = to_rcq(ibcq);
	struct rhinet_create_cq_cmd req;
	struct rhn_admin_cmd cmd = {};
	struct rhinet_mem mem = {};
	struct rhn_admin_resize_cq *c = &cmd.u.resize_cq;
	u64 ring_bytes;
	int ret;

	if (!uc)
		return -EOPNOTSUPP;
	ret = rhinet_ucq_pin(ib, uc, udata, cqe, &req, &mem, &ring_bytes);
	if (ret)
		return ret;
	/* A resized CQ keeps the runs it was created with (or not). */
	if (req.comp_mask & RHINET_CREATE_CQ_RUNS) {
		rhinet_mem_release(ib, &mem);
		return -EOPNOTSUPP;
	}
	cmd.hdr.opcode = RHN_ADMIN_RESIZE_CQ;
	c->cqn = cpu_to_le32(cq->cqn);
	c->log_depth = req.log_depth;
	c->ring = rhinet_ref(&mem, req.buf_va);
	c->record = rhinet_ref(&mem, req.buf_va + ring_bytes);
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, NULL);
	if (ret) {
		rhinet_mem_release(ib, &mem);
		return ret;
	}
	/* The NIC writes only the new buffer now: the old one can go. */
	rhinet_mem_release(ib, &cq->ubuf);
	cq->ubuf = mem;
	ibcq->cqe = 1 << req.log_depth;
	return 0;
}

/*
 * Completion event moderation (ibv_modify_cq, and the kernel's DIM): an
 * armed CQ raises its event after cq_count completions, or cq_period
 * microseconds after the first of them.
 */
int rhinet_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct rhinet_ib *ib = to_rib(ibcq->device);
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	struct rhinet_cq *cq = to_rcq(ibcq);
	struct rhn_admin_cmd cmd = {};

	if (!le16_to_cpu(hw->max_cq_mod_count))
		return -EOPNOTSUPP;
	if (cq_count > le16_to_cpu(hw->max_cq_mod_count) ||
	    cq_period > le16_to_cpu(hw->max_cq_mod_period_us))
		return -EINVAL;
	cmd.hdr.opcode = RHN_ADMIN_MODIFY_CQ;
	cmd.u.modify_cq.cqn = cpu_to_le32(cq->cqn);
	cmd.u.modify_cq.count = cpu_to_le16(cq_count);
	cmd.u.modify_cq.period_us = cpu_to_le16(cq_period);
	return rhinet_ctx_exec(ib, cq->user ? cq->ubuf.ctx : 0, &cmd, NULL);
}

int rhinet_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibcq->device);
	struct rhinet_cq *cq = to_rcq(ibcq);

	if (!cq->user)
		return rhinet_kcq_destroy(ib, cq);
	return rhinet_queue_destroy(ib, &ib->cqs, RHN_ADMIN_DESTROY_CQ, cq->cqn,
				    &cq->ubuf);
}

/* ---- SRQ ----------------------------------------------------------------- */

int rhinet_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		      struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibsrq->device);
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	struct rhinet_ucontext *uc = rhinet_uctx(udata);
	struct rhinet_srq *srq = to_rsrq(ibsrq);
	struct rhinet_create_srq_resp resp = {};
	struct rhinet_create_srq_cmd req;
	struct rhn_admin_cmd cmd = {};
	struct rhn_admin_create_srq *c = &cmd.u.create_srq;
	bool tm = attr->srq_type == IB_SRQT_TM;
	bool xrc = attr->srq_type == IB_SRQT_XRC;
	struct rhinet_queue_buf buf;
	u64 ring_bytes, ops_bytes = 0;
	int ret;

	if (!uc)
		return -EOPNOTSUPP;
	if (attr->srq_type != IB_SRQT_BASIC && !tm && !xrc)
		return -EOPNOTSUPP;
	if (tm && !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_TM))
		return -EOPNOTSUPP;
	if (xrc && !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_XRC))
		return -EOPNOTSUPP;
	ret = rhinet_udata_in_min(udata, &req, RHINET_CREATE_SRQ_CMD_V0_LEN,
				  sizeof(req));
	if (ret)
		return ret;
	if ((req.comp_mask & ~RHINET_CREATE_SRQ_TM) || req.reserved ||
	    (!(req.comp_mask & RHINET_CREATE_SRQ_TM) && req.ops_log_depth))
		return -EOPNOTSUPP;
	if (tm != !!(req.comp_mask & RHINET_CREATE_SRQ_TM))
		return -EINVAL;
	if (req.log_depth < 1 ||
	    req.log_depth > le32_to_cpu(hw->max_wq_log_depth) ||
	    attr->attr.max_wr > (1u << req.log_depth) ||
	    attr->attr.max_sge > le32_to_cpu(hw->max_recv_sges) ||
	    attr->attr.srq_limit >= (1u << req.log_depth)) {
		ibdev_dbg(&ib->ibdev, "SRQ of %u WQEs in 2^%u slots\n",
			  attr->attr.max_wr, req.log_depth);
		return -EINVAL;
	}
	if (tm) {
		/* ib_core took a reference on the CQ list operations use. */
		struct rhinet_cq *cq = to_rcq(attr->ext.cq);
		u32 tags = attr->ext.tag_matching.max_num_tags;

		if (!cq->user || tags < 1 || tags > le32_to_cpu(hw->tm_max_tags) ||
		    req.ops_log_depth < 1 ||
		    req.ops_log_depth > le32_to_cpu(hw->tm_max_ops_log)) {
			ibdev_dbg(&ib->ibdev,
				  "TM SRQ of %u tags, 2^%u operations\n", tags,
				  req.ops_log_depth);
			return -EINVAL;
		}
		ops_bytes = (u64)RHN_TM_OP_WQE_SIZE << req.ops_log_depth;
		c->flags = RHN_CREATE_SRQ_F_TM;
		c->ops_log_depth = req.ops_log_depth;
		c->cqn = cpu_to_le32(cq->cqn);
		c->max_tags = cpu_to_le32(tags);
	}
	if (xrc) {
		/* Its receives complete on ext.cq (ib_core holds it and the
		 * domain); a peer names it by the number the NIC returns.
		 */
		struct rhinet_cq *cq = to_rcq(attr->ext.cq);

		if (!cq->user)
			return -EINVAL;
		c->flags = RHN_CREATE_SRQ_F_XRC;
		c->xrcd = cpu_to_le32(to_rxrcd(attr->ext.xrc.xrcd)->xrcdn);
		c->cqn = cpu_to_le32(cq->cqn);
	}
	ring_bytes = (u64)RHN_RQ_WQE_SIZE << req.log_depth;
	buf = (struct rhinet_queue_buf){ .va = req.buf_va, .len = req.buf_len };
	ret = rhinet_mem_pin_queue(ib, uc, &srq->buf, &buf,
				   ring_bytes + ops_bytes +
					   (tm ? 2 : 1) *
						   sizeof(struct rhn_queue_record));
	if (ret)
		return ret;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_SRQ;
	c->ring = rhinet_ref(&srq->buf, req.buf_va);
	c->record = rhinet_ref(&srq->buf, req.buf_va + ring_bytes + ops_bytes);
	c->pdn = cpu_to_le32(to_rpd(ibsrq->pd)->pdn);
	c->limit = cpu_to_le32(attr->attr.srq_limit);
	c->log_depth = req.log_depth;
	if (tm) {
		c->ops_ring = rhinet_ref(&srq->buf, req.buf_va + ring_bytes);
		c->ops_record = rhinet_ref(&srq->buf,
					   req.buf_va + ring_bytes + ops_bytes +
						   sizeof(struct rhn_queue_record));
	}
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &srq->srqn);
	if (ret) {
		rhinet_mem_release(ib, &srq->buf);
		return ret;
	}
	if (xrc) {
		ibsrq->ext.xrc.srq_num = srq->srqn;
		srq->srqn &= RHN_XRC_SRQN_INDEX_MASK;
	}
	srq->depth = 1u << req.log_depth;
	srq->limit = attr->attr.srq_limit;
	attr->attr.max_wr = srq->depth;
	resp.srqn = srq->srqn;
	return rhinet_queue_publish(ib, &ib->srqs, RHN_ADMIN_DESTROY_SRQ,
				    srq->srqn, srq, &srq->buf, udata, &resp,
				    sizeof(resp));
}

/* Only the limit can change: the ring is the process's fixed buffer. */
int rhinet_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibsrq->device);
	struct rhinet_srq *srq = to_rsrq(ibsrq);
	struct rhn_admin_cmd cmd = {};
	int ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit >= srq->depth)
		return -EINVAL;
	cmd.hdr.opcode = RHN_ADMIN_MODIFY_SRQ;
	cmd.u.modify_srq.srqn = cpu_to_le32(srq->srqn);
	cmd.u.modify_srq.limit = cpu_to_le32(attr->srq_limit);
	ret = rhinet_ctx_exec(ib, srq->buf.ctx, &cmd, NULL);
	if (!ret)
		srq->limit = attr->srq_limit;
	return ret;
}

int rhinet_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rhinet_srq *srq = to_rsrq(ibsrq);

	attr->max_wr = srq->depth;
	attr->max_sge = le32_to_cpu(to_rib(ibsrq->device)->rdev->attr.max_recv_sges);
	attr->srq_limit = srq->limit;
	return 0;
}

int rhinet_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibsrq->device);
	struct rhinet_srq *srq = to_rsrq(ibsrq);

	return rhinet_queue_destroy(ib, &ib->srqs, RHN_ADMIN_DESTROY_SRQ,
				    srq->srqn, &srq->buf);
}

/* ---- QP ------------------------------------------------------------------ */

/*
 * Inline bytes a WQE of @slots slots carries (a UD WQE's GRH slot none), at
 * most what the NIC takes: a QP's inline limit is what its WQEs hold, not
 * what was asked for, as other devices report it (rdma_xclient asks for 0
 * and sends 16 inline bytes).
 */
static u32 rhinet_wqe_inline(const struct rhn_device_attr *hw, u32 slots,
			     bool ud)
{
	u32 bytes = RHN_WQE_BASE_INLINE +
		    (slots - 1 - (ud ? 1 : 0)) * RHN_SQ_SLOT_SIZE;

	return min(bytes, le32_to_cpu(hw->max_inline));
}

static int rhinet_qp_check(struct rhinet_ib *ib, struct ib_qp_init_attr *attr,
			   const struct rhinet_create_qp_cmd *req)
{
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	const struct ib_qp_cap *cap = &attr->cap;
	u32 max_log = le32_to_cpu(hw->max_wq_log_depth);
	u32 slots = rhinet_wqe_slots(cap, attr->qp_type == IB_QPT_UD);

	if (cap->max_send_sge > le32_to_cpu(hw->max_send_sges) ||
	    cap->max_recv_sge > le32_to_cpu(hw->max_recv_sges) ||
	    cap->max_inline_data > le32_to_cpu(hw->max_inline) ||
	    slots > RHN_WQE_MAX_SLOTS)
		return -EINVAL;
	if (req->sq_log_depth < 1 || req->sq_log_depth > max_log ||
	    (u64)cap->max_send_wr * slots > (1u << req->sq_log_depth))
		return -EINVAL;
	/* Many producers: a doorbell batch and the largest WQE fit the SQ,
	 * and there is one to post to.
	 */
	if ((req->comp_mask & RHINET_CREATE_QP_MULTI_PRODUCER) &&
	    (req->sq_log_depth < RHINET_MP_MIN_SQ_LOG_DEPTH ||
	     !cap->max_send_wr))
		return -EINVAL;
	/* An event index is a plain SQ's; a multi-producer word is a count. */
	if ((req->comp_mask & RHINET_CREATE_QP_SQ_EVENT_INDEX) &&
	    (req->comp_mask & RHINET_CREATE_QP_MULTI_PRODUCER))
		return -EINVAL;
	/* Tag matching (a TM SRQ) is for RC QPs. */
	if (attr->srq && attr->srq->srq_type == IB_SRQT_TM &&
	    attr->qp_type != IB_QPT_RC)
		return -EINVAL;
	if (attr->srq || attr->qp_type == IB_QPT_XRC_INI)
		return req->rq_log_depth ? -EINVAL : 0;
	if (req->rq_log_depth < 1 || req->rq_log_depth > max_log ||
	    cap->max_recv_wr > (1u << req->rq_log_depth))
		return -EINVAL;
	return 0;
}

static int rhinet_qp_nic_type(const struct ib_qp_init_attr *attr,
			      const struct rhinet_create_qp_cmd *req)
{
	if (attr->qp_type == IB_QPT_DRIVER)
		return req->driver_qp_type == RHINET_QP_DRIVER_TYPE_ENDPOINT ?
			       RHN_QP_ENDPOINT :
			       -EINVAL;
	if (req->driver_qp_type)
		return -EINVAL;
	switch (attr->qp_type) {
	case IB_QPT_RC:
		return RHN_QP_RC;
	case IB_QPT_UC:
		return RHN_QP_UC;
	case IB_QPT_UD:
		return RHN_QP_UD;
	case IB_QPT_XRC_INI:
		return RHN_QP_XRC_SEND;
	default:
		return -EOPNOTSUPP;
	}
}

static int rhinet_qp_create_nic(struct rhinet_ib *ib,
				struct rhinet_ucontext *uc, struct rhinet_qp *qp,
				struct ib_qp_init_attr *attr,
				const struct rhinet_create_qp_cmd *req,
				struct rhinet_create_qp_resp *resp)
{
	u64 sq_bytes = (u64)RHN_SQ_SLOT_SIZE << req->sq_log_depth;
	bool no_rq = attr->srq || attr->qp_type == IB_QPT_XRC_INI;
	u64 rq_bytes = no_rq ? 0 : (u64)RHN_RQ_WQE_SIZE << req->rq_log_depth;
	bool mp = req->comp_mask & RHINET_CREATE_QP_MULTI_PRODUCER;
	u32 sq_record_size = mp ? sizeof(struct rhn_mp_queue_record) :
				  RHINET_QP_RECORDS_SIZE;
	struct rhn_admin_create_qp *c;
	struct rhn_admin_cmd cmd = {};
	u64 need, va = req->buf_va;
	struct rhinet_queue_buf buf;
	int ret;

	ret = rhinet_queue_buf_of(req->comp_mask &
					  ~(RHINET_CREATE_QP_MULTI_PRODUCER |
					    RHINET_CREATE_QP_SQ_EVENT_INDEX),
				  va, req->buf_len, req->dmabuf_fd,
				  req->dmabuf_offset, req->reserved2, &buf);
	if (ret)
		return ret;

	resp->rq_offset = sq_bytes;
	resp->sq_record_offset = sq_bytes + rq_bytes;
	resp->rq_record_offset = no_rq ? 0 :
			resp->sq_record_offset + sq_record_size;
	need = sq_bytes + rq_bytes + sq_record_size +
	       (no_rq ? 0 : RHINET_QP_RECORDS_SIZE);
	ret = rhinet_mem_pin_queue(ib, uc, &qp->buf, &buf, need);
	if (ret)
		return ret;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_QP;
	c = &cmd.u.create_qp;
	c->pdn = cpu_to_le32(to_rpd(qp->ibqp.pd)->pdn);
	c->send_cqn = cpu_to_le32(to_rcq(attr->send_cq)->cqn);
	/* An XRC initiator receives nothing: its send CQ stands in. */
	c->recv_cqn = cpu_to_le32(to_rcq(attr->recv_cq ?: attr->send_cq)->cqn);
	c->srqn = cpu_to_le32(attr->srq ? to_rsrq(attr->srq)->srqn :
					  RHN_NO_SRQ);
	c->type = qp->nic_type;
	if (mp)
		c->flags = RHN_CREATE_QP_F_MULTI_PRODUCER;
	if (req->comp_mask & RHINET_CREATE_QP_SQ_EVENT_INDEX)
		c->flags |= RHN_CREATE_QP_F_SQ_EVENT_INDEX;
	c->sq_log_depth = req->sq_log_depth;
	c->rq_log_depth = req->rq_log_depth;
	c->sq_ring = rhinet_ref(&qp->buf, va);
	c->sq_record = rhinet_ref(&qp->buf, va + resp->sq_record_offset);
	if (!no_rq) {
		c->rq_ring = rhinet_ref(&qp->buf, va + resp->rq_offset);
		c->rq_record = rhinet_ref(&qp->buf,
					  va + resp->rq_record_offset);
	}
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &qp->qpn);
	if (ret)
		rhinet_mem_release(ib, &qp->buf);
	return ret;
}

int rhinet_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		     struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibqp->device);
	struct rhinet_ucontext *uc = rhinet_uctx(udata);
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhinet_create_qp_resp resp = {};
	struct rhinet_create_qp_cmd req;
	int type, ret;

	/* An XRC target QP is the kernel's whoever asks (ib_core lets the
	 * processes of its domain open it), so it comes without udata.
	 */
	if (!uc)
		return rhinet_kqp_create(ib, qp, attr);
	if (attr->qp_type == IB_QPT_XRC_INI &&
	    !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_XRC))
		return -EOPNOTSUPP;
	if (attr->create_flags || !attr->send_cq ||
	    (!attr->recv_cq && attr->qp_type != IB_QPT_XRC_INI))
		return -EOPNOTSUPP;
	ret = rhinet_udata_in_min(udata, &req, RHINET_CREATE_QP_CMD_V0_LEN,
				  sizeof(req));
	if (ret)
		return ret;
	if ((req.comp_mask & ~RHINET_QP_BUF_MASK) ||
	    memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EOPNOTSUPP;
	if ((req.comp_mask & RHINET_CREATE_QP_SQ_EVENT_INDEX) &&
	    !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_SQ_EVENT_INDEX)) {
		ibdev_dbg(&ib->ibdev, "create qp: NIC has no SQ event index\n");
		return -EOPNOTSUPP;
	}
	type = rhinet_qp_nic_type(attr, &req);
	if (type < 0)
		return type;
	ret = rhinet_qp_check(ib, attr, &req);
	if (ret) {
		ibdev_dbg(&ib->ibdev,
			  "QP caps wr %u/%u sge %u/%u inline %u in 2^%u/2^%u\n",
			  attr->cap.max_send_wr, attr->cap.max_recv_wr,
			  attr->cap.max_send_sge, attr->cap.max_recv_sge,
			  attr->cap.max_inline_data, req.sq_log_depth,
			  req.rq_log_depth);
		return ret;
	}
	qp->nic_type = type;
	qp->uc = uc;
	mutex_init(&qp->lock);

	/* One endpoint per process: held across creation. */
	mutex_lock(&uc->lock);
	if (type == RHN_QP_ENDPOINT && uc->endpoint_qpn) {
		ret = -EEXIST;
		goto out_unlock;
	}
	ret = rhinet_qp_create_nic(ib, uc, qp, attr, &req, &resp);
	if (ret)
		goto out_unlock;
	ibqp->qp_num = qp->qpn;
	qp->attr.qp_state = IB_QPS_RESET;
	if (attr->cap.max_send_wr) {
		bool ud = attr->qp_type == IB_QPT_UD;
		u32 slots = rhinet_wqe_slots(&attr->cap, ud);

		attr->cap.max_send_wr = (1u << req.sq_log_depth) / slots;
		attr->cap.max_inline_data =
			rhinet_wqe_inline(&ib->rdev->attr, slots, ud);
	} else {
		/* No send queue (a QP that only receives): the NIC has the
		 * smallest ring, and the provider posts nothing to it.
		 */
		attr->cap.max_send_sge = 0;
		attr->cap.max_inline_data = 0;
	}
	if (!attr->srq && attr->qp_type != IB_QPT_XRC_INI)
		attr->cap.max_recv_wr = 1u << req.rq_log_depth;
	qp->attr.cap = attr->cap; /* for query_qp */
	resp.qpn = qp->qpn;
	ret = rhinet_queue_publish(ib, &ib->qps, RHN_ADMIN_DESTROY_QP, qp->qpn,
				   qp, &qp->buf, udata, &resp, sizeof(resp));
	if (!ret && type == RHN_QP_ENDPOINT)
		uc->endpoint_qpn = qp->qpn;
out_unlock:
	mutex_unlock(&uc->lock);
	return ret;
}

int rhinet_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibqp->device);
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhinet_ucontext *uc = qp->uc;
	int ret;

	ret = rhinet_destroy_object(ib, qp->buf.ctx, RHN_ADMIN_DESTROY_QP,
				    qp->qpn);
	if (ret)
		return ret;
	rhinet_eq_drain(ib->rdev);
	if (!uc) {
		/* Its CQEs leave the kernel CQs and the QP the table under
		 * the CQ locks pollers hold while they use it.
		 */
		rhinet_kqp_forget(ib, qp);
		rhinet_kqp_free(ib, qp);
		return 0;
	}
	xa_erase_irq(&ib->qps, qp->qpn);
	mutex_lock(&uc->lock);
	if (uc->endpoint_qpn == qp->qpn)
		uc->endpoint_qpn = 0;
	mutex_unlock(&uc->lock);
	return rhinet_mem_release(ib, &qp->buf);
}

#define RHINET_QP_ATTRS                                                     \
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY |          \
	 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY |     \
	 IB_QP_AV | IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |         \
	 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |             \
	 IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |       \
	 IB_QP_DEST_QPN)

/* IB's min_rnr_timer code (0 the longest wait) in 10 us units, for the
 * NIC's "(value + 1) * 10 us".
 */
static u8 rhinet_rnr_timer(u8 code)
{
	static const u32 units[32] = {
		65536, 1,   2,	 3,    4,    6,	   8,	 12,   16,    24,   32,
		48,    64,  96,	 128,  192,  256,  384,	 512,  768,   1024, 1536,
		2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
	};

	return min_t(u32, units[code & 31] - 1, 255);
}

static int rhinet_qp_validate(struct rhinet_ib *ib, struct rhinet_qp *qp,
			      const struct ib_qp_attr *attr, int mask,
			      int *dest_node)
{
	enum ib_qp_type type = qp->ibqp.qp_type == IB_QPT_DRIVER ?
				       IB_QPT_UD : qp->ibqp.qp_type;
	enum ib_qp_state cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state :
							qp->attr.qp_state;
	enum ib_qp_state next = mask & IB_QP_STATE ? attr->qp_state : cur;
	u32 max_rd = le32_to_cpu(ib->rdev->attr.max_rd_atomic);

	if (mask & ~RHINET_QP_ATTRS)
		return -EOPNOTSUPP;
	/* The endpoint follows UD's rules, but its access flags say which
	 * remote PUSH/PULL it serves (its areas' MRs still decide).
	 */
	if (qp->nic_type == RHN_QP_ENDPOINT && next != IB_QPS_RESET &&
	    next != IB_QPS_ERR)
		mask &= ~IB_QP_ACCESS_FLAGS;
	if (!ib_modify_qp_is_ok(cur, next, type, mask))
		return -EINVAL;
	/* Controlled Q_Keys (high bit set) are the kernel's, as QP1's. */
	if ((mask & IB_QP_QKEY) && (attr->qkey & BIT(31)) && qp->uc)
		return -EPERM;
	if (((mask & IB_QP_PORT) && attr->port_num != 1) ||
	    ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index) ||
	    ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > max_rd) ||
	    ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	     attr->max_dest_rd_atomic > max_rd) ||
	    ((mask & IB_QP_TIMEOUT) && attr->timeout > 31) ||
	    ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7) ||
	    ((mask & IB_QP_DEST_QPN) && (!attr->dest_qp_num ||
					 attr->dest_qp_num > RHN_DB_QN_MASK)))
		return -EINVAL;
	*dest_node = qp->dest_node;
	if (mask & IB_QP_AV) {
		*dest_node = rhinet_node_of_ah_attr(ib, &attr->ah_attr, true);
		if (*dest_node < 0)
			return -EINVAL;
	}
	return 0;
}

/* The attributes the NIC acts on, from the IB ones (kept in qp->attr). */
static void rhinet_qp_nic_attrs(const struct rhinet_qp *qp, int mask,
				int dest_node, struct rhn_admin_modify_qp *m)
{
	const struct ib_qp_attr *a = &qp->attr;
	u32 nic = 0;

	m->qpn = cpu_to_le32(qp->qpn);
	if (mask & IB_QP_STATE) {
		nic |= RHN_QP_ATTR_STATE;
		m->state = a->qp_state;
	}
	if (mask & IB_QP_ACCESS_FLAGS) {
		nic |= RHN_QP_ATTR_ACCESS;
		m->access = (a->qp_access_flags & IB_ACCESS_REMOTE_WRITE ?
				     RHN_ACCESS_REMOTE_WRITE : 0) |
			    (a->qp_access_flags & IB_ACCESS_REMOTE_READ ?
				     RHN_ACCESS_REMOTE_READ : 0) |
			    (a->qp_access_flags & IB_ACCESS_REMOTE_ATOMIC ?
				     RHN_ACCESS_REMOTE_ATOMIC : 0);
	}
	if ((qp->nic_type == RHN_QP_RC || qp->nic_type == RHN_QP_UC ||
	     qp->nic_type == RHN_QP_XRC_SEND ||
	     qp->nic_type == RHN_QP_XRC_RECV) &&
	    (mask & (IB_QP_AV | IB_QP_DEST_QPN))) {
		nic |= RHN_QP_ATTR_DEST;
		m->dest_node = cpu_to_le16(dest_node);
		m->dest_qpn = cpu_to_le32(a->dest_qp_num);
	}
	if (mask & IB_QP_QKEY) {
		nic |= RHN_QP_ATTR_QKEY;
		m->qkey = cpu_to_le32(a->qkey);
	}
	if (mask & (IB_QP_RNR_RETRY | IB_QP_MIN_RNR_TIMER | IB_QP_RETRY_CNT)) {
		nic |= RHN_QP_ATTR_RETRY;
		m->retry_cnt = a->retry_cnt;
		m->rnr_retry = a->rnr_retry;
		m->min_rnr_timer = rhinet_rnr_timer(a->min_rnr_timer);
	}
	if (mask & (IB_QP_TIMEOUT | IB_QP_RETRY_CNT)) {
		nic |= RHN_QP_ATTR_TIMEOUT;
		m->timeout = a->timeout;
		m->retry_cnt = a->retry_cnt;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic) {
		nic |= RHN_QP_ATTR_MAX_RD_ATOMIC;
		m->max_rd_atomic = a->max_rd_atomic;
	}
	m->attr_mask = cpu_to_le32(nic);
}

/* Copies the attributes named by @mask into @dst. */
static void rhinet_qp_attr_merge(struct ib_qp_attr *dst,
				 const struct ib_qp_attr *src, int mask)
{
	if (mask & IB_QP_STATE)
		dst->qp_state = src->qp_state;
	if (mask & IB_QP_AV) {
		dst->ah_attr = src->ah_attr;
		/* ib_core holds the source GID entry only during the call;
		 * query_qp reports the AV without one, as ib_query_qp expects.
		 */
		dst->ah_attr.grh.sgid_attr = NULL;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		dst->qp_access_flags = src->qp_access_flags;
	if (mask & IB_QP_QKEY)
		dst->qkey = src->qkey;
	if (mask & IB_QP_PATH_MTU)
		dst->path_mtu = src->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		dst->timeout = src->timeout;
	if (mask & IB_QP_RETRY_CNT)
		dst->retry_cnt = src->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		dst->rnr_retry = src->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		dst->min_rnr_timer = src->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		dst->rq_psn = src->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		dst->sq_psn = src->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		dst->max_rd_atomic = src->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		dst->dest_qp_num = src->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		dst->en_sqd_async_notify = src->en_sqd_async_notify;
}

int rhinet_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibqp->device);
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhn_admin_cmd cmd = {};
	struct ib_qp_attr next;
	int dest_node, ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	mutex_lock(&qp->lock);
	ret = rhinet_qp_validate(ib, qp, attr, mask, &dest_node);
	if (ret) {
		ibdev_dbg(&ib->ibdev, "QP %u: modify mask %#x refused: %d\n",
			  qp->qpn, mask, ret);
		goto out;
	}
	next = qp->attr;
	rhinet_qp_attr_merge(&next, attr, mask);
	swap(next, qp->attr);
	rhinet_qp_nic_attrs(qp, mask, dest_node, &cmd.u.modify_qp);
	swap(next, qp->attr);
	if (cmd.u.modify_qp.attr_mask) {
		cmd.hdr.opcode = RHN_ADMIN_MODIFY_QP;
		ret = rhinet_ctx_exec(ib, qp->buf.ctx, &cmd, NULL);
		if (ret)
			goto out;
	}
	qp->attr = next;
	qp->dest_node = dest_node;
out:
	mutex_unlock(&qp->lock);
	return ret;
}

/* The NIC's view of the state (a failed WQE moves a QP to ERR) with the
 * attributes as last set, the address vector included, so an application
 * can reset a QP and connect it again with what it queried.
 */
int rhinet_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init)
{
	struct rhinet_ib *ib = to_rib(ibqp->device);
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhn_admin_cmd cmd = {};
	struct rhn_qp_attr hw;
	int ret;

	cmd.hdr.opcode = RHN_ADMIN_QUERY_QP;
	cmd.hdr.context = cpu_to_le32(qp->buf.ctx);
	cmd.u.query.handle = cpu_to_le32(qp->qpn);
	ret = rhinet_admin_query(ib->rdev, &cmd, &hw, sizeof(hw));
	if (ret)
		return ret;
	mutex_lock(&qp->lock);
	/* A state the driver does not know is reported as ERR. */
	qp->attr.qp_state = hw.state <= IB_QPS_ERR ? hw.state : IB_QPS_ERR;
	*attr = qp->attr;
	mutex_unlock(&qp->lock);
	attr->cur_qp_state = attr->qp_state;
	attr->port_num = 1;
	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	return 0;
}
