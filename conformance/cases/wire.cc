// SPDX-License-Identifier: BSD-2-Clause
// The wire (wire.md): the frames the NIC sends for a request, the answers
// to frames injected from a phantom peer node, and bad input from the
// wire (CRC, magic, version, type, lengths, sessions, serials, keys,
// QPs): the NIC drops or refuses it, counts it in the documented counter,
// and goes on working. Two-node cases join two NICs by the target's
// switch.
#include <functional>
#include <string>

#include "case.h"
#include "lib/frames.h"
#include "lib/work.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::conform {
namespace {

constexpr uint16_t kPhantom = 50;  // a node no target has
constexpr uint32_t kPhantomQpn = 0x10;
// The serial of the phantom's first packet. Any serial is allowed after a
// SYN (wire.md); 0 keeps the other cases independent of
// wire.rx.syn_stream_starts_at_zero, which checks what happens when it
// is lost.
constexpr uint32_t kSeq = 0;

// A NIC with an RC QP connected to the phantom node's QP, frames only
// captured.
struct Remote {
  Eq eq;
  Cq cq;
  uint32_t pd = 0;
  Qp qp;
  Buf buf;
  uint16_t node = 0;
  std::vector<Frame> seen;

  std::string make(Nic& n) {
    n.target().set_forwarding(false);
    std::string e = n.bring_up();
    if (!e.empty()) return e;
    node = static_cast<uint16_t>(n.r32(RHN_REG_NODE_ID) & 0xffff);
    if (!n.create_eq(4, 1, &eq) || !n.create_cq(0, 6, eq.eqn, &cq) ||
        !n.create_pd(0, &pd) || !n.create_qp(0, pd, &cq, &cq, {}, &qp) ||
        !n.make_buf(pd, 16384, &buf) || !n.activate(qp, kPhantom, kPhantomQpn))
      return n.error();
    n.fill(buf.addr, 16384, 4);
    return {};
  }
  // A request from the phantom QP to ours.
  rhn_op_hdr request(uint8_t opcode, uint32_t len) const {
    rhn_op_hdr o;
    std::memset(&o, 0, sizeof(o));
    o.opcode = opcode;
    o.flags = RHN_WOP_F_FIRST | RHN_WOP_F_LAST;
    o.qp_type = RHN_QP_RC;
    o.dst_qpn = qp.qpn;
    o.src_qpn = kPhantomQpn;
    o.rkey = buf.key;
    o.remote_addr = buf.addr;
    o.msg_len = len;
    return o;
  }
  rhn_pkt_hdr first(uint32_t seq = kSeq, uint16_t session = 1) const {
    return pkt_hdr(RHN_PKT_DATA, node, kPhantom, seq, session,
                   RHN_PKT_F_SYN | RHN_PKT_F_ACK_REQ);
  }
  // Waits for a transmitted frame that `pred` accepts; keeps every frame
  // seen in `seen`.
  bool wait_frame(Target& t, const std::function<bool(const Frame&)>& pred,
                  Frame* out, uint64_t budget = kWaitNs) {
    size_t looked = 0;
    return t.wait_until(
        [&] {
          for (auto& f : t.take_tx_frames()) seen.push_back(std::move(f));
          for (; looked < seen.size(); looked++)
            if (pred(seen[looked])) {
              *out = seen[looked];
              return true;
            }
          return false;
        },
        budget);
  }
};

// Frame predicates for Remote::wait_frame.
std::function<bool(const Frame&)> of_type(uint8_t type) {
  return [type](const Frame& x) {
    return x.size() >= RHN_PKT_HDR_LEN && x[3] == type;
  };
}
std::function<bool(const Frame&)> with_op(uint8_t wop) {
  return [wop](const Frame& x) {
    return x.size() >= RHN_DATA_HDR_LEN && x[3] == RHN_PKT_DATA &&
           op_of(x).opcode == wop;
  };
}

#define REMOTE(n, r)                          \
  Nic n(t);                                   \
  Remote r;                                   \
  do {                                        \
    const std::string e_ = r.make(n);         \
    CONFORM_THAT(c, e_.empty(), "setup", e_); \
  } while (0)

bool is_type(const Frame& f, uint8_t type) {
  return f.size() >= RHN_PKT_HDR_LEN && f[3] == type;
}

// The NIC still works: an admin command completes.
bool alive(Nic& n, Check& c) {
  uint32_t pd;
  return c.that(n.create_pd(0, &pd), "NIC after the bad frame",
                "an admin command failed: " + n.error());
}

// A frame damaged by `spoil` is dropped and counted in `counter`.
void dropped(Target& t, Check& c, unsigned counter,
             const std::function<void(Frame&)>& spoil) {
  REMOTE(n, r);
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  Frame f = make_frame(r.first(), &op, data, sizeof(data));
  spoil(f);
  const uint64_t before = n.counter(counter);
  const uint64_t base = n.rd64(r.buf.addr);
  t.inject_frame(f);
  t.settle();
  t.advance(1'000'000);
  CONFORM_EQ(c, counter_name(counter) + " increase", 1,
             n.counter(counter) - before);
  CONFORM_EQ(c, "target memory (the frame must not land)", base,
             n.rd64(r.buf.addr));
  alive(n, c);
}

}  // namespace

// ---- frames out ----

