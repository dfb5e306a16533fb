// SPDX-License-Identifier: BSD-2-Clause
// rhinet::xpu::PutChannel (put_channel.hpp): the three ways a device's puts
// reach the NIC, behind one program format. The channel's region of the
// xpu's memory:
//   [0, 64K)            CQ ring and record (device, cpu_doorbell)
//   [64K, 128K)         QP buffer: send ring, receive ring, records
//   [128K, +data)       the source data (an MR in device modes)
//   then 64K of staged WQEs, 128K of lane program, the proxy's request
//   ring and the words the lane and the library's thread share.
// Only [0, data end) is exported as a dma-buf: the NIC reaches nothing else.
#include "rhinet/put_channel.hpp"

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "rhinet/hw_queues.h"
#include "rhinet/hw_regs.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::xpu {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kCqOff = 0;
constexpr std::uint64_t kQpOff = 64 << 10;
constexpr std::uint64_t kDataOff = 128 << 10;
// A run is one straight-line lane program (it does not loop with the xpu's
// BRANCH yet): its length in the region bounds the puts of a run, as the
// staged WQEs do.
constexpr std::uint64_t kStageLen = 64 << 10;
constexpr std::uint64_t kMaxStagedPuts = kStageLen / RHN_SQ_SLOT_SIZE;
constexpr std::uint64_t kProgLen = 128 << 10;
constexpr std::uint64_t kMaxLaneCommands = kProgLen / 32;  // xpu.h's command
constexpr std::uint64_t kReqLen = 4 << 10;  // the proxy's request ring
constexpr std::uint64_t kWordsLen = 4 << 10;
constexpr std::uint32_t kSqWrs = 64;  // one-slot WQEs
constexpr std::uint32_t kRqWrs = 2;   // the smallest receive ring
constexpr std::uint32_t kCqes = 64;
constexpr std::uint32_t kReqSlots = 64;  // 32-byte request descriptors
constexpr std::uint32_t kMaxPut = 1u << 20;
constexpr std::uint64_t kSrcIova = 0x5500000000ull;
// Rounds (10 us each) a lane waits for one completion: a stuck NIC or
// thread shows as a lane TIMEOUT, reported with the put that hung.
constexpr std::uint32_t kPollRounds = 200000;
// The words the lane and the library's thread share, in kWords.
constexpr std::uint64_t kKickWord = 0;       // lane: SQ kicks asked for
constexpr std::uint64_t kDoneWord = 8;       // thread: proxy puts completed
constexpr std::uint64_t kConsumedWord = 16;  // thread: request slots read

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}

std::uint64_t ctrl_off(std::uint64_t data_length) {
  return kDataOff + round_up(data_length, kPage);
}

// The channel's QP, in xpu memory or host memory alike: one-slot WRITEs.
ibv_qp_cap channel_qp_caps() {
  ibv_qp_cap c{};
  c.max_send_wr = kSqWrs;
  c.max_recv_wr = kRqWrs;
  c.max_send_sge = 1;
  c.max_recv_sge = 1;
  return c;
}

std::string errno_name(int e) {
  switch (e) {
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EREMOTEIO:
      return "EREMOTEIO";
    case ENOSPC:
      return "ENOSPC";
    case EBUSY:
      return "EBUSY";
    case ENODEV:
      return "ENODEV";
    case EINVAL:
      return "EINVAL";
    default:
      return "errno " + std::to_string(e);
  }
}

}  // namespace

std::string_view to_string(PutMode mode) {
  switch (mode) {
    case PutMode::device:
      return "device";
    case PutMode::cpu_doorbell:
      return "cpu_doorbell";
    case PutMode::proxy:
      return "proxy";
    case PutMode::automatic:
      return "automatic";
  }
  return "?";
}

bool parse_put_mode(std::string_view text, PutMode* mode) {
  for (PutMode m : {PutMode::device, PutMode::cpu_doorbell, PutMode::proxy,
                    PutMode::automatic})
    if (text == to_string(m)) return *mode = m, true;
  return false;
}

