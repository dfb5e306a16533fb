// SPDX-License-Identifier: BSD-2-Clause
// The bootstrap exchange over 127.0.0.1: BootstrapServer and Bootstrap in
// threads of one process, and both against hand-made peers that misbehave
// (garbage, duplicates, wrong token, bad tables, silence).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rhinet/bootstrap.hpp"
#include "wire.hpp"

namespace {

using namespace std::chrono_literals;
using rhinet::Bootstrap;
using rhinet::BootstrapOptions;
using rhinet::BootstrapServer;
using rhinet::Error;
using rhinet::Peer;
using rhinet::Result;

constexpr std::uint64_t kToken = 0x1234abcd5678ef00ull;

std::string text(const Error& e) { return e.to_string(); }

::testing::AssertionResult has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << s << "\" does not contain \"" << part << "\"";
}

BootstrapOptions options(std::uint32_t rank, std::uint32_t size,
                         const std::string& addr,
                         std::chrono::milliseconds timeout = 10s,
                         std::uint32_t group = 77,
                         std::optional<std::uint64_t> token = kToken) {
  BootstrapOptions o;
  o.rank = rank;
  o.size = size;
  o.group = group;
  o.rendezvous = addr;
  o.token = token;
  o.host = "host" + std::to_string(rank);
  o.timeout = timeout;
  return o;
}

Peer peer_of(std::uint32_t rank) { return Peer{rank / 2 + 1, 100 + rank}; }

// A rendezvous server running in a thread until finished or `timeout`.
class Served {
 public:
  Served(std::uint32_t size, std::chrono::milliseconds timeout = 20s,
         std::uint32_t group = 77) {
    auto s = BootstrapServer::listen("127.0.0.1:0", {size, group, kToken});
    if (!s) {
      ADD_FAILURE() << text(s.error());
      return;
    }
    address_ = s->address();
    thread_ = std::thread([this, srv = std::move(*s), timeout]() mutable {
      result_ = srv.run(timeout);
    });
  }
  ~Served() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& address() const { return address_; }
  Result<void> result() {
    thread_.join();
    return result_;
  }

 private:
  std::string address_;
  std::thread thread_;
  Result<void> result_;
};

// What a client thread saw.
struct Outcome {
  std::optional<Error> error;
  std::vector<Peer> table;
  int barriers_ok = 0;
};

