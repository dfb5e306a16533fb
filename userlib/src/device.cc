// SPDX-License-Identifier: BSD-2-Clause
#include "device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "group_detail.hpp"
#include "net.hpp"
#include "wait.hpp"

namespace rhinet::detail {

static_assert(
    static_cast<std::uint32_t>(Syndrome::bad_key) == RHINETDV_SYN_BAD_KEY &&
        static_cast<std::uint32_t>(Syndrome::pd_mismatch) ==
            RHINETDV_SYN_PD_MISMATCH &&
        static_cast<std::uint32_t>(Syndrome::access_rights) ==
            RHINETDV_SYN_ACCESS_RIGHTS &&
        static_cast<std::uint32_t>(Syndrome::bounds) == RHINETDV_SYN_BOUNDS &&
        static_cast<std::uint32_t>(Syndrome::bad_area) ==
            RHINETDV_SYN_BAD_AREA &&
        static_cast<std::uint32_t>(Syndrome::bad_endpoint) ==
            RHINETDV_SYN_BAD_ENDPOINT &&
        static_cast<std::uint32_t>(Syndrome::length) == RHINETDV_SYN_LENGTH &&
        static_cast<std::uint32_t>(Syndrome::bad_wqe) == RHINETDV_SYN_BAD_WQE &&
        static_cast<std::uint32_t>(Syndrome::dma) == RHINETDV_SYN_DMA &&
        static_cast<std::uint32_t>(Syndrome::retry_exceeded) ==
            RHINETDV_SYN_RETRY_EXCEEDED &&
        static_cast<std::uint32_t>(Syndrome::alignment) ==
            RHINETDV_SYN_ALIGNMENT &&
        static_cast<std::uint32_t>(Syndrome::flushed) == RHINETDV_SYN_FLUSHED &&
        static_cast<std::uint32_t>(Syndrome::bad_xfer) ==
            RHINETDV_SYN_BAD_XFER &&
        static_cast<std::uint32_t>(Syndrome::bad_group) ==
            RHINETDV_SYN_BAD_GROUP &&
        static_cast<std::uint32_t>(Syndrome::not_pinned) ==
            RHINETDV_SYN_NOT_PINNED &&
        static_cast<std::uint32_t>(Syndrome::busy) == RHINETDV_SYN_BUSY &&
        static_cast<std::uint32_t>(Syndrome::member_lost) ==
            RHINETDV_SYN_MEMBER_LOST &&
        static_cast<std::uint32_t>(Syndrome::not_held) ==
            RHINETDV_SYN_NOT_HELD &&
        static_cast<std::uint32_t>(Syndrome::coll_mismatch) ==
            RHINETDV_SYN_COLL_MISMATCH &&
        static_cast<std::uint32_t>(Syndrome::coll_no_room) ==
            RHINETDV_SYN_COLL_NO_ROOM &&
        static_cast<std::uint32_t>(Syndrome::coll_no_switch) ==
            RHINETDV_SYN_COLL_NO_SWITCH,
    "rhinet::Syndrome mirrors RHINETDV_SYN_*");
static_assert(
    static_cast<std::uint32_t>(Mode::basic) == RHINETDV_MODE_BASIC &&
        static_cast<std::uint32_t>(Mode::twin) == RHINETDV_MODE_TWIN &&
        static_cast<std::uint32_t>(Mode::diff) == RHINETDV_MODE_DIFF &&
        static_cast<std::uint32_t>(Mode::bitmap) == RHINETDV_MODE_BITMAP &&
        static_cast<std::uint32_t>(Mode::stride) == RHINETDV_MODE_STRIDE,
    "rhinet::Mode mirrors RHINETDV_MODE_*");
static_assert(
    static_cast<std::uint32_t>(Op::push) == RHINETDV_OP_PUSH &&
        static_cast<std::uint32_t>(Op::pull) == RHINETDV_OP_PULL &&
        static_cast<std::uint32_t>(Op::isend) == RHINETDV_OP_ISEND &&
        static_cast<std::uint32_t>(Op::irecv) == RHINETDV_OP_IRECV &&
        static_cast<std::uint32_t>(Op::pd_req) == RHINETDV_OP_PD_REQUEST &&
        static_cast<std::uint32_t>(Op::pd_release) == RHINETDV_OP_PD_RELEASE &&
        static_cast<std::uint32_t>(Op::mcast) == RHINETDV_OP_MCAST_LIST &&
        static_cast<std::uint32_t>(Op::lock) == RHINETDV_OP_LOCK &&
        static_cast<std::uint32_t>(Op::unlock) == RHINETDV_OP_UNLOCK &&
        static_cast<std::uint32_t>(Op::barrier) == RHINETDV_OP_BARRIER &&
        static_cast<std::uint32_t>(Op::mcast_switch) ==
            RHINETDV_OP_MCAST_SWITCH &&
        static_cast<std::uint32_t>(Op::subscribe) == RHINETDV_OP_SUBSCRIBE &&
        static_cast<std::uint32_t>(Op::unsubscribe) ==
            RHINETDV_OP_UNSUBSCRIBE &&
        static_cast<std::uint32_t>(Op::share_update) ==
            RHINETDV_OP_SHARE_UPDATE &&
        static_cast<std::uint32_t>(Op::fetch_add) == RHINETDV_OP_FETCH_ADD &&
        static_cast<std::uint32_t>(Op::compare_swap) == RHINETDV_OP_CMP_SWAP &&
        static_cast<std::uint32_t>(Op::trigger_add) ==
            RHINETDV_OP_TRIGGER_ADD &&
        static_cast<std::uint32_t>(Op::atomic) == RHINETDV_OP_ATOMIC_EXT &&
        static_cast<std::uint32_t>(AtomicOp::fetch_add) ==
            RHINETDV_ATOMIC_FETCH_ADD &&
        static_cast<std::uint32_t>(AtomicOp::compare_swap) ==
            RHINETDV_ATOMIC_CMP_SWAP &&
        static_cast<std::uint32_t>(AtomicOp::swap) == RHINETDV_ATOMIC_SWAP &&
        static_cast<std::uint32_t>(AtomicOp::fetch) == RHINETDV_ATOMIC_FETCH &&
        static_cast<std::uint32_t>(AtomicOp::fetch_and) ==
            RHINETDV_ATOMIC_AND &&
        static_cast<std::uint32_t>(AtomicOp::fetch_or) == RHINETDV_ATOMIC_OR &&
        static_cast<std::uint32_t>(AtomicOp::fetch_xor) == RHINETDV_ATOMIC_XOR,
    "rhinet::Op mirrors RHINETDV_OP_*");
static_assert(wc_success == IBV_WC_SUCCESS &&
                  wc_loc_len_err == IBV_WC_LOC_LEN_ERR &&
                  wc_wr_flush_err == IBV_WC_WR_FLUSH_ERR &&
                  wc_rem_op_err == IBV_WC_REM_OP_ERR,
              "message_detail.hpp's wc_* are ibv_wc_status values");

namespace {

std::string wc_name(std::uint32_t status) {
  return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
}

// The errno of a failed completion: the syndrome's, except where a lock
// or barrier says more (a LOCK of a lock this endpoint holds or waits for
// would deadlock; a barrier's NOT_HELD is a count that differs from its
// round's, not a lock; a subscribe's NOT_SUBSCRIBED means it is in the
// region already).
// Operations whose WQE has no room for a status word (their operands take
// its bytes): every outcome comes as a CQE, the old value in results[].
bool reports_by_cqe(Op op) {
  return op == Op::fetch_add || op == Op::compare_swap ||
         op == Op::trigger_add || op == Op::atomic;
}

// What a refusal for missing rights means for this operation: the access
// the target's area (or the key's memory region) lacks.
std::string access_hint(Op op, Target target, std::uint32_t syndrome) {
  if (syndrome != RHINETDV_SYN_ACCESS_RIGHTS) return {};
  const bool atomic =
      op == Op::fetch_add || op == Op::compare_swap || op == Op::atomic;
  if (!atomic && op != Op::push && op != Op::pull) return {};
  if (target == Target::key)
    return atomic           ? " (the key's memory needs remote atomic access)"
           : op == Op::push ? " (the key's memory needs remote write access)"
                            : " (the key's memory needs remote read access)";
  return atomic           ? " (the target's area needs Access::remote_atomic)"
         : op == Op::push ? " (the target's area needs Access::remote_write)"
                          : " (the target's area needs Access::remote_read)";
}

int sync_errno(Op op, std::uint32_t syndrome) {
  if (op == Op::lock && syndrome == RHINETDV_SYN_BAD_WQE) return EDEADLK;
  if (op == Op::subscribe && syndrome == RHINETDV_SYN_NOT_SUBSCRIBED)
    return EISCONN;
  if (op == Op::barrier && syndrome == RHINETDV_SYN_NOT_HELD) return EINVAL;
  return syndrome_errno(syndrome);
}

}  // namespace

Device::~Device() {
  // Operations still in flight are abandoned with the endpoint.
  if (ep) rhinetdv_destroy_endpoint(ep);
  // Destination lists are MRs of the PD: gone before it.
  for (Slot& s : slots) s.keep.reset();
  mcast_lists.clear();
  if (words_mr) ibv_dereg_mr(words_mr);
  std::free(words);
  if (bounce_mr) ibv_dereg_mr(bounce_mr);
  std::free(bounce);
  if (pd) ibv_dealloc_pd(pd);
  if (ctx) ibv_close_device(ctx);
}

Result<void> Device::make_pool(std::uint32_t n) {
  // A status word and an atomic's result per slot.
  const std::size_t bytes = (std::size_t{n} * 16 + 4095) / 4096 * 4096;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return Error(ENOMEM, "status words: no memory");
  std::memset(p, 0, bytes);
  words = static_cast<std::uint64_t*>(p);
  results = words + n;
  words_mr = ibv_reg_mr(pd, words, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!words_mr) return Error(errno, "status words: ibv_reg_mr");
  slots.assign(n, Slot{});
  free_slots.reserve(n);
  for (std::uint32_t i = n; i-- > 0;) free_slots.push_back(i);
  return ok();
}

namespace {

constexpr int kLongestSleepMs = 200;

// The endpoint's completion events: the NIC interrupts for the next CQE.
class EndpointEvents final : public EventSource {
 public:
  explicit EndpointEvents(rhinetdv_endpoint* ep) : ep_(ep) {}
  int arm() override { return rhinetdv_arm_event(ep_); }
  // At most kLongestSleep at a time: an operation posted before
  // Group::set_spin made waits sleep asked for no completion, and wakes
  // nobody.
  int sleep(int timeout_ms) override {
    if (timeout_ms < 0 || timeout_ms > kLongestSleepMs)
      timeout_ms = kLongestSleepMs;
    return rhinetdv_wait_event(ep_, timeout_ms);
  }
  const char* arm_name() const override { return "rhinetdv_arm_event"; }
  const char* sleep_name() const override { return "rhinetdv_wait_event"; }

