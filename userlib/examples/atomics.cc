// SPDX-License-Identifier: BSD-2-Clause
// atomics: the whole atomic family (Group::atomic and its named forms) from
// every rank at once on words of rank 0, every result checked
// (Documentation/userlib/reference.md, "Remote atomics").
//
//  (a) K times each rank: a 32-bit fetch_add (its values increase), a
//      non-fetching 64-bit add, a 32-bit fetch (never past the count);
//      at the end the counters are exact (size * K).
//  (b) once each rank: bit_xor and fetch_or of its own bit, bit_and
//      clearing it, a 32-bit swap of its number, a 32-bit compare_swap
//      that only one rank wins, a set of its own word then a fetch of it;
//      rank 0 checks every word and the words beside the 32-bit ones.
//  (c) refusals: misaligned 32-bit words and a fetch that does not fetch
//      (EINVAL before posting), a word in an area without atomic access
//      (Syndrome::access_rights, the message naming Access::remote_atomic),
//      and what rhinetdv_atomic_ext refuses.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_atomics [K]
//
// Exit status 0 when every check passed on this rank.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rhinet/rhinet.hpp>
#include <string>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kWords = 40;  // atomic access
constexpr std::uint32_t kPlain = 41;  // read/write only
constexpr auto kWait = 60s;

// Offsets of the words in rank 0's area.
constexpr std::uint64_t kAdd64 = 0, kAdd32 = 8, kGuard32 = 12, kXor32 = 16,
                        kOr64 = 24, kAnd64 = 32, kSwap32 = 40, kCas32 = 44,
                        kSetBase = 64;  // + 8 * rank

int checks = 0, failures = 0;

bool expect(bool ok, const char* fmt, auto... args) {
  checks++;
  if (ok) return true;
  failures++;
  std::fprintf(stderr, "atomics: ");
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
  return false;
}

// Waits for `r`; its value(), or ~0 after an error (reported).
std::uint64_t value_of(rhinet::Request r, const char* what) {
  auto w = r.wait(kWait);
  if (!expect(static_cast<bool>(w), "%s: %s", what,
              w ? "" : w.error().to_string().c_str()))
    return ~std::uint64_t{0};
  return r.value();
}

