// SPDX-License-Identifier: BSD-2-Clause
// The tables of the families: which operation family a WQE opcode and a
// wire opcode belong to, built from the one list of what each family
// claims (its folder's <family>.h), with the rest of what the engine knows
// of a WQE opcode taken from its row in the operation table (hw_ops.h);
// and the list of family modules every stage loops over.
#include "core/freestanding.h"
#include "ops/atomic/atomic.h"
#include "ops/coll/coll.h"
#include "ops/family.h"
#include "ops/mcast/mcast.h"
#include "ops/mcast_switch/mcast_switch.h"
#include "ops/pindown/pindown.h"
#include "ops/raw/raw.h"
#include "ops/rdma/rdma.h"
#include "ops/send/send.h"
#include "ops/share/share.h"
#include "ops/sync/sync.h"
#include "ops/tag/tag.h"
#include "ops/tm/tm.h"
#include "ops/trigger/trigger.h"
#include "ops/ud_mcast/ud_mcast.h"
#include "ops/watch/watch.h"
#include "ops/window/window.h"
#ifdef RHN_TEST_FAMILY_ECHO
#include "ops/echo/echo.h"  // test builds only: the worked example
#endif

namespace rhinet::fw {
namespace {

// Every family with per-opcode hooks. NOP and IRECV (a receive-queue WQE)
// have none; RHN_WOP_FW and NAKs are the stages' own.
constexpr const OpClaims* kFamilies[] = {
    &kSendClaims,   &kRdmaClaims, &kAtomicClaims,   &kRawClaims,
    &kWindowClaims, &kTagClaims,  &kTagLocalClaims, &kPinClaims,
    &kTmClaims,     &kSyncClaims, &kMcastClaims,    &kMcastSwitchClaims,
    &kShareClaims,  &kCollClaims, &kTriggerClaims,  &kWatchClaims,
#ifdef RHN_TEST_FAMILY_ECHO
    &kEchoClaims,
#endif
};

constexpr size_t kOps = RHN_OP_MAX + 1;  // every enum rhn_op
constexpr size_t kWires = 256;           // every wire opcode (a byte)

// No opcode of either kind is claimed twice, and none the stages handle
// themselves is claimed.
constexpr bool claimed_once() {
  Array<bool, kOps> op{};
  Array<bool, kWires> wire{};
  wire[0] = wire[RHN_WOP_FW] = wire[RHN_WOP_NAK] = true;
  for (const OpClaims* c : kFamilies) {
    for (uint8_t o : c->wqe_ops) {
      if (o >= kOps || op[o]) return false;
      op[o] = true;
    }
    for (const OpcodeList* list : {&c->requests, &c->answers})
      for (uint8_t w : *list) {
        if (wire[w]) return false;
        wire[w] = true;
      }
  }
  return true;
}
static_assert(claimed_once(), "an opcode is claimed twice");

// One OpInfo per row of RHN_OP_TABLE.
constexpr OpInfo row_info(uint32_t wire, uint32_t cqe, uint32_t flags) {
  return {nullptr,
          static_cast<uint8_t>(wire),
          static_cast<uint8_t>(cqe),
          (flags & RHN_OPF_ANSWERED) != 0,
          (flags & RHN_OPF_IMM) != 0,
          (flags & RHN_OPF_INLINE) != 0,
          (flags & RHN_OPF_READ_CTX) != 0,
          (flags & RHN_OPF_ORDERED_RETRY) != 0};
}

constexpr Array<OpInfo, kOps> make_ops() {
  Array<OpInfo, kOps> t{};
#define RHN_OP_INFO_(op, name, wire, cqe, dv, dv_name, flags, modes, ext, cap) \
  t[op] = row_info(wire, cqe, flags);
  RHN_OP_TABLE(RHN_OP_INFO_)
#undef RHN_OP_INFO_
  for (const OpClaims* c : kFamilies)
    for (uint8_t o : c->wqe_ops) t[o].family = c->family;
  return t;
}

constexpr Array<OpInfo, kOps> kOpTable = make_ops();

constexpr Array<WireRoute, kWires> make_wire_routes() {
  Array<WireRoute, kWires> t{};
  // What no family claims keeps the contract's numbering: requests below
  // RHN_WOP_READ_RESP (RHN_WOP_FW among them), answers from there on.
  // Unclaimed: the NIC's own RHN_WOP_FW and every undefined number are
  // requests (the responder refuses what no family takes, BAD_OPCODE, and
  // counts it); NAK is the one answer no family claims.
  for (uint32_t w = 0; w < kWires; w++) t[w] = {nullptr, w != RHN_WOP_NAK};
  for (const OpClaims* c : kFamilies) {
    for (uint8_t w : c->requests) t[w] = {c->family, true};
    for (uint8_t w : c->answers) t[w] = {c->family, false};
  }
  return t;
}

}  // namespace

constinit const Array<WireRoute, kWires> kWireRoutes = make_wire_routes();

const OpInfo& op_info(uint8_t wqe_opcode) {
  static constexpr OpInfo kNoSuchOp{};
  return wqe_opcode < kOps ? kOpTable[wqe_opcode] : kNoSuchOp;
}

}  // namespace rhinet::fw

