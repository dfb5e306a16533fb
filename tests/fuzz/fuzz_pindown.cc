// SPDX-License-Identifier: BSD-2-Clause
// Fuzzes remote pin-down as a whole on simulated nodes: two sources and a
// target whose area is pinned on demand by a simulated host. The input
// picks a lossy fabric or not, the host's pin limit, and a script of PUSHes,
// PULLs, fetch-and-adds, PD_REQs and PD_RELEASEs (ranges anywhere, also
// past the area), two at once from both sources on disjoint ranges, while
// the host answers at once or late. Checked against a model of the
// target's bytes and holders: every request completes (none hangs), a
// success moved the right bytes, a failure is the one the model predicts
// (BOUNDS past the area; NOT_PINNED only beyond the limit) and wrote
// nothing, pages with
// holders stay pinned, the host never pins past its limit. At the end the
// MR goes away with a request held, and nothing is left waiting.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rhinet/sim/sim.h"

namespace {

using namespace rhinet::sim;

constexpr uint32_t kQkey = 0x7100;
constexpr uint32_t kArea = 3;
constexpr uint32_t kPages = 48;
constexpr size_t kAreaBytes = kPages * 4096;
constexpr size_t kLocal = 64 * 1024;
constexpr uint64_t kWaitNs = 400'000'000;

struct Ep {
  std::unique_ptr<SimContext> ctx;
  std::unique_ptr<SimCq> cq;
  std::unique_ptr<SimQp> qp;
  SimBuffer buf;
  SimMr mr;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_pindown: %s\n", what.c_str());
  std::abort();
}

Ep make_ep(SimCluster& c, uint16_t node) {
  Ep e;
  e.ctx = c.node(node).open_context();
  if (!e.ctx->ok()) fail("context");
  e.cq = e.ctx->create_cq(9);
  QpInit qi;
  qi.type = RHN_QP_ENDPOINT;
  qi.send_cq = e.cq.get();
  e.qp = e.ctx->create_qp(qi);
  if (!e.qp || !activate_datagram(*e.qp, kQkey)) fail("endpoint");
  e.buf = e.ctx->alloc(kLocal);
  e.mr = e.ctx->reg_mr(e.buf, RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE |
                                  RHN_ACCESS_REMOTE_READ |
                                  RHN_ACCESS_REMOTE_ATOMIC);
  if (!e.mr.ok()) fail("local MR");
  return e;
}

struct Op {
  uint8_t kind;  // 0 PUSH, 1 PULL, 2 FETCH_ADD, 3 PD_REQ, 4 PD_RELEASE
  uint64_t offset;
  uint32_t length;
  uint64_t seed;
};

class Run {
 public:
  Run(bool lossy, uint8_t seed, uint64_t limit) {
    ClusterConfig cfg;
    cfg.nodes = 3;
    cfg.seed = seed + 1;
    c_ = std::make_unique<SimCluster>(cfg);
    if (!c_->all_up()) fail("bring-up");
    if (lossy) {
      FaultConfig f;
      f.loss = 0.05;
      f.reorder = 0.05;
      c_->fabric().set_faults(f);
    }
    target_ = make_ep(*c_, 0);
    src_[0] = make_ep(*c_, 1);
    src_[1] = make_ep(*c_, 2);
    host_ = std::make_unique<SimPinHost>(c_->node(0));
    host_->limit = limit;
    mem_ = target_.ctx->alloc(kAreaBytes);
    model_ = SimBuffer::pattern(seed + 99, kAreaBytes);
    mem_.write(0, model_.data(), model_.size());
    MrOptions opt;
    opt.on_demand = true;
    mr_ = target_.ctx->reg_mr(mem_,
                              RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
                                  RHN_ACCESS_REMOTE_ATOMIC,
                              {}, opt);
    if (!mr_.ok()) fail("on-demand MR");
    host_->add(mr_);
    if (!target_.ctx->register_area(kArea, mr_, mem_.va(), kAreaBytes).ok())
      fail("area");
    holders_.assign(kPages, 0);
  }

