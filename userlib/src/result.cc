// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/result.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rhinet/version.hpp"

namespace rhinet {

namespace {

struct SyndromeInfo {
  std::uint32_t value;
  const char* name;
  const char* text;
  int err;
};

constexpr SyndromeInfo kSyndromes[] = {
    {0, "NONE", "no error", 0},
    {1, "BAD_KEY", "local or remote key unknown", EACCES},
    {2, "PD_MISMATCH", "memory of another protection domain", EACCES},
    {3, "ACCESS_RIGHTS", "the area or key does not allow this access", EACCES},
    {4, "BOUNDS", "offset + length beyond the area", ERANGE},
    {5, "BAD_AREA", "no such area at the target", ENOENT},
    {6, "BAD_ENDPOINT", "no such endpoint at the target", ECONNREFUSED},
    {8, "LENGTH", "length error", EMSGSIZE},
    {10, "BAD_WQE", "malformed work request", EINVAL},
    {11, "DMA", "host memory access failed", EFAULT},
    {12, "RETRY_EXCEEDED", "target node unreachable", EHOSTUNREACH},
    {14, "ALIGNMENT", "misaligned address", EINVAL},
    {15, "BUSY", "the NIC's tables for this process are full", EAGAIN},
    {16, "FLUSHED", "the endpoint went to the error state", ECANCELED},
    {18, "BAD_XFER", "partial-transfer descriptor refused", EINVAL},
    {19, "BAD_GROUP", "not a member of the area's group", EPERM},
    {21, "NOT_PINNED",
     "the target host would not pin the pages (its process's pin limit, "
     "or memory not mapped there)",
     EDQUOT},
    {22, "MEMBER_LOST",
     "a member's node (or the manager's) of the lock, barrier or switch "
     "multicast group died or restarted, or the manager endpoint went away",
     ECONNRESET},
    {23, "NOT_HELD",
     "unlock of a lock this endpoint does not hold, or a barrier count "
     "that differs from its round's",
     EPERM},
    {24, "NO_MCAST_GROUP",
     "the NIC has no member list for the switch multicast group (the "
     "administrator did not set it on this node)",
     ENOENT},
    {26, "NOT_SUBSCRIBED",
     "the endpoint is not in the shared region (or still joining it), or "
     "a subscribe of a region it is in already",
     ENOTCONN},
    {28, "COLL_MISMATCH",
     "the ranks of the communicator called collectives that disagree (op, "
     "type, count, root, options or member list)",
     EPROTO},
    {29, "COLL_NO_ROOM", "the NIC holds no more communicators for this process",
     ENOSPC},
    {30, "COLL_NO_SWITCH",
     "the fabric switch never answered an in-switch collective (it does not "
     "reduce, or it is gone)",
     EHOSTUNREACH},
    {31, "BAD_TRIGGER",
     "the trigger counter is no live counter of this process", EINVAL},
    {32, "TRIGGER_NO_ROOM",
     "the NIC holds no more waiting triggered operations for this process",
     ENOSPC},
    {33, "TRIGGER_GONE",
     "the trigger counter was destroyed while the operation waited", ECANCELED},
    {34, "BAD_REMOTE_TRIGGER",
     "the peer refused the add: no live counter of the process reached has "
     "that handle and key",
     EACCES},
    {36, "NO_WATCH_AREA", "a watch of an area this process has not registered",
     ENOENT},
};

const SyndromeInfo* find(std::uint32_t s) {
  for (const auto& i : kSyndromes)
    if (i.value == s) return &i;
  return nullptr;
}

}  // namespace

std::string syndrome_name(std::uint32_t syndrome) {
  if (const auto* i = find(syndrome)) return i->name;
  return "SYNDROME_" + std::to_string(syndrome);
}

std::string_view syndrome_text(std::uint32_t syndrome) {
  if (const auto* i = find(syndrome)) return i->text;
  return "unknown syndrome";
}

int syndrome_errno(std::uint32_t syndrome) {
  const auto* i = find(syndrome);
  return i && i->err ? i->err : EIO;
}

Error::Error(int errno_value, std::string message)
    : code_(errno_value, std::generic_category()),
      message_(std::move(message)) {}

Error::Error(std::errc code, std::string message)
    : code_(std::make_error_code(code)), message_(std::move(message)) {}

Error::Error(std::error_code code, std::string message)
    : code_(code), message_(std::move(message)) {}

Error Error::completion(std::uint32_t status, std::string status_name,
                        std::uint32_t syndrome, std::string message) {
  return completion(status, std::move(status_name), syndrome,
                    std::move(message), syndrome_errno(syndrome));
}

Error Error::completion(std::uint32_t status, std::string status_name,
                        std::uint32_t syndrome, std::string message,
                        int errno_value) {
  Error e(errno_value, std::move(message));
  e.status_name_ = std::move(status_name);
  e.syndrome_ = syndrome;
  e.wc_status_ = status;
  e.completion_ = true;
  return e;
}

std::string Error::to_string() const {
  std::string s = message_;
  if (!s.empty()) s += ": ";
  s += code_.message();
  if (completion_) {
    s += " (completion status " + std::to_string(wc_status_);
    if (!status_name_.empty()) s += " " + status_name_;
    s += ", NIC syndrome " + std::to_string(syndrome_) + " " +
         rhinet::syndrome_name(syndrome_) + ": " +
         std::string(syndrome_text(syndrome_)) + ")";
  }
  return s;
}

namespace detail {

void bad_result_access(const Error& e) {
  std::fprintf(stderr, "rhinet: value() of a Result holding an error: %s\n",
               e.to_string().c_str());
  std::abort();
}

void bad_error_access() {
  std::fprintf(stderr, "rhinet: error() of a Result holding a value\n");
  std::abort();
}

}  // namespace detail

const char* library_version() { return RHINET_USER_VERSION; }

}  // namespace rhinet
