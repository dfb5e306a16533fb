// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ib_core device: one RoCE-style port whose GIDs come from the rhinet
 * Ethernet interface, PDs and AHs, and the device's registration, with
 * the table of verbs ib_core calls. The objects behind the verbs are the
 * middle layer (rhinet_obj.h): user contexts in rhinet_ucontext.c,
 * counters in rhinet_counters.c, memory regions in rhinet_mem.c, user
 * queues in rhinet_queues.c, kernel queues in rhinet_kqueues.c, twin
 * memory (device memory) in rhinet_twin.c, remote pin-down (on-demand
 * MRs) in rhinet_pindown.c. Event dispatch is in rhinet_events.c; the
 * kernel verbs' data path (rhinet_kverbs.c) serves the management QP
 * (ib_mad, ib_cm, rdma_cm) and the RC QPs of the kernel's RDMA consumers.
 */
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rhinet-abi.h>

#include "rhinet_ib.h"

/* ---- device and port ----------------------------------------------------- */

static unsigned long rhinet_page_size_cap(const struct rhinet_dev *rdev)
{
	return le32_to_cpu(rdev->attr.page_size_cap) & GENMASK(30, 12);
}

static int rhinet_query_device(struct ib_device *ibdev,
			       struct ib_device_attr *attr,
			       struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibdev);
	struct rhinet_dev *rdev = ib->rdev;
	const struct rhn_device_attr *hw = &rdev->attr;
	u32 caps = rhinet_read32(rdev, RHN_REG_CAPS);
	int ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = rhinet_read32(rdev, RHN_REG_VERSION);
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = le64_to_cpu(hw->max_mr_size);
	attr->page_size_cap = rhinet_page_size_cap(rdev);
	attr->vendor_id = RHN_PCI_VENDOR_ID;
	attr->vendor_part_id = RHN_PCI_DEVICE_ID;
	attr->hw_ver = rdev->pdev->revision;
	/* The net_device owns one QP and CQ (hw->max_qps leaves QPN 0, 1). */
	attr->max_qp = le32_to_cpu(hw->max_qps) - 1;
	attr->max_qp_wr = 1 << le32_to_cpu(hw->max_wq_log_depth);
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* Every kernel PD uses the local_dma_lkey (bus addresses). */
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	if (ib->od_ring) {
		/* ibv_reg_mr(IBV_ACCESS_ON_DEMAND) is an on-demand MR. On
		 * RC a peer's access and a local one (a SEND's source, a
		 * receive's buffer, a READ's or atomic's target) fault and
		 * wait while the pages are pinned. On UD only the SEND's
		 * source waits: a datagram that meets an unpinned receive
		 * buffer is dropped (nobody sends it again), so no RECV.
		 */
		attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
		attr->odp_caps.general_caps = IB_ODP_SUPPORT;
		attr->odp_caps.per_transport_caps.rc_odp_caps =
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
			IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
			IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
		attr->odp_caps.per_transport_caps.ud_odp_caps =
			IB_ODP_SUPPORT_SEND;
	}
	attr->max_fast_reg_page_list_len = RHN_VPT_ENTRIES_PER_PAGE;
	attr->max_send_sge = le32_to_cpu(hw->max_send_sges);
	attr->max_recv_sge = le32_to_cpu(hw->max_recv_sges);
	attr->max_sge_rd = attr->max_send_sge;
	/* The net_device and the management QP own one CQ each. */
	attr->max_cq = le32_to_cpu(hw->max_cqs) - 2;
	attr->max_cqe = 1 << le32_to_cpu(hw->max_cq_log_depth);
	attr->cq_caps.max_cq_moderation_count = le16_to_cpu(hw->max_cq_mod_count);
	attr->cq_caps.max_cq_moderation_period =
		le16_to_cpu(hw->max_cq_mod_period_us);
	attr->max_mr = ib->max_mrs;
	attr->max_mw = ib->max_mrs; /* one pool with the MRs */
	attr->max_pd = ib->max_pds;
	attr->max_qp_rd_atom = le32_to_cpu(hw->max_rd_atomic);
	attr->max_qp_init_rd_atom = attr->max_qp_rd_atom;
	attr->max_res_rd_atom = attr->max_qp * attr->max_qp_rd_atom;
	attr->atomic_cap = caps & RHN_CAP_ATOMIC ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	if (caps & RHN_CAP_XRC)
		attr->device_cap_flags |= IB_DEVICE_XRC;
	attr->max_ah = RHINET_MAX_AH;
	attr->max_srq = le32_to_cpu(hw->max_srqs);
	attr->max_srq_wr = attr->max_qp_wr;
	attr->max_srq_sge = attr->max_recv_sge;
	if (caps & RHN_CAP_TM) {
		/* TM SRQs: ibverbs tag matching, rendezvous on RC */
		attr->tm_caps.max_rndv_hdr_size = RHN_TM_MAX_RNDV_HDR;
		attr->tm_caps.max_num_tags = le32_to_cpu(hw->tm_max_tags);
		attr->tm_caps.flags = IB_TM_CAP_RNDV_RC;
		attr->tm_caps.max_ops = 1u << le32_to_cpu(hw->tm_max_ops_log);
		attr->tm_caps.max_sge = RHN_TM_MAX_SGES;
	}
	if (caps & RHN_CAP_UD_MCAST) {
		/* One attach table entry per (MGID, QP): a group takes at
		 * least one, and one QP's attachments count against its
		 * process's share.
		 */
		attr->max_mcast_grp = le32_to_cpu(hw->max_mcast_attach);
		attr->max_mcast_qp_attach =
			le32_to_cpu(hw->mcast_attach_per_context);
		attr->max_total_mcast_qp_attach = attr->max_mcast_grp;
	}
	attr->max_pkeys = 1;
	attr->local_ca_ack_delay = 15;
	/* Device memory is twin memory: what one process may allocate. */
	attr->max_dm_size = ib->twin_share.bytes;
	return 0;
}

