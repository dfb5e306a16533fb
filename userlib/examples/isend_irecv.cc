// SPDX-License-Identifier: BSD-2-Clause
// isend_irecv: messages matched by the NIC (isend, irecv, iprobe, cancel)
// through userlib, every byte checked.
//
//  (a) ping-pong between ranks 0 and 1 with 0, 1, 64 and 4096 bytes (eager
//      when the device's max_eager allows) and 1 MiB (rendezvous): rank 1
//      checks what arrived and sends it back, rank 0 checks the echo and
//      prints the round-trip time per size;
//  (b) all-to-all: every rank isends K messages (distinct tags and
//      contents, small and beyond max_eager, some inline) to every other
//      rank, which takes half of them with exact-source irecvs and the
//      other half with any-source irecvs of a masked tag: every message
//      arrives once, where its tag says, whole; the any-source irecvs see
//      each sender's messages in send order;
//  (c) unexpected messages: rank 1 sends a small and a large message
//      before rank 0 posts anything; rank 0 finds them with iprobe (right
//      source, tag, length; nothing for other tags), then receives them;
//  (d) cancel: irecvs nothing matches are cancelled (ECANCELED,
//      cancelled()); a cancelled irecv takes no later message;
//  (e) truncation: a message longer than the irecv's buffer (EMSGSIZE,
//      its whole length reported, the buffer holds its first bytes);
//  and the checks made before posting, on the live group.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_isend_irecv [K]
//
// K: messages per ordered pair of ranks in (b) (default 8). Exit status 0
// when every check passed on this rank; rank 0 prints "isend_irecv: ok"
// once every rank has.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Group;
using rhinet::Message;
using rhinet::Request;
using rhinet::TagMatch;

constexpr auto kWait = 60s;

// Tags: the phase in the top byte, so phases never take each other's
// messages; then source, destination and a sequence number.
enum Phase : std::uint64_t {
  kPing = 1,
  kPong = 2,
  kExact = 3,
  kAny = 4,
  kUnexpected = 5,
  kCancel = 6,
  kTruncate = 7,
};
constexpr std::uint64_t kPhaseMask = 0xffull << 56;

std::uint64_t tag_of(Phase phase, std::uint32_t src, std::uint32_t dst,
                     std::uint32_t seq) {
  return std::uint64_t{phase} << 56 | std::uint64_t{src & 0xffff} << 40 |
         std::uint64_t{dst & 0xffff} << 24 | (seq & 0xffffff);
}
std::uint32_t src_of(std::uint64_t tag) { return (tag >> 40) & 0xffff; }
std::uint32_t dst_of(std::uint64_t tag) { return (tag >> 24) & 0xffff; }
std::uint32_t seq_of(std::uint64_t tag) { return tag & 0xffffff; }

// The content of message `tag` (so a message in the wrong place, or a
// reported tag that is not the message's, shows as wrong bytes).
std::byte pat(std::uint64_t tag, std::size_t i) {
  const std::uint64_t h = (tag ^ (tag >> 29)) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::byte>(((h >> 56) + i * 131u + (i >> 8) * 7u) & 0xff);
}
void fill(std::span<std::byte> s, std::uint64_t tag) {
  for (std::size_t i = 0; i < s.size(); i++) s[i] = pat(tag, i);
}
void clear(std::span<std::byte> s, std::byte value) {
  for (std::byte& b : s) b = value;
}

// Registered memory owned with its Buffer.
class Mem {
 public:
  Mem(Group& g, std::size_t bytes) : v_(std::max<std::size_t>(bytes, 1)) {
    auto b = g.buffer(v_);
    if (!b) {
      std::fprintf(stderr, "isend_irecv: rank %u: buffer: %s\n", g.rank(),
                   b.error().to_string().c_str());
      std::exit(1);
    }
    buf_.emplace(std::move(*b));
  }
  std::span<std::byte> span(std::size_t off, std::size_t n) {
    return std::span(v_).subspan(off, n);
  }
  std::span<std::byte> all() { return v_; }

 private:
  std::vector<std::byte> v_;
  std::optional<rhinet::Buffer> buf_;
};

class Test {
 public:
  Test(Group& g, std::uint32_t k) : g_(g), me_(g.rank()), n_(g.size()), k_(k) {}

