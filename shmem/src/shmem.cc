// librhinet_shmem: OpenSHMEM 1.5 over userlib (Documentation/userlib/shmem.md).
//
// One process is one PE: a rank of the userlib Group that oshrun (rhinet-run)
// starts. The symmetric heap is one mmap'd region registered as area
// kHeapArea of the group on every PE; an address in it is named remotely by
// its offset, which is the same on every PE because the allocator is
// deterministic and its routines collective. The program's writable data
// (globals and statics) is area kDataArea: every PE runs the same
// executable, so a variable's offset from that segment's start is the same
// everywhere. Other local memory reaches the NIC through inline data (small
// puts) or a registered bounce buffer.
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <shmem.h>
#include <shmemx.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
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

#include "compare.hpp"
#include "ctx_table.hpp"
#include "endpoint_pool.hpp"
#include "heap.hpp"
#include "reduce.hpp"
#include "shmem_internal.hpp"
#include "wait_spin.hpp"

// The state and the error paths every routine shares (amo.cc's too:
// shmem_internal.hpp).
namespace rhinet::shmem::internal {

using rhinet::shmem::ContextTable;
using rhinet::shmem::EndpointPool;
using rhinet::shmem::HeapAllocator;

// The communicator's ID and the NIC barrier's ID (and the heap's area,
// shmem_internal.hpp): fixed so that every PE names the same ones without
// agreeing first.
constexpr std::uint16_t kWorldComm = 0x5348;
constexpr std::uint64_t kBarrierId = 0x5348'4d45'4d00'0001ull;
constexpr std::size_t kDefaultHeap = std::size_t{64} << 20;
constexpr std::size_t kBounceBytes = std::size_t{1} << 20;
// The library's area: a page for the counter, then the gather scratch.
constexpr std::size_t kLibraryScratchOffset = 4096;
constexpr std::size_t kLibraryBytes = kLibraryScratchOffset + (256 << 10);

struct State {
  std::unique_ptr<rhinet::Group> group;
  std::optional<rhinet::Area> heap_area;
  std::optional<rhinet::Area> data_area;
  std::optional<rhinet::Buffer> bounce_buffer;
  std::optional<rhinet::Area> library_area;
  std::optional<rhinet::Communicator> world;
  std::optional<HeapAllocator> heap;
  std::byte* heap_base = nullptr;
  std::size_t heap_size = 0;
  std::byte* data_base = nullptr;
  std::size_t data_size = 0;
  std::byte* bounce = nullptr;
  std::byte* library = nullptr;
  Context default_ctx;
  // The contexts' endpoints (up to SHMEM_CONTEXT_ENDPOINTS of them, made
  // as contexts first need them), each with the heap, the program's data
  // and the bounce buffer registered as its local side, and which are
  // free.
  struct ContextEndpoint {
    std::unique_ptr<rhinet::Group> group;
    std::vector<rhinet::Buffer> memory;
  };
  std::vector<ContextEndpoint> endpoints;  // made so far, in pool order
  EndpointPool endpoint_pool;
  bool endpoints_failed = false;  // one could not be made: none are tried
  ContextTable ctx_table;
  std::array<Context, ContextTable::kCapacity> contexts;
  int thread_level = SHMEM_THREAD_SINGLE;
  // SHMEM_WAIT_SPIN_US: the waits' spin before they sleep (negative:
  // they never sleep).
  std::chrono::microseconds wait_spin = rhinet::shmem::kDefaultWaitSpin;
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

namespace {

bool inside(const std::byte* base, std::size_t size, const void* p,
            std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  return base && b >= base && static_cast<std::size_t>(b - base) <= size &&
         bytes <= size - static_cast<std::size_t>(b - base);
}

// The area of the library holding all `bytes` bytes at `p`, if one does.
std::optional<Symmetric> find_symmetric(const void* p, std::size_t bytes) {
  const State& s = state();
  const auto* b = static_cast<const std::byte*>(p);
  if (inside(s.heap_base, s.heap_size, p, bytes))
    return Symmetric{&*s.heap_area, static_cast<std::size_t>(b - s.heap_base)};
  if (s.data_area && inside(s.data_base, s.data_size, p, bytes))
    return Symmetric{&*s.data_area, static_cast<std::size_t>(b - s.data_base)};
  return std::nullopt;
}

bool in_heap(const void* p, std::size_t bytes) {
  const State& s = state();
  return inside(s.heap_base, s.heap_size, p, bytes);
}

}  // namespace

bool registered(const void* p, std::size_t bytes) {
  return find_symmetric(p, bytes).has_value();
}

Symmetric symmetric(const char* routine, const void* p, std::size_t bytes,
                    const char* what) {
  const auto found = find_symmetric(p, bytes);
  if (!found)
    die(routine,
        "%s %p (%zu bytes) is not symmetric: it is neither inside the "
        "symmetric heap (shmem_malloc) nor inside the program's global and "
        "static data (a local variable, or memory of malloc or of a shared "
        "library, is not symmetric)",
        what, p, bytes);
  return *found;
}

void complete(const char* routine, rhinet::Request& r) {
  auto done = r.wait();
  if (!done) die(routine, "%s", done.error().to_string().c_str());
}

void complete(const char* routine, const rhinet::Result<void>& r) {
  if (!r) die(routine, "%s", r.error().to_string().c_str());
}

Context& context(const char* routine, shmem_ctx_t ctx) {
  State& s = state();
  group(routine);
  if (ctx == SHMEM_CTX_DEFAULT) return s.default_ctx;
  const auto found = s.ctx_table.find(reinterpret_cast<std::uintptr_t>(ctx));
  switch (found.found) {
    case ContextTable::Found::live:
      break;
    case ContextTable::Found::destroyed:
      die(routine, "context %p was destroyed (shmem_ctx_destroy)",
          static_cast<void*>(ctx));
    case ContextTable::Found::unknown:
      die(routine,
          "%p is not a context (SHMEM_CTX_INVALID, or never created by "
          "shmem_ctx_create or shmem_team_create_ctx)",
          static_cast<void*>(ctx));
  }
  Context& c = s.contexts[found.slot];
  if ((c.options & SHMEM_CTX_PRIVATE) &&
      c.owner != static_cast<unsigned long>(pthread_self()))
    die(routine,
        "context %p is SHMEM_CTX_PRIVATE to the thread that created it",
        static_cast<void*>(ctx));
  return c;
}

rhinet::Group& nic_of(const char* routine, Context& c) {
  return c.nic ? *c.nic : group(routine);
}

int world_pe(const char* routine, const Context& c, int pe) {
  if (c.team == SHMEM_TEAM_WORLD) {
    check_pe(routine, pe);
    return pe;
  }
  const auto view = team_view(routine, c.team, false);
  const int n = static_cast<int>(view.pes.size());
  if (pe < 0 || pe >= n)
    die(routine, "PE %d is not a PE of the context's team (0 to %d)", pe,
        n - 1);
  return view.pes[static_cast<std::size_t>(pe)];
}

void track(Context& c, rhinet::Request&& r) {
  // A context that is never quieted must not grow without bound: now and
  // then drop what has completed well (a failure stays for the quiet).
  constexpr std::size_t kPrune = 256;
  if (c.pending.size() >= kPrune && c.pending.size() % kPrune == 0)
    std::erase_if(c.pending, [](Context::Pending& p) {
      return p.request.test() && p.request.result();
    });
  c.pending.push_back({std::move(r)});
}

void quiet(const char* routine, Context& c) {
  for (auto& p : c.pending) complete(routine, p.request);
  c.pending.clear();
}

void quiet_all(const char* routine) {
  State& s = state();
  auto& g = group(routine);
  quiet(routine, s.default_ctx);
  for (std::size_t i = 0; i < s.contexts.size(); i++)
    if (!s.contexts[i].pending.empty()) quiet(routine, s.contexts[i]);
  complete(routine, g.sync());
  for (auto& e : s.endpoints) complete(routine, e.group->sync());
}

}  // namespace rhinet::shmem::internal

using namespace rhinet::shmem::internal;

namespace {

// ---- RMA -----------------------------------------------------------------

// A put (PUSH from source to the target's dest) or a get (PULL from the
// target's source into dest) of `bytes` contiguous bytes.
void rma_bytes(const char* routine, shmem_ctx_t ctx, bool put, void* dest,
               const void* source, std::size_t bytes, int team_pe, bool nbi) {
  Context& c = context(routine, ctx);
  auto& g = nic_of(routine, c);
  const int pe = world_pe(routine, c, team_pe);
  if (!bytes) return;
  const void* remote = put ? dest : source;
  auto* local = static_cast<std::byte*>(put ? const_cast<void*>(source) : dest);
  const Symmetric target =
      symmetric(routine, remote, bytes, put ? "dest" : "source");
  const std::size_t offset = target.offset;
  const auto rank = static_cast<std::uint32_t>(pe);
  auto post = [&](std::uint64_t at, std::span<std::byte> span,
                  const rhinet::XferOptions& opts) {
    return put ? g.push(rank, target.area->id(), at, span, opts)
               : g.pull(rank, target.area->id(), at, span, opts);
  };
  if (put && bytes <= g.max_inline()) {
    // Copied into the work request: source is free at once, so even the
    // blocking put need not wait for the NIC.
    track(c, post(offset, {local, bytes}, {.inline_data = true}));
    return;
  }
  if (registered(local, bytes)) {
    auto r = post(offset, {local, bytes}, {});
    if (nbi)
      track(c, std::move(r));
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

void put_bytes(const char* routine, shmem_ctx_t ctx, void* dest,
               const void* source, std::size_t bytes, int pe, bool nbi) {
  rma_bytes(routine, ctx, true, dest, source, bytes, pe, nbi);
}

void get_bytes(const char* routine, shmem_ctx_t ctx, void* dest,
               const void* source, std::size_t bytes, int pe, bool nbi) {
  rma_bytes(routine, ctx, false, dest, source, bytes, pe, nbi);
}

// Strided put/get on the NIC's stride mode: nelems blocks of `elem` bytes,
// `tst`/`sst` elements apart at the target/source. The local side is the
// heap itself when the object lies there, else a packed copy in the bounce
// buffer.
void strided(const char* routine, shmem_ctx_t ctx, bool put, void* dest,
             const void* source, std::ptrdiff_t dst, std::ptrdiff_t sst,
             std::size_t nelems, std::size_t elem, int team_pe) {
  Context& c = context(routine, ctx);
  auto& g = nic_of(routine, c);
  const int pe = world_pe(routine, c, team_pe);
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
  const Symmetric target =
      symmetric(routine, remote_obj, remote_extent, put ? "dest" : "source");
  const std::size_t offset = target.offset;
  const auto rank = static_cast<std::uint32_t>(pe);
  auto xfer = [&](std::span<std::byte> span, std::uint64_t local_stride,
                  std::uint64_t at, std::size_t count) {
    const rhinet::Stride st{
        .block = static_cast<std::uint32_t>(elem),
        .count = static_cast<std::uint32_t>(count),
        .local_stride = local_stride,
        .remote_stride = static_cast<std::uint64_t>(remote_st) * elem};
    auto opts = rhinet::XferOptions::strided(st);
    auto r = put ? g.push(rank, target.area->id(), at, span, opts)
                 : g.pull(rank, target.area->id(), at, span, opts);
    complete(routine, r);
  };
  if (registered(local, local_extent)) {
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

// ---- put with signal -------------------------------------------------------
// The NIC's put-with-signal adds to a per-area count, not to a word the
// program names, and has no SET; so the data goes first and then the
// signal word is updated by a NIC atomic (an add, or a set: amo.cc) on the
// same endpoint, which the target applies after the data (queues.md,
// "Ordering"): nothing is waited for in between.

void put_signal(const char* routine, shmem_ctx_t ctx, void* dest,
                const void* source, std::size_t bytes, std::uint64_t* sig_addr,
                std::uint64_t signal, int sig_op, int team_pe) {
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
    die(routine, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD",
        sig_op);
  Context& c = context(routine, ctx);
  const int pe = world_pe(routine, c, team_pe);
  amo_word(routine, sig_addr, sizeof *sig_addr, pe);
  put_bytes(routine, ctx, dest, source, bytes, team_pe, false);
  signal_update(routine, c, sig_addr, signal, sig_op == SHMEM_SIGNAL_ADD, pe);
}

// ---- collectives -----------------------------------------------------------

rhinet::Communicator& world_of(const char* routine) {
  State& s = state();
  group(routine);
  if (!s.world)
    die(routine, "the NIC has no collectives (RHINETDV_CAP_COLLECTIVE)");
  return *s.world;
}

std::string heap_size_text(std::size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%zu MiB)", bytes, bytes >> 20);
  return text;
}

// The main program's writable data: its PT_LOAD segment with PF_W (.data,
// .bss), less the RELRO part at its start (read-only once relocated, so it
// cannot take remote writes), widened to whole pages for the registration.
// The main program is dl_iterate_phdr's first object.
struct DataSegment {
  std::byte* base = nullptr;
  std::size_t size = 0;
};

int main_program_data(dl_phdr_info* info, std::size_t, void* out) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  std::uintptr_t start = 0, end = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t at = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && !end && ph.p_memsz) {
      start = at;
      end = at + ph.p_memsz;
    }
    if (ph.p_type == PT_GNU_RELRO) relro_end = at + ph.p_memsz;
  }
  // The loader makes read-only only the RELRO pages it covers entirely.
  start = std::max(start & ~(page - 1), relro_end & ~(page - 1));
  end = (end + page - 1) & ~(page - 1);
  if (end > start)
    *static_cast<DataSegment*>(out) = {reinterpret_cast<std::byte*>(start),
                                       end - start};
  return 1;
}

// SHMEM_DEBUG set to anything but 0: one line per PE of what init set up.
void debug_note(const char* routine, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
void debug_note(const char* routine, const char* fmt, ...) {
  const char* env = std::getenv("SHMEM_DEBUG");
  if (!env || !*env || !std::strcmp(env, "0")) return;
  va_list ap;
  va_start(ap, fmt);
  vreport(routine, fmt, ap);
  va_end(ap);
}

// Makes the program's globals and statics symmetric: the whole segment is
// registered (the library cannot tell which variables the program uses
// remotely), so its pages stay pinned while the library is initialized.
void register_program_data(const char* routine) {
  State& s = state();
  DataSegment seg;
  dl_iterate_phdr(main_program_data, &seg);
  if (!seg.size) return;  // no writable data: nothing can name it
  auto area =
      s.group->area(kDataArea, {seg.base, seg.size}, rhinet::Access::all);
  if (!area)
    die(routine,
        "cannot register the program's global and static data (%zu bytes "
        "at %p) with the NIC: %s",
        seg.size, static_cast<void*>(seg.base),
        area.error().to_string().c_str());
  s.data_area.emplace(std::move(*area));
  s.data_base = seg.base;
  s.data_size = seg.size;
}

// The pool of endpoints for created contexts: at init only its size
// (SHMEM_CONTEXT_ENDPOINTS); each endpoint is made when a context first
// needs it, so a program without contexts holds no more device contexts
// or pinned memory than one endpoint's. Nothing is exchanged: an added
// endpoint reaches a peer's heap through the endpoint that peer joined
// with (the NIC finds an area through the target endpoint's process).
void size_context_endpoints(const char* routine) {
  State& s = state();
  std::size_t count = EndpointPool::kDefaultEndpoints;
  if (const char* env = std::getenv("SHMEM_CONTEXT_ENDPOINTS")) {
    auto parsed = rhinet::shmem::parse_endpoint_count(env);
    if (!parsed.error.empty())
      die(routine, "SHMEM_CONTEXT_ENDPOINTS: %s", parsed.error.c_str());
    count = parsed.count;
  }
  s.endpoint_pool = EndpointPool(count);
  s.endpoints.clear();
  s.endpoints_failed = false;
}

// The next endpoint of the pool, made now. An added endpoint is another
// device context, so the memory a put or get reads or writes locally is
// registered on it again. False (said once on stderr) when the NIC or the
// kernel refuses: the context then shares the default endpoint, which
// the specification allows, and no later context tries again.
bool make_context_endpoint(const char* routine) {
  State& s = state();
  const auto refused = [&](const rhinet::Error& e) {
    refuse(routine,
           "cannot make NIC endpoint %zu of the %zu for contexts "
           "(SHMEM_CONTEXT_ENDPOINTS): %s; contexts without one share the "
           "default endpoint",
           s.endpoints.size() + 1, s.endpoint_pool.size(),
           e.to_string().c_str());
    s.endpoints_failed = true;
    return false;
  };
  auto e = s.group->add_endpoint();
  if (!e) return refused(e.error());
  State::ContextEndpoint ep{std::move(*e), {}};
  const std::span<std::byte> local[] = {{s.heap_base, s.heap_size},
                                        {s.data_base, s.data_size},
                                        {s.bounce, kBounceBytes}};
  for (const auto& m : local) {
    if (m.empty()) continue;  // no program data
    auto b = ep.group->buffer(m);
    if (!b) return refused(b.error());
    ep.memory.push_back(std::move(*b));
  }
  s.endpoints.push_back(std::move(ep));
  debug_note(routine, "NIC endpoint %zu for contexts made", s.endpoints.size());
  return true;
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
  s.wait_spin = rhinet::shmem::kDefaultWaitSpin;
  if (const char* env = std::getenv("SHMEM_WAIT_SPIN_US")) {
    auto parsed = rhinet::shmem::parse_wait_spin(env);
    if (!parsed.error.empty())
      die(routine, "SHMEM_WAIT_SPIN_US: %s", parsed.error.c_str());
    s.wait_spin = parsed.spin;
  }
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
  register_program_data(routine);
  debug_note(routine,
             "symmetric heap %s at %p (area 0x%x); program data %zu bytes at "
             "%p (area 0x%x, registered whole)",
             heap_size_text(heap_bytes).c_str(),
             static_cast<void*>(s.heap_base), kHeapArea, s.data_size,
             static_cast<void*>(s.data_base), kDataArea);
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
  size_context_endpoints(routine);
  void* library = mmap(nullptr, kLibraryBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (library == MAP_FAILED)
    die(routine, "cannot map the library's area: %s", std::strerror(errno));
  s.library = static_cast<std::byte*>(library);
  auto lib_area = s.group->area(kLibraryArea, {s.library, kLibraryBytes},
                                rhinet::Access::all);
  if (!lib_area)
    die(routine, "cannot register the library's area (%zu bytes): %s",
        kLibraryBytes, lib_area.error().to_string().c_str());
  s.library_area.emplace(std::move(*lib_area));
  if (rhinet::Communicator::collectives(*s.group)) {
    auto comm = rhinet::Communicator::create(*s.group, {.id = kWorldComm});
    if (!comm)
      die(routine, "cannot create the NIC communicator of all PEs: %s",
          comm.error().to_string().c_str());
    s.world.emplace(std::move(*comm));
  }
  s.initialized = true;
  // Every PE's heap and data are registered before any PE's first access.
  complete(routine, s.group->barrier({.id = kBarrierId}));
}

// Collective heap routines: every PE arrives, so that no PE reuses a block
// another still uses, or reaches a block another has not allocated yet.
void barrier_of_heap(const char* routine) {
  auto& g = group(routine);
  quiet_all(routine);
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
  s.default_ctx = Context{};
  for (auto& c : s.contexts) c = Context{};
  s.ctx_table = ContextTable{};
  s.endpoints.clear();
  s.endpoint_pool = EndpointPool{};
  forget_active_sets();
  s.world.reset();
  s.bounce_buffer.reset();
  s.library_area.reset();
  s.heap_area.reset();
  s.data_area.reset();
  s.group.reset();
  munmap(s.bounce, kBounceBytes);
  munmap(s.library, kLibraryBytes);
  s.library = nullptr;
  munmap(s.heap_base, s.heap_size);
  s.heap.reset();
  s.heap_base = s.bounce = nullptr;
  s.heap_size = 0;
  s.data_base = nullptr;
  s.data_size = 0;
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
  return shmem_pe_accessible(pe) && registered(addr, 1);
}

void* shmem_ptr(const void* dest, int pe) {
  auto& g = group("shmem_ptr");
  if (pe < 0 || static_cast<std::uint32_t>(pe) != g.rank() ||
      !registered(dest, 1))
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

namespace {

int create_ctx(const char* routine, shmem_team_t team, long options,
               shmem_ctx_t* ctx) {
  State& s = state();
  group(routine);
  if (!ctx) return refuse(routine, "ctx is NULL");
  *ctx = SHMEM_CTX_INVALID;
  constexpr long kKnown =
      SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
  if (options & ~kKnown)
    return refuse(routine,
                  "options 0x%lx has bits that are none of "
                  "SHMEM_CTX_SERIALIZED, _PRIVATE, _NOSTORE",
                  options);
  if (team != SHMEM_TEAM_WORLD) team_view(routine, team, false);
  // A full table is not an error in the specification: the program may
  // go on with SHMEM_CTX_DEFAULT, so no message.
  const auto handle = s.ctx_table.create();
  if (!handle) return 1;
  Context& c = s.contexts[s.ctx_table.find(*handle).slot];
  c = Context{};
  c.team = team;
  // A free endpoint of the pool; none free: the group's, shared with
  // SHMEM_CTX_DEFAULT (shmemx_ctx_endpoint says which).
  // The pool hands out its lowest free index, so one not made yet is the
  // next to make.
  if (auto e = s.endpoint_pool.take()) {
    if (*e >= s.endpoints.size() &&
        (s.endpoints_failed || !make_context_endpoint(routine))) {
      s.endpoint_pool.give(*e);
      e.reset();
    }
    if (e) {
      c.nic = s.endpoints[*e].group.get();
      c.endpoint = static_cast<int>(*e);
    }
  }
  c.options = options;
  c.owner = static_cast<unsigned long>(pthread_self());
  *ctx = reinterpret_cast<shmem_ctx_t>(*handle);
  return 0;
}

}  // namespace

int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  return create_ctx("shmem_ctx_create", SHMEM_TEAM_WORLD, options, ctx);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t* ctx) {
  if (team == SHMEM_TEAM_INVALID) {
    if (ctx) *ctx = SHMEM_CTX_INVALID;
    return refuse("shmem_team_create_ctx", "team is SHMEM_TEAM_INVALID");
  }
  return create_ctx("shmem_team_create_ctx", team, options, ctx);
}

// Completes the context's operations (the specification's implicit quiet),
// then frees its slot; its handle stays recognisably stale.
void shmem_ctx_destroy(shmem_ctx_t ctx) {
  const char* routine = "shmem_ctx_destroy";
  if (ctx == SHMEM_CTX_INVALID) return;  // no operation, as specified
  if (ctx == SHMEM_CTX_DEFAULT)
    die(routine, "SHMEM_CTX_DEFAULT cannot be destroyed");
  Context& c = context(routine, ctx);
  quiet(routine, c);
  // Quieted, so nothing of it is left on the endpoint for the next owner.
  if (c.endpoint >= 0)
    state().endpoint_pool.give(static_cast<std::size_t>(c.endpoint));
  c.nic = nullptr;
  c.endpoint = -1;
  state().ctx_table.destroy(reinterpret_cast<std::uintptr_t>(ctx));
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team) {
  const char* routine = "shmem_ctx_get_team";
  if (!team) return refuse(routine, "team is NULL");
  *team = SHMEM_TEAM_INVALID;
  if (ctx == SHMEM_CTX_INVALID)
    return refuse(routine, "ctx is SHMEM_CTX_INVALID");
  *team = context(routine, ctx).team;
  return 0;
}

void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  const char* routine = "shmem_team_ptr";
  const auto view = team_view(routine, team, false);
  if (pe < 0 || static_cast<std::size_t>(pe) >= view.pes.size()) return nullptr;
  return shmem_ptr(dest, view.pes[static_cast<std::size_t>(pe)]);
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

size_t shmemx_ctx_pending(shmem_ctx_t ctx) {
  return context("shmemx_ctx_pending", ctx).pending.size();
}

size_t shmemx_ctx_in_flight(shmem_ctx_t ctx) {
  std::size_t n = 0;
  for (auto& p : context("shmemx_ctx_in_flight", ctx).pending)
    n += !p.request.test();
  return n;
}

int shmemx_ctx_endpoint(shmem_ctx_t ctx) {
  return context("shmemx_ctx_endpoint", ctx).endpoint;
}

int shmemx_pe_node(int pe) {
  if (!shmem_pe_accessible(pe)) return -1;
  return static_cast<int>(
      group("shmemx_pe_node").peer(static_cast<std::uint32_t>(pe)).node_id);
}

int shmemx_context_endpoints(void) {
  group("shmemx_context_endpoints");
  return static_cast<int>(state().endpoint_pool.size());
}

void* shmemx_heap_base(void) {
  group("shmemx_heap_base");
  return state().heap_base;
}

// ---- RMA
// -----------------------------------------------------------------------

// Each routine in its plain form and its context form (RHINET_NAME and
// the rest: shmem_internal.hpp).
#define RHINET_SHMEM_RMA_FORM(N, T, F)                                         \
  void RHINET_NAME(F, N##_put)(RHINET_CTX_PARAM(F) T * dest, const T* source,  \
                               size_t nelems, int pe) {                        \
    put_bytes(RHINET_NAME_STR(F, N, "_put"), RHINET_CTX_ARG(F), dest, source,  \
              nelems * sizeof(T), pe, false);                                  \
  }                                                                            \
  void RHINET_NAME(F, N##_get)(RHINET_CTX_PARAM(F) T * dest, const T* source,  \
                               size_t nelems, int pe) {                        \
    get_bytes(RHINET_NAME_STR(F, N, "_get"), RHINET_CTX_ARG(F), dest, source,  \
              nelems * sizeof(T), pe, false);                                  \
  }                                                                            \
  void RHINET_NAME(F, N##_put_nbi)(RHINET_CTX_PARAM(F) T * dest,               \
                                   const T* source, size_t nelems, int pe) {   \
    put_bytes(RHINET_NAME_STR(F, N, "_put_nbi"), RHINET_CTX_ARG(F), dest,      \
              source, nelems * sizeof(T), pe, true);                           \
  }                                                                            \
  void RHINET_NAME(F, N##_get_nbi)(RHINET_CTX_PARAM(F) T * dest,               \
                                   const T* source, size_t nelems, int pe) {   \
    get_bytes(RHINET_NAME_STR(F, N, "_get_nbi"), RHINET_CTX_ARG(F), dest,      \
              source, nelems * sizeof(T), pe, true);                           \
  }                                                                            \
  void RHINET_NAME(F, N##_p)(RHINET_CTX_PARAM(F) T * dest, T value, int pe) {  \
    put_bytes(RHINET_NAME_STR(F, N, "_p"), RHINET_CTX_ARG(F), dest, &value,    \
              sizeof(T), pe, false);                                           \
  }                                                                            \
  T RHINET_NAME(F, N##_g)(RHINET_CTX_PARAM(F) const T* source, int pe) {       \
    T value;                                                                   \
    get_bytes(RHINET_NAME_STR(F, N, "_g"), RHINET_CTX_ARG(F), &value, source,  \
              sizeof(T), pe, false);                                           \
    return value;                                                              \
  }                                                                            \
  void RHINET_NAME(F, N##_iput)(RHINET_CTX_PARAM(F) T * dest, const T* source, \
                                ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                                int pe) {                                      \
    strided(RHINET_NAME_STR(F, N, "_iput"), RHINET_CTX_ARG(F), true, dest,     \
            source, dst, sst, nelems, sizeof(T), pe);                          \
  }                                                                            \
  void RHINET_NAME(F, N##_iget)(RHINET_CTX_PARAM(F) T * dest, const T* source, \
                                ptrdiff_t dst, ptrdiff_t sst, size_t nelems,   \
                                int pe) {                                      \
    strided(RHINET_NAME_STR(F, N, "_iget"), RHINET_CTX_ARG(F), false, dest,    \
            source, dst, sst, nelems, sizeof(T), pe);                          \
  }                                                                            \
  void RHINET_NAME(F, N##_put_signal)(                                         \
      RHINET_CTX_PARAM(F) T * dest, const T* source, size_t nelems,            \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, N, "_put_signal"), RHINET_CTX_ARG(F), dest,  \
               source, nelems * sizeof(T), sig_addr, signal, sig_op, pe);      \
  }                                                                            \
  void RHINET_NAME(F, N##_put_signal_nbi)(                                     \
      RHINET_CTX_PARAM(F) T * dest, const T* source, size_t nelems,            \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, N, "_put_signal_nbi"), RHINET_CTX_ARG(F),    \
               dest, source, nelems * sizeof(T), sig_addr, signal, sig_op,     \
               pe);                                                            \
  }

