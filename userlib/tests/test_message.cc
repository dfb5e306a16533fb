// SPDX-License-Identifier: BSD-2-Clause
// isend / irecv without a NIC: check_message (the modes messages take, the
// modes' parameters, the other options), plan_message (ranks, any_source,
// registered memory, inline, read-only buffers), rank <-> (node, endpoint),
// what a completion status means (truncated, cancelled, flushed, given up), the
// wr_id of receives, and the registry of local memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "message_detail.hpp"
#include "registry.hpp"
#include "rhinet/message.hpp"
#include "rhinet/xfer.hpp"

namespace {

using rhinet::any_source;
using rhinet::check_message;
using rhinet::Message;
using rhinet::Mode;
using rhinet::Op;
using rhinet::Peer;
using rhinet::TagMatch;
using rhinet::unknown_rank;
using rhinet::XferOptions;
using rhinet::detail::decode_recv_wr_id;
using rhinet::detail::describe_message;
using rhinet::detail::message_outcome;
using rhinet::detail::PeerIndex;
using rhinet::detail::plan_message;
using rhinet::detail::recv_wr_id;
using rhinet::detail::Registry;

// ibv_wc_status values (infiniband/verbs.h), spelled out here so that a
// wrong constant in the library fails the test.
constexpr std::uint32_t kSuccess = 0, kLocLenErr = 1, kLocProtErr = 4,
                        kWrFlushErr = 5, kRemAccessErr = 10, kRemOpErr = 11;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

template <class R>
std::string message(const R& r) {
  return r ? std::string() : r.error().message();
}

// ---- check_message ----------------------------------------------------------

std::array<std::byte, 64> g_bits{};

// Valid parameters of `mode` for a 64-byte span (twin modes: no twin can
// be made without a NIC, so those stop at "no twin memory given").
XferOptions message_options(Mode mode) {
  XferOptions o;
  o.mode = mode;
  if (mode == Mode::stride) o.stride = {8, 4, 16, 0};
  if (mode == Mode::bitmap) o.bitmap = {g_bits, 8};
  return o;
}

TEST(CheckMessage, EachSideTakesItsOwnModes) {
  struct Row {
    Op op;
    Mode mode;
    bool allowed;
  };
  const Row rows[] = {
      {Op::isend, Mode::basic, true},  {Op::isend, Mode::twin, false},
      {Op::isend, Mode::diff, true},   {Op::isend, Mode::bitmap, true},
      {Op::isend, Mode::stride, true}, {Op::irecv, Mode::basic, true},
      {Op::irecv, Mode::twin, true},   {Op::irecv, Mode::diff, false},
      {Op::irecv, Mode::bitmap, true}, {Op::irecv, Mode::stride, true},
  };
  for (const Row& row : rows) {
    auto r = check_message(row.op, message_options(row.mode), 64);
    const std::string what = std::string(rhinet::op_name(row.op)) + " " +
                             rhinet::mode_name(row.mode);
    const bool twin_mode = row.mode == Mode::twin || row.mode == Mode::diff;
    if (!row.allowed) {
      ASSERT_FALSE(r) << what;
      EXPECT_EQ(r.error().errno_value(), EINVAL) << what;
      EXPECT_TRUE(has(message(r), "takes basic")) << what << ": " << message(r);
      EXPECT_TRUE(has(message(r), std::string("does not take mode ") +
                                      rhinet::mode_name(row.mode)))
          << message(r);
    } else if (twin_mode) {
      ASSERT_FALSE(r) << what;
      EXPECT_EQ(r.error().errno_value(), EINVAL) << what;
      EXPECT_TRUE(has(message(r), "no twin memory given")) << message(r);
    } else {
      EXPECT_TRUE(r) << what << ": " << message(r);
    }
  }
}

TEST(CheckMessage, StridedMessagesTravelPacked) {
  for (Op op : {Op::isend, Op::irecv}) {
    const std::string o = rhinet::op_name(op);
    // remote_stride: 0 or the block.
    EXPECT_TRUE(check_message(op, XferOptions::strided({8, 4, 16, 0}), 56))
        << o;
    EXPECT_TRUE(check_message(op, XferOptions::strided({8, 4, 16, 8}), 56))
        << o;
    auto spread = check_message(op, XferOptions::strided({8, 4, 16, 32}), 64);
    ASSERT_FALSE(spread) << o;
    EXPECT_EQ(spread.error().errno_value(), EINVAL) << o;
    EXPECT_TRUE(has(message(spread), "packed")) << message(spread);
    EXPECT_TRUE(has(message(spread),
                    op == Op::isend ? "the irecv's choice" : "the isend's"))
        << message(spread);
    // Blocks may not overlap; they lie inside the span.
    auto overlap = check_message(op, XferOptions::strided({8, 4, 4, 0}), 64);
    ASSERT_FALSE(overlap) << o;
    EXPECT_EQ(overlap.error().errno_value(), EINVAL) << o;
    EXPECT_TRUE(has(message(overlap), "overlap")) << message(overlap);
    EXPECT_FALSE(has(message(overlap), "remote")) << message(overlap);
    auto beyond = check_message(op, XferOptions::strided({8, 4, 16, 0}), 55);
    ASSERT_FALSE(beyond) << o;
    EXPECT_EQ(beyond.error().errno_value(), EINVAL) << o;
    EXPECT_TRUE(has(message(beyond), "local span of 56 bytes; it has 55"))
        << message(beyond);
    auto zero = check_message(op, XferOptions::strided({0, 4, 16, 0}), 64);
    ASSERT_FALSE(zero) << o;
    EXPECT_EQ(zero.error().errno_value(), EINVAL) << o;
    // One block: the strides say nothing.
    EXPECT_TRUE(check_message(op, XferOptions::strided({64, 1, 0, 0}), 64))
        << o;
  }
}

TEST(CheckMessage, BitmapAndPartialSpans) {
  for (Op op : {Op::isend, Op::irecv}) {
    const std::string o = rhinet::op_name(op);
    // 64 bytes of 8 bits: enough bits for 512 bytes in blocks of 1.
    EXPECT_TRUE(check_message(op, XferOptions::with_bitmap(g_bits, 1), 512))
        << o;
    auto few = check_message(op, XferOptions::with_bitmap(g_bits, 1), 513);
    ASSERT_FALSE(few) << o;
    EXPECT_EQ(few.error().errno_value(), EINVAL) << o;
    EXPECT_TRUE(has(message(few), "need 513 bits")) << message(few);
    auto g0 = check_message(op, XferOptions::with_bitmap(g_bits, 0), 8);
    ASSERT_FALSE(g0) << o;
    EXPECT_EQ(g0.error().errno_value(), EINVAL) << o;
    // A partial mode over nothing.
    for (Mode m : {Mode::bitmap, Mode::stride}) {
      auto e = check_message(op, message_options(m), 0);
      ASSERT_FALSE(e) << o;
      EXPECT_EQ(e.error().errno_value(), EINVAL) << o;
      EXPECT_TRUE(has(message(e), "empty span")) << message(e);
    }
  }
  // Inline data goes only with a basic isend.
  XferOptions in = message_options(Mode::stride);
  in.inline_data = true;
  auto r = check_message(Op::isend, in, 64);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(r), "basic isend")) << message(r);
}

