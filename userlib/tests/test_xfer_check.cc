// SPDX-License-Identifier: BSD-2-Clause
// check_xfer: the modes each operation takes and the parameters of each mode,
// refused before anything is posted.
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <string>

#include "rhinet/xfer.hpp"

namespace {

using rhinet::check_xfer;
using rhinet::Mode;
using rhinet::Op;
using rhinet::Target;
using rhinet::XferOptions;

std::array<std::byte, 64> g_bits{};

// Valid parameters for `mode` over `len` bytes (twin modes: no twin can
// be made without a NIC, so those stop at "no twin memory given").
XferOptions options_for(Mode mode) {
  XferOptions o;
  o.mode = mode;
  if (mode == Mode::stride) o.stride = {8, 4, 16, 32};
  if (mode == Mode::bitmap) o.bitmap = {g_bits, 8};
  return o;
}

std::string message(const rhinet::Result<void>& r) {
  return r ? "" : r.error().message();
}

TEST(XferCheck, EachOperationTakesItsModes) {
  struct Row {
    Op op;
    Mode mode;
    bool allowed;
  };
  const Row rows[] = {
      {Op::push, Mode::basic, true},  {Op::push, Mode::twin, false},
      {Op::push, Mode::diff, true},   {Op::push, Mode::bitmap, true},
      {Op::push, Mode::stride, true}, {Op::pull, Mode::basic, true},
      {Op::pull, Mode::twin, true},   {Op::pull, Mode::diff, false},
      {Op::pull, Mode::bitmap, true}, {Op::pull, Mode::stride, true},
  };
  for (const Row& row : rows) {
    for (Target t : {Target::area, Target::key}) {
      auto r = check_xfer(row.op, t, options_for(row.mode), 64);
      const std::string what = std::string(rhinet::op_name(row.op)) + " " +
                               rhinet::mode_name(row.mode);
      const bool twin_mode = row.mode == Mode::twin || row.mode == Mode::diff;
      if (!row.allowed) {
        ASSERT_FALSE(r) << what;
        EXPECT_EQ(r.error().errno_value(), EINVAL) << what;
        EXPECT_NE(message(r).find("takes basic"), std::string::npos)
            << what << ": " << message(r);
      } else if (twin_mode) {
        ASSERT_FALSE(r) << what;  // allowed, but no twin given
        EXPECT_NE(message(r).find("no twin memory"), std::string::npos)
            << what << ": " << message(r);
      } else {
        EXPECT_TRUE(r) << what << ": " << message(r);
      }
    }
  }
}

TEST(XferCheck, UnknownMode) {
  XferOptions o;
  o.mode = static_cast<Mode>(9);
  auto r = check_xfer(Op::push, Target::area, o, 8);
  ASSERT_FALSE(r);
  EXPECT_NE(message(r).find("unknown mode 9"), std::string::npos);
}

TEST(XferCheck, Stride) {
  auto with = [](rhinet::Stride s, std::size_t len) {
    return check_xfer(Op::push, Target::area, XferOptions::strided(s), len);
  };
  EXPECT_TRUE(with({8, 4, 16, 32}, 56));   // 3*16+8 = 56 bytes exactly
  EXPECT_FALSE(with({8, 4, 16, 32}, 55));  // one byte short
  EXPECT_NE(message(with({8, 4, 16, 32}, 55)).find("need a local span of 56"),
            std::string::npos);
  EXPECT_FALSE(with({0, 4, 16, 32}, 64));  // zero block
  EXPECT_FALSE(with({8, 0, 16, 32}, 64));  // zero count
  EXPECT_FALSE(with({8, 4, 4, 32}, 64));   // local blocks overlap
  EXPECT_FALSE(with({8, 4, 16, 7}, 64));   // remote blocks overlap
  EXPECT_NE(message(with({8, 4, 4, 32}, 64)).find("overlap"),
            std::string::npos);
  EXPECT_TRUE(with({8, 1, 0, 0}, 8));  // one block: strides unused
  EXPECT_FALSE(with({8, 3, UINT64_MAX / 2, 8}, 64));  // extent overflows
  // Pulls take strides too.
  EXPECT_TRUE(check_xfer(Op::pull, Target::key,
                         XferOptions::strided({4, 2, 4, 100}), 8));
}

TEST(XferCheck, Bitmap) {
  std::array<std::byte, 2> bits{};
  auto with = [&](std::uint32_t g, std::size_t len) {
    return check_xfer(Op::push, Target::area, XferOptions::with_bitmap(bits, g),
                      len);
  };
  EXPECT_TRUE(with(4, 64));   // 16 blocks, 16 bits
  EXPECT_FALSE(with(4, 65));  // 17 blocks
  EXPECT_NE(message(with(4, 65)).find("need 17 bits"), std::string::npos);
  EXPECT_TRUE(with(8, 65));   // 9 blocks
  EXPECT_FALSE(with(0, 64));  // no granularity
  EXPECT_FALSE(
      check_xfer(Op::pull, Target::area, XferOptions::with_bitmap({}, 8), 64));
}

TEST(XferCheck, ParametersOfAnotherModeAreRefused) {
  XferOptions o;
  o.stride = {8, 2, 8, 8};  // .mode forgotten
  auto r = check_xfer(Op::push, Target::area, o, 64);
  ASSERT_FALSE(r);
  EXPECT_NE(message(r).find("Mode::stride"), std::string::npos);

  XferOptions b = XferOptions::with_bitmap(g_bits, 8);
  b.mode = Mode::stride;
  b.stride = {8, 2, 8, 8};
  EXPECT_FALSE(check_xfer(Op::push, Target::area, b, 64));
}

TEST(XferCheck, SignalOnlyOnPushByArea) {
  XferOptions o{.signal = 1};
  EXPECT_TRUE(check_xfer(Op::push, Target::area, o, 8));
  EXPECT_TRUE(check_xfer(Op::push, Target::area, o, 0));  // a bare signal
  auto pull = check_xfer(Op::pull, Target::area, o, 8);
  ASSERT_FALSE(pull);
  EXPECT_NE(message(pull).find("signal"), std::string::npos);
  EXPECT_FALSE(check_xfer(Op::push, Target::key, o, 8));
  // With a mode, too.
  XferOptions s = XferOptions::strided({8, 2, 8, 8}).with_signal(3);
  EXPECT_TRUE(check_xfer(Op::push, Target::area, s, 16));
}

TEST(XferCheck, InlineOnlyOnBasicPush) {
  XferOptions o{.inline_data = true};
  EXPECT_TRUE(check_xfer(Op::push, Target::area, o, 8));
  EXPECT_FALSE(check_xfer(Op::pull, Target::area, o, 8));
  XferOptions s = XferOptions::strided({8, 2, 8, 8});
  s.inline_data = true;
  EXPECT_FALSE(check_xfer(Op::push, Target::area, s, 16));
}

TEST(XferCheck, Lengths) {
  auto big = check_xfer(Op::push, Target::area, {}, std::size_t{1} << 32);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().errno_value(), EMSGSIZE);
  EXPECT_TRUE(check_xfer(Op::push, Target::area, {}, 0xffffffffu));
  // An empty span only in basic mode.
  EXPECT_FALSE(check_xfer(Op::push, Target::area,
                          XferOptions::strided({8, 1, 0, 0}), 0));
}

}  // namespace

