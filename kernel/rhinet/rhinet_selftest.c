// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * `ethtool -t`: the checks a bring-up team runs first on a card, each
 * naming what failed in the kernel log. All of them run with the device in
 * use (online): none resets the NIC or changes what its users see. An
 * offline request runs the same set: none needs the device to itself.
 *
 *   registers    identity and what the driver programmed read back
 *   admin        a QUERY_DEVICE round trip matches what probe read
 *   dma          host bytes through card memory and back, across pages,
 *                in four patterns (TWIN_WRITE then TWIN_READ)
 *   interrupt    the admin vector fired for the commands above
 *   loopback     a firmware PING to our own node turned around inside
 *                the NIC (PROBE_NODE, RHN_EQE_PROBE_DONE)
 *   rdma-write   a kernel RC QP connected to itself writes a buffer
 *                through the loopback into a fast-registered MR
 *
 * A result is 0 for a pass, else the errno of the failure (positive, as
 * ethtool prints it).
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/scatterlist.h>
#include <rdma/ib_cache.h>

#include "rhinet_ib.h"

enum rhinet_test {
	RHINET_TEST_REGISTERS,
	RHINET_TEST_ADMIN,
	RHINET_TEST_DMA,
	RHINET_TEST_INTERRUPT,
	RHINET_TEST_LOOPBACK,
	RHINET_TEST_RDMA_WRITE,
	RHINET_TEST_COUNT,
};

static const char rhinet_test_names[RHINET_TEST_COUNT][ETH_GSTRING_LEN] = {
	"registers (online)",  "admin round trip (online)",
	"dma patterns (online)", "interrupt (online)",
	"loopback (online)",   "rdma write (online)",
};

#define RHINET_TEST_WAIT_MS 5000
/* The DMA test's span: from 100 bytes before the first page boundary of
 * its buffer to 100 bytes after the second.
 */
#define RHINET_DMA_TEST_OFF (PAGE_SIZE - 100)
#define RHINET_DMA_TEST_LEN (PAGE_SIZE + 200)

int rhinet_self_test_count(void)
{
	return RHINET_TEST_COUNT;
}

void rhinet_self_test_strings(u8 *data)
{
	memcpy(data, rhinet_test_names, sizeof(rhinet_test_names));
}

