// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RHiNET-NG RDMA NIC driver: raw access (module parameter raw_access=1).
 *
 * For bring-up and the conformance suite (its T2 target), which must see
 * the card as a host sees it and nothing of the driver's own use of it:
 * probe maps the BARs, enables bus mastering and every MSI-X vector (each
 * handler only counts), and registers /dev/rhinet_rawN instead of bringing
 * the NIC up. One opener at a time (root, CAP_SYS_RAWIO) reads and writes
 * BAR0, stores to doorbell pages, allocates DMA buffers and copies to and
 * from them; the buffers belong to the open file. Before any buffer is
 * freed the NIC is reset, so it never writes into memory given back.
 * Documentation/driver/raw-access.md describes the interface.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/iopoll.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/rhinet-raw.h>

#include "rhinet_ib.h"

bool rhinet_raw_access;
module_param_named(raw_access, rhinet_raw_access, bool, 0444);
MODULE_PARM_DESC(raw_access,
		 "bring-up: /dev/rhinet_rawN raw access instead of the RDMA and Ethernet devices (root only)");

#define RHINET_RAW_RESET_TIMEOUT_US (2 * USEC_PER_SEC)

struct rhinet_raw_buf {
	struct list_head node;
	void *cpu;
	dma_addr_t bus;
	size_t len; /* as asked: host accesses stay inside it */
	size_t held; /* pages taken */
};

struct rhinet_raw {
	struct kref ref; /* the PCI function and the open file */
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *db;
	u64 regs_len;
	u64 db_len;
	int index;
	char name[24];
	struct miscdevice misc;
	/* Serializes the ioctls, open and release against remove: once
	 * @gone is set the BARs and buffers are no longer there.
	 */
	struct mutex lock;
	bool gone;
	bool opened;
	struct list_head bufs;
	u64 held;
	int nvec;
	atomic64_t *msix;
};

static DEFINE_IDA(rhinet_raw_ida);

static void rhinet_raw_free(struct kref *ref)
{
	struct rhinet_raw *raw = container_of(ref, struct rhinet_raw, ref);

	kfree(raw->msix);
	kfree(raw);
}

/* Stops the NIC's DMA and interrupts; the caller holds the lock. */
static int rhinet_raw_reset_locked(struct rhinet_raw *raw)
{
	u32 control;

	writel(RHN_CONTROL_RESET, raw->regs + RHN_REG_CONTROL);
	return readl_poll_timeout(raw->regs + RHN_REG_CONTROL, control,
				  !(control & RHN_CONTROL_RESET), 10,
				  RHINET_RAW_RESET_TIMEOUT_US);
}

/* Frees every buffer: the NIC is reset first, or mastering turned off. */
static void rhinet_raw_free_bufs_locked(struct rhinet_raw *raw)
{
	struct rhinet_raw_buf *buf, *next;

	if (list_empty(&raw->bufs))
		return;
	if (rhinet_raw_reset_locked(raw)) {
		dev_err(&raw->pdev->dev, "raw: NIC did not leave reset\n");
		pci_clear_master(raw->pdev);
	}
	list_for_each_entry_safe(buf, next, &raw->bufs, node) {
		list_del(&buf->node);
		dma_free_coherent(&raw->pdev->dev, buf->held, buf->cpu,
				  buf->bus);
		kfree(buf);
	}
	raw->held = 0;
}

static irqreturn_t rhinet_raw_irq(int irq, void *data)
{
	atomic64_inc(data);
	return IRQ_HANDLED;
}

static int rhinet_raw_open(struct inode *inode, struct file *file)
{
	struct rhinet_raw *raw = container_of(file->private_data,
					      struct rhinet_raw, misc);
	int ret = 0;

	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	mutex_lock(&raw->lock);
	if (raw->gone)
		ret = -ENODEV;
	else if (raw->opened)
		ret = -EBUSY;
	else
		raw->opened = true;
	mutex_unlock(&raw->lock);
	if (ret)
		return ret;
	kref_get(&raw->ref);
	file->private_data = raw;
	return nonseekable_open(inode, file);
}

static int rhinet_raw_release(struct inode *inode, struct file *file)
{
	struct rhinet_raw *raw = file->private_data;

	mutex_lock(&raw->lock);
	if (!raw->gone)
		rhinet_raw_free_bufs_locked(raw);
	raw->opened = false;
	mutex_unlock(&raw->lock);
	kref_put(&raw->ref, rhinet_raw_free);
	return 0;
}

static bool rhinet_raw_access_ok(u64 offset, u32 size, u64 len)
{
	return (size == 4 || size == 8) && !(offset & (size - 1)) &&
	       offset < len && len - offset >= size;
}

static int rhinet_raw_reg(struct rhinet_raw *raw, unsigned int cmd,
			  void __user *arg)
{
	struct rhinet_raw_reg r;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (!rhinet_raw_access_ok(r.offset, r.size, raw->regs_len))
		return -EINVAL;
	if (cmd == RHINET_RAW_REG_WRITE) {
		if (r.size == 8)
			writeq(r.value, raw->regs + r.offset);
		else
			writel(r.value, raw->regs + r.offset);
		return 0;
	}
	if (r.size == 8)
		r.value = readq(raw->regs + r.offset);
	else
		r.value = readl(raw->regs + r.offset);
	return copy_to_user(arg, &r, sizeof(r)) ? -EFAULT : 0;
}

