// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Remote pin-down (Documentation/driver/README.md, Remote pin-down):
 * on-demand MRs, whose range the process only declares. Their VP tables are
 * complete but every leaf entry starts invalid; the NIC asks for pages
 * (RHN_EQE_PD_REQUEST) when a peer first touches them or asks to hold
 * them, and passes peers' releases on (RHN_EQE_PD_RELEASE). The event
 * handler only queues these; a work item pins the pages in the process's
 * mm, enters them in the leaf tables and answers RHN_ADMIN_PD_MAPPED,
 * counts holders, and unpins pages nobody holds once the NIC has dropped
 * their translations.
 *
 * The MR follows the process's mappings: an mmu_interval_notifier over its
 * range drops the pinned pages of any range the mm invalidates (munmap,
 * mmap over it, fork's write protection, exit) once the NIC has dropped
 * their translations; the next touch pins the page mapped then. The pin
 * path pins without the notifier's lock and enters pages under it only if
 * no invalidation ran meanwhile (mmu_interval_read_retry()).
 *
 * Limits: what a declaration costs the kernel (VP tables and bookkeeping,
 * 28 bytes a page) is charged to the process's memory cgroup and bounded
 * per user (max_on_demand_reg_pages); pinned pages count in the process's
 * pinned_vm against its RLIMIT_MEMLOCK, as ib_umem_get() counts them, and
 * per user (max_pin_on_demand_pages). No event is lost: one the ring has
 * no room for (or whose context has its share of the ring) is coalesced
 * with its MR and handled in its turn.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include "rhinet_obj.h"

static unsigned int max_pin_on_demand_pages = 65536;
module_param(max_pin_on_demand_pages, uint, 0644);
MODULE_PARM_DESC(max_pin_on_demand_pages,
		 "Pages of on-demand MRs one user (all its processes) may have pinned for its peers, each process also within its RLIMIT_MEMLOCK; 0: no limit");

static unsigned long max_on_demand_reg_pages;
module_param(max_on_demand_reg_pages, ulong, 0644);
MODULE_PARM_DESC(max_on_demand_reg_pages,
		 "Pages one user (all its processes) may declare in on-demand MRs, 28 bytes of kernel memory each; 0: as many as the host has RAM");

/* Events the handler keeps for the work item, in order; one the ring has
 * no room for, or one of a context with RHINET_OD_CTX_SHARE of them
 * queued, is coalesced with its MR instead.
 */
#define RHINET_OD_RING 4096
#define RHINET_OD_CTX_SHARE (RHINET_OD_RING / 8)
/* Pages pinned per pin_user_pages_remote() call. */
#define RHINET_OD_BATCH 512
/* Pins of one range the notifier may undo before the pin fails: a
 * process remapping its range without pause must not hold the work item
 * (every MR of the device) forever.
 */
#define RHINET_OD_PIN_TRIES 64

struct rhinet_od_event {
	u32 key;
	u32 first;
	u32 count;
	u32 ctx; /* counted in od_ctx_queued; 0: not */
	u8 type; /* RHN_EQE_PD_REQUEST or RHN_EQE_PD_RELEASE */
	u8 flags; /* enum rhn_eqe_pd_flags */
};

/* A user's on-demand MRs on the device, all its processes (od_users). */
struct rhinet_od_user {
	u64 reg_pages; /* declared; under od_users_lock */
	atomic64_t pinned;
};

/* An on-demand MR's pages (rhinet_mr.od). */
struct rhinet_od {
	refcount_t ref; /* the MR's, od_lost's, the work item's */
	struct mutex lock; /* all below but the constants; the leaf entries */
	/*
	 * Taken by the notifier (under the mm's locks): never held across
	 * pinning or allocating. pages[], holds[] and the leaf entries change
	 * under both it and lock, but the notifier's clearing under it alone.
	 */
	struct mutex notifier_lock;
	struct mmu_interval_notifier notifier;
	bool dead; /* the MR is going: nothing may be pinned any more (set
		    * under both locks)
		    */
	bool writable;
	bool lock_cap; /* CAP_IPC_LOCK at registration: no RLIMIT_MEMLOCK */
	u32 key;
	u32 ctx;
	u32 uid; /* the context's user */
	u32 npages;
	unsigned long start; /* user address of page 0 */
	struct mm_struct *mm; /* mmgrab()bed at registration */
	struct task_struct *task; /* its group leader: RLIMIT_MEMLOCK */
	struct rhinet_ucontext *uc; /* charged with the pages (od_pinned) */
	struct rhinet_od_user *user; /* charged with npages and the pins */
	struct rhinet_ib *ib;
	struct rhinet_mem *mem; /* its leaf tables come first */
	struct page **pages; /* NULL: not pinned */
	/* One batch being pinned, not entered yet (min(npages, BATCH)). */
	struct page **batch;
	dma_addr_t *batch_dma;
	u32 *holds; /* PD_REQUEST holders; nonzero only for pinned pages */
	/*
	 * Events coalesced (under the device's od_lock). While the MR is on
	 * od_lost, every event of it joins them; the work item takes them
	 * once the ring has no event older than lost_seq. PINs: one range
	 * [pin_first, pin_end) answered as one (the NIC answers every
	 * request overlapping it). HOLDs (+1) and RELEASEs (-1) of
	 * [first, end): diff[first] += d, diff[end] -= d, in the array the
	 * handler adds to (diff_cur), so that page i gained the sum of
	 * diff[0..i] holders; [act_first, act_end) bounds them. The work
	 * item drains the other array. pin_end, act_end 0: none.
	 */
	struct list_head lost;
	u32 lost_seq;
	u32 pin_first, pin_end;
	u32 act_first, act_end;
	bool act_release; /* some were RELEASEs */
	u8 diff_cur;
	s32 *diff[2]; /* npages + 1 entries each */
};

/* What the work item took of an MR's coalesced events. */
struct rhinet_od_batch {
	u32 pin_first, pin_end;
	u32 act_first, act_end;
	bool act_release;
	s32 *diff;
};

static __le64 *rhinet_od_leaf(struct rhinet_od *od, u32 i)
{
	return &od->mem->tables[i / RHN_VPT_ENTRIES_PER_PAGE]
			       [i % RHN_VPT_ENTRIES_PER_PAGE];
}

static void rhinet_od_put(struct rhinet_od *od)
{
	if (refcount_dec_and_test(&od->ref)) {
		mutex_destroy(&od->notifier_lock);
		mutex_destroy(&od->lock);
		kfree(od);
	}
}

/*
 * Charges @n more pinned pages to the MR's user (max_pin_on_demand_pages)
 * and to its process's pinned_vm, within the process's RLIMIT_MEMLOCK
 * unless it had CAP_IPC_LOCK (as ib_umem_get()); false, charging
 * nothing, beyond either. The mm must be alive (mmget).
 */
static bool rhinet_od_charge(struct rhinet_ib *ib, struct rhinet_od *od,
			     u32 n)
{
	unsigned int limit = READ_ONCE(max_pin_on_demand_pages);
	unsigned long lock_limit;
	s64 pinned;

	pinned = atomic64_add_return(n, &od->user->pinned);
	if (limit && pinned > limit) {
		ibdev_dbg(&ib->ibdev,
			  "MR %#x: %u pages beyond user %u's pin limit %u\n",
			  od->key, n, od->uid, limit);
		goto undo_user;
	}
	pinned = atomic64_add_return(n, &od->mm->pinned_vm);
	lock_limit = task_rlimit(od->task, RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (!od->lock_cap && (u64)pinned > lock_limit) {
		ibdev_dbg(&ib->ibdev,
			  "MR %#x: %u pages beyond RLIMIT_MEMLOCK (%lu pages)\n",
			  od->key, n, lock_limit);
		goto undo_mm;
	}
	atomic64_add(n, &od->uc->od_pinned);
	atomic64_add(n, &ib->pinned_pages);
	return true;

undo_mm:
	atomic64_sub(n, &od->mm->pinned_vm);
undo_user:
	atomic64_sub(n, &od->user->pinned);
	return false;
}

/* @n pinned pages less: the port statistic, VmPin, the context's and the
 * user's counts.
 */
static void rhinet_od_uncharge(struct rhinet_ib *ib, struct rhinet_od *od,
			       u32 n)
{
	if (!n)
		return;
	atomic64_sub(n, &ib->pinned_pages);
	atomic64_sub(n, &od->uc->od_pinned);
	atomic64_sub(n, &od->mm->pinned_vm);
	atomic64_sub(n, &od->user->pinned);
}

/*
 * Unmaps and unpins page @i; the NIC reaches it no longer. From the
 * notifier (@mapped) the page is still mapped and whoever invalidates may
 * hold its lock: it is dirtied without taking it, as ib_umem_odp does.
 */
static void rhinet_od_drop(struct rhinet_ib *ib, struct rhinet_od *od, u32 i,
			   bool mapped)
{
	__le64 *leaf = rhinet_od_leaf(od, i);
	struct page *page = od->pages[i];

	dma_unmap_page(&ib->rdev->pdev->dev,
		       le64_to_cpu(*leaf) & RHN_VPTE_ADDR_MASK, PAGE_SIZE,
		       DMA_BIDIRECTIONAL);
	WRITE_ONCE(*leaf, 0);
	od->pages[i] = NULL;
	od->holds[i] = 0;
	/* The NIC may have written to it. */
	if (!mapped) {
		unpin_user_pages_dirty_lock(&page, 1, od->writable);
		return;
	}
	if (od->writable)
		set_page_dirty(page);
	unpin_user_page(page);
}

/* The pages of [first, end) not pinned (notifier_lock held). */
static u32 rhinet_od_missing(struct rhinet_od *od, u32 first, u32 end)
{
	u32 i, missing = 0;

	for (i = first; i < end; i++)
		missing += !od->pages[i];
	return missing;
}

/*
 * Pins [i, i + n) into od->batch and maps it for the NIC; what
 * pin_user_pages_remote() or the mapping left out is unpinned again.
 * Returns the pages of the batch ready, from its start.
 */
static u32 rhinet_od_pin_batch(struct rhinet_ib *ib, struct rhinet_od *od,
			       u32 i, u32 n)
{
	unsigned int gup = FOLL_LONGTERM | (od->writable ? FOLL_WRITE : 0);
	struct device *dev = &ib->rdev->pdev->dev;
	long got;
	u32 j;

	mmap_read_lock(od->mm);
	got = pin_user_pages_remote(od->mm,
				    od->start + ((unsigned long)i << PAGE_SHIFT),
				    n, gup, od->batch, NULL, NULL);
	mmap_read_unlock(od->mm);
	got = clamp_t(long, got, 0, n);
	for (j = 0; j < got; j++) {
		od->batch_dma[j] = dma_map_page(dev, od->batch[j], 0, PAGE_SIZE,
						DMA_BIDIRECTIONAL);
		if (dma_mapping_error(dev, od->batch_dma[j])) {
			unpin_user_pages(&od->batch[j], got - j);
			break;
		}
	}
	return j;
}

/* Gives back the @n pages of a batch the NIC never saw. */
static void rhinet_od_unpin_batch(struct rhinet_ib *ib, struct rhinet_od *od,
				  u32 n)
{
	u32 j;

	for (j = 0; j < n; j++)
		dma_unmap_page(&ib->rdev->pdev->dev, od->batch_dma[j],
			       PAGE_SIZE, DMA_BIDIRECTIONAL);
	unpin_user_pages(od->batch, n);
}

/*
 * Pins the pages of [first, end) that are not, if the limits allow all of
 * them (rhinet_od_charge()), and enters them in the leaf tables; pinned
 * while the notifier invalidated part of the range, they are pinned again
 * from what the process maps now. Returns true when the whole range is
 * pinned; what did get pinned stays.
 */
static bool rhinet_od_pin(struct rhinet_ib *ib, struct rhinet_od *od,
			  u32 first, u32 end)
{
	u32 i, j, n, got, missing, done, tries = 0;
	unsigned long seq;
	bool pinned = false;

	if (!mmget_not_zero(od->mm))
		return false; /* the process is exiting */
again:
	seq = mmu_interval_read_begin(&od->notifier);
	done = 0;
	mutex_lock(&od->notifier_lock);
	missing = rhinet_od_missing(od, first, end);
	mutex_unlock(&od->notifier_lock);
	if (!missing) {
		pinned = true;
		goto out;
	}
	if (!rhinet_od_charge(ib, od, missing))
		goto out;
	/* Only the notifier changes pages[] meanwhile, and that is retried. */
	for (i = first; i < end; i += n) {
		n = 1;
		if (READ_ONCE(od->pages[i]))
			continue;
		while (i + n < end && n < RHINET_OD_BATCH &&
		       !READ_ONCE(od->pages[i + n]))
			n++;
		got = rhinet_od_pin_batch(ib, od, i, n);
		mutex_lock(&od->notifier_lock);
		if (mmu_interval_read_retry(&od->notifier, seq)) {
			mutex_unlock(&od->notifier_lock);
			rhinet_od_unpin_batch(ib, od, got);
			rhinet_od_uncharge(ib, od, missing - done);
			if (++tries == RHINET_OD_PIN_TRIES) {
				ibdev_dbg(&ib->ibdev,
					  "MR %#x: pages %u..%u remapped during %u pins\n",
					  od->key, first, end - 1, tries);
				goto out;
			}
			cond_resched();
			goto again;
		}
		for (j = 0; j < got; j++) {
			od->pages[i + j] = od->batch[j];
			WRITE_ONCE(*rhinet_od_leaf(od, i + j),
				   cpu_to_le64(od->batch_dma[j] |
					       RHN_VPTE_VALID));
		}
		mutex_unlock(&od->notifier_lock);
		done += got;
		if (got < n) {
			ibdev_dbg(&ib->ibdev, "MR %#x: page %u not pinned\n",
				  od->key, i + got);
			break;
		}
		cond_resched();
	}
	rhinet_od_uncharge(ib, od, missing - done);
	pinned = done == missing;
	/* The entries before the PD_MAPPED that names them. */
	dma_wmb();
out:
	mmput(od->mm);
	return pinned;
}

/* One more holder of each pinned page of [first, end). */
static void rhinet_od_hold(struct rhinet_od *od, u32 first, u32 end)
{
	u32 i;

	for (i = first; i < end; i++)
		if (od->pages[i] && od->holds[i] != U32_MAX)
			od->holds[i]++;
}

/* A peer released [first, end): one holder less of each page. */
static void rhinet_od_unhold(struct rhinet_od *od, u32 first, u32 end)
{
	u32 i;

	for (i = first; i < end; i++)
		if (od->holds[i])
			od->holds[i]--;
}

/* The NIC drops the translations of the MR it cached. */
static int rhinet_od_flush_tlb(struct rhinet_ib *ib, struct rhinet_od *od)
{
	struct rhn_admin_cmd cmd = {};

	cmd.hdr.opcode = RHN_ADMIN_INVALIDATE_TLB;
	cmd.u.handle.handle = cpu_to_le32(od->key);
	return rhinet_ctx_exec(ib, od->ctx, &cmd, NULL);
}

/*
 * Unpins the pinned pages of [first, end) (with @idle only those nobody
 * holds) once their leaf entries are invalid and the NIC has dropped the
 * translations it cached (notifier_lock held; @mapped: from the
 * notifier). A NIC that does not confirm has timed out and been failed
 * (reset: it reaches no memory), or refused: the pages stay pinned, their
 * entries invalid, until the MR goes.
 */
static void rhinet_od_unpin(struct rhinet_ib *ib, struct rhinet_od *od,
			    u32 first, u32 end, bool idle, bool mapped)
{
	u32 i, n = 0;
	__le64 *leaf;
	int ret = 0;

	for (i = first; i < end; i++) {
		if (!od->pages[i] || (idle && od->holds[i]))
			continue;
		leaf = rhinet_od_leaf(od, i);
		/* The bus address stays for rhinet_od_drop(). */
		WRITE_ONCE(*leaf, *leaf & ~cpu_to_le64(RHN_VPTE_VALID));
		n++;
	}
	if (!n)
		return;
	/* A destroyed NIC MR has no translations left. */
	if (!od->dead)
		ret = rhinet_od_flush_tlb(ib, od);
	if (ret) {
		ibdev_warn_ratelimited(&ib->ibdev,
				       "MR %#x: TLB not invalidated (%d), %u pages stay pinned until it goes\n",
				       od->key, ret, n);
		return;
	}
	for (i = first; i < end; i++)
		if (od->pages[i] && !(idle && od->holds[i]))
			rhinet_od_drop(ib, od, i, mapped);
	rhinet_od_uncharge(ib, od, n);
	if (mapped)
		atomic64_inc(&ib->pin_invalidations);
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
	bool pinned, hold = false;

	mutex_lock(&od->lock);
	if (od->dead)
		goto out;
	if (ev->type == RHN_EQE_PD_RELEASE) {
		atomic64_inc(&ib->pin_releases);
		mutex_lock(&od->notifier_lock);
		rhinet_od_unhold(od, first, end);
		rhinet_od_unpin(ib, od, first, end, true, false);
		mutex_unlock(&od->notifier_lock);
		goto out;
	}
	if (ev->flags & RHN_EQE_F_PD_PIN) {
		pinned = ev->count && end64 <= od->npages &&
			 rhinet_od_pin(ib, od, first, end);
		rhinet_od_answer(ib, od, ev, pinned);
		/* A failed PD_REQUEST holds nothing. */
		hold = pinned && ev->flags & RHN_EQE_F_PD_HOLD;
	} else if (ev->flags & RHN_EQE_F_PD_HOLD) {
		/* Answered by the NIC already: a release may have unpinned
		 * pages since. Pinned again if possible; pages that are not
		 * are pinned again on their next touch.
		 */
		rhinet_od_pin(ib, od, first, end);
		hold = true;
	}
	/* Pages the notifier dropped since get no holder. */
	if (hold) {
		mutex_lock(&od->notifier_lock);
		rhinet_od_hold(od, first, end);
		mutex_unlock(&od->notifier_lock);
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

/*
 * The on-demand MR of @sge's lkey in @ibpd with a reference, and the pages
 * [*first, *end) its range covers; NULL if the key is no on-demand MR of
 * that PD (another process's included) or the range is not inside it.
 */
static struct rhinet_od *rhinet_od_advised(struct rhinet_ib *ib,
					   struct ib_pd *ibpd,
					   const struct ib_sge *sge, u32 *first,
					   u32 *end)
{
	struct rhinet_od *od = rhinet_od_get(ib, sge->lkey);
	struct ib_mr *ibmr;

	if (!od) {
		ibdev_dbg(&ib->ibdev, "advise_mr: lkey %#x is no on-demand MR\n",
			  sge->lkey);
		return NULL;
	}
	ibmr = &container_of(od->mem, struct rhinet_mr, mem)->ibmr;
	if (ibmr->pd != ibpd) {
		ibdev_dbg(&ib->ibdev, "advise_mr: lkey %#x of another PD\n",
			  sge->lkey);
		goto err;
	}
	if (!sge->length || sge->addr < ibmr->iova ||
	    sge->addr - ibmr->iova > ibmr->length ||
	    sge->length > ibmr->length - (sge->addr - ibmr->iova)) {
		ibdev_dbg(&ib->ibdev,
			  "advise_mr: %#llx+%u outside MR %#x (%#llx+%llu)\n",
			  sge->addr, sge->length, sge->lkey, ibmr->iova,
			  ibmr->length);
		goto err;
	}
	/* Pages count from the page that holds the iova (rhinet_od_reg). */
	*first = (sge->addr >> PAGE_SHIFT) - (ibmr->iova >> PAGE_SHIFT);
	*end = ((sge->addr + sge->length - 1) >> PAGE_SHIFT) -
	       (ibmr->iova >> PAGE_SHIFT) + 1;
	return od;

err:
	rhinet_od_put(od);
	return NULL;
}

/*
 * ibv_advise_mr PREFETCH / PREFETCH_WRITE: pins the pages of each range of
 * an on-demand MR and enters them in its leaf tables, as the answer to a
 * PD_REQUEST does, so that neither a peer's first touch nor a local
 * access (lkey) finds them missing. Every SGE is checked before anything
 * is pinned (EINVAL). Done at once, also without IB_UVERBS_ADVISE_MR_FLAG_FLUSH;
 * only with it does a range that could not be pinned (RLIMIT_MEMLOCK,
 * max_pin_on_demand_pages, unmapped memory) fail the call (EFAULT); without
 * it the advice is a hint and such pages fault on their first touch.
 */
int rhinet_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		     u32 flags, struct ib_sge *sg_list, u32 num_sge,
		     struct uverbs_attr_bundle *attrs)
{
	struct rhinet_ib *ib = to_rib(ibpd->device);
	struct rhinet_od *od;
	u32 i, first, end;
	bool pinned;
	int ret = 0;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE) {
		ibdev_dbg(&ib->ibdev, "advise_mr: advice %d not supported\n",
			  advice);
		return -EOPNOTSUPP;
	}
	for (i = 0; i < num_sge; i++) {
		od = rhinet_od_advised(ib, ibpd, &sg_list[i], &first, &end);
		if (!od)
			return -EINVAL;
		if (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
		    !od->writable) {
			ibdev_dbg(&ib->ibdev,
				  "advise_mr: PREFETCH_WRITE of read-only MR %#x\n",
				  od->key);
			ret = -EINVAL;
		}
		rhinet_od_put(od);
		if (ret)
			return ret;
	}
	for (i = 0; i < num_sge; i++) {
		od = rhinet_od_advised(ib, ibpd, &sg_list[i], &first, &end);
		if (!od)
			return -EINVAL; /* deregistered meanwhile */
		mutex_lock(&od->lock);
		pinned = !od->dead && rhinet_od_pin(ib, od, first, end);
		mutex_unlock(&od->lock);
		rhinet_od_put(od);
		if (!pinned && flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH) {
			ibdev_dbg(&ib->ibdev,
				  "advise_mr: pages %u..%u of MR %#x not pinned\n",
				  first, end - 1, sg_list[i].lkey);
			return -EFAULT;
		}
	}
	return 0;
}

/* Page @i is held but not pinned (a release unpinned it meanwhile). */
static bool rhinet_od_repin(struct rhinet_od *od, u32 i)
{
	return od->holds[i] && !od->pages[i];
}

/*
 * The events coalesced with @od, as they would have been handled one by
 * one (their order among themselves aside): the PINs as one range, then
 * the holders gained and lost page by page (none gained where that PIN
 * failed: a failed PD_REQUEST holds nothing); held pages that are not
 * pinned are pinned again, and with a RELEASE among them the pages of the
 * range nobody holds are unpinned (also those pinned by a first touch
 * alone).
 */
static void rhinet_od_drain(struct rhinet_ib *ib, struct rhinet_od *od,
			    const struct rhinet_od_batch *b)
{
	struct rhinet_od_event ev = {};
	bool pin_failed = false;
	s64 carry = 0;
	u32 i, j;

	mutex_lock(&od->lock);
	if (od->dead)
		goto out;
	if (b->pin_end) {
		ev.first = b->pin_first;
		ev.count = b->pin_end - b->pin_first;
		pin_failed = !rhinet_od_pin(ib, od, b->pin_first, b->pin_end);
		rhinet_od_answer(ib, od, &ev, !pin_failed);
	}
	if (!b->act_end)
		goto out;
	mutex_lock(&od->notifier_lock);
	for (i = b->act_first; i < b->act_end; i++) {
		carry += b->diff[i];
		b->diff[i] = 0;
		if (carry > 0 && !(pin_failed && i >= b->pin_first &&
				   i < b->pin_end))
			od->holds[i] = min_t(u64, od->holds[i] + carry, U32_MAX);
		else if (carry < 0)
			od->holds[i] -= min_t(u64, od->holds[i], -carry);
		if (!(i % RHINET_OD_BATCH))
			cond_resched();
	}
	b->diff[b->act_end] = 0;
	mutex_unlock(&od->notifier_lock);
	/* (What the notifier clears meanwhile is found by the pin.) */
	for (i = b->act_first; i < b->act_end; i = j) {
		j = i + 1;
		if (!rhinet_od_repin(od, i))
			continue;
		while (j < b->act_end && rhinet_od_repin(od, j))
			j++;
		rhinet_od_pin(ib, od, i, j);
	}
	mutex_lock(&od->notifier_lock);
	for (i = b->act_first; i < b->act_end; i++)
		if (!od->pages[i])
			od->holds[i] = 0;
	if (b->act_release)
		rhinet_od_unpin(ib, od, b->act_first, b->act_end, true,
				false);
	mutex_unlock(&od->notifier_lock);
out:
	mutex_unlock(&od->lock);
}

/* Takes @od's coalesced events (od_lock held): the handler coalesces into
 * the other array from now on.
 */
static void rhinet_od_take(struct rhinet_od *od, struct rhinet_od_batch *b)
{
	list_del_init(&od->lost);
	b->pin_first = od->pin_first;
	b->pin_end = od->pin_end;
	b->act_first = od->act_first;
	b->act_end = od->act_end;
	b->act_release = od->act_release;
	b->diff = od->diff[od->diff_cur];
	od->diff_cur ^= 1;
	od->pin_first = 0;
	od->pin_end = 0;
	od->act_first = 0;
	od->act_end = 0;
	od->act_release = false;
}

/* The events in order: the ring's, and each MR's coalesced ones after
 * those the ring held before them.
 */
static void rhinet_od_work(struct work_struct *work)
{
	struct rhinet_ib *ib = container_of(work, struct rhinet_ib, od_work);
	struct rhinet_od_event ev = {};
	struct rhinet_od_batch b;
	struct rhinet_od *od;

	for (;;) {
		spin_lock_irq(&ib->od_lock);
		od = list_first_entry_or_null(&ib->od_lost, struct rhinet_od,
					      lost);
		if (od && (s32)(ib->od_tail - od->lost_seq) >= 0) {
			rhinet_od_take(od, &b);
		} else if (ib->od_tail != ib->od_head) {
			ev = ib->od_ring[ib->od_tail++ % RHINET_OD_RING];
			if (ev.ctx)
				ib->od_ctx_queued[ev.ctx]--;
			od = NULL;
		} else {
			spin_unlock_irq(&ib->od_lock);
			return;
		}
		spin_unlock_irq(&ib->od_lock);
		if (od) {
			rhinet_od_drain(ib, od, &b);
			rhinet_od_put(od); /* od_lost's */
		} else {
			od = rhinet_od_get(ib, ev.key);
			if (od) {
				rhinet_od_handle(ib, od, &ev);
				rhinet_od_put(od);
			}
		}
		cond_resched();
	}
}

/*
 * The ring has no room for @ev, @od's context has its share of the ring,
 * or @od has coalesced events already: @ev joins them (od_lock held).
 * Constant time, whatever the range.
 */
static void rhinet_od_coalesce(struct rhinet_ib *ib, struct rhinet_od *od,
			       const struct rhinet_od_event *ev)
{
	bool pin = ev->type == RHN_EQE_PD_REQUEST &&
		   ev->flags & RHN_EQE_F_PD_PIN;
	bool release = ev->type == RHN_EQE_PD_RELEASE;
	bool hold = ev->type == RHN_EQE_PD_REQUEST &&
		    ev->flags & RHN_EQE_F_PD_HOLD;
	s32 *diff = od->diff[od->diff_cur];
	s32 d = release ? -1 : 1;
	u32 first = ev->first, end;

	if (!ev->count || first >= od->npages || !(pin || hold || release))
		return;
	end = min_t(u64, (u64)first + ev->count, od->npages);
	if (list_empty(&od->lost)) {
		refcount_inc(&od->ref);
		list_add_tail(&od->lost, &ib->od_lost);
		od->lost_seq = ib->od_head;
	}
	atomic64_inc(&ib->pin_overflows);
	if (pin) {
		od->pin_first = od->pin_end ? min(od->pin_first, first) : first;
		od->pin_end = max(od->pin_end, end);
	}
	if (!hold && !release)
		return;
	if (release)
		atomic64_inc(&ib->pin_releases);
	diff[first] += d;
	diff[end] -= d;
	od->act_first = od->act_end ? min(od->act_first, first) : first;
	od->act_end = max(od->act_end, end);
	od->act_release |= release;
}

/* From the event handler (atomic context): queued for the work item, or
 * coalesced with its MR. An event of a key no MR has (any more, or yet:
 * its registration is finishing) is queued if the ring has room, else
 * dropped (the MR is gone, or nobody could have been given its key yet).
 */
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
	struct rhinet_od *od;
	unsigned long flags;
	bool full, dropped = false;

	if (!ib->od_ring)
		return; /* the NIC has no on-demand MRs */
	xa_lock_irqsave(&ib->od_mrs, flags);
	od = xa_load(&ib->od_mrs, ev.key >> RHN_KEY_INDEX_SHIFT);
	if (od && od->key != ev.key)
		od = NULL;
	spin_lock(&ib->od_lock);
	full = ib->od_head - ib->od_tail >= RHINET_OD_RING;
	if (od && (full || !list_empty(&od->lost) ||
		   ib->od_ctx_queued[od->ctx] >= RHINET_OD_CTX_SHARE)) {
		rhinet_od_coalesce(ib, od, &ev);
	} else if (!full) {
		if (od) {
			ev.ctx = od->ctx;
			ib->od_ctx_queued[od->ctx]++;
		}
		ib->od_ring[ib->od_head++ % RHINET_OD_RING] = ev;
	} else {
		dropped = true;
	}
	spin_unlock(&ib->od_lock);
	xa_unlock_irqrestore(&ib->od_mrs, flags);
	if (dropped)
		ibdev_dbg(&ib->ibdev, "pin-down event %u for unknown MR %#x\n",
			  ev.type, ev.key);
	queue_work(system_unbound_wq, &ib->od_work);
}

/*
 * The process's mapping of part of the MR changes (munmap, mmap over it,
 * fork's write protection, exit, migration): the pinned pages there go
 * (rhinet_od_unpin) before the mm frees them; the next touch pins what
 * the process maps then. Called under the mm's locks: takes
 * notifier_lock alone.
 */
static bool rhinet_od_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct rhinet_od *od = container_of(mni, struct rhinet_od, notifier);
	unsigned long end = od->start + ((unsigned long)od->npages << PAGE_SHIFT);
	u32 first, last;

	if (!mmu_notifier_range_blockable(range))
		return false; /* the OOM reaper: it leaves this mm alone */
	first = (max(range->start, od->start) - od->start) >> PAGE_SHIFT;
	last = (min(range->end, end) - od->start + PAGE_SIZE - 1) >> PAGE_SHIFT;
	mutex_lock(&od->notifier_lock);
	mmu_interval_set_seq(mni, cur_seq);
	rhinet_od_unpin(od->ib, od, first, last, false, true);
	mutex_unlock(&od->notifier_lock);
	return true;
}

