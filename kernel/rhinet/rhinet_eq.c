// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's event queues, one per completion vector, each with its own
 * MSI-X vector: completion events of the CQs on that vector; the first
 * queue also takes the device's own events (port, QP, SRQ, probes). The
 * NIC raises a queue's vector once per arm; its thread consumes the new
 * entries, then re-arms with the new consumer index.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/log2.h>
#include <net/devlink.h>

#include "rhinet_hw.h"

/* Entries handled per wake-up before the thread lets others run, and how
 * often within a pass the consumer index goes back to the NIC (it posts no
 * completion event into the last entries it has not been told are free).
 */
#define EQ_BUDGET 256
#define EQ_REPORT_EVERY 64
/* How often the queues are looked at for a lost interrupt. */
#define RHINET_EQ_WATCH_MS 1000

static void rhinet_eq_doorbell(struct rhinet_eq *eq, bool arm)
{
	u64 db = eq->consumer | (u64)eq->eqn << RHN_EQ_DB_EQN_SHIFT |
		 (arm ? RHN_EQ_DB_ARM : 0);

	writeq(db, eq->rdev->regs + RHN_REG_EQ_DOORBELL);
}

/* The hard handler only wakes the thread: events go to the consumers
 * (ib_core, NAPI), which take locks and may run long, in process context.
 */
static irqreturn_t rhinet_eq_irq(int irq, void *data)
{
	return IRQ_WAKE_THREAD;
}

/* Takes up to @budget entries the NIC has written (eq->lock held). */
static unsigned int rhinet_eq_process(struct rhinet_eq *eq,
				      unsigned int budget)
{
	struct rhinet_dev *rdev = eq->rdev;
	unsigned int n;

	/* NAPI and irq_poll raise softirqs: let them run when we are done. */
	local_bh_disable();
	for (n = 0; n < budget; n++) {
		struct rhn_eqe *e = &eq->ring[eq->consumer & (eq->depth - 1)];
		u8 phase = ((eq->consumer >> eq->log_depth) & 1) ^ 1;

		if ((READ_ONCE(e->owner) & 1) != phase)
			break;
		dma_rmb(); /* the entry after its owner byte */
		/* The device's own part first: the consumers read it. */
		if (e->type == RHN_EQE_PORT_CHANGE)
			WRITE_ONCE(rdev->link_up, !!le64_to_cpu(e->data));
		else if (e->type != RHN_EQE_COMPLETION)
			rdev->async_events++;
		rhinet_consumers_event(rdev, e);
		eq->consumer++;
		if (!(eq->consumer % EQ_REPORT_EVERY))
			rhinet_eq_doorbell(eq, false);
	}
	local_bh_enable();
	return n;
}

static irqreturn_t rhinet_eq_thread(int irq, void *data)
{
	struct rhinet_eq *eq = data;

	mutex_lock(&eq->lock);
	rhinet_eq_process(eq, EQ_BUDGET);
	/* Re-armed with what is left: the NIC interrupts again at once if
	 * entries remain (budget used up), else at the next one.
	 */
	rhinet_eq_doorbell(eq, true);
	mutex_unlock(&eq->lock);
	return IRQ_HANDLED;
}

/*
 * Takes every entry of every queue and reports the new consumer index;
 * @rearm (devlink's recovery of a queue whose interrupt was lost) also
 * arms each queue again and counts the recovery.
 */
static void rhinet_eq_take_all(struct rhinet_dev *rdev, bool rearm)
{
	u32 i;

	for (i = 0; i < rdev->nr_eqs; i++) {
		struct rhinet_eq *eq = &rdev->eqs[i];

		if (!eq->ring)
			continue;
		mutex_lock(&eq->lock);
		rhinet_eq_process(eq, UINT_MAX);
		rhinet_eq_doorbell(eq, rearm);
		if (rearm) {
			WRITE_ONCE(eq->recoveries, eq->recoveries + 1);
			eq->watch_waiting = false;
		}
		mutex_unlock(&eq->lock);
	}
}

/* The NIC has destroyed an object: the events it wrote for it before its
 * destroy completed are in the queues now, and are taken here, before the
 * object's number can be given to another (a stale event would reach
 * that one otherwise).
 */
void rhinet_eq_drain(struct rhinet_dev *rdev)
{
	rhinet_eq_take_all(rdev, false);
}

/*
 * Health, once a period: the queues whose next entry was already waiting
 * at the last check with no entry taken since. A queue whose handler runs
 * now is busy, not stalled.
 */
static u32 rhinet_eq_stalled(struct rhinet_dev *rdev)
{
	u32 i, stalled = 0;

	for (i = 0; i < rdev->nr_eqs; i++) {
		struct rhinet_eq *eq = &rdev->eqs[i];
		bool waiting;

		if (!eq->ring || !mutex_trylock(&eq->lock))
			continue;
		waiting = rhinet_eq_waiting(eq);
		if (waiting && eq->watch_waiting &&
		    eq->consumer == eq->watch_consumer)
			stalled++;
		eq->watch_waiting = waiting;
		eq->watch_consumer = eq->consumer;
		mutex_unlock(&eq->lock);
	}
	return stalled;
}

static int rhinet_eq_report_recover(struct devlink_health_reporter *reporter,
				    void *priv_ctx,
				    struct netlink_ext_ack *extack)
{
	struct rhinet_dev *rdev = devlink_health_reporter_priv(reporter);

