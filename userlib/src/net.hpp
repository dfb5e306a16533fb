// SPDX-License-Identifier: BSD-2-Clause
// TCP helpers of the bootstrap (internal): deadlines, connect with retry,
// whole frames in and out of nonblocking sockets.
#ifndef RHINET_USERLIB_NET_HPP
#define RHINET_USERLIB_NET_HPP

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "rhinet/bootstrap.hpp"
#include "rhinet/result.hpp"

namespace rhinet::net {

using Clock = std::chrono::steady_clock;

// now + timeout, saturating (forever: time_point::max()).
Clock::time_point deadline_after(std::chrono::milliseconds timeout);
// Milliseconds left for poll(): -1 for no deadline, 0 once passed.
int poll_ms(Clock::time_point deadline);

// "1.5 s", "200 ms"
std::string format_duration(std::chrono::milliseconds d);

void close_fd(int& fd);
Result<void> set_nonblocking(int fd);

// Connects to `to`, retrying refused connections until `deadline` (the
// server may start after the client). Returns a nonblocking socket.
Result<int> connect_retry(const SocketAddress& to, Clock::time_point deadline);
// Writes all of `data`. ETIMEDOUT, ECONNRESET (peer gone), errno.
Result<void> send_all(int fd, std::span<const std::byte> data,
                      Clock::time_point deadline);
// Reads one frame's payload (prefix checked against max_payload).
// ETIMEDOUT, ECONNRESET (EOF), EPROTO, errno.
Result<std::vector<std::byte>> recv_frame(int fd, std::size_t max_payload,
                                          Clock::time_point deadline);

}  // namespace rhinet::net

#endif  // RHINET_USERLIB_NET_HPP
