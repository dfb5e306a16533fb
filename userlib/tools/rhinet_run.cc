// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run: starts the ranks of a parallel process group.
//
//   rhinet-run -n N [--per-node K] [--hosts h1,h2,...|--hostfile F]
//              [--rsh CMD] [--timeout S] [--group G --token-file F |
//              --grant-cmd CMD] [...] PROGRAM [ARGS...]
//
// Picks a random group ID (1..65535) and a random 64-bit token and, its
// privileged step, has the group granted to the user on every host
// (`rhinet-group grant`, run there over RSH; root or CAP_NET_ADMIN), or
// takes a group the administrator granted (--group, --token-file); runs
// the rendezvous server (rhinet::BootstrapServer) for the table exchange,
// and starts rank r on host r / K: directly (fork/exec) when that host is
// this machine, else as `RSH HOST env VAR=VALUE... PROGRAM ARGS` (like
// mpirun over ssh); revokes its grants when the ranks have ended. Every
// rank gets RHINET_RANK, RHINET_SIZE, RHINET_LOCAL_RANK,
// RHINET_LOCAL_SIZE, RHINET_GROUP, RHINET_GROUPS="GROUP:TOKEN" and
// RHINET_RENDEZVOUS=ip:port. When a rank fails, the others are stopped
// and rhinet-run exits with the failing rank's status.
// Documentation/userlib/reference.md has the details.
#include "rhinet_run.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rhinet/bootstrap.hpp"
#include "rhinet/version.hpp"

extern char** environ;

