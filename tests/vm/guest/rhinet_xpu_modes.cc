// SPDX-License-Identifier: BSD-2-Clause
// One device program in every put mode (userlib's rhinet::xpu::PutChannel):
// node 1's xpu puts NPUT pieces of its memory into node 0's host memory
// with the same PutProgram in device, cpu_doorbell, proxy and automatic
// mode. The client checks the same bytes arrive every time; the server
// checks the same completion count and, per mode, who did the work: the
// NIC's SQ doorbells by requester (host_doorbells, peer_doorbells) and the
// xpu's bus counters, with the library's own counts of its CPU thread's
// doorbells, requests and staged bytes. Printed as RHINET-BENCH lines.
// Per mode also the run's limits (E2BIG) and, once the channel is
// destroyed, that it gave back its lane and doorbell window. Then two
// processes' channels on one xpu at once, their isolation, and one of them
// killed mid-run (two_processes()).
//
// XPU_EXPECT=p2p (debug kernel): every mode works, automatic picks device.
// XPU_EXPECT=none (no CONFIG_PCI_P2PDMA): device and cpu_doorbell asked by
// name are errors naming the refused export (EOPNOTSUPP); automatic falls
// back to proxy and reports both refusals.
//
//   rhinet-xpu-modes [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER]
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "rhinet/hw_regs.h"
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
constexpr std::uint32_t kLane = 0; // the rounds' channels
// Two processes' channels at once: lanes 1 and 2, each putting into its
// half of the client's buffer; the second one's long run (kLongPuts of
// kLongLen) is the one killed. Their regions have the same offset, each in
// its own memory of the xpu (kTwoMem bytes, asked for): the puts come out
// right only if neither reaches the other's.
constexpr std::uint32_t kTwoLane0 = 1;
constexpr std::uint64_t kTwoRegion = 4u << 20;
constexpr std::uint64_t kTwoMem = 6u << 20;
constexpr std::uint32_t kTwoSeed0 = 21;
constexpr std::uint32_t kHalf = kHost / 2;
constexpr std::uint32_t kLongPuts = 600; // each with a quiet
// Lane commands of that program, at least: device modes 6 a put (the WQE's
// copy, record, kick, poll, clear, CQ record), 3602 in all; proxy 5 a put
// and one more once the request ring is full, 3538.
constexpr std::uint64_t kLongCmds = 3500;
constexpr std::uint32_t kLongLen = 32u << 10;

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
	c.lane = kLane;
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
		// The thread rings once per change of the lane's kick word
		// it sees: two asks before it looks are one ring, and a
		// batch the NIC took before the thread looked (its record
		// read after a completion) may end the run unrung.
		check(peer == 0 && c[XPU_CNT_P2P_WR_COUNT] == 0 &&
			      r->cpu_doorbells >= 1 &&
			      r->cpu_doorbells <= batches &&
			      r->cpu_doorbells == r->cpu_requests &&
			      host >= r->cpu_doorbells,
		      "cpu_doorbell: 1 to %u doorbells by the CPU, each "
		      "counted by the NIC (thread %" PRIu64 " of %" PRIu64
		      " asks, NIC host %" PRIu64 "), none by the xpu (peer "
		      "%" PRIu64 ")",
		      batches, r->cpu_doorbells, r->cpu_requests, host, peer);
		check(c[XPU_CNT_IN_RD_BYTES] >= kPuts * (64 + kLen),
		      "cpu_doorbell: the NIC read WQEs and data from the xpu");
		break;
	default:
		// A post while the NIC still finishes the previous put
		// needs no kick (the provider's doorbell request), so the
		// NIC counts between one and one host doorbell per put
		// beyond the kernel's (whose eth0 frames need not each
		// kick either, so the bound is loose).
		check(peer == 0 && c[XPU_CNT_P2P_WR_COUNT] == 0 &&
			      r->cpu_doorbells == 0 && host >= 1 &&
			      r->cpu_requests == kPuts &&
			      r->staged_bytes == std::uint64_t{kPuts} * kLen,
		      "proxy: a CPU request and a staged copy per put, "
		      "posts that ring host doorbells (thread %" PRIu64
		      " requests, %" PRIu64 " B; NIC host %" PRIu64
		      " with eth0's %" PRIu64 ", peer %" PRIu64 ")",
		      r->cpu_requests, r->staged_bytes, host, tx, peer);
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