static const struct mmu_interval_notifier_ops rhinet_od_notifier_ops = {
	.invalidate = rhinet_od_invalidate,
};

/*
 * Charges an MR of @od->npages declared pages to its user; -ENOMEM beyond
 * max_on_demand_reg_pages (by default the host's RAM in pages).
 */
static int rhinet_od_user_charge(struct rhinet_ib *ib, struct rhinet_od *od)
{
	unsigned long limit = READ_ONCE(max_on_demand_reg_pages);
	struct rhinet_od_user *user;
	int ret = 0;

	if (!limit)
		limit = totalram_pages();
	mutex_lock(&ib->od_users_lock);
	user = xa_load(&ib->od_users, od->uid);
	if (!user) {
		user = kzalloc(sizeof(*user), GFP_KERNEL);
		ret = user ? xa_err(xa_store(&ib->od_users, od->uid, user,
					     GFP_KERNEL)) :
			     -ENOMEM;
		if (ret) {
			kfree(user);
			goto out;
		}
	}
	if (od->npages > limit || user->reg_pages > limit - od->npages) {
		ibdev_dbg(&ib->ibdev,
			  "user %u: %u pages on demand beyond %llu of %lu\n",
			  od->uid, od->npages, user->reg_pages, limit);
		ret = -ENOMEM;
		if (!user->reg_pages) {
			xa_erase(&ib->od_users, od->uid);
			kfree(user);
		}
		goto out;
	}
	user->reg_pages += od->npages;
	od->user = user;
out:
	mutex_unlock(&ib->od_users_lock);
	return ret;
}

