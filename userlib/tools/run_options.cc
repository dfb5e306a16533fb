// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run: its command line and the hosts it runs on.
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
#include "rhinet_run.hpp"

namespace rhinet_run {

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  std::fprintf(stderr, "Try '%s --help'.\n", kMe);
  std::exit(kExitUsage);
}

void (*g_at_fatal)() = nullptr;

[[noreturn]] void fatal(const std::string& msg, int code) {
  std::fprintf(stderr, "%s: %s\n", kMe, msg.c_str());
  if (g_at_fatal) g_at_fatal();
  std::exit(code);
}

namespace {

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
      "      --wdir DIR         the ranks' working directory (default: this\n"
      "                         one; where a remote host lacks it, the\n"
      "                         remote shell's)\n"
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

}  // namespace

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
    kWdir,
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
      {"wdir", required_argument, nullptr, kWdir},
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
      case kWdir:
        if (!*optarg || optarg[0] != '/')
          usage_error(std::string("--wdir wants an absolute directory, not '") +
                      optarg + "'");
        o.wdir = optarg;
        o.wdir_given = true;
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

}  // namespace rhinet_run
