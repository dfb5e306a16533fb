// librhinet_shmem: OpenSHMEM 1.5 over userlib (Documentation/userlib/shmem.md).
//
// One process is one PE: a rank of the userlib Group that oshrun (rhinet-run)
// starts. The symmetric heap is one mmap'd region registered as area
// kHeapArea of the group on every PE; an address in it is named remotely by
// its offset, which is the same on every PE because the allocator is
// deterministic and its routines collective. Local memory outside the heap
// reaches the NIC through inline data (small puts) or a registered bounce
// buffer.
#include <sched.h>
#include <shmem.h>
#include <shmemx.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <string>
#include <type_traits>

#include "heap.hpp"
#include "shmem_internal.hpp"

// The state and the error paths every routine shares (amo.cc's too:
// shmem_internal.hpp).
namespace rhinet::shmem::internal {

using rhinet::shmem::HeapAllocator;

// The communicator's ID and the NIC barrier's ID (and the heap's area,
// shmem_internal.hpp): fixed so that every PE names the same ones without
// agreeing first.
constexpr std::uint16_t kWorldComm = 0x5348;
constexpr std::uint64_t kBarrierId = 0x5348'4d45'4d00'0001ull;
constexpr std::size_t kDefaultHeap = std::size_t{64} << 20;
constexpr std::size_t kBounceBytes = std::size_t{1} << 20;

struct State {
  std::unique_ptr<rhinet::Group> group;
  std::optional<rhinet::Area> heap_area;
  std::optional<rhinet::Buffer> bounce_buffer;
  std::optional<rhinet::Communicator> world;
  std::optional<HeapAllocator> heap;
  std::byte* heap_base = nullptr;
  std::size_t heap_size = 0;
  std::byte* bounce = nullptr;
  int thread_level = SHMEM_THREAD_SINGLE;
  bool initialized = false;
  bool finalized = false;
};

State& state() {
  static State s;
  return s;
}

// One line "shmem: PE 3: routine: why" (no PE before the job is joined),
// written with one write so that other PEs' output sharing the terminal
// does not split it.
void vreport(const char* routine, const char* fmt, va_list ap) {
  char line[1024];
  int at =
      state().group
          ? std::snprintf(line, sizeof line,
                          "shmem: PE %u: %s: ", state().group->rank(), routine)
          : std::snprintf(line, sizeof line, "shmem: %s: ", routine);
  at = std::clamp(at, 0, static_cast<int>(sizeof line) - 2);
  const int n = std::vsnprintf(line + at, sizeof line - at - 1, fmt, ap);
  at = std::clamp(at + std::max(n, 0), 0, static_cast<int>(sizeof line) - 2);
  line[at++] = '\n';
  std::fflush(stderr);
  (void)!write(STDERR_FILENO, line, static_cast<std::size_t>(at));
}

[[noreturn]] void die(const char* routine, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(routine, fmt, ap);
  va_end(ap);
  std::fflush(nullptr);
  _exit(1);
}

int refuse(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// For routines that return an error: a message naming the routine.
int refuse(const char* routine, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(routine, fmt, ap);
  va_end(ap);
  return -1;
}

rhinet::Group& group(const char* routine) {
  State& s = state();
  if (!s.initialized)
    die(routine, "the library is not initialized (call shmem_init first)");
  return *s.group;
}

void check_pe(const char* routine, int pe) {
  const auto n = group(routine).size();
  if (pe < 0 || static_cast<std::uint32_t>(pe) >= n)
    die(routine, "PE %d is not a PE of this program (0 to %u)", pe, n - 1);
}

bool in_heap(const void* p, std::size_t bytes) {
  const State& s = state();
  const auto* b = static_cast<const std::byte*>(p);
  return s.heap_base && b >= s.heap_base &&
         static_cast<std::size_t>(b - s.heap_base) <= s.heap_size &&
         bytes <= s.heap_size - static_cast<std::size_t>(b - s.heap_base);
}

// The heap offset of a symmetric object of `bytes` bytes, or the end.
std::size_t symmetric_offset(const char* routine, const void* p,
                             std::size_t bytes, const char* what) {
  if (!in_heap(p, bytes))
    die(routine,
        "%s %p (%zu bytes) is not symmetric: it is not inside the symmetric "
        "heap (shmem_malloc); global and static variables are not symmetric "
        "in this implementation",
        what, p, bytes);
  return static_cast<std::size_t>(static_cast<const std::byte*>(p) -
                                  state().heap_base);
}

void complete(const char* routine, rhinet::Request& r) {
  auto done = r.wait();
  if (!done) die(routine, "%s", done.error().to_string().c_str());
}

void complete(const char* routine, const rhinet::Result<void>& r) {
  if (!r) die(routine, "%s", r.error().to_string().c_str());
}

}  // namespace rhinet::shmem::internal

using namespace rhinet::shmem::internal;

namespace {

// ---- RMA -----------------------------------------------------------------

// A put (PUSH from source to the target's dest) or a get (PULL from the
// target's source into dest) of `bytes` contiguous bytes.
void rma_bytes(const char* routine, bool put, void* dest, const void* source,
               std::size_t bytes, int pe, bool nbi) {
  auto& g = group(routine);
  check_pe(routine, pe);
  if (!bytes) return;
  const void* remote = put ? dest : source;
  auto* local = static_cast<std::byte*>(put ? const_cast<void*>(source) : dest);
  const std::size_t offset =
      symmetric_offset(routine, remote, bytes, put ? "dest" : "source");
  const auto rank = static_cast<std::uint32_t>(pe);
  auto post = [&](std::uint64_t at, std::span<std::byte> span,
                  const rhinet::XferOptions& opts) {
    return put ? g.push(rank, kHeapArea, at, span, opts)
               : g.pull(rank, kHeapArea, at, span, opts);
  };
  if (put && bytes <= g.max_inline()) {
    // Copied into the work request: source is free at once, so even the
    // blocking put need not wait for the NIC.
    post(offset, {local, bytes}, {.inline_data = true}).detach();
    return;
  }
  if (in_heap(local, bytes)) {
    auto r = post(offset, {local, bytes}, {});
    if (nbi)
      r.detach();
    else
      complete(routine, r);
    return;
  }
  // Unregistered local memory: through the bounce buffer, chunk by chunk,
  // each completed before the buffer is used again.
  State& s = state();
  for (std::size_t done = 0; done < bytes; done += kBounceBytes) {
    const std::size_t n = std::min(kBounceBytes, bytes - done);
    if (put) std::memcpy(s.bounce, local + done, n);
    auto r = post(offset + done, {s.bounce, n}, {});
    complete(routine, r);
    if (!put) std::memcpy(local + done, s.bounce, n);
  }
}

void put_bytes(const char* routine, void* dest, const void* source,
               std::size_t bytes, int pe, bool nbi) {
  rma_bytes(routine, true, dest, source, bytes, pe, nbi);
}

void get_bytes(const char* routine, void* dest, const void* source,
               std::size_t bytes, int pe, bool nbi) {
  rma_bytes(routine, false, dest, source, bytes, pe, nbi);
}

// Strided put/get on the NIC's stride mode: nelems blocks of `elem` bytes,
// `tst`/`sst` elements apart at the target/source. The local side is the
// heap itself when the object lies there, else a packed copy in the bounce
// buffer.
void strided(const char* routine, bool put, void* dest, const void* source,
             std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems,
             std::size_t elem, int pe) {
  auto& g = group(routine);
  check_pe(routine, pe);
  if (!nelems) return;
  if (dst < 1 || sst < 1)
    die(routine, "strides must be at least 1 element (dst %td, sst %td)", dst,
        sst);
  const std::ptrdiff_t remote_st = put ? dst : sst;
  const std::ptrdiff_t local_st = put ? sst : dst;
  void* remote_obj = put ? dest : const_cast<void*>(source);
  auto* local = static_cast<std::byte*>(put ? const_cast<void*>(source) : dest);
  const std::size_t remote_extent =
      (nelems - 1) * static_cast<std::size_t>(remote_st) * elem + elem;
  const std::size_t local_extent =
      (nelems - 1) * static_cast<std::size_t>(local_st) * elem + elem;
  const std::size_t offset = symmetric_offset(
      routine, remote_obj, remote_extent, put ? "dest" : "source");
  const auto rank = static_cast<std::uint32_t>(pe);
  auto xfer = [&](std::span<std::byte> span, std::uint64_t local_stride,
                  std::uint64_t at, std::size_t count) {
    const rhinet::Stride st{
        .block = static_cast<std::uint32_t>(elem),
        .count = static_cast<std::uint32_t>(count),
        .local_stride = local_stride,
        .remote_stride = static_cast<std::uint64_t>(remote_st) * elem};
    auto opts = rhinet::XferOptions::strided(st);
    auto r = put ? g.push(rank, kHeapArea, at, span, opts)
                 : g.pull(rank, kHeapArea, at, span, opts);
    complete(routine, r);
  };
  if (in_heap(local, local_extent)) {
    xfer({local, local_extent}, static_cast<std::uint64_t>(local_st) * elem,
         offset, nelems);
    return;
  }
  State& s = state();
  const std::size_t per_chunk = kBounceBytes / elem;
  for (std::size_t first = 0; first < nelems; first += per_chunk) {
    const std::size_t count = std::min(per_chunk, nelems - first);
    std::byte* at_local =
        local + first * static_cast<std::size_t>(local_st) * elem;
    if (put)
      for (std::size_t i = 0; i < count; i++)
        std::memcpy(s.bounce + i * elem,
                    at_local + i * static_cast<std::size_t>(local_st) * elem,
                    elem);
    xfer({s.bounce, count * elem}, elem,
         offset + first * static_cast<std::size_t>(remote_st) * elem, count);
    if (!put)
      for (std::size_t i = 0; i < count; i++)
        std::memcpy(at_local + i * static_cast<std::size_t>(local_st) * elem,
                    s.bounce + i * elem, elem);
  }
}

// ---- point-to-point synchronization ---------------------------------------

template <typename T>
bool compare(const char* routine, T value, int cmp, T against) {
  switch (cmp) {
    case SHMEM_CMP_EQ:
      return value == against;
    case SHMEM_CMP_NE:
      return value != against;
    case SHMEM_CMP_GT:
      return value > against;
    case SHMEM_CMP_GE:
      return value >= against;
    case SHMEM_CMP_LT:
      return value < against;
    case SHMEM_CMP_LE:
      return value <= against;
    default:
      die(routine, "cmp %d is not one of SHMEM_CMP_EQ .. SHMEM_CMP_LE", cmp);
  }
}

template <typename T>
T load(const T* ivar) {
  return __atomic_load_n(ivar, __ATOMIC_ACQUIRE);
}

template <typename T>
int test_ivar(const char* routine, T* ivar, int cmp, T value) {
  group(routine);
  if (!in_heap(ivar, sizeof(T)))
    die(routine, "ivar %p is not in the symmetric heap",
        static_cast<void*>(ivar));
  return compare(routine, load(ivar), cmp, value) ? 1 : 0;
}

// The NIC writes the word by DMA; the CPU watches it. Spins a little, then
// yields the CPU (two PEs may share one).
template <typename T>
T wait_ivar(const char* routine, T* ivar, int cmp, T value) {
  for (unsigned spins = 0;; spins++) {
    if (test_ivar(routine, ivar, cmp, value)) return load(ivar);
    if (spins > 64) sched_yield();
  }
}

// ---- put with signal -------------------------------------------------------
// The NIC's put-with-signal adds to a per-area count, not to a word the
// program names, and has no SET; so the data goes first and, once it has
// landed (its completion), the signal word is updated by a NIC atomic (an
// add, or a set: amo.cc).

void put_signal(const char* routine, void* dest, const void* source,
                std::size_t bytes, std::uint64_t* sig_addr,
                std::uint64_t signal, int sig_op, int pe) {
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
    die(routine, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD",
        sig_op);
  amo_offset(routine, sig_addr, sizeof *sig_addr, pe);
  put_bytes(routine, dest, source, bytes, pe, false);
  complete(routine, group(routine).sync());
  signal_update(routine, sig_addr, signal, sig_op == SHMEM_SIGNAL_ADD, pe);
}

// ---- collectives -----------------------------------------------------------

rhinet::Communicator& world_of(const char* routine) {
  State& s = state();
  group(routine);
  if (!s.world)
    die(routine, "the NIC has no collectives (RHINETDV_CAP_COLLECTIVE)");
  return *s.world;
}

template <typename T>
constexpr bool nic_reducible =
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

// The fixed-width type the NIC reduces for T (long long and long are both
// 64-bit, char and short have none).
template <typename T>
auto nic_type() {
  if constexpr (std::is_floating_point_v<T>)
    return T{};
  else if constexpr (sizeof(T) == 4 && std::is_signed_v<T>)
    return std::int32_t{};
  else if constexpr (sizeof(T) == 4)
    return std::uint32_t{};
  else if constexpr (sizeof(T) == 8 && std::is_signed_v<T>)
    return std::int64_t{};
  else if constexpr (sizeof(T) == 8)
    return std::uint64_t{};
  else
    return T{};
}

template <typename T>
int reduce(const char* routine, [[maybe_unused]] shmem_team_t team,
           [[maybe_unused]] T* dest, [[maybe_unused]] const T* source,
           [[maybe_unused]] std::size_t n, [[maybe_unused]] rhinet::Reduce op,
           bool prod) {
  using N = decltype(nic_type<T>());
  if (prod)
    return refuse(routine,
                  "the NIC has no product reduction (sum, min, max, "
                  "and, or, xor only)");
  if constexpr (!nic_reducible<N>) {
    return refuse(routine,
                  "the NIC reduces 32- and 64-bit integers, float and double "
                  "only; not this type");
  } else {
    const auto view = rhinet::shmem::internal::team_view(routine, team);
    if (!view.comm) {
      if (n && dest != source) std::memmove(dest, source, n * sizeof(T));
      return 0;
    }
    if (!n) return 0;
    symmetric_offset(routine, dest, n * sizeof(T), "dest");
    symmetric_offset(routine, source, n * sizeof(T), "source");
    auto r = view.comm->allreduce<N>({reinterpret_cast<const N*>(source), n},
                                     {reinterpret_cast<N*>(dest), n}, op);
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
    return 0;
  }
}

std::string heap_size_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%zu MiB)", bytes, bytes >> 20);
  return text;
}

