/* SPDX-License-Identifier: BSD-2-Clause */
/* The card shell's firmware slot (fw_shell.h). */
#include "fw_shell.h"

#include <string.h>

#include "fw_image.h"
#include "rhinet/hw_admin.h"
#include "rhinet/hw_regs.h"

void rhn_fw_shell_init(struct rhn_fw_shell *sh, uint32_t board_id,
                       uint64_t serial, uint32_t flash_version) {
  sh->board_id = board_id;
  sh->serial = serial;
  sh->state = RHN_FW_STATE_BOOTING;
  sh->host_loaded = false;
  sh->has_pending = false;
  sh->running_version = flash_version;
  sh->stored_version = flash_version;
  sh->builtin_version = flash_version;
  sh->pending_len = 0;
  sh->running_len = 0;
  sh->flash_len = 0;
}

static bool takes_images(const struct rhn_fw_shell *sh) {
  return sh->staging && sh->pending && sh->running && sh->flash;
}

enum rhn_fw_verdict rhn_fw_shell_stage(struct rhn_fw_shell *sh, uint32_t offset,
                                       const void *data, size_t len) {
  if (!takes_images(sh)) return RHN_FW_NO_STAGING;
  if (offset > RHN_FW_SHELL_CAPACITY || len > RHN_FW_SHELL_CAPACITY - offset)
    return RHN_FW_TOO_LARGE;
  memcpy(sh->staging + offset, data, len);
  return RHN_FW_OK;
}

enum rhn_fw_verdict rhn_fw_shell_commit(struct rhn_fw_shell *sh,
                                        uint32_t length, uint32_t flags) {
  struct rhn_fw_header h;
  enum rhn_fw_verdict v;

  if (!takes_images(sh)) return RHN_FW_NO_STAGING;
  v = rhn_fw_check(sh->staging, length, sh->board_id, RHN_VERSION_MAJOR,
                   RHN_FW_SHELL_CAPACITY, &h);
  if (v != RHN_FW_OK) return v;
  /* The image proper: a length beyond it is the host's padding. */
  length = RHN_FW_HEADER_SIZE + h.image_size;
  if (flags & RHN_FW_COMMIT_STORE) {
    memcpy(sh->flash, sh->staging, length);
    sh->flash_len = length;
    sh->stored_version = h.fw_version;
  }
  if (flags & RHN_FW_COMMIT_ACTIVATE) {
    memcpy(sh->pending, sh->staging, length);
    sh->pending_len = length;
    sh->has_pending = true;
  }
  return RHN_FW_OK;
}

static uint32_t version_of(const uint8_t *image) {
  struct rhn_fw_header h;
  memcpy(&h, image, sizeof(h));
  return h.fw_version;
}

enum rhn_fw_boot rhn_fw_shell_reset(struct rhn_fw_shell *sh) {
  enum rhn_fw_boot boot = RHN_FW_BOOT_SAME;

  if (sh->has_pending) {
    /* The committed image becomes the one in the core's RAM. */
    uint8_t *t = sh->running;
    sh->running = sh->pending;
    sh->pending = t;
    sh->running_len = sh->pending_len;
    sh->running_version = version_of(sh->running);
    sh->host_loaded = true;
    sh->has_pending = false;
    boot = RHN_FW_BOOT_HOST;
  } else if (sh->state == RHN_FW_STATE_CRASHED) {
    /* A crashed image is not run again: the card falls back on flash. */
    if (sh->flash_len) memcpy(sh->running, sh->flash, sh->flash_len);
    sh->running_len = sh->flash_len;
    sh->running_version = sh->stored_version;
    sh->host_loaded = false;
    boot = RHN_FW_BOOT_FLASH;
  }
  sh->state = RHN_FW_STATE_BOOTING;
  return boot;
}

const uint8_t *rhn_fw_shell_payload(const struct rhn_fw_shell *sh,
                                    size_t *len) {
  if (!sh->running_len) return NULL;
  *len = sh->running_len - RHN_FW_HEADER_SIZE;
  return sh->running + RHN_FW_HEADER_SIZE;
}

void rhn_fw_shell_set_state(struct rhn_fw_shell *sh,
                            enum rhn_fw_run_state state) {
  sh->state = state;
}

bool rhn_fw_shell_reg_read(const struct rhn_fw_shell *sh, uint32_t offset,
                           unsigned int size, uint64_t *value) {
  switch (offset) {
    case RHN_REG_BOARD_ID:
      *value = sh->board_id;
      return true;
    case RHN_REG_FW_STATE:
      *value = (sh->state & RHN_FW_STATE_STATE_MASK) |
               (sh->host_loaded ? RHN_FW_STATE_HOST_LOADED : 0) |
               (sh->has_pending ? RHN_FW_STATE_PENDING : 0);
      return true;
    case RHN_REG_SERIAL:
      *value = size == 8 ? sh->serial : (uint32_t)sh->serial;
      return true;
    case RHN_REG_SERIAL + 4:
      *value = sh->serial >> 32;
      return true;
    case RHN_REG_FW_RUNNING:
      *value = sh->running_version;
      return true;
    case RHN_REG_FW_STORED:
      *value = sh->stored_version;
      return true;
    default:
      return false;
  }
}
