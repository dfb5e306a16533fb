// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run end to end on this machine: it starts the bootstrap probe
// (tests/bootstrap_probe.cc; no NIC) as N ranks, directly or through a
// fake remote shell, and stops them when one fails; its privileged step
// (a fake rhinet-group, tests/fake_group.sh, that logs what it is asked);
// and its command-line errors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Outcome {
  int code = -1;  // exit status, 128+N for a signal
  std::string out, err;
  double seconds = 0;
};

// Runs rhinet-run with `args` and the environment's `env` (NAME=VALUE;
// RHINET_GRANT_CMD is the fake rhinet-group unless `env` says otherwise);
// kills it after `limit_s`.
Outcome rhinet_run(const std::vector<std::string>& args, int limit_s = 60,
                   const std::vector<std::string>& env = {},
                   const char* cwd = nullptr) {
  std::vector<std::string> all = {RHINET_RUN_BIN};
  all.insert(all.end(), args.begin(), args.end());
  int out[2], err[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    setenv("RHINET_GRANT_CMD", "/bin/sh " FAKE_GROUP, 1);
    if (cwd && chdir(cwd) != 0) _exit(98);
    for (const auto& kv : env) {
      const auto eq = kv.find('=');
      setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(99);
  }
  close(out[1]);
  close(err[1]);
  Outcome r;
  pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  while (open_fds) {
    const auto left =
        std::chrono::seconds(limit_s) - (std::chrono::steady_clock::now() - t0);
    const int ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(left).count());
    if (ms <= 0 && !killed) {
      kill(pid, SIGKILL);
      killed = true;
      ADD_FAILURE() << "rhinet-run did not end within " << limit_s << " s";
    }
    if (poll(p, 2, ms > 0 ? ms : 100) < 0) break;
    for (int i = 0; i < 2; i++) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(p[i].fd);
        p[i].fd = -1;
        open_fds--;
      } else {
        (i ? r.err : r.out).append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return r;
}

::testing::AssertionResult has(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << s << "\" does not contain \"" << part << "\"";
}

struct ProbeLine {
  int rank, size;
  std::string local, host, table;
  long group;
};

std::vector<ProbeLine> probe_lines(const std::string& out) {
  std::vector<ProbeLine> lines;
  const std::regex re(
      R"(probe rank (\d+) size (\d+) local (\S+) group (\d+) host (\S+) table ([0-9a-f]+))");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end;
       ++it)
    lines.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), (*it)[3],
                     (*it)[5], (*it)[6], std::stol((*it)[4])});
  return lines;
}

// Every rank printed its line, with one table and one group between them.
void expect_consistent(const Outcome& r, int n,
                       const std::vector<std::string>& locals,
                       const std::vector<std::string>& hosts = {}) {
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = probe_lines(r.out);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(n)) << r.out << r.err;
  std::set<int> ranks;
  for (const auto& l : lines) {
    ranks.insert(l.rank);
    EXPECT_EQ(l.size, n);
    EXPECT_EQ(l.table, lines[0].table) << "rank " << l.rank;
    EXPECT_EQ(l.group, lines[0].group) << "rank " << l.rank;
    EXPECT_EQ(l.local, locals[static_cast<std::size_t>(l.rank)])
        << "rank " << l.rank;
    if (!hosts.empty()) {
      EXPECT_EQ(l.host, hosts[static_cast<std::size_t>(l.rank)])
          << "rank " << l.rank;
    }
  }
  EXPECT_EQ(ranks.size(), static_cast<std::size_t>(n));
}

TEST(RhinetRun, FourRanksOnTwoLocalHostEntries) {
  // Both entries are this machine: local ranks count per host name.
  const Outcome r = rhinet_run({"-n", "4", "--per-node", "2", "--hosts",
                                "localhost,localhost", PROBE_BIN,
                                "--expect-local", "0,1,2,3"});
  expect_consistent(r, 4, {"0/4", "1/4", "2/4", "3/4"});
}

TEST(RhinetRun, DefaultsToOneLocalHost) {
  const Outcome r =
      rhinet_run({"-n", "3", PROBE_BIN, "--expect-local", "0,1,2"});
  expect_consistent(r, 3, {"0/3", "1/3", "2/3"});
}

