// SPDX-License-Identifier: BSD-2-Clause
// userlib's triggered operations (rhinet::Trigger, XferOptions::trigger):
// on a ring of ranks, each
//  - PUSHes into its right neighbour's area triggered at threshold 3: not
//    done after 2 adds, done after the third, the bytes checked by the
//    neighbour after a barrier;
//  - chains a PULL from its right neighbour (waiting on c1, adding to c2)
//    to a PUSH waiting on c2: one add to c1 releases both;
//  - destroys a counter under a parked PUSH: the Request fails with
//    ECANCELED (Syndrome::trigger_gone), and the endpoint goes on;
//  - arms the group's endpoint itself (rhinetdv_set_trigger) for an
//    operation userlib does not trigger, a fetch_add on its right
//    neighbour's word: it waits until the counter is added to;
//  - is refused an add through a moved-from Trigger (EINVAL);
//  - sends a triggered isend that its right neighbour's irecv waits for
//    until the add, and is refused a trigger on an irecv (EINVAL);
//  - chains a triggered fetch_add to the counter a compare_swap waits on:
//    one add releases both;
//  - hands its counters to its left neighbour (Trigger::remote(), pushed
//    into the neighbour's area) and adds to its right neighbour's: a PUSH
//    parked there on threshold 2 goes after the second add only, and each
//    add's value() is the counter before it;
//  - a remote chain: its trigger_add parked on a local counter adds to the
//    right neighbour's counter, on which a PUSH back is parked; one local
//    add releases both, and the PUSH lands here from the left one;
//  - an mcast, and a LOCK chained to the counter its UNLOCK waits on, all
//    triggered: they wait, then one add releases them;
//  - a Communicator's collectives (every rank): an allreduce whose rank 0
//    part is triggered keeps every rank waiting until rank 0's add, then
//    all get the sum; a barrier chained to a counter adds 1 to it; an
//    allreduce parked at every rank on counters then destroyed fails with
//    ECANCELED everywhere and joins nothing: the next one gets the sum;
//  - its adds with a wrong key, and with the handle and key of a counter
//    destroyed since, fail with EACCES (Syndrome::bad_remote_trigger); the
//    PUSH parked on the right neighbour's counter does not go.
// The NIC's trigger_fired and trigger_remote_refused counters of this
// node move exactly by what this rank's operations fired and refused.
//
//   rhinet-run -n 2 --hosts node0,node1 rhinet-trigger-user
//
// Exit status 0 when every check passed on this rank.
#include <infiniband/rhinetdv.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <rhinet/rhinet.hpp>
#include <span>
#include <thread>
#include <utility>
#include <vector>

