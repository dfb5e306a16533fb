/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The conformance agent's protocol (T2): the host target
 * (conformance/targets/guest_target.cc) sends one request per Target call
 * to the agent in the guest (conformance/agent/agent.c), which does it
 * with the ioctls of the driver's raw access
 * (include/uapi/rdma/rhinet-raw.h) and answers. Binary, in the byte order
 * both ends share (x86: little endian); C11 and C++ alike.
 *
 * A request is struct rca_req and `len` payload bytes; an answer is
 * struct rca_resp and `len` payload bytes. The agent sends one answer,
 * op RCA_HELLO, unasked when it starts.
 *
 * The channel: a virtio-net NIC of the guest whose other end is the
 * target (QEMU's stream netdev: each Ethernet frame behind a 4-byte
 * big-endian length, as on the fabric wire). Both directions are a byte
 * stream cut into Ethernet frames of type RCA_ETHERTYPE, each carrying a
 * 2-byte little-endian count and that many bytes of the stream (at most
 * RCA_FRAME_DATA). The QEMU we build has no virtio-serial; a NIC it has.
 */
#ifndef RHINET_CONFORM_AGENT_PROTO_H
#define RHINET_CONFORM_AGENT_PROTO_H

#include <stdint.h>

#define RCA_MAGIC 0x52434131u /* "RCA1" */
#define RCA_ETHERTYPE 0x88b5  /* IEEE 802 local experimental */
#define RCA_FRAME_DATA 1400
#define RCA_DEVICES 2 /* the raw devices the agent serves */
#define RCA_MAX_PAYLOAD (1u << 20)

enum rca_op {
  RCA_HELLO = 0,     /* agent -> host at start: value = devices opened */
  RCA_REG_READ = 1,  /* a = offset, size -> value */
  RCA_REG_WRITE = 2, /* a = offset, size, x = value */
  RCA_DB_WRITE = 3,  /* a = page, b = offset, size, x = value */
  RCA_DMA_ALLOC = 4, /* x = len, y = align -> value = bus (0: none) */
  RCA_MEM_WRITE = 5, /* x = bus, payload = bytes */
  RCA_MEM_READ = 6,  /* x = bus, y = len -> payload */
  /*
   * Every device: free its buffers, CONTROL.RESET and wait for the bit
   * to clear -> payload = each device's MSI-X counts (a vectors each).
   */
  RCA_FRESH = 7,
  /*
   * Every device: `a` counters from RHN_REG_COUNTERS, then `b` MSI-X
   * counts, 8 bytes each -> payload, device after device.
   */
  RCA_SNAPSHOT = 8,
  RCA_MSIX = 9, /* a = vectors -> payload: a counts */
};

struct rca_req {
  uint32_t magic;
  uint32_t len; /* payload bytes after this header */
  uint8_t op;
  uint8_t dev;  /* 0 .. RCA_DEVICES - 1 */
  uint8_t size; /* access size: 4 or 8 */
  uint8_t pad;
  uint32_t a;
  uint32_t b;
  uint32_t pad2;
  uint64_t x;
  uint64_t y;
};

struct rca_resp {
  uint32_t magic;
  uint32_t len; /* payload bytes after this header */
  int32_t err;  /* 0, or the errno of the failed call */
  uint32_t pad;
  uint64_t value;
};

#endif /* RHINET_CONFORM_AGENT_PROTO_H */
