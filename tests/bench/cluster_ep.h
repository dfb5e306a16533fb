// SPDX-License-Identifier: BSD-2-Clause
// An endpoint of a simulated cluster's node for the benchmarks that run on
// SimCluster (sync_bench, inbox_bench, coll_bench): its own user context,
// one CQ, the endpoint QP, one registered buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rhinet/sim/cluster.h"

namespace rhinet::bench {

struct ClusterEp {
  std::unique_ptr<sim::SimContext> ctx;
  std::unique_ptr<sim::SimCq> cq;
  std::unique_ptr<sim::SimQp> qp;
  sim::SimBuffer buf;
  sim::SimMr mr;
  uint16_t node = 0;
  sim::Sge sge(size_t off, size_t len) const {
    return {buf.va() + off, uint32_t(len), mr.key};
  }
};

struct EpShape {
  size_t bytes = 4096;  // the registered buffer
  uint32_t access = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                    RHN_ACCESS_REMOTE_READ | RHN_ACCESS_REMOTE_ATOMIC;
  uint8_t cq_log = 8, sq_log = 6, rq_log = 4;
};

// False when any step fails (the endpoint is then unusable).
inline bool make_cluster_ep(sim::SimCluster& c, uint16_t node,
                            const EpShape& shape, ClusterEp* e) {
  e->node = node;
  e->ctx = c.node(node).open_context();
  if (!e->ctx->ok()) return false;
  e->cq = e->ctx->create_cq(shape.cq_log);
  sim::QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e->cq.get();
  qi.sq_log_depth = shape.sq_log;
  qi.rq_log_depth = shape.rq_log;
  e->qp = e->ctx->create_qp(qi);
  if (!e->qp || !sim::activate_datagram(*e->qp, 0)) return false;
  e->buf = e->ctx->alloc(shape.bytes);
  e->mr = e->ctx->reg_mr(e->buf, shape.access);
  return e->mr.ok();
}

}  // namespace rhinet::bench
