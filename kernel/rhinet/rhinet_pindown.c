// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Remote pin-down (004 2.5): on-demand MRs, whose range the process only
 * declares. Their VP tables are complete but every leaf entry starts
 * invalid; the NIC asks for pages (RHN_EQE_PD_REQUEST) when a peer first
 * touches them or asks to hold them, and passes peers' releases on
 * (RHN_EQE_PD_RELEASE). The event handler only queues these; a work item
 * pins the pages in the process's mm, enters them in the leaf tables and
 * answers RHN_ADMIN_PD_MAPPED, counts holders, and unpins pages nobody
 * holds once the NIC has dropped their translations.
 */
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>

#include "rhinet_ib.h"

static unsigned int max_pin_on_demand_pages = 65536;
module_param(max_pin_on_demand_pages, uint, 0644);
MODULE_PARM_DESC(max_pin_on_demand_pages,
		 "Pages of on-demand MRs one RDMA context (process) may have pinned for its peers; 0: no limit");

/* Events the handler keeps for the work item (16 bytes each); one the ring
 * has no room for is lost, except a PIN: its range is kept with its MR.
 */
#define RHINET_OD_RING 4096
/* Pages pinned per pin_user_pages_remote() call. */
#define RHINET_OD_BATCH 512

struct rhinet_od_event {
	u32 key;
	u32 first;
	u32 count;
	u8 type; /* RHN_EQE_PD_REQUEST or RHN_EQE_PD_RELEASE */
	u8 flags; /* enum rhn_eqe_pd_flags */
};

/* An on-demand MR's pages (rhinet_mr.od). */
struct rhinet_od {
	refcount_t ref; /* the MR's, a queued lost range's, the work item's */
	struct mutex lock; /* all below but the constants; the leaf entries */
	bool dead; /* the MR is going: nothing may be pinned any more */
	bool writable;
	u32 key;
	u32 ctx;
	u32 npages;
	unsigned long start; /* user address of page 0 */
	struct mm_struct *mm; /* mmgrab()bed at registration */
	struct rhinet_ucontext *uc; /* charged with the pages (od_pinned) */
	struct rhinet_mem *mem; /* its leaf tables come first */
	struct page **pages; /* NULL: not pinned */
	u32 *holds; /* PD_REQUEST holders; nonzero only for pinned pages */
	/* A PIN the ring missed (under the device's od_lock): on od_lost,
	 * answered over the pages [lost_first, lost_end) of all of them.
	 */
	struct list_head lost;
	u32 lost_first, lost_end;
};

static __le64 *rhinet_od_leaf(struct rhinet_od *od, u32 i)
{
	return &od->mem->tables[i / RHN_VPT_ENTRIES_PER_PAGE]
			       [i % RHN_VPT_ENTRIES_PER_PAGE];
}

static void rhinet_od_put(struct rhinet_od *od)
{
	if (refcount_dec_and_test(&od->ref)) {
		mutex_destroy(&od->lock);
		kfree(od);
	}
}

/* Pages pinned (@n > 0) or unpinned, for the port statistic and the mm's
 * VmPin; the context's count is kept by the callers.
 */
static void rhinet_od_account(struct rhinet_ib *ib, struct rhinet_od *od,
			      s64 n)
{
	atomic64_add(n, &ib->pinned_pages);
	atomic64_add(n, &od->mm->pinned_vm);
}

/* Unmaps and unpins page @i; the NIC reaches it no longer. */
static void rhinet_od_drop(struct rhinet_ib *ib, struct rhinet_od *od, u32 i)
{
	__le64 *leaf = rhinet_od_leaf(od, i);

	dma_unmap_page(&ib->rdev->pdev->dev,
		       le64_to_cpu(*leaf) & RHN_VPTE_ADDR_MASK, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
	WRITE_ONCE(*leaf, 0);
	/* The NIC may have written to it. */
	unpin_user_pages_dirty_lock(&od->pages[i], 1, od->writable);
	od->pages[i] = NULL;
	od->holds[i] = 0;
}

/*
 * Maps the @got pages pin_user_pages_remote() returned for [i, i + n) and
 * enters them; what it left in the rest is cleared (a failed call may
 * leave pointers of pages it unpinned again). Returns the pages entered.
 */
static u32 rhinet_od_map(struct rhinet_ib *ib, struct rhinet_od *od, u32 i,
			 u32 n, long got)
{
	struct device *dev = &ib->rdev->pdev->dev;
	dma_addr_t dma;
	u32 j;

	got = clamp_t(long, got, 0, n);
	for (j = 0; j < got; j++) {
		dma = dma_map_page(dev, od->pages[i + j], 0, PAGE_SIZE,
				   DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, dma)) {
			unpin_user_pages(&od->pages[i + j], got - j);
			break;
		}
		WRITE_ONCE(*rhinet_od_leaf(od, i + j),
			   cpu_to_le64(dma | RHN_VPTE_VALID));
	}
	memset(&od->pages[i + j], 0, (n - j) * sizeof(*od->pages));
	return j;
}

