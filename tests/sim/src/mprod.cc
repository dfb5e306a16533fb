// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/sim/mprod.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace rhinet::sim {

const char* post_mode_name(PostMode m) {
  switch (m) {
    case PostMode::kDevice:
      return "device";
    case PostMode::kCpuDoorbell:
      return "cpu_doorbell";
    case PostMode::kProxy:
      return "proxy";
    case PostMode::kHostOnly:
      return "host_only";
  }
  return "?";
}

uint64_t AccessCounts::to(Place p) const {
  uint64_t sum = 0;
  for (size_t a = 0; a < kActors; a++) sum += n[a][size_t(p)];
  return sum;
}

std::string check_batching(const MpResult& r) {
  if (r.batch_rings != r.delivered / RHN_MP_DB_BATCH)
    return std::to_string(r.batch_rings) + " batch doorbells for " +
           std::to_string(r.delivered) + " messages";
  if (r.tail_rings > r.bursts + r.mid_burst_tails)
    return std::to_string(r.tail_rings) + " tail doorbells in " +
           std::to_string(r.bursts) + " bursts";
  if (r.mid_burst_tails > r.delivered / 1000 + 1)
    return std::to_string(r.mid_burst_tails) + " tail doorbells mid-burst";
  if (double(r.batch_rings + r.mid_burst_tails) / double(r.delivered) >
      1.0 / RHN_MP_DB_BATCH + 0.001)
    return "more than one doorbell per " + std::to_string(RHN_MP_DB_BATCH) +
           " WQEs while lanes kept posting";
  return {};
}

// ---- MemoryMap -------------------------------------------------------------

MemoryMap::MemoryMap(SimMemory& mem)
    : mem_(mem), page_place_(mem.page_count(), Place::kHostRam) {
  mem_.observer = this;
}

MemoryMap::~MemoryMap() {
  if (mem_.observer == this) mem_.observer = nullptr;
}

void MemoryMap::mark_device(const SimBuffer& buf) {
  for (uint64_t page : buf.pages())
    page_place_.at((page - mem_.bus_base()) >> kPageShift) =
        Place::kDeviceMemory;
}

void MemoryMap::mark_table(const SimMr& mr) {
  for (uint64_t page : mr.table_pages)
    page_place_.at((page - mem_.bus_base()) >> kPageShift) = Place::kHostTable;
}

// By the access's first byte: the queues' accesses never cross a page.
Place MemoryMap::place(uint64_t bus_addr) const {
  const uint64_t page = (bus_addr - mem_.bus_base()) >> kPageShift;
  return page < page_place_.size() ? page_place_[page] : Place::kHostRam;
}

void MemoryMap::access(uint64_t bus_addr, size_t, bool nic) {
  if (!counting) return;
  if (nic)
    busy.at(Actor::kNic, place(bus_addr))++;
  else
    step_.at(actor_, place(bus_addr))++;
}

void MemoryMap::begin(Actor who) {
  actor_ = who;
  step_ = {};
}

uint64_t MemoryMap::end(bool moved) {
  AccessCounts& into = moved ? busy : idle;
  for (size_t a = 0; a < AccessCounts::kActors; a++)
    for (size_t p = 0; p < AccessCounts::kPlaces; p++)
      into.n[a][p] += step_.n[a][p];
  const uint64_t accesses = step_.total();
  step_ = {};
  actor_ = Actor::kOther;
  return accesses;
}

// ---- MpHarness -------------------------------------------------------------

