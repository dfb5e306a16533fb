// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the verbs guest programs (rhinet-qpex, rhinet-fatal, rhinet-gaps,
 * rhinet-dmabuf, rhinet-xpu, rhinet-odp, rhinet-odp-bench) share: checks
 * and messages, a test pattern, the TCP side channel between the two
 * nodes, opening the device, the registered buffer, RC connection set-up
 * and a node with one RC QP.
 */
#ifndef VERBS_GUEST_H
#define VERBS_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Messages start "PROGRAM ROLE: " ("PROGRAM: " while role is NULL). */
extern const char *program;
extern const char *role;
extern int checks, failures;

/* Counts a check; prints "FAIL: ..." if !ok. */
void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "FAIL: WHAT: strerror(errno)" and exits 1. */
void die(const char *what) __attribute__((noreturn));
double now(void);

/*
 * The two-node programs' command line,
 *   PROGRAM [-d DEVICE] [-g GID_INDEX] [-p PORT] [SERVER],
 * into @dev, @gid_index and @port (left as they are if not given); sets
 * role ("client" with a SERVER, else "server"). Returns the SERVER or NULL;
 * exits 2 on a bad option.
 */
const char *peer_args(int argc, char **argv, const char **dev, int *gid_index,
		      int *port);

/* ---- test data ---- */

/* Byte @i of test pattern @seed. */
uint8_t pattern_byte(uint32_t i, uint32_t seed);
/* @len bytes of pattern @seed at @p (host memory or a device's). */
void pattern_fill(volatile uint8_t *p, uint32_t len, uint32_t seed);
/* The first byte of @p that is not pattern @seed, or -1. */
long pattern_differs(const volatile uint8_t *p, uint32_t len, uint32_t seed);

/* ---- counters ---- */

/* Port 1's hw_counters/@name of @dev, read after the driver's 10 ms cache
 * expired; check fails if it cannot be read. */
uint64_t ib_hw_counter(const char *dev, const char *name);
/* The NIC counter @name (the contract's lower-case name) as rhinet-diag
 * shows it through devlink, for counters that are no port statistics;
 * check fails if it is not shown. */
uint64_t nic_counter(const char *name);
/* Frames rhinet.ko's eth0 sent: each rings the kernel's SQ doorbell once,
 * which the NIC counts as the host's. */
uint64_t eth0_tx(void);

/* ---- TCP side channel ---- */

/* Sends @len bytes of @out and receives as many into @in. */
void xfer(int fd, const void *out, void *in, size_t len);
/* Waits until the peer gets here too. */
void sync_peer(int fd);
/* The server (@server NULL) accepts one connection on @port; the client
 * connects to @server, trying again for 30 s. */
int tcp_connect(const char *server, int port);

/* ---- verbs set-up ---- */

/* Opens the device named @name, or dies. */
struct ibv_context *open_device(const char *name);
/* A PD on @ctx and a zeroed, page-aligned buffer of @size registered on it
 * for local write and remote write, read and atomics; the MR is returned,
 * NULL if registration failed. Dies if the PD or the buffer is missing. */
struct ibv_mr *alloc_buffer(struct ibv_context *ctx, size_t size,
			    struct ibv_pd **pd, uint8_t **buf);
/* The raw GID at @gid_index of port 1, or dies. */
void local_gid(struct ibv_context *ctx, int gid_index, uint8_t gid[16]);

/* The attributes ibverbs requires for each RC transition. */
extern const int kRcInitMask, kRcRtrMask, kRcRtsMask;

/* An address toward @gid (global, hop limit 1) through port 1. */
void ah_attr_to(struct ibv_ah_attr *ah, const uint8_t gid[16], int gid_index);
/* RTR toward the RC QP @qpn at @gid, with the attributes kRcRtrMask names. */
void rc_rtr_attr_to(struct ibv_qp_attr *a, uint32_t qpn, const uint8_t gid[16],
		    int gid_index, uint8_t rd_atomic);
/* RTS with the retries rc_connect uses and @rd_atomic reads and atomics
 * outstanding, for kRcRtsMask. */
void rc_rts_attr(struct ibv_qp_attr *a, uint8_t rd_atomic);
/* Takes @qp through INIT (remote write, read and atomics), RTR toward
 * @qpn at @gid and RTS, with @rd_atomic reads and atomics outstanding each
 * way; dies "WHAT to STATE" if a step fails. */
void rc_connect(struct ibv_qp *qp, const char *what, uint32_t qpn,
		const uint8_t gid[16], int gid_index, uint8_t rd_atomic);

/* @len bytes of private anonymous memory, only mapped, never touched
 * (nothing backs them yet); dies if mmap fails. */
uint8_t *map_untouched(size_t len);

/* One node of a two-node RC program: device, PD, registered buffer, one
 * CQ and an RC QP on it. */
struct rc_node {
	const char *dev;
	int gid_index;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr; /* over buf, as alloc_buffer registers it */
	uint8_t *buf;
};

/* Opens @n->dev with a buffer of @buf_size (alloc_buffer), a CQ of @cqe
 * entries and an RC QP of @cap on it; dies if one cannot be made. */
void rc_node_open(struct rc_node *n, size_t buf_size, int cqe,
		  struct ibv_qp_cap cap);
/* Destroys what rc_node_open made (the QP's destroy is a check), prints
 * "PROGRAM ROLE: PASS" or "FAIL" with the checks' counts; the exit status
 * (0 only if no check failed). */
int rc_node_close(struct rc_node *n);

/* Polls @cq for up to @ms milliseconds until @want completions came into
 * @wc; how many came. Dies if polling fails.
 */
int poll_cq_for(struct ibv_cq *cq, struct ibv_wc *wc, int want, int ms);

/* Posts one signalled RDMA @op (WRITE or READ) on @qp: @len bytes between
 * local @laddr (@lkey) and remote @raddr (@rkey); ibv_post_send's result. */
int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
	      uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
	      uint32_t len);

#endif
