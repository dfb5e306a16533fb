// rhinet_shmem_bench: OpenSHMEM routines beside the userlib calls they map
// to, in the same run, on the same group and heap (shmemx_rhinet_group()),
// between PE 0 and PE 1; the other PEs only take part in the barriers.
// Prints figures and the ratio shmem / userlib; asserts nothing about time
// (TCG machines differ 5-7x: compare the ratio, not the microseconds).
//
//   oshrun -n 2 --hosts node0,node1 rhinet_shmem_bench [ITERATIONS]
#include <shmem.h>
#include <shmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rhinet/rhinet.hpp>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBandwidthBytes = 64 * 1024;
constexpr int kBandwidthBatch = 8;
// The raw barrier's ID: not the library's, so the two never share rounds.
constexpr std::uint64_t kRawBarrier = 0xbe4c'0000'0000'0001ull;

double micros_per(Clock::duration d, int n) {
  return std::chrono::duration<double, std::micro>(d).count() / n;
}

// A tenth of the rounds untimed first: the first operations of a kind
// pay for cold caches and the NIC's first translations.
template <typename F>
double time_us(int n, F f) {
  for (int i = 0; i < n / 10 + 1; i++) f();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; i++) f();
  return micros_per(Clock::now() - t0, n);
}

void must(const rhinet::Result<void>& r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "shmem_bench: %s: %s\n", what,
                 r.error().to_string().c_str());
    std::exit(1);
  }
}

void row(const char* what, double shmem_value, double raw_value,
         const char* unit) {
  std::printf(
      "shmem_bench: %-28s shmem %10.1f %-5s userlib %10.1f %-5s "
      "ratio %.2f\n",
      what, shmem_value, unit, raw_value, unit,
      raw_value > 0 ? shmem_value / raw_value : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  shmem_init();
  auto& g = *static_cast<rhinet::Group*>(shmemx_rhinet_group());
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (n < 2 || iters < 1) {
    if (me == 0) std::fprintf(stderr, "shmem_bench: needs 2 PEs or more\n");
    shmem_finalize();
    return 2;
  }
  auto* buf = static_cast<std::byte*>(
      shmem_malloc(kBandwidthBytes * (kBandwidthBatch + 1)));
  auto* word = static_cast<long*>(shmem_calloc(1, sizeof(long)));
  const auto heap = reinterpret_cast<std::byte*>(shmemx_heap_base());
  const std::uint64_t buf_off = static_cast<std::uint64_t>(buf - heap);
  const std::uint64_t word_off =
      static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(word) - heap);
  const std::uint32_t area = SHMEMX_HEAP_AREA_ID;
  std::byte* local = buf + kBandwidthBytes * kBandwidthBatch;
  shmem_barrier_all();
  if (me == 0) {
    const double put_s = time_us(iters, [&] {
      shmem_putmem(buf, local, 8, 1);
      shmem_quiet();
    });
    const double put_r = time_us(iters, [&] {
      must(g.push(1, area, buf_off, {local, 8}, {.inline_data = true}).wait(),
           "push");
    });
    row("put 8 B + quiet (latency)", put_s, put_r, "us");
    const double get_s =
        time_us(iters, [&] { shmem_getmem(local, buf, 8, 1); });
    const double get_r = time_us(iters, [&] {
      must(g.pull(1, area, buf_off, {local, 8}).wait(), "pull");
    });
    row("get 8 B (latency)", get_s, get_r, "us");
    const int rounds = std::max(1, iters / 20);
    const double bw_s = time_us(rounds, [&] {
      for (int i = 0; i < kBandwidthBatch; i++)
        shmem_putmem_nbi(buf + i * kBandwidthBytes, buf + i * kBandwidthBytes,
                         kBandwidthBytes, 1);
      shmem_quiet();
    });
    const double bw_r = time_us(rounds, [&] {
      for (int i = 0; i < kBandwidthBatch; i++)
        g.push(1, area, buf_off + i * kBandwidthBytes,
               {buf + i * kBandwidthBytes, kBandwidthBytes})
            .detach();
      must(g.sync(), "sync");
    });
    const double mb = kBandwidthBatch * kBandwidthBytes / 1e6;
    row("put 8x64 KiB nbi (bandwidth)", mb / (bw_s / 1e6), mb / (bw_r / 1e6),
        "MB/s");
    const double amo_s =
        time_us(iters, [&] { (void)shmem_long_atomic_fetch_add(word, 1, 1); });
    const double amo_r = time_us(iters, [&] {
      auto r = g.fetch_add(1, area, word_off, 1);
      must(r.wait(), "fetch_add");
    });
    row("fetch_add (rate)", 1e6 / amo_s, 1e6 / amo_r, "op/s");
  }
  shmem_barrier_all();
  const double bar_s = time_us(iters, [] { shmem_barrier_all(); });
  const double bar_r =
      time_us(iters, [&] { must(g.barrier({.id = kRawBarrier}), "barrier"); });
  if (me == 0) row("barrier, all PEs (latency)", bar_s, bar_r, "us");
  long* sum = static_cast<long*>(shmem_malloc(2 * sizeof(long)));
  sum[0] = me;
  const double red_s = time_us(iters, [&] {
    if (shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum + 1, sum, 1)) std::exit(1);
  });
  if (me == 0)
    std::printf("shmem_bench: %-28s shmem %10.1f us (result %ld, want %ld)\n",
                "long sum_reduce, 1 element", red_s, sum[1],
                static_cast<long>(n) * (n - 1) / 2);
  if (sum[1] != static_cast<long>(n) * (n - 1) / 2) return 1;
  shmem_free(sum);
  shmem_free(word);
  shmem_free(buf);
  shmem_finalize();
  return 0;
}
