// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet.ko's uverbs interface driven from user space without libibverbs:
 * legacy uverbs write() commands on /dev/infiniband/uverbs0, each the core
 * structure of <rdma/ib_user_verbs.h> followed by the driver data of
 * <rdma/rhinet-abi.h>. in_words counts header, core and driver request;
 * out_words the core and driver response, which follow each other at the
 * command's response pointer.
 *
 *   rhinet-uverbs check [NODE]  every check of checks[] below, one line
 *                               each; exits 0 only if all pass
 *   rhinet-uverbs churn [NODE]  creates and destroys one of each object
 *                               forever, never cleaning up (it gets killed)
 *   rhinet-uverbs hold [NODE]   creates one of each object, then sleeps
 *
 * NODE defaults to $NODE. Every object a check creates is tracked; what a
 * check leaves behind (after a failure) is destroyed before the next one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rhinet-abi.h>

#include "rhinet/hw.h"

#define UVERBS_DEV "/dev/infiniband/uverbs0"
#define PORT_SYS "/sys/class/infiniband/rhinet0/ports/1"
#define PORT 1
#define QKEY 0x11111111u
#define MIB (1024ul * 1024)
#define PAGE_SIZE 4096ul
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Queue depths (log2) of the objects the checks create. */
#define CQ_LOG 6
#define SRQ_LOG 5
#define SQ_LOG 4
#define RQ_LOG 4

/* From the kernel's <rdma/ib_verbs.h>; the uAPI headers do not carry them. */
enum {
	IB_QPS_RESET, /* enum ib_qp_state */
	IB_QPS_INIT,
	IB_QPS_RTR,
	IB_QPS_RTS,
};
enum {
	IB_QP_STATE = 1 << 0, /* enum ib_qp_attr_mask */
	IB_QP_ACCESS_FLAGS = 1 << 3,
	IB_QP_PKEY_INDEX = 1 << 4,
	IB_QP_PORT = 1 << 5,
	IB_QP_QKEY = 1 << 6,
	IB_QP_AV = 1 << 7,
	IB_QP_PATH_MTU = 1 << 8,
	IB_QP_TIMEOUT = 1 << 9,
	IB_QP_RETRY_CNT = 1 << 10,
	IB_QP_RNR_RETRY = 1 << 11,
	IB_QP_RQ_PSN = 1 << 12,
	IB_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	IB_QP_MIN_RNR_TIMER = 1 << 15,
	IB_QP_SQ_PSN = 1 << 16,
	IB_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	IB_QP_DEST_QPN = 1 << 20,
};
enum {
	IB_SRQ_MAX_WR = 1 << 0, /* enum ib_srq_attr_mask */
	IB_SRQ_LIMIT = 1 << 1,
	IB_MR_REREG_ACCESS = 1 << 2, /* enum ib_mr_rereg_flags */
	IB_PORT_ACTIVE = 4, /* enum ib_port_state */
	IB_LINK_LAYER_ETHERNET = 2, /* enum rdma_link_layer */
	IB_ATOMIC_HCA = 1, /* enum ib_atomic_cap */
	IB_MTU_1024 = 3, /* enum ib_mtu */
};

#define MR_ALL                                                          \
	(IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE | \
	 IB_UVERBS_ACCESS_REMOTE_READ | IB_UVERBS_ACCESS_REMOTE_ATOMIC)

/* ---- reporting ---------------------------------------------------------- */

static char why[2048]; /* what went wrong in the current check */
static char info[256]; /* what a passing check has to say */

static const char *ename(int err)
{
	const char *name = err ? strerrorname_np(err) : "success";

	return name ? name : "unknown errno";
}

static void vappend(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t n = strlen(buf);

	if (n && n + 2 < size) {
		strcpy(buf + n, "; ");
		n += 2;
	}
	vsnprintf(buf + n, size - n, fmt, ap);
}

static void __attribute__((format(printf, 1, 2))) complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(why, sizeof(why), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(info, sizeof(info), fmt, ap);
	va_end(ap);
}

/* Harness trouble (not the driver's): give up. */
static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rhinet-uverbs: FATAL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

/* cond must hold; else the message (which says what was expected) counts. */
static bool __attribute__((format(printf, 2, 3)))
expect(bool cond, const char *fmt, ...)
{
	va_list ap;

	if (cond)
		return true;
	va_start(ap, fmt);
	vappend(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

/* err (0 or an errno) must be want, or alt when alt is not 0. */
static bool __attribute__((format(printf, 4, 5)))
expect_err(int err, int want, int alt, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (err == want || (alt && err == alt))
		return true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (alt)
		complain("%s: expected %s or %s, got %s", what, ename(want),
			 ename(alt), ename(err));
	else
		complain("%s: expected %s, got %s", what, ename(want),
			 ename(err));
	return false;
}

#define ok(err, ...) expect_err(err, 0, 0, __VA_ARGS__)

/* For churn and hold: every step must work. */
static void must(int err, const char *what)
{
	if (err)
		die("%s: %s", what, ename(err));
}

/* ---- small helpers ------------------------------------------------------ */

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	bool got;

	if (!f)
		return false;
	got = fgets(buf, size, f) != NULL;
	fclose(f);
	return got;
}

static bool read_u64(const char *path, uint64_t *v)
{
	char buf[64];

	return read_line(path, buf, sizeof(buf)) && sscanf(buf, "%lu", v) == 1;
}

/* VmPin of this process in kB, or -1. */
static long vmpin_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* An address range nothing is mapped at (right now). */
static uint64_t unmapped_va(size_t len)
{
	void *p =
		mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap of %zu bytes: %s", len, ename(errno));
	munmap(p, len);
	return (uintptr_t)p;
}

/*
 * Queue memory: an anonymous mapping a page longer than asked for, so a
 * buffer may also start a little after the mapping (misalignment checks).
 */
struct qmem {
	uint8_t *map;
	size_t len;
};

static void qmem_get(struct qmem *m, size_t len)
{
	m->len = (len + 2 * PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	m->map = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->map == MAP_FAILED)
		die("mmap of %zu bytes: %s", m->len, ename(errno));
}

static void qmem_put(struct qmem *m)
{
	if (m->map)
		munmap(m->map, m->len);
	*m = (struct qmem){0};
}

/* ---- one uverbs command ------------------------------------------------- */

struct uv_req {
	uint32_t cmd; /* IB_USER_VERBS_CMD_* */
	void *core; /* starts with the response pointer if there is a response */
	size_t core_len;
	const void *drv; /* driver request */
	size_t drv_len;
	void *resp; /* core response */
	size_t resp_len;
	void *drv_resp; /* driver response, right after the core response */
	size_t drv_resp_len;
};

#define UV_CORE(x) .core = &(x), .core_len = sizeof(x)
#define UV_DRV(x) .drv = &(x), .drv_len = sizeof(x)
#define UV_RESP(x) .resp = &(x), .resp_len = sizeof(x)
#define UV_DRESP(x) .drv_resp = &(x), .drv_resp_len = sizeof(x)

/* Returns 0 or the errno of the write(). */
static int uv_write(int fd, const struct uv_req *r)
{
	uint64_t in[64], out[64]; /* 8-byte aligned */
	size_t in_len =
		sizeof(struct ib_uverbs_cmd_hdr) + r->core_len + r->drv_len;
	size_t out_len = r->resp_len + r->drv_resp_len;
	struct ib_uverbs_cmd_hdr hdr = {
		.command = r->cmd,
		.in_words = in_len / 4,
		.out_words = out_len / 4,
	};
	uint8_t *p = (uint8_t *)in;

	if (in_len > sizeof(in) || out_len > sizeof(out) || in_len % 4 ||
	    out_len % 4)
		die("command %u: %zu bytes in, %zu out", r->cmd, in_len,
		    out_len);
	if (out_len) {
		uint64_t response = (uintptr_t)out;

		memcpy(r->core, &response, sizeof(response));
	}
	memcpy(p, &hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), r->core, r->core_len);
	if (r->drv_len)
		memcpy(p + sizeof(hdr) + r->core_len, r->drv, r->drv_len);
	memset(out, 0, sizeof(out));
	if (write(fd, in, in_len) < 0)
		return errno;
	if (r->resp_len)
		memcpy(r->resp, out, r->resp_len);
	if (r->drv_resp_len)
		memcpy(r->drv_resp, (uint8_t *)out + r->resp_len,
		       r->drv_resp_len);
	return 0;
}

/* ---- contexts and the objects they own ---------------------------------- */

struct uctx {
	int fd;
	int async_fd;
	struct rhinet_alloc_ucontext_resp r;
	volatile uint8_t *db; /* the doorbell page */
};

enum obj_kind {
	OBJ_PD,
	OBJ_MR,
	OBJ_CQ,
	OBJ_SRQ,
	OBJ_QP,
	OBJ_AH
};

/* How each kind is destroyed: a command holding the handle. */
static const struct {
	const char *name;
	uint32_t cmd;
	size_t core_len; /* starts with the response pointer if resp_len */
	size_t resp_len;
	size_t handle_at;
} kinds[] = {
	[OBJ_PD] = {"DEALLOC_PD", IB_USER_VERBS_CMD_DEALLOC_PD,
		    sizeof(struct ib_uverbs_dealloc_pd), 0,
		    offsetof(struct ib_uverbs_dealloc_pd, pd_handle)},
	[OBJ_MR] = {"DEREG_MR", IB_USER_VERBS_CMD_DEREG_MR,
		    sizeof(struct ib_uverbs_dereg_mr), 0,
		    offsetof(struct ib_uverbs_dereg_mr, mr_handle)},
	[OBJ_CQ] = {"DESTROY_CQ", IB_USER_VERBS_CMD_DESTROY_CQ,
		    sizeof(struct ib_uverbs_destroy_cq),
		    sizeof(struct ib_uverbs_destroy_cq_resp),
		    offsetof(struct ib_uverbs_destroy_cq, cq_handle)},
	[OBJ_SRQ] = {"DESTROY_SRQ", IB_USER_VERBS_CMD_DESTROY_SRQ,
		     sizeof(struct ib_uverbs_destroy_srq),
		     sizeof(struct ib_uverbs_destroy_srq_resp),
		     offsetof(struct ib_uverbs_destroy_srq, srq_handle)},
	[OBJ_QP] = {"DESTROY_QP", IB_USER_VERBS_CMD_DESTROY_QP,
		    sizeof(struct ib_uverbs_destroy_qp),
		    sizeof(struct ib_uverbs_destroy_qp_resp),
		    offsetof(struct ib_uverbs_destroy_qp, qp_handle)},
	[OBJ_AH] = {"DESTROY_AH", IB_USER_VERBS_CMD_DESTROY_AH,
		    sizeof(struct ib_uverbs_destroy_ah), 0,
		    offsetof(struct ib_uverbs_destroy_ah, ah_handle)},
};

/* Live objects, in creation order (so the reverse order can destroy). */
struct obj {
	enum obj_kind kind;
	struct uctx *ctx;
	uint32_t handle;
	struct qmem mem; /* queue memory, unmapped once the queue is gone */
};

static struct obj *objs;
static size_t nobjs, objs_cap;

/* Records a new object; takes over *mem if given. */
static void track(struct uctx *c, enum obj_kind kind, uint32_t handle,
		  struct qmem *mem)
{
	if (nobjs == objs_cap) {
		objs_cap = objs_cap ? 2 * objs_cap : 64;
		objs = realloc(objs, objs_cap * sizeof(*objs));
		if (!objs)
			die("out of memory");
	}
	objs[nobjs] = (struct obj){kind, c, handle, {0}};
	if (mem) {
		objs[nobjs].mem = *mem;
		*mem = (struct qmem){0};
	}
	nobjs++;
}

static void untrack_at(size_t i)
{
	qmem_put(&objs[i].mem);
	memmove(&objs[i], &objs[i + 1], (nobjs - i - 1) * sizeof(*objs));
	nobjs--;
}

static int destroy(struct uctx *c, enum obj_kind kind, uint32_t handle)
{
	uint64_t cmd[2] = {0}, resp[1];
	int err;

	memcpy((uint8_t *)cmd + kinds[kind].handle_at, &handle, sizeof(handle));
	err = uv_write(c->fd, &(struct uv_req){
				      .cmd = kinds[kind].cmd,
				      .core = cmd,
				      .core_len = kinds[kind].core_len,
				      .resp = resp,
				      .resp_len = kinds[kind].resp_len,
			      });
	if (err)
		return err;
	for (size_t i = nobjs; i-- > 0;) {
		if (objs[i].ctx == c && objs[i].kind == kind &&
		    objs[i].handle == handle) {
			untrack_at(i);
			break;
		}
	}
	return 0;
}