// mcast is a PUSH by area to many ranks: a PUSH's modes, no key
// target, no fence; signal and inline as a PUSH.
TEST(XferCheck, McastTakesThePushModesByAreaOnly) {
  for (Mode m : {Mode::basic, Mode::bitmap, Mode::stride})
    EXPECT_TRUE(check_xfer(Op::mcast, Target::area, options_for(m), 64))
        << rhinet::mode_name(m);
  auto twin = check_xfer(Op::mcast, Target::area, options_for(Mode::twin), 64);
  ASSERT_FALSE(twin);
  EXPECT_EQ(twin.error().errno_value(), EINVAL);
  EXPECT_NE(message(twin).find("takes basic"), std::string::npos)
      << message(twin);
  // diff without a twin: refused for the missing twin, not the mode.
  auto diff = check_xfer(Op::mcast, Target::area, options_for(Mode::diff), 64);
  ASSERT_FALSE(diff);
  EXPECT_NE(message(diff).find("no twin"), std::string::npos) << message(diff);

  auto key = check_xfer(Op::mcast, Target::key, {}, 64);
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().errno_value(), EINVAL);
  EXPECT_NE(message(key).find("area ID"), std::string::npos) << message(key);

  XferOptions fence;
  fence.fence = true;
  auto f = check_xfer(Op::mcast, Target::area, fence, 64);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().errno_value(), EINVAL);

  XferOptions sig;
  sig.signal = 3;
  EXPECT_TRUE(check_xfer(Op::mcast, Target::area, sig, 64));
  XferOptions inl;
  inl.inline_data = true;
  EXPECT_TRUE(check_xfer(Op::mcast, Target::area, inl, 16));
  XferOptions inl_stride = options_for(Mode::stride);
  inl_stride.inline_data = true;
  EXPECT_FALSE(check_xfer(Op::mcast, Target::area, inl_stride, 64));
  // Stride parameters checked as a PUSH's: blocks beyond the span.
  EXPECT_FALSE(
      check_xfer(Op::mcast, Target::area, options_for(Mode::stride), 32));
}