static void rhinet_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u32 v = rhinet_read32(to_rib(ibdev)->rdev, RHN_REG_VERSION);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u", v >> 16, v & 0xffff);
}

static bool rhinet_port_up(struct rhinet_dev *rdev)
{
	struct net_device *ndev = rhinet_net_device(rdev);

	return READ_ONCE(rdev->link_up) && !rhinet_dev_dead(rdev) && ndev &&
	       netif_running(ndev) && netif_carrier_ok(ndev);
}

static int rhinet_query_port(struct ib_device *ibdev, u32 port,
			     struct ib_port_attr *attr)
{
	struct rhinet_dev *rdev = to_rib(ibdev)->rdev;
	struct net_device *ndev = rhinet_net_device(rdev);
	bool up = rhinet_port_up(rdev);

	attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = ib_mtu_int_to_enum(le32_to_cpu(rdev->attr.mtu));
	attr->active_mtu = ndev ? min(attr->max_mtu, iboe_get_mtu(ndev->mtu)) :
				  IB_MTU_256;
	attr->gid_tbl_len = RHINET_GID_TABLE_LEN;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = le32_to_cpu(rdev->attr.max_msg_size);
	attr->max_vl_num = 1;
	attr->ip_gids = true;
	/* The emulated link has no line rate; report the slowest. */
	attr->active_speed = IB_SPEED_SDR;
	attr->active_width = IB_WIDTH_1X;
	return 0;
}

