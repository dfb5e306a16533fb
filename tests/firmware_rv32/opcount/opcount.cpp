// SPDX-License-Identifier: BSD-2-Clause
// Retired instructions per operation on the engine's paths, counted on the
// soft core's instruction set (Documentation/firmware/instruction-counts.md).
//
// A bare-metal rv32imac image for qemu-system-riscv32 -icount shift=0:
// two engines (node 0 and node 1) built with the firmware's flags, each
// with its own host (a RAM array standing in for host memory, bus address
// = kBusBase + offset) and a wire that hands frames to the other node.
// Both are brought up through the contract only, as the kernel driver
// does: BAR0 registers, admin commands, WQEs in host memory, doorbells,
// CQEs polled in host memory. Then each path runs kOps times after a
// warm-up, and the minstret CSR read at the path's ends gives its count.
//
// What runs inside the host's callbacks (the memcpy standing in for a DMA
// engine, the clock, the wire's copy) is hardware's work on a card, not
// the core's: the callbacks subtract it (g_outside), so a count is the
// engine's own instructions, the calls into HostBus and Wire included.
//
// Output goes through semihosting; main's return value ends QEMU.
#include <stdio.h>
#include <stdlib.h>

#include "card/card_runner.h"
#include "card/mac_crc.h"
#include "card/rx_write_block.h"
#include "card/tx_write_block.h"
#include "core/crc32c.h"
#include "rhinet/fw/card.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "rhinet/hw_wqe.h"

using rhinet::fw::CardMemory;
using rhinet::fw::Engine;
using rhinet::fw::EngineConfig;
using rhinet::fw::Span;

// The engine is built with RHN_FW_CARD, which mirrors its counters into
// the card's counter block; this image has none.
extern "C" void rhn_card_counter_add(unsigned int, uint64_t) {}
extern "C" void rhn_card_counters_clear(void) {}
extern "C" void rhn_card_cq_produced(uint32_t, uint32_t) {}

namespace {

// ---- Counting ----------------------------------------------------------

// The image is built with the firmware's -march=rv32imac; the assembler
// wants Zicsr named before it takes a CSR instruction.
#define RHN_READ_MINSTRET(rd)                    \
  ".option push\n.option arch, +zicsr\ncsrr " rd \
  ", minstret\n"                                 \
  ".option pop\n"

// The low word of minstret: every window is far below 2^32 instructions,
// and unsigned differences survive a wrap.
inline uint32_t instret() {
  uint32_t v;
  asm volatile(RHN_READ_MINSTRET("%0") : "=r"(v));
  return v;
}

// Instructions spent in the stand-in hardware (host and wire callbacks).
uint32_t g_outside = 0;

// The engine's own instructions so far: retired minus the stand-ins'.
inline uint32_t engine_clock() { return instret() - g_outside; }

// Empty functions whose only purpose is their address: a trace of the run
// (QEMU's -d exec, scripts/firmware-opcount.sh --profile) sees where
// windows and stand-ins begin and end. Each writes its own value so the
// compiler does not fold them into one.
volatile uint32_t g_trace_mark;
#define RHN_TRACE_MARK(name, value) \
  [[gnu::noinline]] void name() { g_trace_mark = value; }
RHN_TRACE_MARK(trace_outside_begin, 1)
RHN_TRACE_MARK(trace_outside_end, 2)
RHN_TRACE_MARK(trace_window_end, 3)
RHN_TRACE_MARK(trace_round_mac, 4)     // the round with the MAC's CRCs begins
RHN_TRACE_MARK(trace_round_blocks, 5)  // the round with every block begins
RHN_TRACE_MARK(trace_round_rxw, 6)     // and with the rx placement block
RHN_TRACE_MARK(trace_round_txw, 7)     // and with the tx block for WRITEs

// Brackets a stand-in's work so it is not counted (the marks inside the
// bracket are not counted either).
class Outside {
 public:
  Outside() : start_(instret()) { trace_outside_begin(); }
  ~Outside() {
    trace_outside_end();
    g_outside += instret() - start_;
  }
  Outside(const Outside&) = delete;
  Outside& operator=(const Outside&) = delete;

 private:
  uint32_t start_;
};

// Where a path ends: the first event of each kind in the current window,
// on the engine clock.
struct Marks {
  uint32_t tx = 0;      // a frame handed to the wire
  uint32_t placed = 0;  // a DMA write to the watched data buffer
  uint32_t cqe = 0;     // a CQE published to the watched CQ ring
  bool have_tx = false, have_placed = false, have_cqe = false;
};
Marks g_marks;

// ---- Host memory and the wire -------------------------------------------

constexpr uint64_t kBusBase = 0x10000000;
constexpr size_t kHostBytes = 256 << 10;
constexpr size_t kPage = 4096;
constexpr size_t kFrameMax = 4096;
constexpr uint32_t kMailbox = 64;  // a stream's 32 frames fit

struct Range {
  uint64_t addr = 0;
  uint64_t len = 0;
  bool holds(uint64_t a) const { return len && a >= addr && a - addr < len; }
};

class Host final : public rhinet::fw::HostBus {
 public:
  uint8_t* at(uint64_t bus, size_t len) {
    if (bus < kBusBase || bus - kBusBase > kHostBytes ||
        len > kHostBytes - (bus - kBusBase))
      return nullptr;
    return ram_ + (bus - kBusBase);
  }
  // Pages for rings and buffers, zeroed, never freed.
  uint64_t alloc(size_t bytes) {
    const uint64_t bus = kBusBase + next_;
    next_ += (bytes + kPage - 1) / kPage * kPage;
    if (next_ > kHostBytes) return 0;
    return bus;
  }

