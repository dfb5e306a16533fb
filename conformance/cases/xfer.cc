// SPDX-License-Identifier: BSD-2-Clause
// Transfer modes and the operations built on areas (queues.md): STRIDE,
// BITMAP and TWIN transfers and the modes an opcode refuses, sequential
// multicast to a destination list, put-with-signal.
#include <string>
#include <vector>

#include "case.h"
#include "lib/work.h"

namespace rhinet::conform {
namespace {

constexpr uint32_t kArea = RHN_AREA_KEY(0, 3);

// dst registered as area kArea of the NIC's context 0.
bool area_on_dst(Check& c, Nic& n, Loop& l) {
  rhn_admin_cmd m = Nic::cmd(RHN_ADMIN_REGISTER_AREA);
  m.u.register_area.area_id = kArea;
  m.u.register_area.key = l.dst.key;
  m.u.register_area.iova = l.dst.addr;
  m.u.register_area.length = l.dst.len;
  return c.eq("REGISTER_AREA", RHN_ADMIN_OK, n.run(m));
}

// A strided transfer of 4 blocks of 8 bytes, 64 apart locally and 16 apart
// remotely, or its refusal.
rhn_wqe_xfer stride(uint32_t block, uint32_t count) {
  rhn_wqe_xfer x{};
  x.block = block;
  x.count = count;
  x.local_stride = 64;
  x.remote_stride = 16;
  return x;
}

bool blocks_equal(Check& c, Nic& n, uint64_t a, uint64_t a_stride, uint64_t b,
                  uint64_t b_stride, uint32_t block, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    if (!same_bytes(c, n, a + i * a_stride, b + i * b_stride, block,
                    "block " + std::to_string(i)))
      return false;
  return true;
}

// A WQE with a partial mode the operation refuses: RHN_SYN_BAD_XFER.
void refused_mode(Target& t, Check& c, uint8_t opcode, uint8_t mode,
                  const rhn_wqe_xfer& x) {
  LOOP(n, l, RHN_QP_RC);
  Wqe w(l.a, opcode);
  rhn_wqe_tail tail{};
  tail.xfer_mode = mode;
  tail.xfer = &x;
  w.tail = &tail;
  w.sge(0, l.src.addr, 256, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BAD_XFER, e.vendor_err);
}

// A twin of 8 KiB (zeroed by ALLOC_TWIN); its handle.
uint32_t alloc_twin(Check& c, Nic& n) {
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 8192;
  uint32_t h = 0;
  c.eq("ALLOC_TWIN", RHN_ADMIN_OK, n.run(a, &h));
  return h;
}

// A DIFF WRITE of src[0, len) against twin h at offset 0; its CQE.
bool diff_write(Check& c, Nic& n, Loop& l, uint32_t h, uint32_t len,
                rhn_cqe* e) {
  rhn_wqe_xfer x{};
  x.twin = h;
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_DIFF;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_WRITE);
  w.tail = &tail;
  w.sge(0, l.src.addr, len, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  return c.that(n.wait_cqe(l.scq, e), "send CQ", "no CQE");
}

}  // namespace

CONFORM_CASE(write_stride, "xfer.write.stride", "xfer",
             "a STRIDE WRITE gathers blocks local_stride apart and places "
             "them remote_stride apart; byte_len = block x count") {
  LOOP(n, l, RHN_QP_RC);
  const rhn_wqe_xfer x = stride(8, 4);
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_STRIDE;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_WRITE);
  w.tail = &tail;
  w.sge(0, l.src.addr, 3 * 64 + 8, l.src.key).remote(l.dst.addr, l.dst.key);
  CONFORM_EQ(c, "slots (base + descriptor)", 2, w.post(n, l.a));
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 32, e.byte_len);
  if (!blocks_equal(c, n, l.src.addr, 64, l.dst.addr, 16, 8, 4)) return;
  c.eq("gap between placed blocks", 0, n.rd64(l.dst.addr + 8));
}

CONFORM_CASE(read_stride, "xfer.read.stride", "xfer",
             "a STRIDE READ brings blocks remote_stride apart into blocks "
             "local_stride apart") {
  LOOP(n, l, RHN_QP_RC);
  const rhn_wqe_xfer x = stride(8, 4);
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_STRIDE;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_READ);
  w.tail = &tail;
  w.sge(0, l.dst.addr, 3 * 64 + 8, l.dst.key).remote(l.src.addr, l.src.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_READ, RHN_CQE_SUCCESS, &e))
    return;
  CONFORM_EQ(c, "byte_len", 32, e.byte_len);
  blocks_equal(c, n, l.src.addr, 16, l.dst.addr, 64, 8, 4);
}

