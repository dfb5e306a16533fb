// SPDX-License-Identifier: BSD-2-Clause
// One device program in every put mode (userlib's rhinet::xpu::PutChannel):
// node 1's xpu puts NPUT pieces of its memory into node 0's host memory
// with the same PutProgram in device, cpu_doorbell, proxy and automatic
// mode. The client checks the same bytes arrive every time; the server
// checks the same completion count and, per mode, who did the work: the
// NIC's SQ doorbells by requester (host_doorbells, peer_doorbells) and the
// xpu's bus counters, with the library's own counts of its CPU thread's
// doorbells, requests and staged bytes. Printed as RHINET-BENCH lines.
//
// XPU_EXPECT=p2p (debug kernel): every mode works, automatic picks device.
// XPU_EXPECT=none (no CONFIG_PCI_P2PDMA): device and cpu_doorbell asked by
// name are errors naming the refused export (EOPNOTSUPP); automatic falls
// back to proxy and reports both refusals.
//
//   rhinet-xpu-modes [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER]
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rhinet/put_channel.hpp"
#include "xpu/xpu.h"

extern "C" {
#include "verbs_guest.h"
}

namespace
{

using rhinet::xpu::PutMode;

constexpr std::uint32_t kPuts = 16;
constexpr std::uint32_t kLen = 1000;
constexpr std::uint32_t kQuietEvery = 8; // puts per doorbell batch
constexpr std::uint64_t kRegion = 1u << 20;
constexpr std::uint64_t kData = 64u << 10;
constexpr std::uint32_t kHost = 64u << 10;
constexpr std::uint32_t kSeed = 11;

struct Round {
	PutMode asked;
	bool works; // the mode is set up
	PutMode expect; // what automatic picks
};

// What each side sends per round (the server: ok, qpn, gid; the client
// also its target's rkey and address).
struct Wire {
	std::uint32_t ok, qpn, rkey, pad;
	std::uint64_t addr;
	std::uint8_t gid[16];
};

// The device program, the same in every mode.
rhinet::xpu::PutProgram the_program()
{
	rhinet::xpu::PutProgram p;
	for (std::uint32_t i = 0; i < kPuts; i++) {
		p.put(std::uint64_t{i} * kLen, std::uint64_t{i} * kLen, kLen);
		if ((i + 1) % kQuietEvery == 0)
			p.quiet();
	}
	return p;
}

rhinet::xpu::PutChannelConfig config(ibv_context *ctx,
				     const rhinet::xpu::Device &x, PutMode mode,
				     int gid_index)
{
	rhinet::xpu::PutChannelConfig c;
	c.context = ctx;
	c.device = &x;
	c.region_offset = kRegion;
	c.region_length = rhinet::xpu::PutChannel::region_bytes(kData);
	c.data_length = kData;
	c.mode = mode;
	c.gid_index = gid_index;
	return c;
}

void measure(const char *dev, const rhinet::xpu::Device &x,
	     rhinet::xpu::PutChannel &ch)
{
	const PutMode mode = ch.mode();
	const char *name = rhinet::xpu::to_string(mode).data();
	pattern_fill(x.mem() + kRegion + rhinet::xpu::PutChannel::data_offset(),
		     kPuts * kLen, kSeed);
	if (!x.clear_counters())
		check(false, "clearing the xpu's counters");
	const std::uint64_t tx0 = eth0_tx();
	const std::uint64_t host0 = ib_hw_counter(dev, "host_doorbells");
	const std::uint64_t peer0 = ib_hw_counter(dev, "peer_doorbells");
	auto r = ch.run(the_program());
	const std::uint64_t host = ib_hw_counter(dev, "host_doorbells") - host0;
	const std::uint64_t peer = ib_hw_counter(dev, "peer_doorbells") - peer0;
	const std::uint64_t tx = eth0_tx() - tx0;
	check(r.has_value(), "%s: the program ran: %s", name,
	      r ? "yes" : r.error().to_string().c_str());
	if (!r)
		return;
	auto cr = x.counters();
	if (!cr)
		return check(false, "the xpu's counters");
	const rhinet::xpu::Counters &c = *cr;
	const std::uint64_t host_rw =
		c[XPU_CNT_HOST_RD_COUNT] + c[XPU_CNT_HOST_WR_COUNT];
	const std::uint32_t batches = kPuts / kQuietEvery;
	check(r->puts == kPuts, "%s: %" PRIu64 " puts completed (want %u)",
	      name, r->puts, kPuts);
	// Host doorbells beyond the kernel's own eth0 frames (the TCP side
	// channel) are the library's.
	const std::uint64_t cpu_db = host > tx ? host - tx : 0;
	printf("rhinet-xpu-modes server: %s: lane cmds %" PRIu64
	       ", xpu host rd+wr %" PRIu64 ", p2p wr %" PRIu64
	       ", NIC read %" PRIu64
	       " B of xpu memory; NIC SQ doorbells host %" PRIu64
	       " (eth0 %" PRIu64 ") peer %" PRIu64
	       "; library thread: doorbells %" PRIu64 ", requests %" PRIu64
	       ", staged %" PRIu64 " B\n",
	       name, r->lane_commands, host_rw,
	       std::uint64_t{c[XPU_CNT_P2P_WR_COUNT]},
	       std::uint64_t{c[XPU_CNT_IN_RD_BYTES]}, host, tx, peer,
	       r->cpu_doorbells, r->cpu_requests, r->staged_bytes);
	printf("RHINET-BENCH xpu_modes %s per_msg lane_cmds %.2f xpu_p2p_wr "
	       "%.3f "
	       "xpu_host_accesses %.3f host_doorbells %.3f peer_doorbells %.3f "
	       "cpu_requests %.3f host_bytes_staged %.1f\n",
	       name, double(r->lane_commands) / kPuts,
	       double(c[XPU_CNT_P2P_WR_COUNT]) / kPuts, double(host_rw) / kPuts,
	       double(cpu_db) / kPuts, double(peer) / kPuts,
	       double(r->cpu_requests) / kPuts,
	       double(r->staged_bytes) / kPuts);
	check(host_rw == 0, "%s: the xpu touched no host RAM", name);
	check(c[XPU_CNT_FAULTS] == 0, "%s: no lane fault", name);
	switch (mode) {
	case PutMode::device:
		check(peer == batches && c[XPU_CNT_P2P_WR_COUNT] == batches &&
			      host <= tx && r->cpu_doorbells == 0 &&
			      r->cpu_requests == 0,
		      "device: %u doorbells, all the xpu's (peer %" PRIu64
		      ", p2p %" PRIu64 "), none the CPU's (host %" PRIu64
		      " <= eth0 %" PRIu64 ")",
		      batches, peer, std::uint64_t{c[XPU_CNT_P2P_WR_COUNT]},
		      host, tx);
		check(c[XPU_CNT_IN_RD_BYTES] >= kPuts * (64 + kLen),
		      "device: the NIC read WQEs and data from the xpu");
		break;
	case PutMode::cpu_doorbell:
		check(peer == 0 && c[XPU_CNT_P2P_WR_COUNT] == 0 &&
			      r->cpu_doorbells == batches && host >= batches,
		      "cpu_doorbell: %u doorbells by the CPU (thread %" PRIu64
		      ", NIC host %" PRIu64 "), none by the xpu (peer %" PRIu64
		      ")",
		      batches, r->cpu_doorbells, host, peer);
		check(c[XPU_CNT_IN_RD_BYTES] >= kPuts * (64 + kLen),
		      "cpu_doorbell: the NIC read WQEs and data from the xpu");
		break;
	default:
		check(peer == 0 && c[XPU_CNT_P2P_WR_COUNT] == 0 &&
			      r->cpu_doorbells == kPuts && host >= kPuts &&
			      r->cpu_requests == kPuts &&
			      r->staged_bytes == std::uint64_t{kPuts} * kLen,
		      "proxy: a CPU doorbell and a staged copy per put (thread "
		      "%" PRIu64 " doorbells, %" PRIu64 " B; NIC host %" PRIu64
		      ", peer %" PRIu64 ")",
		      r->cpu_doorbells, r->staged_bytes, host, peer);
		check(c[XPU_CNT_IN_RD_COUNT] == 0 &&
			      c[XPU_CNT_IN_WR_COUNT] == 0,
		      "proxy: the NIC never touched the xpu's memory");
		break;
	}
}

/*
 * A put the peer refuses (past its MR): the run fails with the NIC's
 * completion error, not a hang, and the channel refuses to run again.
 */
void refused_put(rhinet::xpu::PutChannel &ch)
{
	const char *name = rhinet::xpu::to_string(ch.mode()).data();
	rhinet::xpu::PutProgram p;

	p.put(0, kHost - 8, 16);
	auto r = ch.run(p);
	check(!r && r.error().is_completion() &&
		      r.error().syndrome() == static_cast<std::uint32_t>(
						      rhinet::Syndrome::bounds),
	      "%s: a put past the peer's memory: %s", name,
	      r ? "completed" : r.error().to_string().c_str());
	auto again = ch.run(the_program());
	check(!again && again.error() == std::errc::io_error,
	      "%s: the channel runs no more after it: %s", name,
	      again ? "ran" : again.error().to_string().c_str());
}

// Bad input: a put past the channel's data is refused before the lane runs.
void bad_put(rhinet::xpu::PutChannel &ch)
{
	rhinet::xpu::PutProgram p;
	p.put(kData - 8, 0, 16);
	auto r = ch.run(p);
	check(!r && r.error() == std::errc::invalid_argument,
	      "a put past the source data: %s",
	      r ? "accepted" : r.error().to_string().c_str());
}

void server(int sock, ibv_context *ctx, const char *dev, int gid_index,
	    bool p2p)
{
	auto xr = rhinet::xpu::Device::open();
	if (!xr)
		die("open /dev/xpu0");
	const rhinet::xpu::Device &x = *xr;
	const Round rounds[] = {
		{PutMode::device, p2p, PutMode::device},
		{PutMode::cpu_doorbell, p2p, PutMode::cpu_doorbell},
		{PutMode::proxy, true, PutMode::proxy},
		{PutMode::automatic, true,
		 p2p ? PutMode::device : PutMode::proxy},
	};
	{
		auto c = config(ctx, x, PutMode::proxy, gid_index);
		c.region_offset += 8;
		auto r = rhinet::xpu::PutChannel::open(c);
		check(!r && r.error() == std::errc::invalid_argument,
		      "an unaligned region: %s",
		      r ? "accepted" : r.error().to_string().c_str());
	}
	for (const Round &rd : rounds) {
		const char *asked = rhinet::xpu::to_string(rd.asked).data();
		auto ch = rhinet::xpu::PutChannel::open(
			config(ctx, x, rd.asked, gid_index));
		Wire me{}, peer{};
		if (!rd.works) {
			const bool says =
				!ch &&
				ch.error() ==
					std::errc::operation_not_supported &&
				ch.error().message().find(
					"CONFIG_PCI_P2PDMA") !=
					std::string::npos;
			check(says, "%s asked by name without P2PDMA: %s",
			      asked,
			      ch ? "set up" : ch.error().to_string().c_str());
		} else {
			check(ch.has_value(), "%s: set up: %s", asked,
			      ch ? ch->describe().c_str()
				 : ch.error().to_string().c_str());
		}
		if (ch) {
			printf("rhinet-xpu-modes server: asked %s: %s\n", asked,
			       ch->describe().c_str());
			check(ch->mode() == rd.expect, "asked %s, got %s",
			      asked, rhinet::xpu::to_string(ch->mode()).data());
			if (rd.asked == PutMode::automatic && !p2p) {
				const auto &ref = ch->refusals();
				check(ref.size() == 2 &&
					      ref[0].mode == PutMode::device &&
					      ref[1].mode ==
						      PutMode::cpu_doorbell &&
					      ref[0].why.message().find(
						      "EOPNOTSUPP") !=
						      std::string::npos &&
					      ref[0].why.message().find(
						      "CONFIG_PCI_P2PDMA") !=
						      std::string::npos,
				      "automatic reports why device and "
				      "cpu_doorbell were refused");
			}
			if (rd.asked != PutMode::automatic)
				check(ch->refusals().empty(),
				      "%s: nothing refused on the way", asked);
			const rhinet::xpu::PutEndpoint ep = ch->local();
			me.ok = 1;
			me.qpn = ep.qpn;
			std::memcpy(me.gid, ep.gid.data(), 16);
		}
		xfer(sock, &me, &peer, sizeof(me));
		if (!me.ok)
			continue;
		rhinet::xpu::PutEndpoint pe;
		pe.qpn = peer.qpn;
		std::memcpy(pe.gid.data(), peer.gid, 16);
		auto cr = ch->connect(pe, {peer.addr, peer.rkey});
		check(cr.has_value(), "%s: connected", asked);
		sync_peer(sock); // both connected
		bad_put(*ch);
		measure(dev, x, *ch);
		refused_put(*ch);
		sync_peer(sock); // the client checks the bytes
		sync_peer(sock);
	}
}

void client(int sock, ibv_context *ctx, int gid_index, bool p2p)
{
	ibv_pd *pd = nullptr;
	std::uint8_t *buf = nullptr;
	ibv_mr *mr = alloc_buffer(ctx, kHost, &pd, &buf);
	if (!mr)
		die("host MR");
	(void)p2p;
	for (int round = 0; round < 4; round++) {
		ibv_qp_init_attr a{};
		a.cap.max_send_wr = 1;
		a.cap.max_recv_wr = 1;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.qp_type = IBV_QPT_RC;
		a.send_cq = a.recv_cq =
			ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
		ibv_qp *qp = a.send_cq ? ibv_create_qp(pd, &a) : nullptr;
		if (!qp)
			die("CQ/QP");
		std::memset(buf, 0, kHost);
		Wire me{}, peer{};
		me.qpn = qp->qp_num;
		me.rkey = mr->rkey;
		me.addr = reinterpret_cast<std::uintptr_t>(buf);
		local_gid(ctx, gid_index, me.gid);
		xfer(sock, &me, &peer, sizeof(me));
		if (peer.ok) {
			rc_connect(qp, "QP", peer.qpn, peer.gid, gid_index, 0);
			sync_peer(sock);
			sync_peer(sock); // the device put
			check(pattern_differs(buf, kPuts * kLen, kSeed) < 0,
			      "round %d: the puts' bytes arrived", round);
			check(buf[kPuts * kLen] == 0,
			      "round %d: nothing past them", round);
			sync_peer(sock);
		}
		ibv_destroy_qp(qp);
		ibv_destroy_cq(a.send_cq);
	}
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
}

} // namespace

int main(int argc, char **argv)
{
	const char *dev = "rhinet0";
	int gid_index = 1, port = 18523;
	program = "rhinet-xpu-modes";
	setvbuf(stdout, nullptr, _IOLBF, 0);
	const char *server_name =
		peer_args(argc, argv, &dev, &gid_index, &port);
	const char *expect = getenv("XPU_EXPECT");
	if (!expect || (strcmp(expect, "p2p") && strcmp(expect, "none"))) {
		fprintf(stderr, "XPU_EXPECT=p2p or none\n");
		return 2;
	}
	const bool p2p = !strcmp(expect, "p2p");
	ibv_context *ctx = open_device(dev);
	const int sock = tcp_connect(server_name, port);
	if (server_name)
		client(sock, ctx, gid_index, p2p);
	else
		server(sock, ctx, dev, gid_index, p2p);
	close(sock);
	ibv_close_device(ctx);
	printf("%s %s: %d checks, %d failed\n", program, role, checks,
	       failures);
	return failures ? 1 : 0;
}
