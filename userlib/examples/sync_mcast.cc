// SPDX-License-Identifier: BSD-2-Clause
// sync_mcast: sequential multicast (the NIC sends to a list), locks and
// barriers kept by the NIC, through userlib, on every rank of a group.
//
//  (a) mcast: rank 0 pushes to ranks 1..n-1 with one operation each: a
//      basic multi-packet one, a small inline one, a STRIDE one, a
//      BITMAP one and two DIFF ones (against a zero twin, then with every
//      97th byte changed: only those travel) into the same area and
//      offsets at every member; after a
//      NIC barrier every member checks every byte of its target region
//      (written bytes against the source, the others still sentinels).
//      Then an mcast to a list one of whose members has no such area:
//      the operation completes with that member's error (ENOENT) and the
//      other members have the data.
//  (b) a counter in rank 0's area, incremented K times by every rank
//      under a lock managed by rank 0 (LOCK, PULL, PUSH value + 1,
//      UNLOCK; every other increment with a LockGuard), ends exactly at
//      n * K;
//  (c) barrier rounds: in round r every rank PUSHes r into its slot of
//      rank 0's area, then enters the barrier (blocking or ibarrier,
//      managed by rank 0 or by rank n-1); after it, every slot holds r
//      or r + 1: nobody left early;
//  (d) errors: unlock of a lock not held (EPERM, Syndrome::not_held), a
//      second lock of a lock held (EDEADLK), a barrier whose count differs
//      from its round's (EINVAL, Syndrome::not_held, and the round then
//      completes for the others), what userlib refuses before posting
//      (ranks out of range, counts out of range), and what librhinetdv
//      refuses on the group's endpoint (unknown comp_mask bits, a lock
//      with a count, a barrier of 0, an mcast with no destinations or
//      mode TWIN: EINVAL).
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_sync_mcast [K]
//
// Exit status 0 when every check passed on this rank; rank 0 prints
// "sync_mcast: ok" once every rank has.
#include <infiniband/rhinetdv.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::BarrierOptions;
using rhinet::Group;
using rhinet::Mode;
using rhinet::Request;
using rhinet::Stride;
using rhinet::XferOptions;

constexpr auto kWait = 20s;
constexpr std::uint32_t kArea = 1;
constexpr std::uint32_t kPartialArea = 2;  // not registered by rank 2
constexpr std::size_t kAreaBytes = 256 * 1024;
constexpr std::size_t kTarget = 64 * 1024;  // mcast target region [0, 64K)
constexpr std::size_t kCounter = 128 * 1024;
constexpr std::size_t kRounds = kCounter + 64;  // 8 bytes per rank
constexpr std::uint64_t kCounterLock = 0xc0417e5;
constexpr std::uint64_t kSpareLock = 0x5b47e;
constexpr std::uint64_t kBadBarrier = 0xbad0ba22;
constexpr std::byte kSentinel{0xee};

std::byte pat(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = (seed ^ (seed >> 29)) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::byte>(((h >> 56) + i * 131u + (i >> 8) * 7u) & 0xff);
}

class Test {
 public:
  Test(Group& g, int k) : g_(g), me_(g.rank()), n_(g.size()), k_(k) {}

