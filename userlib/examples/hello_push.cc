// SPDX-License-Identifier: BSD-2-Clause
// hello_push: the smallest userlib program. Every rank PUSHes a greeting
// into its right neighbour's area with a signal (put-with-signal), waits
// for the signal on its own area, checks what its left neighbour wrote,
// PULLs back what it wrote itself, and syncs.
//
//   rhinet-run -n 4 -N 1 --hosts node0,node1,node2,node3 rhinet_hello_push
//
// Exit status 0 when every check passed on this rank.
#include <chrono>
#include <cstdio>
#include <rhinet/rhinet.hpp>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 1;
constexpr std::size_t kBytes = 4096;

std::byte pattern(std::uint32_t rank, std::size_t i) {
  return static_cast<std::byte>((rank * 37 + i * 11 + (i >> 8)) & 0xff);
}

// First byte that is not pattern(rank, i), or -1.
long mismatch(const std::vector<std::byte>& v, std::uint32_t rank) {
  for (std::size_t i = 0; i < v.size(); i++)
    if (v[i] != pattern(rank, i)) return static_cast<long>(i);
  return -1;
}

int fail(const char* what, const rhinet::Error& e) {
  std::fprintf(stderr, "hello_push: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  auto joined = rhinet::Group::join_from_env();
  if (!joined) return fail("join", joined.error());
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank(), n = g.size();
  const std::uint32_t right = (me + 1) % n, left = (me + n - 1) % n;

  std::vector<std::byte> inbox(kBytes), out(kBytes), back(kBytes);
  for (std::size_t i = 0; i < kBytes; i++) out[i] = pattern(me, i);
  auto area = g.area(kArea, inbox);  // peers PUSH here
  if (!area) return fail("area", area.error());
  auto out_buf = g.readonly_buffer(out);
  if (!out_buf) return fail("buffer", out_buf.error());
  auto back_buf = g.buffer(back);
  if (!back_buf) return fail("buffer", back_buf.error());
  // Every rank has registered its area before anyone PUSHes.
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());

  auto push = g.push(right, kArea, 0, out, {.signal = 1});
  if (auto w = push.wait(30s); !w) return fail("push", w.error());
  if (auto s = g.wait_signal(kArea, 1, 30s); !s)
    return fail("wait_signal", s.error());
  int failures = 0;
  if (long at = mismatch(inbox, left); at >= 0) {
    std::fprintf(stderr,
                 "hello_push: rank %u: byte %ld from rank %u is 0x%02x, "
                 "expected 0x%02x\n",
                 me, at, left, static_cast<unsigned>(inbox[at]),
                 static_cast<unsigned>(pattern(left, at)));
    failures++;
  }

  // What we wrote into the right neighbour's area, read back.
  auto pull = g.pull(right, kArea, 0, back);
  if (auto w = pull.wait(30s); !w) return fail("pull", w.error());
  if (long at = mismatch(back, me); at >= 0) {
    std::fprintf(stderr,
                 "hello_push: rank %u: byte %ld pulled from rank %u is 0x%02x, "
                 "expected 0x%02x\n",
                 me, at, right, static_cast<unsigned>(back[at]),
                 static_cast<unsigned>(pattern(me, at)));
    failures++;
  }
  if (pull.bytes() != kBytes) {
    std::fprintf(stderr, "hello_push: rank %u: pull moved %u bytes, not %zu\n",
                 me, pull.bytes(), kBytes);
    failures++;
  }
  if (auto s = g.sync(30s); !s) return fail("sync", s.error());
  // Nobody deregisters its area while a neighbour may still PULL from it.
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());
  if (failures) return 1;
  std::printf("hello_push: rank %u of %u: ok\n", me, n);
  return 0;
}