struct PutChannel::Impl {
  PutChannelConfig cfg;
  PutMode mode = PutMode::proxy;
  std::vector<PutRefusal> refusals;
  std::uint64_t base = 0;  // the region in the xpu's memory
  int buf_fd = -1;         // its dma-buf (device modes)
  int db_fd = -1;          // the doorbell page's (device mode)
  Import db{};
  bool db_imported = false;  // db's window is ours: given back at release
  bool lane_held = false;    // cfg.lane claimed: given back at release
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::uint8_t* staging = nullptr;  // proxy: host copy of the source
  PutTarget target{};
  bool connected = false;
  // A run that stopped half way left the queues where the counters below
  // no longer tell: the channel refuses further runs.
  bool broken = false;
  // Free-running, across runs: slots posted, CQEs consumed, kicks asked,
  // proxy requests issued.
  std::uint32_t sq_pi = 0, cq_ci = 0;
  std::uint64_t kicks = 0, issued = 0;
  // Kicks the thread has rung: what it compares the lane's kick word with
  // (not the word at its start: the lane may have written it already).
  std::uint64_t kicks_rung = 0;
  std::uint32_t sq_rec_off = 0, cq_depth = 0, cq_rec_off = 0;

  ~Impl();
  std::uint64_t ctrl() const { return base + ctrl_off(cfg.data_length); }
  std::uint64_t word(std::uint64_t w) const {
    return ctrl() + kStageLen + kProgLen + kReqLen + w;
  }
  volatile std::uint64_t* cpu_word(std::uint64_t w) const {
    return reinterpret_cast<volatile std::uint64_t*>(cfg.device->mem() +
                                                     word(w));
  }
  Result<void> setup_device_queues(bool doorbell);
  Result<void> setup_proxy();
  void release();
  Result<LaneProgram> emit(const PutProgram& p);
  void emit_wait_device(LaneProgram& lp, std::uint32_t* outstanding,
                        bool* unkicked);
  void cpu_thread(std::stop_token st, PutRunStats* stats,
                  std::optional<Error>* failure);
};

PutChannel::Impl::~Impl() { release(); }

// Everything the channel took, given back: the lane first (aborted, so
// nothing writes the queues any more), then the doorbell page's window
// (a lane naming it faults WINDOW from then on), then the NIC's objects.
void PutChannel::Impl::release() {
  if (lane_held) (void)cfg.device->release_lanes(1u << cfg.lane);
  if (db_imported) (void)cfg.device->unimport(db.window);
  lane_held = db_imported = false;
  if (qp) ibv_destroy_qp(qp);
  if (cq) ibv_destroy_cq(cq);
  if (mr) ibv_dereg_mr(mr);
  if (pd) ibv_dealloc_pd(pd);
  if (staging) free(staging);
  if (buf_fd >= 0) close(buf_fd);
  if (db_fd >= 0) close(db_fd);
  qp = nullptr;
  cq = nullptr;
  mr = nullptr;
  pd = nullptr;
  staging = nullptr;
  buf_fd = db_fd = -1;
}