/* Destroys what was created after mark, newest first; false if one fails. */
static bool cleanup_from(size_t mark)
{
	bool all = true;

	for (size_t i = nobjs; i-- > mark;) {
		struct obj o = objs[i];

		all &= ok(destroy(o.ctx, o.kind, o.handle), "%s of handle %u",
			  kinds[o.kind].name, o.handle);
	}
	return all;
}

static int map_db(const struct uctx *c, uint64_t offset, size_t len, void **p)
{
	*p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, offset);
	return *p == MAP_FAILED ? errno : 0;
}

static void ctx_close(struct uctx *c)
{
	if (c->db)
		munmap((void *)c->db, PAGE_SIZE);
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->fd >= 0)
		close(c->fd);
	/* Closing the file destroyed what the context still owned. */
	for (size_t i = nobjs; i-- > 0;)
		if (objs[i].ctx == c)
			untrack_at(i);
	*c = (struct uctx){.fd = -1, .async_fd = -1};
}

/* open(), GET_CONTEXT and the mmap() of the doorbell page. */
static int ctx_open(struct uctx *c)
{
	struct ib_uverbs_get_context cmd = {0};
	struct ib_uverbs_get_context_resp resp;
	void *db;
	int err;

	*c = (struct uctx){.fd = open(UVERBS_DEV, O_RDWR | O_CLOEXEC),
			   .async_fd = -1};
	if (c->fd < 0)
		return errno;
	err = uv_write(c->fd, &(struct uv_req){
				      .cmd = IB_USER_VERBS_CMD_GET_CONTEXT,
				      UV_CORE(cmd),
				      UV_RESP(resp),
				      UV_DRESP(c->r),
			      });
	if (!err) {
		c->async_fd = resp.async_fd;
		err = map_db(c, c->r.db_mmap_offset, PAGE_SIZE, &db);
	}
	if (err) {
		ctx_close(c);
		return err;
	}
	c->db = db;
	return 0;
}

/* A 32-bit doorbell write, after everything before it. */
static void ring(struct uctx *c, uint32_t offset, uint32_t value)
{
	__sync_synchronize();
	*(volatile uint32_t *)(c->db + offset) = value;
	__sync_synchronize();
}

/* ---- what the checks share ---------------------------------------------- */

static struct {
	int node; /* -1: unknown */
	struct uctx ctx; /* the main context */
	struct ib_uverbs_query_device_resp dev;
	struct ib_uverbs_query_port_resp port;
	uint8_t gid[16]; /* GID index 0 */
	uint8_t rd_atomic; /* RDMA reads/atomics in flight per QP */
	uint32_t pd; /* a PD of the main context for all checks */
	uint8_t *buf; /* 6 MiB, page-aligned, touched */
	uint32_t cq, srq; /* for the QP error table */
} env = {.node = -1};

#define SCRATCH_LEN (6 * MIB)

/* ---- verbs -------------------------------------------------------------- */

static int query_device(struct uctx *c, struct ib_uverbs_query_device_resp *d)
{
	struct ib_uverbs_query_device cmd = {0};

	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_QUERY_DEVICE,
				       UV_CORE(cmd),
				       .resp = d,
				       .resp_len = sizeof(*d),
			       });
}

static int query_port(struct uctx *c, struct ib_uverbs_query_port_resp *p)
{
	struct ib_uverbs_query_port cmd = {.port_num = PORT};

	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_QUERY_PORT,
				       UV_CORE(cmd),
				       .resp = p,
				       .resp_len = sizeof(*p),
			       });
}

static int pd_alloc(struct uctx *c, uint32_t *pd, uint32_t *pdn)
{
	struct ib_uverbs_alloc_pd cmd = {0};
	struct ib_uverbs_alloc_pd_resp resp;
	struct rhinet_alloc_pd_resp dresp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_ALLOC_PD,
					  UV_CORE(cmd),
					  UV_RESP(resp),
					  UV_DRESP(dresp),
				  });

	if (err)
		return err;
	*pd = resp.pd_handle;
	if (pdn)
		*pdn = dresp.pdn;
	track(c, OBJ_PD, *pd, NULL);
	return 0;
}

struct mr {
	uint32_t handle, lkey, rkey;
};

static int mr_reg(struct uctx *c, uint32_t pd, uint64_t va, uint64_t len,
		  uint32_t access, struct mr *mr)
{
	struct ib_uverbs_reg_mr cmd = {
		.start = va,
		.length = len,
		.hca_va = va,
		.pd_handle = pd,
		.access_flags = access,
	};
	struct ib_uverbs_reg_mr_resp resp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_REG_MR,
					  UV_CORE(cmd),
					  UV_RESP(resp),
				  });

	if (err)
		return err;
	*mr = (struct mr){resp.mr_handle, resp.lkey, resp.rkey};
	track(c, OBJ_MR, mr->handle, NULL);
	return 0;
}

/* REG_MR with driver data: an area request (or any bytes to refuse). */
static int mr_reg_drv(struct uctx *c, uint32_t pd, uint64_t va, uint64_t len,
		      uint32_t access, const struct rhinet_reg_mr_cmd *drv,
		      struct mr *mr)
{
	struct ib_uverbs_reg_mr cmd = {
		.start = va,
		.length = len,
		.hca_va = va,
		.pd_handle = pd,
		.access_flags = access,
	};
	struct rhinet_reg_mr_cmd d = *drv;
	struct ib_uverbs_reg_mr_resp resp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_REG_MR,
					  UV_CORE(cmd),
					  UV_DRV(d),
					  UV_RESP(resp),
				  });

	if (err)
		return err;
	*mr = (struct mr){resp.mr_handle, resp.lkey, resp.rkey};
	track(c, OBJ_MR, mr->handle, NULL);
	return 0;
}

static int area_reg(struct uctx *c, uint32_t pd, uint64_t va, uint64_t len,
		    uint32_t area_id, struct mr *mr)
{
	const struct rhinet_reg_mr_cmd drv = {RHINET_REG_MR_AREA, area_id};

	return mr_reg_drv(c, pd, va, len, MR_ALL, &drv, mr);
}

static int mr_rereg_access(struct uctx *c, struct mr *mr, uint32_t access)
{
	struct ib_uverbs_rereg_mr cmd = {
		.mr_handle = mr->handle,
		.flags = IB_MR_REREG_ACCESS,
		.access_flags = access,
	};
	struct ib_uverbs_rereg_mr_resp resp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_REREG_MR,
					  UV_CORE(cmd),
					  UV_RESP(resp),
				  });

	if (!err) {
		mr->lkey = resp.lkey;
		mr->rkey = resp.rkey;
	}
	return err;
}

/* CQ: a request that may be spoiled before it is sent. */
struct cq_req {
	uint32_t cqe;
	int channel; /* completion channel fd, -1 for none */
	uint64_t cookie; /* user_handle: completion events carry it */
	struct {
		struct rhinet_create_cq_cmd cmd;
		uint64_t extra; /* sent only if drv_len covers it */
	} drv;
	size_t drv_len;
	struct qmem mem;
};

struct cq {
	uint32_t handle, cqn, cqe;
};

static size_t cq_buf_len(uint32_t log_depth)
{
	return (32ul << log_depth) + 8;
}

static void cq_req_init(struct cq_req *r, uint32_t log_depth, uint32_t cqe)
{
	qmem_put(&r->mem);
	*r = (struct cq_req){
		.cqe = cqe, .channel = -1, .drv_len = sizeof(r->drv.cmd)};
	qmem_get(&r->mem, cq_buf_len(log_depth));
	r->drv.cmd.log_depth = log_depth;
	r->drv.cmd.buf_va = (uintptr_t)r->mem.map;
	r->drv.cmd.buf_len = cq_buf_len(log_depth);
}

static int cq_create(struct uctx *c, struct cq_req *r, struct cq *cq)
{
	struct ib_uverbs_create_cq cmd = {.user_handle = r->cookie,
					  .cqe = r->cqe,
					  .comp_channel = r->channel};
	struct ib_uverbs_create_cq_resp resp;
	struct rhinet_create_cq_resp dresp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_CREATE_CQ,
					  UV_CORE(cmd),
					  .drv = &r->drv,
					  .drv_len = r->drv_len,
					  UV_RESP(resp),
					  UV_DRESP(dresp),
				  });

	if (err)
		return err;
	*cq = (struct cq){resp.cq_handle, dresp.cqn, resp.cqe};
	track(c, OBJ_CQ, cq->handle, &r->mem);
	return 0;
}

static int cq_new(struct uctx *c, uint32_t log_depth, uint32_t cqe,
		  struct cq *cq)
{
	struct cq_req r = {0};
	int err;

	cq_req_init(&r, log_depth, cqe);
	err = cq_create(c, &r, cq);
	qmem_put(&r.mem);
	return err;
}

/* SRQ */
struct srq_req {
	uint32_t max_wr, max_sge, limit;
	struct rhinet_create_srq_cmd drv;
	struct qmem mem;
};

struct srq {
	uint32_t handle, srqn, max_wr;
};

static size_t srq_buf_len(uint32_t log_depth)
{
	return (64ul << log_depth) + 8;
}

static void srq_req_init(struct srq_req *r, uint32_t log_depth, uint32_t max_wr)
{
	qmem_put(&r->mem);
	*r = (struct srq_req){
		.max_wr = max_wr,
		.max_sge = min_u32(2, env.ctx.r.max_recv_sge),
	};
	qmem_get(&r->mem, srq_buf_len(log_depth));
	r->drv.log_depth = log_depth;
	r->drv.buf_va = (uintptr_t)r->mem.map;
	r->drv.buf_len = srq_buf_len(log_depth);
}

static int srq_create(struct uctx *c, uint32_t pd, struct srq_req *r,
		      struct srq *srq)
{
	struct ib_uverbs_create_srq cmd = {
		.pd_handle = pd,
		.max_wr = r->max_wr,
		.max_sge = r->max_sge,
		.srq_limit = r->limit,
	};
	struct ib_uverbs_create_srq_resp resp;
	struct rhinet_create_srq_resp dresp;
	int err = uv_write(c->fd, &(struct uv_req){
					  .cmd = IB_USER_VERBS_CMD_CREATE_SRQ,
					  UV_CORE(cmd),
					  UV_DRV(r->drv),
					  UV_RESP(resp),
					  UV_DRESP(dresp),
				  });

	if (err)
		return err;
	*srq = (struct srq){resp.srq_handle, dresp.srqn, resp.max_wr};
	track(c, OBJ_SRQ, srq->handle, &r->mem);
	return 0;
}

static int srq_new(struct uctx *c, uint32_t pd, struct srq *srq)
{
	struct srq_req r = {0};
	int err;

	srq_req_init(&r, SRQ_LOG, 1u << SRQ_LOG);
	err = srq_create(c, pd, &r, srq);
	qmem_put(&r.mem);
	return err;
}

static int srq_modify(struct uctx *c, uint32_t srq, uint32_t mask,
		      uint32_t max_wr, uint32_t limit)
{
	struct ib_uverbs_modify_srq cmd = {
		.srq_handle = srq,
		.attr_mask = mask,
		.max_wr = max_wr,
		.srq_limit = limit,
	};

	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_MODIFY_SRQ,
				       UV_CORE(cmd),
			       });
}

static int srq_query(struct uctx *c, uint32_t srq,
		     struct ib_uverbs_query_srq_resp *resp)
{
	struct ib_uverbs_query_srq cmd = {.srq_handle = srq};

	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_QUERY_SRQ,
				       UV_CORE(cmd),
				       .resp = resp,
				       .resp_len = sizeof(*resp),
			       });
}

/* QP */
struct qp_req {
	struct ib_uverbs_create_qp core;
	struct rhinet_create_qp_cmd drv;
	struct qmem mem;
};

struct qp {
	uint32_t handle, qpn;
	uint8_t type;
	struct rhinet_create_qp_resp drv;
};

/* SQ ring, RQ ring, SQ record, RQ record; no RQ with an SRQ. */
static size_t qp_buf_len(uint32_t sq_log, uint32_t rq_log, bool srq)
{
	return (64ul << sq_log) + (srq ? 0 : (64ul << rq_log) + 8) + 8;
}

static void qp_req_layout(struct qp_req *r, uint32_t sq_log, uint32_t rq_log)
{
	size_t len = qp_buf_len(sq_log, rq_log, r->core.is_srq);

	qmem_put(&r->mem);
	qmem_get(&r->mem, len);
	r->drv.sq_log_depth = sq_log;
	r->drv.rq_log_depth = rq_log;
	r->drv.buf_va = (uintptr_t)r->mem.map;
	r->drv.buf_len = len;
}