#define test_fail(rdev, fmt, ...)                                       \
	dev_err(&(rdev)->pdev->dev, "self-test: " fmt "\n", ##__VA_ARGS__)

static int rhinet_test_registers(struct rhinet_dev *rdev)
{
	const u32 want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
	const u32 control = RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE;
	u32 version = rhinet_read32(rdev, RHN_REG_VERSION);
	u32 status = rhinet_read32(rdev, RHN_REG_STATUS);
	u32 v;

	if (version >> 16 != RHN_VERSION_MAJOR) {
		test_fail(rdev, "VERSION reads 0x%08x, driver speaks %u.x",
			  version, RHN_VERSION_MAJOR);
		return -EIO;
	}
	if ((status & want) != want || (status & RHN_STATUS_FATAL)) {
		test_fail(rdev, "STATUS reads 0x%08x, want READY and ADMIN_ON without FATAL",
			  status);
		return -EIO;
	}
	v = rhinet_read32(rdev, RHN_REG_NODE_ID);
	if ((v & RHN_NODE_ID_VALUE_MASK) != rdev->node_id) {
		test_fail(rdev, "NODE_ID reads 0x%08x, probe read %u", v,
			  rdev->node_id);
		return -EIO;
	}
	v = rhinet_read32(rdev, RHN_REG_CONTROL);
	if ((v & control) != control) {
		test_fail(rdev, "CONTROL reads 0x%08x, the driver set 0x%x", v,
			  control);
		return -EIO;
	}
	/* The admin ring registers hold what the driver wrote. */
	if (readq(rdev->regs + RHN_REG_ADMIN_SQ_BASE) != rdev->admin.sq_dma ||
	    readq(rdev->regs + RHN_REG_ADMIN_CQ_BASE) != rdev->admin.cq_dma) {
		test_fail(rdev, "admin ring bases read %#llx/%#llx, the driver wrote %pad/%pad",
			  readq(rdev->regs + RHN_REG_ADMIN_SQ_BASE),
			  readq(rdev->regs + RHN_REG_ADMIN_CQ_BASE),
			  &rdev->admin.sq_dma, &rdev->admin.cq_dma);
		return -EIO;
	}
	v = rhinet_read32(rdev, RHN_REG_ADMIN_LOG_DEPTH);
	if (v != RHINET_ADMIN_LOG_DEPTH) {
		test_fail(rdev, "ADMIN_LOG_DEPTH reads %u, the driver wrote %u", v,
			  RHINET_ADMIN_LOG_DEPTH);
		return -EIO;
	}
	return 0;
}

static int rhinet_test_admin(struct rhinet_dev *rdev)
{
	struct rhn_device_attr *attr;
	int ret;

	attr = kzalloc(sizeof(*attr), GFP_KERNEL);
	if (!attr)
		return -ENOMEM;
	ret = rhinet_admin_query_device(rdev, attr);
	if (ret) {
		test_fail(rdev, "QUERY_DEVICE failed: %d", ret);
	} else if (memcmp(attr, &rdev->attr, sizeof(*attr))) {
		test_fail(rdev, "QUERY_DEVICE differs from what probe read");
		ret = -EIO;
	}
	kfree(attr);
	return ret;
}

static int rhinet_twin_copy(struct rhinet_dev *rdev, u8 opcode, u32 twin,
			    dma_addr_t addr, u32 len)
{
	struct rhn_admin_cmd cmd = {};

	cmd.hdr.opcode = opcode;
	cmd.u.twin_copy.handle = cpu_to_le32(twin);
	cmd.u.twin_copy.length = cpu_to_le32(len);
	cmd.u.twin_copy.offset = cpu_to_le64(RHINET_DMA_TEST_OFF);
	cmd.u.twin_copy.addr = cpu_to_le64(addr);
	return rhinet_admin_exec(rdev, &cmd, NULL);
}

/* Byte @i of pattern @p. */
static u8 rhinet_pattern(unsigned int p, size_t i)
{
	switch (p) {
	case 0:
		return 0x00;
	case 1:
		return 0xff;
	case 2:
		return i & 1 ? 0x5a : 0xa5;
	default:
		return (i * 7 + (i >> 8)) & 0xff; /* shows a shifted page */
	}
}

static int rhinet_test_dma(struct rhinet_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rhn_admin_cmd cmd = {};
	size_t size = 3 * PAGE_SIZE;
	unsigned int p;
	dma_addr_t dma;
	u32 twin;
	u8 *buf;
	int ret;

	buf = dma_alloc_coherent(dev, size, &dma, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	cmd.hdr.opcode = RHN_ADMIN_ALLOC_TWIN;
	cmd.u.alloc_twin.length = cpu_to_le64(size);
	ret = rhinet_admin_exec(rdev, &cmd, &twin);
	if (ret) {
		test_fail(rdev, "no card memory to copy through (ALLOC_TWIN: %d)",
			  ret);
		goto out;
	}
	for (p = 0; p < 4 && !ret; p++) {
		u8 *span = buf + RHINET_DMA_TEST_OFF;
		size_t i;

		for (i = 0; i < RHINET_DMA_TEST_LEN; i++)
			span[i] = rhinet_pattern(p, i);
		ret = rhinet_twin_copy(rdev, RHN_ADMIN_TWIN_WRITE, twin,
				       dma + RHINET_DMA_TEST_OFF,
				       RHINET_DMA_TEST_LEN);
		if (ret) {
			test_fail(rdev, "pattern %u: NIC read of host memory failed: %d",
				  p, ret);
			break;
		}
		memset(buf, 0xcc, size);
		ret = rhinet_twin_copy(rdev, RHN_ADMIN_TWIN_READ, twin,
				       dma + RHINET_DMA_TEST_OFF,
				       RHINET_DMA_TEST_LEN);
		if (ret) {
			test_fail(rdev, "pattern %u: NIC write of host memory failed: %d",
				  p, ret);
			break;
		}
		for (i = 0; i < RHINET_DMA_TEST_LEN; i++)
			if (span[i] != rhinet_pattern(p, i))
				break;
		if (i < RHINET_DMA_TEST_LEN) {
			test_fail(rdev, "pattern %u: byte %zu (page offset %#lx) reads %#x",
				  p, i,
				  (unsigned long)(RHINET_DMA_TEST_OFF + i) % PAGE_SIZE,
				  span[i]);
			ret = -EIO;
		} else if (buf[RHINET_DMA_TEST_OFF - 1] != 0xcc ||
			   buf[RHINET_DMA_TEST_OFF + RHINET_DMA_TEST_LEN] != 0xcc) {
			test_fail(rdev, "pattern %u: the NIC wrote outside the span",
				  p);
			ret = -EIO;
		}
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_FREE_TWIN;
	cmd.u.handle.handle = cpu_to_le32(twin);
	if (rhinet_admin_exec(rdev, &cmd, NULL) && !ret) {
		test_fail(rdev, "FREE_TWIN failed");
		ret = -EIO;
	}
out:
	dma_free_coherent(dev, size, buf, dma);
	return ret;
}

/*
 * After the admin commands of the tests before it. Their completions were
 * polled, so the vector may fire a little after the last one was seen (a
 * device model raises it from another thread than the one writing the
 * completion): give it time before calling it dead.
 */
static int rhinet_test_interrupt(struct rhinet_dev *rdev, u64 irqs_before)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(RHINET_TEST_WAIT_MS);
	u64 irqs;

	while ((irqs = atomic64_read(&rdev->admin.irqs)) == irqs_before &&
	       time_before(jiffies, deadline))
		usleep_range(500, 1000);
	if (irqs == irqs_before) {
		test_fail(rdev, "admin vector %u never fired (%llu interrupts before and after)",
			  RHN_MSIX_ADMIN, irqs);
		return -EIO;
	}
	return 0;
}

/* From the event queue: a probe answered (rhinet_net_event). */
void rhinet_self_test_probe_done(struct rhinet_self_test_probe *probe,
				 const struct rhn_eqe *eqe)
{
	spin_lock(&probe->lock);
	if (probe->waiting && le32_to_cpu(eqe->object) == probe->node) {
		probe->outcome = le64_to_cpu(eqe->data);
		probe->waiting = false;
		complete(&probe->done);
	}
	spin_unlock(&probe->lock);
}

static int rhinet_test_loopback(struct rhinet_dev *rdev,
				struct rhinet_self_test_probe *probe)
{
	struct rhn_admin_cmd cmd = {};
	int ret;

	spin_lock(&probe->lock);
	probe->node = rdev->node_id;
	probe->waiting = true;
	reinit_completion(&probe->done);
	spin_unlock(&probe->lock);
	cmd.hdr.opcode = RHN_ADMIN_PROBE_NODE;
	cmd.u.handle.handle = cpu_to_le32(rdev->node_id);
	ret = rhinet_admin_exec(rdev, &cmd, NULL);
	if (ret) {
		test_fail(rdev, "PROBE_NODE of our own node %u failed: %d",
			  rdev->node_id, ret);
	} else if (!wait_for_completion_timeout(&probe->done,
						msecs_to_jiffies(RHINET_TEST_WAIT_MS))) {
		test_fail(rdev, "no PROBE_DONE for our own node within %u ms",
			  RHINET_TEST_WAIT_MS);
		ret = -ETIMEDOUT;
	} else if (probe->outcome != RHN_SYN_NONE) {
		test_fail(rdev, "the loopback probe failed: syndrome %llu",
			  probe->outcome);
		ret = -EIO;
	}
	spin_lock(&probe->lock);
	probe->waiting = false;
	spin_unlock(&probe->lock);
	return ret;
}

/* ---- An RDMA WRITE from a kernel QP to itself ----------------------------- */

struct rhinet_loop_qp {
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_mr *mr;
};

static int rhinet_loop_connect(struct rhinet_dev *rdev, struct ib_qp *qp)
{
	struct ib_qp_attr attr = {};
	union ib_gid gid;
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE;
	ret = ib_modify_qp(qp, &attr,
			   IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	ret = rdma_query_gid(qp->device, 1, 0, &gid);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = qp->qp_num;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &gid, 0, 0, 1, 0);
	ether_addr_copy(attr.ah_attr.roce.dmac, rdev->mac);
	ret = ib_modify_qp(qp, &attr,
			   IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				   IB_QP_MAX_DEST_RD_ATOMIC |
				   IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr,
			    IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
				    IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
				    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Waits for @n successful completions; the first failure ends it. */
static int rhinet_loop_wait(struct rhinet_dev *rdev, struct ib_cq *cq, int n)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(RHINET_TEST_WAIT_MS);
	struct ib_wc wc;

	while (n) {
		int got = ib_poll_cq(cq, 1, &wc);

		if (got < 0)
			return got;
		if (!got) {
			if (time_after(jiffies, deadline)) {
				test_fail(rdev, "rdma write: no completion within %u ms",
					  RHINET_TEST_WAIT_MS);
				return -ETIMEDOUT;
			}
			usleep_range(100, 200);
			continue;
		}
		if (wc.status != IB_WC_SUCCESS) {
			test_fail(rdev, "rdma write: completion %s (vendor syndrome %u)",
				  ib_wc_status_msg(wc.status), wc.vendor_err);
			return -EIO;
		}
		n--;
	}
	return 0;
}

static int rhinet_loop_write(struct rhinet_dev *rdev, struct rhinet_loop_qp *l,
			     u8 *buf, size_t half)
{
	struct ib_device *ibdev = l->pd->device;
	const struct ib_send_wr *bad;
	struct ib_rdma_wr write = {};
	struct ib_reg_wr reg = {};
	struct scatterlist sg;
	struct ib_sge sge;
	u64 src;
	size_t i;
	int ret;

	for (i = 0; i < half; i++)
		buf[i] = (i * 13 + 1) & 0xff;
	memset(buf + half, 0, half);
	src = ib_dma_map_single(ibdev, buf, 2 * half, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ibdev, src))
		return -ENOMEM;
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = src + half;
	sg_dma_len(&sg) = half;
	ret = ib_map_mr_sg(l->mr, &sg, 1, NULL, PAGE_SIZE);
	if (ret != 1) {
		ret = ret < 0 ? ret : -EINVAL;
		goto unmap;
	}
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = l->mr;
	reg.key = l->mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	sge.addr = src;
	sge.length = half;
	sge.lkey = l->pd->local_dma_lkey;
	write.wr.opcode = IB_WR_RDMA_WRITE;
	write.wr.send_flags = IB_SEND_SIGNALED;
	write.wr.sg_list = &sge;
	write.wr.num_sge = 1;
	write.remote_addr = l->mr->iova;
	write.rkey = l->mr->rkey;
	reg.wr.next = &write.wr;
	ret = ib_post_send(l->qp, &reg.wr, &bad);
	if (!ret)
		ret = rhinet_loop_wait(rdev, l->cq, 2);
	ib_dma_sync_single_for_cpu(ibdev, src, 2 * half, DMA_BIDIRECTIONAL);
	if (!ret && memcmp(buf, buf + half, half)) {
		test_fail(rdev, "rdma write: the target buffer differs from the source");
		ret = -EIO;
	}
unmap:
	ib_dma_unmap_single(ibdev, src, 2 * half, DMA_BIDIRECTIONAL);
	return ret;
}

static int rhinet_test_rdma_write(struct rhinet_dev *rdev)
{
	struct ib_qp_init_attr init = {};
	struct rhinet_loop_qp l = {};
	struct ib_device *ibdev;
	size_t half = PAGE_SIZE;
	u8 *buf;
	int ret;

	if (!rdev->ib) {
		test_fail(rdev, "rdma write: no RDMA device registered yet");
		return -ENODEV;
	}
	ibdev = &rdev->ib->ibdev;
	buf = kmalloc(2 * half, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	l.pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(l.pd)) {
		ret = PTR_ERR(l.pd);
		goto out;
	}
	l.cq = ib_alloc_cq(ibdev, NULL, 8, 0, IB_POLL_DIRECT);
	if (IS_ERR(l.cq)) {
		ret = PTR_ERR(l.cq);
		goto out_pd;
	}
	init.send_cq = l.cq;
	init.recv_cq = l.cq;
	init.cap.max_send_wr = 4;
	init.cap.max_recv_wr = 1;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_ALL_WR;
	l.qp = ib_create_qp(l.pd, &init);
	if (IS_ERR(l.qp)) {
		ret = PTR_ERR(l.qp);
		goto out_cq;
	}
	l.mr = ib_alloc_mr(l.pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(l.mr)) {
		ret = PTR_ERR(l.mr);
		goto out_qp;
	}
	ret = rhinet_loop_connect(rdev, l.qp);
	if (ret)
		test_fail(rdev, "rdma write: connecting a QP to itself failed: %d",
			  ret);
	else
		ret = rhinet_loop_write(rdev, &l, buf, half);
	ib_dereg_mr(l.mr);
out_qp:
	ib_destroy_qp(l.qp);
out_cq:
	ib_free_cq(l.cq);
out_pd:
	ib_dealloc_pd(l.pd);
out:
	kfree(buf);
	if (ret)
		test_fail(rdev, "rdma write through the loopback failed: %d", ret);
	return ret;
}

void rhinet_self_test(struct rhinet_dev *rdev,
		      struct rhinet_self_test_probe *probe,
		      struct ethtool_test *et, u64 *data)
{
	u64 irqs;

	memset(data, 0, RHINET_TEST_COUNT * sizeof(*data));
	if (rhinet_dev_dead(rdev)) {
		test_fail(rdev, "the NIC is stopped (device fatal): nothing to test");
		memset64(data, EIO, RHINET_TEST_COUNT);
		et->flags |= ETH_TEST_FL_FAILED;
		return;
	}
	irqs = atomic64_read(&rdev->admin.irqs);
	data[RHINET_TEST_REGISTERS] = -rhinet_test_registers(rdev);
	data[RHINET_TEST_ADMIN] = -rhinet_test_admin(rdev);
	data[RHINET_TEST_DMA] = -rhinet_test_dma(rdev);
	data[RHINET_TEST_INTERRUPT] = -rhinet_test_interrupt(rdev, irqs);
	data[RHINET_TEST_LOOPBACK] = -rhinet_test_loopback(rdev, probe);
	data[RHINET_TEST_RDMA_WRITE] = -rhinet_test_rdma_write(rdev);
	if (memchr_inv(data, 0, RHINET_TEST_COUNT * sizeof(*data)))
		et->flags |= ETH_TEST_FL_FAILED;
}
