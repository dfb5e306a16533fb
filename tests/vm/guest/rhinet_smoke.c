// SPDX-License-Identifier: BSD-2-Clause
/*
 * Guest-side smoke test of the emulated NIC, before a kernel driver exists
 * (device access as in rhinet_guest.c).
 *
 *   rhinet-smoke NODE PEER [ROUNDS]
 *
 * Checks that the device is enumerated with our IDs and that BAR0 reports the
 * contract version, this node's ID and MAC. Then brings the engine up through
 * its admin queue, creates the UD management QP (QPN 1), and runs ROUNDS
 * round trips: the lower node sends "hello R" (up to 3 KiB, patterned) until
 * the higher node's "reply R" comes back; every byte is checked.
 * Exit status 0 on success; every failure prints what was wrong.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rhinet_guest.h"

#define QKEY 0x52484e47u
#define EQ_LOG_DEPTH 8
#define CQ_LOG_DEPTH 6
#define WQ_LOG_DEPTH 4
#define RECV_BUFS 4

static int peer;

/* ---- Queues ---- */

static struct dma_page eq, cq, sq, rq, records, bufs[RECV_BUFS];
/* One send buffer per send queue slot: the NIC reads a message when it
 * gets to its WQE, which may be after the next one is posted.
 */
static struct dma_page out_bufs[1u << WQ_LOG_DEPTH];
static uint32_t cqn, qpn, cq_ci, sq_pi, rq_pi;
static uint32_t dma_lkey; /* levels-0 MR: iova = bus address */

#define SQ_RECORD 0
#define RQ_RECORD 8
#define CQ_RECORD 16

static void bring_up(void)
{
	struct rhn_admin_cmd c;
	uint32_t eqn, pdn;

	admin_start();

	eq = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_EQ;
	c.u.create_eq.ring_addr = eq.pa;
	c.u.create_eq.vector = 1;
	c.u.create_eq.log_depth = EQ_LOG_DEPTH;
	eqn = admin(&c, "CREATE_EQ");

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_PD;
	pdn = admin(&c, "CREATE_PD");

	/* Data buffers go through a key, as for any context; this kernel-only
	 * MR maps I/O addresses 1:1 to bus addresses. */
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_MR;
	c.u.create_mr.pdn = pdn;
	c.u.create_mr.access = RHN_ACCESS_LOCAL_WRITE;
	c.u.create_mr.iova = 0;
	c.u.create_mr.length = 1ull << 39;
	c.u.create_mr.levels = 0;
	c.u.create_mr.key_variant = 0x5a;
	dma_lkey = admin(&c, "CREATE_MR");

	cq = dma_alloc();
	records = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_CQ;
	c.u.create_cq.ring = ref(cq.pa);
	c.u.create_cq.record = ref(records.pa + CQ_RECORD);
	c.u.create_cq.eqn = eqn;
	c.u.create_cq.log_depth = CQ_LOG_DEPTH;
	cqn = admin(&c, "CREATE_CQ");

	sq = dma_alloc();
	rq = dma_alloc();
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = RHN_ADMIN_CREATE_QP;
	c.u.create_qp.pdn = pdn;
	c.u.create_qp.send_cqn = cqn;
	c.u.create_qp.recv_cqn = cqn;
	c.u.create_qp.srqn = RHN_NO_SRQ;
	c.u.create_qp.type = RHN_QP_UD;
	/* The well-known QPN 1: this program stands in for the kernel. */
	c.u.create_qp.flags = RHN_CREATE_QP_F_GSI;
	c.u.create_qp.sq_log_depth = WQ_LOG_DEPTH;
	c.u.create_qp.rq_log_depth = WQ_LOG_DEPTH;
	c.u.create_qp.sq_ring = ref(sq.pa);
	c.u.create_qp.rq_ring = ref(rq.pa);
	c.u.create_qp.sq_record = ref(records.pa + SQ_RECORD);
	c.u.create_qp.rq_record = ref(records.pa + RQ_RECORD);
	qpn = admin(&c, "CREATE_QP");
	if (qpn != RHN_QPN_GSI)
		fail("the management QP is %u, expected %u", qpn, RHN_QPN_GSI);

	static const uint8_t states[] = {RHN_QPS_INIT, RHN_QPS_RTR,
					 RHN_QPS_RTS};
	for (unsigned i = 0; i < sizeof(states); i++) {
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = RHN_ADMIN_MODIFY_QP;
		c.u.modify_qp.qpn = qpn;
		c.u.modify_qp.attr_mask = RHN_QP_ATTR_STATE;
		c.u.modify_qp.state = states[i];
		if (states[i] == RHN_QPS_INIT) {
			c.u.modify_qp.attr_mask |= RHN_QP_ATTR_QKEY;
			c.u.modify_qp.qkey = QKEY;
		}
		admin(&c, "MODIFY_QP");
	}
}

