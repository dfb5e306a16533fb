/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card shell's check of a firmware image (include/hw/rhinet/hw_fw.h)
 * before it keeps or boots one: what the QEMU device, the conformance
 * targets and a card's boot code share. Plain C, no library.
 */
#ifndef RHINET_CARD_FW_IMAGE_H
#define RHINET_CARD_FW_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "rhinet/hw_fw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CRC32C (Castagnoli, reflected, ~0 in and out) of @len bytes. */
uint32_t rhn_fw_crc32c(const void *data, size_t len);

/*
 * Checks @len bytes of @image for a card of @board_id that speaks the
 * contract major @contract_major and holds at most @capacity bytes; on
 * RHN_FW_OK, *@out (if not NULL) is the header in host byte order.
 */
enum rhn_fw_verdict rhn_fw_check(const void *image, size_t len,
                                 uint32_t board_id, uint16_t contract_major,
                                 size_t capacity, struct rhn_fw_header *out);

/* A short name for a verdict ("bad payload CRC"), for logs. */
const char *rhn_fw_verdict_name(uint32_t verdict);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_CARD_FW_IMAGE_H */
