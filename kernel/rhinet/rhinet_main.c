// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RHiNET-NG RDMA NIC driver: PCI probe and remove.
 *
 * Bring-up: map BAR0 and the kernel's doorbell page, reset the NIC, give it
 * the admin queue, load its firmware (rhinet_fw.c), create the kernel
 * event queue. Teardown resets the NIC first, so it stops touching host
 * memory before anything is freed. With raw_access=1 probe stops after
 * mapping and leaves the NIC to /dev/rhinet_rawN (rhinet_raw.c).
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "rhinet_ib.h"

static const struct pci_device_id rhinet_pci_ids[] = {
	{ PCI_DEVICE(RHN_PCI_VENDOR_ID, RHN_PCI_DEVICE_ID) },
	{}
};
MODULE_DEVICE_TABLE(pci, rhinet_pci_ids);

static void rhinet_read_identity(struct rhinet_dev *rdev)
{
	u32 lo = rhinet_read32(rdev, RHN_REG_MAC_LO);
	u32 hi = rhinet_read32(rdev, RHN_REG_MAC_HI);

	rdev->node_id = rhinet_read32(rdev, RHN_REG_NODE_ID) & 0xffff;
	rdev->mac[0] = lo;
	rdev->mac[1] = lo >> 8;
	rdev->mac[2] = lo >> 16;
	rdev->mac[3] = lo >> 24;
	rdev->mac[4] = hi;
	rdev->mac[5] = hi >> 8;
	rdev->link_up = rhinet_read32(rdev, RHN_REG_STATUS) &
			RHN_STATUS_LINK_UP;
}

/* The kernel's PD and the MR kernel buffers are addressed through. */
static int rhinet_kernel_objects(struct rhinet_dev *rdev)
{
	struct rhn_admin_cmd cmd = {};
	int ret;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_PD;
	ret = rhinet_admin_exec(rdev, &cmd, &rdev->kernel_pdn);
	if (ret)
		return ret;
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
	cmd.u.create_mr.pdn = cpu_to_le32(rdev->kernel_pdn);
	cmd.u.create_mr.access = cpu_to_le32(RHN_ACCESS_LOCAL_WRITE);
	cmd.u.create_mr.iova = 0;
	cmd.u.create_mr.length = cpu_to_le64(le64_to_cpu(rdev->attr.max_mr_size));
	cmd.u.create_mr.levels = 0; /* bus addresses, kernel only */
	cmd.u.create_mr.key_variant = 0x4b;
	return rhinet_admin_exec(rdev, &cmd, &rdev->dma_lkey);
}

static int rhinet_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct rhinet_dev *rdev;
	u32 version, vectors, mask_bits;
	int ret;

	rdev = devm_kzalloc(dev, sizeof(*rdev), GFP_KERNEL);
	if (!rdev)
		return -ENOMEM;
	rdev->pdev = pdev;
	pci_set_drvdata(pdev, rdev);
	rhinet_health_init(rdev);
	ret = rhinet_devlink_init(rdev);
	if (ret)
		return ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(RHN_BAR_REGS) | BIT(RHN_BAR_DOORBELL),
				 DRV_NAME);
	if (ret)
		return ret;
	rdev->regs = pcim_iomap_table(pdev)[RHN_BAR_REGS];
	rdev->kernel_db = pcim_iomap_table(pdev)[RHN_BAR_DOORBELL];

	version = rhinet_read32(rdev, RHN_REG_VERSION);
	if (version >> 16 != RHN_VERSION_MAJOR) {
		dev_err(dev, "hardware interface %u.%u, driver speaks %u.x\n",
			version >> 16, version & 0xffff, RHN_VERSION_MAJOR);
		return -ENODEV;
	}
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	pci_set_master(pdev);
	if (rhinet_raw_access)
		return rhinet_raw_probe(pdev);

	ret = rhinet_reset_nic(rdev);
	if (ret)
		return ret;
	rhinet_read_identity(rdev);

	vectors = rhinet_read32(rdev, RHN_REG_MSIX_VECTORS);
	ret = pci_alloc_irq_vectors(pdev, RHINET_EQ_VECTOR + 1,
				    max_t(u32, vectors, RHINET_EQ_VECTOR + 1),
				    PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	/* One completion vector per MSI-X vector after the admin one. */
	rdev->nr_eqs = min_t(u32, ret - RHINET_EQ_VECTOR, RHINET_MAX_EQS);
	snprintf(rdev->admin_irq_name, sizeof(rdev->admin_irq_name),
		 "%s-admin@%s", DRV_NAME, pci_name(pdev));
	ret = request_irq(pci_irq_vector(pdev, RHN_MSIX_ADMIN),
			  rhinet_admin_irq, 0, rdev->admin_irq_name, rdev);
	if (ret)
		goto err_vectors;

	ret = rhinet_admin_init(rdev);
	if (ret)
		goto err_admin_irq;
	/* Before the NIC is asked what it can do: a new image may differ. */
	ret = rhinet_fw_probe(rdev);
	if (ret)
		goto err_reset;
	ret = rhinet_admin_query_device(rdev, &rdev->attr);
	if (ret)
		goto err_reset;
	/* Kernel queues are reached through the kernel's region, whose
	 * addresses are bus addresses up to the NIC's region size; and a
	 * user region's pages may be as large as the NIC takes (1 GiB), which
	 * ib_umem builds only from DMA segments that large.
	 */
	mask_bits = ilog2(le64_to_cpu(rdev->attr.max_mr_size));
	ret = dma_set_mask_and_coherent(dev, DMA_BIT_MASK(mask_bits));
	if (!ret)
		ret = dma_set_max_seg_size(dev, UINT_MAX);
	if (ret)
		goto err_reset;
	ret = rhinet_eq_init(rdev);
	if (ret)
		goto err_reset;
	ret = rhinet_kernel_objects(rdev);
	if (ret)
		goto err_eq;
	ret = rhinet_net_init(rdev);
	if (ret)
		goto err_eq;
	ret = rhinet_ib_init(rdev);
	if (ret)
		goto err_net;

	dev_info(dev,
		 "node %u, MAC %pM, interface %u.%u, %u QPs, %u CQs, %u MRs, link %s\n",
		 rdev->node_id, rdev->mac, version >> 16, version & 0xffff,
		 le32_to_cpu(rdev->attr.max_qps),
		 le32_to_cpu(rdev->attr.max_cqs),
		 le32_to_cpu(rdev->attr.max_mrs),
		 rdev->link_up ? "up" : "down");
	rhinet_devlink_register(rdev);
	rhinet_health_start(rdev);
	return 0;

err_net:
	rhinet_net_fini(rdev);
err_eq:
	rhinet_reset_nic(rdev);
	rhinet_eq_fini(rdev);
	rhinet_admin_fini(rdev);
	goto err_admin_irq;
err_reset:
	rhinet_reset_nic(rdev);
	rhinet_admin_fini(rdev);
err_admin_irq:
	free_irq(pci_irq_vector(pdev, RHN_MSIX_ADMIN), rdev);
err_vectors:
	pci_free_irq_vectors(pdev);
	rhinet_health_stop(rdev);
	return ret;
}