void init(const char* routine) {
  State& s = state();
  if (s.initialized) return;  // a second shmem_init is a no-op
  if (s.finalized)
    die(routine, "the library was finalized; it cannot be initialized again");
  std::size_t heap_bytes = kDefaultHeap;
  if (const char* env = std::getenv("SHMEM_SYMMETRIC_SIZE")) {
    auto parsed = rhinet::shmem::parse_size(env);
    if (!parsed.error.empty())
      die(routine, "SHMEM_SYMMETRIC_SIZE: %s", parsed.error.c_str());
    heap_bytes = parsed.bytes;
  }
  heap_bytes = (heap_bytes + 4095) & ~std::size_t{4095};
  auto joined = rhinet::Group::join_from_env();
  if (!joined)
    die(routine, "cannot join the job (is it started by oshrun?): %s",
        joined.error().to_string().c_str());
  s.group = std::move(*joined);
  void* mem = mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    die(routine, "cannot map a symmetric heap of %s: %s",
        heap_size_text(heap_bytes).c_str(), std::strerror(errno));
  s.heap_base = static_cast<std::byte*>(mem);
  s.heap_size = heap_bytes;
  auto area =
      s.group->area(kHeapArea, {s.heap_base, heap_bytes}, rhinet::Access::all);
  if (!area)
    die(routine,
        "cannot register the symmetric heap of %s (SHMEM_SYMMETRIC_SIZE) "
        "with the NIC: %s",
        heap_size_text(heap_bytes).c_str(), area.error().to_string().c_str());
  s.heap_area.emplace(std::move(*area));
  s.heap.emplace(heap_bytes);
  void* bounce = mmap(nullptr, kBounceBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (bounce == MAP_FAILED)
    die(routine, "cannot map the bounce buffer: %s", std::strerror(errno));
  s.bounce = static_cast<std::byte*>(bounce);
  auto buf = s.group->buffer({s.bounce, kBounceBytes});
  if (!buf)
    die(routine, "cannot register the bounce buffer: %s",
        buf.error().to_string().c_str());
  s.bounce_buffer.emplace(std::move(*buf));
  if (rhinet::Communicator::collectives(*s.group)) {
    auto comm = rhinet::Communicator::create(*s.group, {.id = kWorldComm});
    if (!comm)
      die(routine, "cannot create the NIC communicator of all PEs: %s",
          comm.error().to_string().c_str());
    s.world.emplace(std::move(*comm));
  }
  s.initialized = true;
  // Every PE's heap is registered before any PE's first access to it.
  complete(routine, s.group->barrier({.id = kBarrierId}));
}

// Collective heap routines: every PE arrives, so that no PE reuses a block
// another still uses, or reaches a block another has not allocated yet.
void barrier_of_heap(const char* routine) {
  auto& g = group(routine);
  complete(routine, g.sync());
  complete(routine, g.barrier({.id = kBarrierId}));
}

void* heap_alloc(const char* routine, std::size_t bytes, std::size_t align,
                 bool zero = false) {
  State& s = state();
  group(routine);
  if (!bytes) return nullptr;
  auto offset = s.heap->allocate(bytes, align);
  if (!offset) {
    if (align & (align - 1))
      die(routine, "alignment %zu is not a power of two", align);
    (void)refuse(routine,
                 "no room for %zu bytes in the symmetric heap of %s (%zu in "
                 "use; set SHMEM_SYMMETRIC_SIZE)",
                 bytes, heap_size_text(s.heap_size).c_str(),
                 s.heap->bytes_in_use());
    heap_barrier(routine);
    return nullptr;
  }
  // Before the barrier: after it, other PEs may already write into the block.
  if (zero) std::memset(s.heap_base + *offset, 0, bytes);
  heap_barrier(routine);
  return s.heap_base + *offset;
}

std::size_t heap_block(const char* routine, void* ptr) {
  State& s = state();
  if (!in_heap(ptr, 0) || !s.heap->block_size(static_cast<std::size_t>(
                              static_cast<std::byte*>(ptr) - s.heap_base)))
    die(routine, "%p is not a block of the symmetric heap", ptr);
  return static_cast<std::size_t>(static_cast<std::byte*>(ptr) - s.heap_base);
}

}  // namespace

