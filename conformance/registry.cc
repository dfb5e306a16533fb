// SPDX-License-Identifier: BSD-2-Clause
// The case table and the Check that records a case's first difference.
#include "case.h"
#include "lib/nic.h"

namespace rhinet::conform {

std::vector<Case>& cases() {
  static std::vector<Case> table;
  return table;
}

bool Check::fail(const std::string& what, const std::string& msg) {
  if (ok_) {
    ok_ = false;
    diff_ = what + ": " + msg;
  }
  return false;
}

bool Check::eq(const std::string& what, uint64_t expected, uint64_t got) {
  if (expected == got) return true;
  return fail(what, "expected " + hex(expected) + ", got " + hex(got));
}

bool Check::that(bool cond, const std::string& what, const std::string& msg) {
  return cond ? true : fail(what, msg);
}

}  // namespace rhinet::conform
