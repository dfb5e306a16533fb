// SPDX-License-Identifier: BSD-2-Clause
// Send and receive WQEs on a loopback pair (queues.md): every verbs opcode
// and its CQEs, status words, and bad input from the host: malformed WQEs,
// bad keys, out-of-range lengths, each with its documented status,
// syndrome and counter.
#include <cstring>
#include <string>

#include "case.h"
#include "lib/work.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::conform {
namespace {

// An atomic from QP a at the remote address `raddr` of dst; the old value
// lands at src.
void post_atomic(Nic& n, Loop& l, uint8_t opcode, uint64_t compare_add,
                 uint64_t swap, uint64_t raddr) {
  Wqe w(l.a, opcode);
  w.w->u.atomic.compare_add = compare_add;
  w.w->u.atomic.swap = swap;
  w.sge(0, l.src.addr, 8, l.src.key).remote(raddr, l.dst.key);
  w.post(n, l.a);
}

// One successful atomic on dst's first word: the old value it returns
// and the word after it.
bool atomic_step(Check& c, Nic& n, Loop& l, uint8_t opcode,
                 uint64_t compare_add, uint64_t swap, uint64_t old,
                 uint64_t after) {
  post_atomic(n, l, opcode, compare_add, swap, l.dst.addr);
  rhn_cqe e;
  const uint8_t cqe_op =
      opcode == RHN_OP_FETCH_ADD ? RHN_CQE_OP_FETCH_ADD : RHN_CQE_OP_CMP_SWAP;
  const std::string what = "atomic " + hex(compare_add) + "/" + hex(swap);
  if (!cqe_is(c, n, l.scq, what + " CQE", cqe_op, RHN_CQE_SUCCESS, &e))
    return false;
  if (!c.eq(what + ": old value returned", old, n.rd64(l.src.addr)))
    return false;
  return c.eq(what + ": target word after", after, n.rd64(l.dst.addr));
}

// Posts a 64-byte `opcode` from a to b damaged by `spoil`; its CQE must
// carry `status` and `syndrome`, and `counter` (if >= 0) count it once.
bool spoiled(Check& c, Nic& n, Loop& l, uint8_t opcode, uint8_t status,
             uint8_t syndrome, int counter,
             const std::function<void(Nic&, Loop&, Wqe&)>& spoil) {
  Wqe w(l.a, opcode);
  w.sge(0, l.src.addr, 64, l.src.key).remote(l.dst.addr, l.dst.key);
  spoil(n, l, w);
  const uint64_t before = counter >= 0 ? n.counter(counter) : 0;
  w.post(n, l.a);
  rhn_cqe e;
  if (!c.that(n.wait_cqe(l.scq, &e), "send CQ", "no CQE")) return false;
  if (!c.eq("CQE status", status, e.status)) return false;
  if (!c.eq("CQE vendor_err", syndrome, e.vendor_err)) return false;
  if (!c.eq("CQE qpn", l.a.qpn, e.qpn)) return false;
  return counter < 0 || c.eq(counter_name(counter) + " increase", 1,
                             n.counter(counter) - before);
}

// An operation that fails at the requester: the QP then goes to ERR, so
// the next WQE is flushed.
void local_error(Target& t, Check& c, uint8_t status, uint8_t syndrome,
                 int counter,
                 const std::function<void(Nic&, Loop&, Wqe&)>& spoil,
                 uint8_t opcode = RHN_OP_SEND) {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  if (!spoiled(c, n, l, opcode, status, syndrome, counter, spoil)) return;
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "CQE after the error", "none");
  c.eq("next WQE's status (QP in ERR)", RHN_CQE_WR_FLUSH_ERR, e.status);
}

// A request the responder refuses: REM_* status at the requester.
void remote_error(Target& t, Check& c, uint8_t opcode, uint8_t status,
                  uint8_t syndrome, int counter,
                  const std::function<void(Nic&, Loop&, Wqe&)>& spoil) {
  LOOP(n, l, RHN_QP_RC);
  spoiled(c, n, l, opcode, status, syndrome, counter, spoil);
}

}  // namespace

// ---- NOP ----

CONFORM_CASE(nop_signaled, "wqe.nop.signaled", "wqe",
             "a signalled NOP completes as SEND with length 0 (README.md "
             "decision 11), F_SQ set, its slot index") {
  LOOP(n, l, RHN_QP_RC);
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "NOP CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 0, e.byte_len);
  CONFORM_EQ(c, "qpn", l.a.qpn, e.qpn);
  CONFORM_EQ(c, "wqe_index", 0, e.wqe_index);
  CONFORM_EQ(c, "flags & F_SQ", RHN_CQE_F_SQ, e.flags & RHN_CQE_F_SQ);
  CONFORM_EQ(c, "xrc_srqn", 0, e.xrc_srqn);
  c.eq("run_extra (a CQ without runs)", 0, e.run_extra);
}

CONFORM_CASE(nop_unsignaled, "wqe.nop.unsignaled", "wqe",
             "an unsignalled WQE that succeeds writes no CQE") {
  LOOP(n, l, RHN_QP_RC);
  n.post_one(l.a, RHN_OP_NOP, 0, 0, 0, 0);
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e)) return;
  CONFORM_EQ(c, "first CQE's wqe_index (the signalled WQE)", 1, e.wqe_index);
  t.settle();
  c.that(!n.poll_cq(l.scq, &e), "send CQ", "a second CQE appeared");
}

// ---- SEND ----

CONFORM_CASE(send_rc, "wqe.send.rc", "wqe",
             "an RC SEND lands in the receive WQE: RECV CQE with length, "
             "sender's SEND CQE") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 100, l.src.key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "receive byte_len", 100, e.byte_len);
  CONFORM_EQ(c, "receive qpn", l.b.qpn, e.qpn);
  CONFORM_EQ(c, "receive wqe_index", 0, e.wqe_index);
  CONFORM_EQ(c, "receive flags & F_SQ", 0, e.flags & RHN_CQE_F_SQ);
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 100, "received data")) return;
  cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e);
}

CONFORM_CASE(send_imm, "wqe.send_imm.rc", "wqe",
             "SEND_IMM: the receive CQE carries imm_data and F_IMM") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe w(l.a, RHN_OP_SEND_IMM);
  w.w->imm_data = 0xfeedbeef;
  w.sge(0, l.src.addr, 32, l.src.key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "imm_data", 0xfeedbeef, e.imm_data);
  c.eq("flags & F_IMM", RHN_CQE_F_IMM, e.flags & RHN_CQE_F_IMM);
}

CONFORM_CASE(send_solicited, "wqe.send.solicited", "wqe",
             "RHN_WQE_F_SOLICITED marks the receive CQE solicited") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe(l.a, RHN_OP_SEND, RHN_WQE_F_SIGNALED | RHN_WQE_F_SOLICITED)
      .sge(0, l.src.addr, 8, l.src.key)
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  c.eq("flags & F_SOLICITED", RHN_CQE_F_SOLICITED,
       e.flags & RHN_CQE_F_SOLICITED);
}

