// SPDX-License-Identifier: BSD-2-Clause
// The operation table of the hardware contract (hw_ops.h) is what the
// engine does: every opcode it lists decodes, every one it does not is
// refused, each takes exactly the transfer modes its row gives, and the
// engine's per-opcode facts (wire and CQE opcodes, answers, immediates,
// inline data, READ contexts) are the row's. WQEs are built with the
// contract's builders (hw_wqe.h), so this also checks their layout against
// the decoder.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "ops/family.h"
#include "requester/wqe_decoder.h"
#include "rhinet/hw.h"

namespace rhinet::fw {
namespace {

constexpr uint32_t kMaxMsg = 1u << 20;

// A WQE of `opcode` with one 4 KiB SGE in transfer mode `mode`, with the
// extension slots its row asks for.
uint32_t build(RawWqe& raw, uint8_t opcode, uint8_t mode) {
  std::memset(raw.bytes, 0, sizeof(raw.bytes));
  const rhn_op_desc* d = rhn_op_row(opcode);
  const bool no_data = d && (d->flags & RHN_OPF_NO_DATA);
  const bool coll = d && (d->ext & RHN_EXT_COLL);
  rhn_wqe_start(raw.bytes, opcode, RHN_WQE_F_SIGNALED, 7);
  uint32_t data = 0;
  if (!no_data && !coll && opcode != RHN_OP_NOP) {
    const uint32_t len = d && (d->flags & RHN_OPF_ATOMIC) ? 8 : 4096;
    rhn_wqe_put_sge(raw.bytes, 0, 0x10000, len, 0x100);
    data = rhn_wqe_set_sges(raw.bytes, 1);
  }
  rhn_wqe_xfer xfer{};
  xfer.block = 64;
  xfer.count = 4;
  xfer.local_stride = 128;
  xfer.remote_stride = 128;
  rhn_wqe_mcast mcast{};
  mcast.count = 1;
  rhn_wqe_coll desc{};
  rhn_wqe_tail tail{};
  tail.xfer_mode = mode;
  tail.xfer = &xfer;
  if (d && (d->ext & RHN_EXT_MCAST)) tail.mcast = &mcast;
  if (coll) tail.coll = &desc;
  return rhn_wqe_finish(raw.bytes, data, &tail);
}

TEST(OpTable, DecoderTakesExactlyTheListedOpcodes) {
  for (uint32_t op = 0; op <= RHN_OP_MAX; op++) {
    RawWqe raw;
    const uint32_t slots = build(raw, static_cast<uint8_t>(op), 0);
    ASSERT_GT(slots, 0u) << op;
    DecodedWqe w;
    const rhn_syndrome syn = decode_send_wqe(raw, slots, kMaxMsg, w);
    const rhn_op_desc* d = rhn_op_row(op);
    if (!d || (d->flags & RHN_OPF_RECV_QUEUE))
      EXPECT_EQ(syn, RHN_SYN_BAD_OPCODE) << "opcode " << op;
    else
      EXPECT_EQ(syn, RHN_SYN_NONE) << d->name;
  }
}

TEST(OpTable, EachOpcodeTakesExactlyItsTransferModes) {
  for (uint32_t op = 0; op <= RHN_OP_MAX; op++) {
    const rhn_op_desc* d = rhn_op_row(op);
    if (!d || (d->flags & RHN_OPF_RECV_QUEUE)) continue;
    for (uint8_t mode = RHN_XFER_TWIN; mode <= RHN_XFER_STRIDE; mode++) {
      RawWqe raw;
      const uint32_t slots = build(raw, static_cast<uint8_t>(op), mode);
      ASSERT_GT(slots, 0u) << d->name;
      DecodedWqe w;
      const rhn_syndrome syn = decode_send_wqe(raw, slots, kMaxMsg, w);
      if (rhn_op_takes_mode(op, mode))
        EXPECT_EQ(syn, RHN_SYN_NONE) << d->name << " mode " << int{mode};
      else
        EXPECT_EQ(syn, RHN_SYN_BAD_XFER) << d->name << " mode " << int{mode};
    }
  }
}

TEST(OpTable, OnlyRowsWithTheSlotTakeAGrh) {
  for (uint32_t op = 0; op <= RHN_OP_MAX; op++) {
    const rhn_op_desc* d = rhn_op_row(op);
    if (!d || (d->flags & RHN_OPF_RECV_QUEUE)) continue;
    RawWqe raw;
    const uint32_t slots = build(raw, static_cast<uint8_t>(op), 0);
    ASSERT_GT(slots, 0u) << d->name;
    // One more slot at the end, a GRH.
    raw.bytes[RHN_OFFSETOF(rhn_send_wqe, flags)] |= RHN_WQE_F_GRH;
    raw.bytes[RHN_OFFSETOF(rhn_send_wqe, ext_units)]++;
    DecodedWqe w;
    const rhn_syndrome syn = decode_send_wqe(raw, slots + 1, kMaxMsg, w);
    EXPECT_EQ(syn, (d->ext & RHN_EXT_GRH) ? RHN_SYN_NONE : RHN_SYN_BAD_WQE)
        << d->name;
  }
}

// A family's own rules (OpFamily::decode) are checked before the
// partial-transfer descriptor, as the decoder always did.
TEST(OpTable, FamilyRulesComeBeforeTheDescriptor) {
  RawWqe raw;
  const uint32_t slots = build(raw, RHN_OP_MCAST_LIST, RHN_XFER_TWIN);
  ASSERT_GT(slots, 0u);
  DecodedWqe w;
  EXPECT_EQ(decode_send_wqe(raw, slots, kMaxMsg, w), RHN_SYN_BAD_XFER);
  rhn_wqe_mcast list;
  uint8_t* last = raw.bytes + (slots - 1) * RHN_SQ_SLOT_SIZE;
  std::memcpy(&list, last, sizeof(list));
  list.count = 0;
  std::memcpy(last, &list, sizeof(list));
  EXPECT_EQ(decode_send_wqe(raw, slots, kMaxMsg, w), RHN_SYN_BAD_WQE);
  list.count = RHN_MCAST_MAX_DESTS + 1;
  std::memcpy(last, &list, sizeof(list));
  EXPECT_EQ(decode_send_wqe(raw, slots, kMaxMsg, w), RHN_SYN_BAD_WQE);
  // A probe's unknown tag flag.
  const uint32_t probe = build(raw, RHN_OP_IPROBE, 0);
  ASSERT_EQ(decode_send_wqe(raw, probe, kMaxMsg, w), RHN_SYN_NONE);
  rhn_send_wqe base;
  std::memcpy(&base, raw.bytes, sizeof(base));
  base.u.tag.flags = 2;
  std::memcpy(raw.bytes, &base, sizeof(base));
  EXPECT_EQ(decode_send_wqe(raw, probe, kMaxMsg, w), RHN_SYN_BAD_WQE);
}

TEST(OpTable, EngineFactsAreTheRows) {
  for (uint32_t op = 0; op <= RHN_OP_MAX; op++) {
    const rhn_op_desc* d = rhn_op_row(op);
    if (!d || (d->flags & RHN_OPF_RECV_QUEUE)) continue;
    const OpInfo& info = op_info(static_cast<uint8_t>(op));
    EXPECT_EQ(info.wire_op, d->wire_op) << d->name;
    EXPECT_EQ(info.cqe_op, d->cqe_op) << d->name;
    EXPECT_EQ(info.awaits_response, (d->flags & RHN_OPF_ANSWERED) != 0)
        << d->name;
    EXPECT_EQ(info.has_imm, (d->flags & RHN_OPF_IMM) != 0) << d->name;
    EXPECT_EQ(info.carries_payload, (d->flags & RHN_OPF_INLINE) != 0)
        << d->name;
    EXPECT_EQ(info.uses_read_ctx, (d->flags & RHN_OPF_READ_CTX) != 0)
        << d->name;
    EXPECT_EQ(info.ordered_retry, (d->flags & RHN_OPF_ORDERED_RETRY) != 0)
        << d->name;
  }
}

TEST(OpTable, NamesAndDirectVerbsOpcodesAreUnique) {
  std::set<std::string> names, dv_names;
  std::set<unsigned> dv_ops;
  for (uint32_t op = 0; op <= RHN_OP_MAX; op++) {
    const rhn_op_desc* d = rhn_op_row(op);
    if (!d) continue;
    EXPECT_EQ(d->opcode, op);
    EXPECT_TRUE(names.insert(d->name).second) << d->name;
    if (!d->dv_op) {
      EXPECT_STREQ(d->dv_name, "") << d->name;
      continue;
    }
    EXPECT_TRUE(dv_ops.insert(d->dv_op).second) << d->name;
    EXPECT_TRUE(dv_names.insert(d->dv_name).second) << d->dv_name;
    EXPECT_EQ(rhn_op_row_by_dv(d->dv_op), d) << d->name;
    // Every row takes basic transfers.
    EXPECT_TRUE(rhn_op_takes_mode(op, RHN_XFER_BASIC)) << d->name;
  }
  EXPECT_EQ(rhn_op_row_by_dv(0), nullptr);
  EXPECT_EQ(rhn_op_row_by_dv(200), nullptr);
}

TEST(WqeBuilders, LayoutMatchesTheDecoder) {
  // Inline data spanning slots, then a UD route as the last slot.
  alignas(8) uint8_t buf[RHN_WQE_MAX_SLOTS * RHN_SQ_SLOT_SIZE] = {};
  uint8_t payload[100];
  for (unsigned i = 0; i < sizeof(payload); i++) payload[i] = uint8_t(i);
  rhn_wqe_start(buf, RHN_OP_SEND, RHN_WQE_F_SIGNALED, 3);
  rhn_wqe_put_inline(buf, 0, payload, 60);
  rhn_wqe_put_inline(buf, 60, payload + 60, 40);
  const uint32_t data = rhn_wqe_set_inline(buf, sizeof(payload));
  EXPECT_EQ(data, 2u);  // 16 bytes in the base slot, 84 in two more
  rhn_wqe_grh grh{};
  grh.hop_limit = 64;
  rhn_wqe_tail tail{};
  tail.grh = &grh;
  const uint32_t slots = rhn_wqe_finish(buf, data, &tail);
  ASSERT_EQ(slots, 4u);
  RawWqe raw;
  std::memcpy(raw.bytes, buf, sizeof(buf));
  DecodedWqe w;
  ASSERT_EQ(decode_send_wqe(raw, slots, kMaxMsg, w), RHN_SYN_NONE);
  EXPECT_TRUE(w.has_grh);
  EXPECT_EQ(w.grh.hop_limit, 64);
  EXPECT_EQ(w.inline_len, sizeof(payload));
  EXPECT_EQ(w.wqe_index, 3);
  EXPECT_EQ(0, std::memcmp(wqe_inline(raw, w).data(), payload, 100));
  // Sizing: the rule the kernel and the provider share.
  EXPECT_EQ(rhn_wqe_slots(1, 0, 0), 1u);
  EXPECT_EQ(rhn_wqe_slots(2, 0, 1), 3u);
  EXPECT_EQ(rhn_wqe_slots(5, 16, 0), 2u);
  EXPECT_EQ(rhn_wqe_slots(1, 17, 0), 2u);
  EXPECT_EQ(rhn_wqe_inline_capacity(rhn_wqe_slots(1, 100, 1), 1), 144u);
  // Too many slots, or two last slots, do not build.
  rhn_wqe_mcast mcast{};
  tail.mcast = &mcast;
  EXPECT_EQ(rhn_wqe_finish(buf, 0, &tail), 0u);
  tail = {};
  EXPECT_EQ(rhn_wqe_finish(buf, RHN_WQE_MAX_EXT_UNITS, &tail),
            RHN_WQE_MAX_SLOTS);
  tail.grh = &grh;
  EXPECT_EQ(rhn_wqe_finish(buf, RHN_WQE_MAX_EXT_UNITS, &tail), 0u);
}

}  // namespace
}  // namespace rhinet::fw
