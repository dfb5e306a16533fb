// SPDX-License-Identifier: BSD-2-Clause
// The objects admin/ creates for the driver and for users: contexts,
// PDs, MRs and windows, EQs, CQs, SRQs, twin memory, areas and QPs.
#pragma once

#include "core/bounded.h"
#include "core/freestanding.h"
#include "requester/wqe_decoder.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// Work queues (SQs, RQs, SRQs and the rings families give them) hold at
// most 2^kMaxWqLog entries.
constexpr uint32_t kMaxWqLog = 15;

struct HostRef {
  uint64_t addr = 0;
  uint32_t lkey = 0;
};

struct ContextObj {
  bool valid = false;
  uint8_t num_groups = 0;  // besides group 0, which every context is in
  uint16_t groups[RHN_MAX_GROUPS_PER_CONTEXT] = {};
  uint16_t account = 0;  // its user's (CREATE_CONTEXT); 0: the kernel's
  uint32_t refs = 0;
  // What it holds of the NIC's tables is counted in Impl::shares.
};

struct PdObj {
  bool valid = false;
  uint32_t context = 0;
  uint32_t refs = 0;
};

struct MrObj {
  bool valid = false;
  uint8_t variant = 0;
  uint8_t page_shift = 12;
  uint8_t levels = 0;  // 0: iova is the bus address
  uint32_t context = 0;
  uint32_t pdn = 0;
  uint32_t access = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint64_t table = 0;
  uint32_t num_pages = 0;
  uint32_t refs = 0;  // queues, areas and bound windows using it
  // A memory window (ops/window): iova, length and access are the bound
  // window's, translated through the region bound_mr.
  bool window = false;
  uint8_t mw_type = 0;  // 1 or 2
  bool bound = false;
  uint32_t bound_mr = 0;
  uint32_t bound_qpn = 0;  // type 2: the QP it was bound through
  // A fast-registration MR (kernel): translated only while registered by a
  // REG_MR WQE; num_pages then the pages used of max_pages.
  bool fast_reg = false;
  bool registered = false;
  uint32_t max_pages = 0;
  // Remote pin-down (ops/pindown): pages the host pins on demand; a
  // remote access to one it has not pinned yet is held, not refused.
  bool on_demand = false;
  // Twin memory (RHN_CREATE_MR_F_TWIN, ibverbs device memory): the bytes
  // are twin `twin`'s (its handle) from twin_offset on, not host memory.
  bool on_twin = false;
  uint32_t twin = 0;
  uint64_t twin_offset = 0;
};

struct EqObj {
  bool valid = false;
  bool armed = false;
  uint16_t vector = 0;
  uint32_t log_depth = 0;
  uint64_t ring = 0;
  uint32_t producer = 0;
  uint32_t consumer = 0;
  uint32_t refs = 0;
  uint32_t deferred = 0;      // CQs owed a completion event (it was full)
  uint32_t defer_cursor = 0;  // where the next catch-up scan starts
};

// RC, UC and XRC QPs talk to one peer QP, set at RTR.
inline bool connected_qp(uint8_t type) {
  return type == RHN_QP_RC || type == RHN_QP_UC || type == RHN_QP_XRC_SEND ||
         type == RHN_QP_XRC_RECV;
}

// RC and both XRC ends: acknowledged, in order, retried after RNR.
inline bool reliable_connected_qp(uint8_t type) {
  return type == RHN_QP_RC || type == RHN_QP_XRC_SEND ||
         type == RHN_QP_XRC_RECV;
}

// The QP type a request of requester type `type` must find at the target.
inline uint8_t target_qp_type(uint8_t type) {
  return type == RHN_QP_XRC_SEND ? uint8_t{RHN_QP_XRC_RECV} : type;
}

// The largest completion event moderation (RHN_ADMIN_MODIFY_CQ).
constexpr uint32_t kMaxCqModCount = 0xffff;
constexpr uint32_t kMaxCqModPeriodUs = 0xffff;

// CqObj::run_flags (queues.md, "Runs: several completions in one CQE").
constexpr uint8_t kCqRuns = 1u << 0;       // created with RHN_CREATE_CQ_F_RUNS
constexpr uint8_t kCqRunOpen = 1u << 1;    // a run is open
constexpr uint8_t kCqRunListed = 1u << 2;  // in Impl::open_runs

struct CqObj {
  bool valid = false;
  bool error = false;
  uint8_t arm = 0;  // 0 off, 1 next completion, 2 next solicited
  // What a push tests first: 0 while the CQ is valid, has not overflowed
  // and takes no runs (Impl::cq_set_slow), so a plain CQ's push pays one
  // test for the three.
  uint8_t slow = 1;
  uint32_t context = 0;
  uint32_t log_depth = 0;
  HostRef ring, record;
  uint32_t producer = 0;
  uint32_t consumer_seen = 0;
  uint32_t solicited_end = 0;   // producer after the last solicited/error CQE
  bool event_deferred = false;  // owed a completion event (its EQ was full)
  // Runs: kCq* flags, and the open run's completions besides its first
  // (its entry, the last completion's CQE, is Impl::run_cqes[cqn]; its
  // slot, at producer, was free when it opened). In the padding before
  // eqn, so the table's stride stays what the push path indexes cheaply.
  uint8_t run_flags = 0;
  uint16_t run_extra = 0;
  uint32_t eqn = 0;
  uint32_t refs = 0;
  // Event moderation (RHN_ADMIN_MODIFY_CQ): while armed, the event waits
  // for mod_count completions that would raise it, or until mod_deadline
  // (set by the first of them; 0: none counted yet).
  uint16_t mod_count = 0;
  uint16_t mod_period_us = 0;
  uint32_t mod_counted = 0;
  uint64_t mod_deadline = 0;
};
static_assert(sizeof(CqObj) == 88, "runs live in CqObj's holes");

