// SPDX-License-Identifier: BSD-2-Clause
// Many producers on one SQ (queues.md, "Many producers on one queue"):
// the NIC's nic_consumer word in a multi-producer record, a published WQE
// whose doorbell was lost found by the record scan, duplicate and late
// doorbells harmless; a QP without the flag keeps its plain record.
#include <string>

#include "case.h"
#include "lib/loop.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::conform {
namespace {

constexpr uint64_t kConsumerWord =
    RHN_OFFSETOF(rhn_mp_queue_record, nic_consumer);

// A loopback pair whose QP a is a multi-producer one.
#define MP_LOOP(n, l)                                                   \
  Nic n(t);                                                             \
  Loop l;                                                               \
  do {                                                                  \
    const std::string e_ =                                              \
        l.make(n, RHN_QP_RC, 16384, 6, RHN_CREATE_QP_F_MULTI_PRODUCER); \
    CONFORM_THAT(c, e_.empty(), "setup", e_);                           \
  } while (0)

// `count` signaled NOPs into a's SQ, published as a producer of the
// protocol does (one 8-byte store of the new count), not kicked.
void publish_nops(Nic& n, Qp& qp, uint32_t count) {
  const uint32_t depth = 1u << qp.sq_log;
  for (uint32_t i = 0; i < count; i++, qp.sq_pi++) {
    uint8_t w[RHN_SQ_SLOT_SIZE];
    rhn_wqe_start(w, RHN_OP_NOP, RHN_WQE_F_SIGNALED,
                  static_cast<__u16>(qp.sq_pi));
    n.target().mem_write(
        qp.sq + uint64_t(qp.sq_pi & (depth - 1)) * RHN_SQ_SLOT_SIZE, w,
        sizeof(w));
  }
  n.wr64(qp.sq_record, qp.sq_pi);
}

// Takes `count` CQEs of a's CQ, in order from `first`.
void expect_cqes(Nic& n, Loop& l, Check& c, uint32_t first, uint32_t count) {
  for (uint32_t i = 0; i < count; i++) {
    rhn_cqe e;
    const std::string what = "CQE of slot " + std::to_string(first + i);
    if (!c.that(n.wait_cqe(l.scq, &e), what, "none came")) return;
    if (!c.eq(what + " status", RHN_CQE_SUCCESS, e.status)) return;
    if (!c.eq(what + " wqe_index", first + i, e.wqe_index)) return;
  }
}

// Lets the NIC run a while; no further CQE may come.
bool no_more_cqes(Target& t, Nic& n, Loop& l, Check& c) {
  t.settle();
  t.advance(1'000'000);
  rhn_cqe e;
  return c.that(!n.poll_cq(l.scq, &e), "send CQ", "one CQE too many");
}

}  // namespace

CONFORM_CASE(mp_consumer, "mprod.nic_consumer", "mprod",
             "a multi-producer SQ: after its WQEs complete the NIC stores "
             "the count of slots done in the record's 8-byte nic_consumer "
             "word; the producers' word is left as they wrote it") {
  MP_LOOP(n, l);
  n.wr64(l.a.sq_record + 8, 0);
  publish_nops(n, l.a, 3);
  n.kick_sq(l.a);
  expect_cqes(n, l, c, 0, 3);
  if (!c.ok()) return;
  uint64_t done = 0;
  CONFORM_THAT(c,
               t.wait_until(
                   [&] {
                     done = n.rd64(l.a.sq_record + kConsumerWord);
                     return done == 3;
                   },
                   kWaitNs),
               "nic_consumer", "is " + std::to_string(done) + ", not 3");
  CONFORM_EQ(c, "producer word", 3, n.rd64(l.a.sq_record));
  // A second batch moves it on; wrapping the 64-slot ring twice.
  for (uint32_t round = 0; round < 4; round++) {
    publish_nops(n, l.a, 40);
    n.kick_sq(l.a);
    expect_cqes(n, l, c, 3 + 40 * round, 40);
    if (!c.ok()) return;
    const uint64_t want = 3 + 40 * (round + 1);
    CONFORM_THAT(
        c,
        t.wait_until(
            [&] {
              done = n.rd64(l.a.sq_record + kConsumerWord);
              return done == want;
            },
            kWaitNs),
        "nic_consumer after round " + std::to_string(round),
        "is " + std::to_string(done) + ", not " + std::to_string(want));
  }
}

CONFORM_CASE(mp_plain_record, "mprod.plain_record_untouched", "mprod",
             "a QP without RHN_CREATE_QP_F_MULTI_PRODUCER: the NIC never "
             "writes its SQ record (nic_consumer stays 0)") {
  Nic n(t);
  Loop l;
  const std::string e0 = l.make(n);
  CONFORM_THAT(c, e0.empty(), "setup", e0);
  n.wr32(l.a.sq_record + 4, 0);
  n.post_one(l.a, RHN_OP_NOP, RHN_WQE_F_SIGNALED, 0, 0, 0);
  expect_cqes(n, l, c, 0, 1);
  if (c.ok() && no_more_cqes(t, n, l, c))
    c.eq("record bytes 4..7", 0, n.rd32(l.a.sq_record + 4));
}

