// SPDX-License-Identifier: BSD-2-Clause
// rhinet-switch: the emulated RHiNET-NG fabric switch.
//
// Each port is a unix stream socket <dir>/port<N>.sock speaking QEMU's
// `-netdev stream` framing (4-byte big-endian length, then the frame). A
// control socket <dir>/control.sock takes one text command per line (see
// usage()); `rhinet-switch --ctl <dir> COMMAND...` sends one and prints the
// reply. Documentation/fabric/switch.md describes both.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "frame_text.h"
#include "rhinet/hw_wire.h"
#include "switch_core.h"

namespace {

using rhinet::fabric::FaultSpec;
using rhinet::fabric::SwitchCore;

constexpr size_t kMaxEgressBuffer = 8u << 20;  // per port, then drop
constexpr uint32_t kMaxStreamFrame = 65536;    // beyond: the stream is broken

volatile sig_atomic_t g_stop = 0;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

void usage() {
  std::fprintf(stderr,
               "usage: rhinet-switch --dir DIR [--ports N] [--seed S]\n"
               "         [--loss P] [--dup P] [--reorder P] [--corrupt P]\n"
               "         [--pcap FILE] [--stats FILE]\n"
               "       rhinet-switch --ctl DIR COMMAND...\n"
               "       rhinet-switch --dump FILE.pcap\n"
               "control commands:\n"
               "  fault all|PORT [loss=P] [dup=P] [reorder=P] [corrupt=P]\n"
               "  link PORT down [MS] | link PORT up\n"
               "  group GROUP PORT... | group GROUP none   members GROUP\n"
               "  map NODE PORT       seed S       pcap FILE|off\n"
               "  stats\n");
}

// False (with a message) when the path does not fit a unix address.
bool unix_address(const std::string& path, sockaddr_un* addr) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) {
    std::fprintf(stderr, "rhinet-switch: socket path too long: %s\n",
                 path.c_str());
    return false;
  }
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Bound and listening under a temporary name, then renamed into place:
// whoever sees the path (run-cluster, the tests, QEMU) can connect at
// once; between bind and listen it would be refused.
int listen_unix(const std::string& path) {
  const std::string tmp = path + ".new";
  sockaddr_un addr;
  if (!unix_address(tmp, &addr)) return -1;
  unlink(tmp.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) ||
      listen(fd, 4) || std::rename(tmp.c_str(), path.c_str())) {
    std::fprintf(stderr, "rhinet-switch: cannot listen on %s: %s\n",
                 path.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    unlink(tmp.c_str());
    return -1;
  }
  return fd;
}

bool parse_double(std::string_view s, double* out) {
  std::string tmp(s);
  char* end = nullptr;
  const double v = std::strtod(tmp.c_str(), &end);
  if (tmp.empty() || *end || !(v >= 0 && v <= 1)) return false;
  *out = v;
  return true;
}