  int run() {
    if (!g_.multicast() || !g_.locks_and_barriers()) {
      std::fprintf(stderr,
                   "sync_mcast: the device lacks %s%s (rhinetdv caps)\n",
                   g_.multicast() ? "" : "RHINETDV_CAP_MCAST_LIST ",
                   g_.locks_and_barriers() ? "" : "RHINETDV_CAP_SYNC");
      return 1;
    }
    area_mem_.assign(kAreaBytes, kSentinel);
    std::memset(area_mem_.data() + kCounter, 0, kAreaBytes - kCounter);
    auto a = g_.area(kArea, area_mem_);
    if (!a) return fatal("area", a.error());
    area_.emplace(std::move(*a));
    if (me_ != 2) {
      partial_mem_.assign(4096, kSentinel);
      auto p = g_.area(kPartialArea, partial_mem_);
      if (!p) return fatal("area 2", p.error());
      partial_.emplace(std::move(*p));
    }
    local_mem_.assign(kAreaBytes, std::byte{0});
    auto b = g_.buffer(local_mem_);
    if (!b) return fatal("buffer", b.error());
    local_.emplace(std::move(*b));
    bootstrap_barrier();  // every area registered

    phase("mcast");
    if (n_ >= 2) {
      mcasts();
      mcast_diff();
    }
    phase("counter");
    if (k_ > 0)
      counter();
    else if (me_ == 0)
      std::printf("sync_mcast: counter: skipped (0 increments asked)\n");
    phase("rounds");
    rounds();
    phase("errors");
    errors();
    phase("partial failure");
    if (n_ >= 3) partial_failure();
    phase("done");

    std::printf("sync_mcast: rank %u of %u: %d checks passed, %d failed\n", me_,
                n_, checks_ - bad_, bad_);
    std::fflush(stdout);
    bootstrap_barrier();
    if (me_ == 0 && !bad_) std::printf("sync_mcast: ok\n");
    return bad_ ? 1 : 0;
  }

 private:
  Group& g_;
  const std::uint32_t me_, n_;
  const int k_;
  int bad_ = 0, checks_ = 0;
  std::vector<std::byte> area_mem_, partial_mem_, local_mem_;
  std::optional<rhinet::Area> area_, partial_;
  std::optional<rhinet::Buffer> local_;

  int fatal(const char* what, const rhinet::Error& e) {
    std::fprintf(stderr, "sync_mcast: rank %u: %s: %s\n", me_, what,
                 e.to_string().c_str());
    return 1;
  }
  __attribute__((format(printf, 3, 4))) bool expect(bool good, const char* fmt,
                                                    ...) {
    checks_++;
    if (good) return true;
    bad_++;
    std::fprintf(stderr, "sync_mcast: rank %u: ", me_);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    return false;
  }
  bool ok(const rhinet::Result<void>& r, const std::string& what) {
    return expect(static_cast<bool>(r), "%s: %s", what.c_str(),
                  r ? "" : r.error().to_string().c_str());
  }
  // A failure with errno `e` (and syndrome `syn` unless 0).
  void fails(const rhinet::Result<void>& r, int e, rhinet::Syndrome syn,
             const char* what) {
    if (!expect(!r, "%s: succeeded", what)) return;
    expect(r.error().errno_value() == e &&
               (syn == rhinet::Syndrome::none ||
                r.error().syndrome() == static_cast<std::uint32_t>(syn)),
           "%s: %s; expected errno %d syndrome %u", what,
           r.error().to_string().c_str(), e, static_cast<unsigned>(syn));
  }
  void bootstrap_barrier() {
    if (auto r = g_.barrier_bootstrap(120s); !r) {
      std::fprintf(stderr, "sync_mcast: rank %u: bootstrap barrier: %s\n", me_,
                   r.error().to_string().c_str());
      std::exit(1);
    }
  }
  void nic_barrier(const BarrierOptions& o = {}) {
    ok(g_.barrier(o, kWait), "barrier");
  }
  // Progress on stderr (unbuffered): where a rank stopped shows.
  void phase(const char* what) {
    std::fprintf(stderr, "sync_mcast: rank %u: %s (%d checks, %d failed)\n",
                 me_, what, checks_, bad_);
  }
  void report(const char* what) {
    if (me_ == 0 && !bad_) std::printf("sync_mcast: %s: ok\n", what);
  }
  std::span<std::byte> area() { return area_mem_; }
  std::uint64_t load(std::size_t off) {
    std::uint64_t v;
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(&v, area_mem_.data() + off, 8);
    return v;
  }
  // Every byte of this rank's target region is want(i).
  void check_target(const std::function<std::byte(std::size_t)>& want,
                    const std::string& what) {
    std::atomic_thread_fence(std::memory_order_acquire);
    int wrong = 0;
    for (std::size_t i = 0; i < kTarget; i++)
      if (area_mem_[i] != want(i) && wrong++ < 4)
        std::fprintf(stderr,
                     "sync_mcast: rank %u: %s: byte %zu is 0x%02x, expected "
                     "0x%02x\n",
                     me_, what.c_str(), i,
                     std::to_integer<unsigned>(area_mem_[i]),
                     std::to_integer<unsigned>(want(i)));
    expect(!wrong, "%s: %d bytes wrong", what.c_str(), wrong);
  }
  std::vector<std::uint32_t> members() const {
    std::vector<std::uint32_t> v;
    for (std::uint32_t r = 1; r < n_; r++) v.push_back(r);
    return v;
  }