CONFORM_CASE(send_inline, "wqe.send.inline", "wqe",
             "an inline SEND of 100 bytes (base slot and two extension "
             "slots) arrives intact") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe w(l.a, RHN_OP_SEND);
  uint8_t payload[100];
  for (unsigned i = 0; i < sizeof(payload); i++) payload[i] = uint8_t(i * 3);
  rhn_wqe_put_inline(w.buf, 0, payload, sizeof(payload));
  w.data = rhn_wqe_set_inline(w.buf, sizeof(payload));
  const uint32_t slots = w.post(n, l.a);
  CONFORM_EQ(c, "slots the builder used", 3, slots);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", sizeof(payload), e.byte_len);
  const auto got = n.bytes(l.dst.addr, sizeof(payload));
  for (unsigned i = 0; i < sizeof(payload); i++)
    CONFORM_EQ(c, "byte " + std::to_string(i), payload[i], got[i]);
}

CONFORM_CASE(send_sges, "wqe.send.five_sges", "wqe",
             "five SGEs (one extension slot) are gathered in order") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe w(l.a, RHN_OP_SEND);
  for (uint32_t i = 0; i < 5; i++)
    w.sge(i, l.src.addr + 1000 * i, 10, l.src.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 50, e.byte_len);
  for (uint32_t i = 0; i < 5; i++)
    if (!same_bytes(c, n, l.src.addr + 1000 * i, l.dst.addr + 10 * i, 10,
                    "SGE " + std::to_string(i)))
      return;
}

CONFORM_CASE(send_big, "wqe.send.multi_packet", "wqe",
             "a SEND of 3 MTUs and a bit arrives whole") {
  LOOP(n, l, RHN_QP_RC);
  const uint32_t len = 3 * n.r32(RHN_REG_MTU) + 77;
  CONFORM_THAT(c, len < l.src.len, "MTU", "too large for the case's buffer");
  n.post_recv(l.b, l.dst.addr, l.dst.len, l.dst.key);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, len, l.src.key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", len, e.byte_len);
  same_bytes(c, n, l.src.addr, l.dst.addr, len, "received data");
}

CONFORM_CASE(send_ud, "wqe.send.ud", "wqe",
             "a UD SEND lands after 40 bytes of GRH room; src_qpn, src_node, "
             "byte_len counts the room") {
  LOOP(n, l, RHN_QP_UD);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe(l.a, RHN_OP_SEND)
      .sge(0, l.src.addr, 64, l.src.key)
      .to(l, l.b)
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", RHN_UD_GRH_LEN + 64, e.byte_len);
  CONFORM_EQ(c, "src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK);
  CONFORM_EQ(c, "src_node", l.node, e.src_node);
  CONFORM_EQ(c, "flags & F_GRH (no GRH sent)", 0, e.flags & RHN_CQE_F_GRH);
  same_bytes(c, n, l.src.addr, l.dst.addr + RHN_UD_GRH_LEN, 64, "payload");
}

CONFORM_CASE(send_ud_qkey, "wqe.send.ud_bad_qkey", "wqe",
             "a UD SEND with the wrong Q_Key is dropped and counted in "
             "UD_DROPS") {
  LOOP(n, l, RHN_QP_UD);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  const uint64_t before = n.counter(RHN_CNT_UD_DROPS);
  Wqe w(l.a, RHN_OP_SEND);
  w.sge(0, l.src.addr, 64, l.src.key).to(l, l.b);
  w.w->u.status.qkey = 0x2222;
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  t.advance(1'000'000);
  CONFORM_THAT(c, !n.poll_cq(l.rcq, &e), "receive CQ",
               "the datagram was delivered");
  c.eq("RHN_CNT_UD_DROPS increase", 1, n.counter(RHN_CNT_UD_DROPS) - before);
}

CONFORM_CASE(send_ud_no_wqe, "wqe.send.ud_no_recv", "wqe",
             "a UD SEND with no receive WQE is dropped, counted in UD_DROPS") {
  LOOP(n, l, RHN_QP_UD);
  const uint64_t before = n.counter(RHN_CNT_UD_DROPS);
  Wqe(l.a, RHN_OP_SEND)
      .sge(0, l.src.addr, 64, l.src.key)
      .to(l, l.b)
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  t.advance(1'000'000);
  c.eq("RHN_CNT_UD_DROPS increase", 1, n.counter(RHN_CNT_UD_DROPS) - before);
}

CONFORM_CASE(send_short_recv, "wqe.send.recv_too_small", "wqe",
             "a SEND longer than the receive WQE: receiver LOC_LEN_ERR, "
             "sender REM_INV_REQ_ERR with RHN_SYN_LENGTH") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 16, l.dst.key);
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 100, l.src.key).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_LOC_LEN_ERR,
              &e))
    return;
  if (!c.that(n.wait_cqe(l.scq, &e), "send CQ", "no CQE")) return;
  CONFORM_EQ(c, "send CQE status", RHN_CQE_REM_INV_REQ_ERR, e.status);
  c.eq("send CQE vendor_err", RHN_SYN_LENGTH, e.vendor_err);
}

// ---- WRITE, READ, atomics ----

