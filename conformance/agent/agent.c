// SPDX-License-Identifier: BSD-2-Clause
// rhinet-conform-agent: the guest's half of the conformance target T2.
// Serves the host target's requests (agent_proto.h) arriving on a NIC of
// the guest (a virtio-net whose other end is the target) by doing them on
// the raw access devices of rhinet.ko (raw_access=1), one answer per
// request, until the agent is killed with the VM.
//
//   rhinet-conform-agent IFNAME DEV0 DEV1
#define _DEFAULT_SOURCE  // usleep
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <rdma/rhinet-raw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_proto.h"
#include "rhinet/hw.h"

static int devs[RCA_DEVICES];
static uint32_t vectors[RCA_DEVICES];
static uint8_t payload_in[RCA_MAX_PAYLOAD];
// The answer: header, then payload, sent in one go.
static _Alignas(8) uint8_t answer[sizeof(struct rca_resp) + RCA_MAX_PAYLOAD];
static uint8_t* const payload_out = answer + sizeof(struct rca_resp);

// The channel (agent_proto.h): a packet socket on the NIC, the stream's
// bytes behind a 2-byte count in each frame.
static int chan = -1;
static struct sockaddr_ll to;
static uint8_t rx[2048];
static size_t rx_off, rx_end;

static int chan_open(const char* ifname) {
  const unsigned idx = if_nametoindex(ifname);
  struct sockaddr_ll at = {.sll_family = AF_PACKET,
                           .sll_protocol = htons(RCA_ETHERTYPE),
                           .sll_ifindex = (int)idx};
  if (!idx) return -1;
  chan = socket(AF_PACKET, SOCK_DGRAM, htons(RCA_ETHERTYPE));
  if (chan < 0 || bind(chan, (struct sockaddr*)&at, sizeof(at))) return -1;
  to = at;
  to.sll_halen = 6;
  memset(to.sll_addr, 0xff, 6);  // broadcast: the target takes any
  return 0;
}

static int chan_read(void* buf, size_t len) {
  uint8_t* p = buf;
  while (len) {
    if (rx_off == rx_end) {
      ssize_t n = recv(chan, rx, sizeof(rx), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return -1;
      const size_t count = n >= 2 ? (size_t)(rx[0] | rx[1] << 8) : 0;
      if (count > (size_t)n - 2 || count > RCA_FRAME_DATA) continue;
      rx_off = 2;
      rx_end = 2 + count;
      continue;
    }
    size_t k = rx_end - rx_off < len ? rx_end - rx_off : len;
    memcpy(p, rx + rx_off, k);
    rx_off += k;
    p += k;
    len -= k;
  }
  return 0;
}

static int chan_write(const void* buf, size_t len) {
  const uint8_t* p = buf;
  uint8_t frame[2 + RCA_FRAME_DATA];
  while (len) {
    const size_t k = len < RCA_FRAME_DATA ? len : RCA_FRAME_DATA;
    frame[0] = (uint8_t)k;
    frame[1] = (uint8_t)(k >> 8);
    memcpy(frame + 2, p, k);
    // A frame the NIC has no room for yet: try again.
    while (sendto(chan, frame, 2 + k, 0, (struct sockaddr*)&to, sizeof(to)) <
           0) {
      if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN) return -1;
      usleep(100);
    }
    p += k;
    len -= k;
  }
  return 0;
}

static int reg(int dev, unsigned long cmd, uint32_t off, uint32_t size,
               uint64_t* v) {
  struct rhinet_raw_reg r = {.offset = off, .size = size, .value = *v};
  if (ioctl(devs[dev], cmd, &r)) return -errno;
  *v = r.value;
  return 0;
}

static int msix(int dev, uint32_t n, uint64_t* out) {
  struct rhinet_raw_msix m = {.count = n, .data = (uintptr_t)out};
  memset(out, 0, n * sizeof(*out));
  if (ioctl(devs[dev], RHINET_RAW_MSIX, &m)) return -errno;
  return 0;
}

// Frees the device's buffers and resets it: the NIC as just powered on.
static int fresh(int dev) {
  uint64_t v = RHN_CONTROL_RESET;
  int ret;
  if (ioctl(devs[dev], RHINET_RAW_DMA_FREE_ALL)) return -errno;
  ret = reg(dev, RHINET_RAW_REG_WRITE, RHN_REG_CONTROL, 4, &v);
  for (int i = 0; !ret && i < 200000; i++) {
    ret = reg(dev, RHINET_RAW_REG_READ, RHN_REG_CONTROL, 4, &v);
    if (!ret && !(v & RHN_CONTROL_RESET)) return 0;
    usleep(10);
  }
  return ret ? ret : -ETIMEDOUT;
}

