// SPDX-License-Identifier: BSD-2-Clause
// The client side of the bootstrap, its options and addresses.
#include "rhinet/bootstrap.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "net.hpp"
#include "wait.hpp"
#include "wire.hpp"

namespace rhinet {

namespace {

Error invalid(std::string what) { return Error(EINVAL, std::move(what)); }

// Decimal digits only (no sign, no blanks), at most `max`.
bool parse_u64(const std::string& s, std::uint64_t max, std::uint64_t& out,
               int base = 10) {
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / base)
      return false;
    v = v * base + d;
  }
  if (v > max) return false;
  out = v;
  return true;
}

std::string local_host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

Result<std::uint64_t> env_number(const char* name, std::uint64_t max,
                                 bool& present) {
  const char* v = env(name);
  present = v != nullptr;
  if (!v) return std::uint64_t{0};
  std::uint64_t out = 0;
  if (!parse_u64(v, max, out))
    return invalid(std::string(name) + "=\"" + v +
                   "\" is not a decimal number in 0.." + std::to_string(max));
  return out;
}

const char* const kStartHint = " (is the program started by rhinet-run?)";

}  // namespace

// ---- addresses ------------------------------------------------------------

std::string SocketAddress::to_string() const {
  in_addr a{htonl(ipv4)};
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(port);
}

Result<SocketAddress> SocketAddress::parse(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalid("address \"" + text + "\" is not IPV4:PORT");
  const std::string host = text.substr(0, colon);
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) != 1)
    return invalid("address \"" + text + "\": \"" + host +
                   "\" is not an IPv4 address (a.b.c.d)");
  std::uint64_t port = 0;
  if (!parse_u64(text.substr(colon + 1), 65535, port))
    return invalid("address \"" + text + "\": port \"" +
                   text.substr(colon + 1) + "\" is not a number in 0..65535");
  SocketAddress s;
  s.ipv4 = ntohl(a.s_addr);
  s.port = static_cast<std::uint16_t>(port);
  return s;
}

// ---- options --------------------------------------------------------------

Result<BootstrapOptions> BootstrapOptions::from_env() {
  BootstrapOptions o;
  bool present = false;
  auto size = env_number("RHINET_SIZE", max_ranks, present);
  if (!size) return std::move(size).error();
  if (!present)
    return invalid(std::string("RHINET_SIZE is not set") + kStartHint);
  if (*size < 1) return invalid("RHINET_SIZE=0: a group has at least one rank");
  o.size = static_cast<std::uint32_t>(*size);
  auto rank = env_number("RHINET_RANK", max_ranks, present);
  if (!rank) return std::move(rank).error();
  if (!present)
    return invalid(std::string("RHINET_RANK is not set") + kStartHint);
  if (*rank >= o.size)
    return invalid("RHINET_RANK=" + std::to_string(*rank) +
                   " is not below RHINET_SIZE=" + std::to_string(o.size));
  o.rank = static_cast<std::uint32_t>(*rank);
  auto group = env_number("RHINET_GROUP", 0xffff, present);
  if (!group) return std::move(group).error();
  if (!present)
    return invalid(std::string("RHINET_GROUP is not set") + kStartHint);
  o.group = static_cast<std::uint32_t>(*group);
  const char* rv = env("RHINET_RENDEZVOUS");
  if (!rv)
    return invalid(std::string("RHINET_RENDEZVOUS is not set") + kStartHint);
  if (auto a = SocketAddress::parse(rv); !a)
    return Error(EINVAL, "RHINET_RENDEZVOUS: " + a.error().message());
  o.rendezvous = rv;

  // RHINET_GROUPS="GROUP:TOKEN[,GROUP:TOKEN...]": the token of our group.
  if (const char* groups = env("RHINET_GROUPS")) {
    std::string list = groups;
    std::size_t pos = 0;
    while (pos <= list.size()) {
      const std::size_t end = std::min(list.find(',', pos), list.size());
      const std::string item = list.substr(pos, end - pos);
      const auto colon = item.find(':');
      std::uint64_t g = 0, t = 0;
      std::string tok =
          colon == std::string::npos ? "" : item.substr(colon + 1);
      if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X'))
        tok = tok.substr(2);
      if (colon == std::string::npos ||
          !parse_u64(item.substr(0, colon), 0xffff, g) || g == 0 ||
          tok.size() > 16 || !parse_u64(tok, UINT64_MAX, t, 16))
        return invalid("RHINET_GROUPS=\"" + list + "\": \"" + item +
                       "\" is not GROUP:TOKEN (GROUP 1..65535, TOKEN up to 16 "
                       "hexadecimal digits)");
      if (g == o.group) o.token = t;
      pos = end + 1;
    }
  }
  if (o.group != 0 && !o.token)
    return invalid("RHINET_GROUPS does not name group " +
                   std::to_string(o.group) + " (RHINET_GROUP)" + kStartHint);
  if (const char* d = env("RHINET_DEVICE")) o.device = d;
  auto t = env_number("RHINET_BOOTSTRAP_TIMEOUT", 24 * 3600, present);
  if (!t) return std::move(t).error();
  if (present) {
    if (*t == 0) return invalid("RHINET_BOOTSTRAP_TIMEOUT=0: give seconds > 0");
    o.timeout = std::chrono::seconds(*t);
  }
  auto spin = detail::spin_from_env(o.spin);
  if (!spin) return std::move(spin).error();
  o.spin = *spin;
  return o;
}

