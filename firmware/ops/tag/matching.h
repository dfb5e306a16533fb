// SPDX-License-Identifier: BSD-2-Clause
// The matching engine of ops/tag, shared with ops/tm (ibverbs tag matching
// on TM SRQs): posted receives are TagRecv entries from one bounded pool,
// kept in hash buckets by what they fix (source and tag, tag only, source
// only) and in a wildcard list, per owner; a message takes the oldest
// entry of its owner that matches. An owner is an endpoint (its QP number)
// or a TM SRQ (its number with kSrqOwner set).
#pragma once

#include "ops/family.h"

namespace rhinet::fw::matching {

constexpr uint32_t kSrqOwner = 0x80000000u;
// Bucket keys of the receives that fix only one of source and tag.
constexpr uint16_t kAnyNode = 0xffff;
constexpr uint32_t kAnyQpn = ~uint32_t{0};

// Doubly linked lists through indices into a pool (kNone ends them):
// `prev` and `next` are the links a node has for this list.
template <typename Node>
void list_append(Table<Node>& pool, uint32_t& head, uint32_t& tail, uint32_t i,
                 uint32_t Node::*prev, uint32_t Node::*next) {
  pool[i].*prev = tail;
  pool[i].*next = kNone;
  if (tail != kNone)
    pool[tail].*next = i;
  else
    head = i;
  tail = i;
}

template <typename Node>
void list_remove(Table<Node>& pool, uint32_t& head, uint32_t& tail, uint32_t i,
                 uint32_t Node::*prev, uint32_t Node::*next) {
  Node& n = pool[i];
  if (n.*prev != kNone)
    pool[n.*prev].*next = n.*next;
  else
    head = n.*next;
  if (n.*next != kNone)
    pool[n.*next].*prev = n.*prev;
  else
    tail = n.*prev;
  n.*prev = n.*next = kNone;
}

inline uint32_t owner_of(const TagRecv& r) {
  return r.srqn == kNone ? r.qpn : (r.srqn | kSrqOwner);
}

// An entry's handle on the wire and in software's hands: index | gen << 20.
uint32_t handle_of(uint32_t index, uint16_t gen);
// The index of the entry `handle` names while it is still that one, or
// kNone.
uint32_t entry_of(const Impl& m, uint32_t handle);

// Room for one more posted entry of `context`: a free entry, a place in
// the posted list and in the context's share of it.
bool room_to_post(const Impl& m, uint32_t context);
// An entry for `r` from the pool (the caller made sure one is free), in
// state kMatched and not linked.
uint32_t take_entry(Impl& m, const TagRecv& r);
// The entry joins its owner's posted lists (the caller checked
// room_to_post), in posting order.
void post(Impl& m, uint32_t i);
// A posted entry leaves its lists (matched, cancelled or flushed): its
// place and its context's share are free again. No-op if not posted.
void unpost(Impl& m, uint32_t i);
// Back to the pool (unposted first if need be).
void recv_free(Impl& m, uint32_t i);
// The oldest posted entry of `owner` that takes a message from
// (node, src_qpn) with `tag`, or kNone.
uint32_t match_posted(Impl& m, uint32_t owner, uint16_t node, uint32_t src_qpn,
                      uint64_t tag);

// The unexpected messages' chains and pool.
void msg_link(Impl& m, uint32_t i);
void msg_unlink(Impl& m, uint32_t i);
void msg_free(Impl& m, uint32_t i);
inline bool source_matches(const TagRecv& r, uint16_t node, uint32_t src_qpn) {
  return r.any_src || (r.src_node == node && r.src_qpn == src_qpn);
}
inline bool tag_matches(const TagRecv& r, uint64_t tag) {
  return ((r.tag ^ tag) & r.mask) == 0;
}
// The oldest unexpected message of the endpoint that `r` takes, or kNone.
uint32_t match_unexpected(Impl& m, const TagRecv& r);

}  // namespace rhinet::fw::matching
