// SPDX-License-Identifier: BSD-2-Clause
// Doorbells a full queue keeps aside (kept_doorbells.h).
#include "kept_doorbells.h"

#include <string.h>

#include "rhinet/hw_queues.h"
#include "rhinet/hw_regs.h"

#define KEPT_EQ_VALID (1ull << 32)
#define KEPT_ARM_VALID 0x1u  // in a kept arm's reserved0

static bool keep_arm(struct rhn_kept_doorbells *k,
                     const struct rhn_card_doorbell *e) {
  uint32_t cqn = (uint32_t)e->value & RHN_DB_QN_MASK;
  struct rhn_card_doorbell *free_slot = 0;
  for (uint32_t i = 0; i < RHN_LINK_CORE_KEPT_ARMS; i++) {
    struct rhn_card_doorbell *a = &k->arm[i];
    if (!(a->reserved0 & KEPT_ARM_VALID)) {
      if (!free_slot) free_slot = a;
    } else if (a->page == e->page &&
               ((uint32_t)a->value & RHN_DB_QN_MASK) == cqn) {
      // Arms kept together: the first request (an event for anything
      // added since it), "solicited only" only if each one was.
      if (!(e->value & RHN_DB_CQ_SOLICITED))
        a->value &= ~(uint64_t)RHN_DB_CQ_SOLICITED;
      return true;
    }
  }
  if (!free_slot) return false;
  *free_slot = *e;
  free_slot->flags = 0;
  free_slot->reserved0 = KEPT_ARM_VALID;
  k->count++;
  return true;
}

bool rhn_kept_put(struct rhn_kept_doorbells *k,
                  const struct rhn_card_doorbell *e) {
  if (e->source == RHN_CARD_DB_REG && e->offset == RHN_REG_CONTROL) {
    k->count += !k->has_control;
    k->has_control = true;
    k->control = *e;
    return true;
  }
  if (e->source == RHN_CARD_DB_REG && e->offset == RHN_REG_ADMIN_SQ_TAIL) {
    k->count += !k->has_admin;
    k->has_admin = true;
    k->admin = *e;
    return true;
  }
  if (e->source == RHN_CARD_DB_REG && e->offset == RHN_REG_EQ_DOORBELL &&
      e->size == 8) {
    uint32_t eqn =
        (uint32_t)((e->value >> RHN_EQ_DB_EQN_SHIFT) & RHN_EQ_DB_EQN_MASK);
    if (eqn >= RHN_LINK_CORE_EQS) return false;
    uint64_t old = k->eq[eqn];
    // The latest consumer index; an arm stays asked for until taken.
    k->eq[eqn] = (e->value & (RHN_EQ_DB_CI_MASK | RHN_EQ_DB_ARM)) |
                 (old & RHN_EQ_DB_ARM) | KEPT_EQ_VALID;
    k->count += !(old & KEPT_EQ_VALID);
    return true;
  }
  if (e->source == RHN_CARD_DB_PAGE && e->offset == RHN_DB_CQ_ARM)
    return keep_arm(k, e);
  return false;
}

bool rhn_kept_take(struct rhn_kept_doorbells *k,
                   struct rhn_card_doorbell *out) {
  if (!k->count) return false;
  k->count--;
  if (k->has_control) {
    k->has_control = false;
    *out = k->control;
    return true;
  }
  for (uint32_t eqn = 0; eqn < RHN_LINK_CORE_EQS; eqn++) {
    uint64_t w = k->eq[eqn];
    if (!(w & KEPT_EQ_VALID)) continue;
    k->eq[eqn] = 0;
    memset(out, 0, sizeof(*out));
    out->source = RHN_CARD_DB_REG;
    out->offset = RHN_REG_EQ_DOORBELL;
    out->size = 8;
    out->value = (w & (RHN_EQ_DB_CI_MASK | RHN_EQ_DB_ARM)) |
                 ((uint64_t)eqn << RHN_EQ_DB_EQN_SHIFT);
    return true;
  }
  for (uint32_t i = 0; i < RHN_LINK_CORE_KEPT_ARMS; i++) {
    if (!(k->arm[i].reserved0 & KEPT_ARM_VALID)) continue;
    *out = k->arm[i];
    out->reserved0 = 0;
    k->arm[i].reserved0 = 0;
    return true;
  }
  k->has_admin = false;
  *out = k->admin;
  return true;
}
