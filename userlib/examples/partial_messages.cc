// SPDX-License-Identifier: BSD-2-Clause
// partial_messages: isend and irecv with their partial-transfer modes
// (isend: basic, diff, bitmap, stride; irecv: basic, twin, bitmap,
// stride), every byte of every receive buffer checked.
//
// Ranks pair up (0 with 1, 2 with 3, ...; an odd last rank only takes part
// in the barriers); in a pair the even rank sends first. Each case runs
// with a message below 4 KiB and one well beyond it (several packets; a
// basic isend beyond max_eager goes by rendezvous, a partial isend always
// does), and where a basic isend can travel eagerly, once with the irecv
// posted first and once with the message waiting unexpected. Receive
// buffers are filled with the complement of what may land there first, so
// a byte that should not have been written shows, and so does one that
// should have been and was not.
//
//  (1) isend stride -> irecv basic: the blocks arrive packed;
//  (2) isend basic -> irecv stride: the message is spread over the
//      receiver's blocks (a message shorter than the blocks fills the
//      first ones);
//  (3) isend stride -> irecv stride, with other block sizes and strides
//      on each side;
//  (4) isend bitmap -> irecv basic: bytes of unmarked blocks do not travel
//      and the receiver's bytes there stay as they were;
//  (5) isend basic -> irecv bitmap: only marked blocks are written;
//  (6) isend diff -> irecv twin, both ways, on two twins: against a fresh
//      (zeroed) twin only nonzero bytes travel; then only the bytes changed
//      since; the receiver's twin holds what arrived, as its next diff
//      isend back shows (only its own changes travel); a diff of
//      unchanged data moves nothing;
//  (7) truncation: a message longer than the irecv takes (a strided
//      irecv's blocks, a basic buffer under a strided or bitmap message)
//      fails with EMSGSIZE, the whole length reported, and the receive
//      holds the message's first bytes, nothing beyond;
//  (8) refusals: the modes in userlib (irecv diff, isend twin: EINVAL; a
//      spread remote_stride; inline with a mode), and in librhinetdv
//      itself on the group's endpoint: an irecv with mode DIFF, an isend
//      with mode TWIN, a mode with INLINE, an unknown comp_mask bit, mode
//      fields without RHINETDV_*_ATTR_MASK_XFER all EINVAL; an iprobe
//      given an irecv's selection with a mode still just probes.
//
//   rhinet-run -n 2 --hosts node0,node1 rhinet_partial_messages
//
// Exit status 0 when every check passed on this rank; rank 0 prints
// "partial_messages: ok" once every rank has.
#include <infiniband/rhinetdv.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Bitmap;
using rhinet::Group;
using rhinet::Mode;
using rhinet::Request;
using rhinet::Stride;
using rhinet::XferOptions;

constexpr auto kWait = 60s;

// The bytes of a message: depend on the case's tag and the offset.
std::byte pat(std::uint64_t tag, std::size_t i) {
  const std::uint64_t h = (tag ^ (tag >> 29)) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::byte>(((h >> 56) + i * 131u + (i >> 8) * 7u) & 0xff);
}
// What a receive buffer holds before: never what may land there.
std::byte sentinel(std::byte b) { return ~b; }

// Registered memory owned with its Buffer.
class Mem {
 public:
  Mem(Group& g, std::size_t bytes) : v_(std::max<std::size_t>(bytes, 1)) {
    auto b = g.buffer(v_);
    if (!b) {
      std::fprintf(stderr, "partial_messages: rank %u: buffer: %s\n", g.rank(),
                   b.error().to_string().c_str());
      std::exit(1);
    }
    buf_.emplace(std::move(*b));
  }
  std::span<std::byte> all() { return v_; }
  std::span<std::byte> first(std::size_t n) { return all().first(n); }
  std::byte& operator[](std::size_t i) { return v_[i]; }

 private:
  std::vector<std::byte> v_;
  std::optional<rhinet::Buffer> buf_;
};