  bool dma_read(uint64_t bus_addr, void* dst, size_t len) override {
    Outside o;
    const uint8_t* p = at(bus_addr, len);
    if (p) memcpy(dst, p, len);
    return p != nullptr;
  }
  bool dma_write(uint64_t bus_addr, const void* src, size_t len) override {
    return store(bus_addr, src, len, watch_data, g_marks.placed,
                 g_marks.have_placed);
  }
  bool dma_store_u64(uint64_t bus_addr, uint64_t value) override {
    return dma_write(bus_addr, &value, sizeof value);
  }
  // One call, as a card's DMA block orders the two parts itself.
  bool dma_write_publish(uint64_t bus_addr, const void* src, size_t len,
                         size_t) override {
    return store(bus_addr, src, len, watch_cq, g_marks.cqe, g_marks.have_cqe);
  }
  // The third round's DMA block walks the region's table itself: the walk
  // is the block's work, not the core's (the data's copy is bracketed in
  // dma_read and dma_write as always).
  bool dma_region(const rhinet::fw::DmaRegion& r, uint64_t va, void* buf,
                  size_t len, bool write) override {
    uint32_t walk_start = instret();
    trace_outside_begin();
    auto* p = static_cast<uint8_t*>(buf);
    while (len) {
      uint64_t chunk = len;
      const uint64_t addr = walk(r, va, chunk);
      if (!addr) break;
      trace_outside_end();
      g_outside += instret() - walk_start;
      // The data moves as any DMA does (the first write into the watched
      // buffer marks "data placed").
      if (!(write ? dma_write(addr, p, chunk) : dma_read(addr, p, chunk)))
        return false;
      walk_start = instret();
      trace_outside_begin();
      p += chunk;
      va += chunk;
      len -= chunk;
    }
    trace_outside_end();
    g_outside += instret() - walk_start;
    return len == 0;
  }
  // The receive placement block's write of a payload through the region,
  // outside the count (the caller brackets it). A write into the watched
  // buffer sets placed_by_block: the data was there before the core
  // looked.
  bool region_write(const rhn_card_region& cr, uint64_t va, const uint8_t* p,
                    size_t len) {
    const rhinet::fw::DmaRegion r = rhinet::fw::engine_region(cr);
    while (len) {
      uint64_t chunk = len;
      const uint64_t addr = walk(r, va, chunk);
      uint8_t* dst = addr ? at(addr, chunk) : nullptr;
      if (!dst) return false;
      if (watch_data.holds(addr)) placed_by_block = true;
      memcpy(dst, p, chunk);
      p += chunk;
      va += chunk;
      len -= chunk;
    }
    return true;
  }
  // A read through the region by a block, all of it outside the count
  // (the caller brackets it).
  bool region_read(const rhinet::fw::DmaRegion& r, uint64_t va, uint8_t* p,
                   size_t len) {
    while (len) {
      uint64_t chunk = len;
      const uint64_t addr = walk(r, va, chunk);
      const uint8_t* src = addr ? at(addr, chunk) : nullptr;
      if (!src) return false;
      memcpy(p, src, chunk);
      p += chunk;
      va += chunk;
      len -= chunk;
    }
    return true;
  }
  void raise_msix(uint16_t) override {}
  uint64_t now_ns() override { return now; }

  // The time the harness sets: it only moves between measured windows, so
  // no timer fires inside one. It starts at 100 s, past 2^32 ns, where a
  // card's clock is a few seconds after power-on (the engine's 64-bit
  // time arithmetic costs more there).
  uint64_t now = 100'000'000'000;
  Range watch_data;
  Range watch_cq;
  bool placed_by_block = false;

 private:
  // A write into host memory. The first one into `watch` in a window sets
  // the mark, on the engine clock as the write was issued.
  [[gnu::always_inline]] bool store(uint64_t bus_addr, const void* src,
                                    size_t len, const Range& watch,
                                    uint32_t& mark, bool& have) {
    const uint32_t t = engine_clock();
    Outside o;
    if (watch.holds(bus_addr) && !have) {
      mark = t;
      have = true;
    }
    uint8_t* p = at(bus_addr, len);
    if (p) memcpy(p, src, len);
    return p != nullptr;
  }

  // The bus address of va in region r (one level of table), and in
  // chunk (in: at most) the bytes that follow it in its page; 0 when va
  // is outside the region or its page is not valid.
  uint64_t walk(const rhinet::fw::DmaRegion& r, uint64_t va, uint64_t& chunk) {
    const uint64_t page_size = 1ull << r.page_shift;
    const uint64_t page = (va >> r.page_shift) - (r.iova >> r.page_shift);
    uint64_t pte = 0;
    if (page >= r.num_pages || r.levels != 1) return 0;
    const uint8_t* e = at(r.table + page * sizeof pte, sizeof pte);
    if (!e) return 0;
    memcpy(&pte, e, sizeof pte);
    if (!(pte & RHN_VPTE_VALID)) return 0;
    const uint64_t in_page = page_size - (va & (page_size - 1));
    if (chunk > in_page) chunk = in_page;
    return (pte & RHN_VPTE_ADDR_MASK & ~(page_size - 1)) +
           (va & (page_size - 1));
  }

  alignas(64) uint8_t ram_[kHostBytes];
  size_t next_ = kPage;  // bus address kBusBase stays unused
};

// The fourth round's receive placement block (RHN_CARD_CAP_RX_WRITE),
// sized as node_config's tables.
using RxWriteBlock = rhinet::fw::card::RxWriteBlock<4, 8>;

struct Frame {
  uint16_t len;
  RxWriteBlock::Verdict verdict;  // the placement block's (fourth round)
  alignas(8) uint8_t data[kFrameMax];
};

// Frames on their way to one node, in order. In the third round it is
// also that node's MAC receive FIFO, read in place by the engine
// (Engine::attach_rx): the MAC wrote each frame there, not the core. In
// the fourth the placement block takes each frame as it arrives, before
// the core looks, all of it outside the count.
struct Mailbox final : rhinet::fw::RxSource {
  Mailbox() { pending = &count; }
  Frame frames[kMailbox];
  uint32_t head = 0, count = 0;
  RxWriteBlock* block = nullptr;
  Host* host = nullptr;  // where the block places
  size_t peek(const uint8_t** frame) override {
    if (!count) return 0;
    *frame = frames[head].data;
    return frames[head].len;
  }
  // The block's work on the frame just queued (the caller brackets it).
  void arrive_last() {
    Frame& f = frames[(head + count - 1) % kMailbox];
    f.verdict = block->arrive(
        f.data, f.len,
        [&](const rhn_card_region& r, uint64_t va, const uint8_t* p,
            size_t len) { return host->region_write(r, va, p, len); });
  }
  // The FIFO's pop and the block's flag read as a card's registers are:
  // a few instructions, counted.
  void pop() override {
    const RxWriteBlock::Verdict& v = frames[head].verdict;
    if (v.waiting_node != RxWriteBlock::kNoNode) block->popped(v);
    head = (head + 1) % kMailbox;
    count--;
  }
  // The block's registers: the core's call is counted, the block's work
  // is not.
  bool placed() override { return block->current(frames[head].verdict); }
  void target(uint32_t qpn, const Target* t) override {
    Outside o;
    if (!t) {
      block->target(qpn, nullptr);
      return;
    }
    const rhn_card_rxw_target c = rhinet::fw::card::card_target(*t);
    block->target(qpn, &c);
  }
  bool arm(uint16_t node, uint16_t session, uint32_t next_serial) override {
    Outside o;
    return block->arm(node, session, next_serial);
  }
  void disarm(uint16_t node) override {
    Outside o;
    block->disarm(node);
  }
  void flush() override {
    Outside o;
    block->flush();
  }
  bool push(Span<const uint8_t> f) {
    if (count == kMailbox || f.size() > kFrameMax) return false;
    Frame& slot = frames[(head + count++) % kMailbox];
    slot.len = static_cast<uint16_t>(f.size());
    slot.verdict = {};
    memcpy(slot.data, f.data(), f.size());
    return true;
  }
};

// The second round's card has a MAC that fills both CRCs of every frame
// it sends (EngineConfig::mac_crc): the engine leaves them to it.
bool g_mac_crc = false;
// The third round's card also has the optional blocks the engine can use
// beyond the MAC's CRCs: a DMA block that walks the regions' tables
// (EngineConfig::dma_region), a transmit assembler that gathers a posted
// packet's payload behind its headers (EngineConfig::tx_assembler) and a
// MAC receive FIFO the engine reads in place (Engine::attach_rx).
bool g_blocks = false;
// The fourth round's card also has the receive placement block
// (EngineConfig::rx_write).
bool g_rxw = false;
// The fifth round's card also has the transmit block for plain WRITEs
// (EngineConfig::tx_write).
bool g_txw = false;

class Link final : public rhinet::fw::Wire {
 public:
  explicit Link(Mailbox& to) : to_(to) {}
  void transmit(Span<const uint8_t> frame) override {
    const uint32_t t = engine_clock();
    Outside o;
    mark_tx(t);
    send(frame);
  }
  // The third round's transmit assembler: the payload's read through the
  // region, the frame's way to the MAC and its CRCs are the block's work.
  bool assemble(rhinet::fw::HostBus& bus,
                const rhinet::fw::TxGather& g) override {
    const uint32_t t = engine_clock();
    Outside o;
    if (!static_cast<Host&>(bus).region_read(*g.region, g.va,
                                             g.frame + g.hdr_len, g.len))
      return false;
    if (g.send) {
      mark_tx(t);
      send({g.frame, size_t{g.hdr_len} + g.len});
    }
    return true;
  }
  // A frame the transmit block for WRITEs sends: its work, outside the
  // count (the caller brackets it); t is the engine's clock when the
  // block took the kick.
  void block_send(uint32_t t, Span<const uint8_t> frame) {
    mark_tx(t);
    send(frame);
  }
  uint32_t dropped = 0;

