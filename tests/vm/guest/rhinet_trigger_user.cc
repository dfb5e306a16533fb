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
//  - is refused a trigger on an isend (EINVAL) and an add through a
//    moved-from Trigger (EINVAL).
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

	// Only push and pull take a trigger.
	rhinet::XferOptions bad{};
	bad.trigger = {.counter = &*t, .threshold = 1};
	auto s = g.isend(right, 7, std::span(local).first(16), bad);
	auto sw = s.wait(1s);
	expect(!sw && sw.error().errno_value() == EINVAL,
	       "an isend with a trigger: EINVAL");

	must(g.sync(10s), "sync");
	must(g.barrier_bootstrap(), "final barrier");
	std::printf("trigger_user: rank %u: %s\n", me,
		    failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
