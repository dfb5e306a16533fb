// SPDX-License-Identifier: BSD-2-Clause
// Engine internals shared by the modules. The life of a WQE follows the
// folders: doorbell/ (kick FIFO) -> requester/ (fetch, decode, packetize)
// -> transport/ (serial numbers, send-packet memory, ACK/NAK, resend) ->
// wire -> transport/ on the remote engine -> responder/ (checks, DMA into
// memory, responses) -> completion/ (CQEs, status words, events).
// translation/ turns keys and addresses into bus addresses for all of them;
// admin/ creates the objects in the tables below.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/bounded.h"
#include "core/counters.h"
#include "core/keyed_hash.h"
#include "engine/shares.h"
#include "requester/wqe_decoder.h"
#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "translation/tlb.h"
#include "transport/packet.h"

namespace rhinet::fw {

constexpr uint32_t kNone = 0xffffffffu;
// ops/partial's scratch: a packet's bytes plus the look-ahead that finds
// where the next one starts.
constexpr uint32_t kXferScratch = 4 * RHN_WIRE_MTU;

// ---- Objects (admin/) ------------------------------------------------------

struct HostRef {
  uint64_t addr = 0;
  uint32_t lkey = 0;
};

// A list of QPs waiting for something (a peer's window, send memory).
struct WaitList {
  uint32_t head = kNone, tail = kNone;
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

// RC and UC QPs talk to one peer QP, set at RTR.
inline bool connected_qp(uint8_t type) {
  return type == RHN_QP_RC || type == RHN_QP_UC;
}

struct CqObj {
  bool valid = false;
  bool error = false;
  uint8_t arm = 0;  // 0 off, 1 next completion, 2 next solicited
  uint32_t context = 0;
  uint32_t log_depth = 0;
  HostRef ring, record;
  uint32_t producer = 0;
  uint32_t consumer_seen = 0;
  uint32_t solicited_end = 0;   // producer after the last solicited/error CQE
  bool event_deferred = false;  // owed a completion event (its EQ was full)
  uint32_t eqn = 0;
  uint32_t refs = 0;
};

// The posted receives of a tag-matching owner (endpoint or TM SRQ) that
// take any source with a masked tag. The first kClasses distinct masks
// each get hash chains keyed by the masked tag (a message looks up one
// chain per mask); receives with further masks wait in one list, walked.
struct TagWild {
  static constexpr uint32_t kClasses = 4;
  static constexpr uint8_t kNoClass = 0xff;
  uint64_t masks[kClasses] = {};
  uint32_t uses[kClasses] = {};
  uint32_t head = kNone, tail = kNone;  // the others, in posting order
};

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
  // A TM SRQ (ops/tm): its tag list lives in the matching engine's
  // entries (TagRecv with srqn set), in posting order by the index of the
  // operation that added it; software edits it through the operation ring.
  bool tm = false;
  uint32_t tm_cqn = 0;  // where list operations complete
  uint32_t tm_max_tags = 0;
  uint32_t tm_tags = 0;  // entries in the list
  uint32_t ops_log = 0;
  HostRef ops_ring, ops_record;
  uint32_t ops_consumer = 0;  // the next operation to execute
  // Phase synchronisation (ibv_post_srq_ops(3)): messages handed to
  // software unmatched, the count software last reported, and the last
  // operation executed while the two agreed. An entry added after that
  // one matches nothing until they agree again: software may not have
  // seen an unexpected message it would have matched.
  uint32_t unexpected = 0;
  uint32_t sw_unexpected = 0;
  uint32_t synced_at = ~0u;
  TagWild tag_wild;
};

// A piece of on-board twin memory (004 2.7), in RHN_TWIN_PAGE units. The
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
};

// ---- Requester state (requester/) ------------------------------------------

enum class MsgState : uint8_t {
  kSending,        // packets still to go
  kAwaitAck,       // all sent; success = transport ACK passing its gate
  kAwaitResponse,  // READ/atomic: waits for the response packets
  kResendPending,  // RNR: send again at resend_at
  // The target NIC had no QP to take it (destroyed, in error, another
  // peer's): IB drops such requests, and its requester learns of it only
  // when its timer runs out. Fails at resend_at (RETRY_EXC), or never.
  kUnanswered,
  kDone,
};

constexpr uint8_t kMcastMember = 1, kMcastLast = 2;

// One message of a QP between its first packet and its completion.
struct Inflight {
  uint32_t slot = 0;  // first SQ slot of the WQE
  uint8_t slots = 1;
  uint8_t opcode = 0;
  uint8_t wqe_flags = 0;
  MsgState state = MsgState::kDone;
  uint8_t status = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
  uint16_t peer = 0;
  uint16_t read_ctx = 0xffff;
  uint32_t msn = 0;
  uint32_t last_serial = 0;
  uint32_t length = 0;
  uint64_t resend_at = 0;
  uint64_t status_addr = 0;
  uint32_t status_lkey = 0;
  uint32_t dst_qpn = 0;
  // ISEND (ops/tag): answered by the receiver yet; after its CTS, where
  // the data goes (owed: no stream was free then).
  bool tag_answered = false;
  uint32_t attempt = 0;  // transmissions of an ordered-retry message
  bool tag_stream_owed = false;
  // Refused while the target host pins (ops/pindown): resent on the
  // target's PIN_READY (or after RHN_PIN_RETRY_US).
  bool pin_wait = false;
  // A fan-out family's number for this message (a shared region's update
  // number, ops/share): carried in imm_data, the same when it is resent.
  uint32_t fanout_imm = 0;
  // A DIFF PUSH's last message: when the WQE completes successfully its
  // twin takes the SGE's bytes (ops/partial), not before, so a message
  // sent again (a refusal, another destination) sends the same runs.
  bool diff_twin = false;
  uint32_t tag_handle = 0, tag_take = 0, tag_receiver = 0;
  // An mcastB's message to one destination (ops/mcast): kMcastMember
  // (the WQE's CQE waits for the last), kMcastLast (completes the WQE).
  uint8_t mcast = 0;
  // A local operation's result for its CQE (IPROBE: the message found).
  uint8_t ext_flags = 0;
  uint16_t answer_node = 0;
  uint32_t answer_qpn = 0;
  uint64_t answer_tag = 0;
};

// Local destination of a READ or atomic result, kept until the response.
// A partial READ also keeps how message offsets map onto the SGE (stride)
// and the twin its bytes are copied into (ops/partial).
struct ReadCtx {
  bool used = false;
  uint8_t xfer_mode = RHN_XFER_BASIC;
  uint32_t num_sge = 0;
  uint32_t block = 0;
  uint64_t local_stride = 0;
  uint32_t twin = 0;
  uint64_t twin_offset = 0;
  rhn_sge sge[RHN_WQE_MAX_SGES];
};

