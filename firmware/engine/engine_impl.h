// SPDX-License-Identifier: BSD-2-Clause
// Engine internals shared by the modules. The life of a WQE follows the
// folders: doorbell/ (kick FIFO) -> requester/ (fetch, decode, packetize)
// -> transport/ (serial numbers, send-packet memory, ACK/NAK, resend) ->
// wire -> transport/ on the remote engine -> responder/ (checks, DMA into
// memory, responses) -> completion/ (CQEs, status words, events).
// translation/ turns keys and addresses into bus addresses for all of them;
// admin/ creates the objects (admin/objects.h) in the tables below.
#pragma once

#include "admin/objects.h"
#include "core/bounded.h"
#include "core/counters.h"
#include "core/freestanding.h"
#include "core/keyed_hash.h"
#include "engine/shares.h"
#include "fwmsg/fw_message.h"
#include "ops/routes.h"
#include "ops/states.h"
#include "requester/inflight.h"
#include "requester/wqe_decoder.h"
#include "responder/rx.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "translation/tlb.h"
#include "transport/packet.h"
#include "transport/peer.h"
#include "transport/tx_template.h"

namespace rhinet::fw {

// ops/partial's scratch: a packet's bytes plus the look-ahead that finds
// where the next one starts.
constexpr uint32_t kXferScratch = 4 * RHN_WIRE_MTU;

// ---- Ingress FIFOs (doorbell/)
// ------------------------------------------------

enum class KickKind : uint8_t {
  kControl,
  kAdmin,
  kEqDoorbell,
  kSq,
  kRq,
  kSrq,
  kCqArm,
  kLink,
  kTrigger,      // a trigger counter's increment (ops/trigger)
  kTriggerSums,  // doorbell adds wait in pending sums (ops/trigger)
};

struct Kick {
  KickKind kind;
  bool has_inline = false;
  uint32_t page = 0;
  uint64_t value = 0;
  RawWqe inline_wqe;
};

struct RxFrame {
  uint16_t len = 0;
  alignas(64) uint8_t data[RHN_MAX_FRAME + 64];
};

// An MR's translation as the DMA block takes it (EngineConfig::dma_region;
// an MR with a table, levels > 0, not on twin memory).
DmaRegion region_of(const MrObj& mr);

#if !defined(RHN_FW_CARD)
// The emulated NIC's bus block: counts each request the engine makes of
// the host bus (RHN_CNT_DMA_*, RHN_CNT_MSIX_INTERRUPTS) and passes it on.
// A request is counted once however the host carries it out (a region
// walked by the host's own block is one read or write of len bytes).
class CountingBus final : public HostBus {
 public:
  CountingBus(HostBus& bus, Counters& counters)
      : bus_(bus), counters_(counters) {}
  bool dma_read(uint64_t addr, void* dst, size_t len) override {
    read(len);
    return bus_.dma_read(addr, dst, len);
  }
  bool dma_write(uint64_t addr, const void* src, size_t len) override {
    written(len);
    return bus_.dma_write(addr, src, len);
  }
  bool dma_store_u64(uint64_t addr, uint64_t value) override {
    written(sizeof(value));
    return bus_.dma_store_u64(addr, value);
  }
  bool dma_write_publish(uint64_t addr, const void* src, size_t len,
                         size_t publish_at) override {
    written(len);
    return bus_.dma_write_publish(addr, src, len, publish_at);
  }
  bool dma_region(const DmaRegion& r, uint64_t va, void* buf, size_t len,
                  bool write) override {
    if (write)
      written(len);
    else
      read(len);
    return bus_.dma_region(r, va, buf, len, write);
  }
  void raise_msix(uint16_t vector) override {
    counters_.add(RHN_CNT_MSIX_INTERRUPTS);
    bus_.raise_msix(vector);
  }
  uint64_t now_ns() override { return bus_.now_ns(); }
  uint32_t fw_stage(uint32_t offset, Span<const uint8_t> bytes) override {
    return bus_.fw_stage(offset, bytes);
  }
  uint32_t fw_commit(uint32_t length, uint32_t flags) override {
    return bus_.fw_commit(length, flags);
  }

 private:
  void read(size_t len) {
    counters_.add(RHN_CNT_DMA_READS);
    counters_.add(RHN_CNT_DMA_READ_BYTES, len);
  }
  void written(size_t len) {
    counters_.add(RHN_CNT_DMA_WRITES);
    counters_.add(RHN_CNT_DMA_WRITE_BYTES, len);
  }

  HostBus& bus_;
  Counters& counters_;
};
#endif

// ---- The engine ---------------------------------------------------------

// The families' tables are its base (ops/states.h): their code reaches
// them as members; the stages never name them.
struct Engine::Impl : FamilyStates {
  // Places every table in mem (sized by config); if mem runs out, the
  // engine comes up failed (RHN_STATUS_FATAL) and does nothing.
  Impl(const EngineConfig& config, HostBus& bus, Wire& wire, CardMemory& mem);

  EngineConfig cfg;
  bool out_of_memory = false;  // power-on could not place the tables
  ModuleIndex modules;         // the family modules' lookups (ops/routes.h)
  Counters counters;
#if !defined(RHN_FW_CARD)
  CountingBus counted_bus;  // what `bus` names in an emulated NIC
#endif
  HostBus& bus;
  Wire& wire;
  Tlb tlb;
  uint64_t now = 0;
  // Until when a poll without kicks or frames finds every stage idle
  // (stages_due); 0: the next poll looks at all of them (see poll()).
  uint64_t next_due = 0;
  // This poll began with every stage idle and has done only the fast
  // path's work so far (see poll()): the families have nothing to do.
  bool lane_only = false;
  // Bumps with every admin command and reset: the keys cached per QP
  // (QpObj::rx_key, tx_key) are valid while it stays (never 0).
  uint32_t mr_epoch = 1;