 private:
  static void mark_tx(uint32_t t) {
    if (!g_marks.have_tx) {
      g_marks.tx = t;
      g_marks.have_tx = true;
    }
  }
  void send(Span<const uint8_t> frame) {
    if (!to_.push(frame)) {
      dropped++;
      return;
    }
    if (g_mac_crc) {
      Frame& f = to_.frames[(to_.head + to_.count - 1) % kMailbox];
      rhinet::fw::card::mac_fill_crcs(f.data, f.len);
    }
    if (to_.block) to_.arrive_last();
  }

  Mailbox& to_;
};

// The fifth round's transmit block for plain WRITEs
// (RHN_CARD_CAP_TX_WRITE), sized as node_config's tables. The core's calls
// into it are counted (a card's register reads and writes); the block's
// fetch, checks, header and gather are not.
using TxWriteBlock = rhinet::fw::card::TxWriteBlock<4, 8, 64, 64>;

struct TxBlock final : rhinet::fw::TxSink {
  TxWriteBlock block;
  Host* host = nullptr;
  Link* link = nullptr;
  void set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
              rhn_card_txw_qp* left) override {
    Outside o;
    block.set_qp(qpn, q, left);
  }
  void set_channel(uint16_t node, const rhn_card_txw_channel* c) override {
    Outside o;
    block.set_channel(node, c);
  }
  bool slot_push(uint32_t slot, void* frame) override {
    Outside o;
    return block.slot_push(slot, frame);
  }
  uint32_t slot_push_n(const uint32_t* slot, void* const* frame,
                       uint32_t n) override {
    Outside o;
    uint32_t i = 0;
    while (i < n && block.slot_push(slot[i], frame[i])) i++;
    return i;
  }
  bool slot_back(uint32_t* slot) override {
    Outside o;
    return block.slot_back(slot);
  }
  uint32_t record_pop(rhn_card_txw_record* out, uint32_t max) override {
    Outside o;
    return block.record_pop(out, max);
  }
  void flush() override {
    Outside o;
    block.flush();
  }
  bool kick(uint32_t qpn) override {
    const uint32_t t = engine_clock();
    Outside o;
    struct Port {
      TxBlock& b;
      uint32_t t;
      bool read(const rhn_card_region& r, uint64_t va, void* buf, size_t len) {
        return b.host->region_read(rhinet::fw::engine_region(r), va,
                                   static_cast<uint8_t*>(buf), len);
      }
      bool assemble(uint8_t* frame, uint32_t hdr_len, const rhn_card_region& r,
                    uint64_t va, uint32_t len) {
        if (!b.host->region_read(rhinet::fw::engine_region(r), va,
                                 frame + hdr_len, len))
          return false;
        b.link->block_send(t, {frame, size_t{hdr_len} + len});
        return true;
      }
      void send(const uint8_t* frame, size_t len) {
        b.link->block_send(t, {frame, len});
      }
    } port{*this, t};
    return block.kick(qpn, port);
  }
};

// ---- The two nodes -------------------------------------------------------

constexpr size_t kCardBytes = 8u << 20;
alignas(64) uint8_t g_card_ram[2][kCardBytes];

EngineConfig node_config(uint16_t node) {
  // Small tables: the paths measured touch one QP, one peer and one MR,
  // and none of them walks a table whose size is configured.
  EngineConfig c;
  c.node_id = node;
  c.mac[5] = static_cast<uint8_t>(node);
  c.db_pages = 4;
  c.max_pds = 8;
  c.max_mrs = 16;
  c.max_cqs = 8;
  c.max_qps = 8;
  c.max_srqs = 4;
  c.max_eqs = 4;
  c.max_areas = 16;
  c.max_nodes = 4;
  c.msix_vectors = 4;
  c.tlb_entries = 64;
  c.send_packet_slots = 64;
  c.rx_contexts = 8;
  c.rx_fifo_frames = 16;
  c.kick_fifo_entries = 32;
  c.max_inflight_per_qp = 32;
  c.max_rd_atomic = 8;
  c.mac_crc = g_mac_crc;
  c.dma_region = g_blocks;
  c.tx_assembler = g_blocks;
  c.rx_write = g_rxw;
  c.tx_write = g_txw;
  c.responder_reads = 16;
  c.responder_bitmaps = 1;
  c.fw_messages = 16;
  c.twin_bytes = 64 << 10;
  c.max_twins = 2;
  c.tag.recvs = 64;
  c.tag.msgs = 64;
  c.boot_session = static_cast<uint16_t>(0x100 + node);
  return c;
}

constexpr uint32_t kContext = 1;  // a user process's doorbell page
constexpr uint8_t kAdminLogDepth = 4;
constexpr uint8_t kCqLogDepth = 6;
constexpr uint8_t kSqLogDepth = 6;
constexpr uint8_t kRqLogDepth = 6;
constexpr size_t kUserBytes = 64 << 10;  // one MR over all of it

struct Queue {
  uint64_t ring = 0, record = 0;
  uint32_t depth = 0, index = 0;
};

