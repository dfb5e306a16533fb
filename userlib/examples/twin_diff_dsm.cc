// SPDX-License-Identifier: BSD-2-Clause
// twin_diff_dsm: the multiple-writer protocol of twin memory (TWIN/DIFF, as in
// lazy-release software DSM [Keleher et al.]) on one page.
//
// Rank 0 owns a page-sized area. Every other rank (a writer) PULLs the
// page with Mode::twin, so the NIC keeps a copy in the writer's twin
// memory; changes its own bytes (8-byte chunks dealt round-robin to the
// writers); and PUSHes the page back with Mode::diff, so only the bytes
// that differ from the twin travel, with a signal. Rank 0 waits for one
// signal per writer and checks that its page holds every writer's bytes:
// had any PUSH carried the whole page, it would have put back the original
// bytes over another writer's. Writers also check the pulled page, and
// that a second DIFF PUSH of the unchanged page
// leaves the home as it is. Writers also read their twin memory
// (Twin::read) after the PULL and after each DIFF PUSH, and write the
// original page into it (Twin::write) before a last DIFF PUSH.
//
//   rhinet-run -n 3 -N 1 --hosts node0,node1,node2 rhinet_twin_diff_dsm
//
// Exit status 0 when every check passed on this rank.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <rhinet/rhinet.hpp>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 2;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kChunk = 8;

std::byte original(std::size_t i) {
  return static_cast<std::byte>((i * 7 + 3) & 0xff);
}
// What writer w puts at byte i: never the original byte.
std::byte written(std::uint32_t w, std::size_t i) {
  return static_cast<std::byte>(std::to_integer<unsigned>(original(i)) ^
                                (0x80u | (w & 0x7f)));
}
std::uint32_t owner(std::size_t i, std::uint32_t writers) {
  return static_cast<std::uint32_t>((i / kChunk) % writers) + 1;
}

int fail(std::uint32_t rank, const char* what, const rhinet::Error& e) {
  std::fprintf(stderr, "twin_diff_dsm: rank %u: %s: %s\n", rank, what,
               e.to_string().c_str());
  return 1;
}

// Counts (and shows the first few) bytes of `got` that are not `want(i)`.
template <class Want>
int compare(std::uint32_t rank, const char* what,
            const std::vector<std::byte>& got, Want want) {
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); i++)
    if (got[i] != want(i) && bad++ < 8)
      std::fprintf(stderr,
                   "twin_diff_dsm: rank %u: %s: byte %zu is 0x%02x, expected "
                   "0x%02x\n",
                   rank, what, i, std::to_integer<unsigned>(got[i]),
                   std::to_integer<unsigned>(want(i)));
  if (bad)
    std::fprintf(stderr, "twin_diff_dsm: rank %u: %s: %d bytes wrong\n", rank,
                 what, bad);
  return bad;
}

struct PageDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

}  // namespace

