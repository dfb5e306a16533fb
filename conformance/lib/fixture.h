// SPDX-License-Identifier: BSD-2-Clause
// Objects a case needs, made on first use: a PD and a registered buffer in
// the kernel context, user context 1 with its PD, an EQ, a CQ, QPs. A
// refused setup step is the case's first difference; later calls then
// return placeholders and the case stops at its next check.
#pragma once

#include <memory>
#include <string>

#include "case.h"
#include "lib/nic.h"

namespace rhinet::conform {

class Fx {
 public:
  Fx(Nic& n, Check& c) : n_(n), c_(c) {}
  Nic& nic() { return n_; }

  uint32_t pd() {
    if (!pd_) made(n_.create_pd(0, &pd_val_), "CREATE_PD", pd_);
    return pd_val_;
  }
  const Buf& buf() {
    if (!buf_) made(n_.make_buf(pd(), 4096, &buf_val_), "CREATE_MR", buf_);
    return buf_val_;
  }
  // User context 1 (account 1) and a PD in it.
  uint32_t user_pd() {
    if (!upd_)
      made(n_.create_context(1) && n_.create_pd(1, &upd_val_),
           "context 1 and its PD", upd_);
    return upd_val_;
  }
  const Buf& user_buf() {
    if (!ubuf_)
      made(
          n_.make_user_buf(1, user_pd(), 4096, 0x7000'0000'0000ull, &ubuf_val_),
          "CREATE_MR in context 1", ubuf_);
    return ubuf_val_;
  }
  Eq& eq() {
    if (!eq_) made(n_.create_eq(4, 1, &eq_val_), "CREATE_EQ", eq_);
    return eq_val_;
  }
  Cq& cq() {
    if (!cq_) made(n_.create_cq(0, 6, eq().eqn, &cq_val_), "CREATE_CQ", cq_);
    return cq_val_;
  }
  // A new QP of `type` in the kernel context, on cq().
  Qp qp(uint8_t type = RHN_QP_RC, uint32_t srqn = RHN_NO_SRQ) {
    QpSpec spec;
    spec.type = type;
    spec.srqn = srqn;
    Qp q;
    bool done = false;
    made(n_.create_qp(0, pd(), &cq(), &cq(), spec, &q), "CREATE_QP", done);
    return q;
  }
  // Runs a setup command that must succeed; its result.
  uint32_t must(const rhn_admin_cmd& cmd, const std::string& what) {
    uint32_t res = 0;
    bool done = false;
    made(n_.run(cmd, &res) == RHN_ADMIN_OK, what, done);
    return res;
  }

 private:
  void made(bool ok, const std::string& what, bool& flag) {
    flag = true;
    if (!ok) c_.fail("setup: " + what, n_.error());
  }

  Nic& n_;
  Check& c_;
  bool pd_ = false, buf_ = false, upd_ = false, ubuf_ = false, eq_ = false,
       cq_ = false;
  uint32_t pd_val_ = 0, upd_val_ = 0;
  Buf buf_val_, ubuf_val_;
  Eq eq_val_;
  Cq cq_val_;
};

}  // namespace rhinet::conform
