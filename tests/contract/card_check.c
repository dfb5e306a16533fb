/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card abstraction (firmware/include/rhinet/fw/card.h) is not used by
 * the engine yet, so nothing else compiles it: this program does, as
 * strict C11 with -pedantic, and card_check.cpp compiles this same file as
 * C++. It also checks the numbers a card implementation and the socket
 * protocol (Documentation/hardware/soft-core.md) depend on. Exits nonzero
 * if any is wrong.
 */
#include <stddef.h>
#include <stdio.h>

#include "rhinet/fw/card.h"

struct card_check {
  const char *name;
  unsigned long actual;
  unsigned long expected;
};

#define CARD_VAL(expr, n) \
  { #expr, (unsigned long)(expr), (n) }

static const struct card_check card_checks[] = {
    CARD_VAL(sizeof(struct rhn_card_doorbell), 24),
    CARD_VAL(offsetof(struct rhn_card_doorbell, offset), 4),
    CARD_VAL(offsetof(struct rhn_card_doorbell, value), 8),
    CARD_VAL(offsetof(struct rhn_card_doorbell, size), 16),
    CARD_VAL(offsetof(struct rhn_card_doorbell, source), 17),
    CARD_VAL(offsetof(struct rhn_card_doorbell, flags), 18),
    CARD_VAL(offsetof(struct rhn_card_doorbell, inline_slot), 20),
    CARD_VAL(sizeof(struct rhn_card_identity), 16),
    CARD_VAL(offsetof(struct rhn_card_identity, mac), 2),
    CARD_VAL(offsetof(struct rhn_card_identity, entropy), 8),
    CARD_VAL(RHN_CARD_OK, 0),
    CARD_VAL(RHN_CARD_BUS_ERROR, 1),
    CARD_VAL(RHN_CARD_IOMMU_FAULT, 2),
    CARD_VAL(RHN_CARD_MISALIGNED, 3),
    CARD_VAL(RHN_CARD_NO_BUS_MASTER, 4),
    CARD_VAL(RHN_CARD_DB_PAGE, 0),
    CARD_VAL(RHN_CARD_DB_REG, 1),
    CARD_VAL(RHN_CARD_DB_LINK, 2),
    CARD_VAL(RHN_CARD_DB_F_INLINE, 1),
};

int main(void) {
  int bad = 0;
  size_t i;

  for (i = 0; i < sizeof(card_checks) / sizeof(card_checks[0]); i++) {
    const struct card_check *c = &card_checks[i];
    const int ok = c->actual == c->expected;

    printf("%s %s = %lu (expected %lu)\n", ok ? "ok  " : "FAIL", c->name,
           c->actual, c->expected);
    bad |= !ok;
  }
  return bad;
}