// Message offset -> offset in a strided buffer (the blocks packed in the
// message, `stride` apart in memory).
std::size_t spread(const Stride& s, std::size_t o) {
  return (o / s.block) * s.local_stride + o % s.block;
}
std::size_t extent(const Stride& s) {
  return (s.count - 1) * std::size_t{s.local_stride} + s.block;
}
std::size_t packed(const Stride& s) { return std::size_t{s.block} * s.count; }

// A bitmap marking about two blocks in three of `blocks`, never all.
std::vector<bool> marks(std::size_t blocks, unsigned salt) {
  std::vector<bool> m(blocks);
  for (std::size_t b = 0; b < blocks; b++)
    m[b] = ((b + salt) * 2654435761u >> 7) % 3 != 0;
  if (blocks > 1) m[blocks - 1] = false;
  return m;
}
void put_bits(Mem& mem, const std::vector<bool>& m) {
  for (std::size_t b = 0; b < m.size(); b++)
    if (m[b]) mem[b / 8] |= std::byte{1} << (b % 8);
}

class Test {
 public:
  explicit Test(Group& g) : g_(g), me_(g.rank()), n_(g.size()) {}

  int run() {
    if (!g_.tag_matching()) {
      std::fprintf(stderr,
                   "partial_messages: rank %u: the device has no tag "
                   "matching\n",
                   me_);
      return 1;
    }
    if (me_ == 0)
      std::printf(
          "partial_messages: %u ranks (%u pairs), max_eager %u, max_inline "
          "%u\n",
          n_, n_ / 2, g_.max_eager(), g_.max_inline());
    refusals();
    barrier();
    stride_to_basic();
    basic_to_stride();
    stride_to_stride();
    bitmap_to_basic();
    basic_to_bitmap();
    diff_to_twin();
    truncation();
    expect(ok(g_.sync(kWait), "sync"), "sync");
    expect(g_.outstanding() == 0 && g_.pending_irecvs() == 0,
           "%zu operations and %zu irecvs pending at the end", g_.outstanding(),
           g_.pending_irecvs());
    if (bad_) {
      std::fprintf(stderr,
                   "partial_messages: rank %u: %d of %d checks failed\n", me_,
                   bad_, checks_);
      return 1;
    }
    std::printf("partial_messages: rank %u of %u: %d checks passed\n", me_, n_,
                checks_);
    std::fflush(stdout);
    barrier();
    if (me_ == 0) std::printf("partial_messages: ok\n");
    return 0;
  }

 private:
  Group& g_;
  const std::uint32_t me_, n_;
  int bad_ = 0, checks_ = 0;
  std::uint64_t next_tag_ = 1;

  // ---- roles and checks --------------------------------------------------

  bool paired() const { return (me_ ^ 1u) < n_; }
  bool first() const { return me_ % 2 == 0; }  // sends first
  std::uint32_t peer() const { return me_ ^ 1u; }
  // The same sequence on every rank: both sides of a pair agree on tags.
  std::uint64_t tag() { return next_tag_++; }

