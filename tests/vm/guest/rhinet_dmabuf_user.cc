// SPDX-License-Identifier: BSD-2-Clause
// userlib over memory of another device (Group::dmabuf_buffer): each rank
// exports a vgem dumb buffer as a dma-buf, maps it, registers it as a
// Buffer and closes the descriptor at once (the Buffer keeps the dma-buf).
// On a ring of ranks, each PUSHes from its dma-buf into its right
// neighbour's area (host memory) with a signal and checks what its left
// neighbour sent; then PULLs its right neighbour's area back into another
// part of the dma-buf and checks it through the mapping. The refusals: a
// descriptor that is not open (EBADF), one that is no dma-buf (EINVAL), a
// range past the dma-buf's end (EINVAL), a span overlapping the Buffer
// (EEXIST). The group's endpoint itself has its queues in a second vgem
// dma-buf (BootstrapOptions::queue_memory), so every operation above is
// fetched from and completed into it; a span too small for them is refused
// at join (EINVAL), and the completions are seen in the dma-buf.
//
//   rhinet-run -n 2 --hosts node0,node1 rhinet-dmabuf-user   (vgem loaded)
//
// Exit status 0 when every check passed on this rank.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <rhinet/rhinet.hpp>
#include <span>
#include <vector>

#include "vgem.h"

namespace
{

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 3;
constexpr std::size_t kBytes = 12288; // a PUSH and a PULL of this size
constexpr std::uint32_t kRows = 16; // the dma-buf: 64 KiB
constexpr std::size_t kPullAt = 32768; // where in it the PULL lands
constexpr std::uint32_t kQueueRows = 128; // the queues' dma-buf: 512 KiB

std::byte pattern(std::uint32_t rank, std::size_t i)
{
	return static_cast<std::byte>((rank * 53 + i * 7 + (i >> 9)) & 0xff);
}

long mismatch(std::span<const std::byte> v, std::uint32_t rank)
{
	for (std::size_t i = 0; i < v.size(); i++)
		if (v[i] != pattern(rank, i))
			return static_cast<long>(i);
	return -1;
}

int failures = 0;

void expect(bool ok, std::uint32_t rank, const char *what)
{
	if (ok)
		return;
	std::fprintf(stderr, "dmabuf_user: rank %u: FAIL: %s\n", rank, what);
	failures++;
}

// A registration that must fail with errno `want`.
template <typename R>
void refused(const R &r, int want, std::uint32_t rank, const char *what)
{
	if (r) {
		std::fprintf(stderr,
			     "dmabuf_user: rank %u: FAIL: %s registered\n",
			     rank, what);
		failures++;
		return;
	}
	if (r.error().errno_value() != want) {
		std::fprintf(stderr,
			     "dmabuf_user: rank %u: FAIL: %s: %s, want %s\n",
			     rank, what, r.error().to_string().c_str(),
			     std::strerror(want));
		failures++;
	}
}

int fail(const char *what, const rhinet::Error &e)
{
	std::fprintf(stderr, "dmabuf_user: %s: %s\n", what,
		     e.to_string().c_str());
	return 1;
}

// A vgem dumb buffer of `rows` rows as a dma-buf, mapped: its fd, or -1.
int mapped_dmabuf(int card, std::uint32_t rows, std::uint32_t *handle,
		  std::span<std::byte> *mem)
{
	std::size_t size = 0;
	int fd = vgem_dmabuf(card, rows, handle, &size);
	if (fd < 0) {
		std::perror("dmabuf_user: vgem dma-buf");
		return -1;
	}
	void *map =
		mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		std::perror("dmabuf_user: mmap");
		return -1;
	}
	*mem = std::span<std::byte>(static_cast<std::byte *>(map), size);
	return fd;
}

} // namespace