static void post_recv(unsigned i)
{
	const uint32_t depth = 1u << WQ_LOG_DEPTH;
	struct rhn_recv_wqe w;

	memset(&w, 0, sizeof(w));
	w.wqe_index = (uint16_t)rq_pi;
	w.num_sge = 1;
	w.sge[0].addr = bufs[i].pa;
	w.sge[0].length = PAGE;
	w.sge[0].lkey = dma_lkey;
	memcpy(rq.va + (rq_pi % depth) * RHN_RQ_WQE_SIZE, &w, sizeof(w));
	rq_pi++;
	*(volatile uint32_t *)(records.va + RQ_RECORD) = rq_pi;
	ring(RHN_DB_RQ, qpn);
}

static void post_send(uint16_t dst_node, uint32_t dst_qpn, size_t len)
{
	const uint32_t depth = 1u << WQ_LOG_DEPTH;
	const struct dma_page *out = &out_bufs[sq_pi % depth];
	uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
	struct rhn_send_wqe *w =
		rhn_wqe_start(buf, RHN_OP_SEND, RHN_WQE_F_SIGNALED, sq_pi);

	w->dst_node = dst_node;
	w->dst_qpn = dst_qpn;
	w->u.status.qkey = QKEY;
	rhn_wqe_put_sge(buf, 0, out->pa, (uint32_t)len, dma_lkey);
	/* One slot: the SGE fits in the base slot, and no tail. */
	rhn_wqe_finish(buf, rhn_wqe_set_sges(buf, 1), NULL);
	memcpy(sq.va + (sq_pi % depth) * RHN_SQ_SLOT_SIZE, buf,
	       RHN_SQ_SLOT_SIZE);
	sq_pi++;
	*(volatile uint32_t *)(records.va + SQ_RECORD) = sq_pi;
	ring(RHN_DB_SQ, qpn);
}

/* The buffer the next post_send() sends from. */
static uint8_t *next_out(void)
{
	return out_bufs[sq_pi % (1u << WQ_LOG_DEPTH)].va;
}

/* Polls one CQE; false if none is ready. */
static bool poll_cq(struct rhn_cqe *out)
{
	const uint32_t depth = 1u << CQ_LOG_DEPTH;
	const uint8_t *raw = cq.va + (cq_ci % depth) * RHN_CQE_SIZE;
	uint8_t want = ((cq_ci / depth) & 1) ^ 1;
	uint8_t flags =
		__atomic_load_n(&raw[RHN_CQE_SIZE - 1], __ATOMIC_ACQUIRE);

	if (!!(flags & RHN_CQE_F_OWNER) != want)
		return false;
	memcpy(out, raw, sizeof(*out));
	cq_ci++;
	*(volatile uint32_t *)(records.va + CQ_RECORD) = cq_ci;
	return true;
}

/*
 * Message of round R from node N: "hello R from node N" (or "reply"), NUL,
 * then a pattern up to a length that varies with R (up to 3 KiB).
 */
static size_t make_message(uint8_t *buf, const char *kind, unsigned round,
			   int from)
{
	size_t len = 64 + (round * 997u) % 3000;
	int n = snprintf((char *)buf, 48, "%s %u from node %d", kind, round,
			 from);

	for (size_t i = n + 1; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + round + from);
	return len;
}

