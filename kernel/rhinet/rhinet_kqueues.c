// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's queue objects: CQs and QPs of ib_core's own clients (the
 * management QP and the RC QPs of the kernel's RDMA consumers), created
 * and destroyed here for rhinet_queues.c. Their rings and records are
 * DMA-coherent memory of the kernel's NIC context, which the NIC reaches
 * by bus address. Posting and polling them is rhinet_kverbs.c's.
 */
#include <linux/dma-mapping.h>

#include "rhinet_obj.h"

/* Kernel CQs: at most 2^16 CQEs (2 MiB of DMA-coherent memory). */
#define RHINET_KCQ_MAX_LOG 16

static int rhinet_kbuf_alloc(struct rhinet_ib *ib, struct rhinet_kbuf *kbuf,
			     size_t size)
{
	kbuf->size = PAGE_ALIGN(size);
	kbuf->va = dma_alloc_coherent(&ib->rdev->pdev->dev, kbuf->size,
				      &kbuf->dma, GFP_KERNEL);
	return kbuf->va ? 0 : -ENOMEM;
}

void rhinet_kbuf_free(struct rhinet_ib *ib, struct rhinet_kbuf *kbuf)
{
	if (!kbuf->va)
		return;
	dma_free_coherent(&ib->rdev->pdev->dev, kbuf->size, kbuf->va,
			  kbuf->dma);
	kbuf->va = NULL;
}

/* ---- CQ ------------------------------------------------------------------ */

int rhinet_kcq_create(struct rhinet_ib *ib, struct rhinet_cq *cq,
		      const struct ib_cq_init_attr *attr)
{
	u32 log = order_base_2(max(attr->cqe, 2u));
	size_t ring_bytes = (size_t)RHN_CQE_SIZE << log;
	struct rhn_admin_cmd cmd = {};
	int ret;

	if (attr->flags)
		return -EOPNOTSUPP;
	/* A kernel CQ's ring is one DMA-coherent allocation: not the 4M
	 * entries (128 MiB) a user CQ in the process's pinned memory may
	 * have, at most RHINET_KCQ_MAX_LOG.
	 */
	if (!attr->cqe || log > RHINET_KCQ_MAX_LOG ||
	    log > le32_to_cpu(ib->rdev->attr.max_cq_log_depth))
		return -EINVAL;
	ret = rhinet_kbuf_alloc(ib, &cq->k.kbuf,
				ring_bytes + sizeof(struct rhn_cq_record));
	if (ret)
		return ret;
	cq->k.depth = 1u << log;
	spin_lock_init(&cq->k.lock);

	cmd.hdr.opcode = RHN_ADMIN_CREATE_CQ;
	cmd.u.create_cq.ring = rhinet_phys_ref(cq->k.kbuf.dma);
	cmd.u.create_cq.record = rhinet_phys_ref(cq->k.kbuf.dma + ring_bytes);
	cmd.u.create_cq.eqn =
		cpu_to_le32(rhinet_eq_of(ib->rdev, attr->comp_vector)->eqn);
	cmd.u.create_cq.log_depth = log;
	ret = rhinet_ctx_exec(ib, 0, &cmd, &cq->cqn);
	if (ret)
		goto err_free;
	ret = xa_insert_irq(&ib->cqs, cq->cqn, cq, GFP_KERNEL);
	if (ret)
		goto err_destroy;
	cq->ibcq.cqe = cq->k.depth;
	return 0;

err_destroy:
	rhinet_destroy_object(ib, 0, RHN_ADMIN_DESTROY_CQ, cq->cqn);
err_free:
	rhinet_kbuf_free(ib, &cq->k.kbuf);
	return ret;
}

/* The NIC object first (no more CQEs or events), then the ring. */
int rhinet_kcq_destroy(struct rhinet_ib *ib, struct rhinet_cq *cq)
{
	int ret = rhinet_destroy_object(ib, 0, RHN_ADMIN_DESTROY_CQ, cq->cqn);

	if (ret)
		return ret;
	rhinet_eq_drain(ib->rdev);
	xa_erase_irq(&ib->cqs, cq->cqn);
	rhinet_kbuf_free(ib, &cq->k.kbuf);
	return 0;
}

/* ---- QP ------------------------------------------------------------------ */

static int rhinet_kqp_size(struct rhinet_ib *ib, struct rhinet_kqp *k,
			   struct ib_qp_init_attr *attr)
{
	u32 max_log = le32_to_cpu(ib->rdev->attr.max_wq_log_depth);
	struct ib_qp_cap *cap = &attr->cap;
	bool gsi = attr->qp_type == IB_QPT_GSI;
	u32 slots = rhinet_wqe_slots(cap, gsi);
	u64 sq_slots = (u64)max(cap->max_send_wr, 1u) * slots;