std::vector<Outcome> run_clients(std::uint32_t size, const std::string& addr,
                                 int barriers,
                                 std::vector<BootstrapOptions> opts = {},
                                 std::vector<Peer> selves = {}) {
  if (opts.empty())
    for (std::uint32_t r = 0; r < size; r++)
      opts.push_back(options(r, size, addr));
  if (selves.empty())
    for (const auto& o : opts) selves.push_back(peer_of(o.rank));
  std::vector<Outcome> out(opts.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < opts.size(); i++)
    threads.emplace_back([&, i] {
      auto b = Bootstrap::exchange(opts[i], selves[i]);
      if (!b) {
        out[i].error = b.error();
        return;
      }
      out[i].table.assign(b->table().begin(), b->table().end());
      for (int k = 0; k < barriers; k++) {
        auto r = b->barrier(10s);
        if (!r) {
          out[i].error = r.error();
          return;
        }
        out[i].barriers_ok++;
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

class Exchange : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(Exchange, EveryRankGetsTheTableAndBarriersWork) {
  const std::uint32_t n = GetParam();
  Served server(n);
  auto out = run_clients(n, server.address(), 3);
  std::vector<Peer> expected;
  for (std::uint32_t r = 0; r < n; r++) expected.push_back(peer_of(r));
  for (std::uint32_t r = 0; r < n; r++) {
    ASSERT_FALSE(out[r].error) << "rank " << r << ": " << text(*out[r].error);
    EXPECT_EQ(out[r].table, expected) << "rank " << r;
    EXPECT_EQ(out[r].barriers_ok, 3) << "rank " << r;
  }
  auto r = server.result();  // every client has closed: finished
  EXPECT_TRUE(r) << text(r.error());
}

INSTANTIATE_TEST_SUITE_P(Sizes, Exchange, ::testing::Values(1u, 3u, 16u));

TEST(Bootstrap, DuplicateRankIsAClearError) {
  Served server(3, 10s);
  std::vector<BootstrapOptions> opts = {options(0, 3, server.address(), 3s),
                                        options(1, 3, server.address(), 3s),
                                        options(1, 3, server.address(), 3s)};
  std::vector<Peer> selves = {peer_of(0), peer_of(1), peer_of(2)};
  auto out = run_clients(3, server.address(), 0, opts, selves);
  auto r = server.result();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EEXIST);
  EXPECT_TRUE(has(r.error().message(), "rank 1 joined twice"));
  // Both rank-1 clients were connected when the second said hello: both
  // hear why. Rank 0 hears it too; or, if it came late, finds no server
  // (and times out) or a server closing (reset).
  for (int i : {1, 2}) {
    ASSERT_TRUE(out[i].error) << i;
    EXPECT_EQ(out[i].error->errno_value(), ECONNABORTED) << text(*out[i].error);
    EXPECT_TRUE(has(text(*out[i].error), "rank 1 joined twice"));
  }
  ASSERT_TRUE(out[0].error);
  const int e0 = out[0].error->errno_value();
  EXPECT_TRUE(e0 == ECONNABORTED || e0 == ETIMEDOUT || e0 == ECONNRESET)
      << text(*out[0].error);
}

TEST(Bootstrap, DuplicatePeerIsAClearError) {
  Served server(2, 10s);
  std::vector<BootstrapOptions> opts = {options(0, 2, server.address(), 3s),
                                        options(1, 2, server.address(), 3s)};
  std::vector<Peer> selves = {Peer{5, 9}, Peer{5, 9}};
  auto out = run_clients(2, server.address(), 0, opts, selves);
  auto r = server.result();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EEXIST);
  EXPECT_TRUE(has(r.error().message(), "both are node 5 endpoint 9"));
  for (const auto& o : out) {
    ASSERT_TRUE(o.error);
    EXPECT_TRUE(has(text(*o.error), "both are node 5 endpoint 9"));
  }
}

struct Mismatch {
  const char* name;
  BootstrapOptions (*make)(const std::string& addr);
  int server_errno;
  const char* says;
};

void PrintTo(const Mismatch& m, std::ostream* os) { *os << m.name; }

class Refused : public ::testing::TestWithParam<Mismatch> {};

TEST_P(Refused, ByTheServerWithTheReason) {
  const Mismatch& m = GetParam();
  Served server(2, 10s);
  const BootstrapOptions o = m.make(server.address());
  auto b = Bootstrap::exchange(o, peer_of(o.rank));
  auto r = server.result();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), m.server_errno) << text(r.error());
  EXPECT_TRUE(has(r.error().message(), m.says));
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), ECONNABORTED) << text(b.error());
  EXPECT_TRUE(has(b.error().message(), m.says));
}

INSTANTIATE_TEST_SUITE_P(
    Bootstrap, Refused,
    ::testing::Values(
        Mismatch{"WrongToken",
                 [](const std::string& a) {
                   return options(0, 2, a, 5s, 77, 0x1111);
                 },
                 EACCES, "wrong token for group 77"},
        Mismatch{"NoToken",
                 [](const std::string& a) {
                   return options(0, 2, a, 5s, 77, std::nullopt);
                 },
                 EACCES, "wrong token"},
        Mismatch{"WrongGroup",
                 [](const std::string& a) { return options(1, 2, a, 5s, 78); },
                 EINVAL, "says group 78; this rendezvous serves group 77"},
        Mismatch{"WrongSize",
                 [](const std::string& a) { return options(0, 3, a, 5s); },
                 EINVAL, "says the group has 3 ranks; it has 2"}),
    [](const auto& tp) { return std::string(tp.param.name); });

// ---- hand-made peers ----------------------------------------------------

int connect_to(const std::string& addr) {
  auto a = rhinet::SocketAddress::parse(addr);
  EXPECT_TRUE(a);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(a->port);
  sa.sin_addr.s_addr = htonl(a->ipv4);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  return fd;
}

void send_bytes(int fd, const void* p, std::size_t n) {
  ASSERT_EQ(::send(fd, p, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
}
void send_bytes(int fd, const std::vector<std::byte>& b) {
  send_bytes(fd, b.data(), b.size());
}

// Reads one frame (blocking, 5 s at most); nullopt on EOF or timeout.
std::optional<rhinet::wire::Message> read_frame(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::vector<std::byte> buf;
  std::byte tmp[4096];
  for (;;) {
    if (buf.size() >= 4) {
      std::uint32_t len = 0;
      for (int i = 0; i < 4; i++)
        len |= static_cast<std::uint32_t>(buf[i]) << (8 * i);
      if (buf.size() >= 4 + std::size_t{len}) {
        auto m = rhinet::wire::decode(
            std::span<const std::byte>(buf.data() + 4, len));
        if (!m) return std::nullopt;
        return *m;
      }
    }
    const ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return std::nullopt;
    buf.insert(buf.end(), tmp, tmp + n);
  }
}

// Steps `server` until `done` or 10 s.
template <class Pred>
Result<void> step_until(BootstrapServer& server, Pred done) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!done() && std::chrono::steady_clock::now() < end)
    if (auto r = server.step(20ms); !r) return r;
  return rhinet::ok();
}