// -x reaches ranks started here too, not only those started over rsh: a
// spin budget the library refuses fails every rank's join, naming it.
// (Before the fix local ranks never saw it, and this run succeeded.)
TEST(RhinetRun, ExportsReachLocalRanks) {
  const Outcome r =
      rhinet_run({"-n", "2", "-x", "RHINET_SPIN_US=forever", PROBE_BIN});
  EXPECT_NE(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("RHINET_SPIN_US: 'forever' is not a number"),
            std::string::npos)
      << r.err;
}

// Two documentation addresses (no DNS needed) that this machine does not
// have, so rhinet-run takes them for other hosts.
std::vector<std::string> foreign_hosts() {
  std::set<std::string> mine;
  ifaddrs* ifa = nullptr;
  if (getifaddrs(&ifa) == 0) {
    for (ifaddrs* i = ifa; i; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
        char buf[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET,
                  &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf,
                  sizeof(buf));
        mine.insert(buf);
      }
    freeifaddrs(ifa);
  }
  std::vector<std::string> out;
  for (const char* a : {"198.51.100.7", "203.0.113.7", "198.51.100.8",
                        "203.0.113.8", "192.0.2.207", "192.0.2.208"})
    if (!mine.count(a) && out.size() < 2) out.push_back(a);
  return out;
}

TEST(RhinetRun, RemoteHostsGoThroughTheRemoteShell) {
  // The fake rsh runs the command here through a shell, as sshd would on
  // the host: every word must survive the quoting.
  const auto h = foreign_hosts();
  ASSERT_EQ(h.size(), 2u);
  const std::string quoted = "it's a \"b\" $HOME `x` \\ ;&|";
  const Outcome r = rhinet_run(
      {"-n", "4", "-N", "2", "--hosts", h[0] + "," + h[1], "--rsh",
       std::string("/bin/sh ") + FAKE_RSH, "--advertise", "127.0.0.1", "-v",
       PROBE_BIN, "--expect-local", "0,1,0,1", "--expect-host",
       h[0] + "," + h[0] + "," + h[1] + "," + h[1], "--quoted", quoted});
  expect_consistent(r, 4, {"0/2", "1/2", "0/2", "1/2"},
                    {h[0], h[0], h[1], h[1]});
  EXPECT_TRUE(has(r.err, "rank 0 on " + h[0] + ": /bin/sh"));
  EXPECT_TRUE(has(r.err, "rank 3 on " + h[1] + ": /bin/sh"));
  EXPECT_TRUE(has(r.err, " env "));
  EXPECT_TRUE(has(r.err, "rendezvous 127.0.0.1:"));
}

TEST(RhinetRun, RanksStartInTheLaunchersDirectory) {
  // As mpirun's: "./prog" and relative paths work on every host. The fake
  // rsh starts in /, as ssh starts in the home directory.
  const auto h = foreign_hosts();
  ASSERT_EQ(h.size(), 2u);
  char tmpl[] = "/tmp/rhinet-run-wdir.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const Outcome r = rhinet_run(
      {"-n", "3", "-N", "1", "--hosts", "localhost," + h[0] + "," + h[1],
       "--rsh", std::string("/bin/sh ") + FAKE_RSH, "--advertise", "127.0.0.1",
       PROBE_BIN, "--expect-cwd", dir},
      60, {}, dir.c_str());
  expect_consistent(r, 3, {"0/1", "0/1", "0/1"});
  // --wdir names another directory, for local and remote ranks alike.
  const Outcome w = rhinet_run(
      {"-n", "2", "-N", "1", "--hosts", "localhost," + h[0], "--rsh",
       std::string("/bin/sh ") + FAKE_RSH, "--advertise", "127.0.0.1", "--wdir",
       "/tmp", PROBE_BIN, "--expect-cwd", "/tmp"},
      60, {}, dir.c_str());
  expect_consistent(w, 2, {"0/1", "0/1"});
  rmdir(dir.c_str());
  // A --wdir that does not exist fails the ranks, with the reason.
  const Outcome bad =
      rhinet_run({"-n", "1", "--wdir", "/nonexistent/rhinet-run", PROBE_BIN});
  EXPECT_NE(bad.code, 0) << bad.err;
  EXPECT_TRUE(has(bad.err, "cannot change to --wdir /nonexistent/rhinet-run"))
      << bad.err;
  const Outcome rel = rhinet_run({"-n", "1", "--wdir", "tmp", PROBE_BIN});
  EXPECT_EQ(rel.code, 2) << rel.err;
  EXPECT_TRUE(has(rel.err, "--wdir wants an absolute directory")) << rel.err;
}

