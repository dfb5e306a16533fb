// SPDX-License-Identifier: BSD-2-Clause
// T2: the QEMU device as a guest's driver sees it. One TCG guest (booted
// by targets/guest_vm.sh on first use, up until the runner exits) holds
// two rhinet devices, node 1 (the target) and node 2 (its peer), under
// rhinet.ko's raw access; the agent in the guest (agent/agent.c) does
// each Target call there, one round trip per call over a virtio-net NIC
// whose other end is this target (agent/agent_proto.h). This target plays the
// switch: both devices' wires end at its sockets, and a thread forwards,
// captures and injects frames with the same SwitchModel as T1.
//
// Time is real: the devices' clocks run on their own. advance() sleeps,
// wait_until() polls with slack for a loaded host, and settle() waits
// until neither the wire nor the devices' counters and MSI-X counts have
// moved for a while.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "agent/agent_proto.h"
#include "lib/switch_model.h"
#include "rhinet/hw.h"
#include "target.h"

#ifndef RHINET_T2_SCRIPT
#define RHINET_T2_SCRIPT "guest_vm.sh"
#endif
#ifndef RHINET_VM_ENV_DEFAULT
#define RHINET_VM_ENV_DEFAULT "build/vm/env"
#endif

namespace rhinet::conform {
namespace {

constexpr uint16_t kNodes[2] = {1, 2};
// The guest boots, loads the modules and starts the agent within this.
constexpr int kBootSeconds = 120;
// settle(): quiet means this long without a frame on the wire or a change
// of any counter or MSI-X count (the device threads may wait a scheduler
// tick or two behind the guest's vCPU on a loaded host) ...
constexpr uint64_t kQuietNs = 8'000'000;
// ... and at least this many equal samples; never longer than kSettleMaxNs.
constexpr int kQuietSamples = 3;
constexpr uint64_t kSettleMaxNs = 2'000'000'000;
// wait_until(): the NIC's budget in real time, times this, plus kWaitBase.
constexpr uint64_t kWaitSlack = 3;
constexpr uint64_t kWaitBaseNs = 100'000'000;
// Where no host memory answers: far above the guest's RAM and holes.
constexpr uint64_t kBadBus = 0x7ff0'0000'0000ull;

uint64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

void sleep_ns(uint64_t ns) {
  timespec ts{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

[[noreturn]] void die(const std::string& why);
// QEMU's process group, for die() to end it.
std::atomic<pid_t> g_qemu{-1};

// One device's wire: the socket its NIC connected to, and its port.
struct WirePort {
  int fd = -1;
  SwitchPort sp;
  std::vector<uint8_t> rx;
  SwitchPort& port() { return sp; }
};

// The guest, the agent's channel and the switch, shared by every target
// the runner makes (the VM stays up across cases).
class GuestVm {
 public:
  static GuestVm& get() {
    static GuestVm vm;
    return vm;
  }

  // One request, its answer; payload in and out.
  int64_t call(rca_req q, const void* in = nullptr, uint32_t in_len = 0,
               void* out = nullptr, uint32_t out_len = 0,
               uint64_t* value = nullptr) {
    q.magic = RCA_MAGIC;
    q.len = in_len;
    std::vector<uint8_t> msg(sizeof(q) + in_len);
    std::memcpy(msg.data(), &q, sizeof(q));
    if (in_len) std::memcpy(msg.data() + sizeof(q), in, in_len);
    if (!send_all(msg.data(), msg.size())) die("agent channel closed (send)");
    rca_resp r;
    if (!recv_all(&r, sizeof(r)) || r.magic != RCA_MAGIC)
      die("agent channel closed (answer)");
    if (r.len > RCA_MAX_PAYLOAD) die("agent answer too long");
    std::vector<uint8_t> buf(r.len);
    if (r.len && !recv_all(buf.data(), r.len))
      die("agent channel closed (payload)");
    if (out) std::memcpy(out, buf.data(), std::min(out_len, r.len));
    if (value) *value = r.value;
    return r.err ? -int64_t(r.err) : int64_t(r.len);
  }

  // The agent's device index of node slot i (0: node 1, 1: node 2).
  uint8_t dev(int slot) const { return dev_of_[slot]; }
  uint32_t vectors() const { return vectors_; }

  // ---- The switch (its own thread; these lock) ----
  void inject(int slot, const Frame& f) {
    std::lock_guard<std::mutex> g(mu_);
    fabric_.inject(&ports_[slot], f);
    wake();
  }
  std::vector<Frame> take(int slot) {
    std::lock_guard<std::mutex> g(mu_);
    return ports_[slot].sp.take();
  }
  void set_forwarding(int slot, bool on) {
    std::lock_guard<std::mutex> g(mu_);
    ports_[slot].sp.forwarding = on;
  }
  uint64_t frames_moved() const { return frames_.load(); }
  uint64_t last_frame_ns() const { return last_frame_ns_.load(); }
  // Drops everything on the way and what was captured, and restores the
  // default forwarding (a fresh target).
  void clear_wire() {
    std::lock_guard<std::mutex> g(mu_);
    fabric_.queue.clear();
    for (auto& p : ports_) {
      p.sp.tx.clear();
      p.sp.forwarding = true;
    }
  }
  void set_dropping(bool on) { dropping_.store(on); }

 private:
  GuestVm() {
    const char* env = std::getenv("RHINET_VM_ENV");
    const char* script = std::getenv("RHINET_T2_SCRIPT");
    env_ = env && *env ? env : RHINET_VM_ENV_DEFAULT;
    script_ = script && *script ? script : RHINET_T2_SCRIPT;
    char tmpl[] = "/tmp/rhn-t2.XXXXXX";
    if (!mkdtemp(tmpl)) die("mkdtemp");
    dir_ = tmpl;
    const int agent_l = listen_on(dir_ + "/agent.sock");
    int wire_l[2];
    for (int i = 0; i < 2; i++) {
      wire_l[i] =
          listen_on(dir_ + "/port" + std::to_string(kNodes[i]) + ".sock");
      ports_[i].sp.node_id = kNodes[i];
      fabric_.attach(&ports_[i]);
    }
    qemu_ = fork();
    if (qemu_ < 0) die("fork");
    if (qemu_ == 0) {
      setpgid(0, 0);
      // Not our sockets, nor a lock the runner's caller holds (flock).
      close_range(3, ~0u, 0);
      execlp("bash", "bash", script_.c_str(), env_.c_str(), dir_.c_str(),
             nullptr);
      _exit(127);
    }
    g_qemu.store(qemu_);
    agent_ = accept_from(agent_l, "agent's NIC");
    for (int i = 0; i < 2; i++) {
      ports_[i].fd = accept_from(wire_l[i], "device wire");
      close(wire_l[i]);
    }
    close(agent_l);
    // No answer takes a minute: a guest that stopped serving fails the
    // run instead of hanging it.
    timeval limit{60, 0};
    setsockopt(agent_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    rca_resp hello;
    if (!wait_readable(agent_, kBootSeconds * 1000) ||
        !recv_all(&hello, sizeof(hello)) || hello.magic != RCA_MAGIC ||
        hello.value != RCA_DEVICES)
      die("no hello from the guest's agent");
    if (pipe(wake_) != 0) die("pipe");
    switch_ = std::thread([this] { switch_loop(); });
    // Which raw device is which node.
    for (uint8_t d = 0; d < RCA_DEVICES; d++) {
      uint64_t node = 0;
      rca_req q{};
      q.op = RCA_REG_READ;
      q.dev = d;
      q.size = 4;
      q.a = RHN_REG_NODE_ID;
      if (call(q, nullptr, 0, nullptr, 0, &node) < 0) die("NODE_ID read");
      for (int i = 0; i < 2; i++)
        if ((node & 0xffff) == kNodes[i]) dev_of_[i] = d;
    }
    if (dev_of_[0] == dev_of_[1]) die("the guest's devices are not nodes 1, 2");
    rca_req q{};
    q.op = RCA_REG_READ;
    q.dev = 0;
    q.size = 4;
    q.a = RHN_REG_MSIX_VECTORS;
    uint64_t v = 0;
    if (call(q, nullptr, 0, nullptr, 0, &v) < 0) die("MSIX_VECTORS read");
    vectors_ = uint32_t(v);
    std::fprintf(stderr, "guest target: VM up in %s (log guest.log)\n",
                 dir_.c_str());
  }
  ~GuestVm() {
    stop_.store(true);
    wake();
    if (switch_.joinable()) switch_.join();
    close(agent_);
    if (qemu_ > 0) {
      kill(-qemu_, SIGTERM);
      waitpid(qemu_, nullptr, 0);
    }
    for (auto& p : ports_) close(p.fd);
    const std::string rm = "rm -rf '" + dir_ + "'";
    if (std::system(rm.c_str()) != 0) {
      // Only a temporary directory left behind.
    }
  }

  static int listen_on(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof(a.sun_path)) die("socket path too long");
    std::strcpy(a.sun_path, path.c_str());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) ||
        listen(fd, 1))
      die("listen on " + path);
    return fd;
  }
  int accept_from(int lfd, const char* what) {
    const uint64_t end = real_ns() + uint64_t(kBootSeconds) * 1'000'000'000;
    while (real_ns() < end) {
      if (wait_readable(lfd, 100)) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) return fd;
      }
      if (waitpid(qemu_, nullptr, WNOHANG) == qemu_) {
        qemu_ = -1;
        die(std::string("QEMU exited before its ") + what + " connected");
      }
    }
    die(std::string("no ") + what + " connection");
  }
  static bool wait_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, ms) > 0;
  }
  // The agent's channel (agent_proto.h): the stream's bytes in Ethernet
  // frames, each behind the netdev's 4-byte length.
  bool send_all(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    while (n) {
      const size_t k = std::min<size_t>(n, RCA_FRAME_DATA);
      const size_t flen = 14 + 2 + k;
      std::vector<uint8_t> f(4 + flen);
      f[0] = uint8_t(flen >> 24);
      f[1] = uint8_t(flen >> 16);
      f[2] = uint8_t(flen >> 8);
      f[3] = uint8_t(flen);
      std::memset(&f[4], 0xff, 6);  // to: broadcast
      const uint8_t from[6] = {0x02, 0x52, 0x43, 0x41, 0x00, 0x01};
      std::memcpy(&f[10], from, 6);
      f[16] = RCA_ETHERTYPE >> 8;
      f[17] = RCA_ETHERTYPE & 0xff;
      f[18] = uint8_t(k);
      f[19] = uint8_t(k >> 8);
      std::memcpy(&f[20], b, k);
      if (!write_all(agent_, f.data(), f.size())) return false;
      b += k;
      n -= k;
    }
    return true;
  }
  bool recv_all(void* p, size_t n) {
    auto* b = static_cast<uint8_t*>(p);
    while (n) {
      if (chan_off_ == chan_data_.size()) {
        uint8_t len4[4];
        if (!read_all(agent_, len4, 4)) return false;
        const uint32_t flen = uint32_t(len4[0]) << 24 |
                              uint32_t(len4[1]) << 16 | uint32_t(len4[2]) << 8 |
                              len4[3];
        if (flen > 65536) return false;
        std::vector<uint8_t> f(flen);
        if (!read_all(agent_, f.data(), flen)) return false;
        // Other frames of the guest's (IPv6 neighbour discovery) pass by.
        if (flen < 16 || (f[12] << 8 | f[13]) != RCA_ETHERTYPE) continue;
        const size_t count = f[14] | size_t(f[15]) << 8;
        if (count > flen - 16) return false;
        chan_data_.assign(f.begin() + 16, f.begin() + 16 + long(count));
        chan_off_ = 0;
        continue;
      }
      const size_t k = std::min(n, chan_data_.size() - chan_off_);
      std::memcpy(b, chan_data_.data() + chan_off_, k);
      chan_off_ += k;
      b += k;
      n -= k;
    }
    return true;
  }
  static bool write_all(int fd, const uint8_t* b, size_t n) {
    while (n) {
      ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      b += k;
      n -= size_t(k);
    }
    return true;
  }
  static bool read_all(int fd, uint8_t* b, size_t n) {
    while (n) {
      ssize_t k = recv(fd, b, n, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      b += k;
      n -= size_t(k);
    }
    return true;
  }
  void wake() {
    const char c = 0;
    if (write(wake_[1], &c, 1) < 0) {
      // The pipe is full: the thread wakes anyway.
    }
  }

  // Reads what a device sent, frame by frame, into the switch; writes
  // what the switch delivers. Until the target is gone.
  void switch_loop() {
    uint8_t buf[65536];
    while (!stop_.load()) {
      pollfd p[3] = {{ports_[0].fd, POLLIN, 0},
                     {ports_[1].fd, POLLIN, 0},
                     {wake_[0], POLLIN, 0}};
      poll(p, 3, 100);
      if (p[2].revents & POLLIN) {
        char drain[64];
        if (read(wake_[0], drain, sizeof(drain)) < 0) {
          // Nothing to drain.
        }
      }
      for (int i = 0; i < 2; i++) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = recv(ports_[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0) {
          if (!stop_.load()) die("a device's wire closed");
          return;
        }
        if (n < 0) continue;
        auto& rx = ports_[i].rx;
        rx.insert(rx.end(), buf, buf + n);
        size_t off = 0;
        std::lock_guard<std::mutex> g(mu_);
        while (rx.size() - off >= 4) {
          const uint32_t len = uint32_t(rx[off]) << 24 |
                               uint32_t(rx[off + 1]) << 16 |
                               uint32_t(rx[off + 2]) << 8 | rx[off + 3];
          if (rx.size() - off - 4 < len) break;
          if (!dropping_.load())
            fabric_.transmit(&ports_[i], rx.data() + off + 4, len);
          frames_++;
          last_frame_ns_.store(real_ns());
          off += 4 + len;
        }
        rx.erase(rx.begin(), rx.begin() + long(off));
      }
      deliver();
    }
  }
  void deliver() {
    std::lock_guard<std::mutex> g(mu_);
    fabric_.deliver([this](WirePort* to, const Frame& f) {
      if (dropping_.load()) return;
      uint8_t hdr[4] = {uint8_t(f.size() >> 24), uint8_t(f.size() >> 16),
                        uint8_t(f.size() >> 8), uint8_t(f.size())};
      std::vector<uint8_t> out(hdr, hdr + 4);
      out.insert(out.end(), f.begin(), f.end());
      size_t done = 0;
      while (done < out.size()) {
        ssize_t k =
            send(to->fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) die("a device's wire refused a frame");
        done += size_t(k);
      }
      frames_++;
      last_frame_ns_.store(real_ns());
    });
  }

  std::string env_, script_, dir_;
  pid_t qemu_ = -1;
  int agent_ = -1;
  std::vector<uint8_t> chan_data_;  // the agent's frame being read
  size_t chan_off_ = 0;
  int wake_[2] = {-1, -1};
  uint8_t dev_of_[2] = {0, 1};
  uint32_t vectors_ = 0;
  std::mutex mu_;
  WirePort ports_[2];
  SwitchModel<WirePort> fabric_;
  std::thread switch_;
  std::atomic<bool> stop_{false}, dropping_{false};
  std::atomic<uint64_t> frames_{0}, last_frame_ns_{0};
};

