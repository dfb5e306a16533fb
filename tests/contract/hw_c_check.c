/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Proves that the hardware contract (include/hw/rhinet/hw.h) compiles as
 * strict ISO C11 with -pedantic, and checks at run time every structure
 * size, field offset and derived constant that Documentation/hardware/
 * states. Prints one line per check; exits nonzero if any is wrong.
 */
#include <stddef.h>
#include <stdio.h>

#include "rhinet/hw.h"

struct check {
  const char *name;
  unsigned long actual;
  unsigned long expected;
};

#define SIZE(type, n) \
  { "sizeof(" #type ")", sizeof(type), (n) }
#define OFF(type, field, n) \
  { #type "." #field, offsetof(type, field), (n) }
#define VAL(expr, n) \
  { #expr, (unsigned long)(expr), (n) }

static const struct check checks[] = {
    /* hw_regs.h */
    VAL(RHN_VERSION, 0x10000),
    VAL(RHN_BAR_REGS_SIZE, 0x2000),
    VAL(RHN_DB_PAGE_SIZE, 4096),
    VAL(RHN_CNT_COUNT, 42),
    VAL(RHN_REG_COUNTERS + 8 * RHN_CNT_COUNT, 0x1150),

    /* hw_queues.h: send WQE */
    VAL(RHN_WQE_MAX_SGES, 29),
    VAL(RHN_WQE_MAX_INLINE, 464),
    VAL((RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE), RHN_DB_INLINE_WQE_SIZE),
    SIZE(struct rhn_sge, 16),
    OFF(struct rhn_sge, length, 8),
    OFF(struct rhn_sge, lkey, 12),
    SIZE(struct rhn_send_wqe, 64),
    OFF(struct rhn_send_wqe, opcode, 0),
    OFF(struct rhn_send_wqe, flags, 1),
    OFF(struct rhn_send_wqe, ext_units, 2),
    OFF(struct rhn_send_wqe, xfer_mode, 3),
    OFF(struct rhn_send_wqe, wqe_index, 4),
    OFF(struct rhn_send_wqe, dst_node, 6),
    OFF(struct rhn_send_wqe, dst_qpn, 8),
    OFF(struct rhn_send_wqe, imm_data, 12),
    OFF(struct rhn_send_wqe, remote_key, 16),
    OFF(struct rhn_send_wqe, num_sge, 20),
    OFF(struct rhn_send_wqe, reserved0, 22),
    OFF(struct rhn_send_wqe, remote_addr, 24),
    OFF(struct rhn_send_wqe, u.status.addr, 32),
    OFF(struct rhn_send_wqe, u.status.lkey, 40),
    OFF(struct rhn_send_wqe, u.status.qkey, 44),
    OFF(struct rhn_send_wqe, u.atomic.compare_add, 32),
    OFF(struct rhn_send_wqe, u.atomic.swap, 40),
    OFF(struct rhn_send_wqe, d.sge, 48),
    OFF(struct rhn_send_wqe, d.inline_data, 48),

    /* hw_queues.h: receive WQE, records, CQE, EQE */
    SIZE(struct rhn_recv_wqe, 64),
    OFF(struct rhn_recv_wqe, num_sge, 2),
    OFF(struct rhn_recv_wqe, sge, 16),
    SIZE(struct rhn_queue_record, 8),
    SIZE(struct rhn_cq_record, 8),
    SIZE(struct rhn_cqe, 32),
    OFF(struct rhn_cqe, qpn, 0),
    OFF(struct rhn_cqe, byte_len, 4),
    OFF(struct rhn_cqe, imm_data, 8),
    OFF(struct rhn_cqe, src_qpn, 12),
    OFF(struct rhn_cqe, src_node, 16),
    OFF(struct rhn_cqe, wqe_index, 18),
    OFF(struct rhn_cqe, vendor_err, 20),
    OFF(struct rhn_cqe, opcode, 24),
    OFF(struct rhn_cqe, status, 25),
    OFF(struct rhn_cqe, reserved0, 26),
    OFF(struct rhn_cqe, reserved1, 28),
    OFF(struct rhn_cqe, reserved2, 30),
    OFF(struct rhn_cqe, flags, 31),
    SIZE(struct rhn_eqe, 16),
    OFF(struct rhn_eqe, object, 8),
    OFF(struct rhn_eqe, type, 12),
    OFF(struct rhn_eqe, owner, 15),

    /* hw_admin.h */
    SIZE(struct rhn_admin_cmd, 128),
    SIZE(struct rhn_admin_cmd_hdr, 8),
    OFF(struct rhn_admin_cmd_hdr, cmd_id, 2),
    OFF(struct rhn_admin_cmd_hdr, context, 4),
    OFF(struct rhn_admin_cmd, u, 8),
    SIZE(struct rhn_host_ref, 16),
    SIZE(struct rhn_admin_query, 16),
    OFF(struct rhn_admin_query, out_len, 8),
    OFF(struct rhn_admin_query, handle, 12),
    SIZE(struct rhn_admin_handle, 4),
    SIZE(struct rhn_admin_create_mr, 40),
    OFF(struct rhn_admin_create_mr, iova, 8),
    OFF(struct rhn_admin_create_mr, length, 16),
    OFF(struct rhn_admin_create_mr, table_addr, 24),
    OFF(struct rhn_admin_create_mr, num_pages, 32),
    OFF(struct rhn_admin_create_mr, page_shift, 36),
    OFF(struct rhn_admin_create_mr, levels, 37),
    OFF(struct rhn_admin_create_mr, key_variant, 38),
    OFF(struct rhn_admin_create_mr, flags, 39),
    SIZE(struct rhn_admin_create_eq, 16),
    OFF(struct rhn_admin_create_eq, vector, 8),
    OFF(struct rhn_admin_create_eq, log_depth, 10),
    SIZE(struct rhn_admin_create_cq, 40),
    OFF(struct rhn_admin_create_cq, record, 16),
    SIZE(struct rhn_admin_resize_cq, 40),
    OFF(struct rhn_admin_resize_cq, log_depth, 4),
    OFF(struct rhn_admin_resize_cq, ring, 8),
    OFF(struct rhn_admin_resize_cq, record, 24),
    VAL(RHN_ADMIN_RESIZE_CQ, 0x1f),
    VAL(RHN_QP_UC, 5),
    VAL(RHN_PKT_F_BEHIND, 16),
    SIZE(struct rhn_admin_create_mw, 8),
    VAL(RHN_ADMIN_CREATE_MW, 0x24),
    VAL(RHN_ADMIN_DESTROY_MW, 0x25),
    VAL(RHN_OP_BIND_MW, 8),
    VAL(RHN_OP_LOCAL_INV, 9),
    VAL(RHN_OP_SEND_INV, 10),
    VAL(RHN_CQE_MW_BIND_ERR, 6),
    OFF(struct rhn_send_wqe, u.bind.mr_lkey, 36),
    OFF(struct rhn_send_wqe, u.bind.length, 40),
    VAL(RHN_OP_REG_MR, 11),
    VAL(RHN_CQE_OP_REG_MR, 8),
    VAL(RHN_CREATE_MR_F_FAST_REG, 1),
    OFF(struct rhn_send_wqe, u.reg.length, 32),
    OFF(struct rhn_send_wqe, u.reg.num_pages, 40),
    OFF(struct rhn_send_wqe, u.reg.page_shift, 44),
    SIZE(struct rhn_wqe_xfer, 64),
    OFF(struct rhn_wqe_xfer, count, 4),
    OFF(struct rhn_wqe_xfer, local_stride, 8),
    OFF(struct rhn_wqe_xfer, remote_stride, 16),
    VAL(RHN_SYN_BAD_XFER, 18),
    OFF(struct rhn_admin_create_cq, eqn, 32),
    OFF(struct rhn_admin_create_cq, log_depth, 36),
    SIZE(struct rhn_admin_create_srq, 48),
    OFF(struct rhn_admin_create_srq, pdn, 32),
    OFF(struct rhn_admin_create_srq, limit, 36),
    OFF(struct rhn_admin_create_srq, log_depth, 40),
    SIZE(struct rhn_admin_modify_srq, 8),
    SIZE(struct rhn_admin_create_qp, 88),
    OFF(struct rhn_admin_create_qp, srqn, 12),
    OFF(struct rhn_admin_create_qp, type, 16),
    OFF(struct rhn_admin_create_qp, sq_log_depth, 17),
    OFF(struct rhn_admin_create_qp, rq_log_depth, 18),
    OFF(struct rhn_admin_create_qp, flags, 19),
    SIZE(struct rhn_wqe_grh, 64),
    OFF(struct rhn_wqe_grh, flow_label, 16),
    OFF(struct rhn_wqe_grh, sgid_index, 20),
    SIZE(struct rhn_admin_set_gid, 24),
    OFF(struct rhn_admin_set_gid, gid, 8),
    OFF(struct rhn_admin_create_qp, sq_ring, 24),
    OFF(struct rhn_admin_create_qp, rq_ring, 40),
    OFF(struct rhn_admin_create_qp, sq_record, 56),
    OFF(struct rhn_admin_create_qp, rq_record, 72),
    SIZE(struct rhn_admin_modify_qp, 28),
    OFF(struct rhn_admin_modify_qp, state, 8),
    OFF(struct rhn_admin_modify_qp, access, 9),
    OFF(struct rhn_admin_modify_qp, retry_cnt, 10),
    OFF(struct rhn_admin_modify_qp, rnr_retry, 11),
    OFF(struct rhn_admin_modify_qp, min_rnr_timer, 12),
    OFF(struct rhn_admin_modify_qp, max_rd_atomic, 13),
    OFF(struct rhn_admin_modify_qp, dest_node, 14),
    OFF(struct rhn_admin_modify_qp, dest_qpn, 16),
    OFF(struct rhn_admin_modify_qp, qkey, 20),
    OFF(struct rhn_admin_modify_qp, timeout, 24),
    SIZE(struct rhn_admin_register_area, 24),
    OFF(struct rhn_admin_register_area, key, 4),
    OFF(struct rhn_admin_register_area, iova, 8),
    OFF(struct rhn_admin_register_area, length, 16),
    SIZE(struct rhn_admin_set_link, 4),
    SIZE(struct rhn_admin_cpl, 16),
    OFF(struct rhn_admin_cpl, cmd_id, 4),
    OFF(struct rhn_admin_cpl, status, 6),
    OFF(struct rhn_admin_cpl, detail, 8),
    OFF(struct rhn_admin_cpl, owner, 15),
    SIZE(struct rhn_device_attr, 128),
    OFF(struct rhn_device_attr, page_size_cap, 68),
    OFF(struct rhn_device_attr, max_mr_size, 72),
    OFF(struct rhn_device_attr, max_peers, 80),
    OFF(struct rhn_device_attr, node_id, 84),
    SIZE(struct rhn_qp_attr, 32),
    OFF(struct rhn_qp_attr, state, 4),
    OFF(struct rhn_qp_attr, type, 5),
    OFF(struct rhn_qp_attr, dest_node, 6),
    OFF(struct rhn_qp_attr, dest_qpn, 8),
    OFF(struct rhn_qp_attr, sq_consumer, 12),
    OFF(struct rhn_qp_attr, rq_consumer, 16),
    VAL(RHN_VPT_ENTRIES_PER_PAGE, 1u << RHN_VPT_LEVEL_SHIFT),
    VAL(RHN_VPT_ENTRIES_PER_PAGE * 8, 4096),

    /* hw_wire.h */
    SIZE(struct rhn_pkt_hdr, 32),
    OFF(struct rhn_pkt_hdr, version, 2),
    OFF(struct rhn_pkt_hdr, type, 3),
    OFF(struct rhn_pkt_hdr, dst_node, 4),
    OFF(struct rhn_pkt_hdr, src_node, 6),
    OFF(struct rhn_pkt_hdr, seq, 8),
    OFF(struct rhn_pkt_hdr, ack_seq, 12),
    OFF(struct rhn_pkt_hdr, session, 16),
    OFF(struct rhn_pkt_hdr, flags, 18),
    OFF(struct rhn_pkt_hdr, payload_len, 20),
    OFF(struct rhn_pkt_hdr, ack_session, 22),
    OFF(struct rhn_pkt_hdr, payload_crc, 24),
    OFF(struct rhn_pkt_hdr, hdr_crc, 28),
    SIZE(struct rhn_op_hdr, 40),
    OFF(struct rhn_op_hdr, flags, 1),
    OFF(struct rhn_op_hdr, syndrome, 2),
    OFF(struct rhn_op_hdr, qp_type, 3),
    OFF(struct rhn_op_hdr, dst_qpn, 4),
    OFF(struct rhn_op_hdr, src_qpn, 8),
    OFF(struct rhn_op_hdr, msn, 12),
    OFF(struct rhn_op_hdr, rkey, 16),
    OFF(struct rhn_op_hdr, imm_data, 20),
    OFF(struct rhn_op_hdr, remote_addr, 24),
    OFF(struct rhn_op_hdr, msg_len, 32),
    OFF(struct rhn_op_hdr, msg_offset, 36),
    VAL(RHN_DATA_HDR_LEN, 72),
    VAL(RHN_MAX_FRAME, 4208),
    VAL(RHN_WIRE_GRH_LEN, 40),
    VAL(RHN_UD_GRH_LEN, 40),
    VAL(RHN_QPN_GSI, 1),
    VAL(RHN_GID_TABLE_LEN, 16),
};

int main(void) {
  size_t i;
  int bad = 0;

  for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
    const struct check *c = &checks[i];
    int ok = c->actual == c->expected;

    printf("%-4s %-50s %lu (expected %lu)\n", ok ? "ok" : "FAIL", c->name,
           c->actual, c->expected);
    bad += !ok;
  }
  printf("%zu checks, %d wrong\n", i, bad);
  return bad ? 1 : 0;
}
