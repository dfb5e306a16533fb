// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The provider's one CQE decoder (completion.cpp) on runs: one CQE,
// RHN_CQE_X_RUN, standing for run_extra + 1 successful completions of one
// queue of one QP (Documentation/hardware/queues.md, "Runs"). A test
// writes the entries into a CQ of its own as the NIC would, on a QP of
// its own whose WQEs it posts through the provider's send queue
// (sq_write), and polls one completion at a time through poll_cq, the
// ibv_cq_ex calls and direct verbs' drain: the run comes out as that many
// completions, the rest of it stays in the CQ's cursor for the next call,
// and the consumer index moves past the entry only with its last one.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "dv.h"
#include "provider.h"

namespace rhinet
{
namespace
{

constexpr uint32_t kQpn = 5, kOtherQpn = 9;
constexpr uint32_t kCqLog = 4, kSqLog = 6, kRqDepth = 64;

class ProviderRuns : public ::testing::Test
{
      protected:
	void SetUp() override
	{
		ctx = std::make_unique<Context>();
		cq = std::make_unique<Cq>();
		cq->vcq.cq.context = &ctx->vctx.context;
		cq->log_depth = kCqLog;
		ring.assign(1u << kCqLog, rhn_cqe{});
		cq->ring = ring.data();
		cq->record = &record;
		set_cq_ex_ops(cq.get());
		qp = make_qp(kQpn);
		other = make_qp(kOtherQpn);
	}
	void TearDown() override
	{
		for (auto *q : {qp, other}) {
			delete[] q->sq;
			delete[] q->sq_info;
			delete[] q->rq_wr_ids;
			free(q->sq_held);
			delete q;
		}
	}
	Qp *make_qp(uint32_t qpn)
	{
		Qp *q = new Qp();
		q->qpn = qpn;
		q->vqp.qp.context = &ctx->vctx.context;
		q->vqp.qp.qp_num = qpn;
		q->vqp.qp.send_cq = &cq->vcq.cq;
		q->vqp.qp.recv_cq = &cq->vcq.cq;
		q->sq_log = kSqLog;
		q->sq = new uint8_t[size_t{RHN_SQ_SLOT_SIZE} << kSqLog]();
		q->sq_info = new SendSlot[1u << kSqLog]();
		q->rq_depth = kRqDepth;
		q->rq_wr_ids = new uint64_t[kRqDepth]();
		for (uint32_t i = 0; i < kRqDepth; i++)
			q->rq_wr_ids[i] = 100 + i;
		EXPECT_TRUE(ctx->qps.set(qpn, q));
		return q;
	}
	// A WQE of `slots` slots through the provider's send queue; its first
	// slot's index.
	uint32_t post(Qp *q, uint64_t wr_id, bool signaled, uint32_t slots = 1)
	{
		std::vector<uint8_t> w(size_t{RHN_SQ_SLOT_SIZE} * slots, 0);
		auto *h = reinterpret_cast<rhn_send_wqe *>(w.data());
		h->opcode = RHN_OP_WRITE;
		h->flags = signaled ? RHN_WQE_F_SIGNALED : 0;
		h->ext_units = static_cast<uint8_t>(slots - 1);
		uint32_t first = 0;
		EXPECT_EQ(sq_write(q, w.data(), slots, wr_id, true, &first), 0);
		return first;
	}
	// The NIC's next entry: owner bit of its lap, at the producer index.
	void put(rhn_cqe e)
	{
		const uint32_t lap = (producer >> kCqLog) & 1;
		e.flags = static_cast<uint8_t>((e.flags & ~RHN_CQE_F_OWNER) |
					       (lap ? 0 : RHN_CQE_F_OWNER));
		ring[producer & ((1u << kCqLog) - 1)] = e;
		producer++;
	}
	static rhn_cqe send_run(uint32_t qpn, uint32_t last, uint32_t count)
	{
		rhn_cqe e{};
		e.qpn = qpn;
		e.byte_len = 8;
		e.wqe_index = static_cast<uint16_t>(last);
		e.opcode = RHN_CQE_OP_WRITE;
		e.status = RHN_CQE_SUCCESS;
		e.flags = RHN_CQE_F_SQ;
		if (count > 1) {
			e.ext_flags = RHN_CQE_X_RUN;
			e.run_extra = static_cast<uint16_t>(count - 1);
		}
		return e;
	}
	static rhn_cqe recv_run(uint32_t qpn, uint32_t last, uint32_t count,
				uint32_t len)
	{
		rhn_cqe e{};
		e.qpn = qpn;
		e.byte_len = len;
		e.wqe_index = static_cast<uint16_t>(last);
		e.opcode = RHN_CQE_OP_RECV;
		e.status = RHN_CQE_SUCCESS;
		if (count > 1) {
			e.ext_flags = RHN_CQE_X_RUN;
			e.run_extra = static_cast<uint16_t>(count - 1);
		}
		return e;
	}
	int poll(int n, ibv_wc *wc)
	{
		return poll_cq(&cq->vcq.cq, n, wc);
	}
	uint64_t poll_one_id()
	{
		ibv_wc wc{};
		if (poll(1, &wc) != 1)
			return UINT64_MAX;
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
		return wc.wr_id;
	}