std::uint32_t load32(const std::uint64_t* mem, std::uint64_t off) {
  std::uint32_t v;
  std::memcpy(&v, reinterpret_cast<const std::byte*>(mem) + off, 4);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int k = argc > 1 ? std::atoi(argv[1]) : 100;
  auto joined = rhinet::Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "atomics: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank(), n = g.size();
  if (n > 32) {
    std::fprintf(stderr, "atomics: at most 32 ranks (one bit each)\n");
    return 1;
  }
  alignas(64) static std::uint64_t words[64];
  alignas(64) static std::uint64_t plain[8];
  auto words_area = g.area(kWords, std::as_writable_bytes(std::span(words)),
                           rhinet::Access::all);
  auto plain_area = g.area(kPlain, std::as_writable_bytes(std::span(plain)));
  if (!words_area || !plain_area) {
    std::fprintf(
        stderr, "atomics: area: %s\n",
        (!words_area ? words_area : plain_area).error().to_string().c_str());
    return 1;
  }
  if (me == 0) {
    words[kGuard32 / 8] = 0x5a5a5a5a00000000ull;  // kAdd32's neighbour
    words[kAnd64 / 8] = ~std::uint64_t{0};
    words[kXor32 / 8] = 0x6b6b6b6b00000000ull;  // high half: a guard
    __atomic_thread_fence(__ATOMIC_RELEASE);
  }
  if (!g.barrier_bootstrap(120s)) return 1;

  // ---- (a) counters --------------------------------------------------------
  std::uint64_t last = 0;
  bool increasing = true;
  for (int i = 0; i < k; i++) {
    const std::uint64_t v =
        value_of(g.fetch_add<std::uint32_t>(0, kWords, kAdd32, 1), "fetch_add");
    increasing &= i == 0 || v > last;
    last = v;
    if (!g.add(0, kWords, kAdd64, 3).wait(kWait)) {
      expect(false, "add failed");
      break;
    }
    if (i % 16 == 0) {
      const std::uint64_t seen =
          value_of(g.fetch<std::uint32_t>(0, kWords, kAdd32), "fetch");
      expect(seen <= std::uint64_t{n} * static_cast<unsigned>(k) &&
                 seen > last - (last ? 1 : 0),
             "fetch of the 32-bit counter read %" PRIu64
             " (its last add saw "
             "%" PRIu64 ")",
             seen, last);
    }
  }
  expect(increasing, "rank %u: its 32-bit fetch_add values did not increase",
         me);
  expect(last < 0x100000000ull, "a 32-bit fetch_add returned %" PRIx64, last);

  // ---- (b) one of each -----------------------------------------------------
  g.bit_xor<std::uint32_t>(0, kWords, kXor32, 1u << me).detach();
  const std::uint64_t or_old =
      value_of(g.fetch_or(0, kWords, kOr64, 1ull << (me + 32)), "fetch_or");
  expect(!(or_old & (1ull << (me + 32))), "fetch_or found its bit set already");
  g.bit_and(0, kWords, kAnd64, ~(1ull << me)).detach();
  const std::uint64_t swapped =
      value_of(g.swap<std::uint32_t>(0, kWords, kSwap32, me + 1), "swap");
  expect(swapped <= n, "swap returned %" PRIu64, swapped);
  const std::uint64_t cas =
      value_of(g.compare_swap<std::uint32_t>(0, kWords, kCas32, 0, me + 100),
               "compare_swap");
  expect(cas == 0 || (cas >= 100 && cas < 100 + n),
         "compare_swap returned %" PRIu64, cas);
  const std::uint64_t mine = 0x0123456789000000ull + me;
  if (g.set(0, kWords, kSetBase + 8 * me, mine).wait(kWait)) {
    const std::uint64_t back =
        value_of(g.fetch(0, kWords, kSetBase + 8 * me), "fetch of its word");
    expect(back == mine, "set %" PRIx64 ", fetched %" PRIx64, mine, back);
  } else {
    expect(false, "set failed");
  }
  {
    auto s = g.sync(kWait);
    expect(static_cast<bool>(s), "sync: %s",
           s ? "" : s.error().to_string().c_str());
  }

  // ---- (c) refusals --------------------------------------------------------
  {
    auto r = g.swap<std::uint32_t>(0, kWords, 2, 1).wait(kWait);
    expect(!r && r.error().errno_value() == EINVAL,
           "a 2-byte aligned 32-bit swap was not EINVAL");
    auto f = g.atomic(0, kWords, 0, rhinet::AtomicOp::fetch, 8, 0, 0, false)
                 .wait(kWait);
    expect(!f && f.error().errno_value() == EINVAL,
           "a fetch without fetching was not EINVAL");
    auto w = g.atomic(0, kWords, 0, rhinet::AtomicOp::swap, 2, 0).wait(kWait);
    expect(!w && w.error().errno_value() == EINVAL,
           "a 2-byte atomic was not EINVAL");
    auto p = g.fetch_xor<std::uint32_t>(0, kPlain, 4, 1).wait(kWait);
    expect(!p &&
               p.error().syndrome() == static_cast<std::uint32_t>(
                                           rhinet::Syndrome::access_rights) &&
               p.error().message().find("Access::remote_atomic") !=
                   std::string::npos,
           "a fetch_xor on an area without atomic access: %s",
           p ? "succeeded" : p.error().to_string().c_str());
  }
  {
    alignas(8) static std::uint64_t result;
    rhinetdv_atomic_ext_attr a{};
    a.op = RHINETDV_ATOMIC_XOR;
    a.result = &result;
    a.group_id = g.group_id();
    a.area_id = kWords;
    a.offset = kXor32;
    a.flags = RHINETDV_ATOMIC_32;
    rhinetdv_endpoint* ep = g.endpoint();
    auto refused = [&](const char* what, int want) {
      const int e = rhinetdv_atomic_ext(ep, &a, sizeof(a));
      expect(e == want, "rhinetdv_atomic_ext with %s: %d, not %d", what, e,
             want);
    };
    a.op = 8;
    refused("op 8", EINVAL);
    a.op = RHINETDV_ATOMIC_XOR;
    a.flags |= RHINETDV_ATOMIC_NO_FETCH;
    refused("a result without fetch", EINVAL);
    a.result = nullptr;
    a.op = RHINETDV_ATOMIC_FETCH;
    refused("a fetch without fetch", EINVAL);
    a.op = RHINETDV_ATOMIC_XOR;
    a.flags = RHINETDV_ATOMIC_32;
    refused("no result with fetch", EINVAL);
    a.result = reinterpret_cast<std::uint64_t*>(
        reinterpret_cast<std::uintptr_t>(&result) + 2);
    refused("a misaligned result", EINVAL);
    a.result = &result;
    a.swap = 1;
    refused("a swap value for xor", EINVAL);
    a.swap = 0;
    a.offset = kXor32 + 2;
    refused("a misaligned word", EINVAL);
    a.offset = kXor32;
    a.flags = 1u << 9;
    refused("an unknown flag", EINVAL);
    a.flags = RHINETDV_ATOMIC_32;
    a.group_id = 0xfffe;  // not this process's group
    refused("a group it is not in", EPERM);
  }
  if (!g.barrier_bootstrap(120s)) return 1;

  if (me == 0) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const std::uint64_t total = std::uint64_t{n} * static_cast<unsigned>(k);
    const std::uint64_t all = n == 32 ? 0xffffffffull : (1ull << n) - 1;
    expect(load32(words, kAdd32) == total, "32-bit counter %u, not %" PRIu64,
           load32(words, kAdd32), total);
    expect(load32(words, kGuard32) == 0x5a5a5a5au,
           "the 32-bit counter's neighbour changed: %x",
           load32(words, kGuard32));
    expect(words[kAdd64 / 8] == 3 * total, "64-bit counter %" PRIu64,
           words[kAdd64 / 8]);
    expect(words[kXor32 / 8] == (0x6b6b6b6b00000000ull | all),
           "xor word %" PRIx64, words[kXor32 / 8]);
    expect(words[kOr64 / 8] == all << 32, "or word %" PRIx64, words[kOr64 / 8]);
    expect(words[kAnd64 / 8] == ~all, "and word %" PRIx64, words[kAnd64 / 8]);
    const std::uint32_t sw = load32(words, kSwap32);
    expect(sw >= 1 && sw <= n, "swap word %u", sw);
    const std::uint32_t cw = load32(words, kCas32);
    expect(cw >= 100 && cw < 100 + n, "compare_swap word %u", cw);
    for (std::uint32_t r = 0; r < n; r++)
      expect(words[kSetBase / 8 + r] == 0x0123456789000000ull + r,
             "rank %u's set word %" PRIx64, r, words[kSetBase / 8 + r]);
    expect(plain[0] == 0, "the refused fetch_xor changed the word");
  }
  if (failures) {
    std::fprintf(stderr, "atomics: rank %u: %d of %d checks failed\n", me,
                 failures, checks);
    return 1;
  }
  std::printf("atomics: rank %u: %d checks ok%s\n", me, checks,
              me == 0 ? " (every word exact)" : "");
  return 0;
}