static int rhinet_get_port_immutable(struct ib_device *ibdev, u32 port,
				     struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int ret;

	ret = ib_query_port(ibdev, port, &attr);
	if (ret)
		return ret;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	/*
	 * RoCE v1 and v2 addressing (GIDs of both types from the interface;
	 * the NIC builds an IB GRH or an IPv4/IPv6 header to match) on our
	 * own wire format, with the management QP for MADs and CM.
	 */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE |
				    RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer rhinet_get_link_layer(struct ib_device *ibdev,
						  u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int rhinet_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			     u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

/* Port events follow the NIC link and the interface's carrier. */
static void rhinet_port_work(struct work_struct *work)
{
	struct rhinet_ib *ib = container_of(work, struct rhinet_ib, port_work);
	bool up = rhinet_port_up(ib->rdev);
	struct ib_event event = {
		.device = &ib->ibdev,
		.element.port_num = 1,
		.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	if (up == ib->port_was_up)
		return;
	ib->port_was_up = up;
	ib_dispatch_event(&event);
}

static void rhinet_ib_port_changed(struct rhinet_dev *rdev)
{
	struct rhinet_ib *ib = READ_ONCE(rdev->ib);

	if (ib)
		schedule_work(&ib->port_work);
}

/* What the hardware layer tells the RDMA device (rhinet_events.c). */
static const struct rhinet_consumer_ops rhinet_ib_consumer = {
	.event = rhinet_ib_event,
	.dead = rhinet_ib_dead,
	.port_changed = rhinet_ib_port_changed,
};

/* ---- PD and AH ----------------------------------------------------------- */

static int rhinet_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rhinet_ucontext, ibuc);
	struct rhinet_alloc_pd_resp resp = {};
	struct rhinet_pd *pd = to_rpd(ibpd);
	struct rhn_admin_cmd cmd = {};
	int ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	/* max_pd counts user PDs; kernel ones (ib_mad's) are held back. */
	pd->ctx = uc ? uc->ctx : 0;
	if (pd->ctx && atomic_inc_return(&ib->num_pds) > ib->max_pds) {
		ret = -ENOSPC;
		goto err_count;
	}
	cmd.hdr.opcode = RHN_ADMIN_CREATE_PD;
	ret = rhinet_ctx_exec(ib, pd->ctx, &cmd, &pd->pdn);
	if (ret)
		goto err_count;
	resp.pdn = pd->pdn;
	ret = rhinet_udata_out(udata, &resp, sizeof(resp));
	if (ret)
		goto err_pd;
	return 0;

err_pd:
	rhinet_destroy_object(ib, pd->ctx, RHN_ADMIN_DESTROY_PD, pd->pdn);
err_count:
	if (pd->ctx)
		atomic_dec(&ib->num_pds);
	return ret;
}

static int rhinet_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_pd *pd = to_rpd(ibpd);
	int ret;

	ret = rhinet_destroy_object(ib, pd->ctx, RHN_ADMIN_DESTROY_PD, pd->pdn);
	if (ret)
		return ret;
	if (pd->ctx)
		atomic_dec(&ib->num_pds);
	return 0;
}

/* An AH is the peer's node number; the NIC keeps no state for it. */
static int rhinet_create_ah(struct ib_ah *ibah,
			    struct rdma_ah_init_attr *init_attr,
			    struct ib_udata *udata)
{
	struct rhinet_ib *ib = to_rib(ibah->device);
	struct rhinet_ah *ah = container_of(ibah, struct rhinet_ah, ibah);
	struct rhinet_create_ah_resp resp = {};
	const struct ib_global_route *grh;
	int node, ret;

	ret = rhinet_udata_in(udata, NULL, 0);
	if (ret)
		return ret;
	node = rhinet_node_of_ah_attr(ib, init_attr->ah_attr, false);
	if (node < 0)
		return node;
	if (node == RHN_NODE_BROADCAST)
		return -EINVAL;
	if (atomic_inc_return(&ib->num_ahs) > RHINET_MAX_AH) {
		atomic_dec(&ib->num_ahs);
		return -ENOSPC;
	}
	ah->dest_node = node;
	grh = rdma_ah_read_grh(init_attr->ah_attr);
	memcpy(ah->grh.dgid, grh->dgid.raw, sizeof(ah->grh.dgid));
	ah->grh.flow_label = cpu_to_le32(grh->flow_label);
	ah->grh.sgid_index = grh->sgid_index;
	ah->grh.hop_limit = grh->hop_limit;
	ah->grh.traffic_class = grh->traffic_class;
	resp.dest_node = node;
	ret = rhinet_udata_out(udata, &resp, sizeof(resp));
	if (ret)
		atomic_dec(&ib->num_ahs);
	return ret;
}

/*
 * Verbs UD multicast: the NIC keeps the attach table (charged to the QP's
 * context) and joins or leaves the switch group itself on the first
 * attach and last detach of a group on this device. RoCE has no SA: the
 * LID is unused.
 */
static int rhinet_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u8 opcode)
{
	struct rhinet_ib *ib = to_rib(ibqp->device);
	struct rhinet_qp *qp = to_rqp(ibqp);
	struct rhn_admin_cmd cmd = {};

	if (ibqp->qp_type != IB_QPT_UD || !rhn_gid_is_mcast(gid->raw))
		return -EINVAL;
	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_UD_MCAST))
		return -EOPNOTSUPP;
	cmd.hdr.opcode = opcode;
	cmd.u.mcast_attach.qpn = cpu_to_le32(qp->qpn);
	memcpy(cmd.u.mcast_attach.mgid, gid->raw,
	       sizeof(cmd.u.mcast_attach.mgid));
	return rhinet_ctx_exec(ib, qp->buf.ctx, &cmd, NULL);
}

static int rhinet_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rhinet_mcast_cmd(ibqp, gid, RHN_ADMIN_ATTACH_MCAST);
}

static int rhinet_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rhinet_mcast_cmd(ibqp, gid, RHN_ADMIN_DETACH_MCAST);
}

