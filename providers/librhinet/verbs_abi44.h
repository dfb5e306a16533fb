/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The private provider ABI of libibverbs as Debian's rdma-core 44.0 builds it
 * (symbol version IBVERBS_PRIVATE_34). rdma-core does not install the header
 * that declares it (libibverbs/driver.h), so this project declares what the
 * provider uses, from the 44.0 layout, and guards every size and offset that
 * libibverbs reads with a static assertion. The build checks the installed
 * libibverbs version and the provider checks it again when it is loaded.
 */
#ifndef RHINET_VERBS_ABI44_H
#define RHINET_VERBS_ABI44_H

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
typedef int verbs_atomic_int; /* atomic_int: same size and alignment */
#else
#include <stdatomic.h>
typedef atomic_int verbs_atomic_int;
#endif

#define RHINET_RDMA_CORE_VERSION "44.0"
#define RHINET_RDMA_CORE_MAJOR 44 /* libibverbs.so.1.14.44.0 */
#define RHINET_IBVERBS_PRIVATE "IBVERBS_PRIVATE_34"
#define RHINET_IBVERBS_PUBLIC "IBVERBS_1.14" /* newest in 44.0 */

/* ---- device discovery --------------------------------------------------- */

enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

struct verbs_list_node { /* ccan/list.h list_node */
	struct verbs_list_node *next, *prev;
};