extern "C" {

// ---- setup
// -------------------------------------------------------------------

void shmem_init(void) { init("shmem_init"); }

int shmem_init_thread(int requested, int* provided) {
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
    return refuse("shmem_init_thread", "requested is no SHMEM_THREAD_ level");
  init("shmem_init_thread");
  // userlib's Group is used by one thread at a time: serialized calls are
  // fine, concurrent ones are not.
  state().thread_level = std::min(requested, SHMEM_THREAD_SERIALIZED);
  if (provided) *provided = state().thread_level;
  return 0;
}

void shmem_query_thread(int* provided) {
  group("shmem_query_thread");
  if (provided) *provided = state().thread_level;
}

void shmem_finalize(void) {
  State& s = state();
  if (!s.initialized) return;
  heap_barrier("shmem_finalize");
  s.world.reset();
  s.bounce_buffer.reset();
  s.heap_area.reset();
  s.group.reset();
  munmap(s.bounce, kBounceBytes);
  munmap(s.heap_base, s.heap_size);
  s.heap.reset();
  s.heap_base = s.bounce = nullptr;
  s.heap_size = 0;
  s.initialized = false;
  s.finalized = true;
}

// oshrun (rhinet-run) stops every other PE when one exits nonzero.
void shmem_global_exit(int status) {
  std::fflush(nullptr);
  _exit(status);
}

int shmem_my_pe(void) { return static_cast<int>(group("shmem_my_pe").rank()); }

int shmem_n_pes(void) { return static_cast<int>(group("shmem_n_pes").size()); }

int shmem_pe_accessible(int pe) {
  const auto n = group("shmem_pe_accessible").size();
  return pe >= 0 && static_cast<std::uint32_t>(pe) < n;
}

int shmem_addr_accessible(const void* addr, int pe) {
  return shmem_pe_accessible(pe) && in_heap(addr, 1);
}

void* shmem_ptr(const void* dest, int pe) {
  auto& g = group("shmem_ptr");
  if (pe < 0 || static_cast<std::uint32_t>(pe) != g.rank() || !in_heap(dest, 1))
    return nullptr;
  return const_cast<void*>(dest);
}

void shmem_info_get_version(int* major, int* minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char* name) {
  if (name) std::snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

// ---- teams and contexts
// ------------------------------------------------------

int shmem_ctx_create(long, shmem_ctx_t* ctx) {
  if (ctx) *ctx = SHMEM_CTX_INVALID;
  return refuse("shmem_ctx_create",
                "not implemented: only SHMEM_CTX_DEFAULT (no contexts yet)");
}

int shmem_team_create_ctx(shmem_team_t, long, shmem_ctx_t* ctx) {
  if (ctx) *ctx = SHMEM_CTX_INVALID;
  return refuse("shmem_team_create_ctx",
                "not implemented: only SHMEM_CTX_DEFAULT (no contexts yet)");
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  if (ctx != SHMEM_CTX_INVALID)
    die("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
}

// ---- symmetric heap
// ----------------------------------------------------------

void* shmem_malloc(size_t size) {
  return heap_alloc("shmem_malloc", size, HeapAllocator::kMinAlign);
}

void* shmem_malloc_with_hints(size_t size, long) {
  return heap_alloc("shmem_malloc_with_hints", size, HeapAllocator::kMinAlign);
}

void* shmem_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size)
    die("shmem_calloc", "%zu x %zu bytes overflows", count, size);
  // Fresh heap blocks may hold a freed block's bytes.
  return heap_alloc("shmem_calloc", count * size, HeapAllocator::kMinAlign,
                    true);
}

void* shmem_align(size_t alignment, size_t size) {
  if (!alignment || (alignment & (alignment - 1)))
    die("shmem_align", "alignment %zu is not a power of two", alignment);
  return heap_alloc("shmem_align", size, alignment);
}

void shmem_free(void* ptr) {
  State& s = state();
  group("shmem_free");
  if (!ptr) return;
  const std::size_t offset = heap_block("shmem_free", ptr);
  heap_barrier("shmem_free");
  s.heap->release(offset);
}

void* shmem_realloc(void* ptr, size_t size) {
  State& s = state();
  group("shmem_realloc");
  if (!ptr) return shmem_malloc(size);
  if (!size) {
    shmem_free(ptr);
    return nullptr;
  }
  const std::size_t offset = heap_block("shmem_realloc", ptr);
  heap_barrier("shmem_realloc");
  if (s.heap->resize_in_place(offset, size)) {
    heap_barrier("shmem_realloc");
    return ptr;
  }
  const std::size_t old = *s.heap->block_size(offset);
  auto moved = s.heap->allocate(size);
  if (!moved) {
    heap_barrier("shmem_realloc");
    (void)refuse("shmem_realloc",
                 "no room for %zu bytes in the symmetric heap of %s", size,
                 heap_size_text(s.heap_size).c_str());
    return nullptr;
  }
  std::memcpy(s.heap_base + *moved, ptr, std::min(old, size));
  s.heap->release(offset);
  heap_barrier("shmem_realloc");
  return s.heap_base + *moved;
}

size_t shmemx_heap_size(void) {
  group("shmemx_heap_size");
  return state().heap_size;
}

size_t shmemx_heap_in_use(void) {
  group("shmemx_heap_in_use");
  return state().heap->bytes_in_use();
}

void* shmemx_rhinet_group(void) { return &group("shmemx_rhinet_group"); }

void* shmemx_heap_base(void) {
  group("shmemx_heap_base");
  return state().heap_base;
}

// ---- RMA
// -----------------------------------------------------------------------

#define RHINET_SHMEM_RMA(N, T)                                                 \
  void shmem_##N##_put(T* dest, const T* source, size_t nelems, int pe) {      \
    put_bytes("shmem_" #N "_put", dest, source, nelems * sizeof(T), pe,        \
              false);                                                          \
  }                                                                            \
  void shmem_##N##_get(T* dest, const T* source, size_t nelems, int pe) {      \
    get_bytes("shmem_" #N "_get", dest, source, nelems * sizeof(T), pe,        \
              false);                                                          \
  }                                                                            \
  void shmem_##N##_put_nbi(T* dest, const T* source, size_t nelems, int pe) {  \
    put_bytes("shmem_" #N "_put_nbi", dest, source, nelems * sizeof(T), pe,    \
              true);                                                           \
  }                                                                            \
  void shmem_##N##_get_nbi(T* dest, const T* source, size_t nelems, int pe) {  \
    get_bytes("shmem_" #N "_get_nbi", dest, source, nelems * sizeof(T), pe,    \
              true);                                                           \
  }                                                                            \
  void shmem_##N##_p(T* dest, T value, int pe) {                               \
    put_bytes("shmem_" #N "_p", dest, &value, sizeof(T), pe, false);           \
  }                                                                            \
  T shmem_##N##_g(const T* source, int pe) {                                   \
    T value;                                                                   \
    get_bytes("shmem_" #N "_g", &value, source, sizeof(T), pe, false);         \
    return value;                                                              \
  }                                                                            \
  void shmem_##N##_iput(T* dest, const T* source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    strided("shmem_" #N "_iput", true, dest, source, dst, sst, nelems,         \
            sizeof(T), pe);                                                    \
  }                                                                            \
  void shmem_##N##_iget(T* dest, const T* source, ptrdiff_t dst,               \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    strided("shmem_" #N "_iget", false, dest, source, dst, sst, nelems,        \
            sizeof(T), pe);                                                    \
  }                                                                            \
  void shmem_##N##_put_signal(T* dest, const T* source, size_t nelems,         \
                              uint64_t* sig_addr, uint64_t signal, int sig_op, \
                              int pe) {                                        \
    put_signal("shmem_" #N "_put_signal", dest, source, nelems * sizeof(T),    \
               sig_addr, signal, sig_op, pe);                                  \
  }                                                                            \
  void shmem_##N##_put_signal_nbi(T* dest, const T* source, size_t nelems,     \
                                  uint64_t* sig_addr, uint64_t signal,         \
                                  int sig_op, int pe) {                        \
    put_signal("shmem_" #N "_put_signal_nbi", dest, source,                    \
               nelems * sizeof(T), sig_addr, signal, sig_op, pe);              \
  }                                                                            \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source,       \
                            size_t nelems, int PE_root) {                      \
    return shmem_broadcastmem(team, dest, source, nelems * sizeof(T),          \
                              PE_root);                                        \
  }
