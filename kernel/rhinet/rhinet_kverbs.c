// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel verbs: the queues ib_core's own clients post to and poll. Two
 * kinds of QP are served: the management QP (QP1, IB_QPT_GSI) that ib_mad
 * opens so ib_cm and rdma_cm can exchange connection requests, and RC QPs
 * of the kernel's RDMA consumers (nvme-rdma, nvmet-rdma, NFS/RDMA, ...),
 * with SENDs, RDMA WRITE/READ, atomics, fast registration (REG_MR) and
 * invalidation. They belong to the kernel's NIC context: rings and records
 * are DMA-coherent memory the NIC reaches by bus address, and buffers use
 * the device's local_dma_lkey, which serves every kernel PD. The NIC sends
 * every UD WQE with the address handle's GRH and writes the sender's GRH
 * ahead of each received MAD, which ib_cm needs to answer. The queues
 * themselves are created and destroyed in rhinet_kqueues.c.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "rhinet_ib.h"

/* The full index whose low 16 bits a CQE names, at or after @base. */
static u32 rhinet_widen(u32 base, u16 low)
{
	return base + (u16)(low - (u16)base);
}

/* ---- kernel QPs -------------------------------------------------------------- */

static void *rhinet_kqp_sq(struct rhinet_kqp *k, u32 slot)
{
	return k->kbuf.va + (size_t)(slot & (k->sq_depth - 1)) * RHN_SQ_SLOT_SIZE;
}

static struct rhn_recv_wqe *rhinet_kqp_rq(struct rhinet_kqp *k, u32 index)
{
	return k->kbuf.va + (size_t)RHN_SQ_SLOT_SIZE * k->sq_depth +
	       (size_t)(index & (k->rq_depth - 1)) * RHN_RQ_WQE_SIZE;
}

/* Puts the WQE built in k->wqe into the ring at the producer (the ring
 * may wrap inside it) and takes its slots.
 */
static void rhinet_kqp_commit(struct rhinet_kqp *k, u64 wr_id, u32 slots)
{
	u32 first = k->sq_pi, i;

	for (i = 0; i < slots; i++)
		memcpy(rhinet_kqp_sq(k, first + i), k->wqe + i * RHN_SQ_SLOT_SIZE,
		       RHN_SQ_SLOT_SIZE);
	k->sq_wr_id[first & (k->sq_depth - 1)] = wr_id;
	k->sq_slots[first & (k->sq_depth - 1)] = slots;
	k->sq_pi += slots;
}

/* The work request's SGEs into the WQE; returns its data slots. */
static u32 rhinet_kqp_put_sges(struct rhinet_kqp *k,
			       const struct ib_send_wr *wr)
{
	int i;

	for (i = 0; i < wr->num_sge; i++)
		rhn_wqe_put_sge(k->wqe, i, wr->sg_list[i].addr,
				wr->sg_list[i].length, wr->sg_list[i].lkey);
	return rhn_wqe_set_sges(k->wqe, wr->num_sge);
}

/* Builds one UD SEND at the producer; returns its slots or an errno. */
static int rhinet_kqp_build_ud(struct rhinet_qp *qp,
			       const struct ib_send_wr *wr)
{
	struct rhinet_kqp *k = qp->k;
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct rhn_wqe_tail tail = {};
	struct rhinet_ah *ah;
	struct rhn_send_wqe *w;
	u32 slots;
	u8 flags = RHN_WQE_F_SIGNALED;

	if ((wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) ||
	    wr->num_sge < 0 || wr->num_sge > k->max_send_sge || !ud->ah ||
	    (wr->send_flags & IB_SEND_INLINE))
		return -EINVAL;
	if (k->sq_pi + rhn_wqe_slots(wr->num_sge, 0, true) - k->sq_ci >
	    k->sq_depth)
		return -ENOMEM;
	ah = container_of(ud->ah, struct rhinet_ah, ibah);

	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= RHN_WQE_F_SOLICITED;
	w = rhn_wqe_start(k->wqe,
			  wr->opcode == IB_WR_SEND ? RHN_OP_SEND :
						     RHN_OP_SEND_IMM,
			  flags, k->sq_pi);
	w->dst_node = cpu_to_le16(ah->dest_node);
	w->dst_qpn = cpu_to_le32(ud->remote_qpn);
	w->imm_data = (__force u32)wr->ex.imm_data;
	w->u.status.qkey = cpu_to_le32(ud->remote_qkey);
	tail.grh = &ah->grh;
	slots = rhn_wqe_finish(k->wqe, rhinet_kqp_put_sges(k, wr), &tail);
	if (!slots)
		return -EINVAL;
	rhinet_kqp_commit(k, wr->wr_id, slots);
	return slots;
}

