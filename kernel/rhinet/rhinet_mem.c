// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Registered memory: user memory pinned with ib_umem_get (or a dma-buf
 * pinned through ib_umem_dmabuf_get_pinned), cut into the
 * largest page size the NIC supports and the layout allows
 * (ib_umem_find_best_pgsz), and described to the NIC by a radix tree of
 * 4 KiB VP translation tables (Documentation/hardware/admin.md). Memory
 * regions (rhinet_mr.c), on-demand regions (rhinet_pindown.c) and the
 * buffers that hold user queue rings (rhinet_queues.c) are built on it.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "rhinet_obj.h"

#define VPT_ENTRIES RHN_VPT_ENTRIES_PER_PAGE
#define VPT_MAX_LEVELS 3
#define RHINET_MIN_PAGE_SHIFT 12
#define RHINET_MAX_PAGE_SHIFT 30

u32 rhinet_mr_access(int access)
{
	return (access & IB_ACCESS_LOCAL_WRITE ? RHN_ACCESS_LOCAL_WRITE : 0) |
	       (access & IB_ACCESS_REMOTE_WRITE ? RHN_ACCESS_REMOTE_WRITE : 0) |
	       (access & IB_ACCESS_REMOTE_READ ? RHN_ACCESS_REMOTE_READ : 0) |
	       (access & IB_ACCESS_REMOTE_ATOMIC ? RHN_ACCESS_REMOTE_ATOMIC : 0) |
	       (access & IB_ACCESS_MW_BIND ? RHN_ACCESS_MW_BIND : 0);
}

static void rhinet_vpt_free(struct rhinet_ib *ib, struct rhinet_mem *mem)
{
	struct device *dev = &ib->rdev->pdev->dev;
	u32 i;

	for (i = 0; i < mem->num_tables; i++)
		if (mem->tables[i])
			dma_free_coherent(dev, RHINET_VPT_PAGE_SIZE, mem->tables[i],
					  mem->tables_dma[i]);
	kvfree(mem->tables);
	kvfree(mem->tables_dma);
	mem->tables = NULL;
	mem->tables_dma = NULL;
	mem->num_tables = 0;
}

/*
 * Fills the tables for @npages pages of @pgsz bytes: the umem's pages, or
 * without one (on-demand MRs) invalid leaf entries. Table pages are kept
 * leaves first, then each upper level, the single top page last; they
 * are charged to the caller's memory cgroup (user MRs and queues: the
 * process's). Returns the number of levels or a negative errno.
 */