MpHarness::MpHarness(const MpConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {
  ClusterConfig cc;
  cc.nodes = 2;
  cc.seed = cfg.seed;
  c_ = std::make_unique<SimCluster>(cc);
  map_ = std::make_unique<MemoryMap>(c_->node(0).memory);
}

MpHarness::~MpHarness() = default;

bool MpHarness::fail(std::string msg) {
  if (error_.empty()) error_ = std::move(msg);
  return false;
}

bool MpHarness::setup() {
  ctx_a_ = c_->node(0).open_context();
  ctx_b_ = c_->node(1).open_context();
  if (!ctx_a_->ok() || !ctx_b_->ok()) return fail("context refused");
  cq_a_ = ctx_a_->create_cq(10);
  cq_b_ = ctx_b_->create_cq(12);
  if (!cq_a_ || !cq_b_) return fail("CQ refused");
  const bool lanes_write_sq = lanes_write_sq_record();
  QpInit ia;
  ia.type = cfg_.type;
  ia.send_cq = cq_a_.get();
  ia.sq_log_depth = cfg_.sq_log;
  ia.flags = lanes_write_sq ? RHN_CREATE_QP_F_MULTI_PRODUCER : 0;
  qa_ = ctx_a_->create_qp(ia);
  QpInit ib;
  ib.type = cfg_.type;
  ib.send_cq = cq_b_.get();
  ib.rq_log_depth = kRecvLog;
  qb_ = ctx_b_->create_qp(ib);
  if (!qa_ || !qb_) return fail("QP refused");
  if (cfg_.type == RHN_QP_RC
          ? !connect_rc(*qa_, 1, qb_->qpn()) || !connect_rc(*qb_, 0, qa_->qpn())
          : !activate_datagram(*qa_, kQkey) || !activate_datagram(*qb_, kQkey))
    return fail("QPs not brought to RTS");
  rbuf_ = ctx_b_->alloc(size_t{kRecvs} * kMsg);
  rmr_ = ctx_b_->reg_mr(rbuf_, RHN_ACCESS_LOCAL_WRITE);
  if (!rmr_.res.ok()) return fail("receive buffer not registered");
  for (uint32_t i = 0; i < kRecvs; i++)
    if (!qb_->post_recv(i, {Sge{rbuf_.va(size_t{i} * kMsg), kMsg, rmr_.key}}))
      return fail("receive not posted");
  depth_ = 1u << cfg_.sq_log;
  lanes_.resize(cfg_.lanes);
  next_.assign(cfg_.lanes, 0);
  for (uint32_t l = 0; l < cfg_.lanes; l++) lanes_[l].id = l;
  rec_ = qa_->sq_memory().record_offset;
  // Where each mode keeps what (everything else is host RAM).
  if (lanes_write_sq) {
    map_->mark_device(qa_->sq_memory().buf);
    map_->mark_device(cq_a_->memory().buf);
  }
  // The queues' translation tables stay in host RAM, wherever the queues
  // are: the driver's.
  map_->mark_table(qa_->sq_memory().mr);
  map_->mark_table(cq_a_->memory().mr);
  if (cfg_.mode == PostMode::kCpuDoorbell) {
    request_ = ctx_a_->alloc(kPageSize);
    if (!request_.valid()) return fail("no memory for the request word");
  }
  if (cfg_.mode == PostMode::kProxy) {
    proxy_ring_ = ctx_a_->alloc(size_t{kProxySlot} << kProxyLog);
    proxy_back_ = ctx_a_->alloc(kPageSize);
    if (!proxy_ring_.valid() || !proxy_back_.valid())
      return fail("no memory for the proxy's ring");
    map_->mark_device(proxy_back_);
  }
  if (!lanes_write_sq) qa_->auto_kick = false;  // the CPU rings per batch
  return true;
}

bool MpHarness::run(MpResult& r) {
  SimNode& sender = c_->node(0);
  const uint64_t host_db = sender.counter(RHN_CNT_HOST_DOORBELLS);
  const uint64_t peer_db = sender.counter(RHN_CNT_PEER_DOORBELLS);
  const uint64_t t0 = c_->clock().now();
  const auto wall0 = std::chrono::steady_clock::now();
  map_->busy = {};
  map_->idle = {};
  map_->counting = true;
  const bool ok = lanes_post() ? run_lanes(r) : run_host_only(r);
  map_->counting = false;
  r.wall_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - wall0)
                           .count());
  r.virtual_ns = c_->clock().now() - t0;
  r.host_doorbells = sender.counter(RHN_CNT_HOST_DOORBELLS) - host_db;
  r.peer_doorbells = sender.counter(RHN_CNT_PEER_DOORBELLS) - peer_db;
  r.busy = map_->busy;
  r.idle = map_->idle;
  if (!ok) return false;
  // Nothing else completed on the receiver; on the sender only the CPU's
  // signaled sends, all of them good.
  for (int i = 0; i < 1000; i++) c_->step();
  if (!cq_b_->poll().empty()) return fail("unexpected receive completions");
  for (const Completion& e : cq_a_->poll()) {
    if (lanes_write_sq_record())
      return fail("unexpected send completion, status " +
                  std::to_string(e.status));
    if (!e.ok() || !e.is_send())
      return fail("send completed with status " + std::to_string(e.status));
  }
  r.recovered = sender.counter(RHN_CNT_SQ_RECOVERED);
  return true;
}

