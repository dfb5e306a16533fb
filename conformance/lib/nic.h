// SPDX-License-Identifier: BSD-2-Clause
// The host side the cases share: a minimal driver written from the
// contract alone (registers.md, admin.md, queues.md). It brings the NIC up,
// runs admin commands, makes objects in host memory and posts and polls
// work through a Target, so a case states only what it checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rhinet/hw.h"
#include "target.h"

namespace rhinet::conform {

// NIC time a case waits for one visible result before it calls it lost.
inline constexpr uint64_t kWaitNs = 50'000'000;
inline constexpr uint32_t kAllAccess =
    RHN_ACCESS_LOCAL_WRITE | RHN_ACCESS_REMOTE_WRITE | RHN_ACCESS_REMOTE_READ |
    RHN_ACCESS_REMOTE_ATOMIC;

// A ring of fixed-size entries the NIC writes with an owner (phase) bit,
// consumed by software (CQ, EQ).
struct OwnedRing {
  uint64_t ring = 0;
  uint32_t log_depth = 0;
  uint32_t entry_size = 0;
  uint32_t ci = 0;  // software's free-running consumer index
  uint32_t depth() const { return 1u << log_depth; }
  uint64_t slot_addr(uint32_t index) const {
    return ring + uint64_t(index & (depth() - 1)) * entry_size;
  }
  // The owner bit a new entry at `index` carries: (lap & 1) ^ 1.
  uint8_t phase(uint32_t index) const {
    return static_cast<uint8_t>(((index >> log_depth) & 1) ^ 1);
  }
};

struct Cq : OwnedRing {
  uint32_t cqn = 0;
  uint32_t context = 0;
  uint64_t record = 0;  // struct rhn_cq_record (bus address)
};

struct Eq : OwnedRing {
  uint32_t eqn = 0;
  uint16_t vector = 0;
};

struct Qp {
  uint32_t qpn = 0;
  uint32_t context = 0;
  uint8_t type = 0;
  uint64_t sq = 0, rq = 0;                // rings
  uint64_t sq_record = 0, rq_record = 0;  // struct rhn_queue_record
  uint32_t sq_log = 0, rq_log = 0;
  uint32_t sq_pi = 0;  // slots
  uint32_t rq_pi = 0;  // WQEs
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
};

// A buffer in host memory with a memory region over it (kernel context,
// bus-address MR: iova == bus address).
struct Buf {
  uint64_t addr = 0;
  uint32_t len = 0;
  uint32_t key = 0;
};

struct QpSpec {
  uint8_t type = RHN_QP_RC;
  uint32_t sq_log = 6;
  uint32_t rq_log = 6;
  uint32_t srqn = RHN_NO_SRQ;
  uint8_t flags = 0;
  // The SQ ring and record inside a translated MR (make_mapped_buf), as a
  // user QP's are, instead of at bus addresses.
  bool rings_in_mr = false;
};

class Nic {
 public:
  explicit Nic(Target& t) : t_(t) {}
  Target& target() { return t_; }

  // ---- registers ----
  uint32_t r32(uint32_t off) { return uint32_t(t_.reg_read(off, 4)); }
  uint64_t r64(uint32_t off) { return t_.reg_read(off, 8); }
  void w32(uint32_t off, uint32_t v) { t_.reg_write(off, v, 4); }
  void w64(uint32_t off, uint64_t v) { t_.reg_write(off, v, 8); }
  uint64_t counter(unsigned idx) { return r64(RHN_REG_COUNTERS + 8 * idx); }

  // ---- bring-up (registers.md, "Bring-up order") ----
  // Reset, admin rings of 2^log_depth entries, enable. Empty on success,
  // else what went wrong.
  std::string bring_up(uint32_t log_depth = 5, bool intr = true);
  // bring_up, then an EQ of 2^log_depth entries on `vector`.
  std::string bring_up_eq(Eq* eq, uint32_t log_depth, uint16_t vector,
                          bool intr = true);
  // Only the reset step: CONTROL.RESET then wait for it to clear and READY.
  std::string reset();

  // ---- admin queue (admin.md, "Protocol") ----
  // Posts one command (cmd_id filled in), kicks, waits for its completion.
  // Empty when no completion came.
  std::optional<rhn_admin_cpl> admin(rhn_admin_cmd cmd);
  // Posts without kicking; kick_admin() then makes them run.
  void admin_post(rhn_admin_cmd cmd);
  void kick_admin();
  // The next completion, waited for; empty when none came.
  std::optional<rhn_admin_cpl> admin_reap();
  uint16_t last_cmd_id() const { return uint16_t(cmd_id_ - 1); }
  uint32_t admin_log_depth() const { return admin_log_; }
  uint64_t admin_sq() const { return admin_sq_; }
  uint64_t admin_cq() const { return admin_cq_; }
  uint32_t admin_tail() const { return admin_tail_; }

  static rhn_admin_cmd cmd(uint8_t opcode, uint32_t context = 0);
  // Runs `cmd` and returns its status (0xff: no completion); result in *res.
  uint8_t run(const rhn_admin_cmd& cmd, uint32_t* res = nullptr,
              uint32_t* detail = nullptr);

