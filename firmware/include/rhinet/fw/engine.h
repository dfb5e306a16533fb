// SPDX-License-Identifier: BSD-2-Clause
// The RHiNET-NG NIC engine: the public face a host (QEMU device, test bench,
// FPGA soft core) sees. The engine owns no threads and no global state; a
// host wires it to memory (HostBus) and to the fabric (Wire) and calls
// poll() from one engine thread. Register, doorbell and frame ingress calls
// may come from other threads; they only enqueue into bounded FIFOs.
#pragma once

#include "core/card_memory.h"
#include "ops/coll/coll_config.h"
#include "ops/mcast_switch/mcast_switch_config.h"
#include "ops/pindown/pindown_config.h"
#include "ops/share/share_config.h"
#include "ops/sync/sync_config.h"
#include "ops/tag/tag_config.h"
#include "ops/trigger/trigger_config.h"
#include "ops/ud_mcast/ud_mcast_config.h"
#include "rhinet/fw/card.h"
#include "rhinet/hw_fw.h"

namespace rhinet::fw {

// The engine's view of the host: DMA to host memory, MSI-X, a clock.
// A memory region's translation as a DMA block that walks it takes it
// (EngineConfig::dma_region, RHN_CARD_CAP_DMA_REGION): its VP table
// (Documentation/hardware/README.md), I/O virtual addresses from
// iova on, num_pages pages of 1 << page_shift bytes, levels >= 1.
struct DmaRegion {
  uint64_t table = 0;
  uint64_t iova = 0;
  uint32_t num_pages = 0;
  uint8_t levels = 0;
  uint8_t page_shift = 0;
};

class HostBus;
// What HostBus::dma_region does unless a block does it: the walk by the
// core, each table entry and page through dma_read and dma_write.
bool dma_region_walk(HostBus& bus, const DmaRegion& r, uint64_t va, void* buf,
                     size_t len, bool write);

class HostBus {
 public:
  // False on a bus error (address outside host memory, IOMMU fault).
  virtual bool dma_read(uint64_t bus_addr, void* dst, size_t len) = 0;
  // dma_write may store a byte more than once (a host's memcpy does, e.g.
  // glibc's two overlapping 8-byte stores for 8..15 bytes): fine for data
  // software does not write meanwhile, wrong for a word software takes and
  // then clears.
  virtual bool dma_write(uint64_t bus_addr, const void* src, size_t len) = 0;
  // One naturally aligned little-endian 8-byte store, atomic to the host's
  // CPUs (as one aligned 8-byte PCIe write is): a status word or an owner
  // word. Software that reads it and then clears the word never sees the
  // old value come back. False on a bus error or a misaligned address.
  virtual bool dma_store_u64(uint64_t bus_addr, uint64_t value) = 0;
  // An ordered write: the first `publish_at` bytes (an entry's body) become
  // visible before the rest (the word with the owner bit), so software that
  // sees the owner bit sees the whole entry. A host whose bus can reorder
  // writes puts its write barrier between the two parts. A last part of
  // one aligned word is stored once (dma_store_u64).
  virtual bool dma_write_publish(uint64_t bus_addr, const void* src, size_t len,
                                 size_t publish_at) {
    const auto* p = static_cast<const uint8_t*>(src);
    if (!dma_write(bus_addr, p, publish_at)) return false;
    thread_fence(MemOrder::kRelease);
    const uint64_t tail_addr = bus_addr + publish_at;
    if (len - publish_at == sizeof(uint64_t) && !(tail_addr & 7)) {
      uint64_t word;
      memcpy(&word, p + publish_at, sizeof(word));
      return dma_store_u64(tail_addr, word);
    }
    return dma_write(tail_addr, p + publish_at, len - publish_at);
  }
  // With EngineConfig::dma_region: len bytes at I/O virtual address va of
  // region r to (write) or from host memory, translated page by page
  // through r's table by the DMA block itself, not by the core. False at
  // the first page not valid in the table, or a bus error (the pages
  // before it moved). The default walks the table with dma_read, as such
  // a block would; a card's block does it without the core.
  // (Inline: a vtable emitted with a pure virtual in it would need the
  // C++ runtime's __cxa_pure_virtual.)
  virtual bool dma_region(const DmaRegion& r, uint64_t va, void* buf,
                          size_t len, bool write) {
    return dma_region_walk(*this, r, va, buf, len, write);
  }
  virtual void raise_msix(uint16_t vector) = 0;
  // Monotonic nanoseconds; timers (retransmission, RNR) use it.
  virtual uint64_t now_ns() = 0;
  // The card shell's firmware slot (firmware-image.md): bytes of an image
  // into its staging buffer, and the check and keeping of what was staged.
  // Each returns the shell's enum rhn_fw_verdict; a host with no shell
  // takes no image.
  virtual uint32_t fw_stage(uint32_t offset, Span<const uint8_t> bytes) {
    (void)offset;
    (void)bytes;
    return RHN_FW_NO_STAGING;
  }
  virtual uint32_t fw_commit(uint32_t length, uint32_t flags) {
    (void)length;
    (void)flags;
    return RHN_FW_NO_STAGING;
  }
  // With EngineConfig::trigger_sums: the card's doorbell block keeps the
  // TRIGGER doorbells' pending sums (rhn_card_trigger_*). Entry `index`
  // takes adds for generation `gen` of context `owner` (gen 0: none),
  // returning the sum it held; the sum of one entry taken; the next entry
  // with a sum (UINT32_MAX: none).
  virtual uint64_t trigger_set(uint32_t index, uint16_t gen, uint32_t owner) {
    (void)index;
    (void)gen;
    (void)owner;
    return 0;
  }
  virtual uint64_t trigger_take(uint32_t index) {
    (void)index;
    return 0;
  }
  virtual uint32_t trigger_next() { return UINT32_MAX; }