  int run() {
    if (!g_.tag_matching()) {
      std::fprintf(stderr,
                   "isend_irecv: rank %u: the device has no tag matching\n",
                   me_);
      return 1;
    }
    if (me_ == 0)
      std::printf(
          "isend_irecv: %u ranks, max_eager %u, max_inline %u, max_irecv "
          "%u, K %u\n",
          n_, g_.max_eager(), g_.max_inline(), g_.max_irecv(), k_);
    barrier();
    argument_checks();
    barrier();
    ping_pong();
    barrier();
    all_to_all();
    barrier();
    unexpected();
    barrier();
    cancel();
    barrier();
    truncate();
    expect(ok(g_.sync(kWait), "sync"), "sync");
    expect(g_.outstanding() == 0, "%zu operations outstanding after sync",
           g_.outstanding());
    expect(g_.pending_irecvs() == 0, "%zu irecvs still pending at the end",
           g_.pending_irecvs());
    if (bad_) {
      std::fprintf(stderr, "isend_irecv: rank %u: %d of %d checks failed\n",
                   me_, bad_, checks_);
      return 1;
    }
    std::printf("isend_irecv: rank %u of %u: %d checks passed\n", me_, n_,
                checks_);
    std::fflush(stdout);
    // Nobody leaves (deregistering) while a peer may still need it, and
    // rank 0 speaks for all.
    barrier();
    if (me_ == 0) std::printf("isend_irecv: ok\n");
    return 0;
  }

 private:
  Group& g_;
  const std::uint32_t me_, n_, k_;
  int bad_ = 0, checks_ = 0;

  __attribute__((format(printf, 3, 4))) bool expect(bool good, const char* fmt,
                                                    ...) {
    checks_++;
    if (good) return true;
    bad_++;
    std::fprintf(stderr, "isend_irecv: rank %u: ", me_);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    return false;
  }
  bool ok(const rhinet::Result<void>& r, const std::string& what) {
    if (r) return true;
    std::fprintf(stderr, "isend_irecv: rank %u: %s: %s\n", me_, what.c_str(),
                 r.error().to_string().c_str());
    return false;
  }
  void barrier() {
    if (auto b = g_.barrier_bootstrap(120s); !b) {
      std::fprintf(stderr, "isend_irecv: rank %u: barrier: %s\n", me_,
                   b.error().to_string().c_str());
      std::exit(1);
    }
  }
  // got == the content of message `tag`; says where it differs.
  bool same(std::span<const std::byte> got, std::uint64_t tag,
            const char* what) {
    for (std::size_t i = 0; i < got.size(); i++)
      if (got[i] != pat(tag, i))
        return expect(false,
                      "%s: tag 0x%llx byte %zu of %zu is 0x%02x, expected "
                      "0x%02x",
                      what, static_cast<unsigned long long>(tag), i, got.size(),
                      std::to_integer<unsigned>(got[i]),
                      std::to_integer<unsigned>(pat(tag, i)));
    checks_++;
    return true;
  }
  // A receive completed successfully with (source, tag, length).
  bool received(Request& rx, std::uint32_t source, std::uint64_t tag,
                std::size_t length, const char* what) {
    if (!expect(ok(rx.wait(kWait), what), "%s: receive failed", what))
      return false;
    const std::optional<Message>& m = rx.message();
    if (!expect(m.has_value(), "%s: no message reported", what)) return false;
    bool good = expect(m->source == source, "%s: source %u, expected %u", what,
                       m->source, source);
    good &= expect(m->tag == tag, "%s: tag 0x%llx, expected 0x%llx", what,
                   static_cast<unsigned long long>(m->tag),
                   static_cast<unsigned long long>(tag));
    good &= expect(m->length == length && rx.bytes() == length,
                   "%s: length %zu (bytes %u), expected %zu", what, m->length,
                   rx.bytes(), length);
    if (source < n_)
      good &= expect(m->peer == g_.peer(source),
                     "%s: (node %u, endpoint %u) is not rank %u's", what,
                     m->peer.node_id, m->peer.endpoint_id, source);
    return good;
  }
  bool sent(Request& tx, const char* what) {
    return expect(ok(tx.wait(kWait), what), "%s: isend failed", what);
  }
  // A request that must have failed before posting with errno `e`.
  void refused(Request r, int e, const char* what) {
    auto w = r.wait(1s);
    if (expect(!w, "%s: accepted", what))
      expect(w.error().errno_value() == e, "%s: errno %d (%s), expected %d",
             what, w.error().errno_value(), w.error().to_string().c_str(), e);
  }

