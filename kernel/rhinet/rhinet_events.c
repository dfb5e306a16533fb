// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Events from the kernel's event queues to ib_core: completion events to
 * their CQ's handler, QP, CQ and SRQ errors and limits to their objects'
 * event handlers, port changes to the port work, pin-down requests to
 * rhinet_pindown.c. The hardware layer calls these through the consumer
 * ops rhinet_ib.c sets.
 */

#include "rhinet_ib.h"

/* ---- events from the kernel event queues (their threads) ----------------- */

void rhinet_ib_event(struct rhinet_dev *rdev, const struct rhn_eqe *eqe)
{
	struct rhinet_ib *ib = READ_ONCE(rdev->ib);
	u32 object = le32_to_cpu(eqe->object);
	struct ib_event event = {};
	struct rhinet_srq *srq;
	struct rhinet_qp *qp;
	struct rhinet_cq *cq;

	if (!ib)
		return;
	/* Holding the xarray lock keeps destroy from finishing meanwhile. */
	switch (eqe->type) {
	case RHN_EQE_COMPLETION:
	case RHN_EQE_CQ_ERROR:
		xa_lock(&ib->cqs);
		cq = xa_load(&ib->cqs, object);
		if (cq && eqe->type == RHN_EQE_COMPLETION &&
		    cq->ibcq.comp_handler) {
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		} else if (cq && cq->ibcq.event_handler) {
			event.device = &ib->ibdev;
			event.event = IB_EVENT_CQ_ERR;
			event.element.cq = &cq->ibcq;
			cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
		}
		xa_unlock(&ib->cqs);
		break;
	case RHN_EQE_QP_FATAL:
		xa_lock(&ib->qps);
		qp = xa_load(&ib->qps, object);
		if (qp && qp->ibqp.event_handler) {
			event.device = &ib->ibdev;
			event.event = IB_EVENT_QP_FATAL;
			event.element.qp = &qp->ibqp;
			qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
		}
		xa_unlock(&ib->qps);
		break;
	case RHN_EQE_SRQ_LIMIT:
		xa_lock(&ib->srqs);
		srq = xa_load(&ib->srqs, object);
		if (srq && srq->ibsrq.event_handler) {
			event.device = &ib->ibdev;
			event.event = IB_EVENT_SRQ_LIMIT_REACHED;
			event.element.srq = &srq->ibsrq;
			srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
		}
		xa_unlock(&ib->srqs);
		break;
	case RHN_EQE_PORT_CHANGE:
		schedule_work(&ib->port_work);
		break;
	case RHN_EQE_PD_REQUEST:
	case RHN_EQE_PD_RELEASE:
		rhinet_od_queue(ib, eqe);
		break;
	}
}

/*
 * The device failed (rhinet_health.c): users hear DEVICE_FATAL, the port
 * goes down, and kernel CQs' consumers are woken to poll their flushed
 * work (rhinet_poll_cq).
 */
void rhinet_ib_dead(struct rhinet_dev *rdev)
{
	struct rhinet_ib *ib = READ_ONCE(rdev->ib);
	struct ib_event event = {};
	struct rhinet_cq *cq;
	unsigned long index;

	if (!ib)
		return;
	event.device = &ib->ibdev;
	event.event = IB_EVENT_DEVICE_FATAL;
	event.element.port_num = 1;
	ib_dispatch_event(&event);
	schedule_work(&ib->port_work);
	xa_lock_irq(&ib->cqs);
	xa_for_each(&ib->cqs, index, cq)
		if (!cq->user && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	xa_unlock_irq(&ib->cqs);
}