/* The NIC opcode of an RC work request, or -EINVAL. */
static int rhinet_rc_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
		return RHN_OP_SEND;
	case IB_WR_SEND_WITH_IMM:
		return RHN_OP_SEND_IMM;
	case IB_WR_SEND_WITH_INV:
		return RHN_OP_SEND_INV;
	case IB_WR_RDMA_WRITE:
		return RHN_OP_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return RHN_OP_WRITE_IMM;
	case IB_WR_RDMA_READ:
		return RHN_OP_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return RHN_OP_CMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return RHN_OP_FETCH_ADD;
	case IB_WR_REG_MR:
		return RHN_OP_REG_MR;
	case IB_WR_LOCAL_INV:
		return RHN_OP_LOCAL_INV;
	default:
		return -EINVAL;
	}
}

/* Builds one RC WQE at the producer; returns its slots or an errno. */
static int rhinet_kqp_build_rc(struct rhinet_qp *qp,
			       const struct ib_send_wr *wr)
{
	struct rhinet_kqp *k = qp->k;
	int op = rhinet_rc_opcode(wr->opcode);
	struct rhn_send_wqe *w;
	u32 slots;
	u8 flags = 0;

	if (op < 0 || wr->num_sge < 0 || wr->num_sge > k->max_send_sge ||
	    (wr->send_flags & IB_SEND_INLINE))
		return -EINVAL;
	if ((op == RHN_OP_REG_MR || op == RHN_OP_LOCAL_INV) && wr->num_sge)
		return -EINVAL;
	if (k->sq_pi + rhn_wqe_slots(wr->num_sge, 0, false) - k->sq_ci >
	    k->sq_depth)
		return -ENOMEM;

	if ((wr->send_flags & IB_SEND_SIGNALED) || k->sig_all)
		flags |= RHN_WQE_F_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		flags |= RHN_WQE_F_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		flags |= RHN_WQE_F_FENCE;
	w = rhn_wqe_start(k->wqe, op, flags, k->sq_pi);
	switch (op) {
	case RHN_OP_SEND_IMM:
		w->imm_data = (__force u32)wr->ex.imm_data;
		break;
	case RHN_OP_SEND_INV:
		w->imm_data = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	case RHN_OP_WRITE_IMM:
		w->imm_data = (__force u32)wr->ex.imm_data;
		fallthrough;
	case RHN_OP_WRITE:
	case RHN_OP_READ:
		w->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		w->remote_key = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case RHN_OP_CMP_SWAP:
	case RHN_OP_FETCH_ADD:
		w->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		w->remote_key = cpu_to_le32(atomic_wr(wr)->rkey);
		w->u.atomic.compare_add =
			cpu_to_le64(atomic_wr(wr)->compare_add);
		w->u.atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case RHN_OP_REG_MR: {
		const struct ib_reg_wr *reg = reg_wr(wr);
		struct rhinet_mr *mr = container_of(reg->mr, struct rhinet_mr,
						    ibmr);

		w->remote_key = cpu_to_le32(reg->key);
		w->remote_addr = cpu_to_le64(mr->ibmr.iova);
		w->imm_data = cpu_to_le32(rhinet_mr_access(reg->access));
		w->u.reg.length = cpu_to_le64(mr->ibmr.length);
		w->u.reg.num_pages = cpu_to_le32(mr->npages);
		w->u.reg.page_shift = ilog2(mr->ibmr.page_size);
		break;
	}
	case RHN_OP_LOCAL_INV:
		w->remote_key = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	}
	slots = rhn_wqe_finish(k->wqe, rhinet_kqp_put_sges(k, wr), NULL);
	if (!slots)
		return -EINVAL;
	rhinet_kqp_commit(k, wr->wr_id, slots);
	return slots;
}