/*
 * A valid request, srq < 0 for none: as many send WQEs as SQ slots (each
 * fits one slot: base SGEs and inline data only), the RQ full.
 */
static void qp_req_init(struct qp_req *r, const struct uctx *c, uint8_t type,
			uint32_t pd, uint32_t cq, int srq)
{
	struct ib_uverbs_create_qp *q = &r->core;

	qmem_put(&r->mem);
	*r = (struct qp_req){0};
	q->pd_handle = pd;
	q->send_cq_handle = cq;
	q->recv_cq_handle = cq;
	q->is_srq = srq >= 0;
	q->srq_handle = srq < 0 ? 0 : srq;
	/* UD WQEs take a second slot: the GRH. */
	q->max_send_wr = (1u << SQ_LOG) / (type == IB_UVERBS_QPT_UD ? 2 : 1);
	q->max_recv_wr = srq < 0 ? 1u << RQ_LOG : 0;
	q->max_send_sge = RHN_WQE_BASE_SGES;
	q->max_recv_sge = min_u32(2, c->r.max_recv_sge);
	q->max_inline_data = RHN_WQE_BASE_INLINE;
	q->qp_type = type;
	if (type == IB_UVERBS_QPT_DRIVER)
		r->drv.driver_qp_type = RHINET_QP_DRIVER_TYPE_ENDPOINT;
	qp_req_layout(r, SQ_LOG, srq < 0 ? RQ_LOG : 0);
}

static int qp_create(struct uctx *c, struct qp_req *r, struct qp *qp)
{
	struct ib_uverbs_create_qp_resp resp;
	int err;

	err = uv_write(c->fd, &(struct uv_req){
				      .cmd = IB_USER_VERBS_CMD_CREATE_QP,
				      UV_CORE(r->core),
				      UV_DRV(r->drv),
				      UV_RESP(resp),
				      UV_DRESP(qp->drv),
			      });
	if (err)
		return err;
	qp->handle = resp.qp_handle;
	qp->qpn = resp.qpn;
	qp->type = r->core.qp_type;
	track(c, OBJ_QP, qp->handle, &r->mem);
	return 0;
}

static int qp_new(struct uctx *c, uint8_t type, uint32_t pd, uint32_t cq,
		  int srq, struct qp *qp)
{
	struct qp_req r = {0};
	int err;

	qp_req_init(&r, c, type, pd, cq, srq);
	err = qp_create(c, &r, qp);
	qmem_put(&r.mem);
	return err;
}

/* The QP itself, through GID index 0, as the remote end. */
static void dest_self(struct ib_uverbs_qp_dest *d)
{
	*d = (struct ib_uverbs_qp_dest){
		.sgid_index = 0,
		.hop_limit = 1,
		.is_global = 1,
		.port_num = PORT,
	};
	memcpy(d->dgid, env.gid, sizeof(d->dgid));
}

/* One step of the usual path RESET -> INIT -> RTR -> RTS for the QP type. */
static int qp_modify(struct uctx *c, const struct qp *qp, uint8_t state)
{
	bool rc = qp->type == IB_UVERBS_QPT_RC;
	struct ib_uverbs_modify_qp m = {
		.qp_handle = qp->handle,
		.attr_mask = IB_QP_STATE,
		.qp_state = state,
	};

	switch (state) {
	case IB_QPS_INIT:
		m.attr_mask |= IB_QP_PKEY_INDEX | IB_QP_PORT |
			       (rc ? IB_QP_ACCESS_FLAGS : IB_QP_QKEY);
		m.port_num = PORT;
		m.qp_access_flags = IB_UVERBS_ACCESS_REMOTE_WRITE |
				    IB_UVERBS_ACCESS_REMOTE_READ |
				    IB_UVERBS_ACCESS_REMOTE_ATOMIC;
		m.qkey = QKEY;
		break;
	case IB_QPS_RTR:
		if (!rc)
			break;
		m.attr_mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			       IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			       IB_QP_MIN_RNR_TIMER;
		dest_self(&m.dest);
		m.path_mtu =
			env.port.active_mtu ? env.port.active_mtu : IB_MTU_1024;
		m.dest_qp_num = qp->qpn;
		m.max_dest_rd_atomic = env.rd_atomic;
		m.min_rnr_timer = 12;
		break;
	case IB_QPS_RTS:
		m.attr_mask |= IB_QP_SQ_PSN;
		if (!rc)
			break;
		m.attr_mask |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			       IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC;
		m.timeout = 14;
		m.retry_cnt = 7;
		m.rnr_retry = 7;
		m.max_rd_atomic = env.rd_atomic;
		break;
	}
	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_MODIFY_QP,
				       UV_CORE(m),
			       });
}

static int qp_query(struct uctx *c, const struct qp *qp,
		    struct ib_uverbs_query_qp_resp *resp)
{
	struct ib_uverbs_query_qp cmd = {
		.qp_handle = qp->handle,
		.attr_mask = IB_QP_STATE,
	};

	return uv_write(c->fd, &(struct uv_req){
				       .cmd = IB_USER_VERBS_CMD_QUERY_QP,
				       UV_CORE(cmd),
				       .resp = resp,
				       .resp_len = sizeof(*resp),
			       });
}

/* AH to GID index 0 (this node). */
struct ah {
	uint32_t handle;
	struct rhinet_create_ah_resp drv;
};

static int ah_create(struct uctx *c, uint32_t pd, struct ah *ah)
{
	struct ib_uverbs_create_ah cmd = {
		.pd_handle = pd,
		.attr.grh.sgid_index = 0,
		.attr.grh.hop_limit = 1,
		.attr.is_global = 1,
		.attr.port_num = PORT,
	};
	struct ib_uverbs_create_ah_resp resp;
	int err;

	memcpy(cmd.attr.grh.dgid, env.gid, sizeof(env.gid));
	err = uv_write(c->fd, &(struct uv_req){
				      .cmd = IB_USER_VERBS_CMD_CREATE_AH,
				      UV_CORE(cmd),
				      UV_RESP(resp),
				      UV_DRESP(ah->drv),
			      });
	if (err)
		return err;
	ah->handle = resp.ah_handle;
	track(c, OBJ_AH, ah->handle, NULL);
	return 0;
}

/* ---- error tables ------------------------------------------------------- */

/* A request made valid by init, spoiled by tweak, then sent. */
struct err_case {
	const char *what;
	void (*tweak)(void *req);
	int err, alt; /* expected errno, or either of two; 0: accepted */
};

struct err_table {
	const char *cmd;
	void (*init)(void *req);
	int (*send)(void *req);
	void (*release)(void *req);
	const struct err_case *cases;
	size_t ncases;
};

static bool run_err_table(const struct err_table *t)
{
	bool pass = true;

	for (size_t i = 0; i < t->ncases; i++) {
		const struct err_case *c = &t->cases[i];
		uint64_t req[64] = {0}; /* big enough for any request */
		size_t mark = nobjs;
		int err;

		t->init(req);
		c->tweak(req);
		err = t->send(req);
		t->release(req);
		pass &= expect_err(err, c->err, c->alt, "%s with %s", t->cmd,
				   c->what);
		pass &= cleanup_from(mark);
	}
	return pass;
}

/* MR: the scratch buffer, all remote rights. */
struct mr_req {
	uint64_t va, len;
	uint32_t access;
};

static void mr_default(void *req)
{
	*(struct mr_req *)req =
		(struct mr_req){(uintptr_t)env.buf, MIB, MR_ALL};
}

static int mr_send(void *req)
{
	struct mr_req *r = req;
	struct mr mr;

	return mr_reg(&env.ctx, env.pd, r->va, r->len, r->access, &mr);
}

/* The scratch buffer stays. */
static void mr_release(void *req)
{
	(void)req;
}

static void mr_remote_write_only(void *req)
{
	((struct mr_req *)req)->access = IB_UVERBS_ACCESS_REMOTE_WRITE;
}

/* Zero-based regions are not supported (MW_BIND is, since windows). */
static void mr_zero_based(void *req)
{
	((struct mr_req *)req)->access |= IB_UVERBS_ACCESS_ZERO_BASED;
}

static void mr_unknown_bit(void *req)
{
	((struct mr_req *)req)->access |= 1u << 30;
}

static void mr_zero_length(void *req)
{
	((struct mr_req *)req)->len = 0;
}

static void mr_unmapped(void *req)
{
	struct mr_req *r = req;

	r->va = 0x1000;
	r->len = PAGE_SIZE;
}

static const struct err_case mr_cases[] = {
	{"REMOTE_WRITE without LOCAL_WRITE", mr_remote_write_only, EINVAL, 0},
	{"ZERO_BASED", mr_zero_based, EOPNOTSUPP, EINVAL},
	{"access bit 30", mr_unknown_bit, EINVAL, EOPNOTSUPP},
	{"length 0", mr_zero_length, EINVAL, 0},
	{"unmapped address 0x1000", mr_unmapped, EFAULT, ENOMEM},
};

/* CQ: 64 entries. */
static void cq_default(void *req)
{
	cq_req_init(req, CQ_LOG, 1u << CQ_LOG);
}

static int cq_send(void *req)
{
	struct cq cq;

	return cq_create(&env.ctx, req, &cq);
}

static void cq_release(void *req)
{
	qmem_put(&((struct cq_req *)req)->mem);
}

static void cq_cqe_over_depth(void *req)
{
	((struct cq_req *)req)->cqe = (1u << CQ_LOG) + 1;
}

static void cq_depth_over_max(void *req)
{
	uint32_t log_depth = env.ctx.r.max_cq_log_depth + 1;
	struct cq_req *r = req;

	/* A buffer that fits, unless absurdly large: then only the depth. */
	if (log_depth <= 20)
		cq_req_init(r, log_depth, 1u << CQ_LOG);
	else
		r->drv.cmd.log_depth = log_depth;
}

static void cq_buf_short(void *req)
{
	((struct cq_req *)req)->drv.cmd.buf_len -= 8;
}

static void cq_misaligned(void *req)
{
	((struct cq_req *)req)->drv.cmd.buf_va += 8;
}

static void cq_unmapped(void *req)
{
	struct cq_req *r = req;

	r->drv.cmd.buf_va = unmapped_va(r->drv.cmd.buf_len);
}

/* Bit 1 is RHINET_CREATE_QP_MULTI_PRODUCER: unknown to a CQ. */
static void cq_comp_mask(void *req)
{
	((struct cq_req *)req)->drv.cmd.comp_mask = 2;
}

/* RHINET_QUEUE_BUF_DMABUF with stdin or no descriptor as the dma-buf. */
static void cq_dmabuf_stdin(void *req)
{
	((struct cq_req *)req)->drv.cmd.comp_mask = RHINET_QUEUE_BUF_DMABUF;
}

static void cq_dmabuf_closed(void *req)
{
	((struct cq_req *)req)->drv.cmd.comp_mask = RHINET_QUEUE_BUF_DMABUF;
	((struct cq_req *)req)->drv.cmd.dmabuf_fd = -1;
}

/* A dma-buf's fields without the bit that makes them mean anything. */
static void cq_dmabuf_fd_alone(void *req)
{
	((struct cq_req *)req)->drv.cmd.dmabuf_fd = 5;
}

static void cq_cmd_8_bytes(void *req)
{
	((struct cq_req *)req)->drv_len = 8;
}

static void cq_trailing_junk(void *req)
{
	struct cq_req *r = req;

	r->drv.extra = 1;
	r->drv_len = sizeof(r->drv);
}

static void cq_trailing_zeros(void *req)
{
	struct cq_req *r = req;

	r->drv_len = sizeof(r->drv);
}

static const struct err_case cq_cases[] = {
	{"cqe > 1 << log_depth", cq_cqe_over_depth, EINVAL, 0},
	{"log_depth > max_cq_log_depth", cq_depth_over_max, EINVAL, 0},
	{"buf_len 8 bytes short", cq_buf_short, EINVAL, 0},
	{"buf_va not 64-byte aligned", cq_misaligned, EINVAL, 0},
	{"buf_va unmapped", cq_unmapped, EFAULT, 0},
	{"comp_mask 2", cq_comp_mask, EOPNOTSUPP, 0},
	{"a dma-buf that is stdin", cq_dmabuf_stdin, EINVAL, 0},
	{"a dma-buf of descriptor -1", cq_dmabuf_closed, EBADF, 0},
	{"dmabuf_fd without RHINET_QUEUE_BUF_DMABUF", cq_dmabuf_fd_alone,
	 EINVAL, 0},
	{"an 8-byte driver request", cq_cmd_8_bytes, EINVAL, 0},
	{"8 non-zero bytes after the driver request", cq_trailing_junk,
	 EOPNOTSUPP, 0},
	{"8 zero bytes after the driver request", cq_trailing_zeros, 0, 0},
};

