/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A documentation table generated from one of the contract's lists: with
 * --print, the program writes the table's rows; given the Markdown file,
 * it fails unless the section holds exactly those rows, in order. A row
 * of the table is a line "| x..." whose x is a digit or a backquote (the
 * header and separator lines are not).
 */
#ifndef RHINET_TESTS_DOC_TABLE_H
#define RHINET_TESTS_DOC_TABLE_H

#include <stdio.h>
#include <string.h>

struct doc_table {
  const char *what;    /* "counters", "operations" */
  const char *section; /* the whole heading line, e.g. "## Hardware counters" */
  unsigned int rows;
  void (*row)(char *buf, size_t len, unsigned int i);
  const char *must_say; /* a phrase the section must hold, or NULL */
};

static int doc_table_row_line(const char *line) {
  return !strncmp(line, "| ", 2) &&
         ((line[2] >= '0' && line[2] <= '9') || line[2] == '`');
}

static int doc_table_main(const struct doc_table *t, int argc, char **argv) {
  char want[1024], line[2048];
  unsigned int i = 0, errors = 0, said = 0, in_section = 0;
  size_t level = strspn(t->section, "#");
  FILE *f;

  if (argc == 2 && !strcmp(argv[1], "--print")) {
    for (i = 0; i < t->rows; i++) {
      t->row(want, sizeof(want), i);
      puts(want);
    }
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.md | --print\n", argv[0]);
    return 2;
  }
  f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  while (fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\n")] = 0;
    /* A heading of the section's level or above ends it. */
    if (line[0] == '#' && strspn(line, "#") <= level &&
        line[strspn(line, "#")] == ' ')
      in_section = !strcmp(line, t->section);
    if (!in_section) continue;
    if (t->must_say && strstr(line, t->must_say)) said = 1;
    if (!doc_table_row_line(line)) continue;
    if (i >= t->rows) {
      fprintf(stderr, "extra row: %s\n", line);
      errors++;
      continue;
    }
    t->row(want, sizeof(want), i++);
    if (strcmp(line, want)) {
      fprintf(stderr, "row %u differs:\n  doc:    %s\n  header: %s\n", i - 1,
              line, want);
      errors++;
    }
  }
  fclose(f);
  if (i < t->rows) {
    fprintf(stderr, "%u rows missing from %u on (section \"%s\")\n",
            t->rows - i, i, t->section);
    errors++;
  }
  if (t->must_say && !said) {
    fprintf(stderr, "the text does not give %s\n", t->must_say);
    errors++;
  }
  printf("%u %s, %u errors\n", t->rows, t->what, errors);
  return errors ? 1 : 0;
}

#endif /* RHINET_TESTS_DOC_TABLE_H */