CONFORM_CASE(tx_write, "wire.tx.write_frame", "wire",
             "an 8-byte RC WRITE leaves as one DATA frame: headers, flags, "
             "both CRCs, op header, payload") {
  REMOTE(n, r);
  const uint64_t tx = n.counter(RHN_CNT_TX_PACKETS);
  n.post_one(r.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, r.buf.addr, 8, r.buf.key,
             0x123456789ull, 0xabcd01);
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_DATA), &f), "wire",
               "no DATA frame transmitted");
  CONFORM_EQ(c, "frame length", RHN_DATA_HDR_LEN + 8, f.size());
  const rhn_pkt_hdr h = hdr_of(f);
  CONFORM_EQ(c, "magic", RHN_WIRE_MAGIC, h.magic);
  CONFORM_EQ(c, "byte 0 ('R')", 0x52, f[0]);
  CONFORM_EQ(c, "version", RHN_WIRE_VERSION, h.version);
  CONFORM_EQ(c, "dst_node", kPhantom, h.dst_node);
  CONFORM_EQ(c, "src_node", r.node, h.src_node);
  CONFORM_EQ(c, "flags & SYN (first packet of a session)", RHN_PKT_F_SYN,
             h.flags & RHN_PKT_F_SYN);
  CONFORM_EQ(c, "payload_len", 8, h.payload_len);
  CONFORM_EQ(c, "payload_crc", crc32c(f.data() + RHN_DATA_HDR_LEN, 8),
             h.payload_crc);
  Frame z = f;
  std::memset(z.data() + 28, 0, 4);
  CONFORM_EQ(c, "hdr_crc", crc32c(z.data(), RHN_DATA_HDR_LEN), h.hdr_crc);
  const rhn_op_hdr o = op_of(f);
  CONFORM_EQ(c, "op.opcode", RHN_WOP_WRITE, o.opcode);
  CONFORM_EQ(c, "op.flags FIRST|LAST", RHN_WOP_F_FIRST | RHN_WOP_F_LAST,
             o.flags & (RHN_WOP_F_FIRST | RHN_WOP_F_LAST));
  CONFORM_EQ(c, "op.syndrome", 0, o.syndrome);
  CONFORM_EQ(c, "op.qp_type", RHN_QP_RC, o.qp_type);
  CONFORM_EQ(c, "op.dst_qpn", kPhantomQpn, o.dst_qpn);
  CONFORM_EQ(c, "op.src_qpn & RHN_WIRE_QPN_MASK", r.qp.qpn,
             o.src_qpn & RHN_WIRE_QPN_MASK);
  CONFORM_EQ(c, "op.rkey", 0xabcd01, o.rkey);
  CONFORM_EQ(c, "op.remote_addr", 0x123456789ull, o.remote_addr);
  CONFORM_EQ(c, "op.msg_len", 8, o.msg_len);
  CONFORM_EQ(c, "op.msg_offset", 0, o.msg_offset);
  const auto mem = n.bytes(r.buf.addr, 8);
  for (int i = 0; i < 8; i++)
    CONFORM_EQ(c, "payload byte " + std::to_string(i), mem[i],
               f[RHN_DATA_HDR_LEN + i]);
  c.that(n.counter(RHN_CNT_TX_PACKETS) > tx, "RHN_CNT_TX_PACKETS",
         "did not increase");
}

CONFORM_CASE(tx_multi, "wire.tx.split_by_mtu", "wire",
             "a WRITE of 2 MTUs + 10 bytes leaves as 3 packets: FIRST, "
             "middle, LAST; offsets and addresses per packet; serials "
             "consecutive") {
  REMOTE(n, r);
  const uint32_t mtu = n.r32(RHN_REG_MTU);
  n.post_one(r.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, r.buf.addr, 2 * mtu + 10,
             r.buf.key, 0x10000, 0x4401);
  std::vector<Frame> data;
  Frame f;
  for (int i = 0; i < 3; i++) {
    CONFORM_THAT(c,
                 r.wait_frame(
                     t,
                     [&](const Frame& x) {
                       if (!is_type(x, RHN_PKT_DATA)) return false;
                       for (const auto& d : data)
                         if (d == x) return false;
                       return true;
                     },
                     &f),
                 "wire", "packet " + std::to_string(i) + " not transmitted");
    data.push_back(f);
  }
  const uint8_t want_flags[3] = {RHN_WOP_F_FIRST, 0, RHN_WOP_F_LAST};
  for (uint32_t i = 0; i < 3; i++) {
    const rhn_op_hdr o = op_of(data[i]);
    const std::string p = "packet " + std::to_string(i) + " ";
    CONFORM_EQ(c, p + "FIRST/LAST", want_flags[i],
               o.flags & (RHN_WOP_F_FIRST | RHN_WOP_F_LAST));
    CONFORM_EQ(c, p + "msg_len", 2 * mtu + 10, o.msg_len);
    CONFORM_EQ(c, p + "msg_offset", i * mtu, o.msg_offset);
    CONFORM_EQ(c, p + "remote_addr", 0x10000 + i * mtu, o.remote_addr);
    CONFORM_EQ(c, p + "payload_len", i < 2 ? mtu : 10,
               hdr_of(data[i]).payload_len);
    CONFORM_EQ(c, p + "seq", hdr_of(data[0]).seq + i, hdr_of(data[i]).seq);
  }
}

CONFORM_CASE(tx_retransmit, "wire.tx.retransmit_on_timeout", "wire",
             "an unacknowledged packet is sent again, same serial, after the "
             "retransmission timeout; TIMEOUTS and RETRANSMITS count") {
  REMOTE(n, r);
  n.post_one(r.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, r.buf.addr, 8, r.buf.key,
             0x1000, 0x4401);
  Frame first, again;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_DATA), &first), "wire",
               "no DATA frame");
  const size_t seen = r.seen.size();
  CONFORM_THAT(c,
               r.wait_frame(
                   t,
                   [&](const Frame& x) {
                     return &x >= &r.seen[0] + seen && is_type(x, RHN_PKT_DATA);
                   },
                   &again, 2'000'000'000),
               "wire", "the packet was never sent again");
  CONFORM_EQ(c, "seq of the resent packet", hdr_of(first).seq,
             hdr_of(again).seq);
  CONFORM_THAT(c, n.counter(RHN_CNT_TIMEOUTS) > 0, "RHN_CNT_TIMEOUTS",
               "still 0");
  c.that(n.counter(RHN_CNT_RETRANSMITS) > 0, "RHN_CNT_RETRANSMITS", "still 0");
}