SHMEMI_RMA_TYPES(RHINET_SHMEM_RMA)

#define RHINET_SHMEM_SIZED(BITS, BYTES)                                        \
  void shmem_put##BITS(void* dest, const void* source, size_t nelems,          \
                       int pe) {                                               \
    put_bytes("shmem_put" #BITS, dest, source, nelems* BYTES, pe, false);      \
  }                                                                            \
  void shmem_get##BITS(void* dest, const void* source, size_t nelems,          \
                       int pe) {                                               \
    get_bytes("shmem_get" #BITS, dest, source, nelems* BYTES, pe, false);      \
  }                                                                            \
  void shmem_put##BITS##_nbi(void* dest, const void* source, size_t nelems,    \
                             int pe) {                                         \
    put_bytes("shmem_put" #BITS "_nbi", dest, source, nelems* BYTES, pe,       \
              true);                                                           \
  }                                                                            \
  void shmem_get##BITS##_nbi(void* dest, const void* source, size_t nelems,    \
                             int pe) {                                         \
    get_bytes("shmem_get" #BITS "_nbi", dest, source, nelems* BYTES, pe,       \
              true);                                                           \
  }                                                                            \
  void shmem_iput##BITS(void* dest, const void* source, ptrdiff_t dst,         \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    strided("shmem_iput" #BITS, true, dest, source, dst, sst, nelems, BYTES,   \
            pe);                                                               \
  }                                                                            \
  void shmem_iget##BITS(void* dest, const void* source, ptrdiff_t dst,         \
                        ptrdiff_t sst, size_t nelems, int pe) {                \
    strided("shmem_iget" #BITS, false, dest, source, dst, sst, nelems, BYTES,  \
            pe);                                                               \
  }                                                                            \
  void shmem_put##BITS##_signal(void* dest, const void* source, size_t nelems, \
                                uint64_t* sig_addr, uint64_t signal,           \
                                int sig_op, int pe) {                          \
    put_signal("shmem_put" #BITS "_signal", dest, source, nelems* BYTES,       \
               sig_addr, signal, sig_op, pe);                                  \
  }                                                                            \
  void shmem_put##BITS##_signal_nbi(void* dest, const void* source,            \
                                    size_t nelems, uint64_t* sig_addr,         \
                                    uint64_t signal, int sig_op, int pe) {     \
    put_signal("shmem_put" #BITS "_signal_nbi", dest, source, nelems* BYTES,   \
               sig_addr, signal, sig_op, pe);                                  \
  }