TEST(CheckMessage, UnknownModeIsInvalid) {
  XferOptions o;
  o.mode = static_cast<Mode>(9);
  auto r = check_message(Op::isend, o, 8);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(r), "unknown mode 9")) << message(r);
}

TEST(CheckMessage, ParametersOfPartialModesAreRefused) {
  std::array<std::byte, 8> bits{};
  XferOptions stride;
  stride.stride = {8, 2, 8, 8};
  XferOptions bitmap;
  bitmap.bitmap = {bits, 8};
  XferOptions twin;
  twin.twin.offset = 64;
  const std::pair<XferOptions, const char*> cases[] = {
      {stride, "stride"}, {bitmap, "bitmap"}, {twin, "twin"}};
  for (const auto& [o, word] : cases) {
    auto r = check_message(Op::irecv, o, 64);
    ASSERT_FALSE(r) << word;
    EXPECT_EQ(r.error().errno_value(), EINVAL) << word;
    EXPECT_TRUE(has(message(r), word)) << message(r);
  }
}

TEST(CheckMessage, SignalFenceAndInline) {
  auto sig = check_message(Op::isend, {.signal = 1}, 8);
  ASSERT_FALSE(sig);
  EXPECT_EQ(sig.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(sig), "signal")) << message(sig);
  auto fence = check_message(Op::irecv, {.fence = true}, 8);
  ASSERT_FALSE(fence);
  EXPECT_EQ(fence.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(fence), "fence")) << message(fence);
  EXPECT_TRUE(check_message(Op::isend, {.inline_data = true}, 8));
  auto in = check_message(Op::irecv, {.inline_data = true}, 8);
  ASSERT_FALSE(in);
  EXPECT_EQ(in.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(in), "inline")) << message(in);
}

