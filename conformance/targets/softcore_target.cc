// SPDX-License-Identifier: BSD-2-Clause
// T3: the engine as firmware on the soft core. Each node is the firmware
// image (rhinet-fw.elf) running in qemu-system-riscv32, joined by the
// socket link to the QEMU device's library (qemu_device/softcore/), which
// plays the card's blocks: this target is the device around it. Host
// memory, MSI-X and the switch are modelled as for T1; the clock is the
// target's and moves only when every core sleeps with nothing on the way,
// so timers behave as on T1 however slowly the emulated core runs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>

#include "lib/card_shell.h"
#include "lib/host_memory.h"
#include "lib/switch_model.h"
#include "rhinet/hw.h"
#include "rhinet_softcore.h"
#include "target.h"

#ifndef RHINET_FW_IMAGE_DEFAULT
#define RHINET_FW_IMAGE_DEFAULT "rhinet-fw.elf"
#endif

namespace rhinet::conform {
namespace {

constexpr uint16_t kFirstNode = 1;
constexpr uint32_t kDbPages = 64;  // the card configuration's
// How long every core must stay asleep with nothing on the way before the
// target calls the NICs idle (the core polls a while before it sleeps).
constexpr int kQuietChecks = 3;
// Real time a wait may take at most, whatever the NIC time budget: a core
// that never settles must not hang the suite.
constexpr uint64_t kRealLimitNs = 60'000'000'000ull;

uint64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

class CoreNode;

struct World {
  uint64_t now = 1'000'000;
  SwitchModel<CoreNode> fabric;

  // Moves messages both ways once; true if anything moved.
  bool pump(int timeout_ms);
  bool quiet();
  void settle();
  uint64_t next_deadline() const;
  void set_time(uint64_t t);
  // Tells on stderr why the world is not quiet (a wait that gave up).
  void describe_busy() const;
};

class CoreNode final : public Target {
 public:
  CoreNode(std::shared_ptr<World> world, uint16_t node_id)
      : world_(std::move(world)), node_id_(node_id) {
    port_.node_id = node_id;
    static const RhnSoftCoreOps ops = {
        .dma_read = [](void* o, uint64_t a, void* b, uint32_t n) -> int {
          return self(o)->host_.read(a, b, n) ? RHN_CARD_OK
                                              : RHN_CARD_BUS_ERROR;
        },
        .dma_write = [](void* o, uint64_t a, const void* b, uint32_t n) -> int {
          self(o)->activity_++;
          return self(o)->host_.write(a, b, n) ? RHN_CARD_OK
                                               : RHN_CARD_BUS_ERROR;
        },
        .dma_store64 = [](void* o, uint64_t a, uint64_t v) -> int {
          self(o)->activity_++;
          if (a & 7) return RHN_CARD_MISALIGNED;
          return self(o)->host_.write(a, &v, 8) ? RHN_CARD_OK
                                                : RHN_CARD_BUS_ERROR;
        },
        .write_barrier = [](void*) {},
        .irq = [](void* o, uint16_t v) { self(o)->msix_[v]++; },
        .frame_out =
            [](void* o, const void* f, uint32_t n) {
              self(o)->activity_++;
              self(o)->world_->fabric.transmit(
                  self(o), static_cast<const uint8_t*>(f), n);
            },
        .deadline = [](void* o, uint64_t t) { self(o)->deadline_ = t; },
        .reg_set = nullptr,
        .now_ns = [](void* o) { return self(o)->world_->now; },
        .fw_stage = [](void* o, uint32_t off, const void* d,
                       uint32_t n) { return self(o)->shell_.stage(off, d, n); },
        .fw_commit =
            [](void* o, uint32_t len, uint32_t flags) {
              return self(o)->shell_.commit(len, flags);
            },
    };
    const char* image = std::getenv("RHINET_FIRMWARE");
    RhnSoftCoreConfig cfg{};
    cfg.firmware = image && *image ? image : RHINET_FW_IMAGE_DEFAULT;
    cfg.db_pages = kDbPages;
    cfg.node_id = node_id;
    cfg.mac[0] = 0x02;
    cfg.mac[1] = 0x52;
    cfg.mac[2] = 0x4e;
    cfg.mac[4] = static_cast<uint8_t>(node_id >> 8);
    cfg.mac[5] = static_cast<uint8_t>(node_id);
    cfg.ram_mib = 64;
    char err[256] = "";
    sc_ = rhn_sc_spawn(&cfg, &ops, this, err, sizeof(err));
    if (!sc_) {
      std::fprintf(stderr, "softcore target: %s (image %s)\n", err,
                   cfg.firmware);
      std::abort();
    }
    // The cable is plugged in at power-on.
    rhn_sc_set_link(sc_, true);
    world_->fabric.attach(this);
    world_->settle();
  }
  ~CoreNode() override {
    peer_.reset();
    world_->fabric.detach(this);
    block_frames_total += rhn_sc_txw_frames(sc_);
    rhn_sc_free(sc_);
  }
  // Frames the device's transmit block for plain WRITEs sent for every
  // node so far: the run's proof that the block was used (printed at
  // exit).
  static inline uint64_t block_frames_total = 0;

