/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * RHiNET-NG hardware contract: the firmware image a host hands a card.
 * Described in Documentation/hardware/firmware-image.md.
 *
 * An image is a 64-byte header, then the payload the card's core runs (for
 * the soft core, its ELF file). The host loads it as "rhinet/<board>.bin"
 * and passes it, chunk by chunk, through the admin queue; the card's shell
 * checks the whole image before it keeps or boots it. Every field is
 * little-endian.
 */
#ifndef RHINET_HW_FW_H
#define RHINET_HW_FW_H

#include "hw_common.h"

#define RHN_FW_MAGIC 0x57464852u /* "RHFW" */
#define RHN_FW_HEADER_VERSION 1
#define RHN_FW_HEADER_SIZE 64
/* The largest payload a card must take; a shell may take more. */
#define RHN_FW_MAX_IMAGE (4u << 20)

/* A firmware version: major << 16 | minor << 8 | patch. */
#define RHN_FW_VERSION(major, minor, patch) \
	(((major) << 16) | ((minor) << 8) | (patch))

struct rhn_fw_header {
	__le32 magic; /* RHN_FW_MAGIC */
	__le16 header_version; /* RHN_FW_HEADER_VERSION */
	__le16 header_size; /* RHN_FW_HEADER_SIZE */
	__le16 contract_major; /* the contract the firmware speaks */
	__le16 contract_minor;
	__le32 board_id; /* the board it was built for (BOARD_ID) */
	__le32 fw_version; /* RHN_FW_VERSION() */
	__le32 image_size; /* payload bytes after the header */
	__le32 image_crc32c; /* CRC32C of the payload */
	__le32 flags; /* 0: none defined */
	char name[28]; /* what it is, NUL-padded, for people */
	__le32 header_crc32c; /* CRC32C of the 60 bytes before it */
};
RHN_ASSERT_SIZE(struct rhn_fw_header, RHN_FW_HEADER_SIZE);
RHN_ASSERT_OFFSET(struct rhn_fw_header, image_size, 20);
RHN_ASSERT_OFFSET(struct rhn_fw_header, header_crc32c, 60);

/*
 * The shell's verdict on an image (the detail of a refused FW_COMMIT, and
 * what a shell that boots from flash logs): the first check that failed.
 */
enum rhn_fw_verdict {
	RHN_FW_OK = 0,
	RHN_FW_SHORT = 1, /* fewer bytes than a header, or than it announces */
	RHN_FW_BAD_MAGIC = 2,
	RHN_FW_BAD_HEADER = 3, /* header version, size, flags or its CRC */
	RHN_FW_WRONG_CONTRACT = 4, /* a contract major the card lacks */
	RHN_FW_WRONG_BOARD = 5, /* built for another board */
	RHN_FW_TOO_LARGE = 6, /* more than the shell can hold */
	RHN_FW_BAD_IMAGE = 7, /* the payload's CRC differs */
	RHN_FW_NO_STAGING = 8, /* this card takes no image from the host */
};

#endif /* RHINET_HW_FW_H */
