// SPDX-License-Identifier: BSD-2-Clause
// Firmware images and the shell's registers (firmware-image.md): what a
// card does with an image the host downloads and commits, the verdict of
// each kind of bad image, and what the next reset boots.
#include <cstring>
#include <string>
#include <vector>

#include "case.h"
#include "fw_image.h"
#include "lib/nic.h"

namespace rhinet::conform {
namespace {

#define UP(n)                                    \
  do {                                           \
    const std::string e_ = (n).bring_up();       \
    CONFORM_THAT(c, e_.empty(), "bring-up", e_); \
  } while (0)

void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b[at + i] = uint8_t(v >> (8 * i));
}

// An image for `board` of `payload_len` bytes of pattern, both CRCs right.
std::vector<uint8_t> image(uint32_t board, uint32_t version,
                           uint32_t payload_len = 3000,
                           uint16_t major = RHN_VERSION_MAJOR) {
  std::vector<uint8_t> b(RHN_FW_HEADER_SIZE + payload_len);
  for (uint32_t i = 0; i < payload_len; i++)
    b[RHN_FW_HEADER_SIZE + i] = uint8_t(i * 13 + 1);
  put32(b, 0, RHN_FW_MAGIC);
  put32(b, 4, RHN_FW_HEADER_VERSION | RHN_FW_HEADER_SIZE << 16);
  put32(b, 8, major | uint32_t{RHN_VERSION_MINOR} << 16);
  put32(b, 12, board);
  put32(b, 16, version);
  put32(b, 20, payload_len);
  put32(b, 24, rhn_fw_crc32c(b.data() + RHN_FW_HEADER_SIZE, payload_len));
  std::memcpy(b.data() + 32, "conformance", 11);
  put32(b, 60, rhn_fw_crc32c(b.data(), 60));
  return b;
}

rhn_admin_cmd download(uint64_t addr, uint32_t offset, uint32_t length) {
  rhn_admin_cmd cmd = Nic::cmd(RHN_ADMIN_FW_DOWNLOAD);
  cmd.u.fw_download.addr = addr;
  cmd.u.fw_download.offset = offset;
  cmd.u.fw_download.length = length;
  return cmd;
}

rhn_admin_cmd commit(uint32_t length, uint32_t flags) {
  rhn_admin_cmd cmd = Nic::cmd(RHN_ADMIN_FW_COMMIT);
  cmd.u.fw_commit.length = length;
  cmd.u.fw_commit.flags = flags;
  return cmd;
}

// Runs `cmd`: its status and detail must be the expected ones.
bool refused(Nic& n, Check& c, const std::string& what,
             const rhn_admin_cmd& cmd, uint8_t status, uint32_t detail) {
  uint32_t got_detail = ~0u;
  const uint8_t got = n.run(cmd, nullptr, &got_detail);
  return c.eq(what + ": status", status, got) &&
         c.eq(what + ": detail", detail, got_detail);
}

// Puts the image into host memory and downloads it in one command.
uint8_t stage(Nic& n, const std::vector<uint8_t>& img) {
  const uint64_t buf = n.alloc(img.size());
  n.target().mem_write(buf, img.data(), img.size());
  return n.run(download(buf, 0, uint32_t(img.size())));
}

}  // namespace

CONFORM_CASE(fw_identity, "fw.registers.identity", "fw",
             "the shell's registers after power-on: a known board, firmware "
             "running from flash, nothing pending, read-only") {
  Nic n(t);
  const uint32_t board = n.r32(RHN_REG_BOARD_ID);
  CONFORM_THAT(c, board == RHN_BOARD_QEMU || board == RHN_BOARD_QEMU_SOFTCORE,
               "BOARD_ID", "unknown board " + hex(board));
  const uint32_t state = n.r32(RHN_REG_FW_STATE);
  c.eq("FW_STATE.STATE", 2, state & RHN_FW_STATE_STATE_MASK);
  c.eq("FW_STATE.HOST_LOADED|PENDING", 0,
       state & (RHN_FW_STATE_HOST_LOADED | RHN_FW_STATE_PENDING));
  const uint32_t running = n.r32(RHN_REG_FW_RUNNING);
  CONFORM_THAT(c, running != 0, "FW_RUNNING", "0 while firmware runs");
  c.eq("FW_STORED (flash holds what runs)", running, n.r32(RHN_REG_FW_STORED));
  const uint64_t serial = n.r64(RHN_REG_SERIAL);
  c.eq("SERIAL low half", uint32_t(serial), n.r32(RHN_REG_SERIAL));
  c.eq("SERIAL high half", uint32_t(serial >> 32), n.r32(RHN_REG_SERIAL + 4));
  n.w32(RHN_REG_BOARD_ID, board + 1);
  n.w32(RHN_REG_FW_RUNNING, running + 1);
  n.w32(RHN_REG_FW_STATE, RHN_FW_STATE_PENDING);
  t.settle();
  c.eq("BOARD_ID after a write", board, n.r32(RHN_REG_BOARD_ID));
  c.eq("FW_RUNNING after a write", running, n.r32(RHN_REG_FW_RUNNING));
  c.eq("FW_STATE after a write", state, n.r32(RHN_REG_FW_STATE));
}

