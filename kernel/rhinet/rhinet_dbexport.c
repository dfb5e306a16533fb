// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The context's doorbell page for a peer device: a process hands its own
 * page (nobody else's: the method works on the caller's context) to
 * another device's driver as a dma-buf, and that device rings the NIC by
 * itself (device-initiated posting, Documentation/driver/uapi.md).
 *
 * The page is MMIO: the importer gets it by dma_map_resource, an sg_table
 * of one entry with only its DMA address (no struct page). When the
 * context goes, its doorbell page goes back to the pool and a later
 * context may get it; so every dma-buf of the page is revoked first
 * (dma_buf_move_notify), which is why only a revocable importer (one with
 * move_notify) that takes peer-to-peer memory may attach. A revoked
 * dma-buf stays valid as a file but maps nothing (ENODEV).
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fcntl.h>
#include <linux/module.h>
#include <linux/pci-p2pdma.h>
#include <linux/slab.h>

#include "rhinet_obj.h"

#define UVERBS_MODULE_NAME rhinet_ib
#include <rdma/uverbs_named_ioctl.h>

/*
 * A dma-buf of one context's doorbell page. On its context's list until
 * revoked or released; both under rhinet_db_export_lock, which a
 * release may take after the context (and the device) are gone.
 */
struct rhinet_db_export {
	struct list_head node;
	struct dma_buf *dmabuf;
	struct pci_dev *pdev; /* the NIC, held */
	phys_addr_t phys; /* the page, while not revoked */
	bool revoked; /* under the dma-buf's reservation lock */
};

static DEFINE_MUTEX(rhinet_db_export_lock);

/*
 * Only a revocable importer that takes peer-to-peer memory, and that the
 * PCI topology lets reach the NIC's BAR (the kernel's P2PDMA judges). The
 * NIC itself is none: an MR over its own doorbell page (a pinned importer,
 * which cannot be revoked) would be nonsense.
 */
static int rhinet_db_attach(struct dma_buf *dmabuf,
			    struct dma_buf_attachment *attach)
{
	struct rhinet_db_export *e = dmabuf->priv;

	if (!attach->peer2peer || !attach->importer_ops ||
	    attach->dev == &e->pdev->dev) {
		dev_warn_ratelimited(&e->pdev->dev,
				     "doorbell dma-buf: %s is no revocable peer-to-peer importer\n",
				     dev_name(attach->dev));
		return -EOPNOTSUPP;
	}
	if (pci_p2pdma_distance(e->pdev, attach->dev, true) < 0) {
		dev_warn_ratelimited(&e->pdev->dev,
				     "doorbell dma-buf: %s cannot reach the NIC\n",
				     dev_name(attach->dev));
		return -EREMOTEIO;
	}
	return 0;
}

/*
 * A dynamic exporter, so that every mapping is made under the reservation
 * lock, which the revocation holds too: none is made after it. The page
 * never moves; pinning has nothing to do.
 */
static int rhinet_db_pin(struct dma_buf_attachment *attach)
{
	return 0;
}

static void rhinet_db_unpin(struct dma_buf_attachment *attach)
{
}

