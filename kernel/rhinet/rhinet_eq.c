// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel event queue: completion, error and port events from the NIC,
 * one MSI-X vector. The NIC raises the vector once per arm; the handler
 * consumes every new entry, then re-arms with the new consumer index.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>

#include "rhinet.h"

#define EQ_DEPTH BIT(RHINET_EQ_LOG_DEPTH)

static void rhinet_eq_arm(struct rhinet_dev *rdev)
{
	struct rhinet_eq *eq = &rdev->eq;
	u64 db = eq->consumer | (u64)eq->eqn << RHN_EQ_DB_EQN_SHIFT |
		 RHN_EQ_DB_ARM;

	writeq(db, rdev->regs + RHN_REG_EQ_DOORBELL);
}

static irqreturn_t rhinet_eq_irq(int irq, void *data)
{
	struct rhinet_dev *rdev = data;
	struct rhinet_eq *eq = &rdev->eq;

	for (;;) {
		struct rhn_eqe *e = &eq->ring[eq->consumer % EQ_DEPTH];
		u8 phase = ((eq->consumer / EQ_DEPTH) & 1) ^ 1;

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
			dev_info(&rdev->pdev->dev, "link %s\n",
				 rdev->link_up ? "up" : "down");
			rhinet_net_link_event(rdev, rdev->link_up);
			rhinet_ib_event(rdev, e);
			break;
		default:
			rdev->async_events++;
			rhinet_ib_event(rdev, e);
			break;
		}
		eq->consumer++;
	}
	rhinet_eq_arm(rdev);
	return IRQ_HANDLED;
}

int rhinet_eq_init(struct rhinet_dev *rdev)
{
	struct rhinet_eq *eq = &rdev->eq;
	struct device *dev = &rdev->pdev->dev;
	struct rhn_admin_cmd cmd = {};
	int ret;

	eq->ring = dma_alloc_coherent(dev, EQ_DEPTH * RHN_EQE_SIZE, &eq->dma,
				      GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	eq->consumer = 0;
	ret = request_irq(pci_irq_vector(rdev->pdev, RHINET_EQ_VECTOR),
			  rhinet_eq_irq, 0, DRV_NAME "-eq", rdev);
	if (ret)
		goto err_free;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_EQ;
	cmd.u.create_eq.ring_addr = cpu_to_le64(eq->dma);
	cmd.u.create_eq.vector = cpu_to_le16(RHINET_EQ_VECTOR);
	cmd.u.create_eq.log_depth = RHINET_EQ_LOG_DEPTH;
	ret = rhinet_admin_exec(rdev, &cmd, &eq->eqn);
	if (ret) {
		dev_err(dev, "cannot create the event queue: %d\n", ret);
		goto err_irq;
	}
	rhinet_eq_arm(rdev);
	return 0;

err_irq:
	free_irq(pci_irq_vector(rdev->pdev, RHINET_EQ_VECTOR), rdev);
err_free:
	dma_free_coherent(dev, EQ_DEPTH * RHN_EQE_SIZE, eq->ring, eq->dma);
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
	dma_free_coherent(&rdev->pdev->dev, EQ_DEPTH * RHN_EQE_SIZE, eq->ring,
			  eq->dma);
	eq->ring = NULL;
}
