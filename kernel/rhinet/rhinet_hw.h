/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RHiNET-NG RDMA NIC driver, hardware access (the lowest layer): the
 * device, its admin queue, event queues and health. Nothing here knows
 * the objects or the entry points above it: what the hardware has to tell
 * them (an event, a failure) goes through the ops they register, see
 * Documentation/driver/README.md (Layers).
 *
 * The hardware contract (registers, queue entries, admin commands) is
 * include/hw/rhinet/ of the RHiNET-NG tree, shared with the NIC engine.
 */
#ifndef RHINET_DRIVER_HW_H
#define RHINET_DRIVER_HW_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include <rhinet/hw.h>

#define DRV_NAME "rhinet"

#define RHINET_ADMIN_LOG_DEPTH 5
#define RHINET_ADMIN_TIMEOUT_MS 5000
/* Event queue sizing: at least this deep, at most RHINET_EQ_MAX_LOG. */
#define RHINET_EQ_MIN_LOG 8
#define RHINET_EQ_MAX_LOG 16
#define RHINET_EQ_VECTOR 1 /* the first EQ's; vector 0: admin */
#define RHINET_MAX_EQS 4 /* completion vectors, one EQ and MSI-X vector each */

struct rhinet_admin {
	struct mutex lock; /* one command in flight */
	struct rhn_admin_cmd *sq;
	struct rhn_admin_cpl *cq;
	dma_addr_t sq_dma;
	dma_addr_t cq_dma;
	u32 sq_tail;
	u32 cq_head;
	u16 next_cmd_id;
	struct completion event; /* the admin vector fired */
	atomic64_t irqs; /* times it fired (the interrupt self-test) */
	struct mutex out_lock; /* one user of @out at a time */
	void *out; /* DMA page for QUERY_* results */
	dma_addr_t out_dma;
};

struct rhinet_eq {
	struct rhinet_dev *rdev;
	struct rhn_eqe *ring;
	dma_addr_t dma;
	u32 depth; /* entries: one per CQ the NIC has, and room for events */
	u32 log_depth;
	u32 consumer;
	u32 eqn;
	u16 vector; /* MSI-X */
	struct mutex lock; /* the handler thread and drains */
	char irq_name[32];
	/* Health: the consumer index and whether an entry waited at the
	 * last check, and how often the queue was recovered.
	 */
	u32 watch_consumer;
	bool watch_waiting;
	u32 recoveries;
};

struct rhinet_net;
struct rhinet_ib;
struct rhinet_dev;
struct devlink;
struct devlink_health_reporter;

/* The devlink health reporters (rhinet_devlink.c). */
enum rhinet_report {
	RHINET_REPORT_FATAL, /* STATUS.FATAL, gone from the bus */
	RHINET_REPORT_ADMIN, /* the admin queue timed out or broke */
	RHINET_REPORT_EQ, /* an event queue stalled or overflowed */
	RHINET_REPORT_FW, /* the card's core crashed */
	RHINET_NR_REPORTERS,
};

/*
 * The parts of the driver above this layer that hear from the hardware,
 * in the order they hear it: the Ethernet interface first (its NAPI is
 * scheduled before ib_core's handlers run), then the RDMA device.
 */
enum rhinet_consumer {
	RHINET_CONSUMER_NET,
	RHINET_CONSUMER_IB,
	RHINET_NR_CONSUMERS,
};

/* What a consumer is told; any op may be NULL. */
struct rhinet_consumer_ops {
	/* An event queue entry, in the queue's thread, bottom halves off. */
	void (*event)(struct rhinet_dev *rdev, const struct rhn_eqe *eqe);
	/* The NIC was stopped for good: process context, no lock held. */
	void (*dead)(struct rhinet_dev *rdev);
	/* Another consumer changed what the port looks like (the interface
	 * went up or down); may sleep.
	 */
	void (*port_changed)(struct rhinet_dev *rdev);
};

