// SPDX-License-Identifier: BSD-2-Clause
// Operation families: everything one family of operations does, at each
// stage of the pipeline, lives in its folder under ops/ behind this
// interface. The stages themselves (requester/, transport/, responder/,
// completion/) know no opcode: they look the family up in ops/registry.cpp.
// Adding an operation is a new folder here and a table entry there.
#pragma once

#include <span>

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
  std::span<const uint8_t> data;
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
  // Fan-out families (an mcastB): the WQE goes to `*count` destinations;
  // the index-th is (*node, *qpn). False: the WQE fails (its list became
  // unreadable or wrong). nullptr: the WQE's own destination.
  // A *count of 0 (nobody to send to) completes the WQE at once.
  bool (*next_destination)(Impl& m, QpObj& qp, const DecodedWqe& w,
                           uint32_t index, uint16_t* node, uint32_t* qpn,
                           uint32_t* count) = nullptr;
  // Families with a reliable stream of their own instead of a node
  // channel (an mcastA to a switch group): send the next packet of the
  // QP's current message (what send_packet does for the others) and
  // finish the entry themselves. nullptr: the node channel of dst_node.
  Impl::TxResult (*send_packet)(Impl& m, QpObj& qp, uint32_t qpn) = nullptr;
  // Fan-out families that number their WQEs (a shared region's updates):
  // the number the destination's message carries in imm_data, asked
  // after next_destination and kept for its resends.
  uint32_t (*fanout_imm)(Impl& m, QpObj& qp, const DecodedWqe& w) = nullptr;
  // Told when one of the family's messages is finished (any status).
  void (*message_done)(Impl& m, uint32_t qpn, const Inflight& e) = nullptr;
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
// The family handling a wire opcode (a request or an answer), or nullptr.
const OpFamily* family_of_wire(uint8_t wire_op);

// ---- Services the stages offer the families.

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
// area ID + offset, checked for `right` over `len` bytes.
rhn_syndrome resolve_target(Impl& m, const Request& r, uint32_t right,
                            uint64_t len, uint64_t* va, uint32_t* key,
                            uint32_t* mr_index);
// Responder: an access to [va, va + len) of MR mr_index (resolve_target's
// answer): kPresent, or the pages are being pinned (ops/pindown) and the
// request was refused with PINNING (kRefused) or, a PD_REQ, held (kHeld).
enum class PinCheck : uint8_t { kPresent, kRefused, kHeld };
PinCheck pin_check(Impl& m, Request& r, uint32_t mr_index, uint64_t va,
                   uint64_t len);
// For an access that no request holds (a TM rendezvous pull): true when
// the range's pages are pinned; otherwise its host is asked to pin them
// and the caller asks again later.
bool pin_range(Impl& m, uint32_t mr_index, uint64_t va, uint64_t len);
// Responder: a signal for the target process (004 2.11), a PUSH by area
// with RHN_WOP_F_SIGNAL ended: a CQE on the endpoint's receive CQ, no
// receive WQE taken.
void deliver_signal(Impl& m, const Request& r);
// Requester: gathers `len` message bytes from `offset` (inline data or the
// WQE's SGEs).
bool gather(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
            uint8_t* out, uint32_t len);
// Requester: the completion status a refusal (NAK syndrome) gives.
uint8_t status_of_nak(uint8_t syndrome);
// Requester: scatters answer data into the local SGEs kept for `e`.
bool scatter_answer(Impl& m, uint32_t qpn, Inflight& e, uint64_t offset,
                    std::span<const uint8_t> data);

}  // namespace rhinet::fw
