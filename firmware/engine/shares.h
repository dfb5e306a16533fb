// SPDX-License-Identifier: BSD-2-Clause
// Share accounting: the one place that decides whether a context may take
// one more entry of a NIC table that users fill with values of their
// choosing (lock and barrier IDs, tags, communicators, areas, ...).
//
// Every context belongs to an account (RHN_ADMIN_CREATE_CONTEXT names it;
// the driver gives one account to all processes of one user, account 0 is
// the kernel's). An entry is charged to its context and to the context's
// account; take() refuses when either holds its limit: a process cannot
// take more than its context share of a table, and a user's processes
// together not more than the account share, so another user always finds
// room. Limits are set by each family at reset (set_limit); counts live in
// fixed tables sized at construction.
#pragma once

#include "core/card_memory.h"
#include "ops/module_ids.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// The tables accounted here (one counter per context and per account
// each): the stages' own, then kKindsPerFamily for each family module,
// which names its own with family_res (in its *_state.h).
enum class Res : uint8_t {
  kTxSlots,     // send-packet memory held by a context's requests
  kRxContexts,  // multi-packet receives in progress
  kFwMessages,  // firmware-originated messages sent on its behalf
  kAreas,       // communication areas it registered
  kStageKinds,
};
constexpr uint32_t kKindsPerFamily = 4;

// The i-th table family F accounts here.
template <FwOwner F, uint32_t I>
constexpr Res family_res() {
  static_assert(I < kKindsPerFamily, "a family accounts at most 4 tables");
  static_assert(static_cast<uint32_t>(F) < kFamilyModules, "not a family");
  return static_cast<Res>(static_cast<uint32_t>(Res::kStageKinds) +
                          static_cast<uint32_t>(F) * kKindsPerFamily + I);
}

class Shares {
 public:
  static constexpr uint32_t kKinds = static_cast<uint32_t>(Res::kStageKinds) +
                                     kFamilyModules * kKindsPerFamily;
  using Counts = Array<uint32_t, kKinds>;

  // Power-on: the counters are placed in on-card memory.
  void place(uint32_t contexts, CardMemory& mem) {
    ctx_used_ = mem.table<Counts>(contexts);
    account_of_ = mem.table<uint16_t>(contexts);
    acct_used_ = mem.table<Counts>(RHN_MAX_ACCOUNTS);
  }
  // Power-on: nothing charged, every context in account 0.
  void reset() {
    fill(ctx_used_.begin(), ctx_used_.end(), Counts{});
    fill(account_of_.begin(), account_of_.end(), 0);
    fill(acct_used_.begin(), acct_used_.end(), Counts{});
  }
  // A table of `table` entries: one context may hold `context_limit` of
  // them, one account `account_share`/256 of the table, but never less
  // than one context (a user's single process keeps its whole share).
  void set_limit(Res r, uint32_t table, uint32_t context_limit,
                 uint32_t account_share) {
    const uint32_t k = idx(r);
    ctx_limit_[k] = max<uint32_t>(1, context_limit);
    acct_limit_[k] =
        max(ctx_limit_[k], uint32_t(uint64_t{table} * account_share / 256));
  }
  // CREATE_CONTEXT: the context's account. Entries it still holds (a
  // destroyed context's packets not yet acknowledged) move along.
  void bind(uint32_t context, uint32_t account) {
    if (context >= ctx_used_.size() || account >= acct_used_.size()) return;
    Counts& from = acct_used_[account_of_[context]];
    Counts& to = acct_used_[account];
    for (uint32_t k = 0; k < kKinds; k++) {
      from[k] -= min(from[k], ctx_used_[context][k]);
      to[k] += ctx_used_[context][k];
    }
    account_of_[context] = static_cast<uint16_t>(account);
  }
  uint32_t account_of(uint32_t context) const {
    return context < account_of_.size() ? account_of_[context] : 0;
  }
  // May `context` take one more? A context outside the table (kNone:
  // the NIC's own) is not charged.
  bool room(uint32_t context, Res r) const {
    if (context >= ctx_used_.size()) return true;
    const uint32_t k = idx(r);
    return ctx_used_[context][k] < ctx_limit_[k] &&
           acct_used_[account_of_[context]][k] < acct_limit_[k];
  }
  // How many entries room() would allow one after another.
  uint32_t room_n(uint32_t context, Res r) const {
    if (context >= ctx_used_.size()) return ~0u;
    const uint32_t k = idx(r);
    const uint32_t c = ctx_used_[context][k],
                   a = acct_used_[account_of_[context]][k];
    const uint32_t cr = c < ctx_limit_[k] ? ctx_limit_[k] - c : 0;
    const uint32_t ar = a < acct_limit_[k] ? acct_limit_[k] - a : 0;
    return cr < ar ? cr : ar;
  }
  // Charges one entry; false (nothing charged) when a share is full.
  bool take(uint32_t context, Res r) {
    if (!room(context, r)) return false;
    charge(context, r);
    return true;
  }
  // Charges one entry whatever the shares say (an entry the NIC must keep).
  void charge(uint32_t context, Res r, uint32_t n = 1) {
    if (context >= ctx_used_.size()) return;
    const uint32_t k = idx(r);
    ctx_used_[context][k] += n;
    acct_used_[account_of_[context]][k] += n;
  }
  // Gives back n entries (as n single gives: never below 0).
  void give(uint32_t context, Res r, uint32_t n = 1) {
    if (context >= ctx_used_.size()) return;
    const uint32_t k = idx(r);
    uint32_t& c = ctx_used_[context][k];
    uint32_t& a = acct_used_[account_of_[context]][k];
    c = c > n ? c - n : 0;
    a = a > n ? a - n : 0;
  }
  uint32_t held(uint32_t context, Res r) const {
    return context < ctx_used_.size() ? ctx_used_[context][idx(r)] : 0;
  }
  uint32_t account_held(uint32_t account, Res r) const {
    return account < acct_used_.size() ? acct_used_[account][idx(r)] : 0;
  }
  uint32_t context_limit(Res r) const { return ctx_limit_[idx(r)]; }
  uint32_t account_limit(Res r) const { return acct_limit_[idx(r)]; }

 private:
  static uint32_t idx(Res r) { return static_cast<uint32_t>(r); }
  Table<Counts> ctx_used_;      // by context
  Table<uint16_t> account_of_;  // by context
  Table<Counts> acct_used_;     // by account
  Counts ctx_limit_{}, acct_limit_{};
};

}  // namespace rhinet::fw