 protected:
  // Never deleted through this interface (the soft core has no delete).
  ~HostBus() = default;
};

// A frame for the transmit assembler (EngineConfig::tx_assembler): its
// headers are at frame[0, hdr_len) in the engine's send-packet memory;
// the block reads len bytes at I/O virtual address va of region into
// frame + hdr_len, then, when `send`, sends frame[0, hdr_len + len) as
// Wire::transmit does (the MAC filling its CRCs on the way out).
struct TxGather {
  uint8_t* frame = nullptr;
  uint32_t hdr_len = 0;
  uint32_t len = 0;
  const DmaRegion* region = nullptr;
  uint64_t va = 0;
  bool send = true;
};

// The engine's link to the fabric switch. The frame is only valid during
// the call; the wire may drop it (the transport recovers).
class Wire {
 public:
  virtual void transmit(Span<const uint8_t> frame) = 0;
  // With EngineConfig::tx_assembler: the transmit assembler block gathers
  // a frame's payload behind its headers and sends it
  // (RHN_CARD_CAP_TX_ASSEMBLER, Documentation/hardware/soft-core.md).
  // False when the payload's DMA failed: nothing was sent, and the slot
  // holds what the block had read so far. The default does what the
  // block does with the host's region DMA and transmit.
  virtual bool assemble(HostBus& bus, const TxGather& g) {
    if (!bus.dma_region(*g.region, g.va, g.frame + g.hdr_len, g.len, false))
      return false;
    if (g.send) transmit({g.frame, size_t{g.hdr_len} + g.len});
    return true;
  }

 protected:
  ~Wire() = default;
};

// A receive FIFO the engine reads frames from in place (Engine::attach_rx):
// a card's MAC FIFO (rhn_card_wire_rx_peek/pop) whose frames stay where
// the MAC wrote them until popped. peek: the oldest frame's length and
// address (0: none); pop frees it. Called on the engine thread only.
class RxSource {
 public:
  virtual size_t peek(const uint8_t** frame) {
    (void)frame;
    return 0;
  }
  virtual void pop() {}
  // Whether a frame may be waiting, as cheaply as the FIFO allows: every
  // poll() asks. With `pending` (a FIFO's frame count where the core can
  // read it, e.g. a status register), a load; else peek.
  bool waiting() {
    const uint8_t* frame;
    return pending ? *pending != 0 : peek(&frame) != 0;
  }
  const volatile uint32_t* pending = nullptr;

  // The receive placement of plain WRITEs (EngineConfig::rx_write,
  // RHN_CARD_CAP_RX_WRITE): the block's tables, which the core keeps
  // equal to its own state, and whether the frame peek returned was
  // placed by the block. Without the block never called.
  struct Target {
    DmaRegion region;
    uint64_t iova = 0, length = 0;
    uint32_t rkey = 0, peer_qpn = 0;
    uint16_t peer_node = 0;
  };
  virtual bool placed() { return false; }
  virtual void target(uint32_t qpn, const Target* t) {
    (void)qpn;
    (void)t;
  }
  virtual bool arm(uint16_t node, uint16_t session, uint32_t next_serial) {
    (void)node;
    (void)session;
    (void)next_serial;
    return false;
  }
  virtual void disarm(uint16_t node) { (void)node; }
  virtual void flush() {}

