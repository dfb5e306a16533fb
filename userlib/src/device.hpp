// SPDX-License-Identifier: BSD-2-Clause
// detail::Device (internal): what a Group and everything it made share:
// the ibverbs context, PD and rhinetdv endpoint, the pool of status words,
// the table of pending receives, the registry of local memory and the
// group's table (rank <-> (node, endpoint)). Held by shared_ptr, so an
// Area, Buffer, Twin or Request may outlive its Group.
#ifndef RHINET_USERLIB_DEVICE_HPP
#define RHINET_USERLIB_DEVICE_HPP

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "message_detail.hpp"
#include "net.hpp"
#include "registry.hpp"
#include "rhinet/area.hpp"
#include "rhinet/message.hpp"
#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/types.hpp"
#include "rhinet/xfer.hpp"
#include "wait.hpp"

namespace rhinet::detail {

// A destination list of mcast (struct rhinetdv_mcast_dest per rank) in
// registered memory the NIC reads while an mcast is in flight: kept alive
// by the Device's cache and by every Slot of an mcast that uses it.
struct McastList {
  std::vector<rhinetdv_mcast_dest> dests;
  ibv_mr* mr = nullptr;
  McastList() = default;
  McastList(const McastList&) = delete;
  McastList& operator=(const McastList&) = delete;
  ~McastList();
};

struct Device : std::enable_shared_from_this<Device> {
  // What one status word is waiting for (for messages).
  struct Slot {
    Request* owner = nullptr;  // null: detached
    bool busy = false;
    Op op = Op::push;
    Target target = Target::area;
    Mode mode = Mode::basic;
    std::uint32_t rank = 0;
    std::uint32_t area_or_rkey = 0;
    std::uint64_t offset_or_addr = 0;
    std::uint32_t length = 0;
    // Bytes the operation covers at the target when that differs from
    // `length` (a strided PUSH or PULL spreads its blocks); 0 otherwise.
    std::uint64_t remote_span = 0;
    std::uint64_t tag = 0;  // isend
    // What the NIC reads until the slot completes (mcast: its list).
    std::shared_ptr<const void> keep;
    // A result the NIC wrote into the slot's bounce memory, for
    // unregistered memory: copied there when the slot completes well.
    void* copy_out = nullptr;
    std::uint32_t copy_len = 0;
  };
  // A pending irecv (completes through the CQ, not a status word).
  struct RecvSlot {
    Request* owner = nullptr;  // null: detached
    bool busy = false;
    bool cancel_requested = false;
    std::uint32_t gen = 0;     // part of its wr_id (recv_wr_id)
    std::uint32_t handle = 0;  // for rhinetdv_irecv_cancel
    std::uint32_t source = 0;  // rank or any_source
    TagMatch match{};
    std::uint32_t length = 0;  // bytes it takes (buffer, or strided blocks)
    Mode mode = Mode::basic;
  };
  using Region = Registry::Region;

  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  rhinetdv_endpoint* ep = nullptr;
  rhinetdv_device_attr attr{};
  std::uint32_t group = 0;

  std::uint64_t* words = nullptr;  // the status-word pool
  // An atomic's old value, one per slot (in the same MR as the words).
  std::uint64_t* results = nullptr;
  ibv_mr* words_mr = nullptr;
  // Registered memory for small operands in unregistered memory: per
  // slot, kBounce bytes the NIC reads and kBounce it writes. Made at the
  // first use (bounce_for).
  static constexpr std::size_t kBounce = 1024;
  std::byte* bounce = nullptr;
  ibv_mr* bounce_mr = nullptr;
  Result<void> make_bounce();
  // Slot s's bounce memory: what the NIC reads (out) or writes (in).
  std::byte* bounce_for(std::uint32_t s, bool in) {
    return bounce + (std::size_t{s} * 2 + (in ? 1 : 0)) * kBounce;
  }
  std::vector<Slot> slots;
  std::vector<std::uint32_t> free_slots;
  Registry registry;
  // First failure of a detached request since the last sync().
  std::optional<Error> detached_error;

