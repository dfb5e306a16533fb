// SPDX-License-Identifier: BSD-2-Clause
// The fabric's own floor: the round trip of one small frame
// through the real rhinet-switch and back, natively, no QEMU. Two
// processes stand for two nodes, each connected to its switch port's unix
// socket with QEMU's stream framing (4-byte big-endian length, then the
// frame), as a QEMU netdev is: node 0 sends a 72-byte DATA frame to node 1,
// node 1's process sends one back, node 0 times the trip. Each side blocks
// in poll() as a QEMU main loop does, so every trip pays the switch's
// wake-ups and the peer process's: what the device path can at best
// reach over this fabric on this machine.
//
//   fabric_floor [--switch PATH] [--iters N] [--bytes B]
//
// Prints the median, minimum, 90th and 99th percentile and mean in µs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fabric_frames.h"
#include "rhinet/hw_wire.h"

namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n) {
    const ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

bool read_all(int fd, uint8_t* p, size_t n) {
  while (n) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 5000) <= 0) return false;  // blocks, as a main loop
    const ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
  }
  return true;
}

bool send_frame(int fd, const std::vector<uint8_t>& f) {
  const uint32_t n = uint32_t(f.size());
  const uint8_t len[4] = {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8),
                          uint8_t(n)};
  std::vector<uint8_t> out(len, len + 4);
  out.insert(out.end(), f.begin(), f.end());
  return write_all(fd, out.data(), out.size());
}

bool recv_frame(int fd, std::vector<uint8_t>& f) {
  uint8_t len[4];
  if (!read_all(fd, len, 4)) return false;
  const uint32_t n = uint32_t(len[0]) << 24 | uint32_t(len[1]) << 16 |
                     uint32_t(len[2]) << 8 | len[3];
  if (n > RHN_MAX_FRAME) return false;
  f.resize(n);
  return read_all(fd, f.data(), n);
}

// A DATA frame the switch routes (it checks the header's shape, not the
// CRCs: those are the NICs').
std::vector<uint8_t> data_frame(uint16_t src, uint16_t dst, size_t payload) {
  return rhinet::test::fabric_frame(src, dst, RHN_PKT_DATA, payload, 0);
}

int connect_port(const std::string& path) {
  for (int tries = 0; tries < 500; tries++) {  // the switch is starting
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    usleep(10'000);
  }
  return -1;
}

std::string default_switch(const char* argv0) {
  // build/tests/bench/fabric_floor -> build/fabric/rhinet-switch
  std::string self(argv0);
  const size_t slash = self.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : self.substr(0, slash);
  return dir + "/../../fabric/rhinet-switch";
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1)));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  std::string sw = default_switch(argv[0]);
  int iters = 10000;
  size_t bytes = 0;  // payload beyond the 72 bytes of headers
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--switch" && i + 1 < argc) {
      sw = argv[++i];
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::max(10, std::atoi(argv[++i]));
    } else if (a == "--bytes" && i + 1 < argc) {
      bytes =
          std::min<size_t>(std::strtoul(argv[++i], nullptr, 0), RHN_WIRE_MTU);
    } else {
      std::fprintf(stderr,
                   "usage: fabric_floor [--switch PATH] [--iters N] "
                   "[--bytes B]\n");
      return 2;
    }
  }
  char dir_template[] = "/tmp/rhinet-floor-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) {
    std::perror("fabric_floor: mkdtemp");
    return 1;
  }
  const pid_t sw_pid = fork();
  if (sw_pid == 0) {
    // Its own messages and the counters it prints at exit stay out of
    // the figures' way; the parent says what went wrong.
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execl(sw.c_str(), sw.c_str(), "--dir", dir, "--ports", "2",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string d(dir);
  const int port0 = connect_port(d + "/port0.sock");
  const int port1 = connect_port(d + "/port1.sock");
  int rc = 1;
  if (port0 < 0 || port1 < 0) {
    std::fprintf(stderr, "fabric_floor: no switch ports in %s (switch %s)\n",
                 dir, sw.c_str());
  } else {
    const pid_t echo = fork();
    if (echo == 0) {  // node 1: every frame back to node 0
      close(port0);
      std::vector<uint8_t> f;
      const std::vector<uint8_t> back = data_frame(1, 0, bytes);
      while (recv_frame(port1, f))
        if (!send_frame(port1, back)) break;
      _exit(0);
    }
    close(port1);
    const std::vector<uint8_t> out = data_frame(0, 1, bytes);
    std::vector<uint8_t> in;
    std::vector<double> us;
    us.reserve(size_t(iters));
    bool ok = true;
    for (int i = 0; i < iters + 100 && ok; i++) {  // 100 to warm up
      const auto t0 = Clock::now();
      ok = send_frame(port0, out) && recv_frame(port0, in);
      const double t =
          std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (ok && i >= 100) us.push_back(t);
    }
    close(port0);
    waitpid(echo, nullptr, 0);
    if (!ok || us.empty()) {
      std::fprintf(stderr, "fabric_floor: a frame did not come back\n");
    } else {
      double mean = 0;
      for (double t : us) mean += t;
      mean /= double(us.size());
      std::printf(
          "fabric_floor: %zu-byte frame through rhinet-switch and back, two "
          "processes, %zu trips: median %.1f us, min %.1f, p90 %.1f, p99 "
          "%.1f, mean %.1f\n",
          out.size(), us.size(), percentile(us, 0.5), percentile(us, 0.0),
          percentile(us, 0.9), percentile(us, 0.99), mean);
      rc = 0;
    }
  }
  kill(sw_pid, SIGTERM);
  waitpid(sw_pid, nullptr, 0);
  for (const char* name : {"port0.sock", "port1.sock", "control.sock"})
    unlink((d + "/" + name).c_str());
  rmdir(dir);
  return rc;
}
