/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * xpu.ko's user interface: ioctls on /dev/xpuN, one character device per
 * xpu (the accelerator stand-in, Documentation/hardware/xpu.md). Described
 * in Documentation/driver/xpu.md.
 *
 * Each open file has memory of its own, a range of the device's memory
 * (BAR2) the driver allocates for it (XPU_IOC_MEM, or a default size on
 * first use). Every offset the file names is in that memory: mmap of
 * /dev/xpuN at offset 0 maps it, dma-bufs are exported of ranges of it, and
 * the file's lanes run programs in it and reach nothing else of BAR2. A
 * lane program is written there and run with XPU_IOC_LANE_RUN.
 *
 * Lanes and windows belong to the open file that claimed them, until it is
 * closed. The device enforces the windows: a lane reaches by DMA only the
 * bus ranges its file imported for it (XPU_IOC_IMPORT_DMABUF).
 * Reserved fields and unknown flags must be zero, else EINVAL.
 */
#ifndef XPU_ABI_USER_H
#define XPU_ABI_USER_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* xpu_info.flags */
/* BAR2 is published as p2p memory: dma-bufs of it can be exported */
#define XPU_INFO_P2PDMA (1u << 0)

/*
 * The file's memory (XPU_IOC_INFO allocates it at the default size if the
 * file has none yet; ENOSPC when the device has no room).
 */
struct xpu_info {
	__u64 mem_size; /* bytes of the file's memory */
	__u64 mem_bus_addr; /* its bus address */
	__u32 lanes;
	__u32 flags; /* XPU_INFO_* */
};

/* xpu_export.flags, beside O_CLOEXEC and O_RDWR */
/*
 * The buffer may move, as VRAM that must stay evictable does: importers
 * must follow a move (XPU_IOC_MOVE_DMABUF), and none may pin it
 * (EOPNOTSUPP, e.g. ibv_reg_dmabuf_mr). A kernel without
 * CONFIG_DMABUF_MOVE_NOTIFY pins every mapping, so none is let map it
 * there. Without the flag, a buffer an importer pinned does not move.
 */
#define XPU_EXPORT_MOVABLE (1u << 31)

/*
 * A dma-buf over [offset, offset + length) of the file's memory, both
 * page aligned; EINVAL for a range not inside it. flags: O_CLOEXEC and O_RDWR as dma_buf_fd takes them,
 * XPU_EXPORT_MOVABLE.
 * EOPNOTSUPP when the kernel cannot publish the memory (no
 * CONFIG_PCI_P2PDMA). An importer that cannot reach the memory by
 * peer-to-peer DMA is refused when it attaches, with EREMOTEIO.
 */
struct xpu_export {
	__u64 offset;
	__u64 length;
	__u32 flags;
	__s32 fd; /* out */
};

/* xpu_lane_run.flags */
/* wait until the lane stops, up to timeout_ms; then abort it, ETIMEDOUT */
#define XPU_RUN_WAIT (1u << 0)

/*
 * Runs lane `lane` from pc (an offset in the file's memory, EINVAL past
 * it); the lane reaches only that memory from now on (a command outside it
 * faults XPU_ERR_LOCAL). The lane
 * must be the file's (XPU_IOC_LANE_CLAIM); a free lane is claimed here.
 * EBUSY: another file's lane, or running. EINTR: the caller was killed
 * while waiting (the lane is aborted).
 */
struct xpu_lane_run {
	__u32 lane;
	__u32 flags; /* XPU_RUN_* */
	__u64 pc;
	__u32 timeout_ms; /* with XPU_RUN_WAIT; 0: 10 seconds */
	__u32 status; /* out: enum xpu_lane_status */
	__u32 error; /* out: enum xpu_lane_error */
	__u32 rsvd;
	__u64 executed; /* out: commands run */
};

/* The device's bus counters, indexed by enum xpu_counter. */
#define XPU_COUNTERS_MAX 16
struct xpu_counters {
	__u64 count[XPU_COUNTERS_MAX]; /* out; past the device's last: 0 */
};

/*
 * Another device's memory for the lanes: the dma-buf fd is attached and
 * mapped for the xpu (as a revocable peer-to-peer importer), a window of
 * the device is set to the mapping, and the lanes in `lanes` (claimed
 * here, EBUSY if another file's) may reach it from now on. The mapping
 * must be one contiguous bus range. The window is the file's until it is
 * closed; if the exporter revokes the dma-buf (its owner went away), the
 * window closes and the lanes fault WINDOW there. Errors: EBADF, EINVAL
 * (reserved fields, no lanes, a lane past the device's, a mapping that is
 * not contiguous), ENOSPC (every window taken), the exporter's errno
 * (EOPNOTSUPP, EREMOTEIO, ENODEV for a revoked dma-buf).
 */
