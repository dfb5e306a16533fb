// SPDX-License-Identifier: BSD-2-Clause
// What test_rhinet_run starts under rhinet-run: a rank that checks the
// environment rhinet-run gave it, does the bootstrap exchange (no NIC: it
// announces node 1, endpoint = its pid), checks the table, enters bootstrap
// barriers and prints one line:
//   probe rank R size S local L/LS group G host H table HASH
// Options make ranks misbehave for the failure tests:
//   --expect-local L0,L1,..   RHINET_LOCAL_RANK of each rank
//   --expect-host H0,H1,..    the host each rank runs on (fake rsh only)
//   --quoted STR              STR must be the literal kQuoted below
//   --expect-cwd DIR          every rank starts in DIR
//   --fail-rank R --code C    rank R exits C after the exchange; the others
//                             then sleep until stopped
//   --fail-before-join R      rank R exits C before the exchange
//   --exit-before-join R      rank R exits 0 before the exchange
//   --die-after-hello R       rank R sends its HELLO, then exits C before the
//                             table comes (the others wait a second first)
//   --sleep S                 every rank sleeps S seconds first
//   --barriers N              bootstrap barriers (default 2)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rhinet/bootstrap.hpp"
#include "wire.hpp"

namespace {

constexpr const char* kQuoted = "it's a \"b\" $HOME `x` \\ ;&|";

int fails = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "probe: FAIL: %s\n", what.c_str());
    fails++;
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> expect_local, expect_host;
  std::string expect_cwd;
  long fail_rank = -1, fail_before = -1, exit_before = -1, die_after = -1;
  long code = 1;
  long sleep_s = 0, barriers = 2;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--expect-local" && more)
      expect_local = split(argv[++i]);
    else if (a == "--expect-host" && more)
      expect_host = split(argv[++i]);
    else if (a == "--expect-cwd" && more)
      expect_cwd = argv[++i];
    else if (a == "--quoted" && more) {
      const std::string q = argv[++i];
      check(q == kQuoted, "--quoted arrived as [" + q + "]");
    } else if (a == "--fail-rank" && more)
      fail_rank = std::atol(argv[++i]);
    else if (a == "--fail-before-join" && more)
      fail_before = std::atol(argv[++i]);
    else if (a == "--exit-before-join" && more)
      exit_before = std::atol(argv[++i]);
    else if (a == "--die-after-hello" && more)
      die_after = std::atol(argv[++i]);
    else if (a == "--code" && more)
      code = std::atol(argv[++i]);
    else if (a == "--sleep" && more)
      sleep_s = std::atol(argv[++i]);
    else if (a == "--barriers" && more)
      barriers = std::atol(argv[++i]);
    else {
      std::fprintf(stderr, "probe: unknown argument %s\n", a.c_str());
      return 64;
    }
  }

  // The environment rhinet-run promises.
  const std::string rank_s = env("RHINET_RANK"), size_s = env("RHINET_SIZE"),
                    group_s = env("RHINET_GROUP"),
                    groups = env("RHINET_GROUPS");
  check(!rank_s.empty() && !size_s.empty() && !group_s.empty(),
        "RHINET_RANK, RHINET_SIZE, RHINET_GROUP set");
  const long rank = std::atol(rank_s.c_str()), size = std::atol(size_s.c_str());
  const long group = std::atol(group_s.c_str());
  check(size >= 1 && rank >= 0 && rank < size, "0 <= rank < size");
  check(group >= 1 && group <= 65535, "group in 1..65535: " + group_s);
  const std::string prefix = group_s + ":";
  check(groups.size() == prefix.size() + 16 &&
            groups.compare(0, prefix.size(), prefix) == 0 &&
            groups.find_first_not_of("0123456789abcdef", prefix.size()) ==
                std::string::npos,
        "RHINET_GROUPS=GROUP:16 hex digits, got [" + groups + "]");
  check(rhinet::SocketAddress::parse(env("RHINET_RENDEZVOUS")).has_value(),
        "RHINET_RENDEZVOUS is ip:port: [" + env("RHINET_RENDEZVOUS") + "]");
  const std::string local = env("RHINET_LOCAL_RANK");
  const std::string local_size = env("RHINET_LOCAL_SIZE");
  check(!local.empty() && !local_size.empty() &&
            std::atol(local.c_str()) < std::atol(local_size.c_str()),
        "RHINET_LOCAL_RANK below RHINET_LOCAL_SIZE");
  if (!expect_local.empty())
    check(static_cast<long>(expect_local.size()) == size &&
              expect_local[static_cast<std::size_t>(rank)] == local,
          "RHINET_LOCAL_RANK=" + local + " for rank " + rank_s);
  const std::string host = env("RHINET_FAKE_RSH_HOST");
  if (!expect_host.empty())
    check(static_cast<long>(expect_host.size()) == size &&
              expect_host[static_cast<std::size_t>(rank)] == host,
          "rank " + rank_s + " runs on [" + host + "]");

  if (!expect_cwd.empty()) {
    char here[4096];
    const bool got = getcwd(here, sizeof(here)) != nullptr;
    check(got && expect_cwd == here, "rank " + rank_s + " starts in [" +
                                         (got ? here : "?") + "], not [" +
                                         expect_cwd + "]");
  }

  if (sleep_s) sleep(static_cast<unsigned>(sleep_s));
  if (rank == fail_before) return static_cast<int>(code);
  if (rank == exit_before) return 0;

  auto opts = rhinet::BootstrapOptions::from_env();
  if (!opts) {
    std::fprintf(stderr, "probe: %s\n", opts.error().to_string().c_str());
    return 1;
  }
  check(opts->token.has_value(), "a token for our group");
  opts->timeout = std::chrono::seconds(30);
  const rhinet::Peer self{1, static_cast<std::uint32_t>(getpid())};
  if (rank == die_after) {
    // A HELLO by hand, then away before the table.
    const auto addr = rhinet::SocketAddress::parse(opts->rendezvous);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(addr->port);
    sa.sin_addr.s_addr = htonl(addr->ipv4);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
      return 1;
    rhinet::wire::Hello h;
    h.token = *opts->token;
    h.group = opts->group;
    h.size = opts->size;
    h.rank = opts->rank;
    h.self = self;
    h.host = "probe";
    const auto frame = rhinet::wire::encode_hello(h);
    if (send(fd, frame.data(), frame.size(), 0) !=
        static_cast<ssize_t>(frame.size()))
      return 1;
    usleep(50 * 1000);
    return static_cast<int>(code);
  }
  if (die_after >= 0) sleep(1);  // the exchange must not finish first
  auto boot = rhinet::Bootstrap::exchange(*opts, self);
  if (!boot) {
    std::fprintf(stderr, "probe: rank %ld: %s\n", rank,
                 boot.error().to_string().c_str());
    return 1;
  }
  const auto table = boot->table();
  check(static_cast<long>(table.size()) == size, "table has size entries");
  check(table[static_cast<std::size_t>(rank)] == self, "our entry is us");
  std::uint64_t hash = 1469598103934665603ull;
  for (const auto& p : table) {
    // Every rank runs on this machine: its "endpoint" is a live process.
    check(kill(static_cast<pid_t>(p.endpoint_id), 0) == 0 || errno == EPERM,
          "pid " + std::to_string(p.endpoint_id) + " of the table is alive");
    for (std::uint32_t v : {p.node_id, p.endpoint_id})
      hash = (hash ^ v) * 1099511628211ull;
  }
  if (rank == fail_rank) return static_cast<int>(code);
  if (fail_rank >= 0) {
    pause();  // until rhinet-run stops us
    return 0;
  }
  for (long b = 0; b < barriers; b++)
    if (auto r = boot->barrier(std::chrono::seconds(30)); !r) {
      std::fprintf(stderr, "probe: rank %ld: %s\n", rank,
                   r.error().to_string().c_str());
      return 1;
    }
  std::printf(
      "probe rank %ld size %ld local %s/%s group %ld host %s table %llx\n",
      rank, size, local.c_str(), local_size.c_str(), group,
      host.empty() ? "-" : host.c_str(), static_cast<unsigned long long>(hash));
  std::fflush(stdout);
  return fails ? 1 : 0;
}
