// SPDX-License-Identifier: BSD-2-Clause
#include "rhinet/inbox.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device.hpp"
#include "net.hpp"
#include "wait.hpp"

namespace rhinet {

namespace {

// inbox::SendMachine's transport over a Group: the fetch-add and the
// writes go to the receiver's area; a read of RecvCNT lands in a word of
// the sender's registered scratch buffer.
struct GroupTransport {
  using Clock = std::chrono::steady_clock;
  // What a pause counts per slot turn: about a message's time through one
  // receiver's NIC; a sender that waits longer than needed reads once more.
  static constexpr std::chrono::microseconds kSlotTurn{5};
  static constexpr std::chrono::milliseconds kLongestPause{2};
  struct Op {
    Request req;
    const std::uint64_t* word = nullptr;  // a read's landing place
    bool timer = false;                   // a pause, until `until`
    Clock::time_point until{};
    bool test() { return timer ? Clock::now() >= until : req.test(); }
    bool failed() const { return !timer && !req.result(); }
    std::uint64_t value() const {
      return word ? __atomic_load_n(word, __ATOMIC_ACQUIRE) : req.value();
    }
  };
  Group* group;
  std::uint32_t receiver;
  std::uint32_t area_id;
  std::uint32_t counter_rank;  // the receiver, or its group's counter host
  std::uint32_t counter_area;
  std::span<std::byte> scratch;  // registered: the message, then a word

  Op fetch_add(std::uint64_t offset, std::uint64_t add) {
    return Op{group->fetch_add(counter_rank, counter_area, offset, add)};
  }
  Op read_word(std::uint64_t offset) {
    auto w = scratch.last(8);
    return Op{group->pull(counter_rank, counter_area, offset, w),
              reinterpret_cast<const std::uint64_t*>(w.data())};
  }
  Op write(std::uint64_t offset, std::span<const std::byte> bytes) {
    // The header (16 bytes) travels inline; the message from scratch.
    XferOptions o;
    o.inline_data = bytes.size() <= sizeof(inbox::SlotHeader);
    return Op{group->push(receiver, area_id, offset, bytes, o)};
  }
  Op pause(std::uint64_t slots) {
    Op o;
    o.timer = true;
    const auto wait = kSlotTurn * std::min<std::uint64_t>(slots, 1000);
    o.until = Clock::now() + std::min<Clock::duration>(wait, kLongestPause);
    return o;
  }
};

}  // namespace

// One message of group g taken, its RecvCNT at the group's counter host:
// a fetch-add of one there (detached: Group::sync() reports a failure).
void add_remote_recv(Group& g, const InboxPlacement& p, std::uint32_t group) {
  g.fetch_add(p.ranks[group % p.ranks.size()], p.area_id,
              inbox::counter_offset(group) + inbox::kRecvCount, 1)
      .detach();
}

bool placement_ok(const Group& g, const InboxPlacement& p) {
  for (std::uint32_t r : p.ranks)
    if (r >= g.size()) return false;
  return p.area_id <= 0xffff;
}

// ---- counter host ----------------------------------------------------------

Result<InboxCounterHost> InboxCounterHost::open(Group& group,
                                                std::uint32_t area_id,
                                                const InboxLayout& layout) {
  if (!inbox::valid(layout)) return Error(EINVAL, "inbox counters: bad layout");
  InboxCounterHost h;
  h.words_.assign(inbox::counter_bytes(layout) / 8, 0);
  inbox::init_counters(std::as_writable_bytes(std::span(h.words_)), layout);
  auto a = group.area(area_id, std::as_writable_bytes(std::span(h.words_)),
                      Access::all);
  if (!a) return a.error();
  h.area_.emplace(std::move(*a));
  return h;
}

std::uint64_t InboxCounterHost::send_count(std::uint32_t g) const {
  return __atomic_load_n(
      &words_[(inbox::counter_offset(g) + inbox::kSendCount) / 8],
      __ATOMIC_ACQUIRE);
}

void InboxCounterHost::add_recv(std::uint32_t g) {
  auto* w = &words_[(inbox::counter_offset(g) + inbox::kRecvCount) / 8];
  // Only the receiver writes RecvCNT: a plain add, published with release.
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELEASE);
}

std::uint64_t InboxCounterHost::recv_count(std::uint32_t g) const {
  return __atomic_load_n(
      &words_[(inbox::counter_offset(g) + inbox::kRecvCount) / 8],
      __ATOMIC_ACQUIRE);
}

// ---- receiver ------------------------------------------------------------

void Inbox::Memory::operator()(std::byte* p) const { std::free(p); }

