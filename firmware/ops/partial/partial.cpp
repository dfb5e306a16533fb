// SPDX-License-Identifier: BSD-2-Clause
// Partial transfers: stride, bitmap, TWIN and DIFF (see partial.h).
#include "ops/partial/partial.h"

#include "core/freestanding.h"

namespace rhinet::fw::partial {
namespace {

uint64_t bitmap_blocks(const DecodedWqe& w) {
  return (w.length + w.xfer.block - 1) / w.xfer.block;
}

uint64_t bitmap_bytes(const DecodedWqe& w) {
  return (bitmap_blocks(w) + 7) / 8;
}

// Selection by a bitmap over `length` bytes, one bit per `g` bytes; `load`
// gives byte i of the bitmap. Shared by the requester (bitmap in host
// memory) and the responder (bitmap carried in the READ request).
template <typename Load>
uint64_t next_selected(Load&& load, uint64_t g, uint64_t length, uint64_t pos) {
  const uint64_t blocks = (length + g - 1) / g;
  for (uint64_t b = pos / g; b < blocks;) {
    const uint8_t byte = load(b / 8);
    if (byte == 0 && b % 8 == 0) {
      b += 8;  // a whole byte of unmarked blocks
      continue;
    }
    if (byte >> (b % 8) & 1) return max(pos, b * g);
    b++;
  }
  return length;
}

// The end of the selected run that contains `pos`, at most `limit`.
template <typename Load>
uint64_t run_end(Load&& load, uint64_t g, uint64_t length, uint64_t pos,
                 uint64_t limit) {
  limit = min(limit, length);
  uint64_t end = (pos / g + 1) * g;
  while (end < limit && (load(end / g / 8) >> (end / g % 8) & 1)) end += g;
  return min(end, limit);
}

// Reads the requester's bitmap (host memory, through its key) 64 bytes at
// a time, so long stretches of zero bytes cost few DMAs.
class BitmapCursor {
 public:
  BitmapCursor(Impl& m, const QpObj& qp, const DecodedWqe& w)
      : m_(m), qp_(qp), w_(w), bytes_(bitmap_bytes(w)) {}
  bool ok() const { return ok_; }
  uint64_t next_selected(uint64_t pos) {
    return partial::next_selected([this](uint64_t i) { return load(i); },
                                  w_.xfer.block, w_.length, pos);
  }
  uint64_t run_end(uint64_t pos, uint64_t limit) {
    return partial::run_end([this](uint64_t i) { return load(i); },
                            w_.xfer.block, w_.length, pos, limit);
  }
  // The bitmap bytes [first, first + n) into out.
  bool copy(uint64_t first, uint8_t* out, uint64_t n) {
    const rhn_sge sge{w_.xfer.bitmap_addr, static_cast<uint32_t>(bytes_),
                      w_.xfer.bitmap_lkey};
    ok_ = ok_ && m_.sge_dma(&sge, 1, first, out, n, qp_.pdn, false);
    return ok_;
  }