SHMEMI_RMA_SIZES(RHINET_SHMEM_SIZED)

void shmem_putmem(void* dest, const void* source, size_t nelems, int pe) {
  put_bytes("shmem_putmem", dest, source, nelems, pe, false);
}

void shmem_getmem(void* dest, const void* source, size_t nelems, int pe) {
  get_bytes("shmem_getmem", dest, source, nelems, pe, false);
}

void shmem_putmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  put_bytes("shmem_putmem_nbi", dest, source, nelems, pe, true);
}

void shmem_getmem_nbi(void* dest, const void* source, size_t nelems, int pe) {
  get_bytes("shmem_getmem_nbi", dest, source, nelems, pe, true);
}

void shmem_putmem_signal(void* dest, const void* source, size_t nelems,
                         uint64_t* sig_addr, uint64_t signal, int sig_op,
                         int pe) {
  put_signal("shmem_putmem_signal", dest, source, nelems, sig_addr, signal,
             sig_op, pe);
}

void shmem_putmem_signal_nbi(void* dest, const void* source, size_t nelems,
                             uint64_t* sig_addr, uint64_t signal, int sig_op,
                             int pe) {
  put_signal("shmem_putmem_signal_nbi", dest, source, nelems, sig_addr, signal,
             sig_op, pe);
}

