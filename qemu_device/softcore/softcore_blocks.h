/*
 * RHiNET-NG: the card's optional blocks as the soft-core link's device
 * side plays them (SPDX-License-Identifier: BSD-2-Clause)
 *
 * The MAC's CRCs, region DMA, the transmit assembler and the transmit
 * block for plain WRITEs (card.h's RHN_CARD_CAP_* and link.h's
 * RHN_LINK_DEVICE_CAPS), built on the firmware's own pieces: the region
 * walk (dma_region_walk), the packet codec and the transmit block's
 * reference model (firmware/card/tx_write_block.h). rhinet_softcore.c
 * turns the core's messages into these calls. Plain C interface; the
 * state lives in memory the caller provides (rhn_scb_size bytes, zeroed).
 */
#ifndef RHINET_SOFTCORE_BLOCKS_H
#define RHINET_SOFTCORE_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "link.h"
#include "rhinet/fw/card.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RhnScBlocks RhnScBlocks;

/* Host memory as the device reaches it; enum rhn_card_status. */
typedef struct RhnScHost {
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, uint32_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                     uint32_t len);
    void *opaque;
} RhnScHost;

size_t rhn_scb_size(void);
RhnScBlocks *rhn_scb_init(void *mem, const RhnScHost *host);

/* Region DMA: len bytes at va of the region, its table walked here. */
int rhn_scb_region(RhnScBlocks *b, const struct rhn_card_region *region,
                   uint64_t va, void *buf, uint32_t len, bool write);

/* The MAC: both CRCs filled; a frame whose CRCs are wrong (well formed
 * otherwise), which the MAC drops and counts. */
void rhn_scb_fill_crcs(void *frame, uint32_t len);
bool rhn_scb_crc_bad(const void *frame, uint32_t len);

/* The transmit block (card.h's rhn_card_txw_*). slot_push is false for a
 * slot number beyond the card's send slots or a full FIFO, slot_back for
 * an empty one: a core that does either breaks the protocol. */
void rhn_scb_txw_set_qp(RhnScBlocks *b, uint32_t qpn,
                        const struct rhn_card_txw_qp *q);
void rhn_scb_txw_grant(RhnScBlocks *b, uint32_t qpn, uint32_t inflight,
                       uint32_t slots);
void rhn_scb_txw_set_channel(RhnScBlocks *b, uint16_t node,
                             const struct rhn_card_txw_channel *c);
bool rhn_scb_txw_slot_push(RhnScBlocks *b, uint32_t slot);
bool rhn_scb_txw_slot_back(RhnScBlocks *b);
void rhn_scb_txw_flush(RhnScBlocks *b);
/* The kick: what TXW_KICKED says. The frames wait in their slots, CRCs
 * filled, until rhn_scb_txw_record hands each out with its record. */
void rhn_scb_txw_kick(RhnScBlocks *b, uint32_t qpn,
                      struct rhn_link_txw_kicked *out);
/* The oldest record and its frame (len 0 for a failed one); false when
 * none is left. */
bool rhn_scb_txw_record(RhnScBlocks *b, struct rhn_card_txw_record *r,
                        const uint8_t **frame, uint32_t *len);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_SOFTCORE_BLOCKS_H */