  __attribute__((format(printf, 3, 4))) bool expect(bool good, const char* fmt,
                                                    ...) {
    checks_++;
    if (good) return true;
    bad_++;
    std::fprintf(stderr, "partial_messages: rank %u: ", me_);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    return false;
  }
  bool ok(const rhinet::Result<void>& r, const std::string& what) {
    if (r) return true;
    std::fprintf(stderr, "partial_messages: rank %u: %s: %s\n", me_,
                 what.c_str(), r.error().to_string().c_str());
    return false;
  }
  void barrier() {
    if (auto b = g_.barrier_bootstrap(120s); !b) {
      std::fprintf(stderr, "partial_messages: rank %u: barrier: %s\n", me_,
                   b.error().to_string().c_str());
      std::exit(1);
    }
  }
  // Every byte of `got` is want(i); says where the first few differ.
  bool bytes(std::span<const std::byte> got,
             const std::function<std::byte(std::size_t)>& want,
             const std::string& what) {
    int wrong = 0;
    for (std::size_t i = 0; i < got.size(); i++)
      if (got[i] != want(i) && wrong++ < 4)
        std::fprintf(stderr,
                     "partial_messages: rank %u: %s: byte %zu of %zu is "
                     "0x%02x, expected 0x%02x\n",
                     me_, what.c_str(), i, got.size(),
                     std::to_integer<unsigned>(got[i]),
                     std::to_integer<unsigned>(want(i)));
    return expect(!wrong, "%s: %d bytes wrong", what.c_str(), wrong);
  }
  // A receive that completed with `err` (0: success) having taken a
  // message of `length` bytes from the peer, `placed` of them.
  bool received(Request& rx, std::uint64_t t, std::size_t length,
                std::size_t placed, int err, const std::string& what) {
    auto w = rx.wait(kWait);
    if (err == 0 && !expect(ok(w, what), "%s: receive failed", what.c_str()))
      return false;
    if (err && !expect(!w && w.error().errno_value() == err,
                       "%s: %s, expected errno %d", what.c_str(),
                       w ? "success" : w.error().to_string().c_str(), err))
      return false;
    const auto& m = rx.message();
    if (!expect(m.has_value(), "%s: no message reported", what.c_str()))
      return false;
    return expect(m->source == peer() && m->tag == t && m->length == length &&
                      rx.bytes() == placed,
                  "%s: message (rank %u, tag %llu, %zu bytes), %u placed; "
                  "expected (rank %u, tag %llu, %zu bytes), %zu placed",
                  what.c_str(), m->source,
                  static_cast<unsigned long long>(m->tag), m->length,
                  rx.bytes(), peer(), static_cast<unsigned long long>(t),
                  length, placed);
  }
  bool sent(Request& tx, const std::string& what) {
    return expect(ok(tx.wait(kWait), what), "%s: isend failed", what.c_str());
  }
  void refused(Request r, int e, const char* what) {
    auto w = r.wait(1s);
    if (expect(!w, "%s: accepted", what))
      expect(w.error().errno_value() == e, "%s: %s, expected errno %d", what,
             w.error().to_string().c_str(), e);
  }
  void report(const char* what) {
    if (me_ == 0 && !bad_) std::printf("partial_messages: %s: ok\n", what);
  }

  // One message of a case: the receiver fills its buffer with sentinels
  // and posts, the sender fills and sends; `unexpected`: the sender
  // first. Returns on the receiver whether the receive completed as
  // `err` says; `check` then looks at the bytes.
  struct Leg {
    std::uint64_t tag = 0;
    std::span<std::byte> src;  // the sender's
    XferOptions send{};
    std::span<std::byte> dst;  // the receiver's
    XferOptions recv{};
    std::size_t length = 0;  // the message's
    std::size_t placed = 0;  // bytes the receive takes of it
    int err = 0;             // of the receive
    bool unexpected = false;
  };
  void leg(const Leg& l, bool sender, const std::string& what,
           const std::function<void()>& check) {
    if (!paired()) {
      barrier();
      return;
    }
    if (sender) {
      for (std::size_t i = 0; i < l.src.size(); i++) l.src[i] = pat(l.tag, i);
      Request tx;
      if (l.unexpected) tx = g_.isend(peer(), l.tag, l.src, l.send);
      barrier();
      if (!l.unexpected) tx = g_.isend(peer(), l.tag, l.src, l.send);
      if (l.err) {
        // What the sender of a truncated message hears is the NIC's
        // business: report it, do not judge it.
        if (auto w = tx.wait(kWait); !w)
          std::printf("partial_messages: %s: the isend: %s\n", what.c_str(),
                      w.error().to_string().c_str());
      } else {
        sent(tx, what);
      }
      return;
    }
    Request rx;
    if (!l.unexpected) rx = g_.irecv(peer(), l.tag, l.dst, l.recv);
    barrier();
    if (l.unexpected) {
      // The message is on its way or waiting: let it arrive first.
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      for (;;) {
        auto p = g_.iprobe(peer(), l.tag);
        if (!p || *p || std::chrono::steady_clock::now() > deadline) break;
      }
      rx = g_.irecv(peer(), l.tag, l.dst, l.recv);
    }
    if (received(rx, l.tag, l.length, l.placed, l.err, what)) check();
  }