  // Registers.
  Atomic<uint32_t> status_reg{0};
  Atomic<uint32_t> control{0};
  Atomic<uint64_t> admin_sq_base{0}, admin_cq_base{0};
  Atomic<uint32_t> admin_log_depth{0};
  // The link as the host sees it: the cable (carrier, set_link_up) unless
  // SET_LINK took it down administratively, which a reset undoes.
  Atomic<bool> link_up{true};
  Atomic<bool> carrier{true};
  bool link_reported = true;

  // Ingress.
  MpscQueue<Kick> kicks;
  MpscQueue<RxFrame> rx;
  RxSource* rx_source = nullptr;  // frames read in place (attach_rx)
  // The receive placement block is used (EngineConfig::rx_write, with
  // what it needs: the MAC's CRCs, region DMA, rx_source, fast paths).
  bool rx_write = false;
  // The transmit block for plain WRITEs is used (EngineConfig::tx_write,
  // attach_tx, with the blocks it needs).
  TxSink* tx_sink = nullptr;
  bool tx_write = false;
  Atomic<bool> kick_overflow{false};
  // What the kicks only point at, so that a kick lost to a full FIFO
  // loses nothing (Documentation/hardware/queues.md, "Lost kicks"): the
  // latest CONTROL and ADMIN_SQ_TAIL written, and per EQ and per CQ the
  // doorbells that found the FIFO full (kLostPending set; applied and
  // cleared by the overflow's rescan).
  Atomic<uint32_t> control_written{0};
  Atomic<uint32_t> admin_tail_written{0};
  Table<Atomic<uint64_t>> eq_db_lost;   // CI | RHN_EQ_DB_ARM | pending
  Table<Atomic<uint64_t>> cq_arm_lost;  // requested_at << 32 | flags
  // A CQ's owner context + 1 (0: none), for the doorbell side to keep a
  // foreign page's arm out of the owner's lost-arm word.
  Table<Atomic<uint32_t>> cq_owner;
  Table<RawWqe> inline_staging;  // per doorbell page
  // Each CQ's producer index as the doorbells see it: an arm kick records
  // it when it is written (any thread), cq_push publishes it.
  Table<Atomic<uint32_t>> cq_published;
  // Runs: each CQ's open run's entry, and the CQs that had a run open in
  // this pass (kCqRunListed), num_open_runs of them: the end of the pass
  // writes those still open.
  Table<rhn_cqe> run_cqes;
  Table<uint32_t> open_runs;
  uint32_t num_open_runs = 0;
  // The net_device's raw-frame QP (kernel context only), and the buffer a
  // raw frame is built in.
  uint32_t raw_qpn = kNone;
  Table<uint8_t> raw_frame;
  // Source GIDs for outgoing GRHs, set by the kernel (all zero: unused).
  Array<Array<uint8_t, 16>, RHN_GID_TABLE_LEN> gid_table{};
  Array<uint8_t, RHN_GID_TABLE_LEN> gid_types{};  // enum rhn_gid_type

  // Admin queue.
  uint32_t admin_consumer = 0;
  uint32_t admin_tail = 0;
  uint32_t admin_cq_producer = 0;

  // Tables.
  Table<ContextObj> contexts;
  Table<PdObj> pds;
  Table<MrObj> mrs;
  Table<EqObj> eqs;
  Table<CqObj> cqs;
  Table<SrqObj> srqs;
  Table<QpObj> qps;
  Table<AreaObj> areas;
  Table<uint32_t> area_buckets;  // chain heads, a power of two
  Fifo<uint32_t> free_areas;
  // The hash of the tables users key (areas, locks, barriers): its secret
  // changes at every reset, when those tables are empty.
  KeyedHash table_hash;
  // On-board twin memory and its allocations (ops/partial).
  Table<uint8_t> twin_mem;
  uint32_t twin_pages = 0;
  Table<TwinObj> twins;
  // Where partial transfers compare and gather (one packet's worth and a
  // look-ahead), so the data path allocates nothing.
  Table<uint8_t> xfer_scratch;
  Table<Inflight> inflight;        // max_inflight_per_qp per QP
  Table<TxTemplate> tx_templates;  // per QP (transport/tx_template.h)
  Table<ReadCtx> read_ctxs;
  Fifo<uint16_t> free_read_ctxs;
  Table<ResponderRead> responder_reads;
  Fifo<uint32_t> free_responder_reads;
  // Bitmaps of partial READs being answered, one READ request's each.
  Table<uint8_t> read_bitmaps;
  Fifo<uint16_t> free_read_bitmaps;
  uint32_t qp_gen_counter = 0;
  // QPNs are handed out round-robin: a number comes back only after all
  // others, so late packets and connection managers' time-wait (which
  // refuses a peer QPN it saw recently) never meet a new QP with an old
  // QP's number.
  uint32_t next_qpn = RHN_QPN_GSI + 1;