 private:
  uint8_t load(uint64_t index) {
    if (!ok_) return 0;
    if (index < base_ || index >= base_ + sizeof(buf_)) {
      base_ = index;
      copy(index, buf_, min<uint64_t>(sizeof(buf_), bytes_ - index));
    }
    return buf_[index - base_];
  }
  Impl& m_;
  const QpObj& qp_;
  const DecodedWqe& w_;
  uint64_t bytes_;
  uint64_t base_ = UINT64_MAX;
  uint8_t buf_[64] = {};
  bool ok_ = true;
};

uint8_t* twin_at(Impl& m, const QpObj& qp, uint32_t handle, uint64_t offset) {
  TwinObj* t = m.twin_of(handle, qp.context);
  return t ? m.twin_bytes(*t) + offset : nullptr;
}

// The scratch's first half is where look-aheads compare; the second holds
// a DIFF packet's bytes while its run list is built.
constexpr uint32_t kXferCompare = kXferScratch / 2;
static_assert(kXferScratch - kXferCompare >= RHN_WIRE_MTU);

// The first byte at or after `pos` (below `length`) where memory, as
// `read` gives it, differs from the twin (length: none). Compared a piece
// at a time, pieces growing from 256 bytes: differences are usually near,
// so the look-ahead after each run should not read far.
template <typename Read>
bool find_difference(Impl& m, Read&& read, const uint8_t* twin, uint64_t pos,
                     uint64_t length, uint64_t* found) {
  uint8_t* scratch = m.xfer_scratch.data();
  uint64_t piece = 256;
  while (pos < length) {
    const auto n = static_cast<uint32_t>(min<uint64_t>(piece, length - pos));
    if (!read(pos, scratch, n)) return false;
    if (memcmp(scratch, twin + pos, n) != 0) {
      uint32_t i = 0;
      while (scratch[i] == twin[pos + i]) i++;
      *found = pos + i;
      return true;
    }
    pos += n;
    piece = min<uint64_t>(piece * 2, kXferCompare);
  }
  *found = length;
  return true;
}

// The same for a WQE's local memory.
bool next_difference(Impl& m, QpObj& qp, const DecodedWqe& w,
                     const uint8_t* twin, uint64_t pos, uint64_t* found) {
  return find_difference(
      m,
      [&](uint64_t at, uint8_t* out, uint32_t n) {
        return gather(m, qp, w, at, out, n);
      },
      twin, pos, w.length, found);
}

// Bytes of an isend's stream, through the sender's own lkey.
bool stream_bytes(Impl& m, const ResponderRead& rr, uint64_t at, uint8_t* out,
                  uint32_t n) {
  uint32_t mr_index;
  return m.check_key(rr.key, kNone, rr.pdn, 0, rr.va + at, n, &mr_index) ==
             RHN_SYN_NONE &&
         m.mr_dma(mr_index, rr.va + at, out, n, false);
}

// Message offset o of a strided side lands at (o / block) * stride +
// o % block of the SGEs (a strided PULL's answers, a strided irecv).
bool scatter_strided(Impl& m, const rhn_sge* sges, uint32_t num_sge,
                     uint32_t pdn, uint64_t block, uint64_t stride,
                     uint64_t offset, Span<const uint8_t> data) {
  for (uint64_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const uint64_t piece =
        min<uint64_t>(data.size() - done, block - at % block);
    if (!m.sge_dma(sges, num_sge, (at / block) * stride + at % block,
                   const_cast<uint8_t*>(data.data() + done), piece, pdn, true))
      return false;
    done += piece;
  }
  return true;
}

// Nothing (more) to send: one empty packet ends the message so the
// target's NIC (signal) and the ACK that completes it see its end.
void empty_last(Impl& m, const DecodedWqe& w, uint64_t offset, rhn_op_hdr& op,
                PacketOut& out) {
  m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, w.length - offset);
  op.remote_addr = w.remote_addr;
  op.msg_offset = static_cast<uint32_t>(offset);
  out.len = 0;
  out.advance = static_cast<uint32_t>(w.length - offset);
  out.last = true;
}

// A sparse PUSH's packet: bytes [start, end) of the message, the next
// packet starting at `next`; what lies between travels nowhere.
void sparse_packet(Impl& m, const DecodedWqe& w, uint64_t offset,
                   uint64_t start, uint64_t end, uint64_t next, rhn_op_hdr& op,
                   PacketOut& out) {
  m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED,
                 (start - offset) + (next - end));
  op.remote_addr = w.remote_addr + start;
  op.msg_offset = static_cast<uint32_t>(start);
  out.len = static_cast<uint32_t>(end - start);
  out.advance = static_cast<uint32_t>(next - offset);
  out.last = next >= w.length;
}

