// SPDX-License-Identifier: BSD-2-Clause
// The table of operation families: which family a WQE opcode and a wire
// opcode belong to, and how a WQE opcode shows on the wire and in its CQE.
#include <array>

#include "ops/family.h"

namespace rhinet::fw {

// One definition per folder under ops/.
extern const OpFamily kSendFamily;    // ops/send: SEND, SEND_IMM
extern const OpFamily kRdmaFamily;    // ops/rdma: WRITE, WRITE_IMM, READ
extern const OpFamily kAtomicFamily;  // ops/atomic: FETCH_ADD, CMP_SWAP
extern const OpFamily kRawFamily;     // ops/raw: Ethernet frames
extern const OpFamily kWindowFamily;  // ops/window: BIND_MW, REG_MR, LOCAL_INV
extern const OpFamily kTagFamily;     // ops/tag: ISEND
extern const OpFamily kTagLocalFamily;  // ops/tag: IPROBE, IRECV_CANCEL
extern const OpFamily kPinFamily;       // ops/pindown: PD_REQUEST, PD_RELEASE
extern const OpFamily kTmFamily;        // ops/tm: TM SRQs' rendezvous data
extern const OpFamily kSyncFamily;      // ops/sync: LOCK, UNLOCK, BARRIER
extern const OpFamily kMcastFamily;     // ops/mcast: MCAST_LIST
extern const OpFamily kMcastSwitchFamily;  // ops/mcast_switch: MCAST_SWITCH
extern const OpFamily kShareFamily;        // ops/share: SUBSCRIBE, UNSUBSCRIBE,
                                           // SHARE_UPDATE
extern const OpFamily kCollFamily;         // ops/coll: COLLECTIVE

namespace {

constexpr size_t kOps = RHN_OP_MAX + 1;  // every enum rhn_op

std::array<OpInfo, kOps> make_ops() {
  std::array<OpInfo, kOps> t{};
  t[RHN_OP_NOP] = {nullptr, 0, RHN_CQE_OP_SEND, false, false, false};
  t[RHN_OP_SEND] = {&kSendFamily, RHN_WOP_SEND, RHN_CQE_OP_SEND,
                    false,        false,        true};
  t[RHN_OP_SEND_IMM] = {&kSendFamily, RHN_WOP_SEND, RHN_CQE_OP_SEND,
                        false,        true,         true};
  t[RHN_OP_WRITE] = {&kRdmaFamily, RHN_WOP_WRITE, RHN_CQE_OP_WRITE,
                     false,        false,         true};
  t[RHN_OP_WRITE_IMM] = {&kRdmaFamily, RHN_WOP_WRITE, RHN_CQE_OP_WRITE,
                         false,        true,          true};
  t[RHN_OP_READ] = {
      &kRdmaFamily, RHN_WOP_READ_REQ, RHN_CQE_OP_READ, true, false, false,
      true};
  t[RHN_OP_FETCH_ADD] = {&kAtomicFamily,
                         RHN_WOP_FETCH_ADD,
                         RHN_CQE_OP_FETCH_ADD,
                         true,
                         false,
                         false,
                         true};
  t[RHN_OP_CMP_SWAP] = {&kAtomicFamily,
                        RHN_WOP_CMP_SWAP,
                        RHN_CQE_OP_CMP_SWAP,
                        true,
                        false,
                        false,
                        true};
  t[RHN_OP_ISEND] = {&kTagFamily, RHN_WOP_TAG, RHN_CQE_OP_SEND, true,
                     false,       true,        false,           true};
  t[RHN_OP_IPROBE] = {
      &kTagLocalFamily, 0, RHN_CQE_OP_IPROBE, false, false, false};
  t[RHN_OP_IRECV_CANCEL] = {
      &kTagLocalFamily, 0, RHN_CQE_OP_IRECV_CANCEL, false, false, false};
  t[RHN_OP_PD_REQUEST] = {&kPinFamily, RHN_WOP_PD_REQ, RHN_CQE_OP_PD_REQUEST,
                          true,        false,          false};
  t[RHN_OP_PD_RELEASE] = {
      &kPinFamily, RHN_WOP_PD_RELEASE, RHN_CQE_OP_PD_RELEASE, false, false,
      false};
  t[RHN_OP_RAW_ETH] = {&kRawFamily, 0, RHN_CQE_OP_RAW_ETH, false, false, true};
  t[RHN_OP_BIND_MW] = {&kWindowFamily, 0,     RHN_CQE_OP_BIND_MW,
                       false,          false, false};
  t[RHN_OP_LOCAL_INV] = {&kWindowFamily, 0,     RHN_CQE_OP_LOCAL_INV,
                         false,          false, false};
  t[RHN_OP_REG_MR] = {&kWindowFamily, 0,     RHN_CQE_OP_REG_MR,
                      false,          false, false};
  t[RHN_OP_MCAST_LIST] = {&kMcastFamily, RHN_WOP_WRITE, RHN_CQE_OP_MCAST_LIST,
                          false,         false,         true};
  // Into the group's own stream (ops/mcast_switch), as MCAST_DATA.
  t[RHN_OP_MCAST_SWITCH] = {&kMcastSwitchFamily,
                            RHN_WOP_MCAST_DATA,
                            RHN_CQE_OP_MCAST_SWITCH,
                            false,
                            false,
                            true};
  // Locks and barriers: answered by the manager (BARRIER's count rides in
  // imm_data, not as an immediate).
  t[RHN_OP_LOCK] = {&kSyncFamily, RHN_WOP_LOCK, RHN_CQE_OP_LOCK,
                    true,         false,        false};
  t[RHN_OP_UNLOCK] = {&kSyncFamily, RHN_WOP_UNLOCK, RHN_CQE_OP_UNLOCK,
                      true,         false,          false};
  t[RHN_OP_BARRIER] = {&kSyncFamily, RHN_WOP_BARRIER, RHN_CQE_OP_BARRIER,
                       true,         false,           false};
  // Shared regions: a SUBSCRIBE is answered with the region's data (into
  // its SGE, like a READ's); an update fans out to the directory as
  // WRITEs, each numbered in imm_data.
  t[RHN_OP_SUBSCRIBE] = {&kShareFamily,
                         RHN_WOP_SHARE_REQ,
                         RHN_CQE_OP_SUBSCRIBE,
                         true,
                         false,
                         false,
                         true};
  t[RHN_OP_UNSUBSCRIBE] = {
      &kShareFamily, RHN_WOP_SHARE_REQ, RHN_CQE_OP_UNSUBSCRIBE, false, false,
      false};
  t[RHN_OP_SHARE_UPDATE] = {&kShareFamily,
                            RHN_WOP_SHARE_UPDATE,
                            RHN_CQE_OP_SHARE_UPDATE,
                            false,
                            false,
                            true};
  // Collectives: executed by the NICs of the communicator together
  // (firmware messages, not a message of this QP); the CQE comes when
  // this rank's part is done.
  t[RHN_OP_COLLECTIVE] = {&kCollFamily, 0,     RHN_CQE_OP_COLLECTIVE,
                          true,         false, false};
  // imm_data carries the key to invalidate, not an immediate.
  t[RHN_OP_SEND_INV] = {&kSendFamily, RHN_WOP_SEND, RHN_CQE_OP_SEND,
                        false,        false,        true};
  return t;
}

const std::array<OpInfo, kOps> kOpTable = make_ops();

}  // namespace

const OpInfo& op_info(uint8_t wqe_opcode) {
  static constexpr OpInfo kNoSuchOp{};
  return wqe_opcode < kOps ? kOpTable[wqe_opcode] : kNoSuchOp;
}

const OpFamily* family_of_wire(uint8_t wire_op) {
  switch (wire_op) {
    case RHN_WOP_SEND:
      return &kSendFamily;
    case RHN_WOP_WRITE:
    case RHN_WOP_READ_REQ:
    case RHN_WOP_READ_RESP:
      return &kRdmaFamily;
    case RHN_WOP_FETCH_ADD:
    case RHN_WOP_CMP_SWAP:
    case RHN_WOP_ATOMIC_RESP:
      return &kAtomicFamily;
    case RHN_WOP_TAG:
    case RHN_WOP_TAG_DATA:
    case RHN_WOP_TAG_RESP:
      return &kTagFamily;
    case RHN_WOP_PD_REQ:
    case RHN_WOP_PD_RELEASE:
    case RHN_WOP_PD_REPLY:
      return &kPinFamily;
    case RHN_WOP_TM_DATA:
      return &kTmFamily;
    case RHN_WOP_LOCK:
    case RHN_WOP_UNLOCK:
    case RHN_WOP_BARRIER:
    case RHN_WOP_SYNC_RESP:
      return &kSyncFamily;
    case RHN_WOP_SHARE_REQ:
    case RHN_WOP_SHARE_UPDATE:
    case RHN_WOP_SHARE_DATA:
      return &kShareFamily;
    default:
      return nullptr;
  }
}

}  // namespace rhinet::fw
