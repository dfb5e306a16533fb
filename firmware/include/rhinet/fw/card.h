/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card as the NIC firmware sees it: the blocks an FPGA shell provides
 * around the soft core that runs the engine (host DMA window, doorbell
 * FIFO, BAR0 register file, wire FIFOs, MSI-X, timer, on-card memory).
 * Documentation/hardware/soft-core.md describes each block; this header is
 * that description as plain C functions, so a card (or a simulator joined
 * by a socket) implements it once in C.
 *
 * The engine runs on it through firmware/card/ (CardBus and CardWire are
 * HostBus and Wire over these functions; CardRunner feeds the engine from
 * the FIFOs). One implementation exists: firmware/card/card_link.c, over
 * the socket protocol to the QEMU device (soft-core.md, "The socket
 * protocol"). tests/contract/card_check.c and card_check.cpp compile it as
 * C11 and C++ and check its layout.
 *
 * All calls are made from the one engine thread (the soft core). None
 * allocates. Bus addresses are host physical (or IOVA) addresses, 64 bits.
 */
#ifndef RHINET_FW_CARD_H
#define RHINET_FW_CARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rhinet/hw_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a host DMA access came to. */
enum rhn_card_status {
  RHN_CARD_OK = 0,
  /* A read completed with an error (unsupported request, completer abort,
   * completion timeout), or the address lies outside host memory. */
  RHN_CARD_BUS_ERROR = 1,
  /* The card's own address translation (ATS) or the host's IOMMU refused
   * the address, where the card can tell this apart from a bus error. */
  RHN_CARD_IOMMU_FAULT = 2,
  /* dma_store_u64 or a publish word not naturally aligned: nothing sent. */
  RHN_CARD_MISALIGNED = 3,
  /* Bus mastering is off (the driver has not enabled it, or reset). */
  RHN_CARD_NO_BUS_MASTER = 4,
};

/* ---- Start --------------------------------------------------------- */

/*
 * Brings the card's blocks up, before any other call: the doorbell block
 * learns how many pages (contexts) the firmware serves, the MSI-X block
 * how many vectors it raises. Over the socket link to the QEMU device this
 * is the HELLO exchange, after which rhn_card_get_identity answers.
 */
void rhn_card_start(uint32_t db_pages, uint32_t msix_vectors);

/* ---- Host DMA window -------------------------------------------------- */

/*
 * Reads len bytes of host memory into on-card memory at dst. Returns when
 * the data is there (the call waits for the read completions). A read is
 * ordered after every write issued before it.
 */
enum rhn_card_status rhn_card_dma_read(uint64_t bus_addr, void *dst,
                                       size_t len);
/*
 * Writes len bytes from on-card memory. Returns when the write is queued;
 * writes reach host memory in the order issued. The bytes may land in any
 * order within the call (and a byte may be stored twice), so software must
 * not take and clear words of it meanwhile. A posted write's failure at
 * the host is usually not reported back: RHN_CARD_OK means "sent".
 */
enum rhn_card_status rhn_card_dma_write(uint64_t bus_addr, const void *src,
                                        size_t len);
/*
 * An ordered write: src[0, publish_at) (an entry's body) becomes visible to
 * the host's CPUs before src[publish_at, len) (the word with the owner
 * bit). An aligned 8-byte tail is stored as by rhn_card_dma_store_u64.
 */
enum rhn_card_status rhn_card_dma_publish(uint64_t bus_addr, const void *src,
                                          size_t len, size_t publish_at);
/*
 * One naturally aligned little-endian 8-byte store, atomic to the host's
 * CPUs (one 8-byte memory write on the bus): a status word or an owner
 * word, which software may read and then clear.
 */
enum rhn_card_status rhn_card_dma_store_u64(uint64_t bus_addr, uint64_t value);

/* ---- Doorbell FIFO ---------------------------------------------------- */

/* Where a doorbell FIFO entry comes from. */
enum rhn_card_db_source {
  RHN_CARD_DB_PAGE = 0, /* a write to a doorbell page in BAR2 */
  RHN_CARD_DB_REG = 1,  /* a write to a BAR0 kick register */
  RHN_CARD_DB_LINK = 2, /* the wire's link changed; value: 1 up, 0 down */
  /* The trigger sums block (RHN_CARD_CAP_TRIGGER_SUMS) holds sums not
   * taken yet; page, offset and value 0. */
  RHN_CARD_DB_SUMS = 3,
};

/* rhn_card_doorbell.flags */
#define RHN_CARD_DB_F_INLINE 0x1u /* an inline WQE rides along */

/*
 * One entry of the doorbell FIFO. The doorbell block fills it from a
 * host write; inline window stores (RHN_DB_INLINE_WQE..+512 of a page) are
 * not entries, the block keeps them in the page's staging buffer.
 */
struct rhn_card_doorbell {
  uint32_t page;   /* BAR2 page (the context); 0 for BAR0 and link */
  uint32_t offset; /* within the page, or the BAR0 offset */
  uint64_t value;  /* as written, zero-extended; for LINK 1 or 0 */
  uint8_t size;    /* bytes written: 4 or 8 */
  uint8_t source;  /* enum rhn_card_db_source */
  uint8_t flags;   /* RHN_CARD_DB_F_* */
  uint8_t reserved0;
  /* With RHN_CARD_DB_F_INLINE: the buffer holding the staged WQE
   * (rhn_card_doorbell_inline). */
  uint16_t inline_slot;
  uint16_t reserved1;
};

/*
 * Takes the oldest entry into *out. False when the FIFO is empty. The
 * inline buffer of the entry stays valid until the next pop.
 */
bool rhn_card_doorbell_pop(struct rhn_card_doorbell *out);
/* The 512-byte WQE staged for an entry with RHN_CARD_DB_F_INLINE. */
const void *rhn_card_doorbell_inline(const struct rhn_card_doorbell *entry);
/*
 * True (and cleared) if entries were lost because the FIFO was full since
 * the last call. The firmware then looks at every queue, as if each had
 * been kicked, and counts RHN_CNT_KICK_OVERFLOWS. Writes that carry a
 * value of their own are not lost but kept aside when the FIFO is full
 * (CONTROL and ADMIN_SQ_TAIL: the latest; an EQ doorbell: the latest per
 * EQ, its arm kept; a CQ arm: one per page and CQ) and popped as ordinary
 * entries once the FIFO is empty (soft-core.md, "Overflow").
 */
bool rhn_card_doorbell_overflowed(void);

/* ---- BAR0 register file ----------------------------------------------- */

/*
 * BAR0 reads are answered by the register file without the core. The
 * firmware sets what reads return (read-only registers, CONTROL, STATUS)
 * and reads what the host stored (ADMIN_SQ_BASE, ADMIN_CQ_BASE,
 * ADMIN_LOG_DEPTH). offset is a BAR0 offset of a 32-bit register or of
 * the low half of a 64-bit one.
 */
void rhn_card_reg_set(uint32_t offset, uint64_t value);
uint64_t rhn_card_reg_get(uint32_t offset);
/*
 * Adds n to hardware counter index (RHN_CNT_*); BAR0 reads the counters
 * from the card's counter block, 64 bits at a time.
 */
void rhn_card_counter_add(unsigned int index, uint64_t n);
/* Every counter of the block back to zero (a device reset). */
void rhn_card_counters_clear(void);
/*
 * CQ cqn's producer index after a CQE was published, for the doorbell
 * block: it puts the index a CQ-arm doorbell finds into the entry (bits
 * 63:32 of its value), so the firmware knows which completions the arm
 * came after. On a card an array the block reads; never ahead of what
 * the host can see.
 */
void rhn_card_cq_produced(uint32_t cqn, uint32_t producer_index);

/* ---- Wire FIFOs ------------------------------------------------------- */

/*
 * Queues one frame (Documentation/hardware/wire.md) for the MAC. False when
 * it was dropped: transmit FIFO full or link down (the transport resends).
 * The frame is copied before the call returns.
 */
bool rhn_card_wire_tx(const void *frame, size_t len);
/*
 * The oldest received frame: its length, and *frame pointing at it in the
 * receive FIFO's memory. 0 when the FIFO is empty. Valid until
 * rhn_card_wire_rx_pop. The MAC block holds frames back while the FIFO is
 * full; it drops them only when its own buffer is full too.
 */
size_t rhn_card_wire_rx_peek(const uint8_t **frame);
void rhn_card_wire_rx_pop(void);
/*
 * Frames the MAC block dropped since the last call. The block does not
 * count them itself: the firmware does (RHN_CNT_RX_DROPS), so that they
 * show wherever the host reads its counters.
 */
uint32_t rhn_card_wire_rx_dropped(void);
bool rhn_card_link_up(void);

/* ---- Interrupts, time, waiting ---------------------------------------- */

/* Requests MSI-X vector; masking and pending bits are the MSI-X block's. */
void rhn_card_irq(uint16_t vector);
/* Monotonic nanoseconds since the card came out of reset. */
uint64_t rhn_card_now_ns(void);
/*
 * Sleeps until the doorbell or receive FIFO holds an entry, or until
 * rhn_card_now_ns() >= deadline_ns (UINT64_MAX: no deadline).
 */
void rhn_card_wait(uint64_t deadline_ns);

/* ---- Identity --------------------------------------------------------- */

/* What the card's identity block (straps, an EEPROM, or the hosting
 * device) says this NIC is. */
struct rhn_card_identity {
  uint16_t node_id; /* fabric node ID */
  uint8_t mac[6];   /* the net_device's address */
  uint64_t entropy; /* a fresh random value per power-on */
};
void rhn_card_get_identity(struct rhn_card_identity *out);

/* ---- The shell's firmware slot ---------------------------------------- */

/*
 * Firmware images the host hands the card (RHN_ADMIN_FW_DOWNLOAD and
 * FW_COMMIT, firmware-image.md) go to the shell, not to the core: the core
 * only carries the bytes. rhn_card_fw_stage puts @len bytes of an image at
 * @offset of the shell's staging buffer; rhn_card_fw_commit has the shell
 * check the first @length bytes staged and keep them (enum
 * rhn_fw_commit_flags). Both return the shell's enum rhn_fw_verdict
 * (RHN_FW_NO_STAGING: the card takes no image from the host).
 */
uint32_t rhn_card_fw_stage(uint32_t offset, const void *data, uint32_t len);
uint32_t rhn_card_fw_commit(uint32_t length, uint32_t flags);

/* ---- Optional blocks -------------------------------------------------- */

/*
 * Blocks a card may have beyond the ones above, a bit each in
 * rhn_card_caps(). The firmware leans on one only when its bit is set;
 * every card works with none (the socket link has the trigger sums only).
 */
enum rhn_card_cap {
  /* The MAC fills both CRCs of every frame rhn_card_wire_tx sends
   * (payload_crc, then hdr_crc over the headers, as hw_wire.h defines
   * them), and checks both on every frame it receives: a bad one is
   * counted (rhn_card_counter_add, RHN_CNT_CRC_ERRORS) and dropped before
   * it reaches the receive FIFO. The core then computes no CRC. */
  RHN_CARD_CAP_MAC_CRC = 1u << 0,
  /* The DMA block translates I/O virtual addresses itself: given a
   * region's VP table (rhn_card_dma_region), it walks the table for each
   * page it moves. The core still checks
   * keys, rights and bounds; it walks no table and keeps no TLB for
   * these accesses. */
  RHN_CARD_CAP_DMA_REGION = 1u << 1,
  /* The transmit assembler (rhn_card_tx_assemble): the core writes a
   * frame's headers into a send-packet slot and names where its payload
   * is (a region and an I/O virtual address, walked as region DMA walks
   * it); the block reads the payload into the slot behind the headers
   * and hands the frame to the MAC. Used with RHN_CARD_CAP_MAC_CRC and
   * RHN_CARD_CAP_DMA_REGION, not without. */
  RHN_CARD_CAP_TX_ASSEMBLER = 1u << 2,
  /* The MAC's receive FIFO keeps each frame 8-byte aligned in memory the
   * core reads as fast as its own, until rhn_card_wire_rx_pop: the
   * engine then works on the frames where the MAC wrote them instead of
   * copying each into a receive FIFO of its own. */
  RHN_CARD_CAP_RX_IN_PLACE = 1u << 3,
  /* The receive placement of plain WRITEs (rhn_card_rxw_*): a block
   * between the MAC and its receive FIFO that, for a frame the core
   * armed it for, checks the channel's serial and the target's key and
   * places the payload itself; the frame then reaches the core marked
   * placed (rhn_card_wire_rx_placed), for its bookkeeping only. Used
   * with the three blocks above, not without. */
  RHN_CARD_CAP_RX_WRITE = 1u << 4,
  /* The trigger sums block (rhn_card_trigger_*): the doorbell block adds
   * a TRIGGER doorbell to its counter's pending sum instead of queuing it,
   * so a full doorbell FIFO loses no add (triggered.md, "Pending sums"). */
  RHN_CARD_CAP_TRIGGER_SUMS = 1u << 5,
  /* The posted side of plain WRITEs (rhn_card_txw_*): a block between
   * the doorbell FIFO and the core that, for an SQ the core armed it
   * for, fetches each one-slot RC WRITE, checks it, builds its frame in a
   * send slot the core granted and hands the core a record of it. Used
   * with the MAC's CRCs, region DMA and the transmit assembler. */
  RHN_CARD_CAP_TX_WRITE = 1u << 6,
};
uint32_t rhn_card_caps(void);

/* ---- Optional: trigger sums (RHN_CARD_CAP_TRIGGER_SUMS) ---------------- */

/*
 * The block keeps, per trigger counter entry below its size, the pending
 * sum word of hw_queues.h (generation in bits 63:48, sum in 47:0) and the
 * owner context. An 8-byte store to RHN_DB_TRIGGER of page N whose
 * handle names an entry it keeps with the word's generation (not 0) and
 * owner N is added to the sum, and the first sum since the core last
 * asked for them (rhn_card_trigger_next) queues one RHN_CARD_DB_SUMS
 * entry (a full FIFO loses it as any entry: the core's rescan asks
 * anyway). Any other store there (another generation or context, an
 * entry beyond the block's size, a sum that would pass 48 bits) is
 * queued as a doorbell entry, as without the block: the core checks it
 * and counts a drop.
 */
/* Entry index takes adds for generation gen (0: none) of context owner;
 * returns the sum the entry held, which is gone from it. */
uint64_t rhn_card_trigger_set(uint32_t index, uint16_t gen, uint32_t owner);
/* Takes entry index's sum (its generation stays). */
uint64_t rhn_card_trigger_take(uint32_t index);
/* The next entry with a sum, or UINT32_MAX when none; the first call
 * after an RHN_CARD_DB_SUMS entry re-arms it. */
uint32_t rhn_card_trigger_next(void);

/* ---- Optional: region DMA (RHN_CARD_CAP_DMA_REGION) -------------------- */

/* A memory region's translation (Documentation/hardware/README.md):
 * the VP table at `table`, `levels` deep (1 or more), num_pages pages of
 * 1 << page_shift bytes from I/O virtual address iova on. */
struct rhn_card_region {
  uint64_t table;
  uint64_t iova;
  uint32_t num_pages;
  uint8_t levels;
  uint8_t page_shift;
  uint16_t reserved;
};

/*
 * Moves len bytes between on-card memory at buf and I/O virtual address
 * va of the region, page by page, each page translated through the
 * region's table by the block. write: to the host (as rhn_card_dma_write,
 * in order), else from it (as rhn_card_dma_read, returns when the data is
 * there). RHN_CARD_IOMMU_FAULT for a page outside the region or not valid
 * in its table, RHN_CARD_BUS_ERROR for a failed table or data access; the
 * pages before it moved. The block reads the table entries on every call
 * and keeps none: the host may change a table whenever the driver's rules
 * allow, and nothing tells the block.
 */
enum rhn_card_status rhn_card_dma_region(const struct rhn_card_region *region,
                                         uint64_t va, void *buf, size_t len,
                                         bool write);

/* ---- Optional: transmit assembler (RHN_CARD_CAP_TX_ASSEMBLER) --------- */

enum rhn_card_tx_flags {
  /* Send the frame once assembled; without it the frame is only
   * assembled in the slot (a frame the engine turns around to itself,
   * or the link is down: the slot keeps it for a resend). */
  RHN_CARD_TX_SEND = 1u << 0,
};

/*
 * Reads len bytes at I/O virtual address va of the region into card
 * memory at frame + hdr_len (as rhn_card_dma_region does), then with
 * RHN_CARD_TX_SEND queues frame[0, hdr_len + len) for the MAC as
 * rhn_card_wire_tx does, its CRCs filled on the way out. frame is a
 * send-packet slot of the core's: the assembled frame stays there,
 * byte for byte what was sent (with the CRC fields as the core left
 * them), so a retransmission is an rhn_card_wire_tx of the slot.
 * Returns when the payload is in the slot; a failed read returns the
 * status rhn_card_dma_region would and sends nothing.
 */
enum rhn_card_status rhn_card_tx_assemble(void *frame, uint32_t hdr_len,
                                          const struct rhn_card_region *region,
                                          uint64_t va, uint32_t len,
                                          uint32_t flags);

/* ---- Optional: receive placement of plain WRITEs (RHN_CARD_CAP_RX_WRITE) */

/*
 * What the block needs to place a plain RDMA WRITE for one QP, written by
 * the core from its own checks (Documentation/hardware/soft-core.md,
 * "Optional blocks"): the peer the QP is connected to, the one rkey the
 * block accepts for it and that key's region and bounds. The core writes
 * an entry only for a QP in RTR or RTS allowing remote writes, and a key
 * of a plain MR with its region in a table.
 */
struct rhn_card_rxw_target {
  struct rhn_card_region region; /* where the payload goes (region DMA) */
  uint64_t iova;                 /* the key's first I/O virtual address */
  uint64_t length;               /* and its length in bytes */
  uint32_t rkey;
  uint32_t peer_qpn; /* the connected QP, as the frames' src_qpn name it */
  uint16_t peer_node;
  uint16_t reserved0;
  uint32_t reserved1;
};

/* Sets (target) or clears (NULL) QP qpn's entry. Takes effect for the
 * next frame the MAC hands the block. */
void rhn_card_rxw_set_target(uint32_t qpn, const struct rhn_card_rxw_target *t);
/*
 * Arms the channel from node: frames of its session `session` with serial
 * `next_serial` may be placed; each placed one moves next_serial on. The
 * block disarms the channel itself when it hands a frame from node to the
 * core unplaced. Refused (false) while a frame from node waits in the
 * receive FIFO: the core arms again after it took that one.
 */
bool rhn_card_rxw_arm(uint16_t node, uint16_t session, uint32_t next_serial);
/* Disarms the channel from node; every channel and entry (NULL). */
void rhn_card_rxw_disarm(uint16_t node);
void rhn_card_rxw_flush(void);
/* Whether the frame rhn_card_wire_rx_peek returns was placed by the
 * block (its payload is in host memory, its channel moved on). */
bool rhn_card_wire_rx_placed(void);

/* ---- Optional: posted plain WRITEs (RHN_CARD_CAP_TX_WRITE) ------------ */

/*
 * A QP's transmit entry, written by the core from its own checks
 * (Documentation/hardware/soft-core.md, "Optional blocks"): where its SQ
 * ring and SQ record are, the next slot to fetch and how many slots past
 * it the ring holds before the oldest uncompleted one, the next MSN, the
 * header template (the words fast_post's template holds), the one lkey it
 * accepts with that key's region and bounds (the core arms only with a key
 * it checked for the QP's PD and local read), and two credits: in-flight
 * entries and send slots the QP may still take.
 */
struct rhn_card_txw_qp {
  struct rhn_card_region sq_ring; /* the ring, slot 0 at sq_ring_va */
  uint64_t sq_ring_va;
  struct rhn_card_region sq_record; /* struct rhn_queue_record at va */
  uint64_t sq_record_va;
  struct rhn_card_region key_region; /* the lkey's region */
  uint64_t key_iova;                 /* the key's first I/O VA */
  uint64_t key_length;               /* and its length */
  uint32_t lkey;
  uint32_t sq_fetch; /* next slot to fetch (free-running) */
  uint32_t sq_room;  /* slots from sq_fetch on the ring may hold */
  uint32_t msn_next; /* MSN of the next message */
  uint32_t inflight_credit;
  uint32_t slot_credit;
  /* The template's words as on the wire: magic/version/type, nodes,
   * the operation word's QP type, destination and source QPN. */
  uint32_t hdr[5];
  uint16_t peer_node;
  uint8_t sq_log; /* log2 of the ring's slots */
  uint8_t reserved;
  /* Read back only: the producer index the block last read from the SQ
   * record (the core's copy then skips its own read). */
  uint32_t sq_producer;
  uint32_t reserved1;
};

/* A channel's transmit entry: the next serial, its session, the packets
 * unacknowledged and the window, and the acknowledgement DATA frames
 * carry (ack_valid 0: none). */
struct rhn_card_txw_channel {
  uint32_t tx_next;
  uint32_t unacked;
  uint32_t window;
  uint32_t ack_seq;
  uint16_t session;
  uint16_t ack_session;
  uint8_t ack_valid;
  uint8_t reserved[3];
};

/* One WRITE the block sent (or failed to gather: failed 1, no frame). */
struct rhn_card_txw_record {
  uint32_t qpn;
  uint32_t wqe_slot; /* its SQ slot (free-running) */
  uint32_t serial;   /* the channel serial it took */
  uint32_t msn;
  uint32_t send_slot; /* the granted send slot holding its frame */
  uint32_t length;    /* payload bytes */
  uint32_t ack_seq;   /* the acknowledgement it carried */
  uint16_t ack_session;
  uint8_t ack_valid;
  uint8_t wqe_flags; /* RHN_WQE_F_SIGNALED, _SOLICITED, _INLINE */
  uint8_t failed;    /* the payload's DMA failed: nothing was sent */
  uint8_t reserved[7];
};

/* Arms (q) QP qpn's entry; NULL disarms it. Disarming returns once the
 * block's current WQE is finished and its record queued; *left (if not
 * NULL) gets the credits it did not use. */
void rhn_card_txw_set_qp(uint32_t qpn, const struct rhn_card_txw_qp *q,
                         struct rhn_card_txw_qp *left);
/* More in-flight entries for an armed QP (the core retired some). */
void rhn_card_txw_grant(uint32_t qpn, uint32_t inflight, uint32_t slots);
/* Arms (c) or disarms (NULL) the channel to node; updates of an armed
 * channel's unacked count and acknowledgement are arms with the new
 * values. */
void rhn_card_txw_set_channel(uint16_t node,
                              const struct rhn_card_txw_channel *c);
/* A free send slot (its number and its frame in card memory) for the
 * block; false when the slot FIFO is full. rhn_card_txw_slot_back takes
 * back one it did not use (false: none left). */
bool rhn_card_txw_slot_push(uint32_t slot, void *frame);
bool rhn_card_txw_slot_back(uint32_t *slot);
/* n free send slots in one access (a kick's grant, as record_pop takes a
 * run's records): how many the FIFO took, the first ones, in order. */
uint32_t rhn_card_txw_slot_push_n(const uint32_t *slot, void *const *frame,
                                  uint32_t n);
/* The oldest records of the sent FIFO, up to max, in one read of the
 * FIFO (a run's records at once): how many (0 when empty). */
uint32_t rhn_card_txw_record_pop(struct rhn_card_txw_record *out, uint32_t max);
/* Every QP entry disarmed (admin command, reset, channel reset). */
void rhn_card_txw_flush(void);
/* The kick of an armed QP handed to the block (the core popped its
 * doorbell and armed the QP for it): returns once the block took every
 * WQE the SQ record shows (true) or stopped at one it does not take and
 * disarmed the QP (false); the records of what it took are queued. */
bool rhn_card_txw_kick(uint32_t qpn);

/* What the hosting device sets beyond the identity (a card: straps or an
 * EEPROM); 0 in a field leaves the firmware's own value. */
struct rhn_card_settings {
  uint32_t rto_floor_us; /* the retransmission timeout's floor */
  uint32_t reserved;
};
void rhn_card_get_settings(struct rhn_card_settings *out);

/* ---- On-card memory --------------------------------------------------- */

/*
 * The region handed out as twin memory (RHN_ADMIN_ALLOC_TWIN), addressable
 * by the core and usable as the card side of every DMA call.
 */
void *rhn_card_twin_base(void);
uint64_t rhn_card_twin_bytes(void);

#ifdef __cplusplus
}
#endif