static int rhinet_raw_db(struct rhinet_raw *raw, void __user *arg)
{
	struct rhinet_raw_db d;
	u64 off;

	if (copy_from_user(&d, arg, sizeof(d)))
		return -EFAULT;
	if (d.reserved || d.offset >= RHN_DB_PAGE_SIZE)
		return -EINVAL;
	off = ((u64)d.page << RHN_DB_PAGE_SHIFT) + d.offset;
	if (!rhinet_raw_access_ok(off, d.size, raw->db_len))
		return -EINVAL;
	if (d.size == 8)
		writeq(d.value, raw->db + off);
	else
		writel(d.value, raw->db + off);
	return 0;
}

static int rhinet_raw_alloc(struct rhinet_raw *raw, void __user *arg)
{
	struct rhinet_raw_alloc a;
	struct rhinet_raw_buf *buf;
	size_t held;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	/* A coherent allocation is aligned to a page at least. */
	if (!a.len || !a.align || !is_power_of_2(a.align) ||
	    a.align > PAGE_SIZE || a.len > RHINET_RAW_DMA_CAP)
		return -EINVAL;
	held = PAGE_ALIGN(a.len);
	if (raw->held + held > RHINET_RAW_DMA_CAP)
		return -ENOMEM;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	buf->cpu = dma_alloc_coherent(&raw->pdev->dev, held, &buf->bus,
				      GFP_KERNEL);
	if (!buf->cpu) {
		kfree(buf);
		return -ENOMEM;
	}
	memset(buf->cpu, 0, held);
	buf->len = a.len;
	buf->held = held;
	a.bus = buf->bus;
	if (copy_to_user(arg, &a, sizeof(a))) {
		dma_free_coherent(&raw->pdev->dev, held, buf->cpu, buf->bus);
		kfree(buf);
		return -EFAULT;
	}
	list_add_tail(&buf->node, &raw->bufs);
	raw->held += held;
	return 0;
}

static struct rhinet_raw_buf *rhinet_raw_find(struct rhinet_raw *raw,
					      u64 bus, u64 len)
{
	struct rhinet_raw_buf *buf;

	list_for_each_entry(buf, &raw->bufs, node)
		if (bus >= buf->bus && bus - buf->bus < buf->len &&
		    len <= buf->len - (bus - buf->bus))
			return buf;
	return NULL;
}

static int rhinet_raw_mem(struct rhinet_raw *raw, unsigned int cmd,
			  void __user *arg)
{
	struct rhinet_raw_mem m;
	struct rhinet_raw_buf *buf;
	void __user *data;
	void *cpu;

	if (copy_from_user(&m, arg, sizeof(m)))
		return -EFAULT;
	if (!m.len || m.len > RHINET_RAW_MEM_MAX)
		return -EINVAL;
	buf = rhinet_raw_find(raw, m.bus, m.len);
	if (!buf)
		return -EFAULT;
	cpu = buf->cpu + (m.bus - buf->bus);
	data = u64_to_user_ptr(m.data);
	if (cmd == RHINET_RAW_MEM_WRITE)
		return copy_from_user(cpu, data, m.len) ? -EFAULT : 0;
	return copy_to_user(data, cpu, m.len) ? -EFAULT : 0;
}

static int rhinet_raw_msix(struct rhinet_raw *raw, void __user *arg)
{
	struct rhinet_raw_msix x;
	u64 __user *data;
	u32 i;

	if (copy_from_user(&x, arg, sizeof(x)))
		return -EFAULT;
	if (x.reserved)
		return -EINVAL;
	x.count = min_t(u32, x.count, raw->nvec);
	data = u64_to_user_ptr(x.data);
	for (i = 0; i < x.count; i++)
		if (put_user(atomic64_read(&raw->msix[i]), data + i))
			return -EFAULT;
	return copy_to_user(arg, &x, sizeof(x)) ? -EFAULT : 0;
}

static long rhinet_raw_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	struct rhinet_raw *raw = file->private_data;
	void __user *uarg = (void __user *)arg;
	struct rhinet_raw_info info = {};
	long ret;

	mutex_lock(&raw->lock);
	if (raw->gone) {
		ret = -ENODEV;
		goto out;
	}
	switch (cmd) {
	case RHINET_RAW_INFO:
		info.bar0_len = raw->regs_len;
		info.db_len = raw->db_len;
		info.msix_vectors = raw->nvec;
		ret = copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
		break;
	case RHINET_RAW_REG_READ:
	case RHINET_RAW_REG_WRITE:
		ret = rhinet_raw_reg(raw, cmd, uarg);
		break;
	case RHINET_RAW_DB_WRITE:
		ret = rhinet_raw_db(raw, uarg);
		break;
	case RHINET_RAW_DMA_ALLOC:
		ret = rhinet_raw_alloc(raw, uarg);
		break;
	case RHINET_RAW_MEM_WRITE:
	case RHINET_RAW_MEM_READ:
		ret = rhinet_raw_mem(raw, cmd, uarg);
		break;
	case RHINET_RAW_DMA_FREE_ALL:
		rhinet_raw_free_bufs_locked(raw);
		ret = 0;
		break;
	case RHINET_RAW_MSIX:
		ret = rhinet_raw_msix(raw, uarg);
		break;
	default:
		ret = -ENOTTY;
	}