void die(const std::string& why) {
  std::fprintf(stderr, "guest target: %s (guest console in /tmp/rhn-t2.*)\n",
               why.c_str());
  std::fflush(nullptr);
  if (g_qemu.load() > 0) kill(-g_qemu.load(), SIGKILL);
  std::_Exit(3);
}

// What both nodes of one target share: the MSI-X baselines.
struct Session {
  std::vector<uint64_t> base[2];
};

class GuestNode final : public Target {
 public:
  GuestNode(std::shared_ptr<Session> s, int slot)
      : s_(std::move(s)), slot_(slot), vm_(GuestVm::get()) {}

  std::string name() const override { return "guest"; }
  uint64_t reg_read(uint32_t offset, unsigned size) override {
    rca_req q = req(RCA_REG_READ);
    q.a = offset;
    q.size = uint8_t(size);
    uint64_t v = 0;
    // A refused access reads as a bus error would: all ones.
    if (vm_.call(q, nullptr, 0, nullptr, 0, &v) < 0)
      return size == 8 ? ~0ull : 0xffff'ffffull;
    return v;
  }
  void reg_write(uint32_t offset, uint64_t value, unsigned size) override {
    rca_req q = req(RCA_REG_WRITE);
    q.a = offset;
    q.size = uint8_t(size);
    q.x = value;
    vm_.call(q);
  }
  void doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                      unsigned size) override {
    rca_req q = req(RCA_DB_WRITE);
    q.a = page;
    q.b = offset;
    q.size = uint8_t(size);
    q.x = value;
    vm_.call(q);
  }
  uint64_t dma_alloc(size_t len, size_t align) override {
    rca_req q = req(RCA_DMA_ALLOC);
    q.x = len;
    q.y = align;
    uint64_t bus = 0;
    return vm_.call(q, nullptr, 0, nullptr, 0, &bus) < 0 ? 0 : bus;
  }
  void mem_write(uint64_t bus, const void* src, size_t len) override {
    auto* p = static_cast<const uint8_t*>(src);
    while (len) {
      const uint32_t n = uint32_t(std::min<size_t>(len, RCA_MAX_PAYLOAD));
      rca_req q = req(RCA_MEM_WRITE);
      q.x = bus;
      vm_.call(q, p, n);
      p += n;
      bus += n;
      len -= n;
    }
  }
  void mem_read(uint64_t bus, void* dst, size_t len) override {
    auto* p = static_cast<uint8_t*>(dst);
    while (len) {
      const uint32_t n = uint32_t(std::min<size_t>(len, RCA_MAX_PAYLOAD));
      rca_req q = req(RCA_MEM_READ);
      q.x = bus;
      q.y = n;
      if (vm_.call(q, nullptr, 0, p, n) < 0) std::memset(p, 0xff, n);
      p += n;
      bus += n;
      len -= n;
    }
  }
  uint64_t bad_bus_address() const override { return kBadBus; }
  uint64_t msix_count(uint16_t vector) override {
    if (vector >= vm_.vectors()) return 0;
    std::vector<uint64_t> c(vm_.vectors());
    rca_req q = req(RCA_MSIX);
    q.a = vm_.vectors();
    if (vm_.call(q, nullptr, 0, c.data(), uint32_t(c.size() * 8)) < 0) return 0;
    return c[vector] - s_->base[slot_][vector];
  }
  void inject_frame(const Frame& frame) override { vm_.inject(slot_, frame); }
  std::vector<Frame> take_tx_frames() override { return vm_.take(slot_); }
  void set_forwarding(bool on) override { vm_.set_forwarding(slot_, on); }

  void settle() override {
    const uint64_t start = real_ns();
    std::vector<uint64_t> last = snapshot();
    uint64_t frames = vm_.frames_moved();
    uint64_t quiet_since = real_ns();
    int equal = 0;
    while (real_ns() - start < kSettleMaxNs) {
      sleep_ns(1'000'000);
      std::vector<uint64_t> now = snapshot();
      const uint64_t f = vm_.frames_moved();
      if (now != last || f != frames) {
        last.swap(now);
        frames = f;
        quiet_since = real_ns();
        equal = 0;
        continue;
      }
      if (++equal >= kQuietSamples && real_ns() - quiet_since >= kQuietNs)
        return;
    }
  }
  bool wait_until(const std::function<bool()>& pred,
                  uint64_t budget_ns) override {
    const uint64_t end = real_ns() + budget_ns * kWaitSlack + kWaitBaseNs;
    for (;;) {
      if (pred()) return true;
      if (real_ns() > end) return pred();
      sleep_ns(100'000);
    }
  }
  void advance(uint64_t ns) override {
    sleep_ns(ns);
    settle();
  }
  Target* peer() override {
    if (slot_ == 1) return peer_of_;
    if (!peer_) {
      peer_ = std::make_unique<GuestNode>(s_, 1);
      peer_->peer_of_ = this;
    }
    return peer_.get();
  }

  // The NIC as just powered on: both devices reset, their buffers freed,
  // nothing on the wire, MSI-X counted from here.
  void fresh() {
    vm_.set_dropping(true);
    rca_req q{};
    q.op = RCA_FRESH;
    std::vector<uint64_t> counts(size_t(vm_.vectors()) * RCA_DEVICES);
    if (vm_.call(q, nullptr, 0, counts.data(), uint32_t(counts.size() * 8)) < 0)
      die("the agent could not reset the devices");
    // Frames the devices sent before the reset may still be on the way.
    const uint64_t start = real_ns();
    while (real_ns() - vm_.last_frame_ns() < 3'000'000 &&
           real_ns() - start < 1'000'000'000)
      sleep_ns(1'000'000);
    vm_.clear_wire();
    vm_.set_dropping(false);
    for (int i = 0; i < 2; i++) {
      const uint8_t d = vm_.dev(i);
      s_->base[i].assign(counts.begin() + long(d) * vm_.vectors(),
                         counts.begin() + long(d + 1) * vm_.vectors());
    }
  }

 private:
  rca_req req(uint8_t op) const {
    rca_req q{};
    q.op = op;
    q.dev = vm_.dev(slot_);
    return q;
  }
  std::vector<uint64_t> snapshot() {
    rca_req q{};
    q.op = RCA_SNAPSHOT;
    q.a = RHN_CNT_COUNT;
    q.b = vm_.vectors();
    std::vector<uint64_t> v(size_t(q.a + q.b) * RCA_DEVICES);
    if (vm_.call(q, nullptr, 0, v.data(), uint32_t(v.size() * 8)) < 0)
      die("snapshot failed");
    return v;
  }

  std::shared_ptr<Session> s_;
  int slot_;
  GuestVm& vm_;
  std::unique_ptr<GuestNode> peer_;
  GuestNode* peer_of_ = nullptr;
};

}  // namespace

std::unique_ptr<Target> make_guest_target() {
  auto t = std::make_unique<GuestNode>(std::make_shared<Session>(), 0);
  t->fresh();
  return t;
}

}  // namespace rhinet::conform