  // Transport.
  Table<Peer> peers;  // by node ID, cfg.max_nodes of them
  Table<SendSlot> slots;
  FreeSlots free_slots;
  uint32_t response_reserve = 0;    // slots only responses may take
  uint32_t context_slot_quota = 0;  // slots one context may hold
  uint16_t boot_session = 1;        // first session of every peer
  WaitList slot_waiters;  // QPs waiting for send memory or their quota
  Fifo<uint32_t> ready;   // QPs with requester work
  // The earliest QpObj::wake_at (next_rnr_wake) or record scan.
  uint64_t next_qp_wake = UINT64_MAX;
  // Peer scheduling: peers with work to do now, and peers with timers
  // (visited only when the earliest of their deadlines has come).
  Fifo<uint32_t> peer_ready;
  uint32_t busy_head = kNone;
  uint64_t next_peer_deadline = UINT64_MAX;
  // Firmware-originated messages.
  Table<FwMessage> fw_msgs;
  Fifo<uint32_t> fw_queue;  // handles waiting to be sent
  Fifo<uint32_t> free_fw_msgs;
  // Entries each family holds, and how many one family may (no family,
  // however many of its messages wait for a silent peer, takes the table);
  // the last fw_reserve entries are for account 0 (the kernel, probes).
  Array<uint32_t, kFwOwners> fw_family_used{};
  uint32_t fw_family_limit = 0;
  uint32_t fw_reserve = 0;
  // Share accounting of the tables above and below (engine/shares.h).
  Shares shares;
  // Receive contexts.
  Table<RxContext> rx_ctxs;
  Fifo<uint32_t> free_rx_ctxs;
  uint32_t rx_context_quota = 0;  // receive contexts one context may hold
  // Last, so the fields above keep their offsets: the earliest
  // QpObj::wake_at; the QPs the record scan reads (multi-producer and
  // event-index SQs, requester/mprod.cpp), when it runs next
  // (UINT64_MAX: no such QP) and its interval.
  uint64_t next_rnr_wake = UINT64_MAX;
  uint32_t scan_head = kNone;
  uint64_t scan_at = UINT64_MAX;
  uint64_t scan_interval = 0;
  // The earliest CqObj::mod_deadline (UINT64_MAX: none).
  uint64_t cq_mod_at = UINT64_MAX;
  // The area the last request by area resolved to (resolve_target,
  // responder/responder.cpp): valid for a request with RHN_WOP_F_AREA
  // whose target resolved, until the next request. A field rather than
  // an argument, so requests by key pay nothing for it (area_landed,
  // ops/family.h).
  AreaObj* resolved_area = nullptr;

  // ---- engine/engine.cpp
  void reset();
  bool drain_kicks();
  // Up to `budget` frames of rx_source, after the receive FIFO's.
  bool take_in_place(uint32_t budget);
  // take_in_place with the receive placement block (placed_write.cpp).
  bool take_placed(uint32_t budget);
  void handle_kick(Kick& k);
  // An SQ doorbell's WQE handed over with it, taken when it is the next.
  void take_inline(QpObj& qp, const Kick& k);
  // The SQ doorbell's lane: true when it took the only kick.
  bool lane_kick();
  bool run_timers();
  // When a stage of poll() other than the kicks and frames next has work
  // (0: now), by the tests poll() makes before entering each.
  uint64_t stages_due();
  void schedule(uint32_t qpn);
  void wake_later(uint32_t qpn, uint64_t at);
  void report_link();
  // An event for the driver on the asynchronous EQ (the first created).
  bool async_event(uint8_t type, uint32_t object, uint64_t data,
                   uint8_t flags = 0);

  // ---- admin/admin.cpp
  void admin_process();
  // The rescan after lost kicks (drain_kicks): every doorbell kept aside.
  void take_lost_doorbells();
  void apply_control(uint32_t value);
  void apply_eq_doorbell(uint32_t eqn, uint32_t ci, bool arm);
  // The doorbell side (any thread), for a doorbell the FIFO had no room for.
  void keep_lost_eq_doorbell(uint64_t value);
  void keep_lost_cq_arm(uint32_t page, uint64_t value);
  // A command's result into host memory. A write the bus refuses at once
  // is DMA_ERROR and counted; on a bus of posted writes (a card) it is
  // OK here and counted where the refusal is seen.
  rhn_admin_status write_result(uint64_t addr, const void* p, size_t len);
  rhn_admin_status admin_execute(const rhn_admin_cmd& cmd, uint32_t& result,
                                 uint32_t& detail);
  void destroy_qp_state(uint32_t qpn);
  // The QP stops being a responder: its receives in progress and queued
  // READ streams are dropped (flush: receives complete as flushed).
  void cancel_responder_work(uint32_t qpn, bool flush);