// Strided PUSH: the blocks gathered from the local SGE, each packet
// placed where its bytes go at the target. A packet stays in one target
// block unless the blocks are contiguous there.
bool write_stride(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  const rhn_wqe_xfer& x = w.xfer;
  const uint64_t block = x.block;
  constexpr uint64_t kPackRoom = RHN_WIRE_MTU - sizeof(rhn_write_stride);
  if (x.remote_stride != block && block <= kPackRoom / 2) {
    // Small blocks apart at the target: as many whole blocks as fit, the
    // responder scatters them (RHN_WOP_F_STRIDED).
    const uint64_t first = offset / block;
    const uint64_t n = min(kPackRoom / block, x.count - first);
    rhn_write_stride d{};
    d.block = x.block;
    d.remote_stride = x.remote_stride;
    memcpy(out.payload, &d, sizeof(d));
    for (uint64_t i = 0; i < n; i++)
      if (!gather(m, qp, w, (first + i) * x.local_stride,
                  out.payload + sizeof(d) + i * block,
                  static_cast<uint32_t>(block)))
        return false;
    op.flags |= RHN_WOP_F_STRIDED;
    op.remote_addr = w.remote_addr + first * x.remote_stride;
    out.len = static_cast<uint32_t>(sizeof(d) + n * block);
    out.advance = static_cast<uint32_t>(n * block);
    out.last = offset + n * block >= w.length;
    return true;
  }
  uint64_t chunk = min<uint64_t>(RHN_WIRE_MTU, w.length - offset);
  if (x.remote_stride != block)
    chunk = min<uint64_t>(chunk, block - offset % block);
  for (uint64_t done = 0; done < chunk;) {
    const uint64_t at = offset + done;
    const uint64_t piece = min<uint64_t>(chunk - done, block - at % block);
    if (!gather(m, qp, w, (at / block) * x.local_stride + at % block,
                out.payload + done, static_cast<uint32_t>(piece)))
      return false;
    done += piece;
  }
  op.remote_addr =
      w.remote_addr + (offset / block) * x.remote_stride + offset % block;
  out.len = out.advance = static_cast<uint32_t>(chunk);
  out.last = offset + chunk >= w.length;
  return true;
}

// Bitmap PUSH: each packet a run of marked blocks (up to the MTU).
bool write_bitmap(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out) {
  BitmapCursor bits(m, qp, w);
  const uint64_t start = bits.next_selected(offset);
  if (!bits.ok()) return false;
  if (start >= w.length) {
    empty_last(m, w, offset, op, out);
    return true;
  }
  const uint64_t end = bits.run_end(start, start + RHN_WIRE_MTU);
  const uint64_t next = bits.next_selected(end);
  if (!bits.ok() ||
      !gather(m, qp, w, start, out.payload, static_cast<uint32_t>(end - start)))
    return false;
  sparse_packet(m, w, offset, start, end, next, op, out);
  return true;
}

// DIFF PUSH: runs of bytes that differ from the twin, exactly: an equal
// byte never travels, even between two close runs, because in the
// multiple-writer protocol another writer may have changed it at the home
// (writing back our unchanged copy would undo that). A packet
// carries as many runs as fit, with a run list (RHN_WOP_F_RUNS), so the
// wire grows with the changed bytes, not with how scattered they are. The
// twin takes each run as it leaves: once the message is out it holds the
// local bytes.
bool write_diff(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                rhn_op_hdr& op, PacketOut& out) {
  constexpr uint32_t kMaxRuns = 256;
  uint8_t* twin = twin_at(m, qp, w.xfer.twin, w.xfer.twin_offset);
  if (!twin) return false;  // freed under the transfer
  uint64_t pos;
  if (!next_difference(m, qp, w, twin, offset, &pos)) return false;
  if (pos >= w.length) {
    empty_last(m, w, offset, op, out);
    return true;
  }
  const uint64_t first = pos;
  rhn_write_run runs[kMaxRuns];
  uint8_t* data = m.xfer_scratch.data() + kXferCompare;
  uint32_t count = 0, data_len = 0;
  uint64_t prev_end = first, next = pos;
  for (;;) {
    const uint32_t used =
        sizeof(rhn_write_runs) + (count + 1) * sizeof(rhn_write_run) + data_len;
    // The run at pos: as long as it differs and fits (at least a byte).
    const auto cap = static_cast<uint32_t>(
        min<uint64_t>({RHN_WIRE_MTU - used, 0xffff, w.length - pos}));
    uint32_t len = 0, have = 0;
    while (len < cap) {
      if (len == have) {
        const uint32_t more =
            min<uint32_t>(max<uint32_t>(have, 64), cap - have);
        if (!gather(m, qp, w, pos + have, data + data_len + have, more))
          return false;
        have += more;
      }
      if (data[data_len + len] == twin[pos + len]) break;
      len++;
    }
    runs[count].skip = static_cast<uint16_t>(pos - prev_end);
    runs[count].length = static_cast<uint16_t>(len);
    count++;
    if (!w.keep_twin) memcpy(twin + pos, data + data_len, len);
    data_len += len;
    prev_end = pos + len;
    if (!next_difference(m, qp, w, twin, prev_end, &next)) return false;
    // Another run if there is one, its skip fits and the packet has room
    // for its entry and a byte of it.
    if (next >= w.length || next - prev_end > 0xffff || count == kMaxRuns ||
        sizeof(rhn_write_runs) + (count + 1) * sizeof(rhn_write_run) +
                data_len >=
            RHN_WIRE_MTU)
      break;
    pos = next;
  }
  rhn_write_runs h{};
  h.count = static_cast<uint16_t>(count);
  memcpy(out.payload, &h, sizeof(h));
  memcpy(out.payload + sizeof(h), runs, count * sizeof(rhn_write_run));
  memcpy(out.payload + sizeof(h) + count * sizeof(rhn_write_run), data,
         data_len);
  op.flags |= RHN_WOP_F_RUNS;
  m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, next - offset - data_len);
  op.remote_addr = w.remote_addr + first;
  op.msg_offset = static_cast<uint32_t>(first);
  out.len = static_cast<uint32_t>(sizeof(h) + count * sizeof(rhn_write_run) +
                                  data_len);
  out.advance = static_cast<uint32_t>(next - offset);
  out.last = next >= w.length;
  return true;
}

}  // namespace

uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w,
              uint8_t* syndrome) {
  *syndrome = RHN_SYN_BAD_XFER;
  const rhn_wqe_xfer& x = w.xfer;
  switch (w.xfer_mode) {
    case RHN_XFER_BITMAP: {
      const rhn_syndrome s =
          m.check_key(x.bitmap_lkey, kNone, qp.pdn, 0, x.bitmap_addr,
                      bitmap_bytes(w), nullptr);
      if (s != RHN_SYN_NONE) return RHN_CQE_LOC_QP_OP_ERR;
      break;
    }
    case RHN_XFER_TWIN:
    case RHN_XFER_DIFF: {
      // The context's own twin, long enough for the whole area.
      const TwinObj* t = m.twin_of(x.twin, qp.context);
      const uint64_t size = t ? uint64_t{t->pages} * RHN_TWIN_PAGE : 0;
      if (!t || x.twin_offset > size || w.length > size - x.twin_offset)
        return RHN_CQE_LOC_QP_OP_ERR;
      break;
    }
    default:
      break;
  }
  *syndrome = RHN_SYN_NONE;
  return RHN_CQE_SUCCESS;
}

bool build_write(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                 rhn_op_hdr& op, PacketOut& out) {
  switch (w.xfer_mode) {
    case RHN_XFER_STRIDE:
      return write_stride(m, qp, w, offset, op, out);
    case RHN_XFER_BITMAP:
      return write_bitmap(m, qp, w, offset, op, out);
    case RHN_XFER_DIFF:
      return write_diff(m, qp, w, offset, op, out);
    default:
      return false;  // the decoder lets no other mode through
  }
}

bool build_read_request(Impl& m, QpObj& qp, const DecodedWqe& w,
                        uint64_t offset, rhn_op_hdr& op, PacketOut& out) {
  const rhn_wqe_xfer& x = w.xfer;
  op.imm_data = w.xfer_mode;
  op.remote_addr = w.remote_addr;
  op.msg_offset = 0;
  op.msg_len = static_cast<uint32_t>(w.length);
  out.len = 0;
  out.advance = static_cast<uint32_t>(w.length - offset);
  out.last = true;
  switch (w.xfer_mode) {
    case RHN_XFER_STRIDE: {
      // One request: the responder walks the strides.
      rhn_read_xfer d{};
      d.block = x.block;
      d.remote_stride = x.remote_stride;
      memcpy(out.payload, &d, sizeof(d));
      out.len = sizeof(d);
      return true;
    }
    case RHN_XFER_BITMAP: {
      // One request per RHN_READ_BITMAP_BLOCKS blocks, with their bits.
      const uint64_t window = uint64_t{RHN_READ_BITMAP_BLOCKS} * x.block;
      const uint64_t len = min(window, w.length - offset);
      const uint64_t first_bit = offset / x.block;
      const uint64_t nbits = (len + x.block - 1) / x.block;
      rhn_read_xfer d{};
      d.block = x.block;
      memcpy(out.payload, &d, sizeof(d));
      BitmapCursor bits(m, qp, w);
      if (!bits.copy(first_bit / 8, out.payload + sizeof(d), (nbits + 7) / 8))
        return false;
      // Bits past the window's end in its last byte belong to no byte.
      if (nbits % 8)
        out.payload[sizeof(d) + nbits / 8] &= (1u << nbits % 8) - 1;
      op.remote_addr = w.remote_addr + offset;
      op.msg_offset = static_cast<uint32_t>(offset);
      op.msg_len = static_cast<uint32_t>(len);
      out.len = static_cast<uint32_t>(sizeof(d) + (nbits + 7) / 8);
      out.advance = static_cast<uint32_t>(len);
      out.last = offset + len >= w.length;
      return true;
    }
    default:  // TWIN: a plain READ; the answers also go to the twin
      op.imm_data = 0;
      return true;
  }
}