	std::unique_ptr<Context> ctx;
	std::unique_ptr<Cq> cq;
	std::vector<rhn_cqe> ring;
	rhn_cq_record record{};
	uint32_t producer = 0;
	Qp *qp = nullptr;
	Qp *other = nullptr;
};

TEST_F(ProviderRuns, ASendRunIsEverySignalledWqeUpToItsIndex)
{
	// 1, 2 signalled; 3 not; 4 signalled and two slots; 5 not; 6 the last.
	post(qp, 1, true);
	post(qp, 2, true);
	post(qp, 3, false);
	post(qp, 4, true, 2);
	post(qp, 5, false);
	const uint32_t last = post(qp, 6, true);
	put(send_run(kQpn, last, 4));
	const uint64_t want[] = {1, 2, 4, 6};
	for (int i = 0; i < 4; i++) {
		ibv_wc wc{};
		ASSERT_EQ(poll(1, &wc), 1) << "completion " << i;
		EXPECT_EQ(wc.wr_id, want[i]);
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
		EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
		EXPECT_EQ(wc.qp_num, kQpn);
		// The entry is the NIC's until its last completion was handed out.
		EXPECT_EQ(cq->consumer, i < 3 ? 0u : 1u);
		EXPECT_EQ(record.consumer_index, i < 3 ? 0u : 1u);
	}
	ibv_wc wc{};
	EXPECT_EQ(poll(1, &wc), 0);
	// Every slot, the unsignalled ones' too, is the poster's again.
	EXPECT_EQ(qp->sq_consumer, qp->sq_producer);
}

TEST_F(ProviderRuns, ACallerAskingForFewerKeepsTheRestForItsNextCall)
{
	for (uint64_t i = 1; i <= 5; i++)
		post(qp, i, true);
	put(send_run(kQpn, 4, 5));
	const uint32_t next = post(other, 50, true);
	put(send_run(kOtherQpn, next, 1));
	ibv_wc wc[3];
	ASSERT_EQ(poll(3, wc), 3);
	EXPECT_EQ(wc[0].wr_id, 1u);
	EXPECT_EQ(wc[2].wr_id, 3u);
	EXPECT_EQ(cq->consumer, 0u);
	ASSERT_EQ(poll(3, wc), 3);
	EXPECT_EQ(wc[0].wr_id, 4u);
	EXPECT_EQ(wc[1].wr_id, 5u);
	EXPECT_EQ(wc[2].wr_id, 50u);
	EXPECT_EQ(wc[2].qp_num, kOtherQpn);
	EXPECT_EQ(cq->consumer, 2u);
	EXPECT_EQ(poll(3, wc), 0);
}

TEST_F(ProviderRuns, AReceiveRunIsTheRqsNextWqesWithItsLength)
{
	qp->rq_consumer = 62; // across the ring's end and the 16-bit index's
	put(recv_run(kQpn, 65, 4, 32));
	for (uint32_t i = 0; i < 4; i++) {
		ibv_wc wc{};
		ASSERT_EQ(poll(1, &wc), 1);
		EXPECT_EQ(wc.wr_id, 100u + ((62 + i) & (kRqDepth - 1)));
		EXPECT_EQ(wc.opcode, IBV_WC_RECV);
		EXPECT_EQ(wc.byte_len, 32u);
		EXPECT_EQ(qp->rq_consumer, 63 + i);
	}
	EXPECT_EQ(cq->consumer, 1u);
}

TEST_F(ProviderRuns, TheExtendedCqHandsOutARunAcrossPolls)
{
	for (uint64_t i = 1; i <= 3; i++)
		post(qp, i, true);
	put(send_run(kQpn, 2, 3));
	put(recv_run(kQpn, 0, 1, 16));
	ibv_cq_ex *cx = &cq->vcq.cq_ex;
	ibv_poll_cq_attr attr{};
	// Two completions, then the batch ends: the entry stays.
	ASSERT_EQ(ibv_start_poll(cx, &attr), 0);
	EXPECT_EQ(cx->wr_id, 1u);
	EXPECT_EQ(ibv_wc_read_opcode(cx), IBV_WC_RDMA_WRITE);
	ASSERT_EQ(ibv_next_poll(cx), 0);
	EXPECT_EQ(cx->wr_id, 2u);
	ibv_end_poll(cx);
	EXPECT_EQ(record.consumer_index, 0u);
	// The next batch starts where that one stopped.
	ASSERT_EQ(ibv_start_poll(cx, &attr), 0);
	EXPECT_EQ(cx->wr_id, 3u);
	ASSERT_EQ(ibv_next_poll(cx), 0);
	EXPECT_EQ(cx->wr_id, 100u);
	EXPECT_EQ(ibv_wc_read_byte_len(cx), 16u);
	EXPECT_EQ(ibv_next_poll(cx), ENOENT);
	ibv_end_poll(cx);
	EXPECT_EQ(record.consumer_index, 2u);
}

TEST_F(ProviderRuns, DirectVerbsDrainARunOneCompletionAtATime)
{
	Endpoint ep{};
	ep.cq = &cq->vcq.cq;
	for (uint64_t i = 1; i <= 4; i++)
		post(qp, i, true);
	put(send_run(kQpn, 3, 4));
	for (uint64_t i = 1; i <= 4; i++) {
		rhinetdv_completion_ex c{};
		ASSERT_EQ(drain(&ep, 1, &c), 1);
		EXPECT_EQ(c.base.wr_id, i);
		EXPECT_EQ(c.base.status, IBV_WC_SUCCESS);
		EXPECT_EQ(c.base.opcode, uint32_t{RHINETDV_OP_PUSH});
		EXPECT_EQ(cq->consumer, i < 4 ? 0u : 1u);
	}
	rhinetdv_completion_ex c{};
	EXPECT_EQ(drain(&ep, 1, &c), 0);
}

TEST_F(ProviderRuns, AHeldTriggeredWqeInsideTheRangeIsNotOfTheRun)
{
	post(qp, 1, true);
	const uint32_t held = post(qp, 2, true);
	ASSERT_EQ(sq_hold(qp, held), 0);
	post(qp, 3, true);
	const uint32_t last = post(qp, 4, true);
	put(send_run(kQpn, last, 3));
	put(send_run(kQpn, held, 1)); // the triggered WQE's own, later
	EXPECT_EQ(poll_one_id(), 1u);
	EXPECT_EQ(poll_one_id(), 3u);
	EXPECT_EQ(poll_one_id(), 4u);
	EXPECT_EQ(poll_one_id(), 2u);
	EXPECT_EQ(qp->sq_num_held, 0u);
}

// The triggered WQE fires and completes first, while the consumer index
// is still before it (nothing behind it completed yet); a run of the WQEs
// behind it comes later. The triggered one was reported by its own CQE:
// the run's expansion passes over its slot (vm_trigger_debugkernel saw a
// parked WRITE's wr_id again as the first completion of such a run).
TEST_F(ProviderRuns, ATriggeredWqeThatCompletedIsNotOfALaterRun)
{
	const uint32_t first = post(qp, 1, true, 2);
	ASSERT_EQ(sq_hold(qp, first), 0);
	const uint32_t second = post(qp, 2, true, 2);
	ASSERT_EQ(sq_hold(qp, second), 0);
	put(send_run(kQpn, first, 1));
	put(send_run(kQpn, second, 1));
	EXPECT_EQ(poll_one_id(), 1u);
	EXPECT_EQ(poll_one_id(), 2u);
	EXPECT_EQ(qp->sq_num_held, 0u);
	// Another parked WQE, then plain ones completing as one run.
	const uint32_t third = post(qp, 3, true, 2);
	ASSERT_EQ(sq_hold(qp, third), 0);
	post(qp, 4, true);
	post(qp, 5, true);
	const uint32_t last = post(qp, 6, true);
	put(send_run(kQpn, last, 3));
	EXPECT_EQ(poll_one_id(), 4u);
	EXPECT_EQ(poll_one_id(), 5u);
	EXPECT_EQ(poll_one_id(), 6u);
	EXPECT_EQ(poll_one_id(), UINT64_MAX);
	EXPECT_EQ(qp->sq_num_held, 1u);
	put(send_run(kQpn, third, 1));
	EXPECT_EQ(poll_one_id(), 3u);
	EXPECT_EQ(qp->sq_consumer, qp->sq_producer);
}

TEST_F(ProviderRuns, ARunLongerThanTheRingSaysEndsAtItsLastWqe)
{
	// Not what a NIC writes: the decoder hands out what the ring has and
	// consumes the entry, rather than inventing completions.
	post(qp, 1, true);
	const uint32_t last = post(qp, 2, true);
	put(send_run(kQpn, last, 5));
	EXPECT_EQ(poll_one_id(), 1u);
	EXPECT_EQ(poll_one_id(), 2u);
	EXPECT_EQ(cq->consumer, 1u);
	EXPECT_EQ(cq->run_given, 0u);
	EXPECT_EQ(poll_one_id(), UINT64_MAX);
}

TEST_F(ProviderRuns, DestroyingTheQpOfARunPartlyHandedOutDropsTheRest)
{
	for (uint64_t i = 1; i <= 3; i++)
		post(qp, i, true);
	put(send_run(kQpn, 2, 3));
	const uint32_t o = post(other, 50, true);
	put(send_run(kOtherQpn, o, 1));
	EXPECT_EQ(poll_one_id(), 1u);
	clean_qp_cqes(qp, true);
	EXPECT_EQ(cq->run_given, 0u);
	// The other QP's entry is next, whole.
	EXPECT_EQ(poll_one_id(), 50u);
	EXPECT_EQ(poll_one_id(), UINT64_MAX);
}

TEST_F(ProviderRuns, AnotherQpsCqesBehindAPartRunMoveWithIt)
{
	// Cleaning a third QP's entries from behind a run partly handed out
	// keeps the run and its cursor.
	Qp *third = make_qp(12);
	const uint32_t t = post(third, 70, true);
	for (uint64_t i = 1; i <= 3; i++)
		post(qp, i, true);
	put(send_run(kQpn, 2, 3));
	put(send_run(12, t, 1));
	EXPECT_EQ(poll_one_id(), 1u);
	clean_qp_cqes(third, true);
	EXPECT_EQ(cq->run_given, 1u);
	EXPECT_EQ(poll_one_id(), 2u);
	EXPECT_EQ(poll_one_id(), 3u);
	EXPECT_EQ(poll_one_id(), UINT64_MAX);
	delete[] third->sq;
	delete[] third->sq_info;
	delete[] third->rq_wr_ids;
	delete third;
}

} // namespace
} // namespace rhinet
