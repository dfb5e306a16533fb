// SPDX-License-Identifier: BSD-2-Clause
// Partial transfers (the transfer modes of the operation table,
// include/hw/rhinet/hw_ops.h): the NIC selects which bytes of a PUSH or PULL
// travel. Every mode is the requester's business: a partial PUSH is a sparse
// stream of WRITE packets, each placed by its own remote_addr, and a partial
// PULL a series of READ requests, one per run, whose answers carry the message
// offset they land at. The responder needs no per-mode logic and checks every
// packet's range as for any WRITE or READ. Described in
// Documentation/hardware/queues.md.
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"

namespace rhinet::fw::partial {

// Post-time checks that need the engine's tables (the bitmap's key, the
// twin's owner and size): RHN_CQE_SUCCESS, or a status and *syndrome.
uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome);

// The WRITE packet of a partial PUSH that starts at message offset
// `offset`; out.advance moves to where the next selected byte is.
bool build_write(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                 rhn_op_hdr& op, PacketOut& out);

// The READ request of a partial PULL for the run at `offset`.
bool build_read_request(Impl& m, QpObj& qp, const DecodedWqe& w,
                        uint64_t offset, rhn_op_hdr& op, PacketOut& out);

// ---- Responder side of a strided WRITE packet (RHN_WOP_F_STRIDED): the
// extent its blocks span from remote_addr, and their placement.
rhn_syndrome write_extent(const rhn_op_hdr& op, Span<const uint8_t> data,
                          uint64_t* extent);
bool place_write(Impl& m, const rhn_op_hdr& op, Span<const uint8_t> data,
                 uint32_t mr_index, uint64_t va);

// ---- Responder side of a partial PULL: one READ request carries the
// mode (imm_data) and a descriptor (struct rhn_read_xfer, bitmap bits).

// Checks the descriptor of the READ request `op` with payload `data`;
// *extent is how many bytes from remote_addr the selection may touch.
rhn_syndrome read_extent(const rhn_op_hdr& op, Span<const uint8_t> data,
                         uint64_t* extent);
// Whether answering `op` needs a bitmap slot (has_room).
inline bool read_needs_bitmap(const rhn_op_hdr& op) {
  return op.opcode == RHN_WOP_READ_REQ && op.imm_data == RHN_XFER_BITMAP;
}
// Fills the stream's selection (after read_extent said yes).
void start_read(Impl& m, const rhn_op_hdr& op, Span<const uint8_t> data,
                ResponderRead& rr);
// The next piece of the stream: its offset from the stream's base
// address, its length, and where the piece after it starts; a syndrome
// when the stream cannot go on (a DIFF isend's memory or twin is gone).
rhn_syndrome read_piece(Impl& m, const ResponderRead& rr, uint64_t* at,
                        uint32_t* chunk, uint32_t* next);

// ---- Messages (ops/tag). An isend's selection is streamed after its CTS
// as TAG_DATA: STRIDE packs its blocks into a dense message, BITMAP and
// DIFF send the selected runs only, each at its message offset
// (RHN_WOP_F_SPARSE). An irecv's mode decides where the bytes land.

enum class SendStart : uint8_t { kStarted, kWait, kFailed };
// Fills the stream `rr` (rr.length set) with the isend's selection;
// kWait: no READ bitmap slot is free yet.
SendStart start_send(Impl& m, QpObj& qp, const DecodedWqe& w,
                     ResponderRead& rr);
inline bool sparse(const ResponderRead& rr) {
  return rr.xfer_mode == RHN_XFER_BITMAP || rr.xfer_mode == RHN_XFER_DIFF;
}
// An irecv's mode and parameters, when the NIC first reads it.
uint8_t check_receive(Impl& m, const TagRecv& r, uint8_t* syndrome);
// How many message bytes the receive holds.
uint32_t receive_capacity(const TagRecv& r);
// Message bytes [offset, offset + data.size()) into the receive.
bool place_message(Impl& m, const TagRecv& r, uint64_t offset,
                   Span<const uint8_t> data);

// What placing a partial PULL's answers needs, kept with its READ context.
void prepare_read(const DecodedWqe& w, ReadCtx& rc);

// READ answer bytes at message offset `offset` into local memory (and the
// twin); false when the entry was finished with an error.
bool place_answer(Impl& m, uint32_t qpn, Inflight& e, uint64_t offset,
                  Span<const uint8_t> data);

}  // namespace rhinet::fw::partial