TEST(CheckMessage, Lengths) {
  EXPECT_TRUE(check_message(Op::isend, {}, 0));
  EXPECT_TRUE(check_message(Op::irecv, {}, 0));
  EXPECT_TRUE(check_message(Op::irecv, {}, 0xffffffffu));
  auto big = check_message(Op::isend, {}, std::size_t{1} << 32);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().errno_value(), EMSGSIZE);
}

TEST(CheckMessage, OnlyForMessagesAndCheckXferOnlyForPushPull) {
  for (Op op : {Op::push, Op::pull}) {
    auto r = check_message(op, {}, 8);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().errno_value(), EINVAL);
  }
  for (Op op : {Op::isend, Op::irecv}) {
    auto r = rhinet::check_xfer(op, rhinet::Target::area, {}, 8);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().errno_value(), EINVAL);
    EXPECT_TRUE(has(message(r), "check_message")) << message(r);
  }
  EXPECT_STREQ(rhinet::op_name(Op::isend), "isend");
  EXPECT_STREQ(rhinet::op_name(Op::irecv), "irecv");
}

// ---- TagMatch ---------------------------------------------------------------

TEST(TagMatch, MaskSelectsTheBitsThatMustBeEqual) {
  const TagMatch exact{0x1234};
  EXPECT_TRUE(exact.matches(0x1234));
  EXPECT_FALSE(exact.matches(0x1235));
  EXPECT_FALSE(exact.matches(0x1234 | (std::uint64_t{1} << 63)));
  const TagMatch high{0xab00000000000000ull, 0xff00000000000000ull};
  EXPECT_TRUE(high.matches(0xab00000000000000ull));
  EXPECT_TRUE(high.matches(0xab12345678abcdefull));
  EXPECT_FALSE(high.matches(0xac12345678abcdefull));
  for (std::uint64_t t : {0ull, 1ull, ~0ull, 0x8000000000000000ull})
    EXPECT_TRUE(rhinet::any_tag.matches(t)) << t;
}

// ---- rank <-> (node, endpoint) ---------------------------------------------

TEST(PeerIndex, BothWays) {
  // Unsorted; several endpoints per node; the same endpoint ID on several
  // nodes; (1, 2) and (2, 1) both present.
  const std::vector<Peer> table = {{3, 7}, {1, 2},     {2, 1}, {1, 9},
                                   {0, 7}, {65535, 0}, {3, 1}, {0, 0}};
  const PeerIndex idx(table);
  ASSERT_EQ(idx.size(), table.size());
  for (std::uint32_t r = 0; r < table.size(); r++) {
    EXPECT_EQ(idx.peer(r), table[r]) << r;
    EXPECT_EQ(idx.rank_of(table[r].node_id, table[r].endpoint_id), r)
        << table[r].node_id << "," << table[r].endpoint_id;
  }
  // Not in the group: other endpoints of known nodes, unknown nodes,
  // node and endpoint swapped.
  EXPECT_EQ(idx.rank_of(3, 8), unknown_rank);
  EXPECT_EQ(idx.rank_of(7, 3), unknown_rank);
  EXPECT_EQ(idx.rank_of(9, 1), unknown_rank);
  EXPECT_EQ(idx.rank_of(0, 65535), unknown_rank);
  EXPECT_EQ(idx.rank_of(4, 0), unknown_rank);
  EXPECT_EQ(PeerIndex().rank_of(0, 0), unknown_rank);
}