/* SRQ: 32 WQEs. */
static void srq_default(void *req)
{
	srq_req_init(req, SRQ_LOG, 1u << SRQ_LOG);
}

static int srq_send(void *req)
{
	struct srq srq;

	return srq_create(&env.ctx, env.pd, req, &srq);
}

static void srq_release(void *req)
{
	qmem_put(&((struct srq_req *)req)->mem);
}

static void srq_wr_over_depth(void *req)
{
	((struct srq_req *)req)->max_wr = (1u << SRQ_LOG) + 1;
}

static void srq_sge_over_max(void *req)
{
	((struct srq_req *)req)->max_sge = env.ctx.r.max_recv_sge + 1;
}

static void srq_buf_short(void *req)
{
	((struct srq_req *)req)->drv.buf_len -= 8;
}

static void srq_misaligned(void *req)
{
	((struct srq_req *)req)->drv.buf_va += 8;
}

static void srq_comp_mask(void *req)
{
	((struct srq_req *)req)->drv.comp_mask = 0x80;
}

/* RHINET_CREATE_SRQ_TM needs an IB_SRQT_TM SRQ. */
static void srq_tm_on_basic(void *req)
{
	((struct srq_req *)req)->drv.comp_mask = RHINET_CREATE_SRQ_TM;
}

static const struct err_case srq_cases[] = {
	{"max_wr > 1 << log_depth", srq_wr_over_depth, EINVAL, 0},
	{"max_sge > max_recv_sge", srq_sge_over_max, EINVAL, 0},
	{"buf_len 8 bytes short", srq_buf_short, EINVAL, 0},
	{"buf_va not 64-byte aligned", srq_misaligned, EINVAL, 0},
	{"comp_mask 0x80", srq_comp_mask, EOPNOTSUPP, 0},
	{"TM comp_mask on a basic SRQ", srq_tm_on_basic, EINVAL, 0},
};

/* QP: RC with its own RQ, on env.cq. */
static void qp_default(void *req)
{
	qp_req_init(req, &env.ctx, IB_UVERBS_QPT_RC, env.pd, env.cq, -1);
}

static int qp_send(void *req)
{
	struct qp qp;

	return qp_create(&env.ctx, req, &qp);
}

static void qp_release(void *req)
{
	qmem_put(&((struct qp_req *)req)->mem);
}

static void qp_send_wr_over_depth(void *req)
{
	((struct qp_req *)req)->core.max_send_wr = (1u << SQ_LOG) + 1;
}

static void qp_recv_wr_over_depth(void *req)
{
	((struct qp_req *)req)->core.max_recv_wr = (1u << RQ_LOG) + 1;
}

static void qp_send_sge_over_max(void *req)
{
	((struct qp_req *)req)->core.max_send_sge = env.ctx.r.max_send_sge + 1;
}

static void qp_recv_sge_over_max(void *req)
{
	((struct qp_req *)req)->core.max_recv_sge = env.ctx.r.max_recv_sge + 1;
}

static void qp_inline_over_max(void *req)
{
	((struct qp_req *)req)->core.max_inline_data = env.ctx.r.max_inline + 1;
}

static void qp_sq_over_max(void *req)
{
	uint32_t log_depth = env.ctx.r.max_wq_log_depth + 1;
	struct qp_req *r = req;

	if (log_depth <= 18)
		qp_req_layout(r, log_depth, RQ_LOG);
	else
		r->drv.sq_log_depth = log_depth;
}

/* WQEs of two slots each: half as many fit. */
static void qp_two_slot_wqes(void *req)
{
	struct qp_req *r = req;

	r->core.max_send_sge = RHN_WQE_BASE_SGES + 1;
	r->core.max_send_wr = (1u << SQ_LOG) / 2;
}

static void qp_two_slot_wqes_over(void *req)
{
	qp_two_slot_wqes(req);
	((struct qp_req *)req)->core.max_send_wr++;
}

static void qp_misaligned(void *req)
{
	((struct qp_req *)req)->drv.buf_va += 8;
}

static void qp_buf_short(void *req)
{
	((struct qp_req *)req)->drv.buf_len -= 8;
}

static void qp_unmapped(void *req)
{
	struct qp_req *r = req;

	r->drv.buf_va = unmapped_va(r->drv.buf_len);
}

/* An SRQ, but the buffer and rq_log_depth still for an RQ of its own. */
static void qp_srq_with_rq(void *req)
{
	struct qp_req *r = req;

	r->core.is_srq = 1;
	r->core.srq_handle = env.srq;
	r->core.max_recv_wr = 0;
}

/* XRC is not supported (UC is, since the UC QP work). */
static void qp_xrc_ini(void *req)
{
	((struct qp_req *)req)->core.qp_type = IB_UVERBS_QPT_XRC_INI;
}

static void qp_driver_type_7(void *req)
{
	struct qp_req *r = req;

	r->core.qp_type = IB_UVERBS_QPT_DRIVER;
	r->drv.driver_qp_type = 7;
}

/* Bit 3: the first one rhinet-abi.h does not define. */
static void qp_comp_mask(void *req)
{
	((struct qp_req *)req)->drv.comp_mask = 8;
}

/* The SQ event index (RHINET_CREATE_QP_SQ_EVENT_INDEX) on a plain QP. */
static void qp_event_index(void *req)
{
	((struct qp_req *)req)->drv.comp_mask = RHINET_CREATE_QP_SQ_EVENT_INDEX;
}

/*
 * Many producers (RHINET_CREATE_QP_MULTI_PRODUCER): an SQ of 64 slots and
 * the buffer 8 bytes longer for the 16-byte SQ record, which is accepted;
 * the variants below spoil one part of it.
 */
static void qp_mp(void *req)
{
	struct qp_req *r = req;

	r->drv.comp_mask = RHINET_CREATE_QP_MULTI_PRODUCER;
	r->core.max_send_wr = 1u << RHINET_MP_MIN_SQ_LOG_DEPTH;
	qp_req_layout(r, RHINET_MP_MIN_SQ_LOG_DEPTH, RQ_LOG);
	r->drv.buf_len += 8;
}

/* The layout of a QP without the bit: the RQ record overlaps the SQ's. */
static void qp_mp_buf_short(void *req)
{
	qp_mp(req);
	((struct qp_req *)req)->drv.buf_len -= 8;
}

/* 32 slots: a doorbell batch and the largest WQE do not fit. */
static void qp_mp_sq_small(void *req)
{
	struct qp_req *r = req;

	r->drv.comp_mask = RHINET_CREATE_QP_MULTI_PRODUCER;
	r->core.max_send_wr = 1u << (RHINET_MP_MIN_SQ_LOG_DEPTH - 1);
	qp_req_layout(r, RHINET_MP_MIN_SQ_LOG_DEPTH - 1, RQ_LOG);
	r->drv.buf_len += 8;
}

/* Nothing to post to. */
static void qp_mp_no_sq(void *req)
{
	qp_mp(req);
	((struct qp_req *)req)->core.max_send_wr = 0;
}

static void qp_mp_unknown_bit(void *req)
{
	qp_mp(req);
	((struct qp_req *)req)->drv.comp_mask |= 8;
}

/* A multi-producer record's word is a count, not an event index. */
static void qp_mp_event_index(void *req)
{
	qp_mp(req);
	((struct qp_req *)req)->drv.comp_mask |=
		RHINET_CREATE_QP_SQ_EVENT_INDEX;
}

static void qp_dmabuf_stdin(void *req)
{
	((struct qp_req *)req)->drv.comp_mask = RHINET_QUEUE_BUF_DMABUF;
}

static void qp_dmabuf_offset_alone(void *req)
{
	((struct qp_req *)req)->drv.dmabuf_offset = 4096;
}

static void qp_reserved(void *req)
{
	((struct qp_req *)req)->drv.reserved[0] = 1;
}

static const struct err_case qp_cases[] = {
	{"max_send_wr > 1 << sq_log_depth", qp_send_wr_over_depth, EINVAL, 0},
	{"max_recv_wr > 1 << rq_log_depth", qp_recv_wr_over_depth, EINVAL, 0},
	{"two-slot WQEs filling the SQ", qp_two_slot_wqes, 0, 0},
	{"two-slot WQEs, one more than fit", qp_two_slot_wqes_over, EINVAL, 0},
	{"max_send_sge > max_send_sge", qp_send_sge_over_max, EINVAL, 0},
	{"max_recv_sge > max_recv_sge", qp_recv_sge_over_max, EINVAL, 0},
	{"max_inline_data > max_inline", qp_inline_over_max, EINVAL, 0},
	{"sq_log_depth > max_wq_log_depth", qp_sq_over_max, EINVAL, 0},
	{"buf_va not 64-byte aligned", qp_misaligned, EINVAL, 0},
	{"buf_len 8 bytes short", qp_buf_short, EINVAL, 0},
	{"buf_va unmapped", qp_unmapped, EFAULT, 0},
	{"an SRQ and rq_log_depth 4", qp_srq_with_rq, EINVAL, 0},
	{"IB_QPT_XRC_INI", qp_xrc_ini, EOPNOTSUPP, EINVAL},
	{"IB_QPT_DRIVER of driver_qp_type 7", qp_driver_type_7, EINVAL, 0},
	{"comp_mask 8", qp_comp_mask, EOPNOTSUPP, 0},
	{"SQ_EVENT_INDEX", qp_event_index, 0, 0},
	{"MULTI_PRODUCER, 64 slots, 16-byte SQ record", qp_mp, 0, 0},
	{"MULTI_PRODUCER, buf_len for an 8-byte SQ record", qp_mp_buf_short,
	 EINVAL, 0},
	{"MULTI_PRODUCER with 32 SQ slots", qp_mp_sq_small, EINVAL, 0},
	{"MULTI_PRODUCER with max_send_wr 0", qp_mp_no_sq, EINVAL, 0},
	{"MULTI_PRODUCER and comp_mask bit 8", qp_mp_unknown_bit, EOPNOTSUPP,
	 0},
	{"MULTI_PRODUCER and SQ_EVENT_INDEX", qp_mp_event_index, EINVAL, 0},
	{"a dma-buf that is stdin", qp_dmabuf_stdin, EINVAL, 0},
	{"dmabuf_offset without RHINET_QUEUE_BUF_DMABUF",
	 qp_dmabuf_offset_alone, EINVAL, 0},
	{"reserved[0] 1", qp_reserved, EOPNOTSUPP, 0},
};

#define ERR_TABLE(name, kind)                                      \
	{                                                          \
		name, kind##_default, kind##_send, kind##_release, \
			kind##_cases, ARRAY_SIZE(kind##_cases)     \
	}

/* ---- the checks --------------------------------------------------------- */

static int try_map(const struct uctx *c, uint64_t offset, size_t len)
{
	void *p;
	int err = map_db(c, offset, len, &p);

	if (!err)
		munmap(p, len);
	return err;
}

static bool check_context(void)
{
	struct uctx *c = &env.ctx, other;
	const struct rhinet_alloc_ucontext_resp *r = &c->r;
	uint32_t other_page;

	if (!ok(ctx_open(c), "GET_CONTEXT and mmap() of the doorbell page") ||
	    !ok(ctx_open(&other), "GET_CONTEXT on a second open()"))
		return false;
	other_page = other.r.db_page;
	ctx_close(&other);
	note("db_page %u (second context %u), node %u", r->db_page, other_page,
	     r->node_id);
	note("max_inline %u, max_send_sge %u, max_recv_sge %u", r->max_inline,
	     r->max_send_sge, r->max_recv_sge);
	note("max_wq_log_depth %u, max_cq_log_depth %u", r->max_wq_log_depth,
	     r->max_cq_log_depth);
	return expect(r->db_page >= 1, "db_page %u, expected >= 1",
		      r->db_page) &&
	       expect(r->db_page_size == PAGE_SIZE,
		      "db_page_size %u, expected 4096", r->db_page_size) &&
	       expect(env.node < 0 || r->node_id == (uint32_t)env.node,
		      "node_id %u, expected %d", r->node_id, env.node) &&
	       expect(r->max_inline && r->max_send_sge && r->max_recv_sge &&
			      r->max_wq_log_depth && r->max_cq_log_depth,
		      "a zero limit: %s", info) &&
	       expect(other_page != r->db_page,
		      "second context got db_page %u too", other_page) &&
	       expect(try_map(c, r->db_mmap_offset + PAGE_SIZE, PAGE_SIZE),
		      "mmap() of the next page worked, expected failure") &&
	       expect(try_map(c, r->db_mmap_offset, 2 * PAGE_SIZE),
		      "mmap() of 8192 bytes worked, expected failure");
}

