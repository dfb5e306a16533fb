// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// rhinetdv, the direct verbs (infiniband/rhinetdv.h), inside the provider.
// The endpoint is a NIC endpoint QP (IBV_QPT_DRIVER,
// RHINET_QP_DRIVER_TYPE_ENDPOINT) with a CQ of its own. Every operation
// family (dv_xfer.cpp, dv_tag.cpp, dv_pindown.cpp, dv_mcast.cpp,
// dv_share.cpp, dv_sync.cpp, dv_atomic.cpp, dv_coll.cpp) checks its
// attributes, builds its WQE and posts it through post_wqe_locked, which
// hands it to the send queue's one writer (sq.cpp). Completions come from
// the endpoint's CQ through the one CQE decoder (completion.cpp) and are
// turned into rhinetdv completions in dv_poll.cpp.
//
// SQ slots are handed back only by completions. So that a process using
// status words alone never fills its SQ, every WQE that would leave half
// the ring without a signaled WQE behind it is signaled by the library;
// such completions are consumed here and never reach the caller.
#pragma once

#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "provider.h"

#define RHINETDV_EXPORT extern "C" __attribute__((visibility("default")))

namespace rhinet {

// An irecv the NIC has not completed yet, by its RQ index.
struct IrecvSlot {
  uint64_t wr_id;
  uint32_t index;  // its full RQ index (the caller's handle)
  bool busy;
};

struct Endpoint {
  rhinetdv_endpoint pub;  // first: the caller's handle
  std::mutex lock;        // posting and polling; before the CQ's and SQ's
  ibv_comp_channel* channel = nullptr;  // the sleeping waits use it
  ibv_cq* cq = nullptr;
  // Signals counted per area key (group << 16 | area).
  std::unordered_map<uint32_t, uint64_t> signals;
  // Watches that fired (RHN_CQE_OP_WATCH), counted per area key.
  std::unordered_map<uint32_t, uint64_t> watches;
  ibv_qp* ibqp = nullptr;
  Qp* qp = nullptr;
  uint32_t max_inline = 0;
  uint32_t last_signaled = 0;  // SQ index after the last signaled WQE
  // Completions taken from the CQ while making room, not yet returned.
  rhinetdv_completion_ex* pending = nullptr;
  uint32_t pending_head = 0, pending_count = 0, pending_cap = 0;
  // Irecvs (tag RQ): by RQ index modulo irecv_cap; the CQE names the low
  // 16 bits of the index, so irecv_cap divides 65536.
  IrecvSlot* irecvs = nullptr;
  uint32_t irecv_cap = 0, max_irecv = 0, irecv_outstanding = 0;
  // rhinetdv_iprobe: the probe in flight and what it found.
  uint64_t probe_wr_id = 0, probe_seq = 0;
  bool probe_done = false;
  rhinetdv_tag_info probe_info{};
  // rhinetdv_set_trigger: what the next operation posted gets.
  uint16_t trig_xflags = 0;
  rhn_wqe_trigger trig{};
};

inline Endpoint* to_ep(rhinetdv_endpoint* ep) {
  return reinterpret_cast<Endpoint*>(ep);
}

// Every operation's attributes begin with struct rhinetdv_op_common
// (comp_mask, wr_id); PUSH/PULL's rhinetdv_xfer_ex too, its wr_id being
// base.wr_id. Families read the block through this.
template <typename Attr>
const rhinetdv_op_common& common_of(const Attr& a) {
  static_assert(
      offsetof(Attr, comp_mask) == offsetof(rhinetdv_op_common, comp_mask),
      "rhinetdv attributes begin with rhinetdv_op_common");
  if constexpr (requires { a.wr_id; })
    static_assert(offsetof(Attr, wr_id) == offsetof(rhinetdv_op_common, wr_id),
                  "rhinetdv attributes begin with rhinetdv_op_common");
  else
    static_assert(
        offsetof(Attr, base.wr_id) == offsetof(rhinetdv_op_common, wr_id),
        "rhinetdv attributes begin with rhinetdv_op_common");
  return *reinterpret_cast<const rhinetdv_op_common*>(&a);
}

// The caller's struct as this library knows it: a shorter (older) one
// is padded with zeros, a longer one must have zeros beyond.
bool extend(const void* in, size_t inlen, void* out, size_t outlen);

// The entry of every operation on an endpoint: @attr of @inlen bytes taken
// into @out (extend), the endpoint one of this provider's; 0 or errno.
template <typename Attr>
int take_attr(const rhinetdv_endpoint* pub, const Attr* attr, size_t inlen,
              Attr* out) {
  (void)common_of(*out);  // the layout check
  if (!pub || !extend(attr, inlen, out, sizeof(*out))) return EINVAL;
  if (!is_rhinet_context(pub->context)) return EOPNOTSUPP;
  return 0;
}

// A direct-verbs send WQE being built with the contract's builders
// (hw_wqe.h): the base slot through h, data slots counted in data, the
// slots that end it (partial-transfer descriptor, a family's own slot)
// named in tail; finish() lays them out.
struct DvWqe {
  alignas(8) uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE] = {};
  rhn_send_wqe* h;
  uint32_t data = 0;
  rhn_wqe_xfer xfer{};
  rhn_wqe_tail tail{};

