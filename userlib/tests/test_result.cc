// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Error and rhinet::Result<T>.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "device_errors.hpp"
#include "rhinet/result.hpp"

namespace {

using rhinet::Error;
using rhinet::Result;

TEST(Error, CarriesErrnoAndMessage) {
  const Error e(ENOENT, "area 7");
  EXPECT_EQ(e.errno_value(), ENOENT);
  EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory);
  EXPECT_TRUE(e == std::errc::no_such_file_or_directory);
  EXPECT_FALSE(e == std::errc::permission_denied);
  EXPECT_EQ(e.message(), "area 7");
  EXPECT_EQ(e.syndrome(), 0u);
  EXPECT_FALSE(e.is_completion());
  EXPECT_EQ(e.to_string(), std::string("area 7: ") + std::strerror(ENOENT));
}

TEST(Error, FromErrc) {
  const Error e(std::errc::timed_out, "sync");
  EXPECT_EQ(e.errno_value(), ETIMEDOUT);
  EXPECT_NE(e.to_string().find("sync"), std::string::npos);
}

TEST(Error, CompletionCarriesStatusAndSyndrome) {
  const Error e = Error::completion(10, "remote access error", 5,
                                    "push to rank 1, area 7 offset 0");
  EXPECT_TRUE(e.is_completion());
  EXPECT_EQ(e.syndrome(), 5u);
  EXPECT_EQ(e.syndrome_name(), "BAD_AREA");
  EXPECT_EQ(e.wc_status(), 10u);
  EXPECT_EQ(e.errno_value(), ENOENT);  // bad area -> ENOENT
  const std::string s = e.to_string();
  EXPECT_NE(s.find("push to rank 1, area 7 offset 0"), std::string::npos) << s;
  EXPECT_NE(s.find("BAD_AREA"), std::string::npos) << s;
  EXPECT_NE(s.find("no such area at the target"), std::string::npos) << s;
  EXPECT_NE(s.find("remote access error"), std::string::npos) << s;
  EXPECT_NE(s.find("status 10"), std::string::npos) << s;
}

TEST(Error, SyndromeNamesAndErrnos) {
  EXPECT_EQ(rhinet::syndrome_name(0), "NONE");
  EXPECT_EQ(rhinet::syndrome_name(19), "BAD_GROUP");
  EXPECT_EQ(rhinet::syndrome_name(18), "BAD_XFER");
  EXPECT_EQ(rhinet::syndrome_name(4), "BOUNDS");
  EXPECT_EQ(rhinet::syndrome_name(12), "RETRY_EXCEEDED");
  EXPECT_EQ(rhinet::syndrome_name(33), "TRIGGER_GONE");
  EXPECT_EQ(rhinet::syndrome_errno(33), ECANCELED);
  EXPECT_EQ(rhinet::syndrome_errno(32), ENOSPC);
  EXPECT_EQ(rhinet::syndrome_name(34), "BAD_REMOTE_TRIGGER");
  EXPECT_EQ(rhinet::syndrome_errno(34), EACCES);
  EXPECT_EQ(static_cast<std::uint32_t>(rhinet::Syndrome::bad_remote_trigger),
            34u);
  EXPECT_EQ(rhinet::syndrome_name(36), "NO_WATCH_AREA");
  EXPECT_EQ(rhinet::syndrome_errno(36), ENOENT);
  EXPECT_EQ(static_cast<std::uint32_t>(rhinet::Syndrome::no_watch_area), 36u);
  EXPECT_EQ(rhinet::syndrome_name(99), "SYNDROME_99");
  EXPECT_EQ(rhinet::syndrome_text(99), "unknown syndrome");
  EXPECT_EQ(rhinet::syndrome_errno(19), EPERM);
  EXPECT_EQ(rhinet::syndrome_errno(4), ERANGE);
  EXPECT_EQ(rhinet::syndrome_errno(12), EHOSTUNREACH);
  EXPECT_EQ(rhinet::syndrome_errno(16), ECANCELED);
  EXPECT_EQ(rhinet::syndrome_errno(99), EIO);
  EXPECT_EQ(rhinet::syndrome_errno(0), EIO);  // a failure without syndrome
  // The enum mirrors the values.
  EXPECT_EQ(static_cast<std::uint32_t>(rhinet::Syndrome::bad_group), 19u);
  EXPECT_EQ(static_cast<std::uint32_t>(rhinet::Syndrome::bad_xfer), 18u);
}