out:
	mutex_unlock(&raw->lock);
	return ret;
}

static const struct file_operations rhinet_raw_fops = {
	.owner = THIS_MODULE,
	.open = rhinet_raw_open,
	.release = rhinet_raw_release,
	.unlocked_ioctl = rhinet_raw_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static void rhinet_raw_free_irqs(struct rhinet_raw *raw, int n)
{
	while (n--)
		free_irq(pci_irq_vector(raw->pdev, n), &raw->msix[n]);
	pci_free_irq_vectors(raw->pdev);
}

/* The mapped function's vectors, each counting its messages. */
static int rhinet_raw_irqs(struct rhinet_raw *raw)
{
	u32 want = readl(raw->regs + RHN_REG_MSIX_VECTORS);
	int i, ret;

	ret = pci_alloc_irq_vectors(raw->pdev, 1, max_t(u32, want, 1),
				    PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	raw->nvec = ret;
	raw->msix = kcalloc(raw->nvec, sizeof(*raw->msix), GFP_KERNEL);
	if (!raw->msix) {
		pci_free_irq_vectors(raw->pdev);
		return -ENOMEM;
	}
	for (i = 0; i < raw->nvec; i++) {
		ret = request_irq(pci_irq_vector(raw->pdev, i), rhinet_raw_irq,
				  0, raw->name, &raw->msix[i]);
		if (ret) {
			rhinet_raw_free_irqs(raw, i);
			return ret;
		}
	}
	return 0;
}

/* Called by probe (bars mapped, mastering on) instead of bringing up. */
int rhinet_raw_probe(struct pci_dev *pdev)
{
	struct rhinet_raw *raw;
	int ret;

	raw = kzalloc(sizeof(*raw), GFP_KERNEL);
	if (!raw)
		return -ENOMEM;
	kref_init(&raw->ref);
	mutex_init(&raw->lock);
	INIT_LIST_HEAD(&raw->bufs);
	raw->pdev = pdev;
	raw->regs = pcim_iomap_table(pdev)[RHN_BAR_REGS];
	raw->db = pcim_iomap_table(pdev)[RHN_BAR_DOORBELL];
	raw->regs_len = pci_resource_len(pdev, RHN_BAR_REGS);
	raw->db_len = pci_resource_len(pdev, RHN_BAR_DOORBELL);
	raw->index = ida_alloc(&rhinet_raw_ida, GFP_KERNEL);
	if (raw->index < 0) {
		ret = raw->index;
		goto err_free;
	}
	snprintf(raw->name, sizeof(raw->name), "rhinet_raw%d", raw->index);
	ret = rhinet_raw_irqs(raw);
	if (ret)
		goto err_ida;
	raw->misc.minor = MISC_DYNAMIC_MINOR;
	raw->misc.name = raw->name;
	raw->misc.fops = &rhinet_raw_fops;
	raw->misc.parent = &pdev->dev;
	raw->misc.mode = 0600;
	ret = misc_register(&raw->misc);
	if (ret)
		goto err_irqs;
	pci_set_drvdata(pdev, raw);
	dev_info(&pdev->dev, "raw access as /dev/%s, %d MSI-X vectors\n",
		 raw->name, raw->nvec);
	return 0;

err_irqs:
	rhinet_raw_free_irqs(raw, raw->nvec);
err_ida:
	ida_free(&rhinet_raw_ida, raw->index);
err_free:
	kref_put(&raw->ref, rhinet_raw_free);
	return ret;
}

void rhinet_raw_remove(struct pci_dev *pdev)
{
	struct rhinet_raw *raw = pci_get_drvdata(pdev);

	/* No new opener after this; an open file sees ENODEV from now on. */
	misc_deregister(&raw->misc);
	mutex_lock(&raw->lock);
	raw->gone = true;
	rhinet_raw_free_bufs_locked(raw);
	if (rhinet_raw_reset_locked(raw))
		pci_clear_master(pdev);
	mutex_unlock(&raw->lock);
	rhinet_raw_free_irqs(raw, raw->nvec);
	pci_clear_master(pdev);
	ida_free(&rhinet_raw_ida, raw->index);
	kref_put(&raw->ref, rhinet_raw_free);
}

void rhinet_raw_shutdown(struct pci_dev *pdev)
{
	struct rhinet_raw *raw = pci_get_drvdata(pdev);

	if (raw) {
		mutex_lock(&raw->lock);
		rhinet_raw_reset_locked(raw);
		mutex_unlock(&raw->lock);
	}
	pci_clear_master(pdev);
}
