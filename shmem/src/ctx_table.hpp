// The handles of a PE's contexts (shmem_ctx_create, shmem_team_create_ctx):
// a table of fixed size, so the number of live contexts is bounded and a
// full table is an error return, not an allocation. A handle carries its
// slot and the slot's generation, so a handle kept after
// shmem_ctx_destroy is told apart from a live one (and from a value that
// was never a handle) even when its slot has been reused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace rhinet::shmem {

class ContextTable {
 public:
  static constexpr std::size_t kCapacity = 32;
  // Handle values below this are SHMEM_CTX_INVALID (0) and
  // SHMEM_CTX_DEFAULT (1), never made here.
  static constexpr std::uintptr_t kFirstHandle = 2;

  enum class Found { live, destroyed, unknown };
  struct Lookup {
    Found found = Found::unknown;
    std::size_t slot = 0;
  };

  // A new handle in a free slot, or nothing when all kCapacity are live.
  std::optional<std::uintptr_t> create();
  // The slot of a live handle; `destroyed` for one whose context was
  // destroyed; `unknown` for a value that no create() returned.
  Lookup find(std::uintptr_t handle) const;
  // False when the handle is not live (nothing changes then).
  bool destroy(std::uintptr_t handle);
  std::size_t live() const;

 private:
  // generation_[s]: how many times slot s was handed out (the handle of
  // its current or last context carries this number).
  std::array<std::uint32_t, kCapacity> generation_{};
  std::array<bool, kCapacity> live_{};
};

}  // namespace rhinet::shmem
