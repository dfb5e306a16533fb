// SPDX-License-Identifier: BSD-2-Clause
// Tag matching's tables (ops/tag, and TM SRQs' entries, ops/tm).
#pragma once

#include "admin/objects.h"
#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "ops/tag/tag_wild.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResTagRecvs =
    family_res<FwOwner::kTag, 0>();  // posted/matched tag receives
constexpr Res kResTagMsgs =
    family_res<FwOwner::kTag, 1>();  // unexpected tag messages

enum class TagRecvState : uint8_t { kFree, kPosted, kMatched };

// Where a TM SRQ's entry is once matched (ops/tm).
enum class TmStep : uint8_t {
  kIdle,     // an endpoint's irecv (ops/tag), or posted
  kEager,    // an eager message lands through a receive context
  kPull,     // rendezvous: the sender's NIC is asked for the data
  kPulling,  // ... and streams it
  kFin,      // the data is in place; the FIN goes to the sender
};

// A posted receive (the pending-receive list), then, once matched
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

// An endpoint QP's matching state (by QP number): the posted receives
// that take any source with a masked tag, the unexpected messages in
// arrival order, and whether its irecvs wait in the RQ for list room.
struct TagEndpoint {
  TagWild wild;
  uint32_t unx_head = kNone, unx_tail = kNone;
  bool rq_stalled = false;
};

// A TM SRQ (ops/tm), by SRQ number: its tag list lives in the matching
// engine's entries (TagRecv with srqn set), in posting order by the index
// of the operation that added it; software edits it through the operation
// ring.
struct TmSrq {
  bool active = false;
  uint32_t cqn = 0;  // where list operations complete
  uint32_t max_tags = 0;
  uint32_t tags = 0;  // entries in the list
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
  TagWild wild;
};

struct TagTables {
  Table<TagRecv> recvs;
  Fifo<uint32_t> free_recvs;
  Table<TagMsg> msgs;
  Fifo<uint32_t> free_msgs;
  // Hash buckets (head, tail) of exact posted receives and of unexpected
  // messages, keyed by endpoint, source and tag.
  Table<Array<uint32_t, 2>> recv_buckets, msg_buckets;
  Table<Array<uint32_t, 2>> msg_tag_buckets, msg_src_buckets;
  uint32_t bucket_mask = 0;
  Table<TagRefusal> refusals;
  uint32_t refusals_used = 0;
  uint32_t posted = 0;                     // receives in the posted lists
  uint32_t recv_quota = 0, msg_quota = 0;  // per context
  Fifo<uint32_t> cts_owed;                 // receive indices
  Fifo<TagOwedStream> streams_owed;
  bool rq_retry = false;    // some endpoint's irecvs wait for room
  bool room_freed = false;  // since then an entry or a posted place freed
  // TM SRQs: entries by (SRQ, handle); pulls and FINs to send again, in
  // the order they are due (one delay for all).
  Table<Array<uint32_t, 2>> tm_handle_buckets;
  Fifo<TmRetry> tm_retries;
  Table<TagEndpoint> endpoints;  // by QP number
  Table<TmSrq> tm_srqs;          // by SRQ number
};

}  // namespace rhinet::fw
