// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xpu.ko: the driver of the accelerator stand-in (Documentation/hardware/
 * xpu.md). It publishes the device's memory (BAR2) as PCI peer-to-peer
 * memory, exports dma-bufs over ranges of it for other drivers to DMA into
 * (rhinet.ko's ibv_reg_dmabuf_mr), and gives user space the memory, the
 * lanes and the bus counters through /dev/xpuN (include/uapi/xpu/
 * xpu-abi.h, Documentation/driver/xpu.md). It turns the device's windows
 * on at probe: a lane reaches by DMA only what its open file imported for
 * it (another device's dma-buf, such as rhinet.ko's doorbell page), and
 * lanes and windows are the file's until it is closed.
 *
 * BAR2 is shared out too: each open file gets a range of it of its own
 * (struct xpu_mem_area, first fit over a bitmap of granules), and every
 * offset the file names (mmap, export, a lane's PC) is in that range. The
 * device bounds each lane's memory to its file's range at LANE_RUN, so no
 * file's lanes, mappings or dma-bufs reach another's queues or data. One
 * file holds at most a share (a quarter of BAR2), and one user's files
 * together at most user_mem_percent of it (half by default), so no opener
 * and no user starves the rest.
 */
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/bitmap.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/kref.h>
#include <linux/log2.h>
#include <linux/memremap.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>

#include "xpu/xpu.h"
#include "xpu/xpu-abi.h"

#define XPU_RUN_TIMEOUT_MS_DEFAULT 10000
/* One scatterlist entry covers an export: its length is 32 bits. */
#define XPU_EXPORT_MAX BIT_ULL(31)
/* BAR2 is shared out in at most this many granules of a page or more. */
#define XPU_MEM_GRANULES 256
/* The most of BAR2 one file may hold: 1 / XPU_MEM_SHARE_DIV of it. */
#define XPU_MEM_SHARE_DIV 4

static unsigned int user_mem_percent = 50;
module_param(user_mem_percent, uint, 0444);
MODULE_PARM_DESC(user_mem_percent,
		 "the most of a device's memory one user's files hold together, in percent (default 50; at least a file's share)");

struct xpu_dev {
	struct kref ref; /* the probe's, and one per exported dma-buf */
	struct pci_dev *pdev;
	void __iomem *regs;
	resource_size_t mem_start; /* CPU physical address of BAR2 */
	u64 mem_size;
	u32 lanes;
	bool p2pdma; /* BAR2 published with pci_p2pdma_add_resource */
	int id;
	char name[16];
	struct miscdevice misc;
	/*
	 * A lane's PC and START written together; the owners below, and the
	 * lanes' WINDOWS registers.
	 */
	struct mutex lane_lock;
	struct xpu_file *lane_owner[XPU_LANES_MAX];
	u32 lane_windows[XPU_LANES_MAX];
	struct xpu_file *window_owner[XPU_WINDOWS_MAX];
	/* Held for reading by every ioctl; remove sets gone under it. */
	struct rw_semaphore alive;
	bool gone;
	/* The granules of BAR2 some file's memory holds; the files' mem. */
	struct mutex mem_lock;
	unsigned long *mem_used;
	struct list_head mem_areas; /* struct xpu_mem_area, by node */
	u32 mem_granules;
	u64 mem_granule; /* bytes */
	u64 mem_share; /* the most one file holds */
	u64 mem_user_share; /* the most one user's files hold together */
};

/*
 * An open file's memory: [offset, offset + size) of BAR2. The file and
 * each dma-buf exported of it hold a reference; the last one frees it.
 */
struct xpu_mem_area {
	struct kref ref;
	struct xpu_dev *xdev;
	struct list_head node; /* in xdev->mem_areas, under mem_lock */
	kuid_t uid; /* the user it counts against: who allocated it */
	u64 offset;
	u64 size;
};

/* A dma-buf over [offset, offset + length) of one device's memory. */
struct xpu_dmabuf {
	struct xpu_dev *xdev;
	struct dev_pagemap *pgmap; /* held: the pages outlive no dma-buf */
	struct xpu_mem_area *area; /* held: the range is the file's till then */
	u64 offset; /* in BAR2 */
	u64 length;
	bool movable; /* XPU_EXPORT_MOVABLE: never pinned */
	u32 pins; /* importers that pinned it; under the reservation lock */
};

/* An open /dev/xpuN: the lanes and windows it holds. */
struct xpu_file {
	struct xpu_dev *xdev;
	struct list_head imports; /* struct xpu_import_ent, under lane_lock */
	struct xpu_mem_area *mem; /* NULL until first needed; under mem_lock */
};

/* A dma-buf the file imported, mapped for the device, and its window. */
struct xpu_import_ent {
	struct list_head node;
	struct xpu_file *xf;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt; /* NULL once revoked; under the dma-buf's lock */
	u32 window;
};

static DEFINE_IDA(xpu_ida);

static void xpu_dev_free(struct kref *ref)
{
	struct xpu_dev *xdev = container_of(ref, struct xpu_dev, ref);

	ida_free(&xpu_ida, xdev->id);
	pci_dev_put(xdev->pdev);
	bitmap_free(xdev->mem_used);
	kfree(xdev);
}

static void xpu_dev_put(struct xpu_dev *xdev)
{
	kref_put(&xdev->ref, xpu_dev_free);
}

/* ---- The files' memory ------------------------------------------------ */

static void xpu_mem_free(struct kref *ref)
{
	struct xpu_mem_area *area = container_of(ref, struct xpu_mem_area, ref);
	struct xpu_dev *xdev = area->xdev;

	mutex_lock(&xdev->mem_lock);
	bitmap_clear(xdev->mem_used, area->offset / xdev->mem_granule,
		     area->size / xdev->mem_granule);
	list_del(&area->node);
	mutex_unlock(&xdev->mem_lock);
	kfree(area);
}

static void xpu_mem_put(struct xpu_mem_area *area)
{
	if (area)
		kref_put(&area->ref, xpu_mem_free);
}

/* What @uid's files (and the dma-bufs left of them) hold; under mem_lock. */
static u64 xpu_user_mem(struct xpu_dev *xdev, kuid_t uid)
{
	struct xpu_mem_area *area;
	u64 held = 0;

	list_for_each_entry(area, &xdev->mem_areas, node)
		if (uid_eq(area->uid, uid))
			held += area->size;
	return held;
}

/*
 * The file's memory: the range it has, or a new one of @size bytes (0:
 * the default) taken first fit and counted against the calling user.
 * EEXIST when it has one of another size, EDQUOT beyond a file's share or
 * the user's, ENOSPC when no free range is that large.
 */
static int xpu_file_mem(struct xpu_file *xf, u64 size,
			struct xpu_mem_area **out)
{
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_mem_area *area;
	unsigned long first;
	bool asked = size;
	kuid_t uid = current_uid();
	u64 held;
	u32 n;
	int ret = 0;

	if (size > xdev->mem_share) {
		dev_dbg(&xdev->pdev->dev,
			"%llu bytes asked, a file's share is %llu\n", size,
			xdev->mem_share);
		return -EDQUOT;
	}
	/* Whole granules; the default is one too (both divide the share). */
	size = roundup(size ?: min_t(u64, XPU_MEM_DEFAULT, xdev->mem_share),
		       xdev->mem_granule);
	mutex_lock(&xdev->mem_lock);
	if (xf->mem) {
		if (asked && size != xf->mem->size) {
			dev_dbg(&xdev->pdev->dev,
				"a file with %llu bytes asked for %llu\n",
				xf->mem->size, size);
			ret = -EEXIST;
		}
		goto out;
	}
	held = xpu_user_mem(xdev, uid);
	if (size > xdev->mem_user_share - held) {
		dev_dbg(&xdev->pdev->dev,
			"user %u holds %llu bytes, asks %llu, a user's share is %llu\n",
			from_kuid(&init_user_ns, uid), held, size,
			xdev->mem_user_share);
		ret = -EDQUOT;
		goto out;
	}
	n = size / xdev->mem_granule;
	first = bitmap_find_next_zero_area(xdev->mem_used, xdev->mem_granules,
					   0, n, 0);
	if (first >= xdev->mem_granules) {
		dev_dbg(&xdev->pdev->dev, "no %llu free bytes of memory\n",
			size);
		ret = -ENOSPC;
		goto out;
	}
	area = kzalloc(sizeof(*area), GFP_KERNEL);
	if (!area) {
		ret = -ENOMEM;
		goto out;
	}
	kref_init(&area->ref);
	area->xdev = xdev;
	area->uid = uid;
	list_add(&area->node, &xdev->mem_areas);
	area->offset = (u64)first * xdev->mem_granule;
	area->size = (u64)n * xdev->mem_granule;
	bitmap_set(xdev->mem_used, first, n);
	xf->mem = area;
out:
	if (!ret)
		*out = xf->mem;
	mutex_unlock(&xdev->mem_lock);
	return ret;
}

/* [off, off + len) lies in @area (len 0: off does). */
static bool xpu_mem_has(struct xpu_mem_area *area, u64 off, u64 len)
{
	return off < area->size && len <= area->size - off;
}

static int xpu_mem_ioctl(struct xpu_file *xf, struct xpu_mem *req)
{
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_mem_area *area;
	int ret;

	if (req->rsvd)
		return -EINVAL;
	ret = xpu_file_mem(xf, req->size, &area);
	if (ret)
		return ret;
	req->size = area->size;
	req->offset = area->offset;
	req->bus_addr = pci_bus_address(xdev->pdev, XPU_BAR_MEM) +
			area->offset;
	req->share = xdev->mem_share;
	req->granule = xdev->mem_granule;
	return 0;
}

/* ---- dma-buf exporter ------------------------------------------------- */

/*
 * Only an importer that takes peer-to-peer memory (attach->peer2peer) and
 * that the PCI topology lets reach BAR2 may attach; the kernel's P2PDMA
 * code judges the path (a common upstream bridge, or a host bridge it
 * trusts).
 */
static int xpu_dmabuf_attach(struct dma_buf *dmabuf,
			     struct dma_buf_attachment *attach)
{
	struct xpu_dmabuf *xb = dmabuf->priv;
	struct pci_dev *pdev = xb->xdev->pdev;

	if (!attach->peer2peer) {
		dev_warn_ratelimited(&pdev->dev,
				     "%s does not take peer-to-peer memory\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	if (pci_p2pdma_distance(pdev, attach->dev, true) < 0) {
		dev_warn_ratelimited(&pdev->dev,
				     "%s cannot reach this device's memory\n",
				     dev_name(attach->dev));
		return -EREMOTEIO;
	}
	return 0;
}

static struct sg_table *xpu_dmabuf_map(struct dma_buf_attachment *attach,
				       enum dma_data_direction dir)
{
	struct xpu_dmabuf *xb = attach->dmabuf->priv;
	struct page *page = pfn_to_page(PHYS_PFN(xb->xdev->mem_start +
						 xb->offset));
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	/* The pages of a BAR are contiguous: one entry covers the range. */
	sg_set_page(sgt->sgl, page, xb->length, 0);
	ret = dma_map_sgtable(attach->dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void xpu_dmabuf_unmap(struct dma_buf_attachment *attach,
			     struct sg_table *sgt, enum dma_data_direction dir)
{
	dma_unmap_sgtable(attach->dev, sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

/*
 * Both kinds of export are dynamic, so that the exporter knows who pins
 * them. A movable one stands for VRAM that must stay evictable: no
 * importer may pin it (ibv_reg_dmabuf_mr's pinned umem is refused here),
 * and the importers that take it must follow a move.
 */
static int xpu_dmabuf_pin(struct dma_buf_attachment *attach)
{
	struct xpu_dmabuf *xb = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (xb->movable) {
		dev_warn_ratelimited(&xb->xdev->pdev->dev,
				     "%s cannot pin a movable dma-buf\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	xb->pins++;
	return 0;
}

static void xpu_dmabuf_unpin(struct dma_buf_attachment *attach)
{
	struct xpu_dmabuf *xb = attach->dmabuf->priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	xb->pins--;
}

static void xpu_dmabuf_free(struct xpu_dmabuf *xb)
{
	xpu_mem_put(xb->area);
	put_dev_pagemap(xb->pgmap);
	xpu_dev_put(xb->xdev);
	kfree(xb);
}

static void xpu_dmabuf_release(struct dma_buf *dmabuf)
{
	xpu_dmabuf_free(dmabuf->priv);
}

static const struct dma_buf_ops xpu_dmabuf_ops = {
	.attach = xpu_dmabuf_attach,
	.pin = xpu_dmabuf_pin,
	.unpin = xpu_dmabuf_unpin,
	.map_dma_buf = xpu_dmabuf_map,
	.unmap_dma_buf = xpu_dmabuf_unmap,
	.release = xpu_dmabuf_release,
};

static int xpu_export(struct xpu_file *xf, struct xpu_export *req)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_mem_area *area;
	struct xpu_dmabuf *xb;
	struct dma_buf *dmabuf;
	int fd, ret;

	if (req->flags & ~(O_CLOEXEC | O_ACCMODE | XPU_EXPORT_MOVABLE))
		return -EINVAL;
	ret = xpu_file_mem(xf, 0, &area);
	if (ret)
		return ret;
	/* Only the file's own memory, whether or not it can be exported. */
	if (!req->length || req->length > XPU_EXPORT_MAX ||
	    !PAGE_ALIGNED(req->offset) || !PAGE_ALIGNED(req->length) ||
	    !xpu_mem_has(area, req->offset, req->length)) {
		dev_dbg(&xdev->pdev->dev,
			"export of [%#llx, +%#llx): not in the file's %#llx bytes\n",
			req->offset, req->length, area->size);
		return -EINVAL;
	}
	if (!xdev->p2pdma)
		return -EOPNOTSUPP;
	xb = kzalloc(sizeof(*xb), GFP_KERNEL);
	if (!xb)
		return -ENOMEM;
	xb->pgmap = get_dev_pagemap(PHYS_PFN(xdev->mem_start + area->offset +
					     req->offset), NULL);
	if (!xb->pgmap) {
		kfree(xb);
		return -ENODEV;
	}
	kref_get(&xdev->ref);
	kref_get(&area->ref);
	xb->area = area;
	xb->xdev = xdev;
	xb->offset = area->offset + req->offset;
	xb->length = req->length;
	xb->movable = req->flags & XPU_EXPORT_MOVABLE;
	exp_info.ops = &xpu_dmabuf_ops;
	exp_info.size = req->length;
	exp_info.flags = O_RDWR;
	exp_info.priv = xb;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		xpu_dmabuf_free(xb);
		return PTR_ERR(dmabuf);
	}
	fd = dma_buf_fd(dmabuf, req->flags & O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf); /* releases xb */
		return fd;
	}
	req->fd = fd;
	return 0;
}

/*
 * An eviction's first step: the importers unmap (move_notify) under the
 * reservation lock, and map again from wherever the buffer is then. The
 * memory here stays where it is, which the importers cannot tell. A
 * pinned buffer does not move.
 */
static int xpu_move(struct xpu_dev *xdev, struct xpu_move *req)
{
	struct dma_buf *dmabuf;
	struct xpu_dmabuf *xb;
	int ret = 0;

	if (req->rsvd)
		return -EINVAL;
	dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	xb = dmabuf->priv;
	if (dmabuf->ops != &xpu_dmabuf_ops || xb->xdev != xdev) {
		ret = -EINVAL;
		goto out;
	}
	dma_resv_lock(dmabuf->resv, NULL);
	if (xb->pins)
		ret = -EBUSY;
	else
		dma_buf_move_notify(dmabuf);
	dma_resv_unlock(dmabuf->resv);
out:
	dma_buf_put(dmabuf);
	return ret;
}

/* ---- Lanes and counters ------------------------------------------------ */

static void __iomem *xpu_lane_reg(struct xpu_dev *xdev, u32 lane, u32 off)
{
	return xdev->regs + XPU_REG_LANE(lane) + off;
}

static void __iomem *xpu_lane_mem_reg(struct xpu_dev *xdev, u32 lane,
				      u32 off)
{
	return xdev->regs + XPU_REG_LANE_MEM(lane) + off;
}

/*
 * Until the lane stops, @timeout_ms pass (ETIMEDOUT) or the caller is
 * killed (EINTR): a process killed mid-run goes at once, and its close
 * aborts the lane, rather than waiting out a program that may never end.
 */
static int xpu_lane_wait(struct xpu_dev *xdev, u32 lane, u32 timeout_ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);

	for (;;) {
		if (readl(xpu_lane_reg(xdev, lane, XPU_LANE_STATUS)) !=
		    XPU_LANE_RUNNING)
			return 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (fatal_signal_pending(current))
			return -EINTR;
		usleep_range(100, 200);
	}
}

static int xpu_lane_run(struct xpu_file *xf, struct xpu_lane_run *req)
{
	struct xpu_dev *xdev = xf->xdev;
	u32 timeout_ms = req->timeout_ms ?: XPU_RUN_TIMEOUT_MS_DEFAULT;
	struct xpu_mem_area *area;
	u32 status;
	int ret = 0;

	if (req->flags & ~XPU_RUN_WAIT || req->rsvd)
		return -EINVAL;
	ret = xpu_file_mem(xf, 0, &area);
	if (ret)
		return ret;
	if (req->lane >= xdev->lanes || req->pc % XPU_CMD_SIZE ||
	    !xpu_mem_has(area, req->pc, XPU_CMD_SIZE)) {
		dev_dbg(&xdev->pdev->dev,
			"run of lane %u at %#llx: not in the file's %#llx bytes\n",
			req->lane, req->pc, area->size);
		return -EINVAL;
	}
	mutex_lock(&xdev->lane_lock);
	if (xdev->lane_owner[req->lane] && xdev->lane_owner[req->lane] != xf) {
		mutex_unlock(&xdev->lane_lock);
		return -EBUSY;
	}
	xdev->lane_owner[req->lane] = xf; /* a free lane: claimed */
	status = readl(xpu_lane_reg(xdev, req->lane, XPU_LANE_STATUS));
	if (status == XPU_LANE_RUNNING) {
		mutex_unlock(&xdev->lane_lock);
		return -EBUSY;
	}
	/* The lane reaches its file's memory only, named from its start. */
	lo_hi_writeq(area->offset, xpu_lane_mem_reg(xdev, req->lane,
						    XPU_LANE_MEM_OFFSET));
	lo_hi_writeq(area->size, xpu_lane_mem_reg(xdev, req->lane,
						  XPU_LANE_MEM_SIZE));
	lo_hi_writeq(req->pc, xpu_lane_reg(xdev, req->lane, XPU_LANE_PC));
	writel(XPU_LANE_CTRL_START,
	       xpu_lane_reg(xdev, req->lane, XPU_LANE_CTRL));
	mutex_unlock(&xdev->lane_lock);

	if (req->flags & XPU_RUN_WAIT) {
		ret = xpu_lane_wait(xdev, req->lane, timeout_ms);
		if (ret)
			writel(XPU_LANE_CTRL_ABORT,
			       xpu_lane_reg(xdev, req->lane, XPU_LANE_CTRL));
	}
	req->status = readl(xpu_lane_reg(xdev, req->lane, XPU_LANE_STATUS));
	req->error = readl(xpu_lane_reg(xdev, req->lane, XPU_LANE_ERROR));
	req->executed = lo_hi_readq(xpu_lane_reg(xdev, req->lane,
						 XPU_LANE_EXECUTED));
	return ret;
}

/* Claims @lanes for @xf; the caller holds lane_lock. */
static int xpu_claim_locked(struct xpu_file *xf, u32 lanes)
{
	struct xpu_dev *xdev = xf->xdev;
	unsigned long l, mask = lanes;

	lockdep_assert_held(&xdev->lane_lock);
	if (!lanes || lanes & ~GENMASK(xdev->lanes - 1, 0))
		return -EINVAL;
	for_each_set_bit(l, &mask, XPU_LANES_MAX)
		if (xdev->lane_owner[l] && xdev->lane_owner[l] != xf)
			return -EBUSY;
	for_each_set_bit(l, &mask, XPU_LANES_MAX)
		xdev->lane_owner[l] = xf;
	return 0;
}

/* Lane @l is no file's: stopped and reaching no window (on a live device). */
static void xpu_lane_free(struct xpu_dev *xdev, u32 l, bool live)
{
	lockdep_assert_held(&xdev->lane_lock);
	if (live) {
		writel(XPU_LANE_CTRL_ABORT, xpu_lane_reg(xdev, l, XPU_LANE_CTRL));
		writel(0, xpu_lane_reg(xdev, l, XPU_LANE_WINDOWS));
	}
	xdev->lane_owner[l] = NULL;
	xdev->lane_windows[l] = 0;
}

/*
 * Lanes given back before close, as close does: each is aborted, reaches
 * no window, and is free for any file. The file's windows stay its own.
 * All or nothing: one lane that is not the file's refuses the lot.
 */
static int xpu_lane_release(struct xpu_file *xf, struct xpu_lane_claim *req)
{
	struct xpu_dev *xdev = xf->xdev;
	unsigned long l, mask = req->lanes;
	int ret = 0;

	if (req->rsvd || !req->lanes ||
	    req->lanes & ~GENMASK(xdev->lanes - 1, 0))
		return -EINVAL;
	mutex_lock(&xdev->lane_lock);
	for_each_set_bit(l, &mask, XPU_LANES_MAX) {
		if (xdev->lane_owner[l] != xf) {
			ret = xdev->lane_owner[l] ? -EBUSY : -ENOENT;
			goto out;
		}
	}
	for_each_set_bit(l, &mask, XPU_LANES_MAX)
		xpu_lane_free(xdev, l, true);
out:
	mutex_unlock(&xdev->lane_lock);
	return ret;
}

static int xpu_lane_claim(struct xpu_file *xf, struct xpu_lane_claim *req)
{
	int ret;

	if (req->rsvd)
		return -EINVAL;
	mutex_lock(&xf->xdev->lane_lock);
	ret = xpu_claim_locked(xf, req->lanes);
	mutex_unlock(&xf->xdev->lane_lock);
	return ret;
}

static void __iomem *xpu_window_reg(struct xpu_dev *xdev, u32 w, u32 off)
{
	return xdev->regs + XPU_REG_WINDOW(w) + off;
}

/* One 8-byte write each: the device never sees half of a range. */
static void xpu_window_set(struct xpu_dev *xdev, u32 w, u64 addr, u64 size)
{
	writeq(0, xpu_window_reg(xdev, w, XPU_WINDOW_SIZE));
	if (size) {
		writeq(addr, xpu_window_reg(xdev, w, XPU_WINDOW_ADDR));
		writeq(size, xpu_window_reg(xdev, w, XPU_WINDOW_SIZE));
	}
}

/*
 * The exporter takes the dma-buf back (its owner is gone, or it moves):
 * the window closes at once, before the exporter lets the memory be
 * another's, and stays the file's (the lanes keep naming it) until close.
 * Called under the dma-buf's reservation lock, which the import ioctl
 * takes inside alive: only a trylock here, and a device being removed
 * has its windows closed by xpu_remove.
 */
static void xpu_import_move_notify(struct dma_buf_attachment *attach)
{
	struct xpu_import_ent *imp = attach->importer_priv;
	struct xpu_dev *xdev = imp->xf->xdev;

	if (down_read_trylock(&xdev->alive)) {
		if (!xdev->gone)
			xpu_window_set(xdev, imp->window, 0, 0);
		up_read(&xdev->alive);
	}
	if (imp->sgt) {
		dma_buf_unmap_attachment(attach, imp->sgt, DMA_BIDIRECTIONAL);
		imp->sgt = NULL;
	}
}

static const struct dma_buf_attach_ops xpu_importer_ops = {
	.allow_peer2peer = true,
	.move_notify = xpu_import_move_notify,
};

/* Unmaps and detaches the dma-buf and lets it go; the window stays set. */
static void xpu_import_drop(struct xpu_import_ent *imp)
{
	dma_resv_lock(imp->dmabuf->resv, NULL);
	if (imp->sgt)
		dma_buf_unmap_attachment(imp->attach, imp->sgt,
					 DMA_BIDIRECTIONAL);
	imp->sgt = NULL;
	dma_resv_unlock(imp->dmabuf->resv);
	dma_buf_detach(imp->dmabuf, imp->attach);
	dma_buf_put(imp->dmabuf);
	kfree(imp);
}

static int xpu_import(struct xpu_file *xf, struct xpu_import *req)
{
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_import_ent *imp;
	unsigned long l, mask = req->lanes;
	struct scatterlist *sg;
	u64 addr = 0, size = 0;
	int ret, i;
	u32 w;

	if (req->rsvd || req->rsvd2)
		return -EINVAL;
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp)
		return -ENOMEM;
	imp->xf = xf;
	imp->dmabuf = dma_buf_get(req->fd);
	if (IS_ERR(imp->dmabuf)) {
		ret = PTR_ERR(imp->dmabuf);
		kfree(imp);
		return ret;
	}
	mutex_lock(&xdev->lane_lock);
	ret = xpu_claim_locked(xf, req->lanes);
	if (ret)
		goto err_unlock;
	for (w = 0; w < XPU_WINDOWS_MAX && xdev->window_owner[w]; w++)
		;
	if (w == XPU_WINDOWS_MAX) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	imp->window = w;
	imp->attach = dma_buf_dynamic_attach(imp->dmabuf, &xdev->pdev->dev,
					     &xpu_importer_ops, imp);
	if (IS_ERR(imp->attach)) {
		ret = PTR_ERR(imp->attach);
		goto err_unlock;
	}
	/*
	 * Mapped and the window set under the reservation lock, which a
	 * revocation holds too: a revoked dma-buf maps nothing, and one
	 * revoked after this finds the window set and closes it.
	 */
	dma_resv_lock(imp->dmabuf->resv, NULL);
	imp->sgt = dma_buf_map_attachment(imp->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(imp->sgt)) {
		ret = PTR_ERR(imp->sgt);
		imp->sgt = NULL;
		goto err_resv;
	}
	/* One contiguous bus range: a window is one. */
	ret = -EINVAL;
	for_each_sgtable_dma_sg(imp->sgt, sg, i) {
		if (size && sg_dma_address(sg) != addr + size)
			goto err_resv;
		if (!size)
			addr = sg_dma_address(sg);
		size += sg_dma_len(sg);
	}
	if (!size)
		goto err_resv;
	xpu_window_set(xdev, w, addr, size);
	dma_resv_unlock(imp->dmabuf->resv);

	xdev->window_owner[w] = xf;
	for_each_set_bit(l, &mask, XPU_LANES_MAX) {
		xdev->lane_windows[l] |= BIT(w);
		writel(xdev->lane_windows[l],
		       xpu_lane_reg(xdev, l, XPU_LANE_WINDOWS));
	}
	list_add(&imp->node, &xf->imports);
	mutex_unlock(&xdev->lane_lock);
	req->bus_addr = addr;
	req->size = size;
	req->window = w;
	return 0;

err_resv:
	dma_resv_unlock(imp->dmabuf->resv);
	mutex_unlock(&xdev->lane_lock);
	xpu_import_drop(imp);
	return ret;
err_unlock:
	mutex_unlock(&xdev->lane_lock);
	if (!IS_ERR_OR_NULL(imp->attach))
		dma_buf_detach(imp->dmabuf, imp->attach);
	dma_buf_put(imp->dmabuf);
	kfree(imp);
	return ret;
}

/* Closes window @w and frees it; after its dma-buf is detached. */
static void xpu_window_free(struct xpu_dev *xdev, u32 w, bool live)
{
	lockdep_assert_held(&xdev->lane_lock);
	if (live)
		xpu_window_set(xdev, w, 0, 0);
	xdev->window_owner[w] = NULL;
}

/*
 * A window given back before close, in xpu_file_release's order: the
 * file's lanes stop reaching it, its dma-buf goes, then it closes and is
 * free.
 */
static int xpu_unimport(struct xpu_file *xf, struct xpu_unimport *req)
{
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_import_ent *imp;
	u32 l, w = req->window;
	int ret = -ENOENT;

	if (req->rsvd || w >= XPU_WINDOWS_MAX)
		return -EINVAL;
	mutex_lock(&xdev->lane_lock);
	if (xdev->window_owner[w] != xf) {
		ret = xdev->window_owner[w] ? -EBUSY : -ENOENT;
		goto out;
	}
	for (l = 0; l < xdev->lanes; l++) {
		if (!(xdev->lane_windows[l] & BIT(w)))
			continue;
		xdev->lane_windows[l] &= ~BIT(w);
		writel(xdev->lane_windows[l],
		       xpu_lane_reg(xdev, l, XPU_LANE_WINDOWS));
	}
	list_for_each_entry(imp, &xf->imports, node) {
		if (imp->window == w) {
			list_del(&imp->node);
			xpu_import_drop(imp);
			break;
		}
	}
	xpu_window_free(xdev, w, true);
	ret = 0;
out:
	mutex_unlock(&xdev->lane_lock);
	return ret;
}

/*
 * The file goes: its lanes stop and reach nothing, its imports are let
 * go, then its windows close and may be another file's: after the
 * detach, so that no revocation of this file's dma-buf closes them then.
 */
static void xpu_file_release(struct xpu_file *xf)
{
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_import_ent *imp, *tmp;
	bool live;
	u32 i;

	down_read(&xdev->alive);
	live = !xdev->gone;
	mutex_lock(&xdev->lane_lock);
	for (i = 0; i < xdev->lanes; i++)
		if (xdev->lane_owner[i] == xf)
			xpu_lane_free(xdev, i, live);
	list_for_each_entry_safe(imp, tmp, &xf->imports, node)
		xpu_import_drop(imp);
	for (i = 0; i < XPU_WINDOWS_MAX; i++)
		if (xdev->window_owner[i] == xf)
			xpu_window_free(xdev, i, live);
	mutex_unlock(&xdev->lane_lock);
	up_read(&xdev->alive);
	/* Its lanes stopped: the memory goes once no dma-buf holds it. */
	xpu_mem_put(xf->mem);
}

static void xpu_read_counters(struct xpu_dev *xdev, struct xpu_counters *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	BUILD_BUG_ON(XPU_CNT_NUM > XPU_COUNTERS_MAX);
	for (i = 0; i < XPU_CNT_NUM; i++)
		c->count[i] = lo_hi_readq(xdev->regs + XPU_REG_CNT(i));
}

/* ---- /dev/xpuN ----------------------------------------------------------- */

static struct xpu_file *xpu_file_of(struct file *file)
{
	return file->private_data;
}

static long xpu_do_ioctl(struct xpu_file *xf, unsigned int cmd,
			 unsigned long arg)
{
	struct xpu_dev *xdev = xf->xdev;
	void __user *uarg = (void __user *)arg;
	struct xpu_mem_area *area;
	union {
		struct xpu_mem mem;
		struct xpu_info info;
		struct xpu_export exp;
		struct xpu_lane_run run;
		struct xpu_counters counters;
		struct xpu_import imp;
		struct xpu_lane_claim claim;
		struct xpu_move move;
		struct xpu_unimport unimp;
	} u;
	int ret;

	switch (cmd) {
	case XPU_IOC_INFO:
		ret = xpu_file_mem(xf, 0, &area);
		if (ret)
			return ret;
		memset(&u.info, 0, sizeof(u.info));
		u.info.mem_size = area->size;
		u.info.mem_bus_addr = pci_bus_address(xdev->pdev, XPU_BAR_MEM) +
				      area->offset;
		u.info.lanes = xdev->lanes;
		u.info.flags = xdev->p2pdma ? XPU_INFO_P2PDMA : 0;
		return copy_to_user(uarg, &u.info, sizeof(u.info)) ? -EFAULT : 0;
	case XPU_IOC_EXPORT_DMABUF:
		if (copy_from_user(&u.exp, uarg, sizeof(u.exp)))
			return -EFAULT;
		ret = xpu_export(xf, &u.exp);
		if (ret)
			return ret;
		/* The descriptor is the caller's now, even if this fails. */
		return copy_to_user(uarg, &u.exp, sizeof(u.exp)) ? -EFAULT : 0;
	case XPU_IOC_LANE_RUN:
		if (copy_from_user(&u.run, uarg, sizeof(u.run)))
			return -EFAULT;
		ret = xpu_lane_run(xf, &u.run);
		if (ret && ret != -ETIMEDOUT)
			return ret;
		if (copy_to_user(uarg, &u.run, sizeof(u.run)))
			return -EFAULT;
		return ret;
	case XPU_IOC_COUNTERS:
		xpu_read_counters(xdev, &u.counters);
		return copy_to_user(uarg, &u.counters, sizeof(u.counters)) ?
			       -EFAULT : 0;
	case XPU_IOC_CLEAR_COUNTERS:
		writel(XPU_CTRL_CLEAR_COUNTERS, xdev->regs + XPU_REG_CTRL);
		return 0;
	case XPU_IOC_IMPORT_DMABUF:
		if (copy_from_user(&u.imp, uarg, sizeof(u.imp)))
			return -EFAULT;
		ret = xpu_import(xf, &u.imp);
		if (ret)
			return ret;
		/* The window is the file's now, even if this fails. */
		return copy_to_user(uarg, &u.imp, sizeof(u.imp)) ? -EFAULT : 0;
	case XPU_IOC_LANE_CLAIM:
		if (copy_from_user(&u.claim, uarg, sizeof(u.claim)))
			return -EFAULT;
		return xpu_lane_claim(xf, &u.claim);
	case XPU_IOC_LANE_RELEASE:
		if (copy_from_user(&u.claim, uarg, sizeof(u.claim)))
			return -EFAULT;
		return xpu_lane_release(xf, &u.claim);
	case XPU_IOC_MOVE_DMABUF:
		if (copy_from_user(&u.move, uarg, sizeof(u.move)))
			return -EFAULT;
		return xpu_move(xdev, &u.move);
	case XPU_IOC_MEM:
		if (copy_from_user(&u.mem, uarg, sizeof(u.mem)))
			return -EFAULT;
		ret = xpu_mem_ioctl(xf, &u.mem);
		if (ret)
			return ret;
		return copy_to_user(uarg, &u.mem, sizeof(u.mem)) ? -EFAULT : 0;
	case XPU_IOC_UNIMPORT_DMABUF:
		if (copy_from_user(&u.unimp, uarg, sizeof(u.unimp)))
			return -EFAULT;
		return xpu_unimport(xf, &u.unimp);
	}
	return -ENOTTY;
}

static long xpu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct xpu_file *xf = xpu_file_of(file);
	long ret = -ENODEV;

	down_read(&xf->xdev->alive);
	if (!xf->xdev->gone)
		ret = xpu_do_ioctl(xf, cmd, arg);
	up_read(&xf->xdev->alive);
	return ret;
}

/* An open file keeps the structure (not the device) alive. */
static int xpu_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct xpu_dev *xdev = container_of(misc, struct xpu_dev, misc);
	struct xpu_file *xf;

	xf = kzalloc(sizeof(*xf), GFP_KERNEL);
	if (!xf)
		return -ENOMEM;
	kref_get(&xdev->ref);
	xf->xdev = xdev;
	INIT_LIST_HEAD(&xf->imports);
	file->private_data = xf;
	return 0;
}

static int xpu_release(struct inode *inode, struct file *file)
{
	struct xpu_file *xf = xpu_file_of(file);

	xpu_file_release(xf);
	xpu_dev_put(xf->xdev);
	kfree(xf);
	return 0;
}

/*
 * The file's memory, for the programs and the data a test checks; offsets
 * and length inside it (vm_iomap_memory refuses others, EINVAL). With
 * P2PDMA the kernel already maps it write-back (ZONE_DEVICE pages), and a
 * second mapping must not ask for another memory type.
 */
static int xpu_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct xpu_file *xf = xpu_file_of(file);
	struct xpu_dev *xdev = xf->xdev;
	struct xpu_mem_area *area;
	int ret;

	/*
	 * Not under alive: the ioctls fault user memory (mmap_lock) while
	 * holding it, and mmap comes here holding mmap_lock.
	 */
	if (READ_ONCE(xdev->gone))
		return -ENODEV;
	ret = xpu_file_mem(xf, 0, &area);
	if (ret)
		return ret;
	if (!xdev->p2pdma)
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	ret = vm_iomap_memory(vma, xdev->mem_start + area->offset, area->size);
	if (ret)
		dev_dbg(&xdev->pdev->dev,
			"mmap of page %lu, %lu bytes: not in the file's %#llx\n",
			vma->vm_pgoff, vma->vm_end - vma->vm_start, area->size);
	return ret;
}

static const struct file_operations xpu_fops = {
	.owner = THIS_MODULE,
	.open = xpu_open,
	.release = xpu_release,
	.unlocked_ioctl = xpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = xpu_mmap,
};

/* ---- PCI ----------------------------------------------------------------- */

static void xpu_publish(struct xpu_dev *xdev)
{
	struct pci_dev *pdev = xdev->pdev;
	int ret;

	if (!IS_ENABLED(CONFIG_PCI_P2PDMA)) {
		pci_info(pdev,
			 "kernel without CONFIG_PCI_P2PDMA: no dma-buf export\n");
		return;
	}
	ret = pci_p2pdma_add_resource(pdev, XPU_BAR_MEM, 0, 0);
	if (ret) {
		pci_warn(pdev, "memory not published for P2PDMA (%d)\n", ret);
		return;
	}
	xdev->p2pdma = true;
}

static int xpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct xpu_dev *xdev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(XPU_BAR_REGS), "xpu");
	if (ret)
		return ret;
	if (!(pci_resource_flags(pdev, XPU_BAR_MEM) & IORESOURCE_MEM))
		return -ENODEV;
	/* Claimed, not mapped: P2PDMA maps it, or user space through us. */
	ret = pci_request_region(pdev, XPU_BAR_MEM, "xpu");
	if (ret)
		return ret;
	pci_set_master(pdev);
	/* The lanes' DMA takes any 64-bit bus address (the windows limit it). */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;

	xdev = kzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev)
		return -ENOMEM;
	kref_init(&xdev->ref);
	mutex_init(&xdev->lane_lock);
	mutex_init(&xdev->mem_lock);
	INIT_LIST_HEAD(&xdev->mem_areas);
	init_rwsem(&xdev->alive);
	xdev->pdev = pci_dev_get(pdev);
	xdev->regs = pcim_iomap_table(pdev)[XPU_BAR_REGS];
	xdev->id = ida_alloc(&xpu_ida, GFP_KERNEL);
	if (xdev->id < 0) {
		ret = xdev->id;
		pci_dev_put(pdev);
		kfree(xdev);
		return ret;
	}
	if (readl(xdev->regs + XPU_REG_ID) != XPU_ID_VALUE) {
		pci_err(pdev, "not an xpu (ID %#x)\n",
			readl(xdev->regs + XPU_REG_ID));
		ret = -ENODEV;
		goto err_put;
	}
	xdev->mem_start = pci_resource_start(pdev, XPU_BAR_MEM);
	xdev->mem_size = lo_hi_readq(xdev->regs + XPU_REG_MEM_SIZE);
	xdev->lanes = readl(xdev->regs + XPU_REG_LANES);
	if (xdev->mem_size != pci_resource_len(pdev, XPU_BAR_MEM) ||
	    !is_power_of_2(xdev->mem_size) || xdev->mem_size < PAGE_SIZE ||
	    !xdev->lanes || xdev->lanes > XPU_LANES_MAX) {
		pci_err(pdev, "inconsistent memory size or lanes\n");
		ret = -ENODEV;
		goto err_put;
	}
	/* Granules of a page at least; the memory is a power of 2 (device). */
	xdev->mem_granule = max_t(u64, PAGE_SIZE,
				  xdev->mem_size / XPU_MEM_GRANULES);
	xdev->mem_granules = xdev->mem_size / xdev->mem_granule;
	xdev->mem_share = max_t(u64, xdev->mem_granule,
				xdev->mem_size / XPU_MEM_SHARE_DIV);
	/* BAR2 is at most a few GiB: the product does not overflow. */
	xdev->mem_user_share =
		rounddown(div_u64(xdev->mem_size * min(user_mem_percent, 100U),
				  100),
			  xdev->mem_granule);
	xdev->mem_user_share = max(xdev->mem_user_share, xdev->mem_share);
	xdev->mem_used = bitmap_zalloc(xdev->mem_granules, GFP_KERNEL);
	if (!xdev->mem_used) {
		ret = -ENOMEM;
		goto err_put;
	}
	xpu_publish(xdev);
	/* From here on a lane reaches only what its file imported for it. */
	writel(XPU_CTRL_ENFORCE, xdev->regs + XPU_REG_CTRL);
	if (!(readl(xdev->regs + XPU_REG_STATUS) & XPU_STATUS_ENFORCING)) {
		pci_err(pdev, "the device does not enforce its windows\n");
		ret = -ENODEV;
		goto err_put;
	}

	snprintf(xdev->name, sizeof(xdev->name), "xpu%d", xdev->id);
	xdev->misc.minor = MISC_DYNAMIC_MINOR;
	xdev->misc.name = xdev->name;
	xdev->misc.fops = &xpu_fops;
	xdev->misc.parent = &pdev->dev;
	ret = misc_register(&xdev->misc);
	if (ret)
		goto err_put;
	pci_set_drvdata(pdev, xdev);
	pci_info(pdev, "%s: %llu MiB, %u lanes%s\n", xdev->name,
		 xdev->mem_size >> 20, xdev->lanes,
		 xdev->p2pdma ? ", memory published for P2PDMA" : "");
	return 0;