#define RHINET_SHMEM_SIZED_FORM(BITS, BYTES, F)                                \
  void RHINET_NAME(F, put##BITS)(RHINET_CTX_PARAM(F) void* dest,               \
                                 const void* source, size_t nelems, int pe) {  \
    put_bytes(RHINET_NAME_STR(F, put##BITS, ""), RHINET_CTX_ARG(F), dest,      \
              source, nelems* BYTES, pe, false);                               \
  }                                                                            \
  void RHINET_NAME(F, get##BITS)(RHINET_CTX_PARAM(F) void* dest,               \
                                 const void* source, size_t nelems, int pe) {  \
    get_bytes(RHINET_NAME_STR(F, get##BITS, ""), RHINET_CTX_ARG(F), dest,      \
              source, nelems* BYTES, pe, false);                               \
  }                                                                            \
  void RHINET_NAME(F, put##BITS##_nbi)(RHINET_CTX_PARAM(F) void* dest,         \
                                       const void* source, size_t nelems,      \
                                       int pe) {                               \
    put_bytes(RHINET_NAME_STR(F, put##BITS, "_nbi"), RHINET_CTX_ARG(F), dest,  \
              source, nelems* BYTES, pe, true);                                \
  }                                                                            \
  void RHINET_NAME(F, get##BITS##_nbi)(RHINET_CTX_PARAM(F) void* dest,         \
                                       const void* source, size_t nelems,      \
                                       int pe) {                               \
    get_bytes(RHINET_NAME_STR(F, get##BITS, "_nbi"), RHINET_CTX_ARG(F), dest,  \
              source, nelems* BYTES, pe, true);                                \
  }                                                                            \
  void RHINET_NAME(F, iput##BITS)(RHINET_CTX_PARAM(F) void* dest,              \
                                  const void* source, ptrdiff_t dst,           \
                                  ptrdiff_t sst, size_t nelems, int pe) {      \
    strided(RHINET_NAME_STR(F, iput##BITS, ""), RHINET_CTX_ARG(F), true, dest, \
            source, dst, sst, nelems, BYTES, pe);                              \
  }                                                                            \
  void RHINET_NAME(F, iget##BITS)(RHINET_CTX_PARAM(F) void* dest,              \
                                  const void* source, ptrdiff_t dst,           \
                                  ptrdiff_t sst, size_t nelems, int pe) {      \
    strided(RHINET_NAME_STR(F, iget##BITS, ""), RHINET_CTX_ARG(F), false,      \
            dest, source, dst, sst, nelems, BYTES, pe);                        \
  }                                                                            \
  void RHINET_NAME(F, put##BITS##_signal)(                                     \
      RHINET_CTX_PARAM(F) void* dest, const void* source, size_t nelems,       \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, put##BITS, "_signal"), RHINET_CTX_ARG(F),    \
               dest, source, nelems* BYTES, sig_addr, signal, sig_op, pe);     \
  }                                                                            \
  void RHINET_NAME(F, put##BITS##_signal_nbi)(                                 \
      RHINET_CTX_PARAM(F) void* dest, const void* source, size_t nelems,       \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, put##BITS, "_signal_nbi"),                   \
               RHINET_CTX_ARG(F), dest, source, nelems* BYTES, sig_addr,       \
               signal, sig_op, pe);                                            \
  }

#define RHINET_SHMEM_MEM_FORM(F)                                               \
  void RHINET_NAME(F, putmem)(RHINET_CTX_PARAM(F) void* dest,                  \
                              const void* source, size_t nelems, int pe) {     \
    put_bytes(RHINET_NAME_STR(F, putmem, ""), RHINET_CTX_ARG(F), dest, source, \
              nelems, pe, false);                                              \
  }                                                                            \
  void RHINET_NAME(F, getmem)(RHINET_CTX_PARAM(F) void* dest,                  \
                              const void* source, size_t nelems, int pe) {     \
    get_bytes(RHINET_NAME_STR(F, getmem, ""), RHINET_CTX_ARG(F), dest, source, \
              nelems, pe, false);                                              \
  }                                                                            \
  void RHINET_NAME(F, putmem_nbi)(RHINET_CTX_PARAM(F) void* dest,              \
                                  const void* source, size_t nelems, int pe) { \
    put_bytes(RHINET_NAME_STR(F, putmem, "_nbi"), RHINET_CTX_ARG(F), dest,     \
              source, nelems, pe, true);                                       \
  }                                                                            \
  void RHINET_NAME(F, getmem_nbi)(RHINET_CTX_PARAM(F) void* dest,              \
                                  const void* source, size_t nelems, int pe) { \
    get_bytes(RHINET_NAME_STR(F, getmem, "_nbi"), RHINET_CTX_ARG(F), dest,     \
              source, nelems, pe, true);                                       \
  }                                                                            \
  void RHINET_NAME(F, putmem_signal)(                                          \
      RHINET_CTX_PARAM(F) void* dest, const void* source, size_t nelems,       \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, putmem, "_signal"), RHINET_CTX_ARG(F), dest, \
               source, nelems, sig_addr, signal, sig_op, pe);                  \
  }                                                                            \
  void RHINET_NAME(F, putmem_signal_nbi)(                                      \
      RHINET_CTX_PARAM(F) void* dest, const void* source, size_t nelems,       \
      uint64_t* sig_addr, uint64_t signal, int sig_op, int pe) {               \
    put_signal(RHINET_NAME_STR(F, putmem, "_signal_nbi"), RHINET_CTX_ARG(F),   \
               dest, source, nelems, sig_addr, signal, sig_op, pe);            \
  }

#define RHINET_SHMEM_RMA(N, T) RHINET_BOTH_FORMS(RHINET_SHMEM_RMA_FORM, N, T)
#define RHINET_SHMEM_SIZED(BITS, BYTES) \
  RHINET_BOTH_FORMS(RHINET_SHMEM_SIZED_FORM, BITS, BYTES)
SHMEMI_RMA_TYPES(RHINET_SHMEM_RMA)
SHMEMI_RMA_SIZES(RHINET_SHMEM_SIZED)
RHINET_SHMEM_MEM_FORM(plain)
RHINET_SHMEM_MEM_FORM(ctx)

#define RHINET_SHMEM_BROADCAST(N, T)                                     \
  int shmem_##N##_broadcast(shmem_team_t team, T* dest, const T* source, \
                            size_t nelems, int PE_root) {                \
    return shmem_broadcastmem(team, dest, source, nelems * sizeof(T),    \
                              PE_root);                                  \
  }
SHMEMI_RMA_TYPES(RHINET_SHMEM_BROADCAST)

// ---- ordering
// ------------------------------------------------------------------

// Every put, get and AMO of this PE has completed at its target.
void shmem_quiet(void) {
  quiet("shmem_quiet", context("shmem_quiet", SHMEM_CTX_DEFAULT));
}

void shmem_ctx_quiet(shmem_ctx_t ctx) {
  quiet("shmem_ctx_quiet", context("shmem_ctx_quiet", ctx));
}

// Nothing to wait for: the target NIC applies one endpoint's WRITEs and
// atomics to one endpoint in posting order (queues.md, "Ordering"), and
// every store of a context to a PE is posted on the context's endpoint in
// program order. What this library splits or stages (bounce-buffer
// chunks, strided puts) completes before the routine returns. The handle
// is still checked.
void shmem_fence(void) { context("shmem_fence", SHMEM_CTX_DEFAULT); }

void shmem_ctx_fence(shmem_ctx_t ctx) { context("shmem_ctx_fence", ctx); }

// ---- collectives
// -------------------------------------------------------------------

void shmem_barrier_all(void) { heap_barrier("shmem_barrier_all"); }

void shmem_sync_all(void) {
  auto& g = group("shmem_sync_all");
  complete("shmem_sync_all", g.barrier({.id = kBarrierId}));
}

// Root's source into every member's dest, root's included.
int shmem_broadcastmem(shmem_team_t team, void* dest, const void* source,
                       size_t nelems, int PE_root) {
  const char* routine = "shmem_broadcastmem";
  return broadcast_on(routine, team_view(routine, team), dest, source, nelems,
                      PE_root, true);
}

#define RHINET_SHMEM_REDUCE(N, T, OP, ROP)                                     \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source,   \
                                size_t nreduce) {                              \
    const char* routine = "shmem_" #N "_" #OP "_reduce";                       \
    return reduce_on(routine, team_view(routine, team), dest, source, nreduce, \
                     ReduceOp::ROP);                                           \
  }
