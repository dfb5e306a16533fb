// SPDX-License-Identifier: BSD-2-Clause
// Every family's tables (placed at power-on by each module's place hook),
// held together: the engine's state is the shell's
// (engine/engine_impl.h) and this. Each family's state is defined in its
// folder; a family added with tables of its own adds them here.
#pragma once

#include "ops/coll/coll_state.h"
#include "ops/mcast_switch/mcast_switch_state.h"
#include "ops/pindown/pin_state.h"
#include "ops/share/share_state.h"
#include "ops/sync/sync_state.h"
#include "ops/tag/tag_state.h"
#include "ops/trigger/trigger_state.h"
#include "ops/ud_mcast/ud_mcast_state.h"
#include "rhinet/fw/engine.h"

namespace rhinet::fw {

struct FamilyStates {
  TagTables tags;            // ops/tag, ops/tm
  PinTables pins;            // ops/pindown
  SyncTables sync;           // ops/sync
  McastTables switch_mcast;  // ops/mcast_switch
  ShareTables share;         // ops/share
  UdMcastTables ud_mcast;    // ops/ud_mcast
  CollTables coll;           // ops/coll
  TriggerTables trig;        // ops/trigger
};

}  // namespace rhinet::fw