  explicit DvWqe(uint8_t opcode) : h(rhn_wqe_start(buf, opcode, 0, 0)) {}
  // The descriptor of a partial transfer in @mode, to be filled in.
  rhn_wqe_xfer* partial(uint32_t mode) {
    tail.xfer_mode = static_cast<uint8_t>(mode);
    tail.xfer = &xfer;
    return &xfer;
  }
};

// Lays out @w and writes it into the endpoint's SQ through the send
// queue's writer, then kicks; the endpoint's lock is held. @wanted: the
// caller gets its completion. EINVAL if the WQE does not fit.
int post_wqe_locked(Endpoint* ep, DvWqe& w, uint64_t wr_id, bool wanted);

// dv_trigger.cpp: @t (of @inlen bytes) for a WQE of a QP of @context: its
// RHN_WQE_X_* flags and trigger slot; 0 or errno.
int wqe_trigger_of(ibv_context* context, const rhinetdv_wr_trigger* t,
                   size_t inlen, uint16_t* xflags, rhn_wqe_trigger* slot);

// The operation table's word on @opcode: the NIC announces it (its
// capability bit), it takes transfer mode @mode.
bool op_supported(const Context* ctx, uint8_t opcode);
bool mode_taken(uint8_t opcode, uint32_t mode);
// Takes CQEs until @n are to be reported or the CQ is empty; those to
// report go to @out, or to the pending queue when @out is null. Returns how
// many were reported, or -1.
int drain(Endpoint* ep, int n, rhinetdv_completion_ex* out);
uint64_t now_ms();
// Watches of area key @key that fired since the endpoint was made, after
// taking the CQ's completions (ep->lock held).
uint64_t watch_count_locked(Endpoint* ep, uint32_t key);
// Sleeps on the endpoint's completion events until @count_locked (called
// with ep->lock held) says @key's count reached @count, or @timeout_ms
// (-1: none) passed: 0, ETIMEDOUT or an errno (rhinetdv_wait_signal,
// rhinetdv_wait_watch).
int wait_count(Endpoint* ep, uint64_t (*count_locked)(Endpoint*, uint32_t),
               uint32_t key, uint64_t count, int timeout_ms);

// dv_area.cpp: whether the process may declare on-demand areas and post
// pd_req and pd_release; whether it is a member of @group.
bool pins_on_demand(const Context* ctx);
bool in_groups(const Context* ctx, uint32_t group);

// dv_xfer.cpp: a status word the NIC can write; the data of a PUSH-like
// WQE (inline bytes or one SGE) and its status word, returning the
// extension slots inline bytes take.
bool status_word_ok(uint32_t flags, const uint64_t* word);
uint32_t put_data(uint8_t* w, const void* addr, uint32_t length, uint32_t lkey,
                  uint32_t flags, uint64_t* status_word, uint32_t status_lkey);
// The status-word part of a WQE without data.
void put_status_word(rhn_send_wqe* h, bool on, uint64_t* word, uint32_t lkey);

// dv_mcast.cpp: a multicast (to a list, to a switch group, or a shared
// region's update; @opcode says which).
int post_mcast(Endpoint* ep, const rhinetdv_mcast_attr& a, uint8_t opcode,
               uint16_t switch_group = 0);

// A multicast's work request from the attributes of a call that posts one
// without a destination list (a switch group's, a shared region's
// update): the fields they share with rhinetdv_mcast_attr, the list's left
// empty. A shared-region update has no signal.
template <typename Attr>
rhinetdv_mcast_attr mcast_request_of(const Attr& s) {
  rhinetdv_mcast_attr a{};
  a.comp_mask = s.comp_mask;
  a.wr_id = s.wr_id;
  a.addr = s.addr;
  a.length = s.length;
  a.lkey = s.lkey;
  a.group_id = s.group_id;
  a.area_id = s.area_id;
  a.offset = s.offset;
  a.flags = s.flags;
  a.status_lkey = s.status_lkey;
  a.status_word = s.status_word;
  if constexpr (requires { s.signal; }) a.signal = s.signal;
  a.mode = s.mode;
  a.block = s.block;
  a.count = s.count;
  a.local_stride = s.local_stride;
  a.remote_stride = s.remote_stride;
  a.bitmap = s.bitmap;
  a.bitmap_lkey = s.bitmap_lkey;
  a.twin = s.twin;
  a.twin_offset = s.twin_offset;
  return a;
}

// The application's queue buffer of the direct verbs (rhinetdv_create_qp,
// _cq, _endpoint), or EINVAL (no mapping, no descriptor, reserved set).
int queue_buf_of(const rhinetdv_queue_buf& b, QueueBuf* out);

}  // namespace rhinet