TEST(PeerIndex, LargeRandomTable) {
  std::mt19937 rng(15);
  const auto random_peer = [&] {
    const auto node = static_cast<std::uint32_t>(rng() & 0xffff);
    return Peer{node, static_cast<std::uint32_t>(rng() % 5000)};
  };
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  std::vector<Peer> table;
  while (table.size() < 5000) {
    const Peer p = random_peer();
    if (seen.insert({p.node_id, p.endpoint_id}).second) table.push_back(p);
  }
  const PeerIndex idx(table);
  for (std::uint32_t r = 0; r < table.size(); r++)
    ASSERT_EQ(idx.rank_of(table[r].node_id, table[r].endpoint_id), r);
  for (int i = 0; i < 5000; i++) {
    const Peer p = random_peer();
    const bool member = seen.count({p.node_id, p.endpoint_id}) != 0;
    const std::uint32_t r = idx.rank_of(p.node_id, p.endpoint_id);
    if (member)
      EXPECT_EQ(table[r], p);
    else
      EXPECT_EQ(r, unknown_rank);
  }
}

TEST(PeerIndex, DuplicateGivesTheLowerRank) {
  const std::vector<Peer> table = {{5, 5}, {1, 1}, {5, 5}};
  EXPECT_EQ(PeerIndex(table).rank_of(5, 5), 0u);
}

// ---- plan_message: ranks and memory -----------------------------------------

class Plan : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kMaxInline = 128;
  std::vector<Peer> table_ = {{10, 100}, {11, 101}, {12, 102}, {10, 103}};
  PeerIndex peers_{table_};
  Registry reg_;
  std::vector<std::byte> rw_ = std::vector<std::byte>(4096);
  std::vector<std::byte> ro_ = std::vector<std::byte>(4096);
  std::vector<std::byte> loose_ = std::vector<std::byte>(4096);

  void SetUp() override {
    ASSERT_TRUE(reg_.add(rw_.data(), rw_.size(), 0x11, true));
    ASSERT_TRUE(reg_.add(ro_.data(), ro_.size(), 0x22, false));
  }
  rhinet::Result<rhinet::detail::MessagePlan> plan(
      Op op, std::uint32_t rank, std::span<const std::byte> s,
      const XferOptions& o = {}, TagMatch m = {0x77},
      std::uint32_t max_bitmap_blocks = 0) {
    return plan_message(op, rank, m, s, o, peers_, reg_, kMaxInline,
                        max_bitmap_blocks);
  }
};

TEST_F(Plan, IsendToARankFromRegisteredMemory) {
  for (std::uint32_t r = 0; r < table_.size(); r++) {
    auto p = plan(Op::isend, r, std::span(rw_).subspan(100, 1000));
    ASSERT_TRUE(p) << message(p);
    EXPECT_EQ(p->peer, table_[r]);
    EXPECT_FALSE(p->any_source);
    EXPECT_FALSE(p->inline_data);
    EXPECT_EQ(p->lkey, 0x11u);
  }
  // A read-only Buffer is a fine source; the whole region, exactly.
  auto p = plan(Op::isend, 1, ro_);
  ASSERT_TRUE(p) << message(p);
  EXPECT_EQ(p->lkey, 0x22u);
}

TEST_F(Plan, IrecvFromARankOrAnySource) {
  auto p = plan(Op::irecv, 3, rw_);
  ASSERT_TRUE(p) << message(p);
  EXPECT_EQ(p->peer, (Peer{10, 103}));
  EXPECT_FALSE(p->any_source);
  EXPECT_EQ(p->lkey, 0x11u);
  auto any = plan(Op::irecv, any_source, rw_, {}, rhinet::any_tag);
  ASSERT_TRUE(any) << message(any);
  EXPECT_TRUE(any->any_source);
}

