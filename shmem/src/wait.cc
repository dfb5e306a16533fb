// wait_until, test, signal_wait_until, and the set forms
// wait_until_all/any/some, their _vector forms and test_all/any/some
// (Documentation/userlib/shmem.md, "Waiting on memory"). The NIC writes the
// watched words by DMA, so a wait reads them: spinning for about 100 us
// (SHMEM_WAIT_SPIN_US), then sleeping on the NIC's watch of the area that holds
// them (userlib's Group::wait_for_area: the NIC interrupts when a put or an
// atomic lands there), looking again after each wake-up. On a NIC without
// watches it backs off instead: spinning, yielding the CPU, then napping, so
// that a long wait leaves the CPU to PEs that share it; so it does with
// SHMEM_WAIT_SPIN_US=never.
#include <sched.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "shmem_internal.hpp"

using namespace rhinet::shmem::internal;

namespace {

// One round of waiting without a watch: the first rounds spin, the next
// yield, later ones sleep 50 us each.
class Backoff {
 public:
  void pause() {
    rounds_++;
    if (rounds_ < kSpins) return;
    if (rounds_ < kSpins + kYields) {
      sched_yield();
      return;
    }
    const timespec nap{0, 50'000};
    nanosleep(&nap, nullptr);
  }

 private:
  static constexpr unsigned kSpins = 64, kYields = 1000;
  unsigned rounds_ = 0;
};

// Set when a watch was refused (it is not expected: the library registered
// the areas itself); waits then back off, as on a NIC without watches.
bool watch_refused = false;

// Waits until met() (which may end the PE on a bad argument, before it is
// asked again) for words that lie in `where.area`.
void wait_for(const char* routine, const Symmetric& where,
              const std::function<bool()>& met) {
  if (met()) return;
  rhinet::Group& g = group(routine);
  // SHMEM_WAIT_SPIN_US: how long to spin before sleeping, or never sleep
  // (negative): then the waits back off as without watches.
  const std::chrono::microseconds spin = wait_spin();
  if (spin.count() >= 0 && where.area && g.area_watches() && !watch_refused) {
    rhinet::AreaWaitOptions o;
    o.spin = spin;
    const auto waited = g.wait_for_area(where.area->id(), met, o);
    if (waited) return;
    // EBUSY (another thread inside the group: SHMEM_THREAD_SERIALIZED
    // allows none) or a refused watch: look at memory instead.
    if (waited.error().errno_value() != EBUSY) watch_refused = true;
  }
  for (Backoff b; !met(); b.pause()) {
  }
}

// The words to watch: ivars[i] with status[i] == 0 (all when status is
// NULL); each compared to values[i] (vector forms) or to value.
template <typename T>
struct Set {
  const char* routine;
  T* ivars;
  std::size_t n;
  const int* status;
  int cmp;
  const T* values;
  T value;