struct Node {
  Host host;
  Mailbox inbox;  // frames to this node
  Link* wire = nullptr;
  Engine* engine = nullptr;
  uint16_t id = 0;
  // Admin rings.
  uint64_t admin_sq = 0, admin_cq = 0;
  uint32_t admin_tail = 0, admin_head = 0;
  uint16_t cmd_id = 0;
  // The user process's objects.
  uint64_t user = 0;  // bus address = I/O VA of its memory
  size_t user_next = 0;
  uint32_t pdn = 0, lkey = 0, eqn = 0;
  uint32_t cqn = 0;
  Queue cq;
  struct Qp {
    uint32_t qpn = 0;
    Queue sq, rq;
  } rc, ep;
  uint64_t data = 0;  // the process's data buffer
};

Node* g_nodes[2];

[[noreturn]] void die(const char* what, uint32_t detail = 0) {
  printf("opcount: FAIL: %s (%lu)\n", what, static_cast<unsigned long>(detail));
  fflush(stdout);
  exit(1);
}

void pump(Node& n) {
  for (int i = 0; i < 1000 && n.engine->poll(); i++) {
  }
}

// Hands every frame queued for n to its engine (in the third round the
// engine takes them from its inbox itself: true when there are some).
bool deliver(Node& n) {
  if (g_blocks) return n.inbox.count != 0;
  bool any = false;
  while (n.inbox.count) {
    Frame& f = n.inbox.frames[n.inbox.head];
    if (!n.engine->frame_arrived({f.data, f.len})) die("rx FIFO full");
    n.inbox.head = (n.inbox.head + 1) % kMailbox;
    n.inbox.count--;
    any = true;
  }
  return any;
}

// Everything in flight delivered and done, with time moved on so delayed
// ACKs go out: nothing left to run inside the next measured window.
void settle() {
  for (int round = 0; round < 100; round++) {
    for (Node* n : g_nodes) n->host.now += 50'000;
    bool any = false;
    for (Node* n : g_nodes) {
      any |= deliver(*n);
      any |= n->engine->poll();
      pump(*n);
    }
    if (!any && !g_nodes[0]->inbox.count && !g_nodes[1]->inbox.count) return;
  }
  die("the nodes do not settle");
}

// ---- The driver's side: admin commands -----------------------------------

uint32_t admin(Node& n, rhn_admin_cmd cmd) {
  const uint32_t depth = 1u << kAdminLogDepth;
  cmd.hdr.cmd_id = ++n.cmd_id;
  memcpy(
      n.host.at(n.admin_sq + (n.admin_tail & (depth - 1)) * RHN_ADMIN_CMD_SIZE,
                RHN_ADMIN_CMD_SIZE),
      &cmd, sizeof cmd);
  n.engine->reg_write(RHN_REG_ADMIN_SQ_TAIL, ++n.admin_tail, 4);
  const uint64_t slot =
      n.admin_cq + (n.admin_head & (depth - 1)) * RHN_ADMIN_CPL_SIZE;
  const uint8_t owner = ((n.admin_head / depth) & 1) ^ 1;
  for (int i = 0; i < 1000; i++) {
    rhn_admin_cpl cpl;
    memcpy(&cpl, n.host.at(slot, sizeof cpl), sizeof cpl);
    if ((cpl.owner & 1) == owner) {
      n.admin_head++;
      if (cpl.status != RHN_ADMIN_OK || cpl.cmd_id != cmd.hdr.cmd_id) {
        printf("opcount: admin opcode 0x%x status %u detail %lu\n",
               cmd.hdr.opcode, cpl.status,
               static_cast<unsigned long>(cpl.detail));
        die("admin command refused", cmd.hdr.opcode);
      }
      return cpl.result;
    }
    n.engine->poll();
  }
  die("admin command not answered", cmd.hdr.opcode);
}

rhn_admin_cmd command(uint8_t opcode, uint32_t context) {
  rhn_admin_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.hdr.opcode = opcode;
  cmd.hdr.context = context;
  return cmd;
}

// Bytes of the process's memory (inside its one MR), 64-byte aligned.
uint64_t user_alloc(Node& n, size_t bytes) {
  const uint64_t a = n.user + n.user_next;
  n.user_next += (bytes + 63) / 64 * 64;
  if (n.user_next > kUserBytes) die("user memory exhausted");
  return a;
}

rhn_host_ref ref(const Node& n, uint64_t addr) {
  rhn_host_ref r;
  memset(&r, 0, sizeof r);
  r.addr = addr;
  r.lkey = n.lkey;
  return r;
}

Queue make_queue(Node& n, size_t entry, uint8_t log_depth) {
  Queue q;
  q.depth = 1u << log_depth;
  q.ring = user_alloc(n, entry << log_depth);
  q.record = user_alloc(n, 64);
  return q;
}

void modify(Node& n, uint32_t qpn, uint32_t mask, uint8_t state,
            uint16_t dest_node = 0, uint32_t dest_qpn = 0) {
  rhn_admin_cmd c = command(RHN_ADMIN_MODIFY_QP, kContext);
  auto& m = c.u.modify_qp;
  m.qpn = qpn;
  m.attr_mask = RHN_QP_ATTR_STATE | mask;
  m.state = state;
  m.access = RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
             RHN_ACCESS_REMOTE_ATOMIC;
  m.max_rd_atomic = 8;
  m.retry_cnt = 7;
  m.rnr_retry = 7;
  m.dest_node = dest_node;
  m.dest_qpn = dest_qpn;
  admin(n, c);
}

Node::Qp make_qp(Node& n, uint8_t type) {
  Node::Qp qp;
  qp.sq = make_queue(n, RHN_SQ_SLOT_SIZE, kSqLogDepth);
  qp.rq = make_queue(n, RHN_RQ_WQE_SIZE, kRqLogDepth);
  rhn_admin_cmd c = command(RHN_ADMIN_CREATE_QP, kContext);
  auto& q = c.u.create_qp;
  q.pdn = n.pdn;
  q.send_cqn = n.cqn;
  q.recv_cqn = n.cqn;
  q.srqn = RHN_NO_SRQ;
  q.type = type;
  q.sq_log_depth = kSqLogDepth;
  q.rq_log_depth = kRqLogDepth;
  q.sq_ring = ref(n, qp.sq.ring);
  q.sq_record = ref(n, qp.sq.record);
  q.rq_ring = ref(n, qp.rq.ring);
  q.rq_record = ref(n, qp.rq.record);
  qp.qpn = admin(n, c);
  return qp;
}