TEST(RhinetRun, OversubscribeWrapsAroundTheHosts) {
  const Outcome r = rhinet_run({"-n", "3", "-N", "1", "--oversubscribe",
                                PROBE_BIN, "--expect-local", "0,1,2"});
  expect_consistent(r, 3, {"0/3", "1/3", "2/3"});
}

TEST(RhinetRun, AFailingRankStopsTheOthers) {
  const Outcome r = rhinet_run({"-n", "4", "--per-node", "2", "--hosts",
                                "localhost,localhost", PROBE_BIN, "--fail-rank",
                                "2", "--code", "3"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(has(r.err, "rank 2 (host localhost, pid "));
  EXPECT_TRUE(has(r.err, "exited with status 3; stopping the other ranks"));
  EXPECT_LT(r.seconds, 20);  // the others were stopped, not waited for
}

TEST(RhinetRun, ARankFailingBeforeJoining) {
  const Outcome r = rhinet_run(
      {"-n", "3", PROBE_BIN, "--fail-before-join", "1", "--code", "5"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_TRUE(has(r.err, "rank 1 (host localhost"));
  EXPECT_TRUE(has(r.err, "exited with status 5"));
}

TEST(RhinetRun, ARankDyingAfterItsHello) {
  // The exchange fails (its connection closed); the rank's own status is
  // what rhinet-run reports and exits with.
  const Outcome r = rhinet_run(
      {"-n", "3", PROBE_BIN, "--die-after-hello", "1", "--code", "6"});
  EXPECT_EQ(r.code, 6) << r.err;
  EXPECT_TRUE(has(r.err, "closed its connection before every rank had joined"));
  EXPECT_TRUE(has(r.err, "rank 1 (host localhost"));
  EXPECT_TRUE(has(r.err, "exited with status 6; stopping the other ranks"));
}

TEST(RhinetRun, ARankEndingWithoutJoining) {
  const Outcome r =
      rhinet_run({"-n", "3", PROBE_BIN, "--exit-before-join", "0"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "rank 0 (host localhost"));
  EXPECT_TRUE(has(r.err, "ended without joining the group"));
}

TEST(RhinetRun, ProgramsThatNeverJoinAreFine) {
  const Outcome r = rhinet_run(
      {"-n", "2", "/bin/sh", "-c", "echo \"r=$RHINET_RANK g=$RHINET_GROUP\""});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "r=0 g="));
  EXPECT_TRUE(has(r.out, "r=1 g="));
}

TEST(RhinetRun, MissingProgram) {
  const Outcome r = rhinet_run({"-n", "2", "/nonexistent/program"});
  EXPECT_EQ(r.code, 127) << r.err;
  EXPECT_TRUE(has(r.err, "cannot run /nonexistent/program"));
}

TEST(RhinetRun, Timeout) {
  const Outcome r =
      rhinet_run({"-n", "2", "--timeout", "1", PROBE_BIN, "--sleep", "30"});
  EXPECT_EQ(r.code, 124) << r.err;
  EXPECT_TRUE(has(r.err,
                  "timeout after 1 s; stopping ranks 0 (localhost), 1 "
                  "(localhost)"));
  EXPECT_LT(r.seconds, 15);
}

// The fake rhinet-group's log of one test (tests run in parallel
// processes), read after the run.
struct GrantLog {
  std::string path;
  explicit GrantLog(const std::string& name)
      : path(::testing::TempDir() + "rhinet_run_grants_" + name + "." +
             std::to_string(getpid())) {
    std::remove(path.c_str());
  }
  ~GrantLog() { std::remove(path.c_str()); }
  std::string env() const { return "RHINET_FAKE_GROUP_LOG=" + path; }
  std::vector<std::string> lines() const {
    std::ifstream in(path);
    std::vector<std::string> v;
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
};

// "HOST -q grant G --uid U --token-file - token=T": G and T.
struct Grant {
  std::string host;
  long group = -1;
  std::string rest, token;
};

std::optional<Grant> grant_of(const std::string& line) {
  static const std::regex re(
      R"((\S+) -q grant (\d+) --uid (\d+) --token-file -(.*) token=([0-9a-f]{16}))");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return std::nullopt;
  EXPECT_EQ(std::stol(m[3]), static_cast<long>(getuid())) << line;
  return Grant{m[1], std::stol(m[2]), m[4], m[5]};
}

TEST(RhinetRun, GrantsTheGroupHereOnceAndRevokesIt) {
  GrantLog log("here");
  const Outcome r = rhinet_run(
      {"-n", "3", PROBE_BIN, "--expect-local", "0,1,2"}, 60, {log.env()});
  expect_consistent(r, 3, {"0/3", "1/3", "2/3"});
  const auto l = log.lines();
  ASSERT_EQ(l.size(), 2u) << r.err;
  const auto g = grant_of(l[0]);
  ASSERT_TRUE(g) << l[0];
  EXPECT_EQ(g->host, "here");
  EXPECT_EQ(g->rest, "");  // no lifetime without --timeout
  EXPECT_EQ(g->group, probe_lines(r.out)[0].group);
  EXPECT_EQ(l[1], "here -q revoke " + std::to_string(g->group));
}

TEST(RhinetRun, GrantsOnEveryRemoteHostBeforeTheRanks) {
  const auto h = foreign_hosts();
  ASSERT_EQ(h.size(), 2u);
  GrantLog log("remote");
  const Outcome r =
      rhinet_run({"-n", "4", "-N", "2", "--hosts", h[0] + "," + h[1], "--rsh",
                  std::string("/bin/sh ") + FAKE_RSH, "--advertise",
                  "127.0.0.1", "--timeout", "60", "-v", PROBE_BIN},
                 60, {log.env()});
  expect_consistent(r, 4, {"0/2", "1/2", "0/2", "1/2"});
  const auto l = log.lines();
  ASSERT_EQ(l.size(), 4u) << r.err;
  const auto a = grant_of(l[0]), b = grant_of(l[1]);
  ASSERT_TRUE(a && b) << l[0] << "\n" << l[1];
  EXPECT_EQ(a->host, h[0]);
  EXPECT_EQ(b->host, h[1]);
  EXPECT_EQ(a->group, b->group);
  EXPECT_EQ(a->token, b->token);
  EXPECT_EQ(a->group, probe_lines(r.out)[0].group);
  EXPECT_EQ(a->rest, " --lifetime 120");  // --timeout + 60 s
  const std::string revoke = " -q revoke " + std::to_string(a->group);
  EXPECT_EQ(l[2], h[0] + revoke);
  EXPECT_EQ(l[3], h[1] + revoke);
  // Granted before any rank started; the token on no grant's command line.
  EXPECT_LT(r.err.find("granted group"), r.err.find("rank 0 on"));
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) {
    if (line.rfind("rhinet-run: on ", 0) == 0) {
      EXPECT_EQ(line.find(a->token), std::string::npos) << line;
    }
  }
}

TEST(RhinetRun, ATakenGroupIdIsGivenUpAndAnotherTried) {
  const auto h = foreign_hosts();
  ASSERT_EQ(h.size(), 2u);
  GrantLog log("taken");
  const std::string marker = log.path + ".taken";
  const Outcome r = rhinet_run({"-n", "2", "--hosts", h[0] + "," + h[1],
                                "--rsh", std::string("/bin/sh ") + FAKE_RSH,
                                "--advertise", "127.0.0.1", PROBE_BIN},
                               60,
                               {log.env(), "RHINET_FAKE_GROUP_TAKEN=" + marker,
                                "RHINET_FAKE_GROUP_ONLY=" + h[1]});
  std::remove(marker.c_str());
  expect_consistent(r, 2, {"0/1", "0/1"});
  const auto l = log.lines();
  ASSERT_EQ(l.size(), 7u) << r.err;
  const auto first = grant_of(l[0]), taken = grant_of(l[1]);
  ASSERT_TRUE(first && taken);
  EXPECT_EQ(taken->host, h[1]);
  // Given up where it was granted, then another group everywhere.
  EXPECT_EQ(l[2], h[0] + " -q revoke " + std::to_string(first->group));
  const auto a = grant_of(l[3]), b = grant_of(l[4]);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->group, b->group);
  EXPECT_EQ(a->group, probe_lines(r.out)[0].group);
  EXPECT_EQ(l[5], h[0] + " -q revoke " + std::to_string(a->group));
  EXPECT_EQ(l[6], h[1] + " -q revoke " + std::to_string(a->group));
}

TEST(RhinetRun, AFailedGrantStopsBeforeAnyRank) {
  const auto h = foreign_hosts();
  ASSERT_EQ(h.size(), 2u);
  GrantLog log("failed");
  const Outcome r = rhinet_run({"-n", "2", "--hosts", h[0] + "," + h[1],
                                "--rsh", std::string("/bin/sh ") + FAKE_RSH,
                                "--advertise", "127.0.0.1", PROBE_BIN},
                               60,
                               {log.env(), "RHINET_FAKE_GROUP_FAIL=1",
                                "RHINET_FAKE_GROUP_ONLY=" + h[1]});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "the privileged step failed on host " + h[1]));
  EXPECT_TRUE(has(r.err, "--grant-cmd 'sudo -n rhinet-group'"));
  EXPECT_TRUE(has(r.err, "--group GROUP --token-file FILE"));
  EXPECT_TRUE(probe_lines(r.out).empty()) << r.out;
  const auto l = log.lines();
  ASSERT_EQ(l.size(), 3u) << r.err;  // granted on h0, failed on h1, revoked
  const auto a = grant_of(l[0]);
  ASSERT_TRUE(a);
  EXPECT_EQ(l[2], h[0] + " -q revoke " + std::to_string(a->group));
}