int rhinet_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhinet_dev *rdev = to_rib(ibqp->device)->rdev;
	struct rhinet_kqp *k = qp->k;
	unsigned long flags;
	bool posted = false;
	int ret = 0;

	if (!k || rhinet_dev_dead(rdev)) {
		/* User QPs post from user space; a dead NIC takes nothing. */
		*bad_wr = wr;
		return k ? -EIO : -EOPNOTSUPP;
	}
	spin_lock_irqsave(&k->sq_lock, flags);
	for (; wr; wr = wr->next) {
		ret = qp->nic_type == RHN_QP_RC ? rhinet_kqp_build_rc(qp, wr) :
						  rhinet_kqp_build_ud(qp, wr);
		if (ret < 0)
			break;
		posted = true;
		ret = 0;
	}
	if (posted) {
		/* WQEs before the producer index, the kick after both. */
		dma_wmb();
		WRITE_ONCE(rhinet_kqp_records(k)->sq.producer_index,
			   cpu_to_le32(k->sq_pi));
		writel(qp->qpn, rdev->kernel_db + RHN_DB_SQ);
	}
	spin_unlock_irqrestore(&k->sq_lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int rhinet_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhinet_dev *rdev = to_rib(ibqp->device)->rdev;
	struct rhinet_kqp *k = qp->k;
	struct rhn_recv_wqe *w;
	unsigned long flags;
	bool posted = false;
	int ret = 0, i;

	if (!k || rhinet_dev_dead(rdev)) {
		*bad_wr = wr;
		return k ? -EIO : -EOPNOTSUPP;
	}
	spin_lock_irqsave(&k->rq_lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > k->max_recv_sge) {
			ret = -EINVAL;
			break;
		}
		if (k->rq_pi - k->rq_ci >= k->rq_depth) {
			ret = -ENOMEM;
			break;
		}
		w = rhinet_kqp_rq(k, k->rq_pi);
		memset(w, 0, sizeof(*w));
		w->wqe_index = cpu_to_le16(k->rq_pi);
		w->num_sge = cpu_to_le16(wr->num_sge);
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = cpu_to_le64(wr->sg_list[i].addr);
			w->sge[i].length = cpu_to_le32(wr->sg_list[i].length);
			w->sge[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
		}
		k->rq_wr_id[k->rq_pi & (k->rq_depth - 1)] = wr->wr_id;
		k->rq_pi++;
		posted = true;
	}
	if (posted) {
		dma_wmb();
		WRITE_ONCE(rhinet_kqp_records(k)->rq.producer_index,
			   cpu_to_le32(k->rq_pi));
		writel(qp->qpn, rdev->kernel_db + RHN_DB_RQ);
	}
	spin_unlock_irqrestore(&k->rq_lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* The work completion opcode of a send queue CQE. */
static enum ib_wc_opcode rhinet_wc_opcode(u8 cqe_op)
{
	switch (cqe_op) {
	case RHN_CQE_OP_WRITE:
		return IB_WC_RDMA_WRITE;
	case RHN_CQE_OP_READ:
		return IB_WC_RDMA_READ;
	case RHN_CQE_OP_CMP_SWAP:
		return IB_WC_COMP_SWAP;
	case RHN_CQE_OP_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case RHN_CQE_OP_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case RHN_CQE_OP_REG_MR:
		return IB_WC_REG_MR;
	case RHN_CQE_OP_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/* Turns a CQE of kernel QP @qp into @wc and retires its WQE. */
static void rhinet_kqp_complete(struct rhinet_qp *qp, const struct rhn_cqe *e,
				struct ib_wc *wc)
{
	struct rhinet_kqp *k = qp->k;
	u32 index;

	memset(wc, 0, sizeof(*wc));
	wc->qp = &qp->ibqp;
	/* NIC status values are IB's (hw_queues.h). */
	/* A status this driver does not know is a general error. */
	wc->status = e->status <= IB_WC_GENERAL_ERR ? e->status :
						      IB_WC_GENERAL_ERR;
	wc->vendor_err = le32_to_cpu(e->vendor_err);
	wc->byte_len = le32_to_cpu(e->byte_len);
	wc->port_num = 1;
	if (e->flags & RHN_CQE_F_SQ) {
		spin_lock(&k->sq_lock);
		index = rhinet_widen(k->sq_ci, le16_to_cpu(e->wqe_index));
		wc->wr_id = k->sq_wr_id[index & (k->sq_depth - 1)];
		k->sq_ci = index + k->sq_slots[index & (k->sq_depth - 1)];
		spin_unlock(&k->sq_lock);
		wc->opcode = rhinet_wc_opcode(e->opcode);
		return;
	}
	spin_lock(&k->rq_lock);
	index = rhinet_widen(k->rq_ci, le16_to_cpu(e->wqe_index));
	wc->wr_id = k->rq_wr_id[index & (k->rq_depth - 1)];
	k->rq_ci = index + 1;
	spin_unlock(&k->rq_lock);
	wc->opcode = e->opcode == RHN_CQE_OP_RECV_WRITE_IMM ?
			     IB_WC_RECV_RDMA_WITH_IMM :
			     IB_WC_RECV;
	wc->src_qp = le32_to_cpu(e->src_qpn);
	if (e->flags & RHN_CQE_F_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)e->imm_data;
	}
	if (e->flags & RHN_CQE_F_INV) { /* the key shares imm_data's bytes */
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = le32_to_cpu(e->imm_data);
	}
	if (qp->nic_type != RHN_QP_UD)
		return;
	if (e->flags & RHN_CQE_F_GRH)
		wc->wc_flags |= IB_WC_GRH;
	/* Which header the NIC wrote ahead of the MAD: ib_cm parses it. */
	wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	if (e->flags & RHN_CQE_F_NET_IPV4)
		wc->network_hdr_type = RDMA_NETWORK_IPV4;
	else if (e->flags & RHN_CQE_F_NET_IPV6)
		wc->network_hdr_type = RDMA_NETWORK_IPV6;
	else
		wc->network_hdr_type = RDMA_NETWORK_ROCE_V1;
}

static void rhinet_flush_wc(struct ib_wc *wc, struct rhinet_qp *qp, u64 wr_id,
			    enum ib_wc_opcode opcode)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = IB_WC_WR_FLUSH_ERR;
	wc->opcode = opcode;
	wc->qp = &qp->ibqp;
	wc->port_num = 1;
}

/*
 * A dead NIC completes nothing: the work still posted to the kernel QPs
 * of @cq completes here with a flush error (cq->k.lock held; the QP table's
 * lock keeps user QPs from going away while they are passed over).
 */
static int rhinet_kcq_flush(struct rhinet_ib *ib, struct rhinet_cq *cq,
			    int num, struct ib_wc *wc)
{
	struct rhinet_qp *qp;
	unsigned long index;
	struct rhinet_kqp *k;
	u32 slot;
	int n = 0;

	xa_lock(&ib->qps);
	xa_for_each(&ib->qps, index, qp) {
		k = qp->k;
		if (!k)
			continue;
		spin_lock(&k->sq_lock);
		while (to_rcq(qp->ibqp.send_cq) == cq && n < num &&
		       k->sq_ci != k->sq_pi) {
			slot = k->sq_ci & (k->sq_depth - 1);
			rhinet_flush_wc(&wc[n++], qp, k->sq_wr_id[slot],
					IB_WC_SEND);
			k->sq_ci += k->sq_slots[slot];
		}
		spin_unlock(&k->sq_lock);
		spin_lock(&k->rq_lock);
		while (to_rcq(qp->ibqp.recv_cq) == cq && n < num &&
		       k->rq_ci != k->rq_pi) {
			slot = k->rq_ci & (k->rq_depth - 1);
			rhinet_flush_wc(&wc[n++], qp, k->rq_wr_id[slot],
					IB_WC_RECV);
			k->rq_ci++;
		}
		spin_unlock(&k->rq_lock);
	}
	xa_unlock(&ib->qps);
	return n;
}

int rhinet_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct rhinet_ib *ib = to_rib(ibcq->device);
	struct rhinet_cq *cq = to_rcq(ibcq);
	struct rhinet_qp *qp;
	struct rhn_cqe e;
	unsigned long flags;
	int n = 0;

	if (cq->user)
		return -EOPNOTSUPP; /* user CQs are polled in user space */
	spin_lock_irqsave(&cq->k.lock, flags);
	while (n < num &&
	       rhinet_next_cqe(cq->k.kbuf.va, cq->k.depth, &cq->k.ci, &e)) {
		qp = xa_load(&ib->qps, le32_to_cpu(e.qpn));
		if (!qp || !qp->k)
			continue; /* its QP is gone */
		rhinet_kqp_complete(qp, &e, &wc[n++]);
	}
	if (n < num && rhinet_dev_dead(ib->rdev))
		n += rhinet_kcq_flush(ib, cq, num - n, wc + n);
	WRITE_ONCE(rhinet_kcq_record(cq)->consumer_index, cpu_to_le32(cq->k.ci));
	spin_unlock_irqrestore(&cq->k.lock, flags);
	return n;
}

