// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Admin queue: a ring of 128-byte commands the NIC consumes and a ring of
 * 16-byte completions it produces, an owner bit flipping on every lap.
 * Commands run one at a time; the admin MSI-X vector wakes the waiter.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iopoll.h>

#include "rhinet_hw.h"

#define ADMIN_DEPTH BIT(RHINET_ADMIN_LOG_DEPTH)

static int rhinet_admin_errno(u8 status)
{
	switch (status) {
	case RHN_ADMIN_OK:
		return 0;
	case RHN_ADMIN_BAD_OPCODE:
		return -EOPNOTSUPP;
	case RHN_ADMIN_BAD_PARAM:
	case RHN_ADMIN_BAD_STATE:
		return -EINVAL;
	case RHN_ADMIN_NO_RESOURCES:
		return -ENOSPC;
	case RHN_ADMIN_BAD_HANDLE:
		return -ENOENT;
	case RHN_ADMIN_BUSY:
		return -EBUSY;
	case RHN_ADMIN_NOT_PERMITTED:
		return -EPERM;
	case RHN_ADMIN_EXISTS:
		return -EEXIST;
	default:
		return -EIO;
	}
}

irqreturn_t rhinet_admin_irq(int irq, void *data)
{
	struct rhinet_dev *rdev = data;

	atomic64_inc(&rdev->admin.irqs);
	complete(&rdev->admin.event);
	return IRQ_HANDLED;
}

/*
 * Gives the NIC the admin rings, empty, and waits until it takes them: at
 * probe, and after a reset that booted another firmware image.
 */
int rhinet_admin_start(struct rhinet_dev *rdev)
{
	struct rhinet_admin *adm = &rdev->admin;
	const u32 want = RHN_STATUS_READY | RHN_STATUS_ADMIN_ON;
	u32 status;
	int ret;

	memset(adm->cq, 0, ADMIN_DEPTH * RHN_ADMIN_CPL_SIZE);
	adm->sq_tail = 0;
	adm->cq_head = 0;
	writeq(adm->sq_dma, rdev->regs + RHN_REG_ADMIN_SQ_BASE);
	writeq(adm->cq_dma, rdev->regs + RHN_REG_ADMIN_CQ_BASE);
	rhinet_write32(rdev, RHN_REG_ADMIN_LOG_DEPTH, RHINET_ADMIN_LOG_DEPTH);
	rhinet_write32(rdev, RHN_REG_CONTROL,
		       RHN_CONTROL_ENABLE | RHN_CONTROL_INTR_ENABLE);
	ret = readl_poll_timeout(rdev->regs + RHN_REG_STATUS, status,
				 (status & want) == want, 100,
				 RHINET_ADMIN_TIMEOUT_MS * USEC_PER_MSEC);
	if (ret)
		dev_err(&rdev->pdev->dev,
			"admin queue not accepted (status 0x%x)\n", status);
	return ret;
}

int rhinet_admin_init(struct rhinet_dev *rdev)
{
	struct rhinet_admin *adm = &rdev->admin;
	struct device *dev = &rdev->pdev->dev;
	int ret;

	mutex_init(&adm->lock);
	mutex_init(&adm->out_lock);
	init_completion(&adm->event);
	adm->sq = dma_alloc_coherent(dev, ADMIN_DEPTH * RHN_ADMIN_CMD_SIZE,
				     &adm->sq_dma, GFP_KERNEL);
	adm->cq = dma_alloc_coherent(dev, ADMIN_DEPTH * RHN_ADMIN_CPL_SIZE,
				     &adm->cq_dma, GFP_KERNEL);
	adm->out = dma_alloc_coherent(dev, PAGE_SIZE, &adm->out_dma,
				      GFP_KERNEL);
	if (!adm->sq || !adm->cq || !adm->out) {
		ret = -ENOMEM;
		goto err_free;
	}
	adm->next_cmd_id = 1;
	ret = rhinet_admin_start(rdev);
	if (ret)
		goto err_reset;
	return 0;

err_reset:
	/* It may have taken the rings: stop it before they go. */
	if (rhinet_reset_nic(rdev))
		pci_clear_master(rdev->pdev);
err_free:
	rhinet_admin_fini(rdev);
	return ret;
}

/* The caller has stopped the NIC (reset) before the rings go away. */
void rhinet_admin_fini(struct rhinet_dev *rdev)
{
	struct rhinet_admin *adm = &rdev->admin;
	struct device *dev = &rdev->pdev->dev;

	if (adm->out)
		dma_free_coherent(dev, PAGE_SIZE, adm->out, adm->out_dma);
	if (adm->cq)
		dma_free_coherent(dev, ADMIN_DEPTH * RHN_ADMIN_CPL_SIZE,
				  adm->cq, adm->cq_dma);
	if (adm->sq)
		dma_free_coherent(dev, ADMIN_DEPTH * RHN_ADMIN_CMD_SIZE,
				  adm->sq, adm->sq_dma);
	adm->out = NULL;
	adm->cq = NULL;
	adm->sq = NULL;
}