  // ---- (1) isend stride -> irecv basic -----------------------------------

  void stride_to_basic() {
    for (const Stride s : {Stride{24, 10, 40, 0}, Stride{100, 60, 164, 0}}) {
      const std::uint64_t t = tag();
      const std::size_t len = packed(s);
      Mem src(g_, extent(s)), dst(g_, len + 64);
      const std::string what =
          "isend stride -> irecv basic, " + std::to_string(len) + " bytes";
      for (auto& b : dst.all()) b = std::byte{0x5a};
      leg({.tag = t,
           .src = src.all(),
           .send = XferOptions::strided(s),
           .dst = dst.first(len),
           .length = len,
           .placed = len},
          first(), what, [&] {
            bytes(
                dst.first(len),
                [&](std::size_t o) { return pat(t, spread(s, o)); }, what);
            bytes(
                dst.all().subspan(len),
                [](std::size_t) { return std::byte{0x5a}; },
                what + " (past the buffer)");
          });
    }
    report("isend stride -> irecv basic");
  }

  // ---- (2) isend basic -> irecv stride -----------------------------------

  // The receiver's strided buffer after a message of `len` bytes: blocks
  // hold the message, the rest the sentinels.
  std::function<std::byte(std::size_t)> strided_want(const Stride& s,
                                                     std::uint64_t t,
                                                     std::size_t len) {
    std::vector<std::int64_t> from(extent(s), -1);
    for (std::size_t o = 0; o < std::min(len, packed(s)); o++)
      from[spread(s, o)] = static_cast<std::int64_t>(o);
    return [from = std::move(from), t](std::size_t i) {
      return from[i] < 0 ? sentinel(pat(t, i))
                         : pat(t, static_cast<std::size_t>(from[i]));
    };
  }
  void fill_sentinels(std::span<std::byte> s, std::uint64_t t) {
    for (std::size_t i = 0; i < s.size(); i++) s[i] = sentinel(pat(t, i));
  }

  void basic_to_stride() {
    struct Case {
      Stride s;
      std::size_t len;  // the message
      bool unexpected;
    };
    // Small ones eager (into posted and into later irecvs), a rendezvous
    // one, and a message shorter than the blocks.
    const Case cases[] = {{{32, 8, 48, 0}, 256, false},
                          {{32, 8, 48, 0}, 256, true},
                          {{200, 40, 256, 0}, 8000, false},
                          {{200, 40, 256, 0}, 3333, false}};
    for (const Case& c : cases) {
      const std::uint64_t t = tag();
      Mem src(g_, c.len), dst(g_, extent(c.s));
      const std::string what = "isend basic -> irecv stride, " +
                               std::to_string(c.len) + " bytes into " +
                               std::to_string(packed(c.s)) +
                               (c.unexpected ? " (unexpected)" : "");
      fill_sentinels(dst.all(), t);
      leg({.tag = t,
           .src = src.all(),
           .dst = dst.all(),
           .recv = XferOptions::strided(c.s),
           .length = c.len,
           .placed = c.len,
           .unexpected = c.unexpected},
          first(), what,
          [&] { bytes(dst.all(), strided_want(c.s, t, c.len), what); });
    }
    report("isend basic -> irecv stride");
  }

  // ---- (3) isend stride -> irecv stride ----------------------------------

