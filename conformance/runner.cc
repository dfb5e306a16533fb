// SPDX-License-Identifier: BSD-2-Clause
// rhinet-conform: runs the conformance cases against one target.
//
//   rhinet-conform [--target NAME] [--filter GLOB] [--verdicts FILE]
//                  [--strict] [--quiet]
//   rhinet-conform --list [--filter GLOB]
//   rhinet-conform --compare FILE_A FILE_B
//
// Every case gets a freshly made target. A failing case prints its name and
// the first difference. Exit status: 1 when a case failed that is not a
// known divergence of the target (with --strict: any failure), or when a
// known divergence passed (its entry is stale); 2 on usage errors.
#include <fnmatch.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "case.h"

namespace rc = rhinet::conform;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: rhinet-conform [--target NAME] [--filter GLOB] "
               "[--verdicts FILE] [--strict] [--quiet]\n"
               "       rhinet-conform --list [--filter GLOB]\n"
               "       rhinet-conform --compare FILE_A FILE_B\n");
  return 2;
}

bool matches(const std::string& glob, const std::string& name) {
  return glob.empty() || fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

// Verdict files: one "name PASS|FAIL" line per case, in table order.
bool load(const char* path,
          std::vector<std::pair<std::string, std::string>>& v) {
  std::ifstream in(path);
  if (!in) return false;
  std::string name, verdict;
  while (in >> name >> verdict) v.emplace_back(name, verdict);
  return true;
}

// Names the first case whose verdicts differ (or that only one file has).
int compare(const char* a, const char* b) {
  std::vector<std::pair<std::string, std::string>> va, vb;
  if (!load(a, va) || !load(b, vb)) {
    std::fprintf(stderr, "cannot read %s or %s\n", a, b);
    return 2;
  }
  std::map<std::string, std::string> mb(vb.begin(), vb.end());
  for (const auto& [name, verdict] : va) {
    auto it = mb.find(name);
    if (it == mb.end()) {
      std::printf("first difference: %s: %s in %s, missing in %s\n",
                  name.c_str(), verdict.c_str(), a, b);
      return 1;
    }
    if (it->second != verdict) {
      std::printf("first difference: %s: %s in %s, %s in %s\n", name.c_str(),
                  verdict.c_str(), a, it->second.c_str(), b);
      return 1;
    }
    mb.erase(it);
  }
  if (!mb.empty()) {
    std::printf("first difference: %s: missing in %s, %s in %s\n",
                mb.begin()->first.c_str(), a, mb.begin()->second.c_str(), b);
    return 1;
  }
  std::printf("identical verdicts: %zu cases\n", va.size());
  return 0;
}

const rc::Divergence* known(const std::string& target,
                            const std::string& name) {
  for (const auto& d : rc::divergences())
    if (target == d.target && name == d.case_name) return &d;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_name = "engine", filter, verdicts;
  bool list = false, strict = false, quiet = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    if (a == "--target") {
      const char* v = next();
      if (!v) return usage();
      target_name = v;
    } else if (a == "--filter") {
      const char* v = next();
      if (!v) return usage();
      filter = v;
    } else if (a == "--verdicts") {
      const char* v = next();
      if (!v) return usage();
      verdicts = v;
    } else if (a == "--list") {
      list = true;
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--compare") {
      if (i + 2 >= argc) return usage();
      return compare(argv[i + 1], argv[i + 2]);
    } else {
      return usage();
    }
  }

  if (list) {
    for (const auto& c : rc::cases())
      if (matches(filter, c.name))
        std::printf("%-48s %-9s %s\n", c.name.c_str(), c.area.c_str(),
                    c.description.c_str());
    return 0;
  }

  const rc::TargetEntry* entry = nullptr;
  for (const auto& t : rc::targets())
    if (target_name == t.name) entry = &t;
  if (!entry) {
    std::fprintf(stderr, "unknown target '%s'; known:", target_name.c_str());
    for (const auto& t : rc::targets()) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    return 2;
  }

  std::FILE* vf = nullptr;
  if (!verdicts.empty() && !(vf = std::fopen(verdicts.c_str(), "w"))) {
    std::perror(verdicts.c_str());
    return 2;
  }
  unsigned run = 0, passed = 0, failed = 0;
  std::map<std::string, unsigned> per_area, per_area_fail;
  std::vector<std::string> diverged, stale;
  for (const auto& c : rc::cases()) {
    if (!matches(filter, c.name)) continue;
    auto target = entry->make();
    rc::Check check;
    c.fn(*target, check);
    run++;
    per_area[c.area]++;
    const rc::Divergence* d = known(target_name, c.name);
    if (check.ok()) {
      passed++;
      if (d) stale.push_back(c.name);
      if (!quiet) std::printf("PASS %s\n", c.name.c_str());
    } else {
      failed++;
      per_area_fail[c.area]++;
      if (d) {
        diverged.push_back(c.name + ": " + check.diff() +
                           "\n    contract: " + d->contract + "\n    " +
                           target_name + ": " + d->behaviour);
        std::printf("FAIL %s (known divergence): %s\n", c.name.c_str(),
                    check.diff().c_str());
      } else {
        std::printf("FAIL %s: %s\n", c.name.c_str(), check.diff().c_str());
      }
    }
    if (vf)
      std::fprintf(vf, "%s %s\n", c.name.c_str(), check.ok() ? "PASS" : "FAIL");
  }
  if (vf) std::fclose(vf);

  std::printf("\ntarget %s: %u cases, %u pass, %u fail\n", target_name.c_str(),
              run, passed, failed);
  for (const auto& [area, n] : per_area)
    std::printf("  %-10s %3u cases, %u fail\n", area.c_str(), n,
                per_area_fail[area]);
  if (!diverged.empty()) {
    std::printf("\nKNOWN DIVERGENCES of %s from the contract (%zu):\n",
                target_name.c_str(), diverged.size());
    for (const auto& s : diverged) std::printf("  %s\n", s.c_str());
  }
  for (const auto& s : stale)
    std::printf(
        "STALE divergence entry: %s passes now; remove it from "
        "conformance/divergences.cc\n",
        s.c_str());
  const unsigned unexpected = failed - unsigned(diverged.size());
  if (unexpected || !stale.empty() || (strict && failed)) return 1;
  return 0;
}