uint64_t shmem_signal_fetch(const uint64_t* sig_addr) {
  group("shmem_signal_fetch");
  symmetric_offset("shmem_signal_fetch", sig_addr, 8, "sig_addr");
  return load(sig_addr);
}

uint64_t shmem_signal_wait_until(uint64_t* sig_addr, int cmp,
                                 uint64_t cmp_value) {
  return wait_ivar("shmem_signal_wait_until", sig_addr, cmp, cmp_value);
}

// ---- ordering
// ------------------------------------------------------------------

// Every put, get and AMO of this PE has completed at its target. shmem_fence
// is the same (see shmem.md: the contract does not yet promise that two
// WRITEs to one target land in posting order).
void shmem_quiet(void) { complete("shmem_quiet", group("shmem_quiet").sync()); }

void shmem_fence(void) { complete("shmem_fence", group("shmem_fence").sync()); }

// ---- point-to-point synchronization on the AMO types (the AMOs: amo.cc)

#define RHINET_SHMEM_WAIT(N, T)                                       \
  void shmem_##N##_wait_until(T* ivar, int cmp, T cmp_value) {        \
    (void)wait_ivar("shmem_" #N "_wait_until", ivar, cmp, cmp_value); \
  }                                                                   \
  int shmem_##N##_test(T* ivar, int cmp, T cmp_value) {               \
    return test_ivar("shmem_" #N "_test", ivar, cmp, cmp_value);      \
  }
