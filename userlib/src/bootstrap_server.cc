// SPDX-License-Identifier: BSD-2-Clause
// The rendezvous server: one poll() loop over nonblocking sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <utility>

#include "net.hpp"
#include "rhinet/bootstrap.hpp"
#include "wire.hpp"

namespace rhinet {

namespace {

struct Conn {
  int fd = -1;
  std::string from;  // "a.b.c.d:port"
  std::vector<std::byte> in, out;
  std::size_t out_done = 0;
  bool got_bytes = false;
  std::int64_t rank = -1;     // after its hello
  std::uint64_t barrier = 0;  // last barrier entered
  bool closing = false;       // close once `out` is sent
};

}  // namespace

struct BootstrapServer::State {
  Config cfg;
  int listen_fd = -1;
  SocketAddress bound;
  std::vector<Conn> conns;
  std::vector<Peer> table;
  std::vector<std::string> hosts;
  std::vector<bool> joined, left;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> owner;
  std::uint32_t joined_count = 0;
  bool exchanged = false;
  std::optional<Error> failure;
  std::uint64_t barrier_seq = 0;  // barrier in progress (0: none yet)
  std::uint32_t barrier_in = 0;   // ranks in it

  ~State() {
    for (Conn& c : conns) net::close_fd(c.fd);
    net::close_fd(listen_fd);
  }

  std::string who(const Conn& c) const {
    if (c.rank >= 0) {
      const auto r = static_cast<std::size_t>(c.rank);
      return "rank " + std::to_string(r) + " (host " + hosts[r] + ", " +
             c.from + ")";
    }
    return "the connection from " + c.from;
  }

  void queue(Conn& c, const std::vector<std::byte>& frame) {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }

  // Sends what is queued without blocking; false when the peer is gone.
  bool flush(Conn& c) {
    while (c.out_done < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_done,
                               c.out.size() - c.out_done, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      return false;
    }
    c.out.clear();
    c.out_done = 0;
    return true;
  }

  // The exchange failed: tell everyone why and stop. Connections still in
  // the listen queue are taken too, so that they hear the reason. Each gets
  // the ERROR (a second at most for all), our FIN, and its unread input
  // read away: closing over unread input would reset the connection, and
  // the peer could lose the ERROR.
  Error fail(int err, const std::string& why) {
    if (failure) return *failure;
    failure = Error(err, "rendezvous: " + why);
    // (`conns` does not grow here: callers may hold references into it.)
    std::vector<Conn> late;
    for (;;) {
      const int fd =
          ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      late.emplace_back();
      late.back().fd = fd;
    }
    net::close_fd(listen_fd);
    std::vector<Conn*> all;
    for (Conn& c : conns)
      if (c.fd >= 0) all.push_back(&c);
    for (Conn& c : late) all.push_back(&c);
    const auto frame = wire::encode_error(why);
    const auto deadline = net::deadline_after(std::chrono::milliseconds(1000));
    for (Conn* c : all) {
      queue(*c, frame);
      while (flush(*c) && !c->out.empty() && net::poll_ms(deadline) != 0) {
        pollfd p{c->fd, POLLOUT, 0};
        ::poll(&p, 1, std::min(net::poll_ms(deadline), 100));
      }
      ::shutdown(c->fd, SHUT_WR);
      std::byte buf[4096];
      while (::recv(c->fd, buf, sizeof(buf), 0) > 0) {
      }
      net::close_fd(c->fd);
    }
    return *failure;
  }

