/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The link between the QEMU device and a NIC core that runs elsewhere (the
 * firmware in qemu-system-riscv32 today; an RTL simulation or a card's
 * debug bridge later). It carries exactly the operations of card.h; see
 * "The socket protocol" in Documentation/hardware/soft-core.md.
 *
 * Both ends include this header: the firmware (freestanding, rv32) and the
 * device's host library (qemu_device/softcore/). Plain C11, little-endian,
 * every field naturally aligned.
 */
#ifndef RHINET_CARD_LINK_H
#define RHINET_CARD_LINK_H

#include <stdint.h>

#include "rhinet/fw/card.h"

/* Bumped on any change of a message's layout or meaning. */
#define RHN_LINK_VERSION 4

/*
 * Framing: every message is a header and a body. len counts the bytes that
 * follow it (type, tag and body), so a message takes 4 + len bytes.
 */
struct rhn_link_hdr {
  uint32_t len;
  uint16_t type; /* enum rhn_link_type */
  uint16_t tag;  /* pairs a request with its reply; 0 when none */
};
#define RHN_LINK_HDR_BYTES 8u

/*
 * The largest body either side accepts. DMA reads and writes longer than
 * RHN_LINK_DMA_CHUNK are split by the core into several messages.
 */
#define RHN_LINK_DMA_CHUNK 65536u
#define RHN_LINK_FRAME_MAX 9216u /* a full frame or a jumbo raw frame */
#define RHN_LINK_MAX_BODY (RHN_LINK_DMA_CHUNK + 16u)

enum rhn_link_type {
  RHN_LINK_HELLO = 1,            /* both: struct rhn_link_hello */
  RHN_LINK_DMA_READ = 2,         /* core: struct rhn_link_dma_read */
  RHN_LINK_DMA_READ_DATA = 3,    /* device: struct rhn_link_status, bytes */
  RHN_LINK_DMA_WRITE = 4,        /* core: struct rhn_link_dma, bytes */
  RHN_LINK_DMA_PUBLISH = 5,      /* core: struct rhn_link_dma, bytes */
  RHN_LINK_DMA_STORE64 = 6,      /* core: struct rhn_link_store64 */
  RHN_LINK_DMA_ERROR = 7,        /* device: struct rhn_link_status */
  RHN_LINK_DOORBELL = 8,         /* device: rhn_card_doorbell [+ 512 bytes] */
  RHN_LINK_DB_OVERFLOW = 9,      /* device: empty; doorbells were dropped */
  RHN_LINK_REG_SET = 10,         /* core: struct rhn_link_reg */
  RHN_LINK_REG_WRITE = 11,       /* device: struct rhn_link_reg */
  RHN_LINK_COUNTER_ADD = 12,     /* core: struct rhn_link_reg */
  RHN_LINK_FRAME_OUT = 13,       /* core: the frame */
  RHN_LINK_FRAME_IN = 14,        /* device: the frame */
  RHN_LINK_IRQ = 15,             /* core: struct rhn_link_irq */
  RHN_LINK_TIME = 16,            /* device: struct rhn_link_u64 (now, ns) */
  RHN_LINK_DEADLINE = 17,        /* core: struct rhn_link_u64 (deadline) */
  RHN_LINK_BYE = 18,             /* both: struct rhn_link_status (exit code) */
  RHN_LINK_CQ_PRODUCED = 19,     /* core: struct rhn_link_reg (cqn, index) */
  RHN_LINK_COUNTERS_CLEAR = 20,  /* core: empty; every counter back to 0 */
  RHN_LINK_RX_CREDIT = 21,       /* core: struct rhn_link_u64 (frames) */
  RHN_LINK_RX_DROPPED = 22,      /* device: struct rhn_link_u64 (frames) */
  RHN_LINK_FW_STAGE = 23,        /* core: struct rhn_link_fw, bytes */
  RHN_LINK_FW_COMMIT = 24,       /* core: struct rhn_link_fw */
  RHN_LINK_FW_VERDICT = 25,      /* device: struct rhn_link_status */
  RHN_LINK_DMA_REGION = 26,      /* core: struct rhn_link_region_dma [bytes] */
  RHN_LINK_TX_ASSEMBLE = 27,     /* core: struct rhn_link_assemble, headers */
  RHN_LINK_TXW_SET_QP = 28,      /* core: struct rhn_link_txw_qp */
  RHN_LINK_TXW_GRANT = 29,       /* core: struct rhn_link_txw_grant */
  RHN_LINK_TXW_SET_CHANNEL = 30, /* core: struct rhn_link_txw_channel */
  RHN_LINK_TXW_SLOT_PUSH = 31,   /* core: struct rhn_link_u64 (the slot) */
  RHN_LINK_TXW_SLOT_BACK = 32,   /* core: empty; the newest slot back */
  RHN_LINK_TXW_FLUSH = 33,       /* core: empty; every QP entry disarmed */
  RHN_LINK_TXW_KICK = 34,        /* core: struct rhn_link_u64 (the QPN) */
  RHN_LINK_TXW_RECORD = 35,      /* device: rhn_card_txw_record [+ frame] */
  RHN_LINK_TXW_KICKED = 36,      /* device: struct rhn_link_txw_kicked */
};
#define RHN_LINK_TYPE_MAX RHN_LINK_TXW_KICKED