 private:
  rhinetdv_endpoint* ep_;
};

}  // namespace

int Device::wait(const std::function<bool()>& done,
                 net::Clock::time_point deadline, const char** failed) {
  EndpointEvents events(ep);
  return wait_until(done, events, spin, deadline, stats, failed);
}

Result<void> Device::make_bounce() {
  if (bounce) return ok();
  const std::size_t bytes = slots.size() * 2 * kBounce;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return Error(ENOMEM, "bounce memory for unregistered operands: no memory");
  bounce_mr = ibv_reg_mr(pd, p, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!bounce_mr) {
    const int e = errno;
    std::free(p);
    return Error(e, "bounce memory for unregistered operands: ibv_reg_mr");
  }
  bounce = static_cast<std::byte*>(p);
  return ok();
}

Result<std::uint32_t> Device::acquire(std::chrono::milliseconds timeout) {
  // Signaled operations leave completions behind their status words:
  // taking them at every post keeps those the provider holds for
  // rhinetdv_poll (its room: max_outstanding plus the irecvs) to the
  // operations in flight, however often signal counts drain the CQ.
  if (sleeps()) poll_cq();
  if (free_slots.empty()) reap_all();
  if (free_slots.empty()) {
    const char* failed = "";
    const int e = wait(
        [&] {
          reap_all();  // reads the CQ too
          return !free_slots.empty();
        },
        net::deadline_after(timeout), &failed);
    if (e == ETIMEDOUT)
      return Error(ETIMEDOUT, std::to_string(slots.size()) +
                                  " operations in flight and none "
                                  "completed within " +
                                  net::format_duration(timeout));
    if (e) return Error(e, std::string("waiting for a free slot: ") + failed);
  }
  const std::uint32_t s = free_slots.back();
  free_slots.pop_back();
  slots[s] = Slot{};
  slots[s].busy = true;
  rhinetdv_status_word_clear(&words[s]);
  return s;
}

void Device::release(std::uint32_t s) {
  slots[s].busy = false;
  slots[s].owner = nullptr;
  slots[s].keep.reset();
  free_slots.push_back(s);
}

bool Device::reap(std::uint32_t s) {
  Slot& slot = slots[s];
  if (!slot.busy) return true;
  rhinetdv_status st;
  if (!rhinetdv_status_word_poll(&words[s], &st)) return false;
  std::optional<Error> err;
  std::uint32_t bytes = st.length;
  if (slot.op == Op::isend) {
    auto out =
        message_outcome(Op::isend, st.status, st.syndrome, wc_name(st.status),
                        st.length, slot.length, false, describe(slot));
    err = std::move(out.error);
    bytes = out.bytes;
  } else if (st.status != IBV_WC_SUCCESS) {
    err = Error::completion(
        st.status, wc_name(st.status), st.syndrome,
        describe(slot) + access_hint(slot.op, slot.target, st.syndrome),
        sync_errno(slot.op, st.syndrome));
  }
  if (err) {
    bytes = 0;
    poll_cq();
  }
  if (!err && slot.copy_out)
    std::memcpy(slot.copy_out, bounce_for(s, true), slot.copy_len);
  if (slot.owner && !err && reports_by_cqe(slot.op))
    slot.owner->value_ = __atomic_load_n(&results[s], __ATOMIC_ACQUIRE);
  if (slot.owner)
    slot.owner->complete(bytes, std::move(err));
  else if (err && !detached_error)
    detached_error = std::move(err);
  release(s);
  return true;
}

void Device::reap_all() {
  // An atomic completes through the CQ only (no status word): read it
  // first, so that waiting on reap_all alone (sync(), a full queue) sees
  // detached atomics finish. Reading the CQ makes no system call.
  poll_cq();
  for (std::uint32_t s = 0; s < slots.size(); s++)
    if (slots[s].busy) reap(s);
}

void Device::poll_cq() {
  constexpr int kBatch = 16;
  rhinetdv_completion_ex c[kBatch];
  for (int i = 0; i < 64; i++) {
    const int n = rhinetdv_poll_ex(ep, kBatch, c, sizeof(c[0]));
    if (n < 0) {
      if (!poll_error)
        poll_error = Error(errno ? errno : EIO, "rhinetdv_poll_ex");
      return;
    }
    for (int k = 0; k < n; k++) {
      if (c[k].base.opcode == RHINETDV_OP_IRECV)
        complete_recv(c[k]);
      else if (c[k].base.status != IBV_WC_SUCCESS ||
               c[k].base.opcode == RHINETDV_OP_FETCH_ADD ||
               c[k].base.opcode == RHINETDV_OP_CMP_SWAP ||
               c[k].base.opcode == RHINETDV_OP_ATOMIC_EXT ||
               c[k].base.opcode == RHINETDV_OP_TRIGGER_ADD)
        complete_from_cqe(c[k].base);
    }
    if (n < kBatch) break;
  }
}

// A failed operation's CQE. The NIC writes the status word of a WQE it
// refuses as it fetches it only when the WQE is well formed and the word
// usable; a malformed WQE (a length over the NIC's limit, a transfer mode
// the NIC refuses) completes with a CQE alone. Its slot takes the CQE's
// outcome, written where the word would be (the CQE comes before any word
// the NIC writes, so a word already done is the NIC's own and is left as
// it is). An atomic has no status word at all (its operands take the WQE's
// bytes): every outcome, success included, comes this way.
void Device::complete_from_cqe(const rhinetdv_completion& c) {
  if (c.wr_id >= slots.size()) return;  // a receive's, or the library's
  const auto s = static_cast<std::uint32_t>(c.wr_id);
  if (!slots[s].busy) return;
  std::uint64_t* w = &words[s];
  if (__atomic_load_n(w, __ATOMIC_ACQUIRE) & RHINETDV_STATUS_WORD_DONE) return;
  const bool atomic = reports_by_cqe(slots[s].op);
  if (c.status == IBV_WC_SUCCESS && !atomic) return;  // not ours
  const std::uint64_t word =
      (c.status == IBV_WC_SUCCESS ? c.byte_len : 0u) |
      RHINETDV_STATUS_WORD_DONE |
      (std::uint64_t{c.status & 0xffu} << RHINETDV_STATUS_WORD_STATUS_SHIFT) |
      (std::uint64_t{c.syndrome & 0xffu}
       << RHINETDV_STATUS_WORD_SYNDROME_SHIFT);
  __atomic_store_n(w, word, __ATOMIC_RELEASE);
}

void Device::make_recvs(std::uint32_t n) {
  recvs.assign(n, RecvSlot{});
  free_recvs.clear();
  free_recvs.reserve(n);
  for (std::uint32_t i = n; i-- > 0;) free_recvs.push_back(i);
}

Result<std::uint32_t> Device::acquire_recv() {
  if (free_recvs.empty()) poll_cq();
  if (free_recvs.empty())
    return Error(ENOMEM, std::to_string(recvs.size()) +
                             " irecvs are pending (the endpoint's "
                             "max_irecv): wait for or cancel some first");
  const std::uint32_t r = free_recvs.back();
  free_recvs.pop_back();
  const std::uint32_t gen = recvs[r].gen;
  recvs[r] = RecvSlot{};
  recvs[r].gen = gen;
  recvs[r].busy = true;
  return r;
}

void Device::release_recv(std::uint32_t r) {
  RecvSlot& s = recvs[r];
  s.busy = false;
  s.owner = nullptr;
  s.gen = (s.gen + 1) & recv_gen_mask;
  free_recvs.push_back(r);
}

void Device::complete_recv(const rhinetdv_completion_ex& c) {
  const auto id = decode_recv_wr_id(c.base.wr_id);
  if (!id || id->index >= recvs.size()) return;
  RecvSlot& s = recvs[id->index];
  if (!s.busy || s.gen != id->gen) return;  // not (or no longer) pending
  auto out = message_outcome(Op::irecv, c.base.status, c.base.syndrome,
                             wc_name(c.base.status), c.base.byte_len, s.length,
                             s.cancel_requested, describe(s));
  std::optional<Message> msg;
  if (out.matched)
    msg = Message{peers.rank_of(c.src_node, c.src_endpoint),
                  Peer{c.src_node, c.src_endpoint}, c.tag, c.base.byte_len};
  if (s.owner)
    s.owner->complete_receive(out.bytes, std::move(msg), std::move(out.error),
                              out.cancelled);
  else if (out.error && !s.cancel_requested && !detached_error)
    detached_error = std::move(out.error);
  release_recv(id->index);
}

Result<void> Device::cancel_recv(std::uint32_t r) {
  RecvSlot& s = recvs[r];
  if (!s.busy || s.cancel_requested) return ok();
  const std::uint64_t wr = recv_wr_id(r, s.gen);
  const std::uint32_t handle = s.handle;
  const int e = post_retrying_for(std::chrono::seconds(10), [&] {
    return rhinetdv_irecv_cancel(ep, handle);
  });
  // (Meanwhile the receive may have completed: then there is nothing to
  // take back and its slot may even be in use again.)
  if (!s.busy || recv_wr_id(r, s.gen) != wr) return ok();
  if (e == 0) {
    s.cancel_requested = true;
    return ok();
  }
  // Not outstanding any more: it completed, its completion is on the CQ.
  if (e == ENOENT) {
    poll_cq();
    return ok();
  }
  return Error(e, describe(s) + ": rhinetdv_irecv_cancel");
}

std::string Device::describe(const RecvSlot& r) const {
  return describe_message(Op::irecv, r.source, r.match, r.length, r.mode);
}

std::string Device::describe(const Slot& s) const {
  if (s.op == Op::collective) {
    static const char* const kNames[] = {"?", "allreduce", "reduce", "bcast",
                                         "barrier"};
    std::string d = std::string(kNames[s.tag < 5 ? s.tag : 0]) + " of " +
                    std::to_string(s.length) + " bytes on communicator " +
                    std::to_string(s.area_or_rkey);
    if (s.tag == 2 || s.tag == 3) d += ", root " + std::to_string(s.rank);
    return d;
  }
  if (s.op == Op::isend)
    return describe_message(Op::isend, s.rank, {s.tag}, s.length, s.mode);
  if (s.op == Op::watch)
    return "watch of this process's area " + std::to_string(s.area_or_rkey);
  if (s.op == Op::trigger_add)
    return "trigger_add of " + std::to_string(s.offset_or_addr) +
           " to counter " + hex(s.area_or_rkey) + " of rank " +
           std::to_string(s.rank);
  if (s.op == Op::lock || s.op == Op::unlock || s.op == Op::barrier) {
    char id[24];
    snprintf(id, sizeof(id), "0x%llx",
             static_cast<unsigned long long>(s.offset_or_addr));
    std::string d = std::string(op_name(s.op)) + " " + id +
                    " managed by rank " + std::to_string(s.rank);
    if (s.op == Op::barrier) d += ", " + std::to_string(s.length) + " ranks";
    return d;
  }
  if (s.op == Op::subscribe || s.op == Op::unsubscribe) {
    std::string d = std::string(op_name(s.op)) + " area " +
                    std::to_string(s.area_or_rkey) + " at home rank " +
                    std::to_string(s.rank);
    if (s.op == Op::subscribe)
      d += ", offset " + std::to_string(s.offset_or_addr) + ", " +
           std::to_string(s.length) + " bytes" +
           (s.mode != Mode::basic ? std::string(", mode ") + mode_name(s.mode)
                                  : std::string());
    return d;
  }
  if (s.op == Op::share_update) {
    std::string d = "share_update of area " + std::to_string(s.area_or_rkey) +
                    " offset " + std::to_string(s.offset_or_addr) + ", " +
                    std::to_string(s.length) + " bytes";
    if (s.mode != Mode::basic) d += std::string(", mode ") + mode_name(s.mode);
    return d;
  }
  if (s.op == Op::mcast || s.op == Op::mcast_switch) {
    char switch_group[24];
    snprintf(switch_group, sizeof(switch_group), "switch group 0x%x", s.rank);
    std::string d = (s.op == Op::mcast_switch
                         ? std::string("mcast to ") + switch_group
                         : "mcast to " + std::to_string(s.rank) + " ranks") +
                    ", area " + std::to_string(s.area_or_rkey) + " offset " +
                    std::to_string(s.offset_or_addr) + ", " +
                    std::to_string(s.length) + " bytes";
    if (s.mode != Mode::basic) d += std::string(", mode ") + mode_name(s.mode);
    return d;
  }
  std::string d = std::string(op_name(s.op)) +
                  (s.op == Op::pull ? " from rank " : " to rank ") +
                  std::to_string(s.rank);
  if (s.target == Target::area)
    d += ", area " + std::to_string(s.area_or_rkey) + " offset " +
         std::to_string(s.offset_or_addr);
  else
    d += ", address 0x" +
         [&] {
           char buf[24];
           snprintf(buf, sizeof(buf), "%llx",
                    static_cast<unsigned long long>(s.offset_or_addr));
           return std::string(buf);
         }() +
         " rkey 0x" + [&] {
           char buf[16];
           snprintf(buf, sizeof(buf), "%x", s.area_or_rkey);
           return std::string(buf);
         }();
  d += ", " + std::to_string(s.length) + " bytes";
  if (s.mode != Mode::basic) d += std::string(", mode ") + mode_name(s.mode);
  if (s.remote_span)
    d += " (" + std::to_string(s.remote_span) + " bytes at the target)";
  return d;
}

Result<std::shared_ptr<const McastList>> Device::mcast_list(
    std::span<const std::uint32_t> ranks, std::span<const Peer> table) {
  for (std::size_t i = 0; i < mcast_lists.size(); i++) {
    const auto& [key, list] = mcast_lists[i];
    if (std::equal(key.begin(), key.end(), ranks.begin(), ranks.end())) {
      std::shared_ptr<const McastList> hit = list;
      // Most recently used last.
      std::rotate(mcast_lists.begin() + static_cast<std::ptrdiff_t>(i),
                  mcast_lists.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  mcast_lists.end());
      return hit;
    }
  }
  auto list = std::make_shared<McastList>();
  list->dests.resize(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); i++) {
    const Peer& p = table[ranks[i]];
    list->dests[i].node = static_cast<std::uint16_t>(p.node_id);
    list->dests[i].reserved = 0;
    list->dests[i].endpoint = p.endpoint_id;
  }
  list->mr = ibv_reg_mr(pd, list->dests.data(),
                        list->dests.size() * sizeof(list->dests[0]),
                        IBV_ACCESS_LOCAL_WRITE);
  if (!list->mr)
    return Error(errno ? errno : EIO,
                 "mcast: registering the destination list: ibv_reg_mr");
  if (mcast_lists.size() >= kMcastListsKept)
    mcast_lists.erase(mcast_lists.begin());
  mcast_lists.emplace_back(
      std::vector<std::uint32_t>(ranks.begin(), ranks.end()), list);
  return std::shared_ptr<const McastList>(std::move(list));
}

McastList::~McastList() {
  if (mr) ibv_dereg_mr(mr);
}

Area Device::make_area(ibv_mr* mr, std::uint32_t id, std::span<std::byte> mem) {
  return Area(shared_from_this(), mr, id, group, mem);
}

Buffer Device::make_buffer(ibv_mr* mr, std::span<std::byte> mem,
                           bool writable) {
  return Buffer(shared_from_this(), mr, mem, writable);
}

Twin Device::make_twin(ibv_dm* dm, std::size_t size, std::uint32_t handle) {
  return Twin(shared_from_this(), dm, size, handle);
}

}  // namespace rhinet::detail
