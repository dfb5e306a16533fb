// SPDX-License-Identifier: BSD-2-Clause
// Tag matching between endpoints (queues.md, "Tag matching: irecvs"):
// isends meeting posted irecvs and unexpected messages, masks, eager and
// rendezvous sizes, IPROBE and IRECV_CANCEL, with their CQEs and counters.
#include <string>

#include "case.h"
#include "lib/work.h"

namespace rhinet::conform {
namespace {

constexpr uint64_t kTag = 0x1122'3344'5566'7788ull;

// An irecv on b for a message from a, into dst + off.
void post_irecv(Nic& n, Loop& l, uint64_t tag, uint64_t mask, uint32_t len,
                uint32_t off = 0) {
  rhn_tag_recv_wqe r{};
  r.wqe_index = static_cast<__u16>(l.b.rq_pi);
  r.num_sge = 1;
  r.flags = RHN_RQ_F_TAG;
  r.tag = tag;
  r.mask = mask;
  r.sge.addr = l.dst.addr + off;
  r.sge.length = len;
  r.sge.lkey = l.dst.key;
  r.src_node = l.node;
  r.src_qpn = l.a.qpn;
  const uint32_t depth = 1u << l.b.rq_log;
  n.target().mem_write(
      l.b.rq + uint64_t(l.b.rq_pi & (depth - 1)) * RHN_RQ_WQE_SIZE, &r,
      sizeof(r));
  l.b.rq_pi++;
  n.wr32(l.b.rq_record, l.b.rq_pi);
  n.target().doorbell_write(0, RHN_DB_RQ, l.b.qpn, 4);
}

void isend(Nic& n, Loop& l, uint64_t tag, uint32_t len) {
  Wqe(l.a, RHN_OP_ISEND)
      .sge(0, l.src.addr, len, l.src.key)
      .to(l, l.b)
      .remote(tag, 0)
      .post(n, l.a);
}

// b's TAG_RECV CQE for a message of `len` bytes with tag `tag`.
bool tag_recv_ok(Check& c, Nic& n, Loop& l, uint64_t tag, uint32_t len,
                 uint16_t index) {
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "TAG_RECV CQE", RHN_CQE_OP_TAG_RECV, RHN_CQE_SUCCESS,
              &e))
    return false;
  if (!c.eq("wqe_index", index, e.wqe_index)) return false;
  if (!c.eq("byte_len", len, e.byte_len)) return false;
  if (!c.eq("src_node", l.node, e.src_node)) return false;
  if (!c.eq("src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK)) return false;
  if (!c.eq("imm_data (tag low)", uint32_t(tag), e.imm_data)) return false;
  if (!c.eq("vendor_err (tag high)", uint32_t(tag >> 32), e.vendor_err))
    return false;
  return same_bytes(c, n, l.src.addr, l.dst.addr, len, "message");
}

// Waits until the NIC has queued `count` unexpected isends.
bool unexpected_queued(Check& c, Nic& n, uint64_t count) {
  return c.that(
      n.target().wait_until(
          [&] { return n.counter(RHN_CNT_TAG_UNEXPECTED) == count; }, kWaitNs),
      "RHN_CNT_TAG_UNEXPECTED", "never " + std::to_string(count));
}

#define TAG_LOOP(n, l)                                                  \
  LOOP(n, l, RHN_QP_ENDPOINT);                                          \
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_TAG) != 0, "CAPS.TAG", \
               "not announced")

}  // namespace

CONFORM_CASE(posted, "tag.isend.posted_irecv", "tag",
             "an isend meets a posted irecv: TAG_RECV CQE (index, length, "
             "source, tag), the data, TAG_MATCHED_POSTED; the isend "
             "completes as SEND") {
  TAG_LOOP(n, l);
  post_irecv(n, l, kTag, ~0ull, 4096);
  t.settle();
  isend(n, l, kTag, 100);
  if (!tag_recv_ok(c, n, l, kTag, 100, 0)) return;
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "isend CQE", RHN_CQE_OP_SEND, RHN_CQE_SUCCESS, &e))
    return;
  c.eq("RHN_CNT_TAG_MATCHED_POSTED", 1, n.counter(RHN_CNT_TAG_MATCHED_POSTED));
}

CONFORM_CASE(unexpected, "tag.isend.unexpected_then_irecv", "tag",
             "an isend with no irecv waits; the irecv posted later takes it "
             "(TAG_UNEXPECTED, TAG_MATCHED_UNEXPECTED, RHN_RQ_F_TAKEN)") {
  TAG_LOOP(n, l);
  isend(n, l, kTag, 64);
  if (!unexpected_queued(c, n, 1)) return;
  post_irecv(n, l, kTag, ~0ull, 4096);
  if (!tag_recv_ok(c, n, l, kTag, 64, 0)) return;
  CONFORM_EQ(c, "RHN_CNT_TAG_MATCHED_UNEXPECTED", 1,
             n.counter(RHN_CNT_TAG_MATCHED_UNEXPECTED));
  rhn_tag_recv_wqe r;
  t.mem_read(l.b.rq, &r, sizeof(r));
  c.eq("irecv flags & RHN_RQ_F_TAKEN", RHN_RQ_F_TAKEN,
       r.flags & RHN_RQ_F_TAKEN);
}

