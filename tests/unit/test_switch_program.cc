// SPDX-License-Identifier: BSD-2-Clause
// The rhinet-switch program itself: QEMU stream framing on unix sockets,
// routing, control commands at run time, malformed input, capture.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fabric_frames.h"
#include "rhinet/hw_wire.h"

extern char** environ;

namespace {

std::vector<uint8_t> frame(uint16_t src, uint16_t dst, size_t payload) {
  return rhinet::test::fabric_frame(src, dst, RHN_PKT_RAW, payload, 0x5a);
}

class SwitchProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rhn-swtest.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    pid_ = spawn({RHINET_SWITCH_BIN, "--dir", dir_, "--ports", "3", "--seed",
                  "5", "--stats", dir_ + "/stats"});
    for (int i = 0; i < 200 && access((dir_ + "/control.sock").c_str(), F_OK);
         i++)
      usleep(10'000);
    for (int p = 0; p < 3; p++) fds_[p] = connect_port(p);
  }
  void TearDown() override {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }

  static pid_t spawn(std::vector<std::string> args, int* status = nullptr) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ))
      return -1;
    if (status) waitpid(pid, status, 0);
    return pid;
  }

  int connect_port(int port) {
    const std::string path = dir_ + "/port" + std::to_string(port) + ".sock";
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)) {
      close(fd);
      return -1;
    }
    return fd;
  }

  static void send_raw(int fd, const std::vector<uint8_t>& bytes) {
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  }
  static void send_frame(int fd, const std::vector<uint8_t>& f) {
    std::vector<uint8_t> b = {uint8_t(f.size() >> 24), uint8_t(f.size() >> 16),
                              uint8_t(f.size() >> 8), uint8_t(f.size())};
    b.insert(b.end(), f.begin(), f.end());
    send_raw(fd, b);
  }
  // Frames that arrive on `fd`: waits up to `ms` for the first bytes (the
  // switch may be slow to run on a loaded machine), then takes what follows
  // until the line is quiet for 20 ms.
  static std::vector<std::vector<uint8_t>> receive(int fd, int ms = 1000) {
    std::vector<uint8_t> buf;
    pollfd p{fd, POLLIN, 0};
    for (int wait = ms; poll(&p, 1, wait) > 0; wait = 20) {
      uint8_t tmp[65536];
      const ssize_t n = read(fd, tmp, sizeof tmp);
      if (n <= 0) break;
      buf.insert(buf.end(), tmp, tmp + n);
    }
    std::vector<std::vector<uint8_t>> out;
    size_t off = 0;
    while (buf.size() - off >= 4) {
      const size_t len = size_t(buf[off]) << 24 | size_t(buf[off + 1]) << 16 |
                         size_t(buf[off + 2]) << 8 | buf[off + 3];
      if (buf.size() - off - 4 < len) break;
      out.emplace_back(buf.begin() + long(off + 4),
                       buf.begin() + long(off + 4 + len));
      off += 4 + len;
    }
    return out;
  }
  // Runs `rhinet-switch --ctl`; returns its exit status.
  int ctl(std::vector<std::string> words) {
    words.insert(words.begin(), {RHINET_SWITCH_BIN, "--ctl", dir_});
    int status = 0;
    spawn(words, &status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string dir_;
  pid_t pid_ = -1;
  int fds_[3] = {-1, -1, -1};
};

TEST_F(SwitchProgram, RoutesFramesBetweenSocketPorts) {
  ASSERT_GE(fds_[2], 0);
  const auto f = frame(0, 2, 100);
  send_frame(fds_[0], f);
  const auto got = receive(fds_[2]);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], f);
  EXPECT_TRUE(receive(fds_[1], 50).empty());

  send_frame(fds_[1], frame(1, RHN_NODE_BROADCAST, 10));
  EXPECT_EQ(receive(fds_[0]).size(), 1u);
  EXPECT_EQ(receive(fds_[2]).size(), 1u);
}

