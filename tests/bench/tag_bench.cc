// SPDX-License-Identifier: BSD-2-Clause
// Tag matching in the engine (a program, not a test): two NIC engines
// joined by a cable, pumped by one thread (no thread hand-off on the path,
// so the figures are the engines' own work). It prints
//   - the 8-byte round trip of isend/irecv beside SEND/RECV on an RC QP
//     pair (the verbs reference) and a WRITE;
//   - isend/irecv streaming at 1 MiB (rendezvous) beside RDMA WRITE;
//   - the cost of matching against list length: the round trip with
//     N = 1 .. 10 000 receives already posted that the messages do not
//     match, exact ones (hash buckets) and wildcard ones (a list walk).
//
//   tag_bench [--quick]
#include <cstdio>
#include <string>
#include <vector>

#include "bench_nodes.h"
#include "rhinet/sim/cluster.h"

using namespace rhinet;
using bench::Clock;
using bench::seconds_since;

namespace {

struct Ends {
  std::unique_ptr<sim::SimCq> cq_a, cq_b;
  std::unique_ptr<sim::SimQp> qp_a, qp_b;
  sim::SimBuffer buf_a, buf_b;
  sim::SimMr mr_a, mr_b;
};

constexpr size_t kBuf = 8u << 20;

bool make_ends(bench::Pair& p, uint8_t type, Ends* e) {
  e->cq_a = p.a.ctx->create_cq(14);
  e->cq_b = p.b.ctx->create_cq(14);
  sim::QpInit qi;
  qi.type = type;
  qi.sq_log_depth = 12;
  qi.rq_log_depth = 14;
  qi.send_cq = e->cq_a.get();
  e->qp_a = p.a.ctx->create_qp(qi);
  qi.send_cq = e->cq_b.get();
  e->qp_b = p.b.ctx->create_qp(qi);
  if (!e->qp_a || !e->qp_b) return false;
  if (type == RHN_QP_ENDPOINT) {
    if (!sim::activate_datagram(*e->qp_a, 0) ||
        !sim::activate_datagram(*e->qp_b, 0))
      return false;
  } else if (!e->qp_a->to_init().ok() || !e->qp_b->to_init().ok() ||
             !e->qp_a->to_rtr(2, e->qp_b->qpn()).ok() ||
             !e->qp_b->to_rtr(1, e->qp_a->qpn()).ok() ||
             !e->qp_a->to_rts().ok() || !e->qp_b->to_rts().ok()) {
    return false;
  }
  const uint32_t acc = RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE;
  e->buf_a = p.a.ctx->alloc(kBuf);
  e->buf_b = p.b.ctx->alloc(kBuf);
  e->mr_a = p.a.ctx->reg_mr(e->buf_a, acc);
  e->mr_b = p.b.ctx->reg_mr(e->buf_b, acc);
  return e->mr_a.ok() && e->mr_b.ok();
}

// Pumps both engines until `cq` yields one completion; false on an error
// completion or after 5 s.
bool wait(bench::Pair& p, sim::SimCq& cq, sim::Completion* out = nullptr) {
  sim::Completion c;
  const auto t = Clock::now();
  while (!cq.poll_one(&c)) {
    p.pump();
    if (seconds_since(t) > 5) {
      std::fprintf(stderr, "no completion in 5 s\n");
      return false;
    }
  }
  if (!c.ok()) {
    std::fprintf(stderr, "error completion op %u status %u syndrome %u\n",
                 c.opcode, c.status, c.vendor_err);
    return false;
  }
  if (out) *out = c;
  return true;
}

sim::SendWr isend_wr(const Ends& e, bool from_a, uint64_t tag, size_t len) {
  sim::SendWr wr;
  wr.opcode = RHN_OP_ISEND;
  wr.flags = RHN_WQE_F_SIGNALED;
  wr.dst_node = from_a ? 2 : 1;
  wr.dst_qpn = from_a ? e.qp_b->qpn() : e.qp_a->qpn();
  wr.remote_addr = tag;
  const sim::SimBuffer& b = from_a ? e.buf_a : e.buf_b;
  const sim::SimMr& m = from_a ? e.mr_a : e.mr_b;
  wr.sges = {{b.va(), uint32_t(len), m.key}};
  return wr;
}

sim::TagRecv irecv_of(const Ends& e, bool on_a, uint64_t tag, size_t len) {
  sim::TagRecv t;
  t.tag = tag;
  t.src_node = on_a ? 2 : 1;
  t.src_qpn = on_a ? e.qp_b->qpn() : e.qp_a->qpn();
  const sim::SimBuffer& b = on_a ? e.buf_a : e.buf_b;
  const sim::SimMr& m = on_a ? e.mr_a : e.mr_b;
  t.sge = sim::Sge{b.va() + kBuf / 2, uint32_t(len), m.key};
  return t;
}

// Round trip of isend/irecv of `len` bytes (tag 7), microseconds.
double tag_rtt(bench::Pair& p, Ends& e, size_t len, int iters) {
  uint64_t wr = 0;
  const auto t = Clock::now();
  for (int i = 0; i < iters; i++) {
    if (!e.qp_b->post_tag_recv(wr++, irecv_of(e, false, 7, len)) ||
        !e.qp_a->post_tag_recv(wr++, irecv_of(e, true, 7, len)) ||
        !e.qp_a->post_send(isend_wr(e, true, 7, len)))
      return -1;
    if (!wait(p, *e.cq_b)) return -1;  // b's irecv
    if (!e.qp_b->post_send(isend_wr(e, false, 7, len))) return -1;
    // a: its isend, its irecv; b: its isend.
    if (!wait(p, *e.cq_a) || !wait(p, *e.cq_a) || !wait(p, *e.cq_b)) return -1;
  }
  return seconds_since(t) / iters * 1e6;
}

// Round trip of SEND/RECV (RC) of `len` bytes, microseconds.
double send_rtt(bench::Pair& p, Ends& e, size_t len, int iters) {
  sim::SendWr s;
  s.opcode = RHN_OP_SEND;
  const auto t = Clock::now();
  for (int i = 0; i < iters; i++) {
    if (!e.qp_b->post_recv(0, {{e.buf_b.va(), uint32_t(len), e.mr_b.key}}) ||
        !e.qp_a->post_recv(0, {{e.buf_a.va(), uint32_t(len), e.mr_a.key}}))
      return -1;
    s.sges = {{e.buf_a.va(), uint32_t(len), e.mr_a.key}};
    if (!e.qp_a->post_send(s) || !wait(p, *e.cq_b)) return -1;
    s.sges = {{e.buf_b.va(), uint32_t(len), e.mr_b.key}};
    if (!e.qp_b->post_send(s)) return -1;
    if (!wait(p, *e.cq_a) || !wait(p, *e.cq_a) || !wait(p, *e.cq_b)) return -1;
  }
  return seconds_since(t) / iters * 1e6;
}

// MB/s of `count` messages of `len` bytes a -> b, `window` in flight:
// isends into posted irecvs, or WRITEs.
double stream(bench::Pair& p, Ends& e, bool tag, size_t len, int count,
              int window) {
  int posted = 0, done = 0;
  uint64_t wr = 0;
  const auto t = Clock::now();
  while (done < count) {
    while (posted < count && posted - done < window) {
      if (tag) {
        if (!e.qp_b->post_tag_recv(wr++, irecv_of(e, false, 9, len)) ||
            !e.qp_a->post_send(isend_wr(e, true, 9, len)))
          return -1;
      } else {
        sim::SendWr w;
        w.opcode = RHN_OP_WRITE;
        w.remote_addr = e.buf_b.va();
        w.remote_key = e.mr_b.key;
        w.sges = {{e.buf_a.va(), uint32_t(len), e.mr_a.key}};
        if (!e.qp_a->post_send(w)) return -1;
      }
      posted++;
    }
    if (!wait(p, *e.cq_a)) return -1;
    if (tag && !wait(p, *e.cq_b)) return -1;
    done++;
  }
  return double(len) * count / seconds_since(t) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  fw::EngineConfig cfg;
  cfg.tag.recvs = 20'000;  // room for the longest list below
  cfg.tag.context_share = 256;
  bench::Pair pair(cfg);
  Ends tag, rc;
  if (!pair.up || !make_ends(pair, RHN_QP_ENDPOINT, &tag) ||
      !make_ends(pair, RHN_QP_RC, &rc)) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  const int iters = quick ? 2000 : 20000;
  std::printf(
      "RHiNET-NG tag bench: two engines on a cable, one thread pumping "
      "both\n\nround trip, 8 bytes [us]:\n");
  // Warm up both paths once, then measure.
  tag_rtt(pair, tag, 8, 100);
  send_rtt(pair, rc, 8, 100);
  const double t8 = tag_rtt(pair, tag, 8, iters);
  const double s8 = send_rtt(pair, rc, 8, iters);
  std::printf("  isend/irecv (endpoints)       %8.2f\n", t8);
  std::printf("  SEND/RECV (RC QPs, reference) %8.2f\n", s8);
  std::printf("  ratio                         %8.2fx  (goal <= 1.2x)\n",
              t8 / s8);

  const int count = quick ? 64 : 512;
  const double bw_tag = stream(pair, tag, true, 1u << 20, count, 8);
  const double bw_write = stream(pair, rc, false, 1u << 20, count, 8);
  std::printf("\n1 MiB messages, 8 in flight [MB/s]:\n");
  std::printf("  isend/irecv (rendezvous)      %8.0f\n", bw_tag);
  std::printf("  RDMA WRITE (reference)        %8.0f\n", bw_write);
  std::printf("  ratio                         %8.2fx  (goal >= 0.9x)\n",
              bw_tag / bw_write);

  std::printf(
      "\nmatching cost: 8-byte round trip with N receives posted that "
      "do not match [us]\n%8s %10s %12s %12s %12s\n",
      "N", "exact", "any source", "any tag", "any+mask");
  // The kinds of posted receive, as the NIC indexes them: exact source
  // and tag, any source with an exact tag (MPI_ANY_SOURCE), an exact
  // source with any tag (MPI_ANY_TAG; here from the receiving endpoint's
  // own node, so it never matches), any source with a masked tag.
  struct Kind {
    bool any_src;
    uint64_t tag, mask;
    bool from_self;
  };
  const Kind kinds[] = {{false, 1'000'000, ~0ull, false},
                        {true, 1'000'000, ~0ull, false},
                        {false, 0, 0, true},
                        {true, 0x100, 0x100, false}};
  uint64_t parked_wr = 1u << 30;
  double base[4] = {}, at_max[4] = {};
  for (int n : {1, 100, 1000, 10000}) {
    std::printf("%8d", n);
    for (int k = 0; k < 4; k++) {
      // A fresh pair of endpoints with n parked receives of this kind.
      Ends e;
      if (!make_ends(pair, RHN_QP_ENDPOINT, &e)) return 1;
      for (int i = 0; i < n; i++) {
        sim::TagRecv w = irecv_of(e, false, kinds[k].tag + uint64_t(i), 8);
        w.any_src = kinds[k].any_src;
        w.mask = kinds[k].mask;
        if (kinds[k].mask != ~0ull) w.tag = kinds[k].tag;
        if (kinds[k].from_self) w.src_node = 2;
        if (!e.qp_b->post_tag_recv(parked_wr++, w)) {
          std::fprintf(stderr, "posting %d receives failed\n", n);
          return 1;
        }
      }
      for (int i = 0; i < 200; i++) pair.pump();
      const double rtt = tag_rtt(pair, e, 8, k == 3 ? iters / 20 : iters / 4);
      if (n == 1) base[k] = rtt;
      at_max[k] = rtt;
      // The NIC forgets the endpoints (and their parked receives), as
      // when a process closes them: the next kind starts from empty lists.
      for (auto* side : {&pair.a, &pair.b}) {
        sim::SimQp& q = side == &pair.a ? *e.qp_a : *e.qp_b;
        if (!side->ctx->driver()
                 .destroy(RHN_ADMIN_DESTROY_QP, side->ctx->index(), q.qpn())
                 .ok())
          return 1;
      }
      std::printf(" %*.2f", k == 0 ? 10 : 12, rtt);
    }
    std::printf("\n");
  }
  std::printf(
      "10 000 vs 1: exact %.2fx, any source %.2fx, any tag %.2fx, "
      "any+mask %.2fx  (goal <= 2x; the last is a list walk)\n",
      at_max[0] / base[0], at_max[1] / base[1], at_max[2] / base[2],
      at_max[3] / base[3]);
  return 0;
}