/*
 * One user holds at most max_contexts_per_user contexts (doorbell pages):
 * the next is EDQUOT, long before the NIC's pages run out, and another
 * user still gets one.
 */
static bool check_user_contexts(void)
{
	enum {
		MAX = 300
	};
	static struct uctx many[MAX];
	unsigned int limit = 0;
	int n = 0, err = 0, status = -1;
	FILE *f = fopen("/sys/module/rhinet/parameters/max_contexts_per_user",
			"r");
	pid_t pid;
	bool good;

	if (!f || fscanf(f, "%u", &limit) != 1)
		limit = 0;
	if (f)
		fclose(f);
	while (n < MAX && !(err = ctx_open(&many[n])))
		n++;
	note("limit %u: %d more contexts, then %s", limit, n, strerror(err));
	/* This user already holds env.ctx. */
	good = expect(limit > 0, "no per-user limit (max_contexts_per_user)") &&
	       expect(err == EDQUOT, "context %d: %s, expected EDQUOT", n + 2,
		      strerror(err)) &&
	       expect((unsigned int)n + 1 == limit,
		      "%d contexts for one user, limit %u", n + 1, limit);
	pid = fork();
	if (pid == 0) {
		struct uctx c;
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(200);
		fd = open(UVERBS_DEV, O_RDWR);
		if (fd < 0)
			_exit(201);
		close(fd);
		_exit(ctx_open(&c));
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		status = WEXITSTATUS(status);
	good = expect(status == 0, "another user's context: %s",
		      status == 200   ? "cannot become that user"
		      : status == 201 ? "cannot open the device"
				      : strerror(status)) &&
	       good;
	while (n > 0)
		ctx_close(&many[--n]);
	return good;
}

static bool check_query_device(void)
{
	const struct ib_uverbs_query_device_resp *d = &env.dev;

	if (!ok(query_device(&env.ctx, &env.dev), "QUERY_DEVICE"))
		return false;
	env.rd_atomic =
		min_u32(1, min_u32(d->max_qp_rd_atom, d->max_qp_init_rd_atom));
	note("max_qp %u, max_cq %u, max_mr %u, max_pd %u", d->max_qp, d->max_cq,
	     d->max_mr, d->max_pd);
	note("max_srq %u, max_qp_wr %u, max_cqe %u", d->max_srq, d->max_qp_wr,
	     d->max_cqe);
	return expect(d->max_qp && d->max_cq && d->max_mr && d->max_pd &&
			      d->max_srq && d->max_qp_wr && d->max_cqe,
		      "a zero limit: %s", info) &&
	       expect(d->atomic_cap == IB_ATOMIC_HCA,
		      "atomic_cap %u, expected %u (IB_ATOMIC_HCA)",
		      d->atomic_cap, IB_ATOMIC_HCA);
}

static bool check_query_port(void)
{
	const struct ib_uverbs_query_port_resp *p = &env.port;

	if (!ok(query_port(&env.ctx, &env.port), "QUERY_PORT 1"))
		return false;
	note("state %u, link_layer %u, gid_tbl_len %u, active_mtu %u", p->state,
	     p->link_layer, p->gid_tbl_len, p->active_mtu);
	return expect(p->state == IB_PORT_ACTIVE,
		      "state %u, expected %u (ACTIVE)", p->state,
		      IB_PORT_ACTIVE) &&
	       expect(p->link_layer == IB_LINK_LAYER_ETHERNET,
		      "link_layer %u, expected %u (Ethernet)", p->link_layer,
		      IB_LINK_LAYER_ETHERNET) &&
	       expect(p->gid_tbl_len >= 1, "gid_tbl_len %u, expected >= 1",
		      p->gid_tbl_len);
}

/* fe80::<EUI-64 of 02:52:4e:00:hi:lo>, the MAC of the node. */
static bool check_gid(void)
{
	static const uint8_t prefix[14] = {0xfe, 0x80, 0,    0,	   0,
					   0,	 0,    0,    0x00, 0x52,
					   0x4e, 0xff, 0xfe, 0x00};
	uint8_t want[16];
	unsigned int w[8];
	char s[64];

	if (!expect(read_line(PORT_SYS "/gids/0", s, sizeof(s)) &&
			    sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1],
				   &w[2], &w[3], &w[4], &w[5], &w[6],
				   &w[7]) == 8,
		    "cannot read %s", PORT_SYS "/gids/0"))
		return false;
	for (int i = 0; i < 8; i++) {
		env.gid[2 * i] = w[i] >> 8;
		env.gid[2 * i + 1] = w[i];
	}
	memcpy(want, prefix, sizeof(prefix));
	want[14] = env.node >> 8;
	want[15] = env.node & 255;
	s[strcspn(s, "\n")] = 0;
	note("%s", s);
	return expect(env.node < 0 || !memcmp(env.gid, want, sizeof(want)),
		      "GID 0 %s is not the link-local GID of node %d's MAC", s,
		      env.node);
}

static bool check_pd(void)
{
	uint32_t pd, pdn, other_pdn;

	if (!ok(pd_alloc(&env.ctx, &env.pd, &pdn), "ALLOC_PD") ||
	    !ok(pd_alloc(&env.ctx, &pd, &other_pdn), "second ALLOC_PD") ||
	    !expect(pdn != other_pdn, "both PDs have pdn %u", pdn) ||
	    !ok(destroy(&env.ctx, OBJ_PD, pd), "DEALLOC_PD"))
		return false;
	note("pdn %u and %u", pdn, other_pdn);
	return true;
}

/* REG_MR of len bytes of the scratch buffer: pins exactly that; DEREG_MR. */
static bool mr_round_trip(size_t len, bool rereg)
{
	long pin0 = vmpin_kb(), pinned;
	struct mr mr;

	if (!ok(mr_reg(&env.ctx, env.pd, (uintptr_t)env.buf, len, MR_ALL, &mr),
		"REG_MR of %zu KiB", len / 1024))
		return false;
	pinned = vmpin_kb() - pin0;
	note("%zu KiB: lkey 0x%x rkey 0x%x, VmPin +%ld kB", len / 1024, mr.lkey,
	     mr.rkey, pinned);
	if (!expect(mr.lkey && mr.lkey == mr.rkey,
		    "lkey 0x%x rkey 0x%x: expected equal and nonzero", mr.lkey,
		    mr.rkey) ||
	    !expect(pinned == (long)len / 1024,
		    "VmPin went up by %ld kB, expected %zu", pinned,
		    len / 1024))
		return false;
	/* New rights in place: the keys peers hold stay, nothing is pinned
	 * again; and back.
	 */
	for (int i = 0; rereg && i < 2; i++) {
		const uint32_t key = mr.lkey;

		if (!ok(mr_rereg_access(
				&env.ctx, &mr,
				i ? MR_ALL
				  : IB_UVERBS_ACCESS_LOCAL_WRITE |
						IB_UVERBS_ACCESS_REMOTE_READ),
			"REREG_MR of the access rights") ||
		    !expect(mr.lkey == key && mr.rkey == key,
			    "REREG_MR of the rights changed the keys 0x%x to "
			    "lkey 0x%x rkey 0x%x",
			    key, mr.lkey, mr.rkey) ||
		    !expect(vmpin_kb() - pin0 == pinned,
			    "REREG_MR of the rights pinned again: VmPin +%ld "
			    "kB",
			    vmpin_kb() - pin0))
			return false;
	}
	if (!ok(destroy(&env.ctx, OBJ_MR, mr.handle), "DEREG_MR"))
		return false;
	return expect(vmpin_kb() == pin0,
		      "VmPin %ld kB after DEREG_MR, was %ld", vmpin_kb(), pin0);
}

static bool check_mr(void)
{
	return mr_round_trip(MIB, true);
}

static bool check_mr_6mib(void)
{
	return mr_round_trip(6 * MIB, false);
}

/*
 * A region on 2 MiB huge pages is translated with 2 MiB pages (the NIC
 * takes up to 1 GiB): ib_umem builds large pages only from DMA segments
 * that large. The driver says which page size it chose.
 */
static bool check_mr_hugepage(void)
{
	const size_t len = 4 * MIB;
	struct ib_uverbs_reg_mr cmd = {
		.length = len,
		.access_flags = MR_ALL,
	};
	struct ib_uverbs_reg_mr_resp resp;
	struct rhinet_reg_mr_resp dresp = {0};
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
	void *buf;
	int err;
	bool good;

	if (f) {
		fputs("8\n", f);
		fclose(f);
	}
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (!expect(buf != MAP_FAILED, "no 2 MiB huge pages: %s",
		    strerror(errno)))
		return false;
	memset(buf, 0x3c, len);
	cmd.start = cmd.hca_va = (uintptr_t)buf;
	cmd.pd_handle = env.pd;
	err = uv_write(env.ctx.fd, &(struct uv_req){
					   .cmd = IB_USER_VERBS_CMD_REG_MR,
					   UV_CORE(cmd),
					   UV_RESP(resp),
					   UV_DRESP(dresp),
				   });
	good = ok(err, "REG_MR of 4 MiB on huge pages");
	if (!err) {
		track(&env.ctx, OBJ_MR, resp.mr_handle, NULL);
		note("page_shift %u", dresp.page_shift);
		good = expect(dresp.page_shift >= 21,
			      "translated with 2^%u-byte pages, expected 2 MiB",
			      dresp.page_shift) &&
		       ok(destroy(&env.ctx, OBJ_MR, resp.mr_handle),
			  "DEREG_MR");
	}
	munmap(buf, len);
	return good;
}

static bool check_mr_errors(void)
{
	static const struct err_table t = ERR_TABLE("REG_MR", mr);

	return run_err_table(&t);
}

/* The areas counter, after the hw_counters cache (10 ms) expired. */
static bool read_areas(uint64_t *v)
{
	usleep(30000);
	return expect(read_u64(PORT_SYS "/hw_counters/areas", v),
		      "cannot read %s", PORT_SYS "/hw_counters/areas");
}

/*
 * Areas through REG_MR's driver data: one ID per process (EEXIST), another
 * process may use the same ID, bad requests refused, rereg refused, the
 * area gone with its MR (the areas counter).
 */
static bool check_area(void)
{
	const struct rhinet_reg_mr_cmd zero = {0},
				       bad_mask = {RHINET_REG_MR_AREA | 0x80,
						   1},
				       no_mask = {0, 9};
	const struct rhinet_alloc_ucontext_resp *r = &env.ctx.r;
	uint64_t base = (uintptr_t)env.buf, before, during, after;
	static struct uctx other; /* tracked objects point at it */
	struct mr a, b, plain, other_mr;
	uint32_t other_pd;

	note("max_areas %u", r->max_areas);
	if (!expect(r->comp_mask & RHINET_UCONTEXT_RESP_AREAS,
		    "ucontext comp_mask %#x without AREAS", r->comp_mask) ||
	    !expect(r->max_areas > 0, "max_areas 0") || !read_areas(&before) ||
	    !ok(area_reg(&env.ctx, env.pd, base, 2 * PAGE_SIZE, 5, &a),
		"REG_MR as area 5") ||
	    !expect_err(area_reg(&env.ctx, env.pd, base + 2 * PAGE_SIZE,
				 PAGE_SIZE, 5, &b),
			EEXIST, 0, "REG_MR as area 5 again") ||
	    !expect_err(mr_reg_drv(&env.ctx, env.pd, base, PAGE_SIZE, MR_ALL,
				   &bad_mask, &b),
			EOPNOTSUPP, 0, "REG_MR with comp_mask 0x81") ||
	    !expect_err(mr_reg_drv(&env.ctx, env.pd, base, PAGE_SIZE, MR_ALL,
				   &no_mask, &b),
			EOPNOTSUPP, 0,
			"REG_MR with area_id but no comp_mask") ||
	    !ok(mr_reg_drv(&env.ctx, env.pd, base, PAGE_SIZE, MR_ALL, &zero,
			   &plain),
		"REG_MR with zeroed driver data") ||
	    !expect_err(mr_rereg_access(&env.ctx, &a, MR_ALL), EOPNOTSUPP, 0,
			"REREG_MR of an area's MR") ||
	    !read_areas(&during))
		return false;
	/* Area IDs are per process: another context may use 5 too. */
	if (!ok(ctx_open(&other), "GET_CONTEXT of a second context") ||
	    !ok(pd_alloc(&other, &other_pd, NULL), "ALLOC_PD there") ||
	    !ok(area_reg(&other, other_pd, base, PAGE_SIZE, 5, &other_mr),
		"REG_MR as area 5 in the second context") ||
	    !ok(destroy(&other, OBJ_MR, other_mr.handle), "DEREG_MR there") ||
	    !ok(destroy(&other, OBJ_PD, other_pd), "DEALLOC_PD there"))
		return false;
	ctx_close(&other);
	if (!ok(destroy(&env.ctx, OBJ_MR, plain.handle), "DEREG_MR plain") ||
	    !ok(destroy(&env.ctx, OBJ_MR, a.handle), "DEREG_MR of area 5") ||
	    !read_areas(&after) ||
	    !ok(area_reg(&env.ctx, env.pd, base, PAGE_SIZE, 5, &a),
		"REG_MR as area 5 after its DEREG_MR") ||
	    !ok(destroy(&env.ctx, OBJ_MR, a.handle), "DEREG_MR of area 5"))
		return false;
	note("areas counter %lu, with area 5 %lu, after %lu", before, during,
	     after);
	return expect(during == before + 1 && after == before,
		      "areas counter %lu -> %lu -> %lu", before, during, after);
}