  bool watched(std::size_t i) const { return !status || !status[i]; }
  bool met(std::size_t i) const {
    return satisfied(routine, &ivars[i], cmp, values ? values[i] : value);
  }
  // Where the words lie (no area for an empty set).
  Symmetric check() const {
    group(routine);
    return n ? symmetric(routine, ivars, n * sizeof(T), "ivars") : Symmetric{};
  }
  bool any_watched() const {
    for (std::size_t i = 0; i < n; i++)
      if (watched(i)) return true;
    return false;
  }
  // 1 when every watched word's comparison holds.
  int test_all() const {
    for (std::size_t i = 0; i < n; i++)
      if (watched(i) && !met(i)) return 0;
    return 1;
  }
  // A watched word whose comparison holds, or SIZE_MAX. `from` rotates the
  // start so that one busy word does not hide the others.
  std::size_t test_any(std::size_t from) const {
    for (std::size_t k = 0; k < n; k++) {
      const std::size_t i = (from + k) % n;
      if (watched(i) && met(i)) return i;
    }
    return SIZE_MAX;
  }
  // Every watched word whose comparison holds, into indices; how many.
  std::size_t test_some(std::size_t* indices) const {
    std::size_t found = 0;
    for (std::size_t i = 0; i < n; i++)
      if (watched(i) && met(i)) indices[found++] = i;
    return found;
  }
};

std::size_t next_start() {
  static std::size_t start = 0;
  return start++;
}

template <typename T>
void wait_all(const Set<T>& s) {
  const Symmetric where = s.check();
  wait_for(s.routine, where, [&] { return s.test_all() != 0; });
}

template <typename T>
std::size_t wait_any(const Set<T>& s) {
  const Symmetric where = s.check();
  if (!s.any_watched()) return SIZE_MAX;
  const std::size_t from = next_start();
  std::size_t found = SIZE_MAX;
  wait_for(s.routine, where, [&] {
    found = s.test_any(from);
    return found != SIZE_MAX;
  });
  return found;
}

template <typename T>
std::size_t wait_some(const Set<T>& s, std::size_t* indices) {
  const Symmetric where = s.check();
  if (!s.any_watched()) return 0;
  if (!indices) die(s.routine, "indices is NULL");
  std::size_t found = 0;
  wait_for(s.routine, where, [&] {
    found = s.test_some(indices);
    return found != 0;
  });
  return found;
}

template <typename T>
int test_all(const Set<T>& s) {
  s.check();
  return s.test_all();
}

template <typename T>
std::size_t test_any(const Set<T>& s) {
  s.check();
  return s.n ? s.test_any(next_start()) : SIZE_MAX;
}

template <typename T>
std::size_t test_some(const Set<T>& s, std::size_t* indices) {
  s.check();
  if (s.n && !indices) die(s.routine, "indices is NULL");
  return s.test_some(indices);
}

// One word: wait_until, test, signal_wait_until.
template <typename T>
int test_one(const char* routine, T* ivar, int cmp, T value) {
  group(routine);
  symmetric(routine, ivar, sizeof(T), "ivar");
  return satisfied(routine, ivar, cmp, value) ? 1 : 0;
}

template <typename T>
T wait_one(const char* routine, T* ivar, int cmp, T value) {
  group(routine);
  const Symmetric where = symmetric(routine, ivar, sizeof(T), "ivar");
  wait_for(routine, where,
           [&] { return satisfied(routine, ivar, cmp, value); });
  return __atomic_load_n(ivar, __ATOMIC_ACQUIRE);
}

}  // namespace

extern "C" {

void shmemx_get_wait_stats(uint64_t* sleeps, uint64_t* wakeups) {
  const rhinet::AreaWaitStats st =
      group("shmemx_get_wait_stats").area_wait_stats();
  if (sleeps) *sleeps = st.sleeps;
  if (wakeups) *wakeups = st.wakeups;
}

void shmemx_get_wait_stats_ext(struct shmemx_wait_stats* stats, size_t size) {
  const rhinet::AreaWaitStats st =
      group("shmemx_get_wait_stats_ext").area_wait_stats();
  if (!stats) return;
  struct shmemx_wait_stats all {};
  all.waits = st.waits;
  all.sleeps = st.sleeps;
  all.wakeups = st.wakeups;
  all.timeouts = st.timeouts;
  all.arms = st.arms;
  all.fired = st.fired;
  all.rechecks = st.rechecks;
  // A caller built with an older shmemx.h passes a smaller struct: its
  // fields, and none beyond it.
  std::memcpy(stats, &all, size < sizeof(all) ? size : sizeof(all));
}

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  group("shmem_signal_fetch");
  symmetric("shmem_signal_fetch", sig_addr, 8, "sig_addr");
  return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp,
                                 uint64_t cmp_value) {
  return wait_one("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}

#define RHINET_SHMEM_WAIT(N, T)                                                \
  void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value) {                 \
    (void)wait_one("shmem_" #N "_wait_until", ivar, cmp, cmp_value);           \
  }                                                                            \
  int shmem_##N##_test(T* ivar, int cmp, T cmp_value) {                        \
    return test_one("shmem_" #N "_test", ivar, cmp, cmp_value);                \
  }                                                                            \
  void shmem_##N##_wait_until_all(T* ivars, size_t nelems, const int* status,  \
                                  int cmp, T cmp_value) {                      \
    wait_all(Set<T>{"shmem_" #N "_wait_until_all", ivars, nelems, status, cmp, \
                    nullptr, cmp_value});                                      \
  }                                                                            \
  size_t shmem_##N##_wait_until_any(T* ivars, size_t nelems,                   \
                                    const int* status, int cmp, T cmp_value) { \
    return wait_any(Set<T>{"shmem_" #N "_wait_until_any", ivars, nelems,       \
                           status, cmp, nullptr, cmp_value});                  \
  }                                                                            \
  size_t shmem_##N##_wait_until_some(T* ivars, size_t nelems, size_t* indices, \
                                     const int* status, int cmp,               \
                                     T cmp_value) {                            \
    return wait_some(Set<T>{"shmem_" #N "_wait_until_some", ivars, nelems,     \
                            status, cmp, nullptr, cmp_value},                  \
                     indices);                                                 \
  }                                                                            \
  void shmem_##N##_wait_until_all_vector(                                      \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {    \
    wait_all(Set<T>{"shmem_" #N "_wait_until_all_vector", ivars, nelems,       \
                    status, cmp, cmp_values, static_cast<T>(0)});              \
  }                                                                            \
  size_t shmem_##N##_wait_until_any_vector(                                    \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {    \
    return wait_any(Set<T>{"shmem_" #N "_wait_until_any_vector", ivars,        \
                           nelems, status, cmp, cmp_values,                    \
                           static_cast<T>(0)});                                \
  }                                                                            \
  size_t shmem_##N##_wait_until_some_vector(                                   \
      T* ivars, size_t nelems, size_t* indices, const int* status, int cmp,    \
      T* cmp_values) {                                                         \
    return wait_some(                                                          \
        Set<T>{"shmem_" #N "_wait_until_some_vector", ivars, nelems, status,   \
               cmp, cmp_values, static_cast<T>(0)},                            \
        indices);                                                              \
  }                                                                            \
  int shmem_##N##_test_all(T* ivars, size_t nelems, const int* status,         \
                           int cmp, T cmp_value) {                             \
    return test_all(Set<T>{"shmem_" #N "_test_all", ivars, nelems, status,     \
                           cmp, nullptr, cmp_value});                          \
  }                                                                            \
  size_t shmem_##N##_test_any(T* ivars, size_t nelems, const int* status,      \
                              int cmp, T cmp_value) {                          \
    return test_any(Set<T>{"shmem_" #N "_test_any", ivars, nelems, status,     \
                           cmp, nullptr, cmp_value});                          \
  }                                                                            \
  size_t shmem_##N##_test_some(T* ivars, size_t nelems, size_t* indices,       \
                               const int* status, int cmp, T cmp_value) {      \
    return test_some(Set<T>{"shmem_" #N "_test_some", ivars, nelems, status,   \
                            cmp, nullptr, cmp_value},                          \
                     indices);                                                 \
  }                                                                            \
  int shmem_##N##_test_all_vector(T* ivars, size_t nelems, const int* status,  \
                                  int cmp, T* cmp_values) {                    \
    return test_all(Set<T>{"shmem_" #N "_test_all_vector", ivars, nelems,      \
                           status, cmp, cmp_values, static_cast<T>(0)});       \
  }                                                                            \
  size_t shmem_##N##_test_any_vector(                                          \
      T* ivars, size_t nelems, const int* status, int cmp, T* cmp_values) {    \
    return test_any(Set<T>{"shmem_" #N "_test_any_vector", ivars, nelems,      \
                           status, cmp, cmp_values, static_cast<T>(0)});       \
  }                                                                            \
  size_t shmem_##N##_test_some_vector(T* ivars, size_t nelems,                 \
                                      size_t* indices, const int* status,      \
                                      int cmp, T* cmp_values) {                \
    return test_some(Set<T>{"shmem_" #N "_test_some_vector", ivars, nelems,    \
                            status, cmp, cmp_values, static_cast<T>(0)},       \
                     indices);                                                 \
  }
SHMEMI_WAIT_TYPES(RHINET_SHMEM_WAIT)

}  // extern "C"
