// SPDX-License-Identifier: BSD-2-Clause
// rhinet::Trigger: a trigger counter on the NIC (Documentation/hardware/
// triggered.md). PUSHes and PULLs posted with XferOptions::trigger wait in
// the NIC until a counter reaches their threshold, and chained ones add 1
// to a counter when they complete: work released by an event (a CPU's or
// a device's add, another operation's completion) with no CPU on the path.
//
//   auto t = group.trigger();                     // value 0
//   auto r = group.push(peer, 7, 0, src, {.trigger = {.counter = &*t,
//                                                     .threshold = 3}});
//   t->add(2); t->add(1);                         // now the PUSH goes
//   r.wait();
#ifndef RHINET_TRIGGER_HPP
#define RHINET_TRIGGER_HPP

#include <cstdint>
#include <memory>

#include "rhinet/result.hpp"

struct rhinetdv_trigger;

namespace rhinet {

namespace detail {
struct Device;
}

// A counter as its owner names it to peers: what a rank sends to the ranks
// it lets add to the counter (Group::trigger_add). Plain bytes, so it may
// travel in any message; it names the counter only for adds that reach the
// owner's process, and only while the counter lives.
struct RemoteTrigger {
  std::uint32_t handle = 0;
  std::uint32_t key = 0;
};

// A counter of this process, destroyed with the object: operations still
// waiting on it then complete with ECANCELED (Syndrome::trigger_gone). It
// keeps the device open, so it may outlive its Group.
class Trigger {
 public:
  Trigger(Trigger&&) noexcept;
  Trigger& operator=(Trigger&&) noexcept;
  Trigger(const Trigger&) = delete;
  Trigger& operator=(const Trigger&) = delete;
  ~Trigger();

  // Adds `n` (one 8-byte store to the process's doorbell page; no system
  // call). Operations whose threshold the value reaches start. Errors:
  // EINVAL (a moved-from Trigger).
  Result<void> add(std::uint32_t n = 1);
  // The value now (the NIC is asked: a system call). Errors: EINVAL (a
  // moved-from Trigger), errno of rhinetdv_trigger_read.
  Result<std::uint64_t> read() const;
  // The NIC's handle (valid in this process only), and the key a peer's
  // increment will have to carry (chosen by the driver).
  std::uint32_t handle() const;
  std::uint32_t key() const;
  // Handle and key together, to hand to peers ({0, 0} when moved-from).
  RemoteTrigger remote() const { return {handle(), key()}; }
  rhinetdv_trigger* get() const { return t_; }

 private:
  friend class Group;
  Trigger(std::shared_ptr<detail::Device> dev, rhinetdv_trigger* t);
  void reset();
  std::shared_ptr<detail::Device> dev_;
  rhinetdv_trigger* t_ = nullptr;
};

// XferOptions::trigger: with a counter, the operation waits in the NIC
// until its value >= threshold (at once if it is already); with a chain,
// its successful completion adds 1 to that counter. Both: one link of a
// chain. Neither: an ordinary operation.
struct TriggerOn {
  const Trigger* counter = nullptr;
  std::uint64_t threshold = 0;
  const Trigger* chain = nullptr;
};

}  // namespace rhinet

#endif  // RHINET_TRIGGER_HPP
