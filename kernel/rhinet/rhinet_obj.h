/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RHiNET-NG RDMA NIC driver, the objects (the middle layer): the RDMA
 * device's state and the objects users and the kernel create in it. The
 * files of this layer use the hardware layer (rhinet_hw.h) and each
 * other, never the entry points above them (rhinet_ib.h); see
 * Documentation/driver/README.md (Layers).
 *
 * Every user object lives in the NIC context of its process (the context
 * number is the doorbell page index). Queue rings are in user memory: the
 * driver pins each queue's buffer and registers it with the NIC as a memory
 * region of the context's private queue PD, so the NIC reaches that buffer
 * and nothing else, and user PDs cannot name it.
 */
#ifndef RHINET_OBJ_H
#define RHINET_OBJ_H

#include <linux/refcount.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_hw.h"

#define RHINET_GID_TABLE_LEN 16
#define RHINET_MAX_AH 65536 /* software objects: a node number each */
/* Process groups granted on this node, and revoked ones that still have
 * members (each process: at most RHINET_MAX_GROUPS of them).
 */
#define RHINET_MAX_NODE_GROUPS RHINET_MAX_GROUP_GRANTS

struct rhinet_od;
struct rhinet_od_event;

/* Twin memory one process, or one user, holds: bytes and NIC allocations. */
struct rhinet_twin_use {
	u64 bytes;
	u32 count;
};

struct rhinet_ib {
	struct ib_device ibdev;
	struct rhinet_dev *rdev;
	phys_addr_t db_bar; /* bus address of doorbell page 0 */
	u32 db_pages;
	struct ida contexts; /* doorbell pages 1..db_pages-1 */
	struct ida xrcds; /* XRC domain numbers, from 1 */
	/* Contexts each user holds and the user's NIC account (uid ->
	 * count << 8 | account): one user cannot take every doorbell page,
	 * nor more than an account's share of the NIC's tables. Accounts
	 * 1..RHN_MAX_ACCOUNTS-1 in use (0 is the kernel's); both under the
	 * xarray's lock.
	 */
	struct xarray user_contexts;
	DECLARE_BITMAP(accounts, RHN_MAX_ACCOUNTS);
	/* Objects by NIC number, for events; XA_FLAGS_LOCK_IRQ. */
	struct xarray cqs;
	struct xarray qps;
	struct xarray srqs;
	/* Limits advertised in ib_device_attr and enforced here, so they
	 * hold even though queues also take a NIC PD or MR each.
	 */
	atomic_t num_pds, num_mrs, num_ahs, num_areas;
	u32 max_pds, max_mrs, max_areas;
	atomic64_t pinned_pages; /* by all umems of this device */
	/* Process groups of this node: group ID -> struct rhinet_group,
	 * granted by the administrator (rhinet_groups.c), joined by
	 * contexts (rhinet_ucontext.c).
	 */
	struct mutex groups_lock; /* groups, num_groups, each entry */
	struct xarray groups;
	u32 num_groups;
	/* Twin memory as device memory (rhinet_twin.c): the limits of one
	 * process and of one user (all its processes), and what each user
	 * holds (uid -> struct rhinet_twin_use).
	 */
	struct mutex twin_lock; /* user_twins, every context's twin */
	struct xarray user_twins;
	u64 twin_total; /* the NIC's twin memory, 0: none to hand out */
	struct rhinet_twin_use twin_share, twin_user_share;
	atomic64_t twin_bytes; /* held by all processes */
	atomic_t key_variant; /* low byte of the next MR key */
	struct work_struct port_work; /* dispatches port events */
	bool port_was_up;
	/* Remote pin-down (rhinet_pindown.c), if the NIC has it (od_ring):
	 * on-demand MRs by MR index (XA_FLAGS_LOCK_IRQ), the NIC's requests
	 * queued by the event handler for od_work, or coalesced with their
	 * MR when the ring has no room for them.
	 */
	struct xarray od_mrs;
	/* From a new MR's CREATE_MR to its od_mrs entry: the work item finds
	 * every MR the NIC can ask for.
	 */
	struct mutex od_reg_lock;
	/* od_ring, od_head, od_tail, od_ctx_queued, od_lost and the events
	 * coalesced with each MR
	 */
	spinlock_t od_lock;
	struct rhinet_od_event *od_ring;
	u32 od_head, od_tail;
	u16 *od_ctx_queued; /* ring entries of each NIC context */
	struct list_head od_lost; /* MRs with coalesced events, in order */
	struct work_struct od_work;
	/* What each user declared and pinned on demand, all its processes
	 * (uid -> struct rhinet_od_user)
	 */
	struct mutex od_users_lock; /* od_users, each entry's reg_pages */
	struct xarray od_users;
	atomic64_t pin_requests, pin_refusals, pin_releases, pin_overflows;
	atomic64_t pin_invalidations; /* notifier calls that unpinned */
	/* Switch groups of simultaneous multicast (rhinet_mcast_switch.c):
	 * group ID -> the list last set on the NIC.
	 */
	struct mutex mcast_lock; /* mcast_groups and the NIC's table */
	struct xarray mcast_groups;
};