CONFORM_CASE(tx_dead, "wire.tx.peer_dead", "wire",
             "a peer that never answers is declared dead: the WQE completes "
             "RETRY_EXC_ERR, RHN_SYN_RETRY_EXCEEDED; PEER_DEAD counts") {
  REMOTE(n, r);
  n.post_one(r.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, r.buf.addr, 8, r.buf.key,
             0x1000, 0x4401);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(r.cq, &e, 60'000'000'000ull), "send CQ",
               "no CQE within 60 s of NIC time");
  CONFORM_EQ(c, "CQE status", RHN_CQE_RETRY_EXC_ERR, e.status);
  CONFORM_EQ(c, "CQE vendor_err", RHN_SYN_RETRY_EXCEEDED, e.vendor_err);
  c.eq("RHN_CNT_PEER_DEAD", 1, n.counter(RHN_CNT_PEER_DEAD));
}

// ---- frames in: the good path ----

CONFORM_CASE(rx_write, "wire.rx.write_lands_and_acks", "wire",
             "an injected WRITE (SYN, ACK_REQ) lands in memory and is "
             "answered by an ACK with ack_seq = seq + 1") {
  REMOTE(n, r);
  const uint8_t data[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  const uint64_t rx = n.counter(RHN_CNT_RX_PACKETS);
  t.inject_frame(make_frame(r.first(), &op, data, sizeof(data)));
  Frame ack;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_ACK), &ack), "wire",
               "no ACK");
  const auto mem = n.bytes(r.buf.addr, sizeof(data));
  for (size_t i = 0; i < sizeof(data); i++)
    CONFORM_EQ(c, "target byte " + std::to_string(i), data[i], mem[i]);
  const rhn_pkt_hdr h = hdr_of(ack);
  CONFORM_EQ(c, "ACK frame length", RHN_PKT_HDR_LEN, ack.size());
  CONFORM_EQ(c, "ACK dst_node", kPhantom, h.dst_node);
  CONFORM_EQ(c, "ACK src_node", r.node, h.src_node);
  CONFORM_EQ(c, "ACK ack_seq", kSeq + 1, h.ack_seq);
  CONFORM_EQ(c, "ACK ack_session", 1, h.ack_session);
  CONFORM_EQ(c, "ACK payload_len", 0, h.payload_len);
  Frame z = ack;
  std::memset(z.data() + 28, 0, 4);
  CONFORM_EQ(c, "ACK hdr_crc", crc32c(z.data(), RHN_PKT_HDR_LEN), h.hdr_crc);
  c.that(n.counter(RHN_CNT_RX_PACKETS) > rx, "RHN_CNT_RX_PACKETS",
         "did not increase");
}

CONFORM_CASE(rx_syn_serial, "wire.rx.syn_stream_starts_at_zero", "wire",
             "a session's stream starts at serial 0: a SYN packet with "
             "serial 1 (serial 0 was lost) is NAKed for 0 and not placed; "
             "serial 0 then lands and the ACK covers both") {
  REMOTE(n, r);
  const uint8_t first[8] = {4, 4, 4, 4, 4, 4, 4, 4};
  const uint8_t second[8] = {5, 5, 5, 5, 5, 5, 5, 5};
  rhn_op_hdr op0 = r.request(RHN_WOP_WRITE, sizeof(first));
  rhn_op_hdr op1 = op0;
  op1.remote_addr = r.buf.addr + 8;
  op1.msn = 1;
  t.inject_frame(make_frame(r.first(1), &op1, second, sizeof(second)));
  Frame nak;
  CONFORM_THAT(c,
               r.wait_frame(
                   t,
                   [](const Frame& x) {
                     return is_type(x, RHN_PKT_ACK) || is_type(x, RHN_PKT_NAK);
                   },
                   &nak),
               "wire", "no answer to the SYN with serial 1");
  CONFORM_EQ(c, "answer to serial 1 (NAK)", RHN_PKT_NAK, hdr_of(nak).type);
  CONFORM_EQ(c, "NAK ack_seq (serial 0 expected)", 0, hdr_of(nak).ack_seq);
  const std::vector<uint8_t> untouched = n.bytes(r.buf.addr + 8, 8);
  c.that(std::memcmp(untouched.data(), second, 8) != 0,
         "word of serial 1 before serial 0 came",
         "written: serial 1 was taken as the start of the stream");
  t.inject_frame(make_frame(r.first(0), &op0, first, sizeof(first)));
  t.inject_frame(make_frame(r.first(1), &op1, second, sizeof(second)));
  Frame ack;
  CONFORM_THAT(c,
               r.wait_frame(
                   t,
                   [](const Frame& x) {
                     return is_type(x, RHN_PKT_ACK) && hdr_of(x).ack_seq == 2;
                   },
                   &ack),
               "wire", "no ACK of serials 0 and 1");
  c.eq("word of serial 0", 0x0404040404040404ull, n.rd64(r.buf.addr));
  c.eq("word of serial 1", 0x0505050505050505ull, n.rd64(r.buf.addr + 8));
}

CONFORM_CASE(rx_read, "wire.rx.read_answered", "wire",
             "an injected READ_REQ is answered by READ_RESP with the bytes, "
             "the request's msn, LAST set") {
  REMOTE(n, r);
  rhn_op_hdr op = r.request(RHN_WOP_READ_REQ, 24);
  op.msn = 5;
  t.inject_frame(make_frame(r.first(), &op, nullptr, 0));
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, with_op(RHN_WOP_READ_RESP), &f), "wire",
               "no READ_RESP");
  const rhn_op_hdr o = op_of(f);
  CONFORM_EQ(c, "READ_RESP msn", 5, o.msn);
  CONFORM_EQ(c, "READ_RESP dst_qpn", kPhantomQpn, o.dst_qpn);
  CONFORM_EQ(c, "READ_RESP LAST", RHN_WOP_F_LAST, o.flags & RHN_WOP_F_LAST);
  CONFORM_EQ(c, "READ_RESP payload_len", 24, hdr_of(f).payload_len);
  const auto mem = n.bytes(r.buf.addr, 24);
  for (int i = 0; i < 24; i++)
    CONFORM_EQ(c, "READ_RESP byte " + std::to_string(i), mem[i],
               f[RHN_DATA_HDR_LEN + i]);
}