/*
 * Pins the pages of [first, end) that are not, if the context's limit
 * allows all of them, and enters them in the leaf tables. Returns true
 * when the whole range is pinned; what did get pinned stays.
 */
static bool rhinet_od_pin(struct rhinet_ib *ib, struct rhinet_od *od,
			  u32 first, u32 end)
{
	unsigned int limit = READ_ONCE(max_pin_on_demand_pages);
	unsigned int gup = FOLL_LONGTERM | (od->writable ? FOLL_WRITE : 0);
	u32 i, n, missing = 0, done = 0;
	long got;

	for (i = first; i < end; i++)
		missing += !od->pages[i];
	if (!missing)
		return true;
	if (atomic64_add_return(missing, &od->uc->od_pinned) > limit && limit) {
		ibdev_dbg(&ib->ibdev, "MR %#x: %u pages beyond the pin limit\n",
			  od->key, missing);
		goto out;
	}
	if (!mmget_not_zero(od->mm))
		goto out; /* the process is exiting */
	for (i = first; i < end; i += n) {
		n = 1;
		if (od->pages[i])
			continue;
		while (i + n < end && n < RHINET_OD_BATCH && !od->pages[i + n])
			n++;
		mmap_read_lock(od->mm);
		got = pin_user_pages_remote(od->mm,
					    od->start + ((unsigned long)i << PAGE_SHIFT),
					    n, gup, &od->pages[i], NULL, NULL);
		mmap_read_unlock(od->mm);
		got = rhinet_od_map(ib, od, i, n, got);
		done += got;
		if (got < n) {
			ibdev_dbg(&ib->ibdev, "MR %#x: page %u not pinned\n",
				  od->key, i + (u32)got);
			break;
		}
		cond_resched();
	}
	mmput(od->mm);
	rhinet_od_account(ib, od, done);
	/* The entries before the PD_MAPPED that names them. */
	dma_wmb();
out:
	atomic64_sub(missing - done, &od->uc->od_pinned);
	return done == missing;
}

/* One more holder of each pinned page of [first, end). */
static void rhinet_od_hold(struct rhinet_od *od, u32 first, u32 end)
{
	u32 i;

	for (i = first; i < end; i++)
		if (od->pages[i] && od->holds[i] != U32_MAX)
			od->holds[i]++;
}

/*
 * A peer released [first, end): one holder less for each page; the pages
 * nobody holds then are invalidated, and unpinned once the NIC has dropped
 * the translations it cached.
 */
static void rhinet_od_release(struct rhinet_ib *ib, struct rhinet_od *od,
			      u32 first, u32 end)
{
	struct rhn_admin_cmd cmd = {};
	u32 i, n = 0;
	__le64 *leaf;
	int ret;

	for (i = first; i < end; i++) {
		if (od->holds[i])
			od->holds[i]--;
		if (!od->pages[i] || od->holds[i])
			continue;
		leaf = rhinet_od_leaf(od, i);
		WRITE_ONCE(*leaf, *leaf & ~cpu_to_le64(RHN_VPTE_VALID));
		n++;
	}
	if (!n)
		return;
	cmd.hdr.opcode = RHN_ADMIN_INVALIDATE_TLB;
	cmd.u.handle.handle = cpu_to_le32(od->key);
	ret = rhinet_ctx_exec(ib, od->ctx, &cmd, NULL);
	if (ret && rhinet_dev_quiesced(ib->rdev))
		ret = 0; /* the NIC touches no memory any more */
	if (ret)
		ibdev_warn_ratelimited(&ib->ibdev,
				       "MR %#x: TLB not invalidated (%d), %u pages stay pinned\n",
				       od->key, ret, n);
	for (i = first; i < end; i++) {
		if (!od->pages[i] || od->holds[i])
			continue;
		leaf = rhinet_od_leaf(od, i);
		if (ret) /* the NIC may still use them */
			WRITE_ONCE(*leaf, *leaf | cpu_to_le64(RHN_VPTE_VALID));
		else
			rhinet_od_drop(ib, od, i);
	}
	if (!ret) {
		rhinet_od_account(ib, od, -(s64)n);
		atomic64_sub(n, &od->uc->od_pinned);
	}
}