TEST_F(SwitchProgram, ControlCommandsChangeTheFabricAtRunTime) {
  EXPECT_EQ(ctl({"fault", "2", "loss=1"}), 0);
  send_frame(fds_[0], frame(0, 2, 8));
  EXPECT_TRUE(receive(fds_[2], 100).empty());
  EXPECT_EQ(ctl({"fault", "all"}), 0);  // no faults named: all cleared
  send_frame(fds_[0], frame(0, 2, 8));
  EXPECT_EQ(receive(fds_[2]).size(), 1u);

  EXPECT_EQ(ctl({"link", "2", "down", "300"}), 0);
  send_frame(fds_[0], frame(0, 2, 8));
  EXPECT_TRUE(receive(fds_[2], 100).empty());
  usleep(400'000);  // the link comes back by itself
  send_frame(fds_[0], frame(0, 2, 8));
  EXPECT_EQ(receive(fds_[2]).size(), 1u);

  EXPECT_EQ(ctl({"group", "61441", "1", "2"}), 0);
  send_frame(fds_[0], frame(0, 61441, 8));
  EXPECT_EQ(receive(fds_[1]).size(), 1u);
  EXPECT_EQ(receive(fds_[2]).size(), 1u);

  EXPECT_NE(ctl({"fault", "9", "loss=0.5"}), 0);  // no port 9
  EXPECT_NE(ctl({"fault", "all", "loss=2"}), 0);  // not a probability
  EXPECT_NE(ctl({"group", "5", "1"}), 0);         // not a group ID
  EXPECT_NE(ctl({"frobnicate"}), 0);
}

TEST_F(SwitchProgram, CountsMalformedInputAndSurvivesBrokenFraming) {
  auto bad = frame(0, 1, 8);
  bad[0] ^= 0xff;  // magic
  send_frame(fds_[0], bad);
  send_frame(fds_[0], std::vector<uint8_t>(3, 0));  // runt
  // A length beyond any frame: the stream is cut.
  send_raw(fds_[0], {0xff, 0xff, 0xff, 0xff, 1, 2, 3});
  usleep(100'000);
  EXPECT_EQ(ctl({"stats"}), 0);
  // The port can be used again by a new connection.
  close(fds_[0]);
  fds_[0] = connect_port(0);
  ASSERT_GE(fds_[0], 0);
  usleep(50'000);
  send_frame(fds_[0], frame(0, 1, 8));
  EXPECT_EQ(receive(fds_[1]).size(), 1u);

  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  std::ifstream stats(dir_ + "/stats");
  std::string port0;
  std::getline(stats, port0);
  EXPECT_NE(port0.find("malformed=3"), std::string::npos) << port0;
}

// A port's node is the one wired to it (node i on port i, or `map`): a
// frame claiming another is dropped and counted, and moves no node.
TEST_F(SwitchProgram, DropsFramesThatClaimAnotherPortsNode) {
  ASSERT_GE(fds_[2], 0);
  send_frame(fds_[1], frame(0, 2, 8));  // port 1 says "node 0"
  EXPECT_TRUE(receive(fds_[2], 100).empty());
  send_frame(fds_[2], frame(2, 0, 8));
  EXPECT_EQ(receive(fds_[0]).size(), 1u);  // node 0 is still on port 0
  EXPECT_TRUE(receive(fds_[1], 50).empty());
  EXPECT_EQ(ctl({"map", "7", "1"}), 0);  // the administrator rewires port 1
  send_frame(fds_[1], frame(7, 2, 8));
  EXPECT_EQ(receive(fds_[2]).size(), 1u);

  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  std::ifstream stats(dir_ + "/stats");
  std::string line, port1;
  while (std::getline(stats, line))
    if (line.rfind("port 1 ", 0) == 0) port1 = line;
  EXPECT_NE(port1.find(" spoofed=1"), std::string::npos) << port1;
}

TEST_F(SwitchProgram, CapturesAndDecodesFrames) {
  const std::string pcap = dir_ + "/cap.pcap";
  EXPECT_EQ(ctl({"pcap", pcap}), 0);
  send_frame(fds_[0], frame(0, 1, 20));
  EXPECT_EQ(receive(fds_[1]).size(), 1u);
  EXPECT_EQ(ctl({"pcap", "off"}), 0);
  const std::string out = dir_ + "/dump.txt";
  const std::string cmd =
      std::string(RHINET_SWITCH_BIN) + " --dump " + pcap + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream dump(out);
  std::string line;
  std::getline(dump, line);
  EXPECT_NE(line.find("RAW 0->1"), std::string::npos) << line;
  EXPECT_NE(line.find("len=52"), std::string::npos) << line;
}

}  // namespace