// Responder side of a READ: data still to send back. It owns what it
// needs: the key, PD and right are checked again for every chunk (the
// region may be gone), and it is cancelled with its QP.
struct ResponderRead {
  bool used = false;
  bool cancelled = false;  // its QP left RTS: answer with a NAK, stop
  uint8_t qp_type = 0;
  uint16_t node = 0;           // the requester's
  uint32_t requester_src = 0;  // the request's src_qpn (QPN + incarnation)
  uint32_t responder_qpn = 0;
  uint32_t responder_gen = 0;
  uint32_t msn = 0;
  uint32_t key = 0;
  uint32_t pdn = 0;
  uint64_t va = 0;
  uint32_t length = 0;
  uint32_t sent = 0;
  // A partial READ (ops/partial): its mode and selection; where this
  // request's range starts in the message, and whether it ends it. For a
  // bitmap, `sent` is the next selected byte and the bits are in
  // read_bitmaps[bitmap_slot].
  uint8_t xfer_mode = RHN_XFER_BASIC;
  bool final = true;
  uint16_t bitmap_slot = 0xffff;
  uint32_t block = 0;
  uint64_t remote_stride = 0;
  uint32_t msg_offset = 0;
  // An isend's data after a CTS (ops/tag) is streamed the same way:
  // wop RHN_WOP_TAG_DATA to the receive `tag_handle`, the key an lkey.
  // Its partial modes select as a READ's do (STRIDE: remote_stride is
  // the sender's stride), and a DIFF isend compares with its twin.
  uint8_t wop = RHN_WOP_READ_RESP;
  uint32_t tag_handle = 0;
  uint32_t twin = 0;
  uint64_t twin_offset = 0;
  uint32_t next = kNone;  // the peer's queue of reads, in arrival order
};

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
  uint16_t dest_node = 0;
  uint32_t dest_qpn = 0;
  uint32_t qkey = 0;
  HostRef sq_ring, rq_ring, sq_record, rq_record;

  // Requester.
  uint32_t sq_producer = 0;  // last value read from the SQ record
  uint32_t sq_fetch = 0;     // next slot to fetch
  uint32_t sq_complete = 0;  // oldest slot not completed
  uint32_t msn_next = 0;
  // An mcastB WQE being expanded (ops/mcast): the next destination, and
  // the first failure of those completed so far (its CQE reports it).
  uint32_t mcast_next = 0;
  uint8_t mcast_status = RHN_CQE_SUCCESS;
  uint8_t mcast_syndrome = RHN_SYN_NONE;
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

  // Responder.
  uint32_t rq_consumer = 0;
  uint32_t rq_producer = 0;
  bool rnr_blocked = false;  // until (rnr_node, rnr_src_qpn) resends rnr_msn
  uint32_t rnr_msn = 0;
  uint16_t rnr_node = 0;
  uint32_t rnr_src_qpn = 0;

  // Tag matching (ops/tag), endpoints: the posted receives that take any
  // source with a masked tag, the unexpected messages in arrival order,
  // and the posting order counter.
  TagWild tag_wild;
  uint32_t tag_unx_head = kNone, tag_unx_tail = kNone;
  uint32_t tag_rq_scan = 0;     // RQ index of the first irecv not read yet
  bool tag_rq_stalled = false;  // irecvs wait in the RQ for list room

  // Scheduling.
  bool in_ready = false;
  WaitList* waiting_on = nullptr;
  uint32_t wait_prev = kNone, wait_next = kNone;
  uint64_t wake_at = 0;
};

// ---- Transport state (transport/) ------------------------------------------

struct SendSlot {
  uint16_t len = 0;
  bool completes_message = false;  // last packet of a request
  uint32_t serial = 0;
  uint32_t qpn = kNone;
  uint32_t qp_gen = 0;
  uint32_t context = kNone;  // charged to this context (kNone: firmware)
  uint32_t next = kNone;     // the peer's unacknowledged packets, in order
  alignas(64) uint8_t frame[RHN_MAX_FRAME];
};

struct Gate {
  uint32_t ack_seq;
  uint16_t session;  // the acknowledging side's stream
  uint32_t seq;      // its next serial when it acknowledged
};

// A multi-packet SEND being received: any number are in flight at once,
// keyed by (peer, source QP with its incarnation, message number).
// Single-packet messages use one on the stack.
struct RxContext {
  bool used = false;
  bool from_srq = false;
  uint8_t status = RHN_CQE_SUCCESS;
  uint16_t node = 0;
  uint32_t src = 0;    // the request's src_qpn (QPN + incarnation)
  uint32_t owner = 0;  // the receiving QP's context (its share is counted)
  uint32_t qpn = 0;
  uint32_t qp_gen = 0;
  uint32_t msn = 0;
  uint32_t wqe_index = 0;
  uint32_t num_sge = 0;
  uint32_t pdn = 0;  // the receive WQE's PD (the QP's or the SRQ's)
  rhn_sge sge[RHN_RQ_MAX_SGES];
  uint32_t capacity = 0;
  uint32_t length = 0;
  uint32_t next = kNone;  // the peer's list of receives in progress
  // Tag matching on a TM SRQ (ops/tm): the CQE opcode of a message that
  // took a receive WQE; or the entry of the tag list it matched (handle
  // with generation), whose buffer gets the message past its first
  // `drop` bytes (the header).
  uint8_t cqe_op = RHN_CQE_OP_RECV;
  uint32_t drop = 0;
  uint32_t tm_entry = kNone;
};

constexpr uint32_t kGates = 4;
constexpr uint32_t kNakMemory = 4;

// Channel state towards one node, indexed by node ID. Kept small (its
// size is asserted below): the bulky parts (unacknowledged packets, READ
// streams, receives in progress) are shared pools linked from here.
struct Peer {
  // Transmit side.
  uint16_t tx_session = 0;
  bool tx_syn = true;  // until the first ACK of this session
  bool in_busy = false, in_ready = false;
  uint8_t retries = 0;
  uint8_t gate_count = 0;
  bool timing = false;  // a packet is being timed (timed_seq)
  uint32_t tx_next = 0;
  uint32_t acked_seen = 0;  // highest ack_seq seen (gated or not)
  uint32_t unacked_head = kNone, unacked_tail = kNone;  // send slots
  uint32_t unacked_count = 0;
  uint32_t resend = kNone;  // next slot to send again (go-back-N)
  uint64_t rto_deadline = 0;
  // Round-trip estimate (RFC 6298): one packet at a time is timed, never
  // one that was sent again (Karn), so the timeout follows how fast this
  // peer really answers (a host that runs the NIC on a busy CPU is slow).
  // In microseconds, to keep the state small (4096 peers).
  uint32_t srtt_us = 0, rttvar_us = 0;  // srtt_us 0: no sample yet
  uint32_t timed_at_us = 0;             // low 32 bits of now / 1000
  uint32_t timed_seq = 0;
  // Retries ran out: datagrams are dropped at once until then (or until
  // the node is heard from), after which the next one probes again.
  uint64_t dead_until = 0;
  Gate gates[kGates];
  WaitList waiters;  // QPs waiting for this peer's window
  uint32_t reads_head = kNone, reads_tail = kNone;  // READ streams
  // Receive side.
  bool rx_synced = false;
  bool nak_sent = false;
  uint16_t rx_session = 0;
  uint8_t nak_next = 0;
  // (Transmit side, here where a byte was free.) Timeouts since the last
  // RTT sample: the timeout stays doubled this often until a packet that
  // went once is acknowledged (RFC 6298 5.7), or a peer slower than the
  // first estimate would never be measured.
  uint8_t backoff = 0;
  // Recovery after a first timeout (slow start): one unacknowledged packet
  // goes again, then twice as many for every ACK that moves on. A timeout
  // that was only a slow peer (its ACKs were on their way) then costs a
  // few packets, not the window; real losses are all sent again within a
  // few round trips. 0: not recovering (go-back-N sends without limit).
  uint8_t recover_window = 0;
  uint8_t recover_budget = 0;  // packets the window still allows
  uint32_t rx_expected = 0;
  uint32_t rx_unacked = 0;
  uint64_t ack_deadline = 0;
  uint64_t rx_last = 0;      // when the current session last delivered
  uint32_t rx_head = kNone;  // receive contexts in use
  // When the NAK of the current gap went (low 32 bits of microseconds). It
  // is sent again when packets past the gap still arrive a timeout later:
  // the resend it asked for (or the NAK) was lost too.
  uint32_t nak_at_us = 0;
  // Requests NAKed lately, so the rest of a multi-packet message is
  // dropped and NAKed once.
  struct Naked {
    uint32_t src = kNone;
    uint32_t msn = 0;
  } naks[kNakMemory];
  // The busy list: peers with timers running.
  uint32_t busy_prev = kNone, busy_next = kNone;
};
static_assert(sizeof(Peer) <= 208, "per-node channel state must stay small");

// ---- Tag matching (ops/tag) -------------------------------------------------

enum class TagRecvState : uint8_t { kFree, kPosted, kMatched };

