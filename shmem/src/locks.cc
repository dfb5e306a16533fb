// shmem_set_lock, shmem_test_lock, shmem_clear_lock on the NIC's locks
// (Documentation/userlib/shmem.md, "Locks"). The lock variable, a
// symmetric long, names the NIC lock by its area and offset; its manager PE
// (offset / 8 modulo the PEs) keeps the lock in its NIC. The variable at
// the manager counts the PEs holding or wanting the lock, which is what
// shmem_test_lock needs: a NIC LOCK cannot be withdrawn once posted.
#include <cstdint>

#include "shmem_internal.hpp"

using namespace rhinet::shmem::internal;

namespace {

// A lock's ID: its area's ID, "LO", its offset (the heap's locks keep the
// IDs they had before the program's data became symmetric).
constexpr std::uint64_t kLockIdTag = 0x4c4f'0000'0000ull;

struct Lock {
  std::uint64_t id;
  std::uint32_t manager;
  Symmetric word;
};

Lock lock_of(const char* routine, const long* lock) {
  auto& g = group(routine);
  const Symmetric word = symmetric(routine, lock, sizeof *lock, "lock");
  if (word.offset % 8)
    die(routine, "lock %p is not 8-byte aligned",
        static_cast<const void*>(lock));
  return {(std::uint64_t{word.area->id()} << 48 | kLockIdTag) + word.offset,
          static_cast<std::uint32_t>((word.offset / 8) % g.size()), word};
}

std::uint64_t count_add(const char* routine, const Lock& l, std::uint64_t add) {
  auto r = group(routine).fetch_add(l.manager, l.word.area->id(), l.word.offset,
                                    add);
  complete(routine, r.wait());
  return r.value();
}

void take(const char* routine, const Lock& l) {
  complete(routine, group(routine).lock(l.id, l.manager));
}

}  // namespace

extern "C" {

void shmem_set_lock(long* lock) {
  const char* routine = "shmem_set_lock";
  const Lock l = lock_of(routine, lock);
  count_add(routine, l, 1);
  take(routine, l);
}

// 0 and the lock held when nobody held or wanted it; 1 otherwise.
int shmem_test_lock(long* lock) {
  const char* routine = "shmem_test_lock";
  const Lock l = lock_of(routine, lock);
  auto r = group(routine).compare_swap(l.manager, l.word.area->id(),
                                       l.word.offset, 0, 1);
  complete(routine, r.wait());
  if (r.value() != 0) return 1;
  // Nobody holds or waits (a clear decrements after its unlock), so the
  // NIC grants it at once.
  take(routine, l);
  return 0;
}

void shmem_clear_lock(long* lock) {
  const char* routine = "shmem_clear_lock";
  const Lock l = lock_of(routine, lock);
  // The critical section's puts land before the next holder starts.
  quiet_all(routine);
  complete(routine, group(routine).unlock(l.id, l.manager));
  count_add(routine, l, static_cast<std::uint64_t>(-1));
}

}  // extern "C"