namespace {

// A run list's table, checked against the payload: its entries, where the
// bytes start, and the extent the runs span from remote_addr.
struct RunList {
  uint32_t count = 0;
  const uint8_t* table = nullptr;
  const uint8_t* bytes = nullptr;
  uint64_t extent = 0;
};

bool parse_runs(Span<const uint8_t> data, RunList* out) {
  rhn_write_runs h;
  if (data.size() < sizeof(h)) return false;
  memcpy(&h, data.data(), sizeof(h));
  const uint64_t table = uint64_t{h.count} * sizeof(rhn_write_run);
  if (h.count == 0 || h.reserved || sizeof(h) + table > data.size())
    return false;
  out->count = h.count;
  out->table = data.data() + sizeof(h);
  out->bytes = out->table + table;
  uint64_t total = 0, extent = 0;
  for (uint32_t i = 0; i < h.count; i++) {
    rhn_write_run r;
    memcpy(&r, out->table + i * sizeof(r), sizeof(r));
    if (r.length == 0) return false;
    total += r.length;
    extent += uint64_t{r.skip} + r.length;
  }
  out->extent = extent;
  return total == data.size() - sizeof(h) - table;
}

}  // namespace

rhn_syndrome write_extent(const rhn_op_hdr& op, Span<const uint8_t> data,
                          uint64_t* extent) {
  *extent = data.size();
  if ((op.flags & RHN_WOP_F_RUNS) && (op.flags & RHN_WOP_F_STRIDED))
    return RHN_SYN_BAD_XFER;
  if (op.flags & RHN_WOP_F_RUNS) {
    RunList runs;
    if (!parse_runs(data, &runs)) return RHN_SYN_BAD_XFER;
    *extent = runs.extent;
    return RHN_SYN_NONE;
  }
  if (!(op.flags & RHN_WOP_F_STRIDED)) return RHN_SYN_NONE;
  rhn_write_stride d;
  if (data.size() < sizeof(d)) return RHN_SYN_BAD_XFER;
  memcpy(&d, data.data(), sizeof(d));
  const uint64_t bytes = data.size() - sizeof(d);
  if (d.block == 0 || d.reserved || d.remote_stride < d.block ||
      d.remote_stride > (uint64_t{1} << 40) || bytes == 0 || bytes % d.block)
    return RHN_SYN_BAD_XFER;
  *extent = (bytes / d.block - 1) * d.remote_stride + d.block;
  return RHN_SYN_NONE;
}

bool place_write(Impl& m, const rhn_op_hdr& op, Span<const uint8_t> data,
                 uint32_t mr_index, uint64_t va) {
  if (op.flags & RHN_WOP_F_RUNS) {
    RunList runs;
    parse_runs(data, &runs);  // write_extent accepted it
    const uint8_t* bytes = runs.bytes;
    for (uint32_t i = 0; i < runs.count; i++) {
      rhn_write_run r;
      memcpy(&r, runs.table + i * sizeof(r), sizeof(r));
      va += r.skip;
      if (!m.mr_dma(mr_index, va, const_cast<uint8_t*>(bytes), r.length, true))
        return false;
      va += r.length;
      bytes += r.length;
    }
    return true;
  }
  if (!(op.flags & RHN_WOP_F_STRIDED))
    return data.empty() ||
           m.mr_dma(mr_index, va, const_cast<uint8_t*>(data.data()),
                    data.size(), true);
  rhn_write_stride d;
  memcpy(&d, data.data(), sizeof(d));
  const uint8_t* bytes = data.data() + sizeof(d);
  const uint64_t n = (data.size() - sizeof(d)) / d.block;
  for (uint64_t i = 0; i < n; i++)
    if (!m.mr_dma(mr_index, va + i * d.remote_stride,
                  const_cast<uint8_t*>(bytes + i * d.block), d.block, true))
      return false;
  return true;
}

