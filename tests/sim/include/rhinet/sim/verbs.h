// SPDX-License-Identifier: BSD-2-Clause
// A verbs-like user library (the "provider") over the simulated driver: a
// context = one process's doorbell page, its PD, CQs, SRQs and QPs, with all
// rings and doorbell records in the process's own registered memory.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rhinet/fw/engine.h"
#include "rhinet/hw.h"
#include "rhinet/sim/driver.h"
#include "rhinet/sim/host.h"

namespace rhinet::sim {

class SimQp;
class SimSrq;
class SimContext;

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct Completion {
  uint64_t wr_id = 0;
  uint32_t qpn = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;
  uint32_t src_qpn = 0;
  uint16_t src_node = 0;
  uint16_t wqe_index = 0;
  uint32_t vendor_err = 0;
  uint8_t opcode = 0;
  uint8_t status = 0;
  uint8_t flags = 0;
  uint8_t ext_flags = 0;
  uint16_t xrc_srqn = 0;  // RHN_CQE_X_XRC: the XRC SRQ's index
  // The completions the entry this one came from stands for: 1, or a
  // run's (RHN_CQE_X_RUN) run_extra + 1, which SimCq hands out one by one.
  uint32_t run_count = 1;
  bool ok() const { return status == RHN_CQE_SUCCESS; }
  // TAG_RECV and a probe that found something: the 64-bit tag.
  uint64_t tag() const { return uint64_t{vendor_err} << 32 | imm_data; }
  bool is_send() const { return (flags & RHN_CQE_F_SQ) != 0; }
};

// A send work request as the application states it.
struct SendWr {
  uint64_t wr_id = 0;
  uint8_t opcode = RHN_OP_SEND;
  uint8_t flags = RHN_WQE_F_SIGNALED;
  std::vector<Sge> sges;
  std::vector<uint8_t> inline_data;  // with RHN_WQE_F_INLINE
  uint64_t remote_addr = 0;          // VA, or offset with RHN_WQE_F_AREA
  uint32_t remote_key = 0;           // rkey, or area ID
  uint32_t imm_data = 0;
  uint16_t dst_node = 0;  // UD / endpoint
  uint32_t dst_qpn = 0;   // UD / endpoint
  uint32_t qkey = 0;      // UD
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // BIND_MW: the window's current key, the region, the length (remote_key:
  // the window's key once bound; remote_addr: start; imm_data: rights).
  uint32_t bind_mw_key = 0;
  uint32_t bind_mr_lkey = 0;
  uint64_t bind_length = 0;
  // REG_MR: remote_key the MR's new key, remote_addr its iova, imm_data
  // its rights, and these.
  uint64_t reg_length = 0;
  uint32_t reg_pages = 0;
  uint8_t reg_page_shift = 12;
  uint64_t status_addr = 0;  // with RHN_WQE_F_STATUS_WORD
  uint32_t status_lkey = 0;
  bool inline_doorbell = false;  // write the WQE into the doorbell page too
  // With RHN_WQE_F_GRH in flags: the global route, as the WQE's last slot.
  rhn_wqe_grh grh{};
  // A partial transfer: the mode, and its descriptor as the last slot.
  uint8_t xfer_mode = RHN_XFER_BASIC;
  rhn_wqe_xfer xfer{};
  // MCAST_LIST: the destination list's descriptor, its last slot.
  rhn_wqe_mcast mcast{};
  // COLLECTIVE: its description, the last slot (remote_key: the
  // communicator).
  rhn_wqe_coll coll{};
  // IPROBE: mask and RHN_TAG_F_* flags (the tag is remote_addr, the
  // source dst_node/dst_qpn).
  uint64_t tag_mask = ~uint64_t{0};
  uint32_t tag_flags = 0;
  // Triggered and chained WQEs: RHN_WQE_X_* and the trigger slot, which
  // goes last.
  uint16_t xflags = 0;
  rhn_wqe_trigger trigger{};
};

// A tag-matched receive (irecv) as an RQ WQE.
struct TagRecv {
  uint64_t tag = 0;
  uint64_t mask = ~uint64_t{0};
  bool any_src = false;
  uint16_t src_node = 0;
  uint32_t src_qpn = 0;
  std::optional<Sge> sge;
  uint32_t extra_flags = 0;  // malformed-WQE tests
  // A partial mode (TWIN, BITMAP, STRIDE) and its parameters.
  uint8_t xfer_mode = RHN_XFER_BASIC;
  decltype(rhn_tag_recv_wqe::xfer) xfer{};
};

// A tag-list operation of a TM SRQ (what ibv_post_srq_ops posts).
struct TmOp {
  uint64_t wr_id = 0;  // its own CQE's
  uint8_t opcode = RHN_TM_OP_ADD;
  uint8_t flags = RHN_TM_OP_F_SIGNALED;
  uint16_t handle = 0;
  uint32_t unexpected_cnt = 0;  // with RHN_TM_OP_F_SYNC
  uint64_t tag = 0;
  uint64_t mask = ~uint64_t{0};
  std::optional<Sge> sge;
  uint64_t recv_wr_id = 0;  // ADD: the wr_id of the entry's TM_RECV CQEs
};

// Ring memory plus its doorbell record, in one buffer of the owning context:
// registered (lkey + VA) for user contexts, physical for context 0.
struct QueueMemory {
  SimBuffer buf;
  SimMr mr;
  uint32_t lkey = RHN_LKEY_PHYSICAL;
  size_t record_offset = 0;
  rhn_host_ref ref(size_t offset) const;
  rhn_host_ref record_ref() const { return ref(record_offset); }
  void set_record(uint32_t index);  // producer or consumer index
  uint32_t nic_consumer() const;    // written by the NIC (tag RQs)
};

class SimCq {
 public:
  SimCq() = default;
  ~SimCq();  // detaches its QPs, so destruction order does not matter
  SimCq(const SimCq&) = delete;
  SimCq& operator=(const SimCq&) = delete;
  uint32_t cqn() const { return cqn_; }
  uint32_t depth() const { return depth_; }
  // Takes up to `max` completions off the ring (owner-bit rule) and writes
  // the new consumer index into the CQ record. A run (RHN_CQE_X_RUN) is
  // handed out as the completions it stands for, as a provider does: the
  // send side's signalled WQEs up to its wqe_index, the receive side's
  // RQ WQEs up to it; the entry is consumed with its last one.
  std::vector<Completion> poll(size_t max = 64);
  bool poll_one(Completion* out);
  // The entry at the consumer index as the NIC wrote it, without taking
  // anything (false: none new).
  bool peek_entry(rhn_cqe* out) const;
  // Arms the CQ so the next completion raises an event.
  void arm(bool solicited_only = false);
  uint32_t consumer_index() const { return ci_; }
  const QueueMemory& memory() const { return mem_; }