int rhinet_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rhinet_dev *rdev = to_rib(ibcq->device)->rdev;
	struct rhinet_cq *cq = to_rcq(ibcq);
	u32 arm = cq->cqn;
	unsigned long irqflags;
	int missed = 0;

	if (cq->user)
		return -EOPNOTSUPP;
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED)
		arm |= RHN_DB_CQ_SOLICITED;
	/* The NIC raises an event for CQEs added after this write only;
	 * REPORT_MISSED_EVENTS tells the caller of any already there.
	 */
	writel(arm, rdev->kernel_db + RHN_DB_CQ_ARM);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		spin_lock_irqsave(&cq->k.lock, irqflags);
		missed = rhinet_cqe_ready(cq->k.kbuf.va, cq->k.depth, cq->k.ci);
		spin_unlock_irqrestore(&cq->k.lock, irqflags);
	}
	return missed;
}

/* ---- GID table: the NIC takes outgoing GRHs' source GIDs from it --------- */

static int rhinet_set_gid(const struct ib_gid_attr *attr, const u8 *gid)
{
	struct rhinet_ib *ib = to_rib(attr->device);
	struct rhn_admin_cmd cmd = {};

	if (attr->index >= RHN_GID_TABLE_LEN)
		return -EINVAL;
	cmd.hdr.opcode = RHN_ADMIN_SET_GID;
	cmd.u.set_gid.index = cpu_to_le32(attr->index);
	/* The NIC builds the network header the entry's type calls for. */
	cmd.u.set_gid.type = attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP ?
				     RHN_GID_ROCE_V2 :
				     RHN_GID_ROCE_V1;
	if (gid)
		memcpy(cmd.u.set_gid.gid, gid, sizeof(cmd.u.set_gid.gid));
	return rhinet_ctx_exec(ib, 0, &cmd, NULL);
}

int rhinet_add_gid(const struct ib_gid_attr *attr, void **context)
{
	return rhinet_set_gid(attr, attr->gid.raw);
}

int rhinet_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return rhinet_set_gid(attr, NULL);
}