// Does one request; the answer's payload goes to payload_out.
static int serve(const struct rca_req* q, struct rca_resp* r) {
  const int d = q->dev;
  uint64_t v = q->x;
  int ret = 0;
  if (q->op != RCA_FRESH && q->op != RCA_SNAPSHOT && d >= RCA_DEVICES)
    return -EINVAL;
  switch (q->op) {
    case RCA_REG_READ:
    case RCA_REG_WRITE:
      ret = reg(
          d, q->op == RCA_REG_READ ? RHINET_RAW_REG_READ : RHINET_RAW_REG_WRITE,
          q->a, q->size, &v);
      r->value = v;
      return ret;
    case RCA_DB_WRITE: {
      struct rhinet_raw_db b = {
          .page = q->a, .offset = q->b, .size = q->size, .value = q->x};
      return ioctl(devs[d], RHINET_RAW_DB_WRITE, &b) ? -errno : 0;
    }
    case RCA_DMA_ALLOC: {
      struct rhinet_raw_alloc a = {.len = q->x, .align = q->y};
      if (ioctl(devs[d], RHINET_RAW_DMA_ALLOC, &a)) return -errno;
      r->value = a.bus;
      return 0;
    }
    case RCA_MEM_WRITE:
    case RCA_MEM_READ: {
      const uint64_t len = q->op == RCA_MEM_WRITE ? q->len : q->y;
      struct rhinet_raw_mem m = {
          .bus = q->x,
          .len = len,
          .data =
              (uintptr_t)(q->op == RCA_MEM_WRITE ? payload_in : payload_out)};
      if (len > RCA_MAX_PAYLOAD) return -EINVAL;
      if (ioctl(devs[d],
                q->op == RCA_MEM_WRITE ? RHINET_RAW_MEM_WRITE
                                       : RHINET_RAW_MEM_READ,
                &m))
        return -errno;
      if (q->op == RCA_MEM_READ) r->len = (uint32_t)len;
      return 0;
    }
    case RCA_FRESH:
      for (int i = 0; i < RCA_DEVICES && !ret; i++) ret = fresh(i);
      for (int i = 0; i < RCA_DEVICES && !ret; i++) {
        ret = msix(i, vectors[i], (uint64_t*)payload_out + r->len / 8);
        r->len += vectors[i] * 8;
      }
      r->value = vectors[0];
      return ret;
    case RCA_SNAPSHOT: {
      uint64_t* out = (uint64_t*)payload_out;
      if ((q->a + q->b) * 8 * RCA_DEVICES > RCA_MAX_PAYLOAD) return -EINVAL;
      for (int i = 0; i < RCA_DEVICES && !ret; i++) {
        for (uint32_t c = 0; c < q->a && !ret; c++)
          ret = reg(i, RHINET_RAW_REG_READ, RHN_REG_COUNTERS + 8 * c, 8, out++);
        if (!ret) ret = msix(i, q->b, out);
        out += q->b;
      }
      r->len = (q->a + q->b) * 8 * RCA_DEVICES;
      return ret;
    }
    case RCA_MSIX:
      if (q->a * 8 > RCA_MAX_PAYLOAD) return -EINVAL;
      r->len = q->a * 8;
      return msix(d, q->a, (uint64_t*)payload_out);
    default:
      return -EINVAL;
  }
}

int main(int argc, char** argv) {
  if (argc != 2 + RCA_DEVICES) {
    fprintf(stderr, "usage: %s IFNAME DEV0 DEV1\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < RCA_DEVICES; i++) {
    struct rhinet_raw_info info;
    devs[i] = open(argv[2 + i], O_RDWR);
    if (devs[i] < 0 || ioctl(devs[i], RHINET_RAW_INFO, &info)) {
      perror(argv[2 + i]);
      return 1;
    }
    vectors[i] = info.msix_vectors;
  }
  if (chan_open(argv[1])) {
    perror(argv[1]);
    return 1;
  }
  struct rca_resp hello = {.magic = RCA_MAGIC, .value = RCA_DEVICES};
  if (chan_write(&hello, sizeof(hello))) return 1;
  fprintf(stderr, "rhinet-conform-agent: serving on %s\n", argv[1]);
  for (;;) {
    struct rca_req q;
    struct rca_resp r = {.magic = RCA_MAGIC};
    if (chan_read(&q, sizeof(q))) break;
    if (q.magic != RCA_MAGIC || q.len > RCA_MAX_PAYLOAD) {
      fprintf(stderr, "rhinet-conform-agent: bad request\n");
      return 1;
    }
    if (q.len && chan_read(payload_in, q.len)) break;
    r.err = -serve(&q, &r);
    if (r.err) r.len = 0;
    memcpy(answer, &r, sizeof(r));
    if (chan_write(answer, sizeof(r) + r.len)) break;
  }
  perror("rhinet-conform-agent: channel");
  return 1;
}