/*
 * Runs one command. Returns 0 or a negative errno mapped from the NIC's
 * status; *result gets the handle or key the command created, *detail
 * (if given) what a refusal's completion said about it.
 */
int rhinet_admin_exec_detail(struct rhinet_dev *rdev,
			     struct rhn_admin_cmd *cmd, u32 *result,
			     u32 *detail)
{
	struct rhinet_admin *adm = &rdev->admin;
	const char *failure = NULL;
	unsigned long deadline;
	struct rhn_admin_cpl *cpl;
	u16 cmd_id;
	u8 phase;
	int ret;

	mutex_lock(&adm->lock);
	if (rhinet_dev_dead(rdev)) {
		ret = -EIO;
		goto out;
	}
	cmd_id = adm->next_cmd_id++;
	cmd->hdr.cmd_id = cpu_to_le16(cmd_id);
	memcpy(&adm->sq[adm->sq_tail % ADMIN_DEPTH], cmd, sizeof(*cmd));
	adm->sq_tail++;
	reinit_completion(&adm->event);
	/* The command must be in memory before the NIC is told of it. */
	dma_wmb();
	rhinet_write32(rdev, RHN_REG_ADMIN_SQ_TAIL, adm->sq_tail);

	cpl = &adm->cq[adm->cq_head % ADMIN_DEPTH];
	phase = ((adm->cq_head / ADMIN_DEPTH) & 1) ^ 1;
	deadline = jiffies + msecs_to_jiffies(RHINET_ADMIN_TIMEOUT_MS);
	while ((READ_ONCE(cpl->owner) & 1) != phase) {
		if (rhinet_dev_dead(rdev)) {
			ret = -EIO; /* failed meanwhile, found by another */
			goto out;
		}
		if (time_after(jiffies, deadline)) {
			dev_err(&rdev->pdev->dev,
				"admin command 0x%02x timed out\n",
				cmd->hdr.opcode);
			failure = "admin command timed out";
			ret = -ETIMEDOUT;
			goto out;
		}
		/* The vector may be masked or lost: look again soon anyway. */
		wait_for_completion_timeout(&adm->event, msecs_to_jiffies(1));
	}
	/* Read the completion only after its owner bit. */
	dma_rmb();
	adm->cq_head++;
	if (le16_to_cpu(cpl->cmd_id) != cmd_id) {
		dev_err(&rdev->pdev->dev,
			"admin completion for command %u, expected %u\n",
			le16_to_cpu(cpl->cmd_id), cmd_id);
		failure = "admin completion out of order";
		ret = -EIO;
		goto out;
	}
	ret = rhinet_admin_errno(cpl->status);
	if (detail)
		*detail = le32_to_cpu(cpl->detail);
	if (ret)
		dev_dbg(&rdev->pdev->dev,
			"admin command 0x%02x: status %u detail %u\n",
			cmd->hdr.opcode, cpl->status, le32_to_cpu(cpl->detail));
	else if (result)
		*result = le32_to_cpu(cpl->result);
out:
	mutex_unlock(&adm->lock);
	/* Queue and NIC disagree: nothing it does can be trusted now. */
	if (failure)
		rhinet_dev_fail(rdev, RHINET_REPORT_ADMIN, failure);
	return ret;
}

int rhinet_admin_exec(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
		      u32 *result)
{
	return rhinet_admin_exec_detail(rdev, cmd, result, NULL);
}

/* Runs a QUERY_* command whose result the NIC writes to the out page. */
int rhinet_admin_query(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
		       void *out, size_t len)
{
	int ret;

	if (WARN_ON(len > PAGE_SIZE))
		return -EINVAL;
	cmd->u.query.out_addr = cpu_to_le64(rdev->admin.out_dma);
	cmd->u.query.out_len = cpu_to_le32(len);
	mutex_lock(&rdev->admin.out_lock);
	ret = rhinet_admin_exec(rdev, cmd, NULL);
	if (!ret)
		memcpy(out, rdev->admin.out, len);
	mutex_unlock(&rdev->admin.out_lock);
	return ret;
}

/*
 * Runs a command that reads @len bytes of @in from the out page, whose bus
 * address goes to @addr (a field of @cmd).
 */
int rhinet_admin_exec_in(struct rhinet_dev *rdev, struct rhn_admin_cmd *cmd,
			 __le64 *addr, const void *in, size_t len)
{
	int ret;

	if (WARN_ON(len > PAGE_SIZE))
		return -EINVAL;
	mutex_lock(&rdev->admin.out_lock);
	if (len)
		memcpy(rdev->admin.out, in, len);
	*addr = cpu_to_le64(rdev->admin.out_dma);
	ret = rhinet_admin_exec(rdev, cmd, NULL);
	mutex_unlock(&rdev->admin.out_lock);
	return ret;
}

int rhinet_admin_query_device(struct rhinet_dev *rdev,
			      struct rhn_device_attr *attr)
{
	struct rhn_admin_cmd cmd = {};

	cmd.hdr.opcode = RHN_ADMIN_QUERY_DEVICE;
	return rhinet_admin_query(rdev, &cmd, attr, sizeof(*attr));
}
