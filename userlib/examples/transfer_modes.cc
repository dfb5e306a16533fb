// SPDX-License-Identifier: BSD-2-Clause
// transfer_modes: every operation in every partial-transfer mode it takes (the
// table in Documentation/userlib/reference.md, "PUSH and PULL") through
// userlib, on a ring of ranks.
//
// Each rank owns an area; rank r PUSHes into and PULLs from rank r+1
// (mod size) while rank r-1 does the same to it, so every rank is
// initiator and target at once. For each of PUSH basic/stride/bitmap/diff
// and PULL basic/stride/bitmap/twin, by area and by VA + key, every byte
// is checked: a PULL by the initiator, a PUSH by its target after a
// bootstrap barrier. Then put-with-signal: each rank sleeps in
// wait_signal until its predecessor's five signals arrived. sync() ends
// it.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_transfer_modes
//
// Exit status 0 when every check passed on this rank.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <rhinet/rhinet.hpp>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Mode;
using rhinet::XferOptions;

constexpr std::uint32_t kMain = 1, kInfo = 9;
constexpr std::size_t kN = 256 * 1024;     // bytes one operation covers
constexpr std::size_t kArea = 640 * 1024;  // room for the strides
constexpr std::uint32_t kBlock = 100, kCount = 2000, kLs = 133, kRs = 171;
constexpr std::uint32_t kG = 61;  // bitmap granularity

std::byte pat(std::uint32_t tag, std::uint32_t rank, std::size_t i) {
  return static_cast<std::byte>(
      (tag * 131u + rank * 29u + i * 7u + (i >> 9) * 13u + 1u) & 0xffu);
}

bool bit(const std::vector<std::byte>& bits, std::size_t i) {
  return (std::to_integer<unsigned>(bits[i / 8]) >> (i % 8)) & 1u;
}

struct Free {
  void operator()(std::byte* p) const { std::free(p); }
};
using Mem = std::unique_ptr<std::byte, Free>;
Mem alloc(std::size_t n) {
  return Mem(static_cast<std::byte*>(std::aligned_alloc(4096, n)));
}

class Ring {
 public:
  explicit Ring(rhinet::Group& g)
      : g_(g),
        me_(g.rank()),
        next_((me_ + 1) % g.size()),
        prev_((me_ + g.size() - 1) % g.size()) {}

  int run();

 private:
  bool ok(const rhinet::Result<void>& r, const char* what) {
    if (r) return true;
    std::fprintf(stderr, "transfer_modes: rank %u: %s: %s\n", me_, what,
                 r.error().to_string().c_str());
    bad_++;
    return false;
  }
  // Waits for `req` (posted at `t0`) and keeps its time for rank 0's
  // table of figures.
  bool done(rhinet::Request req, const char* what,
            std::chrono::steady_clock::time_point t0 = {}) {
    const bool good = ok(req.wait(60s), what);
    if (t0 != std::chrono::steady_clock::time_point{} && figures_ < kFigures) {
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      std::snprintf(figure_[figures_++], sizeof figure_[0],
                    "  %-22s %9u %10.0f %8.1f", what, req.bytes(), us,
                    req.bytes() / us);
    }
    return good;
  }
  static constexpr int kFigures = 16;
  char figure_[kFigures][80] = {};
  int figures_ = 0;
  void barrier() {
    if (!ok(g_.barrier_bootstrap(120s), "barrier")) std::exit(1);
  }
  // This rank's area back to the round's pattern, everyone ready.
  void refill(std::uint32_t tag) {
    for (std::size_t i = 0; i < kArea; i++) area_[i] = pat(tag, me_, i);
    barrier();
  }
  void expect(std::span<const std::byte> got,
              const std::vector<std::byte>& want, const char* what) {
    checks_++;
    for (std::size_t i = 0; i < want.size(); i++)
      if (got[i] != want[i]) {
        std::fprintf(
            stderr,
            "transfer_modes: rank %u: %s: byte %zu is 0x%02x, expected "
            "0x%02x\n",
            me_, what, i, std::to_integer<unsigned>(got[i]),
            std::to_integer<unsigned>(want[i]));
        bad_++;
        return;
      }
  }
  std::vector<std::byte> pattern_of(std::uint32_t tag, std::uint32_t rank) {
    std::vector<std::byte> v(kArea);
    for (std::size_t i = 0; i < kArea; i++) v[i] = pat(tag, rank, i);
    return v;
  }
  rhinet::Request push(bool by_key, std::uint64_t off,
                       std::span<const std::byte> src,
                       const XferOptions& o = {}) {
    return by_key ? g_.push_to(next_, next_va_ + off, next_rkey_, src, o)
                  : g_.push(next_, kMain, off, src, o);
  }
  rhinet::Request pull(bool by_key, std::uint64_t off, std::span<std::byte> dst,
                       const XferOptions& o = {}) {
    return by_key ? g_.pull_from(next_, next_va_ + off, next_rkey_, dst, o)
                  : g_.pull(next_, kMain, off, dst, o);
  }
  void rows(bool by_key, std::uint32_t tag);
  void refused_stride();