err_put:
	xpu_dev_put(xdev);
	return ret;
}

/*
 * The P2PDMA pages go with the device (devres); exported dma-bufs hold
 * their page map, so that waits for the last one to be released. Open
 * files keep the structure and find the device gone (ENODEV); a mapping
 * of the memory stays, as one of a sysfs resource file does.
 */
static void xpu_remove(struct pci_dev *pdev)
{
	struct xpu_dev *xdev = pci_get_drvdata(pdev);
	u32 i;

	misc_deregister(&xdev->misc);
	down_write(&xdev->alive);
	/* Nothing a file set up reaches anywhere once the driver is gone. */
	for (i = 0; i < xdev->lanes; i++)
		writel(XPU_LANE_CTRL_ABORT, xpu_lane_reg(xdev, i, XPU_LANE_CTRL));
	for (i = 0; i < XPU_WINDOWS_MAX; i++)
		xpu_window_set(xdev, i, 0, 0);
	WRITE_ONCE(xdev->gone, true);
	up_write(&xdev->alive);
	xpu_dev_put(xdev);
}

static const struct pci_device_id xpu_ids[] = {
	{ PCI_DEVICE(XPU_PCI_VENDOR_ID, XPU_PCI_DEVICE_ID) },
	{}
};
MODULE_DEVICE_TABLE(pci, xpu_ids);

static struct pci_driver xpu_driver = {
	.name = "xpu",
	.id_table = xpu_ids,
	.probe = xpu_probe,
	.remove = xpu_remove,
};
module_pci_driver(xpu_driver);

MODULE_DESCRIPTION("RHiNET-NG accelerator stand-in (xpu)");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_IMPORT_NS(DMA_BUF);