Result<Inbox> Inbox::open(Group& group, std::uint32_t area_id,
                          InboxLayout layout, InboxPlacement placement) {
  if (!placement_ok(group, placement))
    return Error(EINVAL, "inbox: a counter rank beyond the group");
  if (!inbox::valid(layout))
    return Error(EINVAL, "inbox: " + std::to_string(layout.slots) +
                             " slots of " + std::to_string(layout.slot_bytes) +
                             " bytes in " + std::to_string(layout.groups) +
                             " groups (slots and groups powers of two, "
                             "groups <= slots, 1..2^20 each)");
  const std::size_t bytes = (inbox::area_bytes(layout) + 4095) / 4096 * 4096;
  Inbox in;
  in.layout_ = layout;
  in.bytes_ = bytes;
  in.placement_ = std::move(placement);
  in.group_ = &group;
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) return Error(ENOMEM, "inbox: no memory for its area");
  in.mem_.reset(static_cast<std::byte*>(p));
  const std::span<std::byte> area(in.mem_.get(), bytes);
  in.queue_ =
      std::make_unique<inbox::Queue>(area, layout, in.placement_.ranks.empty());
  in.queue_->init();  // before anybody can reach it
  auto a = group.area(area_id, area, Access::all);
  if (!a) return a.error();
  in.area_.emplace(std::move(*a));
  return in;
}

std::optional<std::span<const std::byte>> Inbox::peek() const {
  std::span<const std::byte> b;
  if (!queue_ || !queue_->ready(&b)) return std::nullopt;
  return b;
}

void Inbox::pop() {
  std::span<const std::byte> b;
  if (!queue_ || !queue_->ready(&b)) return;
  const std::uint32_t g = queue_->group();
  queue_->pop();
  if (!placement_.ranks.empty()) add_remote_recv(*group_, placement_, g);
}

std::uint64_t Inbox::received() const { return queue_ ? queue_->taken() : 0; }

bool Inbox::stuck() const { return queue_ && queue_->stuck() >= 0; }

bool Inbox::skip_stuck() {
  const int g = queue_ ? queue_->stuck() : -1;
  if (g < 0) return false;
  queue_->skip(static_cast<std::uint32_t>(g));
  if (!placement_.ranks.empty())
    add_remote_recv(*group_, placement_, static_cast<std::uint32_t>(g));
  return true;
}

std::uint64_t Inbox::skipped() const { return queue_ ? queue_->skipped() : 0; }

Result<std::vector<std::byte>> Inbox::receive(
    std::chrono::milliseconds timeout) {
  AreaWaitOptions o;
  o.timeout = timeout;
  return receive(o);
}

Result<std::vector<std::byte>> Inbox::receive(const AreaWaitOptions& options) {
  if (!queue_ || !area_) return Error(EINVAL, "inbox: not open (moved from)");
  auto m = peek();
  if (!m) {
    // Every part of a message (its bytes, then its header) lands in the
    // area by a NIC write, which fires the area's watch: the wait sleeps
    // on it (it polls where the NIC has no watches, or with never_sleep).
    const auto look = [&] { return (m = peek()).has_value(); };
    auto waited = group_->wait_for_area(area_->id(), look, options);
    if (!waited && waited.error().errno_value() == EBUSY) {
      // Another thread is inside the group: the watch is its endpoint's
      // to use, so look at memory without one (as before watches).
      if (detail::poll_until(look, net::deadline_after(options.timeout)))
        return timed_out(options.timeout);
    } else if (!waited) {
      if (waited.error().errno_value() == ETIMEDOUT)
        return timed_out(options.timeout);
      return waited.error();
    }
  }
  std::vector<std::byte> out(m->begin(), m->end());
  pop();
  return out;
}

Error Inbox::timed_out(std::chrono::milliseconds timeout) {
  return Error(ETIMEDOUT,
               "inbox: no message within " + net::format_duration(timeout));
}

// ---- sender --------------------------------------------------------------

struct InboxSender::State {
  State(Group& g, std::uint32_t receiver, std::uint32_t area_id,
        const InboxLayout& l, const InboxPlacement& p)
      : layout(l),
        memory((l.slot_bytes + 8 + 7) / 8 * 8),
        transport{&g,
                  receiver,
                  area_id,
                  p.ranks.empty() ? receiver
                                  : p.ranks[group_of(g, l) % p.ranks.size()],
                  p.ranks.empty() ? area_id : p.area_id,
                  {}},
        machine(transport, l, group_of(g, l)) {}
  static std::uint32_t group_of(const Group& g, const InboxLayout& l) {
    return l.groups ? g.rank() % l.groups : 0;
  }
  InboxLayout layout;
  std::vector<std::byte> memory;
  std::optional<Buffer> buffer;
  std::optional<Error> setup_error;
  GroupTransport transport;
  inbox::SendMachine<GroupTransport> machine;
  bool pending = false;  // a message timed out: it goes first
};