/* Checks a received message; returns its round or -1 if it is stale. */
static int check_message(const struct rhn_cqe *cqe, const char *kind)
{
	static uint8_t want[PAGE];
	/* UD: the payload follows the buffer's GRH room. */
	const uint8_t *got =
		bufs[cqe->wqe_index % RECV_BUFS].va + RHN_UD_GRH_LEN;
	uint32_t byte_len = cqe->byte_len - RHN_UD_GRH_LEN;
	unsigned round;
	char fmt[32];
	size_t len;

	if (cqe->src_node != peer || cqe->src_qpn != 1)
		fail("datagram from node %u QP %u, expected node %d QP 1",
		     cqe->src_node, cqe->src_qpn, peer);
	snprintf(fmt, sizeof(fmt), "%s %%u from node", kind);
	if (sscanf((const char *)got, fmt, &round) != 1)
		fail("received '%.40s', expected a %s", got, kind);
	len = make_message(want, kind, round, peer);
	if (cqe->byte_len < RHN_UD_GRH_LEN || byte_len != len ||
	    memcmp(got, want, len))
		fail("%s %u: %u bytes, expected %zu, or the content differs",
		     kind, round, byte_len, len);
	return (int)round;
}

/* Waits for the next completion, up to @ms; false on timeout. */
static bool wait_cq(struct rhn_cqe *cqe, unsigned ms)
{
	for (uint64_t t0 = now_ms(); !poll_cq(cqe); usleep(100))
		if (now_ms() - t0 > ms)
			return false;
	return true;
}

/*
 * Responder: answer every hello (a resent one again); done when the last
 * round is answered, every reply has left, and no hello came for 2 s. The
 * initiator sends a hello again when no reply came in 200 ms (a reply can
 * be lost for good: UD, and a full receive queue drops it), so the last
 * one may come again after its reply has left.
 */
static void respond(unsigned rounds)
{
	unsigned next = 0, replies_done = 0;
	struct rhn_cqe cqe;

	for (;;) {
		bool done = next >= rounds && replies_done >= sq_pi;

		if (!wait_cq(&cqe, done ? 2000 : 30000)) {
			if (done)
				return;
			fail("no hello %u from node %d in 30 s", next, peer);
		}
		if (cqe.status != RHN_CQE_SUCCESS)
			fail("%s completion status %u syndrome %u",
			     cqe.flags & RHN_CQE_F_SQ ? "reply" : "receive",
			     cqe.status, cqe.vendor_err);
		if (cqe.flags & RHN_CQE_F_SQ) {
			replies_done++;
			continue;
		}
		unsigned got = (unsigned)check_message(&cqe, "hello");

		post_recv(cqe.wqe_index % RECV_BUFS);
		if (sq_pi - replies_done >= (1u << WQ_LOG_DEPTH))
			fail("send queue full of unanswered replies");
		post_send(peer, 1,
			  make_message(next_out(), "reply", got, node));
		if (got + 1 > next)
			next = got + 1;
	}
}