static int rhinet_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&to_rib(ibah->device)->num_ahs);
	return 0;
}

/* ---- registration -------------------------------------------------------- */

static const struct ib_device_ops rhinet_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = RHINET_UVERBS_ABI_VERSION,

	.add_gid = rhinet_add_gid,
	.advise_mr = rhinet_advise_mr,
	.alloc_dm = rhinet_alloc_dm,
	.alloc_mr = rhinet_alloc_mr,
	.alloc_hw_port_stats = rhinet_alloc_hw_port_stats,
	.alloc_mw = rhinet_alloc_mw,
	.alloc_pd = rhinet_alloc_pd,
	.alloc_ucontext = rhinet_alloc_ucontext,
	.alloc_xrcd = rhinet_alloc_xrcd,
	.attach_mcast = rhinet_attach_mcast,
	.create_ah = rhinet_create_ah,
	.create_cq = rhinet_create_cq,
	.create_qp = rhinet_create_qp,
	.create_srq = rhinet_create_srq,
	.create_user_ah = rhinet_create_ah,
	.dealloc_dm = rhinet_dealloc_dm,
	.dealloc_mw = rhinet_dealloc_mw,
	.dealloc_pd = rhinet_dealloc_pd,
	.dealloc_ucontext = rhinet_dealloc_ucontext,
	.dealloc_xrcd = rhinet_dealloc_xrcd,
	.del_gid = rhinet_del_gid,
	.dereg_mr = rhinet_dereg_mr,
	.destroy_ah = rhinet_destroy_ah,
	.destroy_cq = rhinet_destroy_cq,
	.destroy_qp = rhinet_destroy_qp,
	.destroy_srq = rhinet_destroy_srq,
	.detach_mcast = rhinet_detach_mcast,
	.disassociate_ucontext = rhinet_disassociate_ucontext,
	.get_dev_fw_str = rhinet_get_dev_fw_str,
	.get_dma_mr = rhinet_get_dma_mr,
	.get_hw_stats = rhinet_get_hw_stats,
	.get_link_layer = rhinet_get_link_layer,
	.get_port_immutable = rhinet_get_port_immutable,
	.map_mr_sg = rhinet_map_mr_sg,
	.mmap = rhinet_mmap,
	.mmap_free = rhinet_mmap_free,
	.modify_cq = rhinet_modify_cq,
	.modify_qp = rhinet_modify_qp,
	.modify_srq = rhinet_modify_srq,
	.poll_cq = rhinet_poll_cq,
	.post_recv = rhinet_post_recv,
	.post_send = rhinet_post_send,
	.query_device = rhinet_query_device,
	.query_pkey = rhinet_query_pkey,
	.query_port = rhinet_query_port,
	.query_qp = rhinet_query_qp,
	.query_srq = rhinet_query_srq,
	.reg_dm_mr = rhinet_reg_dm_mr,
	.reg_user_mr = rhinet_reg_user_mr,
	.reg_user_mr_dmabuf = rhinet_reg_user_mr_dmabuf,
	.req_notify_cq = rhinet_req_notify_cq,
	.rereg_user_mr = rhinet_rereg_user_mr,
	.resize_cq = rhinet_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, rhinet_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, rhinet_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, rhinet_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, rhinet_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rhinet_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, rhinet_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rhinet_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, rhinet_xrcd, ibxrcd),
};

/* What users may create, after what the driver and queues hold back. */
static void rhinet_ib_limits(struct rhinet_ib *ib)
{
	const struct rhn_device_attr *hw = &ib->rdev->attr;
	/* The kernel PD, a queue PD per context, and ib_mad's PD. */
	s64 pds = (s64)le32_to_cpu(hw->max_pds) - 1 - (ib->db_pages - 1) - 1;
	s64 mrs = (s64)le32_to_cpu(hw->max_mrs) - 1 -
		  (le32_to_cpu(hw->max_cqs) - 1) -
		  (le32_to_cpu(hw->max_qps) - 1) - le32_to_cpu(hw->max_srqs);

	ib->max_pds = clamp_t(s64, pds, 0, U32_MAX);
	ib->max_mrs = clamp_t(s64, mrs, 0, U32_MAX);
	/* An area is an MR too. */
	ib->max_areas = min(le32_to_cpu(hw->max_areas), ib->max_mrs);
	rhinet_twin_limits(ib);
}

