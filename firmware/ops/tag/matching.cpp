// SPDX-License-Identifier: BSD-2-Clause
// ops/tag's matching engine (ops/tag/matching.h): posted receives and
// unexpected messages in their bucket chains and lists, and the search
// for the oldest candidate. Shared by endpoints (ops/tag) and TM SRQs
// (ops/tm). The protocol around it is in tag.cpp.
#include "ops/tag/matching.h"

#include "core/freestanding.h"
#include "ops/tag/tag.h"

namespace rhinet::fw {

namespace matching {

namespace {

constexpr uint32_t kGenShift = 20;  // handle = index | gen << 20
constexpr uint64_t kExactMask = ~uint64_t{0};

}  // namespace

uint32_t handle_of(uint32_t index, uint16_t gen) {
  return index | (uint32_t{gen} & 0xfffu) << kGenShift;
}

uint32_t entry_of(const Impl& m, uint32_t handle) {
  const uint32_t i = handle & ((1u << kGenShift) - 1);
  if (i >= m.tags.recvs.size() ||
      m.tags.recvs[i].state == TagRecvState::kFree ||
      handle_of(i, m.tags.recvs[i].gen) != handle)
    return kNone;
  return i;
}

uint32_t bucket_of(const TagTables& t, uint32_t qpn, uint16_t node,
                   uint32_t src_qpn, uint64_t tag) {
  uint64_t h = tag * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t{qpn} << 40) ^ (uint64_t{node} << 24) ^ src_qpn;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return static_cast<uint32_t>(h) & t.bucket_mask;
}

// ---- Lists: posted receives (bucket chains, wildcard lists) and
// unexpected messages (bucket chains, arrival lists), all doubly linked
// through indices.

namespace {

// Where a posted receive is kept: by what it fixes.
enum TagIndex : uint8_t {
  kBySourceAndTag,  // exact
  kByTag,           // any source, exact tag
  kBySource,        // exact source, masked tag
  kInList,          // any source, masked tag: the wildcard list
};

TagIndex index_of(const TagRecv& r) {
  if (r.mask == kExactMask) return r.any_src ? kByTag : kBySourceAndTag;
  return r.any_src ? kInList : kBySource;
}

// The masked wildcards of an owner: an endpoint's or a TM SRQ's.
TagWild& wild_of(Impl& m, uint32_t owner) {
  if (owner & kSrqOwner) return m.tags.tm_srqs[owner & ~kSrqOwner].wild;
  return m.tags.endpoints[owner].wild;
}

// The bucket of a mask class's chain holding receives whose masked tag is
// `masked` (the source part of the key names the class).
uint32_t class_bucket(const Impl& m, uint32_t owner, uint32_t c,
                      uint64_t masked) {
  return bucket_of(m.tags, owner, kAnyNode, kSrqOwner | c, masked);
}

// The head and tail of the chain or list that holds (or will hold) r.
Pair<uint32_t*, uint32_t*> recv_chain(Impl& m, const TagRecv& r) {
  const uint32_t owner = owner_of(r);
  uint32_t b;
  switch (index_of(r)) {
    case kBySourceAndTag:
      b = bucket_of(m.tags, owner, r.src_node, r.src_qpn, r.tag);
      break;
    case kByTag:
      b = bucket_of(m.tags, owner, kAnyNode, kAnyQpn, r.tag);
      break;
    case kBySource:
      b = bucket_of(m.tags, owner, r.src_node, r.src_qpn, 0);
      break;
    default:
      if (r.mask_class == TagWild::kNoClass) {
        TagWild& w = wild_of(m, owner);
        return {&w.head, &w.tail};
      }
      b = class_bucket(m, owner, r.mask_class, r.tag & r.mask);
      break;
  }
  auto& chain = m.tags.recv_buckets[b];
  return {&chain[0], &chain[1]};
}

void recv_link(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  r.mask_class = TagWild::kNoClass;
  if (index_of(r) == kInList) {
    // The class of its mask, or a free one; none left: the list.
    TagWild& w = wild_of(m, owner_of(r));
    uint32_t free_class = TagWild::kClasses;
    for (uint32_t c = 0; c < TagWild::kClasses; c++) {
      if (w.uses[c] && w.masks[c] == r.mask) {
        free_class = c;
        break;
      }
      if (!w.uses[c] && free_class == TagWild::kClasses) free_class = c;
    }
    if (free_class < TagWild::kClasses) {
      w.masks[free_class] = r.mask;
      w.uses[free_class]++;
      r.mask_class = static_cast<uint8_t>(free_class);
    }
  }
  auto [head, tail] = recv_chain(m, r);
  list_append(m.tags.recvs, *head, *tail, i, &TagRecv::prev, &TagRecv::next);
}

void recv_unlink(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  auto [head, tail] = recv_chain(m, r);
  list_remove(m.tags.recvs, *head, *tail, i, &TagRecv::prev, &TagRecv::next);
  if (r.mask_class != TagWild::kNoClass) {
    wild_of(m, owner_of(r)).uses[r.mask_class]--;
    r.mask_class = TagWild::kNoClass;
  }
}

// An unexpected message is in three bucket chains (by source and tag, by
// tag, by source) and in its endpoint's arrival list, all in arrival
// order, so the first match in a chain is the oldest of its kind.
// Calls f(head, tail, prev, next) for each list that holds g.
template <typename F>
void for_each_msg_list(Impl& m, const TagMsg& g, F f) {
  const uint32_t src = g.src & RHN_WIRE_QPN_MASK;
  auto& exact =
      m.tags.msg_buckets[bucket_of(m.tags, g.qpn, g.node, src, g.tag)];
  auto& by_tag =
      m.tags
          .msg_tag_buckets[bucket_of(m.tags, g.qpn, kAnyNode, kAnyQpn, g.tag)];
  auto& by_source =
      m.tags.msg_src_buckets[bucket_of(m.tags, g.qpn, g.node, src, 0)];
  TagEndpoint& ep = m.tags.endpoints[g.qpn];
  f(exact[0], exact[1], &TagMsg::hprev, &TagMsg::hnext);
  f(by_tag[0], by_tag[1], &TagMsg::tprev, &TagMsg::tnext);
  f(by_source[0], by_source[1], &TagMsg::sprev, &TagMsg::snext);
  f(ep.unx_head, ep.unx_tail, &TagMsg::lprev, &TagMsg::lnext);
}

}  // namespace

void unpost(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  if (r.state != TagRecvState::kPosted) return;
  recv_unlink(m, i);
  r.state = TagRecvState::kMatched;
  m.tags.posted--;
  m.tags.room_freed = true;
  m.shares.give(r.context, kResTagRecvs);
}

void recv_free(Impl& m, uint32_t i) {
  unpost(m, i);
  TagRecv& r = m.tags.recvs[i];
  const uint16_t gen = static_cast<uint16_t>(r.gen + 1);
  r = TagRecv{};
  r.gen = gen;
  m.tags.free_recvs.push(i);
  m.tags.room_freed = true;
}

bool room_to_post(const Impl& m, uint32_t context) {
  return !m.tags.free_recvs.empty() && m.tags.posted < m.cfg.tag.recvs &&
         m.shares.room(context, kResTagRecvs);
}

uint32_t take_entry(Impl& m, const TagRecv& r) {
  const uint32_t i = m.tags.free_recvs.front();
  m.tags.free_recvs.pop();
  TagRecv& e = m.tags.recvs[i];
  const uint16_t gen = e.gen;
  e = r;
  e.gen = gen;
  e.state = TagRecvState::kMatched;
  return i;
}

void post(Impl& m, uint32_t i) {
  TagRecv& r = m.tags.recvs[i];
  r.state = TagRecvState::kPosted;
  m.tags.posted++;
  m.shares.charge(r.context, kResTagRecvs);
  recv_link(m, i);
}

namespace {

// The older of two posted receives of one endpoint (kNone: none).
uint32_t older(const Impl& m, uint32_t a, uint32_t b) {
  if (a == kNone) return b;
  if (b == kNone) return a;
  return int32_t(uint32_t(m.tags.recvs[a].seq - m.tags.recvs[b].seq)) < 0 ? a
                                                                          : b;
}

// The first receive of a chain that takes the message: chains are in
// posting order, so it is the oldest of its kind.
template <typename Takes>
uint32_t first_in(const Impl& m, uint32_t i, Takes takes) {
  for (; i != kNone; i = m.tags.recvs[i].next)
    if (takes(m.tags.recvs[i])) return i;
  return kNone;
}

}  // namespace

// The first match of each kind, then the oldest of those.
uint32_t match_posted(Impl& m, uint32_t owner, uint16_t node, uint32_t src_qpn,
                      uint64_t tag) {
  const auto& buckets = m.tags.recv_buckets;
  const uint32_t exact = first_in(
      m, buckets[bucket_of(m.tags, owner, node, src_qpn, tag)][0],
      [&](const TagRecv& r) {
        return index_of(r) == kBySourceAndTag && owner_of(r) == owner &&
               r.src_node == node && r.src_qpn == src_qpn && r.tag == tag;
      });
  const uint32_t by_tag = first_in(
      m, buckets[bucket_of(m.tags, owner, kAnyNode, kAnyQpn, tag)][0],
      [&](const TagRecv& r) {
        return index_of(r) == kByTag && owner_of(r) == owner && r.tag == tag;
      });
  const uint32_t by_source =
      first_in(m, buckets[bucket_of(m.tags, owner, node, src_qpn, 0)][0],
               [&](const TagRecv& r) {
                 return index_of(r) == kBySource && owner_of(r) == owner &&
                        r.src_node == node && r.src_qpn == src_qpn &&
                        tag_matches(r, tag);
               });
  // Any source with a masked tag: one chain per mask in use, then the
  // receives whose masks found no class.
  const TagWild& w = wild_of(m, owner);
  uint32_t masked = kNone;
  for (uint32_t c = 0; c < TagWild::kClasses; c++) {
    if (!w.uses[c]) continue;
    masked = older(
        m, masked,
        first_in(m, buckets[class_bucket(m, owner, c, tag & w.masks[c])][0],
                 [&](const TagRecv& r) {
                   return index_of(r) == kInList && r.mask_class == c &&
                          owner_of(r) == owner && tag_matches(r, tag);
                 }));
  }
  const uint32_t listed = first_in(m, w.head, [&](const TagRecv& r) {
    return source_matches(r, node, src_qpn) && tag_matches(r, tag);
  });
  return older(m, older(m, exact, by_tag),
               older(m, by_source, older(m, masked, listed)));
}

// The oldest unexpected message of the endpoint that `r` takes: the first
// match in the chain of what `r` fixes (any source and a masked tag: the
// arrival list).
uint32_t match_unexpected(Impl& m, const TagRecv& r) {
  auto first = [&](uint32_t i, uint32_t TagMsg::*next) {
    for (; i != kNone; i = m.tags.msgs[i].*next) {
      const TagMsg& g = m.tags.msgs[i];
      if (g.qpn == r.qpn &&
          source_matches(r, g.node, g.src & RHN_WIRE_QPN_MASK) &&
          tag_matches(r, g.tag))
        return i;
    }
    return kNone;
  };
  switch (index_of(r)) {
    case kBySourceAndTag:
      return first(m.tags.msg_buckets[bucket_of(m.tags, r.qpn, r.src_node,
                                                r.src_qpn, r.tag)][0],
                   &TagMsg::hnext);
    case kByTag:
      return first(m.tags.msg_tag_buckets[bucket_of(m.tags, r.qpn, kAnyNode,
                                                    kAnyQpn, r.tag)][0],
                   &TagMsg::tnext);
    case kBySource:
      return first(m.tags.msg_src_buckets[bucket_of(m.tags, r.qpn, r.src_node,
                                                    r.src_qpn, 0)][0],
                   &TagMsg::snext);
    default:
      return first(m.tags.endpoints[r.qpn].unx_head, &TagMsg::lnext);
  }
}

void msg_link(Impl& m, uint32_t i) {
  for_each_msg_list(m, m.tags.msgs[i],
                    [&](uint32_t& head, uint32_t& tail, auto prev, auto next) {
                      list_append(m.tags.msgs, head, tail, i, prev, next);
                    });
}

void msg_unlink(Impl& m, uint32_t i) {
  for_each_msg_list(m, m.tags.msgs[i],
                    [&](uint32_t& head, uint32_t& tail, auto prev, auto next) {
                      list_remove(m.tags.msgs, head, tail, i, prev, next);
                    });
}

void msg_free(Impl& m, uint32_t i) {
  TagMsg& g = m.tags.msgs[i];
  if (g.used) m.shares.give(g.context, kResTagMsgs);
  g = TagMsg{};
  m.tags.free_msgs.push(i);
}

}  // namespace matching

}  // namespace rhinet::fw