// Power-on and the driver's bring-up, then the process's objects: the
// sequence of tests/sim/src/driver.cc and verbs.cc, through the contract.
void bring_up(Node& n) {
  Engine& e = *n.engine;
  if (e.failed()) die("engine failed at power-on", n.id);
  n.admin_sq = n.host.alloc(RHN_ADMIN_CMD_SIZE << kAdminLogDepth);
  n.admin_cq = n.host.alloc(RHN_ADMIN_CPL_SIZE << kAdminLogDepth);
  e.reg_write(RHN_REG_ADMIN_SQ_BASE, n.admin_sq, 8);
  e.reg_write(RHN_REG_ADMIN_CQ_BASE, n.admin_cq, 8);
  e.reg_write(RHN_REG_ADMIN_LOG_DEPTH, kAdminLogDepth, 4);
  e.reg_write(RHN_REG_CONTROL, RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE, 4);
  const uint32_t want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
  for (int i = 0; i < 100 && (e.reg_read(RHN_REG_STATUS, 4) & want) != want;
       i++)
    e.poll();
  if ((e.reg_read(RHN_REG_STATUS, 4) & want) != want) die("not ready", n.id);

  // The kernel's event queue, every CQ reports to it.
  constexpr uint8_t kEqLogDepth = 6;
  rhn_admin_cmd c = command(RHN_ADMIN_CREATE_EQ, 0);
  c.u.create_eq.ring_addr = n.host.alloc(RHN_EQE_SIZE << kEqLogDepth);
  c.u.create_eq.vector = 1;
  c.u.create_eq.log_depth = kEqLogDepth;
  n.eqn = admin(n, c);

  // A user process: its context, PD, and one MR over its memory (I/O VA =
  // bus address, one level of translation).
  c = command(RHN_ADMIN_CREATE_CONTEXT, kContext);
  c.u.create_context.account = 1;
  admin(n, c);
  n.pdn = admin(n, command(RHN_ADMIN_CREATE_PD, kContext));
  n.user = n.host.alloc(kUserBytes);
  const uint64_t table = n.host.alloc(kPage);
  auto* vpte = reinterpret_cast<uint64_t*>(n.host.at(table, kPage));
  for (size_t i = 0; i < kUserBytes / kPage; i++)
    vpte[i] = (n.user + i * kPage) | RHN_VPTE_VALID;
  c = command(RHN_ADMIN_CREATE_MR, kContext);
  auto& mr = c.u.create_mr;
  mr.pdn = n.pdn;
  mr.access = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
              RHN_ACCESS_REMOTE_READ | RHN_ACCESS_REMOTE_ATOMIC;
  mr.iova = n.user;
  mr.length = kUserBytes;
  mr.table_addr = table;
  mr.num_pages = kUserBytes / kPage;
  mr.page_shift = 12;
  mr.levels = 1;
  mr.key_variant = 1;
  n.lkey = admin(n, c);

  n.cq = make_queue(n, RHN_CQE_SIZE, kCqLogDepth);
  c = command(RHN_ADMIN_CREATE_CQ, kContext);
  c.u.create_cq.ring = ref(n, n.cq.ring);
  c.u.create_cq.record = ref(n, n.cq.record);
  c.u.create_cq.eqn = n.eqn;
  c.u.create_cq.log_depth = kCqLogDepth;
  n.cqn = admin(n, c);

  n.rc = make_qp(n, RHN_QP_RC);
  n.ep = make_qp(n, RHN_QP_ENDPOINT);
  n.data = user_alloc(n, 4096);
  n.host.watch_cq = {n.cq.ring, RHN_CQE_SIZE << kCqLogDepth};
}

void connect(Node& n, const Node& peer) {
  modify(n, n.rc.qpn, RHN_QP_ATTR_ACCESS, RHN_QPS_INIT);
  modify(n, n.rc.qpn, RHN_QP_ATTR_DEST | RHN_QP_ATTR_MAX_RD_ATOMIC, RHN_QPS_RTR,
         peer.id, peer.rc.qpn);
  modify(n, n.rc.qpn, RHN_QP_ATTR_RETRY, RHN_QPS_RTS);
  // The endpoint: connectionless, queue key 0.
  modify(n, n.ep.qpn, RHN_QP_ATTR_ACCESS | RHN_QP_ATTR_QKEY, RHN_QPS_INIT);
  modify(n, n.ep.qpn, RHN_QP_ATTR_MAX_RD_ATOMIC, RHN_QPS_RTR);
  modify(n, n.ep.qpn, RHN_QP_ATTR_RETRY, RHN_QPS_RTS);
}

// ---- The process's side: WQEs and CQEs -------------------------------------

// Writes a one-SGE WQE into the QP's SQ and its producer index into the
// SQ record; the doorbell is the caller's (it is what is measured).
// With inline_out, the payload (len bytes at local) is copied into the
// WQE, and the WQE also into inline_out (RHN_DB_INLINE_WQE_SIZE bytes):
// what a card's doorbell block gathers from the page's inline window.
void post(Node& n, Node::Qp& qp, uint8_t opcode, uint64_t local, uint32_t len,
          uint64_t remote_addr, uint32_t rkey, uint16_t dst_node = 0,
          uint32_t dst_qpn = 0, uint8_t* inline_out = nullptr,
          uint8_t wqe_flags = RHN_WQE_F_SIGNALED) {
  alignas(8) uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  rhn_send_wqe* w = rhn_wqe_start(buf, opcode, wqe_flags, qp.sq.index & 0xffff);
  w->remote_addr = remote_addr;
  w->remote_key = rkey;
  w->dst_node = dst_node;
  w->dst_qpn = dst_qpn;
  uint32_t units;
  if (inline_out) {
    rhn_wqe_put_inline(buf, 0, n.host.at(local, len), len);
    units = rhn_wqe_set_inline(buf, len);
  } else {
    rhn_wqe_put_sge(buf, 0, local, len, n.lkey);
    units = rhn_wqe_set_sges(buf, 1);
  }
  const uint32_t slots = rhn_wqe_finish(buf, units, nullptr);
  if (inline_out) {
    memset(inline_out, 0, RHN_DB_INLINE_WQE_SIZE);
    memcpy(inline_out, buf, RHN_SQ_SLOT_SIZE);
  }
  if (slots != 1) die("WQE does not fit one slot", slots);
  memcpy(n.host.at(
             qp.sq.ring + (qp.sq.index & (qp.sq.depth - 1)) * RHN_SQ_SLOT_SIZE,
             RHN_SQ_SLOT_SIZE),
         buf, RHN_SQ_SLOT_SIZE);
  qp.sq.index++;
  memcpy(n.host.at(qp.sq.record, 4), &qp.sq.index, 4);
}

// An irecv on the endpoint's RQ (the doorbell rung, not measured).
void post_irecv(Node& n, uint64_t tag, uint64_t local, uint32_t len,
                uint16_t src_node, uint32_t src_qpn) {
  rhn_tag_recv_wqe w;
  memset(&w, 0, sizeof w);
  Queue& rq = n.ep.rq;
  w.wqe_index = static_cast<uint16_t>(rq.index);
  w.num_sge = 1;
  w.flags = RHN_RQ_F_TAG;
  w.tag = tag;
  w.mask = ~uint64_t{0};
  w.src_node = src_node;
  w.src_qpn = src_qpn;
  w.sge.addr = local;
  w.sge.length = len;
  w.sge.lkey = n.lkey;
  memcpy(n.host.at(rq.ring + (rq.index & (rq.depth - 1)) * RHN_RQ_WQE_SIZE,
                   RHN_RQ_WQE_SIZE),
         &w, sizeof w);
  rq.index++;
  memcpy(n.host.at(rq.record, 4), &rq.index, 4);
  n.engine->doorbell_write(kContext, RHN_DB_RQ, n.ep.qpn, 4);
}