struct SrqObj {
  bool valid = false;
  uint32_t context = 0;
  uint32_t pdn = 0;
  uint32_t log_depth = 0;
  HostRef ring, record;
  uint32_t consumer = 0;
  uint32_t producer_seen = 0;
  uint32_t limit = 0;
  uint32_t refs = 0;
  // Run by a family module (its place in ops/registry.cpp's list; kNone:
  // a plain SRQ): the family keeps its own state of it by SRQ number.
  uint32_t family = kNone;
  // An XRC SRQ: its domain (0: not XRC) and the CQ its receives complete
  // on. Peers name it by index and incarnation; the incarnation survives
  // the slot's reuse, so a number from an earlier life is refused.
  uint32_t xrcd = 0;
  uint32_t cqn = kNone;
  uint8_t incarnation = 0;
};

// The number peers name XRC SRQ `index` by (hw_admin.h).
inline uint32_t xrc_srq_number(uint32_t index, const SrqObj& s) {
  return index | uint32_t{s.incarnation} << RHN_XRC_SRQN_INCARNATION_SHIFT;
}

// A piece of on-board twin memory, in RHN_TWIN_PAGE units. The
// handle a WQE names is index | gen << 16, so work that outlives the
// allocation (a READ in flight when it was freed) never writes into
// whatever holds those pages next.
struct TwinObj {
  bool valid = false;
  uint16_t gen = 0;
  uint32_t context = 0;
  uint32_t first_page = 0;
  uint32_t pages = 0;
  uint32_t refs = 0;  // MRs over it (RHN_CREATE_MR_F_TWIN)
};

// An area: any free slot, found again through the chain of its
// (context, ID) under the NIC's keyed hash, so no process can aim its own
// areas at the slots of another's ID.
struct AreaObj {
  bool valid = false;
  uint32_t chain = kNone;  // next in its bucket
  uint32_t context = 0;
  uint32_t area_id = 0;
  uint32_t mr_index = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
  // Its one watch (ops/watch): the endpoint that armed it and that QP's
  // generation then, so a watch outliving its endpoint's life fires
  // nowhere (kNone: none armed). Cleared with the area.
  uint32_t watch_qpn = kNone;
  uint32_t watch_gen = 0;
};

// A key check remembered (Engine::Impl::check_key_cached): the key's
// region and its translation for the DMA block (`region`, levels 0 for
// a region without a table), valid while the engine's mr_epoch is
// `epoch`. Only plain MRs (no window, fast-registered, twin or on-demand
// region) are kept: every change of one is an admin command, and every
// admin command bumps the epoch. A check for the same key, rights and
// QP (each cache serves one use on one QP) then only needs the bounds.
struct KeyCache {
  uint32_t epoch = 0;  // mr_epoch is never 0
  uint32_t key = 0;
  uint32_t mr_index = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
  DmaRegion region;
  // The DMA block's descriptor of mr_index's region, if kept and current.
  const DmaRegion* region_of(uint32_t mr, uint32_t mr_epoch) const {
    return region.levels && mr == mr_index && epoch == mr_epoch ? &region
                                                                : nullptr;
  }
  bool holds(uint32_t k, uint32_t mr_epoch, uint64_t va, uint64_t len) const {
    return k == key && epoch == mr_epoch &&
           (!len ||
            (va >= iova && va - iova <= length && len <= length - (va - iova)));
  }
};

// What a plain SQ's record word holds besides the request bit.
enum class SqEvent : uint8_t { kOff, kUnset, kStored };

struct QpObj {
  bool valid = false;
  uint8_t type = 0;
  uint8_t state = RHN_QPS_RESET;
  uint8_t access = 0;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 0;
  uint8_t timeout = 0;  // IB's exponent: 4.096 us << timeout, 0 = infinite
  uint8_t retry_cnt = 7;
  uint8_t max_rd_atomic = 1;
  uint8_t sq_log = 0;
  uint8_t rq_log = 0;
  uint32_t gen = 0;  // bumps on create and RESET: stale references ignored
  // The incarnation on the wire (high byte of src_qpn, hw_wire.h): bumps
  // with gen, so responses to a previous life are told apart.
  uint8_t incarnation = 0;
  uint32_t context = 0;
  uint32_t pdn = 0;
  uint32_t send_cqn = 0;
  uint32_t recv_cqn = 0;
  uint32_t srqn = kNone;
  uint32_t xrcd = 0;  // RHN_QP_XRC_RECV: its XRC domain
  uint16_t dest_node = 0;
  uint32_t dest_qpn = 0;
  uint32_t qkey = 0;
  HostRef sq_ring, rq_ring, sq_record, rq_record;

