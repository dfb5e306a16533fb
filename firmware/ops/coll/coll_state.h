// SPDX-License-Identifier: BSD-2-Clause
// Collectives' tables (ops/coll).
#pragma once

#include "core/bounded.h"
#include "core/card_memory.h"
#include "core/freestanding.h"
#include "engine/shares.h"
#include "rhinet/hw.h"
#include "transport/peer.h"

namespace rhinet::fw {

// What it charges to contexts and accounts (engine/shares.h).
constexpr Res kResCollComms =
    family_res<FwOwner::kColl, 0>();  // collective communicators

// A rank of a communicator: its node and endpoint.
struct CollMember {
  uint16_t node = 0;
  uint32_t qpn = 0;
};

// One of the communicator's ranks on this NIC, and the WQE it posted for
// the collective in progress.
struct CollLocal {
  uint32_t qpn = kNone;
  // Its endpoint's incarnation when the communicator was made (0: none
  // had the number): a later endpoint of that number is not this rank.
  uint32_t qp_gen = 0;
  uint16_t rank = 0;
  uint32_t posts = 0;   // collectives it posted so far (the next one's seq)
  bool posted = false;  // its WQE of the collective `seq` is here
  uint32_t entry = 0;   // that WQE's Inflight index
  uint32_t msn = 0;
  uint32_t pdn = 0;
  rhn_sge send{}, recv{};
};

// A segment buffer (combining in place): the first contribution fills it, later
// ones combine into it; it is freed when its result is written and every
// message about it is acknowledged.
struct CollSlot {
  bool used = false;
  uint32_t seg = 0;
  uint32_t len = 0;
  bool filled = false;       // holds a contribution
  bool local_in = false;     // the local ranks' operands are in
  bool up_sent = false;      // complete below this node: on its way up
  uint32_t children_in = 0;  // bit j: child j's partial is in
  bool down_in = false;      // the segment's result (or release) is here
  bool written = false;      // results written to the local ranks
  // Messages about the segment: bit kCollParent the partial towards the
  // root, bit j the result to child j. todo: still to hand to fwmsg/;
  // busy: handed, not acknowledged yet.
  uint32_t todo = 0, busy = 0;
  uint64_t retry_at = 0;  // a NOT_READY destination: not before then
  uint8_t retries = 0;
  // In-switch mode: the partial (bit kCollParent of todo) goes to the
  // switch until its DOWN is here; UPs sent since its last answer, the
  // last one's time.
  uint8_t unanswered = 0;
  uint64_t sent_at = 0;
  uint32_t buf = 0;  // index of its buffer (RHN_WIRE_MTU bytes)
};
constexpr uint32_t kCollParent = 31;
// How long what came about a communicator this NIC has not met (an ABORT,
// a refused sender to tell READY) is remembered for it.
constexpr uint64_t kCollRememberNs = 2'000'000'000;

using CollNodeMask = Array<uint64_t, RHN_COLL_MAX_RANKS / 64>;

// A communicator's life on this NIC: from the first post of one of its
// local ranks until the last of them is gone (and its ABORTs are
// acknowledged). A key can have one live communicator here at a time; one
// whose local ranks are all gone (kept only to send its ABORTs) no longer
// answers for the key.
struct CollComm {
  bool valid = false;
  uint32_t key = 0;      // RHN_AREA_KEY(group, id)
  uint32_t context = 0;  // its owner: the context that made it (charged)
  // rhn_coll_members_hash of its list: which life of the key it is. Its
  // firmware messages carry it; those of another life are stale here.
  uint32_t life = 0;
  uint16_t nranks = 0;
  uint16_t nnodes = 0;
  uint16_t self = 0;  // this NIC's node index
  uint8_t nlocal = 0;
  uint32_t members = 0;  // first of its nranks entries in CollTables::members
  uint32_t nodes = 0;    // first of its nnodes node IDs in CollTables::nodes
  CollLocal local[RHN_COLL_MAX_LOCAL];
  uint32_t gen = 0;  // bumps at every collective's start and end
  // Bumps each time the slot holds a new communicator: acknowledgements
  // of an earlier one's ABORTs do not count for it.
  uint32_t incarnation = 0;
  // The collective in progress (active) or the next one (seq).
  uint32_t seq = 0;
  bool active = false;
  // A local rank's endpoint went: nothing on it completes again.
  bool broken = false;
  uint32_t probing = 0;  // liveness probes out
  uint8_t op = 0, reduce = 0, type = 0;
  uint8_t radix = 0;        // RHN_COLL_RADIX_SWITCH: the switch reduces
  uint16_t root = 0;        // the root rank's node index
  uint32_t nodes_hash = 0;  // rhn_coll_nodes_hash, for the switch
  uint32_t probe_next = 0;  // in-switch mode: the next node index to ping
  uint16_t root_rank = 0;
  uint32_t length = 0, seg = 0, nsegs = 0;
  uint32_t base = 0;   // the oldest segment not finished here
  uint8_t posted = 0;  // local ranks whose WQE is here
  uint8_t failed = RHN_SYN_NONE;
  // An ABORT that came before this node started that collective.
  bool abort_early = false;
  uint32_t abort_seq = 0;
  uint8_t abort_syn = RHN_SYN_NONE;
  // A member endpoint elsewhere is gone (an ABORT with RHN_FW_COLL_F_GONE):
  // every collective from lost_from on fails here at once. The nodes that
  // said so need no ABORT from here.
  bool lost = false;
  uint32_t lost_from = 0;
  CollNodeMask gone{};
  // ABORTs still to send (by node index) after a failure here, and those
  // sent and not yet acknowledged.
  uint32_t abort_next = 0;
  bool aborting = false;
  uint32_t aborts_out = 0;
  // Nodes (by index) whose segments this NIC refused with NOT_READY: told
  // READY when it starts the collective / when its window moves on.
  CollNodeMask tell_start{};
  CollNodeMask tell_window{};
  uint64_t last_progress = 0;
  uint32_t slots = 0;  // first of its coll_window slots
  WaitList waiters;    // endpoints whose next collective waits for this one
};

struct CollTables {
  Table<CollComm> comms;
  Table<CollMember> members;  // RHN_COLL_MAX_RANKS per communicator
  Table<uint16_t> nodes;      // RHN_COLL_MAX_RANKS per communicator
  Table<CollSlot> slots;      // coll_window per communicator
  Table<uint8_t> buffers;     // RHN_WIRE_MTU per slot
  Table<uint8_t> scratch;     // one segment, to combine from
  Table<uint8_t> frame;       // an RHN_PKT_COLL frame to send
  // ABORTs for communicators no local rank has posted on yet: applied
  // when one does, to that life of the key only, within kCollRememberNs
  // (oldest overwritten first).
  struct EarlyAbort {
    bool valid = false;
    uint32_t key = 0, seq = 0;
    uint32_t life = 0;  // the sender's rhn_coll_members_hash
    uint16_t node = 0;  // the sender
    uint8_t syndrome = 0;
    bool gone = false;  // RHN_FW_COLL_F_GONE
    uint64_t at = 0;    // when it came
  };
  Array<EarlyAbort, 16> early_aborts{};
  uint32_t early_next = 0;
  // Nodes refused NOT_READY for a communicator no local rank has posted
  // on yet: told READY when one does, within kCollRememberNs (oldest
  // overwritten first).
  struct EarlyRefusal {
    bool valid = false;
    uint32_t key = 0;
    uint16_t node = 0;
    uint64_t at = 0;
  };
  Array<EarlyRefusal, 32> early_refused{};
  uint32_t refused_next = 0;
  uint32_t used = 0;
  // The round trip to the switch (in-switch mode), measured as the
  // channels measure theirs: an UP's timeout follows it.
  Peer switch_path;
  uint64_t next_deadline = UINT64_MAX;
};

}  // namespace rhinet::fw