int main(int argc, char **argv)
{
	size_t size;
	uint32_t mac_lo, mac_hi;
	bool initiator;
	unsigned rounds, round, i, resends = 0, sends_done = 0;
	uint64_t t0, round_t0, elapsed_ms;

	if (argc != 3 && argc != 4)
		fail("usage: rhinet-smoke NODE PEER [ROUNDS]");
	program = "rhinet-smoke";
	node = atoi(argv[1]);
	peer = atoi(argv[2]);
	rounds = argc == 4 ? (unsigned)atoi(argv[3]) : 1;
	initiator = node < peer;

	find_device();
	enable_device();
	regs = map_bar(RHN_BAR_REGS, &size);
	if (size < RHN_BAR_REGS_SIZE)
		fail("BAR0 is %zu bytes, expected %u", size, RHN_BAR_REGS_SIZE);
	doorbells = map_bar(RHN_BAR_DOORBELL, &size);
	if (size != (size_t)rd32(RHN_REG_DB_PAGES) * RHN_DB_PAGE_SIZE)
		fail("BAR2 is %zu bytes for %u doorbell pages", size,
		     rd32(RHN_REG_DB_PAGES));

	if (rd32(RHN_REG_VERSION) != RHN_VERSION)
		fail("VERSION 0x%x, expected 0x%x", rd32(RHN_REG_VERSION),
		     RHN_VERSION);
	if (rd32(RHN_REG_NODE_ID) != (uint32_t)node)
		fail("NODE_ID %u, expected %d", rd32(RHN_REG_NODE_ID), node);
	mac_lo = rd32(RHN_REG_MAC_LO);
	mac_hi = rd32(RHN_REG_MAC_HI);
	if (mac_lo != 0x004e5202u ||
	    mac_hi != (uint32_t)(((node & 0xff) << 8) | (node >> 8)))
		fail("MAC registers 0x%08x 0x%08x do not name node %d", mac_lo,
		     mac_hi, node);
	printf("rhinet-smoke[node %d]: version 0x%x caps 0x%x node %u "
	       "mtu %u db_pages %u\n",
	       node, rd32(RHN_REG_VERSION), rd32(RHN_REG_CAPS),
	       rd32(RHN_REG_NODE_ID), rd32(RHN_REG_MTU),
	       rd32(RHN_REG_DB_PAGES));

	bring_up();
	for (i = 0; i < RECV_BUFS; i++) {
		bufs[i] = dma_alloc();
		post_recv(i);
	}
	for (i = 0; i < (1u << WQ_LOG_DEPTH); i++)
		out_bufs[i] = dma_alloc();
	printf("rhinet-smoke[node %d]: engine up, UD QP %u ready\n", node, qpn);

	t0 = now_ms();
	if (!initiator)
		respond(rounds);
	for (round = 0, round_t0 = t0; initiator && round < rounds;) {
		struct rhn_cqe cqe;
		bool replied = false;

		/*
		 * Initiator: send hello ROUND until its reply arrives. A hello
		 * can be lost for good when the peer's NIC is reset after it
		 * arrived (UD promises nothing more), so it is sent again when
		 * no reply came within 200 ms.
		 */
		post_send(peer, 1,
			  make_message(next_out(), "hello", round, node));
		for (uint64_t sent = now_ms(); !replied;) {
			if (!wait_cq(&cqe, 200)) {
				if (sends_done < sq_pi)
					continue; /* still in flight */
				/* per round: the whole run's time grows
				 * with the machine's load
				 */
				if (now_ms() - round_t0 > 30000)
					fail("no reply %u from node %d in 30 s",
					     round, peer);
				if (now_ms() - sent >= 200)
					break;
				continue;
			}
			if (cqe.flags & RHN_CQE_F_SQ) {
				sends_done++;
				/* RETRY_EXC: the peer's NIC was reset while
				 * our hello was in flight. */
				if (cqe.status != RHN_CQE_SUCCESS &&
				    cqe.status != RHN_CQE_RETRY_EXC_ERR)
					fail("send status %u syndrome %u",
					     cqe.status, cqe.vendor_err);
				continue;
			}
			if (cqe.status != RHN_CQE_SUCCESS)
				fail("receive status %u", cqe.status);
			int got = check_message(&cqe, "reply");

			post_recv(cqe.wqe_index % RECV_BUFS);
			replied = got == (int)round;
		}
		if (replied) {
			round++;
			round_t0 = now_ms();
		} else
			resends++;
	}
	elapsed_ms = now_ms() - t0; /* the rounds, not the lingering below */
	/*
	 * Stay up a moment: the engine acknowledges the peer's last reply on
	 * the transport level, and over a lossy fabric the peer may need to
	 * resend it to hear that ACK. Leaving at once would let its reply fail
	 * with RETRY_EXC against a node that is gone.
	 */
	if (initiator)
		usleep(1000000);
	/* Every send completes before the VM ends. */
	while (initiator && sends_done < sq_pi) {
		struct rhn_cqe cqe;

		if (!wait_cq(&cqe, 5000))
			fail("a send never completed");
		if (cqe.flags & RHN_CQE_F_SQ)
			sends_done++;
	}
	printf("rhinet-smoke[node %d]: PASS: %u rounds with node %d in %llu ms"
	       " (%u hellos sent again)\n",
	       node, rounds, peer, (unsigned long long)elapsed_ms, resends);
	print_counters();
	return 0;
}
