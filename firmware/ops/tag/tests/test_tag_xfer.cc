// SPDX-License-Identifier: BSD-2-Clause
// NIC matching with partial transfer modes: strided, bitmap, diff and twin
// isends and receives, and descriptors the NIC refuses. The fixture is
// tag_fixture.h, the other cases test_tag.cc.
#include "tag_fixture.h"

namespace rhinet::test {
namespace {

// ---- Partial modes of messages (the transfer modes of hw_ops.h) -------

class TagXfer : public Tag {
 protected:
  void SetUp() override {
    start(3);
    a = make_ep(*c, 0);
    b = make_ep(*c, 1);
    ASSERT_TRUE(a.qp && b.qp);
  }
  SendWr partial_isend(uint64_t wr_id, const Ep& to, uint64_t tag, Sge sge,
                       uint8_t mode) {
    SendWr wr = isend(wr_id, to, tag, sge);
    wr.xfer_mode = mode;
    return wr;
  }
  TagRecv recv_from(const Ep& from, uint64_t tag, Sge sge) {
    TagRecv t;
    t.tag = tag;
    t.src_node = from.node;
    t.src_qpn = from.qp->qpn();
    t.sge = sge;
    return t;
  }
  uint32_t alloc_twin(Ep& e, uint64_t len) {
    AdminResult r = c->node(e.node).driver->alloc_twin(e.ctx->index(), len);
    EXPECT_TRUE(r.ok()) << int(r.status);
    return r.result;
  }
  // Sends `wr` from a to b's receive `t`; both complete; the receive's CQE.
  Completion exchange(const SendWr& wr, const TagRecv& t,
                      uint8_t send_status = RHN_CQE_SUCCESS) {
    EXPECT_TRUE(b.qp->post_tag_recv(wr.wr_id + 1000, t));
    EXPECT_TRUE(a.qp->post_send(wr));
    Completion r = wait_one(*c, *b.cq, 20'000'000'000);
    Completion s = wait_one(*c, *a.cq, 20'000'000'000);
    EXPECT_EQ(s.status, send_status) << describe(s);
    return r;
  }
  Ep a, b;
};

// Blocks `block` bytes long, `stride` apart from `base`, of `count` blocks,
// packed.
std::vector<uint8_t> gather_blocks(const std::vector<uint8_t>& src,
                                   size_t block, size_t count, size_t stride) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < count; i++)
    out.insert(out.end(), src.begin() + i * stride,
               src.begin() + i * stride + block);
  return out;
}

TEST_F(TagXfer, AStridedIsendArrivesPackedInAPlainReceive) {
  // A column of 24-byte records (eager size: 1200 B) and a long one
  // (rendezvous: 60 000 B), each gathered from rows 100 bytes apart.
  for (size_t count : {size_t{50}, size_t{2500}}) {
    put(a.mem.buf, 0, payload(0, uint32_t(count), 100 * count));
    b.mem.buf.fill(0x5a);
    SendWr wr =
        partial_isend(count, b, 9, a.mem.sge(0, 100 * count), RHN_XFER_STRIDE);
    wr.xfer.block = 24;
    wr.xfer.count = uint32_t(count);
    wr.xfer.local_stride = 100;
    wr.xfer.remote_stride = 24;
    Completion r = exchange(wr, recv_from(a, 9, b.mem.sge(0, 1 << 20)));
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.byte_len, 24 * count);
    EXPECT_EQ(b.mem.buf.bytes(0, 24 * count),
              gather_blocks(payload(0, uint32_t(count), 100 * count), 24, count,
                            100));
    EXPECT_EQ(b.mem.buf.bytes(24 * count, 8), std::vector<uint8_t>(8, 0x5a));
  }
}

TEST_F(TagXfer, APlainIsendScattersIntoAStridedReceiveAndTruncatesBeyondIt) {
  lossy(41);
  // The receive holds 100 blocks of 64 B, 200 B apart: 6400 B.
  for (size_t len : {size_t{3000}, size_t{6400}, size_t{9000}}) {
    const auto msg = payload(0, uint32_t(len), len);
    put(a.mem.buf, 0, msg);
    b.mem.buf.fill(0x11);
    TagRecv t = recv_from(a, 4, b.mem.sge(0, 99 * 200 + 64));
    t.xfer_mode = RHN_XFER_STRIDE;
    t.xfer.stride.block = 64;
    t.xfer.stride.count = 100;
    t.xfer.stride.stride = 200;
    Completion r = exchange(isend(len, b, 4, a.mem.sge(0, len)), t);
    EXPECT_EQ(r.status, len > 6400 ? RHN_CQE_LOC_LEN_ERR : RHN_CQE_SUCCESS)
        << describe(r);
    EXPECT_EQ(r.byte_len, len);
    std::vector<uint8_t> want(99 * 200 + 64 + 100, 0x11);
    for (size_t o = 0; o < std::min<size_t>(len, 6400); o++)
      want[(o / 64) * 200 + o % 64] = msg[o];
    EXPECT_EQ(b.mem.buf.bytes(0, want.size()), want) << len;
  }
}

TEST_F(TagXfer, StridesOnBothSidesWithDifferentShapes) {
  // 40 blocks of 50 B, 120 B apart, arrive as 25 blocks of 80 B, 90 B apart.
  const auto src = payload(0, 1, 40 * 120);
  put(a.mem.buf, 0, src);
  b.mem.buf.fill(0);
  SendWr wr =
      partial_isend(1, b, 2, a.mem.sge(0, 39 * 120 + 50), RHN_XFER_STRIDE);
  wr.xfer.block = 50;
  wr.xfer.count = 40;
  wr.xfer.local_stride = 120;
  wr.xfer.remote_stride = 50;
  TagRecv t = recv_from(a, 2, b.mem.sge(0, 24 * 90 + 80));
  t.xfer_mode = RHN_XFER_STRIDE;
  t.xfer.stride.block = 80;
  t.xfer.stride.count = 25;
  t.xfer.stride.stride = 90;
  Completion r = exchange(wr, t);
  ASSERT_TRUE(r.ok()) << describe(r);
  const auto msg = gather_blocks(src, 50, 40, 120);
  std::vector<uint8_t> want(24 * 90 + 80, 0);
  for (size_t o = 0; o < msg.size(); o++) want[(o / 80) * 90 + o % 80] = msg[o];
  EXPECT_EQ(b.mem.buf.bytes(0, want.size()), want);
}

// Bit i of a bitmap at `at` in `mem`: blocks 0, 3, 4, 5 and every 7th.
std::vector<bool> mark_blocks(SimBuffer& mem, size_t at, size_t blocks) {
  std::vector<bool> marked(blocks);
  std::vector<uint8_t> bits((blocks + 7) / 8, 0);
  for (size_t i = 0; i < blocks; i++) {
    marked[i] = i == 0 || (i >= 3 && i <= 5) || i % 7 == 0;
    if (marked[i]) bits[i / 8] |= uint8_t(1u << (i % 8));
  }
  mem.write(at, bits.data(), bits.size());
  return marked;
}

TEST_F(TagXfer, ABitmapIsendSendsOnlyMarkedBlocksTheRestStaysAsItWas) {
  lossy(42);
  // 64-byte blocks; eager-sized and rendezvous-sized messages, and one
  // whose last block is short.
  for (size_t len : {size_t{2048}, size_t{100'000}, size_t{100'030}}) {
    const size_t blocks = (len + 63) / 64;
    const auto marked = mark_blocks(a.mem.buf, 3 << 20, blocks);
    const auto msg = payload(0, uint32_t(len), len);
    put(a.mem.buf, 0, msg);
    b.mem.buf.fill(0x77);
    CounterSnap tx(c->node(0));
    SendWr wr = partial_isend(len, b, 5, a.mem.sge(0, len), RHN_XFER_BITMAP);
    wr.xfer.block = 64;
    wr.xfer.bitmap_addr = a.mem.va(3 << 20);
    wr.xfer.bitmap_lkey = a.mem.key();
    Completion r = exchange(wr, recv_from(a, 5, b.mem.sge(0, 1 << 20)));
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_EQ(r.byte_len, len);
    std::vector<uint8_t> want(len + 64, 0x77);
    size_t selected = 0;
    for (size_t o = 0; o < len; o++)
      if (marked[o / 64]) {
        want[o] = msg[o];
        selected++;
      }
    EXPECT_EQ(b.mem.buf.bytes(0, len + 64), want) << len;
    EXPECT_EQ(tx.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), len - selected);
  }
}

