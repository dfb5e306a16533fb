// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run: starts the ranks of a parallel process group (004 2.1).
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

// What fatal() undoes first: the grants of the privileged step.
void (*g_at_fatal)() = nullptr;

[[noreturn]] void fatal(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  if (g_at_fatal) g_at_fatal();
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
      "      --group G          run in process group G, which the "
      "administrator\n"
      "                         granted to this user on every host (no\n"
      "                         privileged step); needs --token-file\n"
      "      --token-file FILE  the token of --group G (16 hexadecimal "
      "digits)\n"
      "      --grant-cmd CMD    the privileged step: CMD grant ... / CMD "
      "revoke G\n"
      "                         runs on every host (default: "
      "$RHINET_GRANT_CMD,\n"
      "                         else rhinet-group; e.g. 'sudo -n "
      "rhinet-group')\n"
      "      --timeout SECONDS  stop every rank after SECONDS (exit status "
      "124)\n"
      "  -v, --verbose          say what is started\n"
      "  -h, --help             this text\n"
      "      --version          the version\n"
      "\n"
      "Without --group, the group is granted to this user on every host\n"
      "before the ranks start (needs root or CAP_NET_ADMIN there, e.g. "
      "through\n"
      "--grant-cmd) and revoked when they have ended.\n"
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
  // A group the administrator granted (--group, --token-file), else the
  // privileged step's command (--grant-cmd).
  std::optional<std::uint32_t> group;
  std::optional<std::uint64_t> token;
  std::vector<std::string> grant_cmd;
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

// The first line of FILE: 1 to 16 hexadecimal digits (blanks around them
// ignored).
std::uint64_t read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage_error("--token-file " + path + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  const auto words = split_blanks(line);
  if (words.size() != 1 || words[0].size() > 16 ||
      words[0].find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    usage_error("--token-file " + path +
                ": the first line is not 1 to 16 hexadecimal digits");
  return std::stoull(words[0], nullptr, 16);
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
    kGroup,
    kTokenFile,
    kGrantCmd,
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
      {"group", required_argument, nullptr, kGroup},
      {"token-file", required_argument, nullptr, kTokenFile},
      {"grant-cmd", required_argument, nullptr, kGrantCmd},
      {"verbose", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, kVersion},
      {nullptr, 0, nullptr, 0}};
  Options o;
  bool have_n = false, have_hostfile = false;
  std::string token_file;
  if (const char* g = std::getenv("RHINET_GRANT_CMD"))
    o.grant_cmd = split_blanks(g);
  if (o.grant_cmd.empty()) o.grant_cmd = {"rhinet-group"};
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
      case kGroup:
        o.group = static_cast<std::uint32_t>(
            parse_number("--group", optarg, 1, 65535));
        break;
      case kTokenFile:
        token_file = optarg;
        break;
      case kGrantCmd:
        o.grant_cmd = split_blanks(optarg);
        if (o.grant_cmd.empty()) usage_error("--grant-cmd wants a command");
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
  if (o.group.has_value() != !token_file.empty())
    usage_error(
        "give --group and --token-file together (a group the administrator "
        "granted), or neither");
  if (!token_file.empty()) o.token = read_token_file(token_file);
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
  Launcher l(std::move(o));
  g_launcher = &l;
  g_at_fatal = [] { g_launcher->revoke(); };
  const int code = l.run();
  l.revoke();
  return code;
}