TEST_F(Plan, BadRanks) {
  auto out = plan(Op::isend, 4, rw_);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(out), "no rank 4 in a group of 4")) << message(out);
  EXPECT_TRUE(has(message(out), "isend to rank 4, tag 0x77")) << message(out);
  // Not the receive's wording (any_source is no way out for an isend).
  EXPECT_FALSE(has(message(out), "any_source")) << message(out);
  auto any = plan(Op::isend, any_source, rw_);
  ASSERT_FALSE(any);
  EXPECT_EQ(any.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(any), "any_source")) << message(any);
  auto rx = plan(Op::irecv, 1000, rw_);
  ASSERT_FALSE(rx);
  EXPECT_EQ(rx.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(rx), "no rank 1000")) << message(rx);
  EXPECT_TRUE(has(message(rx), "irecv from rank 1000")) << message(rx);
  auto un = plan(Op::irecv, unknown_rank, rw_);
  ASSERT_FALSE(un);
  EXPECT_EQ(un.error().errno_value(), EINVAL);
  EXPECT_TRUE(rhinet::detail::check_source(any_source, 0));
  EXPECT_TRUE(rhinet::detail::check_source(0, 1));
  EXPECT_FALSE(rhinet::detail::check_source(1, 1));
}

TEST_F(Plan, SpanOutsideRegisteredMemory) {
  for (Op op : {Op::isend, Op::irecv}) {
    const std::string o = rhinet::op_name(op);
    auto loose = plan(op, 1, loose_);
    ASSERT_FALSE(loose) << o;
    EXPECT_EQ(loose.error().errno_value(), EFAULT) << o;
    EXPECT_TRUE(has(message(loose), "not inside one registered"))
        << message(loose);
    // One byte past the end of a region.
    auto past = plan(op, 1, std::span(rw_.data() + 1, rw_.size()));
    ASSERT_FALSE(past) << o;
    EXPECT_EQ(past.error().errno_value(), EFAULT) << o;
    // The last byte is fine.
    EXPECT_TRUE(plan(op, 1, std::span(rw_).last(1))) << o;
  }
}

TEST_F(Plan, IrecvNeedsWritableMemory) {
  auto ro = plan(Op::irecv, 0, ro_);
  ASSERT_FALSE(ro);
  EXPECT_EQ(ro.error().errno_value(), EACCES);
  EXPECT_TRUE(has(message(ro), "read-only")) << message(ro);
}

TEST_F(Plan, InlineAndEmpty) {
  // Inline: unregistered memory up to max_inline.
  auto in = plan(Op::isend, 2, std::span(loose_).first(kMaxInline),
                 {.inline_data = true});
  ASSERT_TRUE(in) << message(in);
  EXPECT_TRUE(in->inline_data);
  auto big = plan(Op::isend, 2, std::span(loose_).first(kMaxInline + 1),
                  {.inline_data = true});
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().errno_value(), EMSGSIZE);
  EXPECT_TRUE(has(message(big), "at most 128")) << message(big);
  // Registered memory may go inline too.
  auto rin = plan(Op::isend, 2, std::span(rw_).first(8), {.inline_data = true});
  ASSERT_TRUE(rin);
  EXPECT_TRUE(rin->inline_data);
  // Empty: an isend goes inline, an irecv names no memory.
  auto e = plan(Op::isend, 0, std::span(loose_).first(0));
  ASSERT_TRUE(e) << message(e);
  EXPECT_TRUE(e->inline_data);
  auto er = plan(Op::irecv, 0, std::span<const std::byte>{});
  ASSERT_TRUE(er) << message(er);
  EXPECT_TRUE(er->no_memory);
  EXPECT_FALSE(er->inline_data);
  // An irecv never goes inline.
  auto ri = plan(Op::irecv, 0, rw_, {.inline_data = true});
  ASSERT_FALSE(ri);
  EXPECT_EQ(ri.error().errno_value(), EINVAL);
}

TEST_F(Plan, ModesAreRefusedBeforeMemoryIsLookedAt) {
  XferOptions o;
  o.mode = Mode::diff;
  auto p = plan(Op::irecv, 1, loose_, o);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(p),
                  "irecv from rank 1, tag 0x77, 4096-byte buffer, mode diff: "))
      << message(p);
  EXPECT_TRUE(has(message(p), "takes basic")) << message(p);
}

