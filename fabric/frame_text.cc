// SPDX-License-Identifier: BSD-2-Clause
#include "frame_text.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "rhinet/hw_wire.h"

namespace rhinet::fabric {

namespace {

const char* pkt_type_name(uint8_t t) {
  switch (t) {
    case RHN_PKT_DATA:
      return "DATA";
    case RHN_PKT_ACK:
      return "ACK";
    case RHN_PKT_NAK:
      return "NAK";
    case RHN_PKT_RAW:
      return "RAW";
    case RHN_PKT_MGMT:
      return "MGMT";
    case RHN_PKT_COLL:
      return "COLL";
    default:
      return "?";
  }
}

const char* op_name(uint8_t op) {
  switch (op) {
    case RHN_WOP_SEND:
      return "SEND";
    case RHN_WOP_WRITE:
      return "WRITE";
    case RHN_WOP_READ_REQ:
      return "READ_REQ";
    case RHN_WOP_FETCH_ADD:
      return "FETCH_ADD";
    case RHN_WOP_CMP_SWAP:
      return "CMP_SWAP";
    case RHN_WOP_ATOMIC_EXT:
      return "ATOMIC_EXT";
    case RHN_WOP_READ_RESP:
      return "READ_RESP";
    case RHN_WOP_ATOMIC_RESP:
      return "ATOMIC_RESP";
    case RHN_WOP_NAK:
      return "OP_NAK";
    default:
      return "OP?";
  }
}

std::string flag_list(unsigned flags, std::span<const char* const> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); i++) {
    if (!(flags & (1u << i))) continue;
    if (!out.empty()) out += '|';
    out += names[i];
  }
  return out.empty() ? "-" : out;
}

}  // namespace

std::string describe_frame(std::span<const uint8_t> f) {
  char buf[512];
  if (f.size() < sizeof(rhn_pkt_hdr))
    return "runt frame of " + std::to_string(f.size()) + " bytes";
  rhn_pkt_hdr h;
  std::memcpy(&h, f.data(), sizeof h);
  if (h.magic != RHN_WIRE_MAGIC)
    return "not RHiNET (magic 0x" + std::to_string(h.magic) + ")";
  static const char* const kPktFlags[] = {"SYN", "ACK_REQ", "ACK_VALID",
                                          "RESYNC"};
  int n = std::snprintf(buf, sizeof buf,
                        "%s %u->%u ses=%u seq=%u %s ack=%u/%u len=%zu",
                        pkt_type_name(h.type), h.src_node, h.dst_node,
                        h.session, h.seq, flag_list(h.flags, kPktFlags).c_str(),
                        h.ack_session, h.ack_seq, f.size());
  std::string out(buf, size_t(n));
  if (h.type == RHN_PKT_DATA && f.size() >= RHN_DATA_HDR_LEN) {
    rhn_op_hdr op;
    std::memcpy(&op, f.data() + RHN_PKT_HDR_LEN, sizeof op);
    static const char* const kOpFlags[] = {"FIRST",     "LAST", "IMM",
                                           "SOLICITED", "AREA", "SIGNAL"};
    n = std::snprintf(
        buf, sizeof buf,
        " | %s qp %u->%u msn=%u %s key=0x%x addr=0x%llx msg=%u@%u "
        "payload=%u",
        op_name(op.opcode), op.src_qpn, op.dst_qpn, op.msn,
        flag_list(op.flags, kOpFlags).c_str(), op.rkey,
        static_cast<unsigned long long>(op.remote_addr), op.msg_len,
        op.msg_offset, h.payload_len);
    out.append(buf, size_t(n));
    if (op.opcode == RHN_WOP_NAK)
      out += " syndrome=" + std::to_string(op.syndrome);
  }
  if (h.type == RHN_PKT_COLL &&
      f.size() >= RHN_PKT_HDR_LEN + sizeof(rhn_coll_frame)) {
    rhn_coll_frame c;
    std::memcpy(&c, f.data() + RHN_PKT_HDR_LEN, sizeof c);
    static const char* const kKinds[] = {"?",    "UP",   "DOWN",
                                         "HELD", "BUSY", "ACK"};
    n = std::snprintf(buf, sizeof buf,
                      " | %s key=0x%x seq=%u seg=%u nodes=%u status=%u",
                      c.kind < 6 ? kKinds[c.kind] : "?", c.key, c.seq, c.seg,
                      c.nnodes, c.status);
    out.append(buf, size_t(n));
  }
  return out;
}

bool dump_capture(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "rhinet-switch: cannot open %s\n", path.c_str());
    return false;
  }
  uint32_t ghdr[6];
  if (std::fread(ghdr, 4, 6, f) != 6 || ghdr[0] != 0xa1b2c3d4 ||
      ghdr[5] != 147) {
    std::fprintf(stderr, "rhinet-switch: %s is not a RHiNET capture\n",
                 path.c_str());
    std::fclose(f);
    return false;
  }
  uint32_t rec[4];
  std::vector<uint8_t> frame;
  for (unsigned i = 0; std::fread(rec, 4, 4, f) == 4; i++) {
    frame.resize(rec[2]);
    if (std::fread(frame.data(), 1, frame.size(), f) != frame.size()) break;
    std::printf("%6u %u.%06u %s\n", i, rec[0], rec[1],
                describe_frame(frame).c_str());
  }
  std::fclose(f);
  return true;
}

}  // namespace rhinet::fabric