TEST(Bootstrap, GarbageFailsTheExchangeForEveryone) {
  auto s = BootstrapServer::listen("127.0.0.1:0", {2, 77, kToken});
  ASSERT_TRUE(s) << text(s.error());
  std::optional<Result<Bootstrap>> good;
  std::thread t([&] {
    good.emplace(
        Bootstrap::exchange(options(0, 2, s->address(), 10s), peer_of(0)));
  });
  // Rank 0 has said hello; now something that is no rhinet rank talks.
  ASSERT_TRUE(step_until(*s, [&] { return s->missing().size() == 1; }));
  ASSERT_EQ(s->missing(), std::vector<std::uint32_t>{1});
  const int fd = connect_to(s->address());
  const char http[] = "GET / HTTP/1.0\r\n\r\n";
  send_bytes(fd, http, sizeof(http) - 1);
  Result<void> r = rhinet::ok();
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (r && std::chrono::steady_clock::now() < end) r = s->step(20ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EPROTO);
  EXPECT_TRUE(has(r.error().message(), "sent garbage"));
  EXPECT_TRUE(s->finished());
  auto reply = read_frame(fd);  // the offender is told too
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->type, rhinet::wire::Type::error);
  EXPECT_TRUE(has(reply->text, "sent garbage"));
  ::close(fd);
  t.join();
  ASSERT_TRUE(good && !*good);
  EXPECT_EQ(good->error().errno_value(), ECONNABORTED);
  EXPECT_TRUE(has(text(good->error()), "sent garbage"));
  EXPECT_TRUE(has(text(good->error()), "frame length"));
}

struct Bad {
  const char* name;
  std::vector<std::byte> (*frame)();
  const char* says;
};

void PrintTo(const Bad& b, std::ostream* os) { *os << b.name; }

class BadHello : public ::testing::TestWithParam<Bad> {};

TEST_P(BadHello, IsRefused) {
  auto s = BootstrapServer::listen("127.0.0.1:0", {2, 77, kToken});
  ASSERT_TRUE(s);
  const int fd = connect_to(s->address());
  send_bytes(fd, GetParam().frame());
  Result<void> r = rhinet::ok();
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (r && std::chrono::steady_clock::now() < end) r = s->step(20ms);
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error().message(), GetParam().says));
  ::close(fd);
}

std::vector<std::byte> hello_frame(std::uint32_t rank, std::uint32_t size) {
  rhinet::wire::Hello h;
  h.token = kToken;
  h.group = 77;
  h.size = size;
  h.rank = rank;
  h.self = peer_of(rank);
  h.host = "evil";
  return rhinet::wire::encode_hello(h);
}

INSTANTIATE_TEST_SUITE_P(
    Bootstrap, BadHello,
    ::testing::Values(Bad{"RankOutOfRange", [] { return hello_frame(2, 2); },
                          "HELLO rank 2 not below size 2"},
                      Bad{"BadMagic",
                          [] {
                            auto f = hello_frame(0, 2);
                            f[4] = std::byte{'X'};
                            return f;
                          },
                          "bad magic"},
                      Bad{"BadVersion",
                          [] {
                            auto f = hello_frame(0, 2);
                            f[8] = std::byte{9};
                            return f;
                          },
                          "protocol version 9"},
                      Bad{"TrailingBytes",
                          [] {
                            auto f = hello_frame(0, 2);
                            f.push_back(std::byte{0});
                            f[0] = static_cast<std::byte>(
                                static_cast<int>(f[0]) + 1);
                            return f;
                          },
                          "trailing bytes"},
                      Bad{"HugeFrame",
                          [] {
                            return std::vector<std::byte>{
                                std::byte{0}, std::byte{0}, std::byte{0},
                                std::byte{1}};
                          },
                          "frame length 16777216"},
                      Bad{"TableFromAClient",
                          [] {
                            const Peer one[1] = {Peer{1, 1}};
                            return rhinet::wire::encode_table(77, one);
                          },
                          "sent TABLE"},
                      Bad{"BarrierBeforeTable",
                          [] { return rhinet::wire::encode_barrier(1); },
                          "BARRIER before the table"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Bootstrap, HelloCutShortIsAnError) {
  auto s = BootstrapServer::listen("127.0.0.1:0", {2, 77, kToken});
  ASSERT_TRUE(s);
  const int fd = connect_to(s->address());
  auto f = hello_frame(0, 2);
  send_bytes(fd, f.data(), 10);
  ::close(fd);
  Result<void> r = rhinet::ok();
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (r && std::chrono::steady_clock::now() < end) r = s->step(20ms);
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error().message(), "closed in the middle of its hello"));
}