 private:
  friend class SimContext;
  friend class SimQp;
  friend class SimSrq;
  SimContext* ctx_ = nullptr;
  uint32_t cqn_ = 0;
  uint32_t depth_ = 0;
  uint32_t ci_ = 0;
  uint32_t run_given_ = 0;  // of the run at ci_, completions handed out
  QueueMemory mem_;
  std::unordered_map<uint32_t, SimQp*> qps_;
  std::unordered_map<uint32_t, SimSrq*> tm_srqs_;   // list ops complete here
  std::unordered_map<uint32_t, SimSrq*> xrc_srqs_;  // their receives do
};

class SimSrq {
 public:
  ~SimSrq();
  uint32_t srqn() const { return srqn_; }
  // An XRC SRQ: the number peers name it by (index and incarnation).
  uint32_t xrc_number() const { return xrc_number_; }
  bool post_recv(uint64_t wr_id, const std::vector<Sge>& sges);
  uint32_t posted() const { return pi_; }
  // A TM SRQ: one tag-list operation into its operation ring, then the
  // kick (false: the ring has no room, the NIC has not executed enough).
  bool post_tm_op(const TmOp& op);
  // Writes the operation without kicking (several, then kick_tm_ops).
  bool write_tm_op(const TmOp& op);
  void kick_tm_ops();
  uint32_t tm_ops_posted() const { return ops_pi_; }
  uint32_t tm_ops_executed() const { return ops_mem_.nic_consumer(); }

 private:
  friend class SimContext;
  friend class SimQp;
  friend class SimCq;
  SimContext* ctx_ = nullptr;
  uint32_t srqn_ = 0;
  uint32_t depth_ = 0;
  uint32_t pi_ = 0;
  uint32_t ci_ = 0;  // receives completed
  QueueMemory mem_;
  std::vector<uint64_t> shadow_;
  // TM
  SimCq* tm_cq_ = nullptr;
  uint32_t ops_depth_ = 0;
  uint32_t ops_pi_ = 0;
  QueueMemory ops_mem_;
  std::vector<uint64_t> ops_shadow_;
  std::unordered_map<uint16_t, uint64_t> tag_wr_ids_;
  // XRC
  SimCq* xrc_cq_ = nullptr;
  uint32_t xrc_number_ = 0;
};

struct QpInit {
  uint8_t type = RHN_QP_RC;
  SimCq* send_cq = nullptr;
  SimCq* recv_cq = nullptr;  // defaults to send_cq
  SimSrq* srq = nullptr;
  uint8_t sq_log_depth = 8;     // slots
  uint8_t rq_log_depth = 7;     // WQEs
  std::optional<uint32_t> pdn;  // default: the context's PD
  uint8_t flags = 0;            // enum rhn_create_qp_flags
  uint32_t xrcd = 0;            // RHN_QP_XRC_RECV: its XRC domain
};

class SimQp {
 public:
  ~SimQp();
  uint32_t qpn() const { return qpn_; }
  uint8_t type() const { return type_; }
  SimContext& context() { return *ctx_; }