/* Tells the NIC it may resume (or must fail) what waits for the pages. */
static void rhinet_od_answer(struct rhinet_ib *ib, struct rhinet_od *od,
			     const struct rhinet_od_event *ev, bool pinned)
{
	struct rhn_admin_cmd cmd = {};
	int ret;

	cmd.hdr.opcode = RHN_ADMIN_PD_MAPPED;
	cmd.u.pd_mapped.key = cpu_to_le32(od->key);
	cmd.u.pd_mapped.first_page = cpu_to_le32(ev->first);
	cmd.u.pd_mapped.num_pages = cpu_to_le32(ev->count);
	cmd.u.pd_mapped.status = pinned ? RHN_SYN_NONE : RHN_SYN_NOT_PINNED;
	ret = rhinet_ctx_exec(ib, od->ctx, &cmd, NULL);
	/* -ENOENT: the MR is being destroyed, the NIC dropped its requests. */
	if (ret && ret != -ENOENT)
		ibdev_dbg(&ib->ibdev, "MR %#x: PD_MAPPED %u+%u: %d\n", od->key,
			  ev->first, ev->count, ret);
	atomic64_inc(&ib->pin_requests);
	if (!pinned)
		atomic64_inc(&ib->pin_refusals);
}

/* One event for @od; its range comes from the device: kept within the MR. */
static void rhinet_od_handle(struct rhinet_ib *ib, struct rhinet_od *od,
			     const struct rhinet_od_event *ev)
{
	u64 end64 = (u64)ev->first + ev->count;
	u32 first = min(ev->first, od->npages);
	u32 end = min_t(u64, end64, od->npages);
	bool pinned;

	mutex_lock(&od->lock);
	if (od->dead)
		goto out;
	if (ev->type == RHN_EQE_PD_RELEASE) {
		atomic64_inc(&ib->pin_releases);
		rhinet_od_release(ib, od, first, end);
		goto out;
	}
	if (ev->flags & RHN_EQE_F_PD_PIN) {
		pinned = ev->count && end64 <= od->npages &&
			 rhinet_od_pin(ib, od, first, end);
		rhinet_od_answer(ib, od, ev, pinned);
		/* A failed PD_REQUEST holds nothing. */
		if (pinned && ev->flags & RHN_EQE_F_PD_HOLD)
			rhinet_od_hold(od, first, end);
	} else if (ev->flags & RHN_EQE_F_PD_HOLD) {
		/* Answered by the NIC already: a release may have unpinned
		 * pages since. Pinned again if possible; pages that are not
		 * are pinned again on their next touch.
		 */
		rhinet_od_pin(ib, od, first, end);
		rhinet_od_hold(od, first, end);
	}
out:
	mutex_unlock(&od->lock);
}

/* The on-demand MR of @key with a reference, or NULL if it is gone. */
static struct rhinet_od *rhinet_od_get(struct rhinet_ib *ib, u32 key)
{
	struct rhinet_od *od;

	/* An MR being registered may be asked for already. */
	mutex_lock(&ib->od_reg_lock);
	xa_lock_irq(&ib->od_mrs);
	od = xa_load(&ib->od_mrs, key >> RHN_KEY_INDEX_SHIFT);
	if (od && od->key == key)
		refcount_inc(&od->ref);
	else
		od = NULL;
	xa_unlock_irq(&ib->od_mrs);
	mutex_unlock(&ib->od_reg_lock);
	return od;
}

/* The events in order; then the PINs the ring missed. */
static void rhinet_od_work(struct work_struct *work)
{
	struct rhinet_ib *ib = container_of(work, struct rhinet_ib, od_work);
	struct rhinet_od_event ev = {};
	struct rhinet_od *od;

	for (;;) {
		spin_lock_irq(&ib->od_lock);
		od = list_first_entry_or_null(&ib->od_lost, struct rhinet_od,
					      lost);
		if (ib->od_tail != ib->od_head) {
			ev = ib->od_ring[ib->od_tail++ % RHINET_OD_RING];
			od = NULL;
		} else if (od) {
			list_del_init(&od->lost);
			ev.key = od->key;
			ev.first = od->lost_first;
			ev.count = od->lost_end - od->lost_first;
			ev.type = RHN_EQE_PD_REQUEST;
			ev.flags = RHN_EQE_F_PD_PIN;
		} else {
			spin_unlock_irq(&ib->od_lock);
			return;
		}
		spin_unlock_irq(&ib->od_lock);
		if (!od)
			od = rhinet_od_get(ib, ev.key);
		if (od) {
			rhinet_od_handle(ib, od, &ev);
			rhinet_od_put(od);
		}
		cond_resched();
	}
}