  // ---- the library's checks on a live group ------------------------------

  void argument_checks() {
    Mem m(g_, 256);
    std::vector<std::byte> loose(256);
    const std::uint32_t peer = (me_ + 1) % n_;
    refused(g_.isend(n_, 1, m.all()), EINVAL, "isend to a rank beyond size");
    refused(g_.isend(rhinet::any_source, 1, m.all()), EINVAL,
            "isend to any_source");
    refused(g_.irecv(n_, 1, m.all()), EINVAL, "irecv from a rank beyond size");
    refused(g_.isend(peer, 1, loose), EFAULT, "isend from unregistered memory");
    refused(g_.irecv(peer, 1, loose), EFAULT, "irecv into unregistered memory");
    // The modes messages take (the modes themselves: rhinet_partial_messages):
    // an isend takes no twin, an irecv no diff, and a partial mode needs
    // its parameters.
    rhinet::XferOptions o;
    o.mode = rhinet::Mode::twin;
    refused(g_.isend(peer, 1, m.all(), o), EINVAL, "isend, mode twin");
    o.mode = rhinet::Mode::diff;
    refused(g_.irecv(peer, 1, m.all(), o), EINVAL, "irecv, mode diff");
    for (auto mode : {rhinet::Mode::stride, rhinet::Mode::bitmap}) {
      o.mode = mode;
      refused(g_.isend(peer, 1, m.all(), o), EINVAL,
              "isend, partial mode without parameters");
      refused(g_.irecv(peer, 1, m.all(), o), EINVAL,
              "irecv, partial mode without parameters");
    }
    refused(g_.isend(peer, 1, m.all(), {.signal = 1}), EINVAL,
            "isend with a signal");
    refused(g_.irecv(peer, 1, m.all(), {.inline_data = true}), EINVAL,
            "inline irecv");
    if (g_.max_inline() < loose.size())
      refused(g_.isend(peer, 1, loose, {.inline_data = true}), EMSGSIZE,
              "inline isend beyond max_inline");
    auto p = g_.iprobe(n_, 1);
    if (expect(!p, "iprobe from a rank beyond size accepted"))
      expect(p.error().errno_value() == EINVAL, "iprobe: errno %d",
             p.error().errno_value());
    expect(g_.outstanding() == 0 && g_.pending_irecvs() == 0,
           "refused operations left %zu operations, %zu irecvs pending",
           g_.outstanding(), g_.pending_irecvs());
  }

  // ---- (a) ping-pong -----------------------------------------------------

  void ping_pong() {
    if (n_ < 2 || me_ > 1) return;
    const std::size_t sizes[] = {0, 1, 64, 4096, std::size_t{1} << 20};
    Mem out(g_, sizes[4]), in(g_, sizes[4]);
    for (std::uint32_t si = 0; si < std::size(sizes); si++) {
      const std::size_t size = sizes[si];
      const int rounds = size > 65536 ? 8 : 100;
      double total_us = 0;
      for (int it = 0; it < rounds && !bad_; it++) {
        const std::uint32_t seq = si << 16 | static_cast<std::uint32_t>(it);
        const std::uint64_t ping = tag_of(kPing, 0, 1, seq);
        const std::uint64_t pong = tag_of(kPong, 1, 0, seq);
        if (me_ == 0) {
          fill(out.span(0, size), ping);
          clear(in.span(0, size), std::byte{0xee});
          const auto t0 = std::chrono::steady_clock::now();
          Request rx = g_.irecv(1, pong, in.span(0, size));
          Request tx = g_.isend(1, ping, out.span(0, size));
          const bool good =
              sent(tx, "ping") && received(rx, 1, pong, size, "pong");
          total_us += std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
          // The echo is what was sent.
          if (good) same(in.span(0, size), ping, "pong (the echo)");
        } else {
          clear(in.span(0, size), std::byte{0xee});
          Request rx = g_.irecv(0, ping, in.span(0, size));
          if (!received(rx, 0, ping, size, "ping")) continue;
          Request tx = g_.isend(0, pong, in.span(0, size));
          same(in.span(0, size), ping, "ping");
          sent(tx, "pong");
        }
      }
      if (me_ == 0 && !bad_)
        std::printf(
            "isend_irecv: ping-pong %8zu bytes (%s): %10.1f us round trip "
            "(%d round trips)\n",
            size, size <= g_.max_eager() ? "eager" : "rendezvous",
            total_us / rounds, rounds);
    }
  }

