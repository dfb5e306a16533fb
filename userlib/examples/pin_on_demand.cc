// SPDX-License-Identifier: BSD-2-Clause
// pin_on_demand: remote pin-down. Rank 0 mmap()s memory it never
// touches and declares it an on-demand area: nothing is pinned. Every
// other rank asks rank 0's host to pin the start of its slice (pd_req),
// PUSHes its whole slice (the rest is pinned on first touch while the NIC
// holds the PUSH), PULLs it back, checks a pd_req past the area fails
// with ERANGE, and releases its slice (pd_release). Rank 0 then checks
// every byte and that its node's pinned_pages is back where it started.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_pin_on_demand
//
// Exit status 0 when every check passed on this rank.
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <rhinet/rhinet.hpp>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 2;
constexpr std::size_t kSlice = 256 * 1024;  // per rank
constexpr std::size_t kAsked = 64 * 1024;   // pinned by pd_req first

std::byte pattern(std::uint32_t rank, std::size_t i) {
  return static_cast<std::byte>((rank * 29 + i * 7 + (i >> 12)) & 0xff);
}

int fail(const char* what, const rhinet::Error& e) {
  std::fprintf(stderr, "pin_on_demand: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

// rhinet.ko's gauge of pinned user pages on this node, or -1. ib_core
// serves the port counters from a copy at most hw_counters/lifespan (10 ms)
// old: wait that out first, so the reading is newer than what came before.
long pinned_pages() {
  std::this_thread::sleep_for(50ms);
  std::ifstream f(
      "/sys/class/infiniband/rhinet0/ports/1/hw_counters/"
      "pinned_pages");
  long v = -1;
  f >> v;
  return f ? v : -1;
}

int owner(rhinet::Group& g) {
  const std::size_t bytes = kSlice * (g.size() - 1);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("pin_on_demand: mmap");
    return 1;
  }
  std::span<std::byte> mem(static_cast<std::byte*>(p), bytes);
  const long before = pinned_pages();
  auto area = g.on_demand_area(kArea, mem);
  if (!area) return fail("on_demand_area", area.error());
  const long declared = pinned_pages();
  std::printf(
      "pin_on_demand: declared %zu KiB on demand: pinned_pages %ld -> "
      "%ld\n",
      bytes >> 10, before, declared);
  int failures = declared != before;
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());
  // The peers pin, push, pull and release.
  if (auto b = g.barrier_bootstrap(120s); !b) return fail("barrier", b.error());
  for (std::uint32_t r = 1; r < g.size(); r++)
    for (std::size_t i = 0; i < kSlice; i++)
      if (mem[(r - 1) * kSlice + i] != pattern(r, i)) {
        std::fprintf(stderr,
                     "pin_on_demand: byte %zu of rank %u's slice is 0x%02x\n",
                     i, r, static_cast<unsigned>(mem[(r - 1) * kSlice + i]));
        failures++;
        break;
      }
  // Every slice was released: the host unpins what nobody holds.
  long now = pinned_pages();
  for (int i = 0; i < 100 && now != before; i++) {
    std::this_thread::sleep_for(50ms);
    now = pinned_pages();
  }
  std::printf(
      "pin_on_demand: after every pd_release: pinned_pages %ld (%ld "
      "before declaring)\n",
      now, before);
  if (now != before) failures++;
  if (failures) return 1;
  std::printf("pin_on_demand: rank 0 of %u: ok\n", g.size());
  return 0;
}

int peer(rhinet::Group& g) {
  const std::uint32_t me = g.rank();
  const std::uint64_t at = (me - 1) * kSlice;
  std::vector<std::byte> out(kSlice), back(kSlice);
  for (std::size_t i = 0; i < kSlice; i++) out[i] = pattern(me, i);
  auto ob = g.readonly_buffer(out);
  if (!ob) return fail("buffer", ob.error());
  auto bb = g.buffer(back);
  if (!bb) return fail("buffer", bb.error());
  if (auto b = g.barrier_bootstrap(60s); !b) return fail("barrier", b.error());
  int failures = 0;
  if (auto w = g.pd_req(0, kArea, at, kAsked).wait(30s); !w)
    return fail("pd_req", w.error());
  if (auto w = g.push(0, kArea, at, out).wait(30s); !w)
    return fail("push", w.error());
  if (auto w = g.pull(0, kArea, at, back).wait(30s); !w)
    return fail("pull", w.error());
  if (back != out) {
    std::fprintf(stderr, "pin_on_demand: rank %u pulled other bytes back\n",
                 me);
    failures++;
  }
  auto past = g.pd_req(0, kArea, kSlice * (g.size() - 1) - 4096, 8192);
  if (auto w = past.wait(30s); w || w.error().errno_value() != ERANGE) {
    std::fprintf(stderr, "pin_on_demand: a pd_req past the area: %s\n",
                 w ? "succeeded" : w.error().to_string().c_str());
    failures++;
  }
  if (auto w = g.pd_release(0, kArea, at, kSlice).wait(30s); !w)
    return fail("pd_release", w.error());
  if (auto b = g.barrier_bootstrap(120s); !b) return fail("barrier", b.error());
  if (failures) return 1;
  std::printf("pin_on_demand: rank %u of %u: ok\n", me, g.size());
  return 0;
}

}  // namespace

int main() {
  auto joined = rhinet::Group::join_from_env();
  if (!joined) return fail("join", joined.error());
  rhinet::Group& g = **joined;
  if (g.size() < 2) {
    std::fprintf(stderr, "pin_on_demand: needs 2 ranks or more\n");
    return 1;
  }
  if (!g.pin_on_demand()) {
    std::fprintf(stderr, "pin_on_demand: the device does not pin on demand\n");
    return 1;
  }
  return g.rank() == 0 ? owner(g) : peer(g);
}