rhn_syndrome read_extent(const rhn_op_hdr& op, Span<const uint8_t> data,
                         uint64_t* extent) {
  *extent = op.msg_len;
  if (op.imm_data == RHN_XFER_BASIC) return RHN_SYN_NONE;
  rhn_read_xfer d;
  if (data.size() < sizeof(d)) return RHN_SYN_BAD_XFER;
  memcpy(&d, data.data(), sizeof(d));
  if (d.block == 0 || d.reserved) return RHN_SYN_BAD_XFER;
  switch (op.imm_data) {
    case RHN_XFER_STRIDE: {
      if (d.remote_stride < d.block || d.remote_stride > (uint64_t{1} << 40) ||
          op.msg_len % d.block)
        return RHN_SYN_BAD_XFER;
      const uint64_t count = op.msg_len / d.block;
      *extent = count ? (count - 1) * d.remote_stride + d.block : 0;
      return RHN_SYN_NONE;
    }
    case RHN_XFER_BITMAP: {
      const uint64_t nbits = (uint64_t{op.msg_len} + d.block - 1) / d.block;
      if (nbits > RHN_READ_BITMAP_BLOCKS ||
          data.size() != sizeof(d) + (nbits + 7) / 8)
        return RHN_SYN_BAD_XFER;
      return RHN_SYN_NONE;
    }
    default:
      return RHN_SYN_BAD_XFER;
  }
}

void start_read(Impl& m, const rhn_op_hdr& op, Span<const uint8_t> data,
                ResponderRead& rr) {
  rr.xfer_mode = static_cast<uint8_t>(op.imm_data);
  rr.final = (op.flags & RHN_WOP_F_LAST) != 0;
  rr.msg_offset = op.msg_offset;
  if (rr.xfer_mode == RHN_XFER_BASIC) return;
  rhn_read_xfer d;
  memcpy(&d, data.data(), sizeof(d));
  rr.block = d.block;
  rr.remote_stride = d.remote_stride;
  if (rr.xfer_mode != RHN_XFER_BITMAP) return;
  // has_room kept a slot free for it.
  rr.bitmap_slot = m.free_read_bitmaps.front();
  m.free_read_bitmaps.pop();
  uint8_t* bits = m.read_bitmaps.data() + size_t{rr.bitmap_slot} * RHN_WIRE_MTU;
  memcpy(bits, data.data() + sizeof(d), data.size() - sizeof(d));
  rr.sent = static_cast<uint32_t>(next_selected(
      [bits](uint64_t i) { return bits[i]; }, rr.block, rr.length, 0));
  // Counted by the NIC that does not send them.
  m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, rr.sent);
}

rhn_syndrome read_piece(Impl& m, const ResponderRead& rr, uint64_t* at,
                        uint32_t* chunk, uint32_t* next) {
  const uint64_t pos = rr.sent;
  uint64_t len = min<uint64_t>(RHN_WIRE_MTU, rr.length - pos);
  *at = pos;
  switch (rr.xfer_mode) {
    case RHN_XFER_STRIDE:
      if (rr.remote_stride != rr.block)
        len = min<uint64_t>(len, rr.block - pos % rr.block);
      *at = (pos / rr.block) * rr.remote_stride + pos % rr.block;
      *next = static_cast<uint32_t>(pos + len);
      break;
    case RHN_XFER_BITMAP: {
      const uint8_t* bits =
          m.read_bitmaps.data() + size_t{rr.bitmap_slot} * RHN_WIRE_MTU;
      auto load = [bits](uint64_t i) { return bits[i]; };
      const uint64_t end = pos < rr.length ? run_end(load, rr.block, rr.length,
                                                     pos, pos + RHN_WIRE_MTU)
                                           : pos;
      len = end - pos;
      *next =
          static_cast<uint32_t>(next_selected(load, rr.block, rr.length, end));
      m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, *next - end);
      break;
    }
    case RHN_XFER_DIFF: {
      // A DIFF isend: `pos` starts a run that differed when it was found;
      // the run goes on while the bytes differ (at least one byte, so the
      // stream moves), and the twin takes it as it leaves.
      uint8_t* twin =
          twin_at(m, m.qps[rr.responder_qpn], rr.twin, rr.twin_offset);
      if (!twin) return RHN_SYN_BAD_XFER;  // freed under the transfer
      uint8_t* data = m.xfer_scratch.data() + kXferCompare;
      if (len && !stream_bytes(m, rr, pos, data, static_cast<uint32_t>(len)))
        return RHN_SYN_DMA;
      uint64_t run = len ? 1 : 0;
      while (run < len && data[run] != twin[pos + run]) run++;
      memcpy(twin + pos, data, run);
      uint64_t found;
      if (!find_difference(
              m,
              [&](uint64_t o, uint8_t* out, uint32_t n) {
                return stream_bytes(m, rr, o, out, n);
              },
              twin, pos + run, rr.length, &found))
        return RHN_SYN_DMA;
      m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, found - (pos + run));
      len = run;
      *next = static_cast<uint32_t>(found);
      break;
    }
    default:
      *next = static_cast<uint32_t>(pos + len);
      break;
  }
  *chunk = static_cast<uint32_t>(len);
  return RHN_SYN_NONE;
}