// The QP and CQ in a dma-buf of the region, the source an MR there; with
// @doorbell, the context's doorbell page imported for the lane as well.
Result<void> PutChannel::Impl::setup_device_queues(bool doorbell) {
  const Device& dev = *cfg.device;
  auto fd =
      dev.export_dmabuf(base, kDataOff + round_up(cfg.data_length, kPage));
  if (!fd) {
    const int e = fd.error().errno_value();
    std::string why =
        "dma-buf export of the xpu's memory refused: " + errno_name(e);
    if (e == EOPNOTSUPP && !dev.p2pdma())
      why += ", kernel without CONFIG_PCI_P2PDMA";
    return Error(e, why);
  }
  buf_fd = *fd;
  if (doorbell) {
    rhinetdv_export_doorbell_attr da{};
    da.flags = RHINETDV_EXPORT_DOORBELL_CLOEXEC;
    db_fd = rhinetdv_export_doorbell(cfg.context, &da, sizeof(da));
    if (db_fd < 0) {
      const int e = errno;
      return Error(
          e, "the NIC's doorbell page export refused: " + errno_name(e) +
                 (e == EOPNOTSUPP ? ", kernel without CONFIG_PCI_P2PDMA or not "
                                    "a rhinet context"
                                  : ""));
    }
    auto imp = dev.import_dmabuf(db_fd, 1u << cfg.lane);
    if (!imp)
      return Error(imp.error().errno_value(),
                   "the xpu cannot reach the doorbell page: " +
                       errno_name(imp.error().errno_value()));
    db = *imp;
    db_imported = true;
  }
  volatile std::uint8_t* mem = dev.mem() + base;
  std::memset(const_cast<std::uint8_t*>(mem), 0, kDataOff);
  pd = ibv_alloc_pd(cfg.context);
  if (!pd) return Error(errno, "ibv_alloc_pd");
  ibv_cq_init_attr_ex ca{};
  ca.cqe = kCqes;
  ibv_qp_init_attr_ex qa{};
  qa.cap = channel_qp_caps();
  qa.qp_type = IBV_QPT_RC;
  qa.comp_mask = IBV_QP_INIT_ATTR_PD;
  qa.pd = pd;
  std::size_t cq_len = 0, qp_len = 0;
  if (int e = rhinetdv_cq_buf_len(cfg.context, kCqes, &cq_len))
    return Error(e, "rhinetdv_cq_buf_len");
  if (int e = rhinetdv_qp_buf_len(cfg.context, &qa, &qp_len))
    return Error(e, "rhinetdv_qp_buf_len");
  cq_depth = static_cast<std::uint32_t>((cq_len - sizeof(rhn_cq_record)) /
                                        RHN_CQE_SIZE);
  cq_rec_off = cq_depth * RHN_CQE_SIZE;
  if (qp_len < RHN_SQ_SLOT_SIZE * kSqWrs + 2 * sizeof(rhn_queue_record) ||
      cq_len > kQpOff || qp_len > kDataOff - kQpOff || cq_depth < kCqes)
    return Error(EINVAL, "queue layout: QP " + std::to_string(qp_len) +
                             " bytes, CQ " + std::to_string(cq_len));
  auto qbuf = [&](std::uint64_t off, std::size_t len) {
    rhinetdv_queue_buf b{};
    b.dmabuf_fd = buf_fd;
    b.offset = off;
    b.length = len;
    b.addr = const_cast<std::uint8_t*>(mem) + off;
    return b;
  };
  rhinetdv_cq_init_attr cdv{};
  cdv.comp_mask = RHINETDV_CQ_INIT_ATTR_BUF;
  cdv.buf = qbuf(kCqOff, cq_len);
  ibv_cq_ex* cqx = rhinetdv_create_cq(cfg.context, &ca, &cdv, sizeof(cdv));
  if (!cqx) return Error(errno, "CQ in the xpu's memory");
  cq = ibv_cq_ex_to_cq(cqx);
  qa.send_cq = qa.recv_cq = cq;
  rhinetdv_qp_init_attr qdv{};
  qdv.comp_mask = RHINETDV_QP_INIT_ATTR_BUF;
  qdv.buf = qbuf(kQpOff, qp_len);
  qp = rhinetdv_create_qp(cfg.context, &qa, &qdv, sizeof(qdv));
  if (!qp) return Error(errno, "QP in the xpu's memory");
  // Where the kernel put the SQ record the lane publishes to; the lane's
  // program wraps its slots at kSqWrs, as the NIC must.
  rhinetdv_qp_buf_layout layout{};
  if (int e = rhinetdv_query_qp_buf(qp, &layout, sizeof(layout)))
    return Error(e, "rhinetdv_query_qp_buf");
  if (layout.sq_offset != 0 || layout.sq_slots != kSqWrs ||
      layout.sq_record_offset + sizeof(rhn_queue_record) > qp_len)
    return Error(EINVAL, "queue layout: SQ of " +
                             std::to_string(layout.sq_slots) +
                             " slots, record at " +
                             std::to_string(layout.sq_record_offset));
  sq_rec_off = static_cast<std::uint32_t>(layout.sq_record_offset);
  mr = ibv_reg_dmabuf_mr(pd, kDataOff, cfg.data_length, kSrcIova, buf_fd,
                         IBV_ACCESS_LOCAL_WRITE);
  if (!mr) {
    const int e = errno;
    return Error(e, "the NIC cannot read the xpu's memory (dma-buf MR): " +
                        errno_name(e));
  }
  return ok();
}