// The next CQE of the node's CQ, which must be there and successful.
rhn_cqe take_cqe(Node& n, uint8_t opcode) {
  rhn_cqe cqe;
  Queue& cq = n.cq;
  memcpy(&cqe,
         n.host.at(cq.ring + (cq.index & (cq.depth - 1)) * RHN_CQE_SIZE,
                   RHN_CQE_SIZE),
         sizeof cqe);
  const bool owner = (cqe.flags & RHN_CQE_F_OWNER) != 0;
  if (owner != !((cq.index / cq.depth) & 1)) die("no CQE", n.id);
  if (cqe.status != RHN_CQE_SUCCESS) die("CQE status", cqe.status);
  if (cqe.opcode != opcode) die("CQE opcode", cqe.opcode);
  cq.index++;
  memcpy(n.host.at(cq.record, 4), &cq.index, 4);
  return cqe;
}

// ---- Paths -------------------------------------------------------------

constexpr int kWarmup = 8;
constexpr int kOps = 64;
constexpr uint32_t kBudget = 250;

struct Stat {
  const char* name;
  const char* what;
  uint64_t sum = 0;
  uint32_t min = UINT32_MAX, max = 0, n = 0;
  void add(uint32_t v) {
    sum += v;
    min = v < min ? v : min;
    max = v > max ? v : max;
    n++;
  }
  uint32_t avg() const { return n ? static_cast<uint32_t>(sum / n) : 0; }
};

enum PathId {
  kWriteTx,         // 1: doorbell -> WRITE frame on the wire
  kWriteTxAll,      // 1: doorbell -> the engine idle again
  kWriteInlineTx,   // 1: inline doorbell -> WRITE frame on the wire
  kWriteInlineAll,  // 1: inline doorbell -> the engine idle again
  kWritePlaced,     // 2: frame in -> data placed
  kWriteAck,        // 2: frame in -> ACK on the wire
  kWriteRxAll,      // 2: frame in -> the engine idle again
  kAckCqe,          // 3: ACK in -> CQE written
  kAckAll,          // 3: ACK in -> the engine idle again
  kReadResp,        // 4: READ request in -> response chunk on the wire
  kReadRespAll,     // 4: READ request in -> the engine idle again
  kReadCqe,         // 4': READ response in -> CQE written
  kIsendCqe,        // 5: isend in, matched -> data placed ... CQE written
  kIsendPlaced,     // 5: isend in -> data placed
  kIsendAll,        // 5: isend in -> the engine idle again
  kStreamTx,        // 1': kStream WRITEs, one doorbell -> idle, ACKs in
  kStreamRx,        // 2': kStream WRITEs in -> idle, ACKs out
  kPaths
};

Stat g_stats[kPaths] = {
    {"write_post_to_wire", "1 posted WRITE: doorbell to frame out"},
    {"write_post_total", "1 posted WRITE: doorbell to engine idle"},
    {"write_inline_to_wire", "1 WRITE, inline doorbell: to frame out"},
    {"write_inline_total", "1 WRITE, inline doorbell: to engine idle"},
    {"write_rx_to_placed", "2 received WRITE: frame in to data placed"},
    {"write_rx_to_ack", "2 received WRITE: frame in to ACK out"},
    {"write_rx_total", "2 received WRITE: frame in to engine idle"},
    {"ack_rx_to_cqe", "3 ACK: frame in to CQE written"},
    {"ack_rx_total", "3 ACK: frame in to engine idle"},
    {"read_req_to_resp", "4 READ request in to response chunk out"},
    {"read_req_total", "4 READ request in to engine idle"},
    {"read_resp_rx_to_cqe", "4 READ response in to CQE written"},
    {"isend_rx_to_cqe", "5 isend matched: frame in to CQE written"},
    {"isend_rx_to_placed", "5 isend matched: frame in to data placed"},
    {"isend_rx_total", "5 isend matched: frame in to engine idle"},
    {"stream_post_total", "1 stream of 32 posted WRITEs: per op, to idle"},
    {"stream_rx_total", "2 stream of 32 received WRITEs: per op, to idle"},
};

// Where each kind of window begins, for the trace.
RHN_TRACE_MARK(trace_write_post, 10)
RHN_TRACE_MARK(trace_write_rx, 11)
RHN_TRACE_MARK(trace_ack_rx, 12)
RHN_TRACE_MARK(trace_read_req_rx, 13)
RHN_TRACE_MARK(trace_read_resp_rx, 14)
RHN_TRACE_MARK(trace_isend_rx, 15)
RHN_TRACE_MARK(trace_stream_post, 17)
RHN_TRACE_MARK(trace_stream_rx, 18)
RHN_TRACE_MARK(trace_stream_ack_rx, 19)

// One measured window on node n: work() starts the path (a doorbell or a
// frame handed in), then the engine polls until it is idle. Returns the
// window's end on the engine clock; the marks say where events fell.
template <typename Work>
uint32_t window(Node& n, bool measured, void (*mark)(), uint32_t* start,
                Work work) {
  g_marks = Marks{};
  if (measured) {
    Outside o;
    mark();
  }
  *start = engine_clock();
  work();
  uint32_t end;
  do {
    end = engine_clock();  // the closing poll (it finds nothing) is not counted
  } while (n.engine->poll());
  if (measured) {
    Outside o;
    trace_window_end();
  }
  return end;
}

// The cost of the poll() that finds nothing to do: every window ends with
// one; the window stops where it starts (it is not the path's work).
uint32_t g_idle_poll = 0;

void measure_idle(Node& n) {
  uint32_t start = engine_clock();
  n.engine->poll();
  g_idle_poll = engine_clock() - start;
}

void record(PathId id, bool measured, bool have, uint32_t at, uint32_t start) {
  if (!have) die(g_stats[id].name);
  if (measured) g_stats[id].add(at - start);
}

// Eight bytes of op-specific data at src, and a check that they arrived.
uint64_t g_pattern = 0x0123456789abcdefull;

void put_pattern(Node& n, uint64_t addr) {
  g_pattern = g_pattern * 6364136223846793005ull + 1442695040888963407ull;
  memcpy(n.host.at(addr, 8), &g_pattern, 8);
}

void check_pattern(Node& n, uint64_t addr) {
  if (memcmp(n.host.at(addr, 8), &g_pattern, 8) != 0)
    die("data did not arrive", n.id);
}