/*
 * A process group on this node: what its grant says (token, who may join,
 * until when) and how many contexts are in it. The entry lives from the
 * grant until it is revoked or expired and its last member has left.
 */
struct rhinet_group {
	u64 token;
	kuid_t uid; /* INVALID_UID: no user is named */
	kgid_t gid; /* INVALID_GID: no group is named */
	kuid_t granted_by; /* real uid of the granting process */
	time64_t expires; /* boottime seconds; 0: never */
	u32 members; /* contexts in the group */
	bool revoked;
};

/* A page of VP translation table entries. */
#define RHINET_VPT_PAGE_SIZE (RHN_VPT_ENTRIES_PER_PAGE * sizeof(__le64))

/* Pinned user memory registered with the NIC as one memory region. */
struct rhinet_mem {
	struct ib_umem *umem;
	u32 key; /* NIC key, 0 when not registered */
	u32 ctx;
	u32 page_shift; /* of the translation's pages */
	u64 pinned; /* PAGE_SIZE pages */
	u32 num_tables; /* 4 KiB VP table pages, leaves first, top last */
	__le64 **tables;
	dma_addr_t *tables_dma;
};

struct rhinet_ucontext {
	struct ib_ucontext ibuc;
	u32 ctx; /* NIC context = doorbell page */
	u32 queue_pdn; /* private PD of queue buffers */
	u32 uid; /* the user the context is charged to */
	struct rdma_user_mmap_entry *db_entry;
	struct mutex lock; /* endpoint_qpn */
	u32 endpoint_qpn; /* the process's endpoint, 0 if none */
	u32 num_groups; /* the process's groups, members until dealloc */
	u16 groups[RHINET_MAX_GROUPS];
	struct rhinet_twin_use twin; /* under the device's twin_lock */
	atomic64_t od_pinned; /* pages pinned on demand, all its MRs */
	/* dma-bufs of the doorbell page (rhinet_dbexport.c), its lock */
	struct list_head db_exports;
};

/* A piece of the NIC's twin memory a process holds (ibverbs DM). */
struct rhinet_dm {
	struct ib_dm ibdm;
	struct rhinet_ucontext *uc;
	u32 handle; /* the NIC's, RHN_ADMIN_ALLOC_TWIN */
	u64 bytes; /* whole RHN_TWIN_PAGEs */
};

static inline struct rhinet_dm *to_rdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct rhinet_dm, ibdm);
}

struct rhinet_db_entry {
	struct rdma_user_mmap_entry rdma;
	struct rhinet_ib *ib;
	u32 page;
	u32 uid; /* the user the page is charged to, until it is free */
};

struct rhinet_pd {
	struct ib_pd ibpd;
	u32 pdn;
	u32 ctx;
};

