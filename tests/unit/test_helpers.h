// SPDX-License-Identifier: BSD-2-Clause
// Small helpers shared by the unit tests: registered regions, SGEs, and
// waiting for completions with readable failure messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rhinet/hw.h"
#include "rhinet/sim/sim.h"

namespace rhinet::test {

using namespace rhinet::sim;

inline constexpr uint32_t kAllAccess =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
    RHN_ACCESS_REMOTE_ATOMIC;

// A buffer of one context together with its memory region.
struct Region {
  SimBuffer buf;
  SimMr mr;
  uint64_t va(size_t off = 0) const { return buf.va() + off; }
  uint32_t key() const { return mr.key; }
  Sge sge(size_t off, size_t len) const {
    return Sge{va(off), uint32_t(len), mr.key};
  }
};

// fill: < 0 leaves zeros; 0..255 fills with that byte; pattern_seed != 0
// fills with the deterministic pattern instead.
inline Region make_region(SimContext& ctx, size_t len,
                          uint32_t access = kAllAccess,
                          uint64_t pattern_seed = 0, int fill = -1,
                          size_t page_offset = 0) {
  Region r;
  r.buf = ctx.alloc(len, page_offset);
  if (!r.buf.valid()) return r;
  if (pattern_seed != 0)
    r.buf.fill_pattern(pattern_seed);
  else if (fill >= 0)
    r.buf.fill(uint8_t(fill));
  r.mr = ctx.reg_mr(r.buf, access);
  return r;
}

inline std::vector<uint8_t> pattern(uint64_t seed, size_t len) {
  return SimBuffer::pattern(seed, len);
}

inline SendWr send_wr(uint64_t wr_id, std::vector<Sge> sges,
                      uint8_t opcode = RHN_OP_SEND,
                      uint8_t flags = RHN_WQE_F_SIGNALED) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.flags = flags;
  wr.sges = std::move(sges);
  return wr;
}

inline SendWr rdma_wr(uint64_t wr_id, uint8_t opcode, std::vector<Sge> sges,
                      uint64_t remote_addr, uint32_t rkey,
                      uint8_t flags = RHN_WQE_F_SIGNALED) {
  SendWr wr = send_wr(wr_id, std::move(sges), opcode, flags);
  wr.remote_addr = remote_addr;
  wr.remote_key = rkey;
  return wr;
}

inline std::string describe(const Completion& c) {
  return "cqe{qpn=" + std::to_string(c.qpn) +
         " wr_id=" + std::to_string(c.wr_id) +
         " op=" + std::to_string(c.opcode) +
         " status=" + std::to_string(c.status) +
         " syndrome=" + std::to_string(c.vendor_err) +
         " len=" + std::to_string(c.byte_len) +
         " idx=" + std::to_string(c.wqe_index) +
         " flags=" + std::to_string(c.flags) + "}";
}

inline std::string describe(const std::vector<Completion>& v) {
  std::string s;
  for (const auto& c : v) s += describe(c) + " ";
  return s;
}

// Waits for exactly one completion and returns it (status 0xff if none).
inline Completion wait_one(SimCluster& c, SimCq& cq,
                           uint64_t timeout_ns = 50'000'000) {
  auto v = c.wait_cqes(cq, 1, timeout_ns);
  if (v.empty()) {
    Completion none;
    none.status = 0xff;
    none.wr_id = UINT64_MAX;
    return none;
  }
  return v.front();
}

// One 64-byte SEND from the pair's A to B, received into dst: both
// completions taken and checked (a completion on each side's CQ).
inline void send_a_to_b(SimCluster& c, RcPair& p, const Region& src,
                        const Region& dst, uint64_t id) {
  ASSERT_TRUE(p.qp_b->post_recv(id, {dst.sge(0, 64)}));
  ASSERT_TRUE(p.qp_a->post_send(send_wr(id, {src.sge(0, 64)})));
  const Completion r = wait_one(c, *p.cq_b);
  ASSERT_TRUE(r.ok()) << describe(r);
  ASSERT_TRUE(wait_one(c, *p.cq_a).ok());
}

// Counter delta helper: snapshot now, read the difference later.
struct CounterSnap {
  SimNode& node;
  std::vector<uint64_t> base;
  explicit CounterSnap(SimNode& n) : node(n), base(RHN_CNT_COUNT) {
    for (unsigned i = 0; i < RHN_CNT_COUNT; ++i) base[i] = n.counter(i);
  }
  uint64_t delta(unsigned idx) const { return node.counter(idx) - base[idx]; }
};

// A datagram QP (UD or ENDPOINT) activated with its Q_Key, on its own
// context, with one CQ and one registered buffer.
struct DatagramNode {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  Region buf;
};

struct DatagramShape {
  uint8_t cq_log_depth = 9;
  uint8_t sq_log_depth = QpInit{}.sq_log_depth;
  uint8_t rq_log_depth = QpInit{}.rq_log_depth;
  size_t buf_bytes = 64 * 1024;
  uint8_t qp_flags = 0;  // enum rhn_create_qp_flags
};