void write_op(bool measured) {
  Node& a = *g_nodes[0];
  Node& b = *g_nodes[1];
  put_pattern(a, a.data);
  b.host.watch_data = {b.data, 8};
  b.host.placed_by_block = false;
  post(a, a.rc, RHN_OP_WRITE, a.data, 8, b.data, b.lkey);
  uint32_t s;
  uint32_t end = window(a, measured, trace_write_post, &s, [&] {
    a.engine->doorbell_write(kContext, RHN_DB_SQ, a.rc.qpn, 4);
  });
  record(kWriteTx, measured, g_marks.have_tx, g_marks.tx, s);
  record(kWriteTxAll, measured, true, end, s);

  end = window(b, measured, trace_write_rx, &s, [&] { deliver(b); });
  // With the placement block the data is in place before the window
  // opens (the block placed it as the frame arrived): 0 of the core's.
  if (b.host.placed_by_block && !g_marks.have_placed)
    record(kWritePlaced, measured, true, s, s);
  else
    record(kWritePlaced, measured, g_marks.have_placed, g_marks.placed, s);
  record(kWriteAck, measured, g_marks.have_tx, g_marks.tx, s);
  record(kWriteRxAll, measured, true, end, s);

  end = window(a, measured, trace_ack_rx, &s, [&] { deliver(a); });
  record(kAckCqe, measured, g_marks.have_cqe, g_marks.cqe, s);
  record(kAckAll, measured, true, end, s);
  take_cqe(a, RHN_CQE_OP_WRITE);
  check_pattern(b, b.data);
  settle();
}

// Path 1 with the WQE and its 8 bytes handed over with the doorbell, as a
// card's doorbell block does for stores into the page's inline window:
// no DMA read of the WQE or the payload. The rest as in write_op.
RHN_TRACE_MARK(trace_write_inline, 16)

void write_inline_op(bool measured) {
  Node& a = *g_nodes[0];
  Node& b = *g_nodes[1];
  put_pattern(a, a.data);
  alignas(8) uint8_t staged[RHN_DB_INLINE_WQE_SIZE];
  post(a, a.rc, RHN_OP_WRITE, a.data, 8, b.data, b.lkey, 0, 0, staged);
  uint32_t s;
  const uint32_t end = window(a, measured, trace_write_inline, &s, [&] {
    a.engine->doorbell_inline(kContext, staged, sizeof staged);
    a.engine->doorbell_write(kContext, RHN_DB_SQ, a.rc.qpn | RHN_DB_SQ_INLINE,
                             4);
  });
  record(kWriteInlineTx, measured, g_marks.have_tx, g_marks.tx, s);
  record(kWriteInlineAll, measured, true, end, s);
  deliver(b);
  pump(b);
  deliver(a);
  pump(a);
  take_cqe(a, RHN_CQE_OP_WRITE);
  check_pattern(b, b.data);
  settle();
}

void read_op(bool measured) {
  Node& a = *g_nodes[0];
  Node& b = *g_nodes[1];
  a.host.watch_data = {a.data + 64, 8};
  put_pattern(b, b.data + 256);
  post(a, a.rc, RHN_OP_READ, a.data + 64, 8, b.data + 256, b.lkey);
  a.engine->doorbell_write(kContext, RHN_DB_SQ, a.rc.qpn, 4);
  pump(a);
  uint32_t s;
  uint32_t end =
      window(b, measured, trace_read_req_rx, &s, [&] { deliver(b); });
  record(kReadResp, measured, g_marks.have_tx, g_marks.tx, s);
  record(kReadRespAll, measured, true, end, s);
  window(a, measured, trace_read_resp_rx, &s, [&] { deliver(a); });
  record(kReadCqe, measured, g_marks.have_cqe, g_marks.cqe, s);
  take_cqe(a, RHN_CQE_OP_READ);
  check_pattern(a, a.data + 64);
  settle();
}

void isend_op(bool measured, uint64_t tag) {
  Node& a = *g_nodes[0];
  Node& b = *g_nodes[1];
  b.host.watch_data = {b.data + 128, 8};
  put_pattern(a, a.data + 512);
  post_irecv(b, tag, b.data + 128, 64, a.id, a.ep.qpn);
  pump(b);
  post(a, a.ep, RHN_OP_ISEND, a.data + 512, 8, tag, 0, b.id, b.ep.qpn);
  a.engine->doorbell_write(kContext, RHN_DB_SQ, a.ep.qpn, 4);
  pump(a);
  uint32_t s;
  uint32_t end = window(b, measured, trace_isend_rx, &s, [&] { deliver(b); });
  record(kIsendCqe, measured, g_marks.have_cqe, g_marks.cqe, s);
  record(kIsendPlaced, measured, g_marks.have_placed, g_marks.placed, s);
  record(kIsendAll, measured, true, end, s);
  const rhn_cqe cqe = take_cqe(b, RHN_CQE_OP_TAG_RECV);
  if (cqe.byte_len != 8) die("isend length", cqe.byte_len);
  check_pattern(b, b.data + 128);
  settle();
  take_cqe(a, RHN_CQE_OP_SEND);
}

// The message rate: kStream unsignalled 8-byte WRITEs posted with one
// doorbell, each with its own payload and target. The sender's count is
// its window from the doorbell to idle plus the window in which the ACKs
// they caused arrive (the receiver acknowledges every ack_coalesce
// packets); the receiver's its window from the frames to idle, the ACKs
// it sends included. Both per operation. Frames reach the receive FIFO
// as it has room (rounds one and two); the engine takes them in place in
// the third.
constexpr uint32_t kStream = 32;

// A window that hands the node its frames as its FIFO takes them (the
// handing over counted, as frame_arrived is the engine's) until it idles.
uint32_t stream_window(Node& n, bool measured, void (*mark)(),
                       uint32_t* start) {
  g_marks = Marks{};
  if (measured) {
    Outside o;
    mark();
  }
  *start = engine_clock();
  uint32_t end;
  for (;;) {
    while (!g_blocks && n.inbox.count) {
      Frame& f = n.inbox.frames[n.inbox.head];
      if (!n.engine->frame_arrived({f.data, f.len})) break;
      n.inbox.head = (n.inbox.head + 1) % kMailbox;
      n.inbox.count--;
    }
    end = engine_clock();
    if (!n.engine->poll() && !n.inbox.count) break;
  }
  if (measured) {
    Outside o;
    trace_window_end();
  }
  return end;
}

void stream_op(bool measured) {
  Node& a = *g_nodes[0];
  Node& b = *g_nodes[1];
  uint64_t patterns[kStream];
  for (uint32_t i = 0; i < kStream; i++) {
    put_pattern(a, a.data + 1024 + 8 * i);
    patterns[i] = g_pattern;
    post(a, a.rc, RHN_OP_WRITE, a.data + 1024 + 8 * i, 8, b.data + 1024 + 8 * i,
         b.lkey, 0, 0, nullptr, 0);
  }
  uint32_t s;
  const uint32_t sent =
      window(
          a, measured, trace_stream_post, &s,
          [&] { a.engine->doorbell_write(kContext, RHN_DB_SQ, a.rc.qpn, 4); }) -
      s;
  if (b.inbox.count != kStream) die("stream frames", b.inbox.count);
  const uint32_t received = stream_window(b, measured, trace_stream_rx, &s) - s;
  if (!a.inbox.count) die("stream not acknowledged");
  const uint32_t acked =
      stream_window(a, measured, trace_stream_ack_rx, &s) - s;
  if (a.inbox.count || b.inbox.count) die("stream frames left");
  for (uint32_t i = 0; i < kStream; i++)
    if (memcmp(b.host.at(b.data + 1024 + 8 * i, 8), &patterns[i], 8) != 0)
      die("stream data did not arrive", i);
  if (measured) {
    g_stats[kStreamTx].add((sent + acked) / kStream);
    g_stats[kStreamRx].add(received / kStream);
  }
  settle();
}