// Where a TM SRQ's entry is once matched (ops/tm).
enum class TmStep : uint8_t {
  kIdle,     // an endpoint's irecv (ops/tag), or posted
  kEager,    // an eager message lands through a receive context
  kPull,     // rendezvous: the sender's NIC is asked for the data
  kPulling,  // ... and streams it
  kFin,      // the data is in place; the FIN goes to the sender
};

// A posted receive (004 2.6's pending-receive list), then, once matched
// to a message whose data comes later, the receive in progress. Its
// handle on the wire is index | gen << 20.
struct TagRecv {
  TagRecvState state = TagRecvState::kFree;
  bool any_src = false;
  bool cts_owed = false;  // matched; its CTS waits for send room
  uint16_t gen = 0;
  uint16_t wqe_index = 0;
  uint16_t src_node = 0;
  uint32_t src_qpn = 0;  // without incarnation
  uint32_t qpn = 0, qp_gen = 0, context = 0, pdn = 0;
  uint64_t seq = 0;
  uint64_t tag = 0, mask = 0;
  uint8_t mask_class = TagWild::kNoClass;  // any source, masked: TagWild
  rhn_sge sge{};
  // Where its mode puts the message's bytes (rhn_tag_recv_wqe.xfer;
  // ops/partial place_message): mode, block, STRIDE's count and stride,
  // BITMAP's address and lkey or TWIN's offset and handle.
  uint8_t xfer_mode = RHN_XFER_BASIC;
  uint32_t xfer_block = 0, xfer_count = 0, xfer_key = 0;
  uint64_t xfer_stride = 0, xfer_addr = 0;
  // The matched message.
  uint16_t peer_node = 0;
  uint32_t peer_src = 0;  // with incarnation
  uint32_t peer_msn = 0;
  uint32_t msg_len = 0;  // the sender's length
  uint32_t take = 0;     // bytes that land (min of length and buffer)
  uint32_t received = 0;
  uint64_t msg_tag = 0;
  uint32_t prev = kNone, next = kNone;  // bucket chain or wildcard list
  // An entry of a TM SRQ's tag list (ops/tm): qpn is kNone while it is
  // posted, the receiving QP once matched. Found by software's handle
  // through a second chain.
  uint32_t srqn = kNone;
  uint16_t tm_handle = 0;
  TmStep tm_step = TmStep::kIdle;
  bool tm_sw_rndv = false;  // a rendezvous header left to software
  uint32_t app_ctx = 0;
  uint32_t rv_rkey = 0;
  uint64_t rv_va = 0;
  uint32_t tm_prev = kNone, tm_next = kNone;
};

// An unexpected message: the isend's header only (the NIC keeps no
// payload; the data is fetched when a receive matches).
struct TagMsg {
  bool used = false;
  uint16_t node = 0;
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint32_t src = 0;  // with incarnation
  uint32_t msn = 0;
  uint64_t tag = 0;
  uint32_t length = 0;
  // Chains of the bucket tables: by source and tag, by tag alone, by
  // source alone (what an irecv fixes decides which it walks).
  uint32_t hprev = kNone, hnext = kNone;
  uint32_t tprev = kNone, tnext = kNone;
  uint32_t sprev = kNone, snext = kNone;
  uint32_t lprev = kNone, lnext = kNone;  // the endpoint's arrival list
};

// A source whose isend was refused for want of room: its later isends to
// that endpoint are refused too until that one comes back, so overflow
// never reorders one sender's messages.
struct TagRefusal {
  bool used = false;
  uint16_t node = 0;
  uint32_t qpn = 0, qp_gen = 0;
  uint32_t src = 0, msn = 0;
  uint64_t since = 0;
};

struct TagOwedStream {
  uint32_t qpn = 0, qp_gen = 0, msn = 0;
};

// A TM rendezvous message (pull or FIN) to send again: refused, or no
// firmware message was free.
struct TmRetry {
  uint32_t entry = 0;  // handle with generation
  uint64_t at = 0;
};

struct TagTables {
  std::vector<TagRecv> recvs;
  Fifo<uint32_t> free_recvs;
  std::vector<TagMsg> msgs;
  Fifo<uint32_t> free_msgs;
  // Hash buckets (head, tail) of exact posted receives and of unexpected
  // messages, keyed by endpoint, source and tag.
  std::vector<std::array<uint32_t, 2>> recv_buckets, msg_buckets;
  std::vector<std::array<uint32_t, 2>> msg_tag_buckets, msg_src_buckets;
  uint32_t bucket_mask = 0;
  std::vector<TagRefusal> refusals;
  uint32_t refusals_used = 0;
  uint32_t posted = 0;                     // receives in the posted lists
  uint32_t recv_quota = 0, msg_quota = 0;  // per context
  Fifo<uint32_t> cts_owed;                 // receive indices
  Fifo<TagOwedStream> streams_owed;
  bool rq_retry = false;    // some endpoint's irecvs wait for room
  bool room_freed = false;  // since then an entry or a posted place freed
  // TM SRQs: entries by (SRQ, handle); pulls and FINs to send again, in
  // the order they are due (one delay for all).
  std::vector<std::array<uint32_t, 2>> tm_handle_buckets;
  Fifo<TmRetry> tm_retries;
  TagTables(uint32_t max_recvs, uint32_t max_msgs, uint32_t owed_streams)
      : free_recvs(max_recvs + max_msgs),
        free_msgs(max_msgs),
        cts_owed(max_recvs + max_msgs),
        streams_owed(owed_streams),
        tm_retries(max_recvs + max_msgs) {}
};

// ---- Remote pin-down (ops/pindown/) -----------------------------------------

// Pages [first, first + count) of an on-demand MR the host was asked to
// pin (one RHN_EQE_PD_REQUEST), until RHN_ADMIN_PD_MAPPED answers.
struct PinRun {
  bool used = false;
  uint32_t mr_index = 0;
  uint32_t first = 0, count = 0;
};

// A request refused (NAK PINNING) or held (a PD_REQ) for a run. An
// endpoint's record also keeps its source's later requests to that
// endpoint back until the refused one comes again (order per source).
struct PinWaiter {
  bool used = false;
  bool reply = false;   // a held PD_REQ: answered when the run is done
  bool orders = false;  // an endpoint's: later requests wait behind it
  uint16_t node = 0;
  uint32_t run = 0;  // kNone once the run is done (only ordering left)
  uint32_t qpn = 0;  // the target QP
  uint32_t context = 0;
  uint64_t since = 0;
  uint64_t va = 0;  // where the request starts in its MR
  rhn_op_hdr op{};  // the request's header
};

struct PinTables {
  std::vector<PinRun> runs;
  std::vector<PinWaiter> waiters;
  uint32_t waiters_used = 0;
  uint32_t context_quota = 0;  // waiters one target context may have
};

// ---- Locks and barriers (ops/sync/) ---------------------------------------

// A lock's or barrier round's member at the manager: the endpoint (node,
// src_qpn with incarnation) and the msn of its LOCK or BARRIER. A lock's
// list is in queue order, members that passed the lock on (their UNLOCK
// not here yet) first. Taken out of its list (a round full, a lock
// broken) a member stays until the SYNC_DONE it is owed has been posted.
struct SyncMember {
  bool used = false;
  bool in_list = false;
  bool released = false;   // passed the lock on; its UNLOCK is on its way
  bool link_owed = false;  // the LINK naming it waits for a message slot
  bool done_owed = false;  // so does its SYNC_DONE (done_syndrome)
  bool queued = false;     // in SyncTables::owed
  uint8_t done_syndrome = 0;
  uint16_t node = 0;
  uint16_t link_node = 0;  // its predecessor, whom the LINK goes to
  uint32_t link_src = 0;
  uint32_t src = 0;
  uint32_t msn = 0;
  uint32_t context = 0;  // the manager endpoint's: its share
  uint32_t mgr_qpn = 0;
  uint32_t lock = kNone;  // the lock's slot and generation (LINK's cookie)
  uint32_t lock_gen = 0;
  uint64_t id = 0;
  uint32_t prev = kNone, next = kNone;
};