  // Builds the WQE (base slot + extension slots) and posts it. False if the
  // SQ has no room or the request cannot be encoded.
  bool post_send(const SendWr& wr);
  // Posts pre-built slots verbatim (malformed-WQE tests); only wqe_index is
  // filled in. `slots` holds whole 64-byte slots.
  bool post_send_raw(std::vector<uint8_t> slots, uint64_t wr_id,
                     bool inline_doorbell = false);
  bool post_recv(uint64_t wr_id, const std::vector<Sge>& sges);
  // An irecv (endpoints): completes out of order, by its own index.
  bool post_tag_recv(uint64_t wr_id, const TagRecv& t);
  // Kicks without posting anything (re-kick, or a kick from a foreign page).
  void kick_sq();
  void kick_rq();

  AdminResult modify(const rhn_admin_modify_qp& m);
  AdminResult to_init(uint8_t access = RHN_ACCESS_REMOTE_WRITE |
                                       RHN_ACCESS_REMOTE_READ |
                                       RHN_ACCESS_REMOTE_ATOMIC,
                      uint32_t qkey = 0);
  AdminResult to_rtr(uint16_t dest_node = 0, uint32_t dest_qpn = 0,
                     uint8_t max_rd_atomic = 16);
  AdminResult to_rts(uint8_t rnr_retry = 7, uint8_t min_rnr_timer = 1);
  AdminResult to_err();
  // Back to RESET: the NIC forgets the queues' indices, and so does this
  // side (rings start again at slot 0, like a provider's reset).
  AdminResult to_reset();
  AdminResult query(rhn_qp_attr* out);

  // When false, post_* update ring and record but do not kick (tests kick
  // by hand, e.g. from a foreign doorbell page).
  bool auto_kick = true;
  // The RQ record's nic_consumer word: on a plain RQ the NIC sets
  // RHN_RQ_RECORD_DOORBELL_WANTED there when posts need an RQ kick.
  uint32_t rq_nic_word() const { return rq_.nic_consumer(); }
  // The SQ record's: RHN_SQ_RECORD_DOORBELL_WANTED while a plain SQ's
  // posts need a kick, or (RHN_CREATE_QP_F_SQ_EVENT_INDEX) the event index.
  uint32_t sq_nic_word() const { return sq_.nic_consumer(); }
  // post_send kicks (with auto_kick) only when the record asks, as a
  // provider on a NIC with RHN_CAP_SQ_DOORBELL_ON_REQUEST does.
  bool sq_kick_on_request = false;

  uint32_t sq_posted_slots() const { return sq_pi_; }
  uint32_t sq_outstanding() const { return uint32_t(pending_.size()); }
  uint32_t sq_depth() const { return sq_depth_; }
  // The SQ's ring and record, for tests that play the producers
  // themselves (many producers on one queue).
  QueueMemory& sq_memory() { return sq_; }

  // Builds a send WQE into 64-byte slots with the contract's builders
  // (hw_wqe.h). False if it does not fit in a WQE.
  static bool encode(const SendWr& wr, uint16_t wqe_index,
                     std::vector<uint8_t>* slots);

 private:
  friend class SimContext;
  friend class SimCq;
  struct PendingSend {
    uint32_t first_slot;
    uint32_t slots;
    uint64_t wr_id;
    bool signaled;
  };
  bool write_and_kick(std::vector<uint8_t>& slots, uint64_t wr_id,
                      bool inline_doorbell);
  uint64_t complete_send(uint16_t wqe_index);
  // A run's completion before its last: the oldest signalled WQE
  // (wqe_index: its first slot's).
  uint64_t complete_next_signaled(uint16_t* wqe_index);
  uint64_t complete_recv(uint16_t wqe_index);
  uint64_t complete_tag_recv(uint16_t wqe_index);

