/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * Raw access to a RHiNET-NG NIC (rhinet.ko loaded with raw_access=1):
 * one character device per PCI function, /dev/rhinet_rawN, through which
 * root sees the card as a bring-up tool or the conformance suite's T2
 * target does: BAR0 registers, doorbell stores, DMA buffers in host
 * memory, MSI-X message counts. The driver does not bring the NIC up in
 * this mode. See Documentation/driver/raw-access.md.
 */
#ifndef RHINET_RAW_H
#define RHINET_RAW_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define RHINET_RAW_IOC_MAGIC 'R'

/* Most DMA buffer bytes one device holds at once (pages rounded up). */
#define RHINET_RAW_DMA_CAP (64ULL << 20)
/* Largest single host access to a buffer (RHINET_RAW_MEM_READ/WRITE). */
#define RHINET_RAW_MEM_MAX (1U << 20)

struct rhinet_raw_info {
	__u64 bar0_len;
	__u64 db_len; /* bytes of the doorbell BAR */
	__u32 msix_vectors; /* vectors counted (RHINET_RAW_MSIX) */
	__u32 reserved;
};

/* One register access: size 4 or 8, offset aligned to it, inside BAR0. */
struct rhinet_raw_reg {
	__u32 offset;
	__u32 size;
	__u64 value;
};

/* One store to doorbell page @page at @offset (aligned to @size). */
struct rhinet_raw_db {
	__u32 page;
	__u32 offset;
	__u32 size;
	__u32 reserved;
	__u64 value;
};

/*
 * A zeroed, physically contiguous buffer of @len bytes, aligned to @align
 * (a power of two, at most 4096); @bus is its bus address on return.
 */
struct rhinet_raw_alloc {
	__u64 len;
	__u64 align;
	__u64 bus;
};

/* The CPU's copy to or from [@bus, @bus + @len) of one buffer. */
struct rhinet_raw_mem {
	__u64 bus;
	__u64 len;
	__u64 data; /* user pointer */
};

/*
 * Messages per vector since the device was probed: @count entries of
 * __u64 at @data (in: room; out: vectors written).
 */
struct rhinet_raw_msix {
	__u32 count;
	__u32 reserved;
	__u64 data; /* user pointer */
};

#define RHINET_RAW_INFO _IOR(RHINET_RAW_IOC_MAGIC, 0, struct rhinet_raw_info)
#define RHINET_RAW_REG_READ \
	_IOWR(RHINET_RAW_IOC_MAGIC, 1, struct rhinet_raw_reg)
#define RHINET_RAW_REG_WRITE \
	_IOW(RHINET_RAW_IOC_MAGIC, 2, struct rhinet_raw_reg)
#define RHINET_RAW_DB_WRITE _IOW(RHINET_RAW_IOC_MAGIC, 3, struct rhinet_raw_db)
#define RHINET_RAW_DMA_ALLOC \
	_IOWR(RHINET_RAW_IOC_MAGIC, 4, struct rhinet_raw_alloc)
#define RHINET_RAW_MEM_WRITE \
	_IOW(RHINET_RAW_IOC_MAGIC, 5, struct rhinet_raw_mem)
#define RHINET_RAW_MEM_READ _IOW(RHINET_RAW_IOC_MAGIC, 6, struct rhinet_raw_mem)
#define RHINET_RAW_DMA_FREE_ALL _IO(RHINET_RAW_IOC_MAGIC, 7)
#define RHINET_RAW_MSIX _IOWR(RHINET_RAW_IOC_MAGIC, 8, struct rhinet_raw_msix)

#endif /* RHINET_RAW_H */
