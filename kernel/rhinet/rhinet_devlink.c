// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * devlink health: what went wrong with the device, as a bring-up team
 * looks at it (the devlink instance itself, `devlink dev info`, flash and
 * reload are rhinet_fw.c's). Health reporters say what went wrong:
 *
 *   fatal  the NIC was stopped: STATUS.FATAL, or gone from the bus
 *   admin  the admin queue broke: a command timed out (the NIC's core
 *          hangs) or a completion came out of order
 *   eq     an event queue held entries the driver had not taken for a
 *          whole health period (its interrupt was lost), or the NIC held
 *          completion events back because a queue was full
 *   fw     the card's core crashed (FW_STATE.STATE crashed)
 *
 * fatal, admin and fw are reported once, from rhinet_dev_fail, with the
 * reason. The recovery of fatal and admin is a rebind of the driver by
 * hand (a fresh NIC); fw's (rhinet_fw.c) rebinds by itself, as a crashed
 * core is the card's expected failure and the shell boots its flash. eq
 * is rhinet_eq.c's: it watches its queues and recovers them in place.
 * Diagnose prints the state now, a dump the state at the report with its
 * reason: registers, counters and queue indices, which rhinet-diag
 * decodes.
 */
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/string_helpers.h>
#include <net/devlink.h>

#include "rhinet_hw.h"
#include "rhinet/regmap_desc.h"

/* ---- what a reporter prints ------------------------------------------- */

/* The NIC's counters by the names the contract's list gives them. */
#define RHINET_COUNTER_NAME(id_, name_, doc_) \
	[RHN_CNT_##id_] = #name_,

static const char *const rhinet_counter_names[] = {
	RHN_COUNTERS(RHINET_COUNTER_NAME)
};

static int rhinet_fmsg_registers(struct rhinet_dev *rdev,
				 struct devlink_fmsg *fmsg)
{
	unsigned int i;
	int err;

	err = devlink_fmsg_pair_nest_start(fmsg, "registers");
	err = err ?: devlink_fmsg_obj_nest_start(fmsg);
	/* Every readable register of the map, by its name in lower case. */
	for (i = 0; i < ARRAY_SIZE(rhn_regmap_regs); i++) {
		const struct rhn_regmap_reg *r = &rhn_regmap_regs[i];
		void __iomem *at = rdev->regs + r->offset;
		char name[32];

		if (!strcmp(r->access, "WO") || strlen(r->name) >= sizeof(name))
			continue;
		string_lower(name, r->name);
		if (r->width == 64)
			err = err ?: devlink_fmsg_u64_pair_put(fmsg, name,
							       readq(at));
		else
			err = err ?: devlink_fmsg_u32_pair_put(fmsg, name,
							       readl(at));
	}
	err = err ?: devlink_fmsg_obj_nest_end(fmsg);
	err = err ?: devlink_fmsg_pair_nest_end(fmsg);
	err = err ?: devlink_fmsg_pair_nest_start(fmsg, "counters");
	err = err ?: devlink_fmsg_obj_nest_start(fmsg);
	for (i = 0; i < RHN_CNT_COUNT; i++)
		err = err ?: devlink_fmsg_u64_pair_put(fmsg,
						       rhinet_counter_names[i],
						       readq(rdev->regs +
							     RHN_REG_COUNTERS +
							     8 * i));
	err = err ?: devlink_fmsg_obj_nest_end(fmsg);
	return err ?: devlink_fmsg_pair_nest_end(fmsg);
}

static int rhinet_fmsg_eq(struct rhinet_eq *eq, struct devlink_fmsg *fmsg)
{
	int err;

	err = devlink_fmsg_obj_nest_start(fmsg);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "eqn", eq->eqn);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "vector", eq->vector);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "depth", eq->depth);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "consumer",
					       READ_ONCE(eq->consumer));
	err = err ?: devlink_fmsg_bool_pair_put(fmsg, "entry_waiting",
						rhinet_eq_waiting(eq));
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "recoveries",
					       READ_ONCE(eq->recoveries));
	return err ?: devlink_fmsg_obj_nest_end(fmsg);
}

/* The driver's side of its queues: what it produced and consumed. */
static int rhinet_fmsg_queues(struct rhinet_dev *rdev,
			      struct devlink_fmsg *fmsg)
{
	u32 i;
	int err;

