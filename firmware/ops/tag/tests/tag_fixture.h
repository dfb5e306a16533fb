// SPDX-License-Identifier: BSD-2-Clause
// The tag matching tests' fixture (test_tag.cc, test_tag_xfer.cc):
// endpoints on simulated nodes posting isends and irecvs.
#pragma once
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>

#include "rhinet/sim/tag_scenario.h"
#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};

struct Ep {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  Region mem;
  uint16_t node = 0;
};

[[maybe_unused]] Ep make_ep(SimCluster& c, uint16_t node,
                            size_t mem_bytes = 4u << 20, uint8_t rq_log = 14) {
  Ep e;
  e.node = node;
  e.ctx = c.node(node).open_context();
  e.cq = e.ctx->create_cq(14);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e.cq.get();
  qi.sq_log_depth = 10;
  qi.rq_log_depth = rq_log;
  e.qp = e.ctx->create_qp(qi);
  if (!e.qp)
    ADD_FAILURE() << "create_qp " << int(e.ctx->last.status) << " "
                  << e.ctx->last.detail;
  if (e.qp && !activate_datagram(*e.qp, 0)) {
    ADD_FAILURE() << "activate";
    e.qp.reset();
  }
  e.mem = make_region(*e.ctx, mem_bytes, kAllAccess, 0, 0);
  return e;
}

[[maybe_unused]] SendWr isend(uint64_t wr_id, const Ep& to, uint64_t tag,
                              Sge sge, uint8_t flags = RHN_WQE_F_SIGNALED) {
  SendWr wr = send_wr(wr_id, {sge}, RHN_OP_ISEND, flags);
  wr.dst_node = to.node;
  wr.dst_qpn = to.qp->qpn();
  wr.remote_addr = tag;
  return wr;
}

// Destroys the endpoint in the NIC (as the driver does when a process
// exits) and forgets it here.
[[maybe_unused]] void destroy(Ep& e) {
  ASSERT_TRUE(e.ctx->driver()
                  .destroy(RHN_ADMIN_DESTROY_QP, e.ctx->index(), e.qp->qpn())
                  .ok());
  e.qp.reset();
}

// from == nullptr: any source.
[[maybe_unused]] SendWr iprobe(uint64_t wr_id, const Ep* from, uint64_t tag,
                               uint64_t mask) {
  SendWr wr = send_wr(wr_id, {}, RHN_OP_IPROBE);
  if (from) {
    wr.dst_node = from->node;
    wr.dst_qpn = from->qp->qpn();
  } else {
    wr.tag_flags = RHN_TAG_F_ANY_SRC;
  }
  wr.remote_addr = tag;
  wr.tag_mask = mask;
  return wr;
}

[[maybe_unused]] SendWr cancel(uint64_t wr_id, uint16_t rq_index) {
  SendWr wr = send_wr(wr_id, {}, RHN_OP_IRECV_CANCEL);
  wr.remote_key = rq_index;
  return wr;
}

class Tag : public ::testing::Test {
 protected:
  void start(size_t nodes, uint32_t recvs = 4096, uint32_t msgs = 4096) {
    ClusterConfig cfg;
    cfg.nodes = nodes;
    cfg.memory_bytes = 128u << 20;
    cfg.engine.tag.recvs = recvs;
    cfg.engine.tag.msgs = msgs;
    c = std::make_unique<SimCluster>(cfg);
    ASSERT_TRUE(c->all_up());
  }
  void lossy(uint64_t seed) { make_lossy(*c, seed); }
  std::unique_ptr<SimCluster> c;
};

[[maybe_unused]] void put(SimBuffer& b, size_t off,
                          const std::vector<uint8_t>& v) {
  b.write(off, v.data(), v.size());
}

// A message's bytes: which sender, which message, which byte.
[[maybe_unused]] std::vector<uint8_t> payload(uint32_t sender, uint32_t msg,
                                              size_t len) {
  return pattern(uint64_t{sender} << 32 | (msg + 1), len);
}

}  // namespace
}  // namespace rhinet::test
