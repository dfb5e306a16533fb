/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The card shell's firmware slot: what a card's shell (not its core) does
 * with firmware images (Documentation/hardware/firmware-image.md). It
 * takes the bytes the core hands over (rhn_card_fw_stage), checks and
 * keeps an image (rhn_card_fw_commit), answers the shell's registers
 * (BOARD_ID, FW_STATE, SERIAL, FW_RUNNING, FW_STORED) and decides at each
 * reset which image the core boots. The QEMU device and the conformance
 * suite's targets share it; a card's shell is RTL that does the same.
 * Plain C, no allocation: the owner gives the buffers.
 */
#ifndef RHINET_CARD_FW_SHELL_H
#define RHINET_CARD_FW_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rhinet/hw_fw.h"
#include "rhinet/hw_regs.h" /* enum rhn_fw_run_state (FW_STATE.STATE) */

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes a shell holds per buffer: a header and the largest payload. */
#define RHN_FW_SHELL_CAPACITY (RHN_FW_HEADER_SIZE + RHN_FW_MAX_IMAGE)

/* What the core runs after a reset (rhn_fw_shell_reset). */
enum rhn_fw_boot {
  RHN_FW_BOOT_SAME = 0,  /* the image it ran before, again */
  RHN_FW_BOOT_HOST = 1,  /* the image the host committed with ACTIVATE */
  RHN_FW_BOOT_FLASH = 2, /* the image in flash (after a crash) */
};

struct rhn_fw_shell {
  /* Set by the owner before rhn_fw_shell_init. */
  uint32_t board_id;
  uint64_t serial;
  /*
   * Four buffers of RHN_FW_SHELL_CAPACITY bytes each (their pages are
   * only touched by images), or all NULL: the card takes no image from
   * the host (RHN_FW_NO_STAGING).
   */
  uint8_t *staging; /* what FW_DOWNLOAD wrote */
  uint8_t *pending; /* committed with ACTIVATE, booted at the next reset */
  uint8_t *running; /* the image the core booted, unless built in */
  uint8_t *flash;   /* committed with STORE */

  /* The shell's state (rhn_fw_shell_init sets it). */
  uint32_t state; /* enum rhn_fw_run_state */
  bool host_loaded;
  bool has_pending;
  uint32_t running_version; /* FW_RUNNING */
  uint32_t stored_version;  /* FW_STORED */
  uint32_t builtin_version; /* the card's own image, in flash at first */
  uint32_t pending_len;     /* bytes, header included */
  uint32_t running_len;     /* 0: the built-in image runs */
  uint32_t flash_len;       /* 0: flash holds the built-in image */
};

/*
 * Power-on: the image in flash (@flash_version; the card's built-in
 * firmware until something is stored) runs; nothing is staged.
 */
void rhn_fw_shell_init(struct rhn_fw_shell *sh, uint32_t board_id,
                       uint64_t serial, uint32_t flash_version);

/* Bytes of an image into the staging buffer. */
enum rhn_fw_verdict rhn_fw_shell_stage(struct rhn_fw_shell *sh, uint32_t offset,
                                       const void *data, size_t len);

/*
 * Checks the first @length bytes staged (rhn_fw_check) and keeps them:
 * RHN_FW_COMMIT_STORE into flash (FW_STORED), RHN_FW_COMMIT_ACTIVATE for
 * the next reset (FW_STATE.PENDING). Nothing changes on a refusal.
 */
enum rhn_fw_verdict rhn_fw_shell_commit(struct rhn_fw_shell *sh,
                                        uint32_t length, uint32_t flags);

/*
 * A shell register's value: true if @offset is one (BOARD_ID, FW_STATE,
 * SERIAL and its upper half, FW_RUNNING, FW_STORED).
 */
bool rhn_fw_shell_reg_read(const struct rhn_fw_shell *sh, uint32_t offset,
                           unsigned int size, uint64_t *value);

/*
 * A reset (CONTROL.RESET, a function reset, a machine reset): which image
 * the core starts with. The pending image if there is one; after a crash
 * the flash image; else the same. FW_STATE.STATE becomes BOOTING.
 */
enum rhn_fw_boot rhn_fw_shell_reset(struct rhn_fw_shell *sh);

/*
 * The payload (after the header) of the image the core runs now, or NULL
 * when that is the card's built-in image (nothing was loaded or stored).
 */
const uint8_t *rhn_fw_shell_payload(const struct rhn_fw_shell *sh, size_t *len);

/* The core came up (RUNNING) or died (CRASHED). */
void rhn_fw_shell_set_state(struct rhn_fw_shell *sh,
                            enum rhn_fw_run_state state);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_CARD_FW_SHELL_H */
