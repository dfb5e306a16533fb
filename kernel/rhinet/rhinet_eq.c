// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel event queue: completion, error and port events from the NIC,
 * one MSI-X vector. The NIC raises the vector once per arm; the handler
 * consumes every new entry, then re-arms with the new consumer index.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/log2.h>

#include "rhinet.h"

/* Entries handled per wake-up before the thread lets others run, and how
 * often within a pass the consumer index goes back to the NIC (it posts no
 * completion event into the last entries it has not been told are free).
 */
#define EQ_BUDGET 256
#define EQ_REPORT_EVERY 64

static void rhinet_eq_doorbell(struct rhinet_dev *rdev, bool arm)
{
	struct rhinet_eq *eq = &rdev->eq;
	u64 db = eq->consumer | (u64)eq->eqn << RHN_EQ_DB_EQN_SHIFT |
		 (arm ? RHN_EQ_DB_ARM : 0);

	writeq(db, rdev->regs + RHN_REG_EQ_DOORBELL);
}

/* The hard handler only wakes the thread: events go to ib_core and NAPI,
 * which take locks and may run long, in process context.
 */
static irqreturn_t rhinet_eq_irq(int irq, void *data)
{
	return IRQ_WAKE_THREAD;
}

/* Takes up to @budget entries the NIC has written (eq->lock held). */
static unsigned int rhinet_eq_process(struct rhinet_dev *rdev,
				      unsigned int budget)
{
	struct rhinet_eq *eq = &rdev->eq;
	unsigned int n;

	/* NAPI and irq_poll raise softirqs: let them run when we are done. */
	local_bh_disable();
	for (n = 0; n < budget; n++) {
		struct rhn_eqe *e = &eq->ring[eq->consumer & (eq->depth - 1)];
		u8 phase = ((eq->consumer >> eq->log_depth) & 1) ^ 1;

		if ((READ_ONCE(e->owner) & 1) != phase)
			break;
		dma_rmb(); /* the entry after its owner byte */
		switch (e->type) {
		case RHN_EQE_COMPLETION:
			rhinet_net_cq_event(rdev, le32_to_cpu(e->object));
			rhinet_ib_event(rdev, e);
			break;
		case RHN_EQE_PORT_CHANGE:
			WRITE_ONCE(rdev->link_up, !!le64_to_cpu(e->data));
			rhinet_net_link_event(rdev, rdev->link_up);
			rhinet_ib_event(rdev, e);
			break;
		default:
			rdev->async_events++;
			rhinet_ib_event(rdev, e);
			break;
		}
		eq->consumer++;
		if (!(eq->consumer % EQ_REPORT_EVERY))
			rhinet_eq_doorbell(rdev, false);
	}
	local_bh_enable();
	return n;
}

static irqreturn_t rhinet_eq_thread(int irq, void *data)
{
	struct rhinet_dev *rdev = data;

	mutex_lock(&rdev->eq.lock);
	rhinet_eq_process(rdev, EQ_BUDGET);
	/* Re-armed with what is left: the NIC interrupts again at once if
	 * entries remain (budget used up), else at the next one.
	 */
	rhinet_eq_doorbell(rdev, true);
	mutex_unlock(&rdev->eq.lock);
	return IRQ_HANDLED;
}

/* The NIC has destroyed an object: the events it wrote for it before its
 * destroy completed are in the ring now, and are taken here, before the
 * object's number can be given to another (a stale event would reach
 * that one otherwise).
 */
void rhinet_eq_drain(struct rhinet_dev *rdev)
{
	if (!rdev->eq.ring)
		return;
	mutex_lock(&rdev->eq.lock);
	rhinet_eq_process(rdev, UINT_MAX);
	rhinet_eq_doorbell(rdev, false);
	mutex_unlock(&rdev->eq.lock);
}

int rhinet_eq_init(struct rhinet_dev *rdev)
{
	struct rhinet_eq *eq = &rdev->eq;
	struct device *dev = &rdev->pdev->dev;
	struct rhn_admin_cmd cmd = {};
	u32 cqs = le32_to_cpu(rdev->attr.max_cqs);
	int ret;

	/* One entry for every CQ (a CQ has at most one event outstanding
	 * per arm, and the NIC holds back, never drops, those it has no
	 * room for) and room for the device's own events.
	 */
	eq->log_depth = clamp_t(u32, order_base_2(cqs + 64), RHINET_EQ_MIN_LOG,
				RHINET_EQ_MAX_LOG);
	eq->depth = 1u << eq->log_depth;
	eq->ring = dma_alloc_coherent(dev, eq->depth * RHN_EQE_SIZE, &eq->dma,
				      GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	eq->consumer = 0;
	mutex_init(&eq->lock);
	snprintf(rdev->eq_irq_name, sizeof(rdev->eq_irq_name), "%s-eq@%s",
		 DRV_NAME, pci_name(rdev->pdev));
	ret = request_threaded_irq(pci_irq_vector(rdev->pdev, RHINET_EQ_VECTOR),
				   rhinet_eq_irq, rhinet_eq_thread, IRQF_ONESHOT,
				   rdev->eq_irq_name, rdev);
	if (ret)
		goto err_free;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_EQ;
	cmd.u.create_eq.ring_addr = cpu_to_le64(eq->dma);
	cmd.u.create_eq.vector = cpu_to_le16(RHINET_EQ_VECTOR);
	cmd.u.create_eq.log_depth = eq->log_depth;
	ret = rhinet_admin_exec(rdev, &cmd, &eq->eqn);
	if (ret) {
		dev_err(dev, "cannot create the event queue: %d\n", ret);
		goto err_irq;
	}
	rhinet_eq_doorbell(rdev, true);
	return 0;

err_irq:
	free_irq(pci_irq_vector(rdev->pdev, RHINET_EQ_VECTOR), rdev);
err_free:
	dma_free_coherent(dev, eq->depth * RHN_EQE_SIZE, eq->ring, eq->dma);
	eq->ring = NULL;
	return ret;
}

/* The caller has reset the NIC: it writes no more entries. */
void rhinet_eq_fini(struct rhinet_dev *rdev)
{
	struct rhinet_eq *eq = &rdev->eq;

	if (!eq->ring)
		return;
	free_irq(pci_irq_vector(rdev->pdev, RHINET_EQ_VECTOR), rdev);
	dma_free_coherent(&rdev->pdev->dev, eq->depth * RHN_EQE_SIZE, eq->ring,
			  eq->dma);
	eq->ring = NULL;
}