 protected:
  ~RxSource() = default;
};

// A region in the card's terms and back (rhinet/fw/card.h).
inline rhn_card_region card_region(const DmaRegion& r) {
  return {r.table, r.iova, r.num_pages, r.levels, r.page_shift, 0};
}
inline DmaRegion engine_region(const rhn_card_region& r) {
  return {r.table, r.iova, r.num_pages, r.levels, r.page_shift};
}

// The transmit block for plain WRITEs (EngineConfig::tx_write,
// RHN_CARD_CAP_TX_WRITE): card.h's rhn_card_txw_* calls, with the
// block's entries as card.h lays them out, and the kick as the doorbell
// FIFO hands it to the block (true when the block took every WQE
// posted). Without the block never called.
class TxSink {
 public:
  virtual void set_qp(uint32_t qpn, const rhn_card_txw_qp* q,
                      rhn_card_txw_qp* left) {
    (void)qpn;
    (void)q;
    (void)left;
  }
  virtual void set_channel(uint16_t node, const rhn_card_txw_channel* c) {
    (void)node;
    (void)c;
  }
  virtual bool slot_push(uint32_t slot, void* frame) {
    (void)slot;
    (void)frame;
    return false;
  }
  // n slots in one access (card.h's rhn_card_txw_slot_push_n): how many
  // the FIFO took, the first ones.
  virtual uint32_t slot_push_n(const uint32_t* slot, void* const* frame,
                               uint32_t n) {
    uint32_t i = 0;
    while (i < n && slot_push(slot[i], frame[i])) i++;
    return i;
  }
  virtual bool slot_back(uint32_t* slot) {
    (void)slot;
    return false;
  }
  virtual uint32_t record_pop(rhn_card_txw_record* out, uint32_t max) {
    (void)out;
    (void)max;
    return 0;
  }
  virtual void flush() {}
  virtual bool kick(uint32_t qpn) {
    (void)qpn;
    return false;
  }