  Result<void> on_hello(Conn& c, const wire::Hello& h) {
    if (c.rank >= 0) return fail(EPROTO, who(c) + " sent a second HELLO");
    const std::string from = "the connection from " + c.from + " (host " +
                             h.host + ", rank " + std::to_string(h.rank) + ")";
    if (cfg.token && h.token != *cfg.token)
      return fail(EACCES, from + " presented a wrong token for group " +
                              std::to_string(cfg.group));
    if (h.group != cfg.group)
      return fail(EINVAL, from + " says group " + std::to_string(h.group) +
                              "; this rendezvous serves group " +
                              std::to_string(cfg.group));
    if (h.size != cfg.size)
      return fail(EINVAL, from + " says the group has " +
                              std::to_string(h.size) + " ranks; it has " +
                              std::to_string(cfg.size));
    if (joined[h.rank])
      return fail(EEXIST, "rank " + std::to_string(h.rank) +
                              " joined twice: from host " + hosts[h.rank] +
                              " and from host " + h.host + " (" + c.from + ")");
    const auto key = std::make_pair(h.self.node_id, h.self.endpoint_id);
    if (auto it = owner.find(key); it != owner.end())
      return fail(EEXIST, "ranks " + std::to_string(it->second) + " and " +
                              std::to_string(h.rank) + " both are node " +
                              std::to_string(key.first) + " endpoint " +
                              std::to_string(key.second));
    owner.emplace(key, h.rank);
    c.rank = h.rank;
    table[h.rank] = h.self;
    hosts[h.rank] = h.host;
    joined[h.rank] = true;
    if (++joined_count == cfg.size) {
      exchanged = true;
      const auto frame = wire::encode_table(cfg.group, table);
      for (Conn& o : conns)
        if (o.fd >= 0 && o.rank >= 0) queue(o, frame);
    }
    return ok();
  }

  Result<void> on_barrier(Conn& c, std::uint64_t seq) {
    if (c.rank < 0 || !exchanged)
      return fail(EPROTO, who(c) + " sent BARRIER before the table");
    if (seq != c.barrier + 1)
      return fail(EPROTO, who(c) + " entered barrier " + std::to_string(seq) +
                              " after barrier " + std::to_string(c.barrier));
    c.barrier = seq;
    for (std::uint32_t r = 0; r < cfg.size; r++)
      if (left[r]) {
        queue(c, wire::encode_error("rank " + std::to_string(r) +
                                    " has left the group; barrier " +
                                    std::to_string(seq) + " cannot complete"));
        c.closing = true;
        return ok();
      }
    if (seq != barrier_seq) {
      barrier_seq = seq;
      barrier_in = 0;
    }
    if (++barrier_in == cfg.size) {
      const auto frame = wire::encode_barrier(seq);
      for (Conn& o : conns)
        if (o.fd >= 0 && o.rank >= 0) queue(o, frame);
      barrier_in = 0;
    }
    return ok();
  }

  // Takes every complete frame of c.in.
  Result<void> consume(Conn& c) {
    const std::size_t max = wire::kMaxClientPayload;
    std::size_t off = 0;
    while (c.fd >= 0 && c.in.size() - off >= wire::kPrefix) {
      auto len = wire::decode_prefix(std::span<const std::byte, wire::kPrefix>(
                                         c.in.data() + off, wire::kPrefix),
                                     max);
      if (!len)
        return fail(EPROTO, who(c) + " sent garbage: " + len.error().message());
      if (c.in.size() - off - wire::kPrefix < *len) break;
      auto m = wire::decode(
          std::span<const std::byte>(c.in.data() + off + wire::kPrefix, *len));
      off += wire::kPrefix + *len;
      if (!m)
        return fail(EPROTO, who(c) + " sent garbage: " + m.error().message());
      Result<void> r;
      switch (m->type) {
        case wire::Type::hello:
          r = on_hello(c, m->hello);
          break;
        case wire::Type::barrier:
          r = on_barrier(c, m->sequence);
          break;
        default:
          r = fail(EPROTO, who(c) + " sent " + wire::type_name(m->type) +
                               " (ranks send HELLO and BARRIER only)");
      }
      if (!r) return r;
    }
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(off));
    return ok();
  }