  // Requester.
  uint32_t sq_producer = 0;  // last value read from the SQ record
  uint32_t sq_fetch = 0;     // next slot to fetch
  uint32_t sq_complete = 0;  // oldest slot not completed
  uint32_t msn_next = 0;
  // A fan-out WQE being expanded (a family with next_destination, such as
  // a multicast list): the next destination, and the first failure of
  // those completed so far (its CQE reports it).
  uint32_t fanout_next = 0;
  uint8_t fanout_status = RHN_CQE_SUCCESS;
  uint8_t fanout_syndrome = RHN_SYN_NONE;
  // Bumped whenever one of the QP's messages is completed, refused or
  // left unanswered other than by its ACK: a run of quiet packets sent
  // before it (SendSlot::quiet_run) may then hold a message that is no
  // longer plain, and is retired packet by packet. In the padding before
  // inflight_head, so no later field moves.
  uint16_t quiet_spoils = 0;
  uint32_t inflight_head = 0, inflight_tail = 0;  // into inflight_ pool
  uint32_t outstanding_reads = 0;
  uint32_t rnr_count = 0;
  bool has_resend = false;
  bool has_unanswered = false;
  bool flushing = false;
  // The message being packetized.
  bool tx_active = false;
  uint32_t tx_entry = 0;  // inflight index (absolute counter)
  uint64_t tx_offset = 0;
  uint16_t tx_peer = 0;
  uint32_t tx_dst_qpn = 0;
  DecodedWqe tx_wqe;
  RawWqe tx_raw;
  uint32_t prefetched_slot = kNone;  // tx_raw holds this slot's WQE
  // RHN_SQ_RECORD_DOORBELL_WANTED is in the SQ record (as last stored).
  bool sq_asks_kick = false;
  // RHN_CREATE_QP_F_SQ_EVENT_INDEX: the word carries the producer index
  // (mod 2^16) at which the NIC went idle. In the padding after the bool,
  // so no later field moves (the soft core's offsets stay short).
  SqEvent sq_event = SqEvent::kOff;
  uint16_t sq_event_at = 0;  // with kStored: the index in the word

  // Responder.
  uint32_t rq_consumer = 0;
  uint32_t rq_producer = 0;
  bool rnr_blocked = false;
  // An SQ doorbell came since the transmit block last ran for the QP
  // (requester/sent_write.cpp): it may hold WQEs the core has not seen.
  bool txw_kicked = false;
  // How many WQEs the block took in the QP's last requester step (at
  // least 1; a step's budget is 16): what the next doorbell's first kick
  // asks for, as the core cannot know the producer index the block reads
  // with it. A run as long as the last then costs one kick fewer; a
  // guess too high costs the slots handed back. In the padding after
  // the bool.
  uint8_t txw_guess = 1;
  // The mr_epoch at which the receive placement block got this QP's
  // target (RxSource::target); 0 or an older epoch: it has none.
  uint32_t rxw_epoch = 0;  // until (rnr_node, rnr_src_qpn) resends rnr_msn
  uint32_t rnr_msn = 0;
  uint16_t rnr_node = 0;
  uint32_t rnr_src_qpn = 0;
  // RQ read-ahead: the index of the first receive WQE not read yet. A
  // family that reads its WQEs from the RQ ahead of consuming them (an
  // endpoint's irecvs, ops/tag) moves it; plain receives wait behind it.
  uint32_t rq_scan = 0;
  // The regions of the last keys the fast paths checked: an arriving
  // WRITE's rkey (fast_write), a posted WQE's lkey (fast_post).
  KeyCache rx_key, tx_key;
  // The regions of the SQ's ring and record, for the DMA block
  // (Engine::Impl::queue_dma; their `key` is unused).
  KeyCache sq_ring_key, sq_record_key;

  // Scheduling.
  bool in_ready = false;
  WaitList* waiting_on = nullptr;
  uint32_t wait_prev = kNone, wait_next = kNone;
  uint64_t wake_at = 0;

  // Many producers (RHN_CREATE_QP_F_MULTI_PRODUCER, requester/mprod.cpp),
  // last so the other fields keep their offsets. Such a QP, and one with
  // an SQ event index, is on the list the record scan walks
  // (scan_prev/scan_next); then the count of slots it last stored in the
  // record's nic_consumer, and the record scan's suspicion (with
  // sq_producer as it was when the scan saw work ahead of it).
  bool mp = false;
  bool scan_suspect = false;
  bool scan_listed = false;  // in the padding before scan_prev
  uint32_t scan_prev = kNone, scan_next = kNone;
  uint32_t scan_seen = 0;
  uint64_t mp_consumed = 0;
};

// A QP with a receive queue of its own (not an SRQ's user, not XRC).
inline bool has_own_rq(const QpObj& qp) {
  return qp.srqn == kNone && qp.rq_log != 0;
}

}  // namespace rhinet::fw
