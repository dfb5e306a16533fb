// SPDX-License-Identifier: BSD-2-Clause
// inbox_incast: remote atomics and the many-to-one channel built on them
// (Documentation/userlib/inbox.md).
//
//  (a) atomics: every rank fetch-adds 1 to a counter at rank 0, K times;
//      the counter ends at size * K and every value() was taken once;
//      compare_swap swaps only on a match; a misaligned word is refused
//      before posting (EINVAL), a word in an area without atomic access
//      by the target NIC (Syndrome::access_rights).
//  (b) incast: rank 0 opens an Inbox of N slots (default 4) whose counters
//      start 37 below 2^64, so they wrap during the run; every other rank
//      sends K messages of varying length at once. Rank 0 checks every
//      byte, each sender's messages in order and none twice or missing;
//      its inbox memory stays what it was for one sender; no node counted
//      an RNR retry (nobody was refused: senders waited on RecvCNT).
//  (c) with 3 ranks or more, counters away from the receiver: two groups whose
//      SendCNT and RecvCNT live at ranks 1 and 2 (which send too); rank 0
//      moves RecvCNT there with fetch-adds; the hosts' counters end exact.
//  (d) message-count limiting by credits: eager isends to rank 0, each after a
//      credit; rank 0 takes them slowly with any-source irecvs and returns
//      credits; every message checked, and still no RNR retry anywhere.
//  (e) a receive that waits long: rank 1 sends one message into rank 0's
//      Inbox 0.5 s late; rank 0's receive must have slept on the NIC's
//      watch of the inbox's area and been woken by it (area_wait_stats,
//      printed); without watches (no RHINETDV_CAP_WATCH) it must not
//      have slept.
//
//   rhinet-run -n 4 --hosts node0,node1,node2,node3 rhinet_inbox_incast [K [N]]
//
// Exit status 0 when every check passed on this rank.
#include <infiniband/rhinetdv.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <rhinet/inbox.hpp>
#include <rhinet/rhinet.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kCounterArea = 30;  // atomic access
constexpr std::uint32_t kPlainArea = 31;    // read/write only
constexpr std::uint32_t kInboxArea = 32;    // and 33
constexpr std::uint32_t kCounterHostArea = 34;
constexpr std::uint32_t kCreditArea = 35;
constexpr std::uint32_t kSleepArea = 36;
constexpr auto kWait = 60s;

int checks = 0, failures = 0;

bool expect(bool ok, const char* fmt, auto... args) {
  checks++;
  if (ok) return true;
  failures++;
  std::fprintf(stderr, "inbox_incast: ");
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
  return false;
}

template <typename T>
bool ok(const rhinet::Result<T>& r, const char* what) {
  return expect(static_cast<bool>(r), "%s: %s", what,
                r ? "" : r.error().to_string().c_str());
}

// Where a rank is, for a run that hangs: with INBOX_INCAST_TRACE set, on
// stderr with seconds since the start.
void phase(std::uint32_t me, const char* what) {
  static const bool on = std::getenv("INBOX_INCAST_TRACE") != nullptr;
  static const auto t0 = std::chrono::steady_clock::now();
  if (!on) return;
  std::fprintf(
      stderr, "inbox_incast: rank %u: %.1f s: %s\n", me,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count(),
      what);
}

std::uint64_t rnr_retries() {
  std::ifstream f(
      "/sys/class/infiniband/rhinet0/ports/1/hw_counters/rnr_retries");
  std::uint64_t v = 0;
  f >> v;
  return v;
}