 protected:
  ~TxSink() = default;
};

struct EngineConfig {
  uint16_t node_id = 0;
  uint8_t mac[6] = {0x02, 0x52, 0x4e, 0x00, 0x00, 0x00};  // low 2 = node
  // Table sizes (bounded; placed once at power-on).
  uint32_t db_pages = 256;
  uint32_t max_pds = 1024;
  uint32_t max_mrs = 4096;
  uint32_t max_cqs = 1024;
  uint32_t max_qps = 1024;
  uint32_t max_srqs = 256;
  uint32_t max_eqs = 32;
  uint32_t max_areas = 4096;
  uint32_t context_area_share = 64;  // areas one context may hold, /256
  // Node IDs 0..max_nodes-1 are reachable; each has a small channel state
  // (sizeof(Peer), at most 208 bytes) allocated at construction.
  uint32_t max_nodes = 4096;
  uint32_t msix_vectors = 32;
  uint32_t tlb_entries = 256;         // 4-way set associative
  uint32_t send_packet_slots = 1024;  // send-packet memory, shared
  // The share of send memory one context's requests may hold (in 1/256ths):
  // a process spraying absent nodes cannot starve the others.
  uint32_t context_slot_share = 64;
  uint32_t rx_contexts = 256;       // multi-packet receives in progress
  uint32_t context_rx_share = 128;  // per context, in 1/256ths
  uint32_t channel_window = 128;    // unacked packets per peer
  uint32_t rx_fifo_frames = 256;
  uint32_t kick_fifo_entries = 1024;
  uint32_t max_inflight_per_qp = 64;  // messages awaiting ACK/response
  // READs and atomics one QP keeps in flight: as many as it may have
  // messages in flight. Over a slow path (a software NIC under TCG: 200
  // us round trips) they are what bounds the rate of atomics and small
  // READs; soft-RoCE allows 128.
  uint32_t max_rd_atomic = 64;
  uint32_t responder_reads = 256;   // READ responses queued as responder
  uint32_t responder_bitmaps = 32;  // of them bitmap PULLs (4 KiB each)
  uint32_t fw_messages = 256;       // firmware-originated messages at once
  // Of them, what one family (sync, coll, share, TM, pin-down, probes)
  // may hold, in 1/256ths, and a reserve only account 0 (the kernel's,
  // and the NIC's own probes) may use; a user's account may hold
  // account_share of the rest.
  uint32_t fw_family_share = 128;
  uint32_t fw_kernel_share = 16;
  // Every table users fill with values of their choosing also limits each
  // account (one user's contexts together, RHN_ADMIN_CREATE_CONTEXT) to
  // this share of it, in 1/256ths (never below one context's share).
  uint32_t account_share = 128;
  // Each family's own tables and timers (ops/<family>/<family>_config.h).
  TagConfig tag;                   // ops/tag, ops/tm
  PinConfig pin;                   // ops/pindown
  SyncConfig sync;                 // ops/sync
  ShareConfig share;               // ops/share
  CollConfig coll;                 // ops/coll
  McastSwitchConfig mcast_switch;  // ops/mcast_switch
  UdMcastConfig ud_mcast;          // ops/ud_mcast
  TriggerConfig trigger;           // ops/trigger
  // While locks, barriers, shared-region joins or collectives wait on other
  // nodes, the NIC checks this often that those nodes still answer, so a
  // dead node fails the wait instead of hanging it.
  uint64_t sync_probe_ns = 20'000'000;
  // On-board twin memory, handed out by RHN_ADMIN_ALLOC_TWIN in
  // 4 KiB pages to at most max_twins allocations. Reserved, not touched,
  // until allocated.
  uint64_t twin_bytes = 16u << 20;
  uint32_t max_twins = 256;
  // Timers.
  // Retransmission timeout: smoothed RTT + 4 x its variation, measured per
  // peer, never below the first value (also used before any sample) nor
  // above the second; doubled on every retry, up to the third (a few
  // losses in a row on a slow path must not stop a channel for many
  // seconds).
  uint64_t retransmit_timeout_ns = 2'000'000;
  uint64_t max_retransmit_timeout_ns = 200'000'000;
  uint64_t max_backed_off_timeout_ns = 1'000'000'000;
  uint32_t max_retries = 8;  // then the peer is declared dead
  // A SYN of an older session is refused (and its sender told which
  // session to move to) unless the current session has been silent this
  // long (its sender was restarted with an older epoch).
  uint64_t session_quiet_ns = 1'000'000'000;
  // Power-on epoch of every channel's first session; 0: from the clock.
  // (An FPGA seeds it from a random source; tests pin it.)
  uint16_t boot_session = 0;
  // After a node stopped answering, datagrams to it are dropped at once
  // for this long rather than each holding send memory through retries.
  uint64_t dead_holdoff_ns = 100'000'000;
  uint32_t ack_coalesce = 16;      // ACK at least every N received packets
  uint64_t ack_delay_ns = 20'000;  // or this long after the first unacked
  // The common WQE and the common arriving packet take their fast paths
  // (Documentation/firmware/instruction-counts.md); false: everything
  // takes the generic ones (tests compare the two: same frames, CQEs and
  // counters).
  bool fast_paths = true;
  // The card's MAC fills both CRCs of every frame it sends and checks
  // them on every frame it receives, dropping (and counting) bad ones
  // before they reach the receive FIFO (RHN_CARD_CAP_MAC_CRC,
  // Documentation/hardware/soft-core.md): the engine then neither
  // computes nor checks them. Frames it turns around itself (loopback)
  // never pass a MAC and are not checked either.
  bool mac_crc = false;
  // The card's DMA block translates I/O virtual addresses itself
  // (HostBus::dma_region, RHN_CARD_CAP_DMA_REGION): a DMA through a key
  // hands it the region and the address, and the core walks no TLB or
  // table for it. Keys, rights and bounds are still the core's.
  bool dma_region = false;
  // The card's transmit assembler (Wire::assemble,
  // RHN_CARD_CAP_TX_ASSEMBLER) reads a posted packet's payload into its
  // send slot behind the headers the core wrote and sends the frame: the
  // payload never passes through the core. Used together with mac_crc
  // and dma_region (its gathers name a region, its frames leave their
  // CRCs to the MAC); without both the engine does not use it.
  bool tx_assembler = false;
  // The card's receive placement of plain WRITEs (RxSource::placed,
  // RHN_CARD_CAP_RX_WRITE): for a frame of an armed channel and a QP
  // whose target the core wrote, the block checks the serial and the key
  // and places the payload; the core keeps only the channel's
  // bookkeeping. Used with mac_crc, dma_region and a receive FIFO read in
  // place (attach_rx), not without.
  bool rx_write = false;
  // The card's doorbell block keeps the TRIGGER doorbells' pending sums
  // (HostBus::trigger_*, RHN_CARD_CAP_TRIGGER_SUMS): the engine tells it
  // which counters live and takes the sums from it.
  bool trigger_sums = false;
  // The card's transmit block for plain WRITEs (TxSink,
  // RHN_CARD_CAP_TX_WRITE): for a QP the core arms, the block fetches,
  // checks and sends one-packet RC WRITEs and the core takes a record of
  // each. Used with mac_crc, dma_region, tx_assembler and the fast
  // paths (attach_tx), not without.
  bool tx_write = false;
  // Multi-producer SQs (RHN_CREATE_QP_F_MULTI_PRODUCER) and SQs with an
  // event index: the record scan that finds work whose doorbell was lost
  // runs this often after any sign of their producers, doubling while it
  // finds nothing up to the second value. Each scan reads 8 bytes per
  // idle such QP.
  uint64_t sq_scan_ns = 100'000;
  uint64_t sq_scan_max_ns = 10'000'000;
};

// The memory a host build hands the engine (firmware/host/).
struct HostMemory;

class Engine {
 public:
  // On a host (QEMU device, test bench): the engine's tables come from the
  // host's memory (firmware/host/engine_host.cpp).
  Engine(const EngineConfig& config, HostBus& bus, Wire& wire);
  // On a card: every table, and the engine's state, placed in mem (the
  // card's RAM). Never torn down.
  Engine(const EngineConfig& config, HostBus& bus, Wire& wire, CardMemory& mem);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // BAR0 access (offset within BAR0, size 4 or 8). Any thread.
  uint64_t reg_read(uint32_t offset, unsigned size);
  void reg_write(uint32_t offset, uint64_t value, unsigned size);