  // ---- translation/access.cpp
  // Translate and DMA through a key: checks owner context (or PD), rights
  // and bounds. Returns RHN_SYN_NONE or the reason.
  // A key used by this NIC (an lkey: windows refused), or, with
  // `via_qpn`, an rkey arriving for that QP (windows too).
  rhn_syndrome check_key(uint32_t key, uint32_t context, uint32_t pdn,
                         uint32_t access, uint64_t va, uint64_t len,
                         uint32_t* mr_index, uint32_t via_qpn = kNone);
  // The window a key names in `context`, or nullptr.
  // check_key for a context's own key (context kNone) through a QP's
  // cache of its last one (KeyCache): on a hit, the bounds only.
  [[gnu::always_inline]] rhn_syndrome check_key_cached(
      KeyCache& c, uint32_t key, uint32_t pdn, uint32_t access, uint64_t va,
      uint64_t len, uint32_t* mr_index, uint32_t via_qpn) {
    if (c.holds(key, mr_epoch, va, len)) {
      *mr_index = c.mr_index;
      return RHN_SYN_NONE;
    }
    return check_key_remember(c, key, pdn, access, va, len, mr_index, via_qpn);
  }
  // mr_dma through the region check_key_cached left in c when it is
  // mr_index's and current: the DMA block's descriptor as it is kept.
  [[gnu::always_inline]] bool key_dma(const KeyCache& c, uint32_t mr_index,
                                      uint64_t va, void* buf, uint64_t len,
                                      bool write) {
    if (!cfg.dma_region) return mr_dma(mr_index, va, buf, len, write);
    const DmaRegion* r = c.region_of(mr_index, mr_epoch);
    if (!r) return mr_dma(mr_index, va, buf, len, write);
    return region_dma(*r, va, buf, len, write);
  }
  // The DMA block through a region (a failure counted).
  [[gnu::always_inline]] bool region_dma(const DmaRegion& r, uint64_t va,
                                         void* buf, uint64_t len, bool write) {
    if (bus.dma_region(r, va, buf, len, write)) return true;
    counters.add(RHN_CNT_DMA_ERRORS);
    return false;
  }
  // check_key, and the region kept in c when it may be.
  rhn_syndrome check_key_remember(KeyCache& c, uint32_t key, uint32_t pdn,
                                  uint32_t access, uint64_t va, uint64_t len,
                                  uint32_t* mr_index, uint32_t via_qpn);
  MrObj* window_of_key(uint32_t key, uint32_t context);
  // Unbinds a window: its region is free of it.
  void unbind_window(MrObj& mw);
  // What LOCAL_INV or a peer's SEND_INV (arriving on `via_qpn`) may
  // invalidate with `key` for a QP of `context` and `pdn`: a bound type 2
  // window (bound through via_qpn) or a registered fast-registration MR.
  MrObj* invalidatable(uint32_t key, uint32_t context, uint32_t pdn,
                       uint32_t via_qpn);
  void invalidate(MrObj& obj);
  bool mr_dma(uint32_t mr_index, uint64_t va, void* buf, uint64_t len,
              bool write);
  // A word software polls and then clears (a status word): one aligned
  // 8-byte store (HostBus::dma_store_u64), never a multi-pass copy.
  bool mr_store_u64(uint32_t mr_index, uint64_t va, uint64_t value);
  // Why a translation failed: later work turns kNotPresent into a
  // pin-down request to the host instead of an error.
  enum class Fault : uint8_t { kOk, kNotPresent, kBounds, kBusError };
  Fault translate(uint32_t mr_index, uint64_t va, uint64_t& bus_addr);
  // Moves len bytes between buf and an SGE list, starting offset bytes
  // into the list; each piece is checked against pdn and rights first. A
  // gather stopped by a page of an on-demand MR not pinned notes it in
  // pins.fault_mr (ops/pindown: the send waits for its host).
  bool sge_dma(const rhn_sge* sges, uint32_t num_sge, uint64_t offset,
               uint8_t* buf, uint64_t len, uint32_t pdn, bool to_host);
  // Areas: the bucket of (context, ID) under table_hash.
  uint32_t& area_bucket(uint32_t context, uint32_t area_id);
  AreaObj* find_area(uint32_t context, uint32_t area_id);
  // Group 0 and the groups set for the context (RHN_ADMIN_SET_GROUPS).
  bool in_group(uint32_t context, uint16_t group) const;
  // The twin a handle names if it is live and the context's, else null.
  TwinObj* twin_of(uint32_t handle, uint32_t context);
  uint8_t* twin_bytes(const TwinObj& t) {
    return twin_mem.data() + uint64_t{t.first_page} * RHN_TWIN_PAGE;
  }
  // An MR over twin memory (MrObj::on_twin): where its bytes [va, va +
  // len) are, or null when they are not all inside its twin.
  uint8_t* twin_mr_bytes(const MrObj& mr, uint64_t va, uint64_t len);
  // Queue memory (rings, records, status words) owned by a context.
  rhn_syndrome check_host_ref(const HostRef& ref, uint32_t context,
                              uint64_t len, bool nic_writes);
  // host_dma of a QP's queue through its region kept in c (KeyCache,
  // filled by remember_region for a plain MR: the queue holds a
  // reference on it, and any change of it bumps mr_epoch).
  [[gnu::always_inline]] bool queue_dma(KeyCache& c, const HostRef& ref,
                                        uint64_t offset, void* buf,
                                        uint64_t len, bool write) {
    if (cfg.dma_region && ref.lkey != RHN_LKEY_PHYSICAL) {
      const uint32_t mr_index = ref.lkey >> RHN_KEY_INDEX_SHIFT;
      // The kept region looked up once (key_dma would look again).
      if (const DmaRegion* r = c.region_of(mr_index, mr_epoch))
        return region_dma(*r, ref.addr + offset, buf, len, write);
      if (remember_region(c, mr_index))
        return key_dma(c, mr_index, ref.addr + offset, buf, len, write);
    }
    return host_dma(ref, offset, buf, len, write);
  }
  // Keeps mr_index's region in c if it may be kept (see KeyCache).
  bool remember_region(KeyCache& c, uint32_t mr_index);
  bool host_dma(const HostRef& ref, uint64_t offset, void* buf, uint64_t len,
                bool write);
  // An entry (CQE) into queue memory, body before its owner word
  // (HostBus::dma_write_publish), translated once.
  bool host_publish(const HostRef& ref, uint64_t offset, const void* buf,
                    uint32_t len, uint32_t publish_at);

