// SPDX-License-Identifier: BSD-2-Clause
// The tag-matching reference model (tag_scenario.h).
#include "rhinet/sim/tag_scenario.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rhinet/sim/sim.h"

namespace rhinet::sim {
namespace {

constexpr uint64_t kAll = ~uint64_t{0};
constexpr size_t kSlot = 64 * 1024;

struct Endpoint {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  SimBuffer buf;
  SimMr mr;
  uint16_t node = 0;
  Sge sge(size_t off, size_t len) const {
    return Sge{buf.va() + off, uint32_t(len), mr.key};
  }
};

bool make_endpoint(SimCluster& c, uint16_t node, size_t bytes, Endpoint* e) {
  e->node = node;
  e->ctx = c.node(node).open_context();
  e->cq = e->ctx->create_cq(14);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e->cq.get();
  qi.sq_log_depth = 10;
  qi.rq_log_depth = 14;
  e->qp = e->ctx->create_qp(qi);
  if (!e->qp || !activate_datagram(*e->qp, 0)) return false;
  e->buf = e->ctx->alloc(bytes);
  if (!e->buf.valid()) return false;
  e->buf.fill(0);
  e->mr =
      e->ctx->reg_mr(e->buf, RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                                 RHN_ACCESS_REMOTE_READ);
  return e->mr.key != 0;
}

std::vector<uint8_t> payload(uint32_t sender, uint32_t msg, size_t len) {
  return SimBuffer::pattern(uint64_t{sender} << 32 | (msg + 1), len);
}

std::string describe(const Completion& c) {
  std::ostringstream o;
  o << "cqe{wr_id=" << c.wr_id << " op=" << int(c.opcode)
    << " status=" << int(c.status) << " syndrome=" << c.vendor_err
    << " len=" << c.byte_len << " idx=" << c.wqe_index << "}";
  return o.str();
}

struct ModelRecv {
  uint64_t wr_id = 0;
  uint16_t rq_index = 0;
  uint64_t tag = 0, mask = 0;
  bool any_src = false;
  int src = 0;  // sender index
  size_t cap = 0;
  size_t off = 0;
};

struct ModelMsg {
  int sender;
  uint32_t id;
  uint64_t tag;
  size_t len;
};

struct Outcome {
  uint8_t status;
  int sender;
  uint32_t id;
  size_t len;
};

bool takes(const ModelRecv& r, const ModelMsg& m) {
  return (r.any_src || r.src == m.sender) && ((r.tag ^ m.tag) & r.mask) == 0;
}

class Scenario {
 public:
  Scenario(const TagScript& s, const std::function<uint64_t()>& next)
      : s_(s), next_(next) {}
  std::string run(TagScenarioStats* stats);

 private:
  // Failure: what went wrong, then the script so far.
  std::string fail(const std::string& what) const {
    std::string out = what + "\nscript:\n";
    for (const auto& l : log_) out += "  " + l + "\n";
    return out;
  }
  void collect();
  void settle() {
    c_->run_for(s_.lossy ? 40'000'000 : 3'000'000);
    collect();
  }
  std::optional<Completion> wait_local(SimCq& cq);
  std::string irecv(int step, int sender, uint64_t tag);
  std::string isend(int step, int sender, uint64_t tag);
  std::string probe(int sender, uint64_t tag);
  std::string cancel();
  std::string drain();
  std::string check() const;