  void stride_to_stride() {
    struct Case {
      Stride out, in;  // same packed length, other shapes
    };
    const Case cases[] = {{{16, 30, 40, 0}, {48, 10, 64, 0}},
                          {{16, 400, 40, 0}, {100, 64, 300, 0}}};
    for (const Case& c : cases) {
      const std::uint64_t t = tag();
      const std::size_t len = packed(c.out);
      Mem src(g_, extent(c.out)), dst(g_, extent(c.in));
      const std::string what =
          "isend stride -> irecv stride, " + std::to_string(len) + " bytes";
      fill_sentinels(dst.all(), t);
      leg({.tag = t,
           .src = src.all(),
           .send = XferOptions::strided(c.out),
           .dst = dst.all(),
           .recv = XferOptions::strided(c.in),
           .length = len,
           .placed = len},
          first(), what, [&] {
            // Message byte o is the sender's byte spread(out, o) and lands
            // at spread(in, o).
            std::vector<std::byte> want(dst.all().size());
            for (std::size_t i = 0; i < want.size(); i++)
              want[i] = sentinel(pat(t, i));
            for (std::size_t o = 0; o < len; o++)
              want[spread(c.in, o)] = pat(t, spread(c.out, o));
            bytes(
                dst.all(), [&](std::size_t i) { return want[i]; }, what);
          });
    }
    report("isend stride -> irecv stride");
  }

  // ---- (4) isend bitmap -> irecv basic -----------------------------------

  void bitmap_to_basic() {
    struct Case {
      std::size_t len;
      std::uint32_t g;
    };
    for (const Case c : {Case{3000, 16}, Case{70001, 64}}) {
      const std::uint64_t t = tag();
      const std::size_t blocks = (c.len + c.g - 1) / c.g;
      const auto m = marks(blocks, 1);
      Mem src(g_, c.len), dst(g_, c.len), bits(g_, (blocks + 7) / 8);
      put_bits(bits, m);
      const std::string what = "isend bitmap -> irecv basic, " +
                               std::to_string(c.len) + " bytes in blocks of " +
                               std::to_string(c.g);
      fill_sentinels(dst.all(), t);
      leg({.tag = t,
           .src = src.all(),
           .send = XferOptions::with_bitmap(bits.all(), c.g),
           .dst = dst.all(),
           .length = c.len,
           .placed = c.len},
          first(), what, [&] {
            bytes(
                dst.all(),
                [&](std::size_t i) {
                  return m[i / c.g] ? pat(t, i) : sentinel(pat(t, i));
                },
                what);
          });
    }
    report("isend bitmap -> irecv basic");
  }

  // ---- (5) isend basic -> irecv bitmap -----------------------------------

  void basic_to_bitmap() {
    struct Case {
      std::size_t len;
      std::uint32_t g;
      bool unexpected;
    };
    for (const Case c :
         {Case{1000, 8, false}, Case{1000, 8, true}, Case{50000, 128, false}}) {
      const std::uint64_t t = tag();
      const std::size_t blocks = (c.len + c.g - 1) / c.g;
      const auto m = marks(blocks, 2);
      Mem src(g_, c.len), dst(g_, c.len), bits(g_, (blocks + 7) / 8);
      put_bits(bits, m);
      const std::string what = "isend basic -> irecv bitmap, " +
                               std::to_string(c.len) + " bytes" +
                               (c.unexpected ? " (unexpected)" : "");
      fill_sentinels(dst.all(), t);
      leg({.tag = t,
           .src = src.all(),
           .dst = dst.all(),
           .recv = XferOptions::with_bitmap(bits.all(), c.g),
           .length = c.len,
           .placed = c.len,
           .unexpected = c.unexpected},
          first(), what, [&] {
            bytes(
                dst.all(),
                [&](std::size_t i) {
                  return m[i / c.g] ? pat(t, i) : sentinel(pat(t, i));
                },
                what);
          });
    }
    report("isend basic -> irecv bitmap");
  }

  // ---- (6) isend diff -> irecv twin --------------------------------------