	err = devlink_fmsg_pair_nest_start(fmsg, "admin");
	err = err ?: devlink_fmsg_obj_nest_start(fmsg);
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "sq_tail",
					       READ_ONCE(rdev->admin.sq_tail));
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "cq_head",
					       READ_ONCE(rdev->admin.cq_head));
	err = err ?: devlink_fmsg_u64_pair_put(fmsg, "interrupts",
					       atomic64_read(&rdev->admin.irqs));
	err = err ?: devlink_fmsg_obj_nest_end(fmsg);
	err = err ?: devlink_fmsg_pair_nest_end(fmsg);
	err = err ?: devlink_fmsg_arr_pair_nest_start(fmsg, "eqs");
	for (i = 0; i < rdev->nr_eqs; i++)
		if (rdev->eqs[i].ring)
			err = err ?: rhinet_fmsg_eq(&rdev->eqs[i], fmsg);
	return err ?: devlink_fmsg_arr_pair_nest_end(fmsg);
}

static int rhinet_fmsg_state(struct rhinet_dev *rdev, struct devlink_fmsg *fmsg)
{
	u32 status = rhinet_read32(rdev, RHN_REG_STATUS);
	int err;

	err = devlink_fmsg_bool_pair_put(fmsg, "stopped", rhinet_dev_dead(rdev));
	err = err ?: devlink_fmsg_string_pair_put(fmsg, "last_failure",
						  rdev->failure ?: "none");
	err = err ?: devlink_fmsg_u32_pair_put(fmsg, "status", status);
	err = err ?: devlink_fmsg_bool_pair_put(fmsg, "reads_all_ones",
						status == U32_MAX);
	return err ?: devlink_fmsg_bool_pair_put(fmsg, "status_fatal",
						 status != U32_MAX &&
						 (status & RHN_STATUS_FATAL));
}

/*
 * The state now, registers and counters included. Userspace reads BAR0
 * no other way while the driver holds it (sysfs refuses to map a claimed
 * BAR), and devlink asks for CAP_NET_ADMIN.
 */
static int rhinet_fmsg_all(struct rhinet_dev *rdev, struct devlink_fmsg *fmsg)
{
	return rhinet_fmsg_state(rdev, fmsg) ?:
	       rhinet_fmsg_queues(rdev, fmsg) ?:
	       rhinet_fmsg_registers(rdev, fmsg);
}

/* Every reporter's diagnose (rhinet_eq.c's too). */
int rhinet_devlink_diagnose(struct devlink_health_reporter *reporter,
			    struct devlink_fmsg *fmsg,
			    struct netlink_ext_ack *extack)
{
	return rhinet_fmsg_all(devlink_health_reporter_priv(reporter), fmsg);
}

/* Every reporter's dump: the reason the report gave, then as diagnose. */
int rhinet_devlink_dump(struct devlink_health_reporter *reporter,
			struct devlink_fmsg *fmsg, void *priv_ctx,
			struct netlink_ext_ack *extack)
{
	int err = 0;

	if (priv_ctx)
		err = devlink_fmsg_string_pair_put(fmsg, "reason", priv_ctx);
	return err ?: rhinet_fmsg_all(devlink_health_reporter_priv(reporter),
				      fmsg);
}

static const struct devlink_health_reporter_ops rhinet_fatal_reporter_ops = {
	.name = "fatal",
	.diagnose = rhinet_devlink_diagnose,
	.dump = rhinet_devlink_dump,
};

static const struct devlink_health_reporter_ops rhinet_admin_reporter_ops = {
	.name = "admin",
	.diagnose = rhinet_devlink_diagnose,
	.dump = rhinet_devlink_dump,
};

void rhinet_devlink_report(struct rhinet_dev *rdev, enum rhinet_report which,
			   const char *why)
{
	struct devlink_health_reporter *reporter = rdev->reporters[which];

	if (reporter)
		devlink_health_report(reporter, why, (void *)why);
}

/* A reporter of @rdev's; health reports are a help, not a need. */
void rhinet_devlink_add_reporter(struct rhinet_dev *rdev,
				 enum rhinet_report which,
				 const struct devlink_health_reporter_ops *ops)
{
	struct devlink_health_reporter *r;

	r = devlink_health_reporter_create(rdev->devlink, ops, 0, rdev);
	if (IS_ERR(r)) {
		dev_warn(&rdev->pdev->dev,
			 "no devlink health reporter '%s': %pe\n", ops->name, r);
		return;
	}
	rdev->reporters[which] = r;
}

void rhinet_devlink_remove_reporter(struct rhinet_dev *rdev,
				    enum rhinet_report which)
{
	if (rdev->reporters[which])
		devlink_health_reporter_destroy(rdev->reporters[which]);
	rdev->reporters[which] = NULL;
}

/* The reporters every device has; firmware adds its own (rhinet_fw.c). */
void rhinet_devlink_add_reporters(struct rhinet_dev *rdev)
{
	rhinet_devlink_add_reporter(rdev, RHINET_REPORT_FATAL,
				    &rhinet_fatal_reporter_ops);
	rhinet_devlink_add_reporter(rdev, RHINET_REPORT_ADMIN,
				    &rhinet_admin_reporter_ops);
}
