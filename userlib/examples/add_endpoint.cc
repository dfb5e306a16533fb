// SPDX-License-Identifier: BSD-2-Clause
// add_endpoint: what happens when the kernel refuses a process more
// endpoints. Each Group::add_endpoint opens a device context of its own,
// one doorbell page of the NIC charged to the user, and rhinet.ko lets one
// user hold at most max_contexts_per_user of them (module parameter; the
// VM test sets it low, to LIMIT, before running this). The program adds
// endpoints until refused and checks that:
//   - the refusal comes, within LIMIT contexts (join's included);
//   - it is EDQUOT and its message names the limit (max_contexts_per_user);
//   - every endpoint made works: a PUSH through it lands in the join's area;
//   - the refused call left nothing behind: once one endpoint is gone, the
//     next add_endpoint succeeds again.
//
//   rhinet-run -n 1 --hosts node0 rhinet_add_endpoint LIMIT
//
// Exit status 0 when every check passed.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 40;

int checks = 0, failures = 0;

bool expect(bool ok, const char* fmt, auto... args) {
  checks++;
  if (ok) return true;
  failures++;
  std::fprintf(stderr, "add_endpoint: ");
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
  return false;
}

// A PUSH of 8 bytes through `ep` into rank 0's area at `offset`; true
// once it landed.
bool push_through(rhinet::Group& ep, std::uint64_t offset, std::uint64_t value,
                  const std::uint64_t* landed) {
  std::uint64_t word = value;
  auto buf = ep.buffer(std::as_writable_bytes(std::span(&word, 1)));
  if (!expect(static_cast<bool>(buf), "buffer on an added endpoint: %s",
              buf ? "" : buf.error().to_string().c_str()))
    return false;
  auto r =
      ep.push(0, kArea, offset, std::as_bytes(std::span(&word, 1))).wait(30s);
  if (!expect(static_cast<bool>(r), "push through an added endpoint: %s",
              r ? "" : r.error().to_string().c_str()))
    return false;
  return expect(__atomic_load_n(landed, __ATOMIC_ACQUIRE) == value,
                "the push through an added endpoint did not land");
}

}  // namespace

int main(int argc, char** argv) {
  const int limit = argc > 1 ? std::atoi(argv[1]) : 0;
  if (limit < 1) {
    std::fprintf(stderr,
                 "usage: rhinet_add_endpoint LIMIT (the driver's "
                 "max_contexts_per_user, set low)\n");
    return 2;
  }
  auto joined = rhinet::Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "add_endpoint: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  rhinet::Group& g = **joined;
  alignas(64) static std::uint64_t words[64];
  auto area = g.area(kArea, std::as_writable_bytes(std::span(words)));
  if (!area) {
    std::fprintf(stderr, "add_endpoint: area: %s\n",
                 area.error().to_string().c_str());
    return 1;
  }

  // Until refused; a few more than the limit at most.
  std::vector<std::unique_ptr<rhinet::Group>> eps;
  std::optional<rhinet::Error> refusal;
  for (int i = 0; i < limit + 2; i++) {
    auto e = g.add_endpoint();
    if (!e) {
      refusal = e.error();
      break;
    }
    eps.push_back(std::move(*e));
  }
  const int made = static_cast<int>(eps.size());
  std::printf(
      "add_endpoint: %d endpoints added under a limit of %d "
      "contexts, then: %s\n",
      made, limit, refusal ? refusal->to_string().c_str() : "(not refused)");
  if (expect(refusal.has_value(), "%d endpoints added, none refused", made)) {
    expect(refusal->errno_value() == EDQUOT, "refused with errno %d (%s)",
           refusal->errno_value(), std::strerror(refusal->errno_value()));
    const std::string& m = refusal->message();
    expect(m.find("add_endpoint") != std::string::npos &&
               m.find("max_contexts_per_user") != std::string::npos,
           "the refusal does not name the call and the limit: %s", m.c_str());
  }
  // The join's context counts too; other processes of the user may hold
  // some.
  expect(made <= limit - 1,
         "%d endpoints added beside the join's context "
         "under a limit of %d",
         made, limit);
  for (int i = 0; i < made; i++)
    push_through(*eps[static_cast<std::size_t>(i)],
                 static_cast<std::uint64_t>(i) * 8, 1000 + i,
                 &words[static_cast<std::size_t>(i)]);
  // One given back: the next one fits again.
  if (made >= 1 && refusal) {
    eps.pop_back();
    auto again = g.add_endpoint();
    if (expect(static_cast<bool>(again),
               "add_endpoint after one was destroyed: %s",
               again ? "" : again.error().to_string().c_str())) {
      push_through(**again, 63 * 8, 4242, &words[63]);
      auto over = g.add_endpoint();
      expect(!over && over.error().errno_value() == EDQUOT,
             "at the limit again, add_endpoint was %s",
             over ? "not refused" : over.error().to_string().c_str());
    }
  }
  std::printf("add_endpoint: %d checks passed, %d failed\n", checks - failures,
              failures);
  return failures ? 1 : 0;
}
