// SPDX-License-Identifier: BSD-2-Clause
// Responder state: READ answers being streamed and multi-packet
// receives in progress.
#pragma once

#include "core/bounded.h"
#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// Responder side of a READ: data still to send back. It owns what it
// needs: the key, PD and right are checked again for every chunk (the
// region may be gone), and it is cancelled with its QP.
struct ResponderRead {
  bool used = false;
  bool cancelled = false;  // its QP left RTS: answer with a NAK, stop
  uint8_t qp_type = 0;
  uint16_t node = 0;           // the requester's
  uint32_t requester_src = 0;  // the request's src_qpn (QPN + incarnation)
  uint32_t responder_qpn = 0;
  uint32_t responder_gen = 0;
  uint32_t msn = 0;
  uint32_t key = 0;
  uint32_t pdn = 0;
  uint64_t va = 0;
  uint32_t length = 0;
  uint32_t sent = 0;
  // A partial READ (ops/partial): its mode and selection; where this
  // request's range starts in the message, and whether it ends it. For a
  // bitmap, `sent` is the next selected byte and the bits are in
  // read_bitmaps[bitmap_slot].
  uint8_t xfer_mode = RHN_XFER_BASIC;
  bool final = true;
  uint16_t bitmap_slot = 0xffff;
  uint32_t block = 0;
  uint64_t remote_stride = 0;
  uint32_t msg_offset = 0;
  // An isend's data after a CTS (ops/tag) is streamed the same way:
  // wop RHN_WOP_TAG_DATA to the receive `stream_key`, the key an lkey.
  // Its partial modes select as a READ's do (STRIDE: remote_stride is
  // the sender's stride), and a DIFF isend compares with its twin.
  uint8_t wop = RHN_WOP_READ_RESP;
  uint32_t stream_key = 0;
  uint32_t twin = 0;
  uint64_t twin_offset = 0;
  uint32_t next = kNone;  // the peer's queue of reads, in arrival order
};

// A multi-packet SEND being received: any number are in flight at once,
// keyed by (peer, source QP with its incarnation, message number).
// Single-packet messages use one on the stack.
struct RxContext {
  bool used = false;
  bool from_srq = false;
  uint8_t status = RHN_CQE_SUCCESS;
  uint16_t node = 0;
  uint32_t src = 0;    // the request's src_qpn (QPN + incarnation)
  uint32_t owner = 0;  // the receiving QP's context (its share is counted)
  uint32_t qpn = 0;
  uint32_t qp_gen = 0;
  uint32_t msn = 0;
  uint32_t wqe_index = 0;
  uint32_t num_sge = 0;
  uint32_t pdn = 0;  // the receive WQE's PD (the QP's or the SRQ's)
  rhn_sge sge[RHN_RQ_MAX_SGES];
  uint32_t capacity = 0;
  uint32_t length = 0;
  uint32_t next = kNone;  // the peer's list of receives in progress
  // Tag matching on a TM SRQ (ops/tm): the CQE opcode of a message that
  // took a receive WQE; or the entry of the tag list it matched (handle
  // with generation), whose buffer gets the message past its first
  // `drop` bytes (the header).
  uint8_t cqe_op = RHN_CQE_OP_RECV;
  uint32_t drop = 0;
  uint32_t list_entry = kNone;
  // A receive through an XRC SRQ (named by the SEND, not the QP's): the
  // SRQ and its incarnation, so a completion after it is gone is dropped.
  uint32_t xrc_srq = kNone;
  uint8_t xrc_incarnation = 0;
};

}  // namespace rhinet::fw
