// SPDX-License-Identifier: BSD-2-Clause
// triggered_push: work posted in advance, released by a counter. Every
// rank pre-posts a PUSH with a signal into its right neighbour's area
// that waits on a trigger counter until it reaches 2, and chains its
// completion to a second counter. Two adds (from any agent holding the
// process's doorbell page: here the CPU) release it; the chained counter
// then reads 1, and the neighbour's signal arrives.
//
//   rhinet-run -n 2 --hosts node0,node1 rhinet_triggered_push
//
// Exit status 0 when every check passed on this rank.
#include <chrono>
#include <cstdio>
#include <rhinet/rhinet.hpp>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 2;
constexpr std::size_t kBytes = 1024;

int fail(const char* what, const rhinet::Error& e) {
  std::fprintf(stderr, "triggered_push: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  auto joined = rhinet::Group::join_from_env();
  if (!joined) return fail("join", joined.error());
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank(), right = (me + 1) % g.size();

  std::vector<std::byte> inbox(kBytes), out(kBytes, std::byte{0x5a});
  auto area = g.area(kArea, inbox);
  if (!area) return fail("area", area.error());
  auto out_buf = g.readonly_buffer(out);
  if (!out_buf) return fail("buffer", out_buf.error());
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());

  auto go = g.trigger();  // value 0
  if (!go) return fail("trigger", go.error());
  auto done = g.trigger();
  if (!done) return fail("trigger", done.error());
  // Posted now, sent when `go` reaches 2; its completion adds 1 to `done`.
  auto push =
      g.push(right, kArea, 0, out,
             {.signal = 1,
              .trigger = {.counter = &*go, .threshold = 2, .chain = &*done}});
  std::this_thread::sleep_for(100ms);
  if (push.test()) {
    std::fprintf(stderr, "triggered_push: the PUSH went before its time\n");
    return 1;
  }
  if (auto a = go->add(); !a) return fail("add", a.error());
  if (auto a = go->add(); !a) return fail("add", a.error());
  if (auto w = push.wait(30s); !w) return fail("push", w.error());
  auto chained = done->read();
  if (!chained) return fail("read", chained.error());
  if (*chained != 1) {
    std::fprintf(stderr, "triggered_push: chained counter %llu, not 1\n",
                 static_cast<unsigned long long>(*chained));
    return 1;
  }
  if (auto s = g.wait_signal(kArea, 1, 30s); !s)
    return fail("wait_signal", s.error());
  for (std::byte b : inbox)
    if (b != std::byte{0x5a}) {
      std::fprintf(stderr, "triggered_push: wrong bytes\n");
      return 1;
    }
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());
  std::printf("triggered_push: rank %u: PASS\n", me);
  return 0;
}