// Message j of `rank`: 8 bytes rank, 8 bytes j, then a pattern; its length
// varies from 16 to slot_bytes.
std::vector<std::byte> message(std::uint32_t rank, std::uint64_t j,
                               std::uint32_t slot_bytes) {
  const std::size_t len = 16 + (j * 37 + rank * 11) % (slot_bytes - 15);
  std::vector<std::byte> m(len);
  std::memcpy(m.data(), &rank, 4);
  std::memcpy(m.data() + 8, &j, 8);
  for (std::size_t i = 16; i < len; i++)
    m[i] = static_cast<std::byte>((rank * 131 + j * 7 + i) & 0xff);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int k = argc > 1 ? std::atoi(argv[1]) : 200;
  const std::uint32_t slots =
      argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 4;
  auto joined = rhinet::Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "inbox_incast: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank(), n = g.size();

  // ---- (a) atomics ----------------------------------------------------------
  alignas(64) static std::uint64_t counter_mem[512];
  alignas(64) static std::uint64_t plain_mem[512];
  auto counter_area =
      g.area(kCounterArea, std::as_writable_bytes(std::span(counter_mem)),
             rhinet::Access::all);
  auto plain_area =
      g.area(kPlainArea, std::as_writable_bytes(std::span(plain_mem)));
  if (!counter_area || !plain_area) {
    std::fprintf(stderr, "inbox_incast: area: %s\n",
                 (!counter_area ? counter_area : plain_area)
                     .error()
                     .to_string()
                     .c_str());
    return 1;
  }
  if (me == 0) __atomic_store_n(&counter_mem[1], 5, __ATOMIC_RELEASE);
  phase(me, "barrier 1");
  if (!g.barrier_bootstrap(120s)) return 1;
  std::vector<std::uint64_t> seen;
  for (int i = 0; i < k; i++) {
    auto r = g.fetch_add(0, kCounterArea, 0, 1);
    if (!ok(r.wait(kWait), "fetch_add")) break;
    seen.push_back(r.value());
  }
  bool increasing = true;
  for (std::size_t i = 1; i < seen.size(); i++)
    increasing &= seen[i] > seen[i - 1];
  expect(increasing, "rank %u: its fetch_add values did not increase", me);
  if (me == 1 || n == 1) {
    auto a = g.compare_swap(0, kCounterArea, 8, 5, 9);
    if (ok(a.wait(kWait), "compare_swap"))
      expect(a.value() == 5, "compare_swap 5->9 found %" PRIu64, a.value());
    auto b = g.compare_swap(0, kCounterArea, 8, 5, 11);
    if (ok(b.wait(kWait), "compare_swap"))
      expect(b.value() == 9,
             "compare_swap 5->11 found %" PRIu64 " (9 expected: no swap)",
             b.value());
  }
  {
    auto r = g.fetch_add(0, kCounterArea, 4, 1).wait(kWait);
    expect(!r && r.error().errno_value() == EINVAL,
           "a misaligned fetch_add was not EINVAL");
    auto p = g.fetch_add(0, kPlainArea, 0, 1).wait(kWait);
    // The refusal names the access the area lacks.
    expect(!p &&
               p.error().syndrome() == static_cast<std::uint32_t>(
                                           rhinet::Syndrome::access_rights) &&
               p.error().message().find("Access::remote_atomic") !=
                   std::string::npos,
           "a fetch_add on an area without atomic access: %s",
           p ? "succeeded" : p.error().to_string().c_str());
  }
  {
    // What librhinetdv refuses before anything is posted.
    alignas(8) static std::uint64_t result;
    rhinetdv_atomic_attr a{};
    a.op = RHINETDV_ATOMIC_FETCH_ADD;
    a.result = &result;
    a.group_id = g.group_id();
    a.area_id = kCounterArea;
    a.compare_add = 1;
    rhinetdv_endpoint* ep = g.endpoint();
    auto refused = [&](const char* what, int want) {
      const int e = rhinetdv_atomic(ep, &a, sizeof(a));
      expect(e == want, "rhinetdv_atomic with %s: %d, not %d", what, e, want);
    };
    a.comp_mask = 1;
    refused("a comp_mask bit", EINVAL);
    a.comp_mask = 0;
    a.op = 3;
    refused("op 3", EINVAL);
    a.op = RHINETDV_ATOMIC_FETCH_ADD;
    a.swap = 1;
    refused("a swap value for fetch-and-add", EINVAL);
    a.swap = 0;
    a.offset = 12;
    refused("a misaligned offset", EINVAL);
    a.offset = 0;
    a.flags = 1u << 7;
    refused("an unknown flag", EINVAL);
    a.flags = 0;
    a.result = reinterpret_cast<std::uint64_t*>(
        reinterpret_cast<std::uintptr_t>(&result) + 4);
    refused("a misaligned result", EINVAL);
    a.result = &result;
    a.group_id = 0xfffe;  // not this process's group
    refused("a group it is not in", EPERM);
  }
  phase(me, "barrier 2");
  if (!g.barrier_bootstrap(120s)) return 1;
  if (me == 0) {
    const std::uint64_t want = std::uint64_t{n} * static_cast<unsigned>(k);
    expect(counter_mem[0] == want,
           "counter is %" PRIu64 " after %u x %d fetch_adds", counter_mem[0], n,
           k);
    expect(counter_mem[1] == 9, "compare_swap left %" PRIu64, counter_mem[1]);
    expect(plain_mem[0] == 0, "the refused fetch_add changed the word");
    if (!failures)
      std::printf("inbox_incast: atomics: %u x %d fetch_adds = %" PRIu64
                  ", compare_swap, refusals: ok\n",
                  n, k, counter_mem[0]);
  }

  // ---- (b) incast into an Inbox ---------------------------------------------
  rhinet::InboxLayout layout;
  layout.slots = slots;
  layout.slot_bytes = 200;
  layout.first_ticket = ~std::uint64_t{0} - 36;  // wraps after 37 messages
  const std::uint64_t rnr_before = rnr_retries();
  std::optional<rhinet::Inbox> in;
  if (me == 0) {
    auto o = rhinet::Inbox::open(g, kInboxArea, layout);
    if (!o) {
      std::fprintf(stderr, "inbox_incast: open: %s\n",
                   o.error().to_string().c_str());
      return 1;
    }
    in.emplace(std::move(*o));
  }
  phase(me, "barrier 3");
  if (!g.barrier_bootstrap(120s)) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  if (me == 0) {
    const std::size_t memory = in->memory_bytes();
    std::vector<std::uint64_t> next(n, 0);
    const std::uint64_t total = std::uint64_t{n - 1} * static_cast<unsigned>(k);
    for (std::uint64_t got = 0; got < total; got++) {
      auto m = in->receive(kWait);
      if (!ok(m, "receive")) break;
      std::uint32_t from = 0;
      std::uint64_t j = 0;
      if (!expect(m->size() >= 16, "message %" PRIu64 " of %zu bytes", got,
                  m->size()))
        continue;
      std::memcpy(&from, m->data(), 4);
      std::memcpy(&j, m->data() + 8, 8);
      if (!expect(from > 0 && from < n, "message from rank %u", from)) continue;
      expect(j == next[from],
             "rank %u's message %" PRIu64 " came when %" PRIu64
             " was next (lost, twice or out of order)",
             from, j, next[from]);
      next[from] = j + 1;
      expect(*m == message(from, j, layout.slot_bytes),
             "rank %u's message %" PRIu64 ": bytes differ", from, j);
    }
    for (std::uint32_t r = 1; r < n; r++)
      expect(next[r] == static_cast<unsigned>(k),
             "%" PRIu64 " of %d messages from rank %u", next[r], k, r);
    expect(in->memory_bytes() == memory, "inbox memory changed");
    expect(in->received() == total, "received() is %" PRIu64, in->received());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!failures)
      std::printf(
          "inbox_incast: %u senders x %d messages through %u slots "
          "(%zu bytes of receiver memory), counters wrapped: ok "
          "(%.0f messages/s)\n",
          n - 1, k, slots, memory, static_cast<double>(total) / s);
  } else {
    rhinet::InboxSender out(g, 0, kInboxArea, layout);
    for (int j = 0; j < k; j++) {
      if (!ok(out.send(
                  message(me, static_cast<std::uint64_t>(j), layout.slot_bytes),
                  kWait),
              "send"))
        break;
    }
    std::printf("inbox_incast: rank %u read RecvCNT %" PRIu64
                " times for %d sends (the queue was full)\n",
                me, out.recv_count_reads(), k);
  }
  in.reset();
  phase(me, "barrier 4");
  if (!g.barrier_bootstrap(120s)) return 1;

  // ---- (c) the counters elsewhere -----------------------------------------
  // Two counter groups, their counters at ranks 1 and 2 (which also send);
  // rank 0 takes the messages and moves each group's RecvCNT there with a
  // fetch-add.
  if (n >= 3) {
    rhinet::InboxLayout dl = layout;
    dl.groups = 2;
    const rhinet::InboxPlacement where{{1, 2}, kCounterHostArea};
    std::optional<rhinet::InboxCounterHost> host;
    if (me == 1 || me == 2) {
      auto h = rhinet::InboxCounterHost::open(g, kCounterHostArea, dl);
      if (!ok(h, "counter host")) return 1;
      host.emplace(std::move(*h));
    }
    std::optional<rhinet::Inbox> din;
    if (me == 0) {
      auto o = rhinet::Inbox::open(g, kInboxArea + 1, dl, where);
      if (!ok(o, "inbox with counters elsewhere")) return 1;
      din.emplace(std::move(*o));
    }
    phase(me, "barrier 5");
    if (!g.barrier_bootstrap(120s)) return 1;
    const int kd = k / 2;
    if (me == 0) {
      std::vector<std::uint64_t> next(n, 0);
      const std::uint64_t total =
          std::uint64_t{n - 1} * static_cast<unsigned>(kd);
      for (std::uint64_t got = 0; got < total; got++) {
        auto m = din->receive(kWait);
        if (!ok(m, "receive (counters elsewhere)")) break;
        std::uint32_t from = 0;
        std::uint64_t j = 0;
        std::memcpy(&from, m->data(), 4);
        std::memcpy(&j, m->data() + 8, 8);
        if (!expect(from > 0 && from < n && j == next[from] &&
                        *m == message(from, j, dl.slot_bytes),
                    "counters elsewhere: message %" PRIu64 " (rank %u #%" PRIu64
                    ") wrong",
                    got, from, j))
          break;
        next[from]++;
      }
      ok(g.sync(), "RecvCNT updates at the counter hosts");
      if (!failures)
        std::printf(
            "inbox_incast: counters at ranks 1 and 2 (2 groups): "
            "%" PRIu64 " messages: ok\n",
            total);
    } else {
      rhinet::InboxSender out(g, 0, kInboxArea + 1, dl, where);
      for (int j = 0; j < kd; j++)
        if (!ok(out.send(
                    message(me, static_cast<std::uint64_t>(j), dl.slot_bytes),
                    kWait),
                "send (counters elsewhere)"))
          break;
    }
    phase(me, "barrier 6");
    if (!g.barrier_bootstrap(120s)) return 1;
    if (host) {
      // This rank hosts group me - 1: the ranks with that parity sent to it.
      const std::uint32_t grp = me - 1;
      std::uint64_t sent = 0;
      for (std::uint32_t r = 1; r < n; r++)
        if (r % 2 == grp) sent += static_cast<unsigned>(kd);
      expect(host->send_count(grp) == dl.first_ticket + sent &&
                 host->recv_count(grp) == dl.first_ticket + sent,
             "rank %u's group %u counters: SendCNT %" PRIu64
             ", RecvCNT %" PRIu64 ", %" PRIu64 " messages",
             me, grp, host->send_count(grp) - dl.first_ticket,
             host->recv_count(grp) - dl.first_ticket, sent);
    }
  }
  phase(me, "barrier 7");
  if (!g.barrier_bootstrap(120s)) return 1;

  // ---- (d) message-count limiting over isend/irecv -------------------------
  // Every other rank isends k/2 eager messages to rank 0, each after taking
  // a credit; rank 0 takes them with any-source irecvs, slowly, and gives
  // each credit back: never more than `slots` messages wait at its NIC.
  {
    rhinet::InboxLayout cl;
    cl.slots = slots;
    cl.first_ticket = layout.first_ticket;
    const int kc = k / 2;
    std::optional<rhinet::CreditReceiver> credits;
    if (me == 0) {
      auto c = rhinet::CreditReceiver::open(g, kCreditArea, cl);
      if (!ok(c, "credit receiver")) return 1;
      credits.emplace(std::move(*c));
    }
    phase(me, "barrier 8");
    if (!g.barrier_bootstrap(120s)) return 1;
    if (me == 0) {
      std::vector<std::byte> buf(layout.slot_bytes);
      auto b = g.buffer(buf);
      std::vector<std::uint64_t> next(n, 0);
      const std::uint64_t total =
          std::uint64_t{n - 1} * static_cast<unsigned>(kc);
      ok(b, "receive buffer");
      for (std::uint64_t got = 0; b && got < total; got++) {
        if (got % 8 == 0) std::this_thread::sleep_for(2ms);  // a slow host
        auto r = g.irecv(rhinet::any_source, rhinet::any_tag, buf);
        if (!ok(r.wait(kWait), "irecv (credits)")) break;
        const std::uint32_t from = r.message()->source;
        std::uint64_t j = 0;
        std::memcpy(&j, buf.data() + 8, 8);
        if (!expect(from > 0 && from < n && j == next[from] &&
                        std::equal(buf.begin(), buf.begin() + r.bytes(),
                                   message(from, j, layout.slot_bytes).begin()),
                    "credits: message %" PRIu64 " wrong", got))
          break;
        next[from]++;
        credits->consumed(from);
      }
      if (!failures)
        std::printf(
            "inbox_incast: %u senders x %d isends under %u credits: "
            "ok\n",
            n - 1, kc, slots);
    } else {
      rhinet::CreditSender cs(g, 0, kCreditArea, cl);
      std::vector<std::byte> sbuf(layout.slot_bytes);
      auto b = g.buffer(sbuf);
      for (int j = 0; b && j < kc; j++) {
        if (!ok(cs.acquire(kWait), "credit")) break;
        const auto m =
            message(me, static_cast<std::uint64_t>(j), layout.slot_bytes);
        std::copy(m.begin(), m.end(), sbuf.begin());
        if (!ok(g.isend(0, me, std::span(sbuf).first(m.size())).wait(kWait),
                "isend (credits)"))
          break;
      }
      ok(b, "send buffer");
    }
  }
  phase(me, "barrier 9");
  if (!g.barrier_bootstrap(120s)) return 1;

  // ---- (e) a receive that sleeps -----------------------------------------
  {
    rhinet::InboxLayout sl;
    sl.slots = 4;
    sl.slot_bytes = 64;
    std::optional<rhinet::Inbox> sin;
    if (me == 0) {
      auto o = rhinet::Inbox::open(g, kSleepArea, sl);
      if (!ok(o, "open (sleeping receive)")) return 1;
      sin.emplace(std::move(*o));
    }
    phase(me, "barrier 10");
    if (!g.barrier_bootstrap(120s)) return 1;
    const auto msg = message(me, 4242, sl.slot_bytes);
    if (me == 0) {
      const rhinet::AreaWaitStats before = g.area_wait_stats();
      const auto t1 = std::chrono::steady_clock::now();
      auto m = sin->receive(kWait);
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t1)
              .count();
      const rhinet::AreaWaitStats after = g.area_wait_stats();
      const std::uint64_t sleeps = after.sleeps - before.sleeps,
                          wakeups = after.wakeups - before.wakeups,
                          timeouts = after.timeouts - before.timeouts,
                          polled = after.polled - before.polled;
      if (ok(m, "receive (sleeping)"))
        expect(*m == message(1, 4242, sl.slot_bytes),
               "the late message's bytes differ");
      std::printf("inbox_incast: a receive waited %.2f s: slept %" PRIu64
                  " times, woken %" PRIu64 " times by the NIC, %" PRIu64
                  " slices ran out, %" PRIu64 " polled waits (watches: %s)\n",
                  waited, sleeps, wakeups, timeouts, polled,
                  g.area_watches() ? "yes" : "no");
      expect(waited >= 0.3, "the receive waited only %.2f s", waited);
      if (g.area_watches()) {
        expect(sleeps >= 1, "the long receive did not sleep");
        expect(wakeups >= 1,
               "the long receive was not woken by the NIC (%" PRIu64
               " sleeps, %" PRIu64 " ran out)",
               sleeps, timeouts);
        expect(polled == 0, "the receive polled with watches");
      } else {
        expect(sleeps == 0 && polled == 1,
               "without watches: %" PRIu64 " sleeps, %" PRIu64 " polled",
               sleeps, polled);
      }
    } else if (me == 1) {
      std::this_thread::sleep_for(500ms);
      rhinet::InboxSender out(g, 0, kSleepArea, sl);
      ok(out.send(msg, kWait), "send (late)");
    }
  }
  phase(me, "barrier 11");
  if (!g.barrier_bootstrap(120s)) return 1;
  expect(rnr_retries() == rnr_before,
         "rank %u: the NIC counted %" PRIu64 " RNR retries", me,
         rnr_retries() - rnr_before);
  std::printf("inbox_incast: rank %u of %u: %d checks passed, %d failed\n", me,
              n, checks - failures, failures);
  return failures ? 1 : 0;
}