TEST_F(Plan, BitmapInRegisteredMemory) {
  // The bitmap: 8 bytes at the end of the read-only region (the NIC only
  // reads it), 64 bits for 4096 bytes in blocks of 64.
  const auto bits = std::span<const std::byte>(ro_).last(8);
  for (Op op : {Op::isend, Op::irecv}) {
    auto p = plan(op, 1, std::span(rw_), XferOptions::with_bitmap(bits, 64));
    ASSERT_TRUE(p) << message(p);
    EXPECT_EQ(p->lkey, 0x11u);
    EXPECT_EQ(p->bitmap_lkey, 0x22u);
    auto loose = plan(op, 1, std::span(rw_),
                      XferOptions::with_bitmap(std::span(loose_).first(8), 64));
    ASSERT_FALSE(loose);
    EXPECT_EQ(loose.error().errno_value(), EFAULT);
    EXPECT_TRUE(has(message(loose), "the bitmap is not inside"))
        << message(loose);
    EXPECT_TRUE(has(message(loose), ", mode bitmap: ")) << message(loose);
  }
  // A bitmap isend selects from at most the NIC's blocks (0: not known);
  // an irecv's bitmap has no such limit.
  const auto o = XferOptions::with_bitmap(bits, 64);
  EXPECT_TRUE(plan(Op::isend, 1, std::span(rw_), o, {0x77}, 64));
  auto over = plan(Op::isend, 1, std::span(rw_), o, {0x77}, 63);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().errno_value(), EINVAL);
  EXPECT_TRUE(has(message(over), "at most 63 blocks")) << message(over);
  EXPECT_TRUE(plan(Op::irecv, 1, std::span(rw_), o, {0x77}, 63));
}

TEST(Describe, Messages) {
  EXPECT_EQ(describe_message(Op::isend, 3, {0x7}, 64),
            "isend to rank 3, tag 0x7, 64 bytes");
  EXPECT_EQ(describe_message(Op::irecv, any_source, {0x7, 0xff}, 64),
            "irecv from any source, tag 0x7 mask 0xff, 64-byte buffer");
  EXPECT_EQ(describe_message(Op::irecv, 2, {0x10}, 0),
            "irecv from rank 2, tag 0x10, 0-byte buffer");
  EXPECT_EQ(describe_message(Op::isend, 1, {0x7}, 32, Mode::stride),
            "isend to rank 1, tag 0x7, 32 bytes, mode stride");
  EXPECT_EQ(describe_message(Op::irecv, 1, {0x7}, 32, Mode::twin),
            "irecv from rank 1, tag 0x7, 32-byte buffer, mode twin");
}

// ---- completions ------------------------------------------------------------

TEST(Outcome, IrecvSuccess) {
  auto o = message_outcome(Op::irecv, kSuccess, 0, "success", 100, 4096, false,
                           "irecv");
  EXPECT_FALSE(o.error);
  EXPECT_TRUE(o.matched);
  EXPECT_FALSE(o.cancelled);
  EXPECT_EQ(o.bytes, 100u);
  // Even a successful cancel request does not make a matched one cancelled.
  auto c = message_outcome(Op::irecv, kSuccess, 0, "success", 0, 0, true, "");
  EXPECT_FALSE(c.error);
  EXPECT_FALSE(c.cancelled);
  EXPECT_TRUE(c.matched);
}

