// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The consumers of the device (the Ethernet interface, the RDMA device)
 * and what the hardware layer tells them. They sit above it: it calls them
 * only through the ops each one set here, never by name, so the layers
 * depend on each other in one direction (Documentation/driver/README.md).
 */
#include "rhinet_hw.h"

/* Before the consumer can be told anything: its ops stay set (they check
 * the consumer's own state, which goes before the consumer does).
 */
void rhinet_consumer_set(struct rhinet_dev *rdev, enum rhinet_consumer id,
			 const struct rhinet_consumer_ops *ops)
{
	WRITE_ONCE(rdev->consumers[id], ops);
}

enum rhinet_news { RHINET_NEWS_EVENT, RHINET_NEWS_DEAD, RHINET_NEWS_PORT };

/* Tells every consumer, in order, what the op for @news says. */
static void rhinet_tell(struct rhinet_dev *rdev, enum rhinet_news news,
			const struct rhn_eqe *eqe)
{
	const struct rhinet_consumer_ops *ops;
	u32 id;

	for (id = 0; id < RHINET_NR_CONSUMERS; id++) {
		ops = READ_ONCE(rdev->consumers[id]);
		if (!ops)
			continue;
		if (news == RHINET_NEWS_EVENT && ops->event)
			ops->event(rdev, eqe);
		else if (news == RHINET_NEWS_DEAD && ops->dead)
			ops->dead(rdev);
		else if (news == RHINET_NEWS_PORT && ops->port_changed)
			ops->port_changed(rdev);
	}
}

void rhinet_consumers_event(struct rhinet_dev *rdev, const struct rhn_eqe *eqe)
{
	rhinet_tell(rdev, RHINET_NEWS_EVENT, eqe);
}

void rhinet_consumers_dead(struct rhinet_dev *rdev)
{
	rhinet_tell(rdev, RHINET_NEWS_DEAD, NULL);
}

void rhinet_consumers_port_changed(struct rhinet_dev *rdev)
{
	rhinet_tell(rdev, RHINET_NEWS_PORT, NULL);
}
