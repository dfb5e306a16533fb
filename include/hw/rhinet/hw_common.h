/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: common types.
 *
 * Every structure in include/hw/rhinet/ is little-endian with naturally
 * aligned fields and no implicit padding, except the tag-matching headers
 * an application puts at the start of a message (struct rhn_tmh, struct
 * rhn_rvh: big-endian, as ibverbs' <infiniband/tm_types.h> has them). The same headers are compiled by the
 * NIC engine (C++20), the QEMU device (C), the Linux driver (kernel C) and the
 * rdma-core provider, so they only use fixed-width integer types and compile
 * unchanged as C11 and C++.
 */
#ifndef RHINET_HW_COMMON_H
#define RHINET_HW_COMMON_H

#if defined(__KERNEL__) || defined(__linux__)
#include <linux/types.h>
#else
/* Bare-metal builds (FPGA soft core): provide the Linux type names. */
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
#endif

#ifdef __cplusplus
#define RHN_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define RHN_OFFSETOF(type, member) __builtin_offsetof(type, member)
#else
#define RHN_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define RHN_OFFSETOF(type, member) __builtin_offsetof(type, member)
#endif

/* Guard a structure's size and one field's offset in one line. */
#define RHN_ASSERT_SIZE(type, size) \
	RHN_STATIC_ASSERT(sizeof(type) == (size), #type " size")
#define RHN_ASSERT_OFFSET(type, member, off)                   \
	RHN_STATIC_ASSERT(RHN_OFFSETOF(type, member) == (off), \
			  #type "." #member " offset")

#endif /* RHINET_HW_COMMON_H */