#define RHINET_SHMEM_REDUCE_AND(N, T) RHINET_SHMEM_REDUCE(N, T, and, band)
#define RHINET_SHMEM_REDUCE_OR(N, T) RHINET_SHMEM_REDUCE(N, T, or, bor)
#define RHINET_SHMEM_REDUCE_XOR(N, T) RHINET_SHMEM_REDUCE(N, T, xor, bxor)
#define RHINET_SHMEM_REDUCE_MIN(N, T) RHINET_SHMEM_REDUCE(N, T, min, min)
#define RHINET_SHMEM_REDUCE_MAX(N, T) RHINET_SHMEM_REDUCE(N, T, max, max)
#define RHINET_SHMEM_REDUCE_SUM(N, T) RHINET_SHMEM_REDUCE(N, T, sum, sum)
#define RHINET_SHMEM_REDUCE_PROD(N, T) RHINET_SHMEM_REDUCE(N, T, prod, prod)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_AND)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_OR)
SHMEMI_REDUCE_BITWISE_TYPES(RHINET_SHMEM_REDUCE_XOR)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_MIN)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_MAX)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_SUM)
SHMEMI_RMA_TYPES(RHINET_SHMEM_REDUCE_PROD)

// The complex ones: C's _Complex has std::complex's layout.
#define RHINET_SHMEM_REDUCE_COMPLEX(N, T, R, OP)                             \
  int shmem_##N##_##OP##_reduce(shmem_team_t team, T* dest, const T* source, \
                                size_t nreduce) {                            \
    const char* routine = "shmem_" #N "_" #OP "_reduce";                     \
    return reduce_on(routine, team_view(routine, team),                      \
                     reinterpret_cast<std::complex<R>*>(dest),               \
                     reinterpret_cast<const std::complex<R>*>(source),       \
                     nreduce, ReduceOp::OP);                                 \
  }
