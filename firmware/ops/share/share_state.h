// SPDX-License-Identifier: BSD-2-Clause
// Shared regions' tables (ops/share).
#pragma once

#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResShareRegions =
    family_res<FwOwner::kShare, 0>();  // shared-region records

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
  Table<ShareRegion> regions;
  uint32_t quota = 0;  // records one context may hold (Impl::shares)
  uint32_t used = 0;
  uint32_t joins = 0;  // joins waiting anywhere (newcomer or home)
  uint64_t next_probe = UINT64_MAX;
};

}  // namespace rhinet::fw