  // ---- requester/mprod.cpp: many producers on one SQ (queues.md)
  // The QP joins or leaves the list the record scan walks (a
  // multi-producer QP or one with an SQ event index).
  void scan_link(uint32_t qpn);
  void scan_unlink(uint32_t qpn);
  // The requester read the QP's record into sq_producer (it had taken
  // up to sq_fetch): nic_consumer is stored if it moved; new work brings
  // the scan back to its shortest interval.
  void mp_record_read(QpObj& qp);
  // nic_consumer = slots done, if that changed since the last store.
  void mp_store_consumer(QpObj& qp);
  // The record scan (run_timers): true if it handed work to a QP.
  bool record_scan();
  // The scan runs again `scan_interval` from now (the timers see it).
  void scan_arm(uint64_t interval);

  // ---- requester/requester.cpp
  bool requester_run(uint32_t budget);
  bool requester_step(uint32_t qpn, uint32_t budget);
  bool start_message(QpObj& qp, uint32_t qpn);
  bool fetch_wqe(QpObj& qp, uint32_t slot, RawWqe& raw, uint32_t& nslots);
  // fetch_wqe's slots after the first (a WQE of several), apart so that
  // the common WQE of one slot is fetched with few registers saved.
  [[gnu::noinline]] bool fetch_rest(QpObj& qp, uint32_t first, RawWqe& raw,
                                    uint32_t nslots);
  // The WQE of in-flight message e again, as start_message decoded it:
  // from its SQ slots (its trigger slot taken off) or, fired from the
  // trigger table, from there. False: its slots were overwritten.
  bool refetch_wqe(QpObj& qp, const Inflight& e, RawWqe& raw, uint32_t& nslots);
  // A triggered WQE parked (ops/trigger): its `consumed` SQ slots
  // complete without a CQE, in order with the QP's other WQEs.
  void park_consumed(QpObj& qp, uint32_t qpn, uint32_t consumed);
  enum class TxResult { kSent, kBlocked, kFinished, kAborted };
  TxResult send_packet(QpObj& qp, uint32_t qpn);
  // The operation header every request packet of the QP's current message
  // starts from (the family fills in the rest).
  rhn_op_hdr request_header(const QpObj& qp, uint32_t qpn,
                            const Inflight& e) const;
  Inflight& entry(uint32_t qpn, uint32_t idx) {
    return inflight[size_t{qpn} * cfg.max_inflight_per_qp +
                    idx % cfg.max_inflight_per_qp];
  }
  void finish_entry(uint32_t qpn, Inflight& e, uint8_t status,
                    uint8_t syndrome);
  // Returns the entry's READ context (if any) to the free list.
  void release_read_ctx(Inflight& e);
  // A DIFF PUSH completed: its twin takes the SGE's bytes.
  void update_diff_twin(QpObj& qp, const Inflight& e);
  void complete_in_order(uint32_t qpn);
  void qp_to_error(uint32_t qpn);
  void flush_qp(uint32_t qpn);
  // A plain RQ's record word that asks software for RQ kicks (ERR) or
  // not; an endpoint's word is its tag index (ops/tag).
  void rq_ask_for_kicks(QpObj& qp, bool ask);
  // The same for a plain SQ (a multi-producer record's word is a count):
  // stores the word and remembers it in sq_asks_kick.
  void sq_ask_for_kicks(QpObj& qp, bool ask);
  // The record showed nothing new: if nothing of the SQ is uncompleted
  // either, ask for kicks and read the record once more. True when that
  // read found new work.
  bool sq_idle_found_work(QpObj& qp);
  // An SQ doorbell for the QP: one that finds the NIC busy on the SQ
  // takes the request for kicks back.
  void sq_kicked(QpObj& qp) {
    qp.txw_kicked = true;
    if (qp.sq_asks_kick && qp.state == RHN_QPS_RTS &&
        (qp.tx_active || qp.inflight_head != qp.inflight_tail ||
         qp.sq_fetch != qp.sq_producer))
      sq_ask_for_kicks(qp, false);
  }
  void message_acked(uint32_t qpn, uint32_t gen, uint32_t serial,
                     uint16_t peer);
  // message_acked's common case, without its schedule(qpn) and its count
  // of the completion (release_gated makes both once for a run): the
  // QP's oldest message, quiet (Inflight::quiet), with no completed one
  // behind it. False (nothing changed) for anything else.
  // (transport/channel_inline.h)
  inline bool retire_quiet(uint32_t qpn, uint32_t gen, uint32_t serial,
                           uint16_t peer);
  // Its checks of the entry and the retirement, for a QP already checked.
  inline bool retire_quiet_entry(QpObj& qp, uint32_t qpn, uint32_t serial,
                                 uint16_t peer);
  // After retire_quiet took a message of qpn: the quiet packets that
  // follow it at the channel's head, of the same QP and context and
  // covered by ack_seq, retired with the QP looked up once (a stream's
  // run); how many (their slots' shares are the caller's to give).
  uint32_t retire_quiet_run(Peer& p, uint32_t ack_seq, uint32_t qpn,
                            uint32_t gen, uint32_t context);
  // The run of quiet packets whose first slot, id, is at the channel's
  // head (SendSlot::quiet_run), retired at once when ack_seq covers it
  // all and its QP's entries are as the transmit block left them; how
  // many (0: nothing changed; the slots' shares are the caller's).
  // (transport/channel.cpp)
  [[gnu::noinline]] uint32_t retire_quiet_range(Peer& p, uint32_t id,
                                                uint32_t ack_seq);
  void handle_response(Peer& p, const Packet& pkt);
  // RNR: counts against rnr_retry; BUSY: retried like RNR without;
  // PINNING: like BUSY, resent when the target says its pages are in.
  enum class Refusal : uint8_t { kRnr, kBusy, kPinning };
  void handle_rnr(uint32_t qpn, uint32_t idx, Refusal why);
  void handle_unanswered(uint32_t qpn, uint32_t idx);
  bool expire_unanswered(uint32_t qpn);
  void abort_tx(QpObj& qp);
  void wait_on(uint32_t qpn, WaitList& list);
  void wake_all(WaitList& list);
  void unlink_waiter(uint32_t qpn);