CONFORM_CASE(write_bitmap, "xfer.write.bitmap", "xfer",
             "a BITMAP WRITE places only the marked blocks; the others stay "
             "as they were") {
  LOOP(n, l, RHN_QP_RC);
  const uint64_t bitmap = l.src.addr + 8192;
  n.wr64(bitmap, 0x5);  // blocks 0 and 2 of 4
  rhn_wqe_xfer x{};
  x.block = 64;
  x.bitmap_addr = bitmap;
  x.bitmap_lkey = l.src.key;
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_BITMAP;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_WRITE);
  w.tail = &tail;
  w.sge(0, l.src.addr, 256, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e))
    return;
  if (!blocks_equal(c, n, l.src.addr, 128, l.dst.addr, 128, 64, 2)) return;
  CONFORM_EQ(c, "unmarked block 1", 0, n.rd64(l.dst.addr + 64));
  c.eq("unmarked block 3", 0, n.rd64(l.dst.addr + 192));
}

CONFORM_CASE(read_twin, "xfer.read.twin", "xfer",
             "a TWIN READ lands locally and in the twin at twin_offset "
             "(TWIN_READ brings it back)") {
  LOOP(n, l, RHN_QP_RC);
  rhn_admin_cmd a = Nic::cmd(RHN_ADMIN_ALLOC_TWIN);
  a.u.alloc_twin.length = 8192;
  uint32_t h = 0;
  CONFORM_EQ(c, "ALLOC_TWIN", RHN_ADMIN_OK, n.run(a, &h));
  rhn_wqe_xfer x{};
  x.twin = h;
  x.twin_offset = 512;
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_TWIN;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_READ);
  w.tail = &tail;
  w.sge(0, l.dst.addr, 100, l.dst.key).remote(l.src.addr, l.src.key);
  w.post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_READ, RHN_CQE_SUCCESS, &e))
    return;
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 100, "local data")) return;
  const uint64_t out = n.alloc(4096);
  rhn_admin_cmd r = Nic::cmd(RHN_ADMIN_TWIN_READ);
  r.u.twin_copy.handle = h;
  r.u.twin_copy.length = 100;
  r.u.twin_copy.offset = 512;
  r.u.twin_copy.addr = out;
  CONFORM_EQ(c, "TWIN_READ", RHN_ADMIN_OK, n.run(r));
  same_bytes(c, n, l.src.addr, out, 100, "twin data");
}

CONFORM_CASE(write_diff, "xfer.write.diff", "xfer",
             "a DIFF WRITE sends only the bytes that differ from the twin "
             "(equal bytes stay as the target had them), counts the rest in "
             "PARTIAL_BYTES_SKIPPED; the twin then equals the SGE") {
  LOOP(n, l, RHN_QP_RC);
  const uint32_t h = alloc_twin(c, n);
  if (!c.ok()) return;
  std::vector<uint8_t> src(256, 0), dst(256, 0xee);
  for (int i = 10; i < 20; i++) src[i] = uint8_t(i);
  for (int i = 100; i < 104; i++) src[i] = 0x77;
  t.mem_write(l.src.addr, src.data(), src.size());
  t.mem_write(l.dst.addr, dst.data(), dst.size());
  rhn_cqe e;
  if (!diff_write(c, n, l, h, 256, &e)) return;
  CONFORM_EQ(c, "CQE status", RHN_CQE_SUCCESS, e.status);
  const auto got = n.bytes(l.dst.addr, 256);
  for (int i = 0; i < 256; i++) {
    const bool differs = (i >= 10 && i < 20) || (i >= 100 && i < 104);
    CONFORM_EQ(c, "target byte " + std::to_string(i), differs ? src[i] : 0xee,
               got[i]);
  }
  CONFORM_EQ(c, "RHN_CNT_PARTIAL_BYTES_SKIPPED", 256 - 14,
             n.counter(RHN_CNT_PARTIAL_BYTES_SKIPPED));
  const uint64_t out = n.alloc(4096);
  rhn_admin_cmd r = Nic::cmd(RHN_ADMIN_TWIN_READ);
  r.u.twin_copy.handle = h;
  r.u.twin_copy.length = 256;
  r.u.twin_copy.addr = out;
  CONFORM_EQ(c, "TWIN_READ", RHN_ADMIN_OK, n.run(r));
  same_bytes(c, n, l.src.addr, out, 256, "twin after the DIFF");
}