SHMEMI_AMO_TYPES(RHINET_SHMEM_WAIT)

// ---- collectives
// -------------------------------------------------------------------

void shmem_barrier_all(void) { heap_barrier("shmem_barrier_all"); }

void shmem_sync_all(void) {
  auto& g = group("shmem_sync_all");
  complete("shmem_sync_all", g.barrier({.id = kBarrierId}));
}

// Root's source into every member's dest, root's included. The NIC
// broadcasts 4-byte elements; a tail of 1 to 3 bytes goes by put from the
// root.
int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source,
                       size_t nelems, int PE_root) {
  const char* routine = "shmem_broadcastmem";
  const auto view = rhinet::shmem::internal::team_view(routine, team);
  const int n = static_cast<int>(view.pes.size());
  if (PE_root < 0 || PE_root >= n)
    return refuse(routine, "PE_root %d is not a PE of the team (0 to %d)",
                  PE_root, n - 1);
  if (!view.comm || !nelems) {
    if (nelems && dest != source) std::memmove(dest, source, nelems);
    return 0;
  }
  symmetric_offset(routine, dest, nelems, "dest");
  symmetric_offset(routine, source, nelems, "source");
  const bool root = view.me == PE_root;
  if (root && dest != source) std::memmove(dest, source, nelems);
  const std::size_t words = nelems / 4, tail = nelems % 4;
  if (words) {
    auto r = view.comm->bcast<std::uint32_t>(
        {static_cast<std::uint32_t*>(dest), words},
        static_cast<std::uint32_t>(PE_root));
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
  }
  if (tail) {
    auto* end = static_cast<std::byte*>(dest) + words * 4;
    if (root)
      for (int i = 0; i < n; i++)
        if (i != PE_root) put_bytes(routine, end, end, tail, view.pes[i], true);
    rhinet::shmem::internal::team_barrier(routine, view);
  }
  return 0;
}