namespace {

// A WRITE (src -> dst) or READ (dst <- src) of `mtus` MTUs and `extra`
// bytes between src + src_off and dst + dst_off. It must complete with its
// opcode and length, the bytes in place and nothing after them touched.
struct Transfer {
  const char* name;
  const char* description;
  uint8_t opcode;
  uint32_t mtus;
  uint32_t extra;
  uint32_t src_off, dst_off;
};

const Transfer kTransfers[] = {
    {"wqe.write.rc", "an RC WRITE of 256 bytes", RHN_OP_WRITE, 0, 256, 0, 512},
    {"wqe.write.one_byte", "an RC WRITE of 1 byte", RHN_OP_WRITE, 0, 1, 7, 3},
    {"wqe.write.unaligned", "an RC WRITE of 333 bytes at odd addresses",
     RHN_OP_WRITE, 0, 333, 5, 1001},
    {"wqe.write.one_mtu", "an RC WRITE of exactly one MTU", RHN_OP_WRITE, 1, 0,
     0, 0},
    {"wqe.write.multi_packet", "an RC WRITE of 2 MTUs + 9 bytes", RHN_OP_WRITE,
     2, 9, 3, 0},
    {"wqe.read.rc", "an RC READ of 300 bytes", RHN_OP_READ, 0, 300, 64, 0},
    {"wqe.read.one_byte", "an RC READ of 1 byte", RHN_OP_READ, 0, 1, 9, 2},
    {"wqe.read.unaligned", "an RC READ of 77 bytes at odd addresses",
     RHN_OP_READ, 0, 77, 3, 513},
    {"wqe.read.multi_packet", "an RC READ of 2 MTUs + 5 bytes", RHN_OP_READ, 2,
     5, 0, 0},
};

void transfer(const Transfer& x, Target& t, Check& c) {
  LOOP(n, l, RHN_QP_RC);
  const uint32_t len = x.mtus * n.r32(RHN_REG_MTU) + x.extra;
  CONFORM_THAT(c, len + x.src_off <= l.src.len && len + x.dst_off < l.dst.len,
               "MTU", "too large for the case's buffers");
  const bool write = x.opcode == RHN_OP_WRITE;
  Wqe w(l.a, x.opcode);
  if (write)
    w.sge(0, l.src.addr + x.src_off, len, l.src.key)
        .remote(l.dst.addr + x.dst_off, l.dst.key);
  else
    w.sge(0, l.dst.addr + x.dst_off, len, l.dst.key)
        .remote(l.src.addr + x.src_off, l.src.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE",
              write ? RHN_CQE_OP_WRITE : RHN_CQE_OP_READ, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", len, e.byte_len);
  if (!same_bytes(c, n, l.src.addr + x.src_off, l.dst.addr + x.dst_off, len,
                  "data"))
    return;
  // dst starts zeroed: the byte after the range must still be 0.
  c.eq("byte after the range", 0, n.bytes(l.dst.addr + x.dst_off + len, 1)[0]);
}

const bool transfer_cases =
    register_rows(kTransfers, "wqe",
                  ": the bytes land, CQE with its opcode and length", transfer);

}  // namespace

CONFORM_CASE(write_imm, "wqe.write_imm.rc", "wqe",
             "WRITE_IMM places the data and consumes a receive WQE: "
             "RECV_WRITE_IMM CQE with imm_data") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr + 8192, 64, l.dst.key);
  Wqe w(l.a, RHN_OP_WRITE_IMM);
  w.w->imm_data = 0x01020304;
  w.sge(0, l.src.addr, 128, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV_WRITE_IMM,
              RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "imm_data", 0x01020304, e.imm_data);
  CONFORM_EQ(c, "flags & F_IMM", RHN_CQE_F_IMM, e.flags & RHN_CQE_F_IMM);
  CONFORM_THAT(c, same_bytes(c, n, l.src.addr, l.dst.addr, 128, "data"), "data",
               "");
  c.eq("receive buffer untouched", 0, n.rd64(l.dst.addr + 8192));
}

CONFORM_CASE(write_zero, "wqe.write.zero_length_bad_rkey", "wqe",
             "a zero-length WRITE checks no rkey: it succeeds with a bad key") {
  LOOP(n, l, RHN_QP_RC);
  Wqe(l.a, RHN_OP_WRITE).remote(0x1234, 0xdead00).post(n, l.a);
  rhn_cqe e;
  cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e);
}

CONFORM_CASE(fetch_add, "wqe.fetch_add", "wqe",
             "FETCH_ADD returns the old value and adds at the target") {
  LOOP(n, l, RHN_QP_RC);
  n.wr64(l.dst.addr, 1000);
  atomic_step(c, n, l, RHN_OP_FETCH_ADD, 234, 0, 1000, 1234);
}

CONFORM_CASE(cmp_swap, "wqe.cmp_swap", "wqe",
             "CMP_SWAP swaps when equal and returns the old value; not when "
             "different") {
  LOOP(n, l, RHN_QP_RC);
  n.wr64(l.dst.addr, 7);
  if (!atomic_step(c, n, l, RHN_OP_CMP_SWAP, 7, 99, 7, 99)) return;
  atomic_step(c, n, l, RHN_OP_CMP_SWAP, 7, 5, 99, 99);
}

CONFORM_CASE(atomic_align, "wqe.atomic.unaligned", "wqe",
             "an atomic to an address not 8-byte aligned fails with "
             "RHN_SYN_ALIGNMENT") {
  LOOP(n, l, RHN_QP_RC);
  post_atomic(n, l, RHN_OP_FETCH_ADD, 1, 0, l.dst.addr + 4);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_THAT(c, e.status != RHN_CQE_SUCCESS, "CQE status", "success");
  c.eq("vendor_err", RHN_SYN_ALIGNMENT, e.vendor_err);
}

// An extended atomic `aop` from a at dst's word at `off`; the original
// value (if fetched) lands at src. Its CQE must say `status`.
bool atomic_ext_step(Check& c, Nic& n, Loop& l, uint32_t aop, uint64_t operand,
                     uint64_t swap, uint64_t off, uint8_t status, rhn_cqe* e) {
  Wqe w(l.a, RHN_OP_ATOMIC_EXT);
  w.w->imm_data = aop;
  w.w->u.atomic.compare_add = operand;
  w.w->u.atomic.swap = swap;
  const uint32_t len = rhn_atomic_result_len(RHN_OP_ATOMIC_EXT, aop);
  if (len) w.sge(0, l.src.addr, len, l.src.key);
  w.remote(l.dst.addr + off, l.dst.key);
  w.post(n, l.a);
  return cqe_is(c, n, l.scq, "ATOMIC_EXT " + hex(aop), RHN_CQE_OP_ATOMIC_EXT,
                status, e);
}

CONFORM_CASE(atomic_ext_64, "wqe.atomic_ext.ops64", "wqe",
             "RHN_OP_ATOMIC_EXT on an 8-byte word: swap, fetch, and, or, "
             "xor, add and compare-swap each return the old value (byte_len "
             "8) and leave the documented result") {
  LOOP(n, l, RHN_QP_RC);
  struct Step {
    uint32_t aop;
    uint64_t operand, swap, before, after;
  };
  const Step steps[] = {
      {RHN_AOP_SWAP, 0x1111222233334444ull, 0, 5, 0x1111222233334444ull},
      {RHN_AOP_FETCH, 9, 9, 0x77, 0x77},
      {RHN_AOP_AND, 0xf0f0ull, 0, 0xffffull, 0xf0f0ull},
      {RHN_AOP_OR, 1ull << 63, 0, 1, (1ull << 63) | 1},
      {RHN_AOP_XOR, 0xffull, 0, 0x0full, 0xf0ull},
      {RHN_AOP_ADD, 3, 0, ~0ull, 2},
      {RHN_AOP_CMP_SWAP, 4, 8, 4, 8},
      {RHN_AOP_CMP_SWAP, 4, 9, 5, 5},
  };
  for (const Step& s : steps) {
    n.wr64(l.dst.addr, s.before);
    n.wr64(l.src.addr, 0xeeeeeeeeeeeeeeeeull);
    rhn_cqe e;
    if (!atomic_ext_step(c, n, l, s.aop, s.operand, s.swap, 0, RHN_CQE_SUCCESS,
                         &e))
      return;
    const std::string what = "aop " + hex(s.aop);
    if (!c.eq(what + " byte_len", 8, e.byte_len) ||
        !c.eq(what + " old value", s.before, n.rd64(l.src.addr)) ||
        !c.eq(what + " word after", s.after, n.rd64(l.dst.addr)))
      return;
  }
}