// On failure the QP (or the CQ) is left empty for the caller to assert on.
inline DatagramNode make_datagram_node(SimCluster& c, uint16_t node,
                                       uint8_t type, uint32_t qkey,
                                       const DatagramShape& shape = {}) {
  DatagramNode d;
  d.ctx = c.node(node).open_context();
  if (!d.ctx->ok()) return d;
  d.cq = d.ctx->create_cq(shape.cq_log_depth);
  if (!d.cq) return d;
  QpInit qi;
  qi.type = type;
  qi.send_cq = d.cq.get();
  qi.sq_log_depth = shape.sq_log_depth;
  qi.rq_log_depth = shape.rq_log_depth;
  qi.flags = shape.qp_flags;
  d.qp = d.ctx->create_qp(qi);
  if (!d.qp || !activate_datagram(*d.qp, qkey)) d.qp.reset();
  d.buf = make_region(*d.ctx, shape.buf_bytes, kAllAccess, 0, 0);
  return d;
}

// An endpoint (RHN_QP_ENDPOINT) as a DatagramNode, with its node.
struct DatagramEp {
  DatagramNode d;
  uint16_t node = 0;
  SimQp& qp() { return *d.qp; }
  SimCq& cq() { return *d.cq; }
  uint32_t qpn() const { return d.qp->qpn(); }
};

// A DatagramEp on `node` (Q_Key 0); a test failure if it cannot be made.
inline DatagramEp make_datagram_ep(SimCluster& c, uint16_t node,
                                   const DatagramShape& shape) {
  DatagramEp e;
  e.node = node;
  e.d = make_datagram_node(c, node, RHN_QP_ENDPOINT, 0, shape);
  if (!e.d.qp) ADD_FAILURE() << "endpoint on node " << node;
  return e;
}

// An endpoint (RHN_QP_ENDPOINT) of one process: its context, one CQ, the
// QP activated.
struct ContextEp {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  uint16_t node = 0;
  uint32_t qpn() const { return qp->qpn(); }
};

// A ContextEp in a new context of `account` (kDefaultAccount: its own);
// a test failure if it cannot be made.
inline ContextEp make_context_ep(
    SimCluster& c, uint16_t node,
    uint32_t account = SimDriver::kDefaultAccount) {
  ContextEp e;
  e.node = node;
  e.ctx = c.node(node).open_context(account);
  if (!e.ctx->ok()) {
    ADD_FAILURE() << "context on node " << node;
    return e;
  }
  e.cq = e.ctx->create_cq(10);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e.cq.get();
  e.qp = e.ctx->create_qp(qi);
  if (!e.qp || !activate_datagram(*e.qp, 0)) {
    ADD_FAILURE() << "endpoint on node " << node;
    e.qp.reset();
  }
  return e;
}

// A lock or barrier request (`opcode`) for `id` to the manager endpoint
// `mgr` (a DatagramEp or ContextEp); `count`: a barrier's members.
template <class Endpoint>
SendWr sync_wr(uint64_t wr_id, uint8_t opcode, const Endpoint& mgr, uint64_t id,
               uint32_t count = 0) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = opcode;
  wr.flags = RHN_WQE_F_SIGNALED;
  wr.dst_node = mgr.node;
  wr.dst_qpn = mgr.qpn();
  wr.remote_addr = id;
  wr.imm_data = count;
  return wr;
}

// A column of 200 8-byte values base + i, 64 bytes apart at `at` of
// `src`, sent STRIDE so that it arrives packed (multicast partial-mode
// tests): writes the column and sets wr's descriptor.
inline constexpr size_t kColumnLen = 200;
inline void stride_column(Region& src, size_t at, uint64_t base, SendWr& wr) {
  for (size_t i = 0; i < kColumnLen; i++) {
    const uint64_t v = base + i;
    src.buf.write(at + i * 64, &v, 8);
  }
  wr.xfer_mode = RHN_XFER_STRIDE;
  wr.xfer.block = 8;
  wr.xfer.count = kColumnLen;
  wr.xfer.local_stride = 64;
  wr.xfer.remote_stride = 8;
}
// The source SGE's length of that column.
inline constexpr uint32_t kColumnExtent = (kColumnLen - 1) * 64 + 8;
// The packed column arrived at `dst` (every 37th element checked).
inline void expect_packed_column(const Region& dst, uint64_t base,
                                 size_t node) {
  for (size_t i = 0; i < kColumnLen; i += 37) {
    uint64_t v = 0;
    std::memcpy(&v, dst.buf.bytes(i * 8, 8).data(), 8);
    EXPECT_EQ(v, base + i) << "node " << node << " element " << i;
  }
}

// The operation header and payload of a DATA frame, if it is one.
struct OpFrame {
  rhn_op_hdr op;
  std::vector<uint8_t> payload;
};

inline std::optional<OpFrame> op_frame(std::span<const uint8_t> f) {
  rhn_pkt_hdr h{};
  if (f.size() < RHN_DATA_HDR_LEN) return std::nullopt;
  std::memcpy(&h, f.data(), sizeof(h));
  if (h.type != RHN_PKT_DATA) return std::nullopt;
  OpFrame o;
  std::memcpy(&o.op, f.data() + RHN_PKT_HDR_LEN, sizeof(o.op));
  o.payload.assign(f.begin() + RHN_DATA_HDR_LEN, f.end());
  o.payload.resize(h.payload_len);
  return o;
}

// The fabric most tests call lossy: 3 % of frames lost, 3 % reordered,
// 3 % duplicated, from `seed`.
inline void make_lossy(SimCluster& c, uint64_t seed) {
  FaultConfig f;
  f.loss = 0.03;
  f.reorder = 0.03;
  f.duplicate = 0.03;
  c.fabric().set_seed(seed);
  c.fabric().set_faults(f);
}

}  // namespace rhinet::test