  // ---- (a) multicast ------------------------------------------------------

  // One case: members reset their target region, rank 0 multicasts, and
  // after a NIC barrier each member checks it against want().
  void mcast_case(const std::string& what, const std::function<Request()>& send,
                  const std::function<std::byte(std::size_t)>& want) {
    std::fill(area_mem_.begin(), area_mem_.begin() + kTarget, kSentinel);
    nic_barrier();  // every target reset before anything is sent
    if (me_ == 0) ok(send().wait(kWait), "mcast " + what);
    nic_barrier();  // rank 0's mcast completed: every member acknowledged
    if (me_ != 0) check_target(want, "mcast " + what);
    report(
        ("mcast " + what + " to " + std::to_string(n_ - 1) + " ranks").c_str());
  }

  void mcasts() {
    const auto dst = members();
    auto src = std::span<std::byte>(local_mem_);
    // Basic, several packets.
    {
      constexpr std::size_t off = 100, len = 40000;
      for (std::size_t i = 0; i < len; i++) src[i] = pat(1, i);
      mcast_case(
          "basic 40000 bytes",
          [&] { return g_.mcast(dst, kArea, off, src.first(len)); },
          [&](std::size_t i) {
            return i >= off && i < off + len ? pat(1, i - off) : kSentinel;
          });
    }
    // Basic inline: the source is free on return.
    {
      constexpr std::size_t off = 50000;
      const std::size_t len = std::min<std::size_t>(g_.max_inline(), 48);
      std::vector<std::byte> tmp(len);
      for (std::size_t i = 0; i < len; i++) tmp[i] = pat(2, i);
      mcast_case(
          "inline " + std::to_string(len) + " bytes",
          [&] {
            Request r = g_.mcast(dst, kArea, off, tmp, {.inline_data = true});
            std::fill(tmp.begin(), tmp.end(), std::byte{0});
            return r;
          },
          [&](std::size_t i) {
            return i >= off && i < off + len ? pat(2, i - off) : kSentinel;
          });
    }
    // STRIDE: 300 blocks of 24 bytes, 40 apart here, 56 apart there.
    {
      const Stride s{24, 300, 40, 56};
      constexpr std::size_t off = 1000;
      const std::size_t extent = (s.count - 1) * s.local_stride + s.block;
      for (std::size_t i = 0; i < extent; i++) src[i] = pat(3, i);
      mcast_case(
          "stride 300 x 24 bytes",
          [&] {
            return g_.mcast(dst, kArea, off, src.first(extent),
                            XferOptions::strided(s));
          },
          [&](std::size_t i) {
            if (i < off) return kSentinel;
            const std::size_t o = i - off, blk = o / s.remote_stride,
                              in = o % s.remote_stride;
            if (blk >= s.count || in >= s.block) return kSentinel;
            return pat(3, blk * s.local_stride + in);
          });
    }
    // BITMAP: blocks of 64 bytes, about two in three marked.
    {
      constexpr std::size_t off = 20000, len = 8192, g = 64;
      constexpr std::size_t bits_at = 100000;  // in the same Buffer
      for (std::size_t i = 0; i < len; i++) src[i] = pat(4, i);
      auto marked = [](std::size_t blk) { return (blk * 7 + 1) % 3 != 0; };
      for (std::size_t b = 0; b < len / g / 8; b++) {
        unsigned byte = 0;
        for (unsigned j = 0; j < 8; j++)
          if (marked(b * 8 + j)) byte |= 1u << j;
        src[bits_at + b] = static_cast<std::byte>(byte);
      }
      mcast_case(
          "bitmap 8192 bytes in blocks of 64",
          [&] {
            return g_.mcast(
                dst, kArea, off, src.first(len),
                XferOptions::with_bitmap(src.subspan(bits_at, len / g / 8), g));
          },
          [&](std::size_t i) {
            return i >= off && i < off + len && marked((i - off) / g)
                       ? pat(4, i - off)
                       : kSentinel;
          });
    }
  }

