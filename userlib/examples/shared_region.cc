// SPDX-License-Identifier: BSD-2-Clause
// shared_region: a shared region (bytes several ranks keep a copy of) through
// userlib on 4 ranks.
//
// Rank 0 is the home of a 16 KiB region of area 3 (its memory holds the
// initial bytes). Ranks 1 and 2 subscribe (mode twin: their DIFFs compare
// with what they joined with); then a stream of updates flows: ranks 1 and
// 2 send DIFF updates of their own slice of the region, rank 0 basic ones
// of its slice. Once the stream runs, rank 3 subscribes, then sends DIFF
// updates of its own slice; the others keep streaming until they know it
// joined, and some more.
//
// Update v of a writer's slice sets the slice's header (a 32-bit count) to
// v + 1 and log byte v to a value that differs from what was there, so a
// missed update leaves a log byte behind and an update applied again after
// later ones turns the header back. (The home sends the log byte and then
// the header as two basic updates, so the same holds for its.) At the end every
// rank checks its copy: each slice is exactly "header H, log bytes 0..H-1
// written, the rest as the home started" and the writer's H is the number it
// sent; every copy is byte-identical to the home's; and the NIC counted each
// update applied exactly once at every member that was in the region when it
// was sent (share_updates in hw_counters; the newcomer: at most the others'
// total, what its data did not already hold).
//
// Then the errors: what librhinetdv refuses (unknown comp_mask bits), a
// subscribe to a home without the area (ENOENT), a second subscribe
// (EISCONN), an unsubscribe and an update of a region this rank is not in
// (ENOTCONN), what userlib refuses before posting (the home subscribing,
// a range outside the area, a mode a subscribe does not take, a signal on
// an update, a span outside the region); last every member unsubscribes,
// and an update after that fails with ENOTCONN.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_shared_region
//
// Exit status 0 when every check passed on this rank; rank 0 prints
// "shared_region: ok" once every rank has.
#include <infiniband/rhinetdv.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Group;
using rhinet::Mode;
using rhinet::Request;
using rhinet::SharedRegion;
using rhinet::Syndrome;
using rhinet::XferOptions;

constexpr auto kWait = 20s;
constexpr std::uint32_t kArea = 3;
constexpr std::uint32_t kMissingArea = 4;  // registered by rank 1 only
constexpr std::size_t kAreaBytes = 64 * 1024;
constexpr std::size_t kRegionOff = 4096;
constexpr std::size_t kRegionLen = 16 * 1024;
constexpr std::size_t kSlice = 2048;  // each writer's bytes of the region
constexpr std::size_t kLog = kSlice - 4;
// Flags outside the region, pushed by plain PUSHes.
constexpr std::size_t kGoFlag = 0;        // rank 3: the stream is running
constexpr std::size_t kJoinedFlag = 64;   // ranks 0..2: rank 3 is in
constexpr std::uint32_t kGoAt = 10;       // rank 1 sets go at this update
constexpr std::uint32_t kAfterJoin = 10;  // updates after the joined flag
constexpr std::uint32_t kMinUpdates = 30;
constexpr std::uint32_t kNewcomerUpdates = 20;

std::byte initial(std::size_t i) {
  return static_cast<std::byte>((i * 37 + (i >> 7) + 5) & 0xff);
}
// Log byte v of slice w: never the byte that was there.
std::byte entry(std::uint32_t w, std::uint32_t v) {
  const std::size_t at = w * kSlice + 4 + v;
  return initial(at) ^ static_cast<std::byte>(1 + (v * 7 + w) % 255);
}

const char* const kCounters[] = {"share_joins", "share_updates",
                                 "share_refusals", "share_skipped",
                                 "share_errors"};
enum { kJoins, kUpdates, kRefusals, kSkipped, kErrors, kNumCounters };

std::vector<long> counters() {
  std::vector<long> v;
  for (const char* name : kCounters) {
    std::ifstream f(std::string("/sys/class/infiniband/rhinet0/ports/1/"
                                "hw_counters/") +
                    name);
    long x = -1;
    f >> x;
    v.push_back(f ? x : -1);
  }
  return v;
}