// An ordinary QP and CQ in host memory and a host staging copy of the
// source: what the library's thread posts from.
Result<void> PutChannel::Impl::setup_proxy() {
  pd = ibv_alloc_pd(cfg.context);
  if (!pd) return Error(errno, "ibv_alloc_pd");
  cq = ibv_create_cq(cfg.context, kCqes, nullptr, nullptr, 0);
  if (!cq) return Error(errno, "ibv_create_cq");
  ibv_qp_init_attr qa{};
  qa.cap = channel_qp_caps();
  qa.qp_type = IBV_QPT_RC;
  qa.send_cq = qa.recv_cq = cq;
  qp = ibv_create_qp(pd, &qa);
  if (!qp) return Error(errno, "ibv_create_qp");
  staging = static_cast<std::uint8_t*>(
      aligned_alloc(kPage, round_up(cfg.data_length, kPage)));
  if (!staging) return Error(ENOMEM, "staging buffer");
  mr = ibv_reg_mr(pd, staging, cfg.data_length, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return Error(errno, "staging MR");
  return ok();
}

std::uint64_t PutChannel::region_bytes(std::uint64_t data_length) {
  return ctrl_off(data_length) + kStageLen + kProgLen + kReqLen + kWordsLen;
}

std::uint64_t PutChannel::data_offset() { return kDataOff; }

Result<PutChannel> PutChannel::open(const PutChannelConfig& config) {
  if (!config.context || !config.device)
    return Error(EINVAL, "put channel: no NIC context or no xpu");
  const Device& dev = *config.device;
  if (config.region_offset % kPage || config.data_length == 0 ||
      config.data_length > kMaxPut * 64ull ||
      config.region_length < region_bytes(config.data_length) ||
      config.region_offset + config.region_length > dev.mem_size())
    return Error(
        EINVAL, "put channel: region " + std::to_string(config.region_offset) +
                    "+" + std::to_string(config.region_length) +
                    " not page aligned, inside the xpu's memory and at least " +
                    std::to_string(region_bytes(config.data_length)) +
                    " bytes");
  if (config.lane >= dev.lanes())
    return Error(EINVAL, "put channel: lane " + std::to_string(config.lane) +
                             " of an xpu with " + std::to_string(dev.lanes()));
  std::vector<PutMode> tries;
  if (config.mode == PutMode::automatic)
    tries = {PutMode::device, PutMode::cpu_doorbell, PutMode::proxy};
  else
    tries = {config.mode};
  std::vector<PutRefusal> refused;
  for (PutMode m : tries) {
    auto impl = std::make_unique<Impl>();
    impl->cfg = config;
    impl->base = config.region_offset;
    impl->mode = m;
    // The lane is the channel's until it is destroyed; a lane another
    // file holds is no mode's refusal but the caller's error.
    if (auto c = dev.claim_lanes(1u << config.lane); !c)
      return Error(c.error().errno_value(),
                   "put channel: lane " + std::to_string(config.lane) +
                       " not free: " + errno_name(c.error().errno_value()) +
                       (c.error().errno_value() == EBUSY
                            ? ", another file of the xpu holds it"
                            : ""));
    impl->lane_held = true;
    std::memset(const_cast<std::uint8_t*>(dev.mem() + impl->ctrl()), 0,
                kStageLen + kProgLen + kReqLen + kWordsLen);
    Result<void> r = m == PutMode::proxy
                         ? impl->setup_proxy()
                         : impl->setup_device_queues(m == PutMode::device);
    if (r) {
      impl->refusals = std::move(refused);
      return PutChannel(std::move(impl));
    }
    Error e = std::move(r).error();
    if (config.mode != PutMode::automatic)
      return Error(e.code(),
                   std::string(to_string(m)) + " mode refused: " + e.message());
    refused.push_back({m, std::move(e)});
  }
  Error last = refused.back().why;
  return Error(last.code(), "no put mode works here; last: " + last.message());
}

PutChannel::PutChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PutChannel::PutChannel(PutChannel&&) noexcept = default;
PutChannel& PutChannel::operator=(PutChannel&&) noexcept = default;
PutChannel::~PutChannel() = default;

PutMode PutChannel::mode() const { return impl_->mode; }

std::optional<Import> PutChannel::doorbell_window() const {
  if (!impl_->db_imported) return std::nullopt;
  return impl_->db;
}

const std::vector<PutRefusal>& PutChannel::refusals() const {
  return impl_->refusals;
}

std::string PutChannel::describe() const {
  std::string s = "mode " + std::string(to_string(impl_->mode));
  for (const PutRefusal& r : impl_->refusals)
    s += "; " + std::string(to_string(r.mode)) + " refused: " + r.why.message();
  return s;
}

PutEndpoint PutChannel::local() const {
  PutEndpoint ep;
  ep.qpn = impl_->qp->qp_num;
  ibv_gid g{};
  if (!ibv_query_gid(impl_->cfg.context, impl_->cfg.port, impl_->cfg.gid_index,
                     &g))
    std::memcpy(ep.gid.data(), g.raw, 16);
  return ep;
}

Result<void> PutChannel::connect(const PutEndpoint& peer,
                                 const PutTarget& target) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = impl_->cfg.port;
  if (ibv_modify_qp(
          impl_->qp, &a,
          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return Error(errno, "put channel's QP to INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer.qpn;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid.data(), 16);
  a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(impl_->cfg.gid_index);
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.port_num = impl_->cfg.port;
  if (ibv_modify_qp(impl_->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                        IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return Error(errno, "put channel's QP to RTR");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  if (ibv_modify_qp(impl_->qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                        IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC))
    return Error(errno, "put channel's QP to RTS");
  impl_->target = target;
  impl_->connected = true;
  return ok();
}

// Device modes' wait: the SQ record (and the kick, by the lane or asked of
// the thread) if WQEs wait for it, then every outstanding CQE polled for
// the exact status word of a successful WRITE of its lap and cleared, so a
// later lap's same owner bit cannot be mistaken for it; the CQ record last.
void PutChannel::Impl::emit_wait_device(LaneProgram& lp,
                                        std::uint32_t* outstanding,
                                        bool* unkicked) {
  const std::uint64_t ring = base + kQpOff, cqes = base + kCqOff;
  if (*unkicked) {
    lp.store(ring + sq_rec_off, sq_pi);
    if (mode == PutMode::device)
      lp.write64(db.bus_addr + RHN_DB_SQ, qp->qp_num);
    else
      lp.store(word(kKickWord), ++kicks);
    *unkicked = false;
  }
  for (; *outstanding; --*outstanding, cq_ci++) {
    const std::uint32_t owner = ((cq_ci / cq_depth) & 1) ^ 1;
    const std::uint64_t flags = RHN_CQE_F_SQ | (owner ? RHN_CQE_F_OWNER : 0);
    const std::uint64_t at = cqes + (cq_ci % cq_depth) * RHN_CQE_SIZE + 24;
    lp.poll(at, RHN_CQE_OP_WRITE | (flags << 56), false, kPollRounds);
    lp.store(at, 0);
  }
  lp.store(cqes + cq_rec_off, cq_ci);
}

Result<LaneProgram> PutChannel::Impl::emit(const PutProgram& p) {
  LaneProgram lp;
  const std::uint64_t stage = ctrl(), req = ctrl() + kStageLen + kProgLen;
  std::uint32_t outstanding = 0, staged = 0;
  bool unkicked = false;
  std::vector<PutProgram::Op> ops = p.ops();
  ops.push_back({0, 0, 0});  // a run ends with nothing in flight
  std::uint64_t puts = 0;
  for (const PutProgram::Op& op : ops) {
    if (op.len && (op.len > kMaxPut || op.src + op.len > cfg.data_length ||
                   op.src + op.len < op.src))
      return Error(EINVAL,
                   "put " + std::to_string(puts) + " of " +
                       std::to_string(op.len) + " bytes at source offset " +
                       std::to_string(op.src) + " outside the channel's " +
                       std::to_string(cfg.data_length) + " bytes");
    puts += op.len != 0;
  }
  if (mode != PutMode::proxy && puts > kMaxStagedPuts)
    return Error(E2BIG, std::to_string(puts) +
                            " puts in one run, more than the " +
                            std::to_string(kMaxStagedPuts) +
                            " WQEs a run stages in the xpu's memory; split "
                            "the program into several runs");
  for (const PutProgram::Op& op : ops) {
    if (mode == PutMode::proxy) {
      if (!op.len) {
        lp.poll(word(kDoneWord), issued, true, kPollRounds);
        continue;
      }
      if (issued >= kReqSlots)
        lp.poll(word(kConsumedWord), issued - kReqSlots + 1, true, kPollRounds);
      const std::uint64_t slot = req + (issued % kReqSlots) * 32;
      lp.store(slot, op.src);
      lp.store(slot + 8, op.dst);
      lp.store(slot + 16, op.len);
      lp.store(slot + 24, ++issued);  // the sequence, written last
      continue;
    }
    if (!op.len || outstanding == kSqWrs) {
      emit_wait_device(lp, &outstanding, &unkicked);
      if (!op.len) continue;
    }
    alignas(8) std::uint8_t wqe[RHN_SQ_SLOT_SIZE * RHN_WQE_MAX_SLOTS] = {};
    rhn_send_wqe* w = rhn_wqe_start(wqe, RHN_OP_WRITE, RHN_WQE_F_SIGNALED,
                                    static_cast<std::uint16_t>(sq_pi));
    w->remote_key = target.rkey;
    w->remote_addr = target.addr + op.dst;
    rhn_wqe_put_sge(wqe, 0, kSrcIova + op.src, op.len, mr->lkey);
    rhn_wqe_finish(wqe, rhn_wqe_set_sges(wqe, 1), nullptr);
    std::memcpy(const_cast<std::uint8_t*>(cfg.device->mem()) + stage +
                    staged * RHN_SQ_SLOT_SIZE,
                wqe, RHN_SQ_SLOT_SIZE);
    lp.copy(base + kQpOff + (sq_pi % kSqWrs) * RHN_SQ_SLOT_SIZE,
            stage + staged * RHN_SQ_SLOT_SIZE, RHN_SQ_SLOT_SIZE);
    staged++;
    sq_pi++;
    outstanding++;
    unkicked = true;
  }
  lp.stop();
  if (lp.bytes() > kProgLen)
    return Error(E2BIG,
                 std::to_string(puts) + " puts and " +
                     std::to_string(ops.size() - puts - 1) + " quiets take " +
                     std::to_string(lp.commands()) +
                     " lane commands, more than the " +
                     std::to_string(kMaxLaneCommands) +
                     " of a run's straight-line program in the xpu's memory; "
                     "split the program into several runs");
  return lp;
}

// The library's CPU thread for a run: rings the doorbell the lane asks for
// (cpu_doorbell), or serves its request ring (proxy).
void PutChannel::Impl::cpu_thread(std::stop_token st, PutRunStats* stats,
                                  std::optional<Error>* failure) {
  std::uint64_t next = *cpu_word(kConsumedWord);
  volatile std::uint8_t* mem = cfg.device->mem();
  const std::uint64_t req = ctrl() + kStageLen + kProgLen;
  while (!st.stop_requested()) {
    bool busy = false;
    if (mode == PutMode::cpu_doorbell) {
      const std::uint64_t k = *cpu_word(kKickWord);
      if (k != kicks_rung) {
        stats->cpu_requests++;
        kicks_rung = k;
        if (int e = rhinetdv_ring_sq(qp)) {
          if (!*failure) *failure = Error(e, "rhinetdv_ring_sq");
        } else {
          stats->cpu_doorbells++;
        }
        busy = true;
      }
    } else {
      volatile std::uint64_t* slot = reinterpret_cast<volatile std::uint64_t*>(
          mem + req + (next % kReqSlots) * 32);
      if (slot[3] == next + 1) {
        std::atomic_thread_fence(std::memory_order_acquire);
        const std::uint64_t src = slot[0], dst = slot[1], len = slot[2];
        stats->cpu_requests++;
        *cpu_word(kConsumedWord) = next + 1;
        if (!len || len > kMaxPut || src + len > cfg.data_length ||
            src + len < src) {
          // A request the library did not emit: refused, never copied.
          if (!*failure)
            *failure = Error(EINVAL, "proxy request " + std::to_string(next) +
                                         " outside the source data");
          *cpu_word(kDoneWord) = ++next;
          continue;
        }
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(staging) + src,
                    static_cast<std::uint32_t>(len), mr->lkey};
        std::memcpy(
            staging + src,
            const_cast<const std::uint8_t*>(mem) + base + kDataOff + src, len);
        stats->staged_bytes += len;
        ibv_send_wr wr{};
        wr.wr_id = next;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = target.addr + dst;
        wr.wr.rdma.rkey = target.rkey;
        ibv_send_wr* bad = nullptr;
        ibv_wc wc{};
        int e = ibv_post_send(qp, &wr, &bad);
        if (!e) {
          int n = 0;
          while (!st.stop_requested() && (n = ibv_poll_cq(cq, 1, &wc)) == 0)
            std::this_thread::yield();
          if (n != 1) e = n < 0 ? EIO : ECANCELED;
        }
        if (e) {
          if (!*failure)
            *failure = Error(e, "proxy post of put " + std::to_string(next));
        } else if (wc.status != IBV_WC_SUCCESS) {
          if (!*failure)
            *failure = Error::completion(
                wc.status, ibv_wc_status_str(wc.status), wc.vendor_err,
                "proxy put " + std::to_string(next));
        } else {
          stats->puts++;
        }
        next++;
        *cpu_word(kDoneWord) = next;
        busy = true;
      }
    }
    if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Result<PutRunStats> PutChannel::run(const PutProgram& program,
                                    std::uint32_t timeout_ms) {
  Impl& im = *impl_;
  if (!im.connected) return Error(ENOTCONN, "put channel not connected");
  if (im.broken)
    return Error(EIO, "put channel stopped by an earlier failed run");
  const std::uint32_t cq0 = im.cq_ci, sq0 = im.sq_pi;
  const std::uint64_t kicks0 = im.kicks, issued0 = im.issued;
  auto lp = im.emit(program);
  const std::uint64_t prog = im.ctrl() + kStageLen;
  Result<void> loaded =
      lp ? lp->load(*im.cfg.device, prog, kProgLen) : std::move(lp).error();
  if (!loaded) {
    // Nothing ran: the counters are as before.
    im.cq_ci = cq0;
    im.sq_pi = sq0;
    im.kicks = kicks0;
    im.issued = issued0;
    return std::move(loaded).error();
  }
  PutRunStats stats;
  std::optional<Error> failure;
  Result<LaneOutcome> out = Error(EINVAL, "not run");
  {
    std::optional<std::jthread> helper;
    if (im.mode != PutMode::device)
      helper.emplace([&im, &stats, &failure](std::stop_token st) {
        im.cpu_thread(st, &stats, &failure);
      });
    out = im.cfg.device->run(im.cfg.lane, prog, timeout_ms);
  }  // the thread stopped and joined
  if (!out) return std::move(out).error();
  stats.lane_commands = out->executed;
  if (failure || !out->done()) im.broken = true;
  if (failure) return *failure;
  if (!out->done()) {
    std::string what = "lane " + std::to_string(im.cfg.lane) +
                       " stopped: status " + std::to_string(out->status) +
                       ", error " + std::to_string(out->error);
    if (im.mode != PutMode::proxy) {
      // The lane cleared the CQEs it took; the first one left that is not
      // a successful WRITE's says why the NIC failed.
      for (std::uint32_t i = cq0; i != im.cq_ci; i++) {
        const volatile std::uint8_t* c = im.cfg.device->mem() + im.base +
                                         kCqOff +
                                         (i % im.cq_depth) * RHN_CQE_SIZE;
        bool written = false;
        for (int b = 24; b < 32; b++) written |= c[b] != 0;
        if (written && c[25] != RHN_CQE_SUCCESS) {
          std::uint32_t syn;
          std::memcpy(&syn, const_cast<const std::uint8_t*>(c) + 20, 4);
          return Error::completion(
              c[25], "CQE status " + std::to_string(c[25]), syn,
              what + " at put " + std::to_string(i - cq0), EIO);
        }
      }
    }
    return Error(out->error == 4 ? ETIMEDOUT : EIO, what);
  }
  if (im.mode != PutMode::proxy) stats.puts = im.cq_ci - cq0;
  return stats;
}

}  // namespace rhinet::xpu