  // DIFF against a twin of rank 0 (zeros at first): the first mcast sends
  // every byte that is not zero and leaves the twin equal to the source,
  // so the second sends only the bytes changed since; at the members the
  // bytes not sent keep the sentinel.
  void mcast_diff() {
    constexpr std::size_t off = 30000, len = 6000;
    auto src = std::span<std::byte>(local_mem_).first(len);
    auto twin = g_.twin(len);
    if (!ok(twin ? rhinet::ok() : rhinet::Result<void>(twin.error()),
            "twin for the diff mcast"))
      return;
    const auto dst = members();
    for (std::size_t i = 0; i < len; i++) src[i] = pat(6, i);
    mcast_case(
        "diff against a zero twin",
        [&] {
          return g_.mcast(dst, kArea, off, src, XferOptions::diff(*twin));
        },
        [&](std::size_t i) {
          if (i < off || i >= off + len || pat(6, i - off) == std::byte{0})
            return kSentinel;
          return pat(6, i - off);
        });
    auto changed = [](std::size_t i) { return i % 97 == 5; };
    for (std::size_t i = 0; i < len; i++)
      if (changed(i)) src[i] = ~pat(6, i);
    mcast_case(
        "diff of every 97th byte",
        [&] {
          return g_.mcast(dst, kArea, off, src, XferOptions::diff(*twin));
        },
        [&](std::size_t i) {
          return i >= off && i < off + len && changed(i - off)
                     ? ~pat(6, i - off)
                     : kSentinel;
        });
  }

  // An mcast to ranks 1..n-1 of area 2, which rank 2 did not register:
  // ENOENT for the operation, the data at the others.
  void partial_failure() {
    auto src = std::span<std::byte>(local_mem_).first(1000);
    for (std::size_t i = 0; i < src.size(); i++) src[i] = pat(5, i);
    bootstrap_barrier();
    if (me_ == 0)
      fails(g_.mcast(members(), kPartialArea, 10, src).wait(kWait), ENOENT,
            rhinet::Syndrome::bad_area, "mcast with a member lacking the area");
    bootstrap_barrier();
    if (me_ != 0 && me_ != 2) {
      int wrong = 0;
      for (std::size_t i = 0; i < partial_mem_.size(); i++) {
        const std::byte want = i >= 10 && i < 1010 ? pat(5, i - 10) : kSentinel;
        if (partial_mem_[i] != want) wrong++;
      }
      expect(!wrong,
             "mcast with a failing member: %d bytes wrong at a member "
             "that did not fail",
             wrong);
    }
    report("mcast with a member lacking the area: ENOENT, others served");
  }

  // ---- (b) a counter under a lock ----------------------------------------

