// SPDX-License-Identifier: BSD-2-Clause
/* Shared by the verbs guest programs (see verbs_guest.h). */
#define _GNU_SOURCE
#include "verbs_guest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char *program = "?";
const char *role;
int checks, failures;

static void fail_prefix(void)
{
	if (role)
		printf("%s %s: FAIL: ", program, role);
	else
		printf("%s: FAIL: ", program);
}

void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (ok)
		return;
	failures++;
	fail_prefix();
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void die(const char *what)
{
	const char *err = strerror(errno);

	fail_prefix();
	printf("%s: %s\n", what, err);
	exit(1);
}

double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

uint8_t pattern_byte(uint32_t i, uint32_t seed)
{
	return (uint8_t)(i * 131u + seed * 7u + (i >> 8) + 1);
}

void pattern_fill(volatile uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern_byte(i, seed);
}

long pattern_differs(const volatile uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(i, seed))
			return (long)i;
	return -1;
}

const char *peer_args(int argc, char **argv, const char **dev, int *gid_index,
		      int *port)
{
	const char *server = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "d:g:p:")) != -1) {
		switch (opt) {
		case 'd':
			*dev = optarg;
			break;
		case 'g':
			*gid_index = atoi(optarg);
			break;
		case 'p':
			*port = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEV] [-g GID] [-p PORT] "
				"[SERVER]\n",
				argv[0]);
			exit(2);
		}
	}
	if (optind < argc)
		server = argv[optind];
	role = server ? "client" : "server";
	return server;
}

/* ---- TCP side channel ---------------------------------------------------- */

void xfer(int fd, const void *out, void *in, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)out + done, len - done);
		if (n <= 0)
			die("tcp write");
		done += (size_t)n;
	}
	for (done = 0; done < len;) {
		ssize_t n = read(fd, (char *)in + done, len - done);
		if (n <= 0)
			die("tcp read");
		done += (size_t)n;
	}
}

void sync_peer(int fd)
{
	char a = 's', b;

	xfer(fd, &a, &b, 1);
}

int tcp_connect(const char *server, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port)};
	int fd, one = 1;

	if (!server) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (lfd < 0 || bind(lfd, (void *)&sa, sizeof(sa)) ||
		    listen(lfd, 1))
			die("listen");
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		close(lfd);
		return fd;
	}
	if (inet_pton(AF_INET, server, &sa.sin_addr) != 1)
		die("server address");
	for (int i = 0; i < 120; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && !connect(fd, (void *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		usleep(250000);
	}
	die("connect");
}

/* ---- verbs set-up ---------------------------------------------------------- */

struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open device");
	ibv_free_device_list(list);
	return ctx;
}

struct ibv_mr *alloc_buffer(struct ibv_context *ctx, size_t size,
			    struct ibv_pd **pd, uint8_t **buf)
{
	*pd = ibv_alloc_pd(ctx);
	if (posix_memalign((void **)buf, 4096, size) || !*pd)
		die("buffers");
	memset(*buf, 0, size);
	return ibv_reg_mr(*pd, *buf, size,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
}

void local_gid(struct ibv_context *ctx, int gid_index, uint8_t gid[16])
{
	union ibv_gid g;

	if (ibv_query_gid(ctx, 1, gid_index, &g))
		die("query_gid");
	memcpy(gid, g.raw, 16);
}

const int kRcInitMask =
	IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
const int kRcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
const int kRcRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC;

void ah_attr_to(struct ibv_ah_attr *ah, const uint8_t gid[16], int gid_index)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, gid, 16);
	ah->grh.sgid_index = (uint8_t)gid_index;
	ah->grh.hop_limit = 1;
	ah->port_num = 1;
}

void rc_rtr_attr_to(struct ibv_qp_attr *a, uint32_t qpn, const uint8_t gid[16],
		    int gid_index, uint8_t rd_atomic)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = qpn;
	a->max_dest_rd_atomic = rd_atomic;
	a->min_rnr_timer = 12;
	ah_attr_to(&a->ah_attr, gid, gid_index);
}