// A lock at its manager: any free slot (never a slot a hash of the ID
// picks, so nobody's locks crowd out anybody else's), found again through
// a chain keyed by (qpn, qp_gen, id). The manager endpoint's incarnation
// (qp_gen) and owner (context) come with it.
struct SyncLock {
  bool used = false;
  uint32_t gen = 0;  // bumps on reuse
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint64_t id = 0;
  uint32_t head = kNone, tail = kNone;  // members
  uint32_t active = 0;                  // members not released
  uint32_t chain = kNone;               // next in its bucket
};

// Nodes a barrier ID has seen in its rounds: IDs below this many.
constexpr uint32_t kSyncSeenNodes = 1024;

// A barrier ID at its manager: placed and found as a lock is.
struct SyncBarrier {
  bool used = false;
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint64_t id = 0;
  uint32_t count = 0;  // the pending round's (0: none)
  uint32_t arrived = 0;
  uint32_t head = kNone, tail = kNone;  // arrivals
  uint32_t chain = kNone;               // next in its bucket
  uint64_t idle_since = 0;  // no round pending since: its owner recycles
                            // the oldest such ID first
  uint64_t seen[kSyncSeenNodes / 64] = {};
};

enum class SyncHoldState : uint8_t {
  kFree,
  kWaiting,    // its LOCK is not granted yet
  kHeld,       // granted
  kReleasing,  // its UNLOCK left (passed, or the manager's answer due)
  kBroken,     // the lock broke while held: its UNLOCK fails locally
  kDone,       // over, a message it owes still to post
};

// A member's NIC: a lock one of its endpoints holds or waits for, and
// whom to pass it to. Its endpoint gone, the record stays (zombie) and
// the NIC releases the lock for it.
struct SyncHold {
  SyncHoldState state = SyncHoldState::kFree;
  bool zombie = false;
  bool has_successor = false;
  bool passed = false;       // releasing: the UNLOCK said PASSED
  bool grant_owed = false;   // the successor's SYNC_DONE not posted yet
  bool unlock_owed = false;  // a zombie's UNLOCK not sent yet
  bool queued = false;       // in SyncTables::holds_owed
  uint8_t incarnation = 0;
  uint16_t mgr_node = 0;
  uint16_t succ_node = 0;
  uint32_t qpn = 0, qp_gen = 0, context = kNone;
  uint32_t mgr_qpn = 0;
  uint32_t lock_msn = 0, unlock_msn = 0;
  uint32_t succ_src = 0, succ_msn = 0;
  uint64_t id = 0;
  uint64_t since = 0;
  uint32_t next = kNone;  // hash chain by (qpn, id)
};

struct SyncTables {
  std::vector<SyncLock> locks;
  std::vector<SyncBarrier> barriers;
  // Unused lock and barrier slots (any may be taken), and the chains
  // that find a used one by its key.
  Fifo<uint32_t> free_locks{1}, free_barriers{1};
  std::vector<uint32_t> lock_buckets, barrier_buckets;
  uint32_t lock_mask = 0, barrier_mask = 0;
  std::vector<SyncMember> members;
  Fifo<uint32_t> free_members{1};
  // Members whose LINK or SYNC_DONE found no firmware message free, in
  // order (LINKs to one NIC must arrive in the order they were decided).
  Fifo<uint32_t> owed{1};
  std::vector<SyncHold> holds;
  Fifo<uint32_t> free_holds{1};
  std::vector<uint32_t> hold_buckets;
  uint32_t hold_mask = 0;
  Fifo<uint32_t> holds_owed{1};
  // Per context (Impl::shares counts): locks, members and barriers
  // charged to its manager endpoints, records of its member endpoints.
  uint32_t lock_quota = 0, member_quota = 0, barrier_quota = 0;
  uint32_t hold_quota = 0;
  uint32_t locks_used = 0, barriers_used = 0, holds_used = 0;
  bool member_waits = false;  // a LOCK or BARRIER of ours may be waiting
  uint64_t next_probe = UINT64_MAX;
  std::vector<uint64_t> probe_nodes;  // bitmap over max_nodes
  uint32_t probe_from = 0;            // where the next probes start
};

// ---- Simultaneous multicast (ops/mcast_switch/) ----------------------------

// Packets one (sender, group) stream keeps at most (sent, not yet
// acknowledged by every member).
constexpr uint32_t kMcastWindow = 32;

// One member of a switch group, seen from this NIC twice: as a member of
// the streams this NIC sends (its acknowledgements), and as the sender of
// a stream this NIC receives (where that stream is).
struct McastMember {
  uint16_t node = 0;
  uint32_t qpn = 0;  // its endpoint
  // This NIC's stream to the group: what the member acknowledged.
  bool dead = false;    // retries ran out: it is waited for no more
  uint8_t retries = 0;  // repairs since it last made progress
  uint32_t acked = 0;   // the next serial it expects
  bool gap_repaired =
      false;               // repaired for a gap it reported since acked moved
  uint64_t repair_at = 0;  // when it is repaired next if still behind
  // The member's stream to the group, received by this NIC.
  bool rx_synced = false;
  bool rx_gap_told = false;         // a gap at rx_expected was reported
  uint8_t rx_error = RHN_SYN_NONE;  // a refusal not yet past the floor
  uint16_t rx_session = 0;
  uint32_t rx_expected = 0;
  uint32_t rx_error_seq = 0;
};

// A WQE being multicast, from its first packet until every member
// acknowledged its last (or the message was abandoned: QP gone).
struct McastMsg {
  uint32_t qpn = 0, qp_gen = 0;
  uint32_t entry = 0;  // its Inflight index (absolute counter)
  uint32_t msn = 0;
  uint32_t first_seq = 0, last_seq = 0;
  bool sealed = false;  // its last packet is out
  uint8_t status = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
};

// A switch group as the kernel registered it, and this NIC's stream to it.
struct McastGroup {
  bool valid = false;
  uint16_t id = 0;  // the group's node ID
  uint16_t endpoint_group = 0;
  uint16_t count = 0;
  uint16_t self = 0xffff;  // this node's index in members, if listed
  McastMember members[RHN_MCAST_SWITCH_MAX_MEMBERS];
  // The stream: serials [floor, next_seq) are kept in frames (by serial
  // modulo the window) until every live member acknowledged them.
  uint16_t session = 0;
  uint32_t next_seq = 0;
  uint32_t floor = 0;
  uint32_t frames[kMcastWindow];
  McastMsg msgs[kMcastWindow];  // in serial order, [msg_head, msg_tail)
  uint32_t msg_head = 0, msg_tail = 0;
  bool member_lost = false;  // later messages fail too (until set again)
  uint64_t next_repair = UINT64_MAX;
  WaitList waiters;  // QPs waiting for room in the window
};

// ---- Verbs UD multicast (ops/ud_mcast/) -----------------------------------

// One entry of the attach table: QP `qpn` receives datagrams to `mgid`.
struct UdAttach {
  bool used = false;
  uint16_t group = 0;  // rhn_mgid_group(mgid)
  uint32_t qpn = 0;
  uint32_t context = 0;  // charged to this context
  uint8_t mgid[16] = {};
};

// This node's switch port in one UD group: wanted while some attach entry
// names the group; sent again until the switch's answer says so.
struct UdJoin {
  uint16_t refs = 0;  // attach entries on the group
  bool want = false;
  bool settled = true;  // the switch's last answer matched `want`
  uint8_t backoff = 0;
  uint64_t resend_at = 0;
};

struct UdMcastTables {
  std::vector<UdAttach> attaches;
  uint32_t used = 0;
  uint32_t context_quota = 0;  // entries one context may hold
  std::vector<UdJoin> joins;   // by group - RHN_NODE_MCAST_UD_FIRST
  uint32_t unsettled = 0;
  uint32_t wanted = 0;  // groups with want set
  uint32_t cookie = 0;
  uint64_t next_resend = UINT64_MAX;
  uint64_t next_refresh = UINT64_MAX;
};