bool MpHarness::run_lanes(MpResult& r) {
  const uint64_t total = uint64_t{cfg_.lanes} * cfg_.per_lane;
  QueueMemory& sq = qa_->sq_memory();
  auto producer = [&] {
    return lanes_write_sq_record() ? sq.buf.load64(rec_) : proxy_head_;
  };
  while (r.delivered < total) {
    // A burst: lanes reserve up to burst_left_ more slots, then finish
    // what they hold; the engines (and the CPU agent) run in between.
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
      // Lanes, engines, and (when there is one) the CPU agent in turn at
      // random; without an agent the draw is the one test_mprod's seeds
      // were chosen with.
      const uint64_t pick = has_agent() ? rng_() % 3 : rng_() & 1;
      if (pick == 1) {
        Lane& l = lanes_[active[rng_() % active.size()]];
        map_->begin(Actor::kLane);
        moved = lane_step(l, r);
        map_->end(moved);
        charge_lane_step();
      } else if (pick == 2) {
        moved = agent_step(r);
        if (!error_.empty()) return false;
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
        if (c_->clock().now() > burst_end)
          return fail("stuck in a burst: every lane waits, " +
                      std::to_string(r.delivered) + " delivered, producer " +
                      std::to_string(producer()));
      }
    }
    // Quiet: late doorbells arrive, then the engines (and the agent) run
    // until every published message is in (the scan finds those rung by
    // nobody).
    deliver_late(true, r);
    const uint64_t want = reserve_;
    const uint64_t give_up = c_->clock().now() + 200'000'000;
    while (r.delivered < want && c_->clock().now() < give_up) {
      if (has_agent()) {
        agent_step(r);
        if (!error_.empty()) return false;
      }
      c_->tick();
      if (!drain(r)) return false;
    }
    if (r.delivered < want)
      return fail("stuck: " + std::to_string(r.delivered) + " of " +
                  std::to_string(want) + " delivered, producer " +
                  std::to_string(producer()) + ", recovered " +
                  std::to_string(c_->node(0).counter(RHN_CNT_SQ_RECOVERED)));
  }
  return true;
}

bool MpHarness::run_host_only(MpResult& r) {
  const uint64_t total = uint64_t{cfg_.lanes} * cfg_.per_lane;
  const uint64_t give_up = c_->clock().now() + 1'000'000'000 + total * 100'000;
  while (r.delivered < total) {
    map_->begin(Actor::kCpu);
    const bool posted = host_only_step(r);
    c_->clock().advance(cfg_.access_ns *
                        std::max<uint64_t>(1, map_->end(posted)));
    if (!error_.empty()) return false;
    if (!c_->step() && !posted) c_->tick();
    if (!drain(r)) return false;
    if (c_->clock().now() > give_up)
      return fail("stuck: " + std::to_string(r.delivered) + " of " +
                  std::to_string(total) + " delivered, " +
                  std::to_string(host_posted_) + " posted");
  }
  return true;
}

bool MpHarness::lanes_write_sq_record() const {
  return cfg_.mode == PostMode::kDevice || cfg_.mode == PostMode::kCpuDoorbell;
}

// A ticket by fetch-and-add on the producers' counter, or idle once the
// burst is spent.
void MpHarness::reserve(Lane& l) {
  if (!burst_left_) {
    l.step = Lane::kIdle;
    return;
  }
  burst_left_--;
  l.t = reserve_++;
  l.step = Lane::kRoom;
}