TEST(Bootstrap, SilentProbeIsIgnored) {
  Served server(2);
  ::close(connect_to(server.address()));  // a port scan
  auto out = run_clients(2, server.address(), 1);
  for (const auto& o : out) EXPECT_FALSE(o.error) << text(*o.error);
  EXPECT_TRUE(server.result());
}

TEST(Bootstrap, ClientTimesOutWithoutServer) {
  // A port nobody listens on.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len), 0);
  ::close(fd);
  const std::string addr = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  const auto t0 = std::chrono::steady_clock::now();
  auto b = Bootstrap::exchange(options(0, 2, addr, 300ms), peer_of(0));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), ETIMEDOUT);
  EXPECT_TRUE(has(b.error().message(), "no rendezvous server at " + addr));
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s);
}

TEST(Bootstrap, ServerTimesOutNamingMissingRanks) {
  Served server(3, 700ms);
  std::vector<BootstrapOptions> opts = {options(0, 3, server.address(), 10s),
                                        options(2, 3, server.address(), 10s)};
  auto out = run_clients(3, server.address(), 0, opts);
  auto r = server.result();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), ETIMEDOUT);
  EXPECT_TRUE(has(r.error().message(), "no hello from rank 1 after 700 ms"));
  for (const auto& o : out) {
    ASSERT_TRUE(o.error);
    EXPECT_EQ(o.error->errno_value(), ECONNABORTED);
    EXPECT_TRUE(has(text(*o.error), "no hello from rank 1"));
  }
}

TEST(Bootstrap, BarrierAfterARankLeftFails) {
  Served server(2);
  const std::string addr = server.address();
  std::optional<Result<void>> barrier;
  std::atomic<bool> rank1_gone = false;
  std::thread t0([&] {
    auto b = Bootstrap::exchange(options(0, 2, addr), peer_of(0));
    ASSERT_TRUE(b) << text(b.error());
    while (!rank1_gone) std::this_thread::sleep_for(1ms);
    barrier.emplace(b->barrier(5s));
  });
  {
    auto b = Bootstrap::exchange(options(1, 2, addr), peer_of(1));
    ASSERT_TRUE(b) << text(b.error());
  }  // closed
  rank1_gone = true;
  t0.join();
  ASSERT_TRUE(barrier);
  ASSERT_FALSE(*barrier);
  EXPECT_EQ(barrier->error().errno_value(), ECONNABORTED)
      << text(barrier->error());
  EXPECT_TRUE(has(barrier->error().message(), "left the group"));
  EXPECT_TRUE(server.result());
}

// ---- a fake server: the client checks what it receives -------------------

class FakeServer {
 public:
  explicit FakeServer(std::vector<std::byte> reply, bool answer = true) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len), 0);
    address_ = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
    thread_ = std::thread([this, reply = std::move(reply), answer] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      hello_ = read_frame(c);
      if (answer && !reply.empty())
        ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      if (answer) {
        ::close(c);
        return;
      }
      std::byte b[64];
      while (::recv(c, b, sizeof(b), 0) > 0) {
      }
      ::close(c);
    });
  }
  ~FakeServer() {
    thread_.join();
    ::close(fd_);
  }
  const std::string& address() const { return address_; }
  const std::optional<rhinet::wire::Message>& hello() {
    thread_.join();
    thread_ = std::thread([] {});
    return hello_;
  }

 private:
  int fd_ = -1;
  std::string address_;
  std::thread thread_;
  std::optional<rhinet::wire::Message> hello_;
};