struct McastFrame {
  uint16_t len = 0;
  uint32_t context = kNone;  // charged to this context
  alignas(64) uint8_t frame[RHN_MAX_FRAME];
};

struct McastTables {
  std::vector<McastGroup> groups;
  std::unique_ptr<McastFrame[]> frames;
  Fifo<uint32_t> free_frames{1};
  uint32_t context_quota = 0;         // frames one context may hold
  WaitList frame_waiters;             // QPs waiting for packet memory
  uint64_t next_repair = UINT64_MAX;  // earliest of the groups'
};

// ---- Shared regions (ops/share/) ------------------------------------------

enum class ShareState : uint8_t {
  kFree,
  kJoining,  // our SUBSCRIBE is out: updates are refused until the data
  kReady,
  kLost,  // the home went away or died: updates fail
};

// A member of a region's directory as one NIC sees it: the endpoint, and
// the updates from it this NIC has taken (seq: by first packet; landed:
// whole). The home also keeps, while a join waits, whether the member
// has added the newcomer and which of its updates must land first.
struct ShareMember {
  uint16_t node = 0;
  bool add_pending = false;  // home: its ADDED has not come yet
  bool add_owed = false;     // home: its ADD waits for a message slot
  bool refused = false;      // newcomer: refused_msn must come back first
  bool cur_accept = false;   // the message cur_msn from it is taken
  uint32_t src = 0;          // endpoint with incarnation
  uint32_t seq = 0, landed = 0;
  uint32_t wait_seq = 0;  // home: landed must reach it before the data
  uint32_t cur_msn = 0;
  uint32_t refused_msn = 0;
};

// Who a joining endpoint refused before its data (told to resend then).
struct ShareRefused {
  uint16_t node = 0;
  uint32_t src = 0, msn = 0;
};

// One endpoint's record of one region (endpoint, area key): member or
// home. The home's record also runs the join of one newcomer at a time.
struct ShareRegion {
  ShareState state = ShareState::kFree;
  bool home = false;
  uint16_t gen = 0;  // bumps on reuse: late firmware-message outcomes
  uint16_t home_node = 0;
  uint32_t home_src = 0;  // the home endpoint, with incarnation
  uint32_t qpn = 0, qp_gen = 0, context = 0;
  uint32_t area_key = 0;
  uint64_t offset = 0, length = 0;
  uint32_t next_seq = 0;  // the last update number this endpoint took
  uint8_t members = 0;
  ShareMember dir[RHN_SHARE_MAX_MEMBERS];
  // The update being sent (requester): its destinations, fixed when its
  // first one is taken, and its number.
  uint8_t fanout_count = 0;
  uint32_t fanout_seq = 0;
  ShareRefused fanout[RHN_SHARE_MAX_MEMBERS];  // node, src
  // Joining: our SUBSCRIBE's msn, the directory once JOINED came, and
  // the senders refused meanwhile.
  uint32_t subscribe_msn = 0;
  bool have_directory = false;
  uint8_t refused_count = 0;
  ShareRefused refused[RHN_SHARE_MAX_MEMBERS];
  // Home: the join in progress.
  bool join_active = false;
  bool joined_owed = false;  // JOINED waits for a message slot
  bool joined_sent = false;  // JOINED is out; the data follows its ACK
  bool stream_owed = false;  // the data waits for a responder stream
  uint8_t fail_owed = 0;     // a failed join's answer waits for room
  uint16_t join_node = 0;
  uint32_t join_src = 0, join_msn = 0;
  uint64_t join_deadline = 0;
};

struct ShareTables {
  std::vector<ShareRegion> regions;
  uint32_t quota = 0;  // records one context may hold (Impl::shares)
  uint32_t used = 0;
  uint32_t joins = 0;  // joins waiting anywhere (newcomer or home)
  uint64_t next_probe = UINT64_MAX;
};

// ---- Collectives (ops/coll/) ----------------------------------------------

// A rank of a communicator: its node and endpoint.
struct CollMember {
  uint16_t node = 0;
  uint32_t qpn = 0;
};

// One of the communicator's ranks on this NIC, and the WQE it posted for
// the collective in progress.
struct CollLocal {
  uint32_t qpn = kNone;
  // Its endpoint's incarnation when the communicator was made (0: none
  // had the number): a later endpoint of that number is not this rank.
  uint32_t qp_gen = 0;
  uint16_t rank = 0;
  uint32_t posts = 0;   // collectives it posted so far (the next one's seq)
  bool posted = false;  // its WQE of the collective `seq` is here
  uint32_t entry = 0;   // that WQE's Inflight index
  uint32_t msn = 0;
  uint32_t pdn = 0;
  rhn_sge send{}, recv{};
};

// A segment buffer (003 claim 5): the first contribution fills it, later
// ones combine into it; it is freed when its result is written and every
// message about it is acknowledged.
struct CollSlot {
  bool used = false;
  uint32_t seg = 0;
  uint32_t len = 0;
  bool filled = false;       // holds a contribution
  bool local_in = false;     // the local ranks' operands are in
  bool up_sent = false;      // complete below this node: on its way up
  uint32_t children_in = 0;  // bit j: child j's partial is in
  bool down_in = false;      // the segment's result (or release) is here
  bool written = false;      // results written to the local ranks
  // Messages about the segment: bit kCollParent the partial towards the
  // root, bit j the result to child j. todo: still to hand to fwmsg/;
  // busy: handed, not acknowledged yet.
  uint32_t todo = 0, busy = 0;
  uint64_t retry_at = 0;  // a NOT_READY destination: not before then
  uint8_t retries = 0;
  // In-switch mode: the partial (bit kCollParent of todo) goes to the
  // switch until its DOWN is here; UPs sent since its last answer, the
  // last one's time.
  uint8_t unanswered = 0;
  uint64_t sent_at = 0;
  uint32_t buf = 0;  // index of its buffer (RHN_WIRE_MTU bytes)
};
constexpr uint32_t kCollParent = 31;
// How long what came about a communicator this NIC has not met (an ABORT,
// a refused sender to tell READY) is remembered for it.
constexpr uint64_t kCollRememberNs = 2'000'000'000;

using CollNodeMask = std::array<uint64_t, RHN_COLL_MAX_RANKS / 64>;

// A communicator's life on this NIC: from the first post of one of its
// local ranks until the last of them is gone (and its ABORTs are
// acknowledged). A key can have one live communicator here at a time; one
// whose local ranks are all gone (kept only to send its ABORTs) no longer
// answers for the key.
struct CollComm {
  bool valid = false;
  uint32_t key = 0;      // RHN_AREA_KEY(group, id)
  uint32_t context = 0;  // its owner: the context that made it (charged)
  // rhn_coll_members_hash of its list: which life of the key it is. Its
  // firmware messages carry it; those of another life are stale here.
  uint32_t life = 0;
  uint16_t nranks = 0;
  uint16_t nnodes = 0;
  uint16_t self = 0;  // this NIC's node index
  uint8_t nlocal = 0;
  uint32_t members = 0;  // first of its nranks entries in CollTables::members
  uint32_t nodes = 0;    // first of its nnodes node IDs in CollTables::nodes
  CollLocal local[RHN_COLL_MAX_LOCAL];
  uint32_t gen = 0;  // bumps at every collective's start and end
  // Bumps each time the slot holds a new communicator: acknowledgements
  // of an earlier one's ABORTs do not count for it.
  uint32_t incarnation = 0;
  // The collective in progress (active) or the next one (seq).
  uint32_t seq = 0;
  bool active = false;
  // A local rank's endpoint went: nothing on it completes again.
  bool broken = false;
  uint32_t probing = 0;  // liveness probes out
  uint8_t op = 0, reduce = 0, type = 0;
  uint8_t radix = 0;        // RHN_COLL_RADIX_SWITCH: the switch reduces
  uint16_t root = 0;        // the root rank's node index
  uint32_t nodes_hash = 0;  // rhn_coll_nodes_hash, for the switch
  uint32_t probe_next = 0;  // in-switch mode: the next node index to ping
  uint16_t root_rank = 0;
  uint32_t length = 0, seg = 0, nsegs = 0;
  uint32_t base = 0;   // the oldest segment not finished here
  uint8_t posted = 0;  // local ranks whose WQE is here
  uint8_t failed = RHN_SYN_NONE;
  // An ABORT that came before this node started that collective.
  bool abort_early = false;
  uint32_t abort_seq = 0;
  uint8_t abort_syn = RHN_SYN_NONE;
  // A member endpoint elsewhere is gone (an ABORT with RHN_FW_COLL_F_GONE):
  // every collective from lost_from on fails here at once. The nodes that
  // said so need no ABORT from here.
  bool lost = false;
  uint32_t lost_from = 0;
  CollNodeMask gone{};
  // ABORTs still to send (by node index) after a failure here, and those
  // sent and not yet acknowledged.
  uint32_t abort_next = 0;
  bool aborting = false;
  uint32_t aborts_out = 0;
  // Nodes (by index) whose segments this NIC refused with NOT_READY: told
  // READY when it starts the collective / when its window moves on.
  CollNodeMask tell_start{};
  CollNodeMask tell_window{};
  uint64_t last_progress = 0;
  uint32_t slots = 0;  // first of its coll_window slots
  WaitList waiters;    // endpoints whose next collective waits for this one
};