void rc_rts_attr(struct ibv_qp_attr *a, uint8_t rd_atomic)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = rd_atomic;
}

static void modify_or_die(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
			  const char *what, const char *state)
{
	char msg[64];
	int err;

	if (!ibv_modify_qp(qp, a, mask))
		return;
	err = errno;
	snprintf(msg, sizeof(msg), "%s to %s", what, state);
	errno = err;
	die(msg);
}

void rc_connect(struct ibv_qp *qp, const char *what, uint32_t qpn,
		const uint8_t gid[16], int gid_index, uint8_t rd_atomic)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_ATOMIC};

	modify_or_die(qp, &a, kRcInitMask, what, "INIT");
	rc_rtr_attr_to(&a, qpn, gid, gid_index, rd_atomic);
	modify_or_die(qp, &a, kRcRtrMask, what, "RTR");
	rc_rts_attr(&a, rd_atomic);
	modify_or_die(qp, &a, kRcRtsMask, what, "RTS");
}

int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
	      uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
	      uint32_t len)
{
	struct ibv_sge sge = {laddr, len, lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {raddr, rkey}};
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, &wr, &bad);
}

int poll_cq_for(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms)
{
	double end = now() + ms / 1000.0;
	int got = 0;

	while (got < want && now() < end) {
		int r = ibv_poll_cq(cq, want - got, wc + got);

		if (r < 0)
			die("ibv_poll_cq");
		got += r;
		if (!r)
			usleep(200); /* let the NIC's threads run */
	}
	return got;
}

uint64_t ib_hw_counter(const char *dev, const char *name)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	usleep(20000); /* the driver caches the counters for 10 ms */
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		check(false, "cannot read %s", path);
	if (f)
		fclose(f);
	return v;
}

uint64_t nic_counter(const char *name)
{
	char line[512], key[64];
	unsigned long long v, value = 0;
	bool in_counters = false, found = false;
	FILE *f = popen("rhinet-diag --all", "r");

	if (!f) {
		check(false, "rhinet-diag: %s", strerror(errno));
		return 0;
	}
	/* "counters" starts a section of "  NAME VALUE" lines. */
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != ' ') {
			in_counters = !strncmp(line, "counters", 8);
			continue;
		}
		if (in_counters && sscanf(line, " %63s %llu", key, &v) == 2 &&
		    !strcmp(key, name)) {
			value = v;
			found = true;
		}
	}
	pclose(f);
	check(found, "rhinet-diag shows no counter %s", name);
	return value;
}

uint64_t eth0_tx(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/class/net/eth0/statistics/tx_packets", "r");

	if (!f || fscanf(f, "%llu", &v) != 1)
		check(false, "cannot read eth0's tx_packets");
	if (f)
		fclose(f);
	return v;
}

/* ---- the two-node RC programs' node ------------------------------------- */

uint8_t *map_untouched(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

void rc_node_open(struct rc_node *n, size_t buf_size, int cqe,
		  struct ibv_qp_cap cap)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = cap};

	n->ctx = open_device(n->dev);
	n->mr = alloc_buffer(n->ctx, buf_size, &n->pd, &n->buf);
	n->cq = ibv_create_cq(n->ctx, cqe, NULL, NULL, 0);
	if (!n->mr || !n->cq)
		die("MR/CQ");
	qa.send_cq = qa.recv_cq = n->cq;
	n->qp = ibv_create_qp(n->pd, &qa);
	if (!n->qp)
		die("create RC QP");
}

int rc_node_close(struct rc_node *n)
{
	check(!ibv_destroy_qp(n->qp), "destroy QP");
	ibv_destroy_cq(n->cq);
	ibv_dereg_mr(n->mr);
	ibv_dealloc_pd(n->pd);
	ibv_close_device(n->ctx);
	free(n->buf);
	printf("%s %s: %s (%d checks, %d failed)\n", program, role,
	       failures ? "FAIL" : "PASS", checks, failures);
	return failures ? 1 : 0;
}