class Test {
 public:
  explicit Test(Group& g) : g_(g), me_(g.rank()), n_(g.size()) {}

  int run() {
    if (n_ != 4) {
      std::fprintf(stderr, "shared_region: needs 4 ranks, not %u\n", n_);
      return 1;
    }
    if (!g_.shared_regions()) {
      std::fprintf(stderr,
                   "shared_region: the device lacks RHINETDV_CAP_SHARE\n");
      return 1;
    }
    mem_.assign(kAreaBytes, std::byte{0});
    if (me_ == 0)
      for (std::size_t i = 0; i < kRegionLen; i++)
        mem_[kRegionOff + i] = initial(i);
    auto a = g_.area(kArea, mem_);
    if (!a) return fatal("area", a.error());
    area_.emplace(std::move(*a));
    if (me_ == 1) {
      missing_mem_.assign(kRegionOff + kRegionLen, std::byte{0});
      auto m = g_.area(kMissingArea, missing_mem_);
      if (!m) return fatal("area 4", m.error());
      missing_.emplace(std::move(*m));
    }
    local_mem_.assign(kRegionLen, std::byte{0});
    auto b = g_.buffer(local_mem_);
    if (!b) return fatal("buffer", b.error());
    local_.emplace(std::move(*b));
    if (me_ != 0) {
      auto t = g_.twin(kRegionLen);
      if (!t) return fatal("twin", t.error());
      twin_.emplace(std::move(*t));
    }
    bootstrap_barrier();  // every area registered, the home's bytes set

    phase("subscribe");
    if (me_ == 1 || me_ == 2) join();
    bootstrap_barrier();
    // Read before anyone streams: a rank past the barrier could otherwise
    // have an update applied here before this read.
    before_ = counters();
    bootstrap_barrier();

    phase("stream");
    stream();
    bootstrap_barrier();  // every update completed: all copies final

    phase("check");
    check();
    bootstrap_barrier();  // counters read before the errors add to them

    phase("errors");
    errors();
    bootstrap_barrier();

    phase("unsubscribe");
    if (region_) {
      ok(region_->unsubscribe(), "unsubscribe");
      expect(!region_->subscribed(), "still subscribed after unsubscribe");
      const std::size_t at = slice_of(me_);
      fails(g_.update(kArea, kRegionOff + at, area_bytes(at, 4)).wait(kWait),
            ENOTCONN, Syndrome::not_subscribed, "update after unsubscribe");
    }
    phase("done");

    std::printf("shared_region: rank %u of %u: %d checks passed, %d failed\n",
                me_, n_, checks_ - bad_, bad_);
    std::fflush(stdout);
    bootstrap_barrier();
    if (me_ == 0 && !bad_) std::printf("shared_region: ok\n");
    return bad_ ? 1 : 0;
  }

 private:
  Group& g_;
  const std::uint32_t me_, n_;
  int bad_ = 0, checks_ = 0;
  std::vector<std::byte> mem_, missing_mem_, local_mem_;
  std::optional<rhinet::Area> area_, missing_;
  std::optional<rhinet::Buffer> local_;
  std::optional<rhinet::Twin> twin_;
  std::optional<SharedRegion> region_;
  std::uint32_t sent_ = 0;  // this rank's updates
  std::vector<long> before_;