bool MpHarness::lane_step(Lane& l, MpResult& r) {
  if (cfg_.mode == PostMode::kProxy) return proxy_lane_step(l);
  QueueMemory& sq = qa_->sq_memory();
  switch (l.step) {
    case Lane::kReserve:  // a slot of the SQ
      reserve(l);
      return true;
    case Lane::kRoom: {  // poll nic_consumer until the slot is free
      const uint64_t done =
          sq.buf.load64(rec_ + RHN_OFFSETOF(rhn_mp_queue_record, nic_consumer));
      if (!rhn_mp_has_room(l.t, 1, done, depth_)) return false;
      l.wqe.clear();
      SimQp::encode(message_wr(l.id, l.seq), uint16_t(l.t), &l.wqe);
      l.word = 0;
      l.step = Lane::kWrite;
      return true;
    }
    case Lane::kWrite: {  // the WQE, one 8-byte store at a time
      uint64_t v;
      std::memcpy(&v, l.wqe.data() + 8 * l.word, 8);
      sq.buf.store64(size_t(l.t & (depth_ - 1)) * RHN_SQ_SLOT_SIZE + 8 * l.word,
                     v);
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
      // Itself, or by asking the CPU agent through host RAM (any new
      // value is a request: tickets never repeat).
      if (cfg_.mode == PostMode::kCpuDoorbell)
        request_.store64(0, l.t + 1);
      else
        ring(r, cfg_.device_requester);
      l.step = Lane::kReserve;
      break;
    case Lane::kIdle:
      return false;
  }
  if (l.step == Lane::kReserve && ++l.seq == cfg_.per_lane)
    l.step = Lane::kIdle;
  return true;
}

bool MpHarness::proxy_lane_step(Lane& l) {
  const uint64_t mask = (uint64_t{1} << kProxyLog) - 1;
  const size_t slot = size_t(l.t & mask) * kProxySlot;
  switch (l.step) {
    case Lane::kReserve:  // a slot of the proxy's ring
      reserve(l);
      return true;
    case Lane::kRoom:  // the proxy's consumer, which it writes back
      if (l.t - proxy_back_.load64(0) > mask) return false;
      l.word = 0;
      l.step = Lane::kWrite;
      return true;
    case Lane::kWrite:  // the descriptor: the message's two words
      proxy_ring_.store64(slot + 8 * l.word,
                          l.word == 0 ? uint64_t{kMagic} << 32 | l.id : l.seq);
      if (++l.word == 2) l.step = Lane::kPublish;
      return true;
    case Lane::kPublish:  // full, for this round of the ring
      proxy_ring_.store64(slot + 16, l.t + 1);
      l.step = Lane::kReserve;
      break;
    default:
      return false;
  }
  if (++l.seq == cfg_.per_lane) l.step = Lane::kIdle;
  return true;
}

bool MpHarness::agent_step(MpResult& r) {
  map_->begin(Actor::kCpu);
  const bool moved = cfg_.mode == PostMode::kCpuDoorbell ? cpu_doorbell_step(r)
                                                         : proxy_step(r);
  c_->clock().advance(cfg_.access_ns * std::max<uint64_t>(1, map_->end(moved)));
  return moved;
}

void MpHarness::charge_lane_step() {
  if (!cfg_.parallel_lanes) {
    c_->clock().advance(cfg_.access_ns);
    return;
  }
  lane_ps_ += uint64_t{cfg_.access_ns} * 1000 / cfg_.lanes;
  c_->clock().advance(lane_ps_ / 1000);
  lane_ps_ %= 1000;
}

bool MpHarness::cpu_doorbell_step(MpResult& r) {
  const uint64_t request = request_.load64(0);
  if (request == request_seen_) return false;
  request_seen_ = request;
  ring(r, 0);
  return true;
}

// Lane `lane`'s message `seq`: an unsignaled inline SEND of (lane, magic,
// sequence), its destination in the WQE as an endpoint needs.
SendWr MpHarness::message_wr(uint32_t lane, uint64_t seq) const {
  SendWr wr;
  wr.opcode = RHN_OP_SEND;
  wr.flags = RHN_WQE_F_INLINE;
  wr.dst_node = 1;
  wr.dst_qpn = qb_->qpn();
  wr.inline_data.resize(kMsg);
  const uint32_t head[2] = {lane, kMagic};
  std::memcpy(wr.inline_data.data(), head, 8);
  std::memcpy(wr.inline_data.data() + 8, &seq, 8);
  return wr;
}

bool MpHarness::post_message(uint32_t lane, uint64_t seq, uint64_t index) {
  SendWr wr = message_wr(lane, seq);
  wr.wr_id = index;
  // A completion per batch retires the batch's WQEs (selective signaling).
  if (index % kCpuBatch == kCpuBatch - 1) wr.flags |= RHN_WQE_F_SIGNALED;
  return qa_->post_send(wr);
}

bool MpHarness::proxy_step(MpResult& r) {
  const uint64_t mask = (uint64_t{1} << kProxyLog) - 1;
  const size_t slot = size_t(proxy_head_ & mask) * kProxySlot;
  if (proxy_ring_.load64(slot + 16) == proxy_head_ + 1) {
    uint64_t d[2];
    proxy_ring_.read(slot, d, sizeof d);
    if (uint32_t(d[0] >> 32) != kMagic || uint32_t(d[0]) >= cfg_.lanes)
      return fail("proxy: malformed descriptor");
    // No room in the SQ: completions first.
    if (!post_message(uint32_t(d[0]), d[1], proxy_posted_))
      return proxy_poll_cq(r);
    proxy_head_++;
    proxy_posted_++;
    if (++proxy_unkicked_ < kCpuBatch) return true;
  } else if (!proxy_unkicked_) {
    return proxy_poll_cq(r);
  }
  // A full batch, or nothing more to take: ring once for what was
  // written, and give the lanes the descriptors' slots back.
  qa_->kick_sq();
  proxy_unkicked_ = 0;
  proxy_back_.store64(0, proxy_head_);
  return true;
}

bool MpHarness::proxy_poll_cq(MpResult& r) {
  bool any = false;
  Completion e;
  while (cq_a_->poll_one(&e)) {
    if (!e.ok() || !e.is_send())
      return fail("proxy: send completed with status " +
                  std::to_string(e.status));
    // Messages completed, where the lanes see it.
    proxy_back_.store64(8, e.wr_id + 1);
    r.cpu_completions++;
    any = true;
  }
  return any;
}

bool MpHarness::host_only_step(MpResult& r) {
  const uint64_t total = uint64_t{cfg_.lanes} * cfg_.per_lane;
  if (host_posted_ < total) {
    const uint64_t i = host_posted_;
    if (post_message(uint32_t(i % cfg_.lanes), i / cfg_.lanes, i)) {
      // A list of kCpuBatch WQEs, one doorbell.
      if (++host_posted_ % kCpuBatch == 0 || host_posted_ == total)
        qa_->kick_sq();
      return true;
    }
  }
  Completion e;
  bool any = false;
  while (cq_a_->poll_one(&e)) {
    if (!e.ok() || !e.is_send())
      return fail("send completed with status " + std::to_string(e.status));
    r.cpu_completions++;
    any = true;
  }
  return any;
}

void MpHarness::ring(MpResult& r, uint16_t requester) {
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng_) < cfg_.drop) {
    r.dropped++;
    return;
  }
  if (u(rng_) < cfg_.delay) {
    late_.push_back({c_->clock().now() + rng_() % 20'000, requester});
  } else {
    doorbell(r, requester);
  }
  if (u(rng_) < cfg_.dup)
    late_.push_back({c_->clock().now() + rng_() % 20'000, requester});
}

void MpHarness::doorbell(MpResult& r, uint16_t requester) {
  ctx_a_->doorbell(RHN_DB_SQ, qa_->qpn(), 4, requester);
  r.doorbells_in++;
}

// Late doorbells whose time has come (all of them with `all`), in the
// order they were written, not the order they came due in.
void MpHarness::deliver_late(bool all, MpResult& r) {
  for (auto it = late_.begin(); it != late_.end();) {
    if (all || it->due <= c_->clock().now()) {
      doorbell(r, it->requester);
      it = late_.erase(it);
    } else {
      ++it;
    }
  }
}

// The peer's receives: each lane's next message, exactly once.
bool MpHarness::drain(MpResult& r) {
  for (;;) {
    auto v = cq_b_->poll();
    if (v.empty()) return true;
    for (const Completion& e : v) {
      if (!e.ok() || e.is_send() || e.byte_len != kMsg)
        return fail("bad completion: status " + std::to_string(e.status) +
                    " flags " + std::to_string(e.flags) + " length " +
                    std::to_string(e.byte_len));
      uint32_t head[2];
      uint64_t seq;
      rbuf_.read(e.wr_id * kMsg, head, 8);
      rbuf_.read(e.wr_id * kMsg + 8, &seq, 8);
      if (head[1] != kMagic || head[0] >= cfg_.lanes || seq != next_[head[0]])
        return fail("lane " + std::to_string(head[0]) + " message " +
                    std::to_string(seq) + " arrived, expected " +
                    std::to_string(head[0] < cfg_.lanes ? next_[head[0]] : 0) +
                    " (after " + std::to_string(r.delivered) + ")");
      next_[head[0]]++;
      r.delivered++;
      if (!qb_->post_recv(e.wr_id,
                          {Sge{rbuf_.va(e.wr_id * kMsg), kMsg, rmr_.key}}))
        return fail("receive not reposted");
    }
  }
}

}  // namespace rhinet::sim