CONFORM_CASE(diff_again, "xfer.write.diff_unchanged", "xfer",
             "a second DIFF of unchanged data sends nothing: the target keeps "
             "its bytes, all are skipped") {
  LOOP(n, l, RHN_QP_RC);
  const uint32_t h = alloc_twin(c, n);
  if (!c.ok()) return;
  rhn_cqe e;
  if (!diff_write(c, n, l, h, 128, &e)) return;
  CONFORM_EQ(c, "first CQE status", RHN_CQE_SUCCESS, e.status);
  std::vector<uint8_t> marker(128, 0x5c);
  t.mem_write(l.dst.addr, marker.data(), marker.size());
  const uint64_t skipped = n.counter(RHN_CNT_PARTIAL_BYTES_SKIPPED);
  if (!diff_write(c, n, l, h, 128, &e)) return;
  CONFORM_EQ(c, "second CQE status", RHN_CQE_SUCCESS, e.status);
  CONFORM_EQ(c, "RHN_CNT_PARTIAL_BYTES_SKIPPED increase", 128,
             n.counter(RHN_CNT_PARTIAL_BYTES_SKIPPED) - skipped);
  c.eq("target word (untouched)", 0x5c5c5c5c5c5c5c5cull, n.rd64(l.dst.addr));
}

CONFORM_CASE(diff_short_twin, "xfer.write.diff_twin_too_short", "xfer",
             "a DIFF whose twin is shorter than twin_offset + the SGE: "
             "RHN_SYN_BAD_XFER") {
  LOOP(n, l, RHN_QP_RC);
  const uint32_t h = alloc_twin(c, n);
  if (!c.ok()) return;
  rhn_wqe_xfer x{};
  x.twin = h;
  x.twin_offset = 8192 - 100;
  rhn_wqe_tail tail{};
  tail.xfer_mode = RHN_XFER_DIFF;
  tail.xfer = &x;
  Wqe w(l.a, RHN_OP_WRITE);
  w.tail = &tail;
  w.sge(0, l.src.addr, 256, l.src.key).remote(l.dst.addr, l.dst.key);
  w.post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BAD_XFER, e.vendor_err);
}

CONFORM_CASE(stride_zero, "xfer.write.stride_zero_block", "xfer",
             "a STRIDE descriptor with block 0: RHN_SYN_BAD_XFER") {
  refused_mode(t, c, RHN_OP_WRITE, RHN_XFER_STRIDE, stride(0, 4));
}

CONFORM_CASE(stride_overlap, "xfer.write.stride_overlap", "xfer",
             "STRIDE blocks wider than their stride (overlapping): "
             "RHN_SYN_BAD_XFER") {
  refused_mode(t, c, RHN_OP_WRITE, RHN_XFER_STRIDE, stride(32, 4));
}

CONFORM_CASE(twin_on_write, "xfer.write.twin_refused", "xfer",
             "TWIN on a WRITE (a PULL mode): RHN_SYN_BAD_XFER") {
  refused_mode(t, c, RHN_OP_WRITE, RHN_XFER_TWIN, rhn_wqe_xfer{});
}

CONFORM_CASE(diff_on_read, "xfer.read.diff_refused", "xfer",
             "DIFF on a READ (a PUSH mode): RHN_SYN_BAD_XFER") {
  refused_mode(t, c, RHN_OP_READ, RHN_XFER_DIFF, rhn_wqe_xfer{});
}

CONFORM_CASE(stride_on_send, "xfer.send.mode_refused", "xfer",
             "any mode but basic on a SEND: RHN_SYN_BAD_XFER") {
  refused_mode(t, c, RHN_OP_SEND, RHN_XFER_STRIDE, stride(8, 4));
}

// ---- sequential multicast ----