struct CollTables {
  std::vector<CollComm> comms;
  std::vector<CollMember> members;     // RHN_COLL_MAX_RANKS per communicator
  std::vector<uint16_t> nodes;         // RHN_COLL_MAX_RANKS per communicator
  std::vector<CollSlot> slots;         // coll_window per communicator
  std::unique_ptr<uint8_t[]> buffers;  // RHN_WIRE_MTU per slot
  std::unique_ptr<uint8_t[]> scratch;  // one segment, to combine from
  std::unique_ptr<uint8_t[]> frame;    // an RHN_PKT_COLL frame to send
  // ABORTs for communicators no local rank has posted on yet: applied
  // when one does, to that life of the key only, within kCollRememberNs
  // (oldest overwritten first).
  struct EarlyAbort {
    bool valid = false;
    uint32_t key = 0, seq = 0;
    uint32_t life = 0;  // the sender's rhn_coll_members_hash
    uint16_t node = 0;  // the sender
    uint8_t syndrome = 0;
    bool gone = false;  // RHN_FW_COLL_F_GONE
    uint64_t at = 0;    // when it came
  };
  std::array<EarlyAbort, 16> early_aborts{};
  uint32_t early_next = 0;
  // Nodes refused NOT_READY for a communicator no local rank has posted
  // on yet: told READY when one does, within kCollRememberNs (oldest
  // overwritten first).
  struct EarlyRefusal {
    bool valid = false;
    uint32_t key = 0;
    uint16_t node = 0;
    uint64_t at = 0;
  };
  std::array<EarlyRefusal, 32> early_refused{};
  uint32_t refused_next = 0;
  uint32_t used = 0;
  // The round trip to the switch (in-switch mode), measured as the
  // channels measure theirs: an UP's timeout follows it.
  Peer switch_path;
  uint64_t next_deadline = UINT64_MAX;
};

// ---- Firmware-originated messages (fwmsg/) ---------------------------------

// Who is told when a firmware message is over (acknowledged, refused, or
// its node declared dead): an index into fwmsg/'s owner table.
enum class FwOwner : uint8_t { kProbe, kPin, kTm, kSync, kShare, kColl };
constexpr uint32_t kFwOwners = 6;

enum class FwState : uint8_t { kFree, kQueued, kInFlight };

// A message the NIC itself sends to another NIC (pin-down replies, lock
// and barrier messages, directory updates, collective segments; today
// the node probe). Tracked here, not by any QP.
struct FwMessage {
  FwState state = FwState::kFree;
  FwOwner owner = FwOwner::kProbe;
  uint32_t context = 0;  // on whose behalf (Impl::shares); 0: the NIC's
  uint8_t gen = 0;       // bumps on reuse: stale answers are ignored
  uint16_t node = 0;
  uint16_t len = 0;
  uint32_t kind = 0;  // enum rhn_fw_msg
  uint64_t cookie = 0;
  // Header fields some kinds use (collectives: imm_data, remote_addr,
  // msg_offset of the packet).
  uint32_t imm = 0;
  uint64_t addr = 0;
  uint32_t aux = 0;
  uint8_t payload[RHN_FW_MSG_MAX];
};

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

// ---- The engine ---------------------------------------------------------

struct Engine::Impl {
  Impl(const EngineConfig& config, HostBus& bus, Wire& wire);

  EngineConfig cfg;
  HostBus& bus;
  Wire& wire;
  Counters counters;
  Tlb tlb;
  uint64_t now = 0;

  // Registers.
  std::atomic<uint32_t> status_reg{0};
  std::atomic<uint32_t> control{0};
  std::atomic<uint64_t> admin_sq_base{0}, admin_cq_base{0};
  std::atomic<uint32_t> admin_log_depth{0};
  std::atomic<bool> link_up{true};
  bool link_reported = true;

  // Ingress.
  MpscQueue<Kick> kicks;
  MpscQueue<RxFrame> rx;
  std::atomic<bool> kick_overflow{false};
  std::unique_ptr<RawWqe[]> inline_staging;  // per doorbell page
  // Each CQ's producer index as the doorbells see it: an arm kick records
  // it when it is written (any thread), cq_push publishes it.
  std::unique_ptr<std::atomic<uint32_t>[]> cq_published;
  // The net_device's raw-frame QP (kernel context only), and the buffer a
  // raw frame is built in.
  uint32_t raw_qpn = kNone;
  std::unique_ptr<uint8_t[]> raw_frame;
  // Source GIDs for outgoing GRHs, set by the kernel (all zero: unused).
  std::array<std::array<uint8_t, 16>, RHN_GID_TABLE_LEN> gid_table{};
  std::array<uint8_t, RHN_GID_TABLE_LEN> gid_types{};  // enum rhn_gid_type

  // Admin queue.
  uint32_t admin_consumer = 0;
  uint32_t admin_tail = 0;
  uint32_t admin_cq_producer = 0;

  // Tables.
  std::vector<ContextObj> contexts;
  std::vector<PdObj> pds;
  std::vector<MrObj> mrs;
  std::vector<EqObj> eqs;
  std::vector<CqObj> cqs;
  std::vector<SrqObj> srqs;
  std::vector<QpObj> qps;
  std::vector<AreaObj> areas;
  std::vector<uint32_t> area_buckets;  // chain heads, a power of two
  Fifo<uint32_t> free_areas{1};
  // The hash of the tables users key (areas, locks, barriers): its secret
  // changes at every reset, when those tables are empty.
  KeyedHash table_hash;
  // On-board twin memory and its allocations (ops/partial).
  std::unique_ptr<uint8_t[]> twin_mem;
  uint32_t twin_pages = 0;
  std::vector<TwinObj> twins;
  // Where partial transfers compare and gather (one packet's worth and a
  // look-ahead), so the data path allocates nothing.
  std::unique_ptr<uint8_t[]> xfer_scratch;
  std::unique_ptr<Inflight[]> inflight;  // max_inflight_per_qp per QP
  std::vector<ReadCtx> read_ctxs;
  Fifo<uint16_t> free_read_ctxs;
  std::vector<ResponderRead> responder_reads;
  Fifo<uint32_t> free_responder_reads;
  // Bitmaps of partial READs being answered, one READ request's each.
  std::unique_ptr<uint8_t[]> read_bitmaps;
  Fifo<uint16_t> free_read_bitmaps;
  uint32_t qp_gen_counter = 0;
  // QPNs are handed out round-robin: a number comes back only after all
  // others, so late packets and connection managers' time-wait (which
  // refuses a peer QPN it saw recently) never meet a new QP with an old
  // QP's number.
  uint32_t next_qpn = RHN_QPN_GSI + 1;