struct rhinet_dev {
	struct pci_dev *pdev;
	void __iomem *regs; /* BAR0 */
	void __iomem *kernel_db; /* doorbell page 0 */
	struct rhinet_admin admin;
	/* Completion vectors: EQ 0 also takes the device's own events. */
	struct rhinet_eq eqs[RHINET_MAX_EQS];
	u32 nr_eqs;
	struct rhn_device_attr attr;
	u32 kernel_pdn;
	u32 dma_lkey; /* kernel MR: I/O address = bus address */
	struct rhinet_net *net; /* the Ethernet interface */
	struct rhinet_ib *ib; /* the RDMA device */
	/* Set by the consumers before they can be told anything; their
	 * handlers check their own state (net, ib) as they run.
	 */
	const struct rhinet_consumer_ops *consumers[RHINET_NR_CONSUMERS];
	u16 node_id;
	u8 mac[6];
	bool link_up;
	unsigned long async_events;
	/* Interrupt names, per device (several NICs in one host). */
	char admin_irq_name[32];
	/* Health (rhinet_health.c): @dead once the NIC failed, @quiesced
	 * once it no longer touches host memory.
	 */
	struct mutex health_lock;
	bool dead;
	bool quiesced;
	bool removing; /* consumers are going: tell them nothing */
	struct delayed_work health_work;
	struct work_struct fatal_work;
	const char *failure; /* why it was stopped (a literal) */
	/* rhinet_eq.c's watch of its queues, once a health period, and the
	 * NIC's count of held-back events it last saw.
	 */
	struct delayed_work eq_watch;
	u64 events_deferred;
	struct devlink *devlink;
	struct devlink_health_reporter *reporters[RHINET_NR_REPORTERS];
	/* The image probe loaded did not start (the card booted its flash):
	 * told on the fw reporter once devlink is registered.
	 */
	bool fw_boot_failed;
};

static inline bool rhinet_dev_dead(struct rhinet_dev *rdev)
{
	return READ_ONCE(rdev->dead);
}

/* The event queue of completion vector @vector. */
/* The NIC has written the entry the driver is to take next. */
static inline bool rhinet_eq_waiting(const struct rhinet_eq *eq)
{
	const struct rhn_eqe *e = &eq->ring[eq->consumer & (eq->depth - 1)];
	u8 phase = ((eq->consumer >> eq->log_depth) & 1) ^ 1;

	return (READ_ONCE(e->owner) & 1) == phase;
}

static inline struct rhinet_eq *rhinet_eq_of(struct rhinet_dev *rdev,
					     u32 vector)
{
	return &rdev->eqs[vector % rdev->nr_eqs];
}

static inline u32 rhinet_read32(struct rhinet_dev *rdev, u32 reg)
{
	return readl(rdev->regs + reg);
}

/* The card's shell says its core crashed. */
static inline bool rhinet_fw_crashed_now(struct rhinet_dev *rdev)
{
	u32 state = rhinet_read32(rdev, RHN_REG_FW_STATE);

	return state != U32_MAX &&
	       (state & RHN_FW_STATE_STATE_MASK) >> RHN_FW_STATE_STATE_SHIFT ==
		       RHN_FW_STATE_CRASHED;
}

static inline void rhinet_write32(struct rhinet_dev *rdev, u32 reg, u32 val)
{
	writel(val, rdev->regs + reg);
}

/* The fabric node a MAC names (02:52:4e:00:hi:lo), broadcast for group
 * MACs, or -1 when no node has that MAC.
 */
static inline int rhinet_mac_to_node(const u8 *mac)
{
	if (mac[0] & 1)
		return RHN_NODE_BROADCAST;
	if (mac[0] != 0x02 || mac[1] != 0x52 || mac[2] != 0x4e || mac[3])
		return -1;
	return mac[4] << 8 | mac[5];
}

/* A queue reference to kernel memory: the NIC uses the bus address. */
static inline struct rhn_host_ref rhinet_phys_ref(dma_addr_t addr)
{
	struct rhn_host_ref r = {
		.addr = cpu_to_le64(addr),
		.lkey = cpu_to_le32(RHN_LKEY_PHYSICAL),
	};

	return r;
}