static struct sg_table *rhinet_db_map(struct dma_buf_attachment *attach,
				      enum dma_data_direction dir)
{
	struct rhinet_db_export *e = attach->dmabuf->priv;
	struct sg_table *sgt;
	dma_addr_t addr;
	int ret;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (e->revoked)
		return ERR_PTR(-ENODEV);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	addr = dma_map_resource(attach->dev, e->phys, RHN_DB_PAGE_SIZE, dir,
				DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(attach->dev, addr)) {
		ret = -EIO;
		goto err_table;
	}
	/* MMIO has no struct page: the entry carries the DMA address only. */
	sg_dma_address(sgt->sgl) = addr;
	sg_dma_len(sgt->sgl) = RHN_DB_PAGE_SIZE;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void rhinet_db_unmap(struct dma_buf_attachment *attach,
			    struct sg_table *sgt, enum dma_data_direction dir)
{
	dma_unmap_resource(attach->dev, sg_dma_address(sgt->sgl),
			   RHN_DB_PAGE_SIZE, dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

static void rhinet_db_release(struct dma_buf *dmabuf)
{
	struct rhinet_db_export *e = dmabuf->priv;

	mutex_lock(&rhinet_db_export_lock);
	if (!list_empty(&e->node))
		list_del(&e->node);
	mutex_unlock(&rhinet_db_export_lock);
	pci_dev_put(e->pdev);
	kfree(e);
}

static const struct dma_buf_ops rhinet_db_dmabuf_ops = {
	.attach = rhinet_db_attach,
	.pin = rhinet_db_pin,
	.unpin = rhinet_db_unpin,
	.map_dma_buf = rhinet_db_map,
	.unmap_dma_buf = rhinet_db_unmap,
	.release = rhinet_db_release,
};

/*
 * The context is going: its page will be another's. Every importer drops
 * its mapping now (move_notify, under the reservation lock), and no new
 * one is made.
 */
void rhinet_db_exports_revoke(struct rhinet_ucontext *uc)
{
	struct rhinet_db_export *e, *tmp;

	mutex_lock(&rhinet_db_export_lock);
	list_for_each_entry_safe(e, tmp, &uc->db_exports, node) {
		dma_resv_lock(e->dmabuf->resv, NULL);
		e->revoked = true;
		dma_buf_move_notify(e->dmabuf);
		dma_resv_unlock(e->dmabuf->resv);
		list_del_init(&e->node);
	}
	mutex_unlock(&rhinet_db_export_lock);
}

static int UVERBS_HANDLER(RHINET_IB_METHOD_EXPORT_DOORBELL)(struct uverbs_attr_bundle *attrs)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct ib_ucontext *ibuc = ib_uverbs_get_ucontext(attrs);
	struct rhinet_ucontext *uc;
	struct rhinet_db_export *e;
	struct dma_buf *dmabuf;
	struct rhinet_ib *ib;
	u32 flags = 0;
	s32 fd;
	int ret;

	if (IS_ERR(ibuc))
		return PTR_ERR(ibuc);
	uc = to_ruc(ibuc);
	ib = to_rib(ibuc->device);
	/* Without P2PDMA the kernel cannot judge a peer's path to a BAR. */
	if (!IS_ENABLED(CONFIG_PCI_P2PDMA)) {
		ibdev_dbg(&ib->ibdev, "doorbell export needs CONFIG_PCI_P2PDMA\n");
		return -EOPNOTSUPP;
	}
	ret = uverbs_get_flags32(&flags, attrs,
				 RHINET_IB_ATTR_EXPORT_DOORBELL_FLAGS,
				 O_CLOEXEC);
	if (ret)
		return ret;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	INIT_LIST_HEAD(&e->node);
	e->pdev = pci_dev_get(ib->rdev->pdev);
	e->phys = ib->db_bar + (u64)uc->ctx * RHN_DB_PAGE_SIZE;
	exp_info.ops = &rhinet_db_dmabuf_ops;
	exp_info.size = RHN_DB_PAGE_SIZE;
	exp_info.flags = O_RDWR;
	exp_info.priv = e;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		pci_dev_put(e->pdev);
		kfree(e);
		return PTR_ERR(dmabuf);
	}
	e->dmabuf = dmabuf;
	mutex_lock(&rhinet_db_export_lock);
	list_add(&e->node, &uc->db_exports);
	mutex_unlock(&rhinet_db_export_lock);

	fd = dma_buf_fd(dmabuf, flags & O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf); /* releases e */
		return fd;
	}
	/* The descriptor is the caller's now, even if the copy fails. */
	return uverbs_copy_to(attrs, RHINET_IB_ATTR_EXPORT_DOORBELL_FD, &fd,
			      sizeof(fd));
}

DECLARE_UVERBS_NAMED_METHOD(RHINET_IB_METHOD_EXPORT_DOORBELL,
			    UVERBS_ATTR_FLAGS_IN(RHINET_IB_ATTR_EXPORT_DOORBELL_FLAGS,
						 u32, UA_OPTIONAL),
			    UVERBS_ATTR_PTR_OUT(RHINET_IB_ATTR_EXPORT_DOORBELL_FD,
						UVERBS_ATTR_TYPE(s32), UA_MANDATORY));

DECLARE_UVERBS_GLOBAL_METHODS(RHINET_IB_OBJECT_DOORBELL,
			      &UVERBS_METHOD(RHINET_IB_METHOD_EXPORT_DOORBELL));

const struct uapi_definition rhinet_db_export_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE_NAMED(RHINET_IB_OBJECT_DOORBELL),
	{},
};

MODULE_IMPORT_NS(DMA_BUF);