  int fatal(const char* what, const rhinet::Error& e) {
    std::fprintf(stderr, "shared_region: rank %u: %s: %s\n", me_, what,
                 e.to_string().c_str());
    return 1;
  }
  __attribute__((format(printf, 3, 4))) bool expect(bool good, const char* fmt,
                                                    ...) {
    checks_++;
    if (good) return true;
    bad_++;
    std::fprintf(stderr, "shared_region: rank %u: ", me_);
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
  // A failure with errno `e` (and syndrome `syn` unless none).
  void fails(const rhinet::Result<void>& r, int e, Syndrome syn,
             const char* what) {
    if (!expect(!r, "%s: succeeded", what)) return;
    expect(r.error().errno_value() == e &&
               (syn == Syndrome::none ||
                r.error().syndrome() == static_cast<std::uint32_t>(syn)),
           "%s: %s; expected errno %d syndrome %u", what,
           r.error().to_string().c_str(), e, static_cast<unsigned>(syn));
  }
  void bootstrap_barrier() {
    if (auto r = g_.barrier_bootstrap(300s); !r) {
      std::fprintf(stderr, "shared_region: rank %u: bootstrap barrier: %s\n",
                   me_, r.error().to_string().c_str());
      std::exit(1);
    }
  }
  void phase(const char* what) {
    std::fprintf(stderr, "shared_region: rank %u: %s (%d checks, %d failed)\n",
                 me_, what, checks_, bad_);
  }
  static std::size_t slice_of(std::uint32_t w) { return w * kSlice; }
  // Bytes [at, at + len) of this rank's copy of the region.
  std::span<std::byte> area_bytes(std::size_t at, std::size_t len) {
    return std::span<std::byte>(mem_).subspan(kRegionOff + at, len);
  }
  bool flag(std::size_t off) {
    std::atomic_thread_fence(std::memory_order_acquire);
    return std::atomic_ref<std::byte>(mem_[off]).load() != std::byte{0};
  }
  // A plain PUSH of 1 into `rank`'s flag byte.
  void raise(std::uint32_t rank, std::size_t off) {
    static const std::byte one{1};
    ok(g_.push(rank, kArea, off, std::span<const std::byte>(&one, 1),
               {.inline_data = true})
           .wait(kWait),
       "push flag to rank " + std::to_string(rank));
  }
  bool wait_flag(std::size_t off) {
    const auto end = std::chrono::steady_clock::now() + 120s;
    while (!flag(off)) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }

  void join() {
    auto r = g_.subscribe(0, *area_, kRegionOff, kRegionLen,
                          XferOptions::twin_copy(*twin_, 0));
    if (!expect(static_cast<bool>(r), "subscribe: %s",
                r ? "" : r.error().to_string().c_str()))
      return;
    region_.emplace(std::move(*r));
  }

  // Update v of this rank's slice: header v + 1, log byte v. Ranks 1..3
  // send a DIFF of the slice against their twin; the home (no twin) two
  // basic updates, the log byte and then the header (one update of both
  // would resend the earlier log bytes and hide a missed one).
  void update_once() {
    const std::uint32_t v = sent_;
    const std::size_t at = slice_of(me_);
    std::atomic_thread_fence(std::memory_order_release);
    area_bytes(at + 4 + v, 1)[0] = entry(me_, v);
    const std::uint32_t h = v + 1;
    std::memcpy(area_bytes(at, 4).data(), &h, 4);
    Request q;
    if (me_ == 0) {
      if (!ok(g_.update(kArea, kRegionOff + at + 4 + v,
                        area_bytes(at + 4 + v, 1))
                  .wait(kWait),
              "update " + std::to_string(v) + " (log byte)"))
        return;
      q = g_.update(kArea, kRegionOff + at, area_bytes(at, 4));
    } else {
      q = region_->update(area_bytes(at, kSlice),
                          XferOptions::diff(*twin_, at));
    }
    if (ok(q.wait(kWait), "update " + std::to_string(v))) sent_++;
  }

  void stream() {
    if (me_ == 3) {
      // Join while the others stream, then write its own slice.
      expect(wait_flag(kGoFlag), "no go from rank 1");
      join();
      if (!region_) return;
      for (std::uint32_t r = 0; r < 3; r++) raise(r, kJoinedFlag);
      while (sent_ < kNewcomerUpdates) update_once();
      return;
    }
    // Ranks 0..2: until rank 3 is in and kAfterJoin updates after that.
    std::uint32_t joined_at = 0;
    bool joined = false;
    const auto end = std::chrono::steady_clock::now() + 180s;
    while (sent_ < kLog && std::chrono::steady_clock::now() < end) {
      const std::uint32_t before = sent_;
      update_once();
      if (sent_ == before) return;  // failed (counted)
      if (me_ == 1 && sent_ == kGoAt) raise(3, kGoFlag);
      if (!joined && flag(kJoinedFlag)) {
        joined = true;
        joined_at = sent_;
      }
      if (joined && sent_ >= joined_at + kAfterJoin && sent_ >= kMinUpdates)
        break;
    }
    expect(joined, "rank 3 did not join during the stream");
    std::printf("shared_region: rank %u: %u updates, rank 3 joined after %u\n",
                me_, sent_, joined_at);
  }

  // Every slice of this rank's copy is as its writer left it, the copy is
  // the home's byte for byte, and the NIC applied each update once.
  void check() {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::uint32_t h[4] = {};
    for (std::uint32_t w = 0; w < 4; w++) {
      const std::size_t at = slice_of(w);
      std::memcpy(&h[w], area_bytes(at, 4).data(), 4);
      if (!expect(h[w] > 0 && h[w] <= kLog, "slice %u: header %u", w, h[w]))
        continue;
      int wrong = 0;
      for (std::uint32_t v = 0; v < kLog; v++) {
        const std::byte want = v < h[w] ? entry(w, v) : initial(at + 4 + v);
        if (area_bytes(at + 4 + v, 1)[0] != want && wrong++ < 4)
          std::fprintf(stderr,
                       "shared_region: rank %u: slice %u log %u is 0x%02x, "
                       "expected 0x%02x (header %u)\n",
                       me_, w, v,
                       std::to_integer<unsigned>(area_bytes(at + 4 + v, 1)[0]),
                       std::to_integer<unsigned>(want), h[w]);
      }
      expect(!wrong, "slice %u: %d log bytes wrong", w, wrong);
    }
    for (std::size_t i = 4 * kSlice; i < kRegionLen; i++)
      if (!expect(area_bytes(i, 1)[0] == initial(i),
                  "byte %zu outside the slices changed", i))
        break;
    expect(h[me_] == sent_, "own slice: header %u, sent %u", h[me_], sent_);
    if (me_ != 0) {
      ok(g_.pull(0, kArea, kRegionOff, local_mem_).wait(kWait), "pull home");
      std::atomic_thread_fence(std::memory_order_acquire);
      std::size_t first = kRegionLen;
      for (std::size_t i = 0; i < kRegionLen && first == kRegionLen; i++)
        if (local_mem_[i] != area_bytes(i, 1)[0]) first = i;
      expect(first == kRegionLen, "copy differs from the home's at byte %zu",
             first);
    }
    // The NIC's count of updates applied here.
    const std::vector<long> after = counters();
    long d[kNumCounters];
    for (int c = 0; c < kNumCounters; c++) d[c] = after[c] - before_[c];
    // Updates sent by the others (the home sends two per version).
    long others = 0;
    for (std::uint32_t w = 0; w < 4; w++)
      if (w != me_) others += (w == 0 ? 2 : 1) * long{h[w]};
    std::printf(
        "shared_region: rank %u: headers %u %u %u %u; NIC share_joins %ld "
        "share_updates %ld (others sent %ld) share_refusals %ld "
        "share_skipped %ld share_errors %ld\n",
        me_, h[0], h[1], h[2], h[3], d[kJoins], d[kUpdates], others,
        d[kRefusals], d[kSkipped], d[kErrors]);
    expect(after[kUpdates] >= 0, "no share counters in hw_counters");
    if (me_ == 3) {
      expect(d[kJoins] == 1, "share_joins %ld, expected 1", d[kJoins]);
      expect(d[kUpdates] > 0 && d[kUpdates] <= others,
             "share_updates %ld, expected 1..%ld", d[kUpdates], others);
    } else {
      expect(d[kJoins] == 0, "share_joins %ld during the stream", d[kJoins]);
      expect(d[kUpdates] == others,
             "share_updates %ld, expected exactly %ld (each update once)",
             d[kUpdates], others);
    }
    expect(d[kErrors] == 0, "share_errors %ld", d[kErrors]);
  }

  void errors() {
    rhinetdv_endpoint* ep = g_.endpoint();
    // librhinetdv: unknown comp_mask bits, before anything is posted.
    rhinetdv_subscribe_attr s{};
    s.comp_mask = 1;
    expect(rhinetdv_subscribe(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_subscribe with an unknown comp_mask bit was not EINVAL");
    rhinetdv_unsubscribe_attr u{};
    u.comp_mask = 1;
    expect(rhinetdv_unsubscribe(ep, &u, sizeof(u)) == EINVAL,
           "rhinetdv_unsubscribe with an unknown comp_mask bit was not "
           "EINVAL");
    rhinetdv_share_update_attr up{};
    up.comp_mask = 1ull << 63;
    expect(rhinetdv_share_update(ep, &up, sizeof(up)) == EINVAL,
           "rhinetdv_share_update with an unknown comp_mask bit was not "
           "EINVAL");
    // A longer structure than the library knows, with a nonzero tail.
    struct Longer {
      rhinetdv_subscribe_attr a;
      std::uint64_t extra;
    } longer{};
    longer.extra = 1;
    expect(rhinetdv_subscribe(ep, &longer.a, sizeof(longer)) == EINVAL,
           "rhinetdv_subscribe with unknown nonzero bytes was not EINVAL");
    up.comp_mask = 0;
    up.flags = RHINETDV_MCAST_SIGNAL;  // not a share flag
    expect(rhinetdv_share_update(ep, &up, sizeof(up)) == EINVAL,
           "rhinetdv_share_update with a signal was not EINVAL");
    rhinetdv_device_attr attr{};
    expect(rhinetdv_query_device(g_.context(), &attr, sizeof(attr)) == 0 &&
               (attr.caps & RHINETDV_CAP_SHARE),
           "rhinetdv_query_device caps 0x%x lack SHARE", attr.caps);

    // userlib, before posting.
    fails(g_.isubscribe(me_, *area_, kRegionOff, kRegionLen).wait(kWait),
          EINVAL, Syndrome::none, "subscribe with this rank as home");
    fails(g_.isubscribe(n_, *area_, kRegionOff, kRegionLen).wait(kWait), EINVAL,
          Syndrome::none, "subscribe to a rank out of range");
    const std::uint32_t other = me_ == 0 ? 1 : 0;
    fails(g_.isubscribe(other, *area_, kAreaBytes - 8, 16).wait(kWait), EINVAL,
          Syndrome::none, "subscribe beyond the area");
    fails(g_.isubscribe(other, *area_, kRegionOff, kRegionLen,
                        {.mode = Mode::stride, .stride = {8, 2, 8, 8}})
              .wait(kWait),
          EINVAL, Syndrome::none, "subscribe in mode stride");
    fails(g_.update(kArea, kRegionOff, area_bytes(0, 8), {.signal = 1})
              .wait(kWait),
          EINVAL, Syndrome::none, "update with a signal");
    if (region_) {
      fails(region_->update(std::span<const std::byte>(local_mem_).first(8))
                .wait(kWait),
            EINVAL, Syndrome::none, "update of a span outside the region");
      // The NIC: in the region already (the endpoint stays usable).
      fails(g_.isubscribe(0, *area_, kRegionOff, kRegionLen).wait(kWait),
            EISCONN, Syndrome::not_subscribed, "a second subscribe");
    }
    if (me_ == 1) {
      // Rank 2 has no area 4: the home refuses (ENOENT), nothing stays.
      fails(g_.isubscribe(2, *missing_, kRegionOff, kRegionLen).wait(kWait),
            ENOENT, Syndrome::bad_area, "subscribe to a home without the area");
      fails(g_.iunsubscribe(2, kMissingArea).wait(kWait), ENOTCONN,
            Syndrome::not_subscribed, "unsubscribe after a refused subscribe");
    }
    if (me_ == 2) {
      // Not subscribed to area 4 anywhere; and rank 0 is not the home.
      fails(g_.iunsubscribe(0, kMissingArea).wait(kWait), ENOTCONN,
            Syndrome::not_subscribed, "unsubscribe of a region not in");
      fails(g_.iunsubscribe(1, kArea).wait(kWait), ENOTCONN,
            Syndrome::not_subscribed, "unsubscribe from a rank not the home");
      fails(g_.update(kMissingArea, 0, area_bytes(0, 8)).wait(kWait), ENOTCONN,
            Syndrome::not_subscribed, "update of a region not in");
    }
    // Still usable after all of it: a PUSH to the next rank's flag area.
    ok(g_.push((me_ + 1) % n_, kArea, 128, area_bytes(0, 8)).wait(kWait),
       "push after the errors");
  }
};

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto joined = Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "shared_region: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  return Test(**joined).run();
}