  // Posts op from source s, its local data at `local`.
  void post(int s, const Op& op, uint64_t wr_id, size_t local) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.flags = RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA;
    wr.remote_key = kArea;
    wr.remote_addr = op.offset;
    wr.dst_node = 0;
    wr.dst_qpn = target_.qp->qpn();
    Ep& e = src_[s];
    switch (op.kind) {
      case 0: {
        auto d = SimBuffer::pattern(op.seed, op.length);
        e.buf.write(local, d.data(), d.size());
        wr.opcode = RHN_OP_WRITE;
        wr.sges = {Sge{e.buf.va(local), op.length, e.mr.key}};
        break;
      }
      case 1:
        wr.opcode = RHN_OP_READ;
        wr.sges = {Sge{e.buf.va(local), op.length, e.mr.key}};
        break;
      case 2:
        wr.opcode = RHN_OP_FETCH_ADD;
        wr.compare_add = op.seed;
        wr.sges = {Sge{e.buf.va(local), 8, e.mr.key}};
        break;
      default:
        wr.opcode = op.kind == 3 ? RHN_OP_PD_REQUEST : RHN_OP_PD_RELEASE;
        wr.imm_data = op.length;
        break;
    }
    if (!e.qp->post_send(wr)) fail("post");
  }

  // What the model says the op does, checked against its completion.
  void settle(int s, const Op& op, const Completion& w, size_t local) {
    if (std::getenv("FUZZ_PINDOWN_VERBOSE"))
      std::fprintf(stderr,
                   "src %d op %u offset %llu length %u: status %u syn %u "
                   "pinned %llu\n",
                   s, op.kind, (unsigned long long)op.offset, op.length,
                   w.status, w.vendor_err, (unsigned long long)host_->pinned());
    const bool inside = op.offset + op.length <= kAreaBytes;
    if (!inside) {
      if (w.status != RHN_CQE_REM_ACCESS_ERR || w.vendor_err != RHN_SYN_BOUNDS)
        fail("a range past the area: status " + std::to_string(w.status) +
             " syndrome " + std::to_string(w.vendor_err));
      return;
    }
    if (!w.ok()) {
      // Only the host's limit may refuse a range inside the area.
      if (w.status != RHN_CQE_REM_ACCESS_ERR ||
          w.vendor_err != RHN_SYN_NOT_PINNED || host_->limit >= kPages)
        fail("op " + std::to_string(op.kind) + " failed: status " +
             std::to_string(w.status) + " syndrome " +
             std::to_string(w.vendor_err));
      return;  // refused at its first packet: nothing was written
    }
    const uint32_t first = uint32_t(op.offset / 4096);
    const uint32_t last = uint32_t((op.offset + op.length - 1) / 4096);
    switch (op.kind) {
      case 0: {
        auto d = SimBuffer::pattern(op.seed, op.length);
        std::memcpy(model_.data() + op.offset, d.data(), d.size());
        break;
      }
      case 1:
        if (src_[s].buf.bytes(local, op.length) !=
            std::vector<uint8_t>(model_.begin() + long(op.offset),
                                 model_.begin() + long(op.offset + op.length)))
          fail("PULL read other bytes than the model's");
        break;
      case 2: {
        uint64_t old;
        std::memcpy(&old, model_.data() + op.offset, 8);
        if (src_[s].buf.load64(local) != old) fail("fetch-add's old value");
        old += op.seed;
        std::memcpy(model_.data() + op.offset, &old, 8);
        break;
      }
      case 3:
        for (uint32_t p = first; p <= last; p++) holders_[p]++;
        break;
      case 4:
        for (uint32_t p = first; p <= last; p++)
          if (holders_[p]) holders_[p]--;
        break;
    }
  }