namespace {

using namespace rhinet_run;

// ---- ranks ------------------------------------------------------------------

struct Rank {
  std::uint32_t rank = 0;
  std::string host;
  bool local = false;
  std::uint32_t local_rank = 0, local_size = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid's
};

std::string quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789_-+=./:,@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string describe_status(int st) {
  if (WIFEXITED(st))
    return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    const char* name = strsignal(WTERMSIG(st));
    return "was killed by signal " + std::to_string(WTERMSIG(st)) +
           (name ? std::string(" (") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(st);
}

int exit_code_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

class Launcher {
 public:
  explicit Launcher(Options o) : o_(std::move(o)) {}
  int run();
  // Undoes the privileged step: revokes the group on every host it was
  // granted on (once; a failure is only reported).
  void revoke();

 private:
  // Where the privileged step runs: this machine (once, if any rank runs
  // here) and every other host (once per name).
  struct Target {
    std::string host;
    bool local = false;
  };
  void plan();
  std::vector<Target> targets() const;
  int privileged(const Target& t, const std::vector<std::string>& words,
                 const std::string& input);
  void grant();
  void start(Rank& r, const std::vector<std::string>& env);
  void reap(bool block);
  void stop_all();
  std::string who(const Rank& r) const {
    return "rank " + std::to_string(r.rank) + " (host " + r.host +
           (r.pid > 0 ? ", pid " + std::to_string(r.pid) : "") + ")";
  }
  std::string running_list() const {
    std::string s;
    int n = 0;
    for (const Rank& r : ranks_)
      if (r.running) {
        if (n++ == 8) {
          s += ", ...";
          break;
        }
        s += (s.empty() ? "" : ", ") + std::to_string(r.rank) + " (" + r.host +
             ")";
      }
    return s;
  }

  Options o_;
  std::vector<Rank> ranks_;
  std::size_t running_ = 0;
  std::optional<std::uint32_t> first_failure_;
  std::uint32_t group_ = 0;
  std::uint64_t token_ = 0;
  std::vector<Target> granted_;  // hosts the group is granted on
};

void Launcher::plan() {
  const auto mine = local_ipv4s();
  std::map<std::string, bool> local_cache;
  std::map<std::string, std::uint32_t> per_host;
  const long k = *o_.per_node;
  const auto nh = static_cast<long>(o_.hosts.size());
  ranks_.resize(static_cast<std::size_t>(o_.ranks));
  for (long r = 0; r < o_.ranks; r++) {
    Rank& x = ranks_[static_cast<std::size_t>(r)];
    x.rank = static_cast<std::uint32_t>(r);
    x.host = o_.hosts[static_cast<std::size_t>((r / k) % nh)];
    auto it = local_cache.find(x.host);
    if (it == local_cache.end())
      it = local_cache.emplace(x.host, is_local(x.host, mine)).first;
    x.local = it->second;
    x.local_rank = per_host[x.host]++;
  }
  for (Rank& x : ranks_) x.local_size = per_host[x.host];
}

void Launcher::start(Rank& r, const std::vector<std::string>& env) {
  std::vector<std::string> args;
  std::vector<std::string> envp;
  if (r.local) {
    args = o_.command;
    // Our environment, without what we set: -x's variables, then the
    // rank's own (as a remote rank gets them through env).
    for (char** e = environ; *e; e++) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      const auto named = [&](const std::vector<std::string>& set) {
        for (const auto& mine : set)
          if (mine.compare(0, name.size() + 1, name + "=") == 0) return true;
        return false;
      };
      const bool ours = named(o_.exports) || named(env);
      if (!ours) envp.push_back(kv);
    }
    envp.insert(envp.end(), o_.exports.begin(), o_.exports.end());
    envp.insert(envp.end(), env.begin(), env.end());
  } else {
    args = o_.rsh;
    args.push_back(r.host);
    // The remote side runs this through a shell: quote every word. It
    // starts where this one runs, as mpirun's ranks do; a host without
    // that directory keeps the remote shell's, unless --wdir named it.
    if (!o_.wdir.empty()) {
      args.push_back("cd");
      args.push_back(quote(o_.wdir));
      if (o_.wdir_given) {
        args.push_back("&&");
      } else {
        args.push_back("2>/dev/null");
        args.push_back(";");
      }
    }
    args.push_back("exec");
    args.push_back("env");
    for (const auto& kv : o_.exports) args.push_back(quote(kv));
    for (const auto& kv : env) args.push_back(quote(kv));
    for (const auto& w : o_.command) args.push_back(quote(w));
    for (char** e = environ; *e; e++) envp.push_back(*e);
  }
  if (o_.verbose) {
    std::string line;
    for (const auto& a : args) line += (line.empty() ? "" : " ") + a;
    std::fprintf(stderr, "%s: rank %u on %s%s: %s\n", kMe, r.rank,
                 r.host.c_str(), r.local ? " (here)" : "", line.c_str());
  }
  std::vector<char*> argv, ev;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envp) ev.push_back(e.data());
  ev.push_back(nullptr);
  std::fflush(nullptr);
  // No signal reaches the child with our handlers (they would only set a
  // flag in the child's copy of memory): blocked until it has its own.
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    sigprocmask(SIG_SETMASK, &old, nullptr);
    stop_all();
    fatal("fork for rank " + std::to_string(r.rank) + ": " + std::strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);  // stop_all() signals the rank's whole process group
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (const int fd = open("/dev/null", O_RDONLY); fd >= 0) {
      dup2(fd, 0);
      if (fd > 0) close(fd);
    }
    if (r.local && o_.wdir_given && chdir(o_.wdir.c_str()) != 0) {
      std::fprintf(stderr, "%s: rank %u: cannot change to --wdir %s: %s\n", kMe,
                   r.rank, o_.wdir.c_str(), std::strerror(errno));
      _exit(127);
    }
    execvpe(argv[0], argv.data(), ev.data());
    const int e = errno;
    std::fprintf(stderr, "%s: rank %u: cannot run %s: %s\n", kMe, r.rank,
                 argv[0], std::strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  setpgid(pid, pid);  // also here: no race with stop_all()
  r.pid = pid;
  r.running = true;
  running_++;
}

void Launcher::reap(bool block) {
  for (;;) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, block ? 0 : WNOHANG);
    if (pid <= 0) return;
    for (Rank& r : ranks_) {
      if (r.pid != pid || !r.running) continue;
      r.running = false;
      r.status = st;
      running_--;
      if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !first_failure_)
        first_failure_ = r.rank;
    }
    if (block) return;
  }
}

