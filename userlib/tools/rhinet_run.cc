// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run: starts the ranks of a parallel process group (004 2.1).
//
//   rhinet-run -n N [--per-node K] [--hosts h1,h2,...|--hostfile F]
//              [--rsh CMD] [--timeout S] [...] PROGRAM [ARGS...]
//
// Picks a random group ID (1..65535) and a random 64-bit token, runs the
// rendezvous server (rhinet::BootstrapServer) for the table exchange, and
// starts rank r on host r / K: directly (fork/exec) when that host is this
// machine, else as `RSH HOST env VAR=VALUE... PROGRAM ARGS` (like mpirun
// over ssh). Every rank gets RHINET_RANK, RHINET_SIZE, RHINET_LOCAL_RANK,
// RHINET_LOCAL_SIZE, RHINET_GROUP, RHINET_GROUPS="GROUP:TOKEN" and
// RHINET_RENDEZVOUS=ip:port. When a rank fails, the others are stopped
// and rhinet-run exits with the failing rank's status.
// Documentation/userlib/reference.md has the details.
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

constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;
constexpr const char* kMe = "rhinet-run";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  std::fprintf(stderr, "Try '%s --help'.\n", kMe);
  std::exit(kExitUsage);
}

[[noreturn]] void fatal(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  std::exit(code);
}

void print_help() {
  std::printf(
      "Usage: %s -n N [OPTIONS] PROGRAM [ARGS...]\n"
      "Starts N ranks of PROGRAM as one RHiNET parallel process group.\n"
      "\n"
      "  -n, --np N             ranks to start (at least 1)\n"
      "  -N, --per-node K       ranks per host: rank r runs on host r / K\n"
      "                         (default: N on the only host, or N / hosts\n"
      "                         rounded up)\n"
      "  -H, --hosts H1,H2,...  hosts (default: localhost); a host may repeat\n"
      "      --hostfile FILE    hosts, one per line ('#' starts a comment)\n"
      "      --oversubscribe    allow more ranks than hosts x per-node (the\n"
      "                         hosts are used round and round)\n"
      "      --rsh CMD          remote shell for hosts other than this one\n"
      "                         (default: ssh; split at blanks)\n"
      "      --iface IF         bind the rendezvous to the first IPv4 address\n"
      "                         of interface IF and advertise it\n"
      "      --advertise IP     tell remote ranks to reach the rendezvous at "
      "IP\n"
      "                         (default: the first non-loopback IPv4 "
      "address)\n"
      "      --port P           rendezvous port (default: any free one)\n"
      "  -x NAME[=VALUE]        also set NAME for remote ranks (its value "
      "here,\n"
      "                         or VALUE); repeatable\n"
      "      --timeout SECONDS  stop every rank after SECONDS (exit status "
      "124)\n"
      "  -v, --verbose          say what is started\n"
      "  -h, --help             this text\n"
      "      --version          the version\n"
      "\n"
      "Each rank gets RHINET_RANK, RHINET_SIZE, RHINET_LOCAL_RANK,\n"
      "RHINET_LOCAL_SIZE, RHINET_GROUP, RHINET_GROUPS and RHINET_RENDEZVOUS\n"
      "(rhinet::Group::join_from_env() reads them). Exit status: 0 when every\n"
      "rank exits 0; else the status of the first rank that failed (128+N for\n"
      "signal N), 124 on --timeout, 2 for a bad command line, 1 for other\n"
      "errors of %s.\n",
      kMe, kMe);
}

// ---- command line -----------------------------------------------------------

struct Options {
  long ranks = 0;
  std::optional<long> per_node;
  std::vector<std::string> hosts;
  bool hosts_given = false;
  bool oversubscribe = false;
  std::vector<std::string> rsh{"ssh"};
  std::string iface, advertise;
  long port = 0;
  std::vector<std::string> exports;  // NAME=VALUE
  std::optional<long> timeout_s;
  bool verbose = false;
  std::vector<std::string> command;  // PROGRAM ARGS...
};

long parse_number(const char* opt, const char* text, long min, long max) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!*text || *end || errno || v < min || v > max ||
      !std::isdigit(static_cast<unsigned char>(text[0])))
    usage_error(std::string(opt) + " wants a whole number in " +
                std::to_string(min) + ".." + std::to_string(max) + ", not '" +
                text + "'");
  return v;
}

