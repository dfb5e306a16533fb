/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's own firmware version (FW_RUNNING of a card that runs the
 * engine built from this tree, and the version its image is packed with).
 * Raised with every change the host can see.
 */
#ifndef RHINET_FW_VERSION_H
#define RHINET_FW_VERSION_H

#include "rhinet/hw_fw.h"

#define RHN_ENGINE_FW_MAJOR 1
#define RHN_ENGINE_FW_MINOR 1
#define RHN_ENGINE_FW_PATCH 0
#define RHN_ENGINE_FW_VERSION \
  RHN_FW_VERSION(RHN_ENGINE_FW_MAJOR, RHN_ENGINE_FW_MINOR, RHN_ENGINE_FW_PATCH)

#endif /* RHINET_FW_VERSION_H */