// ---- client ---------------------------------------------------------------

Bootstrap::Bootstrap(Bootstrap&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      rank_(o.rank_),
      size_(o.size_),
      group_(o.group_),
      barrier_seq_(o.barrier_seq_),
      server_(std::move(o.server_)),
      table_(std::move(o.table_)) {}

Bootstrap& Bootstrap::operator=(Bootstrap&& o) noexcept {
  if (this != &o) {
    net::close_fd(fd_);
    fd_ = std::exchange(o.fd_, -1);
    rank_ = o.rank_;
    size_ = o.size_;
    group_ = o.group_;
    barrier_seq_ = o.barrier_seq_;
    server_ = std::move(o.server_);
    table_ = std::move(o.table_);
  }
  return *this;
}

Bootstrap::~Bootstrap() { net::close_fd(fd_); }

namespace {

// What the server sent instead of the expected reply.
Error unexpected(const wire::Message& m, const std::string& server,
                 const std::string& waiting_for) {
  if (m.type == wire::Type::error)
    return Error(ECONNABORTED,
                 "the rendezvous server " + server + " says: " + m.text);
  return Error(EPROTO, "the rendezvous server " + server + " sent " +
                           wire::type_name(m.type) + " while we waited for " +
                           waiting_for);
}

Error with_context(Error e, const std::string& what) {
  return Error(e.code(), what + ": " + e.message());
}

}  // namespace

Result<Bootstrap> Bootstrap::exchange(const BootstrapOptions& o, Peer self) {
  if (o.size < 1 || o.size > max_ranks)
    return invalid("bootstrap: size " + std::to_string(o.size) +
                   " outside 1.." + std::to_string(max_ranks));
  if (o.rank >= o.size)
    return invalid("bootstrap: rank " + std::to_string(o.rank) +
                   " not below size " + std::to_string(o.size));
  if (o.group > 0xffff)
    return invalid("bootstrap: group " + std::to_string(o.group) +
                   " beyond 65535");
  auto addr = SocketAddress::parse(o.rendezvous);
  if (!addr) return with_context(std::move(addr).error(), "bootstrap");
  const std::string server = addr->to_string();
  const auto deadline = net::deadline_after(o.timeout);
  const std::string me = "bootstrap of rank " + std::to_string(o.rank);

  auto fd = net::connect_retry(*addr, deadline);
  if (!fd) {
    Error e = std::move(fd).error();
    if (e == std::errc::timed_out)
      return Error(ETIMEDOUT, me + ": no rendezvous server at " + server +
                                  " within " + net::format_duration(o.timeout));
    return with_context(std::move(e), me);
  }
  Bootstrap b;
  b.fd_ = *fd;
  b.rank_ = o.rank;
  b.size_ = o.size;
  b.group_ = o.group;
  b.server_ = server;

  wire::Hello h;
  h.token = o.token.value_or(0);
  h.group = o.group;
  h.size = o.size;
  h.rank = o.rank;
  h.self = self;
  h.host = o.host.empty() ? local_host_name() : o.host;
  if (auto r = net::send_all(b.fd_, wire::encode_hello(h), deadline); !r)
    return with_context(std::move(r).error(), me);

  auto payload = net::recv_frame(b.fd_, wire::kMaxServerPayload, deadline);
  if (!payload) {
    Error e = std::move(payload).error();
    if (e == std::errc::timed_out)
      return Error(ETIMEDOUT, me + ": no table from the rendezvous server " +
                                  server + " within " +
                                  net::format_duration(o.timeout) +
                                  " (not every rank has joined)");
    return with_context(std::move(e), me);
  }
  auto m = wire::decode(*payload);
  if (!m)
    return with_context(std::move(m).error(),
                        me + ": from the rendezvous server " + server);
  if (m->type != wire::Type::table)
    return with_context(unexpected(*m, server, "the table"), me);

  // Everything in the table must agree with what we are.
  auto bad = [&](const std::string& what) {
    return Error(EPROTO, me + ": the rendezvous server " + server +
                             " sent a bad table: " + what);
  };
  if (m->group != o.group)
    return bad("group " + std::to_string(m->group) + ", ours is " +
               std::to_string(o.group));
  if (m->table.size() != o.size)
    return bad(std::to_string(m->table.size()) + " ranks, the group has " +
               std::to_string(o.size));
  if (m->table[o.rank] != self)
    return bad("our entry says node " +
               std::to_string(m->table[o.rank].node_id) + " endpoint " +
               std::to_string(m->table[o.rank].endpoint_id) + ", we are node " +
               std::to_string(self.node_id) + " endpoint " +
               std::to_string(self.endpoint_id));
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> sorted;
  sorted.reserve(m->table.size());
  for (std::uint32_t r = 0; r < m->table.size(); r++)
    sorted.emplace_back(m->table[r].node_id, m->table[r].endpoint_id, r);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); i++) {
    const auto& [n0, e0, r0] = sorted[i - 1];
    const auto& [n1, e1, r1] = sorted[i];
    if (n0 == n1 && e0 == e1)
      return bad("ranks " + std::to_string(r0) + " and " + std::to_string(r1) +
                 " both are node " + std::to_string(n0) + " endpoint " +
                 std::to_string(e0));
  }
  b.table_ = std::move(m->table);
  return b;
}