#define RHINET_SHMEM_REDUCE(N, T, OP, NIC_OP, PROD)                           \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source,  \
                                size_t nreduce) {                             \
    return reduce("shmem_" #N "_" #OP "_reduce", team, dest, source, nreduce, \
                  rhinet::Reduce::NIC_OP, PROD);                              \
  }
#define RHINET_SHMEM_REDUCE_AND(N, T) \
  RHINET_SHMEM_REDUCE(N, T, and, band, false)
#define RHINET_SHMEM_REDUCE_OR(N, T) RHINET_SHMEM_REDUCE(N, T, or, bor, false)
#define RHINET_SHMEM_REDUCE_XOR(N, T) \
  RHINET_SHMEM_REDUCE(N, T, xor, bxor, false)
#define RHINET_SHMEM_REDUCE_MIN(N, T) RHINET_SHMEM_REDUCE(N, T, min, min, false)
#define RHINET_SHMEM_REDUCE_MAX(N, T) RHINET_SHMEM_REDUCE(N, T, max, max, false)
#define RHINET_SHMEM_REDUCE_SUM(N, T) RHINET_SHMEM_REDUCE(N, T, sum, sum, false)
#define RHINET_SHMEM_REDUCE_PROD(N, T) \
  RHINET_SHMEM_REDUCE(N, T, prod, sum, true)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_AND)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_OR)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_XOR)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_MIN)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_MAX)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_SUM)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_PROD)

}  // extern "C"

// ---- for the library's other files (shmem_internal.hpp) --------------------

namespace rhinet::shmem::internal {

const Area& heap_area() { return *state().heap_area; }

std::span<std::byte> scratch() { return {state().bounce, kBounceBytes}; }

Communicator& world(const char* routine) { return world_of(routine); }

void heap_barrier(const char* routine) { barrier_of_heap(routine); }

}  // namespace rhinet::shmem::internal