TEST(RhinetRun, RevokesAfterAFailingRank) {
  GrantLog log("failing");
  const Outcome r =
      rhinet_run({"-n", "2", PROBE_BIN, "--fail-rank", "1", "--code", "3"}, 60,
                 {log.env()});
  EXPECT_EQ(r.code, 3) << r.err;
  const auto l = log.lines();
  ASSERT_EQ(l.size(), 2u) << r.err;
  const auto g = grant_of(l[0]);
  ASSERT_TRUE(g);
  EXPECT_EQ(l[1], "here -q revoke " + std::to_string(g->group));
}

TEST(RhinetRun, AGroupTheAdministratorGrantedNeedsNoPrivilegedStep) {
  GrantLog log("granted");
  const std::string token = log.path + ".token";
  std::ofstream(token) << "  00000000DEADBEEF \n";
  const Outcome r =
      rhinet_run({"-n", "2", "--group", "77", "--token-file", token, "/bin/sh",
                  "-c", "echo \"r=$RHINET_RANK $RHINET_GROUP $RHINET_GROUPS\""},
                 60, {log.env()});
  std::remove(token.c_str());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "r=0 77 77:00000000deadbeef"));
  EXPECT_TRUE(has(r.out, "r=1 77 77:00000000deadbeef"));
  EXPECT_TRUE(log.lines().empty());
}

