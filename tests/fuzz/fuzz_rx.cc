// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes the receive path past the channel: an engine with live objects (a
// CQ, RC, endpoint and UD QPs with posted receives, a region and an area)
// gets in-order DATA packets from three peer nodes whose headers and
// payloads come from the input, so requests reach the families, the
// matching stage with its receive contexts, the NAK memory, READ streams,
// answers to our own messages and firmware messages. The fuzzer plays the
// peers' side of the channel: it acknowledges what the engine sends and
// has it probe nodes (firmware-originated messages), some of which never
// answer.
#include <algorithm>
#include <cstring>

#include "core/crc32c.h"
#include "fuzz_host.h"
#include "rhinet/hw.h"
#include "transport/packet.h"

using namespace rhinet;

namespace {

constexpr uint64_t kBase = fuzz::FuzzBus::kBase;
constexpr uint64_t kAdminSq = kBase, kAdminCq = kBase + 0x1000;
constexpr uint64_t kEq = kBase + 0x2000, kCq = kBase + 0x3000;
constexpr uint64_t kCqRecord = kBase + 0x3800;
constexpr uint64_t kQueues = kBase + 0x4000;  // per QP: 0x1000 each
constexpr uint64_t kData = kBase + 0x10000;
constexpr uint64_t kDataLen = 0x10000;
constexpr uint32_t kRqDepthLog = 4;

// The peers' side of the channel: what the engine sent each of them.
class PeerWire : public fw::Wire {
 public:
  void transmit(rhinet::fw::Span<const uint8_t> frame) override {
    fw::Packet pkt;
    if (fw::parse_packet(frame, pkt) != fw::ParseStatus::kOk) return;
    const uint16_t d = pkt.hdr.dst_node;
    if (d >= 4 || pkt.hdr.type != RHN_PKT_DATA) return;
    if (!seen[d] || pkt.hdr.session != session[d]) {
      session[d] = pkt.hdr.session;
      next[d] = 0;
      seen[d] = true;
    }
    if (pkt.hdr.seq + 1 - next[d] < (1u << 30)) next[d] = pkt.hdr.seq + 1;
  }
  bool seen[4] = {};
  uint16_t session[4] = {};
  uint32_t next[4] = {};
};

struct Admin {
  fw::Engine& engine;
  fuzz::FuzzBus& bus;
  uint32_t tail = 0;
  uint32_t run(rhn_admin_cmd cmd) {
    cmd.hdr.cmd_id = static_cast<uint16_t>(tail);
    std::memcpy(bus.at(kAdminSq + (tail & 31) * RHN_ADMIN_CMD_SIZE), &cmd,
                sizeof cmd);
    engine.reg_write(RHN_REG_ADMIN_SQ_TAIL, ++tail, 4);
    for (int i = 0; i < 4; i++) engine.poll();
    rhn_admin_cpl cpl;
    std::memcpy(&cpl,
                bus.at(kAdminCq + ((tail - 1) & 31) * sizeof(rhn_admin_cpl)),
                sizeof cpl);
    return cpl.status == RHN_ADMIN_OK ? cpl.result : 0xffffffffu;
  }
  static rhn_admin_cmd cmd(uint8_t opcode) {
    rhn_admin_cmd c;
    std::memset(&c, 0, sizeof c);
    c.hdr.opcode = opcode;
    return c;
  }
};

rhn_host_ref phys(uint64_t addr) {
  rhn_host_ref r{};
  r.addr = addr;
  r.lkey = RHN_LKEY_PHYSICAL;
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzBus bus(1 << 20);
  PeerWire wire;
  fw::EngineConfig cfg = fuzz::small_config();
  cfg.rx_contexts = 4;  // small, so running out is reached too
  cfg.fw_messages = 4;
  fw::Engine engine(cfg, bus, wire);
  engine.reg_write(RHN_REG_ADMIN_SQ_BASE, kAdminSq, 8);
  engine.reg_write(RHN_REG_ADMIN_CQ_BASE, kAdminCq, 8);
  engine.reg_write(RHN_REG_ADMIN_LOG_DEPTH, 5, 4);
  engine.reg_write(RHN_REG_CONTROL, RHN_CONTROL_ENABLE, 4);
  engine.poll();
  Admin admin{engine, bus};

  const uint32_t pdn = admin.run(Admin::cmd(RHN_ADMIN_CREATE_PD));
  rhn_admin_cmd c = Admin::cmd(RHN_ADMIN_CREATE_EQ);
  c.u.create_eq.ring_addr = kEq;
  c.u.create_eq.log_depth = 6;
  const uint32_t eqn = admin.run(c);
  c = Admin::cmd(RHN_ADMIN_CREATE_CQ);
  c.u.create_cq.ring = phys(kCq);
  c.u.create_cq.record = phys(kCqRecord);
  c.u.create_cq.eqn = eqn;
  c.u.create_cq.log_depth = 6;
  const uint32_t cqn = admin.run(c);
  c = Admin::cmd(RHN_ADMIN_CREATE_MR);
  c.u.create_mr.pdn = pdn;
  c.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                         RHN_ACCESS_REMOTE_READ | RHN_ACCESS_REMOTE_ATOMIC;
  c.u.create_mr.iova = kData;
  c.u.create_mr.length = kDataLen;
  c.u.create_mr.key_variant = 0x21;
  const uint32_t key = admin.run(c);
  c = Admin::cmd(RHN_ADMIN_REGISTER_AREA);
  c.u.register_area.area_id = 7;
  c.u.register_area.key = key;
  c.u.register_area.iova = kData + 0x8000;
  c.u.register_area.length = 0x8000;
  admin.run(c);

  // RC (to node 2's QPN 5), endpoint and UD QPs, each with 16 receives.
  const uint8_t types[3] = {RHN_QP_RC, RHN_QP_ENDPOINT, RHN_QP_UD};
  uint32_t qpns[3];
  for (int q = 0; q < 3; q++) {
    const uint64_t base = kQueues + uint64_t(q) * 0x1000;
    c = Admin::cmd(RHN_ADMIN_CREATE_QP);
    c.u.create_qp.pdn = pdn;
    c.u.create_qp.send_cqn = cqn;
    c.u.create_qp.recv_cqn = cqn;
    c.u.create_qp.srqn = RHN_NO_SRQ;
    c.u.create_qp.type = types[q];
    c.u.create_qp.sq_log_depth = 2;
    c.u.create_qp.rq_log_depth = kRqDepthLog;
    c.u.create_qp.sq_ring = phys(base);
    c.u.create_qp.rq_ring = phys(base + 0x400);
    c.u.create_qp.sq_record = phys(base + 0xf00);
    c.u.create_qp.rq_record = phys(base + 0xf80);
    qpns[q] = admin.run(c);
    for (uint32_t i = 0; i < (1u << kRqDepthLog); i++) {
      rhn_recv_wqe w;
      std::memset(&w, 0, sizeof w);
      w.wqe_index = static_cast<uint16_t>(i);
      w.num_sge = 2;
      w.sge[0].addr = kData + uint64_t(i % 4) * 0x2000;
      w.sge[0].length = 0x1000;
      w.sge[0].lkey = key;
      w.sge[1].addr = kData + uint64_t(i % 4) * 0x2000 + 0x1000;
      w.sge[1].length = 0x1000 + q * 0x100;
      w.sge[1].lkey = key;
      std::memcpy(bus.at(base + 0x400 + i * RHN_RQ_WQE_SIZE), &w, sizeof w);
    }
    const uint32_t pi = 1u << kRqDepthLog;
    std::memcpy(bus.at(base + 0xf80), &pi, sizeof pi);
    for (const uint8_t state : {RHN_QPS_INIT, RHN_QPS_RTR, RHN_QPS_RTS}) {
      c = Admin::cmd(RHN_ADMIN_MODIFY_QP);
      c.u.modify_qp.qpn = qpns[q];
      c.u.modify_qp.attr_mask =
          RHN_QP_ATTR_STATE | RHN_QP_ATTR_ACCESS | RHN_QP_ATTR_QKEY |
          (types[q] == RHN_QP_RC && state == RHN_QPS_RTR ? RHN_QP_ATTR_DEST
                                                         : 0);
      if (types[q] == RHN_QP_RC) c.u.modify_qp.attr_mask &= ~RHN_QP_ATTR_QKEY;
      c.u.modify_qp.state = state;
      c.u.modify_qp.access = RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
                             RHN_ACCESS_REMOTE_ATOMIC;
      c.u.modify_qp.dest_node = 2;
      c.u.modify_qp.dest_qpn = 5;
      c.u.modify_qp.qkey = 0x11;
      admin.run(c);
    }
  }

  // The peers' streams towards the engine (node 1): session and serial.
  uint32_t seq[4] = {0, 0, 0, 0};
  const uint16_t session[4] = {0, 0, 0x100, 0x200};
  bool synced[4] = {};
  static const uint8_t kOps[] = {
      RHN_WOP_SEND,     RHN_WOP_WRITE, RHN_WOP_READ_REQ,  RHN_WOP_FETCH_ADD,
      RHN_WOP_CMP_SWAP, RHN_WOP_FW,    RHN_WOP_READ_RESP, RHN_WOP_ATOMIC_RESP,
      RHN_WOP_NAK,      0x7f};
  size_t off = 0;
  std::vector<uint8_t> frame(RHN_MAX_FRAME);
  while (off + 12 <= size) {
    const uint8_t* r = data + off;
    off += 12;
    const uint16_t src =
        static_cast<uint16_t>(r[0] % 3 == 0 ? 2 : r[0] % 3 + 1);
    if (r[0] >= 0xf0) {
      // The driver probes a node (the NIC's own message); node 3 answers
      // only through the ACKs below, node 0 never.
      c = Admin::cmd(RHN_ADMIN_PROBE_NODE);
      c.u.handle.handle = r[1] % 4;
      admin.run(c);
      continue;
    }
    const uint32_t plen =
        std::min<uint32_t>((r[6] | (uint32_t{r[7]} << 8)) % 0x1100,
                           static_cast<uint32_t>(size - off));
    rhn_pkt_hdr h{};
    h.type = RHN_PKT_DATA;
    h.dst_node = 1;
    h.src_node = src;
    h.session = session[src];
    h.seq = seq[src];
    h.flags = synced[src] ? 0 : RHN_PKT_F_SYN;
    if (r[0] & 0x80) h.flags |= RHN_PKT_F_ACK_REQ;
    if (wire.seen[src]) {
      h.flags |= RHN_PKT_F_ACK_VALID;
      h.ack_session = wire.session[src];
      h.ack_seq = wire.next[src];
    }
    rhn_op_hdr op{};
    op.opcode = kOps[r[1] % sizeof(kOps)];
    op.flags = r[2];
    op.syndrome = r[3] >> 3;
    op.qp_type = types[r[3] % 3];
    const uint32_t targets[4] = {qpns[0], qpns[1], qpns[2],
                                 RHN_WIRE_QPN_FIRMWARE};
    op.dst_qpn = targets[(r[3] >> 2) % 4];
    op.src_qpn = (r[4] & 0x80 ? 5u : uint32_t{r[4]} % 8) |
                 (static_cast<uint32_t>(r[4] & 0x60) << 19);
    op.msn = r[5] % 8;
    op.rkey = r[4] & 1 ? key : (r[4] & 2 ? 7u : 0x11u);
    op.imm_data = r[9];
    op.remote_addr = (r[2] & RHN_WOP_F_AREA)
                         ? uint64_t{r[8]} << 8
                         : kData + ((uint64_t{r[8]} << 8) % kDataLen);
    op.msg_len = uint32_t{r[10]} << 8 | r[11];
    op.msg_offset = uint32_t{r[9]} << 8;
    std::memcpy(frame.data() + RHN_DATA_HDR_LEN, data + off, plen);
    off += plen;
    h.payload_len = static_cast<uint16_t>(plen);
    const uint32_t pcrc =
        plen ? fw::crc32c(0, frame.data() + RHN_DATA_HDR_LEN, plen) : 0;
    const size_t len = fw::seal_packet(frame.data(), h, &op, pcrc);
    if (engine.frame_arrived({frame.data(), len})) {
      seq[src]++;
      synced[src] = true;
    }
    for (int i = 0; i < 3; i++) engine.poll();
    // Node 2 and 3 acknowledge what the engine sent them; node 0 is dead.
    for (uint16_t n = 2; n < 4; n++) {
      if (!wire.seen[n] || (r[11] & 3) == 0) continue;
      uint8_t ack[RHN_PKT_HDR_LEN];
      rhn_pkt_hdr a{};
      a.type = RHN_PKT_ACK;
      a.dst_node = 1;
      a.src_node = n;
      a.session = session[n];
      a.seq = seq[n];
      a.ack_session = wire.session[n];
      a.ack_seq = wire.next[n];
      fw::seal_packet(ack, a, nullptr, 0);
      engine.frame_arrived({ack, sizeof ack});
    }
    engine.poll();
    bus.now += 50'000;
  }
  // Long enough for the probes of the dead node to give up (and fail the
  // firmware messages to it).
  for (int i = 0; i < 100; i++) {
    bus.now += 10'000'000;
    engine.poll();
  }
  return 0;
}