/*
 * The ring is full, and the NIC holds requests until this PIN is answered:
 * the range is kept with its MR, merged with others missed there, and
 * answered as one (the NIC answers every request overlapping it).
 */
static void rhinet_od_keep(struct rhinet_ib *ib,
			   const struct rhinet_od_event *ev)
{
	struct rhinet_od *od;
	unsigned long flags;
	u32 end;

	xa_lock_irqsave(&ib->od_mrs, flags);
	od = xa_load(&ib->od_mrs, ev->key >> RHN_KEY_INDEX_SHIFT);
	if (!od || od->key != ev->key || !ev->count ||
	    ev->first >= od->npages)
		goto out;
	end = min_t(u64, (u64)ev->first + ev->count, od->npages);
	spin_lock(&ib->od_lock);
	if (list_empty(&od->lost)) {
		refcount_inc(&od->ref);
		list_add_tail(&od->lost, &ib->od_lost);
		od->lost_first = ev->first;
		od->lost_end = end;
	} else {
		od->lost_first = min(od->lost_first, ev->first);
		od->lost_end = max(od->lost_end, end);
	}
	spin_unlock(&ib->od_lock);
out:
	xa_unlock_irqrestore(&ib->od_mrs, flags);
}

/* From the event handler (atomic context): queued for the work item. */
void rhinet_od_queue(struct rhinet_ib *ib, const struct rhn_eqe *eqe)
{
	u64 data = le64_to_cpu(eqe->data);
	struct rhinet_od_event ev = {
		.key = le32_to_cpu(eqe->object),
		.first = RHN_EQE_PD_FIRST(data),
		.count = RHN_EQE_PD_COUNT(data),
		.type = eqe->type,
		.flags = eqe->flags,
	};
	unsigned long flags;
	bool queued;

	if (!ib->od_ring)
		return; /* the NIC has no on-demand MRs */
	spin_lock_irqsave(&ib->od_lock, flags);
	queued = ib->od_head - ib->od_tail < RHINET_OD_RING;
	if (queued)
		ib->od_ring[ib->od_head++ % RHINET_OD_RING] = ev;
	spin_unlock_irqrestore(&ib->od_lock, flags);
	if (!queued) {
		atomic64_inc(&ib->pin_overflows);
		if (ev.type == RHN_EQE_PD_REQUEST &&
		    ev.flags & RHN_EQE_F_PD_PIN)
			rhinet_od_keep(ib, &ev);
		else /* a hold or release less: pages pinned too short or long */
			ibdev_warn_ratelimited(&ib->ibdev,
					       "pin-down event %u for MR %#x lost\n",
					       ev.type, ev.key);
	}
	queue_work(system_unbound_wq, &ib->od_work);
}

/*
 * Registers [start, start + length) as an on-demand MR addressed from
 * @iova (in the same place within a page), pinning nothing.
 */