/* No event handler, ndo_open or ndo_stop sees the device after this. */
static void rhinet_ib_unpublish(struct rhinet_dev *rdev, struct rhinet_ib *ib)
{
	rtnl_lock();
	WRITE_ONCE(rdev->ib, NULL);
	rtnl_unlock();
	rhinet_eq_sync(rdev);
	cancel_work_sync(&ib->port_work);
}

int rhinet_ib_init(struct rhinet_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	struct net_device *ndev = rhinet_net_device(rdev);
	struct rhinet_ib *ib;
	int ret;

	/* A process's doorbell page must be one whole CPU page. */
	if (RHN_DB_PAGE_SIZE != PAGE_SIZE) {
		dev_warn(&pdev->dev, "no RDMA device: %lu-byte pages\n",
			 PAGE_SIZE);
		return 0;
	}
	if (!ndev)
		return -ENODEV;
	ib = ib_alloc_device(rhinet_ib, ibdev);
	if (!ib)
		return -ENOMEM;
	ib->rdev = rdev;
	ib->db_bar = pci_resource_start(pdev, RHN_BAR_DOORBELL);
	ib->db_pages = min_t(u64, rhinet_read32(rdev, RHN_REG_DB_PAGES),
			     pci_resource_len(pdev, RHN_BAR_DOORBELL) /
				     RHN_DB_PAGE_SIZE);
	ida_init(&ib->contexts);
	ida_init(&ib->xrcds);
	xa_init(&ib->user_contexts);
	xa_init_flags(&ib->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&ib->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&ib->srqs, XA_FLAGS_LOCK_IRQ);
	mutex_init(&ib->groups_lock);
	xa_init(&ib->groups);
	mutex_init(&ib->twin_lock);
	xa_init(&ib->user_twins);
	rhinet_mcast_switch_init(ib);
	INIT_WORK(&ib->port_work, rhinet_port_work);
	rhinet_ib_limits(ib);
	ret = rhinet_od_init(ib);
	if (ret)
		goto err_dealloc;

	ib->ibdev.node_type = RDMA_NODE_IB_CA;
	ib->ibdev.phys_port_cnt = 1;
	ib->ibdev.num_comp_vectors = rdev->nr_eqs;
	ib->ibdev.dev.parent = &pdev->dev;
	addrconf_addr_eui48((u8 *)&ib->ibdev.node_guid, rdev->mac);
	ib->ibdev.local_dma_lkey = rdev->dma_lkey;
	ib->ibdev.driver_def = rhinet_uapi_defs;
	ib_set_device_ops(&ib->ibdev, &rhinet_ib_ops);
	ret = ib_device_set_netdev(&ib->ibdev, ndev, 1);
	if (ret)
		goto err_dealloc;
	ib->port_was_up = rhinet_port_up(rdev);
	/* Registration opens the management QP: its events must get through. */
	rhinet_consumer_set(rdev, RHINET_CONSUMER_IB, &rhinet_ib_consumer);
	WRITE_ONCE(rdev->ib, ib);
	ret = ib_register_device(&ib->ibdev, "rhinet%d", &pdev->dev);
	if (ret)
		goto err_unpublish;
	return 0;

err_unpublish:
	rhinet_ib_unpublish(rdev, ib);
err_dealloc:
	rhinet_od_fini(ib);
	rhinet_mcast_switch_fini(ib);
	rhinet_groups_fini(ib);
	ib_dealloc_device(&ib->ibdev);
	return ret;
}

/* Destroys every user object first (processes lose their contexts). */
void rhinet_ib_fini(struct rhinet_dev *rdev)
{
	struct rhinet_ib *ib = rdev->ib;

	if (!ib)
		return;
	ib_unregister_device(&ib->ibdev);
	rhinet_ib_unpublish(rdev, ib);
	rhinet_od_fini(ib);
	rhinet_mcast_switch_fini(ib);
	rhinet_groups_fini(ib);
	WARN_ON(atomic64_read(&ib->pinned_pages));
	WARN_ON(atomic64_read(&ib->twin_bytes));
	WARN_ON(!xa_empty(&ib->groups) || !xa_empty(&ib->user_twins));
	xa_destroy(&ib->groups);
	xa_destroy(&ib->user_twins);
	xa_destroy(&ib->cqs);
	xa_destroy(&ib->qps);
	xa_destroy(&ib->srqs);
	ida_destroy(&ib->contexts);
	ida_destroy(&ib->xrcds);
	xa_destroy(&ib->user_contexts);
	ib_dealloc_device(&ib->ibdev);
}