  void step(const Op& a, const Op* b, bool late) {
    host_->answer = !late;
    post(0, a, 1, 0);
    if (b) post(1, *b, 2, 0);
    if (late) {
      c_->run_for(2'000'000);
      host_->answer = true;
      host_->answer_deferred();
    }
    auto wa = c_->wait_cqes(*src_[0].cq, 1, kWaitNs);
    if (wa.size() != 1) fail("a request never completed (source 1)");
    settle(0, a, wa[0], 0);
    if (b) {
      auto wb = c_->wait_cqes(*src_[1].cq, 1, kWaitNs);
      if (wb.size() != 1) fail("a request never completed (source 2)");
      settle(1, *b, wb[0], 0);
    }
    // Releases reach the host after their completion: let them land.
    c_->run_for(200'000);
    check();
  }

  void check() {
    if (host_->pinned() > host_->limit) fail("pinned past the limit");
    for (uint32_t p = 0; p < kPages; p++) {
      if (host_->holders(mr_, p) != holders_[p])
        fail("page " + std::to_string(p) + " has " +
             std::to_string(host_->holders(mr_, p)) + " holders, model " +
             std::to_string(holders_[p]));
      if (holders_[p] && !host_->is_pinned(mr_, p))
        fail("a held page is not pinned");
    }
    if (mem_.bytes(0, kAreaBytes) != model_) fail("target bytes differ");
  }

  // The MR goes away while a request waits for the host.
  void finish() {
    host_->answer = false;
    Op push{0, 0, uint32_t(kLocal), 5};
    post(0, push, 9, 0);
    c_->run_for(1'000'000);
    target_.ctx->driver().unregister_area(target_.ctx->index(), kArea);
    host_->remove(mr_);
    if (!target_.ctx->dereg_mr(mr_).ok()) fail("dereg");
    host_->answer_deferred();
    auto w = c_->wait_cqes(*src_[0].cq, 1, kWaitNs);
    if (w.size() != 1) fail("a request held when the MR went never ended");
  }

 private:
  std::unique_ptr<SimCluster> c_;
  Ep target_, src_[2];
  std::unique_ptr<SimPinHost> host_;
  SimBuffer mem_;
  SimMr mr_;
  std::vector<uint8_t> model_;
  std::vector<uint32_t> holders_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  constexpr uint64_t kLimits[] = {UINT64_MAX, 4, 16, 40};
  Run run(data[0] & 1, data[1], kLimits[(data[0] >> 1) % 4]);
  size_t at = 3;
  auto next = [&]() -> uint32_t { return at < size ? data[at++] : 0; };
  auto draw = [&](uint8_t kind) {
    Op op;
    op.kind = kind;
    // Mostly inside the area, sometimes across its end.
    const uint32_t page = next() % (kPages + 2);
    op.offset = uint64_t(page) * 4096 + (next() % 16) * 256;
    op.length = kind == 2 ? 8 : 1 + (next() % 24) * 4096 + next() * 7;
    if (kind == 2) op.offset &= ~uint64_t{7};
    if (op.length > kLocal) op.length = kLocal;
    op.seed = next() + 1;
    return op;
  };
  const int steps = int(std::min<size_t>((size - 3) / 6, data[2] & 1 ? 8 : 16));
  for (int i = 0; i < steps; i++) {
    const uint32_t ctl = next();
    Op a = draw(uint8_t(ctl % 5));
    // Two at once from both sources, on pages apart (so that the model
    // does not depend on which lands first).
    if ((ctl >> 3) & 1) {
      Op b = draw(uint8_t((ctl >> 4) % 5));
      const uint64_t a_end = (a.offset + a.length + 4095) / 4096 * 4096;
      const uint64_t b_end = (b.offset + b.length + 4095) / 4096 * 4096;
      if (a_end <= b.offset / 4096 * 4096 || b_end <= a.offset / 4096 * 4096) {
        run.step(a, &b, (ctl >> 7) & 1);
        continue;
      }
    }
    run.step(a, nullptr, (ctl >> 7) & 1);
  }
  run.finish();
  return 0;
}