  // ---- transport/channel.cpp
  // The node's channel state, or nullptr for a node ID beyond max_nodes.
  Peer* peer_for(uint16_t node);
  uint16_t node_of(const Peer& p) const {
    return static_cast<uint16_t>(&p - peers.data());
  }
  // Room for one more packet: responses (context kNone) use the reserve;
  // requests are also bounded by their context's share of send memory.
  bool can_send(const Peer& p, uint32_t context) const;
  // can_send and begin_data for the fast paths, inline
  // (transport/channel_inline.h).
  inline bool can_send_now(const Peer& p, uint32_t context) const;
  inline uint32_t take_slot(uint32_t context);
  // Room for a packet that waits like a request (window, reserve kept for
  // answers) but is charged to no context: READ data, the NIC's own.
  bool room_for_request(const Peer& p) const;
  bool context_over_quota(uint32_t context) const;
  uint32_t send_data(Peer& p, const rhn_op_hdr& op, Span<const uint8_t> payload,
                     bool ack_req, uint32_t qpn, uint32_t qp_gen,
                     bool completes_message);
  // Takes a free send-packet slot (after can_send); the caller writes the
  // payload at RHN_DATA_HDR_LEN of its frame, then calls commit_data.
  uint32_t begin_data(uint32_t context);
  void return_slot(uint32_t slot);
  inline void give_slot(uint32_t slot);  // return_slot, inline
  // give_slot without the context's share, which the caller gives back.
  inline void free_slot(uint32_t slot);
  // The channel's oldest unacknowledged packet (slot id) off its list.
  inline void unlink_acked(Peer& p, uint32_t id);
  uint32_t commit_data(Peer& p, uint32_t slot, const rhn_op_hdr& op,
                       uint32_t payload_len, bool ack_req, uint32_t qpn,
                       uint32_t qp_gen, bool completes_message);
  // The headers of a request packet of one whole message into `frame`
  // (a send slot's, the payload after them), from the QP's template and
  // the channel's next serial and acknowledgement, as commit_data writes
  // them; nothing changes yet. Both CRCs too without the MAC's.
  void write_request_header(const Peer& p, uint8_t* frame, const TxTemplate& t,
                            const TxPatch& x);
  // The channel takes a DATA packet whose frame is in the slot (s.len
  // set): its serial, the piggybacked acknowledgement, the slot queued
  // unacknowledged, its timers. Returns the serial; the caller sends it.
  // (transport/channel_inline.h)
  inline uint32_t data_sent(Peer& p, uint32_t slot, uint32_t qpn,
                            uint32_t qp_gen, uint8_t completes_message);
  // Peer scheduling.
  void peer_needs_service(Peer& p);             // work to do now
  void peer_timer(Peer& p, uint64_t deadline);  // a deadline was set
  bool run_peers();
  bool peer_idle(const Peer& p) const;
  void unlink_busy(Peer& p);
  void transmit(uint16_t node, Span<const uint8_t> frame);
  // transmit's part before the wire: the frame counted, dropped while the
  // link is down, turned around when it is for this node; true when it
  // is for the wire. What the core does for a frame the transmit
  // assembler sent (Wire::assemble).
  inline bool tx_account(uint16_t node, Span<const uint8_t> frame);
  void send_ack(Peer& p, uint8_t type, uint16_t flags, uint16_t ack_session);
  void send_control(Peer& p, uint8_t type, uint16_t flags, uint16_t ack_session,
                    uint32_t ack_seq);
  void move_stream_after(Peer& p, uint16_t their_session);
  void receive_frame(Span<const uint8_t> frame);
  // A DATA packet accepted in order (its operation is handled next), and
  // what the channel does after its operation: the acknowledgement it
  // carried, and one it asks for (now or after a delay).
  // (Both inline, transport/channel_inline.h: every DATA packet takes
  // them.)
  inline void took_in_order(Peer& p);
  [[gnu::always_inline]] inline void data_done(Peer& p, uint16_t flags,
                                               uint32_t seq, uint16_t session,
                                               uint32_t ack_seq,
                                               uint16_t ack_session);
  // Whether an acknowledgement would change nothing: the one seen last,
  // on the current stream, nothing queued or gated, and its gate open at
  // once. accept_acks would return at its last test.
  inline bool ack_news(const Peer& p, uint32_t ack_seq, uint16_t ack_session,
                       uint16_t session, uint32_t seq) const;
  void accept_acks(Peer& p, uint32_t ack_seq, uint16_t ack_session,
                   uint16_t session, uint32_t seq);
  // rto_fresh: the caller has just set rto_deadline to now + rto(p),
  // which nothing here changes (the timeout is not computed twice).
  void release_gated(Peer& p, bool rto_fresh = false);
  void adopt_session(Peer& p, uint16_t session);
  bool service_peer(Peer& p);
  // The channel gives up what is outstanding; timed_out: the node did
  // not answer (rather than having lost our state).
  void peer_failed(Peer& p, bool timed_out);
  void reset_peer(Peer& p, uint16_t session);
  uint64_t base_rto(const Peer& p) const;  // before any back-off
  uint64_t rto(const Peer& p) const;
  // A gap's NAK goes again after this long (the receiver times the path
  // with its own stream's estimate: it is the same pair of links).
  uint32_t renak_interval_us(const Peer& p) const {
    return static_cast<uint32_t>(base_rto(p) / 1000);
  }
  void rtt_sample(Peer& p, uint32_t sample_us);
  uint32_t first_unacked(const Peer& p) const;