TEST_F(TagXfer, ABitmapReceiveKeepsOnlyItsMarkedBlocks) {
  for (size_t len : {size_t{3000}, size_t{70'000}}) {
    const size_t blocks = (len + 99) / 100;
    const auto marked = mark_blocks(b.mem.buf, 3 << 20, blocks);
    const auto msg = payload(0, uint32_t(len), len);
    put(a.mem.buf, 0, msg);
    put(b.mem.buf, 0, std::vector<uint8_t>(len + 10, 0x33));
    TagRecv t = recv_from(a, 6, b.mem.sge(0, len));
    t.xfer_mode = RHN_XFER_BITMAP;
    t.xfer.bitmap.block = 100;
    t.xfer.bitmap.lkey = b.mem.key();
    t.xfer.bitmap.addr = b.mem.va(3 << 20);
    Completion r = exchange(isend(len, b, 6, a.mem.sge(0, len)), t);
    ASSERT_TRUE(r.ok()) << describe(r);
    std::vector<uint8_t> want(len + 10, 0x33);
    for (size_t o = 0; o < len; o++)
      if (marked[o / 100]) want[o] = msg[o];
    EXPECT_EQ(b.mem.buf.bytes(0, len + 10), want) << len;
  }
}

// DIFF sends what changed since the twin took it; a TWIN receive keeps a
// copy of what arrived, so a DIFF isend from it against that twin sends
// nothing that arrived unchanged.
TEST_F(TagXfer, DiffIsendSendsOnlyChangesAndATwinReceiveKeepsTheCopy) {
  lossy(43);
  Ep d = make_ep(*c, 2);
  ASSERT_TRUE(d.qp);
  constexpr size_t kLen = 50'000;
  const uint32_t twin_a = alloc_twin(a, kLen);
  const uint32_t twin_b = alloc_twin(b, kLen);
  auto data = payload(0, 7, kLen);
  put(a.mem.buf, 0, data);
  b.mem.buf.fill(0);
  auto diff = [&](uint64_t id) {
    SendWr wr = partial_isend(id, b, 8, a.mem.sge(0, kLen), RHN_XFER_DIFF);
    wr.xfer.twin = twin_a;
    return wr;
  };
  TagRecv t = recv_from(a, 8, b.mem.sge(0, kLen));
  t.xfer_mode = RHN_XFER_TWIN;
  t.xfer.twin.handle = twin_b;
  // First: the twin is zero, so every nonzero byte travels.
  Completion r = exchange(diff(1), t);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(b.mem.buf.bytes(0, kLen), data);
  // Then three bytes change; into a receive full of 0xee only they land.
  for (size_t o : {size_t{10}, size_t{4097}, size_t{49'999}}) data[o] ^= 0xff;
  put(a.mem.buf, 0, data);
  put(b.mem.buf, 2 << 20, std::vector<uint8_t>(kLen, 0xee));
  CounterSnap tx(c->node(0));
  TagRecv t2 = recv_from(a, 8, b.mem.sge(2 << 20, kLen));
  r = exchange(diff(2), t2);
  ASSERT_TRUE(r.ok()) << describe(r);
  std::vector<uint8_t> want(kLen, 0xee);
  for (size_t o : {size_t{10}, size_t{4097}, size_t{49'999}}) want[o] = data[o];
  EXPECT_EQ(b.mem.buf.bytes(2 << 20, kLen), want);
  EXPECT_EQ(tx.delta(RHN_CNT_PARTIAL_BYTES_SKIPPED), kLen - 3);
  // b's twin holds the first message: b's DIFF isend of the same bytes
  // to d sends nothing (d's buffer keeps its 0x44), and of one changed
  // byte sends that byte.
  d.mem.buf.fill(0x44);
  SendWr back = isend(3, d, 1, b.mem.sge(0, kLen));
  back.xfer_mode = RHN_XFER_DIFF;
  back.xfer.twin = twin_b;
  TagRecv td = recv_from(b, 1, d.mem.sge(0, kLen));
  ASSERT_TRUE(d.qp->post_tag_recv(30, td));
  ASSERT_TRUE(b.qp->post_send(back));
  Completion rd = wait_one(*c, *d.cq, 20'000'000'000);
  ASSERT_TRUE(rd.ok()) << describe(rd);
  EXPECT_EQ(rd.byte_len, kLen);
  EXPECT_EQ(d.mem.buf.bytes(0, kLen), std::vector<uint8_t>(kLen, 0x44));
  ASSERT_TRUE(wait_one(*c, *b.cq).ok());
}

TEST_F(TagXfer, DescriptorsTheNicRefuseEndInErrorsNotInWrongBytes) {
  // An irecv with DIFF (an isend's mode), a stride past its buffer, a
  // bitmap outside any key, a twin of nobody: each completes in error at
  // once, and no message is taken by it.
  auto bad = [&](uint8_t mode, auto set) {
    TagRecv t = recv_from(a, 77, b.mem.sge(0, 1000));
    t.xfer_mode = mode;
    set(t);
    EXPECT_TRUE(b.qp->post_tag_recv(mode, t));
    Completion r = wait_one(*c, *b.cq);
    EXPECT_EQ(r.status, RHN_CQE_LOC_QP_OP_ERR) << describe(r);
    EXPECT_EQ(r.vendor_err, RHN_SYN_BAD_XFER) << describe(r);
  };
  bad(RHN_XFER_DIFF, [](TagRecv&) {});
  bad(RHN_XFER_STRIDE, [](TagRecv& t) {
    t.xfer.stride.block = 100;
    t.xfer.stride.count = 11;
    t.xfer.stride.stride = 100;
  });
  bad(RHN_XFER_BITMAP, [](TagRecv& t) {
    t.xfer.bitmap.block = 8;
    t.xfer.bitmap.lkey = 0xdead00;
  });
  bad(RHN_XFER_TWIN, [](TagRecv& t) { t.xfer.twin.handle = 12345; });
  bad(7, [](TagRecv&) {});
  // Isends: TWIN (an irecv's mode), a stride that is not packed, a
  // bitmap over more blocks than the NIC holds. Each puts its endpoint in
  // error (a local operation error), so each has its own.
  auto bad_send = [&](uint8_t mode, size_t len, auto set) {
    Ep e = make_ep(*c, 0);
    SendWr wr = partial_isend(mode, b, 77, e.mem.sge(0, len), mode);
    set(wr);
    EXPECT_TRUE(e.qp->post_send(wr));
    Completion s = wait_one(*c, *e.cq);
    EXPECT_EQ(s.status, RHN_CQE_LOC_QP_OP_ERR) << describe(s);
    EXPECT_EQ(s.vendor_err, RHN_SYN_BAD_XFER) << describe(s);
  };
  bad_send(RHN_XFER_TWIN, 100, [](SendWr&) {});
  bad_send(RHN_XFER_STRIDE, 1000, [](SendWr& w) {
    w.xfer.block = 10;
    w.xfer.count = 10;
    w.xfer.local_stride = 100;
    w.xfer.remote_stride = 20;
  });
  bad_send(RHN_XFER_BITMAP, RHN_TAG_BITMAP_BLOCKS + 1, [&](SendWr& w) {
    w.xfer.block = 1;
    w.xfer.bitmap_addr = w.sges[0].addr + (3 << 20);
    w.xfer.bitmap_lkey = w.sges[0].lkey;
  });
  // A good message still finds the good receive.
  put(a.mem.buf, 0, payload(0, 0, 500));
  Completion r = exchange(isend(90, b, 77, a.mem.sge(0, 500)),
                          recv_from(a, 77, b.mem.sge(0, 1000)));
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(b.mem.buf.bytes(0, 500), payload(0, 0, 500));
}

// The twin of a DIFF isend freed while it waits for its receive: the isend
// and the receive fail; nothing else is disturbed.
TEST_F(TagXfer, ATwinFreedBeforeTheReceiveComesFailsBothEnds) {
  constexpr size_t kLen = 20'000;
  const uint32_t twin = alloc_twin(a, kLen);
  put(a.mem.buf, 0, payload(0, 3, kLen));
  SendWr wr = partial_isend(1, b, 3, a.mem.sge(0, kLen), RHN_XFER_DIFF);
  wr.xfer.twin = twin;
  ASSERT_TRUE(a.qp->post_send(wr));
  c->run_for(2'000'000);  // queued at b, unexpected
  ASSERT_TRUE(c->node(0).driver->free_twin(a.ctx->index(), twin).ok());
  ASSERT_TRUE(b.qp->post_tag_recv(2, recv_from(a, 3, b.mem.sge(0, kLen))));
  Completion s = wait_one(*c, *a.cq);
  EXPECT_EQ(s.status, RHN_CQE_LOC_PROT_ERR) << describe(s);
  Completion r = wait_one(*c, *b.cq);
  EXPECT_EQ(r.status, RHN_CQE_REM_OP_ERR) << describe(r);
}

}  // namespace
}  // namespace rhinet::test