void prepare_read(const DecodedWqe& w, ReadCtx& rc) {
  rc.xfer_mode = w.xfer_mode;
  rc.block = w.xfer.block;
  rc.local_stride = w.xfer.local_stride;
  rc.twin = w.xfer.twin;
  rc.twin_offset = w.xfer.twin_offset;
}

bool place_answer(Impl& m, uint32_t qpn, Inflight& e, uint64_t offset,
                  Span<const uint8_t> data) {
  const ReadCtx& rc = m.read_ctxs[e.read_ctx];
  if (rc.xfer_mode != RHN_XFER_STRIDE)
    if (!scatter_answer(m, qpn, e, offset, data)) return false;
  switch (rc.xfer_mode) {
    case RHN_XFER_STRIDE: {
      if (offset + data.size() > e.length) {
        m.counters.add(RHN_CNT_MALFORMED_PACKETS);
        m.finish_entry(qpn, e, RHN_CQE_BAD_RESP_ERR, RHN_SYN_NONE);
        return false;
      }
      if (!scatter_strided(m, rc.sge, rc.num_sge, m.qps[qpn].pdn, rc.block,
                           rc.local_stride, offset, data)) {
        m.counters.add(RHN_CNT_LOCAL_PROT_ERRORS);
        m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_DMA);
        return false;
      }
      return true;
    }
    case RHN_XFER_TWIN: {
      uint8_t* twin = twin_at(m, m.qps[qpn], rc.twin, rc.twin_offset);
      if (!twin) {  // freed while the READ was out
        m.finish_entry(qpn, e, RHN_CQE_LOC_PROT_ERR, RHN_SYN_BAD_XFER);
        return false;
      }
      memcpy(twin + offset, data.data(), data.size());
      return true;
    }
    default:  // BITMAP: message offsets are the extent's
      return true;
  }
}

// ---- Messages

SendStart start_send(Impl& m, QpObj& qp, const DecodedWqe& w,
                     ResponderRead& rr) {
  const rhn_wqe_xfer& x = w.xfer;
  rr.xfer_mode = w.xfer_mode;
  switch (w.xfer_mode) {
    case RHN_XFER_STRIDE:
      // The sender's blocks, packed in the message.
      rr.block = x.block;
      rr.remote_stride = x.local_stride;
      return SendStart::kStarted;
    case RHN_XFER_BITMAP: {
      // The bits of the bytes the receive takes, held while the stream
      // runs (check() bounded them to one slot).
      if (m.free_read_bitmaps.empty()) return SendStart::kWait;
      const uint16_t slot = m.free_read_bitmaps.front();
      uint8_t* bits = m.read_bitmaps.data() + size_t{slot} * RHN_WIRE_MTU;
      const uint64_t nbits = (uint64_t{rr.length} + x.block - 1) / x.block;
      BitmapCursor cursor(m, qp, w);
      if (nbits && !cursor.copy(0, bits, (nbits + 7) / 8))
        return SendStart::kFailed;
      m.free_read_bitmaps.pop();
      rr.bitmap_slot = slot;
      rr.block = x.block;
      rr.sent = static_cast<uint32_t>(next_selected(
          [bits](uint64_t i) { return bits[i]; }, rr.block, rr.length, 0));
      m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, rr.sent);
      return SendStart::kStarted;
    }
    case RHN_XFER_DIFF: {
      const uint8_t* twin = twin_at(m, qp, x.twin, x.twin_offset);
      uint64_t first;
      if (!twin || !next_difference(m, qp, w, twin, 0, &first))
        return SendStart::kFailed;
      rr.twin = x.twin;
      rr.twin_offset = x.twin_offset;
      rr.sent = static_cast<uint32_t>(min<uint64_t>(first, rr.length));
      m.counters.add(RHN_CNT_PARTIAL_BYTES_SKIPPED, rr.sent);
      return SendStart::kStarted;
    }
    default:
      return SendStart::kStarted;
  }
}