/*
 * Receive flow control. The core's HELLO names its receive FIFO (rx_fifo):
 * the device never has more FRAME_IN messages on the way than that, less
 * the frames the core has not handed back yet. The core hands them back
 * with RX_CREDIT as it pops them (and for any FRAME_IN it took without
 * queueing), a quarter of its FIFO at a time. A core never keeps more than
 * that back, so when it sleeps (FIFO empty, link drained) the device has
 * room to send: no frame waits for a sleeping core. Frames beyond the
 * credits wait in the device (the MAC's buffer); when that is full, it
 * drops the newest and tells the core with RX_DROPPED, which the engine
 * counts as RX_DROPS (so the driver's counters show them).
 */

/*
 * CQs whose producer index the doorbell block samples into a CQ arm
 * (bits 63:32 of the DOORBELL's value). The core reports each CQ's index
 * with CQ_PRODUCED after the CQE's publish, so the device's copy never
 * runs ahead of what the host can see.
 */
#define RHN_LINK_MAX_CQS 65536u

/*
 * HELLO: the core sends its own first; the device answers with its own,
 * same tag. Versions must be equal. The device's answer is the card's
 * identity block (rhn_card_get_identity): the node ID and MAC address it
 * was given, and a fresh random value for this power-on.
 */
struct rhn_link_hello {
  uint32_t version;      /* RHN_LINK_VERSION */
  uint32_t node_id;      /* core: as built; device: the node it is */
  uint32_t db_pages;     /* core: doorbell pages it serves */
  uint32_t msix_vectors; /* core: vectors it may raise */
  uint32_t db_fifo;      /* core: doorbell FIFO entries */
  uint32_t rx_fifo;      /* core: receive FIFO frames */
  uint64_t twin_bytes;   /* core: twin memory */
  uint8_t mac[6];        /* device: the MAC address */
  uint16_t reserved;
  uint64_t entropy;      /* device: random, new at every power-on */
  uint32_t rto_floor_us; /* device: retransmission timeout floor; 0: own */
  uint32_t caps;         /* device: the optional blocks it plays */
};

/*
 * The optional blocks a device may play for the core (its HELLO's caps,
 * enum rhn_card_cap bits; the core's rhn_card_caps adds the trigger sums,
 * which it keeps itself). The MAC's CRCs: the device fills both CRCs of
 * every FRAME_OUT and of every frame the transmit block sends, and checks
 * them on every frame from the wire, counting a bad one in CRC_ERRORS and
 * dropping it before FRAME_IN. Region DMA: DMA_REGION. The transmit
 * assembler: TX_ASSEMBLE. The transmit block for plain WRITEs: TXW_*.
 */
#define RHN_LINK_DEVICE_CAPS                        \
  (RHN_CARD_CAP_MAC_CRC | RHN_CARD_CAP_DMA_REGION | \
   RHN_CARD_CAP_TX_ASSEMBLER | RHN_CARD_CAP_TX_WRITE)

/* DMA_READ: reply DMA_READ_DATA with the same tag. */
struct rhn_link_dma_read {
  uint64_t bus_addr;
  uint32_t len; /* <= RHN_LINK_DMA_CHUNK */
  uint32_t reserved;
};

/*
 * DMA_WRITE and DMA_PUBLISH: the bytes follow. publish_at (PUBLISH only,
 * 0 for WRITE) splits them into body and owner word.
 */
struct rhn_link_dma {
  uint64_t bus_addr;
  uint32_t publish_at;
  uint32_t reserved;
};

struct rhn_link_store64 {
  uint64_t bus_addr;
  uint64_t value;
};

/*
 * DMA_READ_DATA (the bytes follow when status is 0), DMA_ERROR (tag: the
 * failed request's) and BYE.
 */
struct rhn_link_status {
  uint32_t status; /* enum rhn_card_status; BYE: an exit code */
  uint32_t reserved;
};

/*
 * REG_SET and REG_WRITE (BAR0 offset, size 4 or 8), COUNTER_ADD (index in
 * offset), CQ_PRODUCED (the CQ's number in offset, its index in value).
 */
struct rhn_link_reg {
  uint32_t offset;
  uint32_t size;
  uint64_t value;
};

struct rhn_link_irq {
  uint16_t vector;
  uint16_t reserved0;
  uint32_t reserved1;
};

struct rhn_link_u64 {
  uint64_t value;
};

/*
 * The shell's firmware slot (card.h's rhn_card_fw_stage and
 * rhn_card_fw_commit). FW_STAGE: value is the offset into the staging
 * buffer and the bytes follow (at most RHN_LINK_DMA_CHUNK); FW_COMMIT:
 * value is the length, flags the enum rhn_fw_commit_flags. The device
 * answers each with FW_VERDICT, same tag, status an enum rhn_fw_verdict.
 */
