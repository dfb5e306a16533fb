// SPDX-License-Identifier: BSD-2-Clause
#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "wire.hpp"

namespace rhinet::net {

Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  if (timeout == forever ||
      timeout > std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::time_point::max() - now))
    return Clock::time_point::max();
  if (timeout.count() < 0) return now;
  return now + timeout;
}

int poll_ms(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1000000 ? 1000000 : static_cast<int>(left.count());
}

std::string format_duration(std::chrono::milliseconds d) {
  char buf[32];
  if (d.count() % 1000 == 0)
    snprintf(buf, sizeof(buf), "%lld s",
             static_cast<long long>(d.count() / 1000));
  else if (d.count() >= 1000)
    snprintf(buf, sizeof(buf), "%.1f s", d.count() / 1000.0);
  else
    snprintf(buf, sizeof(buf), "%lld ms", static_cast<long long>(d.count()));
  return buf;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Result<void> set_nonblocking(int fd) {
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return Error(errno, "fcntl(O_NONBLOCK)");
  return ok();
}

namespace {

bool passed(Clock::time_point deadline) { return poll_ms(deadline) == 0; }

// Waits for `events` on fd; ETIMEDOUT at the deadline.
Result<void> wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, poll_ms(deadline));
    if (n > 0) return ok();
    if (n == 0) return Error(ETIMEDOUT, "");
    if (errno != EINTR) return Error(errno, "poll");
  }
}

}  // namespace

Result<int> connect_retry(const SocketAddress& to, Clock::time_point deadline) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(to.port);
  sa.sin_addr.s_addr = htonl(to.ipv4);
  auto delay = std::chrono::milliseconds(10);
  int last = 0;
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Error(errno, "socket");
    if (auto r = set_nonblocking(fd); !r) {
      close_fd(fd);
      return std::move(r).error();
    }
    int err = 0;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
      err = errno;
      if (err == EINPROGRESS) {
        auto w = wait_fd(fd, POLLOUT, deadline);
        if (!w) {
          close_fd(fd);
          if (w.error() == std::errc::timed_out)
            return Error(ETIMEDOUT, "connecting to the rendezvous server " +
                                        to.to_string());
          return std::move(w).error();
        }
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
      }
    }
    if (!err) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    close_fd(fd);
    last = err;
    // The server may not listen yet, or be busy: try again.
    if (err != ECONNREFUSED && err != EAGAIN && err != ETIMEDOUT &&
        err != ECONNRESET && err != EINTR)
      return Error(err,
                   "connecting to the rendezvous server " + to.to_string());
    if (passed(deadline)) break;
    const int ms = poll_ms(deadline);
    auto nap = delay;
    if (ms >= 0 && nap.count() > ms) nap = std::chrono::milliseconds(ms);
    std::this_thread::sleep_for(nap);
    if (delay < std::chrono::milliseconds(500)) delay *= 2;
  }
  return Error(
      ETIMEDOUT,
      "connecting to the rendezvous server " + to.to_string() + " (last: " +
          std::error_code(last, std::generic_category()).message() + ")");
}

Result<void> send_all(int fd, std::span<const std::byte> data,
                      Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n =
        ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto w = wait_fd(fd, POLLOUT, deadline); !w) {
        if (w.error() == std::errc::timed_out)
          return Error(ETIMEDOUT, "sending to the rendezvous server");
        return w;
      }
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET)
      return Error(ECONNRESET, "the rendezvous server closed the connection");
    return Error(errno, "send");
  }
  return ok();
}

namespace {

// Reads exactly out.size() bytes.
Result<void> recv_exact(int fd, std::span<std::byte> out,
                        Clock::time_point deadline, bool& any) {
  std::size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::recv(fd, out.data() + off, out.size() - off, 0);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      any = true;
      continue;
    }
    if (n == 0)
      return Error(ECONNRESET,
                   "the rendezvous server closed the connection" +
                       std::string(any ? " in the middle of a message" : ""));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (auto w = wait_fd(fd, POLLIN, deadline); !w) return w;
      continue;
    }
    if (errno == ECONNRESET)
      return Error(ECONNRESET, "the rendezvous server reset the connection");
    return Error(errno, "recv");
  }
  return ok();
}

}  // namespace

Result<std::vector<std::byte>> recv_frame(int fd, std::size_t max_payload,
                                          Clock::time_point deadline) {
  std::array<std::byte, wire::kPrefix> prefix;
  bool any = false;
  if (auto r = recv_exact(fd, prefix, deadline, any); !r)
    return std::move(r).error();
  auto len = wire::decode_prefix(prefix, max_payload);
  if (!len) return std::move(len).error();
  std::vector<std::byte> payload(*len);
  if (auto r = recv_exact(fd, payload, deadline, any); !r)
    return std::move(r).error();
  return payload;
}

}  // namespace rhinet::net