/* Areas until the device says no, at most max_areas; then all freed. */
static bool check_area_limit(void)
{
	uint32_t max = env.ctx.r.max_areas, n = 0;
	size_t mark = nobjs;
	uint64_t left;
	struct mr mr;
	bool pass;
	int err = 0;

	if (!expect(max <= 1u << 16, "max_areas %u: too many to try", max))
		return false;
	while (n <= max &&
	       !(err = area_reg(&env.ctx, env.pd, (uintptr_t)env.buf, PAGE_SIZE,
				1000 + n, &mr)))
		n++;
	note("%u areas registered (max_areas %u), then %s", n, max, ename(err));
	pass = expect(n <= max, "%u areas, more than max_areas %u", n, max) &&
	       expect(n >= max / 2, "only %u areas of max_areas %u", n, max) &&
	       expect_err(err, ENOSPC, 0, "REG_MR as area number %u", n + 1);
	pass &= cleanup_from(mark);
	return pass && read_areas(&left) &&
	       expect(left == 0, "areas counter %lu after freeing all", left);
}

static bool check_cq(void)
{
	long pin0 = vmpin_kb(), pin1;
	struct cq a, b;

	if (!ok(cq_new(&env.ctx, CQ_LOG, 1u << CQ_LOG, &a),
		"CREATE_CQ of 64 entries") ||
	    !ok(cq_new(&env.ctx, 4, 10, &b),
		"CREATE_CQ of 10 entries, log_depth 4"))
		return false;
	pin1 = vmpin_kb();
	note("cqn %u (cqe %u), cqn %u (cqe %u), VmPin +%ld kB", a.cqn, a.cqe,
	     b.cqn, b.cqe, pin1 - pin0);
	return expect(a.cqe >= 64 && b.cqe >= 10,
		      "cqe %u and %u, asked for 64 and 10", a.cqe, b.cqe) &&
	       expect(a.cqn != b.cqn, "both CQs have cqn %u", a.cqn) &&
	       expect(pin1 > pin0, "VmPin %ld kB with two CQs, was %ld", pin1,
		      pin0) &&
	       ok(destroy(&env.ctx, OBJ_CQ, b.handle), "DESTROY_CQ") &&
	       ok(destroy(&env.ctx, OBJ_CQ, a.handle), "DESTROY_CQ") &&
	       expect(vmpin_kb() == pin0,
		      "VmPin %ld kB after DESTROY_CQ, was %ld", vmpin_kb(),
		      pin0);
}

static bool check_cq_errors(void)
{
	static const struct err_table t = ERR_TABLE("CREATE_CQ", cq);

	return run_err_table(&t);
}

static bool check_srq(void)
{
	struct ib_uverbs_query_srq_resp q;
	struct srq s;

	if (!ok(srq_new(&env.ctx, env.pd, &s), "CREATE_SRQ of 32 WQEs"))
		return false;
	note("srqn %u, max_wr %u", s.srqn, s.max_wr);
	return expect(s.max_wr >= 1u << SRQ_LOG, "max_wr %u, asked for %u",
		      s.max_wr, 1u << SRQ_LOG) &&
	       ok(srq_modify(&env.ctx, s.handle, IB_SRQ_LIMIT, 0, 8),
		  "MODIFY_SRQ limit 8") &&
	       ok(srq_query(&env.ctx, s.handle, &q), "QUERY_SRQ") &&
	       expect(q.srq_limit == 8, "QUERY_SRQ: srq_limit %u, expected 8",
		      q.srq_limit) &&
	       expect_err(srq_modify(&env.ctx, s.handle, IB_SRQ_LIMIT, 0,
				     1u << SRQ_LOG),
			  EINVAL, 0, "MODIFY_SRQ limit 32 of 32") &&
	       expect_err(srq_modify(&env.ctx, s.handle, IB_SRQ_MAX_WR, 16, 0),
			  EOPNOTSUPP, 0, "MODIFY_SRQ max_wr (resize)") &&
	       ok(destroy(&env.ctx, OBJ_SRQ, s.handle), "DESTROY_SRQ");
}

static bool check_srq_errors(void)
{
	static const struct err_table t = ERR_TABLE("CREATE_SRQ", srq);

	return run_err_table(&t);
}

/*
 * A QP of the type on a fresh CQ (and SRQ): buffer offsets, RESET -> RTS
 * refused, then INIT, RTR, RTS; its CQ busy until it is gone.
 */
static bool qp_lifecycle(uint8_t type, bool with_srq)
{
	struct uctx *c = &env.ctx;
	size_t sq = 64ul << SQ_LOG, rq = with_srq ? 0 : 64ul << RQ_LOG;
	struct ib_uverbs_query_qp_resp q;
	struct srq srq = {0};
	struct cq cq;
	struct qp qp;

	if (!ok(cq_new(c, CQ_LOG, 1u << CQ_LOG, &cq), "CREATE_CQ") ||
	    (with_srq && !ok(srq_new(c, env.pd, &srq), "CREATE_SRQ")) ||
	    !ok(qp_new(c, type, env.pd, cq.handle,
		       with_srq ? (int)srq.handle : -1, &qp),
		"CREATE_QP"))
		return false;
	note("qpn %u, offsets rq %u, sq_record %u, rq_record %u", qp.qpn,
	     qp.drv.rq_offset, qp.drv.sq_record_offset,
	     qp.drv.rq_record_offset);
	if (!expect(qp.qpn != 0, "qpn 0") ||
	    !expect(qp.drv.sq_record_offset == sq + rq &&
			    (with_srq ||
			     (qp.drv.rq_offset == sq &&
			      qp.drv.rq_record_offset == sq + rq + 8)),
		    "%s; expected offsets rq %zu, sq_record %zu, rq_record %zu",
		    info, sq, sq + rq, sq + rq + 8) ||
	    !expect_err(qp_modify(c, &qp, IB_QPS_RTS), EINVAL, 0,
			"MODIFY_QP RESET -> RTS") ||
	    !ok(qp_modify(c, &qp, IB_QPS_INIT), "MODIFY_QP RESET -> INIT") ||
	    !ok(qp_modify(c, &qp, IB_QPS_RTR), "MODIFY_QP INIT -> RTR") ||
	    !ok(qp_modify(c, &qp, IB_QPS_RTS), "MODIFY_QP RTR -> RTS") ||
	    !ok(qp_query(c, &qp, &q), "QUERY_QP") ||
	    !expect(q.qp_state == IB_QPS_RTS,
		    "QUERY_QP: state %u, expected %u (RTS)", q.qp_state,
		    IB_QPS_RTS) ||
	    !expect_err(destroy(c, OBJ_CQ, cq.handle), EBUSY, 0,
			"DESTROY_CQ of the QP's CQ") ||
	    !ok(destroy(c, OBJ_QP, qp.handle), "DESTROY_QP") ||
	    (with_srq && !ok(destroy(c, OBJ_SRQ, srq.handle), "DESTROY_SRQ")))
		return false;
	return ok(destroy(c, OBJ_CQ, cq.handle), "DESTROY_CQ");
}

static bool check_qp_rc(void)
{
	return qp_lifecycle(IB_UVERBS_QPT_RC, false);
}

static bool check_qp_ud(void)
{
	return qp_lifecycle(IB_UVERBS_QPT_UD, false);
}

static bool check_qp_rc_srq(void)
{
	return qp_lifecycle(IB_UVERBS_QPT_RC, true);
}

static bool check_qp_errors(void)
{
	static const struct err_table t = ERR_TABLE("CREATE_QP", qp);
	struct srq srq;
	struct cq cq;

	if (!ok(cq_new(&env.ctx, CQ_LOG, 1u << CQ_LOG, &cq), "CREATE_CQ") ||
	    !ok(srq_new(&env.ctx, env.pd, &srq), "CREATE_SRQ"))
		return false;
	env.cq = cq.handle;
	env.srq = srq.handle;
	return run_err_table(&t) &&
	       ok(destroy(&env.ctx, OBJ_SRQ, srq.handle), "DESTROY_SRQ") &&
	       ok(destroy(&env.ctx, OBJ_CQ, cq.handle), "DESTROY_CQ");
}

/* One endpoint per context: a second is refused until the first is gone. */
static bool check_endpoint(void)
{
	struct uctx *c = &env.ctx;
	struct qp ep, again;
	struct cq cq;

	if (!ok(cq_new(c, CQ_LOG, 1u << CQ_LOG, &cq), "CREATE_CQ") ||
	    !ok(qp_new(c, IB_UVERBS_QPT_DRIVER, env.pd, cq.handle, -1, &ep),
		"CREATE_QP of an endpoint"))
		return false;
	note("endpoint %u", ep.qpn);
	return expect(ep.qpn != 0, "endpoint qpn 0") &&
	       expect_err(qp_new(c, IB_UVERBS_QPT_DRIVER, env.pd, cq.handle, -1,
				 &again),
			  EEXIST, 0, "CREATE_QP of a second endpoint") &&
	       ok(destroy(c, OBJ_QP, ep.handle),
		  "DESTROY_QP of the endpoint") &&
	       ok(qp_new(c, IB_UVERBS_QPT_DRIVER, env.pd, cq.handle, -1, &ep),
		  "CREATE_QP of an endpoint after the first one is gone") &&
	       ok(destroy(c, OBJ_QP, ep.handle),
		  "DESTROY_QP of the endpoint") &&
	       ok(destroy(c, OBJ_CQ, cq.handle), "DESTROY_CQ");
}

static bool check_ah(void)
{
	struct ah ah;

	if (!ok(ah_create(&env.ctx, env.pd, &ah), "CREATE_AH to GID 0"))
		return false;
	note("dest_node %u", ah.drv.dest_node);
	return expect(env.node < 0 || ah.drv.dest_node == env.node,
		      "dest_node %u, expected %d", ah.drv.dest_node,
		      env.node) &&
	       ok(destroy(&env.ctx, OBJ_AH, ah.handle), "DESTROY_AH");
}

/* PDs until the device says no, at most max_pd of them; then all freed. */
static bool check_pd_limit(void)
{
	uint32_t max = env.dev.max_pd, n = 0, pd;
	size_t mark = nobjs;
	bool pass;
	int err = 0;

	if (!expect(max <= 1u << 20, "max_pd %u: too many to try", max))
		return false;
	while (n <= max && !(err = pd_alloc(&env.ctx, &pd, NULL)))
		n++;
	note("%u PDs allocated (max_pd %u), then %s", n, max, ename(err));
	pass = expect(n <= max, "%u PDs allocated, more than max_pd %u", n,
		      max) &&
	       expect_err(err, ENOSPC, ENOMEM, "ALLOC_PD number %u", n + 1);
	pass &= cleanup_from(mark);
	return pass &&
	       ok(pd_alloc(&env.ctx, &pd, NULL),
		  "ALLOC_PD after freeing them all") &&
	       ok(destroy(&env.ctx, OBJ_PD, pd), "DEALLOC_PD");
}

static bool read_bad_doorbells(uint64_t *v)
{
	return expect(read_u64(PORT_SYS "/hw_counters/bad_doorbells", v),
		      "cannot read %s", PORT_SYS "/hw_counters/bad_doorbells");
}