CONFORM_CASE(mask, "tag.irecv.mask", "tag",
             "an irecv whose mask ignores the low byte takes a message whose "
             "tag differs there") {
  TAG_LOOP(n, l);
  post_irecv(n, l, kTag & ~0xffull, ~0xffull, 4096);
  t.settle();
  isend(n, l, kTag, 32);
  tag_recv_ok(c, n, l, kTag, 32, 0);
}

CONFORM_CASE(no_match, "tag.irecv.other_tag", "tag",
             "an isend whose tag matches no irecv is not delivered to it") {
  TAG_LOOP(n, l);
  post_irecv(n, l, kTag + 1, ~0ull, 4096);
  t.settle();
  isend(n, l, kTag, 32);
  t.settle();
  t.advance(1'000'000);
  rhn_cqe e;
  CONFORM_THAT(c, !n.poll_cq(l.rcq, &e), "receive CQ",
               "the irecv completed with another tag");
  c.eq("RHN_CNT_TAG_UNEXPECTED", 1, n.counter(RHN_CNT_TAG_UNEXPECTED));
}

CONFORM_CASE(rendezvous, "tag.isend.rendezvous", "tag",
             "an isend longer than RHN_TAG_EAGER_MAX arrives whole") {
  TAG_LOOP(n, l);
  const uint32_t len = RHN_TAG_EAGER_MAX + 3000;
  CONFORM_THAT(c, len <= l.src.len, "buffers", "too small");
  post_irecv(n, l, kTag, ~0ull, l.dst.len);
  t.settle();
  isend(n, l, kTag, len);
  tag_recv_ok(c, n, l, kTag, len, 0);
}

CONFORM_CASE(too_small, "tag.irecv.too_small", "tag",
             "a message longer than the irecv's buffer: LOC_LEN_ERR, the "
             "buffer holds its first bytes") {
  TAG_LOOP(n, l);
  post_irecv(n, l, kTag, ~0ull, 16);
  t.settle();
  isend(n, l, kTag, 64);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "TAG_RECV CQE", RHN_CQE_OP_TAG_RECV,
              RHN_CQE_LOC_LEN_ERR, &e))
    return;
  same_bytes(c, n, l.src.addr, l.dst.addr, 16, "first bytes");
}

CONFORM_CASE(iprobe_found, "tag.iprobe.found", "tag",
             "IPROBE of a queued message: RHN_CQE_X_FOUND, its length, "
             "source and tag; the message stays queued") {
  TAG_LOOP(n, l);
  isend(n, l, kTag, 48);
  if (!unexpected_queued(c, n, 1)) return;
  Wqe w(l.b, RHN_OP_IPROBE);
  w.w->dst_node = l.node;
  w.w->dst_qpn = l.a.qpn;
  w.w->remote_addr = kTag;
  w.w->u.tag.mask = ~0ull;
  w.post(n, l.b);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "IPROBE CQE", RHN_CQE_OP_IPROBE, RHN_CQE_SUCCESS,
              &e))
    return;
  CONFORM_EQ(c, "ext_flags & X_FOUND", RHN_CQE_X_FOUND,
             e.ext_flags & RHN_CQE_X_FOUND);
  CONFORM_EQ(c, "byte_len", 48, e.byte_len);
  CONFORM_EQ(c, "src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK);
  CONFORM_EQ(c, "imm_data (tag low)", uint32_t(kTag), e.imm_data);
  post_irecv(n, l, kTag, ~0ull, 4096);
  tag_recv_ok(c, n, l, kTag, 48, 0);
}

CONFORM_CASE(iprobe_none, "tag.iprobe.not_found", "tag",
             "IPROBE with nothing queued: IPROBE CQE without X_FOUND") {
  TAG_LOOP(n, l);
  Wqe w(l.b, RHN_OP_IPROBE);
  w.w->dst_node = l.node;
  w.w->dst_qpn = l.a.qpn;
  w.w->remote_addr = kTag;
  w.w->u.tag.mask = ~0ull;
  w.post(n, l.b);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "IPROBE CQE", RHN_CQE_OP_IPROBE, RHN_CQE_SUCCESS,
              &e))
    return;
  c.eq("ext_flags & X_FOUND", 0, e.ext_flags & RHN_CQE_X_FOUND);
}

CONFORM_CASE(cancel, "tag.irecv_cancel.posted", "tag",
             "IRECV_CANCEL of a waiting irecv: it completes WR_FLUSH_ERR, the "
             "cancel completes with X_FOUND") {
  TAG_LOOP(n, l);
  post_irecv(n, l, kTag, ~0ull, 4096);
  t.settle();
  Wqe w(l.b, RHN_OP_IRECV_CANCEL);
  w.w->remote_key = 0;
  w.post(n, l.b);
  bool got_cancel = false, got_flush = false;
  for (int i = 0; i < 2; i++) {
    rhn_cqe e;
    CONFORM_THAT(c, n.wait_cqe(l.rcq, &e), "CQ",
                 "expected the cancel's and the irecv's CQEs");
    if (e.opcode == RHN_CQE_OP_IRECV_CANCEL) {
      got_cancel = true;
      CONFORM_EQ(c, "cancel ext_flags & X_FOUND", RHN_CQE_X_FOUND,
                 e.ext_flags & RHN_CQE_X_FOUND);
    } else {
      got_flush = true;
      CONFORM_EQ(c, "irecv CQE opcode", RHN_CQE_OP_TAG_RECV, e.opcode);
      CONFORM_EQ(c, "irecv CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
    }
  }
  c.that(got_cancel && got_flush, "CQEs", "not one of each");
}

}  // namespace rhinet::conform