  // Doorbell BAR access: page = context, offset within the page. Any thread,
  // but writes to one page must not race each other (one process per page).
  // requester: the write's PCIe requester ID as the card's PCIe shell saw
  // it, 0 for the host CPU, a device's otherwise (a peer-to-peer write);
  // SQ kicks are counted by it (HOST_DOORBELLS, PEER_DOORBELLS).
  void doorbell_write(uint32_t page, uint32_t offset, uint64_t value,
                      unsigned size, uint16_t requester = 0);

  // Doorbells were lost before they reached the engine (a card's doorbell
  // FIFO overflowed): the engine looks at every queue, as after its own
  // kick FIFO overflows.
  void doorbells_lost();
  // The card's doorbell block holds pending TRIGGER sums (trigger_sums).
  void trigger_sums_pending();

  // A whole inline WQE for `page`, as a card's doorbell block hands it
  // over (it gathers the page's inline-window stores itself): the same as
  // writing the bytes into the page's inline window.
  void doorbell_inline(uint32_t page, const void* wqe, size_t len);

  // A frame from the wire. Any thread. Returns false when the receive FIFO
  // was full and the frame was dropped (counted; the sender retransmits).
  bool frame_arrived(Span<const uint8_t> frame);
  // Frames a card's MAC dropped before they reached frame_arrived (its
  // buffer was full): counted with the FIFO's drops (RX_DROPS).
  void frames_dropped(uint64_t n);
  // From now on poll() also takes frames from src, in place, after those
  // in its own receive FIFO (frames it turned around to itself, and any
  // handed to frame_arrived): as frame_arrived would take them, without
  // the copy. Engine thread only; src outlives the engine.
  void attach_rx(RxSource& src);
  // From now on plain WRITEs of the QPs the core arms go through the
  // transmit block (EngineConfig::tx_write). Engine thread only; sink
  // outlives the engine.
  void attach_tx(TxSink& sink);

  // Does a bounded amount of work on the engine thread. Returns true if
  // anything happened; a host may sleep until next_deadline_ns() or new
  // ingress when it returns false.
  bool poll();
  // Earliest time a timer needs poll(), or UINT64_MAX.
  uint64_t next_deadline_ns() const;

  // Link state as seen by the host (the QEMU device maps its netdev state).
  void set_link_up(bool up);

  uint64_t counter(unsigned index) const;
  // The configuration did not fit the memory: the engine stays down
  // (RHN_STATUS_FATAL).
  bool failed() const;

  struct Impl;

 private:
  HostMemory* host_memory_ = nullptr;
  Impl* impl_ = nullptr;
};

}  // namespace rhinet::fw