/* A CQ-arm kick on other's own page: its CQ is fine, mine is foreign. */
static bool kick_foreign_cq(struct uctx *other)
{
	uint64_t before, own, foreign;
	struct cq mine, theirs;

	if (!ok(cq_new(&env.ctx, CQ_LOG, 1u << CQ_LOG, &mine), "CREATE_CQ") ||
	    !ok(cq_new(other, CQ_LOG, 1u << CQ_LOG, &theirs),
		"CREATE_CQ in the second context") ||
	    !read_bad_doorbells(&before))
		return false;
	ring(other, RHN_DB_CQ_ARM, theirs.cqn);
	usleep(50000);
	if (!read_bad_doorbells(&own))
		return false;
	ring(other, RHN_DB_CQ_ARM, mine.cqn);
	usleep(50000);
	if (!read_bad_doorbells(&foreign))
		return false;
	note("bad_doorbells %lu, own kick %lu, foreign kick %lu", before, own,
	     foreign);
	return expect(mine.cqn != theirs.cqn, "both CQs have cqn %u",
		      mine.cqn) &&
	       expect(own == before,
		      "arming own CQ %u: bad_doorbells %lu -> %lu", theirs.cqn,
		      before, own) &&
	       expect(foreign > own,
		      "arming foreign CQ %u: bad_doorbells stayed %lu",
		      mine.cqn, foreign) &&
	       ok(destroy(other, OBJ_CQ, theirs.handle), "DESTROY_CQ") &&
	       ok(destroy(&env.ctx, OBJ_CQ, mine.handle), "DESTROY_CQ");
}

static bool check_doorbell_protection(void)
{
	struct uctx other;
	bool pass;

	if (!ok(ctx_open(&other), "second GET_CONTEXT"))
		return false;
	pass = kick_foreign_cq(&other);
	ctx_close(&other);
	return pass;
}

/*
 * The data path a provider will drive, by hand: a UD datagram from a QP to
 * itself. WQEs go into the rings in the process's buffers, producer indices
 * into their records, kicks into the doorbell page; the armed CQ's event
 * arrives on a completion channel; the CQEs and the bytes are checked.
 */
struct datapath {
	struct cq_req cq_req;
	struct qp_req qp_req;
	struct cq cq;
	struct qp qp;
	struct mr mr;
	int channel;
	/* The buffers; creating the queue hands their mappings to track(). */
	uint8_t *cq_ring, *qp_buf;
};

/*
 * The MR: 4 MiB of 4 KiB pages (no transparent huge pages), so the NIC
 * translates through two table levels; the datagram goes from 3 MiB + 100
 * to 3.5 MiB.
 */
#define DP_MR_LEN (4 * MIB)
#define DP_SEND_OFF (3 * MIB + 100)
#define DP_RECV_OFF (3 * MIB + MIB / 2)

/* The i-th datagram (i < 8: no ring wraps): its receive, then its send. */
/* rq_kick false: the receive is announced by its record alone. */
static void dp_post(struct uctx *c, struct datapath *d, uint8_t *mem,
		    uint32_t i, bool rq_kick)
{
	uint8_t *qbuf = d->qp_buf;
	struct rhn_recv_wqe *rwqe =
		(void *)(qbuf + d->qp.drv.rq_offset + i * RHN_RQ_WQE_SIZE);
	uint8_t wqe[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE];
	struct rhn_wqe_grh grh = {.sgid_index = 0, .hop_limit = 1};
	struct rhn_wqe_tail tail = {.grh = &grh};
	struct rhn_send_wqe *swqe;
	uint32_t slots;
	struct rhn_queue_record *sq_rec =
		(void *)(qbuf + d->qp.drv.sq_record_offset);
	struct rhn_queue_record *rq_rec =
		(void *)(qbuf + d->qp.drv.rq_record_offset);

	*rwqe = (struct rhn_recv_wqe){
		.num_sge = 1,
		.sge[0] = {(uintptr_t)mem + DP_RECV_OFF, 4096, d->mr.lkey},
	};
	__sync_synchronize();
	rq_rec->producer_index = i + 1;
	if (rq_kick)
		ring(c, RHN_DB_RQ, d->qp.qpn);

	swqe = rhn_wqe_start(wqe, RHN_OP_SEND, RHN_WQE_F_SIGNALED, 0);
	swqe->dst_node = env.node;
	swqe->dst_qpn = d->qp.qpn;
	swqe->u.status.qkey = QKEY;
	rhn_wqe_put_sge(wqe, 0, (uintptr_t)mem + DP_SEND_OFF, 200, d->mr.lkey);
	/* The GRH slot: the NIC fills in GID 0 of its table as the source. */
	memcpy(grh.dgid, env.gid, 16);
	slots = rhn_wqe_finish(wqe, rhn_wqe_set_sges(wqe, 1), &tail);
	memcpy(qbuf + i * slots * RHN_SQ_SLOT_SIZE, wqe,
	       slots * RHN_SQ_SLOT_SIZE);
	__sync_synchronize();
	sq_rec->producer_index = (i + 1) * slots; /* base and GRH slots */
	ring(c, RHN_DB_SQ, d->qp.qpn);
}

/* Waits for the completion event, then takes the CQEs it announced. */
static bool dp_complete(struct datapath *d, struct rhn_cqe *cqe, int want)
{
	struct rhn_cqe *ring_ = (void *)d->cq_ring;
	struct ib_uverbs_comp_event_desc ev;
	struct pollfd pfd = {d->channel, POLLIN, 0};
	int got = 0, tries;

	if (!expect(poll(&pfd, 1, 5000) == 1, "no completion event in 5 s") ||
	    !expect(read(d->channel, &ev, sizeof(ev)) == sizeof(ev),
		    "completion channel read: %s", ename(errno)) ||
	    !expect(ev.cq_handle == d->cq_req.cookie,
		    "event for CQ %#llx, not %#llx",
		    (unsigned long long)ev.cq_handle,
		    (unsigned long long)d->cq_req.cookie))
		return false;
	/* The event follows the first CQE; the second may trail a little. */
	for (tries = 0; got < want && tries < 5000; tries++) {
		volatile struct rhn_cqe *e = &ring_[got];

		if (!(e->flags & RHN_CQE_F_OWNER)) {
			usleep(1000);
			continue;
		}
		__sync_synchronize();
		cqe[got++] = *(struct rhn_cqe *)e;
	}
	return expect(got == want, "%d of %d CQEs", got, want);
}

/*
 * The MR (its first 200 B of the datagram patterned), the CQ with a
 * completion channel and a UD QP in RTS, all on the main context. False
 * after a complaint; the check runner destroys what was made, dp_close
 * frees the memory.
 */
static bool dp_open(struct datapath *d, uint8_t **memp)
{
	struct uctx *c = &env.ctx;
	struct ib_uverbs_create_comp_channel ch = {0};
	struct ib_uverbs_create_comp_channel_resp ch_resp;
	uint8_t *mem;
	int i;

	*d = (struct datapath){.channel = -1};
	*memp = NULL;
	if (!ok(uv_write(c->fd,
			 &(struct uv_req){
				 .cmd = IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL,
				 UV_CORE(ch),
				 UV_RESP(ch_resp)}),
		"CREATE_COMP_CHANNEL"))
		return false;
	d->channel = ch_resp.fd;
	mem = mmap(NULL, DP_MR_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap: %s", ename(errno));
	*memp = mem;
	madvise(mem, DP_MR_LEN, MADV_NOHUGEPAGE);
	memset(mem, 0, DP_MR_LEN);
	for (i = 0; i < 200; i++)
		mem[DP_SEND_OFF + i] = (uint8_t)(i * 7 + 3);
	cq_req_init(&d->cq_req, CQ_LOG, 16);
	d->cq_req.channel = d->channel;
	d->cq_req.cookie = 0xc0ffee;
	d->cq_ring = d->cq_req.mem.map;
	qp_req_init(&d->qp_req, c, IB_UVERBS_QPT_UD, env.pd, 0, -1);
	d->qp_buf = d->qp_req.mem.map;
	if (!ok(mr_reg(c, env.pd, (uintptr_t)mem, DP_MR_LEN,
		       IB_UVERBS_ACCESS_LOCAL_WRITE, &d->mr),
		"REG_MR") ||
	    !ok(cq_create(c, &d->cq_req, &d->cq), "CREATE_CQ with a channel"))
		return false;
	d->qp_req.core.send_cq_handle = d->cq.handle;
	d->qp_req.core.recv_cq_handle = d->cq.handle;
	return ok(qp_create(c, &d->qp_req, &d->qp), "CREATE_QP UD") &&
	       ok(qp_modify(c, &d->qp, IB_QPS_INIT), "MODIFY_QP INIT") &&
	       ok(qp_modify(c, &d->qp, IB_QPS_RTR), "MODIFY_QP RTR") &&
	       ok(qp_modify(c, &d->qp, IB_QPS_RTS), "MODIFY_QP RTS");
}

static bool dp_destroy(struct datapath *d)
{
	struct uctx *c = &env.ctx;

	return ok(destroy(c, OBJ_QP, d->qp.handle), "DESTROY_QP") &&
	       ok(destroy(c, OBJ_CQ, d->cq.handle), "DESTROY_CQ") &&
	       ok(destroy(c, OBJ_MR, d->mr.handle), "DEREG_MR");
}

static void dp_close(struct datapath *d, uint8_t *mem)
{
	qmem_put(&d->qp_req.mem);
	qmem_put(&d->cq_req.mem);
	if (mem)
		munmap(mem, DP_MR_LEN);
	if (d->channel >= 0)
		close(d->channel);
}

static bool check_datapath(void)
{
	struct uctx *c = &env.ctx;
	struct datapath d;
	uint8_t *mem;
	struct rhn_cqe cqe[2], *send, *recv;
	bool pass = false;

	if (!dp_open(&d, &mem))
		goto out;
	ring(c, RHN_DB_CQ_ARM, d.cq.cqn); /* record: consumer index 0 */
	dp_post(c, &d, mem, 0, true);
	if (!dp_complete(&d, cqe, 2))
		goto out;
	send = cqe[0].flags & RHN_CQE_F_SQ ? &cqe[0] : &cqe[1];
	recv = send == &cqe[0] ? &cqe[1] : &cqe[0];
	note("UD 200 B to itself through a 4 MiB MR: send status %u, receive "
	     "status %u, %u B",
	     send->status, recv->status, recv->byte_len);
	pass = expect(send->status == RHN_CQE_SUCCESS &&
			      recv->status == RHN_CQE_SUCCESS,
		      "%s", info) &&
	       expect((send->flags & RHN_CQE_F_SQ) &&
			      !(recv->flags & RHN_CQE_F_SQ) &&
			      recv->opcode == RHN_CQE_OP_RECV,
		      "CQE opcodes %#x/%#x flags %#x/%#x", send->opcode,
		      recv->opcode, send->flags, recv->flags) &&
	       expect(recv->byte_len == RHN_UD_GRH_LEN + 200 &&
			      recv->src_qpn == d.qp.qpn &&
			      recv->src_node == env.node,
		      "received %u B from node %u QP %u", recv->byte_len,
		      recv->src_node, recv->src_qpn) &&
	       expect((recv->flags & RHN_CQE_F_GRH) &&
			      !memcmp(mem + DP_RECV_OFF + 8, env.gid, 16) &&
			      !memcmp(mem + DP_RECV_OFF + 24, env.gid, 16),
		      "no GRH with GID 0 as source and destination") &&
	       expect(!memcmp(mem + DP_SEND_OFF,
			      mem + DP_RECV_OFF + RHN_UD_GRH_LEN, 200),
		      "received bytes differ from the sent ones");
	pass = pass && dp_destroy(&d);
out:
	/* On failure the check runner destroys what is left. */
	dp_close(&d, mem);
	return pass;
}

/*
 * The bus counters (registers.md, "Bus transaction counters") move by
 * exactly what known posts cause: BUS_MSGS datagrams to itself, one at a
 * time, each an RQ kick and an SQ kick (two MMIO writes), one receive WQE
 * and one send WQE of two slots read, two CQEs, no interrupt (the CQ is
 * not armed). The DMA totals are bounded from below (how often the NIC
 * reads a doorbell record is its own affair). The kernel's own frames on
 * eth0 would move them too: a window in which eth0 sent or took a frame is
 * measured again.
 */
#define BUS_MSGS 4
static const char *const bus_names[] = {
	"host_doorbells",     "rq_doorbells",	     "sq_wqe_fetches",
	"sq_wqe_fetch_bytes", "recv_wqe_fetches",    "completions",
	"cq_arm_doorbells",   "sq_inline_doorbells", "mmio_writes",
	"msix_interrupts",    "dma_reads",	     "dma_writes",
};
#define BUS_N (sizeof(bus_names) / sizeof(bus_names[0]))

/*
 * The counters from BAR0 through the driver (rhinet-diag reads them with
 * devlink: no MMIO write, DMA or interrupt of its own); the bus counters
 * are no port statistics (registers.md).
 */
static bool bus_read(uint64_t *v, uint64_t *eth_frames)
{
	char line[512], name[64];
	unsigned long long val;
	bool in_counters = false;
	size_t found = 0, i;
	uint64_t tx, rx;
	FILE *f = popen("rhinet-diag --all", "r");

	if (!expect(f != NULL, "rhinet-diag: %s", ename(errno)))
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != ' ') {
			in_counters = !strncmp(line, "counters", 8);
			continue;
		}
		if (!in_counters || sscanf(line, " %63s %llu", name, &val) != 2)
			continue;
		for (i = 0; i < BUS_N; i++)
			if (!strcmp(name, bus_names[i])) {
				v[i] = val;
				found++;
			}
	}
	pclose(f);
	if (!expect(found == BUS_N, "rhinet-diag showed %zu of %zu counters",
		    found, BUS_N))
		return false;
	if (!expect(read_u64("/sys/class/net/eth0/statistics/tx_packets",
			     &tx) &&
			    read_u64(
				    "/sys/class/net/eth0/statistics/rx_packets",
				    &rx),
		    "cannot read eth0's statistics"))
		return false;
	*eth_frames = tx + rx;
	return true;
}

