// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Error and rhinet::Result<T>: errors as values, never exceptions on
// the data path. An Error carries an errno-based std::error_code, a message
// naming what failed, and, for an operation the NIC completed with an
// error, the completion status and the NIC's syndrome (RHINETDV_SYN_*).
#ifndef RHINET_RESULT_HPP
#define RHINET_RESULT_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace rhinet {

// Why the NIC refused an operation: the values of RHINETDV_SYN_* (and of
// the NIC's RHN_SYN_*), checked at build time in the library.
enum class Syndrome : std::uint32_t {
  none = 0,
  bad_key = 1,              // local or remote key unknown
  pd_mismatch = 2,          // memory of another protection domain
  access_rights = 3,        // the area or key does not allow the access
  bounds = 4,               // offset + length beyond the area
  bad_area = 5,             // no such area at the target
  bad_endpoint = 6,         // no such endpoint at the target
  length = 8,               // length error
  bad_wqe = 10,             // malformed work request
  dma = 11,                 // host memory access failed
  retry_exceeded = 12,      // target node unreachable
  alignment = 14,           // misaligned address
  busy = 15,                // the NIC's tables for this process are full
  flushed = 16,             // the endpoint went to the error state
  bad_xfer = 18,            // partial-transfer descriptor refused
  bad_group = 19,           // not a member of the area's group
  not_pinned = 21,          // the target host would not pin (its limit)
  member_lost = 22,         // a lock's or barrier's member or manager was lost
  not_held = 23,            // unlock of a lock not held; barrier count mismatch
  no_mcast_group = 24,      // a switch multicast group the NIC has no list for
  not_subscribed = 26,      // not in the shared region (or in it already)
  coll_mismatch = 28,       // the ranks of a communicator disagree
  coll_no_room = 29,        // the NIC holds no more communicators for us
  coll_no_switch = 30,      // in-switch collective: the switch never answered
  bad_trigger = 31,         // a trigger counter that is not this process's
  trigger_no_room = 32,     // the NIC holds no more waiting triggered ops
  trigger_gone = 33,        // the counter was destroyed while the op waited
  bad_remote_trigger = 34,  // a peer's counter refused our add (its key,
                            // handle or owner did not match)
  no_watch_area = 36,       // a watch of an area this process did not register
};

// "BAD_GROUP", "BOUNDS", ...; "SYNDROME_<n>" for a value not listed.
std::string syndrome_name(std::uint32_t syndrome);
// One line saying what the syndrome means ("no such area at the target").
std::string_view syndrome_text(std::uint32_t syndrome);
// The errno the library reports for an operation that completed with this
// syndrome (bad_area -> ENOENT, bad_group -> EPERM, bounds -> ERANGE, ...;
// EIO for the rest).
int syndrome_errno(std::uint32_t syndrome);

class Error {
 public:
  // An errno value (std::generic_category) and what failed.
  Error(int errno_value, std::string message);
  Error(std::errc code, std::string message);
  Error(std::error_code code, std::string message);

  // An operation the NIC completed with an error: ibv_wc_status `status`
  // (status_name: its text, e.g. ibv_wc_status_str) and RHINETDV_SYN_*
  // `syndrome`. The errno is syndrome_errno(syndrome).
  static Error completion(std::uint32_t status, std::string status_name,
                          std::uint32_t syndrome, std::string message);
  // As above with the errno chosen by the caller (when the status says
  // more than the syndrome: a truncated or cancelled receive).
  static Error completion(std::uint32_t status, std::string status_name,
                          std::uint32_t syndrome, std::string message,
                          int errno_value);

  const std::error_code& code() const { return code_; }
  // The errno value (code().value(); the library only uses errno codes).
  int errno_value() const { return code_.value(); }
  // RHINETDV_SYN_* of a failed completion, 0 (Syndrome::none) otherwise.
  std::uint32_t syndrome() const { return syndrome_; }
  std::string syndrome_name() const { return rhinet::syndrome_name(syndrome_); }
  // ibv_wc_status of a failed completion, 0 otherwise.
  std::uint32_t wc_status() const { return wc_status_; }
  bool is_completion() const { return completion_; }
  // What failed, as the library said it ("push to rank 3, area 7 ...").
  const std::string& message() const { return message_; }
  // The whole story in one line: message, errno text and, for a
  // completion, status and syndrome with its name and meaning.
  std::string to_string() const;

  // Same code, syndrome and status (messages may differ).
  friend bool operator==(const Error& a, const Error& b) {
    return a.code_ == b.code_ && a.syndrome_ == b.syndrome_ &&
           a.wc_status_ == b.wc_status_;
  }
  friend bool operator==(const Error& a, std::errc e) {
    return a.code_ == std::make_error_code(e);
  }

 private:
  std::error_code code_;
  std::string message_;
  std::string status_name_;
  std::uint32_t syndrome_ = 0;
  std::uint32_t wc_status_ = 0;
  bool completion_ = false;
};

namespace detail {
// Prints the error and aborts: value() of a Result holding an error.
[[noreturn]] void bad_result_access(const Error& e);
[[noreturn]] void bad_error_access();
}  // namespace detail

// A value or an Error (std::expected-like; GCC 12 has no std::expected).
// value() of an error is a programming error: it prints the error and
// aborts; test the result first (if (r), r.has_value()).
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T> && !std::is_same_v<T, Error>,
                "Result<T>: T must be an object type other than Error");

 public:
  using value_type = T;

  Result(const T& v) : v_(std::in_place_index<0>, v) {}
  Result(T&& v) : v_(std::in_place_index<0>, std::move(v)) {}
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}
  template <class... Args>
  explicit Result(std::in_place_t, Args&&... args)
      : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    check();
    return *std::get_if<0>(&v_);
  }
  const T& value() const& {
    check();
    return *std::get_if<0>(&v_);
  }
  T&& value() && {
    check();
    return std::move(*std::get_if<0>(&v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <class U>
  T value_or(U&& other) const& {
    return has_value() ? *std::get_if<0>(&v_)
                       : static_cast<T>(std::forward<U>(other));
  }
  template <class U>
  T value_or(U&& other) && {
    return has_value() ? std::move(*std::get_if<0>(&v_))
                       : static_cast<T>(std::forward<U>(other));
  }

  // The error; aborts when there is a value.
  const Error& error() const& {
    if (has_value()) detail::bad_error_access();
    return *std::get_if<1>(&v_);
  }
  Error&& error() && {
    if (has_value()) detail::bad_error_access();
    return std::move(*std::get_if<1>(&v_));
  }

 private:
  void check() const {
    if (!has_value()) detail::bad_result_access(*std::get_if<1>(&v_));
  }
  std::variant<T, Error> v_;
};

// Success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;

  Result() = default;
  Result(Error e) : e_(std::move(e)) {}

  bool has_value() const { return !e_; }
  explicit operator bool() const { return has_value(); }
  // Aborts with the error's text when there is one.
  void value() const {
    if (e_) detail::bad_result_access(*e_);
  }
  const Error& error() const& {
    if (!e_) detail::bad_error_access();
    return *e_;
  }
  Error&& error() && {
    if (!e_) detail::bad_error_access();
    return std::move(*e_);
  }

 private:
  std::optional<Error> e_;
};

// Result<void> success, for `return rhinet::ok();`.
inline Result<void> ok() { return {}; }

}  // namespace rhinet

#endif  // RHINET_RESULT_HPP