int main()
{
	int card = vgem_open();
	if (card < 0) {
		std::fprintf(stderr,
			     "dmabuf_user: no vgem device (modprobe vgem)\n");
		return 1;
	}
	std::uint32_t qhandle = 0;
	std::span<std::byte> queues;
	const int qfd = mapped_dmabuf(card, kQueueRows, &qhandle, &queues);
	if (qfd < 0)
		return 1;
	auto o = rhinet::BootstrapOptions::from_env();
	if (!o)
		return fail("options", o.error());
	// Too small for the endpoint's queues: refused before anything else.
	o->queue_memory = {qfd, 0, queues.first(4096)};
	auto small = rhinet::Group::join(*o);
	if (small || small.error().errno_value() != EINVAL) {
		std::fprintf(stderr,
			     "dmabuf_user: FAIL: queue memory of 4 KiB: %s\n",
			     small ? "joined"
				   : small.error().to_string().c_str());
		return 1;
	}
	std::printf("dmabuf_user: %s\n", small.error().to_string().c_str());
	o->queue_memory = {qfd, 0, queues};
	auto joined = rhinet::Group::join(*o);
	if (!joined)
		return fail("join", joined.error());
	// The endpoint holds the queues' dma-buf now.
	close(qfd);
	vgem_close_handle(card, qhandle);
	rhinet::Group &g = **joined;
	const std::uint32_t me = g.rank(), n = g.size();
	const std::uint32_t right = (me + 1) % n, left = (me + n - 1) % n;

	std::uint32_t handle = 0;
	std::span<std::byte> mem;
	int fd = mapped_dmabuf(card, kRows, &handle, &mem);
	if (fd < 0)
		return 1;
	void *map = mem.data();
	const std::size_t size = mem.size();

	// The refusals first, on this rank's own descriptors.
	int pipefd[2];
	if (pipe(pipefd))
		return 1;
	refused(g.dmabuf_buffer(pipefd[0], 0, mem), EINVAL, me, "a pipe");
	close(pipefd[0]);
	close(pipefd[1]);
	refused(g.dmabuf_buffer(pipefd[0], 0, mem), EBADF, me, "a closed fd");
	refused(g.dmabuf_buffer(fd, 4096, mem), EINVAL, me, "past the end");
	refused(g.dmabuf_buffer(fd, 0, mem.first(0)), EINVAL, me, "empty");

	auto buf = g.dmabuf_buffer(fd, 0, mem);
	if (!buf)
		return fail("dmabuf_buffer", buf.error());
	refused(g.dmabuf_buffer(fd, 0, mem.subspan(4096, 4096)), EEXIST, me,
		"an overlapping span");
	// The Buffer holds the dma-buf now.
	close(fd);
	vgem_close_handle(card, handle);
	close(card);

	std::vector<std::byte> inbox(kBytes);
	auto area = g.area(kArea, inbox);
	if (!area)
		return fail("area", area.error());
	for (std::size_t i = 0; i < kBytes; i++)
		mem[i] = pattern(me, i);
	if (auto b = g.barrier_bootstrap(60s); !b)
		return fail("barrier", b.error());

	// From the dma-buf into the neighbour's host memory.
	auto push = g.push(right, kArea, 0, mem.first(kBytes), {.signal = 1});
	if (auto w = push.wait(30s); !w)
		return fail("push", w.error());
	if (auto s = g.wait_signal(kArea, 1, 30s); !s)
		return fail("wait_signal", s.error());
	long at = mismatch(inbox, left);
	expect(at < 0, me, "the PUSH from the left neighbour's dma-buf");
	// Into the dma-buf: what this rank pushed, read back from the right.
	auto dst = mem.subspan(kPullAt, kBytes);
	auto pull = g.pull(right, kArea, 0, dst);
	if (auto w = pull.wait(30s); !w)
		return fail("pull", w.error());
	at = mismatch(dst, me);
	expect(at < 0, me, "the PULL into the dma-buf");
	// The completion ring is the first bytes of the queues' dma-buf: the
	// PUSH's and the PULL's CQEs were written there (a CQE's first word is
	// its QP number, never 0).
	bool cqe_seen = false;
	for (std::size_t i = 0; i < 4 * 32; i++)
		cqe_seen |= queues[i] != std::byte{0};
	expect(cqe_seen, me, "no CQE in the queues' dma-buf");
	if (auto b = g.barrier_bootstrap(60s); !b)
		return fail("barrier", b.error());

	munmap(map, size);
	std::printf("dmabuf_user: rank %u: %s\n", me, failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