// The syndromes of locks and barriers and their errnos.
TEST(Error, SyncSyndromes) {
  using rhinet::Syndrome;
  EXPECT_EQ(
      rhinet::syndrome_name(static_cast<std::uint32_t>(Syndrome::member_lost)),
      "MEMBER_LOST");
  EXPECT_EQ(
      rhinet::syndrome_errno(static_cast<std::uint32_t>(Syndrome::member_lost)),
      ECONNRESET);
  EXPECT_EQ(
      rhinet::syndrome_name(static_cast<std::uint32_t>(Syndrome::not_held)),
      "NOT_HELD");
  EXPECT_EQ(
      rhinet::syndrome_errno(static_cast<std::uint32_t>(Syndrome::not_held)),
      EPERM);
  EXPECT_EQ(rhinet::syndrome_errno(static_cast<std::uint32_t>(Syndrome::busy)),
            EAGAIN);
}

// A shared region's refusal: not in the region, or in it
// already.
TEST(Error, ShareSyndrome) {
  using rhinet::Syndrome;
  EXPECT_EQ(static_cast<std::uint32_t>(Syndrome::not_subscribed), 26u);
  EXPECT_EQ(rhinet::syndrome_name(26), "NOT_SUBSCRIBED");
  EXPECT_EQ(rhinet::syndrome_errno(26), ENOTCONN);
  EXPECT_NE(rhinet::syndrome_text(26).find("shared region"),
            std::string_view::npos);
  // The NIC's refusal of an update before a newcomer's data never reaches
  // a completion: the library does not name it.
  EXPECT_EQ(rhinet::syndrome_name(25), "SYNDROME_25");
}

TEST(Error, EqualityIgnoresMessages) {
  EXPECT_EQ(Error(EINVAL, "a"), Error(EINVAL, "b"));
  EXPECT_FALSE(Error(EINVAL, "a") == Error(EPERM, "a"));
  EXPECT_FALSE(Error::completion(10, "", 5, "") ==
               Error::completion(10, "", 4, ""));
}

Result<int> half(int v) {
  if (v % 2) return Error(EINVAL, std::to_string(v) + " is odd");
  return v / 2;
}

TEST(Result, ValueOrError) {
  auto a = half(8);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a.has_value());
  EXPECT_EQ(*a, 4);
  EXPECT_EQ(a.value(), 4);
  EXPECT_EQ(a.value_or(-1), 4);

  auto b = half(7);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), EINVAL);
  EXPECT_EQ(b.error().message(), "7 is odd");
  EXPECT_EQ(b.value_or(-1), -1);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  ASSERT_TRUE(r);
  EXPECT_EQ(**r, 5);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);

  Result<std::unique_ptr<int>> e(Error(ENOMEM, "none"));
  EXPECT_FALSE(e);
  Error taken = std::move(e).error();
  EXPECT_EQ(taken.errno_value(), ENOMEM);
}

TEST(Result, InPlaceAndArrow) {
  Result<std::string> s(std::in_place, 3, 'x');
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 3u);
  EXPECT_EQ(*s, "xxx");
}

Result<void> check_positive(int v) {
  if (v <= 0) return Error(std::errc::invalid_argument, "not positive");
  return rhinet::ok();
}

TEST(Result, Void) {
  EXPECT_TRUE(check_positive(1));
  auto r = check_positive(0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), std::errc::invalid_argument);
  EXPECT_EQ(r.error().message(), "not positive");
}

TEST(ResultDeathTest, ValueOfAnErrorAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto r = half(3);
  EXPECT_DEATH((void)r.value(), "3 is odd");
  Result<void> v = Error(EIO, "void failure");
  EXPECT_DEATH(v.value(), "void failure");
  auto good = half(2);
  EXPECT_DEATH((void)good.error(), "holding a value");
}

// Group::join and Group::add_endpoint open a device context; what the
// driver refuses with a limit of its own is said by name, so that a
// program that adds endpoints until refused learns which limit it hit.
TEST(ContextRefusal, NamesTheDriversLimits) {
  using rhinet::detail::context_refusal;
  EXPECT_NE(context_refusal(EDQUOT).find("max_contexts_per_user"),
            std::string::npos);
  EXPECT_NE(context_refusal(EDQUOT).find("doorbell pages"), std::string::npos);
  EXPECT_NE(context_refusal(EUSERS).find("NIC account"), std::string::npos);
  EXPECT_NE(context_refusal(ENOSPC).find("every doorbell page"),
            std::string::npos);
  // Other errnos keep their own text (strerror) only.
  EXPECT_EQ(context_refusal(ENOMEM), "");
  EXPECT_EQ(context_refusal(EPERM), "");
  EXPECT_EQ(context_refusal(0), "");
}

}  // namespace