TEST(Bootstrap, ClientSendsAWellFormedHello) {
  FakeServer fake({});
  auto o = options(1, 4, fake.address(), 2s);
  auto b = Bootstrap::exchange(o, Peer{3, 44});
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), ECONNRESET);  // closed without a table
  const auto& h = fake.hello();
  ASSERT_TRUE(h);
  ASSERT_EQ(h->type, rhinet::wire::Type::hello);
  EXPECT_EQ(h->hello.token, kToken);
  EXPECT_EQ(h->hello.group, 77u);
  EXPECT_EQ(h->hello.size, 4u);
  EXPECT_EQ(h->hello.rank, 1u);
  EXPECT_EQ(h->hello.self, (Peer{3, 44}));
  EXPECT_EQ(h->hello.host, "host1");
}

struct BadReply {
  const char* name;
  std::vector<std::byte> (*frame)();
  int err;
  const char* says;
};

void PrintTo(const BadReply& b, std::ostream* os) { *os << b.name; }

class BadTable : public ::testing::TestWithParam<BadReply> {};

// The client is rank 1 of 3, node 1 endpoint 101 (peer_of(1)), group 77.
std::vector<std::byte> table(std::vector<Peer> t, std::uint32_t group = 77) {
  return rhinet::wire::encode_table(group, t);
}

TEST_P(BadTable, IsRefusedByTheClient) {
  FakeServer fake(GetParam().frame());
  auto b = Bootstrap::exchange(options(1, 3, fake.address(), 3s), peer_of(1));
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), GetParam().err) << text(b.error());
  EXPECT_TRUE(has(text(b.error()), GetParam().says));
}