  // ---- (b) all-to-all ----------------------------------------------------

  // Message seq from src to dst: every other one goes to an exact-source
  // irecv, the others to any-source irecvs; every fourth is long.
  bool exact_seq(std::uint32_t seq) const { return seq % 2 == 0; }
  std::size_t length_of(std::uint32_t src, std::uint32_t dst,
                        std::uint32_t seq) const {
    if (seq % 4 == 3) return large_ + (src * 977 + dst * 131 + seq) % 1000;
    return 1 + (src * 7 + dst * 13 + seq * 29) % 600;
  }
  std::size_t large_ = 0;

  void all_to_all() {
    large_ = std::max<std::size_t>(std::size_t{2} * g_.max_eager(), 16384);
    const std::size_t slot = large_ + 1000;  // room for any message
    const std::uint32_t others = n_ - 1;
    const std::uint32_t n_exact = (k_ + 1) / 2, n_any = k_ / 2;

    // Receives first: exact ones (in reverse order: matching is by tag,
    // not by posting order), then the any-source ones, which take every
    // kAny message addressed here (the mask ignores source and sequence).
    Mem rx_mem(g_, std::size_t{others} * k_ * slot);
    struct Rx {
      Request req;
      std::span<std::byte> buf;
      std::uint64_t want = 0;  // exact: the tag; any: 0
    };
    std::vector<Rx> exact, any;
    std::size_t used = 0;
    for (std::uint32_t j = 0; j < others; j++) {
      const std::uint32_t src = (me_ + 1 + j) % n_;
      for (std::uint32_t s = k_; s-- > 0;) {
        if (!exact_seq(s)) continue;
        const std::uint64_t tag = tag_of(kExact, src, me_, s);
        auto buf = rx_mem.span(used, length_of(src, me_, s));
        used += slot;
        exact.push_back({g_.irecv(src, tag, buf), buf, tag});
      }
    }
    const TagMatch any_of_phase{std::uint64_t{kAny} << 56, kPhaseMask};
    for (std::uint32_t i = 0; i < others * n_any; i++) {
      auto buf = rx_mem.span(used, slot);
      used += slot;
      any.push_back({g_.irecv(rhinet::any_source, any_of_phase, buf), buf, 0});
    }

    // Then the isends, seq by seq to every peer (each pair's messages in
    // seq order); small ones with seq % 3 == 0 go inline.
    std::vector<std::size_t> offset;
    std::size_t total = 0;
    for (std::uint32_t j = 0; j < others; j++)
      for (std::uint32_t s = 0; s < k_; s++) {
        offset.push_back(total);
        total += length_of(me_, (me_ + 1 + j) % n_, s);
      }
    Mem tx_mem(g_, total);
    std::vector<std::byte> loose(std::max<std::size_t>(total, 1));
    std::vector<Request> txs;
    for (std::uint32_t s = 0; s < k_; s++)
      for (std::uint32_t j = 0; j < others; j++) {
        const std::uint32_t dst = (me_ + 1 + j) % n_;
        const std::uint64_t tag =
            tag_of(exact_seq(s) ? kExact : kAny, me_, dst, s);
        const std::size_t len = length_of(me_, dst, s),
                          off = offset[j * k_ + s];
        if (s % 3 == 0 && len <= g_.max_inline()) {
          auto src = std::span(loose).subspan(off, len);
          fill(src, tag);
          txs.push_back(g_.isend(dst, tag, src, {.inline_data = true}));
          // Inline: the bytes were copied; scribbling on them now must not
          // change the message.
          clear(src, std::byte{0x5a});
        } else {
          auto src = tx_mem.span(off, len);
          fill(src, tag);
          txs.push_back(g_.isend(dst, tag, src));
        }
      }
    // All the sends at once; each keeps its own outcome.
    if (ok(rhinet::wait_all(txs, kWait), "all-to-all isends (wait_all)"))
      for (auto& tx : txs)
        expect(tx.done(), "wait_all returned with an isend in flight");
    for (auto& tx : txs) sent(tx, "all-to-all isend");

    // Every exact receive got its message, taken as they complete: each
    // leaves the set wait_any looks at once it is checked.
    std::vector<Request> pending;
    std::vector<const Rx*> of_pending;
    for (auto& r : exact) {
      pending.push_back(std::move(r.req));
      of_pending.push_back(&r);
    }
    while (!pending.empty()) {
      auto got = rhinet::wait_any(pending, kWait);
      if (!expect(got.has_value(), "wait_any over %zu exact irecvs: %s",
                  pending.size(), got ? "" : got.error().to_string().c_str()))
        break;
      const Rx& r = *of_pending[*got];
      if (expect(pending[*got].done(), "wait_any gave a request in flight") &&
          received(pending[*got], src_of(r.want), r.want, r.buf.size(),
                   "all-to-all exact irecv"))
        same(r.buf, r.want, "all-to-all exact irecv");
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(*got));
      of_pending.erase(of_pending.begin() + static_cast<std::ptrdiff_t>(*got));
    }
    // An empty set is a caller's mistake, not a wait.
    {
      auto none = rhinet::wait_any({}, kWait);
      expect(!none && none.error().errno_value() == EINVAL,
             "wait_any on no requests: expected EINVAL");
    }
    // The any-source receives got every kAny message for us once, whole,
    // and each sender's in its send order.
    std::set<std::uint64_t> seen;
    std::map<std::uint32_t, std::uint32_t> next;  // sender -> its next seq
    for (auto& r : any) {
      if (!expect(ok(r.req.wait(kWait), "all-to-all any-source irecv"),
                  "any-source irecv failed"))
        continue;
      const auto& m = r.req.message();
      if (!expect(m.has_value(), "any-source irecv: no message")) continue;
      const std::uint32_t src = src_of(m->tag), seq = seq_of(m->tag);
      bool good =
          expect(any_of_phase.matches(m->tag) && dst_of(m->tag) == me_ &&
                     src < n_ && src != me_ && !exact_seq(seq) && seq < k_,
                 "any-source irecv: tag 0x%llx was never sent here",
                 static_cast<unsigned long long>(m->tag));
      good &= expect(seen.insert(m->tag).second,
                     "any-source irecv: tag 0x%llx arrived twice",
                     static_cast<unsigned long long>(m->tag));
      if (!good) continue;
      expect(m->source == src, "any-source irecv: source %u, the tag says %u",
             m->source, src);
      const std::size_t len = length_of(src, me_, seq);
      if (!expect(m->length == len && r.req.bytes() == len,
                  "any-source irecv: tag 0x%llx has %zu bytes (%u placed), "
                  "expected %zu",
                  static_cast<unsigned long long>(m->tag), m->length,
                  r.req.bytes(), len))
        continue;
      same(r.buf.first(len), m->tag, "any-source irecv");
      auto& want = next.try_emplace(src, 1u).first->second;  // odd seqs
      expect(seq == want,
             "any-source irecv: from rank %u seq %u came before seq %u "
             "(send order broken)",
             src, seq, want);
      want = seq + 2;
    }
    expect(seen.size() == std::size_t{others} * n_any,
           "any-source irecvs took %zu distinct messages, expected %zu",
           seen.size(), std::size_t{others} * n_any);
    if (me_ == 0 && !bad_)
      std::printf(
          "isend_irecv: all-to-all: %u ranks x %u messages each way "
          "(%u exact, %u any-source; up to %zu bytes): ok\n",
          n_, k_, n_exact, n_any, large_ + 999);
  }

  // ---- (c) unexpected messages and iprobe --------------------------------

  void unexpected() {
    if (n_ < 2 || me_ > 1) {
      barrier();
      return;
    }
    const std::size_t small = 100;
    const std::size_t large =
        std::max<std::size_t>(std::size_t{2} * g_.max_eager() + 12345, 65536);
    const std::uint64_t ts = tag_of(kUnexpected, 1, 0, 1);
    const std::uint64_t tl = tag_of(kUnexpected, 1, 0, 2);
    const std::uint64_t none = tag_of(kUnexpected, 1, 0, 3);
    Mem m(g_, small + large);
    if (me_ == 1) {
      fill(m.span(0, small), ts);
      fill(m.span(small, large), tl);
      Request a = g_.isend(0, ts, m.span(0, small));
      Request b = g_.isend(0, tl, m.span(small, large));
      barrier();  // before it, rank 0 posts nothing
      // They complete once rank 0 took them (or, eager, once arrived).
      sent(a, "unexpected small isend");
      sent(b, "unexpected large isend");
      return;
    }
    barrier();
    // Probe until each is there (sent before the barrier, but it may
    // still be on its way).
    const auto probe = [&](std::uint32_t src, TagMatch match,
                           const char* what) -> std::optional<Message> {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      for (;;) {
        auto p = g_.iprobe(src, match);
        if (!expect(p.has_value(), "%s: iprobe failed: %s", what,
                    p ? "" : p.error().to_string().c_str()))
          return std::nullopt;
        if (p->has_value() || std::chrono::steady_clock::now() > deadline)
          return *p;
      }
    };
    const auto check = [&](const std::optional<Message>& p, std::uint64_t tag,
                           std::size_t len, const char* what) {
      if (!expect(p.has_value(), "%s: iprobe found nothing", what)) return;
      expect(p->source == 1 && p->peer == g_.peer(1) && p->tag == tag &&
                 p->length == len,
             "%s: iprobe found (rank %u, tag 0x%llx, %zu bytes), expected "
             "(rank 1, tag 0x%llx, %zu bytes)",
             what, p->source, static_cast<unsigned long long>(p->tag),
             p->length, static_cast<unsigned long long>(tag), len);
    };
    check(probe(1, TagMatch{ts}, "small"), ts, small, "small");
    check(probe(1, TagMatch{tl}, "large"), tl, large, "large");
    // The oldest of the phase from anyone: the small one (sent first).
    const TagMatch phase{std::uint64_t{kUnexpected} << 56, kPhaseMask};
    check(probe(rhinet::any_source, phase, "any"), ts, small,
          "any source, masked tag");
    // Nothing else waits.
    for (std::uint32_t src : {1u, rhinet::any_source}) {
      auto p = g_.iprobe(src, none);
      if (expect(p.has_value(), "iprobe failed"))
        expect(!p->has_value(),
               "iprobe found a message never sent (tag 0x%llx)",
               static_cast<unsigned long long>((*p)->tag));
    }
    if (n_ > 2) {
      auto p = g_.iprobe(2, TagMatch{ts});
      if (expect(p.has_value(), "iprobe failed"))
        expect(!p->has_value(), "iprobe from rank 2 found rank 1's message");
    }
    // Now receive them (the large one by any source), then they are gone.
    Request rs = g_.irecv(1, ts, m.span(0, small));
    Request rl = g_.irecv(rhinet::any_source, tl, m.span(small, large));
    if (received(rs, 1, ts, small, "unexpected small"))
      same(m.span(0, small), ts, "unexpected small");
    if (received(rl, 1, tl, large, "unexpected large"))
      same(m.span(small, large), tl, "unexpected large");
    auto gone = g_.iprobe(rhinet::any_source, phase);
    if (expect(gone.has_value(), "iprobe failed"))
      expect(!gone->has_value(), "iprobe still finds a received message");
  }

  // ---- (d) cancel --------------------------------------------------------

  void cancel() {
    Mem m(g_, 4096);
    // Nothing matches these: cancelled.
    const std::uint64_t never = tag_of(kCancel, 0xffff, me_, 0xffffff);
    Request any = g_.irecv(rhinet::any_source, never, m.span(0, 1024));
    Request from = g_.irecv((me_ + 1) % n_, never, m.span(1024, 1024));
    expect(!any.test() && !from.test(), "an irecv nothing matches completed");
    expect(g_.pending_irecvs() == 2, "%zu irecvs pending, expected 2",
           g_.pending_irecvs());
    {
      // Nothing completes: both set waits time out and leave them pending.
      Request both[] = {std::move(any), std::move(from)};
      auto all = rhinet::wait_all(both, 20ms);
      expect(!all && all.error().errno_value() == ETIMEDOUT,
             "wait_all on unmatched irecvs: expected ETIMEDOUT");
      auto one = rhinet::wait_any(both, 20ms);
      expect(!one && one.error().errno_value() == ETIMEDOUT,
             "wait_any on unmatched irecvs: expected ETIMEDOUT");
      expect(!both[0].done() && !both[1].done() && g_.pending_irecvs() == 2,
             "a timed-out set wait changed its requests");
      any = std::move(both[0]);
      from = std::move(both[1]);
    }
    for (Request* r : {&any, &from}) {
      if (!expect(ok(r->cancel(), "cancel"), "cancel refused")) continue;
      expect(ok(r->cancel(), "cancel again"), "a second cancel refused");
      auto w = r->wait(kWait);
      if (expect(!w, "a cancelled irecv succeeded"))
        expect(w.error().errno_value() == ECANCELED,
               "cancelled irecv: %s, expected ECANCELED",
               w.error().to_string().c_str());
      expect(r->cancelled() && !r->message() && r->bytes() == 0,
             "cancelled irecv: cancelled() %d, message %d, bytes %u",
             r->cancelled(), r->message().has_value(), r->bytes());
      expect(ok(r->cancel(), "cancel when done"), "cancel when done refused");
    }
    expect(g_.pending_irecvs() == 0, "%zu irecvs pending after cancel",
           g_.pending_irecvs());

    // A cancelled irecv takes no later message: rank 0 cancels one for
    // tag c, then rank 1 sends c, which a new irecv must get. And only
    // receives can be cancelled: rank 1's long isend cannot complete
    // before rank 0 posts its irecv (after the barrier).
    if (n_ < 2 || me_ > 1) {
      barrier();
      return;
    }
    const std::uint64_t c = tag_of(kCancel, 1, 0, 2);
    const std::uint64_t cl = tag_of(kCancel, 1, 0, 3);
    const std::size_t long_len =
        std::max<std::size_t>(std::size_t{2} * g_.max_eager(), 16384);
    Mem big(g_, long_len);
    if (me_ == 0) {
      Request old = g_.irecv(1, c, m.span(0, 512));
      expect(ok(old.cancel(), "cancel"), "cancel refused");
      auto w = old.wait(kWait);
      expect(!w && old.cancelled(), "the irecv to cancel was not cancelled");
      clear(m.span(0, 512), std::byte{0});
      barrier();
      Request fresh = g_.irecv(1, c, m.span(512, 512));
      Request lng = g_.irecv(1, cl, big.all());
      if (received(fresh, 1, c, 512, "after cancel"))
        same(m.span(512, 512), c, "after cancel");
      if (received(lng, 1, cl, long_len, "long message after cancel"))
        same(big.all(), cl, "long message after cancel");
      expect(std::all_of(m.all().begin(), m.all().begin() + 512,
                         [](std::byte b) { return b == std::byte{0}; }),
             "the cancelled irecv's buffer was written");
    } else {
      fill(m.span(0, 512), c);
      fill(big.all(), cl);
      Request tl = g_.isend(0, cl, big.all());
      auto x = tl.cancel();
      expect(!x && x.error().errno_value() == EOPNOTSUPP,
             "cancel of an isend: %s, expected EOPNOTSUPP",
             x ? "accepted" : x.error().to_string().c_str());
      barrier();
      Request tx = g_.isend(0, c, m.span(0, 512));
      sent(tx, "isend after cancel");
      sent(tl, "long isend after cancel");
    }
  }

  // ---- (e) truncation ----------------------------------------------------

  void truncate() {
    if (n_ < 2 || me_ > 1) return;
    const std::uint64_t t = tag_of(kTruncate, 1, 0, 0);
    const std::size_t len = 300, room = 100;
    Mem m(g_, len);
    if (me_ == 1) {
      fill(m.all().first(len), t);
      Request tx = g_.isend(0, t, m.all().first(len));
      // The receiver's buffer is too short; what the sender hears of it is
      // the NIC's business: report it, do not judge it.
      if (auto w = tx.wait(kWait); !w)
        std::printf("isend_irecv: truncated isend: %s\n",
                    w.error().to_string().c_str());
      return;
    }
    Request rx = g_.irecv(1, t, m.all().first(room));
    auto w = rx.wait(kWait);
    if (!expect(!w, "a 300-byte message into 100 bytes succeeded")) return;
    expect(w.error().errno_value() == EMSGSIZE,
           "truncated: %s, expected EMSGSIZE", w.error().to_string().c_str());
    const auto& msg = rx.message();
    expect(msg && msg->length == len && msg->source == 1 && msg->tag == t &&
               rx.bytes() == room,
           "truncated: message %d length %zu source %u, bytes %u",
           msg.has_value(), msg ? msg->length : 0, msg ? msg->source : 0,
           rx.bytes());
    same(m.all().first(room), t, "truncated message's first bytes");
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t k = 8;
  if (argc > 1) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(argv[1], &end, 10);
    if (!*argv[1] || *end || v < 1 || v > 4096) {
      std::fprintf(stderr, "usage: rhinet_isend_irecv [K: 1..4096]\n");
      return 2;
    }
    k = static_cast<std::uint32_t>(v);
  }
  auto joined = Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "isend_irecv: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  return Test(**joined, k).run();
}