CONFORM_CASE(fw_download_bad, "fw.download.refusals", "fw",
             "FW_DOWNLOAD refuses a user context, length 0, more than a "
             "chunk, beyond the image, and a bus error (counted)") {
  Nic n(t);
  UP(n);
  const uint64_t buf = n.alloc(RHN_FW_CHUNK_MAX + 4096);
  CONFORM_THAT(c, n.create_context(1), "context 1", n.error());
  rhn_admin_cmd user = download(buf, 0, 64);
  user.hdr.context = 1;
  refused(n, c, "from a user context", user, RHN_ADMIN_NOT_PERMITTED, 0);
  refused(n, c, "length 0", download(buf, 0, 0), RHN_ADMIN_BAD_PARAM,
          RHN_FW_SHORT);
  refused(n, c, "a chunk of 64 KiB + 1", download(buf, 0, RHN_FW_CHUNK_MAX + 1),
          RHN_ADMIN_BAD_PARAM, RHN_FW_TOO_LARGE);
  refused(n, c, "at offset 4 GiB - 256", download(buf, 0xffffff00u, 512),
          RHN_ADMIN_BAD_PARAM, RHN_FW_TOO_LARGE);
  refused(n, c, "beyond the largest image",
          download(buf, RHN_FW_HEADER_SIZE + RHN_FW_MAX_IMAGE + 65536, 64),
          RHN_ADMIN_BAD_PARAM, RHN_FW_TOO_LARGE);
  const uint64_t dma_errors = n.counter(RHN_CNT_DMA_ERRORS);
  refused(n, c, "from a bad bus address", download(t.bad_bus_address(), 0, 256),
          RHN_ADMIN_DMA_ERROR, 0);
  c.eq("RHN_CNT_DMA_ERRORS increase", 1,
       n.counter(RHN_CNT_DMA_ERRORS) - dma_errors);
  c.eq("a full chunk", RHN_ADMIN_OK, n.run(download(buf, 0, RHN_FW_CHUNK_MAX)));
}

CONFORM_CASE(fw_commit_verdicts, "fw.commit.verdicts", "fw",
             "each kind of bad image is refused with the shell's verdict as "
             "detail, and changes nothing") {
  Nic n(t);
  UP(n);
  const uint32_t board = n.r32(RHN_REG_BOARD_ID);
  const uint32_t stored = n.r32(RHN_REG_FW_STORED);
  const uint32_t state = n.r32(RHN_REG_FW_STATE);
  const uint32_t kFlags = RHN_FW_COMMIT_STORE | RHN_FW_COMMIT_ACTIVATE;
  const std::vector<uint8_t> good = image(board, RHN_FW_VERSION(9, 8, 7));
  const uint32_t len = uint32_t(good.size());
  struct Bad {
    const char* what;
    std::vector<uint8_t> img;
    uint32_t length;
    uint32_t verdict;
  };
  std::vector<Bad> bad;
  auto with = [&](size_t at, uint8_t x) {
    std::vector<uint8_t> b = good;
    b[at] ^= x;
    return b;
  };
  bad.push_back({"shorter than a header", good, 63, RHN_FW_SHORT});
  bad.push_back({"shorter than announced", good, len - 1, RHN_FW_SHORT});
  bad.push_back({"bad magic", with(0, 1), len, RHN_FW_BAD_MAGIC});
  bad.push_back({"header CRC", with(60, 1), len, RHN_FW_BAD_HEADER});
  bad.push_back({"payload CRC", with(len - 1, 0x80), len, RHN_FW_BAD_IMAGE});
  bad.push_back({"contract major + 1",
                 image(board, 1, 3000, RHN_VERSION_MAJOR + 1), len,
                 RHN_FW_WRONG_CONTRACT});
  bad.push_back(
      {"another board", image(board ^ 3, 1), len, RHN_FW_WRONG_BOARD});
  for (const Bad& b : bad) {
    CONFORM_EQ(c, std::string(b.what) + ": download", RHN_ADMIN_OK,
               stage(n, b.img));
    refused(n, c, b.what, commit(b.length, kFlags), RHN_ADMIN_BAD_PARAM,
            b.verdict);
  }
  CONFORM_EQ(c, "good image: download", RHN_ADMIN_OK, stage(n, good));
  refused(n, c, "no flag", commit(len, 0), RHN_ADMIN_BAD_PARAM, 0);
  refused(n, c, "an unknown flag", commit(len, 4), RHN_ADMIN_BAD_PARAM, 0);
  c.eq("FW_STORED unchanged", stored, n.r32(RHN_REG_FW_STORED));
  c.eq("FW_STATE unchanged", state, n.r32(RHN_REG_FW_STATE));
}