/*
 * A run is one straight-line lane program in the region: a program that
 * does not fit is E2BIG before the lane runs, naming what it would take,
 * and the channel still runs (measure() follows). 1025 puts: more WQEs
 * than a run stages (device modes), more commands than the program holds
 * (proxy, 4 per put); 700 puts each with a quiet: more commands in every
 * mode.
 */
void too_long(rhinet::xpu::PutChannel &ch)
{
	const char *name = rhinet::xpu::to_string(ch.mode()).data();
	rhinet::xpu::PutProgram many, quiet_each;

	for (std::uint32_t i = 0; i < 1025; i++)
		many.put(0, 0, 8);
	for (std::uint32_t i = 0; i < 700; i++) {
		quiet_each.put(0, 0, 8);
		quiet_each.quiet();
	}
	auto r = ch.run(many);
	check(!r && r.error() == std::errc::argument_list_too_long &&
		      r.error().message().find("1025 puts") !=
			      std::string::npos &&
		      r.error().message().find("split") != std::string::npos,
	      "%s: 1025 puts in one run: %s", name,
	      r ? "accepted" : r.error().to_string().c_str());
	r = ch.run(quiet_each);
	check(!r && r.error() == std::errc::argument_list_too_long &&
		      r.error().message().find("lane commands") !=
			      std::string::npos,
	      "%s: 700 puts with a quiet each: %s", name,
	      r ? "accepted" : r.error().to_string().c_str());
}

// @dev's counter @name once it has moved past @from, or after 50 reads.
std::uint64_t hw_counter_past(const char *dev, const char *name,
			      std::uint64_t from)
{
	std::uint64_t v = ib_hw_counter(dev, name);
	for (int i = 0; i < 50 && v == from; i++)
		v = ib_hw_counter(dev, name);
	return v;
}

/*
 * @x's @lane writes a doorbell for @qpn through @db's page: it faults
 * WINDOW (the xpu counts it) and the NIC sees no doorbell at all.
 */
void kick_faults(const char *dev, const rhinet::xpu::Device &x,
		 std::uint32_t lane, std::uint64_t prog,
		 const rhinet::xpu::Import &db, std::uint32_t qpn,
		 const char *what)
{
	rhinet::xpu::LaneProgram lp;
	lp.write64(db.bus_addr + RHN_DB_SQ, qpn);
	lp.stop();
	auto c0 = x.counters();
	const std::uint64_t peer0 = ib_hw_counter(dev, "peer_doorbells");
	const std::uint64_t bad0 = ib_hw_counter(dev, "bad_doorbells");
	auto loaded = lp.load(x, prog, 64);
	auto out = loaded ? x.run(lane, prog, 5000)
			  : rhinet::Result<rhinet::xpu::LaneOutcome>(
				    std::move(loaded).error());
	auto c1 = x.counters();
	check(out && out->status == XPU_LANE_FAULT &&
		      out->error == XPU_ERR_WINDOW,
	      "%s: the lane faults WINDOW (%s status %u error %u)", what,
	      out ? "ran," : out.error().to_string().c_str(),
	      out ? out->status : 0, out ? out->error : 0);
	check(c0 && c1 &&
		      (*c1)[XPU_CNT_WINDOW_FAULTS] ==
			      (*c0)[XPU_CNT_WINDOW_FAULTS] + 1,
	      "%s: the xpu counted the WINDOW fault", what);
	check(hw_counter_past(dev, "peer_doorbells", peer0) == peer0 &&
		      hw_counter_past(dev, "bad_doorbells", bad0) == bad0,
	      "%s: the NIC saw no doorbell", what);
}

