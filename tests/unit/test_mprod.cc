// SPDX-License-Identifier: BSD-2-Clause
// Many producers on one SQ (Documentation/hardware/queues.md, "Many
// producers on one queue"): 32 producer lanes share one multi-producer RC
// QP and follow the contract's protocol store by store (reserve, room,
// the WQE's eight 8-byte words, publish in turn, the doorbell rule),
// interleaved by a seeded scheduler with the two engines. Every lane
// SENDs (lane, sequence); the peer checks each lane's messages arrive
// exactly once and in order. Doorbells are dropped, duplicated and
// delivered late; the NIC's record scan must recover the dropped ones,
// and must find nothing when none is dropped.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <random>

#include "test_helpers.h"

namespace rhinet::test {
namespace {

struct MpConfig {
  uint64_t seed = 1;
  uint32_t lanes = 32;
  uint32_t per_lane = 1000;
  double drop = 0;   // a doorbell is lost
  double dup = 0;    // a doorbell is written twice (the copy late)
  double delay = 0;  // a doorbell arrives late, after later ones
  uint8_t sq_log = 10;
  uint8_t type = RHN_QP_RC;   // or RHN_QP_ENDPOINT
  uint32_t max_burst = 4000;  // reservations between two quiet periods
};

struct MpResult {
  uint64_t delivered = 0;
  uint64_t batch_rings = 0;      // doorbells for a slot = 31 mod 32
  uint64_t tail_rings = 0;       // doorbells of the last publisher
  uint64_t mid_burst_tails = 0;  // of them, while lanes kept going
  uint64_t doorbells_in = 0;     // doorbells the NIC received
  uint64_t dropped = 0;
  uint64_t recovered = 0;  // RHN_CNT_SQ_RECOVERED
  uint64_t bursts = 0;
  uint64_t virtual_ns = 0;
};

// One producer's state machine: each step is one access to shared memory.
struct Lane {
  enum Step : uint8_t {
    kReserve,
    kRoom,
    kWrite,
    kPublish,
    kTail,
    kRing,
    kIdle
  };
  Step step = kReserve;
  uint32_t id = 0;
  uint64_t seq = 0;  // next message of this lane
  uint64_t t = 0;    // ticket = slot
  uint32_t word = 0;
  bool ring_tail = false;
  std::vector<uint8_t> wqe;
};

class MpHarness {
 public:
  explicit MpHarness(const MpConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {
    ClusterConfig cc;
    cc.nodes = 2;
    cc.seed = cfg.seed;
    c_ = std::make_unique<SimCluster>(cc);
  }

  // Sets up the QPs; false (with a gtest failure) if anything is refused.
  bool setup() {
    ctx_a_ = c_->node(0).open_context();
    ctx_b_ = c_->node(1).open_context();
    if (!ctx_a_->ok() || !ctx_b_->ok()) return false;
    cq_a_ = ctx_a_->create_cq(10);
    cq_b_ = ctx_b_->create_cq(12);
    if (!cq_a_ || !cq_b_) return false;
    QpInit ia;
    ia.type = cfg_.type;
    ia.send_cq = cq_a_.get();
    ia.sq_log_depth = cfg_.sq_log;
    ia.flags = RHN_CREATE_QP_F_MULTI_PRODUCER;
    qa_ = ctx_a_->create_qp(ia);
    QpInit ib;
    ib.type = cfg_.type;
    ib.send_cq = cq_b_.get();
    ib.rq_log_depth = kRecvLog;
    qb_ = ctx_b_->create_qp(ib);
    if (!qa_ || !qb_) return false;
    if (cfg_.type == RHN_QP_RC ? !connect_rc(*qa_, 1, qb_->qpn()) ||
                                     !connect_rc(*qb_, 0, qa_->qpn())
                               : !activate_datagram(*qa_, kQkey) ||
                                     !activate_datagram(*qb_, kQkey))
      return false;
    rbuf_ = make_region(*ctx_b_, size_t{kRecvs} * kMsg, kAllAccess, 0, 0);
    for (uint32_t i = 0; i < kRecvs; i++)
      if (!qb_->post_recv(i, {rbuf_.sge(size_t{i} * kMsg, kMsg)})) return false;
    depth_ = 1u << cfg_.sq_log;
    lanes_.resize(cfg_.lanes);
    next_.assign(cfg_.lanes, 0);
    for (uint32_t l = 0; l < cfg_.lanes; l++) lanes_[l].id = l;
    return true;
  }

  // Runs every lane's messages through; false on the first broken rule.
  bool run(MpResult& r) {
    const uint64_t total = uint64_t{cfg_.lanes} * cfg_.per_lane;
    QueueMemory& sq = qa_->sq_memory();
    rec_ = sq.record_offset;
    while (r.delivered < total) {
      // A burst: lanes reserve up to burst_left_ more slots, then finish
      // what they hold; the engines run in between.
      burst_left_ = 1 + rng_() % cfg_.max_burst;
      r.bursts++;
      for (auto& l : lanes_)
        if (l.step == Lane::kIdle && l.seq < cfg_.per_lane)
          l.step = Lane::kReserve;
      // Time passes slowly while anything moves (a doorbell about to be
      // rung is never left for the scan); when every lane waits and the
      // engines are idle, it jumps to the engines' next deadline.
      const uint64_t burst_end = c_->clock().now() + 200'000'000;
      uint32_t still = 0;
      for (;;) {
        std::vector<uint32_t> active;
        for (auto& l : lanes_)
          if (l.step != Lane::kIdle) active.push_back(l.id);
        if (active.empty()) break;
        bool moved;
        if (rng_() & 1) {
          moved = lane_step(lanes_[active[rng_() % active.size()]], r);
          c_->clock().advance(10);
        } else {
          moved = c_->step();
          if (!moved) c_->clock().advance(10);
          if (!drain(r)) return false;
          deliver_late(false, r);
        }
        still = moved ? 0 : still + 1;
        if (still > 1000) {
          c_->tick();
          if (!drain(r)) return false;
          if (c_->clock().now() > burst_end) {
            ADD_FAILURE() << "stuck in a burst: every lane waits, "
                          << r.delivered << " delivered, producer "
                          << sq.buf.load64(rec_) << ", nic_consumer "
                          << sq.buf.load64(rec_ + 8);
            return false;
          }
        }
      }
      // Quiet: late doorbells arrive, then the engines run until every
      // published message is in (the scan finds those rung by nobody).
      deliver_late(true, r);
      const uint64_t want = reserve_;
      const uint64_t give_up = c_->clock().now() + 200'000'000;
      while (r.delivered < want && c_->clock().now() < give_up) {
        c_->tick();
        if (!drain(r)) return false;
      }
      if (r.delivered < want) {
        ADD_FAILURE() << "stuck: " << r.delivered << " of " << want
                      << " delivered, producer " << sq.buf.load64(rec_)
                      << ", recovered "
                      << c_->node(0).counter(RHN_CNT_SQ_RECOVERED);
        return false;
      }
    }
    // Nothing else completed on either side: no error, no flush.
    for (int i = 0; i < 1000; i++) c_->step();
    auto extra = cq_a_->poll();
    auto extra_b = cq_b_->poll();
    if (!extra.empty() || !extra_b.empty()) {
      ADD_FAILURE() << "unexpected completions: " << describe(extra)
                    << describe(extra_b);
      return false;
    }
    r.recovered = c_->node(0).counter(RHN_CNT_SQ_RECOVERED);
    r.virtual_ns = c_->clock().now();
    return true;
  }

 private:
  static constexpr uint32_t kRecvLog = 10;
  static constexpr uint32_t kRecvs = 1u << kRecvLog;
  static constexpr uint32_t kMsg = 16;  // lane, magic, sequence
  static constexpr uint32_t kMagic = 0x4d50524f;
  static constexpr uint32_t kQkey = 0x1111;

  // One access of lane l; false when it waited (nothing changed).
  bool lane_step(Lane& l, MpResult& r) {
    QueueMemory& sq = qa_->sq_memory();
    switch (l.step) {
      case Lane::kReserve:  // fetch-and-add on the producers' counter
        if (!burst_left_) {
          l.step = Lane::kIdle;
          return true;
        }
        burst_left_--;
        l.t = reserve_++;
        l.step = Lane::kRoom;
        return true;
      case Lane::kRoom: {  // poll nic_consumer until the slot is free
        const uint64_t done = sq.buf.load64(
            rec_ + RHN_OFFSETOF(rhn_mp_queue_record, nic_consumer));
        if (!rhn_mp_has_room(l.t, 1, done, depth_)) return false;
        SendWr wr;
        wr.opcode = RHN_OP_SEND;
        wr.flags = RHN_WQE_F_INLINE;  // unsignaled
        wr.dst_node = 1;              // an endpoint's destination, per WQE
        wr.dst_qpn = qb_->qpn();
        wr.inline_data.resize(kMsg);
        const uint32_t head[2] = {l.id, kMagic};
        std::memcpy(wr.inline_data.data(), head, 8);
        std::memcpy(wr.inline_data.data() + 8, &l.seq, 8);
        l.wqe.clear();
        SimQp::encode(wr, uint16_t(l.t), &l.wqe);
        l.word = 0;
        l.step = Lane::kWrite;
        return true;
      }
      case Lane::kWrite: {  // the WQE, one 8-byte store at a time
        uint64_t v;
        std::memcpy(&v, l.wqe.data() + 8 * l.word, 8);
        sq.buf.store64(
            size_t(l.t & (depth_ - 1)) * RHN_SQ_SLOT_SIZE + 8 * l.word, v);
        if (++l.word == RHN_SQ_SLOT_SIZE / 8) l.step = Lane::kPublish;
        return true;
      }
      case Lane::kPublish:  // in turn: producer == t, then t + 1
        if (sq.buf.load64(rec_) != l.t) return false;
        sq.buf.store64(rec_, l.t + 1);
        l.step = Lane::kTail;
        return true;
      case Lane::kTail: {  // the doorbell rule: batch or tail
        // Which rule rings: the batch alone, seen with no later
        // reservation, or else the tail.
        const bool batch = rhn_mp_rings(l.t, 1, ~uint64_t{0}, RHN_MP_DB_BATCH);
        l.ring_tail = !batch && rhn_mp_rings(l.t, 1, reserve_, RHN_MP_DB_BATCH);
        if (batch) r.batch_rings++;
        if (l.ring_tail) {
          r.tail_rings++;
          if (burst_left_) r.mid_burst_tails++;
        }
        l.step = batch || l.ring_tail ? Lane::kRing : Lane::kReserve;
        break;
      }
      case Lane::kRing:
        ring(r);
        l.step = Lane::kReserve;
        break;
      case Lane::kIdle:
        return false;
    }
    if (l.step == Lane::kReserve && ++l.seq == cfg_.per_lane)
      l.step = Lane::kIdle;
    return true;
  }

  void ring(MpResult& r) {
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < cfg_.drop) {
      r.dropped++;
      return;
    }
    if (u(rng_) < cfg_.delay) {
      late_.push_back(c_->clock().now() + rng_() % 20'000);
    } else {
      doorbell(r);
    }
    if (u(rng_) < cfg_.dup)
      late_.push_back(c_->clock().now() + rng_() % 20'000);
  }

  void doorbell(MpResult& r) {
    ctx_a_->doorbell(RHN_DB_SQ, qa_->qpn());
    r.doorbells_in++;
  }

  // Late doorbells whose time has come (all of them with `all`), in the
  // order they were written, not the order they came due in.
  void deliver_late(bool all, MpResult& r) {
    for (auto it = late_.begin(); it != late_.end();) {
      if (all || *it <= c_->clock().now()) {
        doorbell(r);
        it = late_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // The peer's receives: each lane's next message, exactly once.
  bool drain(MpResult& r) {
    for (;;) {
      auto v = cq_b_->poll();
      if (v.empty()) return true;
      for (const Completion& e : v) {
        if (!e.ok() || e.is_send() || e.byte_len != kMsg) {
          ADD_FAILURE() << "bad completion " << describe(e);
          return false;
        }
        uint32_t head[2];
        uint64_t seq;
        rbuf_.buf.read(e.wr_id * kMsg, head, 8);
        rbuf_.buf.read(e.wr_id * kMsg + 8, &seq, 8);
        if (head[1] != kMagic || head[0] >= cfg_.lanes ||
            seq != next_[head[0]]) {
          ADD_FAILURE() << "lane " << head[0] << " message " << seq
                        << " arrived, expected "
                        << (head[0] < cfg_.lanes ? next_[head[0]] : 0)
                        << " (after " << r.delivered << ")";
          return false;
        }
        next_[head[0]]++;
        r.delivered++;
        if (!qb_->post_recv(e.wr_id, {rbuf_.sge(e.wr_id * kMsg, kMsg)})) {
          ADD_FAILURE() << "receive not reposted";
          return false;
        }
      }
    }
  }

  MpConfig cfg_;
  std::mt19937_64 rng_;
  std::unique_ptr<SimCluster> c_;
  std::unique_ptr<SimContext> ctx_a_, ctx_b_;
  std::unique_ptr<SimCq> cq_a_, cq_b_;
  std::unique_ptr<SimQp> qa_, qb_;
  Region rbuf_;
  uint32_t depth_ = 0;
  size_t rec_ = 0;
  uint64_t reserve_ = 0;  // the producers' reservation counter
  uint64_t burst_left_ = 0;
  std::vector<Lane> lanes_;
  std::vector<uint64_t> next_;
  std::deque<uint64_t> late_;  // due times of late doorbells
};

MpResult run_lanes(const MpConfig& cfg) {
  MpResult r;
  MpHarness h(cfg);
  EXPECT_TRUE(h.setup());
  if (testing::Test::HasFailure()) return r;
  EXPECT_TRUE(h.run(r));
  std::printf(
      "mprod: %lu delivered in %lu bursts, doorbells %lu batch + %lu tail "
      "(%lu mid-burst) = %.5f per WQE, %lu dropped, %lu received by the "
      "NIC, %lu slots recovered, %.1f ms virtual\n",
      (unsigned long)r.delivered, (unsigned long)r.bursts,
      (unsigned long)r.batch_rings, (unsigned long)r.tail_rings,
      (unsigned long)r.mid_burst_tails,
      double(r.batch_rings + r.tail_rings) /
          double(r.delivered ? r.delivered : 1),
      (unsigned long)r.dropped, (unsigned long)r.doorbells_in,
      (unsigned long)r.recovered, double(r.virtual_ns) / 1e6);
  return r;
}

// The doorbell rule's cost: one per 32 slots, plus the tail of each burst
// (and the rare moment all lanes published at once).
void expect_batching(const MpResult& r) {
  EXPECT_EQ(r.batch_rings, r.delivered / RHN_MP_DB_BATCH);
  EXPECT_LE(r.tail_rings, r.bursts + r.mid_burst_tails);
  EXPECT_LE(r.mid_burst_tails, r.delivered / 1000 + 1);
  EXPECT_LE(double(r.batch_rings + r.mid_burst_tails) / double(r.delivered),
            1.0 / RHN_MP_DB_BATCH + 0.001);
}

// 32 lanes, `per_lane` messages each, doorbells lost, duplicated (the
// copy late) and late with these probabilities.
MpConfig lanes(uint64_t seed, uint32_t per_lane, double drop, double dup,
               double delay) {
  return MpConfig{.seed = seed,
                  .per_lane = per_lane,
                  .drop = drop,
                  .dup = dup,
                  .delay = delay};
}

// What every run must show: each message in (exactly once and in its
// lane's order: drain() checks each), the doorbells batched.
MpResult run_checked(const MpConfig& cfg) {
  const MpResult r = run_lanes(cfg);
  EXPECT_EQ(r.delivered, uint64_t{cfg.lanes} * cfg.per_lane);
  expect_batching(r);
  return r;
}

TEST(MultiProducer, LanesWithoutLossNeedNoRecovery) {
  // Duplicated and late (reordered) doorbells, none lost: everything
  // arrives in order and the scan never takes work it was not owed.
  const MpResult r = run_checked(lanes(11, 3000, 0, 0.1, 0.1));
  EXPECT_EQ(r.recovered, 0u);
}

TEST(MultiProducer, MillionMessagesWithLostDoorbells) {
  // 10^6 messages from 32 lanes, 10 % of doorbells lost, others
  // duplicated or late: exactly once, in each lane's order; the lost
  // tails are found by the record scan.
  const MpResult r = run_checked(lanes(37, 31250, 0.1, 0.05, 0.05));
  EXPECT_EQ(r.delivered, 1'000'000u);
  EXPECT_GT(r.dropped, 0u);
  EXPECT_GT(r.recovered, 0u);
}

TEST(MultiProducer, LanesOnOneEndpoint) {
  // The same protocol on an endpoint's SQ (destination in every WQE).
  MpConfig cfg = lanes(3, 2000, 0.1, 0.05, 0.05);
  cfg.type = RHN_QP_ENDPOINT;
  run_checked(cfg);
}

TEST(MultiProducer, SmallRingWaitsForRoom) {
  // A 64-slot ring (the smallest the default batch allows): producers
  // wait for nic_consumer, never overwrite a WQE the NIC still needs.
  MpConfig cfg = lanes(5, 500, 0.1, 0, 0);
  cfg.sq_log = 6;
  run_checked(cfg);
}

}  // namespace
}  // namespace rhinet::test