CONFORM_CASE(rx_fetch_add, "wire.rx.fetch_add_answered", "wire",
             "an injected FETCH_ADD is answered by ATOMIC_RESP with the "
             "original value; the target word is added to") {
  REMOTE(n, r);
  n.wr64(r.buf.addr, 40);
  rhn_op_hdr op = r.request(RHN_WOP_FETCH_ADD, 8);
  uint64_t operands[2] = {2, 0};
  t.inject_frame(make_frame(r.first(), &op, operands, sizeof(operands)));
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, with_op(RHN_WOP_ATOMIC_RESP), &f), "wire",
               "no ATOMIC_RESP");
  CONFORM_EQ(c, "ATOMIC_RESP payload_len", 8, hdr_of(f).payload_len);
  uint64_t old = 0;
  std::memcpy(&old, f.data() + RHN_DATA_HDR_LEN, 8);
  CONFORM_EQ(c, "original value", 40, old);
  c.eq("target word", 42, n.rd64(r.buf.addr));
}

CONFORM_CASE(rx_atomic_ext, "wire.rx.atomic_ext_answered", "wire",
             "an injected 32-bit ATOMIC_EXT XOR is answered by ATOMIC_RESP "
             "with the 4-byte original value; the same frame again (a "
             "duplicate) is not applied twice") {
  REMOTE(n, r);
  n.wr64(r.buf.addr, 0x99999999000000f0ull);
  rhn_op_hdr op = r.request(RHN_WOP_ATOMIC_EXT, 4);
  op.imm_data = RHN_AOP_XOR | RHN_AOP_F_32;
  uint64_t operands[2] = {0xff, 0};
  const Frame req = make_frame(r.first(), &op, operands, sizeof(operands));
  t.inject_frame(req);
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, with_op(RHN_WOP_ATOMIC_RESP), &f), "wire",
               "no ATOMIC_RESP");
  CONFORM_EQ(c, "ATOMIC_RESP payload_len", 4, hdr_of(f).payload_len);
  uint32_t old = 0;
  std::memcpy(&old, f.data() + RHN_DATA_HDR_LEN, 4);
  CONFORM_EQ(c, "original value", 0xf0u, old);
  CONFORM_EQ(c, "target word", 0x999999990000000full, n.rd64(r.buf.addr));
  const uint64_t dups = n.counter(RHN_CNT_DUPLICATES);
  t.inject_frame(req);
  t.settle();
  t.advance(1'000'000);
  CONFORM_EQ(c, "RHN_CNT_DUPLICATES increase", 1,
             n.counter(RHN_CNT_DUPLICATES) - dups);
  c.eq("target word after the duplicate", 0x999999990000000full,
       n.rd64(r.buf.addr));
}

CONFORM_CASE(rx_atomic_ext_no_fetch, "wire.rx.atomic_ext_no_fetch", "wire",
             "an injected ATOMIC_EXT with RHN_AOP_F_NO_FETCH is answered by "
             "an empty ATOMIC_RESP; the word is set") {
  REMOTE(n, r);
  n.wr64(r.buf.addr, 1);
  rhn_op_hdr op = r.request(RHN_WOP_ATOMIC_EXT, 0);
  op.imm_data = RHN_AOP_SWAP | RHN_AOP_F_NO_FETCH;
  uint64_t operands[2] = {0x4242, 0};
  t.inject_frame(make_frame(r.first(), &op, operands, sizeof(operands)));
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, with_op(RHN_WOP_ATOMIC_RESP), &f), "wire",
               "no ATOMIC_RESP");
  CONFORM_EQ(c, "ATOMIC_RESP payload_len", 0, hdr_of(f).payload_len);
  c.eq("target word", 0x4242, n.rd64(r.buf.addr));
}

// ---- frames in: transport errors ----

CONFORM_CASE(rx_dup, "wire.rx.duplicate", "wire",
             "a packet again with a serial already accepted: dropped, counted "
             "in DUPLICATES, answered with an ACK") {
  REMOTE(n, r);
  const uint8_t data[8] = {1};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  const Frame f = make_frame(r.first(), &op, data, sizeof(data));
  t.inject_frame(f);
  Frame ack;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_ACK), &ack), "wire",
               "no ACK for the first copy");
  const size_t seen = r.seen.size();
  t.inject_frame(f);
  CONFORM_THAT(c,
               r.wait_frame(
                   t,
                   [&](const Frame& x) {
                     return &x >= &r.seen[0] + seen && is_type(x, RHN_PKT_ACK);
                   },
                   &ack),
               "wire", "no ACK for the duplicate");
  c.eq("RHN_CNT_DUPLICATES", 1, n.counter(RHN_CNT_DUPLICATES));
}

CONFORM_CASE(rx_gap, "wire.rx.out_of_order", "wire",
             "a packet beyond the expected serial: dropped, counted in "
             "OUT_OF_ORDER, answered by a NAK with ack_seq = the expected "
             "serial") {
  REMOTE(n, r);
  const uint8_t data[8] = {1};
  rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  t.inject_frame(make_frame(r.first(), &op, data, sizeof(data)));
  t.settle();
  op.msn = 2;
  const uint64_t before = n.rd64(r.buf.addr + 64);
  op.remote_addr = r.buf.addr + 64;
  t.inject_frame(make_frame(
      pkt_hdr(RHN_PKT_DATA, r.node, kPhantom, kSeq + 2, 1, RHN_PKT_F_ACK_REQ),
      &op, data, sizeof(data)));
  Frame nak;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_NAK), &nak), "wire",
               "no transport NAK");
  CONFORM_EQ(c, "NAK ack_seq", kSeq + 1, hdr_of(nak).ack_seq);
  CONFORM_EQ(c, "RHN_CNT_OUT_OF_ORDER", 1, n.counter(RHN_CNT_OUT_OF_ORDER));
  c.eq("memory of the dropped packet", before, n.rd64(r.buf.addr + 64));
}

