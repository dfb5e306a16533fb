// SPDX-License-Identifier: BSD-2-Clause
// Operation families: everything one family of operations does, at each
// stage of the pipeline, lives in its folder under ops/ behind this
// interface. The stages themselves (requester/, transport/, responder/,
// completion/) know no opcode: they look the family up in ops/registry.cpp.
// Adding an operation is a new folder here, its claims (OpClaims) and a
// line in the registry's list; see Documentation/firmware/README.md.
#pragma once

#include "core/freestanding.h"
#include "engine/engine_impl.h"

namespace rhinet::fw {

using Impl = Engine::Impl;

// A request packet at the responder, after the checks every family shares
// (target QP, its type and state, RNR blocking).
struct Request {
  Peer& peer;
  QpObj& qp;
  uint32_t qpn;
  const rhn_op_hdr& op;
  Span<const uint8_t> data;
  uint16_t node;     // the requester's node
  uint32_t src;      // its src_qpn: QPN and incarnation
  uint32_t src_qpn;  // its QPN
  bool first, last;
};

// One packet of a message being built by the requester.
struct PacketOut {
  uint8_t* payload;      // room for RHN_WIRE_GRH_LEN + RHN_WIRE_MTU bytes
  uint32_t len = 0;      // payload bytes written
  uint32_t advance = 0;  // message bytes this packet covers
  bool last = false;
};

struct OpFamily {
  const char* name;
  // ---- Requester
  // The family's own parts of a WQE, checked by the decoder (pure, no
  // state): its last slot when its row has one (out.family_slot) and its
  // operands (in the raw first slot, struct rhn_send_wqe). Runs after the
  // checks every opcode shares and before the partial-transfer descriptor's;
  // RHN_SYN_NONE, or the refusal.
  rhn_syndrome (*decode)(const RawWqe& raw, const DecodedWqe& out) = nullptr;
  // The family's rules for a decoded WQE on this QP: RHN_CQE_SUCCESS, or
  // the status (and *syndrome) to complete it with.
  uint8_t (*check)(Impl& m, const QpObj& qp, const DecodedWqe& w,
                   uint8_t* syndrome) = nullptr;
  // Unsequenced families: the message leaves at once, outside any node
  // channel; returns its completion status. nullptr: sequenced.
  uint8_t (*send_unsequenced)(Impl& m, QpObj& qp,
                              const DecodedWqe& w) = nullptr;
  // Local families: executed by this NIC in send-queue order, no message;
  // returns the completion status (and *syndrome). nullptr: not local.
  uint8_t (*execute_local)(Impl& m, QpObj& qp, uint32_t qpn,
                           const DecodedWqe& w, uint8_t* syndrome) = nullptr;
  // Fills the payload of the packet starting at `offset` into the message
  // and the family's fields of the operation header (rkey, flags, lengths).
  // False: a local access failed (LOC_PROT_ERR).
  bool (*build_packet)(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                       rhn_op_hdr& op, PacketOut& out) = nullptr;
  // An answer (other than a NAK) to one of this family's messages.
  void (*on_response)(Impl& m, Peer& p, uint32_t qpn, Inflight& e,
                      const Packet& pkt) = nullptr;
  // ---- Responder
  // Room for what accepting this request will hold (nullptr: nothing
  // beyond the answer the channel keeps room for). No room: the packet is
  // not accepted, as if lost, and comes again.
  bool (*has_room)(const Impl& m, const Peer& p,
                   const rhn_op_hdr& op) = nullptr;
  void (*on_request)(Impl& m, Request& r) = nullptr;
  // An answer whose message is gone (its QP destroyed or reset, or it
  // completed): nullptr drops it.
  void (*on_orphan_response)(Impl& m, Peer& p, const Packet& pkt) = nullptr;
  // An answer to a request the NIC made itself for a QP, not to a WQE (a
  // TM SRQ's rendezvous data): taken before any message is looked for.
  // nullptr: the family's answers answer WQEs.
  void (*on_nic_answer)(Impl& m, Peer& p, const Packet& pkt) = nullptr;
  // Fan-out families (a multicast list): the WQE goes to `*count` destinations;
  // the index-th is (*node, *qpn). False: the WQE fails (its list became
  // unreadable or wrong). nullptr: the WQE's own destination.
  // A *count of 0 (nobody to send to) completes the WQE at once.
  bool (*next_destination)(Impl& m, QpObj& qp, const DecodedWqe& w,
                           uint32_t index, uint16_t* node, uint32_t* qpn,
                           uint32_t* count) = nullptr;
  // Families with a reliable stream of their own instead of a node
  // channel (a multicast through a switch group): send the next packet of the
  // QP's current message (what send_packet does for the others) and
  // finish the entry themselves. nullptr: the node channel of dst_node.
  Impl::TxResult (*send_packet)(Impl& m, QpObj& qp, uint32_t qpn) = nullptr;
  // Fan-out families that number their WQEs (a shared region's updates):
  // the number the destination's message carries in imm_data, asked
  // after next_destination and kept for its resends.
  uint32_t (*fanout_imm)(Impl& m, QpObj& qp, const DecodedWqe& w) = nullptr;
  // Told when one of the family's messages is finished (any status).
  void (*message_done)(Impl& m, uint32_t qpn, const Inflight& e) = nullptr;
  // A DIFF message whose completion leaves the twin as it was (an isend:
  // its data leaves after the receiver's answer, not as compared runs).
  bool diff_twin_stays = false;
};

// How a WQE opcode (enum rhn_op) appears at the other stages.
struct OpInfo {
  const OpFamily* family;  // nullptr: NOP or no such opcode
  uint8_t wire_op;         // its request on the wire
  uint8_t cqe_op;          // its send CQE's opcode
  bool awaits_response;    // completes on an answer, not on the ACK
  bool has_imm;
  bool carries_payload;  // may take its data inline in the WQE
  // Holds a READ context (local SGEs for the answer's data) and counts
  // against max_rd_atomic: READ and atomics.
  bool uses_read_ctx = false;
  // Refused for room (BUSY/RNR) on an endpoint: later messages of the
  // same opcode to the same endpoint that are not answered yet go again
  // after it, in order (tag matching keeps one sender's order).
  bool ordered_retry = false;
};

const OpInfo& op_info(uint8_t wqe_opcode);

// How the channel hands on a wire opcode that arrived: to the family that
// claims it (nullptr: the NIC's own RHN_WOP_FW, a NAK, an unknown one), as
// a request (to the responder) or as an answer (to the requester).
struct WireRoute {
  const OpFamily* family;
  bool request;
};
extern const Array<WireRoute, 256> kWireRoutes;  // ops/registry.cpp
// The family handling a wire opcode (a request or an answer), or nullptr.
inline const OpFamily* family_of_wire(uint8_t wire_op) {
  return kWireRoutes[wire_op].family;
}
inline bool wire_is_request(uint8_t wire_op) {
  return kWireRoutes[wire_op].request;
}

// ---- What a family carries out. Each family declares its claims in its
// folder (ops/<family>/<family>.h); ops/registry.cpp lists them once and
// builds op_info() and kWireRoutes from the list at compile time (an
// opcode claimed twice does not compile).

// A few opcodes of one kind (more than kMax does not compile).
struct OpcodeList {
  static constexpr uint32_t kMax = 4;
  uint8_t count = 0;
  uint8_t ops[kMax] = {};
  constexpr OpcodeList() = default;
  constexpr OpcodeList(std::initializer_list<uint8_t> list) {
    for (uint8_t op : list) ops[count++] = op;
  }
  constexpr const uint8_t* begin() const { return ops; }
  constexpr const uint8_t* end() const { return ops + count; }
};

struct OpClaims {
  const OpFamily* family;
  OpcodeList wqe_ops = {};   // enum rhn_wqe_opcode: the WQEs it carries out
  OpcodeList requests = {};  // enum rhn_wire_op: what its responder takes
  OpcodeList answers = {};   // enum rhn_wire_op: the answers to its requests
};

// ---- Family modules: a family's life beside its datapath hooks.
//
// Everything that happens to the NIC as a whole (a reset, a QP or SRQ or
// MR going away, a node failing, time passing, a firmware message or a
// frame outside the node channels arriving, an admin command) reaches the
// families through the list in ops/registry.cpp, never by name: the
// stages loop over it or look a kind up in it. A family with no such need
// is not listed.

// Why a QP's family state ends.
enum class QpGone : uint8_t {
  kStopped,    // reset or destroyed: its work vanishes, no CQEs
  kFlushed,    // moved to the error state: its work completes flushed
  kDestroyed,  // destroyed (after kStopped): what outlives a reset goes
};

// How a node was lost.
enum class NodeLoss : uint8_t {
  kTimedOut,      // it stopped answering (retries ran out)
  kRestarted,     // a new session of a node we knew: it lost its state
  kFirstContact,  // a new session of a node first heard from now
};

// Where a SEND to a QP of a family's SRQ went (FamilyModule::srq_land).
enum class SrqLanding : uint8_t {
  kReceive,    // `rx` is filled: a family entry or a receive WQE
  kNoReceive,  // no receive WQE for it (RNR)
  kConsumed,   // taken whole by the family (its data comes another way)
};

struct FamilyModule {
  const char* name;
  FwOwner id;  // its place in the list
  // Power-on, once: its tables placed in card memory, sized by the
  // configuration (m.cfg); may clamp its part of m.cfg to what it placed.
  void (*place)(Impl& m, CardMemory& mem) = nullptr;
  // Power-on (after place) and RHN_CONTROL_RESET: its tables back to
  // empty. Places nothing.
  void (*reset)(Impl& m) = nullptr;
  void (*qp_gone)(Impl& m, uint32_t qpn, QpGone why) = nullptr;
  void (*srq_gone)(Impl& m, uint32_t srqn) = nullptr;
  void (*mr_gone)(Impl& m, uint32_t mr_index) = nullptr;
  void (*node_failed)(Impl& m, uint16_t node, NodeLoss why) = nullptr;
  // A family with a turn in poll() (work it owes, timers) lists it in
  // the registry's turn lists (ops/registry.cpp), which poll() calls
  // directly. The earliest time its turn has something to do
  // (UINT64_MAX: none).
  uint64_t (*next_deadline)(const Impl& m) = nullptr;
  // Firmware messages: the kinds it receives, and the outcome of those it
  // sent (acknowledged: RHN_SYN_NONE; refused; or its node dead).
  Span<const FwKind> fw_kinds = {};
  void (*on_fw_message)(Impl& m, Peer& p, const Packet& pkt) = nullptr;
  void (*on_fw_done)(Impl& m, uint64_t cookie, uint8_t syndrome) = nullptr;
  // Frames outside the node channels.
  Span<const FrameRoute> frames = {};
  // Admin commands it owns (RHN_ADMIN_*) and their execution for `ctx`
  // (result: the completion's result, detail: the field refused).
  Span<const uint16_t> admin_ops = {};
  rhn_admin_status (*on_admin)(Impl& m, uint32_t ctx, const rhn_admin_cmd& cmd,
                               uint32_t& result, uint32_t& detail) = nullptr;
  // A context was destroyed (RHN_ADMIN_DESTROY_CONTEXT): what the family
  // keeps for it that holds no reference on it ends.
  void (*context_gone)(Impl& m, uint32_t ctx) = nullptr;
  // Capability bits (RHN_CAP_*) beyond its opcodes' (the operation
  // table's cap column).
  uint32_t caps = 0;
  // Its part of RHN_ADMIN_QUERY_DEVICE's answer.
  void (*query_device)(const Impl& m, rhn_device_attr& a) = nullptr;
  // SRQs the family runs: RHN_CREATE_SRQ_F_* bits that make an SRQ its
  // own, its checks of the rest of CREATE_SRQ (detail: the field refused)
  // and taking the SRQ once it has a number (the plain SRQ is set up by
  // admin; srq_gone ends both); the QP types (1 << RHN_QP_*) such an SRQ
  // takes; and where a SEND to one of its QPs lands.
  uint32_t srq_flags = 0;
  rhn_admin_status (*srq_check)(Impl& m, uint32_t ctx,
                                const rhn_admin_create_srq& c,
                                uint32_t& detail) = nullptr;
  void (*srq_attach)(Impl& m, uint32_t srqn,
                     const rhn_admin_create_srq& c) = nullptr;
  uint32_t srq_qp_types = 0;
  SrqLanding (*srq_land)(Impl& m, Request& r, RxContext& rx) = nullptr;
  // An SRQ's doorbell (`value`).
  void (*srq_kick)(Impl& m, uint32_t srqn, uint64_t value) = nullptr;
  // The hooks the data path calls per packet or doorbell (a QP's RQ
  // doorbell, a request a family holds back, a receive placed into a
  // family's buffer) are lists in the registry, called directly: see
  // modules_rq_kick, modules_hold_back and modules_placed.
  // Requester: a UD SEND to a group (a destination node at or past
  // RHN_NODE_MCAST_UD_FIRST), out now; returns its CQE status.
  uint8_t (*send_to_group)(Impl& m, QpObj& qp, uint32_t qpn, Inflight& e,
                           const DecodedWqe& w, uint8_t* syndrome) = nullptr;
};

// The list, in its order (ops/registry.cpp).
Span<const FamilyModule* const> family_modules();
const FamilyModule& family_module(FwOwner id);

// RHN_REG_CAPS' family part: the cap column of every opcode a family
// carries out, and every module's caps.
uint32_t family_caps();

// The loops the stages run over the list.
void modules_place(Impl& m, CardMemory& mem);
void modules_reset(Impl& m);
void modules_qp_gone(Impl& m, uint32_t qpn, QpGone why);
void modules_srq_gone(Impl& m, uint32_t srqn);
void modules_mr_gone(Impl& m, uint32_t mr_index);
void modules_context_gone(Impl& m, uint32_t ctx);
void modules_node_failed(Impl& m, uint16_t node, NodeLoss why);
bool modules_run(Impl& m, bool before_fw, uint32_t budget);
uint64_t modules_next_deadline(const Impl& m);
// When a turn of modules_run next has work (0: now; see Engine::poll).
uint64_t modules_due(Impl& m);
void modules_query_device(const Impl& m, rhn_device_attr& a);
void modules_rq_kick(Impl& m, uint32_t qpn);
void modules_srq_kick(Impl& m, uint32_t srqn, uint64_t value);
bool modules_hold_back(Impl& m, Peer& p, uint32_t qpn, const rhn_op_hdr& op);
void modules_placed(Impl& m, RxContext& rx);
uint8_t modules_send_to_group(Impl& m, QpObj& qp, uint32_t qpn, Inflight& e,
                              const DecodedWqe& w, uint8_t* syndrome);
// Lookups: the module receiving firmware-message kind `kind` (nullptr:
// none) and its FwKind; the module owning admin opcode `op`; the route of
// a frame outside the node channels (nullptr: a node channel's).
const FamilyModule* fw_receiver(const Impl& m, uint32_t kind, const FwKind** k);
const FamilyModule* admin_owner(uint16_t op);
// The module whose SRQ flags are exactly `flags` (nullptr: none, or 0).
const FamilyModule* srq_owner(uint32_t flags);
// The family running SRQ `srqn` (nullptr: a plain SRQ).
const FamilyModule* srq_family(const Impl& m, uint32_t srqn);
// every module's, in order
Span<const FrameRoute> frame_routes(const Impl& m);

// ---- Services the stages offer the families.

// Admin: memory a new queue lives in, checked as admin checks its own
// rings (aligned, the context's, writable when the NIC writes it); a
// reference held on (+1) or given back by (-1) such memory's MR; whether
// `cqn` is a CQ of context `ctx`.
HostRef to_ref(const rhn_host_ref& r);
rhn_admin_status check_queue_memory(Impl& m, uint32_t ctx,
                                    const rhn_host_ref& r, uint64_t len,
                                    bool nic_writes);
void hold_host_ref(Impl& m, const HostRef& r, int delta);
bool cq_of_context(const Impl& m, uint32_t cqn, uint32_t ctx);

// Responder: answer a refused request with a NAK (UD: count and drop).
void refuse(Impl& m, Peer& p, const rhn_op_hdr& op, rhn_syndrome syndrome);
void refuse(Impl& m, Request& r, rhn_syndrome syndrome);
// Responder: receiver not ready (no receive WQE; BUSY: no receive
// context): the requester sends the message again later, and on RC later
// messages of that QP are dropped until then.
void not_ready(Impl& m, Request& r, rhn_syndrome syndrome);
// Responder: a data stream to `p` (a READ's answer, an isend's or a TM
// rendezvous' data) from `rr`, sent by stream_reads in its turn; the
// caller made sure a responder read is free.
void queue_stream(Impl& m, Peer& p, const ResponderRead& rr);
// Responder: the target of an RDMA or atomic request, by rkey + VA or by
// area ID + offset, checked for `right` over `len` bytes. By area, once
// resolved: the area in m.resolved_area.
rhn_syndrome resolve_target(Impl& m, const Request& r, uint32_t right,
                            uint64_t len, uint64_t* va, uint32_t* key,
                            uint32_t* mr_index);
// Responder: an access to [va, va + len) of MR mr_index (resolve_target's
// answer): kPresent, or the pages are being pinned (ops/pindown) and the
// request was refused with PINNING (kRefused) or, a PD_REQ, held (kHeld).
enum class PinCheck : uint8_t { kPresent, kRefused, kHeld };
PinCheck pin_check(Impl& m, Request& r, uint32_t mr_index, uint64_t va,
                   uint64_t len);
// Responder: the receive WQE ctx took for a message of len bytes (from
// ctx.length on): true when the pages it lands in are pinned; otherwise
// its host is asked to pin them and r was refused PINNING (the
// requester sends it again once they are in; UD: nothing, the datagram
// is dropped). The caller puts the receive WQE back.
bool pin_receive(Impl& m, Request& r, const RxContext& ctx, uint64_t len);
// Requester: a READ's or atomic's local SGEs (where its answer lands):
// true when their pages are pinned; otherwise the gather fault is left
// for pin_local_fault (the QP waits for its host before the request goes).
bool pin_local_targets(Impl& m, const QpObj& qp, const DecodedWqe& w);
// For an access that no request holds (a TM rendezvous pull): true when
// the range's pages are pinned; otherwise its host is asked to pin them
// and the caller asks again later.
bool pin_range(Impl& m, uint32_t mr_index, uint64_t va, uint64_t len);
// Responder: a signal for the target process, a PUSH by area
// with RHN_WOP_F_SIGNAL ended: a CQE on the endpoint's receive CQ, no
// receive WQE taken.
void deliver_signal(Impl& m, const Request& r);
// Responder: a PUSH or an atomic that changed its word ended, its target
// resolved by resolve_target: if it was by area, that area's watch, if
// one is armed, fires (ops/watch). Two tests while none is.
void watch_fire(Impl& m, AreaObj& a, const Request& r, uint32_t len);
inline void area_landed(Impl& m, const Request& r, uint32_t len) {
  if ((r.op.flags & RHN_WOP_F_AREA) && m.resolved_area->watch_qpn != kNone)
    watch_fire(m, *m.resolved_area, r, len);
}
// Requester: gathers `len` message bytes from `offset` (inline data or the
// WQE's SGEs).
bool gather(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
            uint8_t* out, uint32_t len);
// Requester: the completion status a refusal (NAK syndrome) gives.
uint8_t status_of_nak(uint8_t syndrome);
// Requester: scatters answer data into the local SGEs kept for `e`.
bool scatter_answer(Impl& m, uint32_t qpn, Inflight& e, uint64_t offset,
                    Span<const uint8_t> data);

}  // namespace rhinet::fw