CONFORM_CASE(atomic_ext_32, "wqe.atomic_ext.ops32", "wqe",
             "RHN_AOP_F_32: the operation works on the 4-byte word alone "
             "(its neighbour unchanged), returns 4 bytes, and a 4-byte "
             "aligned word is accepted") {
  LOOP(n, l, RHN_QP_RC);
  n.wr64(l.dst.addr, 0x5a5a5a5a00000010ull);
  n.wr64(l.src.addr, 0xeeeeeeeeeeeeeeeeull);
  rhn_cqe e;
  // The high half of the u64 at dst: 4-byte aligned, not 8.
  if (!atomic_ext_step(c, n, l, RHN_AOP_ADD | RHN_AOP_F_32,
                       0xffffffff00000001ull, 0, 4, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 4, e.byte_len);
  CONFORM_EQ(c, "old value", 0x5a5a5a5au, n.rd32(l.src.addr));
  CONFORM_EQ(c, "past the value", 0xeeeeeeeeu, n.rd32(l.src.addr + 4));
  CONFORM_EQ(c, "word", 0x5a5a5a5b00000010ull, n.rd64(l.dst.addr));
  if (!atomic_ext_step(c, n, l, RHN_AOP_CMP_SWAP | RHN_AOP_F_32, 0x10,
                       0xabcdef01, 0, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "cswap old value", 0x10u, n.rd32(l.src.addr));
  c.eq("cswap word", 0x5a5a5a5babcdef01ull, n.rd64(l.dst.addr));
}

CONFORM_CASE(atomic_ext_no_fetch, "wqe.atomic_ext.no_fetch", "wqe",
             "RHN_AOP_F_NO_FETCH: no SGE, byte_len 0, the word changed; "
             "SWAP without fetch is a set") {
  LOOP(n, l, RHN_QP_RC);
  n.wr64(l.dst.addr, 40);
  n.wr64(l.src.addr, 0x1234);
  rhn_cqe e;
  if (!atomic_ext_step(c, n, l, RHN_AOP_ADD | RHN_AOP_F_NO_FETCH, 2, 0, 0,
                       RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 0, e.byte_len);
  CONFORM_EQ(c, "word after add", 42, n.rd64(l.dst.addr));
  if (!atomic_ext_step(c, n, l, RHN_AOP_SWAP | RHN_AOP_F_NO_FETCH, 7, 0, 0,
                       RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "word after set", 7, n.rd64(l.dst.addr));
  c.eq("local memory untouched", 0x1234, n.rd64(l.src.addr));
}

CONFORM_CASE(atomic_ext_align, "wqe.atomic_ext.unaligned", "wqe",
             "a 32-bit ATOMIC_EXT on a word 2-byte but not 4-byte aligned: "
             "REM_INV_REQ_ERR, RHN_SYN_ALIGNMENT, the word untouched") {
  LOOP(n, l, RHN_QP_RC);
  n.wr64(l.dst.addr, 0x0102030405060708ull);
  rhn_cqe e;
  if (!atomic_ext_step(c, n, l, RHN_AOP_XOR | RHN_AOP_F_32, 0xff, 0, 2,
                       RHN_CQE_REM_INV_REQ_ERR, &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_ALIGNMENT, e.vendor_err);
  c.eq("word", 0x0102030405060708ull, n.rd64(l.dst.addr));
}

CONFORM_CASE(atomic_ext_bad_op, "wqe.atomic_ext.bad_op", "wqe",
             "an ATOMIC_EXT naming an operation no NIC knows, or a FETCH "
             "without fetch: LOC_QP_OP_ERR, RHN_SYN_BAD_WQE, counted in "
             "BAD_WQES") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t before = n.counter(RHN_CNT_BAD_WQES);
  rhn_cqe e;
  if (!atomic_ext_step(c, n, l, RHN_AOP_COUNT, 1, 0, 0, RHN_CQE_LOC_QP_OP_ERR,
                       &e))
    return;
  CONFORM_EQ(c, "vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
  c.eq("RHN_CNT_BAD_WQES increase", 1, n.counter(RHN_CNT_BAD_WQES) - before);
}

CONFORM_CASE(status_word, "wqe.status_word.write", "wqe",
             "RHN_WQE_F_STATUS_WORD: DONE, status 0 and the length in one "
             "word") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t word = l.src.addr + 8192;
  n.wr64(word, 0);
  Wqe w(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD);
  w.w->u.status.addr = word;
  w.w->u.status.lkey = l.src.key;
  w.sge(0, l.src.addr, 200, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  const uint64_t v = n.rd64(word);
  CONFORM_EQ(c, "status word DONE", RHN_STATUS_WORD_DONE,
             v & RHN_STATUS_WORD_DONE);
  CONFORM_EQ(c, "status word status", RHN_CQE_SUCCESS,
             (v >> RHN_STATUS_WORD_STATUS_SHIFT) & 0xff);
  CONFORM_EQ(c, "status word syndrome", RHN_SYN_NONE,
             (v >> RHN_STATUS_WORD_SYNDROME_SHIFT) & 0xff);
  c.eq("status word length", 200, v & RHN_STATUS_WORD_LEN_MASK);
}

CONFORM_CASE(status_word_err, "wqe.status_word.error", "wqe",
             "a failed WQE's status word carries its status and syndrome") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t word = l.src.addr + 8192;
  Wqe w(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED | RHN_WQE_F_STATUS_WORD);
  w.w->u.status.addr = word;
  w.w->u.status.lkey = l.src.key;
  w.sge(0, l.src.addr, 64, l.src.key).remote(l.dst.addr, 0x00fff0a5);
  w.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  t.settle();
  const uint64_t v = n.rd64(word);
  CONFORM_EQ(c, "status word DONE", RHN_STATUS_WORD_DONE,
             v & RHN_STATUS_WORD_DONE);
  CONFORM_EQ(c, "status word status", e.status,
             (v >> RHN_STATUS_WORD_STATUS_SHIFT) & 0xff);
  c.eq("status word syndrome", RHN_SYN_BAD_KEY,
       (v >> RHN_STATUS_WORD_SYNDROME_SHIFT) & 0xff);
}

// ---- malformed WQEs and local protection ----

CONFORM_CASE(bad_opcode, "wqe.error.bad_opcode", "wqe",
             "an opcode the header does not define: LOC_QP_OP_ERR, "
             "RHN_SYN_BAD_OPCODE") {
  local_error(t, c, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE, -1,
              [](Nic&, Loop&, Wqe& w) { w.w->opcode = 0x7e; });
}

CONFORM_CASE(raw_on_rc, "wqe.error.raw_eth_on_rc", "wqe",
             "RAW_ETH on an RC QP: LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE "
             "(README.md decision 12)") {
  local_error(t, c, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE, -1,
              [](Nic&, Loop&, Wqe& w) { w.w->opcode = RHN_OP_RAW_ETH; });
}

namespace {

// A malformed send WQE (queues.md, extension units): LOC_QP_OP_ERR,
// RHN_SYN_BAD_WQE, counted in BAD_WQES. `spoil` damages a one-SGE SEND
// and returns the slots to post.
struct Malformed {
  const char* name;
  const char* description;
  uint32_t (*spoil)(rhn_send_wqe* w);
};

const Malformed kMalformed[] = {
    {"wqe.error.ext_units_short", "two SGEs with ext_units 0 (they do not fit)",
     [](rhn_send_wqe* w) -> uint32_t {
       w->num_sge = 2;
       return 1;
     }},
    {"wqe.error.too_many_sges", "num_sge above RHN_WQE_MAX_SGES",
     [](rhn_send_wqe* w) -> uint32_t {
       w->num_sge = RHN_WQE_MAX_SGES + 1;
       w->ext_units = RHN_WQE_MAX_EXT_UNITS;
       return RHN_WQE_MAX_SLOTS;
     }},
    {"wqe.error.inline_too_long", "inline data above RHN_WQE_MAX_INLINE",
     [](rhn_send_wqe* w) -> uint32_t {
       w->flags |= RHN_WQE_F_INLINE;
       w->num_sge = RHN_WQE_MAX_INLINE + 1;
       w->ext_units = RHN_WQE_MAX_EXT_UNITS;
       return RHN_WQE_MAX_SLOTS;
     }},
    {"wqe.error.inline_ext_short",
     "20 inline bytes with ext_units 0 (they do not fit)",
     [](rhn_send_wqe* w) -> uint32_t {
       w->flags |= RHN_WQE_F_INLINE;
       w->num_sge = 20;
       return 1;
     }},
    {"wqe.error.ext_units_too_many", "ext_units above RHN_WQE_MAX_EXT_UNITS",
     [](rhn_send_wqe* w) -> uint32_t {
       w->num_sge = 30;
       w->ext_units = RHN_WQE_MAX_EXT_UNITS + 1;
       return RHN_WQE_MAX_SLOTS;
     }},
};

void malformed(const Malformed& m, Target& t, Check& c) {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe w(l.a, RHN_OP_SEND);
  w.sge(0, l.src.addr, 8, l.src.key);
  const uint32_t slots = m.spoil(w.w);
  const uint64_t before = n.counter(RHN_CNT_BAD_WQES);
  n.post_send(l.a, w.buf, slots);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  CONFORM_EQ(c, "CQE vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
  c.eq("RHN_CNT_BAD_WQES increase", 1, n.counter(RHN_CNT_BAD_WQES) - before);
}

const bool malformed_cases = register_rows(
    kMalformed, "wqe", ": LOC_QP_OP_ERR, RHN_SYN_BAD_WQE, BAD_WQES", malformed);

}  // namespace

CONFORM_CASE(bad_lkey, "wqe.error.bad_lkey", "wqe",
             "an SGE with an unknown lkey: LOC_PROT_ERR, RHN_SYN_BAD_KEY, "
             "LOCAL_PROT_ERRORS; the QP goes to ERR") {
  local_error(t, c, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_KEY,
              RHN_CNT_LOCAL_PROT_ERRORS, [](Nic&, Loop&, Wqe& w) {
                reinterpret_cast<rhn_send_wqe*>(w.buf)->d.sge.lkey = 0x00fff0a5;
              });
}

CONFORM_CASE(stale_lkey, "wqe.error.stale_key_variant", "wqe",
             "an lkey with the right index but another variant: "
             "RHN_SYN_BAD_KEY") {
  local_error(t, c, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_KEY,
              RHN_CNT_LOCAL_PROT_ERRORS,
              [](Nic&, Loop&, Wqe& w) { w.w->d.sge.lkey ^= 0x01; });
}

CONFORM_CASE(lkey_bounds, "wqe.error.lkey_bounds", "wqe",
             "an SGE that runs past its MR: LOC_PROT_ERR, RHN_SYN_BOUNDS") {
  local_error(t, c, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BOUNDS,
              RHN_CNT_LOCAL_PROT_ERRORS, [](Nic&, Loop& l, Wqe& w) {
                w.w->d.sge.addr = l.src.addr + l.src.len - 8;
              });
}

CONFORM_CASE(lkey_pd, "wqe.error.lkey_other_pd", "wqe",
             "an SGE whose MR is in another PD: LOC_PROT_ERR, "
             "RHN_SYN_PD_MISMATCH") {
  local_error(t, c, RHN_CQE_LOC_PROT_ERR, RHN_SYN_PD_MISMATCH,
              RHN_CNT_LOCAL_PROT_ERRORS, [](Nic& n, Loop&, Wqe& w) {
                // A translated MR: the kernel's bus-address MRs serve
                // every PD of its context (queues.md, fast registration).
                uint32_t pd2 = 0;
                Buf other;
                n.create_pd(0, &pd2);
                n.make_user_buf(0, pd2, 4096, 0x7000'0000'0000ull, &other);
                w.w->d.sge.addr = other.addr;
                w.w->d.sge.lkey = other.key;
              });
}

CONFORM_CASE(read_no_local_write, "wqe.error.read_into_readonly", "wqe",
             "a READ into an MR without local write fails locally") {
  LOOP(n, l, RHN_QP_RC);
  Buf ro;
  CONFORM_THAT(c, n.make_buf(l.pd, 4096, &ro, RHN_ACCESS_REMOTE_READ), "MR",
               n.error());
  Wqe(l.a, RHN_OP_READ)
      .sge(0, ro.addr, 64, ro.key)
      .remote(l.src.addr, l.src.key)
      .post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_THAT(
      c, e.status == RHN_CQE_LOC_PROT_ERR || e.status == RHN_CQE_LOC_ACCESS_ERR,
      "CQE status",
      "expected LOC_PROT_ERR or LOC_ACCESS_ERR, got " + hex(e.status));
  c.eq("vendor_err", RHN_SYN_ACCESS_RIGHTS, e.vendor_err);
}

// ---- remote protection ----

CONFORM_CASE(rkey_bad, "wqe.remote.bad_rkey", "wqe",
             "a WRITE with an unknown rkey: REM_ACCESS_ERR, RHN_SYN_BAD_KEY, "
             "REMOTE_ACCESS_ERRORS") {
  remote_error(t, c, RHN_OP_WRITE, RHN_CQE_REM_ACCESS_ERR, RHN_SYN_BAD_KEY,
               RHN_CNT_REMOTE_ACCESS_ERRORS,
               [](Nic&, Loop&, Wqe& w) { w.w->remote_key = 0x00fff0a5; });
}

CONFORM_CASE(rkey_bounds, "wqe.remote.write_bounds", "wqe",
             "a WRITE past the end of the remote MR: REM_ACCESS_ERR, "
             "RHN_SYN_BOUNDS") {
  remote_error(t, c, RHN_OP_WRITE, RHN_CQE_REM_ACCESS_ERR, RHN_SYN_BOUNDS,
               RHN_CNT_REMOTE_ACCESS_ERRORS, [](Nic&, Loop& l, Wqe& w) {
                 w.w->remote_addr = l.dst.addr + l.dst.len - 16;
               });
}

CONFORM_CASE(rkey_rights, "wqe.remote.write_no_rights", "wqe",
             "a WRITE to an MR without remote write: REM_ACCESS_ERR, "
             "RHN_SYN_ACCESS_RIGHTS") {
  remote_error(t, c, RHN_OP_WRITE, RHN_CQE_REM_ACCESS_ERR,
               RHN_SYN_ACCESS_RIGHTS, RHN_CNT_REMOTE_ACCESS_ERRORS,
               [](Nic& n, Loop& l, Wqe& w) {
                 Buf ro;
                 n.make_buf(l.pd, 4096, &ro,
                            RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_READ);
                 w.remote(ro.addr, ro.key);
               });
}

CONFORM_CASE(read_rights, "wqe.remote.read_no_rights", "wqe",
             "a READ of an MR without remote read: REM_ACCESS_ERR, "
             "RHN_SYN_ACCESS_RIGHTS") {
  remote_error(t, c, RHN_OP_READ, RHN_CQE_REM_ACCESS_ERR, RHN_SYN_ACCESS_RIGHTS,
               RHN_CNT_REMOTE_ACCESS_ERRORS, [](Nic& n, Loop& l, Wqe& w) {
                 Buf wo;
                 n.make_buf(l.pd, 4096, &wo,
                            RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE);
                 w.remote(wo.addr, wo.key);
                 w.w->d.sge.addr = l.dst.addr;
                 w.w->d.sge.lkey = l.dst.key;
               });
}

CONFORM_CASE(atomic_rights, "wqe.remote.atomic_no_rights", "wqe",
             "an atomic on an MR without remote atomic: REM_ACCESS_ERR, "
             "RHN_SYN_ACCESS_RIGHTS") {
  remote_error(t, c, RHN_OP_FETCH_ADD, RHN_CQE_REM_ACCESS_ERR,
               RHN_SYN_ACCESS_RIGHTS, RHN_CNT_REMOTE_ACCESS_ERRORS,
               [](Nic& n, Loop& l, Wqe& w) {
                 Buf b;
                 n.make_buf(l.pd, 4096, &b,
                            RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                                RHN_ACCESS_REMOTE_READ);
                 w.remote(b.addr, b.key);
                 w.w->d.sge.length = 8;
               });
}

// ---- areas ----

CONFORM_CASE(area_write, "wqe.area.write", "wqe",
             "a WRITE by area (RHN_WQE_F_AREA) lands at base + offset") {
  LOOP(n, l, RHN_QP_RC);
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = RHN_AREA_KEY(0, 9);
  m.u.register_area.key = l.dst.key;
  m.u.register_area.iova = l.dst.addr + 4096;
  m.u.register_area.length = 4096;
  CONFORM_EQ(c, "REGISTER_AREA", RHN_ADMIN_OK, n.run(m));
  Wqe(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA)
      .sge(0, l.src.addr, 64, l.src.key)
      .remote(100, RHN_AREA_KEY(0, 9))
      .post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr + 4096 + 100, 64, "area data");
}

CONFORM_CASE(area_bad, "wqe.area.no_such_area", "wqe",
             "a WRITE to an area ID nobody registered: REM_ACCESS_ERR, "
             "RHN_SYN_BAD_AREA") {
  remote_error(t, c, RHN_OP_WRITE, RHN_CQE_REM_ACCESS_ERR, RHN_SYN_BAD_AREA,
               RHN_CNT_REMOTE_ACCESS_ERRORS, [](Nic&, Loop&, Wqe& w) {
                 w.w->flags |= RHN_WQE_F_AREA;
                 w.remote(0, RHN_AREA_KEY(0, 4321));
               });
}

CONFORM_CASE(area_group, "wqe.area.foreign_group", "wqe",
             "an area key in a group the context is not in: LOC_PROT_ERR, "
             "RHN_SYN_BAD_GROUP, GROUP_VIOLATIONS") {
  local_error(
      t, c, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_GROUP, RHN_CNT_GROUP_VIOLATIONS,
      [](Nic&, Loop&, Wqe& w) {
        w.w->flags |= RHN_WQE_F_AREA;
        w.remote(0, RHN_AREA_KEY(7, 1));
      },
      RHN_OP_WRITE);
}

// ---- QP state ----

CONFORM_CASE(flush_rq, "wqe.flush.rq_on_err", "wqe",
             "moving a QP to ERR flushes its posted receives with "
             "WR_FLUSH_ERR") {
  LOOP(n, l, RHN_QP_RC);
  n.post_recv(l.b, l.dst.addr, 64, l.dst.key);
  n.post_recv(l.b, l.dst.addr + 64, 64, l.dst.key);
  t.settle();
  CONFORM_EQ(c, "MODIFY_QP to ERR", RHN_ADMIN_OK,
             n.modify_qp(l.b, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
  rhn_cqe e;
  for (int i = 0; i < 2; i++) {
    CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "receive CQ",
                 "no flush CQE " + std::to_string(i));
    CONFORM_EQ(c, "flush CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
    CONFORM_EQ(c, "flush CQE wqe_index", i, e.wqe_index);
  }
}

CONFORM_CASE(error_cqes, "wqe.counters.error_cqes", "wqe",
             "ERROR_CQES counts error CQEs, COMPLETIONS every CQE") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t all = n.counter(RHN_CNT_COMPLETIONS);
  const uint64_t err = n.counter(RHN_CNT_ERROR_CQES);
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  n.post_one(l.a, 0x7e, RHN_WQE_F_SIGNALED, 0, 0, 0);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e) && n.wait_cqe(l.scq, &e), "send CQ",
               "expected two CQEs");
  t.settle();
  CONFORM_EQ(c, "RHN_CNT_COMPLETIONS increase", 2,
             n.counter(RHN_CNT_COMPLETIONS) - all);
  c.eq("RHN_CNT_ERROR_CQES increase", 1, n.counter(RHN_CNT_ERROR_CQES) - err);
}

CONFORM_CASE(sq_wrap, "wqe.sq.wrap", "wqe",
             "WQEs keep completing across several laps of a 16-slot SQ") {
  Nic n(t);
  const std::string e0 = n.bring_up();
  CONFORM_THAT(c, e0.empty(), "bring-up", e0);
  Eq eq;
  Cq cq;
  uint32_t pd;
  Qp a, b;
  QpSpec spec;
  spec.sq_log = 4;
  CONFORM_THAT(c,
               n.create_eq(4, 1, &eq) && n.create_cq(0, 6, eq.eqn, &cq) &&
                   n.create_pd(0, &pd) &&
                   n.create_qp(0, pd, &cq, &cq, spec, &a) &&
                   n.create_qp(0, pd, &cq, &cq, spec, &b),
               "setup", n.error());
  const uint16_t node = uint16_t(n.r32(RHN_REG_NODE_ID));
  CONFORM_THAT(c, n.activate(a, node, b.qpn) && n.activate(b, node, a.qpn),
               "activate", n.error());
  rhn_cqe e;
  for (uint32_t i = 0; i < 40; i++) {
    n.post_one(a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
    CONFORM_THAT(c, n.wait_cqe(cq, &e), "CQE " + std::to_string(i), "none");
    CONFORM_EQ(c, "CQE " + std::to_string(i) + " wqe_index", i, e.wqe_index);
  }
}

CONFORM_CASE(wqe_wrap, "wqe.sq.multi_slot_wrap", "wqe",
             "a two-slot WQE may wrap from the last SQ slot to slot 0 "
             "(README.md decision 3)") {
  Nic n(t);
  Loop l;
  const std::string e0 = l.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  const uint32_t depth = 1u << l.a.sq_log;
  rhn_cqe e;
  // Fill all but the last slot; the last NOP's CQE says the NIC has
  // consumed them all, so slot 0 may be written again.
  for (uint32_t i = 0; i + 1 < depth; i++)
    n.post_one(l.a, RHN_OP_NOP, i + 2 == depth ? RHN_WQE_F_SIGNALED : 0, 0, 0,
               0);
  if (!cqe_is(c, n, l.scq, "last NOP's CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS,
              &e))
    return;
  n.post_recv(l.b, l.dst.addr, 4096, l.dst.key);
  Wqe w(l.a, RHN_OP_SEND);
  for (uint32_t i = 0; i < 3; i++)
    w.sge(i, l.src.addr + 100 * i, 20, l.src.key);
  CONFORM_EQ(c, "slots", 2, w.post(n, l.a));
  if (!cqe_is(c, n, l.rcq, "receive CQE", RHN_CQE_OP_RECV, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 60, e.byte_len);
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  c.eq("send CQE wqe_index", depth - 1, e.wqe_index);
}

CONFORM_CASE(qp_to_err_flush_sq, "wqe.flush.sq_on_err", "wqe",
             "WQEs posted to a QP in ERR complete WR_FLUSH_ERR") {
  LOOP(n, l, RHN_QP_RC);
  CONFORM_EQ(c, "MODIFY_QP to ERR", RHN_ADMIN_OK,
             n.modify_qp(l.a, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
  Wqe(l.a, RHN_OP_SEND).sge(0, l.src.addr, 8, l.src.key).post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no flush CQE");
  c.eq("CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
}

}  // namespace rhinet::conform

// ---- opcodes on QP types that do not take them ----

namespace rhinet::conform {
namespace {

// queues.md: a WQE with an opcode that is not implemented, or not valid
// for the QP type, completes in error with RHN_SYN_BAD_OPCODE.
struct WrongType {
  const char* name;
  uint8_t opcode;
  uint8_t qp_type;
  const char* description;  // why the QP does not take it
};

const WrongType kWrongTypes[] = {
    {"wqe.opcode.isend_on_rc", RHN_OP_ISEND, RHN_QP_RC, "endpoints only"},
    {"wqe.opcode.iprobe_on_rc", RHN_OP_IPROBE, RHN_QP_RC, "endpoints only"},
    {"wqe.opcode.irecv_cancel_on_rc", RHN_OP_IRECV_CANCEL, RHN_QP_RC,
     "endpoints only"},
    {"wqe.opcode.irecv_reserved", RHN_OP_IRECV, RHN_QP_ENDPOINT,
     "reserved: irecvs are RQ WQEs"},
    {"wqe.opcode.lock_on_rc", RHN_OP_LOCK, RHN_QP_RC,
     "locks and barriers: endpoints only"},
    {"wqe.opcode.unlock_on_rc", RHN_OP_UNLOCK, RHN_QP_RC,
     "locks and barriers: endpoints only"},
    {"wqe.opcode.barrier_on_rc", RHN_OP_BARRIER, RHN_QP_RC,
     "locks and barriers: endpoints only"},
    {"wqe.opcode.pd_request_on_rc", RHN_OP_PD_REQUEST, RHN_QP_RC,
     "remote pin-down: endpoints only"},
    {"wqe.opcode.pd_release_on_rc", RHN_OP_PD_RELEASE, RHN_QP_RC,
     "remote pin-down: endpoints only"},
    {"wqe.opcode.unsubscribe_on_rc", RHN_OP_UNSUBSCRIBE, RHN_QP_RC,
     "shared regions: endpoints only"},
    {"wqe.opcode.raw_eth_on_ud", RHN_OP_RAW_ETH, RHN_QP_UD,
     "only the RHN_QP_RAW_ETH QP (README.md decision 12)"},
    {"wqe.opcode.watch_on_rc", RHN_OP_WATCH, RHN_QP_RC,
     "watches: endpoints only"},
    {"wqe.opcode.undefined_0x0e", 0x0e, RHN_QP_RC,
     "a number the header does not define"},
    {"wqe.opcode.undefined_0x11", 0x11, RHN_QP_RC,
     "a number the header does not define"},
    {"wqe.opcode.undefined_0x7f", RHN_OP_MAX, RHN_QP_RC,
     "the upper bound of the opcode space"},
};

void wrong_type(const WrongType& w, Target& t, Check& c) {
  LOOP(n, l, w.qp_type);
  Wqe x(l.a, w.opcode);
  x.to(l, l.b);
  const uint64_t before = n.counter(RHN_CNT_ERROR_CQES);
  x.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  CONFORM_EQ(c, "CQE vendor_err", RHN_SYN_BAD_OPCODE, e.vendor_err);
  t.settle();
  c.eq("RHN_CNT_ERROR_CQES increase", 1,
       n.counter(RHN_CNT_ERROR_CQES) - before);
}

const bool wrong_type_cases = register_rows(
    kWrongTypes, "wqe", ": LOC_QP_OP_ERR, RHN_SYN_BAD_OPCODE", wrong_type);

// Locks and barriers between two endpoints of one NIC (queues.md).
void sync_op(Check& c, Nic& n, Loop& l, uint8_t opcode, uint64_t id,
             uint32_t count, uint8_t cqe_op, uint8_t status, uint8_t syndrome) {
  Wqe w(l.a, opcode);
  w.to(l, l.b);
  w.w->remote_addr = id;
  w.w->imm_data = count;
  w.post(n, l.a);
  rhn_cqe e;
  const std::string what = "opcode " + hex(opcode) + " CQE";
  if (!c.that(n.wait_cqe(l.scq, &e), what, "none")) return;
  if (!c.eq(what + " status", status, e.status)) return;
  if (status == RHN_CQE_SUCCESS)
    c.eq(what + " opcode", cqe_op, e.opcode);
  else
    c.eq(what + " vendor_err", syndrome, e.vendor_err);
}

}  // namespace

CONFORM_CASE(lock_unlock, "wqe.sync.lock_unlock", "wqe",
             "LOCK of a free lock completes (RHN_CQE_OP_LOCK), UNLOCK by the "
             "holder completes (RHN_CQE_OP_UNLOCK)") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_SYNC) != 0, "CAPS.SYNC",
               "not announced");
  sync_op(c, n, l, RHN_OP_LOCK, 42, 0, RHN_CQE_OP_LOCK, RHN_CQE_SUCCESS, 0);
  if (!c.ok()) return;
  sync_op(c, n, l, RHN_OP_UNLOCK, 42, 0, RHN_CQE_OP_UNLOCK, RHN_CQE_SUCCESS, 0);
}

namespace {

// One LOCK, UNLOCK or BARRIER between two endpoints and its completion.
struct SyncRow {
  const char* name;
  const char* description;
  uint8_t opcode;
  uint32_t count;  // BARRIER participants
  uint8_t cqe_op, status, syndrome;
};

const SyncRow kSyncRows[] = {
    {"wqe.sync.unlock_not_held",
     "UNLOCK of a lock the endpoint does not hold: REM_INV_REQ_ERR, "
     "RHN_SYN_NOT_HELD",
     RHN_OP_UNLOCK, 0, RHN_CQE_OP_UNLOCK, RHN_CQE_REM_INV_REQ_ERR,
     RHN_SYN_NOT_HELD},
    {"wqe.sync.barrier_of_one",
     "a BARRIER of 1 participant completes at once (RHN_CQE_OP_BARRIER)",
     RHN_OP_BARRIER, 1, RHN_CQE_OP_BARRIER, RHN_CQE_SUCCESS, 0},
    {"wqe.sync.barrier_count_zero",
     "a BARRIER count of 0: LOC_QP_OP_ERR, RHN_SYN_BAD_WQE", RHN_OP_BARRIER, 0,
     RHN_CQE_OP_BARRIER, RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
    {"wqe.sync.barrier_count_too_big",
     "a BARRIER count above RHN_BARRIER_MAX_MEMBERS: LOC_QP_OP_ERR, "
     "RHN_SYN_BAD_WQE",
     RHN_OP_BARRIER, RHN_BARRIER_MAX_MEMBERS + 1, RHN_CQE_OP_BARRIER,
     RHN_CQE_LOC_QP_OP_ERR, RHN_SYN_BAD_WQE},
};

void sync_row(const SyncRow& r, Target& t, Check& c) {
  LOOP(n, l, RHN_QP_ENDPOINT);
  sync_op(c, n, l, r.opcode, 7, r.count, r.cqe_op, r.status, r.syndrome);
}
const bool sync_cases = register_rows(kSyncRows, "wqe", "", sync_row);

}  // namespace

CONFORM_CASE(lock_with_data, "wqe.sync.lock_with_sge", "wqe",
             "a LOCK that carries an SGE: LOC_QP_OP_ERR, RHN_SYN_BAD_WQE") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  Wqe w(l.a, RHN_OP_LOCK);
  w.to(l, l.b).sge(0, l.src.addr, 8, l.src.key);
  w.w->remote_addr = 1;
  w.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
}

namespace {

// Area 7 of context 0 over l.dst, where a's PUSHes by area land.
constexpr uint32_t kWatchArea = RHN_AREA_KEY(0, 7);

bool watch_area(Check& c, Nic& n, Loop& l) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = kWatchArea;
  m.u.register_area.key = l.dst.key;
  m.u.register_area.iova = l.dst.addr;
  m.u.register_area.length = l.dst.len;
  return c.eq("REGISTER_AREA", RHN_ADMIN_OK, n.run(m));
}

// b arms a watch of `area`; its send completion's status and syndrome.
bool arm_watch(Check& c, Nic& n, Loop& l, uint32_t area, uint8_t status,
               uint8_t syndrome) {
  Wqe w(l.b, RHN_OP_WATCH);
  w.w->remote_key = area;
  w.post(n, l.b);
  rhn_cqe e;
  if (!c.that(n.wait_cqe(l.rcq, &e), "WATCH's CQE", "none")) return false;
  if (!c.eq("WATCH status", status, e.status)) return false;
  if (!c.that((e.flags & RHN_CQE_F_SQ) != 0, "WATCH's CQE", "no F_SQ"))
    return false;
  return c.eq("WATCH opcode", RHN_CQE_OP_WATCH, e.opcode) &&
         c.eq("WATCH vendor_err", syndrome, e.vendor_err);
}

// a PUSHes `len` bytes by area into b's area at `offset`; a's completion.
bool push_to_area(Check& c, Nic& n, Loop& l, uint32_t offset, uint32_t len) {
  Wqe p(l.a, RHN_OP_WRITE, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  p.to(l, l.b).sge(0, l.src.addr, len, l.src.key).remote(offset, kWatchArea);
  p.post(n, l.a);
  rhn_cqe e;
  if (!c.that(n.wait_cqe(l.scq, &e), "PUSH's CQE", "none")) return false;
  return c.eq("PUSH status", RHN_CQE_SUCCESS, e.status);
}

}  // namespace

CONFORM_CASE(watch_fires, "wqe.watch.fires_once", "wqe",
             "an endpoint's WATCH of its process's area completes; the next "
             "PUSH by area into it writes one RHN_CQE_OP_WATCH CQE without "
             "F_SQ on the endpoint's receive CQ (area key, length, "
             "initiator), the next one none; RHN_CNT_WATCHES_FIRED") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_WATCH) != 0, "CAPS.WATCH",
               "not announced");
  if (!watch_area(c, n, l) ||
      !arm_watch(c, n, l, kWatchArea, RHN_CQE_SUCCESS, RHN_SYN_NONE))
    return;
  const uint64_t fired = n.counter(RHN_CNT_WATCHES_FIRED);
  if (!push_to_area(c, n, l, 64, 100)) return;
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "watch CQE", "none");
  CONFORM_EQ(c, "watch CQE opcode", RHN_CQE_OP_WATCH, e.opcode);
  c.eq("watch CQE status", RHN_CQE_SUCCESS, e.status);
  c.that((e.flags & RHN_CQE_F_SQ) == 0, "watch CQE flags", "F_SQ set");
  c.eq("watch CQE qpn", l.b.qpn, e.qpn);
  c.eq("watch CQE vendor_err (the area key)", kWatchArea, e.vendor_err);
  c.eq("watch CQE byte_len", 100, e.byte_len);
  c.eq("watch CQE src_qpn", l.a.qpn, e.src_qpn);
  // One-shot: a second PUSH writes nothing.
  if (!push_to_area(c, n, l, 0, 8)) return;
  t.settle();
  c.that(!n.poll_cq(l.rcq, &e), "receive CQ after a second PUSH",
         "a second watch CQE");
  c.eq("RHN_CNT_WATCHES_FIRED increase", 1,
       n.counter(RHN_CNT_WATCHES_FIRED) - fired);
}

CONFORM_CASE(watch_no_area, "wqe.watch.no_area", "wqe",
             "a WATCH of an area the process does not have: GENERAL_ERR, "
             "RHN_SYN_NO_WATCH_AREA, RHN_CNT_WATCH_REFUSED; the endpoint "
             "goes on (a WATCH of its own area then completes)") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!watch_area(c, n, l)) return;
  const uint64_t refused = n.counter(RHN_CNT_WATCH_REFUSED);
  if (!arm_watch(c, n, l, RHN_AREA_KEY(0, 8), RHN_CQE_GENERAL_ERR,
                 RHN_SYN_NO_WATCH_AREA))
    return;
  c.eq("RHN_CNT_WATCH_REFUSED increase", 1,
       n.counter(RHN_CNT_WATCH_REFUSED) - refused);
  arm_watch(c, n, l, kWatchArea, RHN_CQE_SUCCESS, RHN_SYN_NONE);
}

}  // namespace rhinet::conform