  // isend/irecv: the device has RHINETDV_CAP_TAG and the endpoint its
  // tag caps; one RecvSlot per irecv the endpoint takes (max_irecv).
  bool tag_matching = false;
  std::string no_tag_reason;  // why not, for EOPNOTSUPP
  rhinetdv_tag_caps tag_caps{};
  std::vector<RecvSlot> recvs;
  std::vector<std::uint32_t> free_recvs;
  // rank <-> (node, endpoint), for the source of what arrives.
  PeerIndex peers;
  // rhinetdv_poll_ex failed (receives cannot complete): wait() says so.
  std::optional<Error> poll_error;

  // One thread at a time: the thread inside a post or a wait, so that
  // another one coming in meanwhile is told (EBUSY) instead of corrupting
  // the slots. The same thread may enter again (a post that waits).
  std::atomic<std::thread::id> user{};
  unsigned user_depth = 0;
  bool enter() {
    const auto me = std::this_thread::get_id();
    if (user.load(std::memory_order_relaxed) == me) {
      user_depth++;
      return true;
    }
    std::thread::id none{};
    if (!user.compare_exchange_strong(none, me, std::memory_order_acquire))
      return false;
    user_depth = 1;
    return true;
  }
  void leave() {
    if (--user_depth == 0) user.store({}, std::memory_order_release);
  }
  // enter() for a scope; ok() false: another thread is inside.
  class InUse {
   public:
    explicit InUse(Device& d) : d_(d), ok_(d.enter()) {}
    InUse(const InUse&) = delete;
    InUse& operator=(const InUse&) = delete;
    ~InUse() {
      if (ok_) d_.leave();
    }
    bool ok() const { return ok_; }

   private:
    Device& d_;
    bool ok_;
  };
  static Error busy(const std::string& what) {
    return Error(EBUSY, what +
                            ": another thread is using the Group at this "
                            "moment; a Group and what it made are used by "
                            "one thread at a time");
  }

  // Waits (wait.hpp): how long they spin before they sleep, what they did.
  std::chrono::microseconds spin = default_spin;
  WaitStats stats;
  AreaWaitStats area_stats;  // Group::wait_for_area's
  // Whether waits sleep: then every operation asks for a CQE on success
  // too (its family's SIGNALED flag), as a status word raises no
  // interrupt.
  bool sleeps() const { return spin.count() >= 0; }
  // wait_until (wait.hpp) on this endpoint's completion events. 0 (done),
  // ETIMEDOUT, or an errno with *failed naming the call.
  int wait(const std::function<bool()>& done, net::Clock::time_point deadline,
           const char** failed);
  // The SIGNALED flag `flag` of an operation family when waits sleep.
  template <typename Flag>
  std::uint32_t signaled(Flag flag) const {
    return sleeps() ? static_cast<std::uint32_t>(flag) : 0u;
  }

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();

  // mcast destination lists, by rank list, most recently used last.
  static constexpr std::size_t kMcastListsKept = 8;
  std::vector<std::pair<std::vector<std::uint32_t>, std::shared_ptr<McastList>>>
      mcast_lists;
  // The registered list of `ranks` (each < table.size()), from the cache
  // or made (one ibv_reg_mr).
  Result<std::shared_ptr<const McastList>> mcast_list(
      std::span<const std::uint32_t> ranks, std::span<const Peer> table);