  // Version v of the shared data (both sides can compute every version):
  // v1 has zero bytes (a fresh twin's value, so they do not travel), each
  // later version changes some bytes of the one before.
  static std::byte version(std::uint32_t v, std::size_t i) {
    std::byte b = static_cast<std::byte>(((i * 29 + 11) ^ (i >> 7)) & 0xff);
    if (i % 7 == 3 || b == std::byte{0}) b = std::byte{0};
    if (v >= 2 && changed(2, i)) b ^= std::byte{0x5a};
    if (v >= 3 && changed(3, i)) b ^= std::byte{0x33};
    if (v >= 4 && changed(4, i)) b ^= std::byte{0x81};
    return b;
  }
  // Bytes version v changed (v1: every nonzero byte, against zeros).
  static bool changed(std::uint32_t v, std::size_t i) {
    switch (v) {
      case 1:
        return version(1, i) != std::byte{0};
      case 2:
        return (i / 37) % 5 == 1;
      case 3:
        return (i / 53) % 6 == 2;
      case 4:
        return i % 1000 == 999 || i == 0;
      default:
        return false;  // v5 = v4: nothing changes
    }
  }

  void diff_to_twin() {
    for (const std::size_t len : {std::size_t{1500}, std::size_t{50000}}) {
      // Each side's twin, its copy of the data at an offset in it.
      const std::uint64_t off = first() ? 256 : 4096;
      auto twin = g_.twin(off + len);
      if (!expect(twin.has_value(), "twin: %s",
                  twin ? "" : twin.error().to_string().c_str())) {
        for (int v = 1; v <= 5; v++) {  // keep in step
          tag();
          barrier();
        }
        continue;
      }
      // The data goes back and forth: v1, v2 from the even rank, v3 back
      // from the odd one, v4, v5 from the even one again. Sending with
      // diff and receiving with twin keeps both twins equal to the data.
      for (std::uint32_t v = 1; v <= 5; v++) {
        const std::uint64_t t = tag();
        const bool sender = (v == 3) != first();
        Mem src(g_, len), dst(g_, len);
        for (std::size_t i = 0; i < len; i++) dst[i] = sentinel(version(v, i));
        const std::string what = "isend diff -> irecv twin, v" +
                                 std::to_string(v) + ", " +
                                 std::to_string(len) + " bytes";
        // v5's receive is basic: the twin is not needed any more.
        const XferOptions recv =
            v == 5 ? XferOptions{} : XferOptions::twin_copy(*twin, off);
        if (sender && paired()) {
          // The sender's version v, sent as it differs from its twin.
          for (std::size_t i = 0; i < len; i++) src[i] = version(v, i);
          barrier();  // the peer's irecv is posted
          Request tx =
              g_.isend(peer(), t, src.all(), XferOptions::diff(*twin, off));
          sent(tx, what);
          continue;
        }
        if (!paired()) {
          barrier();
          continue;
        }
        Request rx = g_.irecv(peer(), t, dst.all(), recv);
        barrier();
        if (received(rx, t, len, len, 0, what))
          bytes(
              dst.all(),
              [&](std::size_t i) {
                return changed(v, i) ? version(v, i) : sentinel(version(v, i));
              },
              what);
      }
    }
    report("isend diff -> irecv twin (and back)");
  }

  // ---- (7) truncation -----------------------------------------------------

