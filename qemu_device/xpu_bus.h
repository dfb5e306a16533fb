/*
 * xpu: what other devices of ours tell it about their DMA into its memory.
 *
 * The xpu's memory (BAR2) is a RAM region, so a peer's DMA reaches it
 * without passing through the xpu's code; a peer that moves data by itself
 * (rhinet's engine thread) reports each access here, and the xpu counts
 * those that hit its memory (XPU_CNT_IN_*). Safe from any thread.
 *
 * Copyright (c) 2026 RHiNET-NG developers
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RHINET_QEMU_XPU_BUS_H
#define RHINET_QEMU_XPU_BUS_H

#include "exec/memory.h"

/* Devices alive: while 0, a peer can skip xpu_note_peer_access. */
extern int xpu_devices;

void xpu_note_peer_access(MemoryRegion *mr, uint64_t len, bool is_write);

#endif