  // A connection ended (EOF or error) before or after its work.
  Result<void> on_close(Conn& c) {
    const std::int64_t rank = c.rank;
    const bool partial = !c.in.empty();
    const std::string w = who(c);
    net::close_fd(c.fd);
    if (rank < 0) {
      if (!c.got_bytes) return ok();  // a probe, or a rank that died early
      return fail(EPROTO, w + " closed in the middle of its hello");
    }
    if (!exchanged)
      return fail(ECONNABORTED,
                  w + " closed its connection before every rank had joined");
    if (partial) return fail(EPROTO, w + " closed in the middle of a message");
    left[static_cast<std::size_t>(rank)] = true;
    // Ranks waiting in a barrier it never entered will not get out.
    for (Conn& o : conns)
      if (o.fd >= 0 && o.rank >= 0 && o.barrier > c.barrier &&
          o.barrier == barrier_seq && barrier_in) {
        queue(o, wire::encode_error(w + " left the group; barrier " +
                                    std::to_string(barrier_seq) +
                                    " cannot complete"));
        o.closing = true;
      }
    return ok();
  }
};

Result<BootstrapServer> BootstrapServer::listen(const std::string& address,
                                                const Config& cfg) {
  if (cfg.size < 1 || cfg.size > max_ranks)
    return Error(EINVAL, "rendezvous: size " + std::to_string(cfg.size) +
                             " outside 1.." + std::to_string(max_ranks));
  if (cfg.group > 0xffff)
    return Error(EINVAL, "rendezvous: group " + std::to_string(cfg.group) +
                             " beyond 65535");
  auto addr = SocketAddress::parse(address);
  if (!addr) return Error(EINVAL, "rendezvous: " + addr.error().message());
  auto s = std::make_unique<State>();
  s->cfg = cfg;
  s->table.assign(cfg.size, Peer{});
  s->hosts.assign(cfg.size, "");
  s->joined.assign(cfg.size, false);
  s->left.assign(cfg.size, false);
  s->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd < 0) return Error(errno, "rendezvous: socket");
  const int one = 1;
  setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(addr->port);
  sa.sin_addr.s_addr = htonl(addr->ipv4);
  if (::bind(s->listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0)
    return Error(errno, "rendezvous: bind " + addr->to_string());
  if (::listen(s->listen_fd, SOMAXCONN) < 0)
    return Error(errno, "rendezvous: listen");
  if (auto r = net::set_nonblocking(s->listen_fd); !r)
    return std::move(r).error();
  socklen_t len = sizeof(sa);
  if (getsockname(s->listen_fd, reinterpret_cast<sockaddr*>(&sa), &len) < 0)
    return Error(errno, "rendezvous: getsockname");
  s->bound.ipv4 = ntohl(sa.sin_addr.s_addr);
  s->bound.port = ntohs(sa.sin_port);
  return BootstrapServer(std::move(s));
}

BootstrapServer::BootstrapServer(std::unique_ptr<State> s) : s_(std::move(s)) {}
BootstrapServer::BootstrapServer(BootstrapServer&&) noexcept = default;
BootstrapServer& BootstrapServer::operator=(BootstrapServer&&) noexcept =
    default;
BootstrapServer::~BootstrapServer() = default;

std::uint16_t BootstrapServer::port() const { return s_->bound.port; }
std::string BootstrapServer::address() const { return s_->bound.to_string(); }
bool BootstrapServer::exchanged() const { return s_->exchanged; }

bool BootstrapServer::finished() const {
  if (s_->failure) return true;
  if (!s_->exchanged) return false;
  for (const Conn& c : s_->conns)
    if (c.fd >= 0 && c.rank >= 0) return false;
  return true;
}

std::vector<std::uint32_t> BootstrapServer::missing() const {
  std::vector<std::uint32_t> m;
  for (std::uint32_t r = 0; r < s_->cfg.size; r++)
    if (!s_->joined[r]) m.push_back(r);
  return m;
}

std::string BootstrapServer::host_of(std::uint32_t rank) const {
  return rank < s_->cfg.size ? s_->hosts[rank] : "";
}

std::span<const Peer> BootstrapServer::table() const { return s_->table; }

void BootstrapServer::abort(const std::string& reason) {
  s_->fail(ECONNABORTED, reason);
}