  RhnSoftCore* core() { return sc_; }
  uint16_t node_id() const { return node_id_; }
  SwitchPort& port() { return port_; }
  uint64_t deadline() const { return deadline_; }
  uint64_t activity() const { return activity_; }

  // ---- Target ----
  std::string name() const override { return "softcore"; }
  uint64_t reg_read(uint32_t offset, unsigned size) override {
    // The register file answers, as it does a host's read; what the core
    // sent before is in it once the link is drained.
    world_->pump(0);
    uint64_t v;
    if (shell_.reg_read(offset, size, v)) return v;
    return rhn_sc_bar0_read(sc_, offset, size);
  }
  void reg_write(uint32_t offset, uint64_t value, unsigned size) override {
    shell_.reg_written(offset, value);
    rhn_sc_bar0_write(sc_, offset, value, size);
    world_->pump(0);
  }
  void doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                      unsigned size) override {
    rhn_sc_bar2_write(sc_, (uint64_t{page} << RHN_DB_PAGE_SHIFT) | offset,
                      value, size);
    world_->pump(0);
  }
  uint64_t dma_alloc(size_t len, size_t align) override {
    return host_.alloc(len, align);
  }
  void mem_write(uint64_t bus, const void* src, size_t len) override {
    host_.write(bus, src, len);
  }
  void mem_read(uint64_t bus, void* dst, size_t len) override {
    world_->pump(0);
    host_.cpu_read(bus, dst, len);
  }
  uint64_t bad_bus_address() const override {
    return HostMemory::bad_address();
  }
  uint64_t msix_count(uint16_t vector) override {
    world_->pump(0);
    auto it = msix_.find(vector);
    return it == msix_.end() ? 0 : it->second;
  }
  void inject_frame(const Frame& frame) override {
    world_->fabric.inject(this, frame);
  }
  std::vector<Frame> take_tx_frames() override {
    world_->pump(0);
    return port_.take();
  }
  void set_forwarding(bool on) override { port_.forwarding = on; }
  void settle() override { world_->settle(); }
  bool wait_until(const std::function<bool()>& pred,
                  uint64_t budget_ns) override {
    const uint64_t end = world_->now + budget_ns;
    const uint64_t real_end = real_ns() + kRealLimitNs;
    for (;;) {
      if (pred()) return true;
      if (world_->pump(1)) continue;
      if (!world_->quiet()) {
        if (real_ns() > real_end) {
          if (pred()) return true;
          world_->describe_busy();
          return false;
        }
        continue;
      }
      if (pred()) return true;
      if (world_->now >= end) return false;
      // Every core sleeps: time moves to the next timer, but never more
      // than an eighth of what is left at once (at least 1 ms), so a core
      // that looked asleep a moment too early (on a loaded host) still
      // gets its turns before the wait gives up.
      const uint64_t step =
          std::max<uint64_t>((end - world_->now) / 8, 1'000'000);
      world_->set_time(
          std::min({std::max(world_->next_deadline(), world_->now + 1),
                    world_->now + step, end}));
    }
  }
  void advance(uint64_t ns) override {
    const uint64_t end = world_->now + ns;
    for (;;) {
      world_->settle();
      const uint64_t next = world_->next_deadline();
      if (next > end) break;
      world_->set_time(std::max(next, world_->now + 1));
    }
    world_->set_time(end);
    world_->settle();
  }
  Target* peer() override {
    if (world_->fabric.nodes.size() < 2) {
      peer_ = std::make_unique<CoreNode>(world_, node_id_ + 1);
      peer_->peer_of_ = this;
    }
    if (peer_) return peer_.get();
    return peer_of_;
  }

