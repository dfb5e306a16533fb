// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the device-mode programs (rhinet-xpu-dev, rhinet-xpu-mprod) share:
 * the XPU_EXPECT the script sets, the two exports device mode needs (the
 * context's doorbell page, a dma-buf of the xpu's memory for the queues)
 * with their refusal on a kernel without P2PDMA, a queue buffer in that
 * dma-buf, a lane's command, and the target side's RC QP. Needs
 * verbs_guest.h, xpu_guest.h and librhinetdv.
 */
#ifndef XPU_DEVMODE_H
#define XPU_DEVMODE_H
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>

#include "verbs_guest.h"
#include "xpu_guest.h"
#include "xpu/xpu.h"

/* XPU_EXPECT: 1 for p2p, 0 for none, -1 (and a message) otherwise. */
static inline int xpu_expect_p2p(void)
{
	const char *expect = getenv("XPU_EXPECT");

	if (expect && !strcmp(expect, "p2p"))
		return 1;
	if (expect && !strcmp(expect, "none"))
		return 0;
	fprintf(stderr, "XPU_EXPECT=p2p or none\n");
	return -1;
}

/*
 * The context's doorbell page (*db_fd) and [off, off + len) of the xpu's
 * memory (*buf_fd) as dma-bufs; true when both were exported. Without
 * P2PDMA (!expect_p2p) both must be refused with EOPNOTSUPP.
 */
static inline bool xpu_devmode_exports(struct ibv_context *ctx, struct xpu *x,
				       uint64_t off, uint64_t len, int *db_fd,
				       int *buf_fd, bool expect_p2p)
{
	struct xpu_export e = {
		.offset = off, .length = len, .flags = O_CLOEXEC | O_RDWR};
	struct rhinetdv_export_doorbell_attr da = {
		.flags = RHINETDV_EXPORT_DOORBELL_CLOEXEC};
	int r;

	*buf_fd = -1;
	*db_fd = rhinetdv_export_doorbell(ctx, &da, sizeof(da));
	if (!expect_p2p) {
		check(*db_fd < 0 && errno == EOPNOTSUPP,
		      "doorbell export without P2PDMA: %s", strerror(errno));
		check(ioctl(x->fd, XPU_IOC_EXPORT_DMABUF, &e) &&
			      errno == EOPNOTSUPP,
		      "xpu export without P2PDMA: %s", strerror(errno));
		return false;
	}
	check(*db_fd >= 0, "doorbell export: %s", strerror(errno));
	r = ioctl(x->fd, XPU_IOC_EXPORT_DMABUF, &e) ? errno : 0;
	check(!r, "xpu export: %s", strerror(r));
	if (*db_fd < 0 || r)
		return false;
	*buf_fd = e.fd;
	return true;
}

/* [off, off + len) of the dma-buf @buf_fd, which starts at @base. */
static inline struct rhinetdv_queue_buf xpu_queue_buf(struct xpu *x, int buf_fd,
						      uint64_t base,
						      uint64_t off, size_t len)
{
	return (struct rhinetdv_queue_buf){
		.dmabuf_fd = buf_fd,
		.offset = off,
		.length = len,
		.addr = (void *)(x->mem + base + off)};
}

/* The command at offset @pc of the xpu's memory. */
static inline void xpu_put_cmd(struct xpu *x, uint64_t pc, uint8_t op,
			       uint8_t flags, uint32_t len, uint64_t a,
			       uint64_t b, uint64_t imm)
{
	struct xpu_cmd c = {.op = op,
			    .flags = flags,
			    .len = len,
			    .a = a,
			    .b = b,
			    .imm = imm};

	memcpy((void *)(x->mem + pc), &c, sizeof(c));
}

/* The target side's RC QP on a small CQ of its own, or dies. */
static inline struct ibv_qp *xpu_target_qp(struct ibv_context *ctx,
					   struct ibv_pd *pd)
{
	struct ibv_qp_init_attr a = {
		.cap = {.max_send_wr = 1,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;

	a.send_cq = a.recv_cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	qp = a.send_cq ? ibv_create_qp(pd, &a) : NULL;
	if (!qp)
		die("CQ/QP");
	return qp;
}

/* Destroys what xpu_target_qp made. */
static inline void xpu_target_qp_destroy(struct ibv_qp *qp)
{
	struct ibv_cq *cq = qp->send_cq;

	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

#endif