/*
 * A destroyed channel gave back what it took: its lane is free for
 * another file (a second open claims it), its doorbell window is no
 * file's (ENOENT, where another's would be EBUSY), and the lane naming
 * the old window's doorbell page faults WINDOW instead of reaching it.
 */
void given_back(const char *dev, const rhinet::xpu::Device &x, const char *name,
		std::uint32_t lane,
		const std::optional<rhinet::xpu::Import> &db, std::uint32_t qpn)
{
	auto yr = rhinet::xpu::Device::open();
	if (!yr)
		return check(false, "a second open of /dev/xpu0");
	const rhinet::xpu::Device &y = *yr;
	auto c = y.claim_lanes(1u << lane);
	check(c.has_value(),
	      "%s: the channel's lane is free once it is gone: %s", name,
	      c ? "claimed" : c.error().to_string().c_str());
	if (c) {
		auto r = y.release_lanes(1u << lane);
		check(r.has_value(), "%s: the lane given back again", name);
		auto again = y.release_lanes(1u << lane);
		check(!again && again.error() ==
					std::errc::no_such_file_or_directory,
		      "%s: giving back a free lane: %s", name,
		      again ? "accepted" : again.error().to_string().c_str());
	}
	if (!db)
		return;
	auto u = y.unimport(db->window);
	check(!u && u.error() == std::errc::no_such_file_or_directory,
	      "%s: the doorbell window %u is no file's: %s", name, db->window,
	      u ? "was held" : u.error().to_string().c_str());
	kick_faults(dev, x, lane, 0, *db, qpn,
		    (std::string(name) + ": the old doorbell window").c_str());
	check(x.release_lanes(1u << lane).has_value(),
	      "%s: the test's run gave the lane back", name);
}

// What a child of two_processes() tells the parent, and is told.
struct ChildHello {
	std::uint32_t ok, qpn, lane, window;
	std::uint64_t db_bus; // 0: no doorbell window (proxy)
	std::uint8_t gid[16];
};

static_assert(sizeof(ChildHello) == sizeof(Wire), "xfer()s one for the other");

enum ChildCmd : char {
	kRunShort = 'r',
	kRunLong = 'l',
	kPoke = 'p'
};

rhinet::xpu::PutProgram short_program()
{
	rhinet::xpu::PutProgram p;
	for (std::uint32_t i = 0; i < kPuts; i++)
		p.put(std::uint64_t{i} * kLen, std::uint64_t{i} * kLen, kLen);
	return p;
}

/*
 * One of two processes with a put channel each (two_processes()): set up,
 * connected to the target the parent passes on, then runs what it is told
 * and answers with the run's outcome (1 ok).
 */