  void truncation() {
    {  // a basic message longer than a strided irecv's blocks
      const std::uint64_t t = tag();
      const Stride s{100, 60, 150, 0};
      const std::size_t len = 10000;
      Mem src(g_, len), dst(g_, extent(s) + 100);
      fill_sentinels(dst.all(), t);
      const std::string what =
          "truncation: 10000 bytes into a strided irecv "
          "of 6000";
      leg({.tag = t,
           .src = src.all(),
           .dst = dst.first(extent(s)),
           .recv = XferOptions::strided(s),
           .length = len,
           .placed = packed(s),
           .err = EMSGSIZE},
          first(), what, [&] {
            const auto want = strided_want(s, t, len);
            bytes(
                dst.all(),
                [&](std::size_t i) {
                  return i < extent(s) ? want(i) : sentinel(pat(t, i));
                },
                what);
          });
    }
    {  // a strided message longer than a basic buffer
      const std::uint64_t t = tag();
      const Stride s{80, 100, 96, 0};
      const std::size_t room = 4096;
      Mem src(g_, extent(s)), dst(g_, room + 256);
      fill_sentinels(dst.all(), t);
      const std::string what =
          "truncation: a strided message of 8000 bytes "
          "into 4096";
      leg({.tag = t,
           .src = src.all(),
           .send = XferOptions::strided(s),
           .dst = dst.first(room),
           .length = packed(s),
           .placed = room,
           .err = EMSGSIZE},
          first(), what, [&] {
            bytes(
                dst.all(),
                [&](std::size_t i) {
                  return i < room ? pat(t, spread(s, i)) : sentinel(pat(t, i));
                },
                what);
          });
    }
    {  // a bitmap message longer than a basic buffer
      const std::uint64_t t = tag();
      const std::size_t len = 12000, room = 5000;
      const std::uint32_t g = 32;
      const auto m = marks((len + g - 1) / g, 3);
      Mem src(g_, len), dst(g_, len), bits(g_, (m.size() + 7) / 8);
      put_bits(bits, m);
      fill_sentinels(dst.all(), t);
      const std::string what =
          "truncation: a bitmap message of 12000 bytes "
          "into 5000";
      leg({.tag = t,
           .src = src.all(),
           .send = XferOptions::with_bitmap(bits.all(), g),
           .dst = dst.first(room),
           .length = len,
           .placed = room,
           .err = EMSGSIZE},
          first(), what, [&] {
            bytes(
                dst.all(),
                [&](std::size_t i) {
                  return i < room && m[i / g] ? pat(t, i) : sentinel(pat(t, i));
                },
                what);
          });
    }
    report("truncation (strided irecv, strided and bitmap isends)");
  }

  // ---- (8) refusals ------------------------------------------------------