void check_host(const std::string& h, const std::string& where) {
  if (h.empty()) usage_error(where + ": empty host name");
  if (h[0] == '-')
    usage_error(where + ": host name '" + h + "' starts with '-'");
  for (char c : h)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"' ||
        c == '\\')
      usage_error(where + ": host name '" + h + "' has a blank or a quote");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<std::string> split_blanks(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::vector<std::string> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("--hostfile " + path + ": " + std::strerror(errno));
  std::vector<std::string> hosts;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    n++;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto words = split_blanks(line);
    if (words.empty()) continue;
    const std::string where = path + " line " + std::to_string(n);
    if (words.size() > 1)
      usage_error(where + ": one host name per line (found '" + line + "')");
    check_host(words[0], where);
    hosts.push_back(words[0]);
  }
  if (hosts.empty()) usage_error("--hostfile " + path + " names no host");
  return hosts;
}

Options parse(int argc, char** argv) {
  enum {
    kHostfile = 256,
    kOversubscribe,
    kRsh,
    kIface,
    kAdvertise,
    kPort,
    kTimeout,
    kVersion
  };
  static const option longs[] = {
      {"np", required_argument, nullptr, 'n'},
      {"per-node", required_argument, nullptr, 'N'},
      {"hosts", required_argument, nullptr, 'H'},
      {"hostfile", required_argument, nullptr, kHostfile},
      {"oversubscribe", no_argument, nullptr, kOversubscribe},
      {"rsh", required_argument, nullptr, kRsh},
      {"iface", required_argument, nullptr, kIface},
      {"advertise", required_argument, nullptr, kAdvertise},
      {"port", required_argument, nullptr, kPort},
      {"timeout", required_argument, nullptr, kTimeout},
      {"verbose", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, kVersion},
      {nullptr, 0, nullptr, 0}};
  Options o;
  bool have_n = false, have_hostfile = false;
  opterr = 0;
  int c;
  // '+': options end at PROGRAM; its own options are left alone.
  while ((c = getopt_long(argc, argv, "+:n:N:H:x:vh", longs, nullptr)) != -1) {
    switch (c) {
      case 'n':
        o.ranks = parse_number("-n", optarg, 1, rhinet::max_ranks);
        have_n = true;
        break;
      case 'N':
        o.per_node = parse_number("--per-node", optarg, 1, rhinet::max_ranks);
        break;
      case 'H': {
        if (have_hostfile) usage_error("give --hosts or --hostfile, not both");
        for (const auto& h : split(optarg, ',')) {
          check_host(h, "--hosts");
          o.hosts.push_back(h);
        }
        o.hosts_given = true;
        break;
      }
      case kHostfile:
        if (o.hosts_given) usage_error("give --hosts or --hostfile, not both");
        o.hosts = read_hostfile(optarg);
        o.hosts_given = have_hostfile = true;
        break;
      case kOversubscribe:
        o.oversubscribe = true;
        break;
      case kRsh:
        o.rsh = split_blanks(optarg);
        if (o.rsh.empty()) usage_error("--rsh wants a command");
        break;
      case kIface:
        o.iface = optarg;
        break;
      case kAdvertise: {
        in_addr a{};
        if (inet_pton(AF_INET, optarg, &a) != 1)
          usage_error(std::string("--advertise wants an IPv4 address, not '") +
                      optarg + "'");
        o.advertise = optarg;
        break;
      }
      case kPort:
        o.port = parse_number("--port", optarg, 0, 65535);
        break;
      case kTimeout:
        o.timeout_s = parse_number("--timeout", optarg, 1, 366L * 24 * 3600);
        break;
      case 'x': {
        std::string kv = optarg;
        const auto eq = kv.find('=');
        const std::string name = kv.substr(0, eq);
        if (name.empty() ||
            name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
                                   "qrstuvwxyz0123456789_") !=
                std::string::npos ||
            std::isdigit(static_cast<unsigned char>(name[0])))
          usage_error("-x wants NAME or NAME=VALUE, not '" + kv + "'");
        if (eq == std::string::npos) {
          const char* v = std::getenv(name.c_str());
          if (!v)
            usage_error("-x " + name + ": not set here; give -x " + name +
                        "=VALUE");
          kv = name + "=" + v;
        }
        o.exports.push_back(kv);
        break;
      }
      case 'v':
        o.verbose = true;
        break;
      case 'h':
        print_help();
        std::exit(0);
      case kVersion:
        std::printf("%s %s\n", kMe, rhinet::version_string);
        std::exit(0);
      case ':':
        usage_error(std::string("option '") + argv[optind - 1] +
                    "' wants a value");
      default:
        usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (!have_n) usage_error("say how many ranks with -n N");
  if (optind >= argc) usage_error("no PROGRAM to run");
  for (int i = optind; i < argc; i++) o.command.push_back(argv[i]);
  if (!o.iface.empty() && !o.advertise.empty())
    usage_error("give --iface or --advertise, not both");
  if (o.hosts.empty()) o.hosts = {"localhost"};
  const long nh = static_cast<long>(o.hosts.size());
  if (!o.per_node)
    o.per_node = o.hosts_given ? (o.ranks + nh - 1) / nh : o.ranks;
  if (o.ranks > nh * *o.per_node && !o.oversubscribe)
    usage_error(std::to_string(o.ranks) + " ranks do not fit on " +
                std::to_string(nh) + (nh == 1 ? " host" : " hosts") + " x " +
                std::to_string(*o.per_node) +
                " per node; add hosts, raise --per-node or pass "
                "--oversubscribe");
  return o;
}

// ---- hosts ------------------------------------------------------------------

std::set<std::uint32_t> local_ipv4s() {
  std::set<std::uint32_t> out;
  ifaddrs* ifa = nullptr;
  if (getifaddrs(&ifa) != 0) return out;
  for (ifaddrs* i = ifa; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
      out.insert(
          ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr));
  freeifaddrs(ifa);
  return out;
}

std::string ipv4_string(std::uint32_t a) {
  in_addr x{htonl(a)};
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &x, buf, sizeof(buf));
  return buf;
}

