// SPDX-License-Identifier: BSD-2-Clause
// Endpoints take turns in the NIC (userlib reference.md, add_endpoint;
// shmem.md, "Contexts"): a small PUSH posted on one endpoint while
// another endpoint of the same node streams megabytes to the same target
// completes long before that stream does. For a target on another node
// and for one on the sender's own node (the NIC's loopback), which must
// not serialise the endpoints behind one another.
#include <cstring>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

constexpr uint32_t kAreaId = 11;
constexpr size_t kBig = 1u << 20;
constexpr int kBacklog = 16;

struct Turns {
  int big_done_before_small = -1;  // A's PUSHes complete when B's did
  uint64_t small_ns = 0;           // B's post to its completion
  uint64_t all_ns = 0;             // A's stream, from its post
};

// Node 0's endpoints A and B PUSH to the endpoint on node `target`
// (0: the same node): A posts kBacklog PUSHes of a MiB, the stream
// starts, then B posts one inline 8-byte PUSH.
Turns race(uint16_t target) {
  Turns t;
  ClusterConfig cfg;
  cfg.nodes = 2;
  SimCluster c(cfg);
  EXPECT_TRUE(c.all_up());
  DatagramShape big_shape{
      .cq_log_depth = 10, .sq_log_depth = 6, .buf_bytes = kBig};
  DatagramNode dst =
      make_datagram_node(c, target, RHN_QP_ENDPOINT, 0, big_shape);
  DatagramNode a = make_datagram_node(c, 0, RHN_QP_ENDPOINT, 0, big_shape);
  DatagramNode b =
      make_datagram_node(c, 0, RHN_QP_ENDPOINT, 0, {.buf_bytes = 4096});
  if (!dst.qp || !a.qp || !b.qp) {
    ADD_FAILURE() << "endpoints";
    return t;
  }
  EXPECT_TRUE(
      dst.ctx->register_area(kAreaId, dst.buf.mr, dst.buf.va(), kBig).ok());
  const auto to_dst = [&](SendWr wr) {
    wr.dst_node = target;
    wr.dst_qpn = dst.qp->qpn();
    return wr;
  };
  const uint64_t t0 = c.clock().now();
  for (int i = 0; i < kBacklog; i++)
    EXPECT_TRUE(a.qp->post_send(
        to_dst(rdma_wr(100 + i, RHN_OP_WRITE, {a.buf.sge(0, kBig)}, 0, kAreaId,
                       RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA))));
  // The stream is under way when B posts (the simulated wire has no
  // bandwidth: a few steps in).
  c.run_for(2000);
  SendWr small =
      to_dst(rdma_wr(1, RHN_OP_WRITE, {}, kBig - 64, kAreaId,
                     RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | RHN_WQE_F_INLINE));
  small.inline_data.assign(8, 0x5a);
  const uint64_t t1 = c.clock().now();
  EXPECT_TRUE(b.qp->post_send(small));
  const auto got = c.wait_cqes(*b.cq, 1, 2'000'000'000);
  EXPECT_EQ(got.size(), 1u);
  if (got.size() == 1) {
    EXPECT_TRUE(got[0].ok()) << describe(got[0]);
  }
  t.small_ns = c.clock().now() - t1;
  t.big_done_before_small = static_cast<int>(a.cq->poll(64).size());
  const auto rest =
      c.wait_cqes(*a.cq, kBacklog - t.big_done_before_small, 20'000'000'000);
  EXPECT_EQ(rest.size() + t.big_done_before_small, size_t{kBacklog});
  t.all_ns = c.clock().now() - t0;
  return t;
}

void report(const char* where, const Turns& t) {
  std::printf(
      "%s: B's 8-byte PUSH completed %.1f us after its post, when %d of "
      "A's %d MiB-PUSHes had; A's stream took %.1f us\n",
      where, t.small_ns / 1e3, t.big_done_before_small, kBacklog,
      t.all_ns / 1e3);
}

TEST(EndpointTurns, ASmallPushOvertakesAStreamToAnotherNode) {
  const Turns t = race(1);
  report("another node", t);
  EXPECT_LT(t.big_done_before_small, kBacklog / 2);
}

TEST(EndpointTurns, ASmallPushOvertakesAStreamToItsOwnNode) {
  const Turns t = race(0);
  report("own node (loopback)", t);
  EXPECT_LT(t.big_done_before_small, kBacklog / 2);
}

}  // namespace
}  // namespace rhinet::test
