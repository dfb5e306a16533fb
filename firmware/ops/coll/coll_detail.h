// SPDX-License-Identifier: BSD-2-Clause
// ops/coll's internals shared by its files (coll.cpp: tree, WQE, hooks;
// coll_segments.cpp: segments and messages; coll_switch.cpp: the
// switch's frames).
#pragma once

#include "core/crc32c.h"
#include "core/freestanding.h"
#include "ops/coll/coll.h"
#include "ops/coll/reduce.h"
#include "ops/family.h"

namespace rhinet::fw::coll_detail {

constexpr uint64_t kRetryFirstNs = 20'000;

// a NOT_READY segment, again
constexpr uint64_t kRetryMaxNs = 1'000'000;

// radix 0: a chain from this many bytes on (bandwidth: each link carries
// every segment once each way, pipelined); below it a tree of this radix
// for a reduce or broadcast, and for an allreduce (whose segments each
// have their own root) a flat tree (up to RHN_COLL_MAX_RADIX children):
// two hops, every link carrying the ring's share.
constexpr uint32_t kChainFromBytes = 64 * 1024;

constexpr uint8_t kTreeRadix = 4;

// seg_size 0 for an allreduce: about length / (4 x nodes) (every node is
// the root of a few segments, and the first ones are through while the
// last are still on their way up), in multiples of this, up to a packet.
constexpr uint32_t kSegQuantum = 64;

// Cookie destinations besides children (0..RHN_COLL_MAX_RADIX - 1) and
// the parent (kCollParent).
constexpr uint32_t kDestAbort = 40, kDestProbe = 41, kDestReady = 42;

using NodeMask = CollNodeMask;

// A segment's place in the tree, in node indices.
struct Topo {
  uint16_t root = 0;         // node index of the segment's root
  uint16_t v = 0;            // this node's position from the root
  uint16_t parent = 0;       // node index (v > 0)
  uint16_t first_child = 0;  // position of child 0
  uint16_t children = 0;
  uint32_t all_children = 0;  // mask
};

void mark(NodeMask& m, uint32_t index);
bool marked(const NodeMask& m, uint32_t index);
CollMember* members_of(Impl& m, const CollComm& c);
uint16_t* nodes_of(Impl& m, const CollComm& c);
uint32_t comm_index(const Impl& m, const CollComm& c);
uint32_t slot_index(const Impl& m, uint32_t seg);
CollSlot& slot_of(Impl& m, const CollComm& c, uint32_t seg);
uint8_t* bytes_of(Impl& m, const CollSlot& s);
uint64_t cookie(const Impl& m, const CollComm& c, uint32_t slot, uint32_t dest);
uint64_t abort_cookie(const Impl& m, const CollComm& c);
uint32_t signature(const CollComm& c);
rhn_fw_coll_life life_of(const CollComm& c, uint16_t flags);
Span<const uint8_t> payload_of(const rhn_fw_coll_life& l);
bool has_up_phase(const CollComm& c);
bool via_switch(const CollComm& c);
bool down_carries_data(const CollComm& c);
bool reads_send(const CollComm& c, uint16_t rank);
bool gets_result(const CollComm& c, uint16_t rank);
uint16_t node_at(const CollComm& c, uint16_t v, uint16_t root);
uint16_t position(const CollComm& c, uint16_t index, uint16_t root);
Topo topo(const CollComm& c, uint32_t seg, uint16_t index);
int node_index(Impl& m, const CollComm& c, uint16_t node);
bool has_local(const CollComm& c);
CollComm* find_comm(Impl& m, uint32_t key);
CollComm* find_life(Impl& m, uint32_t key, uint32_t life);
bool expired(const Impl& m, uint64_t at);
void update_deadline(Impl& m, uint64_t at);
void back_off(Impl& m, CollSlot& s);
Inflight* rank_entry(Impl& m, const CollLocal& l);
void complete_rank(Impl& m, CollLocal& l, uint8_t syndrome);
void clear_slots(Impl& m, CollComm& c);
void end_collective(Impl& m, CollComm& c);
void end_if_all_failed(Impl& m, CollComm& c);
void release_comm(Impl& m, CollComm& c);
void release_if_done(Impl& m, CollComm& c);
void begin_aborts(CollComm& c, uint32_t seq, uint8_t syndrome);
void fail_collective(Impl& m, CollComm& c, uint8_t syndrome, bool tell);
bool tell_ready(Impl& m, CollComm& c, NodeMask& who);
bool any(const NodeMask& who);
bool send_aborts(Impl& m, CollComm& c);
void open_slot(const CollComm& c, CollSlot& s, uint32_t seg);
void contribute(const CollComm& c, CollSlot& s, uint8_t* buf,
                const uint8_t* data);
bool read_local(Impl& m, CollComm& c, CollSlot& s);
bool write_results(Impl& m, CollComm& c, CollSlot& s);
void send_switch_frame(Impl& m, const CollComm& c, uint32_t seq, uint32_t seg,
                       uint8_t kind, Span<const uint8_t> data);
bool send_switch_up(Impl& m, CollComm& c, CollSlot& s);
bool send_due(Impl& m, CollComm& c, CollSlot& s, const Topo& t);
bool step_slot(Impl& m, CollComm& c, CollSlot& s);
bool slot_done(const CollSlot& s);
bool probe(Impl& m, CollComm& c);
void report_progress(Impl& m, const CollComm& c);
bool progress(Impl& m, CollComm& c);
bool same_params(const CollComm& c, const rhn_wqe_coll& x, uint8_t radix,
                 uint32_t seg);
uint8_t effective_radix(const rhn_wqe_coll& x, uint16_t nnodes);
uint32_t effective_seg(const rhn_wqe_coll& x, uint16_t nnodes);
void start_collective(Impl& m, CollComm& c, const rhn_wqe_coll& x);
uint8_t read_list(Impl& m, const QpObj& qp, const rhn_wqe_coll& x);
CollMember listed(const Impl& m, uint32_t rank);
bool same_list(Impl& m, const CollComm& c);
void apply_remembered(Impl& m, CollComm& c);
CollComm* comm_for(Impl& m, const QpObj& qp, uint32_t qpn,
                   const rhn_wqe_coll& x, uint32_t key, uint8_t* syndrome,
                   bool* made);
uint8_t coll_check(Impl& m, const QpObj& qp, const DecodedWqe& w,
                   uint8_t* syndrome);
Impl::TxResult coll_send_packet(Impl& m, QpObj& qp, uint32_t qpn);
bool life_in(Impl& m, const Packet& pkt, rhn_fw_coll_life* life);
void receive_abort(Impl& m, uint16_t from, const Packet& pkt);

}  // namespace rhinet::fw::coll_detail