 private:
  static CoreNode* self(void* o) { return static_cast<CoreNode*>(o); }

  std::shared_ptr<World> world_;
  uint16_t node_id_;
  CardShell shell_{RHN_BOARD_QEMU_SOFTCORE, node_id_};
  RhnSoftCore* sc_ = nullptr;
  HostMemory host_;
  std::map<uint16_t, uint64_t> msix_;
  SwitchPort port_;
  uint64_t deadline_ = UINT64_MAX;
  uint64_t activity_ = 0;
  std::unique_ptr<CoreNode> peer_;
  CoreNode* peer_of_ = nullptr;
};

bool World::pump(int timeout_ms) {
  bool did = fabric.deliver([](CoreNode* to, const Frame& f) {
    rhn_sc_frame_in(to->core(), f.data(), static_cast<uint32_t>(f.size()));
  });
  for (CoreNode* n : fabric.nodes) {
    const uint64_t before = n->activity();
    if (rhn_sc_run(n->core(), fabric.nodes.size() > 1 ? 0 : timeout_ms) < 0) {
      std::fprintf(stderr, "softcore target: node link down: %s\n",
                   rhn_sc_error(n->core()));
      std::abort();
    }
    did |= n->activity() != before;
  }
  return did || !fabric.queue.empty();
}

bool World::quiet() {
  for (int i = 0; i < kQuietChecks; i++) {
    if (pump(1)) return false;
    for (CoreNode* n : fabric.nodes)
      if (!rhn_sc_core_idle(n->core())) return false;
  }
  return fabric.queue.empty();
}

void World::settle() {
  const uint64_t real_end = real_ns() + kRealLimitNs;
  while (!quiet() && real_ns() < real_end) {
  }
}

void World::describe_busy() const {
  char buf[512];
  for (CoreNode* n : fabric.nodes)
    std::fprintf(stderr, "softcore target: node %u %s: %s\n", n->node_id(),
                 rhn_sc_core_idle(n->core()) ? "idle" : "busy",
                 rhn_sc_describe(n->core(), buf, sizeof(buf)));
  std::fprintf(stderr, "softcore target: %zu frames on the fabric\n",
               fabric.queue.size());
}

uint64_t World::next_deadline() const {
  // A deadline that has passed was served when the core woke (it sends a
  // new one only when it changes): only future ones move the clock.
  uint64_t t = UINT64_MAX;
  for (CoreNode* n : fabric.nodes)
    if (n->deadline() > now) t = std::min(t, n->deadline());
  return t;
}

void World::set_time(uint64_t t) {
  now = t;
  for (CoreNode* n : fabric.nodes) rhn_sc_tick(n->core());
}

}  // namespace

std::unique_ptr<Target> make_softcore_target() {
  static const bool told = [] {
    return std::atexit([] {
             std::fprintf(
                 stderr,
                 "softcore target: the transmit block sent %llu frames\n",
                 static_cast<unsigned long long>(CoreNode::block_frames_total));
           }) == 0;
  }();
  (void)told;
  return std::make_unique<CoreNode>(std::make_shared<World>(), kFirstNode);
}

}  // namespace rhinet::conform