/* The process a uverbs call comes from; NULL for kernel callers. */
static inline struct rhinet_ucontext *rhinet_uctx(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct rhinet_ucontext, ibuc);
}

struct rhinet_mw {
	struct ib_mw ibmw;
	u32 key; /* as created: binds change only its variant */
	u32 ctx;
};

/* DMA-coherent memory of the kernel's: queue rings and their doorbell
 * records, fast-registration page lists.
 */
struct rhinet_kbuf {
	void *va;
	dma_addr_t dma;
	size_t size;
};

struct rhinet_mr {
	struct ib_mr ibmr;
	struct rhinet_mem mem;
	int access; /* IB_ACCESS_*, for rereg */
	bool has_area; /* the MR is the process's area area_id */
	u32 area_id;
	/* Fast registration (kernel): the page list REG_MR registers. */
	struct rhinet_kbuf pbl;
	u32 npages, max_pages;
	struct rhinet_od *od; /* on-demand MR (remote pin-down) */
};

/* A kernel CQ (rhinet_kqueues.c): the driver polls its ring
 * (rhinet_kverbs.c).
 */
struct rhinet_kcq {
	struct rhinet_kbuf kbuf; /* ring, then the record */
	spinlock_t lock; /* ci, and the QPs pollers look up */
	u32 depth;
	u32 ci;
};

struct rhinet_cq {
	struct ib_cq ibcq;
	u32 cqn;
	bool user; /* polled in user space: ubuf, else k */
	union {
		struct rhinet_mem ubuf; /* the process's pinned ring */
		struct rhinet_kcq k;
	};
};

struct rhinet_srq {
	struct ib_srq ibsrq;
	struct rhinet_mem buf;
	u32 srqn;
	u32 depth;
	u32 limit;
};

/* The send and receive queues of a kernel QP (the management QP). */
struct rhinet_kqp {
	struct rhinet_kbuf kbuf;
	spinlock_t sq_lock; /* sq_pi, sq_ci and their tables */
	spinlock_t rq_lock; /* rq_pi, rq_ci, rq_wr_id */
	u32 sq_depth; /* slots */
	u32 rq_depth;
	u32 sq_pi, sq_ci;
	u32 rq_pi, rq_ci;
	u32 max_send_sge, max_recv_sge;
	bool sig_all; /* IB_SIGNAL_ALL_WR */
	u64 *sq_wr_id; /* by a WQE's first slot */
	u8 *sq_slots; /* slots of the WQE starting there */
	u64 *rq_wr_id;
	/* Where a WQE is built (hw_wqe.h) before it goes into the ring. */
	u8 wqe[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE] __aligned(8);
};

/* The producer records of a kernel QP, after its rings. */
struct rhinet_kqp_records {
	struct rhn_queue_record sq;
	struct rhn_queue_record rq;
};

/* The consumer record of a kernel CQ, after its ring. */
static inline struct rhn_cq_record *rhinet_kcq_record(struct rhinet_cq *cq)
{
	return cq->k.kbuf.va + (size_t)RHN_CQE_SIZE * cq->k.depth;
}

static inline struct rhinet_kqp_records *rhinet_kqp_records(struct rhinet_kqp *k)
{
	return k->kbuf.va + (size_t)RHN_SQ_SLOT_SIZE * k->sq_depth +
	       (size_t)RHN_RQ_WQE_SIZE * k->rq_depth;
}

struct rhinet_qp {
	struct ib_qp ibqp;
	struct rhinet_kqp *k; /* kernel QPs only */
	struct rhinet_mem buf;
	u32 qpn;
	u8 nic_type; /* enum rhn_qp_type */
	struct rhinet_ucontext *uc;
	struct mutex lock; /* attr */
	struct ib_qp_attr attr; /* as last modified, for query_qp */
	u16 dest_node;
};

/*
 * An XRC domain: the number the NIC compares between an XRC SRQ and an
 * XRC target QP, and the kernel CQ its target QPs name (they complete
 * nothing: they post nothing and receive into the SRQs' CQs).
 */
