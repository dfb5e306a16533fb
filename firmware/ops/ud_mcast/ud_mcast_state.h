// SPDX-License-Identifier: BSD-2-Clause
// Verbs UD multicast's tables (ops/ud_mcast).
#pragma once

#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResMcastAttaches =
    family_res<FwOwner::kUdMcast, 0>();  // verbs UD multicast attach entries

// One entry of the attach table: QP `qpn` receives datagrams to `mgid`.
struct UdAttach {
  bool used = false;
  uint16_t group = 0;  // rhn_mgid_group(mgid)
  uint32_t qpn = 0;
  uint32_t context = 0;  // charged to this context
  uint8_t mgid[16] = {};
};

// This node's switch port in one UD group: wanted while some attach entry
// names the group; sent again until the switch's answer says so.
struct UdJoin {
  uint16_t refs = 0;  // attach entries on the group
  bool want = false;
  bool settled = true;  // the switch's last answer matched `want`
  uint8_t backoff = 0;
  uint64_t resend_at = 0;
};

struct UdMcastTables {
  Table<UdAttach> attaches;
  uint32_t used = 0;
  uint32_t context_quota = 0;  // entries one context may hold
  Table<UdJoin> joins;         // by group - RHN_NODE_MCAST_UD_FIRST
  uint32_t unsettled = 0;
  uint32_t wanted = 0;  // groups with want set
  uint32_t cookie = 0;
  uint64_t next_resend = UINT64_MAX;
  uint64_t next_refresh = UINT64_MAX;
};

}  // namespace rhinet::fw