namespace {

// MCAST_LIST of 64 bytes from a by area kArea at offset 256 to `count`
// destinations read from `list`.
void mcast_list(Nic& n, Loop& l, uint64_t list, uint32_t count) {
  rhn_wqe_mcast m{};
  m.list_addr = list;
  m.list_lkey = l.src.key;
  m.count = count;
  rhn_wqe_tail tail{};
  tail.mcast = &m;
  Wqe w(l.a, RHN_OP_MCAST_LIST, RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA);
  w.tail = &tail;
  w.sge(0, l.src.addr, 64, l.src.key).remote(256, kArea).post(n, l.a);
}

}  // namespace

CONFORM_CASE(mcast_one, "xfer.mcast_list.one_member", "xfer",
             "MCAST_LIST to a list of one endpoint: the data at the area "
             "offset, one MCAST_LIST CQE with the length") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  CONFORM_THAT(c, (n.r32(RHN_REG_CAPS) & RHN_CAP_MCAST_LIST) != 0,
               "CAPS.MCAST_LIST", "not announced");
  if (!area_on_dst(c, n, l)) return;
  const uint64_t list = l.src.addr + 12288;
  rhn_mcast_dest d{};
  d.node = l.node;
  d.qpn = l.b.qpn;
  t.mem_write(list, &d, sizeof(d));
  mcast_list(n, l, list, 1);
  rhn_cqe e;
  if (!cqe_is(c, n, l.scq, "send CQE", RHN_CQE_OP_MCAST_LIST, RHN_CQE_SUCCESS,
              &e))
    return;
  CONFORM_EQ(c, "byte_len", 64, e.byte_len);
  same_bytes(c, n, l.src.addr, l.dst.addr + 256, 64, "member's data");
}

CONFORM_CASE(mcast_zero, "xfer.mcast_list.count_zero", "xfer",
             "MCAST_LIST with count 0: LOC_QP_OP_ERR, RHN_SYN_BAD_WQE, "
             "nothing sent") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!area_on_dst(c, n, l)) return;
  mcast_list(n, l, l.src.addr + 12288, 0);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  CONFORM_EQ(c, "CQE vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
  c.eq("area untouched", 0, n.rd64(l.dst.addr + 256));
}

CONFORM_CASE(mcast_bad_node, "xfer.mcast_list.broadcast_member", "xfer",
             "a destination that is no node (broadcast): LOC_QP_OP_ERR, "
             "RHN_SYN_BAD_WQE") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!area_on_dst(c, n, l)) return;
  const uint64_t list = l.src.addr + 12288;
  rhn_mcast_dest d{};
  d.node = RHN_NODE_BROADCAST;
  d.qpn = l.b.qpn;
  t.mem_write(list, &d, sizeof(d));
  mcast_list(n, l, list, 1);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
}

// ---- put-with-signal ----

CONFORM_CASE(signal, "xfer.signal.put_with_signal", "xfer",
             "a WRITE by area with RHN_WQE_F_SIGNAL_REMOTE: the data, then a "
             "SIGNAL CQE on the target endpoint's CQ (imm_data, area key, "
             "length, initiator); SIGNALS counts") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!area_on_dst(c, n, l)) return;
  Wqe w(l.a, RHN_OP_WRITE,
        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE);
  w.w->imm_data = 0xabc;
  w.sge(0, l.src.addr, 40, l.src.key).remote(0, kArea).to(l, l.b).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "SIGNAL CQE", RHN_CQE_OP_SIGNAL, RHN_CQE_SUCCESS,
              &e))
    return;
  CONFORM_EQ(c, "imm_data", 0xabc, e.imm_data);
  CONFORM_EQ(c, "vendor_err (area key)", kArea, e.vendor_err);
  CONFORM_EQ(c, "byte_len", 40, e.byte_len);
  CONFORM_EQ(c, "src_qpn", l.a.qpn, e.src_qpn & RHN_WIRE_QPN_MASK);
  if (!same_bytes(c, n, l.src.addr, l.dst.addr, 40, "area data")) return;
  c.eq("RHN_CNT_SIGNALS", 1, n.counter(RHN_CNT_SIGNALS));
}