Result<void> BootstrapServer::step(std::chrono::milliseconds max_wait) {
  State& s = *s_;
  if (s.failure) return *s.failure;
  std::vector<pollfd> fds;
  fds.push_back({s.listen_fd, POLLIN, 0});
  for (const Conn& c : s.conns)
    fds.push_back(
        {c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
  const int ms = net::poll_ms(net::deadline_after(max_wait));
  const int n = ::poll(fds.data(), fds.size(), ms);
  if (n < 0) {
    if (errno == EINTR) return ok();
    return s.fail(errno, "poll failed");
  }

  const std::size_t existing = s.conns.size();
  for (std::size_t i = 0; i < existing; i++) {
    Conn& c = s.conns[i];
    const short re = fds[i + 1].revents;
    if (c.fd < 0 || !re) continue;
    if (re & POLLOUT) {
      if (!s.flush(c)) {
        if (auto r = s.on_close(c); !r) return r;
        continue;
      }
      if (c.closing && c.out.empty()) {
        if (auto r = s.on_close(c); !r) return r;
        continue;
      }
    }
    if (re & (POLLIN | POLLHUP | POLLERR)) {
      std::byte buf[4096];
      bool eof = false;
      for (;;) {
        const ssize_t got = ::recv(c.fd, buf, sizeof(buf), 0);
        if (got > 0) {
          c.got_bytes = true;
          c.in.insert(c.in.end(), buf, buf + got);
          if (c.in.size() > 2 * (wire::kPrefix + wire::kMaxClientPayload))
            break;  // consume() refuses or takes it first
          continue;
        }
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        eof = true;
        break;
      }
      if (auto r = s.consume(c); !r) return r;
      if (s.failure) return *s.failure;
      if (eof && c.fd >= 0)
        if (auto r = s.on_close(c); !r) return r;
    }
  }
  // Replies queued by this round.
  for (Conn& c : s.conns)
    if (c.fd >= 0 && !c.out.empty()) {
      if (!s.flush(c)) {
        if (auto r = s.on_close(c); !r) return r;
      } else if (c.closing && c.out.empty()) {
        if (auto r = s.on_close(c); !r) return r;
      }
    }
  std::erase_if(s.conns, [](const Conn& c) { return c.fd < 0; });

  if (fds[0].revents & POLLIN) {
    for (;;) {
      sockaddr_in sa{};
      socklen_t len = sizeof(sa);
      const int fd = ::accept4(s.listen_fd, reinterpret_cast<sockaddr*>(&sa),
                               &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      // More connections than ranks (and some slack for probes): refuse.
      if (s.conns.size() >= 2 * std::size_t{s.cfg.size} + 16) {
        ::close(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Conn c;
      c.fd = fd;
      c.from = SocketAddress{ntohl(sa.sin_addr.s_addr), ntohs(sa.sin_port)}
                   .to_string();
      s.conns.push_back(std::move(c));
    }
  }
  return ok();
}

Result<void> BootstrapServer::run(std::chrono::milliseconds timeout) {
  const auto deadline = net::deadline_after(timeout);
  while (!finished()) {
    const int left = net::poll_ms(deadline);
    if (left == 0) {
      std::string what;
      if (!s_->exchanged) {
        what = "no hello from rank";
        const auto m = missing();
        what += m.size() > 1 ? "s" : "";
        for (std::size_t i = 0; i < m.size() && i < 16; i++)
          what += (i ? ", " : " ") + std::to_string(m[i]);
        if (m.size() > 16) what += ", ...";
      } else {
        what = "ranks still connected";
      }
      const std::string why = what + " after " + net::format_duration(timeout);
      s_->fail(ETIMEDOUT, why);
      return Error(ETIMEDOUT, "rendezvous: " + why);
    }
    const auto slice =
        std::chrono::milliseconds(left < 0 || left > 100 ? 100 : left);
    if (auto r = step(slice); !r) return r;
  }
  if (s_->failure) return *s_->failure;
  return ok();
}

}  // namespace rhinet
