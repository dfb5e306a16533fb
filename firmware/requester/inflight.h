// SPDX-License-Identifier: BSD-2-Clause
// Requester state: a QP's messages between their first packet and
// their completion, and where READ and atomic answers go.
#pragma once

#include "core/bounded.h"
#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

enum class MsgState : uint8_t {
  kSending,        // packets still to go
  kAwaitAck,       // all sent; success = transport ACK passing its gate
  kAwaitResponse,  // READ/atomic: waits for the response packets
  kResendPending,  // RNR: send again at resend_at
  // The target NIC had no QP to take it (destroyed, in error, another
  // peer's): IB drops such requests, and its requester learns of it only
  // when its timer runs out. Fails at resend_at (RETRY_EXC), or never.
  kUnanswered,
  kDone,
};

constexpr uint8_t kFanoutMember = 1, kFanoutLast = 2;

// One message of a QP between its first packet and its completion.
// Inflight::trig of a WQE that came from its SQ slots.
constexpr uint16_t kNoTrigger = 0xffff;

struct Inflight {
  uint32_t slot = 0;  // first SQ slot of the WQE
  uint8_t slots = 1;
  uint8_t opcode = 0;
  uint8_t wqe_flags = 0;
  MsgState state = MsgState::kDone;
  uint8_t status = RHN_CQE_SUCCESS;
  uint8_t syndrome = RHN_SYN_NONE;
  uint16_t peer = 0;
  uint16_t read_ctx = 0xffff;
  // Triggered operations (ops/trigger): a fired WQE's entry in the trigger
  // table, which holds the WQE (kNoTrigger: the WQE is in its SQ slots),
  // and a chained WQE's counter, which its successful completion adds 1
  // to. (In the struct's holes: every WQE clears the entry.)
  uint16_t trig = kNoTrigger;
  uint32_t msn = 0;
  uint32_t last_serial = 0;
  uint32_t length = 0;
  uint32_t chain = 0;
  uint64_t resend_at = 0;
  uint64_t status_addr = 0;
  uint32_t status_lkey = 0;
  uint32_t dst_qpn = 0;
  // An answered message whose data the receiver pulls (an isend, ops/tag):
  // answered yet (it then leaves the ordered retries of its opcode);
  // after the answer, the stream that carries the data: its key at the
  // receiver, its length and destination QP (owed: no stream was free).
  bool answered = false;
  // Retired by its ACK with nothing to tell anyone: unsignalled, no
  // status word, READ context, fan-out, twin, chain or trigger, and a
  // family without message_done (what fast_post takes). The ACK of a run
  // of such messages retires each at the head of its QP in a few stores
  // (retire_quiet) instead of finish_entry and complete_in_order.
  bool quiet = false;
  uint32_t attempt = 0;  // transmissions of an ordered-retry message
  bool stream_owed = false;
  uint32_t stream_key = 0, stream_len = 0, stream_dst = 0;
  // Refused while the target host pins (ops/pindown): resent on the
  // target's PIN_READY (or after RHN_PIN_RETRY_US).
  bool pin_wait = false;
  // A fan-out family's number for this message (a shared region's update
  // number, ops/share): carried in imm_data, the same when it is resent.
  uint32_t fanout_imm = 0;
  // A DIFF PUSH's last message: when the WQE completes successfully its
  // twin takes the SGE's bytes (ops/partial), not before, so a message
  // sent again (a refusal, another destination) sends the same runs.
  bool diff_twin = false;
  // A fan-out WQE's message to one destination: kFanoutMember
  // (the WQE's CQE waits for the last), kFanoutLast (completes the WQE).
  uint8_t fanout = 0;
  // A local operation's result for its CQE (IPROBE: the message found).
  uint8_t ext_flags = 0;
  bool has_chain = false;
  uint16_t answer_node = 0;
  uint32_t answer_qpn = 0;
  uint64_t answer_tag = 0;
};
static_assert(sizeof(Inflight) == 112, "keep Inflight in its holes");

// Local destination of a READ or atomic result, kept until the response.
// A partial READ also keeps how message offsets map onto the SGE (stride)
// and the twin its bytes are copied into (ops/partial).
struct ReadCtx {
  bool used = false;
  uint8_t xfer_mode = RHN_XFER_BASIC;
  uint32_t num_sge = 0;
  uint32_t block = 0;
  uint64_t local_stride = 0;
  uint32_t twin = 0;
  uint64_t twin_offset = 0;
  rhn_sge sge[RHN_WQE_MAX_SGES];
};

}  // namespace rhinet::fw