RHINET_SHMEM_REDUCE_COMPLEX(complexf, float _Complex, float, sum)
RHINET_SHMEM_REDUCE_COMPLEX(complexf, float _Complex, float, prod)
RHINET_SHMEM_REDUCE_COMPLEX(complexd, double _Complex, double, sum)
RHINET_SHMEM_REDUCE_COMPLEX(complexd, double _Complex, double, prod)

}  // extern "C"

// ---- for the library's other files (shmem_internal.hpp) --------------------

namespace rhinet::shmem::internal {

std::span<std::byte> scratch() { return {state().bounce, kBounceBytes}; }

std::chrono::microseconds wait_spin() { return state().wait_spin; }

Communicator& world(const char* routine) { return world_of(routine); }

void heap_barrier(const char* routine) { barrier_of_heap(routine); }

const Area& library_area() { return *state().library_area; }

std::span<std::byte> library_scratch() {
  return {state().library + kLibraryScratchOffset,
          kLibraryBytes - kLibraryScratchOffset};
}

std::size_t library_scratch_offset() { return kLibraryScratchOffset; }

// The NIC broadcasts 4-byte elements; a tail of 1 to 3 bytes goes by put
// from the root. Without root_dest the root's source is the broadcast's
// buffer there, so its dest is not touched.
int broadcast_on(const char* routine, const TeamView& view, void* dest,
                 const void* source, std::size_t nelems, int PE_root,
                 bool root_dest) {
  const int n = static_cast<int>(view.pes.size());
  if (PE_root < 0 || PE_root >= n)
    return refuse(routine, "PE_root %d is not a PE of the team (0 to %d)",
                  PE_root, n - 1);
  const bool root = view.me == PE_root;
  if (!view.comm || !nelems) {
    if (root_dest && nelems && dest != source)
      std::memmove(dest, source, nelems);
    return 0;
  }
  symmetric(routine, dest, nelems, "dest");
  symmetric(routine, source, nelems, "source");
  if (root && root_dest && dest != source) std::memmove(dest, source, nelems);
  void* data = root && !root_dest ? const_cast<void*>(source) : dest;
  const std::size_t words = nelems / 4, tail = nelems % 4;
  if (words) {
    auto r = view.comm->bcast<std::uint32_t>(
        {static_cast<std::uint32_t*>(data), words},
        static_cast<std::uint32_t>(PE_root));
    if (!r) return refuse(routine, "%s", r.error().to_string().c_str());
  }
  if (tail) {
    auto* end = static_cast<std::byte*>(dest) + words * 4;
    const auto* from = static_cast<const std::byte*>(data) + words * 4;
    if (root)
      for (int i = 0; i < n; i++)
        if (i != PE_root)
          put_bytes(routine, SHMEM_CTX_DEFAULT, end, from, tail, view.pes[i],
                    true);
    team_barrier(routine, view);
  }
  return 0;
}

}  // namespace rhinet::shmem::internal