  SimContext* ctx_ = nullptr;
  uint32_t qpn_ = 0;
  uint8_t type_ = 0;
  SimCq* send_cq_ = nullptr;
  SimCq* recv_cq_ = nullptr;
  SimSrq* srq_ = nullptr;
  uint32_t sq_depth_ = 0, rq_depth_ = 0;
  uint32_t sq_pi_ = 0, sq_ci_ = 0;
  uint32_t rq_pi_ = 0, rq_ci_ = 0;
  QueueMemory sq_, rq_;
  std::vector<PendingSend> pending_;  // oldest first
  std::vector<uint64_t> rq_shadow_;
  std::unordered_map<uint16_t, uint64_t> tag_shadow_;
};

class SimContext {
 public:
  // Opens context `index` (CREATE_CONTEXT unless 0) and allocates its PD.
  // Check ok() afterwards.
  // `account`: SimDriver::create_context's (default: its own).
  SimContext(SimDriver& driver, SimAddressSpace& as, uint32_t index,
             uint16_t node_id, uint32_t account = SimDriver::kDefaultAccount);
  bool ok() const { return ok_; }
  uint32_t index() const { return index_; }
  uint32_t pdn() const { return pdn_; }
  uint16_t node_id() const { return node_id_; }
  SimDriver& driver() { return driver_; }
  fw::Engine& engine() { return driver_.engine(); }
  SimAddressSpace& address_space() { return as_; }

  SimBuffer alloc(size_t length, size_t page_offset = 0) {
    return as_.alloc(length, page_offset);
  }
  SimMr reg_mr(const SimBuffer& buf, uint32_t access,
               std::optional<uint32_t> pdn = {}, const MrOptions& opt = {});
  // Registers only [offset, offset + length) of buf.
  SimMr reg_mr_range(const SimBuffer& buf, size_t offset, size_t length,
                     uint32_t access, std::optional<uint32_t> pdn = {});
  AdminResult dereg_mr(SimMr& mr) { return driver_.destroy_mr(mr); }
  AdminResult alloc_pd(uint32_t* pdn);
  AdminResult register_area(uint32_t area_id, const SimMr& mr, uint64_t iova,
                            uint64_t length) {
    return driver_.register_area(index_, area_id, mr.key, iova, length);
  }

  // flags: enum rhn_create_cq_flags (RHN_CREATE_CQ_F_RUNS).
  std::unique_ptr<SimCq> create_cq(uint8_t log_depth = 8, uint8_t flags = 0);
  std::unique_ptr<SimSrq> create_srq(uint8_t log_depth = 7, uint32_t limit = 0);
  // A TM SRQ whose list operations complete on `cq`.
  std::unique_ptr<SimSrq> create_tm_srq(SimCq& cq, uint32_t max_tags,
                                        uint8_t log_depth = 7,
                                        uint8_t ops_log_depth = 6);
  // An XRC SRQ of domain `xrcd` whose receives complete on `cq`.
  std::unique_ptr<SimSrq> create_xrc_srq(SimCq& cq, uint32_t xrcd,
                                         uint8_t log_depth = 7);
  AdminResult destroy_srq(SimSrq& srq);
  std::unique_ptr<SimQp> create_qp(const QpInit& init);
  // Result of the last create_* call (for tests of refused commands).
  AdminResult last;

  // A write to this context's doorbell page; `requester` is the writer's
  // PCIe requester ID (0: the host CPU, else a device posting by itself).
  void doorbell(uint32_t offset, uint64_t value, unsigned size = 4,
                uint16_t requester = 0) {
    engine().doorbell_write(index_, offset, value, size, requester);
  }

 private:
  bool make_queue_memory(size_t ring_bytes, QueueMemory* out);
  std::unique_ptr<SimSrq> make_srq(uint8_t log_depth, uint32_t limit,
                                   SimCq* tm_cq, uint32_t max_tags,
                                   uint8_t ops_log_depth,
                                   SimCq* xrc_cq = nullptr, uint32_t xrcd = 0);

  SimDriver& driver_;
  SimAddressSpace& as_;
  uint32_t index_;
  uint16_t node_id_;
  uint32_t pdn_ = 0;
  bool ok_ = false;
};

// Status word helpers (Documentation/hardware/queues.md, "Status words").
inline bool status_word_done(uint64_t w) {
  return (w & RHN_STATUS_WORD_DONE) != 0;
}
inline uint8_t status_word_status(uint64_t w) {
  return uint8_t(w >> RHN_STATUS_WORD_STATUS_SHIFT);
}
inline uint8_t status_word_syndrome(uint64_t w) {
  return uint8_t(w >> RHN_STATUS_WORD_SYNDROME_SHIFT);
}
inline uint32_t status_word_length(uint64_t w) {
  return uint32_t(w & RHN_STATUS_WORD_LEN_MASK);
}

}  // namespace rhinet::sim