TEST(Outcome, TruncatedIsEmsgsizeWithTheLength) {
  auto o = message_outcome(Op::irecv, kLocLenErr, 8, "local length error", 5000,
                           4096, false, "irecv from rank 1");
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.error->errno_value(), EMSGSIZE);
  EXPECT_TRUE(o.error->is_completion());
  EXPECT_EQ(o.error->wc_status(), kLocLenErr);
  EXPECT_EQ(o.error->syndrome(), 8u);
  EXPECT_TRUE(o.matched);  // source, tag and length are reported
  EXPECT_FALSE(o.cancelled);
  EXPECT_EQ(o.bytes, 4096u);  // the buffer is full
  EXPECT_TRUE(has(o.error->message(), "irecv from rank 1"))
      << o.error->message();
  EXPECT_TRUE(has(o.error->message(), "truncated")) << o.error->message();
  EXPECT_TRUE(has(o.error->message(), "5000")) << o.error->message();
  EXPECT_TRUE(has(o.error->to_string(), "local length error"));
  // Whatever the syndrome says.
  auto z = message_outcome(Op::irecv, kLocLenErr, 0, "", 10, 4, false, "x");
  ASSERT_TRUE(z.error);
  EXPECT_EQ(z.error->errno_value(), EMSGSIZE);
  EXPECT_EQ(z.bytes, 4u);
}

TEST(Outcome, CancelledOrFlushed) {
  auto c = message_outcome(Op::irecv, kWrFlushErr, 16, "flush", 0, 64, true,
                           "irecv");
  ASSERT_TRUE(c.error);
  EXPECT_EQ(c.error->errno_value(), ECANCELED);
  EXPECT_TRUE(c.cancelled);
  EXPECT_FALSE(c.matched);
  EXPECT_EQ(c.bytes, 0u);
  EXPECT_TRUE(has(c.error->message(), "cancelled")) << c.error->message();
  EXPECT_EQ(c.error->wc_status(), kWrFlushErr);
  // Not asked for: the endpoint was flushed; still ECANCELED, not
  // "cancelled".
  auto f = message_outcome(Op::irecv, kWrFlushErr, 0, "flush", 0, 64, false,
                           "irecv");
  ASSERT_TRUE(f.error);
  EXPECT_EQ(f.error->errno_value(), ECANCELED);
  EXPECT_FALSE(f.cancelled);
  EXPECT_TRUE(has(f.error->message(), "flushed")) << f.error->message();
}

TEST(Outcome, PeerGaveUp) {
  auto r = message_outcome(Op::irecv, kRemOpErr, 12, "remote op error", 0, 64,
                           false, "irecv");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->errno_value(), ECONNABORTED);
  EXPECT_FALSE(r.matched);  // the completion carries no tag then
  EXPECT_FALSE(r.cancelled);
  EXPECT_TRUE(has(r.error->message(), "sender gave")) << r.error->message();
  EXPECT_EQ(r.error->syndrome(), 12u);
  auto s = message_outcome(Op::isend, kRemOpErr, 16, "remote op error", 0, 64,
                           false, "isend");
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->errno_value(), ECONNABORTED);
  EXPECT_FALSE(s.matched);
  EXPECT_TRUE(has(s.error->message(), "receiver gave")) << s.error->message();
}

TEST(Outcome, Isend) {
  auto ok = message_outcome(Op::isend, kSuccess, 0, "", 4096, 4096, false, "");
  EXPECT_FALSE(ok.error);
  EXPECT_FALSE(ok.matched);
  EXPECT_EQ(ok.bytes, 4096u);
  // Statuses special to receives are not special to an isend: the errno
  // comes from the syndrome as for PUSH/PULL.
  auto len = message_outcome(Op::isend, kLocLenErr, 0, "", 0, 8, false, "");
  ASSERT_TRUE(len.error);
  EXPECT_EQ(len.error->errno_value(), EIO);
  auto fl = message_outcome(Op::isend, kWrFlushErr, 16, "", 0, 8, true, "");
  ASSERT_TRUE(fl.error);
  EXPECT_EQ(fl.error->errno_value(), ECANCELED);  // FLUSHED
  EXPECT_FALSE(fl.cancelled);
}