// A switch group's mcast takes what the list mcast takes.
TEST(XferCheck, SwitchMcastTakesThePushModesByAreaOnly) {
  for (Mode m : {Mode::basic, Mode::bitmap, Mode::stride})
    EXPECT_TRUE(check_xfer(Op::mcast_switch, Target::area, options_for(m), 64))
        << rhinet::mode_name(m);
  EXPECT_FALSE(
      check_xfer(Op::mcast_switch, Target::area, options_for(Mode::twin), 64));
  auto key = check_xfer(Op::mcast_switch, Target::key, {}, 64);
  ASSERT_FALSE(key);
  EXPECT_NE(message(key).find("mcast_switch"), std::string::npos)
      << message(key);
  XferOptions fence;
  fence.fence = true;
  EXPECT_FALSE(check_xfer(Op::mcast_switch, Target::area, fence, 64));
  XferOptions inl;
  inl.inline_data = true;
  EXPECT_TRUE(check_xfer(Op::mcast_switch, Target::area, inl, 16));
}

// A shared region's update is a PUSH by area to the region's members: the
// PUSH modes, inline, but no signal (the NIC numbers updates itself) and
// no fence.
TEST(XferCheck, ShareUpdateTakesThePushModesByAreaWithoutSignal) {
  for (Mode m : {Mode::basic, Mode::bitmap, Mode::stride})
    EXPECT_TRUE(check_xfer(Op::share_update, Target::area, options_for(m), 64))
        << rhinet::mode_name(m);
  auto diff =
      check_xfer(Op::share_update, Target::area, options_for(Mode::diff), 64);
  ASSERT_FALSE(diff);  // allowed, but no twin can be given here
  EXPECT_NE(message(diff).find("no twin memory"), std::string::npos)
      << message(diff);
  auto twin =
      check_xfer(Op::share_update, Target::area, options_for(Mode::twin), 64);
  ASSERT_FALSE(twin);
  EXPECT_NE(message(twin).find("does not take mode twin"), std::string::npos)
      << message(twin);
  EXPECT_FALSE(check_xfer(Op::share_update, Target::key, {}, 64));
  XferOptions signal;
  signal.signal = 1;
  auto s = check_xfer(Op::share_update, Target::area, signal, 64);
  ASSERT_FALSE(s);
  EXPECT_NE(message(s).find("no signal"), std::string::npos) << message(s);
  XferOptions fence;
  fence.fence = true;
  EXPECT_FALSE(check_xfer(Op::share_update, Target::area, fence, 64));
  XferOptions inl;
  inl.inline_data = true;
  EXPECT_TRUE(check_xfer(Op::share_update, Target::area, inl, 16));
}