  rhinet::Group& g_;
  std::uint32_t me_, next_, prev_;
  Mem area_mem_ = alloc(kArea), local_mem_ = alloc(kArea);
  std::span<std::byte> area_{area_mem_.get(), kArea};
  std::span<std::byte> local_{local_mem_.get(), kArea};
  std::vector<std::byte> bits_ = std::vector<std::byte>((kN / kG + 8) / 8);
  std::uint64_t next_va_ = 0;
  std::uint32_t next_rkey_ = 0;
  int bad_ = 0, checks_ = 0;
};

void Ring::rows(bool by_key, std::uint32_t tag) {
  const char* how = by_key ? "by key" : "by area";
  char what[64];
  const auto stride = XferOptions::strided({kBlock, kCount, kLs, kRs});
  const auto bitmap = XferOptions::with_bitmap(bits_, kG);
  const std::size_t extent = (kCount - 1) * kLs + kBlock;

  // PUSH basic, stride, bitmap: the target checks what its predecessor
  // (which fills its source from pat(tag + k, itself)) put there.
  for (int k = 0; k < 3; k++) {
    refill(tag);
    for (std::size_t i = 0; i < kArea; i++)
      local_[i] = pat(tag + 10 + k, me_, i);
    const auto src = std::span<const std::byte>(local_.data(), kArea);
    const auto t0 = std::chrono::steady_clock::now();
    rhinet::Request r = k == 0   ? push(by_key, 3, src.first(kN))
                        : k == 1 ? push(by_key, 5, src.first(extent), stride)
                                 : push(by_key, 0, src.first(kN), bitmap);
    std::snprintf(what, sizeof what, "push %s %s",
                  k == 0   ? "basic"
                  : k == 1 ? "stride"
                           : "bitmap",
                  how);
    done(std::move(r), what, t0);
    barrier();
    auto want = pattern_of(tag, me_);
    const auto theirs = pattern_of(tag + 10 + k, prev_);
    if (k == 0) {
      std::copy_n(theirs.begin(), kN, want.begin() + 3);
    } else if (k == 1) {
      for (std::size_t b = 0; b < kCount; b++)
        std::copy_n(theirs.begin() + b * kLs, kBlock,
                    want.begin() + 5 + b * kRs);
    } else {
      for (std::size_t i = 0; i < kN; i++)
        if (bit(bits_, i / kG)) want[i] = theirs[i];
    }
    expect(area_, want, what);
  }

  // PULL basic, stride, bitmap: the initiator checks.
  for (int k = 0; k < 3; k++) {
    refill(tag + 20 + k);
    std::memset(local_.data(), 0xee, kArea);
    const auto t0 = std::chrono::steady_clock::now();
    rhinet::Request r = k == 0   ? pull(by_key, 9, local_.first(kN))
                        : k == 1 ? pull(by_key, 1, local_.first(extent), stride)
                                 : pull(by_key, 0, local_.first(kN), bitmap);
    std::snprintf(what, sizeof what, "pull %s %s",
                  k == 0   ? "basic"
                  : k == 1 ? "stride"
                           : "bitmap",
                  how);
    done(std::move(r), what, t0);
    const auto theirs = pattern_of(tag + 20 + k, next_);
    std::vector<std::byte> want(kArea, std::byte{0xee});
    if (k == 0) {
      std::copy_n(theirs.begin() + 9, kN, want.begin());
    } else if (k == 1) {
      for (std::size_t b = 0; b < kCount; b++)
        std::copy_n(theirs.begin() + 1 + b * kRs, kBlock,
                    want.begin() + b * kLs);
    } else {
      for (std::size_t i = 0; i < kN; i++)
        if (bit(bits_, i / kG)) want[i] = theirs[i];
    }
    expect(local_, want, what);
    barrier();  // the target keeps its area until every PULL is done
  }

  // PULL twin, change some bytes, PUSH diff: the target ends with the
  // initiator's changes, and only they travelled.
  refill(tag + 30);
  auto twin = g_.twin(kN);
  if (!twin) {
    std::fprintf(stderr, "transfer_modes: rank %u: twin: %s\n", me_,
                 twin.error().to_string().c_str());
    bad_++;
    return;
  }
  std::snprintf(what, sizeof what, "pull twin %s", how);
  auto t0 = std::chrono::steady_clock::now();
  if (done(pull(by_key, 0, local_.first(kN), XferOptions::twin_copy(*twin)),
           what, t0)) {
    auto want = pattern_of(tag + 30, next_);
    want.resize(kN);
    expect(local_.first(kN), want, what);
  }
  for (std::size_t i = 0; i < kN; i += 997) local_[i] ^= std::byte{0x3c};
  std::snprintf(what, sizeof what, "push diff %s", how);
  t0 = std::chrono::steady_clock::now();
  done(push(by_key, 0, std::span<const std::byte>(local_.data(), kN),
            XferOptions::diff(*twin)),
       what, t0);
  barrier();
  auto want = pattern_of(tag + 30, me_);
  for (std::size_t i = 0; i < kN; i += 997) want[i] ^= std::byte{0x3c};
  expect(area_, want, what);
  barrier();
}