TEST(Outcome, OtherStatusesFollowTheSyndrome) {
  auto ep = message_outcome(Op::isend, kRemAccessErr, 6, "remote access error",
                            0, 8, false, "isend to rank 2");
  ASSERT_TRUE(ep.error);
  EXPECT_EQ(ep.error->errno_value(), ECONNREFUSED);  // BAD_ENDPOINT
  EXPECT_EQ(ep.error->syndrome_name(), "BAD_ENDPOINT");
  EXPECT_EQ(ep.error->message(), "isend to rank 2");
  auto key = message_outcome(Op::irecv, kLocProtErr, 1, "local protection", 0,
                             8, false, "irecv");
  ASSERT_TRUE(key.error);
  EXPECT_EQ(key.error->errno_value(), EACCES);  // BAD_KEY
  EXPECT_FALSE(key.matched);
  EXPECT_FALSE(key.cancelled);
}

TEST(Outcome, ErrorCompletionWithChosenErrno) {
  const auto e = rhinet::Error::completion(5, "flush", 16, "x", EMSGSIZE);
  EXPECT_EQ(e.errno_value(), EMSGSIZE);
  EXPECT_TRUE(e.is_completion());
  EXPECT_EQ(e.syndrome(), 16u);
  EXPECT_EQ(e.wc_status(), 5u);
}

// ---- wr_id of receives ------------------------------------------------------

TEST(RecvWrId, RoundTripAndDistinctFromStatusWordSlots) {
  for (std::uint32_t index : {0u, 1u, 1023u, 0xffffffffu})
    for (std::uint32_t gen : {0u, 1u, 0x7fffffffu}) {
      const auto id = recv_wr_id(index, gen);
      const auto back = decode_recv_wr_id(id);
      ASSERT_TRUE(back);
      EXPECT_EQ(back->index, index);
      EXPECT_EQ(back->gen, gen);
    }
  // Generations wrap within their bits, keeping bit 63.
  EXPECT_EQ(decode_recv_wr_id(recv_wr_id(5, 0x80000001u))->gen, 1u);
  // PUSH/PULL/isend use status-word indices as wr_id.
  for (std::uint64_t slot : {0ull, 63ull, 4095ull, 0x7fffffffffffffffull})
    EXPECT_FALSE(decode_recv_wr_id(slot)) << slot;
  EXPECT_NE(recv_wr_id(3, 0), recv_wr_id(3, 1));
}

// ---- the registry -----------------------------------------------------------

TEST(Registry, FindAddRemove) {
  std::vector<std::byte> mem(1000);
  Registry reg;
  ASSERT_TRUE(reg.add(mem.data() + 100, 100, 1, true));   // [100, 200)
  ASSERT_TRUE(reg.add(mem.data() + 200, 100, 2, false));  // [200, 300)
  ASSERT_TRUE(reg.add(mem.data() + 500, 10, 3, true));    // [500, 510)
  auto over = reg.add(mem.data() + 150, 10, 4, true);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().errno_value(), EEXIST);
  EXPECT_FALSE(reg.add(mem.data() + 90, 11, 4, true));    // touches 100
  EXPECT_FALSE(reg.add(mem.data() + 299, 2, 4, true));    // touches 299
  EXPECT_FALSE(reg.add(mem.data() + 400, 200, 4, true));  // covers 500
  EXPECT_EQ(reg.size(), 3u);

  const auto* first = reg.find(mem.data() + 100, 100);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->lkey, 1u);
  EXPECT_TRUE(first->writable);
  const auto* second = reg.find(mem.data() + 250, 50);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->lkey, 2u);
  EXPECT_FALSE(second->writable);
  EXPECT_EQ(reg.find(mem.data() + 150, 51), nullptr);  // spans two regions
  EXPECT_EQ(reg.find(mem.data() + 99, 2), nullptr);
  EXPECT_EQ(reg.find(mem.data() + 300, 1), nullptr);
  EXPECT_EQ(reg.find(mem.data() + 505, 6), nullptr);
  reg.remove(mem.data() + 200);
  EXPECT_EQ(reg.find(mem.data() + 250, 1), nullptr);
  ASSERT_TRUE(reg.add(mem.data() + 200, 100, 5, true));
  const auto* again = reg.find(mem.data() + 250, 1);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->lkey, 5u);
  // Adjacent regions do not overlap: [300, 500) fits between.
  EXPECT_TRUE(reg.add(mem.data() + 300, 200, 6, true));
  EXPECT_EQ(reg.size(), 4u);
}

}  // namespace