// ---- The family modules --------------------------------------------------

namespace rhinet::fw {

extern const FamilyModule kTagModule;          // ops/tag
extern const FamilyModule kTmModule;           // ops/tm
extern const FamilyModule kPinModule;          // ops/pindown
extern const FamilyModule kMcastSwitchModule;  // ops/mcast_switch
extern const FamilyModule kUdMcastModule;      // ops/ud_mcast
extern const FamilyModule kSyncModule;         // ops/sync
extern const FamilyModule kShareModule;        // ops/share
extern const FamilyModule kCollModule;         // ops/coll
extern const FamilyModule kTriggerModule;      // ops/trigger

namespace {

// The order is the order of every loop over the families, and it matters:
// - poll(): the turn lists below.
// - A node lost: tag and pindown first (their held receives and requests),
//   then the families whose waits it breaks (sync, share, coll).
// - A QP gone: tag, pindown, sync, share, coll; ud_mcast's attachments
//   end only when the QP is destroyed, after all of them; trigger's parked
//   WQEs complete flushed last.
// - Frames outside the channels: mcast_switch's claim on a DATA frame
//   (its group opcodes) comes before ud_mcast's (a UD group address).
// Each module's `id` is its index here (FwOwner, ops/module_ids.h).
constexpr const FamilyModule* kModules[kFamilyModules] = {
    &kTagModule,         &kTmModule,      &kPinModule,
    &kMcastSwitchModule, &kUdMcastModule, &kSyncModule,
    &kShareModule,       &kCollModule,    &kTriggerModule,
};

// The families' turns in poll(), in order, called directly (poll() runs
// them on every call, so no lookup stands between). Before the firmware
// messages are sent: the turns that post them (mcast_switch's repairs and
// ud_mcast's joins first; then sync, share, coll), so what they post
// leaves in the same poll; tag and then tm after.
using TurnFn = bool (*)(Impl&, uint32_t);
constexpr TurnFn kTurnsBeforeFw[] = {
    [](Impl& m, uint32_t) { return mcast_run(m); },
    [](Impl& m, uint32_t) { return ud_mcast_run(m); },
    sync_run,
    share_run,
    coll_run,
};
constexpr TurnFn kTurnsAfterFw[] = {tag_run, tm_run};

template <size_t N, size_t... I>
bool run_turns(const TurnFn (&turns)[N], Impl& m, uint32_t budget,
               IndexList<I...>) {
  bool did = false;
  ((did |= turns[I](m, budget)), ...);
  return did;
}

}  // namespace

Span<const FamilyModule* const> family_modules() { return kModules; }

const FamilyModule& family_module(FwOwner id) {
  return *kModules[static_cast<uint32_t>(id)];
}

Span<const FrameRoute> frame_routes(const Impl& m) {
  return {m.modules.frames.data(), m.modules.nframes};
}

void modules_place(Impl& m, CardMemory& mem) {
  ModuleIndex& x = m.modules;
  for (const FamilyModule* f : kModules) {
    for (const FwKind& k : f->fw_kinds) {
      if (k.kind < ModuleIndex::kKinds) {
        x.fw_module[k.kind] = f;
        x.fw_kind[k.kind] = &k;
      }
    }
    for (const FrameRoute& r : f->frames) {
      if (x.nframes < ModuleIndex::kMaxFrames) x.frames[x.nframes++] = r;
      const uint32_t bit = 1u << r.type;
      if (r.to_groups) x.filter.to_groups |= bit;
      for (uint32_t i = 0; i < r.nops && i < 2; i++)
        x.filter.by_op[r.type][r.ops[i] >> 5] |= 1u << (r.ops[i] & 31);
      if (!r.to_groups && r.nops == 0) x.filter.any_frame |= bit;
    }
    if (f->place) f->place(m, mem);
  }
}

void modules_reset(Impl& m) {
  for (const FamilyModule* f : kModules)
    if (f->reset) f->reset(m);
}

void modules_qp_gone(Impl& m, uint32_t qpn, QpGone why) {
  for (const FamilyModule* f : kModules)
    if (f->qp_gone) f->qp_gone(m, qpn, why);
}

void modules_srq_gone(Impl& m, uint32_t srqn) {
  for (const FamilyModule* f : kModules)
    if (f->srq_gone) f->srq_gone(m, srqn);
}

void modules_mr_gone(Impl& m, uint32_t mr_index) {
  for (const FamilyModule* f : kModules)
    if (f->mr_gone) f->mr_gone(m, mr_index);
}

void modules_context_gone(Impl& m, uint32_t ctx) {
  for (const FamilyModule* f : kModules)
    if (f->context_gone) f->context_gone(m, ctx);
}

void modules_node_failed(Impl& m, uint16_t node, NodeLoss why) {
  for (const FamilyModule* f : kModules)
    if (f->node_failed) f->node_failed(m, node, why);
}

bool modules_run(Impl& m, bool before_fw, uint32_t budget) {
  return before_fw ? run_turns(kTurnsBeforeFw, m, budget,
                               IndexListOf<array_size(kTurnsBeforeFw)>{})
                   : run_turns(kTurnsAfterFw, m, budget,
                               IndexListOf<array_size(kTurnsAfterFw)>{});
}

uint64_t modules_due(Impl& m) {
  // The turns above, each by the test its *_run starts with (a chain of
  // two-value mins: a list's min builds an array first).
  if (tag_owes(m) || sync_owes(m)) return 0;
  uint64_t t = min(coll_due(m), sync_next_deadline(m));
  t = min(t, tm_next_retry(m));
  t = min(t, mcast_next_deadline(m));
  t = min(t, ud_mcast_next_deadline(m));
  return min(t, share_next_deadline(m));
}

uint64_t modules_next_deadline(const Impl& m) {
  uint64_t t = UINT64_MAX;
  for (const FamilyModule* f : kModules)
    if (f->next_deadline) t = min(t, f->next_deadline(m));
  return t;
}

void modules_query_device(const Impl& m, rhn_device_attr& a) {
  for (const FamilyModule* f : kModules)
    if (f->query_device) f->query_device(m, a);
}

// The data path's hooks, called directly like the turns: who reads a QP's
// RQ on its doorbell (endpoint irecvs), who holds back a request to an
// endpoint (its source has an earlier one held; true: nothing more is
// done with it), who hears that a receive placed into its buffer ended
// (RxContext::list_entry set).
void modules_rq_kick(Impl& m, uint32_t qpn) { tag_scan_rq(m, qpn); }

void modules_srq_kick(Impl& m, uint32_t srqn, uint64_t value) {
  for (const FamilyModule* f : kModules)
    if (f->srq_kick) f->srq_kick(m, srqn, value);
}

bool modules_hold_back(Impl& m, Peer& p, uint32_t qpn, const rhn_op_hdr& op) {
  return m.pins.waiters_used && pin_holds_back(m, p, qpn, op);
}

void modules_placed(Impl& m, RxContext& rx) {
  if (rx.list_entry != kNone) tm_placed(m, rx);  // matched a TM tag list
}

uint8_t modules_send_to_group(Impl& m, QpObj& qp, uint32_t qpn, Inflight& e,
                              const DecodedWqe& w, uint8_t* syndrome) {
  for (const FamilyModule* f : kModules)
    if (f->send_to_group) return f->send_to_group(m, qp, qpn, e, w, syndrome);
  *syndrome = RHN_SYN_BAD_OPCODE;
  return RHN_CQE_LOC_QP_OP_ERR;
}

const FamilyModule* fw_receiver(const Impl& m, uint32_t kind,
                                const FwKind** k) {
  if (kind >= ModuleIndex::kKinds) return nullptr;
  *k = m.modules.fw_kind[kind];
  return m.modules.fw_module[kind];
}

uint32_t family_caps() {
  uint32_t caps = 0;
#define RHN_OP_CAP_(op, name, wire, cqe, dv, dv_name, flags, modes, ext, cap) \
  if (op_info(op).family) caps |= (cap);
  RHN_OP_TABLE(RHN_OP_CAP_)
#undef RHN_OP_CAP_
  for (const FamilyModule* f : kModules) caps |= f->caps;
  return caps;
}

const FamilyModule* srq_owner(uint32_t flags) {
  if (!flags) return nullptr;
  for (const FamilyModule* f : kModules)
    if (f->srq_flags == flags) return f;
  return nullptr;
}

const FamilyModule* srq_family(const Impl& m, uint32_t srqn) {
  if (srqn >= m.srqs.size() || m.srqs[srqn].family == kNone) return nullptr;
  return kModules[m.srqs[srqn].family];
}

const FamilyModule* admin_owner(uint16_t op) {
  for (const FamilyModule* f : kModules)
    for (uint16_t o : f->admin_ops)
      if (o == op) return f;
  return nullptr;
}

}  // namespace rhinet::fw
