/*
 * RHiNET-NG: hosting an external NIC core (SPDX-License-Identifier: BSD-2-Clause)
 *
 * See rhinet_softcore.h. Messages from the core are taken in order and
 * applied in order: each DMA access is finished (by the device's
 * callbacks) before the next message is looked at, so writes reach guest
 * memory in issue order, a DMA read sees the writes before it and an IRQ
 * follows the entry it announces. Messages to the core go through one
 * output queue, flushed into the transport as room allows.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, asprintf; QEMU builds define it already */
#endif
#include "rhinet_softcore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kept_doorbells.h"
#include "rhinet/hw_fw.h"
#include "softcore_blocks.h"
#include "rhinet/hw_queues.h"
#include "rhinet/hw_regs.h"

/* Events (doorbells, frames) wait at most this much in the output queue;
 * beyond it they are dropped like at a full FIFO. Replies always queue. */
#define SC_OUTQ_EVENT_CAP (4u << 20)
/* Past this the core is taken for stuck and the link for broken. */
#define SC_OUTQ_HARD_CAP (64u << 20)
#define SC_INBUF_BYTES (2u * (RHN_LINK_HDR_BYTES + RHN_LINK_MAX_BODY))
/* TIME goes before an event when the clock moved at least this much. */
#define SC_TIME_GRAIN_NS 1000u
/*
 * Frames held back while the core has no room for them (the MAC's buffer,
 * see the flow control in link.h); past it the newest are dropped.
 */
#define SC_RX_HOLD_BYTES (4u << 20)

struct RhnSoftCore {
    RhnSoftCoreOps ops;
    void *opaque;
    int fd;
    pid_t pid;
    int exit_status;
    bool shm_mode;
    volatile struct rhn_link_shm *shm;
    uint8_t *ring_to_core;
    uint8_t *ring_from_core;
    char *sock_path;
    char *ram_path;

    uint32_t spin_us;
    bool dead;
    char error[256];
    bool hello_done;
    struct rhn_link_hello hello;
    int bye_status;

    uint8_t *outq;
    size_t out_start, out_end, out_cap;
    bool db_lost; /* doorbells dropped, DB_OVERFLOW not sent yet */
    /* Writes with a value of their own that found the queue full: sent,
     * the latest of each, ahead of any newer doorbell (kept_doorbells.h). */
    struct rhn_kept_doorbells kept;

    uint8_t *inbuf;
    size_t in_len;

    uint64_t time_sent;
    bool link_up;

    /* Receive flow control: FRAME_IN messages the core has room for, the
     * ones held back (whole messages, in order), drops not told yet. */
    uint32_t rx_credits;
    uint8_t *rxq;
    size_t rxq_start, rxq_end, rxq_cap;
    uint64_t rx_untold;
    uint32_t rto_floor_us;

    uint32_t db_pages;
    uint16_t node_id; /* the identity the device's HELLO gives the core */
    uint8_t mac[6];
    uint8_t (*staging)[RHN_DB_INLINE_WQE_SIZE];
    uint32_t regs[RHN_REG_COUNTERS / 4];
    uint64_t counters[RHN_CNT_COUNT];
    uint32_t *cq_produced; /* RHN_LINK_MAX_CQS, for CQ-arm samples */
    /* The optional blocks the device plays (link.h, RHN_LINK_DEVICE_CAPS)
     * and the frames its transmit block sent. */
    RhnScBlocks *blocks;
    uint64_t txw_frames;
    uint8_t assembled[RHN_LINK_FRAME_MAX]; /* the assembler's frame */
};

static void sc_fail(RhnSoftCore *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool sc_doorbell(RhnSoftCore *sc, const struct rhn_card_doorbell *entry,
                        const void *wqe, bool may_drop);
static void sc_release_frames(RhnSoftCore *sc);
static void sc_send_kept(RhnSoftCore *sc);
static void sc_tell_drops(RhnSoftCore *sc);
static uint8_t *sc_begin_read_reply(RhnSoftCore *sc, uint16_t tag,
                                    uint32_t len);
static void sc_end_read_reply(RhnSoftCore *sc, uint16_t tag, uint8_t *p,
                              int status, uint32_t len);

static void sc_fail(RhnSoftCore *sc, const char *fmt, ...)
{
    va_list ap;

    if (sc->dead) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sc->error, sizeof(sc->error), fmt, ap);
    va_end(ap);
    sc->dead = true;
    sc->regs[RHN_REG_STATUS / 4] |= RHN_STATUS_FATAL;
}