[[noreturn]] void two_child(int ctl, const char *dev, int gid_index,
			    PutMode mode, std::uint32_t i)
{
	role = i ? "process B" : "process A";
	checks = failures = 0; // its own, not the parent's so far
	ibv_context *ctx = open_device(dev);
	auto huge = rhinet::xpu::Device::open("/dev/xpu0", 1ull << 40);
	check(!huge && huge.error().errno_value() == EDQUOT,
	      "%s: more of the xpu's memory than a share: %s", role,
	      huge ? "given" : huge.error().to_string().c_str());
	auto xr = rhinet::xpu::Device::open("/dev/xpu0", kTwoMem);
	if (!xr)
		die("open /dev/xpu0");
	const rhinet::xpu::Device &x = *xr;
	check(x.mem_size() == kTwoMem, "%s: %llu bytes of memory of its own",
	      role, (unsigned long long)x.mem_size());
	rhinet::xpu::PutChannelConfig c = config(ctx, x, mode, gid_index);
	c.lane = kTwoLane0 + i;
	c.region_offset = kTwoRegion;
	pattern_fill(x.mem() + c.region_offset +
			     rhinet::xpu::PutChannel::data_offset(),
		     kData, kTwoSeed0 + i);
	auto ch = rhinet::xpu::PutChannel::open(c);
	check(ch.has_value(), "%s set up: %s", role,
	      ch ? ch->describe().c_str() : ch.error().to_string().c_str());
	ChildHello me{}, other{};
	if (ch) {
		const rhinet::xpu::PutEndpoint ep = ch->local();
		me.ok = 1;
		me.qpn = ep.qpn;
		me.lane = c.lane;
		std::memcpy(me.gid, ep.gid.data(), 16);
		if (auto db = ch->doorbell_window()) {
			me.db_bus = db->bus_addr;
			me.window = db->window;
		}
	}
	Wire target{};
	xfer(ctl, &me, &target, sizeof(target)); // hello; the target
	if (!ch)
		_exit(1);
	rhinet::xpu::PutEndpoint pe;
	pe.qpn = target.qpn;
	std::memcpy(pe.gid.data(), target.gid, 16);
	check(ch->connect(pe, {target.addr, target.rkey}).has_value(),
	      "%s connected", role);
	xfer(ctl, &me, &other, sizeof(other)); // the other's hello
	for (char cmd; read(ctl, &cmd, 1) == 1;) {
		char ans = 0;
		if (cmd == kPoke) {
			// The other process's lane and window are not ours, and
			// our lane pointed at its doorbell page faults.
			auto r = x.claim_lanes(1u << other.lane);
			check(!r && r.error() ==
					      std::errc::
						      device_or_resource_busy,
			      "claiming the other process's lane: %s",
			      r ? "claimed" : r.error().to_string().c_str());
			auto run = x.run(other.lane, 0, 1000);
			check(!run && run.error() ==
					      std::errc::
						      device_or_resource_busy,
			      "running the other process's lane: %s",
			      run ? "ran" : run.error().to_string().c_str());
			if (other.db_bus) {
				auto u = x.unimport(other.window);
				check(!u && u.error() ==
						      std::errc::
							      device_or_resource_busy,
				      "giving back the other process's "
				      "window: %s",
				      u ? "given"
					: u.error().to_string().c_str());
				kick_faults(dev, x, c.lane,
					    c.region_offset - 4096,
					    {other.db_bus, 4096, other.window},
					    other.qpn,
					    "a lane at the other process's "
					    "doorbell page");
			}
			ans = 1;
		} else {
			rhinet::xpu::PutProgram p = short_program();
			if (cmd == kRunLong) {
				p = {};
				for (std::uint32_t k = 0; k < kLongPuts; k++) {
					p.put(0, 0, kLongLen);
					p.quiet();
				}
				const char started = 1;
				if (write(ctl, &started, 1) != 1)
					die("write");
			}
			auto r = ch->run(p);
			check(r && r->puts == p.ops().size(),
			      "%s: the run completed: %s", role,
			      r ? "yes" : r.error().to_string().c_str());
			ans = r ? 1 : 2; // 0: the process is gone
		}
		if (write(ctl, &ans, 1) != 1)
			die("write");
	}
	_exit(failures ? 1 : 0);
}

// One byte from @fd: the child's answer (0 if it is gone).
char answer(int fd)
{
	char a = 0;
	return read(fd, &a, 1) == 1 ? a : 0;
}

/*
 * Two processes' put channels on one xpu at once (device mode under P2PDMA,
 * proxy without): both run concurrently on their own lanes and the client
 * checks each one's bytes in its half; neither reaches the other's lane or
 * doorbell page; then B is killed in the middle of a long run while A runs
 * again: A's run completes, and B's lane and window are free.
 */