CONFORM_CASE(rx_resync, "wire.rx.unknown_session", "wire",
             "DATA of an unknown session without SYN: answered by a NAK with "
             "RHN_PKT_F_RESYNC, nothing lands") {
  REMOTE(n, r);
  const uint8_t data[8] = {7};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  const uint64_t before = n.rd64(r.buf.addr);
  t.inject_frame(make_frame(
      pkt_hdr(RHN_PKT_DATA, r.node, kPhantom, kSeq, 1, RHN_PKT_F_ACK_REQ), &op,
      data, sizeof(data)));
  Frame nak;
  CONFORM_THAT(c, r.wait_frame(t, of_type(RHN_PKT_NAK), &nak), "wire",
               "no NAK");
  CONFORM_EQ(c, "NAK flags & RESYNC", RHN_PKT_F_RESYNC,
             hdr_of(nak).flags & RHN_PKT_F_RESYNC);
  c.eq("target memory", before, n.rd64(r.buf.addr));
}

CONFORM_CASE(rx_stale, "wire.rx.older_session_syn", "wire",
             "a SYN of an older session while the current one is busy: "
             "STALE_PACKETS, NAK with RHN_PKT_F_BEHIND and the current "
             "session in ack_seq") {
  REMOTE(n, r);
  const uint8_t data[8] = {7};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  t.inject_frame(make_frame(r.first(kSeq, 5), &op, data, sizeof(data)));
  t.settle();
  t.inject_frame(make_frame(r.first(kSeq + 50, 4), &op, data, sizeof(data)));
  Frame nak;
  CONFORM_THAT(c,
               r.wait_frame(
                   t,
                   [](const Frame& x) {
                     return is_type(x, RHN_PKT_NAK) &&
                            (hdr_of(x).flags & RHN_PKT_F_BEHIND);
                   },
                   &nak),
               "wire", "no NAK with BEHIND");
  CONFORM_EQ(c, "NAK ack_seq (the receiver's session)", 5, hdr_of(nak).ack_seq);
  c.eq("RHN_CNT_STALE_PACKETS", 1, n.counter(RHN_CNT_STALE_PACKETS));
}

CONFORM_CASE(rx_stray_ack, "wire.rx.stray_ack", "wire",
             "an ACK and a NAK from a node the NIC never talked to: no effect, "
             "the NIC goes on") {
  REMOTE(n, r);
  t.inject_frame(
      make_frame(pkt_hdr(RHN_PKT_ACK, r.node, 77, 3, 9), nullptr, nullptr, 0));
  t.inject_frame(
      make_frame(pkt_hdr(RHN_PKT_NAK, r.node, 78, 3, 9), nullptr, nullptr, 0));
  t.settle();
  alive(n, c);
}

// ---- frames in: damaged ----

CONFORM_CASE(rx_hdr_crc, "wire.rx.bad_hdr_crc", "wire",
             "a wrong header CRC: dropped, counted in CRC_ERRORS") {
  dropped(t, c, RHN_CNT_CRC_ERRORS, [](Frame& f) { f[28] ^= 1; });
}

CONFORM_CASE(rx_hdr_bit, "wire.rx.header_bit_flip", "wire",
             "one header bit flipped after sealing: CRC_ERRORS") {
  dropped(t, c, RHN_CNT_CRC_ERRORS, [](Frame& f) { f[48] ^= 0x10; });
}

CONFORM_CASE(rx_payload_crc, "wire.rx.bad_payload_crc", "wire",
             "a payload byte changed after sealing: CRC_ERRORS") {
  dropped(t, c, RHN_CNT_CRC_ERRORS,
          [](Frame& f) { f[RHN_DATA_HDR_LEN + 3] ^= 0xff; });
}

CONFORM_CASE(rx_magic, "wire.rx.bad_magic", "wire",
             "a wrong magic (CRCs right): MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    f[0] = 'X';
    seal(f);
  });
}

CONFORM_CASE(rx_version, "wire.rx.bad_version", "wire",
             "a wrong version (CRCs right): MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    f[2] = RHN_WIRE_VERSION + 1;
    seal(f);
  });
}

CONFORM_CASE(rx_type, "wire.rx.bad_type", "wire",
             "a packet type the header does not define: MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    f[3] = 0x3f;
    seal(f);
  });
}

CONFORM_CASE(rx_truncated, "wire.rx.truncated_header", "wire",
             "a frame shorter than the transport header: MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) { f.resize(20); });
}

CONFORM_CASE(rx_truncated_op, "wire.rx.data_without_op_header", "wire",
             "a DATA frame of 32 bytes (no operation header): "
             "MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    f.resize(RHN_PKT_HDR_LEN);
    rhn_pkt_hdr h = hdr_of(f);
    h.payload_len = 0;
    h.payload_crc = 0;
    h.hdr_crc = 0;
    std::memcpy(f.data(), &h, sizeof(h));
    h.hdr_crc = crc32c(f.data(), RHN_PKT_HDR_LEN);
    std::memcpy(f.data(), &h, sizeof(h));
  });
}

CONFORM_CASE(rx_len, "wire.rx.payload_len_mismatch", "wire",
             "payload_len larger than the bytes that came: "
             "MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    rhn_pkt_hdr h = hdr_of(f);
    h.payload_len = static_cast<__le16>(h.payload_len + 4);
    h.hdr_crc = 0;
    std::memcpy(f.data(), &h, sizeof(h));
    h.hdr_crc = crc32c(f.data(), RHN_DATA_HDR_LEN);
    std::memcpy(f.data(), &h, sizeof(h));
  });
}

CONFORM_CASE(rx_oversize, "wire.rx.payload_too_long", "wire",
             "a DATA payload above RHN_WIRE_MTU + 40: MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) {
    f.resize(RHN_DATA_HDR_LEN + RHN_WIRE_MTU + RHN_WIRE_GRH_LEN + 1, 0x11);
    seal(f);
  });
}

CONFORM_CASE(rx_empty, "wire.rx.empty_frame", "wire",
             "a frame of 0 bytes: MALFORMED_PACKETS") {
  dropped(t, c, RHN_CNT_MALFORMED_PACKETS, [](Frame& f) { f.clear(); });
}

// ---- frames in: responder errors ----