int rhinet_od_reg(struct rhinet_ib *ib, struct rhinet_mr *mr,
		  struct rhinet_ucontext *uc, u64 start, u64 length, u64 iova,
		  int access, u32 pdn)
{
	struct rhinet_mem *mem = &mr->mem;
	struct rhn_admin_cmd cmd = {};
	struct rhinet_od *od;
	u64 npages;
	int levels, ret;

	if (!ib->od_ring || !uc)
		return -EOPNOTSUPP;
	if (!length || length > le64_to_cpu(ib->rdev->attr.max_mr_size) ||
	    iova + length < iova || (start ^ iova) & ~PAGE_MASK)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(start), length))
		return -EFAULT;
	npages = ((iova + length - 1) >> PAGE_SHIFT) - (iova >> PAGE_SHIFT) + 1;
	od = kzalloc(sizeof(*od), GFP_KERNEL);
	if (!od)
		return -ENOMEM;
	levels = rhinet_vpt_build(ib, mem, PAGE_SIZE, npages);
	if (levels < 0) {
		kfree(od);
		return levels;
	}
	/* 12 bytes a page, for the process's memory cgroup. */
	od->pages = kvcalloc(npages, sizeof(*od->pages), GFP_KERNEL_ACCOUNT);
	od->holds = kvcalloc(npages, sizeof(*od->holds), GFP_KERNEL_ACCOUNT);
	if (!od->pages || !od->holds) {
		ret = -ENOMEM;
		goto err_free;
	}
	refcount_set(&od->ref, 1);
	mutex_init(&od->lock);
	INIT_LIST_HEAD(&od->lost);
	od->writable = ib_access_writable(access);
	od->ctx = uc->ctx;
	od->npages = npages;
	od->start = start & PAGE_MASK;
	od->uc = uc;
	od->mem = mem;

	cmd.hdr.opcode = RHN_ADMIN_CREATE_MR;
	cmd.u.create_mr.pdn = cpu_to_le32(pdn);
	cmd.u.create_mr.access = cpu_to_le32(rhinet_mr_access(access));
	cmd.u.create_mr.iova = cpu_to_le64(iova);
	cmd.u.create_mr.length = cpu_to_le64(length);
	cmd.u.create_mr.table_addr =
		cpu_to_le64(mem->tables_dma[mem->num_tables - 1]);
	cmd.u.create_mr.num_pages = cpu_to_le32(npages);
	cmd.u.create_mr.page_shift = PAGE_SHIFT;
	cmd.u.create_mr.levels = levels;
	cmd.u.create_mr.key_variant = atomic_inc_return(&ib->key_variant);
	cmd.u.create_mr.flags = RHN_CREATE_MR_F_ON_DEMAND;
	mmgrab(current->mm);
	od->mm = current->mm;
	mutex_lock(&ib->od_reg_lock);
	ret = rhinet_ctx_exec(ib, uc->ctx, &cmd, &mem->key);
	if (!ret) {
		mem->ctx = uc->ctx;
		mem->page_shift = PAGE_SHIFT;
		od->key = mem->key;
		/* A stale entry of this index is of an MR being destroyed:
		 * its events are refused by key from here on.
		 */
		ret = xa_err(xa_store_irq(&ib->od_mrs,
					  od->key >> RHN_KEY_INDEX_SHIFT, od,
					  GFP_KERNEL));
	}
	mutex_unlock(&ib->od_reg_lock);
	if (ret) {
		mmdrop(od->mm);
		goto err_free;
	}
	mr->od = od;
	return 0;

err_free:
	rhinet_mem_release(ib, mem); /* the NIC MR, the tables */
	kvfree(od->pages);
	kvfree(od->holds);
	kfree(od);
	return ret;
}

/*
 * Destroys the NIC MR (its held requests fail), waits for the work item
 * to be done with the MR, then unpins every page and frees the tables.
 */
int rhinet_od_dereg(struct rhinet_ib *ib, struct rhinet_mr *mr)
{
	struct rhinet_od *od = mr->od;
	u32 i, n = 0;
	int ret;

	if (mr->mem.key) {
		ret = rhinet_destroy_object(ib, mr->mem.ctx,
					    RHN_ADMIN_DESTROY_MR, mr->mem.key);
		if (ret)
			return ret;
		mr->mem.key = 0;
	}
	xa_cmpxchg_irq(&ib->od_mrs, od->key >> RHN_KEY_INDEX_SHIFT, od, NULL,
		       0);
	mutex_lock(&od->lock);
	od->dead = true;
	mutex_unlock(&od->lock);
	for (i = 0; i < od->npages; i++) {
		if (!(i % RHINET_OD_BATCH))
			cond_resched();
		if (!od->pages[i])
			continue;
		rhinet_od_drop(ib, od, i);
		n++;
	}
	rhinet_od_account(ib, od, -(s64)n);
	atomic64_sub(n, &od->uc->od_pinned);
	rhinet_mem_release(ib, &mr->mem); /* the tables */
	kvfree(od->pages);
	kvfree(od->holds);
	mmdrop(od->mm);
	mr->od = NULL;
	rhinet_od_put(od);
	return 0;
}

int rhinet_od_init(struct rhinet_ib *ib)
{
	xa_init_flags(&ib->od_mrs, XA_FLAGS_LOCK_IRQ);
	mutex_init(&ib->od_reg_lock);
	spin_lock_init(&ib->od_lock);
	INIT_LIST_HEAD(&ib->od_lost);
	INIT_WORK(&ib->od_work, rhinet_od_work);
	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_PIN_ON_DEMAND))
		return 0;
	ib->od_ring = kvmalloc_array(RHINET_OD_RING, sizeof(*ib->od_ring),
				     GFP_KERNEL);
	return ib->od_ring ? 0 : -ENOMEM;
}

/* No event comes any more and every MR is gone: what is queued is dropped
 * by the work item, which then ends.
 */
void rhinet_od_fini(struct rhinet_ib *ib)
{
	flush_work(&ib->od_work);
	WARN_ON(!xa_empty(&ib->od_mrs) || !list_empty(&ib->od_lost));
	xa_destroy(&ib->od_mrs);
	kvfree(ib->od_ring);
	ib->od_ring = NULL;
}
