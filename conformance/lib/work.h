// SPDX-License-Identifier: BSD-2-Clause
// What data-path cases share: a send WQE built with the contract's
// builders (hw_wqe.h), checking the next CQE, comparing host bytes, and
// LOOP, which makes a loopback pair (lib/loop.h) or stops the case.
#pragma once

#include <cstring>
#include <string>

#include "case.h"
#include "lib/loop.h"
#include "rhinet/hw_wqe.h"

namespace rhinet::conform {

#define LOOP(n, l, type)                      \
  Nic n(t);                                   \
  Loop l;                                     \
  do {                                        \
    const std::string e_ = l.make(n, type);   \
    CONFORM_THAT(c, e_.empty(), "setup", e_); \
  } while (0)

// A send WQE of up to RHN_WQE_MAX_SLOTS slots at the QP's next index.
struct Wqe {
  uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
  uint32_t data = 0;
  rhn_send_wqe* w;
  Wqe(const Qp& qp, uint8_t opcode, uint8_t flags = RHN_WQE_F_SIGNALED) {
    std::memset(buf, 0, sizeof(buf));
    w = rhn_wqe_start(buf, opcode, flags, static_cast<__u16>(qp.sq_pi));
  }
  Wqe& sge(uint32_t i, uint64_t addr, uint32_t len, uint32_t key) {
    rhn_wqe_put_sge(buf, i, addr, len, key);
    data = rhn_wqe_set_sges(buf, i + 1);
    return *this;
  }
  Wqe& remote(uint64_t addr, uint32_t key) {
    w->remote_addr = addr;
    w->remote_key = key;
    return *this;
  }
  Wqe& to(const Loop& l, const Qp& dst) {
    w->dst_node = l.node;
    w->dst_qpn = dst.qpn;
    // The Q_Key's bytes are other opcodes' operands: UD only.
    if (dst.type == RHN_QP_UD) w->u.status.qkey = 0x1111;
    return *this;
  }
  // The slots after the data (partial-mode descriptor, multicast list,
  // route), if any.
  const rhn_wqe_tail* tail = nullptr;
  uint32_t post(Nic& n, Qp& qp) {
    const uint32_t slots = rhn_wqe_finish(buf, data, tail);
    n.post_send(qp, buf, slots);
    return slots;
  }
};

// Waits for the next CQE and checks the fields every CQE case shares.
inline bool cqe_is(Check& c, Nic& n, Cq& cq, const std::string& what,
                   uint8_t opcode, uint8_t status, rhn_cqe* out) {
  if (!c.that(n.wait_cqe(cq, out), what, "no CQE")) return false;
  if (!c.eq(what + " status", status, out->status)) return false;
  return c.eq(what + " opcode", opcode, out->opcode);
}

inline bool same_bytes(Check& c, Nic& n, uint64_t a, uint64_t b, size_t len,
                       const std::string& what) {
  const auto x = n.bytes(a, len), y = n.bytes(b, len);
  for (size_t i = 0; i < len; i++)
    if (x[i] != y[i])
      return c.fail(what + " byte " + std::to_string(i),
                    "expected " + hex(x[i]) + ", got " + hex(y[i]));
  return true;
}

}  // namespace rhinet::conform