void Launcher::stop_all() {
  for (const Rank& r : ranks_)
    if (r.running) kill(-r.pid, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (running_ && std::chrono::steady_clock::now() < deadline) {
    reap(false);
    if (running_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const Rank& r : ranks_)
    if (r.running) kill(-r.pid, SIGKILL);
  while (running_) reap(true);
}

std::uint64_t random64() {
  std::uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != sizeof(v))
    fatal(std::string("getrandom: ") + std::strerror(errno));
  return v;
}

// rhinet-group's status when the group's ID is taken on that host.
constexpr int kGroupTaken = 3;

std::vector<Launcher::Target> Launcher::targets() const {
  std::vector<Target> out;
  std::set<std::string> seen;
  bool here = false;
  for (const Rank& r : ranks_) {
    if (r.local) {
      if (!here) out.push_back({r.host, true});
      here = true;
    } else if (seen.insert(r.host).second) {
      out.push_back({r.host, false});
    }
  }
  return out;
}

// Runs GRANT_CMD WORDS on the target (over RSH for another host) with
// INPUT on its standard input; returns its exit status (128 + N for a
// signal, 126/127 when it cannot run).
int Launcher::privileged(const Target& t, const std::vector<std::string>& words,
                         const std::string& input) {
  std::vector<std::string> args;
  if (t.local) {
    args = o_.grant_cmd;
    args.insert(args.end(), words.begin(), words.end());
  } else {
    args = o_.rsh;
    args.push_back(t.host);
    for (const auto& w : o_.grant_cmd) args.push_back(quote(w));
    for (const auto& w : words) args.push_back(quote(w));
  }
  if (o_.verbose) {
    std::string line;
    for (const auto& a : args) line += (line.empty() ? "" : " ") + a;
    std::fprintf(stderr, "%s: on %s%s: %s\n", kMe, t.host.c_str(),
                 t.local ? " (here)" : "", line.c_str());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return 126;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    close(in[1]);
    return 126;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    dup2(in[0], 0);
    execvp(argv[0], argv.data());
    const int e = errno;
    std::fprintf(stderr, "%s: cannot run %s: %s\n", kMe, argv[0],
                 std::strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  close(in[0]);
  const char* p = input.data();
  std::size_t left = input.size();
  while (left) {
    const ssize_t n = write(in[1], p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // it does not read: its status says why
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  close(in[1]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return exit_code_of(st);
}

// The privileged step: the group granted to this user on every host,
// with its token on the command's standard input (never on a command
// line). A group ID some host has already (another job's) is given up
// everywhere and another one tried.
void Launcher::grant() {
  const auto hosts = targets();
  const std::string uid = std::to_string(getuid());
  std::string cmd;
  for (const auto& w : o_.grant_cmd) cmd += (cmd.empty() ? "" : " ") + w;
  constexpr int kAttempts = 8;
  for (int attempt = 1;; attempt++) {
    group_ = static_cast<std::uint32_t>(1 + random64() % 65535);  // 1..65535
    token_ = 0;
    while (!token_) token_ = random64();
    char hex[24];
    std::snprintf(hex, sizeof(hex), "%016llx\n",
                  static_cast<unsigned long long>(token_));
    std::vector<std::string> words = {"-q",    "grant", std::to_string(group_),
                                      "--uid", uid,     "--token-file",
                                      "-"};
    // A launcher killed with SIGKILL leaves no grant that lasts.
    if (o_.timeout_s) {
      words.push_back("--lifetime");
      words.push_back(std::to_string(*o_.timeout_s + 60));
    }
    std::optional<std::string> taken_on;
    for (const Target& t : hosts) {
      const int st = privileged(t, words, hex);
      if (st == 0) {
        granted_.push_back(t);
        if (o_.verbose)
          std::fprintf(stderr, "%s: granted group %u to uid %s on %s\n", kMe,
                       group_, uid.c_str(), t.host.c_str());
        continue;
      }
      if (st == kGroupTaken) {
        taken_on = t.host;
        break;
      }
      revoke();
      if (g_signal) {
        std::fprintf(stderr, "%s: got signal %d (%s) in the privileged step\n",
                     kMe, static_cast<int>(g_signal), strsignal(g_signal));
        std::exit(128 + g_signal);
      }
      std::fprintf(stderr,
                   "%s: the privileged step failed on host %s: '%s grant %u "
                   "--uid %s ...' exited with status %d\n",
                   kMe, t.host.c_str(), cmd.c_str(), group_, uid.c_str(), st);
      std::fprintf(
          stderr,
          "%s: a process group must be granted to the user on every host "
          "(root or CAP_NET_ADMIN there): run %s as root, give --grant-cmd "
          "'sudo -n rhinet-group' (or set RHINET_GRANT_CMD), or have the "
          "administrator run 'rhinet-group grant GROUP --uid %s --token-file "
          "FILE' on every host and pass --group GROUP --token-file FILE\n",
          kMe, kMe, uid.c_str());
      std::exit(1);
    }
    if (!taken_on) return;
    revoke();
    if (attempt == kAttempts)
      fatal(std::to_string(kAttempts) +
            " random group IDs were all taken on some host (the last on " +
            *taken_on + "); is a host named twice?");
    if (o_.verbose)
      std::fprintf(stderr, "%s: group %u is taken on %s; trying another\n", kMe,
                   group_, taken_on->c_str());
  }
}

void Launcher::revoke() {
  const std::vector<Target> hosts = std::move(granted_);
  granted_.clear();
  for (const Target& t : hosts) {
    const int st =
        privileged(t, {"-q", "revoke", std::to_string(group_)}, std::string());
    if (st != 0)
      std::fprintf(stderr,
                   "%s: warning: could not revoke group %u on host %s (status "
                   "%d); run 'rhinet-group revoke %u' there as root\n",
                   kMe, group_, t.host.c_str(), st, group_);
    else if (o_.verbose)
      std::fprintf(stderr, "%s: revoked group %u on %s\n", kMe, group_,
                   t.host.c_str());
  }
}

int Launcher::run() {
  plan();
  const bool all_local = std::all_of(ranks_.begin(), ranks_.end(),
                                     [](const Rank& r) { return r.local; });

  // Where the rendezvous listens and what the ranks are told.
  std::string bind_ip = "127.0.0.1", advertise_ip = "127.0.0.1";
  if (!o_.iface.empty()) {
    const auto a = interface_ipv4(o_.iface);
    if (!a)
      fatal("--iface " + o_.iface + ": no such interface with an IPv4 address");
    bind_ip = advertise_ip = ipv4_string(*a);
  } else if (!all_local) {
    bind_ip = "0.0.0.0";
    if (!o_.advertise.empty()) {
      advertise_ip = o_.advertise;
    } else {
      const auto a = interface_ipv4("");
      if (!a)
        fatal(
            "ranks run on other hosts, but this machine has no "
            "non-loopback IPv4 address; give --advertise IP");
      advertise_ip = ipv4_string(*a);
    }
  } else if (!o_.advertise.empty()) {
    bind_ip = "0.0.0.0";
    advertise_ip = o_.advertise;
  }

  // From here a signal ends rhinet-run through its own cleanup (the
  // privileged step's grants revoked).
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The group: one the administrator granted, or one granted here now.
  if (o_.group) {
    group_ = *o_.group;
    token_ = *o_.token;
  } else {
    grant();
  }
  const std::uint32_t group = group_;
  const std::uint64_t token = token_;
  rhinet::BootstrapServer::Config cfg;
  cfg.size = static_cast<std::uint32_t>(o_.ranks);
  cfg.group = group;
  cfg.token = token;
  auto server = rhinet::BootstrapServer::listen(
      bind_ip + ":" + std::to_string(o_.port), cfg);
  if (!server) fatal(server.error().to_string());
  const std::string rendezvous =
      advertise_ip + ":" + std::to_string(server->port());
  char groups[48];
  std::snprintf(groups, sizeof(groups), "%u:%016llx", group,
                static_cast<unsigned long long>(token));
  if (o_.verbose)
    std::fprintf(
        stderr, "%s: group %u, %ld ranks, rendezvous %s (listening on %s)\n",
        kMe, group, o_.ranks, rendezvous.c_str(), server->address().c_str());
  if (g_signal) {
    std::fprintf(stderr, "%s: got signal %d (%s) before any rank started\n",
                 kMe, static_cast<int>(g_signal), strsignal(g_signal));
    return 128 + g_signal;
  }

  const auto started = std::chrono::steady_clock::now();
  for (Rank& r : ranks_) {
    std::vector<std::string> env = {
        "RHINET_RANK=" + std::to_string(r.rank),
        "RHINET_SIZE=" + std::to_string(o_.ranks),
        "RHINET_LOCAL_RANK=" + std::to_string(r.local_rank),
        "RHINET_LOCAL_SIZE=" + std::to_string(r.local_size),
        "RHINET_GROUP=" + std::to_string(group),
        std::string("RHINET_GROUPS=") + groups,
        "RHINET_RENDEZVOUS=" + rendezvous,
    };
    // Settings for the library reach remote ranks too.
    if (!r.local)
      for (const char* name : {"RHINET_DEVICE", "RHINET_BOOTSTRAP_TIMEOUT"})
        if (const char* v = std::getenv(name))
          env.push_back(std::string(name) + "=" + v);
    start(r, env);
  }

  bool server_done = false;
  int code = 0;
  while (running_) {
    if (!server_done) {
      auto s = server->step(std::chrono::milliseconds(50));
      if (!s) {
        if (!server->exchanged()) {
          // Often a rank died (its connection closed): say so if it did.
          for (int i = 0; i < 10 && !first_failure_; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            reap(false);
          }
          std::fprintf(stderr, "%s: %s\n", kMe, s.error().message().c_str());
          if (first_failure_) {
            const Rank& r = ranks_[*first_failure_];
            std::fprintf(stderr, "%s: %s %s; stopping the other ranks\n", kMe,
                         who(r).c_str(), describe_status(r.status).c_str());
            stop_all();
            return exit_code_of(r.status);
          }
          std::fprintf(stderr, "%s: stopping the ranks\n", kMe);
          stop_all();
          return 1;
        }
        // After the table, the ranks were told and decide themselves.
        std::fprintf(stderr, "%s: %s\n", kMe, s.error().message().c_str());
        server_done = true;
      } else if (server->finished()) {
        server_done = true;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    reap(false);

    if (first_failure_) {
      const Rank& r = ranks_[*first_failure_];
      std::fprintf(stderr, "%s: %s %s%s\n", kMe, who(r).c_str(),
                   describe_status(r.status).c_str(),
                   running_ ? "; stopping the other ranks" : "");
      stop_all();
      return exit_code_of(r.status);
    }
    // A rank that ended without joining, while others wait for the table.
    if (!server->exchanged() && !server_done) {
      const auto missing = server->missing();
      if (missing.size() < ranks_.size())
        for (std::uint32_t m : missing)
          if (!ranks_[m].running) {
            const std::string why =
                who(ranks_[m]) + " ended without joining the group";
            server->abort(why);
            std::fprintf(stderr, "%s: %s; stopping the other ranks\n", kMe,
                         why.c_str());
            stop_all();
            return 1;
          }
    }
    if (g_signal) {
      const int sig = g_signal;
      std::fprintf(stderr, "%s: got signal %d (%s); stopping the ranks\n", kMe,
                   sig, strsignal(sig));
      stop_all();
      return 128 + sig;
    }
    if (o_.timeout_s && std::chrono::steady_clock::now() - started >=
                            std::chrono::seconds(*o_.timeout_s)) {
      std::fprintf(stderr, "%s: timeout after %ld s; stopping ranks %s\n", kMe,
                   *o_.timeout_s, running_list().c_str());
      stop_all();
      return kExitTimeout;
    }
  }
  return code;
}

Launcher* g_launcher = nullptr;

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.wdir.empty()) {
    // Remote ranks start here too (a directory that cannot be named is
    // left to the remote shell).
    if (char* cwd = getcwd(nullptr, 0)) {
      o.wdir = cwd;
      std::free(cwd);
    }
  }
  Launcher l(std::move(o));
  g_launcher = &l;
  g_at_fatal = [] { g_launcher->revoke(); };
  const int code = l.run();
  l.revoke();
  return code;
}