void nak_for(Target& t, Check& c, uint8_t syndrome, unsigned counter,
             const std::function<void(Remote&, rhn_op_hdr&)>& spoil) {
  REMOTE(n, r);
  const uint8_t data[16] = {3};
  rhn_op_hdr op = r.request(RHN_WOP_WRITE, 8);
  op.msn = 3;
  spoil(r, op);
  // Atomics carry their 16 bytes of operands; others msg_len bytes.
  const size_t len = op.opcode == RHN_WOP_WRITE ? op.msg_len : 16;
  const uint64_t before = n.counter(counter);
  t.inject_frame(make_frame(r.first(), &op, data, len));
  Frame f;
  CONFORM_THAT(c, r.wait_frame(t, with_op(RHN_WOP_NAK), &f), "wire",
               "no NAK operation");
  const rhn_op_hdr o = op_of(f);
  CONFORM_EQ(c, "NAK syndrome", syndrome, o.syndrome);
  CONFORM_EQ(c, "NAK msn", 3, o.msn);
  // Responses name the requester's src_qpn as it came (wire.md).
  CONFORM_EQ(c, "NAK dst_qpn", op.src_qpn, o.dst_qpn);
  c.eq(counter_name(counter) + " increase", 1, n.counter(counter) - before);
}

CONFORM_CASE(rx_bad_rkey, "wire.rx.write_bad_rkey", "wire",
             "an injected WRITE with an unknown rkey: NAK RHN_SYN_BAD_KEY, "
             "REMOTE_ACCESS_ERRORS") {
  nak_for(t, c, RHN_SYN_BAD_KEY, RHN_CNT_REMOTE_ACCESS_ERRORS,
          [](Remote&, rhn_op_hdr& o) { o.rkey = 0x00fff0a5; });
}

CONFORM_CASE(rx_bounds, "wire.rx.write_bounds", "wire",
             "an injected WRITE past the MR's end: NAK RHN_SYN_BOUNDS, "
             "REMOTE_ACCESS_ERRORS") {
  nak_for(t, c, RHN_SYN_BOUNDS, RHN_CNT_REMOTE_ACCESS_ERRORS,
          [](Remote& r, rhn_op_hdr& o) {
            o.remote_addr = r.buf.addr + r.buf.len - 4;
          });
}

CONFORM_CASE(rx_no_qp, "wire.rx.no_such_qp", "wire",
             "an injected WRITE to a QPN no QP has: NAK RHN_SYN_BAD_QP, "
             "NO_QP_REQUESTS") {
  nak_for(t, c, RHN_SYN_BAD_QP, RHN_CNT_NO_QP_REQUESTS,
          [](Remote&, rhn_op_hdr& o) { o.dst_qpn = 0x00abcd; });
}

CONFORM_CASE(rx_other_peer, "wire.rx.qp_connected_elsewhere", "wire",
             "an injected WRITE from a QP the target QP is not connected "
             "to: NAK RHN_SYN_BAD_QP, NO_QP_REQUESTS") {
  nak_for(t, c, RHN_SYN_BAD_QP, RHN_CNT_NO_QP_REQUESTS,
          [](Remote&, rhn_op_hdr& o) { o.src_qpn = kPhantomQpn + 1; });
}

CONFORM_CASE(rx_atomic_align, "wire.rx.atomic_unaligned", "wire",
             "an injected FETCH_ADD to an address not 8-byte aligned: NAK "
             "RHN_SYN_ALIGNMENT, REMOTE_INVALID_REQUESTS") {
  nak_for(t, c, RHN_SYN_ALIGNMENT, RHN_CNT_REMOTE_INVALID_REQUESTS,
          [](Remote& r, rhn_op_hdr& o) {
            o.opcode = RHN_WOP_FETCH_ADD;
            o.remote_addr = r.buf.addr + 4;
          });
}

CONFORM_CASE(rx_unknown_op, "wire.rx.unknown_opcode", "wire",
             "a request with a wire opcode the header does not define is "
             "refused and counted; the NIC goes on") {
  REMOTE(n, r);
  const uint8_t data[8] = {3};
  rhn_op_hdr op = r.request(0x7f, sizeof(data));
  const uint64_t before = n.counter(RHN_CNT_REMOTE_INVALID_REQUESTS) +
                          n.counter(RHN_CNT_MALFORMED_PACKETS);
  t.inject_frame(make_frame(r.first(), &op, data, sizeof(data)));
  t.settle();
  t.advance(1'000'000);
  CONFORM_EQ(c, "REMOTE_INVALID_REQUESTS + MALFORMED_PACKETS increase", 1,
             n.counter(RHN_CNT_REMOTE_INVALID_REQUESTS) +
                 n.counter(RHN_CNT_MALFORMED_PACKETS) - before);
  alive(n, c);
}