static void rhinet_remove(struct pci_dev *pdev)
{
	struct rhinet_dev *rdev = pci_get_drvdata(pdev);

	if (rhinet_raw_access) {
		rhinet_raw_remove(pdev);
		return;
	}
	rhinet_devlink_unregister(rdev);
	rhinet_health_stop(rdev);
	rhinet_ib_fini(rdev);
	rhinet_net_fini(rdev);
	/* Stop the NIC: no DMA or interrupt after this (a failed one has
	 * been stopped already).
	 */
	if (!rdev->quiesced && rhinet_reset_nic(rdev))
		pci_clear_master(pdev);
	rhinet_eq_fini(rdev);
	rhinet_admin_fini(rdev);
	free_irq(pci_irq_vector(pdev, RHN_MSIX_ADMIN), rdev);
	pci_free_irq_vectors(pdev);
	pci_clear_master(pdev);
}

/* Reboot or kexec: the NIC stops writing into memory the next kernel will
 * own. Nothing is freed: the system is going down.
 */
static void rhinet_shutdown(struct pci_dev *pdev)
{
	struct rhinet_dev *rdev = pci_get_drvdata(pdev);

	if (rhinet_raw_access) {
		rhinet_raw_shutdown(pdev);
		return;
	}
	if (rdev && !rdev->quiesced)
		rhinet_reset_nic(rdev);
	pci_clear_master(pdev);
}

/*
 * A function-level reset (sysfs, a hypervisor, error recovery) takes the
 * NIC's state away under the driver. Before it, the NIC is stopped as if
 * it had failed: users hear DEVICE_FATAL and may release what they hold.
 * After it, the driver binds again from scratch (rhinet_rebind_later: the
 * reset holds the device lock a rebind takes).
 */
static void rhinet_reset_prepare(struct pci_dev *pdev)
{
	/* Raw access: the NIC is its one user's, reset included. */
	if (rhinet_raw_access)
		return;
	rhinet_dev_fail(pci_get_drvdata(pdev), RHINET_REPORT_FATAL,
			"function-level reset of the device");
}

static void rhinet_reset_done(struct pci_dev *pdev)
{
	if (!rhinet_raw_access)
		rhinet_rebind_later(pdev);
}

static const struct pci_error_handlers rhinet_err_handlers = {
	.reset_prepare = rhinet_reset_prepare,
	.reset_done = rhinet_reset_done,
};

static struct pci_driver rhinet_pci_driver = {
	.name = DRV_NAME,
	.id_table = rhinet_pci_ids,
	.probe = rhinet_probe,
	.remove = rhinet_remove,
	.shutdown = rhinet_shutdown,
	.err_handler = &rhinet_err_handlers,
};

static int __init rhinet_init(void)
{
	int ret;

	ret = rhinet_fw_module_init();
	if (ret)
		return ret;
	ret = pci_register_driver(&rhinet_pci_driver);
	if (ret)
		rhinet_fw_module_exit();
	return ret;
}
module_init(rhinet_init);

static void __exit rhinet_exit(void)
{
	pci_unregister_driver(&rhinet_pci_driver);
	rhinet_fw_module_exit();
}
module_exit(rhinet_exit);

MODULE_DESCRIPTION("RHiNET-NG RDMA NIC driver");
MODULE_AUTHOR("RHiNET-NG developers");
MODULE_LICENSE("Dual BSD/GPL");