	if (attr->qp_type == IB_QPT_XRC_TGT) {
		/* No queues of its own: the NIC's smallest SQ, never posted. */
		if (attr->create_flags || attr->srq ||
		    !(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_XRC))
			return -EOPNOTSUPP;
		k->sq_depth = 2;
		memset(cap, 0, sizeof(*cap));
		return 0;
	}
	if ((!gsi && attr->qp_type != IB_QPT_RC) || attr->srq ||
	    attr->create_flags || !attr->send_cq || !attr->recv_cq)
		return -EOPNOTSUPP;
	/* Kernel CQs only: the NIC checks both are in the kernel context. */
	if (to_rcq(attr->send_cq)->user || to_rcq(attr->recv_cq)->user)
		return -EINVAL;
	if (cap->max_inline_data || slots > RHN_WQE_MAX_SLOTS ||
	    cap->max_recv_sge > RHN_RQ_MAX_SGES ||
	    sq_slots > (1ull << max_log) ||
	    cap->max_recv_wr > (1u << max_log))
		return -EINVAL;
	k->sq_depth = roundup_pow_of_two(max_t(u64, sq_slots, 2));
	k->rq_depth = roundup_pow_of_two(max(cap->max_recv_wr, 2u));
	k->max_send_sge = cap->max_send_sge;
	k->max_recv_sge = cap->max_recv_sge;
	k->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	cap->max_send_wr = k->sq_depth / slots;
	cap->max_recv_wr = k->rq_depth;
	return 0;
}

int rhinet_kqp_create(struct rhinet_ib *ib, struct rhinet_qp *qp,
		      struct ib_qp_init_attr *attr)
{
	struct rhinet_dev *rdev = ib->rdev;
	struct rhn_admin_create_qp *c;
	struct rhn_admin_cmd cmd = {};
	dma_addr_t rq_dma, rec_dma;
	struct rhinet_kqp *k;
	int ret;

	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	qp->k = k;
	mutex_init(&qp->lock);
	ret = rhinet_kqp_size(ib, k, attr);
	if (ret)
		goto err;
	spin_lock_init(&k->sq_lock);
	spin_lock_init(&k->rq_lock);
	k->sq_wr_id = kcalloc(k->sq_depth, sizeof(u64), GFP_KERNEL);
	k->sq_slots = kcalloc(k->sq_depth, 1, GFP_KERNEL);
	k->rq_wr_id = kcalloc(k->rq_depth, sizeof(u64), GFP_KERNEL);
	ret = -ENOMEM;
	if (!k->sq_wr_id || !k->sq_slots || !k->rq_wr_id)
		goto err;
	ret = rhinet_kbuf_alloc(ib, &k->kbuf,
				(size_t)RHN_SQ_SLOT_SIZE * k->sq_depth +
					(size_t)RHN_RQ_WQE_SIZE * k->rq_depth +
					sizeof(struct rhinet_kqp_records));
	if (ret)
		goto err;
	rq_dma = k->kbuf.dma + (size_t)RHN_SQ_SLOT_SIZE * k->sq_depth;
	rec_dma = rq_dma + (size_t)RHN_RQ_WQE_SIZE * k->rq_depth;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_QP;
	c = &cmd.u.create_qp;
	if (attr->qp_type == IB_QPT_XRC_TGT) {
		struct rhinet_xrcd *xrcd = to_rxrcd(attr->xrcd);

		c->pdn = cpu_to_le32(rdev->kernel_pdn);
		c->type = RHN_QP_XRC_RECV;
		c->xrcd = cpu_to_le32(xrcd->xrcdn);
		c->send_cqn = cpu_to_le32(xrcd->cq->cqn);
		c->recv_cqn = c->send_cqn;
	} else {
		if (attr->qp_type == IB_QPT_GSI) {
			c->pdn = cpu_to_le32(rdev->kernel_pdn);
			c->type = RHN_QP_UD;
			c->flags = RHN_CREATE_QP_F_GSI;
		} else {
			c->pdn = cpu_to_le32(to_rpd(qp->ibqp.pd)->pdn);
			c->type = RHN_QP_RC;
		}
		c->send_cqn = cpu_to_le32(to_rcq(attr->send_cq)->cqn);
		c->recv_cqn = cpu_to_le32(to_rcq(attr->recv_cq)->cqn);
		c->rq_log_depth = ilog2(k->rq_depth);
		c->rq_ring = rhinet_phys_ref(rq_dma);
		c->rq_record = rhinet_phys_ref(rec_dma +
					       offsetof(struct rhinet_kqp_records,
							rq));
	}
	c->srqn = cpu_to_le32(RHN_NO_SRQ);
	c->sq_log_depth = ilog2(k->sq_depth);
	c->sq_ring = rhinet_phys_ref(k->kbuf.dma);
	c->sq_record = rhinet_phys_ref(rec_dma +
				       offsetof(struct rhinet_kqp_records, sq));
	ret = rhinet_ctx_exec(ib, 0, &cmd, &qp->qpn);
	if (ret)
		goto err;
	ret = xa_insert_irq(&ib->qps, qp->qpn, qp, GFP_KERNEL);
	if (ret) {
		rhinet_destroy_object(ib, 0, RHN_ADMIN_DESTROY_QP, qp->qpn);
		goto err;
	}
	qp->nic_type = c->type;
	qp->ibqp.qp_num = qp->qpn; /* RHN_QPN_GSI for the management QP */
	qp->attr.cap = attr->cap;
	return 0;

err:
	rhinet_kqp_free(ib, qp);
	return ret;
}