CONFORM_CASE(fw_store, "fw.commit.store", "fw",
             "an image committed with STORE, downloaded in chunks out of "
             "order, becomes FW_STORED; what runs does not change") {
  Nic n(t);
  UP(n);
  const uint32_t running = n.r32(RHN_REG_FW_RUNNING);
  const uint32_t version = RHN_FW_VERSION(3, 2, 1);
  const std::vector<uint8_t> img =
      image(n.r32(RHN_REG_BOARD_ID), version, 20000);
  const uint64_t buf = n.alloc(img.size());
  t.mem_write(buf, img.data(), img.size());
  // Last piece first: the commit's check decides, not the order.
  const uint32_t cut[] = {0, 7000, 15001, uint32_t(img.size())};
  for (int i = 2; i >= 0; i--)
    CONFORM_EQ(c, "chunk " + std::to_string(i), RHN_ADMIN_OK,
               n.run(download(buf + cut[i], cut[i], cut[i + 1] - cut[i])));
  CONFORM_EQ(c, "commit STORE", RHN_ADMIN_OK,
             n.run(commit(uint32_t(img.size()), RHN_FW_COMMIT_STORE)));
  c.eq("FW_STORED", version, n.r32(RHN_REG_FW_STORED));
  c.eq("FW_RUNNING", running, n.r32(RHN_REG_FW_RUNNING));
  c.eq("FW_STATE.PENDING", 0, n.r32(RHN_REG_FW_STATE) & RHN_FW_STATE_PENDING);
}

CONFORM_CASE(fw_activate, "fw.commit.activate_boots_at_reset", "fw",
             "an image committed with ACTIVATE is pending until CONTROL.RESET "
             "and then runs, loaded by the host") {
  Nic n(t);
  UP(n);
  const uint32_t running = n.r32(RHN_REG_FW_RUNNING);
  const uint32_t stored = n.r32(RHN_REG_FW_STORED);
  const uint32_t version = RHN_FW_VERSION(4, 5, 6);
  const std::vector<uint8_t> img = image(n.r32(RHN_REG_BOARD_ID), version);
  CONFORM_EQ(c, "download", RHN_ADMIN_OK, stage(n, img));
  CONFORM_EQ(c, "commit ACTIVATE", RHN_ADMIN_OK,
             n.run(commit(uint32_t(img.size()), RHN_FW_COMMIT_ACTIVATE)));
  c.eq("FW_STATE.PENDING before the reset", RHN_FW_STATE_PENDING,
       n.r32(RHN_REG_FW_STATE) & RHN_FW_STATE_PENDING);
  c.eq("FW_RUNNING before the reset", running, n.r32(RHN_REG_FW_RUNNING));
  c.eq("FW_STORED (not stored)", stored, n.r32(RHN_REG_FW_STORED));
  n.w32(RHN_REG_CONTROL, RHN_CONTROL_RESET);
  t.settle();
  // Only the shell's registers: what the image does is the image's.
  c.eq("FW_RUNNING after the reset", version, n.r32(RHN_REG_FW_RUNNING));
  c.eq("FW_STATE.HOST_LOADED|PENDING after the reset", RHN_FW_STATE_HOST_LOADED,
       n.r32(RHN_REG_FW_STATE) &
           (RHN_FW_STATE_HOST_LOADED | RHN_FW_STATE_PENDING));
}

}  // namespace rhinet::conform