  // Transport.
  std::unique_ptr<Peer[]> peers;  // by node ID, cfg.max_nodes of them
  std::unique_ptr<SendSlot[]> slots;
  Fifo<uint32_t> free_slots;
  uint32_t response_reserve = 0;    // slots only responses may take
  uint32_t context_slot_quota = 0;  // slots one context may hold
  uint16_t boot_session = 1;        // first session of every peer
  WaitList slot_waiters;  // QPs waiting for send memory or their quota
  Fifo<uint32_t> ready;   // QPs with requester work
  uint64_t next_qp_wake = UINT64_MAX;  // earliest QpObj::wake_at
  // Peer scheduling: peers with work to do now, and peers with timers
  // (visited only when the earliest of their deadlines has come).
  Fifo<uint32_t> peer_ready;
  uint32_t busy_head = kNone;
  uint64_t next_peer_deadline = UINT64_MAX;
  // Firmware-originated messages.
  std::unique_ptr<FwMessage[]> fw_msgs;
  Fifo<uint32_t> fw_queue;  // handles waiting to be sent
  Fifo<uint32_t> free_fw_msgs;
  // Entries each family holds, and how many one family may (no family,
  // however many of its messages wait for a silent peer, takes the table);
  // the last fw_reserve entries are for account 0 (the kernel, probes).
  std::array<uint32_t, kFwOwners> fw_family_used{};
  uint32_t fw_family_limit = 0;
  uint32_t fw_reserve = 0;
  // Share accounting of the tables above and below (engine/shares.h).
  Shares shares;
  // Receive contexts.
  std::unique_ptr<RxContext[]> rx_ctxs;
  Fifo<uint32_t> free_rx_ctxs;
  uint32_t rx_context_quota = 0;  // receive contexts one context may hold
  TagTables tags;
  PinTables pins;
  SyncTables sync;
  McastTables switch_mcast;
  ShareTables share;
  UdMcastTables ud_mcast;
  CollTables coll;

  // ---- engine/engine.cpp
  void reset();
  bool drain_kicks();
  void handle_kick(Kick& k);
  bool run_timers();
  void schedule(uint32_t qpn);
  void wake_later(uint32_t qpn, uint64_t at);
  void report_link();
  // An event for the driver on the asynchronous EQ (the first created).
  bool async_event(uint8_t type, uint32_t object, uint64_t data,
                   uint8_t flags = 0);