/* Polls the CQ ring for its CQEs [first, first + want): no event. */
static bool dp_poll(struct datapath *d, int first, int want)
{
	struct rhn_cqe *ring_ = (void *)d->cq_ring;
	int got = 0, tries;

	for (tries = 0; got < want && tries < 5000; tries++) {
		volatile struct rhn_cqe *e = &ring_[first + got];

		if (!(e->flags & RHN_CQE_F_OWNER)) {
			usleep(1000);
			continue;
		}
		__sync_synchronize();
		if (!expect(e->status == RHN_CQE_SUCCESS, "CQE %d status %u",
			    first + got, e->status))
			return false;
		got++;
	}
	return expect(got == want, "%d of %d CQEs", got, want);
}

static bool check_bus_counts(void)
{
	struct uctx *c = &env.ctx;
	/* With the driver's leave, the receives go without their kick: the
	 * NIC reads the RQ record when the datagram needs one (queues.md,
	 * "Receives without doorbells").
	 */
	const bool rq_kick =
		!(c->r.comp_mask & RHINET_UCONTEXT_RESP_RQ_DOORBELL_ON_REQUEST);
	const uint64_t want[BUS_N] = {
		BUS_MSGS,
		rq_kick ? BUS_MSGS : 0,
		BUS_MSGS,
		BUS_MSGS * 2 * RHN_SQ_SLOT_SIZE,
		BUS_MSGS,
		2 * BUS_MSGS,
		0,
		0,
		(rq_kick ? 2 : 1) * BUS_MSGS,
		0,
	};
	uint64_t before[BUS_N], after[BUS_N], eth0, eth1;
	struct datapath d;
	uint8_t *mem;
	bool pass = false;
	int attempt;
	uint32_t i;
	size_t k;

	note("RQ kicks %s", rq_kick ? "on every post" : "left out");
	if (!expect(!!(c->r.caps & RHN_CAP_RQ_RECORD_READ) == !rq_kick,
		    "caps %#x and comp_mask %#x disagree on RQ kicks",
		    c->r.caps, c->r.comp_mask) ||
	    !expect(!!(c->r.caps & RHN_CAP_SQ_DOORBELL_ON_REQUEST) ==
			    !!(c->r.comp_mask &
			       RHINET_UCONTEXT_RESP_SQ_DOORBELL_ON_REQUEST),
		    "caps %#x and comp_mask %#x disagree on SQ kicks",
		    c->r.caps, c->r.comp_mask) ||
	    !expect(!!(c->r.caps & RHN_CAP_SQ_EVENT_INDEX) ==
			    !!(c->r.comp_mask &
			       RHINET_UCONTEXT_RESP_SQ_EVENT_INDEX),
		    "caps %#x and comp_mask %#x disagree on the SQ event index",
		    c->r.caps, c->r.comp_mask) ||
	    !expect(!!(c->r.caps & RHN_CAP_CQE_RUNS) ==
			    !!(c->r.comp_mask & RHINET_UCONTEXT_RESP_CQE_RUNS),
		    "caps %#x and comp_mask %#x disagree on CQE runs",
		    c->r.caps, c->r.comp_mask) ||
	    !dp_open(&d, &mem))
		goto out;
	/* Two windows at most, each on fresh ring slots (8 UD WQEs fit). */
	for (attempt = 0; attempt < 2; attempt++) {
		if (!bus_read(before, &eth0))
			goto out;
		for (i = 0; i < BUS_MSGS; i++) {
			dp_post(c, &d, mem, attempt * BUS_MSGS + i, rq_kick);
			if (!dp_poll(&d, 2 * (attempt * BUS_MSGS + i), 2))
				goto out;
		}
		if (!bus_read(after, &eth1))
			goto out;
		if (eth0 == eth1)
			break;
		note("eth0 moved %llu frames during the window: again",
		     (unsigned long long)(eth1 - eth0));
	}
	if (!expect(eth0 == eth1, "eth0 never quiet for a window"))
		goto out;
	pass = true;
	for (k = 0; k < BUS_N; k++) {
		const uint64_t delta = after[k] - before[k];

		note("%s +%llu", bus_names[k], (unsigned long long)delta);
		if (k < 10)
			pass &= expect(delta == want[k],
				       "%s moved %llu, not %llu", bus_names[k],
				       (unsigned long long)delta,
				       (unsigned long long)want[k]);
	}
	/* Bounded below: the kicks; the WQEs, records and payload read; the
	 * CQEs and payload written.
	 */
	pass &= expect(after[10] - before[10] >= 3 * BUS_MSGS,
		       "dma_reads moved less than the WQEs and payload read");
	pass &= expect(after[11] - before[11] >= 3 * BUS_MSGS,
		       "dma_writes moved less than the CQEs and payload");
	pass = pass && dp_destroy(&d);
out:
	dp_close(&d, mem);
	return pass;
}

static bool check_teardown(void)
{
	long pin;

	if (!ok(destroy(&env.ctx, OBJ_PD, env.pd), "DEALLOC_PD"))
		return false;
	pin = vmpin_kb();
	return expect(nobjs == 0, "%zu objects still exist", nobjs) &&
	       expect(pin == 0, "VmPin %ld kB, expected 0", pin);
}

static const struct check {
	const char *name;
	bool (*run)(void);
	bool keeps; /* its objects stay for the checks after it */
	bool needed; /* the checks after it cannot go on without it */
} checks[] = {
	{"context", check_context, true, true},
	{"query_device", check_query_device, false, true},
	{"query_port", check_query_port, false, true},
	{"gid", check_gid, false, true},
	{"pd", check_pd, true, true},
	{"user_contexts", check_user_contexts, false, false},
	{"mr", check_mr, false, false},
	{"mr_errors", check_mr_errors, false, false},
	{"mr_6mib", check_mr_6mib, false, false},
	{"mr_hugepage", check_mr_hugepage, false, false},
	{"area", check_area, false, false},
	{"area_limit", check_area_limit, false, false},
	{"cq", check_cq, false, false},
	{"cq_errors", check_cq_errors, false, false},
	{"srq", check_srq, false, false},
	{"srq_errors", check_srq_errors, false, false},
	{"qp_rc", check_qp_rc, false, false},
	{"qp_ud", check_qp_ud, false, false},
	{"qp_rc_srq", check_qp_rc_srq, false, false},
	{"qp_errors", check_qp_errors, false, false},
	{"endpoint", check_endpoint, false, false},
	{"ah", check_ah, false, false},
	{"pd_limit", check_pd_limit, false, false},
	{"doorbell_protection", check_doorbell_protection, false, false},
	{"datapath", check_datapath, false, false},
	{"bus_counts", check_bus_counts, false, false},
	{"teardown", check_teardown, false, false},
};

static int run_checks(void)
{
	size_t i, passed = 0;

	for (i = 0; i < ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];
		size_t mark = nobjs;
		bool pass;

		why[0] = info[0] = 0;
		pass = c->run();
		if (!c->keeps && nobjs > mark) {
			if (pass)
				complain("left %zu objects behind",
					 nobjs - mark);
			pass = false;
			cleanup_from(mark);
		}
		if (pass) {
			passed++;
			printf("rhinet-uverbs: PASS %s%s%s\n", c->name,
			       info[0] ? ": " : "", info);
		} else {
			printf("rhinet-uverbs: FAIL %s: %s\n", c->name, why);
		}
		fflush(stdout);
		if (!pass && c->needed)
			break;
	}
	ctx_close(&env.ctx);
	printf("rhinet-uverbs: %zu of %zu checks passed%s\n", passed,
	       ARRAY_SIZE(checks),
	       i < ARRAY_SIZE(checks) ? " (stopped early)" : "");
	return passed == ARRAY_SIZE(checks) ? 0 : 1;
}

/* ---- churn and hold ----------------------------------------------------- */

static void setup(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(checks) && checks[i].needed; i++)
		if (!checks[i].run())
			die("%s: %s", checks[i].name, why);
}

/*
 * PD, MR over [buf, buf + len) and another that is area 7, CQ, SRQ, an RC QP on the SRQ moved to
 * INIT, a UD QP, an AH, and with endpoint an endpoint.
 */
static void make_all(uint8_t *buf, size_t len, bool endpoint)
{
	struct uctx *c = &env.ctx;
	struct qp rc, ud, ep;
	struct mr mr, area;
	struct srq srq;
	struct ah ah;
	struct cq cq;
	uint32_t pd;

	must(pd_alloc(c, &pd, NULL), "ALLOC_PD");
	must(mr_reg(c, pd, (uintptr_t)buf, len, MR_ALL, &mr), "REG_MR");
	must(area_reg(c, pd, (uintptr_t)buf, len, 7, &area), "REG_MR area 7");
	must(cq_new(c, CQ_LOG, 1u << CQ_LOG, &cq), "CREATE_CQ");
	must(srq_new(c, pd, &srq), "CREATE_SRQ");
	must(qp_new(c, IB_UVERBS_QPT_RC, pd, cq.handle, srq.handle, &rc),
	     "CREATE_QP RC");
	must(qp_modify(c, &rc, IB_QPS_INIT), "MODIFY_QP RC to INIT");
	must(qp_new(c, IB_UVERBS_QPT_UD, pd, cq.handle, -1, &ud),
	     "CREATE_QP UD");
	if (endpoint)
		must(qp_new(c, IB_UVERBS_QPT_DRIVER, pd, cq.handle, -1, &ep),
		     "CREATE_QP endpoint");
	must(ah_create(c, pd, &ah), "CREATE_AH");
}

static void __attribute__((noreturn)) churn(void)
{
	const size_t len = 4 * MIB;
	size_t mark;

	setup();
	mark = nobjs;
	printf("rhinet-uverbs: churning\n");
	fflush(stdout);
	for (unsigned int round = 0;; round++) {
		uint8_t *buf = malloc(len);

		if (!buf)
			die("out of memory");
		memset(buf, round, len);
		make_all(buf, len, false);
		if (!cleanup_from(mark))
			die("%s", why);
		free(buf);
	}
}

static void __attribute__((noreturn)) hold(void)
{
	setup();
	make_all(env.buf, MIB, true);
	printf("rhinet-uverbs: holding %zu objects\n", nobjs);
	fflush(stdout);
	for (;;)
		pause();
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: rhinet-uverbs check|churn|hold [NODE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *node = argc > 2 ? argv[2] : getenv("NODE");

	if (argc < 2 || argc > 3)
		usage();
	if (node && *node)
		env.node = atoi(node);
	env.buf = aligned_alloc(PAGE_SIZE, SCRATCH_LEN);
	if (!env.buf)
		die("out of memory");
	memset(env.buf, 0x5a, SCRATCH_LEN);
	if (!strcmp(argv[1], "check")) {
		if (env.node < 0)
			usage();
		return run_checks();
	}
	if (!strcmp(argv[1], "churn"))
		churn();
	if (!strcmp(argv[1], "hold"))
		hold();
	usage();
}
