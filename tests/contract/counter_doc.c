/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hardware counters are documented from the one list in hw_regs.h
 * (RHN_COUNTERS): with --print this writes the table of
 * Documentation/hardware/registers.md; given that file, it fails unless
 * the file holds exactly those rows, in order, and the right count.
 */
#include <stdio.h>
#include <string.h>

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
  char want[512], line[1024], count[64];
  unsigned int i = 0, errors = 0, have_count = 0, in_section = 0;
  FILE *f;

  if (argc == 2 && !strcmp(argv[1], "--print")) {
    for (i = 0; i < RHN_CNT_COUNT; i++) {
      row(want, sizeof(want), i);
      puts(want);
    }
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: %s registers.md | --print\n", argv[0]);
    return 2;
  }
  f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  snprintf(count, sizeof(count), "`RHN_CNT_COUNT` (%u)", RHN_CNT_COUNT);
  while (fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "## ", 3))
      in_section = !strcmp(line, "## Hardware counters");
    if (!in_section) continue;
    if (strstr(line, count)) have_count = 1;
    if (strncmp(line, "| ", 2) || line[2] < '0' || line[2] > '9') continue;
    if (i >= RHN_CNT_COUNT) {
      fprintf(stderr, "extra row: %s\n", line);
      errors++;
      continue;
    }
    row(want, sizeof(want), i++);
    if (strcmp(line, want)) {
      fprintf(stderr, "row %u differs:\n  doc:    %s\n  header: %s\n", i - 1,
              line, want);
      errors++;
    }
  }
  fclose(f);
  if (i < RHN_CNT_COUNT) {
    fprintf(stderr, "%u rows missing from %u on\n", RHN_CNT_COUNT - i, i);
    errors++;
  }
  if (!have_count) {
    fprintf(stderr, "the text does not give %s\n", count);
    errors++;
  }
  printf("%u counters, %u errors\n", RHN_CNT_COUNT, errors);
  return errors ? 1 : 0;
}