// A subscribe takes the region whole: basic, or twin (as a PULL), and
// nothing of a PUSH's.
TEST(XferCheck, SubscribeTakesBasicOrTwin) {
  EXPECT_TRUE(check_xfer(Op::subscribe, Target::area, {}, 4096));
  auto twin =
      check_xfer(Op::subscribe, Target::area, options_for(Mode::twin), 64);
  ASSERT_FALSE(twin);  // allowed, but no twin can be given here
  EXPECT_NE(message(twin).find("no twin memory"), std::string::npos)
      << message(twin);
  for (Mode m : {Mode::diff, Mode::bitmap, Mode::stride}) {
    auto r = check_xfer(Op::subscribe, Target::area, options_for(m), 64);
    ASSERT_FALSE(r) << rhinet::mode_name(m);
    EXPECT_EQ(r.error().errno_value(), EINVAL);
    EXPECT_NE(message(r).find("subscribe basic, twin"), std::string::npos)
        << message(r);
  }
  EXPECT_FALSE(check_xfer(Op::subscribe, Target::key, {}, 64));
  XferOptions signal, fence, inl;
  signal.signal = 1;
  fence.fence = true;
  inl.inline_data = true;
  EXPECT_FALSE(check_xfer(Op::subscribe, Target::area, signal, 64));
  EXPECT_FALSE(check_xfer(Op::subscribe, Target::area, fence, 64));
  EXPECT_FALSE(check_xfer(Op::subscribe, Target::area, inl, 16));
  EXPECT_STREQ(rhinet::op_name(Op::subscribe), "subscribe");
  EXPECT_STREQ(rhinet::op_name(Op::unsubscribe), "unsubscribe");
  EXPECT_STREQ(rhinet::op_name(Op::share_update), "share_update");
  // An unsubscribe moves nothing.
  EXPECT_FALSE(check_xfer(Op::unsubscribe, Target::area, {}, 0));
}

// Locks and barriers are not transfers.
TEST(XferCheck, SyncOpsAreNotTransfers) {
  for (Op op : {Op::lock, Op::unlock, Op::barrier}) {
    auto r = check_xfer(op, Target::area, {}, 0);
    ASSERT_FALSE(r) << rhinet::op_name(op);
    EXPECT_EQ(r.error().errno_value(), EINVAL);
  }
  EXPECT_STREQ(rhinet::op_name(Op::mcast), "mcast");
  EXPECT_STREQ(rhinet::op_name(Op::lock), "lock");
  EXPECT_STREQ(rhinet::op_name(Op::unlock), "unlock");
  EXPECT_STREQ(rhinet::op_name(Op::barrier), "barrier");
}

// XferOptions::trigger goes with PUSH, PULL and the list mcast (they arm
// the endpoint); the switch mcast and shared-region updates refuse it.
TEST(XferCheck, TriggerOnPushPullAndListMcast) {
  XferOptions o;
  o.trigger.threshold = 1;
  o.trigger.counter = reinterpret_cast<const rhinet::Trigger*>(&o);
  EXPECT_TRUE(check_xfer(Op::push, Target::area, o, 8));
  EXPECT_TRUE(check_xfer(Op::pull, Target::key, o, 8));
  EXPECT_TRUE(check_xfer(Op::mcast, Target::area, o, 8));
  auto r = check_xfer(Op::isend, Target::area, o, 8);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EINVAL);
  EXPECT_FALSE(check_xfer(Op::mcast_switch, Target::area, o, 8));
  EXPECT_FALSE(check_xfer(Op::share_update, Target::area, o, 8));
  // A chain alone is a trigger too.
  XferOptions c;
  c.trigger.chain = reinterpret_cast<const rhinet::Trigger*>(&c);
  EXPECT_FALSE(check_xfer(Op::mcast_switch, Target::area, c, 8));
}

// The remote add is a row of the operation table like the others.
TEST(XferCheck, TriggerAddIsNamed) {
  EXPECT_STREQ(rhinet::op_name(Op::trigger_add), "trigger_add");
}
