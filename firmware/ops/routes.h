// SPDX-License-Identifier: BSD-2-Clause
// What the registry (ops/registry.cpp) indexes out of the family modules
// for the data path: which module receives a firmware-message kind, and
// the routes of frames outside the node channels. Built at power-on into
// the engine's state (no static constructors on the soft core: the
// modules are defined in their own folders, so the index cannot be a
// compile-time constant).
#pragma once

#include "core/freestanding.h"
#include "rhinet/fw/engine.h"
#include "transport/packet.h"

namespace rhinet::fw {

// A firmware-message kind a family receives (RHN_FW_*), and the largest
// payload it takes (more is malformed).
struct FwKind {
  uint32_t kind;
  uint32_t max_payload = RHN_FW_MSG_MAX;
};

// A frame outside the node channels: the packet type it arrives as, and
// whether this one is the family's (kMalformed: counted and dropped).
enum class FrameClaim : uint8_t { kNotMine, kMine, kMalformed };
struct FrameRoute {
  uint8_t type;  // RHN_PKT_*
  FrameClaim (*claim)(const Engine::Impl& m, const Packet& pkt);
  void (*receive)(Engine::Impl& m, const Packet& pkt);
  // Which frames of `type` claim() is asked about, so the node channels'
  // own frames pass without a call: those with one of the first `nops`
  // operation opcodes (none: any), and with to_groups only those not
  // addressed to this node.
  uint8_t nops = 0;
  uint8_t ops[2] = {};
  bool to_groups = false;
  bool considers(const Packet& pkt, uint16_t own_node) const {
    if (to_groups && pkt.hdr.dst_node == own_node) return false;
    if (nops == 0) return true;
    return pkt.op.opcode == ops[0] || (nops > 1 && pkt.op.opcode == ops[1]);
  }
};

// Which frames any route may consider, folded by packet type (types are
// below 32): the data path asks this before it walks the routes.
struct FrameFilter {
  uint32_t any_frame = 0;      // types with a route that considers every frame
  uint32_t to_groups = 0;      // types with a route for frames not to this node
  uint32_t by_op[32][8] = {};  // [type]: the operation opcodes routes name
  bool may_route(const Packet& pkt, uint16_t own_node) const {
    return may_route_fields(pkt.hdr.type, pkt.hdr.dst_node, pkt.op.opcode,
                            own_node);
  }
  // The same, from the fields (a frame read in place).
  bool may_route_fields(uint32_t t, uint16_t dst_node, uint8_t op,
                        uint16_t own_node) const {
    if (t >= 32) return false;
    const uint32_t bit = 1u << t;
    if (any_frame & bit) return true;
    if ((to_groups & bit) && dst_node != own_node) return true;
    return by_op[t][op >> 5] >> (op & 31) & 1;
  }
};

struct FamilyModule;

// The index itself (Impl::modules).
struct ModuleIndex {
  // Firmware-message kinds by value (kinds are small numbers).
  static constexpr uint32_t kKinds = 64;
  Array<const FamilyModule*, kKinds> fw_module{};
  Array<const FwKind*, kKinds> fw_kind{};
  // Every module's frame routes, in order.
  static constexpr uint32_t kMaxFrames = 8;
  Array<FrameRoute, kMaxFrames> frames{};
  uint32_t nframes = 0;
  FrameFilter filter;
};

}  // namespace rhinet::fw
