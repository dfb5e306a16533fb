// SPDX-License-Identifier: BSD-2-Clause
/*
 * A verbs user holding objects while its NIC dies (tests/vm/scripts/
 * dead_device.sh injects the fault). It must hear IBV_EVENT_DEVICE_FATAL,
 * see the port go down, be refused new objects at once, and still destroy
 * everything it holds without an error, pinned memory included.
 *
 *   rhinet-fatal [-d DEVICE] [-p] [-r] GO_FILE
 *
 * Creates a PD, a 4 MiB MR, CQs on a completion channel, an RC QP (INIT,
 * a receive posted), a UD QP and an SRQ, prints "rhinet-fatal: ready", and
 * waits until GO_FILE exists (the fault is in). With -p it then asks for a
 * new CQ itself: on a hung NIC that admin command is what finds the death.
 * With -r the device is reset or removed (reset_rescan.sh): the driver
 * lets go of it after DEVICE_FATAL, so the port may no longer answer at
 * all instead of reading DOWN. Exits 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_guest.h"

#define MR_SIZE (4u << 20)

/* The next async event within @timeout_s, or -1. */
static int next_event(struct ibv_context *ctx, double timeout_s)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	int type;

	if (poll(&p, 1, (int)(timeout_s * 1000)) != 1)
		return -1;
	if (ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	ibv_ack_async_event(&ev);
	return type;
}

int main(int argc, char **argv)
{
	const char *dev = "rhinet0", *go;
	struct ibv_context *ctx;
	bool poke = false, removed = false;
	int opt, ev;
	double t;

	program = "rhinet-fatal";
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:pr")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'p')
			poke = true;
		else if (opt == 'r')
			removed = true;
		else
			return 2;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: %s [-d DEVICE] [-p] [-r] GO_FILE\n",
			argv[0]);
		return 2;
	}
	go = argv[optind];

	ctx = open_device(dev);
	/* The objects a user holds when the NIC dies. */
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	void *buf = NULL;

	if (!pd || posix_memalign(&buf, 4096, MR_SIZE))
		die("pd/buffer");
	memset(buf, 0x5a, MR_SIZE); /* really there, so really pinned */
	struct ibv_mr *mr =
		ibv_reg_mr(pd, buf, MR_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);

	if (!mr || !ch)
		die("mr/channel");
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, ch, 0);

	if (!cq || ibv_req_notify_cq(cq, 0))
		die("cq");
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *rc = ibv_create_qp(pd, &qa);

	qa.qp_type = IBV_QPT_UD;
	struct ibv_qp *ud = ibv_create_qp(pd, &qa);
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);

	if (!rc || !ud || !srq)
		die("qp/srq");
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	if (ibv_modify_qp(rc, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		die("RC to INIT");
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(rc, &rwr, &bad))
		die("post_recv");

	printf("rhinet-fatal: ready\n");
	while (access(go, F_OK))
		usleep(20000);
	t = now();
	if (poke) {
		/* Hung NIC: this admin command times out and finds it. */
		struct ibv_cq *late = ibv_create_cq(ctx, 4, NULL, NULL, 0);

		check(!late, "a CQ was created on a hung NIC");
		printf("rhinet-fatal: create_cq on the hung NIC: %s after "
		       "%.1f s\n",
		       late ? "created" : strerror(errno), now() - t);
		if (late)
			ibv_destroy_cq(late);
	}
	/* DEVICE_FATAL, perhaps after other events (the port's). */
	do
		ev = next_event(ctx, 30 - (now() - t));
	while (ev >= 0 && ev != IBV_EVENT_DEVICE_FATAL);
	check(ev == IBV_EVENT_DEVICE_FATAL, "no IBV_EVENT_DEVICE_FATAL");
	printf("rhinet-fatal: DEVICE_FATAL %s after %.1f s\n",
	       ev == IBV_EVENT_DEVICE_FATAL ? "arrived" : "missing", now() - t);

	struct ibv_port_attr pa;

	/* Port events run from a work item: give it a moment. */
	for (int i = 0; i < 50; i++) {
		if (ibv_query_port(ctx, 1, &pa) || pa.state != IBV_PORT_ACTIVE)
			break;
		usleep(100000);
	}
	if (removed) {
		int err = ibv_query_port(ctx, 1, &pa);

		check(err || pa.state == IBV_PORT_DOWN,
		      "port state %d after the device was reset", pa.state);
	} else {
		check(!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_DOWN,
		      "port state %d after the device died", pa.state);
	}

	/* Refused at once: no admin command waits on a dead NIC. */
	t = now();
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);

	check(!pd2 && now() - t < 1.0,
	      "alloc_pd on a dead device: %s after %.2f s",
	      pd2 ? "succeeded" : strerror(errno), now() - t);
	if (pd2)
		ibv_dealloc_pd(pd2);

	/* Everything held is released without an error. */
	check(!ibv_destroy_qp(rc), "destroy RC QP: %s", strerror(errno));
	check(!ibv_destroy_qp(ud), "destroy UD QP: %s", strerror(errno));
	check(!ibv_destroy_srq(srq), "destroy SRQ: %s", strerror(errno));
	check(!ibv_destroy_cq(cq), "destroy CQ: %s", strerror(errno));
	check(!ibv_destroy_comp_channel(ch), "destroy channel");
	check(!ibv_dereg_mr(mr), "dereg MR: %s", strerror(errno));
	check(!ibv_dealloc_pd(pd), "dealloc PD: %s", strerror(errno));
	check(!ibv_close_device(ctx), "close device");
	free(buf);
	printf("rhinet-fatal: %s (%d checks, %d failed)\n",
	       failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
