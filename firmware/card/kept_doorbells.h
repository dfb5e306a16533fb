/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Doorbells kept aside when a doorbell queue is full. A write that carries
 * a value of its own (CONTROL, ADMIN_SQ_TAIL, an EQ doorbell, a CQ arm)
 * cannot be recovered from host memory the way a queue's producer index
 * can, so a full queue keeps the latest of each instead of dropping it,
 * and hands them out as ordinary entries once there is room. Used by the
 * core's end of the link (card_link.c: the card's doorbell FIFO) and by
 * the QEMU device's end (qemu_device/softcore: its queue towards the
 * core), so a flood on either end loses nothing of this kind.
 * Documentation/hardware/soft-core.md, "Doorbell FIFO".
 */
#ifndef RHINET_CARD_KEPT_DOORBELLS_H
#define RHINET_CARD_KEPT_DOORBELLS_H

#include <stdbool.h>
#include <stdint.h>

#include "link_core.h"
#include "rhinet/fw/card.h"

struct rhn_kept_doorbells {
  struct rhn_card_doorbell control, admin;
  bool has_control, has_admin;
  uint64_t eq[RHN_LINK_CORE_EQS]; /* CI | ARM | a valid bit */
  /* One arm per (page, CQ): another context's arms never take a slot
   * that one context's arm already has. */
  struct rhn_card_doorbell arm[RHN_LINK_CORE_KEPT_ARMS];
  uint32_t count; /* entries kept in all of the above */
};

/*
 * Keeps *e aside: true when it is kept (merged with an earlier one of the
 * same register, EQ or (page, CQ)), false when it is not of a kind kept,
 * or no arm slot is free: then it is lost, and the engine's rescan after
 * an overflow recovers what it can from the queues.
 */
bool rhn_kept_put(struct rhn_kept_doorbells *k,
                  const struct rhn_card_doorbell *e);

/*
 * The next entry kept, in the order the engine needs them: CONTROL (which
 * may enable the admin queue) first, the EQs, the CQ arms, the admin tail
 * last. False when none is kept.
 */
bool rhn_kept_take(struct rhn_kept_doorbells *k, struct rhn_card_doorbell *out);

#endif