  // A CREATE_MR command over [iova, iova + len): levels 0 (iova is the
  // bus address) or a table at `table` with `levels` levels.
  static rhn_admin_cmd mr_cmd(uint32_t ctx, uint32_t pdn, uint64_t iova,
                              uint64_t len, uint32_t access, uint8_t levels = 0,
                              uint64_t table = 0);
  // QUERY_DEVICE into *attr; the command's status.
  uint8_t query_device(rhn_device_attr* attr);
  // SET_LINK `up`, then waits for the PORT_CHANGE event on `eq`; false
  // (reason in error()) when either did not happen.
  bool link_event(Eq& eq, bool up, rhn_eqe* ev);

  // ---- objects; each returns false (and leaves the reason in error())
  // when the NIC refused ----
  bool create_context(uint32_t ctx, uint32_t account = 1);
  bool create_pd(uint32_t ctx, uint32_t* pdn);
  // A bus-address MR (levels 0) of the kernel context over `len` bytes.
  bool make_buf(uint32_t pdn, uint32_t len, Buf* b,
                uint32_t access = kAllAccess);
  // A one-level translated MR of the kernel context whose iova is the
  // bus address of its (contiguous) memory: host bytes read and written
  // at b->addr are the MR's.
  bool make_mapped_buf(uint32_t pdn, uint32_t len, Buf* b,
                       uint32_t access = kAllAccess);
  // A one-level translated MR of context `ctx` over a contiguous buffer;
  // its iova is `iova`.
  bool make_user_buf(uint32_t ctx, uint32_t pdn, uint32_t len, uint64_t iova,
                     Buf* b, uint32_t access = kAllAccess);
  bool create_eq(uint32_t log_depth, uint16_t vector, Eq* eq);
  // flags: enum rhn_create_cq_flags.
  bool create_cq(uint32_t ctx, uint32_t log_depth, uint32_t eqn, Cq* cq,
                 uint8_t flags = 0);
  bool create_qp(uint32_t ctx, uint32_t pdn, Cq* scq, Cq* rcq,
                 const QpSpec& spec, Qp* qp);
  uint8_t modify_qp(const Qp& qp, uint32_t mask, uint8_t state,
                    const rhn_admin_modify_qp& extra = {});
  // RESET -> INIT -> RTR -> RTS; RC/UC connect to (node, qpn).
  bool activate(const Qp& qp, uint16_t dest_node = 0, uint32_t dest_qpn = 0,
                uint32_t qkey = 0, uint8_t rnr_retry = 7);
  const std::string& error() const { return error_; }

  // ---- work ----
  // Copies `slots` 64-byte slots of `wqe` into the SQ at the producer
  // index (wrapping), advances the record and kicks the QP's page.
  void post_send(Qp& qp, const void* wqe, uint32_t slots, bool kick = true);
  void kick_sq(const Qp& qp);
  // A basic one-SGE send WQE at the QP's next index.
  void post_one(Qp& qp, uint8_t opcode, uint8_t flags, uint64_t laddr,
                uint32_t len, uint32_t lkey, uint64_t raddr = 0,
                uint32_t rkey = 0);
  void post_recv(Qp& qp, uint64_t addr, uint32_t len, uint32_t lkey,
                 bool kick = true);

  // Takes the next CQE if the NIC wrote one (owner rule); advances ci and
  // the CQ record.
  bool poll_cq(Cq& cq, rhn_cqe* out);
  // Waits for the next CQE; false if none came within `budget`.
  bool wait_cqe(Cq& cq, rhn_cqe* out, uint64_t budget = kWaitNs);
  bool poll_eq(Eq& eq, rhn_eqe* out);
  bool wait_eqe(Eq& eq, rhn_eqe* out, uint64_t budget = kWaitNs);
  void eq_doorbell(const Eq& eq, bool arm);

  // ---- host memory ----
  uint64_t alloc(size_t len, size_t align = 4096);
  uint32_t rd32(uint64_t bus);
  uint64_t rd64(uint64_t bus);
  void wr32(uint64_t bus, uint32_t v);
  void wr64(uint64_t bus, uint64_t v);
  void fill(uint64_t bus, size_t len, uint8_t seed);
  std::vector<uint8_t> bytes(uint64_t bus, size_t len);

 private:
  // make_user_buf at *iova, or make_mapped_buf (iova null).
  bool make_translated(uint32_t ctx, uint32_t pdn, uint32_t len,
                       const uint64_t* iova, Buf* b, uint32_t access);
  Target& t_;
  uint64_t admin_sq_ = 0, admin_cq_ = 0;
  uint32_t admin_log_ = 0;
  uint32_t admin_tail_ = 0;
  uint32_t admin_ci_ = 0;
  uint16_t cmd_id_ = 1;
  std::string error_;
};

// Little helpers for the cases' messages.
std::string hex(uint64_t v);
// "RHN_CNT_<ID>" of counter `idx`, for messages.
std::string counter_name(unsigned idx);
// A pattern byte stream for payloads.
uint8_t pattern_byte(uint8_t seed, size_t i);

}  // namespace rhinet::conform