// A strided PUSH whose packed bytes fit in the successor's area but whose
// blocks, spread by the remote stride, do not: the NIC refuses it with
// BOUNDS, and the error names the span the blocks cover at the target,
// not the packed length.
void Ring::refused_stride() {
  const std::uint64_t packed = std::uint64_t{kCount} * kBlock;
  const std::uint64_t offset = kArea - packed;
  const std::uint64_t spread = std::uint64_t{kCount - 1} * kRs + kBlock;
  const std::size_t extent = (kCount - 1) * kLs + kBlock;
  auto r = g_.push(next_, kMain, offset, local_.first(extent),
                   XferOptions::strided({kBlock, kCount, kLs, kRs}))
               .wait(60s);
  checks_++;
  const std::string want = std::to_string(spread) + " bytes at the target";
  if (r || r.error().errno_value() != ERANGE ||
      r.error().message().find(want) == std::string::npos) {
    std::fprintf(stderr,
                 "transfer_modes: rank %u: a strided push past the area: %s "
                 "(expected ERANGE naming \"%s\")\n",
                 me_, r ? "succeeded" : r.error().to_string().c_str(),
                 want.c_str());
    bad_++;
  }
}

int Ring::run() {
  for (std::size_t i = 0; i < bits_.size(); i++)
    bits_[i] = static_cast<std::byte>(pat(7, 0, i) & pat(8, 1, i));
  auto area = g_.area(kMain, area_);
  // The main area's address and key, for peers that address it by key.
  alignas(8) std::byte info_mem[16] = {};
  auto local = g_.buffer(local_);
  auto bits = g_.readonly_buffer(bits_);
  if (!area || !local || !bits) {
    std::fprintf(stderr, "transfer_modes: rank %u: registration failed\n", me_);
    return 1;
  }
  const std::uint64_t va = reinterpret_cast<std::uintptr_t>(area_.data());
  const std::uint32_t rkey = area->rkey();
  std::memcpy(info_mem, &va, 8);
  std::memcpy(info_mem + 8, &rkey, 4);
  auto info = g_.area(kInfo, info_mem, rhinet::Access::remote_read);
  std::vector<std::byte> got(16);
  auto got_buf = g_.buffer(got);
  if (!info || !got_buf) return 1;
  barrier();
  if (!done(g_.pull(next_, kInfo, 0, got), "pull the peer's address")) return 1;
  std::memcpy(&next_va_, got.data(), 8);
  std::memcpy(&next_rkey_, got.data() + 8, 4);

  rows(false, 100);
  rows(true, 200);

  // Put-with-signal: five PUSHes with values 1..5 to the successor's area;
  // each rank sleeps until its predecessor's have arrived (sum 15).
  barrier();
  for (std::uint32_t k = 1; k <= 5; k++) {
    auto o = XferOptions{};
    o.signal = k;
    g_.push(next_, kMain, 64 * k, local_.first(64), o).detach();
  }
  checks_++;
  if (ok(g_.wait_signal(kMain, 15, 60s), "wait_signal")) {
    auto c = g_.signal_count(kMain);
    if (!c || *c != 15) {
      std::fprintf(stderr,
                   "transfer_modes: rank %u: signal count %lu, expected 15\n",
                   me_, c ? (unsigned long)*c : 0ul);
      bad_++;
    }
  }
  refused_stride();
  ok(g_.sync(60s), "sync");
  barrier();
  if (bad_) return 1;
  std::printf("transfer_modes: rank %u of %u: ok, %d checks (node %u)\n", me_,
              g_.size(), checks_, g_.self().node_id);
  if (me_ == 0) {
    // Rank 0's operations, each waited for alone (every rank busy too);
    // bytes = the span the operation covers (a DIFF sent ~0.1 % of it).
    std::printf("transfer_modes: rank 0, %u ranks: %-16s %9s %10s %8s\n",
                g_.size(), "operation", "bytes", "time [us]", "MB/s");
    for (int i = 0; i < figures_; i++)
      std::printf("transfer_modes:%s\n", figure_[i]);
  }
  return 0;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto joined = rhinet::Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "transfer_modes: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  if ((*joined)->size() < 2) {
    std::fprintf(stderr, "transfer_modes: needs at least 2 ranks\n");
    return 2;
  }
  Ring ring(**joined);
  return ring.run();
}