CONFORM_CASE(rx_raw_no_qp, "wire.rx.raw_without_raw_qp", "wire",
             "a RAW frame for this node with no raw QP: dropped, counted in "
             "UD_DROPS (README.md decision 12)") {
  REMOTE(n, r);
  const uint8_t eth[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const uint64_t before = n.counter(RHN_CNT_UD_DROPS);
  t.inject_frame(make_frame(pkt_hdr(RHN_PKT_RAW, r.node, kPhantom, 0, 0),
                            nullptr, eth, sizeof(eth)));
  t.settle();
  c.eq("RHN_CNT_UD_DROPS increase", 1, n.counter(RHN_CNT_UD_DROPS) - before);
}

// ---- two nodes ----

namespace {

// One QP of `type` on each of two NICs joined by the target's switch,
// connected (RC/UC) or addressed (datagrams) to each other.
struct Side {
  Eq eq;
  Cq cq;
  uint32_t pd = 0;
  Qp qp;
  Buf buf;
  uint16_t node = 0;
  // translated: the QP's SQ ring and record and the buffer in translated
  // MRs, as a user process has them.
  std::string make(Nic& n, uint8_t type, bool translated = false) {
    std::string e = n.bring_up();
    if (!e.empty()) return e;
    node = uint16_t(n.r32(RHN_REG_NODE_ID));
    QpSpec spec;
    spec.type = type;
    spec.rings_in_mr = translated;
    if (!n.create_eq(4, 1, &eq) || !n.create_cq(0, 6, eq.eqn, &cq) ||
        !n.create_pd(0, &pd) || !n.create_qp(0, pd, &cq, &cq, spec, &qp) ||
        !(translated ? n.make_mapped_buf(pd, 8192, &buf)
                     : n.make_buf(pd, 8192, &buf)))
      return n.error();
    return {};
  }
};

struct TwoNodes {
  Nic* a = nullptr;
  Nic* b = nullptr;
  Side sa, sb;
  std::string make(Nic& na, Nic& nb, uint8_t type, bool translated = false) {
    a = &na;
    b = &nb;
    std::string e = sa.make(na, type, translated);
    if (e.empty()) e = sb.make(nb, type, translated);
    if (!e.empty()) return e;
    if (sa.node == sb.node) return "both nodes read NODE_ID " + hex(sa.node);
    if (!na.activate(sa.qp, sb.node, sb.qp.qpn, 0x77) ||
        !nb.activate(sb.qp, sa.node, sa.qp.qpn, 0x77))
      return na.error() + nb.error();
    na.fill(sa.buf.addr, 8192, 5);
    return {};
  }
  // A SEND of `len` bytes from a to b; true when it landed whole.
  bool send(Check& c, uint32_t len) {
    b->post_recv(sb.qp, sb.buf.addr, 4096, sb.buf.key);
    Wqe w(sa.qp, RHN_OP_SEND);
    w.sge(0, sa.buf.addr, len, sa.buf.key);
    w.w->dst_node = sb.node;
    w.w->dst_qpn = sb.qp.qpn;
    if (sa.qp.type == RHN_QP_UD) w.w->u.status.qkey = 0x77;
    w.post(*a, sa.qp);
    rhn_cqe e;
    if (!cqe_is(c, *b, sb.cq, "node B receive CQE", RHN_CQE_OP_RECV,
                RHN_CQE_SUCCESS, &e))
      return false;
    const uint32_t room = sa.qp.type == RHN_QP_UD ? RHN_UD_GRH_LEN : 0;
    if (!c.eq("receive byte_len", room + len, e.byte_len)) return false;
    if (sa.qp.type != RHN_QP_RC && !c.eq("src_node", sa.node, e.src_node))
      return false;
    const auto want = a->bytes(sa.buf.addr, len);
    const auto got = b->bytes(sb.buf.addr + room, len);
    for (size_t i = 0; i < len; i++)
      if (!c.eq("byte " + std::to_string(i) + " at node B", want[i], got[i]))
        return false;
    return cqe_is(c, *a, sa.cq, "node A send CQE", RHN_CQE_OP_SEND,
                  RHN_CQE_SUCCESS, &e);
  }
};

#define TWO_NODES(type, translated)                              \
  Target* p = t.peer();                                          \
  CONFORM_THAT(c, p != nullptr, "target", "has no second node"); \
  Nic na(t), nb(*p);                                             \
  TwoNodes two;                                                  \
  do {                                                           \
    const std::string e_ = two.make(na, nb, type, translated);   \
    CONFORM_THAT(c, e_.empty(), "setup", e_);                    \
  } while (0)
#define TWO(type) TWO_NODES(type, false)

}  // namespace

CONFORM_CASE(two_node_rc, "wire.two_nodes.rc_send_write_read", "wire",
             "two NICs on one switch: an RC SEND, WRITE and READ between "
             "them") {
  TWO(RHN_QP_RC);
  if (!two.send(c, 100)) return;
  Side& a = two.sa;
  Side& b = two.sb;
  rhn_cqe ev;
  na.post_one(a.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, a.buf.addr + 200, 300,
              a.buf.key, b.buf.addr + 4096, b.buf.key);
  if (!cqe_is(c, na, a.cq, "WRITE CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &ev))
    return;
  const auto want = na.bytes(a.buf.addr + 200, 300);
  const auto got = nb.bytes(b.buf.addr + 4096, 300);
  for (size_t i = 0; i < want.size(); i++)
    CONFORM_EQ(c, "WRITE byte " + std::to_string(i) + " at node B", want[i],
               got[i]);
  na.post_one(a.qp, RHN_OP_READ, RHN_WQE_F_SIGNALED, a.buf.addr + 6000, 64,
              a.buf.key, b.buf.addr, b.buf.key);
  if (!cqe_is(c, na, a.cq, "READ CQE", RHN_CQE_OP_READ, RHN_CQE_SUCCESS, &ev))
    return;
  const auto rb = nb.bytes(b.buf.addr, 64),
             ra = na.bytes(a.buf.addr + 6000, 64);
  for (size_t i = 0; i < 64; i++)
    CONFORM_EQ(c, "READ byte " + std::to_string(i), rb[i], ra[i]);
}

CONFORM_CASE(two_node_write_stream, "wire.two_nodes.rc_write_stream", "wire",
             "RC WRITEs between two NICs from translated queues and "
             "buffers, one and then eight on one doorbell: every byte "
             "lands, a CQE each, in order") {
  TWO_NODES(RHN_QP_RC, true);
  Side& a = two.sa;
  Side& b = two.sb;
  constexpr uint32_t kLen = 8, kBatch = 8;
  rhn_cqe ev;
  na.post_one(a.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, a.buf.addr, kLen,
              a.buf.key, b.buf.addr, b.buf.key);
  if (!cqe_is(c, na, a.cq, "first WRITE CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS,
              &ev))
    return;
  for (uint32_t i = 1; i <= kBatch; i++) {
    Wqe w(a.qp, RHN_OP_WRITE);
    w.sge(0, a.buf.addr + i * 64, kLen, a.buf.key)
        .remote(b.buf.addr + i * 64, b.buf.key);
    const uint32_t slots = rhn_wqe_finish(w.buf, w.data, nullptr);
    na.post_send(a.qp, w.buf, slots, i == kBatch);
  }
  for (uint32_t i = 1; i <= kBatch; i++)
    if (!cqe_is(c, na, a.cq, "WRITE CQE " + std::to_string(i), RHN_CQE_OP_WRITE,
                RHN_CQE_SUCCESS, &ev))
      return;
  for (uint32_t i = 0; i <= kBatch; i++) {
    const auto want = na.bytes(a.buf.addr + i * 64, kLen);
    const auto got = nb.bytes(b.buf.addr + i * 64, kLen);
    for (uint32_t k = 0; k < kLen; k++)
      CONFORM_EQ(c, "WRITE " + std::to_string(i) + " byte " + std::to_string(k),
                 want[k], got[k]);
  }
}

CONFORM_CASE(two_node_ud, "wire.two_nodes.ud_send", "wire",
             "a UD SEND from one NIC to another lands after the GRH room") {
  TWO(RHN_QP_UD);
  two.send(c, 200);
}

CONFORM_CASE(two_node_ep, "wire.two_nodes.endpoint_send", "wire",
             "an endpoint SEND from one NIC to another, multi-packet") {
  TWO(RHN_QP_ENDPOINT);
  two.send(c, 4096 - 7);
}

CONFORM_CASE(two_node_counters, "wire.two_nodes.packet_counters", "wire",
             "a SEND between two NICs counts TX_PACKETS at the sender and "
             "RX_PACKETS at the receiver; ACKs flow back") {
  TWO(RHN_QP_RC);
  const uint64_t tx = na.counter(RHN_CNT_TX_PACKETS);
  const uint64_t rx = nb.counter(RHN_CNT_RX_PACKETS);
  if (!two.send(c, 64)) return;
  t.advance(1'000'000);
  CONFORM_THAT(c, na.counter(RHN_CNT_TX_PACKETS) > tx,
               "node A RHN_CNT_TX_PACKETS", "did not increase");
  CONFORM_THAT(c, nb.counter(RHN_CNT_RX_PACKETS) > rx,
               "node B RHN_CNT_RX_PACKETS", "did not increase");
  CONFORM_THAT(c, nb.counter(RHN_CNT_ACKS_SENT) > 0, "node B RHN_CNT_ACKS_SENT",
               "still 0");
  c.that(na.counter(RHN_CNT_ACKS_RECEIVED) > 0, "node A RHN_CNT_ACKS_RECEIVED",
         "still 0");
}

CONFORM_CASE(two_node_wrong_peer, "wire.two_nodes.rc_peer_mismatch", "wire",
             "an RC request to a QP connected elsewhere is refused: with "
             "timeout 0 nothing completes until the QP is moved to ERR, "
             "then WR_FLUSH_ERR; NO_QP_REQUESTS counts at the target") {
  TWO(RHN_QP_RC);
  // b's QP now points at a QP number a does not have.
  CONFORM_EQ(c, "MODIFY_QP b to RESET", RHN_ADMIN_OK,
             nb.modify_qp(two.sb.qp, RHN_QP_ATTR_STATE, RHN_QPS_RESET));
  CONFORM_THAT(c, nb.activate(two.sb.qp, two.sa.node, two.sa.qp.qpn + 1000),
               "reconnect b", nb.error());
  na.post_one(two.sa.qp, RHN_OP_WRITE, RHN_WQE_F_SIGNALED, two.sa.buf.addr, 8,
              two.sa.buf.key, two.sb.buf.addr, two.sb.buf.key);
  CONFORM_THAT(
      c,
      t.wait_until([&] { return nb.counter(RHN_CNT_NO_QP_REQUESTS) > 0; },
                   kWaitNs),
      "node B RHN_CNT_NO_QP_REQUESTS", "still 0");
  t.advance(10'000'000);
  rhn_cqe e;
  CONFORM_THAT(c, !na.poll_cq(two.sa.cq, &e), "node A send CQ",
               "completed (status " + hex(e.status) +
                   ") although timeout 0 waits forever");
  CONFORM_EQ(c, "MODIFY_QP a to ERR", RHN_ADMIN_OK,
             na.modify_qp(two.sa.qp, RHN_QP_ATTR_STATE, RHN_QPS_ERR));
  CONFORM_THAT(c, na.wait_cqe(two.sa.cq, &e), "node A send CQ",
               "no CQE after ERR");
  c.eq("CQE status", RHN_CQE_WR_FLUSH_ERR, e.status);
}

}  // namespace rhinet::conform

namespace rhinet::conform {

CONFORM_CASE(rx_flood, "wire.rx.flood_accounted", "wire",
             "1000 damaged frames at once: each is counted, as a CRC error "
             "or as a drop of a full receive FIFO; the NIC goes on") {
  REMOTE(n, r);
  const uint8_t data[8] = {1};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  Frame f = make_frame(r.first(), &op, data, sizeof(data));
  f[28] ^= 1;
  const uint64_t before =
      n.counter(RHN_CNT_CRC_ERRORS) + n.counter(RHN_CNT_RX_DROPS);
  for (int i = 0; i < 1000; i++) t.inject_frame(f);
  t.settle();
  CONFORM_EQ(
      c, "CRC_ERRORS + RX_DROPS increase", 1000,
      n.counter(RHN_CNT_CRC_ERRORS) + n.counter(RHN_CNT_RX_DROPS) - before);
  alive(n, c);
}

CONFORM_CASE(counter_halves, "regs.counter.halves_nonzero", "regs",
             "a counter that moved reads the same as one 64-bit access and "
             "as two 32-bit halves (README.md decision 4)") {
  REMOTE(n, r);
  const uint8_t data[8] = {1};
  const rhn_op_hdr op = r.request(RHN_WOP_WRITE, sizeof(data));
  for (int i = 0; i < 3; i++) {
    Frame f = make_frame(r.first(), &op, data, sizeof(data));
    f[28] ^= 1;  // a header CRC error each
    t.inject_frame(f);
  }
  t.settle();
  const uint32_t off = RHN_REG_COUNTERS + 8 * RHN_CNT_CRC_ERRORS;
  const uint64_t v = t.reg_read(off, 8);
  CONFORM_EQ(c, "RHN_CNT_CRC_ERRORS (64-bit read)", 3, v);
  CONFORM_EQ(c, "low half", v & 0xffffffffu, t.reg_read(off, 4));
  c.eq("high half", v >> 32, t.reg_read(off + 4, 4));
}

}  // namespace rhinet::conform