static void rhinet_od_user_uncharge(struct rhinet_ib *ib, struct rhinet_od *od)
{
	struct rhinet_od_user *user = od->user;

	mutex_lock(&ib->od_users_lock);
	user->reg_pages -= od->npages;
	if (!user->reg_pages) {
		WARN_ON(atomic64_read(&user->pinned));
		xa_erase(&ib->od_users, od->uid);
		kfree(user);
	}
	mutex_unlock(&ib->od_users_lock);
	od->user = NULL;
}

/* The bookkeeping of an MR's pages. */
static void rhinet_od_free(struct rhinet_od *od)
{
	kvfree(od->pages);
	kvfree(od->holds);
	kvfree(od->diff[0]);
	kvfree(od->diff[1]);
	kvfree(od->batch);
	kvfree(od->batch_dma);
}

/*
 * Registers [start, start + length) as an on-demand MR addressed from
 * @iova (in the same place within a page), pinning nothing. Its tables
 * and bookkeeping are charged to the process's memory cgroup and to its
 * user's max_on_demand_reg_pages.
 */
int rhinet_od_reg(struct rhinet_ib *ib, struct rhinet_mr *mr,
		  struct rhinet_ucontext *uc, u64 start, u64 length, u64 iova,
		  int access, u32 pdn)
{
	const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_NOWARN;
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
	if (npages > U32_MAX - 1)
		return -EINVAL;
	od = kzalloc(sizeof(*od), GFP_KERNEL);
	if (!od)
		return -ENOMEM;
	od->uid = uc->uid;
	od->npages = npages;
	ret = rhinet_od_user_charge(ib, od);
	if (ret)
		goto err_od;
	levels = rhinet_vpt_build(ib, mem, PAGE_SIZE, npages);
	if (levels < 0) {
		ret = levels;
		goto err_user;
	}
	/* 28 bytes a page with the leaf entry, for the memory cgroup. */
	od->pages = kvcalloc(npages, sizeof(*od->pages), gfp);
	od->holds = kvcalloc(npages, sizeof(*od->holds), gfp);
	od->diff[0] = kvcalloc(npages + 1, sizeof(*od->diff[0]), gfp);
	od->diff[1] = kvcalloc(npages + 1, sizeof(*od->diff[1]), gfp);
	od->batch = kvcalloc(min_t(u64, npages, RHINET_OD_BATCH),
			     sizeof(*od->batch), gfp);
	od->batch_dma = kvcalloc(min_t(u64, npages, RHINET_OD_BATCH),
				 sizeof(*od->batch_dma), gfp);
	if (!od->pages || !od->holds || !od->diff[0] || !od->diff[1] ||
	    !od->batch || !od->batch_dma) {
		ibdev_dbg(&ib->ibdev, "MR of %llu pages on demand: no memory\n",
			  npages);
		ret = -ENOMEM;
		goto err_free;
	}
	refcount_set(&od->ref, 1);
	mutex_init(&od->lock);
	mutex_init(&od->notifier_lock);
	INIT_LIST_HEAD(&od->lost);
	od->writable = ib_access_writable(access);
	od->lock_cap = capable(CAP_IPC_LOCK);
	od->ctx = uc->ctx;
	od->start = start & PAGE_MASK;
	od->uc = uc;
	od->ib = ib;
	od->mem = mem;
	/* Before the NIC can ask for a page: the pin path reads its sequence. */
	ret = mmu_interval_notifier_insert(&od->notifier, current->mm,
					   od->start, (u64)npages << PAGE_SHIFT,
					   &rhinet_od_notifier_ops);
	if (ret)
		goto err_free;

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
	od->task = get_task_struct(current->group_leader);
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
		put_task_struct(od->task);
		mmdrop(od->mm);
		goto err_notifier;
	}
	mr->od = od;
	return 0;