Result<void> Bootstrap::barrier(std::chrono::milliseconds timeout) {
  const std::string me = "bootstrap barrier of rank " + std::to_string(rank_);
  if (fd_ < 0) return Error(ENOTCONN, me + ": no connection");
  const auto deadline = net::deadline_after(timeout);
  const std::uint64_t seq = barrier_seq_ + 1;
  if (auto r = net::send_all(fd_, wire::encode_barrier(seq), deadline); !r)
    return with_context(std::move(r).error(), me);
  auto payload = net::recv_frame(fd_, wire::kMaxServerPayload, deadline);
  if (!payload) {
    Error e = std::move(payload).error();
    if (e == std::errc::timed_out) {
      // The reply may still come: the connection is out of step now.
      net::close_fd(fd_);
      return Error(ETIMEDOUT, me + " " + std::to_string(seq) +
                                  ": not every rank entered it within " +
                                  net::format_duration(timeout));
    }
    return with_context(std::move(e), me);
  }
  auto m = wire::decode(*payload);
  if (!m) return with_context(std::move(m).error(), me);
  if (m->type != wire::Type::barrier)
    return with_context(unexpected(*m, server_, "the barrier"), me);
  if (m->sequence != seq)
    return Error(EPROTO, me + ": the server ended barrier " +
                             std::to_string(m->sequence) + ", we are in " +
                             std::to_string(seq));
  barrier_seq_ = seq;
  return ok();
}

}  // namespace rhinet