/* Takes @qpn's CQEs out of kernel CQ @cq (its lock held): later entries
 * of other QPs move up, into slots of the same lap (owner bits kept).
 */
static void rhinet_kcq_clean(struct rhinet_cq *cq, u32 qpn)
{
	struct rhn_cqe *ring = cq->k.kbuf.va;
	u32 end = cq->k.ci, removed = 0, i;

	while (end - cq->k.ci < cq->k.depth &&
	       rhinet_cqe_ready(ring, cq->k.depth, end))
		end++;
	dma_rmb(); /* the entries after their owner bits */
	for (i = end; i != cq->k.ci;) {
		struct rhn_cqe e, *dst;

		i--;
		e = ring[i % cq->k.depth];
		if (le32_to_cpu(e.qpn) == qpn) {
			removed++;
			continue;
		}
		if (!removed)
			continue;
		dst = &ring[(i + removed) % cq->k.depth];
		e.flags = (e.flags & ~RHN_CQE_F_OWNER) |
			  (dst->flags & RHN_CQE_F_OWNER);
		*dst = e;
	}
	if (removed) {
		cq->k.ci += removed;
		WRITE_ONCE(rhinet_kcq_record(cq)->consumer_index,
			   cpu_to_le32(cq->k.ci));
	}
}

/* A destroyed kernel QP: its CQEs leave its CQs, and it leaves the QP
 * table, under the CQ locks that pollers hold while they use a QP they
 * looked up, so none still holds it afterwards.
 */
void rhinet_kqp_forget(struct rhinet_ib *ib, struct rhinet_qp *qp)
{
	struct rhinet_cq *scq, *rcq, *first, *second;
	unsigned long flags;

	/* An XRC target QP has no CQs that pollers reach it through. */
	if (!qp->ibqp.send_cq) {
		xa_erase_irq(&ib->qps, qp->qpn);
		return;
	}
	scq = to_rcq(qp->ibqp.send_cq);
	rcq = to_rcq(qp->ibqp.recv_cq);
	first = scq < rcq ? scq : rcq;
	second = scq < rcq ? rcq : scq;

	spin_lock_irqsave(&first->k.lock, flags);
	if (second != first)
		spin_lock_nested(&second->k.lock, SINGLE_DEPTH_NESTING);
	if (!first->user)
		rhinet_kcq_clean(first, qp->qpn);
	if (second != first && !second->user)
		rhinet_kcq_clean(second, qp->qpn);
	xa_lock(&ib->qps); /* interrupts are off already */
	__xa_erase(&ib->qps, qp->qpn);
	xa_unlock(&ib->qps);
	if (second != first)
		spin_unlock(&second->k.lock);
	spin_unlock_irqrestore(&first->k.lock, flags);
}

void rhinet_kqp_free(struct rhinet_ib *ib, struct rhinet_qp *qp)
{
	struct rhinet_kqp *k = qp->k;

	if (!k)
		return;
	rhinet_kbuf_free(ib, &k->kbuf);
	kfree(k->sq_wr_id);
	kfree(k->sq_slots);
	kfree(k->rq_wr_id);
	kfree(k);
	qp->k = NULL;
}

/* ---- XRC domains ------------------------------------------------------- */

/* The NIC takes any nonzero number; the kernel hands out one per domain. */
#define RHINET_MAX_XRCDS 0xffff

int rhinet_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibxrcd->device);
	struct rhinet_xrcd *xrcd = to_rxrcd(ibxrcd);
	struct ib_cq_init_attr cq_attr = { .cqe = 1 };
	int id, ret;

	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_XRC))
		return -EOPNOTSUPP;
	id = ida_alloc_range(&ib->xrcds, 1, RHINET_MAX_XRCDS, GFP_KERNEL);
	if (id < 0)
		return id;
	xrcd->cq = kzalloc(sizeof(*xrcd->cq), GFP_KERNEL);
	if (!xrcd->cq) {
		ret = -ENOMEM;
		goto err_id;
	}
	ret = rhinet_kcq_create(ib, xrcd->cq, &cq_attr);
	if (ret)
		goto err_cq;
	xrcd->xrcdn = id;
	return 0;

err_cq:
	kfree(xrcd->cq);
err_id:
	ida_free(&ib->xrcds, id);
	return ret;
}

int rhinet_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibxrcd->device);
	struct rhinet_xrcd *xrcd = to_rxrcd(ibxrcd);
	int ret;

	/* ib_core frees a domain only once its target QPs and SRQs are
	 * gone, so the NIC holds nothing of it.
	 */
	ret = rhinet_kcq_destroy(ib, xrcd->cq);
	if (ret)
		return ret;
	kfree(xrcd->cq);
	ida_free(&ib->xrcds, xrcd->xrcdn);
	return 0;
}