err_notifier:
	mmu_interval_notifier_remove(&od->notifier);
err_free:
	rhinet_mem_release(ib, mem); /* the NIC MR, the tables */
	rhinet_od_free(od);
err_user:
	rhinet_od_user_uncharge(ib, od);
err_od:
	kfree(od);
	return ret;
}

/*
 * Waits for the work item and the notifier to be done with the MR,
 * destroys the NIC MR (its held requests fail), stops the notifier, then
 * unpins every page and frees the tables.
 */
int rhinet_od_dereg(struct rhinet_ib *ib, struct rhinet_mr *mr)
{
	struct rhinet_od *od = mr->od;
	u32 i, n = 0;
	int ret;

	/* The NIC MR goes between two invalidations, never in one. */
	mutex_lock(&od->lock);
	mutex_lock(&od->notifier_lock);
	ret = mr->mem.key ? rhinet_destroy_object(ib, mr->mem.ctx,
						  RHN_ADMIN_DESTROY_MR,
						  mr->mem.key) :
			    0;
	if (!ret) {
		mr->mem.key = 0;
		od->dead = true;
	}
	mutex_unlock(&od->notifier_lock);
	mutex_unlock(&od->lock);
	if (ret)
		return ret;
	/* The event handler finds it no more. */
	xa_cmpxchg_irq(&ib->od_mrs, od->key >> RHN_KEY_INDEX_SHIFT, od, NULL,
		       0);
	/* Waits for an invalidation that is running. */
	mmu_interval_notifier_remove(&od->notifier);
	for (i = 0; i < od->npages; i++) {
		if (!(i % RHINET_OD_BATCH))
			cond_resched();
		if (!od->pages[i])
			continue;
		rhinet_od_drop(ib, od, i, false);
		n++;
	}
	rhinet_od_uncharge(ib, od, n);
	rhinet_mem_release(ib, &mr->mem); /* the tables */
	rhinet_od_free(od);
	mmdrop(od->mm);
	put_task_struct(od->task);
	rhinet_od_user_uncharge(ib, od);
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
	mutex_init(&ib->od_users_lock);
	xa_init(&ib->od_users);
	if (!(rhinet_read32(ib->rdev, RHN_REG_CAPS) & RHN_CAP_PIN_ON_DEMAND))
		return 0;
	/* (rhinet_od_fini() frees what is allocated if the other is not) */
	ib->od_ctx_queued = kcalloc(ib->db_pages, sizeof(*ib->od_ctx_queued),
				    GFP_KERNEL);
	if (!ib->od_ctx_queued)
		return -ENOMEM;
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
	WARN_ON(!xa_empty(&ib->od_users));
	xa_destroy(&ib->od_mrs);
	xa_destroy(&ib->od_users);
	kvfree(ib->od_ring);
	ib->od_ring = NULL;
	kfree(ib->od_ctx_queued);
	ib->od_ctx_queued = NULL;
}