int main() {
  auto joined = rhinet::Group::join_from_env();
  if (!joined) return fail(0, "join", joined.error());
  rhinet::Group& g = **joined;
  const std::uint32_t me = g.rank();
  if (g.size() < 2) {
    std::fprintf(stderr, "twin_diff_dsm: needs at least 2 ranks\n");
    return 2;
  }
  const std::uint32_t writers = g.size() - 1;
  int bad = 0;

  if (me == 0) {
    // The home of the page.
    std::unique_ptr<std::byte, PageDeleter> mem(
        static_cast<std::byte*>(std::aligned_alloc(kPage, kPage)));
    std::span<std::byte> page(mem.get(), kPage);
    for (std::size_t i = 0; i < kPage; i++) page[i] = original(i);
    auto area = g.area(kArea, page);
    if (!area) return fail(me, "area", area.error());
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());
    // Every writer has its copy and twin before any writes back.
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());
    // One signal per writer's DIFF PUSH.
    if (auto s = g.wait_signal(kArea, writers, 60s); !s)
      return fail(me, "wait_signal", s.error());
    bad += compare(
        me, "home page", std::vector<std::byte>(page.begin(), page.end()),
        [&](std::size_t i) { return written(owner(i, writers), i); });
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());
  } else {
    std::vector<std::byte> copy(kPage);
    auto buf = g.buffer(copy);
    if (!buf) return fail(me, "buffer", buf.error());
    auto twin = g.twin(kPage);
    if (!twin) return fail(me, "twin", twin.error());
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());

    // Fetch the page; the NIC keeps the twin.
    auto pull =
        g.pull(0, kArea, 0, copy, rhinet::XferOptions::twin_copy(*twin));
    if (auto w = pull.wait(30s); !w) return fail(me, "pull (twin)", w.error());
    bad += compare(me, "pulled page", copy, original);
    // The twin holds what arrived (Twin::read: the NIC copies it out).
    std::vector<std::byte> seen(kPage);
    if (auto r = twin->read(0, seen); !r)
      return fail(me, "twin read", r.error());
    bad += compare(me, "twin after the pull", seen, original);
    // The page is shared: nobody writes back before every writer has
    // pulled (the acquire of a release-consistent DSM).
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());

    // Write our chunks, and only ours.
    for (std::size_t i = 0; i < kPage; i++)
      if (owner(i, writers) == me) copy[i] = written(me, i);
    auto push = g.push(0, kArea, 0, copy,
                       rhinet::XferOptions::diff(*twin).with_signal(1));
    if (auto w = push.wait(30s); !w) return fail(me, "push (diff)", w.error());
    const std::size_t mine = [&] {
      std::size_t n = 0;
      for (std::size_t i = 0; i < kPage; i++) n += owner(i, writers) == me;
      return n;
    }();
    if (push.bytes() > kPage) {
      std::fprintf(stderr,
                   "twin_diff_dsm: rank %u: diff push reports %u "
                   "bytes (our changes: %zu)\n",
                   me, push.bytes(), mine);
      bad++;
    }
    // After a DIFF PUSH the twin holds what was pushed: the same page
    // again differs in nothing, so it changes nothing at the home either.
    auto again = g.push(0, kArea, 0, copy, rhinet::XferOptions::diff(*twin));
    if (auto w = again.wait(30s); !w)
      return fail(me, "push (diff, unchanged)", w.error());
    if (auto r = twin->read(0, seen); !r)
      return fail(me, "twin read", r.error());
    bad += compare(me, "twin after the diff pushes", seen,
                   [&](std::size_t i) { return copy[i]; });
    // The host's own write into the twin (Twin::write): with the original
    // page there again, a DIFF PUSH sends our chunks once more (the same
    // bytes the home has) and leaves the twin equal to the page.
    std::vector<std::byte> orig(kPage);
    for (std::size_t i = 0; i < kPage; i++) orig[i] = original(i);
    if (auto r = twin->write(0, orig); !r)
      return fail(me, "twin write", r.error());
    if (auto r = twin->read(0, seen); !r)
      return fail(me, "twin read", r.error());
    bad += compare(me, "twin after Twin::write", seen, original);
    auto resend = g.push(0, kArea, 0, copy, rhinet::XferOptions::diff(*twin));
    if (auto w = resend.wait(30s); !w)
      return fail(me, "push (diff, after Twin::write)", w.error());
    if (auto r = twin->read(0, seen); !r)
      return fail(me, "twin read", r.error());
    bad += compare(me, "twin after the last diff push", seen,
                   [&](std::size_t i) { return copy[i]; });
    // Beyond the twin: refused with ERANGE, nothing copied.
    std::byte one[16] = {};
    for (auto r : {twin->read(kPage - 8, one), twin->write(kPage, {one, 1})})
      if (r || r.error().errno_value() != ERANGE) {
        std::fprintf(stderr,
                     "twin_diff_dsm: rank %u: a twin access beyond its end "
                     "was not refused with ERANGE\n",
                     me);
        bad++;
      }
    if (auto s = g.sync(30s); !s) return fail(me, "sync", s.error());
    if (auto b = g.barrier_bootstrap(60s); !b)
      return fail(me, "barrier", b.error());
  }
  if (bad) return 1;
  std::printf("twin_diff_dsm: rank %u of %u: ok\n", me, g.size());
  return 0;
}