template <typename T>
bool parse_uint(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') j++;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

// Applies "key=P" words to a fault spec. Returns an error or "".
std::string apply_fault_words(std::span<const std::string_view> words,
                              FaultSpec* spec) {
  for (std::string_view w : words) {
    const size_t eq = w.find('=');
    if (eq == std::string_view::npos) return "expected key=probability";
    const std::string_view key = w.substr(0, eq);
    double v;
    if (!parse_double(w.substr(eq + 1), &v))
      return "probability must be in [0, 1]";
    if (key == "loss")
      spec->loss = v;
    else if (key == "dup")
      spec->duplicate = v;
    else if (key == "reorder")
      spec->reorder = v;
    else if (key == "corrupt")
      spec->corrupt = v;
    else
      return "unknown fault '" + std::string(key) + "'";
  }
  return "";
}

struct Port {
  int listen_fd = -1;
  int fd = -1;
  std::vector<uint8_t> in;   // partial stream data
  std::vector<uint8_t> out;  // framed data not yet written
};

class SwitchProgram {
 public:
  SwitchProgram(unsigned ports, uint64_t seed)
      : ports_(ports),
        core_(ports, seed, [this](unsigned port, std::span<const uint8_t> f) {
          queue_frame(port, f);
        }) {}

  SwitchCore& core() { return core_; }

  bool open(const std::string& dir) {
    for (unsigned i = 0; i < ports_.size(); i++) {
      ports_[i].listen_fd =
          listen_unix(dir + "/port" + std::to_string(i) + ".sock");
      if (ports_[i].listen_fd < 0) return false;
    }
    control_fd_ = listen_unix(dir + "/control.sock");
    return control_fd_ >= 0;
  }

  void run() {
    while (!g_stop) {
      std::vector<pollfd> fds;
      for (Port& p : ports_) {
        fds.push_back({p.listen_fd, POLLIN, 0});
        fds.push_back({p.fd, short(POLLIN | (p.out.empty() ? 0 : POLLOUT)), 0});
      }
      fds.push_back({control_fd_, POLLIN, 0});
      const uint64_t deadline = core_.next_deadline_ns();
      const uint64_t now = now_ns();
      timespec ts{};
      timespec* tsp = nullptr;
      if (deadline != UINT64_MAX) {
        const uint64_t wait = deadline > now ? deadline - now : 0;
        ts.tv_sec = time_t(wait / 1'000'000'000);
        ts.tv_nsec = long(wait % 1'000'000'000);
        tsp = &ts;
      }
      if (ppoll(fds.data(), fds.size(), tsp, nullptr) < 0 && errno != EINTR) {
        std::perror("rhinet-switch: ppoll");
        return;
      }
      // New connections first: a frame read below may be for a node that
      // connected in the same instant, and must not miss it.
      for (unsigned i = 0; i < ports_.size(); i++)
        if (fds[2 * i].revents & POLLIN) accept_port(i);
      for (unsigned i = 0; i < ports_.size(); i++) {
        const short ev = fds[2 * i + 1].revents;
        if (ev & (POLLIN | POLLHUP | POLLERR)) read_port(i);
        if (ev & POLLOUT) flush_port(i);
      }
      if (fds.back().revents & POLLIN) serve_control();
      core_.tick(now_ns());
      // What this turn routed leaves now: one system call per port for
      // every frame read above, not one per frame.
      for (unsigned i = 0; i < ports_.size(); i++) flush_port(i);
    }
  }

 private:
  void accept_port(unsigned i) {
    const int fd = accept4(ports_[i].listen_fd, nullptr, nullptr,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    close_port(i);              // a restarted node replaces its old connection
    core_.port_reconnected(i);  // ... and has joined no UD group yet
    ports_[i].fd = fd;
  }

  void close_port(unsigned i) {
    Port& p = ports_[i];
    if (p.fd >= 0) close(p.fd);
    p.fd = -1;
    p.in.clear();
    p.out.clear();
  }

  void read_port(unsigned i) {
    Port& p = ports_[i];
    uint8_t buf[65536];
    const ssize_t n = read(p.fd, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      close_port(i);
      return;
    }
    if (n < 0) return;
    p.in.insert(p.in.end(), buf, buf + n);
    size_t off = 0;
    while (p.in.size() - off >= 4) {
      const uint8_t* h = &p.in[off];
      const uint32_t len = uint32_t(h[0]) << 24 | uint32_t(h[1]) << 16 |
                           uint32_t(h[2]) << 8 | h[3];
      if (len == 0 || len > kMaxStreamFrame) {
        // The framing itself is broken: nothing after this can be trusted.
        std::fprintf(stderr,
                     "rhinet-switch: port %u sent a %u-byte frame length; "
                     "closing it\n",
                     i, len);
        core_.counters(i).malformed++;
        close_port(i);
        return;
      }
      if (p.in.size() - off - 4 < len) break;
      core_.ingress(i, {&p.in[off + 4], len}, now_ns());
      off += 4 + len;
    }
    p.in.erase(p.in.begin(), p.in.begin() + long(off));
  }

  void queue_frame(unsigned i, std::span<const uint8_t> frame) {
    Port& p = ports_[i];
    if (p.fd < 0) {  // no node attached: as good as a dead link
      core_.counters(i).link_down_drops++;
      return;
    }
    if (p.out.size() + 4 + frame.size() > kMaxEgressBuffer) {
      core_.counters(i).overflow_drops++;
      return;
    }
    const uint32_t len = uint32_t(frame.size());
    const uint8_t h[4] = {uint8_t(len >> 24), uint8_t(len >> 16),
                          uint8_t(len >> 8), uint8_t(len)};
    p.out.insert(p.out.end(), h, h + 4);
    p.out.insert(p.out.end(), frame.begin(), frame.end());
  }

  void flush_port(unsigned i) {
    Port& p = ports_[i];
    if (p.fd < 0 || p.out.empty()) return;
    const ssize_t n = send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n > 0) p.out.erase(p.out.begin(), p.out.begin() + n);
  }

  void serve_control() {
    const int fd = accept4(control_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    // One short request per connection; a slow client cannot stall the
    // fabric for long.
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string line;
    char c;
    while (line.size() < 4096 && read(fd, &c, 1) == 1 && c != '\n')
      line.push_back(c);
    const std::string reply = execute(line) + "\n";
    (void)!write(fd, reply.data(), reply.size());
    close(fd);
  }

 public:
  // Runs one control command; the reply starts with "ok" or "error:".
  std::string execute(std::string_view line) {
    const auto w = split(line);
    if (w.empty()) return "error: empty command";
    const uint64_t now = now_ns();
    unsigned port;
    auto port_arg = [&](std::string_view s) {
      return parse_uint(s, &port) && port < core_.ports();
    };
    if (w[0] == "stats") return "ok\n" + core_.stats_text();
    if (w[0] == "fault" && w.size() >= 2) {
      int target = -1;
      if (w[1] != "all") {
        if (!port_arg(w[1])) return "error: no such port";
        target = int(port);
      }
      FaultSpec spec;
      const std::string err = apply_fault_words(std::span(w).subspan(2), &spec);
      if (!err.empty()) return "error: " + err;
      core_.set_fault(target, spec);
      return "ok";
    }
    if (w[0] == "link" && w.size() >= 3) {
      if (!port_arg(w[1])) return "error: no such port";
      if (w[2] == "up") {
        core_.set_link(port, true, 0, now);
        return "ok";
      }
      uint64_t ms = 0;
      if (w[2] != "down" || (w.size() > 3 && !parse_uint(w[3], &ms)))
        return "error: expected 'link PORT up' or 'link PORT down [MS]'";
      core_.set_link(port, false, ms * 1'000'000, now);
      return "ok";
    }
    if (w[0] == "group" && w.size() >= 3) {
      uint16_t group;
      if (!parse_uint(w[1], &group)) return "error: bad group ID";
      std::vector<unsigned> members;
      if (w[2] != "none") {
        for (size_t i = 2; i < w.size(); i++) {
          if (!port_arg(w[i])) return "error: no such port";
          members.push_back(port);
        }
      }
      if (!core_.set_group(group, members))
        return "error: group IDs are 61440..63487 (63488.. are joined by "
               "the nodes)";
      return "ok";
    }
    if (w[0] == "members" && w.size() == 2) {
      uint16_t group;
      if (!parse_uint(w[1], &group) ||
          !rhinet::fabric::GroupTable::is_group(group))
        return "error: group IDs are 61440..65534";
      std::string out = "ok";
      for (unsigned m : core_.group_members(group))
        out += " " + std::to_string(m);
      return out;
    }
    if (w[0] == "map" && w.size() == 3) {
      uint16_t node;
      if (!parse_uint(w[1], &node) || !port_arg(w[2]) ||
          !core_.map_node(node, port))
        return "error: bad node or port";
      return "ok";
    }
    if (w[0] == "seed" && w.size() == 2) {
      uint64_t seed;
      if (!parse_uint(w[1], &seed)) return "error: bad seed";
      core_.reseed(seed);
      return "ok";
    }
    if (w[0] == "pcap" && w.size() == 2) {
      if (w[1] == "off") {
        core_.capture().close();
        return "ok";
      }
      if (!core_.capture().open(std::string(w[1])))
        return "error: cannot open capture file";
      return "ok";
    }
    return "error: unknown command '" + std::string(line) + "'";
  }

 private:
  std::vector<Port> ports_;
  SwitchCore core_;
  int control_fd_ = -1;
};

int control_client(const std::string& dir, int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; i++) line += (i ? " " : "") + std::string(argv[i]);
  const std::string path = dir + "/control.sock";
  sockaddr_un addr;
  if (!unix_address(path, &addr)) return 2;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr))) {
    std::fprintf(stderr, "rhinet-switch: cannot reach %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return 2;
  }
  line += "\n";
  if (write(fd, line.data(), line.size()) != ssize_t(line.size())) return 2;
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) reply.append(buf, size_t(n));
  close(fd);
  std::fputs(reply.c_str(), stdout);
  return reply.rfind("ok", 0) == 0 ? 0 : 1;
}