  // Status words.
  Result<void> make_pool(std::uint32_t n);
  std::size_t in_flight() const { return slots.size() - free_slots.size(); }
  // A free slot, completing (reaping) others while none is.
  Result<std::uint32_t> acquire(std::chrono::milliseconds timeout);
  void release(std::uint32_t slot);
  // Reads the slot's status word; when written, hands the outcome to the
  // owner (or keeps a detached failure), frees the slot, returns true.
  bool reap(std::uint32_t slot);
  void reap_all();
  // Takes completions off the endpoint's CQ (rhinetdv_poll_ex): those of
  // irecvs complete their receives (by wr_id); the others are errors of
  // PUSH/PULL/isend whose status words carry the same outcome (taking
  // them keeps the CQ from filling).
  void poll_cq();
  // The outcome of a failed completion that came without a status word.
  void complete_from_cqe(const rhinetdv_completion& c);
  std::string describe(const Slot& s) const;
  Request request(std::uint32_t slot) {
    return Request(shared_from_this(), static_cast<std::int32_t>(slot));
  }
  static Request failed(Error e, bool receive = false) {
    return Request(std::move(e), receive);
  }
  // Posts one operation that completes through a slot: takes a slot
  // (completing others while none is free), records `d` for it and calls
  // post(slot) (a rhinetdv post returning an errno, its attr's wr_id and
  // status word or result taken from the slot: use_word), retrying ENOMEM.
  // When no slot comes or the post is refused, the slot goes back and the
  // Request fails with fail(errno, text) (text: the refused call's name).
  template <class Fail, class Post>
  Request post_in_slot(const Slot& d, Fail&& fail, const std::string& call,
                       Post&& post) {
    InUse in(*this);
    if (!in.ok()) return failed(busy(call));
    auto slot = acquire(forever);
    if (!slot) return fail(slot.error().errno_value(), slot.error().message());
    slots[*slot] = d;
    slots[*slot].busy = true;
    const int err = post_retrying([&] { return post(*slot); });
    if (err) {
      release(*slot);
      return fail(err, call);
    }
    return request(*slot);
  }
  // An attr's wr_id and status word for slot `s`.
  template <class Attr>
  void use_word(Attr& a, std::uint32_t s) {
    a.wr_id = s;
    a.status_word = &words[s];
    a.status_lkey = words_mr->lkey;
  }

  // Calls post() (a rhinetdv post returning an errno) until it returns
  // something else than ENOMEM (the endpoint's queue is full), letting
  // earlier operations finish meanwhile. The caller holds one slot.
  template <class Post>
  int post_retrying(Post&& post) {
    for (;;) {
      const int err = post();
      if (err != ENOMEM) return err;
      poll_cq();
      if (in_flight() <= 1) return err;
      Backoff b;
      const std::size_t before = in_flight();
      while (in_flight() == before) {
        b.pause();
        reap_all();
      }
    }
  }

  // Calls post() until it returns something else than ENOMEM or `limit`
  // passes, completing what it can meanwhile: for what holds no slot
  // (irecv: the oldest waits in the ring; cancel and iprobe: the send
  // queue is full for a moment).
  template <class Post>
  int post_retrying_for(std::chrono::milliseconds limit, Post&& post) {
    int err = post();
    if (err != ENOMEM) return err;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    Backoff b;
    while (err == ENOMEM && std::chrono::steady_clock::now() < deadline) {
      b.pause();
      reap_all();  // reads the CQ too
      err = post();
    }
    return err;
  }

  // Receives.
  void make_recvs(std::uint32_t n);
  std::size_t recvs_in_flight() const {
    return recvs.size() - free_recvs.size();
  }
  // A free receive slot (ENOMEM when max_irecv receives are pending).
  Result<std::uint32_t> acquire_recv();
  void release_recv(std::uint32_t r);
  void complete_recv(const rhinetdv_completion_ex& c);
  // Asks the NIC to take the receive back (no-op if asked already).
  Result<void> cancel_recv(std::uint32_t r);
  std::string describe(const RecvSlot& r) const;
  Request recv_request(std::uint32_t r) {
    return Request(shared_from_this(), static_cast<std::int32_t>(r),
                   Request::ReceiveTag{});
  }

  // Registry.
  Result<void> add_region(const void* p, std::size_t len, std::uint32_t lkey,
                          bool writable) {
    return registry.add(p, len, lkey, writable);
  }
  void remove_region(const void* p) { registry.remove(p); }
  const Region* find_region(const void* p, std::size_t len) const {
    return registry.find(p, len);
  }

  // Makers of the RAII objects (their constructors are private).
  Area make_area(ibv_mr* mr, std::uint32_t id, std::span<std::byte> mem);
  Buffer make_buffer(ibv_mr* mr, std::span<std::byte> mem, bool writable);
  Twin make_twin(ibv_dm* dm, std::size_t size, std::uint32_t handle);
  static const Device* owner_of(const Twin& t) { return t.dev_.get(); }
};

}  // namespace rhinet::detail

#endif  // RHINET_USERLIB_DEVICE_HPP