void two_processes(int sock, const char *dev, int gid_index, bool p2p)
{
	const PutMode mode = p2p ? PutMode::device : PutMode::proxy;
	int ctl[2];
	pid_t pid[2];
	ChildHello hello[2]{};
	for (std::uint32_t i = 0; i < 2; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			die("socketpair");
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork");
		if (!pid[i]) {
			close(sv[0]);
			close(sock);
			two_child(sv[1], dev, gid_index, mode, i);
		}
		close(sv[1]);
		ctl[i] = sv[0];
	}
	Wire me[2]{}, peer[2]{};
	for (std::uint32_t i = 0; i < 2; i++) {
		if (read(ctl[i], &hello[i], sizeof(hello[i])) !=
		    sizeof(hello[i]))
			hello[i] = {};
		me[i].ok = hello[i].ok;
		me[i].qpn = hello[i].qpn;
		std::memcpy(me[i].gid, hello[i].gid, 16);
	}
	xfer(sock, me, peer, sizeof(me));
	const bool ok = hello[0].ok && hello[1].ok;
	check(ok, "both processes set up their channels");
	// A child that failed has exited: nothing more is sent to either.
	for (std::uint32_t i = 0; ok && i < 2; i++)
		if (write(ctl[i], &peer[i], sizeof(peer[i])) != sizeof(peer[i]))
			die("write");
	for (std::uint32_t i = 0; ok && i < 2; i++) {
		ChildHello echo{};
		xfer(ctl[i], &hello[1 - i], &echo, sizeof(echo));
	}
	sync_peer(sock); // both sides connected
	if (ok) {
		const char poke = kPoke, run = kRunShort;
		if (write(ctl[0], &poke, 1) != 1)
			die("write");
		check(answer(ctl[0]) == 1, "A checked B's lane and doorbell");
		for (int i = 0; i < 2; i++)
			if (write(ctl[i], &run, 1) != 1)
				die("write");
		check(answer(ctl[0]) == 1 && answer(ctl[1]) == 1,
		      "two processes' runs at once completed");
	}
	sync_peer(sock); // the client checks both halves
	sync_peer(sock); // and cleared them
	if (ok) {
		const char lng = kRunLong, run = kRunShort;
		auto yr = rhinet::xpu::Device::open();
		if (!yr)
			die("open /dev/xpu0");
		auto c0 = yr->counters();
		if (write(ctl[1], &lng, 1) != 1)
			die("write");
		check(answer(ctl[1]) == 1, "B started its long run");
		// Killed once its lane is well into the program (the lanes'
		// command count, B's alone so far), not before it loads.
		std::uint64_t b_cmds = 0;
		for (const double t0 = now();
		     b_cmds < 100 && now() - t0 < 20;) {
			auto c = yr->counters();
			if (c && c0)
				b_cmds = (*c)[XPU_CNT_CMDS] -
					 (*c0)[XPU_CNT_CMDS];
		}
		check(b_cmds >= 100, "B's lane runs (%" PRIu64 " commands)",
		      b_cmds);
		if (write(ctl[0], &run, 1) != 1)
			die("write");
		const double t_kill = now();
		kill(pid[1], SIGKILL);
		int st = 0;
		check(waitpid(pid[1], &st, 0) == pid[1] && WIFSIGNALED(st),
		      "B killed in its run");
		const double reaped = now() - t_kill;
		const char b_end = answer(ctl[1]);
		check(b_end == 0, "B's run had not ended (B answered %d)",
		      b_end);
		check(answer(ctl[0]) == 1, "A's run completed meanwhile");
		// A lane that ran out B's program after the kill would show.
		auto c1 = yr->counters();
		const std::uint64_t cmds =
			c0 && c1 ? (*c1)[XPU_CNT_CMDS] - (*c0)[XPU_CNT_CMDS]
				 : 0;
		check(c0 && c1 && cmds < kLongCmds,
		      "B's lane stopped when B was killed: %" PRIu64
		      " lane commands ran in all, B's program has %" PRIu64 "+",
		      cmds, kLongCmds);
		printf("rhinet-xpu-modes server: two processes (%s): A on "
		       "lane %u, B on lane %u (window %s), B killed in a "
		       "run of %u puts, %" PRIu64 " lane commands ran, "
		       "reaped %.3f s after the kill\n",
		       rhinet::xpu::to_string(mode).data(), hello[0].lane,
		       hello[1].lane,
		       hello[1].db_bus ? std::to_string(hello[1].window).c_str()
				       : "none",
		       kLongPuts, cmds, reaped);
		{
			auto c = yr->claim_lanes(1u << hello[1].lane);
			check(c.has_value(),
			      "B's lane is free once B is gone: %s",
			      c ? "claimed" : c.error().to_string().c_str());
			if (hello[1].db_bus) {
				auto u = yr->unimport(hello[1].window);
				check(!u && u.error() ==
						      std::errc::
							      no_such_file_or_directory,
				      "B's doorbell window is no file's: %s",
				      u ? "was held"
					: u.error().to_string().c_str());
			}
		}
	}
	sync_peer(sock); // the client checks A's half
	for (int i = 0; i < 2; i++)
		close(ctl[i]);
	int st = 0;
	check(waitpid(pid[0], &st, 0) == pid[0] && WIFEXITED(st) &&
		      !WEXITSTATUS(st),
	      "process A passed its checks");
	if (!ok)
		waitpid(pid[1], &st, 0);
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
		too_long(*ch);
		measure(dev, x, *ch);
		refused_put(*ch);
		sync_peer(sock); // the client checks the bytes
		sync_peer(sock);
		const auto db = ch->doorbell_window();
		const std::uint32_t qpn = ch->local().qpn;
		{
			auto gone = std::move(*ch); // the channel goes
		}
		given_back(dev, x, asked, kLane, db, qpn);
	}
	two_processes(sock, dev, gid_index, p2p);
}