INSTANTIATE_TEST_SUITE_P(
    Bootstrap, BadTable,
    ::testing::Values(
        BadReply{"WrongSize",
                 [] {
                   return table({peer_of(0), peer_of(1)});
                 },
                 EPROTO, "2 ranks, the group has 3"},
        BadReply{"WrongGroup",
                 [] {
                   return table({peer_of(0), peer_of(1), peer_of(2)}, 78);
                 },
                 EPROTO, "group 78, ours is 77"},
        BadReply{"NotUs",
                 [] {
                   return table({peer_of(0), Peer{9, 9}, peer_of(2)});
                 },
                 EPROTO, "our entry says node 9 endpoint 9"},
        BadReply{"Duplicates",
                 [] {
                   return table({peer_of(2), peer_of(1), peer_of(2)});
                 },
                 EPROTO, "ranks 0 and 2 both are node 2 endpoint 102"},
        BadReply{"BadMagic",
                 [] {
                   auto f = table({peer_of(0), peer_of(1), peer_of(2)});
                   f[7] = std::byte{0};
                   return f;
                 },
                 EPROTO, "bad magic"},
        BadReply{"ShortEntries",
                 [] {
                   auto f = table({peer_of(0), peer_of(1), peer_of(2)});
                   f[16] = std::byte{4};  // says 4 ranks, carries 3
                   return f;
                 },
                 EPROTO, "TABLE of 4 ranks carries 24 bytes"},
        BadReply{"HugeLength",
                 [] {
                   return std::vector<std::byte>{
                       std::byte{0xff}, std::byte{0xff}, std::byte{0xff},
                       std::byte{0x7f}};
                 },
                 EPROTO, "frame length"},
        BadReply{"Refusal",
                 [] { return rhinet::wire::encode_error("go away"); },
                 ECONNABORTED, "says: go away"},
        BadReply{"BarrierFirst", [] { return rhinet::wire::encode_barrier(1); },
                 EPROTO, "sent BARRIER while we waited for the table"},
        BadReply{"CutShort",
                 [] {
                   auto f = table({peer_of(0), peer_of(1), peer_of(2)});
                   f.resize(f.size() - 3);
                   return f;
                 },
                 ECONNRESET, "in the middle of a message"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Bootstrap, ClientTimesOutWithoutTable) {
  FakeServer fake({}, /*answer=*/false);
  const auto t0 = std::chrono::steady_clock::now();
  auto b =
      Bootstrap::exchange(options(0, 2, fake.address(), 400ms), peer_of(0));
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().errno_value(), ETIMEDOUT);
  EXPECT_TRUE(has(b.error().message(), "no table from the rendezvous server"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}  // ~FakeServer: the client closed, the fake's recv ends

// ---- options ---------------------------------------------------------------

class Env : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
    setenv("RHINET_RANK", "2", 1);
    setenv("RHINET_SIZE", "4", 1);
    setenv("RHINET_GROUP", "513", 1);
    setenv("RHINET_GROUPS", "7:ff,513:00000000deadbeef", 1);
    setenv("RHINET_RENDEZVOUS", "10.0.0.1:4000", 1);
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
  }
  static std::string error_of() {
    auto o = BootstrapOptions::from_env();
    return o ? "" : o.error().message();
  }
  static constexpr const char* kVars[] = {"RHINET_RANK",
                                          "RHINET_SIZE",
                                          "RHINET_GROUP",
                                          "RHINET_GROUPS",
                                          "RHINET_RENDEZVOUS",
                                          "RHINET_DEVICE",
                                          "RHINET_BOOTSTRAP_TIMEOUT",
                                          "RHINET_SPIN_US"};
};

TEST_F(Env, Parses) {
  setenv("RHINET_DEVICE", "rhinet1", 1);
  setenv("RHINET_BOOTSTRAP_TIMEOUT", "5", 1);
  auto o = BootstrapOptions::from_env();
  ASSERT_TRUE(o) << text(o.error());
  EXPECT_EQ(o->rank, 2u);
  EXPECT_EQ(o->size, 4u);
  EXPECT_EQ(o->group, 513u);
  EXPECT_EQ(o->token, 0xdeadbeefull);
  EXPECT_EQ(o->rendezvous, "10.0.0.1:4000");
  EXPECT_EQ(o->device, "rhinet1");
  EXPECT_EQ(o->timeout, 5s);
  EXPECT_EQ(o->spin, rhinet::default_spin);
  setenv("RHINET_SPIN_US", "0", 1);
  EXPECT_EQ(BootstrapOptions::from_env()->spin, 0us);
  setenv("RHINET_SPIN_US", "never", 1);
  EXPECT_EQ(BootstrapOptions::from_env()->spin, rhinet::never_sleep);
}

TEST_F(Env, NamesWhatIsWrong) {
  unsetenv("RHINET_RANK");
  EXPECT_TRUE(has(error_of(), "RHINET_RANK is not set"));
  EXPECT_TRUE(has(error_of(), "rhinet-run"));
  setenv("RHINET_RANK", "4", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_RANK=4 is not below RHINET_SIZE=4"));
  setenv("RHINET_RANK", "-1", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_RANK=\"-1\" is not a decimal number"));
  setenv("RHINET_RANK", "1x", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_RANK=\"1x\""));
  setenv("RHINET_RANK", "1", 1);
  setenv("RHINET_SIZE", "0", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_SIZE=0"));
  setenv("RHINET_SIZE", "4", 1);
  setenv("RHINET_GROUP", "65536", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_GROUP=\"65536\""));
  setenv("RHINET_GROUP", "513", 1);
  setenv("RHINET_RENDEZVOUS", "somehost:4000", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_RENDEZVOUS"));
  EXPECT_TRUE(has(error_of(), "not an IPv4 address"));
  setenv("RHINET_RENDEZVOUS", "10.0.0.1:70000", 1);
  EXPECT_TRUE(has(error_of(), "port \"70000\""));
  setenv("RHINET_RENDEZVOUS", "10.0.0.1:4000", 1);
  setenv("RHINET_GROUPS", "513:xyz", 1);
  EXPECT_TRUE(has(error_of(), "\"513:xyz\" is not GROUP:TOKEN"));
  setenv("RHINET_GROUPS", "0:12", 1);
  EXPECT_TRUE(has(error_of(), "is not GROUP:TOKEN"));
  setenv("RHINET_GROUPS", "514:12", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_GROUPS does not name group 513"));
  setenv("RHINET_GROUP", "0", 1);  // the open group needs no token
  EXPECT_EQ(error_of(), "");
  setenv("RHINET_BOOTSTRAP_TIMEOUT", "0", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_BOOTSTRAP_TIMEOUT=0"));
  unsetenv("RHINET_BOOTSTRAP_TIMEOUT");
  setenv("RHINET_SPIN_US", "forever", 1);
  EXPECT_TRUE(has(error_of(), "RHINET_SPIN_US: 'forever' is not a number"));
}

TEST(SocketAddress, Parses) {
  auto a = rhinet::SocketAddress::parse("192.168.1.20:65535");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ipv4, 0xc0a80114u);
  EXPECT_EQ(a->port, 65535);
  EXPECT_EQ(a->to_string(), "192.168.1.20:65535");
  for (const char* bad : {"", ":80", "1.2.3.4", "1.2.3.4:", "1.2.3:80",
                          "1.2.3.4:+80", "1.2.3.4:80x", "[::1]:80"})
    EXPECT_FALSE(rhinet::SocketAddress::parse(bad)) << bad;
}

}  // namespace