namespace
{

using namespace std::chrono_literals;

constexpr std::uint32_t kArea = 5;
constexpr std::uint32_t kWordArea = 6; // the fetch_add's word, at 0
constexpr std::size_t kBytes = 4096;
constexpr std::size_t kPushAt = 0; // the first PUSH lands here
constexpr std::size_t kPullFrom = 8192; // the chained PULL reads here
constexpr std::size_t kChainAt = 16384; // the chained PUSH lands here
constexpr std::size_t kRemoteAt = 24576; // the right neighbour's counter
constexpr std::size_t kBackAt = 25600; // the remote chain's PUSH lands here
constexpr std::size_t kMcastAt = 28672; // the triggered mcast lands here
constexpr std::size_t kCollAt = 29696; // operands; results 1 KiB on
constexpr std::size_t kCollCount = 16;
constexpr std::size_t kSmall = 1024;
constexpr std::uint64_t kLock = 0x7e57;

std::byte pattern(std::uint32_t rank, std::size_t i, std::uint32_t salt)
{
	return static_cast<std::byte>((rank * 31 + i * 5 + salt) & 0xff);
}

bool matches(std::span<const std::byte> v, std::uint32_t rank,
	     std::uint32_t salt)
{
	for (std::size_t i = 0; i < v.size(); i++)
		if (v[i] != pattern(rank, i, salt))
			return false;
	return true;
}

int failures = 0;
std::uint32_t me = 0;

void expect(bool ok, const char *what)
{
	if (ok)
		return;
	std::fprintf(stderr, "trigger_user: rank %u: FAIL: %s\n", me, what);
	failures++;
}

template <typename R> void must(const R &r, const char *what)
{
	if (r)
		return;
	std::fprintf(stderr, "trigger_user: rank %u: FAIL: %s: %s\n", me, what,
		     r.error().to_string().c_str());
	failures++;
}

// The request stays in flight for a while: nothing released it.
bool waits(rhinet::Request &r)
{
	std::this_thread::sleep_for(200ms);
	return !r.test();
}

// A NIC counter of this node, read anew (ib_core answers from a read of
// the last 10 ms).
std::uint64_t nic_counter(const char *name)
{
	std::this_thread::sleep_for(20ms);
	char path[160];
	std::snprintf(path, sizeof(path),
		      "/sys/class/infiniband/rhinet0/ports/1/hw_counters/%s",
		      name);
	unsigned long long v = 0;
	if (FILE *f = std::fopen(path, "r")) {
		if (std::fscanf(f, "%llu", &v) != 1)
			v = 0;
		std::fclose(f);
	}
	return v;
}

// This rank's counter as its left neighbour will name it, and the right
// neighbour's as it named it: each PUSHes its own into its left
// neighbour's area (plain bytes; a place of its own per exchange `n`, as a
// rank may still read an earlier one), then a barrier.
rhinet::RemoteTrigger exchange(rhinet::Group &g, std::span<std::byte> mem,
			       std::span<std::byte> local,
			       const rhinet::Trigger &mine, std::size_t n)
{
	const std::uint32_t left = (g.rank() + g.size() - 1) % g.size();
	const rhinet::RemoteTrigger out = mine.remote();
	const std::size_t at = kRemoteAt + n * sizeof(out);
	std::memcpy(local.data() + at, &out, sizeof(out));
	must(g.push(left, kArea, at, local.subspan(at, sizeof(out))).wait(10s),
	     "push of the counter's name");
	must(g.barrier_bootstrap(), "barrier");
	rhinet::RemoteTrigger in{};
	std::memcpy(&in, mem.data() + at, sizeof(in));
	return in;
}

} // namespace

