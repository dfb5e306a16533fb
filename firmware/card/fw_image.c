// SPDX-License-Identifier: BSD-2-Clause
// The card shell's check of a firmware image: see fw_image.h.
#include "fw_image.h"

#include <string.h>

uint32_t rhn_fw_crc32c(const void *data, size_t len) {
  const uint8_t *p = data;
  uint32_t crc = ~0u;

  // Bit by bit: images are checked once per load, and a table would
  // cost the boot code 1 KiB.
  while (len--) {
    crc ^= *p++;
    for (int k = 0; k < 8; k++)
      crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
  }
  return ~crc;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

enum rhn_fw_verdict rhn_fw_check(const void *image, size_t len,
                                 uint32_t board_id, uint16_t contract_major,
                                 size_t capacity, struct rhn_fw_header *out) {
  const uint8_t *b = image;
  struct rhn_fw_header h;

  if (len > capacity) return RHN_FW_TOO_LARGE;
  if (len < RHN_FW_HEADER_SIZE) return RHN_FW_SHORT;
  memset(&h, 0, sizeof(h));
  h.magic = le32(b);
  h.header_version = le16(b + 4);
  h.header_size = le16(b + 6);
  h.contract_major = le16(b + 8);
  h.contract_minor = le16(b + 10);
  h.board_id = le32(b + 12);
  h.fw_version = le32(b + 16);
  h.image_size = le32(b + 20);
  h.image_crc32c = le32(b + 24);
  h.flags = le32(b + 28);
  memcpy(h.name, b + 32, sizeof(h.name));
  h.header_crc32c = le32(b + 60);
  if (h.magic != RHN_FW_MAGIC) return RHN_FW_BAD_MAGIC;
  if (h.header_version != RHN_FW_HEADER_VERSION ||
      h.header_size != RHN_FW_HEADER_SIZE || h.flags ||
      rhn_fw_crc32c(b, 60) != h.header_crc32c)
    return RHN_FW_BAD_HEADER;
  if (h.contract_major != contract_major) return RHN_FW_WRONG_CONTRACT;
  if (h.board_id != board_id) return RHN_FW_WRONG_BOARD;
  if (h.image_size > capacity - RHN_FW_HEADER_SIZE) return RHN_FW_TOO_LARGE;
  if (len != RHN_FW_HEADER_SIZE + (size_t)h.image_size) return RHN_FW_SHORT;
  if (rhn_fw_crc32c(b + RHN_FW_HEADER_SIZE, h.image_size) != h.image_crc32c)
    return RHN_FW_BAD_IMAGE;
  if (out) *out = h;
  return RHN_FW_OK;
}

const char *rhn_fw_verdict_name(uint32_t verdict) {
  static const char *const names[] = {
      [RHN_FW_OK] = "accepted",
      [RHN_FW_SHORT] = "shorter than it says",
      [RHN_FW_BAD_MAGIC] = "not a RHiNET firmware image",
      [RHN_FW_BAD_HEADER] = "bad header",
      [RHN_FW_WRONG_CONTRACT] = "speaks another contract",
      [RHN_FW_WRONG_BOARD] = "built for another board",
      [RHN_FW_TOO_LARGE] = "too large",
      [RHN_FW_BAD_IMAGE] = "bad payload CRC",
      [RHN_FW_NO_STAGING] = "this card takes no image",
  };

  return verdict < sizeof(names) / sizeof(names[0]) && names[verdict]
             ? names[verdict]
             : "unknown verdict";
}