  const TagScript s_;
  const std::function<uint64_t()>& next_;
  bool limited_ = false;
  std::unique_ptr<SimCluster> c_;
  Endpoint rx_;
  std::vector<Endpoint> tx_;
  std::deque<ModelRecv> posted_;
  std::deque<ModelMsg> unexpected_;
  std::map<uint64_t, ModelRecv> recvs_;   // every irecv by wr_id
  std::map<uint64_t, Outcome> expected_;  // recv wr_id -> what it gets
  std::map<uint64_t, Completion> got_;    // recv wr_id -> its CQE
  std::map<std::pair<int, uint32_t>, bool> delivered_;   // isends matched
  std::map<std::pair<int, uint32_t>, Completion> sent_;  // isend CQEs
  std::vector<uint32_t> next_msg_;
  uint64_t next_wr_ = 1000;
  uint16_t rq_index_ = 0;
  std::string late_;  // an inconsistency seen while collecting
  TagScenarioStats st_;
  std::vector<std::string> log_;
};

void Scenario::collect() {
  for (const auto& cqe : rx_.cq->poll(256)) {
    if (cqe.opcode != RHN_CQE_OP_TAG_RECV || got_.count(cqe.wr_id)) {
      if (late_.empty())
        late_ = "stray or repeated completion " + describe(cqe);
      continue;
    }
    got_[cqe.wr_id] = cqe;
  }
  for (size_t i = 0; i < tx_.size(); i++)
    for (const auto& cqe : tx_[i].cq->poll(256))
      sent_[{int(i), uint32_t(cqe.wr_id)}] = cqe;
}

// The probe's or cancel's own CQE; receives completing meanwhile (on the
// same CQ) are recorded.
std::optional<Completion> Scenario::wait_local(SimCq& cq) {
  for (;;) {
    auto v = c_->wait_cqes(cq, 1, 100'000'000);
    if (v.empty()) return std::nullopt;
    std::optional<Completion> own;
    for (const auto& x : v) {
      if (x.is_send()) {
        own = x;
        continue;
      }
      if (got_.count(x.wr_id) && late_.empty())
        late_ = "receive completed twice " + describe(x);
      got_[x.wr_id] = x;
    }
    if (own) return own;
  }
}

std::string Scenario::irecv(int step, int sender, uint64_t tag) {
  static const size_t caps[] = {0, 16, 5000, 40'000, kSlot};
  ModelRecv r;
  r.wr_id = next_wr_++;
  r.rq_index = rq_index_++;
  r.tag = tag;
  // Half exact; the rest ignore all bits or one of five, so an endpoint
  // can hold more distinct masks than the NIC has mask classes (4).
  const int m = int(next_() % 12);
  r.mask = m == 0 ? 0 : m <= 5 ? ~(uint64_t{1} << (m - 1)) : kAll;
  r.any_src = next_() % 4 == 0;
  r.src = sender;
  r.cap = caps[next_() % std::size(caps)];
  r.off = size_t(step) * kSlot;
  recvs_[r.wr_id] = r;
  std::ostringstream o;
  o << "step " << step << " irecv " << r.wr_id << " tag " << r.tag << " mask "
    << (r.mask == kAll ? std::string("all")
        : r.mask       ? "~" + std::to_string(~r.mask)
                       : std::string("0"))
    << " any " << r.any_src << " src " << r.src << " cap " << r.cap;
  log_.push_back(o.str());
  auto it = std::find_if(unexpected_.begin(), unexpected_.end(),
                         [&](const ModelMsg& g) { return takes(r, g); });
  if (it != unexpected_.end()) {
    expected_[r.wr_id] = {
        uint8_t(it->len > r.cap ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_SUCCESS),
        it->sender, it->id, it->len};
    delivered_[{it->sender, it->id}] = true;
    unexpected_.erase(it);
  } else {
    posted_.push_back(r);
  }
  TagRecv t;
  t.tag = r.tag;
  t.mask = r.mask;
  t.any_src = r.any_src;
  t.src_node = tx_[size_t(r.src)].node;
  t.src_qpn = tx_[size_t(r.src)].qp->qpn();
  t.sge = rx_.sge(r.off, r.cap);
  if (!rx_.qp->post_tag_recv(r.wr_id, t)) return fail("post_tag_recv refused");
  return {};
}

std::string Scenario::isend(int step, int sender, uint64_t tag) {
  static const size_t lens[] = {
      0, 8, 1000, RHN_TAG_EAGER_MAX, RHN_TAG_EAGER_MAX + 1, 20'000, kSlot};
  ModelMsg g{sender, next_msg_[size_t(sender)]++, tag,
             lens[next_() % std::size(lens)]};
  std::ostringstream o;
  o << "step " << step << " isend " << sender << "/" << g.id << " tag " << g.tag
    << " len " << g.len;
  log_.push_back(o.str());
  auto it = std::find_if(posted_.begin(), posted_.end(),
                         [&](const ModelRecv& r) { return takes(r, g); });
  if (it != posted_.end()) {
    expected_[it->wr_id] = {
        uint8_t(g.len > it->cap ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_SUCCESS),
        g.sender, g.id, g.len};
    delivered_[{g.sender, g.id}] = true;
    posted_.erase(it);
  } else {
    unexpected_.push_back(g);
  }
  Endpoint& from = tx_[size_t(sender)];
  const auto bytes = payload(uint32_t(sender), g.id, g.len);
  from.buf.write(size_t(step) * kSlot, bytes.data(), bytes.size());
  SendWr wr;
  wr.wr_id = g.id;
  wr.opcode = RHN_OP_ISEND;
  wr.sges = {from.sge(size_t(step) * kSlot, g.len)};
  wr.dst_node = rx_.node;
  wr.dst_qpn = rx_.qp->qpn();
  wr.remote_addr = g.tag;
  if (!from.qp->post_send(wr)) return fail("post_send (isend) refused");
  return {};
}

std::string Scenario::probe(int sender, uint64_t tag) {
  const bool any = next_() % 2 == 0;
  const uint64_t mask = next_() % 3 == 0 ? 0 : kAll;
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = RHN_OP_IPROBE;
  if (any) {
    wr.tag_flags = RHN_TAG_F_ANY_SRC;
  } else {
    wr.dst_node = tx_[size_t(sender)].node;
    wr.dst_qpn = tx_[size_t(sender)].qp->qpn();
  }
  wr.remote_addr = tag;
  wr.tag_mask = mask;
  log_.push_back("iprobe tag " + std::to_string(tag) + (any ? " any" : ""));
  if (!rx_.qp->post_send(wr)) return fail("post_send (iprobe) refused");
  const auto p = wait_local(*rx_.cq);
  if (!p || p->opcode != RHN_CQE_OP_IPROBE)
    return fail("iprobe: no answer " + (p ? describe(*p) : ""));
  ModelRecv sel;
  sel.tag = tag;
  sel.mask = mask;
  sel.any_src = any;
  sel.src = sender;
  auto it = std::find_if(unexpected_.begin(), unexpected_.end(),
                         [&](const ModelMsg& g) { return takes(sel, g); });
  st_.probes++;
  const bool found = p->ext_flags & RHN_CQE_X_FOUND;
  if (found) st_.probes_found++;
  if (found && limited_) {
    // A message the model gave to a receive still waiting in the RQ is
    // queued on the NIC meanwhile: the probe may see it.
    if ((p->tag() & mask) != (tag & mask))
      return fail("iprobe found a tag it does not match");
  } else if (found) {
    if (it == unexpected_.end())
      return fail("iprobe found a message the model has not");
    if (p->byte_len != it->len || p->tag() != it->tag ||
        p->src_node != tx_[size_t(it->sender)].node)
      return fail("iprobe found another message than the oldest: " +
                  describe(*p));
  } else if (!limited_ && it != unexpected_.end()) {
    // (With tiny lists a queued message may still be being refused.)
    return fail("iprobe missed message " + std::to_string(it->id));
  }
  return {};
}

std::string Scenario::cancel() {
  auto pick = recvs_.begin();
  std::advance(pick, long(next_() % recvs_.size()));
  const ModelRecv r = pick->second;
  SendWr wr;
  wr.wr_id = 2;
  wr.opcode = RHN_OP_IRECV_CANCEL;
  wr.remote_key = r.rq_index;
  log_.push_back("cancel " + std::to_string(r.wr_id));
  if (!rx_.qp->post_send(wr)) return fail("post_send (cancel) refused");
  const auto k = wait_local(*rx_.cq);
  if (!k || k->opcode != RHN_CQE_OP_IRECV_CANCEL)
    return fail("cancel: no answer " + (k ? describe(*k) : ""));
  auto in_posted =
      std::find_if(posted_.begin(), posted_.end(),
                   [&](const ModelRecv& x) { return x.wr_id == r.wr_id; });
  if (k->ext_flags & RHN_CQE_X_FOUND) {
    st_.cancels_found++;
    if (in_posted == posted_.end()) return fail("cancelled a matched receive");
    expected_[r.wr_id] = {RHN_CQE_WR_FLUSH_ERR, -1, 0, 0};
    posted_.erase(in_posted);
  } else if (in_posted != posted_.end()) {
    return fail("a posted receive was not found by cancel");
  }
  return {};
}

// A catch-all receive for every message still queued in the model, so
// refused isends must come back and land where the model says.
std::string Scenario::drain() {
  const size_t left = unexpected_.size();
  for (size_t k = 0; k < left; k++) {
    ModelRecv r;
    r.wr_id = next_wr_++;
    r.rq_index = rq_index_++;
    r.any_src = true;
    r.cap = kSlot;
    r.off = (size_t(s_.steps) + k) * kSlot;
    recvs_[r.wr_id] = r;
    const ModelMsg g = unexpected_.front();
    unexpected_.pop_front();
    expected_[r.wr_id] = {RHN_CQE_SUCCESS, g.sender, g.id, g.len};
    delivered_[{g.sender, g.id}] = true;
    TagRecv t;
    t.mask = 0;
    t.any_src = true;
    t.sge = rx_.sge(r.off, r.cap);
    log_.push_back("drain irecv " + std::to_string(r.wr_id));
    if (!rx_.qp->post_tag_recv(r.wr_id, t))
      return fail("post_tag_recv refused (drain)");
    settle();
  }
  return {};
}

std::string Scenario::check() const {
  if (!late_.empty()) return fail(late_);
  // Every receive the model completed got exactly that message.
  for (const auto& [wr_id, want] : expected_) {
    auto it = got_.find(wr_id);
    if (it == got_.end())
      return fail("receive " + std::to_string(wr_id) + " never completed");
    const Completion& cqe = it->second;
    if (cqe.status != want.status)
      return fail("receive " + std::to_string(wr_id) + " status " +
                  std::to_string(cqe.status) + ", model " +
                  std::to_string(want.status) + ": " + describe(cqe));
    if (want.status == RHN_CQE_WR_FLUSH_ERR) continue;
    const ModelRecv& r = recvs_.at(wr_id);
    const Endpoint& from = tx_[size_t(want.sender)];
    if (cqe.byte_len != want.len || cqe.src_node != from.node ||
        cqe.src_qpn != from.qp->qpn())
      return fail("receive " + std::to_string(wr_id) + " got another message " +
                  "than " + std::to_string(want.sender) + "/" +
                  std::to_string(want.id) + ": " + describe(cqe));
    auto bytes = payload(uint32_t(want.sender), want.id, want.len);
    bytes.resize(std::min(want.len, r.cap));
    if (rx_.buf.bytes(r.off, bytes.size()) != bytes)
      return fail("receive " + std::to_string(wr_id) + " holds wrong bytes");
  }
  // ... and no other receive completed.
  for (const auto& [wr_id, cqe] : got_)
    if (!expected_.count(wr_id))
      return fail("unexpected completion " + describe(cqe));
  // Isends complete when delivered, and only then; a send queue completes
  // in order, so one waits for every earlier isend of its sender too.
  for (size_t i = 0; i < tx_.size(); i++) {
    bool all_before = true;
    for (uint32_t id = 0; id < next_msg_[i]; id++) {
      auto it = sent_.find({int(i), id});
      all_before = all_before && delivered_.count({int(i), id});
      const std::string name =
          "isend " + std::to_string(i) + "/" + std::to_string(id);
      if (all_before && it == sent_.end())
        return fail(name + " never completed");
      if (all_before && !it->second.ok())
        return fail(name + " failed: " + describe(it->second));
      if (!all_before && it != sent_.end())
        return fail(name + " completed undelivered");
    }
  }
  return {};
}

std::string Scenario::run(TagScenarioStats* stats) {
  ClusterConfig cfg;
  cfg.nodes = 1 + size_t(s_.senders);
  // Room for the receiver's buffers (two slots a step) and the queues.
  cfg.memory_bytes = size_t(2 * s_.steps + 8) * kSlot + (32u << 20);
  cfg.engine.tag.recvs = s_.recvs;
  cfg.engine.tag.msgs = s_.msgs;
  c_ = std::make_unique<SimCluster>(cfg);
  if (!c_->all_up()) return "cluster did not come up";
  if (s_.lossy) {
    FaultConfig f;
    f.loss = 0.03;
    f.reorder = 0.03;
    f.duplicate = 0.03;
    c_->fabric().set_seed(s_.fabric_seed);
    c_->fabric().set_faults(f);
  }
  // Capacities this small keep irecvs in the RQ and refuse isends: the
  // observable matching must not change, only its timing.
  limited_ = s_.recvs < 64 || s_.msgs < 64;
  if (!make_endpoint(*c_, 0, size_t(2 * s_.steps + 8) * kSlot, &rx_))
    return "receiver endpoint";
  tx_.resize(size_t(s_.senders));
  next_msg_.assign(size_t(s_.senders), 0);
  for (int i = 0; i < s_.senders; i++)
    if (!make_endpoint(*c_, uint16_t(1 + i), size_t(s_.steps + 1) * kSlot,
                       &tx_[size_t(i)]))
      return "sender endpoint";
  for (int step = 0; step < s_.steps; step++) {
    const int what = int(next_() % 100);
    const int sender = int(next_() % uint64_t(s_.senders));
    const uint64_t tag = 1 + next_() % 3;
    std::string err;
    if (what < 35)
      err = irecv(step, sender, tag);
    else if (what < 75)
      err = isend(step, sender, tag);
    else if (what < 90)
      err = probe(sender, tag);
    else if (!recvs_.empty() && !limited_)
      // (With tiny lists a receive the model matched to a message still
      // being refused is posted on the NIC and may be cancelled: legal,
      // but the model cannot follow.)
      err = cancel();
    if (!err.empty()) return err;
    settle();
  }
  settle();
  std::string err = drain();
  if (err.empty()) err = check();
  st_.receives = expected_.size();
  if (stats) *stats = st_;
  return err;
}

}  // namespace

std::string run_tag_scenario(const TagScript& script,
                             const std::function<uint64_t()>& next,
                             TagScenarioStats* stats) {
  TagScript s = script;
  s.senders = std::clamp(s.senders, 1, 7);
  s.steps = std::max(s.steps, 0);
  s.recvs = std::max<uint32_t>(s.recvs, 1);
  s.msgs = std::max<uint32_t>(s.msgs, 1);
  // With lists this small isends are refused and resent, so messages of
  // different senders may reach the lists in another order than they
  // were sent -- which MPI allows (order holds per sender) but this
  // model, which follows one global order, cannot. One sender then.
  if (s.recvs < 64 || s.msgs < 64) s.senders = 1;
  Scenario sc(s, next);
  return sc.run(stats);
}

}  // namespace rhinet::sim