struct rhinet_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
	struct rhinet_cq *cq;
};

struct rhinet_ah {
	struct ib_ah ibah;
	u16 dest_node;
	struct rhn_wqe_grh grh; /* kernel UD sends through this AH */
};

static inline struct rhinet_ib *to_rib(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rhinet_ib, ibdev);
}

static inline struct rhinet_ucontext *to_ruc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct rhinet_ucontext, ibuc);
}

static inline struct rhinet_pd *to_rpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct rhinet_pd, ibpd);
}

static inline struct rhinet_cq *to_rcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct rhinet_cq, ibcq);
}

static inline struct rhinet_srq *to_rsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct rhinet_srq, ibsrq);
}

static inline struct rhinet_xrcd *to_rxrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct rhinet_xrcd, ibxrcd);
}

static inline struct rhinet_qp *to_rqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct rhinet_qp, ibqp);
}

/* rhinet_obj.c */
int rhinet_udata_in(struct ib_udata *udata, void *req, size_t size);
int rhinet_udata_in_optional(struct ib_udata *udata, void *req, size_t size);
int rhinet_udata_in_min(struct ib_udata *udata, void *req, size_t min_size,
			size_t size);
int rhinet_udata_out(struct ib_udata *udata, void *resp, size_t size);
int rhinet_node_of_ah_attr(struct rhinet_ib *ib, const struct rdma_ah_attr *ah,
			   bool unicast);
int rhinet_ctx_exec(struct rhinet_ib *ib, u32 ctx, struct rhn_admin_cmd *cmd,
		    u32 *result);
int rhinet_destroy_object(struct rhinet_ib *ib, u32 ctx, u8 opcode,
			  u32 handle);
u32 rhinet_wqe_slots(const struct ib_qp_cap *cap, bool ud);

/* rhinet_mem.c */
int rhinet_vpt_build(struct rhinet_ib *ib, struct rhinet_mem *mem,
		     unsigned long pgsz, u64 npages);
int rhinet_mem_pin(struct rhinet_ib *ib, struct rhinet_mem *mem, u64 start,
		   u64 length, u64 iova, int access, u32 ctx, u32 pdn);
int rhinet_mem_pin_dmabuf(struct rhinet_ib *ib, struct rhinet_mem *mem,
			  u64 offset, u64 length, u64 iova, int fd, int access,
			  u32 ctx, u32 pdn);
/* Where a user queue's buffer lies: process memory, or a dma-buf's bytes. */
struct rhinet_queue_buf {
	u64 va; /* the NIC's address of its first byte */
	u64 len;
	bool dmabuf; /* RHINET_QUEUE_BUF_DMABUF: fd and offset valid */
	int fd;
	u64 offset;
};

int rhinet_mem_pin_queue(struct rhinet_ib *ib, struct rhinet_ucontext *uc,
			 struct rhinet_mem *mem,
			 const struct rhinet_queue_buf *buf, u64 need);
int rhinet_mem_release(struct rhinet_ib *ib, struct rhinet_mem *mem);
u32 rhinet_mr_access(int access);

/* rhinet_mr.c */
struct ib_mr *rhinet_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *rhinet_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			      u32 max_num_sg);
int rhinet_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		     unsigned int *sg_offset);
struct ib_mr *rhinet_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, struct ib_udata *udata);
struct ib_mr *rhinet_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					u64 length, u64 iova, int fd,
					int access, struct ib_udata *udata);
struct ib_mr *rhinet_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				   u64 length, u64 iova, int access,
				   struct ib_pd *new_pd,
				   struct ib_udata *udata);
int rhinet_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *rhinet_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			       struct ib_dm_mr_attr *attr,
			       struct uverbs_attr_bundle *attrs);
int rhinet_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int rhinet_dealloc_mw(struct ib_mw *ibmw);

