/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operation table of Documentation/hardware/queues.md is the list in
 * hw_ops.h (RHN_OP_TABLE): with --print this writes its rows; given that
 * file, it fails unless its section "Operations, modes and slots" holds
 * exactly those rows, in the list's order.
 */
#include <stdio.h>
#include <string.h>

#include "doc_table.h"
#include "rhinet/hw_ops.h"

struct op_doc {
  unsigned int opcode;
  const char *id, *wire, *cqe, *dv_name, *cap;
  unsigned int dv, flags, modes, ext;
};

static const struct op_doc ops[] = {
#define ROW(op, name, wire, cqe, dv, dv_name, flags, modes, ext, cap) \
  {op, #op, #wire, #cqe, dv_name, #cap, dv, flags, modes, ext},
    RHN_OP_TABLE(ROW)
#undef ROW
};

/* Bit i of a set named names[i]: "a, b", or "—" for none. */
static void names(char *buf, size_t len, unsigned int set, const char *const *n,
                  unsigned int count) {
  unsigned int i;

  buf[0] = 0;
  for (i = 0; i < count; i++)
    if (set & (1u << i))
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
               n[i]);
  if (!buf[0]) snprintf(buf, len, "—");
}

/* An enumerator without its prefix, in backquotes; "—" for 0. */
static void ident(char *buf, size_t len, const char *id, const char *prefix) {
  size_t p = strlen(prefix);

  if (!strcmp(id, "0"))
    snprintf(buf, len, "—");
  else
    snprintf(buf, len, "`%s`", strncmp(id, prefix, p) ? id : id + p);
}

static void row(char *buf, size_t len, unsigned int i) {
  static const char *const flag_names[] = {
      "answered",      "immediate", "inline", "READ context",
      "ordered retry", "no data",   "atomic", "receive queue"};
  static const char *const mode_names[] = {"basic", "TWIN", "DIFF", "BITMAP",
                                           "STRIDE"};
  static const char *const ext_names[] = {"GRH", "xfer", "mcast", "coll"};
  const struct op_doc *o = &ops[i];
  char wire[64], cqe[64], dv[64], cap[64], flags[128], modes[64], ext[64];

  ident(wire, sizeof(wire), o->wire, "RHN_WOP_");
  ident(cqe, sizeof(cqe), o->cqe, "RHN_CQE_OP_");
  ident(cap, sizeof(cap), o->cap, "RHN_CAP_");
  if (o->dv)
    snprintf(dv, sizeof(dv), "%u `%s`", o->dv, o->dv_name);
  else
    snprintf(dv, sizeof(dv), "—");
  names(flags, sizeof(flags), o->flags, flag_names, 8);
  names(modes, sizeof(modes), o->modes, mode_names, 5);
  names(ext, sizeof(ext), o->ext, ext_names, 4);
  snprintf(buf, len, "| `0x%02x` | `%s` | %s | %s | %s | %s | %s | %s | %s |",
           o->opcode, o->id, wire, cqe, dv, flags, modes, ext, cap);
}

int main(int argc, char **argv) {
  struct doc_table t = {"operations", "### Operations, modes and slots",
                        sizeof(ops) / sizeof(ops[0]), row, NULL};

  return doc_table_main(&t, argc, argv);
}