static uint64_t sc_now(RhnSoftCore *sc)
{
    struct timespec ts;

    if (sc->ops.now_ns) {
        return sc->ops.now_ns(sc->opaque);
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Transport ------------------------------------------------------- */

static uint32_t ld_acquire(const volatile uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st_release(volatile uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * A send that found the socket full (a wake-up is already on its way) or
 * the peer gone (the read side reports that, after what it sent).
 */
static bool sc_send_gone(int err)
{
    return err == EAGAIN || err == EWOULDBLOCK || err == EPIPE ||
           err == ECONNRESET;
}

static void sc_wake_core(RhnSoftCore *sc, volatile uint32_t *flag)
{
    static const uint8_t one = 1;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (*flag) {
        *flag = 0;
        if (send(sc->fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
            !sc_send_gone(errno)) {
            sc_fail(sc, "soft core: wake-up failed: %s", strerror(errno));
        }
    }
}

static void ring_copy_in(uint8_t *ring, uint32_t pos, const uint8_t *src,
                         uint32_t n)
{
    uint32_t at = pos & (RHN_LINK_SHM_RING_BYTES - 1);
    uint32_t first = RHN_LINK_SHM_RING_BYTES - at;

    if (first > n) {
        first = n;
    }
    memcpy(ring + at, src, first);
    memcpy(ring, src + first, n - first);
}

static void ring_copy_out(const uint8_t *ring, uint32_t pos, uint8_t *dst,
                          uint32_t n)
{
    uint32_t at = pos & (RHN_LINK_SHM_RING_BYTES - 1);
    uint32_t first = RHN_LINK_SHM_RING_BYTES - at;

    if (first > n) {
        first = n;
    }
    memcpy(dst, ring + at, first);
    memcpy(dst + first, ring, n - first);
}

/* Moves whole queued messages into the ring towards the core. */
static void sc_flush_shm(RhnSoftCore *sc)
{
    volatile struct rhn_link_ring *r = &sc->shm->to_core;
    uint32_t head = r->head;
    bool moved = false;

    for (;;) {
        struct rhn_link_hdr h;
        uint32_t room = RHN_LINK_SHM_RING_BYTES - (head - ld_acquire(&r->tail));
        uint32_t n;

        if (sc->out_end - sc->out_start < sizeof(h)) {
            break;
        }
        memcpy(&h, sc->outq + sc->out_start, sizeof(h));
        n = 4 + h.len;
        if (n > room) {
            /* Ask the core to wake us when it has read some. */
            r->producer_sleeping = 1;
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            room = RHN_LINK_SHM_RING_BYTES - (head - ld_acquire(&r->tail));
            if (n > room) {
                break;
            }
            r->producer_sleeping = 0;
        }
        ring_copy_in(sc->ring_to_core, head, sc->outq + sc->out_start, n);
        head += n;
        sc->out_start += n;
        moved = true;
    }
    if (moved) {
        st_release(&r->head, head);
        sc_wake_core(sc, &r->consumer_sleeping);
    }
}

static void sc_flush_stream(RhnSoftCore *sc)
{
    while (sc->out_end > sc->out_start) {
        ssize_t n = send(sc->fd, sc->outq + sc->out_start,
                         sc->out_end - sc->out_start,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (!sc_send_gone(errno)) {
                sc_fail(sc, "soft core: link write failed: %s",
                        strerror(errno));
            }
            return;
        }
        sc->out_start += (size_t)n;
    }
}

static void sc_flush(RhnSoftCore *sc)
{
    if (sc->dead) {
        return;
    }
    if (sc->shm_mode) {
        sc_flush_shm(sc);
    } else {
        sc_flush_stream(sc);
    }
    if (sc->out_start == sc->out_end) {
        sc->out_start = sc->out_end = 0;
    }
}

/*
 * Room for one message of body_len bytes at the end of the output queue;
 * NULL when an event would pass the cap (or memory is out). The header
 * is written; the caller fills the body and calls sc_commit.
 */
static uint8_t *sc_begin(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                         uint32_t body_len, bool is_event)
{
    size_t need = RHN_LINK_HDR_BYTES + body_len;
    struct rhn_link_hdr h = { 4 + body_len, type, tag };
    uint8_t *p;

    /* Nothing goes ahead of the answer to the core's HELLO. */
    if (sc->dead || !sc->hello_done) {
        return NULL;
    }
    if (is_event && sc->out_end - sc->out_start + need > SC_OUTQ_EVENT_CAP) {
        return NULL;
    }
    if (sc->out_end - sc->out_start + need > SC_OUTQ_HARD_CAP) {
        sc_fail(sc, "soft core: the core does not read its link");
        return NULL;
    }
    if (sc->out_start > 0 && sc->out_end + need > sc->out_cap) {
        memmove(sc->outq, sc->outq + sc->out_start,
                sc->out_end - sc->out_start);
        sc->out_end -= sc->out_start;
        sc->out_start = 0;
    }
    if (sc->out_end + need > sc->out_cap) {
        size_t cap = sc->out_cap ? sc->out_cap : 65536;
        uint8_t *q;

        while (cap < sc->out_end + need) {
            cap *= 2;
        }
        q = realloc(sc->outq, cap);
        if (!q) {
            return NULL;
        }
        sc->outq = q;
        sc->out_cap = cap;
    }
    p = sc->outq + sc->out_end;
    memcpy(p, &h, sizeof(h));
    return p + RHN_LINK_HDR_BYTES;
}

static void sc_commit(RhnSoftCore *sc, uint32_t body_len)
{
    sc->out_end += RHN_LINK_HDR_BYTES + body_len;
}

static bool sc_send(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                    const void *body, uint32_t len, bool is_event)
{
    uint8_t *p = sc_begin(sc, type, tag, len, is_event);

    if (!p) {
        return false;
    }
    if (len) {
        memcpy(p, body, len);
    }
    sc_commit(sc, len);
    return true;
}

/* TIME before a batch of events, when the clock has moved. */
static void sc_send_time(RhnSoftCore *sc, bool always)
{
    struct rhn_link_u64 t = { sc_now(sc) };

    /* Only the clock a deadline asked for must go; the others may drop. */
    if (always || t.value >= sc->time_sent + SC_TIME_GRAIN_NS) {
        if (sc_send(sc, RHN_LINK_TIME, 0, &t, sizeof(t), !always)) {
            sc->time_sent = t.value;
        }
    }
}

/* ---- Messages from the core ---------------------------------------- */

/* A body of exactly size bytes into dst; else the link breaks. */
static bool sc_body(RhnSoftCore *sc, const char *what, const uint8_t *b,
                    uint32_t len, void *dst, size_t size)
{
    if (len != size) {
        sc_fail(sc, "soft core: %s of %u bytes", what, len);
        return false;
    }
    memcpy(dst, b, size);
    return true;
}

/*
 * A posted write the host refused. The engine cannot see it (the write
 * returned when sent), so the DMA window counts it, and tells the core.
 * Read errors go back in the reply; the engine counts those.
 */
static void sc_dma_error(RhnSoftCore *sc, uint16_t tag, int status)
{
    struct rhn_link_status st = { (uint32_t)status, 0 };

    sc->counters[RHN_CNT_DMA_ERRORS]++;
    sc_send(sc, RHN_LINK_DMA_ERROR, tag, &st, sizeof(st), false);
}

static void sc_on_dma_read(RhnSoftCore *sc, uint16_t tag, const uint8_t *b,
                           uint32_t len)
{
    struct rhn_link_dma_read rq;
    uint8_t *p;

    if (!sc_body(sc, "DMA_READ", b, len, &rq, sizeof(rq))) {
        return;
    }
    if (rq.len > RHN_LINK_DMA_CHUNK) {
        sc_fail(sc, "soft core: DMA_READ of %u bytes exceeds %u", rq.len,
                RHN_LINK_DMA_CHUNK);
        return;
    }
    /* A core busy with DMA may not wait (and ask for the time) for long. */
    sc_send_time(sc, false);
    p = sc_begin_read_reply(sc, tag, rq.len);
    if (p) {
        int st = sc->ops.dma_read(sc->opaque, rq.bus_addr,
                                  p + sizeof(struct rhn_link_status), rq.len);

        sc_end_read_reply(sc, tag, p, st, rq.len);
    }
}

/*
 * The shell's firmware slot: the device's (rhn_card_fw_stage and
 * rhn_card_fw_commit); a device without one takes no image.
 */
static void sc_on_fw(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                     const uint8_t *b, uint32_t len)
{
    struct rhn_link_fw f;
    struct rhn_link_status st = { RHN_FW_NO_STAGING, 0 };
    uint32_t data_len = len - (uint32_t)sizeof(f);

    if (len < sizeof(f) || (type == RHN_LINK_FW_COMMIT && data_len) ||
        data_len > RHN_LINK_DMA_CHUNK) {
        sc_fail(sc, "soft core: firmware message of %u bytes", len);
        return;
    }
    memcpy(&f, b, sizeof(f));
    if (type == RHN_LINK_FW_STAGE && sc->ops.fw_stage) {
        st.status = sc->ops.fw_stage(sc->opaque, f.value, b + sizeof(f),
                                     data_len);
    } else if (type == RHN_LINK_FW_COMMIT && sc->ops.fw_commit) {
        st.status = sc->ops.fw_commit(sc->opaque, f.value, f.flags);
    }
    sc_send(sc, RHN_LINK_FW_VERDICT, tag, &st, sizeof(st), false);
}

static void sc_on_dma_write(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                            const uint8_t *b, uint32_t len)
{
    struct rhn_link_dma w;
    const uint8_t *data = b + sizeof(w);
    uint32_t n;
    int st = RHN_CARD_OK;

    if (len < sizeof(w)) {
        sc_fail(sc, "soft core: DMA write message of %u bytes", len);
        return;
    }
    memcpy(&w, b, sizeof(w));
    n = len - sizeof(w);
    if (type == RHN_LINK_DMA_WRITE) {
        if (n) {
            st = sc->ops.dma_write(sc->opaque, w.bus_addr, data, n);
        }
    } else {
        uint32_t tail = n - w.publish_at;

        if (w.publish_at > n) {
            sc_fail(sc, "soft core: DMA_PUBLISH at %u of %u bytes",
                    w.publish_at, n);
            return;
        }
        if (w.publish_at) {
            st = sc->ops.dma_write(sc->opaque, w.bus_addr, data, w.publish_at);
        }
        if (st == RHN_CARD_OK && tail) {
            uint64_t at = w.bus_addr + w.publish_at;

            if (sc->ops.write_barrier) {
                sc->ops.write_barrier(sc->opaque);
            }
            if (tail == 8 && !(at & 7)) {
                uint64_t v;

                memcpy(&v, data + w.publish_at, 8);
                st = sc->ops.dma_store64(sc->opaque, at, v);
            } else {
                st = sc->ops.dma_write(sc->opaque, at, data + w.publish_at,
                                       tail);
            }
        }
    }
    if (st != RHN_CARD_OK) {
        sc_dma_error(sc, tag, st);
    }
}

static void sc_on_store64(RhnSoftCore *sc, uint16_t tag, const uint8_t *b,
                          uint32_t len)
{
    struct rhn_link_store64 s;
    int st;

    if (!sc_body(sc, "DMA_STORE64", b, len, &s, sizeof(s))) {
        return;
    }
    st = (s.bus_addr & 7) ? RHN_CARD_MISALIGNED
                          : sc->ops.dma_store64(sc->opaque, s.bus_addr,
                                                s.value);
    if (st != RHN_CARD_OK) {
        sc_dma_error(sc, tag, st);
    }
}

/*
 * Answers a read of len bytes with DMA_READ_DATA: read(p) fills the
 * reply's bytes and says the status.
 */
static uint8_t *sc_begin_read_reply(RhnSoftCore *sc, uint16_t tag,
                                    uint32_t len)
{
    uint8_t *p = sc_begin(sc, RHN_LINK_DMA_READ_DATA, tag,
                          sizeof(struct rhn_link_status) + len, false);

    if (!p) {
        sc_fail(sc, "soft core: no memory for a DMA read reply");
    }
    return p;
}

static void sc_end_read_reply(RhnSoftCore *sc, uint16_t tag, uint8_t *p,
                              int status, uint32_t len)
{
    struct rhn_link_status st = { (uint32_t)status, 0 };

    memcpy(p, &st, sizeof(st));
    if (status != RHN_CARD_OK) {
        /* No data with an error; the header said more: rewrite it. */
        struct rhn_link_hdr h = { 4 + sizeof(st), RHN_LINK_DMA_READ_DATA,
                                  tag };
        memcpy(p - RHN_LINK_HDR_BYTES, &h, sizeof(h));
        len = 0;
    }
    sc_commit(sc, sizeof(st) + len);
}

/* Region DMA: the table walked here (softcore_blocks.h). */
static void sc_on_dma_region(RhnSoftCore *sc, uint16_t tag, const uint8_t *b,
                             uint32_t len)
{
    struct rhn_link_region_dma rq;
    uint32_t data_len = len - (uint32_t)sizeof(rq);
    uint8_t *p;
    int st;

    if (len < sizeof(rq)) {
        sc_fail(sc, "soft core: DMA_REGION of %u bytes", len);
        return;
    }
    memcpy(&rq, b, sizeof(rq));
    if (rq.len > RHN_LINK_DMA_CHUNK || rq.write > 1 ||
        data_len != (rq.write ? rq.len : 0)) {
        sc_fail(sc, "soft core: DMA_REGION of %u bytes for %u (write %u)",
                data_len, rq.len, rq.write);
        return;
    }
    if (rq.write) {
        st = rhn_scb_region(sc->blocks, &rq.region, rq.va,
                            (void *)(b + sizeof(rq)), rq.len, true);
        if (st != RHN_CARD_OK) {
            sc_dma_error(sc, tag, st);
        }
        return;
    }
    sc_send_time(sc, false);
    p = sc_begin_read_reply(sc, tag, rq.len);
    if (p) {
        st = rhn_scb_region(sc->blocks, &rq.region, rq.va,
                            p + sizeof(struct rhn_link_status), rq.len, false);
        sc_end_read_reply(sc, tag, p, st, rq.len);
    }
}

/* The MAC's side of a frame out: its CRCs filled, then the wire. */
static void sc_frame_out(RhnSoftCore *sc, uint8_t *frame, uint32_t len)
{
    rhn_scb_fill_crcs(frame, len);
    sc->ops.frame_out(sc->opaque, frame, len);
}

/*
 * The transmit assembler: the payload read through the region behind the
 * headers, the frame sent (RHN_CARD_TX_SEND), the payload back to the
 * core for its slot.
 */
static void sc_on_assemble(RhnSoftCore *sc, uint16_t tag, const uint8_t *b,
                           uint32_t len)
{
    uint8_t *frame = sc->assembled;
    struct rhn_link_assemble rq;
    uint32_t hdr_len = len - (uint32_t)sizeof(rq);
    uint8_t *p;
    int st;

    if (len < sizeof(rq)) {
        sc_fail(sc, "soft core: TX_ASSEMBLE of %u bytes", len);
        return;
    }
    memcpy(&rq, b, sizeof(rq));
    if (hdr_len > RHN_LINK_FRAME_MAX || rq.len > RHN_LINK_FRAME_MAX - hdr_len ||
        (rq.flags & ~(uint32_t)RHN_CARD_TX_SEND)) {
        sc_fail(sc, "soft core: TX_ASSEMBLE of %u + %u bytes, flags %#x",
                hdr_len, rq.len, rq.flags);
        return;
    }
    sc_send_time(sc, false);
    p = sc_begin_read_reply(sc, tag, rq.len);
    if (!p) {
        return;
    }
    memcpy(frame, b + sizeof(rq), hdr_len);
    st = rhn_scb_region(sc->blocks, &rq.region, rq.va, frame + hdr_len, rq.len,
                        false);
    memcpy(p + sizeof(struct rhn_link_status), frame + hdr_len, rq.len);
    sc_end_read_reply(sc, tag, p, st, rq.len);
    if (st == RHN_CARD_OK && (rq.flags & RHN_CARD_TX_SEND) && sc->link_up) {
        sc_frame_out(sc, frame, hdr_len + rq.len);
    }
}

/*
 * The transmit block's kick: a TXW_RECORD (with its frame) per WRITE it
 * took, each frame to the wire after its record went into the queue to
 * the core, then TXW_KICKED.
 */
static void sc_txw_kick(RhnSoftCore *sc, uint16_t tag, uint32_t qpn)
{
    struct rhn_link_txw_kicked k;
    struct rhn_card_txw_record r;
    const uint8_t *frame;
    uint32_t n;

    rhn_scb_txw_kick(sc->blocks, qpn, &k);
    while (rhn_scb_txw_record(sc->blocks, &r, &frame, &n)) {
        uint8_t *p = sc_begin(sc, RHN_LINK_TXW_RECORD, 0, sizeof(r) + n,
                              false);

        if (!p) {
            return;
        }
        memcpy(p, &r, sizeof(r));
        memcpy(p + sizeof(r), frame, n);
        sc_commit(sc, sizeof(r) + n);
        if (n && sc->link_up) {
            sc->ops.frame_out(sc->opaque, frame, n);
            sc->txw_frames++;
        }
    }
    sc_send(sc, RHN_LINK_TXW_KICKED, tag, &k, sizeof(k), false);
}

static void sc_on_txw(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                      const uint8_t *b, uint32_t len)
{
    switch (type) {
    case RHN_LINK_TXW_SET_QP: {
        struct rhn_link_txw_qp m;

        if (sc_body(sc, "TXW_SET_QP", b, len, &m, sizeof(m))) {
            rhn_scb_txw_set_qp(sc->blocks, m.qpn, m.armed ? &m.q : NULL);
        }
        return;
    }
    case RHN_LINK_TXW_GRANT: {
        struct rhn_link_txw_grant m;

        if (sc_body(sc, "TXW_GRANT", b, len, &m, sizeof(m))) {
            rhn_scb_txw_grant(sc->blocks, m.qpn, m.inflight, m.slots);
        }
        return;
    }
    case RHN_LINK_TXW_SET_CHANNEL: {
        struct rhn_link_txw_channel m;

        if (sc_body(sc, "TXW_SET_CHANNEL", b, len, &m, sizeof(m))) {
            rhn_scb_txw_set_channel(sc->blocks, m.node, m.armed ? &m.c : NULL);
        }
        return;
    }
    case RHN_LINK_TXW_SLOT_PUSH: {
        struct rhn_link_u64 m;

        if (sc_body(sc, "TXW_SLOT_PUSH", b, len, &m, sizeof(m)) &&
            (m.value > UINT32_MAX ||
             !rhn_scb_txw_slot_push(sc->blocks, (uint32_t)m.value))) {
            sc_fail(sc, "soft core: TXW_SLOT_PUSH of slot %llu refused",
                    (unsigned long long)m.value);
        }
        return;
    }
    case RHN_LINK_TXW_SLOT_BACK:
    case RHN_LINK_TXW_FLUSH:
        if (len) {
            sc_fail(sc, "soft core: TXW message %u with %u bytes", type, len);
        } else if (type == RHN_LINK_TXW_FLUSH) {
            rhn_scb_txw_flush(sc->blocks);
        } else if (!rhn_scb_txw_slot_back(sc->blocks)) {
            sc_fail(sc, "soft core: TXW_SLOT_BACK with no slot queued");
        }
        return;
    case RHN_LINK_TXW_KICK: {
        struct rhn_link_u64 m;

        if (sc_body(sc, "TXW_KICK", b, len, &m, sizeof(m))) {
            sc_txw_kick(sc, tag, (uint32_t)m.value);
        }
        return;
    }
    }
}

static bool sc_is_reg64(uint32_t offset)
{
    return offset == RHN_REG_ADMIN_SQ_BASE || offset == RHN_REG_ADMIN_CQ_BASE;
}

static void sc_on_reg(RhnSoftCore *sc, uint16_t type, const uint8_t *b,
                      uint32_t len)
{
    struct rhn_link_reg r;

    if (!sc_body(sc, "register message", b, len, &r, sizeof(r))) {
        return;
    }
    if (type == RHN_LINK_CQ_PRODUCED) {
        if (r.offset >= RHN_LINK_MAX_CQS) {
            sc_fail(sc, "soft core: CQ_PRODUCED for CQ %u", r.offset);
            return;
        }
        sc->cq_produced[r.offset] = (uint32_t)r.value;
        return;
    }
    if (type == RHN_LINK_COUNTER_ADD) {
        if (r.offset >= RHN_CNT_COUNT) {
            sc_fail(sc, "soft core: COUNTER_ADD to counter %u of %u",
                    r.offset, (unsigned)RHN_CNT_COUNT);
            return;
        }
        sc->counters[r.offset] += r.value;
        return;
    }
    if (r.offset >= RHN_REG_COUNTERS || (r.offset & 3)) {
        sc_fail(sc, "soft core: REG_SET at BAR0 offset 0x%x", r.offset);
        return;
    }
    sc->regs[r.offset / 4] = (uint32_t)r.value;
    if (sc_is_reg64(r.offset)) {
        sc->regs[r.offset / 4 + 1] = (uint32_t)(r.value >> 32);
    }
    if (sc->ops.reg_set) {
        sc->ops.reg_set(sc->opaque, r.offset, r.value);
    }
}

/* A fresh random value per power-on (the core's first session). */
static uint64_t sc_entropy(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    }
    return v;
}

/*
 * A device that sizes its doorbell BAR after the core (db_pages 0 at
 * spawn) serves the pages the core's HELLO names.
 */
static bool sc_adopt_db_pages(RhnSoftCore *sc)
{
    uint32_t n = sc->hello.db_pages;
    void *staging;

    if (n < 2 || n > 65536 || (n & (n - 1))) {
        sc_fail(sc, "soft core: HELLO names %u doorbell pages", n);
        return false;
    }
    staging = calloc(n, sizeof(*sc->staging));
    if (!staging) {
        sc_fail(sc, "soft core: out of memory for %u doorbell pages", n);
        return false;
    }
    free(sc->staging);
    sc->staging = staging;
    sc->db_pages = n;
    return true;
}

static void sc_on_hello(RhnSoftCore *sc, uint16_t tag, const uint8_t *b,
                        uint32_t len)
{
    /* The answer is the card's identity block. */
    struct rhn_link_hello mine = {
        .version = RHN_LINK_VERSION,
        .node_id = sc->node_id,
        .db_pages = sc->db_pages,
        .entropy = sc_entropy(),
    };

    if (len != sizeof(sc->hello) || sc->hello_done) {
        sc_fail(sc, "soft core: unexpected HELLO (%u bytes)", len);
        return;
    }
    memcpy(&sc->hello, b, sizeof(sc->hello));
    if (sc->hello.version != RHN_LINK_VERSION) {
        sc_fail(sc, "soft core: protocol version %u, the device speaks %u",
                sc->hello.version, RHN_LINK_VERSION);
        return;
    }
    if (sc->hello.rx_fifo == 0) {
        sc_fail(sc, "soft core: HELLO names no receive FIFO");
        return;
    }
    if (!sc->db_pages && !sc_adopt_db_pages(sc)) {
        return;
    }
    mine.db_pages = sc->db_pages;
    mine.rto_floor_us = sc->rto_floor_us;
    mine.caps = RHN_LINK_DEVICE_CAPS;
    sc->rx_credits = sc->hello.rx_fifo;
    sc->hello_done = true;
    memcpy(mine.mac, sc->mac, sizeof(mine.mac));
    sc_send(sc, RHN_LINK_HELLO, tag, &mine, sizeof(mine), false);
    sc_send_time(sc, true);
    if (sc->link_up) {
        /* The link came up before the core did. */
        struct rhn_card_doorbell e = {
            .value = 1, .size = 4, .source = RHN_CARD_DB_LINK,
        };

        sc_doorbell(sc, &e, NULL, false);
    }
}

static void sc_on_message(RhnSoftCore *sc, uint16_t type, uint16_t tag,
                          const uint8_t *b, uint32_t len)
{
    if (!sc->hello_done && type != RHN_LINK_HELLO) {
        sc_fail(sc, "soft core: message type %u before HELLO", type);
        return;
    }
    switch (type) {
    case RHN_LINK_HELLO:
        sc_on_hello(sc, tag, b, len);
        break;
    case RHN_LINK_DMA_READ:
        sc_on_dma_read(sc, tag, b, len);
        break;
    case RHN_LINK_DMA_WRITE:
    case RHN_LINK_DMA_PUBLISH:
        sc_on_dma_write(sc, type, tag, b, len);
        break;
    case RHN_LINK_DMA_STORE64:
        sc_on_store64(sc, tag, b, len);
        break;
    case RHN_LINK_FW_STAGE:
    case RHN_LINK_FW_COMMIT:
        sc_on_fw(sc, type, tag, b, len);
        break;
    case RHN_LINK_REG_SET:
    case RHN_LINK_COUNTER_ADD:
    case RHN_LINK_CQ_PRODUCED:
        sc_on_reg(sc, type, b, len);
        break;
    case RHN_LINK_COUNTERS_CLEAR:
        if (len) {
            sc_fail(sc, "soft core: COUNTERS_CLEAR with %u bytes", len);
            return;
        }
        memset(sc->counters, 0, sizeof(sc->counters));
        break;
    case RHN_LINK_RX_CREDIT: {
        struct rhn_link_u64 c;

        if (!sc_body(sc, "RX_CREDIT", b, len, &c, sizeof(c))) {
            return;
        }
        if (c.value > sc->hello.rx_fifo - sc->rx_credits) {
            sc_fail(sc, "soft core: RX_CREDIT of %llu frames, %u on the way",
                    (unsigned long long)c.value,
                    sc->hello.rx_fifo - sc->rx_credits);
            return;
        }
        sc->rx_credits += (uint32_t)c.value;
        break;
    }
    case RHN_LINK_FRAME_OUT:
        if (len == 0 || len > RHN_LINK_FRAME_MAX) {
            sc_fail(sc, "soft core: FRAME_OUT of %u bytes", len);
            return;
        }
        /* The input buffer is ours until the message is applied. */
        sc_frame_out(sc, (uint8_t *)b, len);
        break;
    case RHN_LINK_DMA_REGION:
        sc_on_dma_region(sc, tag, b, len);
        break;
    case RHN_LINK_TX_ASSEMBLE:
        sc_on_assemble(sc, tag, b, len);
        break;
    case RHN_LINK_TXW_SET_QP:
    case RHN_LINK_TXW_GRANT:
    case RHN_LINK_TXW_SET_CHANNEL:
    case RHN_LINK_TXW_SLOT_PUSH:
    case RHN_LINK_TXW_SLOT_BACK:
    case RHN_LINK_TXW_FLUSH:
    case RHN_LINK_TXW_KICK:
        sc_on_txw(sc, type, tag, b, len);
        break;
    case RHN_LINK_IRQ: {
        struct rhn_link_irq m;

        if (!sc_body(sc, "IRQ", b, len, &m, sizeof(m))) {
            return;
        }
        sc->ops.irq(sc->opaque, m.vector);
        break;
    }
    case RHN_LINK_DEADLINE: {
        struct rhn_link_u64 d;

        if (!sc_body(sc, "DEADLINE", b, len, &d, sizeof(d))) {
            return;
        }
        if (d.value <= sc_now(sc)) {
            sc_send_time(sc, true);
        } else {
            sc->ops.deadline(sc->opaque, d.value);
        }
        break;
    }
    case RHN_LINK_BYE: {
        struct rhn_link_status st;

        if (len < sizeof(st)) {
            sc_fail(sc, "soft core: BYE of %u bytes", len);
            return;
        }
        memcpy(&st, b, sizeof(st));
        sc->bye_status = (int)st.status;
        sc_fail(sc, "soft core: the core ended (status %u)", st.status);
        break;
    }
    default:
        sc_fail(sc, "soft core: message type %u is not one the core sends",
                type);
    }
}

/* Applies every whole message in the input buffer. */
static void sc_parse(RhnSoftCore *sc)
{
    size_t at = 0;

    while (!sc->dead && sc->in_len - at >= RHN_LINK_HDR_BYTES) {
        struct rhn_link_hdr h;

        memcpy(&h, sc->inbuf + at, sizeof(h));
        if (h.len < 4 || h.len - 4 > RHN_LINK_MAX_BODY) {
            sc_fail(sc, "soft core: message length %u out of range", h.len);
            break;
        }
        if (sc->in_len - at < 4 + (size_t)h.len) {
            break;
        }
        sc_on_message(sc, h.type, h.tag, sc->inbuf + at + RHN_LINK_HDR_BYTES,
                      h.len - 4);
        at += 4 + (size_t)h.len;
    }
    memmove(sc->inbuf, sc->inbuf + at, sc->in_len - at);
    sc->in_len -= at;
}

static void sc_child_gone(RhnSoftCore *sc, const char *what)
{
    int status = rhn_sc_wait_exit(sc, 200);

    if (status >= 0) {
        sc_fail(sc, "soft core: %s; the emulator exited with status %d", what,
                status);
    } else {
        sc_fail(sc, "soft core: %s", what);
    }
}

/*
 * Reads what the socket holds: the stream, or wake-up bytes. False at its
 * end (*eof) or on an error.
 */
static bool sc_read_socket(RhnSoftCore *sc, bool *eof)
{
    uint8_t sink[256];

    for (;;) {
        uint8_t *dst = sc->shm_mode ? sink : sc->inbuf + sc->in_len;
        size_t room = sc->shm_mode ? sizeof(sink) : SC_INBUF_BYTES - sc->in_len;
        ssize_t n;

        if (room == 0) {
            return true;
        }
        n = recv(sc->fd, dst, room, MSG_DONTWAIT);
        if (n > 0) {
            if (!sc->shm_mode) {
                sc->in_len += (size_t)n;
            }
            continue;
        }
        if (n == 0 || errno == ECONNRESET) {
            *eof = true;
            return false;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return true;
        }
        sc_fail(sc, "soft core: link read failed: %s", strerror(errno));
        return false;
    }
}

/* Copies what the core's ring holds into the input buffer. */
static bool sc_read_ring(RhnSoftCore *sc)
{
    volatile struct rhn_link_ring *r = &sc->shm->from_core;
    uint32_t tail = r->tail;
    uint32_t avail = ld_acquire(&r->head) - tail;
    uint32_t n = SC_INBUF_BYTES - sc->in_len;

    if (avail > RHN_LINK_SHM_RING_BYTES) {
        sc_fail(sc, "soft core: ring indices out of range");
        return false;
    }
    if (n > avail) {
        n = avail;
    }
    if (n == 0) {
        return false;
    }
    ring_copy_out(sc->ring_from_core, tail, sc->inbuf + sc->in_len, n);
    sc->in_len += n;
    st_release(&r->tail, tail + n);
    sc_wake_core(sc, &r->producer_sleeping);
    return true;
}

int rhn_sc_process(RhnSoftCore *sc)
{
    bool eof = false;

    if (sc->dead) {
        return -1;
    }
    /* At the socket's end, what the core sent before it still counts. */
    if (!sc_read_socket(sc, &eof) && !eof) {
        return -1;
    }
    for (;;) {
        bool more = false;

        if (sc->shm_mode) {
            more = sc_read_ring(sc);
        }
        sc_parse(sc);
        sc_flush(sc);
        if (sc->dead) {
            break;
        }
        if (sc->shm_mode && !more) {
            volatile struct rhn_link_ring *r = &sc->shm->from_core;

            /* Sleep; the core wakes us when it sends (see link.h). */
            r->consumer_sleeping = 1;
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (ld_acquire(&r->head) == r->tail) {
                break;
            }
            r->consumer_sleeping = 0;
        } else if (!sc->shm_mode) {
            break;
        }
    }
    if (sc->db_lost && !sc->dead &&
        sc_send(sc, RHN_LINK_DB_OVERFLOW, 0, NULL, 0, true)) {
        sc->db_lost = false;
        sc_flush(sc);
    }
    if (sc->kept.count) {
        sc_send_kept(sc);
    }
    /* Room the core handed back (RX_CREDIT) goes to the frames held. */
    if (!sc->dead && (sc->rxq_end > sc->rxq_start || sc->rx_untold)) {
        sc_release_frames(sc);
        sc_tell_drops(sc);
        sc_flush(sc);
    }
    if (eof) {
        sc_child_gone(sc, "the core closed the link");
    }
    return sc->dead ? -1 : 0;
}

bool rhn_sc_core_idle(const RhnSoftCore *sc)
{
    if (sc->dead || !sc->shm_mode || !sc->hello_done) {
        return false;
    }
    const volatile struct rhn_link_ring *in = &sc->shm->to_core;
    const volatile struct rhn_link_ring *out = &sc->shm->from_core;

    /* Asleep, with nothing for it and nothing from it on the way. */
    return ld_acquire(&in->consumer_sleeping) &&
           ld_acquire(&in->head) == in->tail &&
           ld_acquire(&out->head) == out->tail &&
           sc->out_end == sc->out_start && sc->rxq_end == sc->rxq_start &&
           !sc->kept.count;
}

const char *rhn_sc_describe(const RhnSoftCore *sc, char *buf, size_t len)
{
    if (!sc->shm_mode) {
        snprintf(buf, len, "socket link: %zu bytes queued out, %zu in",
                 sc->out_end - sc->out_start, sc->in_len);
        return buf;
    }
    const volatile struct rhn_link_ring *in = &sc->shm->to_core;
    const volatile struct rhn_link_ring *out = &sc->shm->from_core;

    snprintf(buf, len,
             "to core: head %u tail %u consumer_sleeping %u "
             "producer_sleeping %u; from core: head %u tail %u "
             "consumer_sleeping %u producer_sleeping %u; device: %zu bytes "
             "queued out, %zu in, %zu bytes of frames held, %u rx credits%s",
             ld_acquire(&in->head), ld_acquire(&in->tail),
             ld_acquire(&in->consumer_sleeping),
             ld_acquire(&in->producer_sleeping), ld_acquire(&out->head),
             ld_acquire(&out->tail), ld_acquire(&out->consumer_sleeping),
             ld_acquire(&out->producer_sleeping),
             sc->out_end - sc->out_start, sc->in_len,
             sc->rxq_end - sc->rxq_start, sc->rx_credits,
             sc->dead ? ", link down" : "");
    return buf;
}

int rhn_sc_run(RhnSoftCore *sc, int timeout_ms)
{
    struct pollfd p = { .fd = sc->fd, .events = POLLIN };

    if (sc->dead) {
        return -1;
    }
    if (rhn_sc_want_write(sc)) {
        p.events |= POLLOUT;
    }
    if (sc->shm_mode && sc->spin_us) {
        volatile struct rhn_link_ring *r = &sc->shm->from_core;
        uint64_t end = sc_now(sc) + (uint64_t)sc->spin_us * 1000u;

        do {
            if (ld_acquire(&r->head) != r->tail) {
                return rhn_sc_process(sc);
            }
            sched_yield(); /* a busy CPU goes to the emulator */
        } while (sc_now(sc) < end);
    }
    if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR) {
        sc_fail(sc, "soft core: poll failed: %s", strerror(errno));
        return -1;
    }
    return rhn_sc_process(sc);
}

/* ---- Towards the core ---------------------------------------------- */

/* The doorbells kept aside, into the queue while it has room. */
static void sc_send_kept(RhnSoftCore *sc)
{
    struct rhn_card_doorbell e;
    bool sent = false;

    while (!sc->dead && rhn_kept_take(&sc->kept, &e)) {
        if (!sc_send(sc, RHN_LINK_DOORBELL, 0, &e, sizeof(e), true)) {
            rhn_kept_put(&sc->kept, &e); /* its place was just freed */
            break;
        }
        sent = true;
    }
    if (sent) {
        sc_flush(sc);
    }
}

/* A doorbell the queue has no room for: kept aside if it can be, else lost. */
static bool sc_keep_or_lose(RhnSoftCore *sc,
                            const struct rhn_card_doorbell *entry)
{
    if (!(entry->flags & RHN_CARD_DB_F_INLINE) &&
        rhn_kept_put(&sc->kept, entry)) {
        return true;
    }
    sc->db_lost = true;
    return false;
}

/* may_drop: an entry of the FIFO; link changes must reach the core. */
static bool sc_doorbell(RhnSoftCore *sc, const struct rhn_card_doorbell *entry,
                        const void *wqe, bool may_drop)
{
    bool with_wqe = (entry->flags & RHN_CARD_DB_F_INLINE) != 0;
    uint32_t len = sizeof(*entry) + (with_wqe ? RHN_DB_INLINE_WQE_SIZE : 0);
    uint8_t *p;

    /* Before HELLO there is no core to lose anything: a plain drop. */
    if (sc->dead || !sc->hello_done || (with_wqe && !wqe)) {
        return false;
    }
    sc_send_time(sc, false);
    /* What was kept aside is older: it goes first, or this waits too. */
    if (may_drop && sc->kept.count) {
        sc_send_kept(sc);
        if (sc->kept.count) {
            return sc_keep_or_lose(sc, entry);
        }
    }
    /* After a loss, the notice goes first, and only with this entry. */
    if (may_drop && sc->db_lost &&
        sc->out_end - sc->out_start + 2 * RHN_LINK_HDR_BYTES + len >
            SC_OUTQ_EVENT_CAP) {
        return sc_keep_or_lose(sc, entry);
    }
    if (sc->db_lost && sc_send(sc, RHN_LINK_DB_OVERFLOW, 0, NULL, 0, true)) {
        sc->db_lost = false;
    }
    p = sc_begin(sc, RHN_LINK_DOORBELL, 0, len, may_drop);
    if (!p) {
        return may_drop ? sc_keep_or_lose(sc, entry) : false;
    }
    memcpy(p, entry, sizeof(*entry));
    if (with_wqe) {
        memcpy(p + sizeof(*entry), wqe, RHN_DB_INLINE_WQE_SIZE);
    }
    sc_commit(sc, len);
    sc_flush(sc);
    return true;
}

bool rhn_sc_doorbell(RhnSoftCore *sc, const struct rhn_card_doorbell *entry,
                     const void *wqe)
{
    return sc_doorbell(sc, entry, wqe, true);
}

/* Tells the core of the frames dropped since it was last told. */
static void sc_tell_drops(RhnSoftCore *sc)
{
    struct rhn_link_u64 n = { sc->rx_untold };

    if (n.value && sc_send(sc, RHN_LINK_RX_DROPPED, 0, &n, sizeof(n), false)) {
        sc->rx_untold = 0;
    }
}

/* Sends held frames while the core has room for them. */
static void sc_release_frames(RhnSoftCore *sc)
{
    bool timed = false;

    while (sc->rx_credits && sc->rxq_end > sc->rxq_start) {
        struct rhn_link_hdr h;
        uint8_t *p;

        memcpy(&h, sc->rxq + sc->rxq_start, sizeof(h));
        if (!timed) {
            sc_send_time(sc, false);
            timed = true;
        }
        p = sc_begin(sc, RHN_LINK_FRAME_IN, 0, h.len - 4, true);
        if (!p) {
            break; /* the queue is full of events: later */
        }
        memcpy(p, sc->rxq + sc->rxq_start + RHN_LINK_HDR_BYTES, h.len - 4);
        sc_commit(sc, h.len - 4);
        sc->rxq_start += 4 + h.len;
        sc->rx_credits--;
    }
    if (sc->rxq_start == sc->rxq_end) {
        sc->rxq_start = sc->rxq_end = 0;
    }
}

/* Holds a frame back until the core has room; false when full. */
static bool sc_hold_frame(RhnSoftCore *sc, const void *frame, uint32_t len)
{
    size_t need = RHN_LINK_HDR_BYTES + len;
    struct rhn_link_hdr h = { 4 + len, RHN_LINK_FRAME_IN, 0 };

    if (sc->rxq_end - sc->rxq_start + need > SC_RX_HOLD_BYTES) {
        return false;
    }
    if (sc->rxq_end + need > sc->rxq_cap) {
        if (sc->rxq_start > 0) {
            memmove(sc->rxq, sc->rxq + sc->rxq_start,
                    sc->rxq_end - sc->rxq_start);
            sc->rxq_end -= sc->rxq_start;
            sc->rxq_start = 0;
        }
        if (sc->rxq_end + need > sc->rxq_cap) {
            uint8_t *q = realloc(sc->rxq, SC_RX_HOLD_BYTES);

            if (!q) {
                return false;
            }
            sc->rxq = q;
            sc->rxq_cap = SC_RX_HOLD_BYTES;
        }
    }
    memcpy(sc->rxq + sc->rxq_end, &h, sizeof(h));
    memcpy(sc->rxq + sc->rxq_end + RHN_LINK_HDR_BYTES, frame, len);
    sc->rxq_end += need;
    return true;
}

bool rhn_sc_frame_in(RhnSoftCore *sc, const void *frame, uint32_t len)
{
    if (sc->dead) {
        return false;
    }
    if (len == 0 || len > RHN_LINK_FRAME_MAX) {
        /* The MAC block's runt and giant frames: never valid, counted. */
        sc->counters[RHN_CNT_MALFORMED_PACKETS]++;
        return false;
    }
    if (!sc->link_up || !sc->hello_done) {
        return false;
    }
    if (rhn_scb_crc_bad(frame, len)) {
        /* The MAC checks the CRCs (RHN_CARD_CAP_MAC_CRC). */
        sc->counters[RHN_CNT_CRC_ERRORS]++;
        return false;
    }
    /* Frames go in order: none passes those held back. */
    sc_release_frames(sc);
    if (!sc_hold_frame(sc, frame, len)) {
        /* Counted by the core's firmware, so the driver sees it too. */
        sc->rx_untold++;
        sc_tell_drops(sc);
        sc_flush(sc);
        return false;
    }
    sc_release_frames(sc);
    sc_flush(sc);
    return true;
}

void rhn_sc_set_link(RhnSoftCore *sc, bool up)
{
    struct rhn_card_doorbell e = {
        .value = up, .size = 4, .source = RHN_CARD_DB_LINK,
    };

    if (sc->link_up == up) {
        return;
    }
    sc->link_up = up; /* STATUS.LINK_UP is the firmware's to set */
    if (!up) {
        /* The MAC loses what it held back with the link. */
        while (sc->rxq_end > sc->rxq_start) {
            struct rhn_link_hdr h;

            memcpy(&h, sc->rxq + sc->rxq_start, sizeof(h));
            sc->rxq_start += 4 + h.len;
            sc->rx_untold++;
        }
        sc->rxq_start = sc->rxq_end = 0;
        sc_tell_drops(sc);
    }
    sc_doorbell(sc, &e, NULL, false);
}

void rhn_sc_tick(RhnSoftCore *sc)
{
    if (sc->dead) {
        return;
    }
    sc_send_time(sc, true);
    sc_flush(sc);
}

/* ---- Register file and doorbell block ------------------------------ */

uint64_t rhn_sc_bar0_read(RhnSoftCore *sc, uint32_t offset, unsigned size)
{
    if (size != 4 && size != 8) {
        return 0;
    }
    if (offset >= RHN_REG_COUNTERS) {
        uint32_t rel = offset - RHN_REG_COUNTERS;
        uint32_t idx = rel / 8;
        uint64_t v;

        if (idx >= RHN_CNT_COUNT || (rel & (size - 1))) {
            return 0;
        }
        v = sc->counters[idx];
        if (size == 8) {
            return v;
        }
        return (rel & 4) ? v >> 32 : (uint32_t)v;
    }
    if (offset & 3 || offset + size > RHN_REG_COUNTERS) {
        return 0;
    }
    if (size == 8) {
        return sc->regs[offset / 4] |
               (uint64_t)sc->regs[offset / 4 + 1] << 32;
    }
    return sc->regs[offset / 4];
}

static void sc_kick(RhnSoftCore *sc, uint32_t page, uint32_t offset,
                    uint64_t value, unsigned size, uint8_t source,
                    const void *wqe)
{
    struct rhn_card_doorbell e = {
        .page = page, .offset = offset, .value = value,
        .size = (uint8_t)size, .source = source,
        .flags = wqe ? RHN_CARD_DB_F_INLINE : 0,
    };

    rhn_sc_doorbell(sc, &e, wqe);
}

/* A host store that lands in the file: kept, and told to the core. */
static void sc_file_write(RhnSoftCore *sc, uint32_t offset, uint64_t value,
                          unsigned size)
{
    struct rhn_link_reg r = { offset, size, value };

    sc->regs[offset / 4] = (uint32_t)value;
    if (size == 8) {
        sc->regs[offset / 4 + 1] = (uint32_t)(value >> 32);
    }
    if (sc_send(sc, RHN_LINK_REG_WRITE, 0, &r, sizeof(r), false)) {
        sc_flush(sc);
    }
}

void rhn_sc_bar0_write(RhnSoftCore *sc, uint32_t offset, uint64_t value,
                       unsigned size)
{
    if ((size != 4 && size != 8) || (offset & (size - 1)) || sc->dead) {
        return;
    }
    if (size == 4) {
        value = (uint32_t)value;
    }
    switch (offset) {
    case RHN_REG_CONTROL:
        /* A reset reads as pending from the host's write until the
         * firmware has done it and sets CONTROL again. */
        if (value & RHN_CONTROL_RESET) {
            sc->regs[RHN_REG_CONTROL / 4] |= RHN_CONTROL_RESET;
        }
        sc_kick(sc, 0, offset, value, size, RHN_CARD_DB_REG, NULL);
        break;
    case RHN_REG_ADMIN_SQ_TAIL:
        sc_kick(sc, 0, offset, value, size, RHN_CARD_DB_REG, NULL);
        break;
    case RHN_REG_EQ_DOORBELL:
        if (size == 8) {
            sc_kick(sc, 0, offset, value, size, RHN_CARD_DB_REG, NULL);
        }
        break;
    case RHN_REG_ADMIN_SQ_BASE:
    case RHN_REG_ADMIN_CQ_BASE:
    case RHN_REG_ADMIN_SQ_BASE + 4:
    case RHN_REG_ADMIN_CQ_BASE + 4:
        if (size == 8 && (offset & 4)) {
            break;
        }
        sc_file_write(sc, offset, value, size);
        break;
    case RHN_REG_ADMIN_LOG_DEPTH:
        sc_file_write(sc, offset, (uint32_t)value, 4);
        break;
    default:
        break; /* read-only or reserved */
    }
}

void rhn_sc_bar2_write(RhnSoftCore *sc, uint64_t addr, uint64_t value,
                       unsigned size)
{
    uint64_t page = addr >> RHN_DB_PAGE_SHIFT;
    uint32_t off = (uint32_t)(addr & (RHN_DB_PAGE_SIZE - 1));

    if ((size != 4 && size != 8) || page >= sc->db_pages || sc->dead) {
        return;
    }
    if (size == 4) {
        value = (uint32_t)value;
    }
    if (rhn_db_in_inline_window(off, size)) {
        memcpy(&sc->staging[page][off - RHN_DB_INLINE_WQE], &value, size);
        return;
    }
    switch (off) {
    case RHN_DB_SQ:
        sc_kick(sc, (uint32_t)page, off, value, size, RHN_CARD_DB_PAGE,
                (value & RHN_DB_SQ_INLINE) ? sc->staging[page] : NULL);
        break;
    case RHN_DB_CQ_ARM: {
        /* The CQ's producer index now, so a completion between this write
         * and the core's handling of it still raises the event. */
        uint32_t cqn = (uint32_t)value & RHN_DB_QN_MASK;

        if (cqn < RHN_LINK_MAX_CQS) {
            value |= (uint64_t)sc->cq_produced[cqn] << 32;
        }
        sc_kick(sc, (uint32_t)page, off, value, size, RHN_CARD_DB_PAGE,
                NULL);
        break;
    }
    case RHN_DB_RQ:
    case RHN_DB_SRQ:
    case RHN_DB_TRIGGER:
        sc_kick(sc, (uint32_t)page, off, value, size, RHN_CARD_DB_PAGE,
                NULL);
        break;
    default:
        break;
    }
}

uint64_t rhn_sc_counter(const RhnSoftCore *sc, unsigned int index)
{
    return index < RHN_CNT_COUNT ? sc->counters[index] : 0;
}

/* ---- Life cycle ---------------------------------------------------- */

static RhnSoftCore *sc_new(uint32_t db_pages, const RhnSoftCoreOps *ops,
                           void *opaque)
{
    RhnSoftCore *sc = calloc(1, sizeof(*sc));

    if (!sc) {
        return NULL;
    }
    sc->ops = *ops;
    sc->opaque = opaque;
    sc->fd = -1;
    sc->pid = -1;
    sc->exit_status = -1;
    sc->bye_status = -1;
    sc->db_pages = db_pages;
    sc->inbuf = malloc(SC_INBUF_BYTES);
    sc->staging = calloc(db_pages ? db_pages : 1, sizeof(*sc->staging));
    sc->cq_produced = calloc(RHN_LINK_MAX_CQS, sizeof(uint32_t));
    sc->blocks = calloc(1, rhn_scb_size());
    if (!sc->inbuf || !sc->staging || !sc->cq_produced || !sc->blocks) {
        free(sc->inbuf);
        free(sc->staging);
        free(sc->cq_produced);
        free(sc->blocks);
        free(sc);
        return NULL;
    }
    {
        const RhnScHost host = { ops->dma_read, ops->dma_write, opaque };

        rhn_scb_init(sc->blocks, &host);
    }
    sc->regs[RHN_REG_VERSION / 4] = RHN_VERSION;
    return sc;
}

void rhn_sc_set_identity(RhnSoftCore *sc, uint16_t node_id,
                         const uint8_t mac[6])
{
    sc->node_id = node_id;
    memcpy(sc->mac, mac, sizeof(sc->mac));
}

RhnSoftCore *rhn_sc_attach(int fd, uint32_t db_pages,
                           const RhnSoftCoreOps *ops, void *opaque)
{
    RhnSoftCore *sc = sc_new(db_pages, ops, opaque);

    if (!sc) {
        return NULL;
    }
    sc->fd = fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return sc;
}

static char *sc_path(const char *dir, const char *what)
{
    static unsigned seq;
    char *p = NULL;

    if (asprintf(&p, "%s/rhinet-sc-%d-%u.%s", dir, (int)getpid(), seq++,
                 what) < 0) {
        return NULL;
    }
    return p;
}

/*
 * A device killed between creating its files and the core's HELLO leaves
 * them behind (the RAM file is as large as the core's RAM, in /dev/shm:
 * memory). Their names carry the creator's PID: remove those whose
 * creator is gone. A PID we may not signal (EPERM) is alive.
 */
static void sc_sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d) {
        return;
    }
    while ((e = readdir(d))) {
        int pid, end = 0;
        unsigned seq;
        char *path;

        if (sscanf(e->d_name, "rhinet-sc-%d-%u.%*4[a-z]%n", &pid, &seq,
                   &end) != 2 || e->d_name[end] != '\0' || pid <= 0 ||
            pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        if (asprintf(&path, "%s/%s", dir, e->d_name) >= 0) {
            unlink(path);
            free(path);
        }
    }
    closedir(d);
}

/* The RAM file QEMU backs the core's RAM with; the rings in its link area. */
static bool sc_map_ram(RhnSoftCore *sc, uint32_t ram_mib, char *err,
                       size_t errlen)
{
    int fd = open(sc->ram_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    void *m;

    if (fd < 0 || ftruncate(fd, (off_t)ram_mib << 20) < 0) {
        snprintf(err, errlen, "soft core: RAM file %s: %s", sc->ram_path,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    m = mmap(NULL, RHN_LINK_SHM_AREA_BYTES, PROT_READ | PROT_WRITE,
             MAP_SHARED, fd, RHN_LINK_SHM_OFFSET);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "soft core: mmap: %s", strerror(errno));
        return false;
    }
    sc->shm = m;
    sc->ring_to_core = (uint8_t *)m + RHN_LINK_SHM_RING0;
    sc->ring_from_core = (uint8_t *)m + RHN_LINK_SHM_RING1;
    sc->shm->version = RHN_LINK_VERSION;
    sc->shm->ring_bytes = RHN_LINK_SHM_RING_BYTES;
    /* The core's HELLO must wake us: we start out asleep. */
    sc->shm->from_core.consumer_sleeping = 1;
    __atomic_store_n(&sc->shm->magic, RHN_LINK_SHM_MAGIC, __ATOMIC_RELEASE);
    return true;
}

/* The emulator's command line, built before fork. */
typedef struct ScArgs {
    char mem[32], obj[4200], chr[4200];
    const char *argv[64];
} ScArgs;

static void sc_build_args(ScArgs *a, const RhnSoftCoreConfig *cfg,
                          const char *sock, const char *ram, uint32_t ram_mib)
{
    int n = 0;

    snprintf(a->mem, sizeof(a->mem), "%uM", ram_mib);
    snprintf(a->chr, sizeof(a->chr), "socket,id=link,path=%s", sock);
    a->argv[n++] = cfg->qemu ? cfg->qemu : "qemu-system-riscv32";
    a->argv[n++] = "-M";
    if (ram) {
        snprintf(a->obj, sizeof(a->obj),
                 "memory-backend-file,id=ram0,size=%s,mem-path=%s,share=on",
                 a->mem, ram);
        a->argv[n++] = "virt,memory-backend=ram0";
        a->argv[n++] = "-object";
        a->argv[n++] = a->obj;
    } else {
        a->argv[n++] = "virt";
    }
    /*
     * One hart, but translated as if it had company: with a single
     * possible CPU, TCG drops the core's fences, and the host may then let
     * the core's sleep flag sit in its store buffer while the core reads a
     * stale ring head. The device, which saw no flag, sends no wake-up and
     * the core sleeps with a message unread (softcore_link's sleep race).
     */
    a->argv[n++] = "-accel";
    a->argv[n++] = "tcg,thread=multi";
    a->argv[n++] = "-smp";
    a->argv[n++] = "cpus=1,maxcpus=2";
    a->argv[n++] = "-m";
    a->argv[n++] = a->mem;
    a->argv[n++] = "-nodefaults";
    a->argv[n++] = "-display";
    a->argv[n++] = "none";
    a->argv[n++] = "-bios";
    a->argv[n++] = "none";
    a->argv[n++] = "-kernel";
    a->argv[n++] = cfg->firmware;
    a->argv[n++] = "-chardev";
    a->argv[n++] = a->chr;
    a->argv[n++] = "-serial";
    a->argv[n++] = "chardev:link";
    for (int i = 0; cfg->extra_args && cfg->extra_args[i] && n < 63; i++) {
        a->argv[n++] = cfg->extra_args[i];
    }
    a->argv[n] = NULL;
}

/* In the child: only calls that are safe after fork in a threaded host. */
static void sc_exec_child(const ScArgs *a, pid_t parent)
{
    static const char msg[] = "soft core: cannot run the emulator\n";
    int devnull = open("/dev/null", O_RDWR);

    sigset_t none;

    /* Ends with the device's thread that spawned it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* A host's threads block signals it takes elsewhere (QEMU's main loop
     * does): the emulator starts with none blocked. */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (getppid() != parent) {
        _exit(127);
    }
    if (devnull >= 0) {
        dup2(devnull, 0);
    }
    execvp(a->argv[0], (char *const *)a->argv);
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to say */
    }
    _exit(127);
}

RhnSoftCore *rhn_sc_spawn(const RhnSoftCoreConfig *cfg,
                          const RhnSoftCoreOps *ops, void *opaque, char *err,
                          size_t errlen)
{
    const char *dir = cfg->dir;
    uint32_t ram_mib = cfg->ram_mib ? cfg->ram_mib : 64;
    int timeout = cfg->timeout_ms ? cfg->timeout_ms : 10000;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    RhnSoftCore *sc = sc_new(cfg->db_pages, ops, opaque);
    int lfd = -1;
    struct pollfd p;
    uint64_t end;

    if (!sc) {
        snprintf(err, errlen, "soft core: out of memory");
        return NULL;
    }
    rhn_sc_set_identity(sc, cfg->node_id, cfg->mac);
    sc->rto_floor_us = cfg->rto_floor_us;
    if (!dir) {
        struct stat st;

        dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm"
                                                                : "/tmp";
    }
    sc->shm_mode = !cfg->uart_stream;
    sc->spin_us = cfg->spin_us;
    sc_sweep_stale(dir);
    sc->sock_path = sc_path(dir, "sock");
    sc->ram_path = sc->shm_mode ? sc_path(dir, "ram") : NULL;
    if (!sc->sock_path || (sc->shm_mode && !sc->ram_path) ||
        strlen(sc->sock_path) >= sizeof(addr.sun_path)) {
        snprintf(err, errlen, "soft core: bad directory %s", dir);
        goto fail;
    }
    if (sc->shm_mode && !sc_map_ram(sc, ram_mib, err, errlen)) {
        goto fail;
    }
    strcpy(addr.sun_path, sc->sock_path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        listen(lfd, 1) < 0) {
        snprintf(err, errlen, "soft core: socket %s: %s", sc->sock_path,
                 strerror(errno));
        goto fail;
    }
    {
        pid_t parent = getpid();
        ScArgs *args = malloc(sizeof(*args));

        if (!args) {
            snprintf(err, errlen, "soft core: out of memory");
            goto fail;
        }
        sc_build_args(args, cfg, sc->sock_path, sc->ram_path, ram_mib);
        sc->pid = fork();
        if (sc->pid == 0) {
            sc_exec_child(args, parent);
        }
        free(args);
    }
    if (sc->pid < 0) {
        snprintf(err, errlen, "soft core: fork: %s", strerror(errno));
        goto fail;
    }
    /* Wait for the emulator's connection, or its early end. */
    end = sc_now(sc) + (uint64_t)timeout * 1000000ull;
    for (;;) {
        int status;

        p = (struct pollfd){ .fd = lfd, .events = POLLIN };
        if (poll(&p, 1, 50) > 0) {
            break;
        }
        status = rhn_sc_wait_exit(sc, 0);
        if (status >= 0) {
            snprintf(err, errlen,
                     "soft core: %s exited with status %d before it "
                     "connected%s",
                     cfg->qemu ? cfg->qemu : "qemu-system-riscv32", status,
                     status == 127 ? " (not installed? it comes with "
                                     "Debian's qemu-system-misc)"
                                   : "");
            goto fail;
        }
        if (sc_now(sc) >= end) {
            snprintf(err, errlen,
                     "soft core: %s did not connect within %d ms",
                     cfg->qemu ? cfg->qemu : "qemu-system-riscv32", timeout);
            goto fail;
        }
    }
    sc->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    close(lfd);
    lfd = -1;
    unlink(sc->sock_path);
    if (sc->fd < 0) {
        snprintf(err, errlen, "soft core: accept: %s", strerror(errno));
        goto fail;
    }
    while (!sc->hello_done) {
        uint64_t now = sc_now(sc);

        if (now >= end) {
            snprintf(err, errlen, "soft core: no HELLO within %d ms", timeout);
            goto fail;
        }
        if (rhn_sc_run(sc, (int)((end - now) / 1000000 + 1)) < 0) {
            snprintf(err, errlen, "%s", sc->error);
            goto fail;
        }
    }
    /* QEMU has mapped the RAM file by now: it can go. */
    if (sc->ram_path) {
        unlink(sc->ram_path);
    }
    return sc;

fail:
    if (lfd >= 0) {
        close(lfd);
    }
    rhn_sc_free(sc);
    return NULL;
}

int rhn_sc_wait_exit(RhnSoftCore *sc, int timeout_ms)
{
    int status;

    if (sc->pid <= 0) {
        return sc->exit_status;
    }
    for (int waited = 0;; waited += 5) {
        pid_t r = waitpid(sc->pid, &status, WNOHANG);

        if (r == sc->pid) {
            sc->pid = -1;
            sc->exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
                                                : 128 + WTERMSIG(status);
            return sc->exit_status;
        }
        if (r < 0 || waited >= timeout_ms) {
            return -1;
        }
        usleep(5000);
    }
}

int rhn_sc_stop(RhnSoftCore *sc, int timeout_ms)
{
    if (!sc->dead && sc->fd >= 0) {
        struct rhn_link_status st = { 0, 0 };

        sc_send(sc, RHN_LINK_BYE, 0, &st, sizeof(st), false);
        sc_flush(sc);
        sc_fail(sc, "soft core: the device closed the link");
    }
    if (sc->shm) {
        static const uint8_t one = 1;

        sc->shm->closed = 1;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (sc->fd >= 0) {
            send(sc->fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
    }
    if (sc->pid > 0 && rhn_sc_wait_exit(sc, timeout_ms) < 0) {
        kill(sc->pid, SIGKILL);
        waitpid(sc->pid, NULL, 0);
        sc->pid = -1;
        return -1;
    }
    return sc->exit_status;
}

void rhn_sc_free(RhnSoftCore *sc)
{
    if (!sc) {
        return;
    }
    rhn_sc_stop(sc, 2000);
    if (sc->fd >= 0) {
        close(sc->fd);
    }
    if (sc->shm) {
        munmap((void *)sc->shm, RHN_LINK_SHM_AREA_BYTES);
    }
    if (sc->sock_path) {
        unlink(sc->sock_path);
    }
    if (sc->ram_path) {
        unlink(sc->ram_path);
    }
    free(sc->sock_path);
    free(sc->ram_path);
    free(sc->outq);
    free(sc->rxq);
    free(sc->inbuf);
    free(sc->staging);
    free(sc->cq_produced);
    free(sc->blocks);
    free(sc);
}

uint64_t rhn_sc_txw_frames(const RhnSoftCore *sc)
{
    return sc->txw_frames;
}

int rhn_sc_fd(const RhnSoftCore *sc)
{
    return sc->fd;
}

bool rhn_sc_want_write(const RhnSoftCore *sc)
{
    return !sc->shm_mode && sc->out_end > sc->out_start;
}

const char *rhn_sc_error(const RhnSoftCore *sc)
{
    return sc->dead ? sc->error : NULL;
}

bool rhn_sc_alive(const RhnSoftCore *sc)
{
    return !sc->dead;
}

const struct rhn_link_hello *rhn_sc_hello(const RhnSoftCore *sc)
{
    return sc->hello_done ? &sc->hello : NULL;
}

int rhn_sc_bye_status(const RhnSoftCore *sc)
{
    return sc->bye_status;
}

pid_t rhn_sc_pid(const RhnSoftCore *sc)
{
    return sc->pid;
}