  // ---- responder/fast_write.cpp
  // The common arriving packet, a plain RDMA WRITE on an RC QP in order,
  // from the frame to its data placed; false (nothing done) for anything
  // else, which takes the generic path.
  bool fast_write(Span<const uint8_t> frame);
  // ---- responder/placed_write.cpp: the receive placement block
  // A frame the block placed: the channel's bookkeeping only.
  bool placed_write(Span<const uint8_t> frame);
  // After a frame the block handed over unplaced: the channel it
  // disarmed (kNone if none), noted; rxw_arm arms it again when the
  // core's state lets the block take its next frames.
  uint32_t rxw_missed(const uint8_t* f, size_t len);
  void rxw_arm(uint32_t node);
  void rxw_disarm(Peer& p);
  // After a plain WRITE the core took itself: its QP's target for the
  // block, when the QP's state and its cached rkey allow one.
  void rxw_note_target(const uint8_t* f, size_t len);
  // The QP's target gone (its state changed), or every target (any
  // object may have changed).
  void rxw_clear_target(uint32_t qpn);
  void rxw_flush() {
    if (rx_write) rx_source->flush();
  }

  // ---- requester/sent_write.cpp: the transmit block's plain WRITEs
  // The block takes up to `budget` WQEs of the QP (armed for the kick,
  // disarmed after it); returns how many it took, their records taken.
  uint32_t txw_run(QpObj& qp, uint32_t qpn, uint32_t budget);
  // One arm, kick and disarm for up to `want` WQEs; how many it took.
  uint32_t txw_kick(QpObj& qp, uint32_t qpn, uint32_t want,
                    const DmaRegion& ring, const DmaRegion& record,
                    const DmaRegion& key_region);
  // The sent FIFO's records (at most one a slot granted) into in-flight
  // entries and the channel.
  uint32_t txw_take(uint32_t granted);
  // r[0], not failed, and the records of its QP that follow it within
  // avail, none failed, in one pass: how many (their bytes added).
  [[gnu::always_inline]] uint32_t txw_take_run(const rhn_card_txw_record* r,
                                               uint32_t avail,
                                               bool quiet_family,
                                               uint32_t& bytes);
  // A record whose payload the block could not read.
  void txw_take_failed(const rhn_card_txw_record& r, bool quiet_family);

  // ---- requester/fast_post.cpp
  // The common posted WQE (decoded by decode_plain_wqe into qp.tx_wqe), a
  // one-packet RC WRITE or SEND, from its checks to its frame on the
  // wire; false (nothing done) for anything else, which start_message
  // goes on with.
  bool fast_post(QpObj& qp, uint32_t qpn, uint32_t nslots);
  // The QP's header template, rebuilt when its generation or peer
  // changed: the test inline, the rebuild apart.
  const TxTemplate& tx_template(const QpObj& qp, uint32_t qpn) {
    const TxTemplate& t = tx_templates[qpn];
    if (t.gen == qp.gen && t.dest_node == qp.dest_node &&
        t.dest_qpn == qp.dest_qpn)
      return t;
    return rebuild_template(qp, qpn);
  }
  [[gnu::noinline]] const TxTemplate& rebuild_template(const QpObj& qp,
                                                       uint32_t qpn);

  // ---- responder/responder.cpp
  void handle_request(Peer& p, const Packet& pkt);
  bool responder_has_room(const Peer& p, const rhn_op_hdr& op) const;
  void respond(Peer& p, uint8_t wop, uint8_t syndrome, const rhn_op_hdr& req,
               Span<const uint8_t> payload);
  // respond() without the NAK memory: a second NAK of a held request.
  void send_answer(Peer& p, uint8_t wop, uint8_t syndrome,
                   const rhn_op_hdr& req, Span<const uint8_t> payload);
  bool take_recv_wqe(QpObj& qp, uint32_t qpn, RxContext& m);
  // Gives back the receive WQE take_recv_wqe just took into m (nothing
  // else taken from its queue since): the message comes again later.
  void untake_recv_wqe(QpObj& qp, const RxContext& m);
  // The same from SRQ `srqn` (kNone: the QP's own RQ), for XRC.
  bool take_recv_wqe_from(QpObj& qp, uint32_t qpn, uint32_t srqn, RxContext& m);
  // XRC SRQ number `number` if it is a live XRC SRQ of domain `xrcd`.
  SrqObj* xrc_srq(uint32_t number, uint32_t xrcd);
  void receive_raw_frame(const Packet& pkt);
  void complete_receive(RxContext& m, uint16_t src_node, uint32_t src_qpn,
                        uint8_t cqe_opcode, uint32_t imm, uint8_t flags);
  bool stream_reads(Peer& p);
  // The matching stage (receive contexts).
  RxContext* rx_find(Peer& p, uint32_t src, uint32_t msn);
  RxContext* rx_alloc(Peer& p, uint32_t dst_context);
  void rx_free(Peer& p, RxContext& m);
  // A receive the sender will not finish: completes with `status`.
  void rx_abandon(Peer& p, RxContext& m, uint8_t status);
  void rx_abandon_all(Peer& p);
  // NAK memory.
  bool nak_remembered(const Peer& p, uint32_t src, uint32_t msn) const;
  void nak_remember(Peer& p, uint32_t src, uint32_t msn);
  inline void nak_forget(Peer& p, uint32_t src);
  void free_read(Peer& p, uint32_t r);

