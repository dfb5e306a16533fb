// SPDX-License-Identifier: BSD-2-Clause
// Firmware-originated messages: traffic the NIC itself starts, not a WQE
// of any send queue (pin-down replies, directory updates, lock and barrier
// messages, collective segments; today the node probe). A bounded table
// tracks each one from fw_post() until the channel acknowledges it, the
// peer NIC refuses it, or the node is declared dead; then its owner is
// told. Sending is a work class of its own in poll(), so user queues
// cannot starve it, and a message for a blocked node waits without
// holding up the others.
#include "core/freestanding.h"
#include "engine/engine_impl.h"
#include "ops/family.h"

namespace rhinet::fw {
namespace {

constexpr uint32_t kFwQpn = RHN_WIRE_QPN_FIRMWARE;

uint32_t handle_tag(uint32_t handle, uint8_t gen) {
  return handle | (uint32_t{gen} << 16);
}

// The engine's own messages: a node probe's outcome goes to the driver.
void probe_done(Engine::Impl& m, uint64_t cookie, uint8_t syndrome) {
  m.async_event(RHN_EQE_PROBE_DONE, static_cast<uint32_t>(cookie), syndrome);
}

}  // namespace

void Engine::Impl::fw_reset() {
  free_fw_msgs.clear();
  fw_queue.clear();
  for (uint32_t h = 0; h < cfg.fw_messages; h++) {
    fw_msgs[h].state = FwState::kFree;  // gen survives: late answers
    free_fw_msgs.push(h);
  }
  fw_family_used.fill(0);
  fw_family_limit = max<uint32_t>(
      1, uint32_t(uint64_t{cfg.fw_messages} * cfg.fw_family_share / 256));
  fw_reserve = min<uint32_t>(
      cfg.fw_messages - 1,
      uint32_t(uint64_t{cfg.fw_messages} * cfg.fw_kernel_share / 256));
  // A user's messages: its account's share of what the reserve leaves.
  shares.set_limit(Res::kFwMessages, cfg.fw_messages - fw_reserve,
                   cfg.fw_messages - fw_reserve, cfg.account_share);
}

bool Engine::Impl::fw_room(FwOwner owner, uint32_t context) const {
  if (free_fw_msgs.empty() ||
      fw_family_used[static_cast<uint32_t>(owner)] >= fw_family_limit)
    return false;
  if (shares.account_of(context) == 0) return true;  // the kernel's, probes
  return free_fw_msgs.size() > fw_reserve &&
         shares.room(context, Res::kFwMessages);
}

uint32_t Engine::Impl::fw_post(uint16_t node, uint32_t kind,
                               Span<const uint8_t> payload, FwOwner owner,
                               uint64_t cookie, uint32_t context) {
  if (node >= cfg.max_nodes || payload.size() > RHN_FW_MSG_MAX ||
      !fw_room(owner, context))
    return kNone;
  const uint32_t h = take_fw_message(node, kind, 0, 0, 0, payload.size(), owner,
                                     cookie, context, FwState::kQueued);
  FwMessage& f = fw_msgs[h];
  if (!payload.empty()) memcpy(f.payload, payload.data(), payload.size());
  fw_queue.push(h);
  return h;
}

uint32_t Engine::Impl::take_fw_message(uint16_t node, uint32_t kind,
                                       uint32_t imm, uint64_t addr,
                                       uint32_t aux, size_t len, FwOwner owner,
                                       uint64_t cookie, uint32_t context,
                                       FwState state) {
  const uint32_t h = free_fw_msgs.front();
  free_fw_msgs.pop();
  FwMessage& f = fw_msgs[h];
  f.state = state;
  f.gen++;
  f.owner = owner;
  f.context = context;
  fw_family_used[static_cast<uint32_t>(owner)]++;
  shares.charge(context, Res::kFwMessages);
  f.node = node;
  f.kind = kind;
  f.cookie = cookie;
  f.len = static_cast<uint16_t>(len);
  f.imm = imm;
  f.addr = addr;
  f.aux = aux;
  return h;
}

namespace {

rhn_op_hdr fw_header(const FwMessage& f, uint32_t handle) {
  rhn_op_hdr op{};
  op.opcode = RHN_WOP_FW;
  op.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
  op.dst_qpn = kFwQpn;
  op.src_qpn = kFwQpn;
  op.msn = handle_tag(handle, f.gen);
  op.rkey = f.kind;
  op.imm_data = f.imm;
  op.remote_addr = f.addr;
  op.msg_offset = f.aux;
  op.msg_len = f.len;
  return op;
}

}  // namespace

uint32_t Engine::Impl::fw_send_now(uint16_t node, uint32_t kind, uint32_t imm,
                                   uint64_t addr, uint32_t aux,
                                   Span<const uint8_t> payload, FwOwner owner,
                                   uint64_t cookie, uint32_t context) {
  if (node >= cfg.max_nodes || payload.size() > RHN_WIRE_MTU ||
      !fw_room(owner, context) || !room_for_request(peers[node]))
    return kNone;
  const uint32_t h =
      take_fw_message(node, kind, imm, addr, aux, payload.size(), owner, cookie,
                      context, FwState::kInFlight);
  const FwMessage& f = fw_msgs[h];
  const uint32_t slot = begin_data(kNone);
  if (!payload.empty())
    memcpy(slots[slot].frame + RHN_DATA_HDR_LEN, payload.data(),
           payload.size());
  const rhn_op_hdr op = fw_header(f, h);
  commit_data(peers[node], slot, op, f.len, true, kFwQpn, op.msn, true);
  return h;
}

bool Engine::Impl::fw_run(uint32_t budget) {
  bool did = false;
  for (uint32_t n = fw_queue.size(); n && budget; n--) {
    const uint32_t h = fw_queue.front();
    fw_queue.pop();
    FwMessage& f = fw_msgs[h];
    if (f.state != FwState::kQueued) continue;  // failed meanwhile
    Peer& p = peers[f.node];
    // Like a request: the reserve stays for answers, the window applies.
    if (!room_for_request(p)) {
      fw_queue.push(h);  // its node is busy; the others go ahead
      continue;
    }
    const uint32_t slot = begin_data(kNone);
    if (f.len) memcpy(slots[slot].frame + RHN_DATA_HDR_LEN, f.payload, f.len);
    const rhn_op_hdr op = fw_header(f, h);
    commit_data(p, slot, op, f.len, true, kFwQpn, op.msn, true);
    f.state = FwState::kInFlight;
    did = true;
    budget--;
  }
  return did;
}

void Engine::Impl::fw_finish(uint32_t h, uint8_t syndrome) {
  FwMessage& f = fw_msgs[h];
  const FwOwner owner = f.owner;
  const uint64_t cookie = f.cookie;
  f.state = FwState::kFree;
  free_fw_msgs.push(h);
  fw_family_used[static_cast<uint32_t>(owner)]--;
  shares.give(f.context, Res::kFwMessages);
  if (owner == FwOwner::kProbe) {
    probe_done(*this, cookie, syndrome);
    return;
  }
  const FamilyModule& family = family_module(owner);
  if (family.on_fw_done) family.on_fw_done(*this, cookie, syndrome);
}

void Engine::Impl::fw_acked(uint32_t tag) {
  const uint32_t h = tag & 0xffff;
  if (h >= cfg.fw_messages) return;
  FwMessage& f = fw_msgs[h];
  if (f.state != FwState::kInFlight || f.gen != (tag >> 16)) return;
  fw_finish(h, RHN_SYN_NONE);
}

void Engine::Impl::fw_answer(Peer&, const Packet& pkt) {
  const uint32_t h = pkt.op.msn & 0xffff;
  if (pkt.op.opcode != RHN_WOP_NAK || h >= cfg.fw_messages) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  FwMessage& f = fw_msgs[h];
  if (f.state != FwState::kInFlight || f.gen != (pkt.op.msn >> 16)) return;
  fw_finish(h, pkt.op.syndrome ? pkt.op.syndrome : uint8_t{RHN_SYN_BAD_OPCODE});
}

void Engine::Impl::fw_node_failed(uint16_t node) {
  for (uint32_t h = 0; h < cfg.fw_messages; h++) {
    const FwMessage& f = fw_msgs[h];
    if (f.state != FwState::kFree && f.node == node)
      fw_finish(h, RHN_SYN_RETRY_EXCEEDED);
  }
}

void Engine::Impl::fw_receive(Peer& p, const Packet& pkt) {
  const rhn_op_hdr& op = pkt.op;
  // The family receiving the kind says how much payload it takes.
  const FwKind* kind = nullptr;
  const FamilyModule* family = fw_receiver(*this, op.rkey, &kind);
  if ((op.flags & (RHN_WOP_F_FIRST | RHN_WOP_F_LAST)) !=
          (RHN_WOP_F_FIRST | RHN_WOP_F_LAST) ||
      pkt.payload.size() > (family ? kind->max_payload : RHN_FW_MSG_MAX)) {
    counters.add(RHN_CNT_MALFORMED_PACKETS);
    return;
  }
  if (family) {
    family->on_fw_message(*this, p, pkt);
    return;
  }
  if (op.rkey == RHN_FW_PING) return;  // the channel's ACK is the answer
  counters.add(RHN_CNT_REMOTE_INVALID_REQUESTS);
  respond(p, RHN_WOP_NAK, RHN_SYN_BAD_OPCODE, op, {});
}

}  // namespace rhinet::fw