void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  std::string dir, pcap, stats_file;
  unsigned ports = 2;
  uint64_t seed = 1;
  FaultSpec fault;
  std::vector<std::string> fault_args;  // "loss=0.1" from --loss 0.1
  for (int i = 1; i < argc; i++) {
    const std::string_view a = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rhinet-switch: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dump") {
      return rhinet::fabric::dump_capture(std::string(value())) ? 0 : 1;
    } else if (a == "--ctl") {
      const std::string d(value());
      return control_client(d, argc - i - 1, argv + i + 1);
    } else if (a == "--dir") {
      dir = value();
    } else if (a == "--ports") {
      if (!parse_uint(value(), &ports) || ports < 1 || ports > 1024) {
        std::fprintf(stderr, "rhinet-switch: --ports must be 1..1024\n");
        return 2;
      }
    } else if (a == "--seed") {
      if (!parse_uint(value(), &seed)) {
        std::fprintf(stderr, "rhinet-switch: --seed must be a number\n");
        return 2;
      }
    } else if (a == "--loss" || a == "--dup" || a == "--reorder" ||
               a == "--corrupt") {
      fault_args.push_back(std::string(a.substr(2)) + "=" +
                           std::string(value()));
    } else if (a == "--pcap") {
      pcap = value();
    } else if (a == "--stats") {
      stats_file = value();
    } else {
      std::fprintf(stderr, "rhinet-switch: unknown argument '%s'\n", argv[i]);
      usage();
      return 2;
    }
  }
  if (dir.empty()) {
    usage();
    return 2;
  }
  const std::vector<std::string_view> fault_words(fault_args.begin(),
                                                  fault_args.end());
  const std::string err = apply_fault_words(fault_words, &fault);
  if (!err.empty()) {
    std::fprintf(stderr, "rhinet-switch: %s\n", err.c_str());
    return 2;
  }

  SwitchProgram sw(ports, seed);
  sw.core().set_fault(-1, fault);
  if (!pcap.empty() && !sw.core().capture().open(pcap)) {
    std::fprintf(stderr, "rhinet-switch: cannot open %s\n", pcap.c_str());
    return 2;
  }
  mkdir(dir.c_str(), 0700);
  if (!sw.open(dir)) return 1;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "rhinet-switch: %u ports in %s\n", ports, dir.c_str());
  sw.run();
  const std::string stats = sw.core().stats_text();
  if (!stats_file.empty()) {
    if (std::FILE* f = std::fopen(stats_file.c_str(), "w")) {
      std::fputs(stats.c_str(), f);
      std::fclose(f);
    }
  }
  std::fputs(stats.c_str(), stderr);
  return 0;
}