int main()
{
	auto joined = rhinet::Group::join_from_env();
	if (!joined) {
		std::fprintf(stderr, "trigger_user: %s\n",
			     joined.error().to_string().c_str());
		return 1;
	}
	rhinet::Group &g = **joined;
	me = g.rank();
	const std::uint32_t right = (me + 1) % g.size();
	const std::uint32_t left = (me + g.size() - 1) % g.size();

	std::vector<std::byte> mem(32768), local(32768);
	std::vector<std::byte> word_mem(4096);
	auto area = g.area(kArea, mem);
	auto word_area =
		g.area(kWordArea, word_mem, rhinet::Access::remote_atomic);
	auto buf = g.buffer(local);
	if (!area || !buf || !word_area) {
		std::fprintf(stderr, "trigger_user: registration failed\n");
		return 1;
	}
	for (std::size_t i = 0; i < kBytes; i++) {
		local[i] = pattern(me, i, 1);
		mem[kPullFrom + i] = pattern(me, i, 2);
	}
	must(g.barrier_bootstrap(), "barrier");

	// A PUSH at threshold 3.
	auto t = g.trigger();
	must(t, "trigger()");
	if (!t)
		return 1;
	rhinet::XferOptions at3{};
	at3.trigger = {.counter = &*t, .threshold = 3};
	auto r = g.push(right, kArea, kPushAt, std::span(local).first(kBytes),
			at3);
	expect(waits(r), "the PUSH waits at 0 of 3");
	must(t->add(2), "add 2");
	expect(waits(r), "the PUSH waits at 2 of 3");
	auto v = t->read();
	expect(v && *v == 2, "value 2");
	must(t->add(), "add 1");
	must(r.wait(10s), "the PUSH at threshold 3");
	must(g.barrier_bootstrap(), "barrier");
	expect(matches(std::span(mem).subspan(kPushAt, kBytes), left, 1),
	       "the left neighbour's triggered PUSH landed");

	// A chain: PULL (waits on c1, adds to c2), then PUSH (waits on c2).
	auto c1 = g.trigger(), c2 = g.trigger();
	must(c1, "c1");
	must(c2, "c2");
	if (!c1 || !c2)
		return 1;
	rhinet::XferOptions link1{}, link2{};
	link1.trigger = {.counter = &*c1, .threshold = 1, .chain = &*c2};
	link2.trigger = {.counter = &*c2, .threshold = 1};
	auto pull = g.pull(right, kArea, kPullFrom,
			   std::span(local).subspan(kPullFrom, kBytes), link1);
	auto push = g.push(right, kArea, kChainAt,
			   std::span(local).subspan(kPullFrom, kBytes), link2);
	expect(waits(pull) && !push.test(), "the chain waits");
	must(c1->add(), "add to c1");
	must(pull.wait(10s), "the chained PULL");
	must(push.wait(10s), "the PUSH chained behind it");
	v = c2->read();
	expect(v && *v == 1, "the PULL's completion added 1 to c2");
	expect(matches(std::span(local).subspan(kPullFrom, kBytes), right, 2),
	       "the PULL brought the right neighbour's bytes");
	must(g.barrier_bootstrap(), "barrier");
	// What this rank's left neighbour PULLed from here and PUSHed back.
	expect(matches(std::span(mem).subspan(kChainAt, kBytes), me, 2),
	       "the chained PUSH landed");

	// A counter destroyed under a parked PUSH.
	{
		auto gone = g.trigger();
		must(gone, "trigger to destroy");
		if (!gone)
			return 1;
		rhinet::XferOptions o{};
		o.trigger = {.counter = &*gone, .threshold = 5};
		auto parked = g.push(right, kArea, kPushAt,
				     std::span(local).first(kBytes), o);
		expect(waits(parked), "parked");
		{
			rhinet::Trigger dying = std::move(*gone);
			// the moved-from one refuses
			expect(!gone->add() &&
				       gone->add().error().errno_value() ==
					       EINVAL,
			       "a moved-from Trigger: EINVAL");
		} // destroyed here
		auto w = parked.wait(10s);
		expect(!w && w.error().errno_value() == ECANCELED &&
			       w.error().syndrome() ==
				       static_cast<std::uint32_t>(
					       rhinet::Syndrome::trigger_gone),
		       "the parked PUSH fails with ECANCELED, TRIGGER_GONE");
	}
	auto after =
		g.push(right, kArea, kPushAt, std::span(local).first(kBytes));
	must(after.wait(10s), "the endpoint goes on");

	// Any operation of the endpoint, armed through the direct verbs.
	{
		auto armed = g.trigger();
		must(armed, "trigger to arm");
		if (!armed)
			return 1;
		rhinetdv_wr_trigger wt{};
		wt.comp_mask = RHINETDV_WR_TRIGGER_COUNTER;
		wt.counter = armed->get();
		wt.threshold = 1;
		expect(rhinetdv_set_trigger(g.endpoint(), &wt, sizeof(wt)) == 0,
		       "rhinetdv_set_trigger");
		auto fa = g.fetch_add(right, kWordArea, 0, 5);
		expect(waits(fa), "the armed fetch_add waits");
		must(armed->add(), "add to the armed counter");
		must(fa.wait(10s), "the armed fetch_add");
		expect(fa.value() == 0, "the word was 0 before");
		must(g.barrier_bootstrap(), "barrier");
		std::uint64_t w;
		std::memcpy(&w, word_mem.data(), sizeof(w));
		expect(w == 5, "the left neighbour's fetch_add added 5");
	}

	// ---- remote increments ----
	std::uint64_t fired = nic_counter("trigger_fired");
	std::uint64_t fired_now = 0;
	for (std::size_t i = 0; i < kSmall; i++)
		local[kBackAt + i] = pattern(me, i, 3);

	// Adds from the left neighbour release a PUSH parked here at 2.
	{
		auto mine = g.trigger();
		must(mine, "trigger for peers");
		if (!mine)
			return 1;
		expect(mine->remote().handle == mine->handle() &&
			       mine->remote().key == mine->key(),
		       "remote() is handle and key");
		const rhinet::RemoteTrigger theirs =
			exchange(g, mem, local, *mine, 0);
		expect(theirs.handle != 0, "the right neighbour's counter");
		rhinet::XferOptions at2{};
		at2.trigger = {.counter = &*mine, .threshold = 2};
		auto parked =
			g.push(right, kArea, kBackAt,
			       std::span(local).subspan(kBackAt, kSmall), at2);
		must(g.barrier_bootstrap(), "barrier");
		auto a1 = g.trigger_add(right, theirs, 1);
		must(a1.wait(10s), "the first remote add");
		expect(a1.value() == 0, "the counter was 0 before the first");
		expect(waits(parked), "the PUSH waits at 1 of 2");
		must(g.barrier_bootstrap(), "barrier");
		auto a2 = g.trigger_add(right, theirs, 1);
		must(a2.wait(10s), "the second remote add");
		expect(a2.value() == 1, "the counter was 1 before the second");
		must(parked.wait(10s), "the PUSH released by the left rank");
		auto v2 = mine->read();
		expect(v2 && *v2 == 2, "this rank's counter is 2");
		must(g.barrier_bootstrap(), "barrier");
		expect(matches(std::span(mem).subspan(kBackAt, kSmall), left,
			       3),
		       "the PUSH the remote adds released landed");
		fired_now = nic_counter("trigger_fired");
		expect(fired_now - fired == 1,
		       "remote adds: one WQE fired on this node");
		fired = fired_now;
	}

	// A remote chain: go (here) -> add to the right's back -> its PUSH.
	{
		auto go = g.trigger(), back = g.trigger();
		must(go, "go");
		must(back, "back");
		if (!go || !back)
			return 1;
		const rhinet::RemoteTrigger right_back =
			exchange(g, mem, local, *back, 1);
		std::memset(mem.data() + kBackAt, 0, kSmall);
		auto add = g.trigger_add(right, right_back, 1,
					 {.counter = &*go, .threshold = 1});
		rhinet::XferOptions on_back{};
		on_back.trigger = {.counter = &*back, .threshold = 1};
		for (std::size_t i = 0; i < kSmall; i++)
			local[kBackAt + i] = pattern(me, i, 4);
		auto back_push = g.push(
			right, kArea, kBackAt,
			std::span(local).subspan(kBackAt, kSmall), on_back);
		expect(waits(add) && !back_push.test(), "the chain waits");
		must(g.barrier_bootstrap(), "barrier");
		must(go->add(), "add to go");
		must(add.wait(10s), "the parked remote add");
		expect(add.value() == 0, "the right's back was 0");
		must(back_push.wait(10s), "the PUSH the left's add released");
		must(g.barrier_bootstrap(), "barrier");
		expect(matches(std::span(mem).subspan(kBackAt, kSmall), left,
			       4),
		       "the remote chain's PUSH landed");
		fired_now = nic_counter("trigger_fired");
		expect(fired_now - fired == 2,
		       "remote chain: two WQEs fired on this node");
		fired = fired_now;
	}

	// A triggered mcast; a LOCK whose completion releases its UNLOCK.
	{
		auto t2 = g.trigger(), unlock_on = g.trigger();
		must(t2, "mcast trigger");
		must(unlock_on, "unlock trigger");
		if (!t2 || !unlock_on)
			return 1;
		for (std::size_t i = 0; i < kSmall; i++)
			local[kMcastAt + i] = pattern(me, i, 5);
		const std::uint32_t to[] = {right};
		rhinet::XferOptions o{};
		o.trigger = {.counter = &*t2, .threshold = 1};
		auto mc =
			g.mcast(to, kArea, kMcastAt,
				std::span(local).subspan(kMcastAt, kSmall), o);
		auto lk = g.ilock(kLock, 0,
				  {.counter = &*t2,
				   .threshold = 1,
				   .chain = &*unlock_on});
		auto ul = g.iunlock(kLock, 0,
				    {.counter = &*unlock_on, .threshold = 1});
		expect(waits(mc) && !lk.test() && !ul.test(),
		       "mcast, lock and unlock wait");
		must(t2->add(), "add");
		must(mc.wait(10s), "the triggered mcast");
		must(lk.wait(10s), "the triggered lock");
		must(ul.wait(10s), "the unlock its completion released");
		must(g.barrier_bootstrap(), "barrier");
		expect(matches(std::span(mem).subspan(kMcastAt, kSmall), left,
			       5),
		       "the triggered mcast landed");
		// The lock is free again: a plain lock and unlock go.
		must(g.lock(kLock, 0), "the lock is free");
		must(g.unlock(kLock, 0), "and released");
		fired_now = nic_counter("trigger_fired");
		expect(fired_now - fired == 3,
		       "mcast, lock, unlock: three WQEs fired on this node");
		fired = fired_now;
	}

	// Collectives: rank 0's part triggered, a chained barrier, parts
	// flushed by their counter's end.
	{
		auto comm = rhinet::Communicator::create(g, {.id = 3});
		auto go = g.trigger(), done = g.trigger();
		must(comm, "communicator");
		must(go, "collective trigger");
		must(done, "barrier's chain");
		if (!comm || !go || !done)
			return 1;
		auto *op = reinterpret_cast<std::int64_t *>(local.data() +
							    kCollAt);
		std::span<const std::int64_t> send(op, kCollCount);
		std::span<std::int64_t> recv(op + kSmall / 8, kCollCount);
		auto element = [](std::uint32_t rank, std::size_t i,
				  std::int64_t salt) {
			return static_cast<std::int64_t>((rank + 1) * 1000 +
							 i) +
			       salt;
		};
		auto sum_is = [&](std::int64_t salt) {
			for (std::size_t i = 0; i < kCollCount; i++) {
				std::int64_t want = 0;
				for (std::uint32_t k = 0; k < g.size(); k++)
					want += element(k, i, salt);
				if (recv[i] != want)
					return false;
			}
			return true;
		};
		auto fill = [&](std::int64_t salt) {
			for (std::size_t i = 0; i < kCollCount; i++) {
				op[i] = element(me, i, salt);
				recv[i] = -1;
			}
		};
		fill(1);
		rhinet::TriggerOn on{};
		if (me == 0)
			on = {.counter = &*go, .threshold = 1};
		auto ar = comm->iallreduce<std::int64_t>(
			send, recv, rhinet::Reduce::sum, on);
		expect(waits(ar), "every rank waits for rank 0's trigger");
		must(g.barrier_bootstrap(), "barrier");
		if (me == 0)
			must(go->add(), "add");
		must(ar.wait(10s), "the allreduce rank 0's add released");
		expect(sum_is(1), "the triggered allreduce's sum");

		auto br = comm->ibarrier({.chain = &*done});
		must(br.wait(10s), "the chained barrier");
		auto dv = done->read();
		expect(dv && *dv == 1, "the barrier's chain added 1");

		fill(2);
		{
			auto never = g.trigger();
			must(never, "a counter to destroy");
			if (!never)
				return 1;
			auto flushed = comm->iallreduce<std::int64_t>(
				send, recv, rhinet::Reduce::sum,
				{.counter = &*never, .threshold = 1});
			expect(waits(flushed), "parked at every rank");
			{
				rhinet::Trigger dying = std::move(*never);
			} // destroyed under the parked parts
			auto fw = flushed.wait(10s);
			expect(!fw && fw.error().errno_value() == ECANCELED &&
				       fw.error().syndrome() ==
					       static_cast<std::uint32_t>(
						       rhinet::Syndrome::
							       trigger_gone),
			       "a flushed allreduce: ECANCELED, TRIGGER_GONE");
		}
		must(g.barrier_bootstrap(), "barrier");
		expect(recv[0] == -1, "the flushed allreduce wrote nothing");
		must(comm->allreduce<std::int64_t>(send, recv,
						   rhinet::Reduce::sum, 10s),
		     "the allreduce after the flushed one");
		expect(sum_is(2), "its sum");
		fired_now = nic_counter("trigger_fired");
		expect(fired_now - fired == (me == 0 ? 1 : 0),
		       "collectives: rank 0's allreduce fired on its node");
		fired = fired_now;
	}

	// Refusals: a wrong key, a destroyed counter's handle and key.
	{
		const std::uint64_t refused =
			nic_counter("trigger_remote_refused");
		auto guard = g.trigger(), stale = g.trigger();
		must(guard, "guard");
		must(stale, "stale");
		if (!guard || !stale)
			return 1;
		const rhinet::RemoteTrigger right_guard =
			exchange(g, mem, local, *guard, 2);
		const rhinet::RemoteTrigger right_stale =
			exchange(g, mem, local, *stale, 3);
		rhinet::XferOptions o{};
		o.trigger = {.counter = &*guard, .threshold = 1};
		auto parked = g.push(right, kArea, kPushAt,
				     std::span(local).first(kBytes), o);
		{
			rhinet::Trigger dying = std::move(*stale);
		} // destroyed: its handle is stale now
		must(g.barrier_bootstrap(), "barrier");
		const rhinet::RemoteTrigger wrong{right_guard.handle,
						  right_guard.key ^ 0x5a5a};
		auto bad = g.trigger_add(right, wrong, 1);
		auto bw = bad.wait(10s);
		expect(!bw && bw.error().errno_value() == EACCES &&
			       bw.error().syndrome() ==
				       static_cast<std::uint32_t>(
					       rhinet::Syndrome::
						       bad_remote_trigger),
		       "a wrong key: EACCES, BAD_REMOTE_TRIGGER");
		auto gone = g.trigger_add(right, right_stale, 1);
		auto gw = gone.wait(10s);
		expect(!gw && gw.error().errno_value() == EACCES &&
			       gw.error().syndrome() ==
				       static_cast<std::uint32_t>(
					       rhinet::Syndrome::
						       bad_remote_trigger),
		       "a destroyed counter: EACCES, BAD_REMOTE_TRIGGER");
		must(g.barrier_bootstrap(), "barrier");
		expect(waits(parked), "the PUSH parked on the guard waits");
		auto gv = guard->read();
		expect(gv && *gv == 0, "nothing was added to the guard");
		expect(nic_counter("trigger_remote_refused") - refused == 2,
		       "this node refused two adds");
		expect(nic_counter("trigger_fired") == fired, "nothing fired");
		// The left rank's add below must not come before these checks.
		must(g.barrier_bootstrap(), "barrier");
		must(guard->add(), "its owner's add");
		must(parked.wait(10s), "the guarded PUSH goes");
		fired = nic_counter("trigger_fired");
		auto ok = g.trigger_add(right, right_guard, 1);
		must(ok.wait(10s), "the endpoint goes on after refusals");
		// The right rank's guard lives until this rank's add is in.
		must(g.barrier_bootstrap(), "barrier");
	}

	// A triggered isend: the right neighbour's irecv waits for it.
	{
		// Into the registered buffer (the chained PULL's place, done).
		const std::span<std::byte> in =
			std::span(local).subspan(kChainAt, kSmall);
		for (std::size_t i = 0; i < kSmall; i++)
			local[kBackAt + i] = pattern(me, i, 4);
		auto rr = g.irecv(left, 7, in);
		auto ti = g.trigger();
		must(ti, "trigger for the isend");
		if (!ti)
			return 1;
		rhinet::XferOptions o{};
		o.trigger = {.counter = &*ti, .threshold = 1};
		auto s = g.isend(right, 7,
				 std::span(local).subspan(kBackAt, kSmall), o);
		expect(waits(s), "the triggered isend waits");
		// No rank adds before the barrier: the left one's isend waits.
		expect(!rr.test(), "the irecv waits for the parked isend");
		must(g.barrier_bootstrap(), "barrier");
		must(ti->add(), "add to the isend's counter");
		must(s.wait(10s), "the triggered isend");
		must(rr.wait(10s), "the irecv it matched");
		expect(rr.bytes() == kSmall && matches(std::span(in), left, 4),
		       "the left neighbour's triggered isend arrived");
		// An irecv takes no trigger: it waits for its message.
		auto bad = g.irecv(left, 8, in, o);
		auto bw = bad.wait(1s);
		expect(!bw && bw.error().errno_value() == EINVAL,
		       "an irecv with a trigger: EINVAL");
		must(g.barrier_bootstrap(), "barrier");
	}

	// Triggered atomics: a fetch_add chained to the counter a
	// compare_swap waits on; one add releases both.
	{
		auto go = g.trigger(), next = g.trigger();
		must(go, "go");
		must(next, "next");
		if (!go || !next)
			return 1;
		auto fa = g.fetch_add(
			right, kWordArea, 8, 3,
			{.counter = &*go, .threshold = 1, .chain = &*next});
		auto cs = g.compare_swap(right, kWordArea, 16, 0, 99,
					 {.counter = &*next, .threshold = 1});
		expect(waits(fa) && !cs.test(), "the atomics wait");
		must(go->add(), "add to go");
		must(fa.wait(10s), "the triggered fetch_add");
		must(cs.wait(10s), "the compare_swap chained behind it");
		expect(fa.value() == 0 && cs.value() == 0,
		       "both words were 0 before");
		auto nv = next->read();
		expect(nv && *nv == 1, "the fetch_add's completion added 1");
		must(g.barrier_bootstrap(), "barrier");
		std::uint64_t w8, w16;
		std::memcpy(&w8, word_mem.data() + 8, sizeof(w8));
		std::memcpy(&w16, word_mem.data() + 16, sizeof(w16));
		expect(w8 == 3 && w16 == 99,
		       "the left neighbour's triggered atomics landed");
	}

	must(g.sync(10s), "sync");
	must(g.barrier_bootstrap(), "final barrier");
	std::printf("trigger_user: rank %u: %s\n", me,
		    failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