/* True if the CQE at consumer index @ci of a @depth-entry ring is new. */
static inline bool rhinet_cqe_ready(const struct rhn_cqe *ring, u32 depth,
				    u32 ci)
{
	u8 phase = ((ci / depth) & 1) ^ 1;

	return !!(READ_ONCE(ring[ci % depth].flags) & RHN_CQE_F_OWNER) ==
	       phase;
}

/* Takes the next CQE of a kernel CQ ring, or returns false. */
static inline bool rhinet_next_cqe(const struct rhn_cqe *ring, u32 depth,
				   u32 *ci, struct rhn_cqe *out)
{
	if (!rhinet_cqe_ready(ring, depth, *ci))
		return false;
	dma_rmb(); /* the entry after its owner bit */
	*out = ring[*ci % depth];
	(*ci)++;
	return true;
}

int rhinet_admin_init(struct rhinet_dev *rdev);
int rhinet_admin_start(struct rhinet_dev *rdev);
void rhinet_admin_fini(struct rhinet_dev *rdev);
int rhinet_admin_exec(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
		      u32 *result);
int rhinet_admin_exec_detail(struct rhinet_dev *rdev,
			     struct rhn_admin_cmd *cmd, u32 *result,
			     u32 *detail);
int rhinet_admin_query(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
		       void *out, size_t len);
int rhinet_admin_exec_in(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
			 __le64 *addr, const void *in, size_t len);
int rhinet_admin_query_device(struct rhinet_dev *rdev,
			      struct rhn_device_attr *attr);
irqreturn_t rhinet_admin_irq(int irq, void *data);

int rhinet_reset_nic(struct rhinet_dev *rdev);
void rhinet_dev_fail(struct rhinet_dev *rdev, enum rhinet_report kind,
		     const char *why);
bool rhinet_dev_quiesced(struct rhinet_dev *rdev);
void rhinet_health_init(struct rhinet_dev *rdev);

void rhinet_health_start(struct rhinet_dev *rdev);
void rhinet_health_stop(struct rhinet_dev *rdev);

/* rhinet_fw.c: the card's firmware and the devlink instance */
int rhinet_fw_module_init(void);
void rhinet_fw_module_exit(void);
int rhinet_fw_probe(struct rhinet_dev *rdev);
int rhinet_rebind_later(struct pci_dev *pdev);
int rhinet_devlink_init(struct rhinet_dev *rdev);
void rhinet_devlink_register(struct rhinet_dev *rdev);
void rhinet_devlink_unregister(struct rhinet_dev *rdev);

/* rhinet_devlink.c: the health reporters */
void rhinet_devlink_add_reporters(struct rhinet_dev *rdev);
void rhinet_devlink_report(struct rhinet_dev *rdev, enum rhinet_report which,
			   const char *why);
struct devlink_fmsg;
struct devlink_health_reporter_ops;
struct netlink_ext_ack;
int rhinet_devlink_diagnose(struct devlink_health_reporter *reporter,
			    struct devlink_fmsg *fmsg,
			    struct netlink_ext_ack *extack);
int rhinet_devlink_dump(struct devlink_health_reporter *reporter,
			struct devlink_fmsg *fmsg, void *priv_ctx,
			struct netlink_ext_ack *extack);
void rhinet_devlink_add_reporter(struct rhinet_dev *rdev,
				 enum rhinet_report which,
				 const struct devlink_health_reporter_ops *ops);
void rhinet_devlink_remove_reporter(struct rhinet_dev *rdev,
				    enum rhinet_report which);

int rhinet_eq_init(struct rhinet_dev *rdev);
void rhinet_eq_drain(struct rhinet_dev *rdev);

/* No event handler is running on return. */
void rhinet_eq_sync(struct rhinet_dev *rdev);
void rhinet_eq_fini(struct rhinet_dev *rdev);

void rhinet_consumer_set(struct rhinet_dev *rdev, enum rhinet_consumer id,
			 const struct rhinet_consumer_ops *ops);
void rhinet_consumers_event(struct rhinet_dev *rdev, const struct rhn_eqe *eqe);
void rhinet_consumers_dead(struct rhinet_dev *rdev);
void rhinet_consumers_port_changed(struct rhinet_dev *rdev);

#endif /* RHINET_DRIVER_HW_H */
