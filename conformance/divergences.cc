// SPDX-License-Identifier: BSD-2-Clause
// Known divergences: cases a target fails although the case follows the
// contract. Each entry names the document line and what the target does
// instead. The runner reports them on every run and fails when one
// passes, so the list is always current. Fix the target, then drop the
// entry; never bend the case.
#include "case.h"

namespace rhinet::conform {

const std::vector<Divergence>& divergences() {
  // None: the four the suite found first (CONTROL.RESET not visible while
  // pending, a SYN's serial, the counter of a misaligned atomic, undefined
  // wire opcodes taken as answers) were fixed in the engine or, for the
  // SYN, in wire.md.
  static const std::vector<Divergence> list = {};
  return list;
}

}  // namespace rhinet::conform