InboxSender::InboxSender(Group& group, std::uint32_t receiver,
                         std::uint32_t area_id, InboxLayout layout,
                         const InboxPlacement& placement)
    : s_(std::make_unique<State>(group, receiver, area_id, layout, placement)) {
  s_->machine.set_recv_count(layout.first_ticket);
  if (!inbox::valid(layout) || !placement_ok(group, placement) ||
      receiver >= group.size()) {
    s_->setup_error =
        Error(EINVAL, "inbox sender: bad layout, receiver or counter rank");
    return;
  }
  auto b = group.buffer(s_->memory);
  if (!b) {
    s_->setup_error = b.error();
    return;
  }
  s_->buffer.emplace(std::move(*b));
  s_->transport.scratch = s_->memory;
}

InboxSender::InboxSender(InboxSender&&) noexcept = default;
InboxSender& InboxSender::operator=(InboxSender&&) noexcept = default;
InboxSender::~InboxSender() = default;

std::uint64_t InboxSender::recv_count_reads() const {
  return s_->machine.count_reads();
}

Result<void> InboxSender::send(std::span<const std::byte> message,
                               std::chrono::milliseconds timeout) {
  return run(message, timeout, false);
}

Result<void> InboxSender::run(std::span<const std::byte> message,
                              std::chrono::milliseconds timeout,
                              bool credit_only) {
  State& s = *s_;
  if (s.setup_error) return *s.setup_error;
  if (message.size() > s.layout.slot_bytes)
    return Error(EMSGSIZE, "inbox: a message of " +
                               std::to_string(message.size()) +
                               " bytes; slots take " +
                               std::to_string(s.layout.slot_bytes));
  const auto deadline = net::deadline_after(timeout);
  auto go = [&]() -> Result<void> {
    detail::Backoff b;
    while (!s.machine.done()) {
      if (!s.machine.step()) {
        s.pending = false;  // the ticket is lost with the error
        return s.machine.op().req.result();
      }
      if (s.machine.done()) break;
      if (net::poll_ms(deadline) == 0) {
        s.pending = true;
        return Error(ETIMEDOUT,
                     "inbox: ticket " + std::to_string(s.machine.ticket()) +
                         " still waits for its slot (kept: the next send "
                         "or acquire finishes it first)");
      }
      b.pause();
    }
    s.pending = false;
    return ok();
  };
  if (s.pending) {
    if (auto r = go(); !r) return r;
    if (credit_only) return ok();  // the credit waited for is this one
  }
  if (credit_only) {
    s.machine.start_credit();
  } else {
    std::memcpy(s.memory.data(), message.data(), message.size());
    s.machine.start(
        std::span<const std::byte>(s.memory.data(), message.size()));
  }
  return go();
}

// ---- message-count limiting ------------------------------------------------

Result<CreditReceiver> CreditReceiver::open(Group& group, std::uint32_t area_id,
                                            InboxLayout layout,
                                            InboxPlacement placement) {
  if (!placement_ok(group, placement))
    return Error(EINVAL, "credits: a counter rank beyond the group");
  CreditReceiver r;
  r.group_ = &group;
  r.layout_ = layout;
  r.area_id_ = area_id;
  r.placement_ = std::move(placement);
  if (r.placement_.ranks.empty()) {
    auto h = InboxCounterHost::open(group, area_id, layout);
    if (!h) return h.error();
    r.local_.emplace(std::move(*h));
  } else if (!inbox::valid(layout)) {
    return Error(EINVAL, "credits: bad layout");
  }
  return r;
}

void CreditReceiver::consumed(std::uint32_t from) {
  const std::uint32_t g = from % layout_.groups;
  if (local_)
    local_->add_recv(g);
  else
    add_remote_recv(*group_, placement_, g);
}

CreditSender::CreditSender(Group& group, std::uint32_t receiver,
                           std::uint32_t area_id, InboxLayout layout,
                           const InboxPlacement& placement)
    : sender_(group, receiver, area_id, layout, placement) {}
CreditSender::CreditSender(CreditSender&&) noexcept = default;
CreditSender& CreditSender::operator=(CreditSender&&) noexcept = default;
CreditSender::~CreditSender() = default;

Result<void> CreditSender::acquire(std::chrono::milliseconds timeout) {
  return sender_.run({}, timeout, true);
}

std::uint64_t CreditSender::recv_count_reads() const {
  return sender_.recv_count_reads();
}

}  // namespace rhinet