CONFORM_CASE(signal_wakes, "xfer.signal.solicited_event", "xfer",
             "the SIGNAL CQE is solicited: a CQ armed for solicited "
             "completions posts its event") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!area_on_dst(c, n, l)) return;
  t.doorbell_write(0, RHN_DB_CQ_ARM, l.rcq.cqn | RHN_DB_CQ_SOLICITED, 4);
  t.settle();
  Wqe w(l.a, RHN_OP_WRITE,
        RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE);
  w.sge(0, l.src.addr, 8, l.src.key).remote(0, kArea).to(l, l.b).post(n, l.a);
  rhn_cqe e;
  if (!cqe_is(c, n, l.rcq, "SIGNAL CQE", RHN_CQE_OP_SIGNAL, RHN_CQE_SUCCESS,
              &e))
    return;
  rhn_eqe ev;
  CONFORM_THAT(c, n.wait_eqe(l.eq, &ev), "EQ",
               "no completion event for the solicited arm");
  CONFORM_EQ(c, "EQE type", RHN_EQE_COMPLETION, ev.type);
  c.eq("EQE object", l.rcq.cqn, ev.object);
}

CONFORM_CASE(signal_rc, "xfer.signal.on_rc", "xfer",
             "RHN_WQE_F_SIGNAL_REMOTE on an RC QP: LOC_QP_OP_ERR, "
             "RHN_SYN_BAD_WQE") {
  LOOP(n, l, RHN_QP_RC);
  if (!area_on_dst(c, n, l)) return;
  Wqe(l.a, RHN_OP_WRITE,
      RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | RHN_WQE_F_SIGNAL_REMOTE)
      .sge(0, l.src.addr, 40, l.src.key)
      .remote(0, kArea)
      .post(n, l.a);
  rhn_cqe e;
  CONFORM_THAT(c, n.wait_cqe(l.scq, &e), "send CQ", "no CQE");
  CONFORM_EQ(c, "CQE status", RHN_CQE_LOC_QP_OP_ERR, e.status);
  c.eq("CQE vendor_err", RHN_SYN_BAD_WQE, e.vendor_err);
}

// ---- ordering ----

CONFORM_CASE(order_flag, "xfer.order.flag_after_data", "xfer",
             "one endpoint's WRITE of 12000 bytes, an atomic add on the "
             "area word after it and an inline flag WRITE, posted at once: "
             "when the flag is seen in host memory the data and the sum are "
             "already there (queues.md, Ordering)") {
  LOOP(n, l, RHN_QP_ENDPOINT);
  if (!area_on_dst(c, n, l)) return;
  constexpr uint64_t kSum = 12288, kFlag = 12296;
  n.wr64(l.dst.addr + kSum, 40);
  Wqe(l.a, RHN_OP_WRITE, RHN_WQE_F_AREA)
      .sge(0, l.src.addr, 12000, l.src.key)
      .remote(0, kArea)
      .to(l, l.b)
      .post(n, l.a);
  Wqe add(l.a, RHN_OP_ATOMIC_EXT, RHN_WQE_F_AREA);
  add.w->imm_data = RHN_AOP_ADD | RHN_AOP_F_NO_FETCH;
  add.w->u.atomic.compare_add = 2;
  add.remote(kSum, kArea).to(l, l.b).post(n, l.a);
  Wqe flag(l.a, RHN_OP_WRITE,
           RHN_WQE_F_SIGNALED | RHN_WQE_F_AREA | RHN_WQE_F_INLINE);
  const uint64_t one = 1;
  rhn_wqe_put_inline(flag.buf, 0, &one, sizeof(one));
  flag.data = rhn_wqe_set_inline(flag.buf, sizeof(one));
  flag.remote(kFlag, kArea).to(l, l.b).post(n, l.a);
  // Looked at between the NIC's steps, as a program polling the flag.
  bool data_there = false, sum_there = false;
  const auto want = n.bytes(l.src.addr, 12000);
  const bool seen = t.wait_until(
      [&] {
        if (n.rd64(l.dst.addr + kFlag) != 1) return false;
        data_there = n.bytes(l.dst.addr, 12000) == want;
        sum_there = n.rd64(l.dst.addr + kSum) == 42;
        return true;
      },
      kWaitNs);
  CONFORM_THAT(c, seen, "flag", "never landed");
  CONFORM_THAT(c, data_there, "data when the flag was seen",
               "not all of the earlier WRITE's bytes were there");
  CONFORM_THAT(c, sum_there, "sum when the flag was seen",
               "the earlier atomic's result was not there");
  rhn_cqe e;
  cqe_is(c, n, l.scq, "flag CQE", RHN_CQE_OP_WRITE, RHN_CQE_SUCCESS, &e);
}

}  // namespace rhinet::conform