/* The entry's layout is fixed: a doorbell block writes it as 24 bytes. */
RHN_ASSERT_SIZE(struct rhn_card_doorbell, 24);
RHN_ASSERT_OFFSET(struct rhn_card_doorbell, value, 8);
RHN_ASSERT_OFFSET(struct rhn_card_doorbell, size, 16);
RHN_ASSERT_OFFSET(struct rhn_card_doorbell, inline_slot, 20);
RHN_ASSERT_SIZE(struct rhn_card_identity, 16);
RHN_ASSERT_OFFSET(struct rhn_card_identity, entropy, 8);
RHN_ASSERT_SIZE(struct rhn_card_settings, 8);
RHN_ASSERT_SIZE(struct rhn_card_region, 24);
RHN_ASSERT_SIZE(struct rhn_card_rxw_target, 56);
RHN_ASSERT_OFFSET(struct rhn_card_rxw_target, rkey, 40);
RHN_ASSERT_SIZE(struct rhn_card_txw_qp, 160);
RHN_ASSERT_OFFSET(struct rhn_card_txw_qp, lkey, 104);
RHN_ASSERT_SIZE(struct rhn_card_txw_channel, 24);
RHN_ASSERT_SIZE(struct rhn_card_txw_record, 40);

#endif /* RHINET_FW_CARD_H */
