// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ethernet over the RHiNET fabric. The NIC's raw-frame QP carries whole
 * Ethernet frames as unsequenced RAW packets; the destination node comes
 * from the destination MAC (02:52:4e:00:<node hi>:<node lo>), broadcast and
 * multicast MACs go to every node. One CQ serves both directions and is
 * drained by NAPI; its events arrive through the kernel event queue.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>

#include "rhinet_ib.h"

#define RHINET_NET_SQ_LOG 8
#define RHINET_NET_RQ_LOG 8
#define RHINET_NET_CQ_LOG 10 /* room for a full SQ and RQ */
#define SQ_DEPTH BIT(RHINET_NET_SQ_LOG)
#define RQ_DEPTH BIT(RHINET_NET_RQ_LOG)
#define CQ_DEPTH BIT(RHINET_NET_CQ_LOG)
#define NAPI_BUDGET 64

/* Queue records share one page: producer indices and the CQ consumer. */
struct rhinet_net_records {
	struct rhn_queue_record sq;
	struct rhn_queue_record rq;
	struct rhn_cq_record cq;
};

struct rhinet_net_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;
};

struct rhinet_net {
	struct rhinet_dev *rdev;
	struct net_device *ndev;
	struct napi_struct napi;
	struct rhn_send_wqe *sq;
	struct rhn_recv_wqe *rq;
	struct rhn_cqe *cq;
	struct rhinet_net_records *rec;
	dma_addr_t sq_dma, rq_dma, cq_dma, rec_dma;
	u32 cqn, qpn;
	bool cq_created, qp_created;
	u32 sq_pi, sq_ci; /* sq_ci: advanced by NAPI */
	u32 rq_pi, rq_ci;
	u32 cq_ci;
	u32 rx_buf_len;
	struct rhinet_net_buf tx[SQ_DEPTH];
	struct rhinet_net_buf rx[RQ_DEPTH];
	struct rhinet_self_test_probe probe;
};

static void rhinet_net_ring_sq(struct rhinet_net *net)
{
	/* WQEs before the producer index (the NIC may read it unkicked);
	 * writel() orders the kick after both.
	 */
	dma_wmb();
	WRITE_ONCE(net->rec->sq.producer_index, cpu_to_le32(net->sq_pi));
	writel(net->qpn, net->rdev->kernel_db + RHN_DB_SQ);
}

