// SPDX-License-Identifier: BSD-2-Clause
// Simultaneous multicast's tables (ops/mcast_switch).
#pragma once

#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResMcastFrames =
    family_res<FwOwner::kMcastSwitch,
               0>();  // simultaneous-multicast packet memory

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

struct McastFrame {
  uint16_t len = 0;
  uint32_t context = kNone;  // charged to this context
  alignas(64) uint8_t frame[RHN_MAX_FRAME];
};

struct McastTables {
  Table<McastGroup> groups;
  Table<McastFrame> frames;
  Fifo<uint32_t> free_frames;
  uint32_t context_quota = 0;         // frames one context may hold
  WaitList frame_waiters;             // QPs waiting for packet memory
  uint64_t next_repair = UINT64_MAX;  // earliest of the groups'
};

}  // namespace rhinet::fw