  // ---- admin/admin.cpp
  void admin_process();
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
  // into the list; each piece is checked against pdn and rights first.
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
    return twin_mem.get() + uint64_t{t.first_page} * RHN_TWIN_PAGE;
  }
  // An MR over twin memory (MrObj::on_twin): where its bytes [va, va +
  // len) are, or null when they are not all inside its twin.
  uint8_t* twin_mr_bytes(const MrObj& mr, uint64_t va, uint64_t len);
  // Queue memory (rings, records, status words) owned by a context.
  rhn_syndrome check_host_ref(const HostRef& ref, uint32_t context,
                              uint64_t len, bool nic_writes);
  bool host_dma(const HostRef& ref, uint64_t offset, void* buf, uint64_t len,
                bool write);
  // An entry (CQE) into queue memory, body before its owner word
  // (HostBus::dma_write_publish), translated once.
  bool host_publish(const HostRef& ref, uint64_t offset, const void* buf,
                    uint32_t len, uint32_t publish_at);

  // ---- requester/requester.cpp
  bool requester_run(uint32_t budget);
  bool requester_step(uint32_t qpn, uint32_t budget);
  bool start_message(QpObj& qp, uint32_t qpn);
  bool fetch_wqe(QpObj& qp, uint32_t slot, RawWqe& raw, uint32_t& nslots);
  enum class TxResult { kSent, kBlocked, kFinished, kAborted };
  TxResult send_packet(QpObj& qp, uint32_t qpn);
  // The operation header every request packet of the QP's current message
  // starts from (the family fills in the rest).
  rhn_op_hdr request_header(const QpObj& qp, uint32_t qpn,
                            const Inflight& e) const;
  Inflight& entry(uint32_t qpn, uint32_t idx);
  void finish_entry(uint32_t qpn, Inflight& e, uint8_t status,
                    uint8_t syndrome);
  // Returns the entry's READ context (if any) to the free list.
  void release_read_ctx(Inflight& e);
  // A DIFF PUSH completed: its twin takes the SGE's bytes.
  void sync_diff_twin(QpObj& qp, const Inflight& e);
  void complete_in_order(uint32_t qpn);
  void qp_to_error(uint32_t qpn);
  void flush_qp(uint32_t qpn);
  void message_acked(uint32_t qpn, uint32_t gen, uint32_t serial,
                     uint16_t peer);
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
    return static_cast<uint16_t>(&p - peers.get());
  }
  // Room for one more packet: responses (context kNone) use the reserve;
  // requests are also bounded by their context's share of send memory.
  bool can_send(const Peer& p, uint32_t context) const;
  // Room for a packet that waits like a request (window, reserve kept for
  // answers) but is charged to no context: READ data, the NIC's own.
  bool room_for_request(const Peer& p) const;
  bool context_over_quota(uint32_t context) const;
  uint32_t send_data(Peer& p, const rhn_op_hdr& op,
                     std::span<const uint8_t> payload, bool ack_req,
                     uint32_t qpn, uint32_t qp_gen, bool completes_message);
  // Takes a free send-packet slot (after can_send); the caller writes the
  // payload at RHN_DATA_HDR_LEN of its frame, then calls commit_data.
  uint32_t begin_data(uint32_t context);
  void return_slot(uint32_t slot);
  uint32_t commit_data(Peer& p, uint32_t slot, const rhn_op_hdr& op,
                       uint32_t payload_len, bool ack_req, uint32_t qpn,
                       uint32_t qp_gen, bool completes_message);
  // Peer scheduling.
  void peer_needs_service(Peer& p);             // work to do now
  void peer_timer(Peer& p, uint64_t deadline);  // a deadline was set
  bool run_peers();
  bool peer_idle(const Peer& p) const;
  void unlink_busy(Peer& p);
  void transmit(uint16_t node, std::span<const uint8_t> frame);
  void send_ack(Peer& p, uint8_t type, uint16_t flags, uint16_t ack_session);
  void send_control(Peer& p, uint8_t type, uint16_t flags, uint16_t ack_session,
                    uint32_t ack_seq);
  void move_stream_after(Peer& p, uint16_t their_session);
  void receive_frame(std::span<const uint8_t> frame);
  void accept_acks(Peer& p, uint32_t ack_seq, uint16_t ack_session,
                   uint16_t session, uint32_t seq);
  void release_gated(Peer& p);
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

  // ---- responder/responder.cpp
  void handle_request(Peer& p, const Packet& pkt);
  bool responder_has_room(const Peer& p, const rhn_op_hdr& op) const;
  void respond(Peer& p, uint8_t wop, uint8_t syndrome, const rhn_op_hdr& req,
               std::span<const uint8_t> payload);
  // respond() without the NAK memory: a second NAK of a held request.
  void send_answer(Peer& p, uint8_t wop, uint8_t syndrome,
                   const rhn_op_hdr& req, std::span<const uint8_t> payload);
  bool take_recv_wqe(QpObj& qp, uint32_t qpn, RxContext& m);
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
  void nak_forget(Peer& p, uint32_t src);
  void free_read(Peer& p, uint32_t r);

  // ---- ops/tag/tag.cpp: tag matching (004 2.6)
  void tag_reset();
  // Reads the irecvs the endpoint posted since the last call (each takes
  // a queued message it matches) and moves the oldest waiting ones into
  // the posted list while it has room.
  void tag_scan_rq(uint32_t qpn);
  // The endpoint stops: its posted and matched receives complete flushed
  // (or vanish), its unexpected messages are refused to their senders.
  void tag_cancel_qp(uint32_t qpn, bool flush);
  // restarted: the node lost its state (its queued isends go too);
  // otherwise it stopped answering (receives waiting for its data fail).
  void tag_node_failed(uint16_t node, bool restarted);
  bool tag_run(uint32_t budget);  // owed CTSs and streams, stalled RQs

  // ---- ops/tm/tm.cpp: ibverbs tag matching on TM SRQs (IBV_SRQT_TM)
  // The SRQ's operation ring after a kick: adds, removes, syncs.
  void tm_run_ops(uint32_t srqn);
  // The SRQ goes: its tag list with it.
  void tm_srq_gone(uint32_t srqn);
  // The matching stage for a SEND on a QP whose SRQ is a TM SRQ.
  enum class TmLanding : uint8_t {
    kReceive,    // `m` is filled: a tag-list entry or a receive WQE
    kNoReceive,  // no receive WQE for it (RNR)
    kConsumed,   // a rendezvous header: taken whole, its data is pulled
  };
  TmLanding tm_land(QpObj& qp, uint32_t qpn, RxContext& m, uint16_t node,
                    uint32_t src, const rhn_op_hdr& op,
                    std::span<const uint8_t> first_payload);
  // A message placed into an entry's buffer ended (complete_receive).
  void tm_placed(RxContext& m);
  // A matched entry completes (ops/tag's complete_recv): status, CQE.
  void tm_complete(const TagRecv& r, uint8_t status, uint8_t syndrome);
  void tm_pull(Peer& p, const Packet& pkt);            // RHN_FW_TM_PULL arrived
  void tm_fin(Peer& p, const Packet& pkt);             // RHN_FW_TM_FIN arrived
  void tm_fw_done(uint64_t cookie, uint8_t syndrome);  // FwOwner::kTm
  void tm_data(Peer& p, const Packet& pkt);  // RHN_WOP_TM_DATA arrived
  bool tm_run(uint32_t budget);              // pulls and FINs due again
  uint64_t tm_next_retry() const;
  // Entries one TM SRQ's list may hold: a context's share of the posted
  // list (its handles are 16 bits).
  uint32_t tm_max_tags() const {
    return tags.recv_quota < 0xffff ? tags.recv_quota : 0xffff;
  }

  // ---- ops/pindown/pindown.cpp: remote pin-down (004 2.5)
  void pin_reset();
  // The host answered a PD_REQUEST event (RHN_ADMIN_PD_MAPPED).
  rhn_admin_status pin_mapped(uint32_t context, const rhn_admin_pd_mapped& c);
  // Held requests fail (the MR or the target QP went away) or are let go
  // (their requester's node did).
  void pin_mr_gone(uint32_t mr_index);
  void pin_qp_gone(uint32_t qpn);
  void pin_node_failed(uint16_t node);
  // An endpoint request from a source with an earlier one held: refused
  // (true) so that it does not overtake it.
  bool pin_holds_back(Peer& p, uint32_t qpn, const rhn_op_hdr& op);
  // RHN_FW_PIN_READY from a target: that QP's refused messages go again.
  void pin_ready(Peer& p, std::span<const uint8_t> payload);

  // ---- ops/sync/sync.cpp: locks and barriers (004 2.10)
  void sync_reset();
  // The endpoint stops (destroyed, reset, in error): as a manager its
  // locks and rounds fail their members (MEMBER_LOST); as a member the NIC
  // releases what it holds and will hold for it.
  void sync_qp_gone(uint32_t qpn);
  // The node died or lost its state: locks and rounds with it as a member
  // break, waits with it as the manager fail (MEMBER_LOST).
  void sync_node_failed(uint16_t node);
  void sync_link(Peer& p, const Packet& pkt);  // RHN_FW_LOCK_LINK arrived
  void sync_done(Peer& p, const Packet& pkt);  // RHN_FW_SYNC_DONE arrived
  void sync_fw_done(uint64_t cookie, uint8_t syndrome);  // FwOwner::kSync
  bool sync_run(uint32_t budget);  // owed messages, liveness probes
  uint64_t sync_next_deadline() const { return sync.next_probe; }

  // ---- ops/mcast_switch/mcast_switch.cpp: simultaneous multicast (004 2.8)
  void mcast_reset();
  rhn_admin_status mcast_set_group(const rhn_admin_mcast_group& c,
                                   uint32_t& detail);
  McastGroup* mcast_group(uint16_t id);
  // An RHN_WOP_MCAST_DATA or RHN_WOP_MCAST_ACK frame (outside the channels).
  void mcast_receive(const Packet& pkt);
  // The next packet of the QP's MCAST_SWITCH message, into its group's
  // stream (send_packet's part for this family).
  TxResult mcast_send_packet(QpObj& qp, uint32_t qpn);
  bool mcast_run();  // repairs of lagging members, deaths
  uint64_t mcast_next_deadline() const { return switch_mcast.next_repair; }
  // ---- ops/share/share.cpp: shared regions (004 2.9)
  void share_reset();
  // The endpoint stops: as a member it leaves its regions (the home is
  // told), as a home its regions end (the members are told).
  void share_qp_gone(uint32_t qpn);
  // The node died or lost its state: it leaves every directory; regions
  // whose home it was are lost; joins waiting on it go on without it.
  void share_node_failed(uint16_t node);
  void share_fw_receive(Peer& p, const Packet& pkt);      // RHN_FW_SHARE_*
  void share_fw_done(uint64_t cookie, uint8_t syndrome);  // FwOwner::kShare
  bool share_run(uint32_t budget);  // owed messages, probes, deadlines
  uint64_t share_next_deadline() const { return share.next_probe; }

  // ---- ops/coll/coll.cpp: collectives executed by the NICs (003, 000)
  void coll_reset();
  void coll_qp_gone(uint32_t qpn);  // its communicators' collectives fail
  void coll_node_failed(uint16_t node);
  void coll_receive(Peer& p, const Packet& pkt);         // RHN_FW_COLL_*
  void coll_switch_receive(const Packet& pkt);           // RHN_PKT_COLL
  void coll_fw_done(uint64_t cookie, uint8_t syndrome);  // FwOwner::kColl
  bool coll_run(uint32_t budget);  // segments to move, sends due, probes
  uint64_t coll_next_deadline() const { return coll.next_deadline; }

  // ---- ops/ud_mcast/ud_mcast.cpp: verbs UD multicast
  void ud_mcast_reset();
  // RHN_ADMIN_ATTACH_MCAST (attach) / DETACH_MCAST for context `ctx`.
  rhn_admin_status ud_mcast_attach(uint32_t ctx,
                                   const rhn_admin_mcast_attach& c, bool attach,
                                   uint32_t& detail);
  void ud_mcast_qp_gone(uint32_t qpn);  // its entries go, groups may leave
  // A UD SEND to a switch group (start_message's part): out on the wire
  // unsequenced, a copy to this node's attached QPs; the CQE status.
  uint8_t ud_mcast_send(QpObj& qp, uint32_t qpn, Inflight& e,
                        const DecodedWqe& w, uint8_t* syndrome);
  void ud_mcast_receive(const Packet& pkt);  // a datagram to a UD group
  void ud_mcast_mgmt(const Packet& pkt);     // the switch's answer
  bool ud_mcast_run();                       // joins and leaves to resend
  uint64_t ud_mcast_next_deadline() const {
    return std::min(ud_mcast.next_resend, ud_mcast.next_refresh);
  }

  // ---- fwmsg/fw_messages.cpp
  // Queues a message to `node`'s NIC; its owner hears of the outcome.
  // kNone: no room in the table (try later) or no such node.
  // Each message is charged to its family (owner) and to the account of
  // `context`, the context on whose behalf the NIC sends it (0: the NIC's
  // own, probes): kNone also when either holds its share of the table.
  uint32_t fw_post(uint16_t node, uint32_t kind,
                   std::span<const uint8_t> payload, FwOwner owner,
                   uint64_t cookie, uint32_t context);
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
                       uint64_t addr, uint32_t aux,
                       std::span<const uint8_t> payload, FwOwner owner,
                       uint64_t cookie, uint32_t context);
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