  void counter() {
    // The counter and its writer's tag (rank + 1, iteration), written
    // together: a holder reads both, PUSHes value + 1 with its own tag,
    // then reads them back while it still holds the lock. Nobody else may
    // write in between, so a read-back that differs names who did.
    auto cell = std::span<std::byte>(local_mem_).subspan(200000, 16);
    auto back = std::span<std::byte>(local_mem_).subspan(200032, 16);
    struct Step {
      std::uint64_t read, read_tag, back, back_tag;
    };
    bootstrap_barrier();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Step> steps;
    steps.reserve(static_cast<std::size_t>(k_));
    constexpr std::uint64_t kPoison = 0xdead'beef'dead'beefull;
    auto get = [](std::span<std::byte> b, std::size_t at) {
      std::uint64_t v;
      std::memcpy(&v, b.data() + at, 8);
      return v;
    };
    auto poison = [&](std::span<std::byte> b) {
      std::memcpy(b.data(), &kPoison, 8);
      std::memcpy(b.data() + 8, &kPoison, 8);
    };
    for (int i = 0; i < k_; i++) {
      std::optional<rhinet::LockGuard> guard;
      if (i % 2 && i > 1) {
        auto l = g_.scoped_lock(kCounterLock, 0);
        if (!ok(l ? rhinet::ok() : rhinet::Result<void>(l.error()),
                "scoped_lock"))
          return;
        guard.emplace(std::move(*l));
      } else if (!ok(g_.ilock(kCounterLock, 0).wait(kWait), "lock")) {
        return;
      }
      // Poisoned first: a PULL that completes without its data shows.
      poison(cell);
      if (!ok(g_.pull(0, kArea, kCounter, cell).wait(kWait), "pull counter"))
        return;
      Step st{get(cell, 0), get(cell, 8), 0, 0};
      expect(st.read != kPoison && st.read_tag != kPoison,
             "iteration %d: the PULL completed but the counter's bytes "
             "were not there",
             i);
      const std::uint64_t next = st.read + 1;
      const std::uint64_t tag =
          std::uint64_t{me_ + 1} << 32 | static_cast<std::uint32_t>(i);
      std::memcpy(cell.data(), &next, 8);
      std::memcpy(cell.data() + 8, &tag, 8);
      if (!ok(g_.push(0, kArea, kCounter, cell).wait(kWait), "push counter"))
        return;
      poison(back);
      if (!ok(g_.pull(0, kArea, kCounter, back).wait(kWait), "read back"))
        return;
      st.back = get(back, 0);
      st.back_tag = get(back, 8);
      expect(st.back == next && st.back_tag == tag,
             "iteration %d: pushed %llu (rank %u #%d) under the lock but read "
             "back %llu written by rank %lld #%llu",
             i, static_cast<unsigned long long>(next), me_, i,
             static_cast<unsigned long long>(st.back),
             static_cast<long long>(st.back_tag >> 32) - 1,
             static_cast<unsigned long long>(st.back_tag & 0xffffffffu));
      steps.push_back(st);
      if (guard) {
        if (!ok(guard->unlock(), "LockGuard::unlock")) return;
      } else if (!ok(g_.iunlock(kCounterLock, 0).wait(kWait), "unlock")) {
        return;
      }
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    nic_barrier();
    const std::uint64_t want = std::uint64_t{n_} * static_cast<unsigned>(k_);
    const int bad_before = bad_;
    if (me_ == 0) {
      const std::uint64_t got = load(kCounter);
      expect(got == want, "counter is %llu after %u x %d locked increments",
             static_cast<unsigned long long>(got), n_, k_);
      if (!bad_)
        std::printf(
            "sync_mcast: counter: %u ranks x %d locked increments = %llu: ok "
            "(%.2f s on rank 0)\n",
            n_, k_, static_cast<unsigned long long>(got), s);
    } else {
      ok(g_.pull(0, kArea, kCounter, cell).wait(kWait), "pull final counter");
      const std::uint64_t got = get(cell, 0);
      expect(got == want, "counter read from rank 0 is %llu, expected %llu",
             static_cast<unsigned long long>(got),
             static_cast<unsigned long long>(want));
    }
    // For comparing the ranks' logs: value read, and who wrote it
    // (rank.iteration); a read-back that differed is marked.
    if (bad_ != bad_before || bad_) {
      std::string line;
      for (const Step& st : steps) {
        line += " " + std::to_string(st.read) + "@" +
                std::to_string(static_cast<long long>(st.read_tag >> 32) - 1) +
                "." + std::to_string(st.read_tag & 0xffffffffu);
        if (st.back != st.read + 1) line += "!back=" + std::to_string(st.back);
      }
      std::fprintf(stderr, "sync_mcast: rank %u read under the lock:%s\n", me_,
                   line.c_str());
    }
  }

  // ---- (c) barrier rounds -------------------------------------------------

  void rounds() {
    constexpr std::uint64_t kRoundsN = 30;
    auto mine = std::span<std::byte>(local_mem_).subspan(210000, 8);
    auto all = std::span<std::byte>(local_mem_).subspan(211000, 8 * n_);
    int early = 0;
    for (std::uint64_t r = 1; r <= kRoundsN; r++) {
      std::memcpy(mine.data(), &r, 8);
      if (!ok(g_.push(0, kArea, kRounds + 8 * me_, mine).wait(kWait),
              "push round"))
        return;
      // Blocking and nonblocking, managed by rank 0 and by the last rank.
      BarrierOptions o;
      if (r % 3 == 2) o.manager = n_ - 1;
      if (r % 2)
        ok(g_.barrier(o, kWait), "barrier round " + std::to_string(r));
      else
        ok(g_.ibarrier(o).wait(kWait), "ibarrier round " + std::to_string(r));
      if (!ok(g_.pull(0, kArea, kRounds, all).wait(kWait), "pull rounds"))
        return;
      for (std::uint32_t k = 0; k < n_; k++) {
        std::uint64_t v;
        std::memcpy(&v, all.data() + 8 * k, 8);
        if (v < r || v > r + 1) {
          if (early++ < 4)
            std::fprintf(stderr,
                         "sync_mcast: rank %u: after barrier round %llu rank "
                         "%u's slot holds %llu\n",
                         me_, static_cast<unsigned long long>(r), k,
                         static_cast<unsigned long long>(v));
        }
      }
    }
    if (early) {
      // Late (a barrier left early) or lost (the slot stays behind)?
      ok(g_.pull(0, kArea, kRounds, all).wait(kWait), "pull rounds again");
      for (std::uint32_t k = 0; k < n_; k++) {
        std::uint64_t v;
        std::memcpy(&v, all.data() + 8 * k, 8);
        std::fprintf(stderr,
                     "sync_mcast: rank %u: after the last round rank %u's "
                     "slot holds %llu\n",
                     me_, k, static_cast<unsigned long long>(v));
      }
    }
    expect(!early, "%d slots out of their round after a barrier", early);
    nic_barrier();
    if (me_ == 0 && !bad_)
      std::printf("sync_mcast: %llu barrier rounds, nobody left early: ok\n",
                  static_cast<unsigned long long>(kRoundsN));
  }

  // ---- (d) errors ---------------------------------------------------------

  void errors() {
    using rhinet::Syndrome;
    // Unlock of a lock nobody holds.
    fails(g_.iunlock(kSpareLock, 0).wait(kWait), EPERM, Syndrome::not_held,
          "unlock of a lock not held");
    // A second lock of a lock this rank holds (its own ID: no contention).
    const std::uint64_t mine = kSpareLock + 1 + me_;
    if (ok(g_.ilock(mine, 0).wait(kWait), "lock")) {
      fails(g_.ilock(mine, 0).wait(kWait), EDEADLK, Syndrome::bad_wqe,
            "lock of a lock held");
      ok(g_.iunlock(mine, 0).wait(kWait), "unlock after the refused lock");
      fails(g_.iunlock(mine, 0).wait(kWait), EPERM, Syndrome::not_held,
            "unlock twice");
    }
    // Refused before posting.
    fails(g_.ilock(1, n_).wait(1s), EINVAL, Syndrome::none,
          "lock managed by a rank out of range");
    fails(g_.ibarrier({.count = 2000}).wait(1s), EINVAL, Syndrome::none,
          "barrier of 2000");
    fails(g_.ibarrier({.manager = n_}).wait(1s), EINVAL, Syndrome::none,
          "barrier managed by a rank out of range");
    const std::uint32_t bad_rank[] = {1, n_};
    fails(
        g_.mcast(bad_rank, kArea, 0, std::span<std::byte>(local_mem_).first(8))
            .wait(1s),
        EINVAL, Syndrome::none, "mcast to a rank out of range");
    fails(g_.mcast({}, kArea, 0, std::span<std::byte>(local_mem_).first(8))
              .wait(1s),
          EINVAL, Syndrome::none, "mcast to nobody");
    direct_verbs();
    bootstrap_barrier();

    // A barrier whose count differs from the pending round's: rank 0 opens
    // a round of n, rank 1 arrives with n + 1 and is refused, then the
    // others arrive with n and the round completes.
    if (n_ >= 2) {
      std::optional<Request> first;
      if (me_ == 0) {
        first.emplace(g_.ibarrier({.id = kBadBarrier}));
        std::this_thread::sleep_for(100ms);  // reaches the manager
      }
      bootstrap_barrier();
      if (me_ == 1)
        fails(g_.ibarrier({.id = kBadBarrier, .count = n_ + 1}).wait(kWait),
              EINVAL, Syndrome::not_held, "barrier with a count mismatch");
      if (me_ != 0)
        ok(g_.barrier({.id = kBadBarrier}, kWait),
           "barrier round after a mismatch");
      else
        ok(first->wait(kWait), "barrier round after a mismatch (rank 0)");
    }
    nic_barrier();
    report(
        "errors (unlock not held, lock twice, barrier count mismatch, "
        "userlib and librhinetdv refusals)");
  }

  void direct_verbs() {
    rhinetdv_endpoint* ep = g_.endpoint();
    const rhinet::Peer p0 = g_.peer(0);
    rhinetdv_sync_attr s{};
    s.manager_node = static_cast<std::uint16_t>(p0.node_id);
    s.manager_endpoint = p0.endpoint_id;
    s.id = 77;
    s.count = 1;
    expect(rhinetdv_lock(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_lock with a count was not EINVAL");
    s.count = 0;
    expect(rhinetdv_barrier(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_barrier of 0 was not EINVAL");
    s.count = RHINETDV_BARRIER_MAX_COUNT + 1;
    expect(rhinetdv_barrier(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_barrier of 1025 was not EINVAL");
    s.count = 0;
    s.comp_mask = 1;
    expect(rhinetdv_unlock(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_unlock with an unknown comp_mask bit was not EINVAL");
    s.comp_mask = 0;
    s.flags = 1u << 30;
    expect(rhinetdv_lock(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_lock with an unknown flag was not EINVAL");

    rhinetdv_mcast_attr m{};
    static const rhinetdv_mcast_dest d[1] = {{0, 0, 0}};
    m.addr = local_mem_.data();
    m.length = 8;
    m.lkey = local_->lkey();
    m.group_id = g_.group_id();
    m.area_id = kArea;
    m.dests = d;
    m.num_dests = 0;
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list to no destinations was not EINVAL");
    m.num_dests = RHINETDV_MCAST_MAX_DESTS + 1;
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list to 4097 destinations was not EINVAL");
    m.num_dests = 1;
    m.mode = RHINETDV_MODE_TWIN;
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list with mode TWIN was not EINVAL");
    m.mode = RHINETDV_MODE_BASIC;
    m.comp_mask = 1;
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list with an unknown comp_mask bit was not "
           "EINVAL");
    m.comp_mask = 0;
    m.signal = 5;  // without RHINETDV_MCAST_SIGNAL
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list with a signal but no flag was not EINVAL");
    m.signal = 0;
    m.flags = RHINETDV_MCAST_INLINE;
    m.mode = RHINETDV_MODE_STRIDE;
    m.block = 4;
    m.count = 2;
    m.local_stride = 4;
    m.remote_stride = 4;
    expect(rhinetdv_mcast_list(ep, &m, sizeof(m)) == EINVAL,
           "rhinetdv_mcast_list INLINE with mode STRIDE was not EINVAL");
    rhinetdv_device_attr attr{};
    expect(rhinetdv_query_device(g_.context(), &attr, sizeof(attr)) == 0 &&
               (attr.caps & RHINETDV_CAP_SYNC) &&
               (attr.caps & RHINETDV_CAP_MCAST_LIST),
           "rhinetdv_query_device caps 0x%x lack SYNC or MCAST_LIST",
           attr.caps);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int k = argc > 1 ? std::atoi(argv[1]) : 200;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto joined = Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "sync_mcast: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  return Test(**joined, k >= 0 ? k : 200).run();  // 0: no counter
}