int rhinet_vpt_build(struct rhinet_ib *ib, struct rhinet_mem *mem,
		     unsigned long pgsz, u64 npages)
{
	struct device *dev = &ib->rdev->pdev->dev;
	u64 count[VPT_MAX_LEVELS], first[VPT_MAX_LEVELS], total = 0, i;
	struct ib_block_iter biter;
	int levels = 1, l;

	count[0] = DIV_ROUND_UP(npages, VPT_ENTRIES);
	while (count[levels - 1] > 1) {
		if (levels == VPT_MAX_LEVELS)
			return -EINVAL; /* beyond 2^27 pages */
		count[levels] = DIV_ROUND_UP(count[levels - 1], VPT_ENTRIES);
		levels++;
	}
	for (l = 0; l < levels; l++) {
		first[l] = total;
		total += count[l];
	}
	mem->tables = kvcalloc(total, sizeof(*mem->tables),
			       GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	mem->tables_dma = kvcalloc(total, sizeof(*mem->tables_dma),
				   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mem->tables || !mem->tables_dma)
		goto err_nomem;
	mem->num_tables = total;
	for (i = 0; i < total; i++) {
		mem->tables[i] = dma_alloc_coherent(dev, RHINET_VPT_PAGE_SIZE,
						    &mem->tables_dma[i],
						    GFP_KERNEL_ACCOUNT);
		if (!mem->tables[i])
			goto err_nomem;
	}

	i = 0;
	if (mem->umem)
		rdma_umem_for_each_dma_block(mem->umem, &biter, pgsz) {
			mem->tables[i / VPT_ENTRIES][i % VPT_ENTRIES] =
				cpu_to_le64(rdma_block_iter_dma_address(&biter) |
					    RHN_VPTE_VALID);
			i++;
		}
	for (l = 1; l < levels; l++)
		for (i = 0; i < count[l - 1]; i++)
			mem->tables[first[l] + i / VPT_ENTRIES][i % VPT_ENTRIES] =
				cpu_to_le64(mem->tables_dma[first[l - 1] + i] |
					    RHN_VPTE_VALID);
	return levels;

err_nomem:
	rhinet_vpt_free(ib, mem);
	return -ENOMEM;
}

/*
 * Describes the pages of mem->umem to the NIC as a memory region of context
 * @ctx and PD @pdn, addressed by the NIC from @iova on: one translation for
 * every kind of pinned memory (a process's pages, a dma-buf's). The caller
 * releases the umem if this fails.
 */
static int rhinet_mem_register(struct rhinet_ib *ib, struct rhinet_mem *mem,
			       u64 length, u64 iova, int access, u32 ctx,
			       u32 pdn)
{
	struct rhinet_dev *rdev = ib->rdev;
	unsigned long pgsz_bitmap, pgsz;
	struct rhn_admin_cmd cmd = {};
	u64 npages;
	int levels, ret;

	pgsz_bitmap = le32_to_cpu(rdev->attr.page_size_cap) &
		      GENMASK(RHINET_MAX_PAGE_SHIFT, RHINET_MIN_PAGE_SHIFT);
	pgsz = ib_umem_find_best_pgsz(mem->umem, pgsz_bitmap, iova);
	if (!pgsz)
		return -EINVAL;
	mem->page_shift = __ffs(pgsz);
	npages = ib_umem_num_dma_blocks(mem->umem, pgsz);
	levels = rhinet_vpt_build(ib, mem, pgsz, npages);
	if (levels < 0)
		return levels;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
	cmd.u.create_mr.pdn = cpu_to_le32(pdn);
	cmd.u.create_mr.access = cpu_to_le32(rhinet_mr_access(access));
	cmd.u.create_mr.iova = cpu_to_le64(iova);
	cmd.u.create_mr.length = cpu_to_le64(length);
	cmd.u.create_mr.table_addr =
		cpu_to_le64(mem->tables_dma[mem->num_tables - 1]);
	cmd.u.create_mr.num_pages = cpu_to_le32(npages);
	cmd.u.create_mr.page_shift = __ffs(pgsz);
	cmd.u.create_mr.levels = levels;
	/* A new variant per registration: a stale key of a reused slot
	 * no longer matches.
	 */
	cmd.u.create_mr.key_variant = atomic_inc_return(&ib->key_variant);
	ret = rhinet_ctx_exec(ib, ctx, &cmd, &mem->key);
	if (ret) {
		rhinet_vpt_free(ib, mem);
		return ret;
	}
	mem->ctx = ctx;
	return 0;
}

static bool rhinet_mem_range_ok(struct rhinet_ib *ib, u64 length, u64 iova)
{
	return length && length <= le64_to_cpu(ib->rdev->attr.max_mr_size) &&
	       iova + length >= iova;
}

/*
 * Pins [start, start + length) and registers it as NIC memory region of
 * context @ctx and PD @pdn, addressed by the NIC from @iova on.
 */
int rhinet_mem_pin(struct rhinet_ib *ib, struct rhinet_mem *mem, u64 start,
		   u64 length, u64 iova, int access, u32 ctx, u32 pdn)
{
	int ret;

	if (!rhinet_mem_range_ok(ib, length, iova))
		return -EINVAL;
	mem->umem = ib_umem_get(&ib->ibdev, start, length, access);
	if (IS_ERR(mem->umem)) {
		ret = PTR_ERR(mem->umem);
		mem->umem = NULL;
		return ret;
	}
	ret = rhinet_mem_register(ib, mem, length, iova, access, ctx, pdn);
	if (ret) {
		ib_umem_release(mem->umem);
		mem->umem = NULL;
		return ret;
	}
	mem->pinned = ib_umem_num_pages(mem->umem);
	atomic64_add(mem->pinned, &ib->pinned_pages);
	return 0;
}

/*
 * Bytes [offset, offset + length) of the dma-buf @fd, registered as
 * rhinet_mem_pin() registers a process's memory. The exporter pins the
 * buffer for as long as the umem holds the attachment, so its pages do
 * not move under the NIC: no move_notify to handle. An exporter that
 * must be free to move its buffer (VRAM it may evict) refuses the pin,
 * and the registration fails with its errno. One that moved a pinned
 * buffer anyway would reach ib_core's move_notify for pinned umems,
 * which only warns ("Invalidate callback should not be called..."); the
 * VM tests fail on that line. The pages are the exporter's, not the
 * process's, and are not counted in pinned_pages.
 * Errors: EBADF (@fd is no file), EINVAL (no dma-buf, or the range is
 * outside it), the exporter's errno when it cannot attach, pin or map.
 */
int rhinet_mem_pin_dmabuf(struct rhinet_ib *ib, struct rhinet_mem *mem,
			  u64 offset, u64 length, u64 iova, int fd, int access,
			  u32 ctx, u32 pdn)
{
	struct ib_umem_dmabuf *umem_dmabuf;
	int ret;

	if (!rhinet_mem_range_ok(ib, length, iova))
		return -EINVAL;
	umem_dmabuf = ib_umem_dmabuf_get_pinned(&ib->ibdev, offset, length, fd,
						access);
	if (IS_ERR(umem_dmabuf)) {
		ibdev_dbg_ratelimited(&ib->ibdev,
				      "dma-buf fd %d bytes %llu+%llu: not a dma-buf, or its exporter did not let it be attached, pinned and mapped: %ld\n",
				      fd, offset, length, PTR_ERR(umem_dmabuf));
		return PTR_ERR(umem_dmabuf);
	}
	mem->umem = &umem_dmabuf->umem;
	ret = rhinet_mem_register(ib, mem, length, iova, access, ctx, pdn);
	if (ret) {
		/* Unpins, detaches and drops the dma-buf reference. */
		ib_umem_release(mem->umem);
		mem->umem = NULL;
		return ret;
	}
	return 0;
}

/* A queue's ring buffer: aligned, at least @need bytes, of which exactly
 * @need are pinned and registered in the context's queue PD. In a dma-buf
 * the same holds for the offset, so the rings keep their alignment.
 */
int rhinet_mem_pin_queue(struct rhinet_ib *ib, struct rhinet_ucontext *uc,
			 struct rhinet_mem *mem,
			 const struct rhinet_queue_buf *buf, u64 need)
{
	if (!buf->va || !IS_ALIGNED(buf->va, RHINET_QUEUE_BUF_ALIGN) ||
	    buf->len < need ||
	    (buf->dmabuf && !IS_ALIGNED(buf->offset, RHINET_QUEUE_BUF_ALIGN))) {
		ibdev_dbg(&ib->ibdev,
			  "queue buffer %#llx+%llu (dma-buf %d at %llu): need %llu bytes, %u-aligned\n",
			  buf->va, buf->len, buf->dmabuf ? buf->fd : -1,
			  buf->offset, need, RHINET_QUEUE_BUF_ALIGN);
		return -EINVAL;
	}
	if (buf->dmabuf)
		return rhinet_mem_pin_dmabuf(ib, mem, buf->offset, need,
					     buf->va, buf->fd,
					     IB_ACCESS_LOCAL_WRITE, uc->ctx,
					     uc->queue_pdn);
	return rhinet_mem_pin(ib, mem, buf->va, need, buf->va,
			      IB_ACCESS_LOCAL_WRITE, uc->ctx, uc->queue_pdn);
}

/* Unregisters (the NIC drops its TLB entries), then unpins. */
int rhinet_mem_release(struct rhinet_ib *ib, struct rhinet_mem *mem)
{
	int ret;

	if (mem->key) {
		ret = rhinet_destroy_object(ib, mem->ctx, RHN_ADMIN_DESTROY_MR,
					    mem->key);
		if (ret)
			return ret;
		mem->key = 0;
	}
	rhinet_vpt_free(ib, mem);
	if (mem->umem) {
		ib_umem_release(mem->umem);
		mem->umem = NULL;
		atomic64_sub(mem->pinned, &ib->pinned_pages);
	}
	return 0;
}
