/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hardware counters are documented from the one list in hw_regs.h
 * (RHN_COUNTERS): with --print this writes the table of
 * Documentation/hardware/registers.md; given that file, it fails unless
 * the file holds exactly those rows, in order, and the right count.
 */
#include <stdio.h>
#include <string.h>

#include "doc_table.h"
#include "rhinet/hw_regs.h"

struct counter {
  const char *id;
  const char *doc;
};

static const struct counter counters[] = {
#define ROW(id, name, doc) {"RHN_CNT_" #id, doc},
    RHN_COUNTERS(ROW)
#undef ROW
};

static void row(char *buf, size_t len, unsigned int i) {
  snprintf(buf, len, "| %u | `0x%x` | `%s` | %s |", i, RHN_REG_COUNTERS + 8 * i,
           counters[i].id, counters[i].doc);
}

int main(int argc, char **argv) {
  char count[64];
  struct doc_table t = {"counters", "## Hardware counters", RHN_CNT_COUNT, row,
                        count};

  snprintf(count, sizeof(count), "`RHN_CNT_COUNT` (%u)", RHN_CNT_COUNT);
  return doc_table_main(&t, argc, argv);
}
