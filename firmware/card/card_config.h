// SPDX-License-Identifier: BSD-2-Clause
// The one configuration the soft-core firmware is built with: every table
// of the engine is sized from it at power-on and placed in kCardTableBytes
// of on-card RAM (a .bss array of the image). tests/unit/test_card.cc
// checks that it fits and prints what it takes.
#pragma once

#include "rhinet/fw/engine.h"

namespace rhinet::fw::card {

// On-card RAM for the engine's state and tables, twin memory included.
constexpr size_t kCardTableBytes = 24u << 20;

// Smaller than a host's defaults: a bring-up card serves a rack, not a
// data centre (node IDs below max_nodes), and its RAM is block RAM plus
// a little DRAM.
constexpr EngineConfig card_config() {
  EngineConfig c;
  c.db_pages = 64;
  c.max_pds = 256;
  c.max_mrs = 1024;
  c.max_cqs = 256;
  c.max_qps = 256;
  c.max_srqs = 64;
  c.max_eqs = 16;
  c.max_areas = 512;
  c.max_nodes = 256;
  c.msix_vectors = 32;
  c.tlb_entries = 256;
  c.send_packet_slots = 512;
  c.rx_contexts = 128;
  c.rx_fifo_frames = 64;
  c.kick_fifo_entries = 256;
  c.max_inflight_per_qp = 32;
  c.max_rd_atomic = 32;
  c.responder_reads = 128;
  c.responder_bitmaps = 8;
  c.fw_messages = 128;
  c.twin_bytes = 4u << 20;
  c.max_twins = 64;
  return c;
}

}  // namespace rhinet::fw::card