struct xpu_import {
	__s32 fd; /* the dma-buf */
	__u32 lanes; /* bit L: lane L reaches it */
	__u64 rsvd; /* 0 */
	__u64 bus_addr; /* out: the bus address a lane uses */
	__u64 size; /* out: bytes */
	__u32 window; /* out: the window's number */
	__u32 rsvd2; /* 0 */
};

/*
 * XPU_IOC_LANE_CLAIM: claims the lanes in the mask for this file; EBUSY if
 * one is another's. XPU_IOC_LANE_RELEASE: gives them back before close
 * (each aborted, reaching no window, free for any file); all must be this
 * file's: EBUSY for another's, ENOENT for a free one, nothing released.
 */
struct xpu_lane_claim {
	__u32 lanes;
	__u32 rsvd; /* 0 */
};

/*
 * Moves the dma-buf fd (one of this device's exports), as an eviction
 * would: its importers are told (move_notify) under its reservation lock
 * and must map it again. EBUSY while an importer has it pinned; EINVAL
 * for a dma-buf that is not this device's or a nonzero rsvd.
 */
struct xpu_move {
	__s32 fd;
	__u32 rsvd; /* 0 */
};

/*
 * Gives back a window of this file's (xpu_import.window) before close:
 * the file's lanes no longer reach it, the dma-buf is unmapped and
 * detached, and the window is free. EINVAL for a number past the windows
 * or a nonzero rsvd, ENOENT for a window no file holds, EBUSY for
 * another file's.
 */
struct xpu_unimport {
	__u32 window;
	__u32 rsvd; /* 0 */
};

/*
 * The file's memory, allocated once: size is what the file asks for
 * (rounded up to mem_granule; 0: the default, XPU_MEM_DEFAULT or the
 * share if smaller). A file that has memory already gets it described
 * when size is 0 or its size, EEXIST otherwise. EDQUOT: more than the
 * share one file may hold (share, a quarter of BAR2), or more than the
 * calling user's files may hold together (xpu.ko's user_mem_percent of
 * BAR2, half by default); ENOSPC: no free
 * range that large. EINVAL: reserved fields. The memory is freed when the
 * file is closed and every dma-buf exported of it is released.
 */
#define XPU_MEM_DEFAULT (8ull << 20)
struct xpu_mem {
	__u64 size; /* in: bytes wanted, 0: the default; out: the file's */
	__u64 offset; /* out: where it lies in BAR2 */
	__u64 bus_addr; /* out: its bus address */
	__u64 share; /* out: the most one file may hold */
	__u32 granule; /* out: sizes are multiples of it */
	__u32 rsvd; /* 0 */
};

#define XPU_IOC_MAGIC 'X'
#define XPU_IOC_INFO _IOR(XPU_IOC_MAGIC, 0, struct xpu_info)
#define XPU_IOC_EXPORT_DMABUF _IOWR(XPU_IOC_MAGIC, 1, struct xpu_export)
#define XPU_IOC_LANE_RUN _IOWR(XPU_IOC_MAGIC, 2, struct xpu_lane_run)
#define XPU_IOC_COUNTERS _IOR(XPU_IOC_MAGIC, 3, struct xpu_counters)
#define XPU_IOC_CLEAR_COUNTERS _IO(XPU_IOC_MAGIC, 4)
#define XPU_IOC_IMPORT_DMABUF _IOWR(XPU_IOC_MAGIC, 5, struct xpu_import)
#define XPU_IOC_LANE_CLAIM _IOW(XPU_IOC_MAGIC, 6, struct xpu_lane_claim)
#define XPU_IOC_MOVE_DMABUF _IOW(XPU_IOC_MAGIC, 7, struct xpu_move)
#define XPU_IOC_UNIMPORT_DMABUF _IOW(XPU_IOC_MAGIC, 8, struct xpu_unimport)
#define XPU_IOC_LANE_RELEASE _IOW(XPU_IOC_MAGIC, 9, struct xpu_lane_claim)
#define XPU_IOC_MEM _IOWR(XPU_IOC_MAGIC, 10, struct xpu_mem)

#endif /* XPU_ABI_USER_H */