  // ---- fwmsg/fw_messages.cpp
  // Queues a message to `node`'s NIC; its owner hears of the outcome.
  // kNone: no room in the table (try later) or no such node.
  // Each message is charged to its family (owner) and to the account of
  // `context`, the context on whose behalf the NIC sends it (0: the NIC's
  // own, probes): kNone also when either holds its share of the table.
  uint32_t fw_post(uint16_t node, uint32_t kind, Span<const uint8_t> payload,
                   FwOwner owner, uint64_t cookie, uint32_t context);
  // A message whose payload (up to RHN_WIRE_MTU) is copied straight into
  // the channel's packet: sent now or not at all (kNone: no handle, or
  // the node's window is full; try again later). The header fields go
  // into imm_data, remote_addr and msg_offset.
  // A free handle (the caller checked there is one) set up for a message.
  uint32_t take_fw_message(uint16_t node, uint32_t kind, uint32_t imm,
                           uint64_t addr, uint32_t aux, size_t len,
                           FwOwner owner, uint64_t cookie, uint32_t context,
                           FwState state);
  uint32_t fw_send_now(uint16_t node, uint32_t kind, uint32_t imm,
                       uint64_t addr, uint32_t aux, Span<const uint8_t> payload,
                       FwOwner owner, uint64_t cookie, uint32_t context);
  // Could `owner` take a handle for `context` now (family and account
  // shares, the kernel's reserve)?
  bool fw_room(FwOwner owner, uint32_t context) const;
  bool fw_run(uint32_t budget);  // the firmware work class of poll()
  void fw_acked(uint32_t tag);   // the channel acknowledged it
  void fw_answer(Peer& p, const Packet& pkt);  // a NAK for one of ours
  void fw_node_failed(uint16_t node);
  void fw_receive(Peer& p, const Packet& pkt);  // one for us
  void fw_finish(uint32_t handle, uint8_t syndrome);
  void fw_reset();

  // ---- completion/completion.cpp
  void cq_push(uint32_t cqn, rhn_cqe& cqe, bool solicited);
  // The same for a WQE's completion (not solicited) and a receive's,
  // which may join a run on a CQ created with RHN_CREATE_CQ_F_RUNS
  // (queues.md, "Runs: several completions in one CQE"): send side, a
  // successful signalled SEND or WRITE without immediate, status word,
  // ext_flags or trigger; receive side, a successful RECV on an RC or UC
  // QP's own RQ without imm_data, solicited, GRH or INV flags. On any
  // other CQ they are cq_push.
  void cq_push_send(uint32_t cqn, rhn_cqe& cqe, const Inflight& e);
  void cq_push_recv(uint32_t cqn, rhn_cqe& cqe, bool solicited,
                    const RxContext& m);
  // CqObj::slow from the CQ's state; after each change of valid, error
  // or the runs flag.
  static void cq_set_slow(CqObj& cq) {
    cq.slow = !cq.valid || cq.error || (cq.run_flags & kCqRuns);
  }
  // Writes the CQ's open run (there is one) as one entry.
  void cq_run_close(uint32_t cqn);
  // The same for every CQ with an open run: at the end of each pass of
  // poll() and before any admin command.
  void cq_runs_close_all();
  // CQ cqn's producer index as CQ-arm doorbells see it from now on (on a
  // card, the doorbell block's copy too).
  void publish_cq_producer(uint32_t cqn, uint32_t index);
  // False: the event queue was full (the event is lost, and counted).
  bool eq_push(uint32_t eqn, uint8_t type, uint32_t object, uint64_t data,
               uint8_t flags = 0);
  // A CQ's completion event: posted, or owed until its event queue has
  // room again (a completion event is never lost, however many CQs one
  // user arms). The last entries of a queue stay for device events.
  void cq_event(uint32_t cqn);
  void eq_catch_up(uint32_t eqn);  // the driver made room: post owed ones
  uint32_t eq_completion_room(const EqObj& eq) const;
  // An arm requested when the CQ's producer was `requested_at` (read when
  // the doorbell was written): the event is for completions added after
  // the request, those already added before this kick was handled too.
  void cq_arm(uint32_t cqn, bool solicited_only, uint32_t requested_at);
  // `n` completions that would raise an armed CQ's event were added:
  // raise it, or count them towards a moderated one.
  void cq_arm_hit(uint32_t cqn, uint32_t n);
  // The armed CQ's event now: the arm used up, its moderation count and
  // deadline cleared.
  void cq_raise(uint32_t cqn);
  void modify_cq(uint32_t cqn, uint16_t count, uint16_t period_us);
  // Raises the moderated events whose period ended; true if any.
  bool cq_mod_expire();
  rhn_admin_status resize_cq(uint32_t cqn, uint32_t log_depth, HostRef ring,
                             HostRef record, uint32_t& detail);
  void write_status_word(const QpObj& qp, const Inflight& e);
  // A running COLLECTIVE's word: RHN_STATUS_WORD_RUNNING and the bytes
  // finished so far (the final write_status_word replaces it).
  void write_status_progress(const QpObj& qp, const Inflight& e,
                             uint32_t bytes);

  // ---- requester/requester.cpp: the GRH a UD SEND carries (wire.h).
  bool gid_valid(uint32_t index) const;
  // The CQE flag naming the network header a UD packet carried.
  static uint8_t grh_net_flag(const uint8_t* header);
  void build_grh(const DecodedWqe& w, uint8_t* out) const;
};

}  // namespace rhinet::fw