	if (rhinet_dev_dead(rdev)) {
		NL_SET_ERR_MSG_MOD(extack, "the NIC is stopped: rebind the driver");
		return -EIO;
	}
	rhinet_eq_take_all(rdev, true);
	return 0;
}

static const struct devlink_health_reporter_ops rhinet_eq_reporter_ops = {
	.name = "eq",
	.diagnose = rhinet_devlink_diagnose,
	.dump = rhinet_devlink_dump,
	.recover = rhinet_eq_report_recover,
};

/*
 * Once a period: a queue whose next entry waited the whole period lost its
 * interrupt, and a count of events the NIC held back that grew means a
 * queue was full. Either goes to the eq reporter, and devlink recovers the
 * queues (at once, and again on every later report).
 */
static void rhinet_eq_watch(struct work_struct *work)
{
	struct rhinet_dev *rdev =
		container_of(to_delayed_work(work), struct rhinet_dev, eq_watch);
	u64 deferred;
	bool grew;

	if (rhinet_dev_dead(rdev))
		return; /* the fatal report said it all */
	deferred = readq(rdev->regs + RHN_REG_COUNTERS +
			 8 * RHN_CNT_EVENTS_DEFERRED);
	if (deferred == U64_MAX)
		goto again; /* gone from the bus: the health check's to tell */
	grew = deferred > rdev->events_deferred;
	rdev->events_deferred = deferred;
	if (rhinet_eq_stalled(rdev))
		rhinet_devlink_report(rdev, RHINET_REPORT_EQ,
				      "an event queue's next entry waited a whole period: its interrupt was lost");
	else if (grew)
		rhinet_devlink_report(rdev, RHINET_REPORT_EQ,
				      "the NIC held completion events back: an event queue was full");
again:
	schedule_delayed_work(&rdev->eq_watch,
			      msecs_to_jiffies(RHINET_EQ_WATCH_MS));
}

void rhinet_eq_sync(struct rhinet_dev *rdev)
{
	u32 i;

	for (i = 0; i < rdev->nr_eqs; i++)
		if (rdev->eqs[i].ring)
			synchronize_irq(pci_irq_vector(rdev->pdev,
						       rdev->eqs[i].vector));
}

static void rhinet_eq_free(struct rhinet_eq *eq)
{
	struct rhinet_dev *rdev = eq->rdev;

	if (!eq->ring)
		return;
	free_irq(pci_irq_vector(rdev->pdev, eq->vector), eq);
	dma_free_coherent(&rdev->pdev->dev, eq->depth * RHN_EQE_SIZE, eq->ring,
			  eq->dma);
	eq->ring = NULL;
}

static int rhinet_eq_create(struct rhinet_dev *rdev, u32 index)
{
	struct rhinet_eq *eq = &rdev->eqs[index];
	struct device *dev = &rdev->pdev->dev;
	struct rhn_admin_cmd cmd = {};
	u32 cqs = le32_to_cpu(rdev->attr.max_cqs);
	int ret;

	eq->rdev = rdev;
	eq->vector = RHINET_EQ_VECTOR + index;
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
	snprintf(eq->irq_name, sizeof(eq->irq_name), "%s-eq%u@%s", DRV_NAME,
		 index, pci_name(rdev->pdev));
	ret = request_threaded_irq(pci_irq_vector(rdev->pdev, eq->vector),
				   rhinet_eq_irq, rhinet_eq_thread, IRQF_ONESHOT,
				   eq->irq_name, eq);
	if (ret)
		goto err_free;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_EQ;
	cmd.u.create_eq.ring_addr = cpu_to_le64(eq->dma);
	cmd.u.create_eq.vector = cpu_to_le16(eq->vector);
	cmd.u.create_eq.log_depth = eq->log_depth;
	ret = rhinet_admin_exec(rdev, &cmd, &eq->eqn);
	if (ret) {
		dev_err(dev, "cannot create event queue %u: %d\n", index, ret);
		goto err_irq;
	}
	rhinet_eq_doorbell(eq, true);
	return 0;

err_irq:
	free_irq(pci_irq_vector(rdev->pdev, eq->vector), eq);
err_free:
	dma_free_coherent(dev, eq->depth * RHN_EQE_SIZE, eq->ring, eq->dma);
	eq->ring = NULL;
	return ret;
}

/* The first queue first: the NIC sends its own events to it. */
int rhinet_eq_init(struct rhinet_dev *rdev)
{
	u32 i;
	int ret;

	for (i = 0; i < rdev->nr_eqs; i++) {
		ret = rhinet_eq_create(rdev, i);
		if (ret)
			goto err;
	}
	rhinet_devlink_add_reporter(rdev, RHINET_REPORT_EQ,
				    &rhinet_eq_reporter_ops);
	INIT_DELAYED_WORK(&rdev->eq_watch, rhinet_eq_watch);
	schedule_delayed_work(&rdev->eq_watch,
			      msecs_to_jiffies(RHINET_EQ_WATCH_MS));
	return 0;

err:
	while (i--)
		rhinet_eq_free(&rdev->eqs[i]);
	return ret;
}

/* The caller has reset the NIC: it writes no more entries. */
void rhinet_eq_fini(struct rhinet_dev *rdev)
{
	u32 i;

	cancel_delayed_work_sync(&rdev->eq_watch);
	rhinet_devlink_remove_reporter(rdev, RHINET_REPORT_EQ);
	for (i = 0; i < rdev->nr_eqs; i++)
		rhinet_eq_free(&rdev->eqs[i]);
}