uint8_t check_receive(Impl& m, const TagRecv& r, uint8_t* syndrome) {
  const uint64_t length = r.sge.length;
  bool ok = true;
  switch (r.xfer_mode) {
    case RHN_XFER_BASIC:
      break;
    case RHN_XFER_STRIDE:
      ok =
          r.xfer_block && r.xfer_count && r.xfer_stride >= r.xfer_block &&
          r.xfer_stride <= (uint64_t{1} << 40) &&
          uint64_t{r.xfer_block} * r.xfer_count <= UINT32_MAX &&
          (uint64_t{r.xfer_count} - 1) * r.xfer_stride + r.xfer_block <= length;
      break;
    case RHN_XFER_BITMAP: {
      const uint64_t nbits =
          r.xfer_block ? (length + r.xfer_block - 1) / r.xfer_block : 0;
      ok = r.xfer_block &&
           (!nbits || m.check_key(r.xfer_key, kNone, r.pdn, 0, r.xfer_addr,
                                  (nbits + 7) / 8, nullptr) == RHN_SYN_NONE);
      break;
    }
    case RHN_XFER_TWIN: {
      const TwinObj* t = m.twin_of(r.xfer_key, r.context);
      const uint64_t size = t ? uint64_t{t->pages} * RHN_TWIN_PAGE : 0;
      ok = t && r.xfer_addr <= size && length <= size - r.xfer_addr;
      break;
    }
    default:
      ok = false;
  }
  if (ok) return RHN_CQE_SUCCESS;
  m.counters.add(RHN_CNT_BAD_WQES);
  *syndrome = RHN_SYN_BAD_XFER;
  return RHN_CQE_LOC_QP_OP_ERR;
}

uint32_t receive_capacity(const TagRecv& r) {
  if (r.xfer_mode == RHN_XFER_STRIDE)
    return r.xfer_block * r.xfer_count;  // check_receive bounded it
  return r.sge.length;
}

bool place_message(Impl& m, const TagRecv& r, uint64_t offset,
                   Span<const uint8_t> data) {
  if (data.empty()) return true;
  switch (r.xfer_mode) {
    case RHN_XFER_STRIDE:
      return scatter_strided(m, &r.sge, 1, r.pdn, r.xfer_block, r.xfer_stride,
                             offset, data);
    case RHN_XFER_BITMAP: {
      // The bits of this packet's blocks (a packet is at most an MTU).
      const uint64_t g = r.xfer_block;
      const uint64_t first = offset / g / 8;
      const uint64_t last = (offset + data.size() - 1) / g / 8;
      uint8_t bits[RHN_WIRE_MTU / 8 + 2];
      if (data.size() > RHN_WIRE_MTU) return false;
      const uint64_t nbytes = ((uint64_t{r.sge.length} + g - 1) / g + 7) / 8;
      const rhn_sge map{r.xfer_addr, static_cast<uint32_t>(nbytes), r.xfer_key};
      if (!m.sge_dma(&map, 1, first, bits, last - first + 1, r.pdn, false))
        return false;
      auto load = [&](uint64_t i) { return bits[i - first]; };
      const uint64_t end = offset + data.size();
      for (uint64_t pos = next_selected(load, g, end, offset); pos < end;) {
        const uint64_t stop = partial::run_end(load, g, end, pos, end);
        if (!m.sge_dma(&r.sge, 1, pos,
                       const_cast<uint8_t*>(data.data() + (pos - offset)),
                       stop - pos, r.pdn, true))
          return false;
        pos = next_selected(load, g, end, stop);
      }
      return true;
    }
    case RHN_XFER_TWIN: {
      TwinObj* t = m.twin_of(r.xfer_key, r.context);
      if (!t || !m.sge_dma(&r.sge, 1, offset, const_cast<uint8_t*>(data.data()),
                           data.size(), r.pdn, true))
        return false;
      memcpy(m.twin_bytes(*t) + r.xfer_addr + offset, data.data(), data.size());
      return true;
    }
    default:
      return m.sge_dma(&r.sge, 1, offset, const_cast<uint8_t*>(data.data()),
                       data.size(), r.pdn, true);
  }
}

}  // namespace rhinet::fw::partial