struct verbs_sysfs_dev {
	struct verbs_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device; /* must be first */
	const struct verbs_device_ops *ops;
	verbs_atomic_int refcount;
	struct verbs_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* ---- objects libibverbs shares with providers --------------------------- */

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/* An XRC domain: libibverbs reads the handle to name it in commands. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/* verbs_qp.comp_mask: ibv_qp_to_qp_ex() answers only with VERBS_QP_EX. */
enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

/* ibv_cmd_create_cq_ex() cmd_flags. */
enum create_cq_cmd_flags {
	CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX = 1 << 0,
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* ---- the operations table (76 entries, kept sorted upstream) ------------ */

typedef void (*verbs_op)(void);

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	verbs_op alloc_null_mr;
	verbs_op alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	verbs_op alloc_td, async_event, attach_counters_point_flow;
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	verbs_op cq_event;
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	verbs_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	verbs_op create_flow, create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	verbs_op create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	verbs_op create_wq;
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	verbs_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	verbs_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	verbs_op destroy_flow, destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	verbs_op destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	verbs_op destroy_wq;
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	verbs_op import_dm, import_mr, import_pd;
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	verbs_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	verbs_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	verbs_op modify_wq;
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	verbs_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	verbs_op query_qp_data_in_order, query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	verbs_op read_counters;
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	verbs_op set_ece, unimport_dm, unimport_mr, unimport_pd;
};

/* ---- command buffers: a header, the kernel's core struct, driver data --- */

/*
 * The kernel's core structs end in flexible arrays (driver data), so they
 * are laid out here as bytes of their size: header, core, driver data.
 */
#define RHINET_CMD(name, core_type, drv_type)                                \
	struct name {                                                         \
		struct ib_uverbs_cmd_hdr hdr;                                 \
		unsigned char core[sizeof(struct core_type)];                 \
		drv_type drv;                                                 \
	};                                                                    \
	static_assert(offsetof(struct name, drv) ==                           \
			      sizeof(struct ib_uverbs_cmd_hdr) +              \
				      sizeof(struct core_type),               \
		      #name " driver data right after the core struct")

/*
 * An extended command (the ioctl fallback's "write_ex" layout): the header,
 * the extended header, the kernel's core struct, driver data.
 */
#define RHINET_CMD_EX(name, core_type, drv_type)                             \
	struct name {                                                         \
		struct ib_uverbs_cmd_hdr hdr;                                 \
		struct ib_uverbs_ex_cmd_hdr ex_hdr;                           \
		unsigned char core[sizeof(struct core_type)];                 \
		drv_type drv;                                                 \
	};                                                                    \
	static_assert(offsetof(struct name, drv) ==                           \
			      sizeof(struct ib_uverbs_cmd_hdr) +              \
				      sizeof(struct ib_uverbs_ex_cmd_hdr) +   \
				      sizeof(struct core_type),               \
		      #name " driver data right after the core struct")

/* A response: the core struct's bytes, then the driver's response. */
#define RHINET_RESP(name, core_type, drv_type)                             \
	struct name {                                                       \
		unsigned char core[sizeof(struct core_type)];               \
		drv_type drv;                                               \
	};                                                                  \
	static_assert(offsetof(struct name, drv) == sizeof(struct core_type), \
		      #name " driver response right after the core struct")

struct rhinet_no_data {
};

/* Opaque names the libibverbs prototypes use for these buffers. */
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_create_cq;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_alloc_mw;
struct ibv_create_cq_ex;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_modify_qp;
struct ibv_query_qp;
struct ibv_open_xrcd;
struct ibv_open_qp;

/* ---- functions exported under IBVERBS_PRIVATE_34 ------------------------ */

void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/*
 * UVERBS_METHOD_REG_DMABUF_MR through the ioctl interface, with no driver
 * data (44.0 takes no command buffer from the provider); fills in the
 * handle and keys, and sets mr_type to IBV_MR_TYPE_DMABUF_MR.
 */
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
/* UVERBS_METHOD_ADVISE_MR through the ioctl interface (no driver data). */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
/* Public since IBVERBS_1.1, declared only in driver.h. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
/*
 * Does not call verbs_init_cq(): libibverbs' create_cq_ex wrapper does that
 * after the provider returns (and refuses wc_flags beyond 0xfff itself).
 * A CQ the provider creates outside that wrapper (the direct verbs) calls
 * it itself: it sets the CQ's context and channel, takes a reference on the
 * channel and readies the event counters' lock.
 */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
/* Sets cq->cqe from the response. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
/* ibv_modify_cq: an extended command (IB_USER_VERBS_EX_CMD_MODIFY_CQ). */
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
/* attr->comp_mask must have IBV_SRQ_INIT_ATTR_PD; IBV_SRQT_TM needs the CQ
 * and a max_num_tags (EINVAL otherwise); sets srq_type and cq in *srq.
 */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
/*
 * Accepts comp_mask PD | XRCD | SEND_OPS_FLAGS (else EINVAL); sets
 * verbs_qp.comp_mask to 0 (or VERBS_QP_XRCD): the provider adds VERBS_QP_EX.
 */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
/* Sets the xrcd's context, and its handle when @vxrcd_size holds one. */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
/* Opens a shareable QP (an XRC target) of an xrcd by number; fills in the
 * ibv_qp (context, handle, qp_num, type, state) and sets VERBS_QP_XRCD.
 */
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

#ifdef __cplusplus
}
#endif

/* ---- the layout libibverbs 44.0 was built with -------------------------- */

#define RHINET_ABI_SIZE(type, size) \
	static_assert(sizeof(type) == (size), #type " size (rdma-core 44.0)")
#define RHINET_ABI_OFFSET(type, member, off)                      \
	static_assert(offsetof(type, member) == (off), \
		      #type "." #member " offset (rdma-core 44.0)")

RHINET_ABI_SIZE(struct verbs_context_ops, 76 * sizeof(void *));
RHINET_ABI_OFFSET(struct verbs_context_ops, alloc_pd, 5 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, attach_mcast, 9 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, detach_mcast, 38 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, create_cq_ex, 16 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, create_qp, 19 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, create_qp_ex, 20 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, free_context, 39 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, close_xrcd, 11 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, get_srq_num, 41 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, open_qp, 51 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, open_xrcd, 52 * 8);
RHINET_ABI_SIZE(struct verbs_xrcd, sizeof(struct ibv_xrcd) + 8);
RHINET_ABI_OFFSET(struct verbs_srq, srq_num, sizeof(struct ibv_srq) + 24);
RHINET_ABI_OFFSET(struct verbs_context_ops, create_srq_ex, 23 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, modify_cq, 45 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, poll_cq, 53 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, post_srq_ops, 56 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, query_device_ex, 58 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, reg_dm_mr, 66 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, reg_dmabuf_mr, 67 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, reg_mr, 68 * 8);
RHINET_ABI_OFFSET(struct verbs_context_ops, rereg_mr, 70 * 8);
RHINET_ABI_SIZE(struct verbs_sysfs_dev, 992);
RHINET_ABI_OFFSET(struct verbs_sysfs_dev, modalias, 432);
RHINET_ABI_OFFSET(struct verbs_sysfs_dev, abi_ver, 968);
RHINET_ABI_SIZE(struct verbs_device_ops, 72);
RHINET_ABI_SIZE(struct verbs_match_ent, 24);
RHINET_ABI_OFFSET(struct verbs_device, ops, sizeof(struct ibv_device));
/* ibv_qp_to_qp_ex() of 44.0 tests byte 0x160 of the QP for VERBS_QP_EX. */
RHINET_ABI_SIZE(struct ibv_qp_ex, 352);
RHINET_ABI_OFFSET(struct verbs_qp, qp_ex, 0);
RHINET_ABI_OFFSET(struct verbs_qp, comp_mask, 0x160);
RHINET_ABI_SIZE(struct verbs_cq, sizeof(struct ibv_cq_ex));
RHINET_ABI_SIZE(struct ibv_cq_ex, 288);
RHINET_ABI_SIZE(struct ib_uverbs_ex_cmd_hdr, 16);

#endif /* RHINET_VERBS_ABI44_H */