// The client's side of a put channel: an RC QP that only receives WRITEs.
ibv_qp *target_qp(ibv_pd *pd, ibv_cq *cq)
{
	ibv_qp_init_attr a{};
	a.cap.max_send_wr = 1;
	a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = cq;
	ibv_qp *qp = cq ? ibv_create_qp(pd, &a) : nullptr;
	if (!qp)
		die("CQ/QP");
	return qp;
}

/*
 * two_processes()'s peer: two QPs, process A's puts into the first half of
 * @buf and B's into the second; both halves after the concurrent runs, A's
 * alone after B was killed.
 */
void two_clients(int sock, ibv_context *ctx, ibv_pd *pd, ibv_mr *mr,
		 std::uint8_t *buf, int gid_index)
{
	ibv_cq *cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
	ibv_qp *qp[2] = {};
	Wire me[2]{}, peer[2]{};
	for (std::uint32_t i = 0; i < 2; i++) {
		qp[i] = target_qp(pd, cq);
		me[i].qpn = qp[i]->qp_num;
		me[i].rkey = mr->rkey;
		me[i].addr = reinterpret_cast<std::uintptr_t>(buf) + i * kHalf;
		local_gid(ctx, gid_index, me[i].gid);
	}
	std::memset(buf, 0, kHost);
	xfer(sock, me, peer, sizeof(me));
	for (std::uint32_t i = 0; i < 2; i++)
		if (peer[i].ok)
			rc_connect(qp[i], "QP", peer[i].qpn, peer[i].gid,
				   gid_index, 0);
	sync_peer(sock);
	sync_peer(sock); // both runs
	for (std::uint32_t i = 0; i < 2; i++)
		check(pattern_differs(buf + i * kHalf, kPuts * kLen,
				      kTwoSeed0 + i) < 0 &&
			      buf[i * kHalf + kPuts * kLen] == 0,
		      "process %c's bytes arrived in its half, and only them",
		      "AB"[i]);
	std::memset(buf, 0, kHalf);
	sync_peer(sock);
	sync_peer(sock); // A's run while B was killed
	check(pattern_differs(buf, kPuts * kLen, kTwoSeed0) < 0,
	      "process A's bytes arrived while B was killed");
	for (std::uint32_t i = 0; i < 2; i++)
		ibv_destroy_qp(qp[i]);
	ibv_destroy_cq(cq);
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
		ibv_cq *cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
		ibv_qp *qp = target_qp(pd, cq);
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
		ibv_destroy_cq(cq);
	}
	two_clients(sock, ctx, pd, mr, buf, gid_index);
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