TEST(RhinetRun, HelpAndVersion) {
  const Outcome h = rhinet_run({"--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_TRUE(has(h.out, "Usage: rhinet-run -n N"));
  const Outcome v = rhinet_run({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(has(v.out, "rhinet-run "));
}

struct BadLine {
  const char* name;
  std::vector<std::string> args;
  const char* says;
};

void PrintTo(const BadLine& b, std::ostream* os) { *os << b.name; }

class CommandLine : public ::testing::TestWithParam<BadLine> {};

// "@bad-hostfile@" and "@empty-hostfile@" in the arguments become files of
// this process (tests run in parallel processes).
std::string hostfile(const std::string& kind) {
  const std::string p = ::testing::TempDir() + "rhinet_run_" + kind + "." +
                        std::to_string(getpid());
  std::ofstream f(p);
  if (kind == "bad") f << "# cluster\nnode1\nnode2 slots=4\n";
  if (kind == "empty") f << "# nothing\n\n";
  return p;
}

TEST_P(CommandLine, IsRefusedWithAClearMessage) {
  std::vector<std::string> args = GetParam().args;
  std::vector<std::string> files;
  for (auto& a : args)
    if (a == "@bad-hostfile@" || a == "@empty-hostfile@") {
      a = hostfile(a == "@bad-hostfile@" ? "bad" : "empty");
      files.push_back(a);
    }
  const Outcome r = rhinet_run(args);
  for (const auto& f : files) std::remove(f.c_str());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("rhinet-run: ", 0), 0u) << r.err;
  EXPECT_TRUE(has(r.err, GetParam().says));
  EXPECT_TRUE(has(r.err, "Try 'rhinet-run --help'"));
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    RhinetRun, CommandLine,
    ::testing::Values(
        BadLine{"NoArguments", {}, "say how many ranks with -n N"},
        BadLine{"NoProgram", {"-n", "2"}, "no PROGRAM to run"},
        BadLine{"ZeroRanks",
                {"-n", "0", "true"},
                "-n wants a whole number in 1..65536, not '0'"},
        BadLine{
            "NegativeRanks", {"-n", "-3", "true"}, "-n wants a whole number"},
        BadLine{"WordRanks",
                {"-n", "four", "true"},
                "-n wants a whole number in 1..65536, not 'four'"},
        BadLine{"TooManyRanks", {"-n", "70000", "true"}, "-n wants"},
        BadLine{"ZeroPerNode",
                {"-n", "2", "--per-node", "0", "true"},
                "--per-node wants a whole number"},
        BadLine{"DoesNotFit",
                {"-n", "3", "--per-node", "1", "true"},
                "3 ranks do not fit on 1 host x 1 per node; add hosts, raise "
                "--per-node or pass --oversubscribe"},
        BadLine{"DoesNotFitOnHosts",
                {"-n", "5", "-N", "2", "--hosts", "a,b", "true"},
                "5 ranks do not fit on 2 hosts x 2 per node"},
        BadLine{"HostsAndHostfile",
                {"-n", "2", "--hosts", "a", "--hostfile", "/dev/null", "true"},
                "give --hosts or --hostfile, not both"},
        BadLine{"EmptyHost",
                {"-n", "2", "--hosts", "a,,b", "true"},
                "--hosts: empty host name"},
        BadLine{"DashHost",
                {"-n", "2", "--hosts", "-oProxyCommand=x", "true"},
                "host name '-oProxyCommand=x' starts with '-'"},
        BadLine{"MissingHostfile",
                {"-n", "2", "--hostfile", "/nonexistent/hosts", "true"},
                "--hostfile /nonexistent/hosts: No such file or directory"},
        BadLine{"BadHostfileLine",
                {"-n", "2", "--hostfile", "@bad-hostfile@", "true"},
                "line 3: one host name per line"},
        BadLine{"EmptyHostfile",
                {"-n", "2", "--hostfile", "@empty-hostfile@", "true"},
                "names no host"},
        BadLine{"ZeroTimeout",
                {"-n", "2", "--timeout", "0", "true"},
                "--timeout wants a whole number"},
        BadLine{"BadAdvertise",
                {"-n", "2", "--advertise", "host", "true"},
                "--advertise wants an IPv4 address, not 'host'"},
        BadLine{"IfaceAndAdvertise",
                {"-n", "2", "--iface", "lo", "--advertise", "1.2.3.4", "true"},
                "give --iface or --advertise, not both"},
        BadLine{"BadPort",
                {"-n", "2", "--port", "65536", "true"},
                "--port wants a whole number in 0..65535"},
        BadLine{"EmptyRsh",
                {"-n", "2", "--rsh", " ", "true"},
                "--rsh wants a command"},
        BadLine{"BadExport",
                {"-n", "2", "-x", "1A=b", "true"},
                "-x wants NAME or NAME=VALUE, not '1A=b'"},
        BadLine{"UnsetExport",
                {"-n", "2", "-x", "RHINET_SURELY_UNSET_VAR", "true"},
                "-x RHINET_SURELY_UNSET_VAR: not set here"},
        BadLine{"UnknownOption",
                {"-n", "2", "--frobnicate", "true"},
                "unknown option '--frobnicate'"},
        BadLine{"MissingValue", {"-n"}, "option '-n' wants a value"},
        BadLine{"GroupWithoutToken",
                {"-n", "2", "--group", "5", "true"},
                "give --group and --token-file together"},
        BadLine{"TokenWithoutGroup",
                {"-n", "2", "--token-file", "/dev/null", "true"},
                "give --group and --token-file together"},
        BadLine{
            "ZeroGroup",
            {"-n", "2", "--group", "0", "--token-file", "/dev/null", "true"},
            "--group wants a whole number in 1..65535"},
        BadLine{"MissingTokenFile",
                {"-n", "2", "--group", "5", "--token-file",
                 "/nonexistent/token", "true"},
                "--token-file /nonexistent/token: No such file or directory"},
        BadLine{
            "EmptyTokenFile",
            {"-n", "2", "--group", "5", "--token-file", "/dev/null", "true"},
            "the first line is not 1 to 16 hexadecimal digits"},
        BadLine{"EmptyGrantCmd",
                {"-n", "2", "--grant-cmd", " ", "true"},
                "--grant-cmd wants a command"}),
    [](const auto& tp) { return std::string(tp.param.name); });

}  // namespace