struct rhn_link_fw {
  uint32_t value;
  uint32_t flags;
};

/*
 * DMA_REGION (rhn_card_dma_region): len bytes at I/O virtual address va of
 * the region, its table walked by the device. A read (write 0) is
 * answered with DMA_READ_DATA, same tag; a write carries its bytes and is
 * posted (a failure comes back as DMA_ERROR, as for DMA_WRITE).
 */
struct rhn_link_region_dma {
  struct rhn_card_region region;
  uint64_t va;
  uint32_t len; /* <= RHN_LINK_DMA_CHUNK */
  uint32_t write;
};

/*
 * TX_ASSEMBLE (rhn_card_tx_assemble): the frame's hdr_len header bytes
 * follow. The device reads len payload bytes through the region and, with
 * RHN_CARD_TX_SEND in flags, sends headers and payload as one frame (its
 * MAC fills the CRCs). It answers with DMA_READ_DATA, same tag: the
 * payload, which the core copies behind the headers in its slot (the
 * frame a retransmission sends again), or the status without bytes.
 */
struct rhn_link_assemble {
  struct rhn_card_region region;
  uint64_t va;
  uint32_t len; /* payload, <= RHN_LINK_FRAME_MAX - hdr_len */
  uint32_t flags;
};

/*
 * The transmit block for plain WRITEs (card.h's rhn_card_txw_*), played
 * by the device with firmware/card/tx_write_block.h's model. Every call
 * of the core is a posted message but the kick: TXW_KICK asks the block
 * to take the QP's doorbell; the device answers with one TXW_RECORD per
 * WRITE it took (the record, then the frame it sent, which the core
 * copies into the send slot named: the block takes slots in the order
 * pushed) and then TXW_KICKED with the same tag. The records go to the
 * core before their frames go to the wire, so an ACK of a frame always
 * follows its record on the link. The core answers set_qp's `left`, the
 * slot taken back and the records from its copies of what the block
 * holds (the block moves only within a kick, and TXW_KICKED carries the
 * QP's entry as the kick left it).
 */
struct rhn_link_txw_qp {
  uint32_t qpn;
  uint32_t armed; /* 0: disarm (q ignored) */
  struct rhn_card_txw_qp q;
};
struct rhn_link_txw_grant {
  uint32_t qpn;
  uint32_t inflight;
  uint32_t slots;
  uint32_t reserved;
};
struct rhn_link_txw_channel {
  uint16_t node;
  uint16_t armed; /* 0: disarm (c ignored) */
  uint32_t reserved;
  struct rhn_card_txw_channel c;
};
struct rhn_link_txw_kicked {
  uint32_t took_all; /* rhn_card_txw_kick's result */
  uint32_t armed;    /* the QP is still armed */
  struct rhn_card_txw_qp left;
};

/*
 * The transport inside qemu-system-riscv32 (soft-core.md explains the
 * choice): the message stream of each direction runs through a ring in the
 * core's RAM, which QEMU maps from a file the device maps too; the socket
 * (the virt machine's 16550 UART on a chardev socket) carries only
 * one-byte wake-ups. The area sits RHN_LINK_SHM_OFFSET into RAM (QEMU
 * enters the image at the start of RAM, so the start-up code goes there);
 * the rest of the firmware is linked above the area.
 */
#define RHN_LINK_SHM_OFFSET (64u * 1024u)
#define RHN_LINK_SHM_MAGIC 0x4b4e4c52u /* "RLNK" */
#define RHN_LINK_SHM_RING_BYTES (256u * 1024u)
#define RHN_LINK_SHM_AREA_BYTES (1024u * 1024u)
#define RHN_LINK_SHM_RING0 4096u /* device -> core */
#define RHN_LINK_SHM_RING1 (RHN_LINK_SHM_RING0 + RHN_LINK_SHM_RING_BYTES)

/*
 * One direction. head and tail count bytes since the start (they wrap at
 * 2^32; the ring size divides that). The producer writes whole messages
 * and then head; the consumer reads them and then tail. A side about to
 * sleep sets its flag and looks again; the other side, after it moved
 * head (or tail), sends a wake-up byte when it finds the flag set.
 */
struct rhn_link_ring {
  uint32_t head;              /* producer */
  uint32_t consumer_sleeping; /* consumer waits for head to move */
  uint32_t pad0[14];          /* head and tail on their own lines */
  uint32_t tail;              /* consumer */
  uint32_t producer_sleeping; /* producer waits for tail to move */
  uint32_t pad1[14];
};

struct rhn_link_shm {
  uint32_t magic;      /* written last by the device */
  uint32_t version;    /* RHN_LINK_VERSION */
  uint32_t ring_bytes; /* RHN_LINK_SHM_RING_BYTES */
  uint32_t closed;     /* the device has gone: the core stops */
  uint32_t pad[12];
  struct rhn_link_ring to_core;   /* data at RHN_LINK_SHM_RING0 */
  struct rhn_link_ring from_core; /* data at RHN_LINK_SHM_RING1 */
};

#endif /* RHINET_CARD_LINK_H */