  void refusals() {
    Mem m(g_, 4096);
    const std::uint32_t to = (me_ + 1) % n_;
    XferOptions diff;
    diff.mode = Mode::diff;
    refused(g_.irecv(to, 1, m.all(), diff), EINVAL, "userlib: irecv diff");
    XferOptions twin;
    twin.mode = Mode::twin;
    refused(g_.isend(to, 1, m.all(), twin), EINVAL, "userlib: isend twin");
    refused(g_.isend(to, 1, m.all(), XferOptions::strided({8, 4, 16, 32})),
            EINVAL, "userlib: isend stride, remote_stride spread");
    XferOptions in = XferOptions::strided({8, 4, 16, 0});
    in.inline_data = true;
    refused(g_.isend(to, 1, m.first(64), in), EINVAL,
            "userlib: inline isend stride");
    expect(g_.outstanding() == 0 && g_.pending_irecvs() == 0,
           "refused operations left %zu operations, %zu irecvs pending",
           g_.outstanding(), g_.pending_irecvs());

    // librhinetdv itself, on the group's endpoint.
    rhinetdv_device_attr da{};
    if (!expect(rhinetdv_query_device(g_.context(), &da, sizeof(da)) == 0,
                "rhinetdv_query_device failed"))
      return;
    expect(da.caps & RHINETDV_CAP_TAG_XFER,
           "RHINETDV_CAP_TAG_XFER not reported (caps 0x%x)", da.caps);
    rhinetdv_endpoint* ep = g_.endpoint();
    const rhinet::Peer p = g_.peer(to);
    rhinetdv_irecv_attr r{};
    r.comp_mask = RHINETDV_IRECV_ATTR_MASK_XFER;
    r.wr_id = 1;
    r.addr = m.all().data();
    r.length = 4096;
    r.lkey = 0;  // never used: refused before posting
    r.tag = 0xdead;
    r.tag_mask = ~0ull;
    r.src_node = static_cast<std::uint16_t>(p.node_id);
    r.src_endpoint = p.endpoint_id;
    r.mode = RHINETDV_MODE_DIFF;
    expect(rhinetdv_irecv(ep, &r, sizeof(r), nullptr) == EINVAL,
           "rhinetdv_irecv with mode DIFF was not EINVAL");
    r.mode = RHINETDV_MODE_STRIDE;  // and no block: bad parameters
    expect(rhinetdv_irecv(ep, &r, sizeof(r), nullptr) == EINVAL,
           "rhinetdv_irecv STRIDE without a block was not EINVAL");
    // An iprobe looks only at source, tag and mask.
    r.block = 8;
    r.count = 4;
    r.stride = 16;
    rhinetdv_tag_info info{};
    expect(rhinetdv_iprobe(ep, &r, sizeof(r), &info) == 0 && !info.found,
           "rhinetdv_iprobe with an irecv's STRIDE selection: not 0 and "
           "nothing found");
    rhinetdv_irecv_attr unmasked = r;  // mode fields, no mask bit
    unmasked.comp_mask = 0;
    expect(rhinetdv_irecv(ep, &unmasked, sizeof(unmasked), nullptr) == EINVAL,
           "rhinetdv_irecv with mode fields but no comp_mask bit was not "
           "EINVAL");
    expect(rhinetdv_iprobe(ep, &unmasked, sizeof(unmasked), &info) == EINVAL,
           "rhinetdv_iprobe with mode fields but no comp_mask bit was not "
           "EINVAL");
    rhinetdv_irecv_attr unknown = r;
    unknown.comp_mask |= 1u << 7;
    expect(rhinetdv_irecv(ep, &unknown, sizeof(unknown), nullptr) == EINVAL,
           "rhinetdv_irecv with an unknown comp_mask bit was not EINVAL");

    rhinetdv_isend_attr s{};
    s.comp_mask = RHINETDV_ISEND_ATTR_MASK_XFER;
    s.addr = m.all().data();
    s.length = 64;
    s.dest_node = static_cast<std::uint16_t>(p.node_id);
    s.dest_endpoint = p.endpoint_id;
    s.tag = 0xdead;
    s.mode = RHINETDV_MODE_TWIN;
    expect(rhinetdv_isend(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_isend with mode TWIN was not EINVAL");
    s.mode = RHINETDV_MODE_STRIDE;
    s.block = 8;
    s.count = 4;
    s.local_stride = 16;
    s.flags = RHINETDV_ISEND_INLINE;
    expect(rhinetdv_isend(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_isend INLINE with mode STRIDE was not EINVAL");
    s.flags = 0;
    s.local_stride = 4;  // overlapping blocks
    expect(rhinetdv_isend(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_isend with overlapping blocks was not EINVAL");
    s.local_stride = 32;  // the 4th block ends at 104, past 64 bytes
    expect(rhinetdv_isend(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_isend with blocks past the buffer was not EINVAL");
    s.comp_mask = 0;
    expect(rhinetdv_isend(ep, &s, sizeof(s)) == EINVAL,
           "rhinetdv_isend with mode fields but no comp_mask bit was not "
           "EINVAL");
    rhinetdv_tag_caps tc{};
    expect(rhinetdv_query_tag_caps(ep, &tc, sizeof(tc)) == 0 &&
               (tc.comp_mask & RHINETDV_TAG_CAPS_MASK_XFER) &&
               tc.max_bitmap_blocks > 0,
           "rhinetdv_query_tag_caps: comp_mask 0x%llx, max_bitmap_blocks %u",
           static_cast<unsigned long long>(tc.comp_mask), tc.max_bitmap_blocks);
    // An older caller's struct: no bit for a field it does not have.
    rhinetdv_tag_caps old{};
    expect(rhinetdv_query_tag_caps(ep, &old, 16) == 0 && old.comp_mask == 0,
           "rhinetdv_query_tag_caps of 16 bytes: comp_mask 0x%llx",
           static_cast<unsigned long long>(old.comp_mask));
    report("refusals (userlib and librhinetdv)");
  }
};

}  // namespace

int main() {
  auto joined = Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "partial_messages: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  return Test(**joined).run();
}