static int rhinet_net_post_rx(struct rhinet_net *net)
{
	struct device *dev = &net->rdev->pdev->dev;
	u32 slot = net->rq_pi % RQ_DEPTH;
	struct rhinet_net_buf *buf = &net->rx[slot];
	struct rhn_recv_wqe *w = &net->rq[slot];
	struct sk_buff *skb;

	skb = netdev_alloc_skb_ip_align(net->ndev, net->rx_buf_len);
	if (!skb)
		return -ENOMEM;
	buf->dma = dma_map_single(dev, skb->data, net->rx_buf_len,
				  DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, buf->dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	buf->skb = skb;
	buf->len = net->rx_buf_len;
	memset(w, 0, sizeof(*w));
	w->wqe_index = cpu_to_le16(net->rq_pi);
	w->num_sge = cpu_to_le16(1);
	w->sge[0].addr = cpu_to_le64(buf->dma);
	w->sge[0].length = cpu_to_le32(net->rx_buf_len);
	w->sge[0].lkey = cpu_to_le32(net->rdev->dma_lkey);
	net->rq_pi++;
	return 0;
}

static void rhinet_net_refill(struct rhinet_net *net)
{
	u32 posted = 0;

	while (net->rq_pi - net->rq_ci < RQ_DEPTH) {
		if (rhinet_net_post_rx(net))
			break;
		posted++;
	}
	if (!posted)
		return;
	/* As for the SQ: WQEs, producer index, then the kick. */
	dma_wmb();
	WRITE_ONCE(net->rec->rq.producer_index, cpu_to_le32(net->rq_pi));
	writel(net->qpn, net->rdev->kernel_db + RHN_DB_RQ);
}

static void rhinet_net_tx_done(struct rhinet_net *net,
			       const struct rhn_cqe *cqe)
{
	struct device *dev = &net->rdev->pdev->dev;
	struct rhinet_net_buf *buf = &net->tx[net->sq_ci % SQ_DEPTH];

	dma_unmap_single(dev, buf->dma, buf->len, DMA_TO_DEVICE);
	if (cqe->status == RHN_CQE_SUCCESS) {
		net->ndev->stats.tx_packets++;
		net->ndev->stats.tx_bytes += buf->len;
	} else {
		net->ndev->stats.tx_errors++;
	}
	napi_consume_skb(buf->skb, NAPI_BUDGET);
	buf->skb = NULL;
	/* Pairs with the check in rhinet_net_xmit. */
	smp_store_release(&net->sq_ci, net->sq_ci + 1);
}

static void rhinet_net_rx_done(struct rhinet_net *net,
			       const struct rhn_cqe *cqe)
{
	struct device *dev = &net->rdev->pdev->dev;
	struct rhinet_net_buf *buf = &net->rx[net->rq_ci % RQ_DEPTH];
	struct sk_buff *skb = buf->skb;
	u32 len = le32_to_cpu(cqe->byte_len);

	dma_unmap_single(dev, buf->dma, buf->len, DMA_FROM_DEVICE);
	buf->skb = NULL;
	net->rq_ci++;
	if (cqe->status != RHN_CQE_SUCCESS || len < ETH_HLEN ||
	    len > buf->len) {
		net->ndev->stats.rx_errors++;
		dev_kfree_skb_any(skb);
		return;
	}
	skb_put(skb, len);
	skb->protocol = eth_type_trans(skb, net->ndev);
	net->ndev->stats.rx_packets++;
	net->ndev->stats.rx_bytes += len;
	napi_gro_receive(&net->napi, skb);
}

static int rhinet_net_poll(struct napi_struct *napi, int budget)
{
	struct rhinet_net *net = container_of(napi, struct rhinet_net, napi);
	struct rhn_cqe cqe;
	int done = 0;

	while (done < budget && rhinet_next_cqe(net->cq, CQ_DEPTH, &net->cq_ci, &cqe)) {
		if (cqe.flags & RHN_CQE_F_SQ) {
			rhinet_net_tx_done(net, &cqe);
		} else {
			rhinet_net_rx_done(net, &cqe);
			done++;
		}
	}
	WRITE_ONCE(net->rec->cq.consumer_index, cpu_to_le32(net->cq_ci));
	rhinet_net_refill(net);
	if (netif_queue_stopped(net->ndev) &&
	    net->sq_pi - net->sq_ci < SQ_DEPTH / 2)
		netif_wake_queue(net->ndev);

	if (done < budget && napi_complete_done(napi, done)) {
		/* The NIC raises an event only for CQEs added after the arm:
		 * one that came since the last look is taken now.
		 */
		wmb();
		writel(net->cqn, net->rdev->kernel_db + RHN_DB_CQ_ARM);
		if (rhinet_cqe_ready(net->cq, CQ_DEPTH, net->cq_ci))
			napi_schedule(napi);
	}
	return done;
}

static void rhinet_net_cq_event(struct rhinet_dev *rdev, u32 cqn)
{
	struct rhinet_net *net = READ_ONCE(rdev->net);

	if (net && net->cq_created && cqn == net->cqn)
		napi_schedule(&net->napi);
}

static void rhinet_net_link_event(struct rhinet_dev *rdev, bool up)
{
	struct rhinet_net *net = READ_ONCE(rdev->net);

	if (!net || !netif_running(net->ndev))
		return;
	if (up && !rhinet_dev_dead(rdev))
		netif_carrier_on(net->ndev);
	else
		netif_carrier_off(net->ndev);
}

/* From the kernel event queue: our CQ's completions, the link, the
 * self-test's probe.
 */
static void rhinet_net_event(struct rhinet_dev *rdev, const struct rhn_eqe *eqe)
{
	struct rhinet_net *net;

	if (eqe->type == RHN_EQE_COMPLETION) {
		rhinet_net_cq_event(rdev, le32_to_cpu(eqe->object));
	} else if (eqe->type == RHN_EQE_PORT_CHANGE) {
		rhinet_net_link_event(rdev, READ_ONCE(rdev->link_up));
	} else if (eqe->type == RHN_EQE_PROBE_DONE) {
		net = READ_ONCE(rdev->net);
		if (net)
			rhinet_self_test_probe_done(&net->probe, eqe);
	}
}

static netdev_tx_t rhinet_net_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct rhinet_net *net = netdev_priv(ndev);
	struct device *dev = &net->rdev->pdev->dev;
	struct rhinet_net_buf *buf;
	struct rhn_send_wqe *w;
	int node;
	u32 slot;

	if (rhinet_dev_dead(net->rdev) || skb_linearize(skb) ||
	    skb->len < ETH_HLEN || skb->len > RHN_WIRE_MTU)
		goto drop;
	node = rhinet_mac_to_node(eth_hdr(skb)->h_dest);
	if (node < 0)
		goto drop;
	/* Pairs with the release in NAPI: its slot reads are done. */
	if (net->sq_pi - smp_load_acquire(&net->sq_ci) >= SQ_DEPTH) {
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}
	slot = net->sq_pi % SQ_DEPTH;
	buf = &net->tx[slot];
	buf->dma = dma_map_single(dev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(dev, buf->dma))
		goto drop;
	buf->skb = skb;
	buf->len = skb->len;

	/* One slot: built in place (hw_wqe.h). */
	w = rhn_wqe_start(&net->sq[slot], RHN_OP_RAW_ETH, RHN_WQE_F_SIGNALED,
			  net->sq_pi);
	w->dst_node = cpu_to_le16(node);
	rhn_wqe_put_sge(w, 0, buf->dma, skb->len, net->rdev->dma_lkey);
	rhn_wqe_finish(w, rhn_wqe_set_sges(w, 1), NULL);
	net->sq_pi++;
	skb_tx_timestamp(skb);
	rhinet_net_ring_sq(net);

	/* Both loads pair with the release in NAPI, as above. */
	if (net->sq_pi - smp_load_acquire(&net->sq_ci) >= SQ_DEPTH) {
		netif_stop_queue(ndev);
		/* A completion may have freed room meanwhile. */
		if (net->sq_pi - smp_load_acquire(&net->sq_ci) < SQ_DEPTH)
			netif_wake_queue(ndev);
	}
	return NETDEV_TX_OK;

drop:
	ndev->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static int rhinet_net_modify(struct rhinet_net *net, u8 state)
{
	struct rhn_admin_cmd cmd = {};

	cmd.hdr.opcode = RHN_ADMIN_MODIFY_QP;
	cmd.u.modify_qp.qpn = cpu_to_le32(net->qpn);
	cmd.u.modify_qp.attr_mask = cpu_to_le32(RHN_QP_ATTR_STATE);
	cmd.u.modify_qp.state = state;
	return rhinet_admin_exec(net->rdev, &cmd, NULL);
}

/* Its memory is freed next: a NIC that may still use it is stopped. */
static void rhinet_net_destroy(struct rhinet_net *net, u8 opcode, u32 handle)
{
	struct rhn_admin_cmd cmd = {};

	cmd.hdr.opcode = opcode;
	cmd.u.handle.handle = cpu_to_le32(handle);
	if (rhinet_admin_exec(net->rdev, &cmd, NULL))
		rhinet_dev_fail(net->rdev, RHINET_REPORT_ADMIN,
				"the interface's queues cannot be destroyed");
}

static void rhinet_net_free_bufs(struct rhinet_net *net)
{
	struct device *dev = &net->rdev->pdev->dev;
	u32 i;

	for (i = 0; i < SQ_DEPTH; i++) {
		if (!net->tx[i].skb)
			continue;
		dma_unmap_single(dev, net->tx[i].dma, net->tx[i].len,
				 DMA_TO_DEVICE);
		dev_kfree_skb_any(net->tx[i].skb);
		net->tx[i].skb = NULL;
	}
	for (i = 0; i < RQ_DEPTH; i++) {
		if (!net->rx[i].skb)
			continue;
		dma_unmap_single(dev, net->rx[i].dma, net->rx[i].len,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(net->rx[i].skb);
		net->rx[i].skb = NULL;
	}
}

/* Destroys the QP and CQ; afterwards the NIC touches none of our memory. */
static void rhinet_net_teardown(struct rhinet_net *net)
{
	if (net->qp_created)
		rhinet_net_destroy(net, RHN_ADMIN_DESTROY_QP, net->qpn);
	net->qp_created = false;
	if (net->cq_created)
		rhinet_net_destroy(net, RHN_ADMIN_DESTROY_CQ, net->cqn);
	net->cq_created = false;
	rhinet_net_free_bufs(net);
}

static int rhinet_net_open(struct net_device *ndev)
{
	struct rhinet_net *net = netdev_priv(ndev);
	struct rhinet_dev *rdev = net->rdev;
	struct rhn_admin_cmd cmd = {};
	int ret;

	memset(net->sq, 0, SQ_DEPTH * sizeof(*net->sq));
	memset(net->rq, 0, RQ_DEPTH * sizeof(*net->rq));
	memset(net->cq, 0, CQ_DEPTH * sizeof(*net->cq));
	memset(net->rec, 0, sizeof(*net->rec));
	net->sq_pi = 0;
	net->sq_ci = 0;
	net->rq_pi = 0;
	net->rq_ci = 0;
	net->cq_ci = 0;
	net->rx_buf_len = ndev->mtu + ETH_HLEN + VLAN_HLEN;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_CQ;
	cmd.u.create_cq.ring = rhinet_phys_ref(net->cq_dma);
	cmd.u.create_cq.record = rhinet_phys_ref(net->rec_dma +
		offsetof(struct rhinet_net_records, cq));
	cmd.u.create_cq.eqn = cpu_to_le32(rdev->eqs[0].eqn);
	cmd.u.create_cq.log_depth = RHINET_NET_CQ_LOG;
	ret = rhinet_admin_exec(rdev, &cmd, &net->cqn);
	if (ret)
		goto err;
	net->cq_created = true;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_CREATE_QP;
	cmd.u.create_qp.pdn = cpu_to_le32(rdev->kernel_pdn);
	cmd.u.create_qp.send_cqn = cpu_to_le32(net->cqn);
	cmd.u.create_qp.recv_cqn = cpu_to_le32(net->cqn);
	cmd.u.create_qp.srqn = cpu_to_le32(RHN_NO_SRQ);
	cmd.u.create_qp.type = RHN_QP_RAW_ETH;
	cmd.u.create_qp.sq_log_depth = RHINET_NET_SQ_LOG;
	cmd.u.create_qp.rq_log_depth = RHINET_NET_RQ_LOG;
	cmd.u.create_qp.sq_ring = rhinet_phys_ref(net->sq_dma);
	cmd.u.create_qp.rq_ring = rhinet_phys_ref(net->rq_dma);
	cmd.u.create_qp.sq_record = rhinet_phys_ref(net->rec_dma +
		offsetof(struct rhinet_net_records, sq));
	cmd.u.create_qp.rq_record = rhinet_phys_ref(net->rec_dma +
		offsetof(struct rhinet_net_records, rq));
	ret = rhinet_admin_exec(rdev, &cmd, &net->qpn);
	if (ret)
		goto err;
	net->qp_created = true;
	ret = rhinet_net_modify(net, RHN_QPS_INIT);
	if (!ret)
		ret = rhinet_net_modify(net, RHN_QPS_RTR);
	if (!ret)
		ret = rhinet_net_modify(net, RHN_QPS_RTS);
	if (ret)
		goto err;

	rhinet_net_refill(net);
	if (net->rq_pi == 0) {
		ret = -ENOMEM;
		goto err;
	}
	napi_enable(&net->napi);
	writel(net->cqn, rdev->kernel_db + RHN_DB_CQ_ARM);
	if (rhinet_cqe_ready(net->cq, CQ_DEPTH, net->cq_ci))
		napi_schedule(&net->napi);
	if (READ_ONCE(rdev->link_up))
		netif_carrier_on(ndev);
	else
		netif_carrier_off(ndev);
	netif_start_queue(ndev);
	rhinet_consumers_port_changed(net->rdev);
	return 0;

err:
	netdev_err(ndev, "cannot open: %d\n", ret);
	rhinet_net_teardown(net);
	return ret;
}

static int rhinet_net_stop(struct net_device *ndev)
{
	struct rhinet_net *net = netdev_priv(ndev);

	netif_stop_queue(ndev);
	netif_carrier_off(ndev);
	napi_disable(&net->napi);
	rhinet_net_teardown(net);
	rhinet_consumers_port_changed(net->rdev);
	return 0;
}

static int rhinet_net_change_mtu(struct net_device *ndev, int mtu)
{
	/* Receive buffers are sized when the interface comes up. */
	if (netif_running(ndev))
		return -EBUSY;
	ndev->mtu = mtu;
	return 0;
}

static void rhinet_net_get_drvinfo(struct net_device *ndev,
				   struct ethtool_drvinfo *info)
{
	struct rhinet_net *net = netdev_priv(ndev);
	u32 version = rhinet_read32(net->rdev, RHN_REG_VERSION);

	strscpy(info->driver, DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "contract %u.%u",
		 version >> 16, version & 0xffff);
	strscpy(info->bus_info, pci_name(net->rdev->pdev),
		sizeof(info->bus_info));
}

static int rhinet_net_get_sset_count(struct net_device *ndev, int sset)
{
	return sset == ETH_SS_TEST ? rhinet_self_test_count() : -EOPNOTSUPP;
}

static void rhinet_net_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	if (sset == ETH_SS_TEST)
		rhinet_self_test_strings(data);
}

static void rhinet_net_self_test(struct net_device *ndev,
				 struct ethtool_test *et, u64 *data)
{
	struct rhinet_net *net = netdev_priv(ndev);

	rhinet_self_test(net->rdev, &net->probe, et, data);
}

static const struct ethtool_ops rhinet_net_ethtool_ops = {
	.get_drvinfo = rhinet_net_get_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_sset_count = rhinet_net_get_sset_count,
	.get_strings = rhinet_net_get_strings,
	.self_test = rhinet_net_self_test,
};

static const struct net_device_ops rhinet_net_ops = {
	.ndo_open = rhinet_net_open,
	.ndo_stop = rhinet_net_stop,
	.ndo_start_xmit = rhinet_net_xmit,
	.ndo_change_mtu = rhinet_net_change_mtu,
	.ndo_validate_addr = eth_validate_addr,
};

static void rhinet_net_free_rings(struct rhinet_net *net)
{
	struct device *dev = &net->rdev->pdev->dev;

	if (net->sq)
		dma_free_coherent(dev, SQ_DEPTH * sizeof(*net->sq), net->sq,
				  net->sq_dma);
	if (net->rq)
		dma_free_coherent(dev, RQ_DEPTH * sizeof(*net->rq), net->rq,
				  net->rq_dma);
	if (net->cq)
		dma_free_coherent(dev, CQ_DEPTH * sizeof(*net->cq), net->cq,
				  net->cq_dma);
	if (net->rec)
		dma_free_coherent(dev, PAGE_SIZE, net->rec, net->rec_dma);
}

/* The NIC failed: the interface loses its carrier and sends nothing. */
static void rhinet_net_dead(struct rhinet_dev *rdev)
{
	struct rhinet_net *net = READ_ONCE(rdev->net);

	if (net)
		netif_carrier_off(net->ndev);
}

static const struct rhinet_consumer_ops rhinet_net_consumer = {
	.event = rhinet_net_event,
	.dead = rhinet_net_dead,
};

int rhinet_net_init(struct rhinet_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct net_device *ndev;
	struct rhinet_net *net;
	int ret;

	ndev = alloc_etherdev(sizeof(*net));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, dev);
	net = netdev_priv(ndev);
	net->rdev = rdev;
	net->ndev = ndev;
	net->sq = dma_alloc_coherent(dev, SQ_DEPTH * sizeof(*net->sq),
				     &net->sq_dma, GFP_KERNEL);
	net->rq = dma_alloc_coherent(dev, RQ_DEPTH * sizeof(*net->rq),
				     &net->rq_dma, GFP_KERNEL);
	net->cq = dma_alloc_coherent(dev, CQ_DEPTH * sizeof(*net->cq),
				     &net->cq_dma, GFP_KERNEL);
	net->rec = dma_alloc_coherent(dev, PAGE_SIZE, &net->rec_dma,
				      GFP_KERNEL);
	if (!net->sq || !net->rq || !net->cq || !net->rec) {
		ret = -ENOMEM;
		goto err_rings;
	}
	ndev->netdev_ops = &rhinet_net_ops;
	ndev->ethtool_ops = &rhinet_net_ethtool_ops;
	spin_lock_init(&net->probe.lock);
	init_completion(&net->probe.done);
	ndev->min_mtu = ETH_MIN_MTU;
	ndev->max_mtu = RHN_WIRE_MTU - ETH_HLEN - VLAN_HLEN;
	eth_hw_addr_set(ndev, rdev->mac);
	netif_napi_add(ndev, &net->napi, rhinet_net_poll);
	netif_carrier_off(ndev);
	rdev->net = net;
	rhinet_consumer_set(rdev, RHINET_CONSUMER_NET, &rhinet_net_consumer);
	ret = register_netdev(ndev);
	if (ret)
		goto err_napi;
	return 0;

err_napi:
	rdev->net = NULL;
	netif_napi_del(&net->napi);
err_rings:
	rhinet_net_free_rings(net);
	free_netdev(ndev);
	return ret;
}

void rhinet_net_fini(struct rhinet_dev *rdev)
{
	struct rhinet_net *net = rdev->net;

	if (!net)
		return;
	unregister_netdev(net->ndev); /* stops it: QP and CQ are gone */
	WRITE_ONCE(rdev->net, NULL);
	/* No event handler may still be looking at @net. */
	rhinet_eq_sync(rdev);
	netif_napi_del(&net->napi);
	rhinet_net_free_rings(net);
	free_netdev(net->ndev);
}

/* The interface whose addresses give the RDMA port its GIDs. */
struct net_device *rhinet_net_device(struct rhinet_dev *rdev)
{
	return rdev->net ? rdev->net->ndev : NULL;
}