// The first IPv4 address of interface `name` (or the first non-loopback
// address of the machine when name is empty).
std::optional<std::uint32_t> interface_ipv4(const std::string& name) {
  std::optional<std::uint32_t> out;
  ifaddrs* ifa = nullptr;
  if (getifaddrs(&ifa) != 0) return out;
  for (ifaddrs* i = ifa; i && !out; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const std::uint32_t a =
        ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    if (name.empty() ? ((i->ifa_flags & IFF_LOOPBACK) || (a >> 24) == 127 ||
                        !(i->ifa_flags & IFF_UP))
                     : name != i->ifa_name)
      continue;
    out = a;
  }
  freeifaddrs(ifa);
  return out;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// Whether `host` is this machine: "localhost", our host name (full or
// short), or a name or address that resolves to one of our addresses.
bool is_local(const std::string& host, const std::set<std::uint32_t>& mine) {
  if (host == "localhost") return true;
  const std::string me = host_name();
  if (host == me || host == me.substr(0, me.find('.'))) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  bool local = false;
  for (addrinfo* r = res; r; r = r->ai_next) {
    const std::uint32_t a =
        ntohl(reinterpret_cast<sockaddr_in*>(r->ai_addr)->sin_addr.s_addr);
    if ((a >> 24) == 127 || mine.count(a)) local = true;
  }
  freeaddrinfo(res);
  return local;
}

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

 private:
  void plan();
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
    // Our environment, without what we set.
    for (char** e = environ; *e; e++) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      bool ours = false;
      for (const auto& mine : env)
        if (mine.compare(0, name.size() + 1, name + "=") == 0) ours = true;
      if (!ours) envp.push_back(kv);
    }
    envp.insert(envp.end(), env.begin(), env.end());
  } else {
    args = o_.rsh;
    args.push_back(r.host);
    // The remote side runs this through a shell: quote every word.
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

  const auto group =
      static_cast<std::uint32_t>(1 + random64() % 65535);  // 1..65535
  std::uint64_t token = 0;
  while (!token) token = random64();
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

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

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

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Launcher l(std::move(o));
  return l.run();
}
