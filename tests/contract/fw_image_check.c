/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card shell's firmware image check (firmware/card/fw_image.c) from
 * the command line, for tests/contract/fw_image.sh:
 *   fw_image_check IMAGE BOARD_ID CONTRACT_MAJOR CAPACITY
 *     prints the verdict's number and name; exits with the number
 *   fw_image_check --crc TEXT
 *     prints the CRC32C of TEXT's bytes
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw_image.h"

int main(int argc, char **argv) {
  static unsigned char buf[RHN_FW_MAX_IMAGE + 4096];
  struct rhn_fw_header h;
  enum rhn_fw_verdict v;
  size_t len;
  FILE *f;

  if (argc == 3 && !strcmp(argv[1], "--crc")) {
    printf("0x%08x\n", rhn_fw_crc32c(argv[2], strlen(argv[2])));
    return 0;
  }
  if (argc != 5) {
    fprintf(stderr, "usage: fw_image_check IMAGE BOARD CONTRACT CAPACITY\n");
    return 100;
  }
  f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 100;
  }
  len = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  v = rhn_fw_check(buf, len, (uint32_t)strtoul(argv[2], NULL, 0),
                   (uint16_t)strtoul(argv[3], NULL, 0),
                   (size_t)strtoul(argv[4], NULL, 0), &h);
  printf("%u %s", v, rhn_fw_verdict_name(v));
  if (v == RHN_FW_OK)
    printf(" version 0x%06x board %u %u bytes", h.fw_version, h.board_id,
           h.image_size);
  printf("\n");
  return (int)v;
}