// minstret under -icount counts every retired instruction exactly: a loop
// of known length must read as exactly that many, or no count is trusted.
void check_counter() {
  for (uint32_t n = 1; n <= 100000; n *= 10) {
    uint32_t t0, t1;
    asm volatile(
        RHN_READ_MINSTRET("%0")
        "mv t0, %2\n"
        "1: addi t0, t0, -1\n"
        "bnez t0, 1b\n"
        RHN_READ_MINSTRET("%1")
        : "=&r"(t0), "=&r"(t1)
        : "r"(n)
        : "t0");
    // mv, then n times addi and bnez, then the second csrr itself.
    if (t1 - t0 != 2 * n + 2)
      die("minstret is not exact (run with -icount)", t1 - t0);
  }
}

// A path's name in the output: the second round's end in "+mac", the
// third's in "+blocks".
const char* name(const Stat& s) {
  static char buf[48];
  if (!g_mac_crc) return s.name;
  snprintf(buf, sizeof buf, "%s%s", s.name,
           g_txw      ? "+txw"
           : g_rxw    ? "+rxw"
           : g_blocks ? "+blocks"
                      : "+mac");
  return buf;
}

// One line per path, "opcount: NAME avg N min N max N ..." (what the
// runner compares with the baseline), then what it means at the budget.
void print_results() {
  printf(
      "opcount: retired rv32imac instructions per operation, %d ops after"
      " %d warm-up; the engine's own (the host's DMA copies and the"
      " wire's are hardware on a card)%s\n",
      kOps, kWarmup,
      g_txw       ? "; with every block of +rxw and the transmit block for"
                    " plain WRITEs (names +txw)"
      : g_rxw     ? "; with every block of +blocks and the receive placement"
                    " block (names +rxw)"
      : g_blocks  ? "; with a MAC that fills and checks CRCs, a DMA block"
                    " that walks the regions' tables, a transmit"
                    " assembler and a receive FIFO read in place (names"
                    " +blocks)"
      : g_mac_crc ? "; with a MAC that fills and checks CRCs (names +mac)"
                  : "");
  for (const Stat& s : g_stats) {
    // At 250 MHz and one instruction per cycle.
    const uint32_t kops = s.avg() ? 250'000'000u / s.avg() / 1000 : 0;
    const uint32_t tenths = s.avg() * 10 / kBudget;
    printf(
        "opcount: %-24s avg %5lu min %5lu max %5lu | budget %lu: %3lu.%lux,"
        " %4lu kops/s at 250 MHz | %s%s\n",
        name(s), static_cast<unsigned long>(s.avg()),
        static_cast<unsigned long>(s.min), static_cast<unsigned long>(s.max),
        static_cast<unsigned long>(kBudget),
        static_cast<unsigned long>(tenths / 10),
        static_cast<unsigned long>(tenths % 10),
        static_cast<unsigned long>(kops), s.what,
        g_txw       ? ", every block, rx placement and tx block"
        : g_rxw     ? ", every block and rx placement"
        : g_blocks  ? ", every block"
        : g_mac_crc ? ", MAC fills/checks CRCs"
                    : "");
  }
  printf("opcount: an idle poll() takes %lu (not in the totals)\n",
         static_cast<unsigned long>(g_idle_poll));
}

// One round: two nodes from power-on, every path measured and printed.
// Each round has nodes of its own; the card memory is used afresh.
void run_round(Node (&nodes)[2], RxWriteBlock* blocks = nullptr,
               TxBlock* tx_blocks = nullptr) {
  for (Stat& s : g_stats) s = Stat{s.name, s.what};
  Link wire0(nodes[1].inbox);
  Link wire1(nodes[0].inbox);
  CardMemory mem0(g_card_ram[0], kCardBytes);
  CardMemory mem1(g_card_ram[1], kCardBytes);
  CardMemory* mems[2] = {&mem0, &mem1};
  Link* wires[2] = {&wire0, &wire1};
  for (int i = 0; i < 2; i++) {
    Node& n = nodes[i];
    g_nodes[i] = &n;
    n.id = static_cast<uint16_t>(i);
    n.wire = wires[i];
    n.engine =
        mems[i]->object<Engine>(node_config(n.id), n.host, *n.wire, *mems[i]);
    if (!n.engine || mems[i]->exhausted()) die("card memory too small", i);
    if (blocks) {
      blocks[i].node_id = n.id;
      n.inbox.block = &blocks[i];
      n.inbox.host = &n.host;
    }
    if (g_blocks) n.engine->attach_rx(n.inbox);
    if (tx_blocks) {
      tx_blocks[i].host = &n.host;
      tx_blocks[i].link = n.wire;
      n.engine->attach_tx(tx_blocks[i]);
    }
  }
  for (Node* n : g_nodes) bring_up(*n);
  connect(nodes[0], nodes[1]);
  connect(nodes[1], nodes[0]);
  settle();
  measure_idle(nodes[0]);

  for (int i = 0; i < kWarmup + kOps; i++) write_op(i >= kWarmup);
  for (int i = 0; i < kWarmup + kOps; i++) write_inline_op(i >= kWarmup);
  for (int i = 0; i < kWarmup + kOps; i++) read_op(i >= kWarmup);
  for (int i = 0; i < kWarmup + kOps; i++)
    isend_op(i >= kWarmup, 0x5500 + static_cast<uint64_t>(i));
  for (int i = 0; i < kWarmup + kOps; i++) stream_op(i >= kWarmup);
  if (wire0.dropped || wire1.dropped) die("frames dropped on the wire");
  print_results();
  printf("opcount: card memory used %lu + %lu bytes\n",
         static_cast<unsigned long>(mem0.used()),
         static_cast<unsigned long>(mem1.used()));
}

}  // namespace

int main() {
  check_counter();
  // Without a CRC block (the engine computes and checks every CRC), then
  // with a MAC that does (EngineConfig::mac_crc).
  static Node plain[2], with_mac[2], with_blocks[2];
  run_round(plain);
  g_mac_crc = true;
  trace_round_mac();
  run_round(with_mac);
  // And with every optional block the engine can use.
  g_blocks = true;
  trace_round_blocks();
  run_round(with_blocks);
  // And with the receive placement block besides.
  static Node with_rxw[2];
  static RxWriteBlock rxw_blocks[2];
  g_rxw = true;
  trace_round_rxw();
  run_round(with_rxw, rxw_blocks);
  // And with the transmit block for plain WRITEs besides.
  static Node with_txw[2];
  static RxWriteBlock txw_rx_blocks[2];
  static TxBlock txw_blocks[2];
  g_txw = true;
  trace_round_txw();
  run_round(with_txw, txw_rx_blocks, txw_blocks);
  return 0;
}