// The counters a case watches, taken before it acts.
struct Watch {
  Nic& n;
  uint64_t recovered, bad;
  explicit Watch(Nic& nic)
      : n(nic),
        recovered(nic.counter(RHN_CNT_SQ_RECOVERED)),
        bad(nic.counter(RHN_CNT_BAD_DOORBELLS)) {}
  uint64_t recovered_rise() const {
    return n.counter(RHN_CNT_SQ_RECOVERED) - recovered;
  }
  void expect_bad(Check& c, uint64_t bad_rise) const {
    c.eq("RHN_CNT_BAD_DOORBELLS increase", bad_rise,
         n.counter(RHN_CNT_BAD_DOORBELLS) - bad);
  }
  // Both rose by what the contract says.
  void expect(Check& c, uint64_t recovered_want, uint64_t bad_rise) const {
    if (c.eq("RHN_CNT_SQ_RECOVERED increase", recovered_want, recovered_rise()))
      expect_bad(c, bad_rise);
  }
  // The same where the record scan may have taken WQEs before their
  // doorbell arrived: recovered rose by at most recovered_max.
  void expect_recovered_at_most(Check& c, uint64_t recovered_max,
                                uint64_t bad_rise) const {
    const uint64_t rise = recovered_rise();
    if (c.that(rise <= recovered_max, "RHN_CNT_SQ_RECOVERED increase",
               std::to_string(rise) + ", more than " +
                   std::to_string(recovered_max)))
      expect_bad(c, bad_rise);
  }
};

CONFORM_CASE(mp_lost_doorbell, "mprod.lost_doorbell_scan", "mprod",
             "a WQE published in a multi-producer SQ with no doorbell is "
             "found by the NIC's record scan, executed, and its slot "
             "counted in RHN_CNT_SQ_RECOVERED") {
  MP_LOOP(n, l);
  const Watch w(n);
  publish_nops(n, l.a, 2);  // the doorbell is "lost": never written
  expect_cqes(n, l, c, 0, 2);
  if (c.ok()) w.expect(c, 2, 0);
}

CONFORM_CASE(mp_duplicate_doorbell, "mprod.duplicate_doorbell", "mprod",
             "doorbells are kicks: a doorbell repeated, or arriving after "
             "its WQEs were taken, starts nothing and counts nothing") {
  MP_LOOP(n, l);
  const Watch w(n);
  publish_nops(n, l.a, 1);
  n.kick_sq(l.a);
  n.kick_sq(l.a);
  expect_cqes(n, l, c, 0, 1);
  if (!c.ok()) return;
  // Where a doorbell takes longer to arrive than two scans of the record
  // (the guest target on a loaded host: the WQE is published in shared
  // memory at once, the doorbell goes through the guest's agent), the
  // scan took the WQE first and counted it: legitimate, and once.
  const Watch late(n);
  n.kick_sq(l.a);  // late: its WQE completed already
  if (no_more_cqes(t, n, l, c)) {
    w.expect_recovered_at_most(c, 1, 0);
    late.expect(c, 0, 0);
  }
}

CONFORM_CASE(mp_small_record, "mprod.record_size", "mprod",
             "CREATE_QP with RHN_CREATE_QP_F_MULTI_PRODUCER checks 16 "
             "writable record bytes: a record in a read-only region is "
             "RHN_ADMIN_BAD_PARAM") {
  Nic n(t);
  CONFORM_UP(c, n);
  Eq eq;
  Cq cq;
  uint32_t pd = 0;
  CONFORM_THAT(c,
               n.create_eq(5, 1, &eq) && n.create_cq(0, 6, eq.eqn, &cq) &&
                   n.create_pd(0, &pd),
               "setup", n.error());
  Buf ro;
  CONFORM_THAT(c, n.make_buf(pd, 4096, &ro, RHN_ACCESS_REMOTE_READ), "MR",
               n.error());
  rhn_admin_cmd cmd = Nic::cmd(RHN_ADMIN_CREATE_QP, 0);
  auto& q = cmd.u.create_qp;
  q.pdn = pd;
  q.send_cqn = q.recv_cqn = cq.cqn;
  q.srqn = RHN_NO_SRQ;
  q.type = RHN_QP_RC;
  q.sq_log_depth = q.rq_log_depth = 6;
  q.flags = RHN_CREATE_QP_F_MULTI_PRODUCER;
  q.sq_ring = {n.alloc(64 << 6), RHN_LKEY_PHYSICAL, 0};
  q.rq_ring = {n.alloc(64 << 6), RHN_LKEY_PHYSICAL, 0};
  q.rq_record = {n.alloc(8, 8), RHN_LKEY_PHYSICAL, 0};
  q.sq_record = {ro.addr, ro.key, 0};
  uint32_t qpn = 0, detail = 0;
  CONFORM_EQ(c, "CREATE_QP status (read-only record)", RHN_ADMIN_BAD_PARAM,
             n.run(cmd, &qpn, &detail));
  c.eq("detail", 8, detail);
}

}  // namespace rhinet::conform
