// SPDX-License-Identifier: BSD-2-Clause
#include "device.hpp"

#include <sched.h>
#include <time.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "net.hpp"

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
            RHINETDV_SYN_BAD_GROUP,
    "rhinet::Syndrome mirrors RHINETDV_SYN_*");
static_assert(
    static_cast<std::uint32_t>(Mode::basic) == RHINETDV_MODE_BASIC &&
        static_cast<std::uint32_t>(Mode::twin) == RHINETDV_MODE_TWIN &&
        static_cast<std::uint32_t>(Mode::diff) == RHINETDV_MODE_DIFF &&
        static_cast<std::uint32_t>(Mode::bitmap) == RHINETDV_MODE_BITMAP &&
        static_cast<std::uint32_t>(Mode::stride) == RHINETDV_MODE_STRIDE,
    "rhinet::Mode mirrors RHINETDV_MODE_*");

void Backoff::pause() {
  if (n_ < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  } else if (n_ < 2048) {
    sched_yield();
  } else {
    const timespec ts{0, 50 * 1000};
    nanosleep(&ts, nullptr);
  }
  if (n_ < 4096) n_++;
}

Device::~Device() {
  // Operations still in flight are abandoned with the endpoint.
  if (ep) rhinetdv_destroy_endpoint(ep);
  if (words_mr) ibv_dereg_mr(words_mr);
  std::free(words);
  if (pd) ibv_dealloc_pd(pd);
  if (ctx) ibv_close_device(ctx);
}

Result<void> Device::make_pool(std::uint32_t n) {
  const std::size_t bytes = (std::size_t{n} * 8 + 4095) / 4096 * 4096;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return Error(ENOMEM, "status words: no memory");
  std::memset(p, 0, bytes);
  words = static_cast<std::uint64_t*>(p);
  words_mr = ibv_reg_mr(pd, words, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!words_mr) return Error(errno, "status words: ibv_reg_mr");
  slots.assign(n, Slot{});
  free_slots.reserve(n);
  for (std::uint32_t i = n; i-- > 0;) free_slots.push_back(i);
  return ok();
}

Result<std::uint32_t> Device::acquire(std::chrono::milliseconds timeout) {
  if (free_slots.empty()) reap_all();
  if (free_slots.empty()) {
    const auto deadline = net::deadline_after(timeout);
    Backoff b;
    while (free_slots.empty()) {
      if (net::poll_ms(deadline) == 0)
        return Error(ETIMEDOUT, std::to_string(slots.size()) +
                                    " operations in flight and none "
                                    "completed within " +
                                    net::format_duration(timeout));
      b.pause();
      reap_all();
    }
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
  free_slots.push_back(s);
}

bool Device::reap(std::uint32_t s) {
  Slot& slot = slots[s];
  if (!slot.busy) return true;
  rhinetdv_status st;
  if (!rhinetdv_status_word_poll(&words[s], &st)) return false;
  std::optional<Error> err;
  if (st.status != IBV_WC_SUCCESS) {
    err = Error::completion(
        st.status, ibv_wc_status_str(static_cast<ibv_wc_status>(st.status)),
        st.syndrome, describe(slot));
    drain_cq();
  }
  if (slot.owner)
    slot.owner->complete(err ? 0 : st.length, std::move(err));
  else if (err && !detached_error)
    detached_error = std::move(err);
  release(s);
  return true;
}

void Device::reap_all() {
  for (std::uint32_t s = 0; s < slots.size(); s++)
    if (slots[s].busy) reap(s);
}

void Device::drain_cq() {
  rhinetdv_completion c[16];
  for (int i = 0; i < 64; i++)
    if (rhinetdv_poll(ep, 16, c) < 16) break;
}

std::string Device::describe(const Slot& s) const {
  std::string d = std::string(op_name(s.op)) +
                  (s.op == Op::push ? " to rank " : " from rank ") +
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
  return d;
}

Result<void> Device::add_region(const void* p, std::size_t len,
                                std::uint32_t lkey, bool writable) {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t end = start + len;
  auto it = regions.lower_bound(end);  // first starting at or after end
  if (it != regions.begin()) {
    --it;
    if (it->second.end > start)
      return Error(EEXIST,
                   "memory overlaps a Buffer or Area registered "
                   "already");
  }
  regions.emplace(start, Region{end, lkey, writable});
  return ok();
}

void Device::remove_region(const void* p) {
  regions.erase(reinterpret_cast<std::uintptr_t>(p));
}

const Device::Region* Device::find_region(const void* p,
                                          std::size_t len) const {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  auto it = regions.upper_bound(start);
  if (it == regions.begin()) return nullptr;
  --it;
  if (start < it->first || start + len > it->second.end) return nullptr;
  return &it->second;
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