/* rhinet_pindown.c */
int rhinet_od_init(struct rhinet_ib *ib);
void rhinet_od_fini(struct rhinet_ib *ib);
void rhinet_od_queue(struct rhinet_ib *ib, const struct rhn_eqe *eqe);
int rhinet_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		     u32 flags, struct ib_sge *sg_list, u32 num_sge,
		     struct uverbs_attr_bundle *attrs);
int rhinet_od_reg(struct rhinet_ib *ib, struct rhinet_mr *mr,
		  struct rhinet_ucontext *uc, u64 start, u64 length, u64 iova,
		  int access, u32 pdn);
int rhinet_od_dereg(struct rhinet_ib *ib, struct rhinet_mr *mr);

/* rhinet_kqueues.c */
int rhinet_kcq_destroy(struct rhinet_ib *ib, struct rhinet_cq *cq);
int rhinet_kcq_create(struct rhinet_ib *ib, struct rhinet_cq *cq,
		      const struct ib_cq_init_attr *attr);
void rhinet_kbuf_free(struct rhinet_ib *ib, struct rhinet_kbuf *kbuf);
int rhinet_kqp_create(struct rhinet_ib *ib, struct rhinet_qp *qp,
		      struct ib_qp_init_attr *attr);
void rhinet_kqp_forget(struct rhinet_ib *ib, struct rhinet_qp *qp);
void rhinet_kqp_free(struct rhinet_ib *ib, struct rhinet_qp *qp);
int rhinet_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int rhinet_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* rhinet_ucontext.c */
int rhinet_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void rhinet_dealloc_ucontext(struct ib_ucontext *ibuc);
void rhinet_disassociate_ucontext(struct ib_ucontext *ibuc);
int rhinet_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void rhinet_mmap_free(struct rdma_user_mmap_entry *entry);

/* rhinet_twin.c (rhinet_uapi_defs: the driver's uverbs methods, which
 * chain those of rhinet_mcast_switch.c, rhinet_groups.c and
 * rhinet_trigger.c)
 */
extern const struct uapi_definition rhinet_uapi_defs[];

/* rhinet_dbexport.c */
extern const struct uapi_definition rhinet_db_export_defs[];
void rhinet_db_exports_revoke(struct rhinet_ucontext *uc);

/* rhinet_mcast_switch.c, rhinet_groups.c */
extern const struct uapi_definition rhinet_mcast_switch_defs[];
extern const struct uapi_definition rhinet_groups_defs[];
/* rhinet_trigger.c: trigger counters as the driver's uverbs objects */
extern const struct uapi_definition rhinet_trigger_defs[];
bool rhinet_group_live(const struct rhinet_group *g);
bool rhinet_group_may_join(struct rhinet_ib *ib, u16 id,
			   const struct rhinet_group *g, u64 token);
void rhinet_group_drop_locked(struct rhinet_ib *ib, u16 id,
			      struct rhinet_group *g);
void rhinet_groups_fini(struct rhinet_ib *ib);
void rhinet_mcast_switch_init(struct rhinet_ib *ib);
void rhinet_mcast_switch_fini(struct rhinet_ib *ib);

/* rhinet_twin.c */
void rhinet_twin_limits(struct rhinet_ib *ib);
struct ib_dm *rhinet_alloc_dm(struct ib_device *ibdev,
			      struct ib_ucontext *ibuc,
			      struct ib_dm_alloc_attr *attr,
			      struct uverbs_attr_bundle *attrs);
int rhinet_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);

/* rhinet_counters.c */
struct rdma_hw_stats *rhinet_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port_num);
int rhinet_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port, int index);

/* rhinet_queues.c */
int rhinet_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     struct ib_udata *udata);
int rhinet_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int rhinet_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int rhinet_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
int rhinet_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *attr,
		      struct ib_udata *udata);
int rhinet_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rhinet_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int rhinet_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int rhinet_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		     struct ib_udata *udata);
int rhinet_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata);
int rhinet_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init);
int rhinet_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

#endif /* RHINET_OBJ_H */
