// SPDX-License-Identifier: BSD-2-Clause
// Conformance cases: one table of named checks of the hardware contract.
// A case gets a freshly powered-on Target, drives it through registers,
// doorbells, host memory and the wire, and reports the first place where
// the NIC differs from what the contract says (Documentation/hardware/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "target.h"

namespace rhinet::conform {

// Collects a case's outcome. Only the first difference is kept: it names
// the field or offset, what the contract expects and what the NIC gave.
class Check {
 public:
  bool ok() const { return ok_; }
  const std::string& diff() const { return diff_; }

  // Records a difference unless `expected == got`; returns whether equal.
  bool eq(const std::string& what, uint64_t expected, uint64_t got);
  // Records `msg` as a difference unless `cond`; returns cond.
  bool that(bool cond, const std::string& what, const std::string& msg);
  // Records a difference unconditionally; returns false.
  bool fail(const std::string& what, const std::string& msg);

 private:
  bool ok_ = true;
  std::string diff_;
};

// Stops the case at the first difference.
#define CONFORM_EQ(c, what, expected, got)          \
  do {                                              \
    if (!(c).eq((what), (expected), (got))) return; \
  } while (0)
#define CONFORM_THAT(c, cond, what, msg)          \
  do {                                            \
    if (!(c).that((cond), (what), (msg))) return; \
  } while (0)
// Brings the NIC `n` up (Nic::bring_up) or stops the case saying why.
#define CONFORM_UP(c, n)                         \
  do {                                           \
    const std::string e_ = (n).bring_up();       \
    CONFORM_THAT(c, e_.empty(), "bring-up", e_); \
  } while (0)

using CaseFn = std::function<void(Target&, Check&)>;

struct Case {
  std::string name;  // area.subject.detail, e.g. regs.reset.RHN_REG_CAPS
  std::string area;  // regs, admin, cq, eq, doorbell, intr, wqe, wire, ...
  std::string description;
  CaseFn fn;
};

// The one table of cases, in registration order (file by file).
std::vector<Case>& cases();

struct CaseRegistrar {
  CaseRegistrar(std::string name, std::string area, std::string description,
                CaseFn fn) {
    cases().push_back(
        {std::move(name), std::move(area), std::move(description), fn});
  }
};

// Registers one case per row of a table whose rows have `name` and
// `description`: run(row, target, check). Returns true, for a static.
template <class Row, size_t N, class Run>
bool register_rows(const Row (&rows)[N], const char* area,
                   const char* description_suffix, Run run) {
  for (const Row& r : rows)
    CaseRegistrar(r.name, area, std::string(r.description) + description_suffix,
                  [&r, run](Target& t, Check& c) { run(r, t, c); });
  return true;
}

// Cases whose expectation (from the contract) a target is known not to
// meet yet. The runner still reports them FAIL in the verdicts, prints
// them apart, and fails when one of them starts to pass (the entry must
// then go): the suite never passes silently over a divergence.
struct Divergence {
  const char* target;  // Target::name()
  const char* case_name;
  const char* contract;   // the document line the case follows
  const char* behaviour;  // what the target does instead
};
const std::vector<Divergence>& divergences();

}  // namespace rhinet::conform

// Defines and registers a case function `fn` with the table entry.
#define CONFORM_CASE(fn, name, area, description)                        \
  static void fn(::rhinet::conform::Target&, ::rhinet::conform::Check&); \
  static const ::rhinet::conform::CaseRegistrar fn##_registrar{          \
      name, area, description, fn};                                      \
  static void fn([[maybe_unused]] ::rhinet::conform::Target& t,          \
                 [[maybe_unused]] ::rhinet::conform::Check& c)
