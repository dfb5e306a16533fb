/*
 * RHiNET-NG RDMA NIC: the PCI face of the NIC engine.
 *
 * This file is glue only. All protocol logic lives in the engine (firmware/),
 * which runs as one of two NIC cores (property "core"):
 *   engine    in this process, through its C binding (engine_c.h)
 *   softcore  the engine's firmware image in qemu-system-riscv32, another
 *             process, through the soft-core link library (softcore/)
 * Either way the glue maps
 *   BAR0 (registers)      -> the core's register file
 *   BAR2 (doorbell pages) -> the core's doorbell block
 *   BAR4 (MSI-X)          <- core interrupts, raised from a bottom half
 *   wire=PATH             <-> core frames, on the engine thread
 *   (or netdev, NICState) <-> core frames, through the main loop
 * and runs the core's side on its own thread, so a guest MMIO write returns
 * at once and the core picks the work up. RhinetCoreOps is all that differs
 * between the two.
 *
 * The wire: with wire=PATH the engine thread connects to the fabric
 * switch's port socket itself and polls it beside its wake-up event. A
 * frame leaves from the thread that built it and is handled by the thread
 * it arrives at: two thread hand-offs fewer per frame than through a netdev
 * and the main loop, each a wake-up on a busy host. The netdev path stays
 * for any other QEMU network backend.
 *
 * The engine thread never takes the BQL: it touches guest RAM directly
 * (DMA to anything that is not RAM is refused and counted by the engine as a
 * DMA error; RAM includes an xpu's memory BAR, told of each access through
 * xpu_bus.h), and hands frames and interrupts to the main loop through a
 * bounded ring and a bottom half. So a reset may join it while holding the
 * BQL.
 *
 * The card's shell (firmware/card/fw_shell.c) answers the firmware
 * registers and keeps the images the host hands over: with core=engine
 * they are checked and recorded, with core=softcore the image committed
 * for the next reset is the one the new core runs.
 *
 * Fault injection (tests of a driver's dead-device handling): the QOM
 * property "fault", or a vendor capability in config space when
 * fault-injection=on, makes the NIC hang, halt with STATUS.FATAL,
 * vanish from the bus, lose its interrupts or lose processes' SQ kicks
 * (see RhinetFault).
 *
 * Copyright (c) 2026 RHiNET-NG developers
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "qemu/atomic.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/event_notifier.h"
#include "qemu/lockable.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/range.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "sysemu/dma.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"

#include "rhinet/fw/engine_c.h"
#include "rhinet/fw/version.h"
#include "fw_shell.h"
#include "rhinet_softcore.h"
#include "rhinet/hw_admin.h"
#include "rhinet/hw_queues.h"
#include "rhinet/hw_regs.h"
#include "rhinet/hw_wire.h"
#include "xpu_bus.h"

#define TYPE_RHINET "rhinet"
OBJECT_DECLARE_SIMPLE_TYPE(RhinetState, RHINET)

#define RHINET_MSIX_VECTORS 32
#define RHINET_TX_RING 256 /* frames between engine thread and main loop */
#define RHINET_FRAME_MAX 9216 /* RHN_MAX_FRAME, or a jumbo raw frame */
#define RHINET_TWIN_MAX (1 * GiB) /* twin-size: host memory, taken lazily */
#define RHINET_WIRE_RX_BYTES (64 * KiB) /* read buffer: whole frames fit */
#define RHINET_WIRE_TX_BYTES (4 * MiB) /* queued while the socket is full */
#define RHINET_WIRE_RX_BATCH 64 /* frames handed over per engine poll */
#define RHINET_WIRE_RETRY_NS (100 * SCALE_MS) /* reconnect interval */
#define RHINET_DB_PAGES 256 /* the engine's doorbell pages unless given */
#define RHINET_SOFTCORE_HELLO_MS 30000 /* a core starting on a busy host */
#define RHINET_SOFTCORE_HELD_WRITES 64 /* BAR0 writes kept while one starts */
#define RHINET_SERIAL_BASE 0x52484e0000000000ull /* "RHN", then the node */

/*
 * What an injected fault does. A hung or halted NIC still answers register
 * reads and obeys CONTROL.RESET (a hardware reset line to its core, which
 * clears the fault); one gone from the bus reads as all ones, ignores
 * writes, and only a device reset (FLR, machine reset) brings it back.
 */
typedef enum RhinetFault {
    RHINET_FAULT_NONE,  /* working */
    RHINET_FAULT_HANG,  /* the engine stops: no DMA, interrupts, frames */
    RHINET_FAULT_FATAL, /* as HANG, and STATUS.FATAL reads as set */
    RHINET_FAULT_GONE,  /* as HANG, and BAR0/BAR2 read ~0, writes dropped */
    RHINET_FAULT_IRQ_LOSS, /* the engine works; its MSI-X messages are lost */
    RHINET_FAULT_SQ_KICK_LOSS, /* the engine works; user SQ kicks are lost */
    RHINET_FAULT__MAX,
} RhinetFault;

static const char *const rhinet_fault_names[RHINET_FAULT__MAX] = {
    "none", "hang", "fatal", "gone", "irq-loss", "sq-kick-loss",
};

/* Faults under which the engine does nothing until they are cleared. */
static bool rhinet_fault_stops_engine(uint32_t fault)
{
    return fault == RHINET_FAULT_HANG || fault == RHINET_FAULT_FATAL ||
           fault == RHINET_FAULT_GONE;
}

/* The vendor capability: id, next, length, 0, then the fault (32 bits). */
#define RHINET_FAULT_CAP_LEN 8
#define RHINET_FAULT_CAP_MODE 4

/*
 * The switch port's stream socket, QEMU's stream netdev framing (a 4-byte
 * big-endian length, then the frame). Touched only by the engine thread,
 * or by others while it is stopped.
 */
typedef struct RhinetWire {
    char *path;        /* property "wire": NULL for the netdev path */
    int fd;            /* -1: not connected, the link is down */
    int64_t retry_at;  /* next connection attempt (QEMU_CLOCK_REALTIME) */
    uint8_t *rx;       /* bytes read that are not a whole frame yet */
    size_t rx_len;
    uint8_t *tx;       /* bytes the socket did not take yet */
    size_t tx_len;
} RhinetWire;

typedef struct RhinetTxSlot {
    uint32_t len;
    uint8_t data[RHINET_FRAME_MAX];
} RhinetTxSlot;

/*
 * A NIC core: what the glue asks of the engine in-process and of the
 * firmware on a soft core alike.
 */
typedef struct RhinetCoreOps {
    const char *name; /* as the property "core" names it */
    /* A fresh core, link down; the engine thread is not running. */
    bool (*start)(RhinetState *s, Error **errp);
    void (*stop)(RhinetState *s);
    /* vCPU threads, BQL held. */
    uint64_t (*reg_read)(RhinetState *s, hwaddr addr, unsigned size);
    void (*reg_write)(RhinetState *s, hwaddr addr, uint64_t val,
                      unsigned size);
    /* requester: the write's PCIe requester ID, 0 for the CPU */
    void (*doorbell_write)(RhinetState *s, hwaddr addr, uint64_t val,
                           unsigned size, uint16_t requester);
    /* The thread that owns the wire: the engine thread, or the main loop. */
    void (*frame_in)(RhinetState *s, const uint8_t *frame, size_t len);
    void (*set_link)(RhinetState *s, bool up);
    /* Engine thread: does the work at hand; true if there was any. */
    bool (*poll)(RhinetState *s);
    /*
     * Engine thread, before it sleeps: the core's next deadline (get_clock,
     * UINT64_MAX: none), and in *pfd a descriptor to wait on (fd -1: none).
     */
    uint64_t (*sleep)(RhinetState *s, GPollFD *pfd);
} RhinetCoreOps;

struct RhinetState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion doorbells;
    NICState *nic;
    NICConf conf;
    RhinetWire wire;
    uint16_t node_id;
    uint32_t db_pages;
    uint64_t twin_size; /* property: the NIC's twin memory, bytes */
    bool fault_injection; /* property: guest-writable fault capability */
    int32_t engine_nice;  /* property: the engine thread's nice value */
    uint32_t rto_floor_us; /* property: retransmission timeout floor */
    uint8_t fault_cap;    /* its config offset, 0 if none */
    uint32_t fault;       /* atomic: RhinetFault */
    char *core_name;      /* property "core": engine or softcore */
    char *firmware;       /* property: the soft core's image (ELF) */
    char *softcore_qemu;  /* property: its emulator; NULL: from PATH */
    uint64_t serial;      /* property: the card's serial; 0: from node-id */

    /*
     * The shell's firmware slot, under shell_lock (the engine thread
     * stages and commits, vCPUs read its registers and reset it). A soft
     * core booting a host's image runs it from boot_file.
     */
    QemuMutex shell_lock;
    struct rhn_fw_shell shell;
    char *boot_file; /* under sc_lock */

    const RhinetCoreOps *core;
    bool core_fresh; /* atomic: no host write nor frame reached it yet */
    struct rhn_fw_engine *engine; /* core=engine */
    /*
     * core=softcore: the library is not thread-safe, and vCPUs, the engine
     * thread and (netdev) the main loop all call it: every call holds
     * sc_lock. Its callbacks run under it too, on the thread that called.
     */
    QemuMutex sc_lock;
    RhnSoftCore *sc;
    uint64_t sc_deadline; /* the core's wake-up time, under sc_lock */
    bool sc_down_told;    /* the link's end was reported */
    /*
     * A reset's new core is spawned by a thread of the device's own (the
     * emulator dies with the thread that forked it), so that neither the
     * BQL nor a vCPU waits for it. Under sc_lock: spawns asked and done,
     * the core to stop there, and while one starts (STATUS reads not
     * ready) the BAR0 writes it will be given and the link's state.
     */
    QemuThread sc_thread;
    QemuCond sc_cond;
    bool sc_thread_running;
    bool sc_quit;
    unsigned sc_asked, sc_done;
    RhnSoftCore *sc_old;
    bool sc_starting;
    bool sc_link;
    unsigned sc_nheld;
    struct {
        uint32_t offset;
        uint32_t size;
        uint64_t value;
    } sc_held[RHINET_SOFTCORE_HELD_WRITES];

    QemuThread thread;
    EventNotifier wake;
    bool thread_running;
    bool stop;     /* atomic: engine thread exits */
    bool sleeping; /* atomic: engine thread waits on @wake */

    /* Engine thread -> main loop. Single producer, single consumer. */
    QEMUBH *bh;
    RhinetTxSlot *tx_ring;
    uint32_t tx_head; /* atomic: next slot the main loop sends */
    uint32_t tx_tail; /* atomic: next slot the engine fills */
    uint64_t tx_ring_drops; /* read-only QOM property "tx-ring-drops" */
    uint64_t wire_connects; /* read-only QOM property "wire-connects" */
    uint32_t msix_pending; /* atomic bitmap of vectors to raise */
};

/* A frame from the wire; the core is no longer as it started. */
static void rhinet_frame_in(RhinetState *s, const uint8_t *frame, size_t len)
{
    if (qatomic_read(&s->core_fresh)) {
        qatomic_set(&s->core_fresh, false);
    }
    s->core->frame_in(s, frame, len);
}

/* ---- Engine thread ------------------------------------------------------ */

static void rhinet_kick_engine(RhinetState *s)
{
    /* Pairs with the barrier in the engine thread before it sleeps. */
    smp_mb();
    if (qatomic_read(&s->sleeping)) {
        event_notifier_set(&s->wake);
    }
}

static bool rhinet_wire_service(RhinetState *s);
static void rhinet_wire_flush(RhinetState *s);
static int64_t rhinet_wire_poll_fd(RhinetState *s, GPollFD *pfd);

/* Sleeps until a kick, the wire, the core's descriptor or its deadline. */
static void rhinet_engine_sleep(RhinetState *s)
{
    GPollFD pfd[3] = {
        { .fd = event_notifier_get_fd(&s->wake), .events = G_IO_IN },
    };
    unsigned n = 1;
    uint64_t deadline = s->core->sleep(s, &pfd[n]);
    uint64_t now = get_clock();
    int64_t timeout = -1, wire_timeout;

    if (pfd[n].fd >= 0) {
        n++;
    }
    if (deadline != UINT64_MAX) {
        timeout = deadline > now ? deadline - now : 0;
    }
    wire_timeout = rhinet_wire_poll_fd(s, &pfd[n]);
    if (wire_timeout >= 0 && (timeout < 0 || wire_timeout < timeout)) {
        timeout = wire_timeout;
    }
    qemu_poll_ns(pfd, s->wire.fd >= 0 ? n + 1 : n, timeout);
}

static void *rhinet_engine_thread(void *opaque)
{
    RhinetState *s = opaque;
    GPollFD wake = {
        .fd = event_notifier_get_fd(&s->wake), .events = G_IO_IN,
    };
    bool did;

    rcu_register_thread();
    /*
     * The engine is the NIC's hardware: woken by a frame or a doorbell, it
     * should not wait for a time slice behind the guests' spinning vCPUs.
     * Best effort: raising a priority needs CAP_SYS_NICE.
     */
    if (s->engine_nice) {
        setpriority(PRIO_PROCESS, qemu_get_thread_id(), s->engine_nice);
    }
    while (!qatomic_read(&s->stop)) {
        if (rhinet_fault_stops_engine(qatomic_read(&s->fault))) {
            /* Injected fault: the engine does nothing until cleared. */
            qatomic_set(&s->sleeping, true);
            smp_mb(); /* pairs with rhinet_kick_engine's */
            if (rhinet_fault_stops_engine(qatomic_read(&s->fault)) &&
                !qatomic_read(&s->stop)) {
                qemu_poll_ns(&wake, 1, -1);
            }
            qatomic_set(&s->sleeping, false);
            event_notifier_test_and_clear(&s->wake);
            continue;
        }
        /* Both, every turn: frames in feed the poll, the poll's go out. */
        did = rhinet_wire_service(s);
        did |= s->core->poll(s);
        rhinet_wire_flush(s);
        if (did) {
            continue;
        }
        qatomic_set(&s->sleeping, true);
        smp_mb(); /* pairs with rhinet_kick_engine's */
        /* Look once more: a producer may have missed the sleeping flag. */
        did = !qatomic_read(&s->stop) && s->core->poll(s);
        rhinet_wire_flush(s);
        if (!did && !qatomic_read(&s->stop)) {
            rhinet_engine_sleep(s);
        }
        qatomic_set(&s->sleeping, false);
        event_notifier_test_and_clear(&s->wake);
    }
    rcu_unregister_thread();
    return NULL;
}

/* ---- Host bus: DMA, interrupts, clock (engine thread) ------------------- */

/*
 * Only guest RAM is reachable: a DMA address that hits MMIO, ROM (for writes)
 * or nothing at all fails the whole transfer, so the engine thread never
 * dispatches into a device (our own BAR included) and needs no BQL. Each
 * piece is translated once (a MemoryRegionCache, as virtio's rings use):
 * the copy goes through the cached host pointer, and a write then marks
 * the bytes dirty and drops code translated from them. dma_barrier's
 * smp_mb orders it
 * against the engine's earlier accesses. Bus mastering off disables the
 * address space, so nothing is reachable then.
 */
static bool rhinet_dma(RhinetState *s, uint64_t addr, void *buf, size_t len,
                       bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    uint8_t *p = buf;

    if (addr + len < addr) {
        return false;
    }
    dma_barrier(as, is_write ? DMA_DIRECTION_FROM_DEVICE
                             : DMA_DIRECTION_TO_DEVICE);
    RCU_READ_LOCK_GUARD();
    while (len) {
        MemoryRegionCache cache = MEMORY_REGION_CACHE_INVALID;
        int64_t plen = address_space_cache_init(&cache, as, addr, len,
                                                is_write);
        MemoryRegion *mr = cache.mrs.mr;
        bool ok = plen > 0 && cache.ptr && mr && memory_region_is_ram(mr) &&
                  !memory_region_is_ram_device(mr) &&
                  !(is_write && mr->readonly);

        if (ok) {
            if (is_write) {
                address_space_write_cached(&cache, 0, p, plen);
                /* Dirty tracking, and translated code over these bytes. */
                address_space_cache_invalidate(&cache, 0, plen);
            } else {
                address_space_read_cached(&cache, 0, p, plen);
            }
            /* Peer-to-peer into an xpu's memory: it counts those. */
            if (qatomic_read(&xpu_devices)) {
                xpu_note_peer_access(mr, plen, is_write);
            }
        }
        address_space_cache_destroy(&cache);
        if (!ok) {
            return false;
        }
        addr += plen;
        p += plen;
        len -= plen;
    }
    return true;
}

static bool rhinet_dma_read(void *opaque, uint64_t addr, void *dst, size_t len)
{
    return rhinet_dma(opaque, addr, dst, len, false);
}

static bool rhinet_dma_write(void *opaque, uint64_t addr, const void *src,
                             size_t len)
{
    return rhinet_dma(opaque, addr, (void *)src, len, true);
}

/*
 * A status word or an owner word: one aligned 8-byte store. rhinet_dma's
 * memcpy stores 8..15 bytes as two overlapping 8-byte moves; were the
 * engine thread preempted between them, the guest could take the word,
 * clear it for its next operation and then see the old value again.
 */
static bool rhinet_dma_store_u64(void *opaque, uint64_t addr, uint64_t value)
{
    RhinetState *s = opaque;
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    MemoryRegionCache cache = MEMORY_REGION_CACHE_INVALID;
    MemoryRegion *mr;
    int64_t plen;
    bool ok;

    if (addr & 7) {
        return false;
    }
    dma_barrier(as, DMA_DIRECTION_FROM_DEVICE);
    RCU_READ_LOCK_GUARD();
    plen = address_space_cache_init(&cache, as, addr, 8, true);
    mr = cache.mrs.mr;
    ok = plen == 8 && cache.ptr && mr && memory_region_is_ram(mr) &&
         !memory_region_is_ram_device(mr) && !mr->readonly;
    if (ok) {
        qatomic_set((uint64_t *)cache.ptr, cpu_to_le64(value));
        address_space_cache_invalidate(&cache, 0, 8);
        if (qatomic_read(&xpu_devices)) {
            xpu_note_peer_access(mr, 8, true);
        }
    }
    address_space_cache_destroy(&cache);
    return ok;
}

/*
 * An entry (CQE, EQE, admin completion): its body is visible to the guest
 * before the word holding the owner bit, which the driver polls.
 */
static bool rhinet_dma_write_publish(void *opaque, uint64_t addr,
                                     const void *src, size_t len,
                                     size_t publish_at)
{
    const uint8_t *p = src;
    uint64_t word;

    if (!rhinet_dma(opaque, addr, (void *)p, publish_at, true)) {
        return false;
    }
    smp_wmb(); /* the body before the owner word */
    if (len - publish_at == 8 && !((addr + publish_at) & 7)) {
        memcpy(&word, p + publish_at, 8);
        return rhinet_dma_store_u64(opaque, addr + publish_at,
                                    le64_to_cpu(word));
    }
    return rhinet_dma(opaque, addr + publish_at, (void *)(p + publish_at),
                      len - publish_at, true);
}

static void rhinet_raise_msix(void *opaque, uint16_t vector)
{
    RhinetState *s = opaque;

    if (vector < RHINET_MSIX_VECTORS) {
        qatomic_or(&s->msix_pending, 1u << vector);
        qemu_bh_schedule(s->bh);
    }
}

static uint64_t rhinet_now_ns(void *opaque)
{
    return get_clock();
}

/* ---- The shell's firmware slot ------------------------------------------ */

static uint32_t rhinet_fw_stage(void *opaque, uint32_t offset,
                                const void *data, uint32_t len)
{
    RhinetState *s = opaque;

    QEMU_LOCK_GUARD(&s->shell_lock);
    return rhn_fw_shell_stage(&s->shell, offset, data, len);
}

static uint32_t rhinet_fw_commit(void *opaque, uint32_t length,
                                 uint32_t flags)
{
    RhinetState *s = opaque;

    QEMU_LOCK_GUARD(&s->shell_lock);
    return rhn_fw_shell_commit(&s->shell, length, flags);
}

static void rhinet_fw_state(RhinetState *s, enum rhn_fw_run_state state)
{
    QEMU_LOCK_GUARD(&s->shell_lock);
    rhn_fw_shell_set_state(&s->shell, state);
}

/* ---- Wire: the switch port's socket (engine thread) --------------------- */

static void rhinet_wire_retry_later(RhinetWire *w)
{
    w->retry_at = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + RHINET_WIRE_RETRY_NS;
}

static void rhinet_wire_disconnect(RhinetState *s)
{
    RhinetWire *w = &s->wire;

    close(w->fd);
    w->fd = -1;
    /* A half-sent or half-read frame dies with the stream. */
    w->rx_len = 0;
    w->tx_len = 0;
    rhinet_wire_retry_later(w);
    s->core->set_link(s, false);
}

/* The switch may not listen yet, or may have restarted: try now and then. */
static void rhinet_wire_connect(RhinetState *s)
{
    RhinetWire *w = &s->wire;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd;

    if (w->fd >= 0 || qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < w->retry_at) {
        return;
    }
    pstrcpy(addr.sun_path, sizeof(addr.sun_path), w->path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        if (fd >= 0) {
            close(fd);
        }
        rhinet_wire_retry_later(w);
        return;
    }
    w->fd = fd;
    s->wire_connects++;
    s->core->set_link(s, true);
}

static void rhinet_wire_flush(RhinetState *s)
{
    RhinetWire *w = &s->wire;
    ssize_t n;

    while (w->fd >= 0 && w->tx_len) {
        n = send(w->fd, w->tx, w->tx_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                rhinet_wire_disconnect(s);
            }
            return;
        }
        w->tx_len -= n;
        memmove(w->tx, w->tx + n, w->tx_len);
    }
}

static void rhinet_wire_transmit(RhinetState *s, const uint8_t *frame,
                                 size_t len)
{
    RhinetWire *w = &s->wire;

    if (w->fd < 0) {
        return; /* the link is down: lost, as on a cable */
    }
    if (len > RHINET_FRAME_MAX || w->tx_len + 4 + len > RHINET_WIRE_TX_BYTES) {
        s->tx_ring_drops++; /* the switch stopped reading: the engine resends */
        return;
    }
    stl_be_p(w->tx + w->tx_len, len);
    memcpy(w->tx + w->tx_len + 4, frame, len);
    w->tx_len += 4 + len;
    /*
     * Sent when the engine's poll returns (rhinet_wire_flush in the engine
     * thread's loop): the frames of one poll leave in one system call.
     */
}

/*
 * Hands whole frames to the core, a batch at a time (its receive FIFO
 * takes them until its next poll), reading more when the buffer has run
 * dry. True if anything moved.
 */
static bool rhinet_wire_receive(RhinetState *s)
{
    RhinetWire *w = &s->wire;
    unsigned frames = 0;
    size_t off = 0;
    bool did = false;
    ssize_t n;

    while (w->fd >= 0) {
        while (frames < RHINET_WIRE_RX_BATCH && w->rx_len - off >= 4) {
            uint32_t len = ldl_be_p(w->rx + off);

            /*
             * An empty frame is a runt: the core counts it as malformed,
             * the link stays up. A length beyond any frame is broken
             * framing: nothing after it can be trusted.
             */
            if (len > RHINET_FRAME_MAX) {
                rhinet_wire_disconnect(s);
                return true;
            }
            if (w->rx_len - off - 4 < len) {
                break;
            }
            rhinet_frame_in(s, w->rx + off + 4, len);
            off += 4 + len;
            frames++;
        }
        if (off) {
            w->rx_len -= off;
            memmove(w->rx, w->rx + off, w->rx_len);
            off = 0;
            did = true;
        }
        if (frames >= RHINET_WIRE_RX_BATCH) {
            return true;
        }
        n = recv(w->fd, w->rx + w->rx_len, RHINET_WIRE_RX_BYTES - w->rx_len,
                 MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                       errno != EINTR)) {
            rhinet_wire_disconnect(s); /* the switch went away */
            return true;
        }
        if (n < 0) {
            return did;
        }
        w->rx_len += n;
        did = true;
    }
    return did;
}

/* One turn of the wire between engine polls; true if anything moved. */
static bool rhinet_wire_service(RhinetState *s)
{
    if (!s->wire.path) {
        return false;
    }
    rhinet_wire_connect(s);
    return rhinet_wire_receive(s);
}

/*
 * Before the engine thread sleeps: the socket to wait on (readable, and
 * writable while frames wait), or how long until the next connection
 * attempt (-1: no limit).
 */
static int64_t rhinet_wire_poll_fd(RhinetState *s, GPollFD *pfd)
{
    RhinetWire *w = &s->wire;
    int64_t now;

    if (!w->path) {
        return -1;
    }
    if (w->fd >= 0) {
        pfd->fd = w->fd;
        pfd->events = G_IO_IN | (w->tx_len ? G_IO_OUT : 0);
        pfd->revents = 0;
        return -1;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    return w->retry_at > now ? w->retry_at - now : 0;
}

/* ---- Wire: a netdev, through the main loop ------------------------------ */

static void rhinet_transmit(void *opaque, const uint8_t *frame, size_t len)
{
    RhinetState *s = opaque;
    uint32_t tail, head;
    RhinetTxSlot *slot;

    if (s->wire.path) {
        rhinet_wire_transmit(s, frame, len);
        return;
    }
    tail = qatomic_read(&s->tx_tail);
    head = qatomic_load_acquire(&s->tx_head);
    if (len > RHINET_FRAME_MAX || tail - head >= RHINET_TX_RING) {
        /* A lossy link: the engine's transport retransmits. */
        s->tx_ring_drops++;
        return;
    }
    slot = &s->tx_ring[tail % RHINET_TX_RING];
    memcpy(slot->data, frame, len);
    slot->len = len;
    qatomic_store_release(&s->tx_tail, tail + 1);
    qemu_bh_schedule(s->bh);
}

/* Main loop, BQL held: send queued frames, raise queued interrupts. */
static void rhinet_bh(void *opaque)
{
    RhinetState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t head = qatomic_read(&s->tx_head);
    uint32_t tail = qatomic_load_acquire(&s->tx_tail);
    uint32_t pending;

    for (; head != tail; head++) {
        RhinetTxSlot *slot = &s->tx_ring[head % RHINET_TX_RING];

        qemu_send_packet(qemu_get_queue(s->nic), slot->data, slot->len);
        qatomic_store_release(&s->tx_head, head + 1);
    }

    pending = qatomic_xchg(&s->msix_pending, 0);
    while (pending) {
        unsigned vector = ctz32(pending);

        pending &= pending - 1;
        if (msix_enabled(pdev) &&
            qatomic_read(&s->fault) != RHINET_FAULT_IRQ_LOSS) {
            msix_notify(pdev, vector);
        }
    }
}

static ssize_t rhinet_receive(NetClientState *nc, const uint8_t *buf,
                              size_t size)
{
    RhinetState *s = qemu_get_nic_opaque(nc);

    /* A full receive FIFO drops the frame and counts it (RX_DROPS). */
    rhinet_frame_in(s, buf, size);
    return size;
}

static void rhinet_link_status_changed(NetClientState *nc)
{
    RhinetState *s = qemu_get_nic_opaque(nc);

    s->core->set_link(s, !nc->link_down);
}

static NetClientInfo rhinet_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .receive = rhinet_receive,
    .link_status_changed = rhinet_link_status_changed,
};

/* ---- Core: the engine in this process ----------------------------------- */

static bool rhinet_engine_start(RhinetState *s, Error **errp)
{
    static const struct rhn_fw_host_ops ops_template = {
        .dma_read = rhinet_dma_read,
        .dma_write = rhinet_dma_write,
        .dma_store_u64 = rhinet_dma_store_u64,
        .dma_write_publish = rhinet_dma_write_publish,
        .raise_msix = rhinet_raise_msix,
        .now_ns = rhinet_now_ns,
        .transmit = rhinet_transmit,
        .fw_stage = rhinet_fw_stage,
        .fw_commit = rhinet_fw_commit,
    };
    struct rhn_fw_host_ops ops = ops_template;
    struct rhn_fw_config cfg = {
        .node_id = s->node_id,
        .db_pages = s->db_pages,
        .msix_vectors = RHINET_MSIX_VECTORS,
        .twin_bytes = s->twin_size,
        .retransmit_timeout_ns = (uint64_t)s->rto_floor_us * SCALE_US,
    };

    ops.opaque = s;
    memcpy(cfg.mac, s->conf.macaddr.a, sizeof(cfg.mac));
    s->engine = rhn_fw_engine_new(&cfg, &ops);
    /* The engine is up at once; it runs whatever image was "booted". */
    rhinet_fw_state(s, RHN_FW_STATE_RUNNING);
    return true;
}

static void rhinet_engine_stop(RhinetState *s)
{
    rhn_fw_engine_free(s->engine);
    s->engine = NULL;
}

static uint64_t rhinet_engine_reg_read(RhinetState *s, hwaddr addr,
                                       unsigned size)
{
    return rhn_fw_reg_read(s->engine, addr, size);
}

static void rhinet_engine_reg_write(RhinetState *s, hwaddr addr, uint64_t val,
                                    unsigned size)
{
    rhn_fw_reg_write(s->engine, addr, val, size);
    rhinet_kick_engine(s);
}

static void rhinet_engine_doorbell_write(RhinetState *s, hwaddr addr,
                                         uint64_t val, unsigned size,
                                         uint16_t requester)
{
    uint32_t offset = addr & (RHN_DB_PAGE_SIZE - 1);

    rhn_fw_doorbell_write_from(s->engine, addr >> RHN_DB_PAGE_SHIFT, offset,
                               val, size, requester);
    /*
     * An inline WQE is eight stores before its kick: waking the engine
     * for each would cost a thread switch per store on a busy host.
     */
    if (!rhn_db_in_inline_window(offset, size)) {
        rhinet_kick_engine(s);
    }
}

/* The engine thread itself needs no kick (the wire= path). */
static void rhinet_engine_frame_in(RhinetState *s, const uint8_t *frame,
                                   size_t len)
{
    rhn_fw_frame_arrived(s->engine, frame, len);
    if (!s->wire.path) {
        rhinet_kick_engine(s);
    }
}

static void rhinet_engine_set_link(RhinetState *s, bool up)
{
    rhn_fw_set_link_up(s->engine, up);
    if (!s->wire.path) {
        rhinet_kick_engine(s);
    }
}

static bool rhinet_engine_poll(RhinetState *s)
{
    return rhn_fw_poll(s->engine);
}

static uint64_t rhinet_engine_sleep_until(RhinetState *s, GPollFD *pfd)
{
    pfd->fd = -1;
    return rhn_fw_next_deadline_ns(s->engine);
}

static const RhinetCoreOps rhinet_core_engine = {
    .name = "engine",
    .start = rhinet_engine_start,
    .stop = rhinet_engine_stop,
    .reg_read = rhinet_engine_reg_read,
    .reg_write = rhinet_engine_reg_write,
    .doorbell_write = rhinet_engine_doorbell_write,
    .frame_in = rhinet_engine_frame_in,
    .set_link = rhinet_engine_set_link,
    .poll = rhinet_engine_poll,
    .sleep = rhinet_engine_sleep_until,
};

/* ---- Core: the firmware on a soft core ---------------------------------- */

/*
 * The library's callbacks, called by whichever thread called into it; only
 * rhn_sc_process makes them: on the engine thread under sc_lock, or in
 * rhn_sc_spawn before the new core is published (the spawning thread, as
 * long as the core's first messages are its HELLO and its registers). DMA
 * has the engine's discipline.
 */
static int rhinet_sc_dma_read(void *opaque, uint64_t addr, void *buf,
                              uint32_t len)
{
    return rhinet_dma(opaque, addr, buf, len, false) ? RHN_CARD_OK :
                                                       RHN_CARD_BUS_ERROR;
}

static int rhinet_sc_dma_write(void *opaque, uint64_t addr, const void *buf,
                               uint32_t len)
{
    return rhinet_dma(opaque, addr, (void *)buf, len, true) ?
           RHN_CARD_OK : RHN_CARD_BUS_ERROR;
}

static int rhinet_sc_dma_store64(void *opaque, uint64_t addr, uint64_t value)
{
    if (addr & 7) {
        return RHN_CARD_MISALIGNED;
    }
    return rhinet_dma_store_u64(opaque, addr, value) ? RHN_CARD_OK :
                                                       RHN_CARD_BUS_ERROR;
}

static void rhinet_sc_write_barrier(void *opaque)
{
    smp_wmb(); /* the core's writes before it land first */
}

static void rhinet_sc_frame_out(void *opaque, const void *frame, uint32_t len)
{
    rhinet_transmit(opaque, frame, len);
}

static void rhinet_sc_deadline(void *opaque, uint64_t deadline_ns)
{
    RhinetState *s = opaque;

    s->sc_deadline = deadline_ns; /* the engine thread sleeps until then */
}

/*
 * A new emulator with the firmware image at @image, up to its HELLO; NULL:
 * err says why.
 */
static RhnSoftCore *rhinet_sc_spawn(RhinetState *s, const char *image,
                                    char *err, size_t errlen)
{
    static const RhnSoftCoreOps ops = {
        .dma_read = rhinet_sc_dma_read,
        .dma_write = rhinet_sc_dma_write,
        .dma_store64 = rhinet_sc_dma_store64,
        .write_barrier = rhinet_sc_write_barrier,
        .irq = rhinet_raise_msix,
        .frame_out = rhinet_sc_frame_out,
        .deadline = rhinet_sc_deadline,
        .now_ns = rhinet_now_ns,
        .fw_stage = rhinet_fw_stage,
        .fw_commit = rhinet_fw_commit,
    };
    RhnSoftCoreConfig cfg = {
        .qemu = s->softcore_qemu,
        .firmware = image,
        .node_id = s->node_id,
        .rto_floor_us = s->rto_floor_us,
        .timeout_ms = RHINET_SOFTCORE_HELLO_MS,
    };

    memcpy(cfg.mac, s->conf.macaddr.a, sizeof(cfg.mac));
    return rhn_sc_spawn(&cfg, &ops, s, err, errlen);
}

/* The new core takes over (under sc_lock): the writes held for it, the
 * link, and the engine thread looks at its descriptor. */
static void rhinet_sc_adopt(RhinetState *s, RhnSoftCore *sc)
{
    unsigned i;

    s->sc = sc;
    s->sc_down_told = false;
    s->sc_starting = false;
    rhinet_fw_state(s, sc ? RHN_FW_STATE_RUNNING : RHN_FW_STATE_CRASHED);
    for (i = 0; sc && i < s->sc_nheld; i++) {
        rhn_sc_bar0_write(sc, s->sc_held[i].offset, s->sc_held[i].value,
                          s->sc_held[i].size);
    }
    s->sc_nheld = 0;
    if (sc) {
        rhn_sc_set_link(sc, s->sc_link);
    }
    rhinet_kick_engine(s);
}

/* The device's spawning thread: a reset's new core, off the BQL. */
static void *rhinet_sc_thread(void *opaque)
{
    RhinetState *s = opaque;

    qemu_mutex_lock(&s->sc_lock);
    while (!s->sc_quit) {
        RhnSoftCore *old = s->sc_old, *sc;
        unsigned asked = s->sc_asked;
        char err[256] = "";
        g_autofree char *image = NULL;

        if (asked == s->sc_done && !old) {
            qemu_cond_wait(&s->sc_cond, &s->sc_lock);
            continue;
        }
        s->sc_old = NULL;
        image = g_strdup(s->boot_file ? s->boot_file : s->firmware);
        qemu_mutex_unlock(&s->sc_lock);
        rhn_sc_free(old); /* BYE, and up to 2 s for its emulator's end */
        sc = asked != s->sc_done ? rhinet_sc_spawn(s, image, err,
                                                   sizeof(err)) : NULL;
        qemu_mutex_lock(&s->sc_lock);
        if (asked == s->sc_done) {
            continue;
        }
        if (s->sc_asked != asked || s->sc_quit) {
            /* Another reset came (or the end): this core is stale. */
            if (s->sc_old) {
                rhn_sc_free(s->sc_old);
            }
            s->sc_old = sc;
            continue;
        }
        s->sc_done = asked;
        if (!sc) {
            warn_report("rhinet: node %u: %s", s->node_id, err);
        } else if (rhn_sc_hello(sc)->db_pages < s->db_pages) {
            warn_report("rhinet: node %u: the new soft core serves %u "
                        "doorbell pages, not %u", s->node_id,
                        rhn_sc_hello(sc)->db_pages, s->db_pages);
            s->sc_old = sc;
            sc = NULL;
        }
        rhinet_sc_adopt(s, sc);
    }
    qemu_mutex_unlock(&s->sc_lock);
    return NULL;
}

/*
 * Spawns the emulator and waits for the core's HELLO (a second or so):
 * at realize, where its HELLO sizes BAR2 (as large as the core serves
 * unless db-pages asks for fewer). A reset's core comes from the device's
 * thread (rhinet_sc_thread), and the device reads as not ready until then.
 */
static bool rhinet_sc_start(RhinetState *s, Error **errp)
{
    char err[256];
    uint32_t pages;
    RhnSoftCore *sc;

    QEMU_LOCK_GUARD(&s->sc_lock);
    /* The core may ask for one while it starts (rhinet_sc_deadline). */
    s->sc_deadline = UINT64_MAX;
    if (s->sc_thread_running) {
        s->sc_starting = true;
        s->sc_nheld = 0;
        s->sc_asked++;
        qemu_cond_signal(&s->sc_cond);
        return true;
    }
    sc = rhinet_sc_spawn(s, s->firmware, err, sizeof(err));
    if (!sc) {
        error_setg(errp, "rhinet: node %u: %s", s->node_id, err);
        return false;
    }
    rhinet_sc_adopt(s, sc);
    pages = rhn_sc_hello(s->sc)->db_pages;
    if (!s->db_pages) {
        s->db_pages = pages;
    } else if (s->db_pages > pages) {
        error_setg(errp, "rhinet: db-pages=%u, but the soft core serves %u",
                   s->db_pages, pages);
        rhn_sc_free(s->sc);
        s->sc = NULL;
        return false;
    }
    return true;
}

/* The old core is stopped by the device's thread (its BYE takes time). */
static void rhinet_sc_stop(RhinetState *s)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (s->sc_thread_running && !s->sc_old) {
        s->sc_old = s->sc;
        qemu_cond_signal(&s->sc_cond);
    } else {
        rhn_sc_free(s->sc);
    }
    s->sc = NULL;
}

static void rhinet_sc_thread_start(RhinetState *s)
{
    char name[32];

    qemu_cond_init(&s->sc_cond);
    snprintf(name, sizeof(name), "rhinet-sc-%u", s->node_id);
    qemu_thread_create(&s->sc_thread, name, rhinet_sc_thread, s,
                       QEMU_THREAD_JOINABLE);
    s->sc_thread_running = true;
}

static void rhinet_sc_thread_stop(RhinetState *s)
{
    if (!s->sc_thread_running) {
        return;
    }
    qemu_mutex_lock(&s->sc_lock);
    s->sc_quit = true;
    qemu_cond_signal(&s->sc_cond);
    qemu_mutex_unlock(&s->sc_lock);
    qemu_thread_join(&s->sc_thread);
    s->sc_thread_running = false;
    rhn_sc_free(s->sc_old);
    s->sc_old = NULL;
    qemu_cond_destroy(&s->sc_cond);
}

/*
 * Without a core the NIC reads as dead (it failed to start), or as not
 * ready yet (a reset's core is on its way).
 */
static uint64_t rhinet_sc_reg_read(RhinetState *s, hwaddr addr, unsigned size)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (!s->sc) {
        return addr == RHN_REG_STATUS && !s->sc_starting ? RHN_STATUS_FATAL :
                                                           0;
    }
    return rhn_sc_bar0_read(s->sc, addr, size);
}

/* A starting core gets the host's writes when it is there, in order. */
static void rhinet_sc_reg_write(RhinetState *s, hwaddr addr, uint64_t val,
                                unsigned size)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (s->sc) {
        rhn_sc_bar0_write(s->sc, addr, val, size);
    } else if (s->sc_starting && s->sc_nheld < RHINET_SOFTCORE_HELD_WRITES) {
        s->sc_held[s->sc_nheld].offset = addr;
        s->sc_held[s->sc_nheld].size = size;
        s->sc_held[s->sc_nheld].value = val;
        s->sc_nheld++;
    }
}

/* The soft core's BAR2 window does not carry the requester (yet). */
static void rhinet_sc_doorbell_write(RhinetState *s, hwaddr addr, uint64_t val,
                                     unsigned size, uint16_t requester)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (s->sc) {
        rhn_sc_bar2_write(s->sc, addr, val, size);
    }
}

static void rhinet_sc_frame_in(RhinetState *s, const uint8_t *frame,
                               size_t len)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (s->sc) {
        rhn_sc_frame_in(s->sc, frame, len > UINT32_MAX ? UINT32_MAX : len);
    }
}

static void rhinet_sc_set_link(RhinetState *s, bool up)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    s->sc_link = up;
    if (s->sc) {
        rhn_sc_set_link(s->sc, up);
    }
}

/*
 * The library takes in all the core has sent and then sleeps; the core
 * wakes it through the socket when it sends again. So nothing is left to
 * do afterwards: false.
 */
static bool rhinet_sc_poll(RhinetState *s)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    if (!s->sc || s->sc_down_told) {
        return false;
    }
    if (s->sc_deadline != UINT64_MAX && get_clock() >= s->sc_deadline) {
        s->sc_deadline = UINT64_MAX;
        rhn_sc_tick(s->sc);
    }
    if (rhn_sc_process(s->sc) < 0) {
        /*
         * STATUS.FATAL is set: the driver's health check sees it. A device
         * reset must replace the core, whatever reached it before.
         */
        s->sc_down_told = true;
        qatomic_set(&s->core_fresh, false);
        rhinet_fw_state(s, RHN_FW_STATE_CRASHED);
        warn_report("rhinet: node %u: the soft core is gone: %s",
                    s->node_id, rhn_sc_error(s->sc));
    }
    return false;
}

static uint64_t rhinet_sc_sleep_until(RhinetState *s, GPollFD *pfd)
{
    QEMU_LOCK_GUARD(&s->sc_lock);
    pfd->fd = -1;
    if (!s->sc || s->sc_down_told) {
        return UINT64_MAX;
    }
    pfd->fd = rhn_sc_fd(s->sc);
    pfd->events = G_IO_IN | (rhn_sc_want_write(s->sc) ? G_IO_OUT : 0);
    pfd->revents = 0;
    return s->sc_deadline;
}

static const RhinetCoreOps rhinet_core_softcore = {
    .name = "softcore",
    .start = rhinet_sc_start,
    .stop = rhinet_sc_stop,
    .reg_read = rhinet_sc_reg_read,
    .reg_write = rhinet_sc_reg_write,
    .doorbell_write = rhinet_sc_doorbell_write,
    .frame_in = rhinet_sc_frame_in,
    .set_link = rhinet_sc_set_link,
    .poll = rhinet_sc_poll,
    .sleep = rhinet_sc_sleep_until,
};

static const RhinetCoreOps *const rhinet_cores[] = {
    &rhinet_core_engine,
    &rhinet_core_softcore,
};

/* ---- Core lifetime ------------------------------------------------------ */

static bool rhinet_core_start(RhinetState *s, Error **errp)
{
    if (!s->core->start(s, errp)) {
        return false;
    }
    qatomic_set(&s->core_fresh, true);
    return true;
}

/* The link as the wire has it, then the engine thread. */
static void rhinet_core_run(RhinetState *s)
{
    char name[32];

    s->core->set_link(s, s->wire.path ? s->wire.fd >= 0 :
                                        !qemu_get_queue(s->nic)->link_down);
    qatomic_set(&s->stop, false);
    snprintf(name, sizeof(name), "rhinet-engine-%u", s->node_id);
    qemu_thread_create(&s->thread, name, rhinet_engine_thread, s,
                       QEMU_THREAD_JOINABLE);
    s->thread_running = true;
}

static void rhinet_core_stop(RhinetState *s)
{
    if (s->thread_running) {
        qatomic_set(&s->stop, true);
        event_notifier_set(&s->wake);
        qemu_thread_join(&s->thread);
        s->thread_running = false;
    }
    s->core->stop(s);
    /* Frames and interrupts of the old core die with it. */
    qatomic_set(&s->tx_head, qatomic_read(&s->tx_tail));
    qatomic_set(&s->msix_pending, 0);
}

/*
 * A fresh core. One that fails to start (a soft core) leaves the NIC dead:
 * STATUS.FATAL, as a card whose core does not come out of reset.
 */
static void rhinet_core_restart(RhinetState *s)
{
    Error *err = NULL;

    rhinet_core_stop(s);
    if (!rhinet_core_start(s, &err)) {
        warn_report_err(err);
    }
    rhinet_core_run(s);
}

/*
 * A reset: the shell says what boots. True if the core must be replaced
 * for it: a soft core that is to run another image (from boot_file, or
 * the firmware= image when that is the flash's) or that had died. The
 * engine core only records the image.
 */
static bool rhinet_shell_reset(RhinetState *s)
{
    bool softcore = s->core == &rhinet_core_softcore;
    g_autofree char *path = NULL;
    g_autoptr(GError) gerr = NULL;
    enum rhn_fw_boot boot;
    const uint8_t *payload;
    size_t len = 0;

    qemu_mutex_lock(&s->shell_lock);
    boot = rhn_fw_shell_reset(&s->shell);
    payload = rhn_fw_shell_payload(&s->shell, &len);
    if (!softcore) {
        rhn_fw_shell_set_state(&s->shell, RHN_FW_STATE_RUNNING);
    } else if (boot != RHN_FW_BOOT_SAME && payload) {
        path = g_strdup_printf("%s/rhinet-fw-%d-%u.elf", g_get_tmp_dir(),
                               (int)getpid(), s->node_id);
        if (!g_file_set_contents(path, (const char *)payload, len, &gerr)) {
            warn_report("rhinet: node %u: cannot write the image to boot: "
                        "%s", s->node_id, gerr->message);
            g_free(path);
            path = NULL;
        }
    }
    qemu_mutex_unlock(&s->shell_lock);
    if (!softcore || boot == RHN_FW_BOOT_SAME) {
        return false;
    }
    qemu_mutex_lock(&s->sc_lock);
    g_free(s->boot_file);
    s->boot_file = g_steal_pointer(&path);
    qemu_mutex_unlock(&s->sc_lock);
    return true;
}

/* ---- BARs --------------------------------------------------------------- */

static void rhinet_set_fault(RhinetState *s, uint32_t fault);

static uint64_t rhinet_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    RhinetState *s = opaque;
    uint32_t fault = qatomic_read(&s->fault);
    uint64_t v;

    if (fault == RHINET_FAULT_GONE) {
        return size == 8 ? UINT64_MAX : UINT32_MAX;
    }
    WITH_QEMU_LOCK_GUARD(&s->shell_lock) {
        if (rhn_fw_shell_reg_read(&s->shell, addr, size, &v)) {
            return v;
        }
    }
    v = s->core->reg_read(s, addr, size);
    if (fault == RHINET_FAULT_FATAL && addr == RHN_REG_STATUS) {
        v |= RHN_STATUS_FATAL;
    }
    return v;
}

static void rhinet_regs_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    RhinetState *s = opaque;
    uint32_t fault = qatomic_read(&s->fault);

    if (fault == RHINET_FAULT_GONE) {
        return;
    }
    if (addr == RHN_REG_CONTROL && (val & RHN_CONTROL_RESET) &&
        (rhinet_shell_reset(s) || fault != RHINET_FAULT_NONE)) {
        /*
         * The reset line works on a hung core, and boots the image the
         * shell chose: a fresh core.
         */
        rhinet_set_fault(s, RHINET_FAULT_NONE);
        rhinet_core_restart(s);
        return;
    }
    qatomic_set(&s->core_fresh, false);
    s->core->reg_write(s, addr, val, size);
}

static const MemoryRegionOps rhinet_regs_ops = {
    .read = rhinet_regs_read,
    .write = rhinet_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* Doorbells are write-only; reads return zero. */
static uint64_t rhinet_doorbell_read(void *opaque, hwaddr addr, unsigned size)
{
    RhinetState *s = opaque;

    if (qatomic_read(&s->fault) == RHINET_FAULT_GONE) {
        return size == 8 ? UINT64_MAX : UINT32_MAX;
    }
    return 0;
}

/*
 * With the transaction's attributes: a peer device's DMA carries its
 * requester ID (the xpu's does), a CPU store none (0), and the NIC counts
 * SQ doorbells by it, as a card's PCIe shell sees each TLP's requester.
 */
static MemTxResult rhinet_doorbell_write(void *opaque, hwaddr addr,
                                         uint64_t val, unsigned size,
                                         MemTxAttrs attrs)
{
    RhinetState *s = opaque;

    uint32_t fault = qatomic_read(&s->fault);

    if (fault == RHINET_FAULT_GONE) {
        return MEMTX_OK;
    }
    /*
     * A lost SQ kick of a process's page (the kernel's page 0 keeps its
     * kicks): what the NIC's record scan must recover (queues.md).
     */
    if (fault == RHINET_FAULT_SQ_KICK_LOSS && addr >= RHN_DB_PAGE_SIZE &&
        (addr & (RHN_DB_PAGE_SIZE - 1)) == RHN_DB_SQ) {
        return MEMTX_OK;
    }
    qatomic_set(&s->core_fresh, false);
    s->core->doorbell_write(s, addr, val, size, attrs.requester_id);
    return MEMTX_OK;
}

static const MemoryRegionOps rhinet_doorbell_ops = {
    .read = rhinet_doorbell_read,
    .write_with_attrs = rhinet_doorbell_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ---- Fault injection ---------------------------------------------------- */

static void rhinet_set_fault(RhinetState *s, uint32_t fault)
{
    qatomic_set(&s->fault, fault);
    if (s->fault_cap) {
        pci_set_long(s->parent_obj.config + s->fault_cap +
                     RHINET_FAULT_CAP_MODE, fault);
    }
    /* The engine thread notices either way: it is woken to look. */
    rhinet_kick_engine(s);
}

static char *rhinet_get_fault(Object *obj, Error **errp)
{
    RhinetState *s = RHINET(obj);

    return g_strdup(rhinet_fault_names[qatomic_read(&s->fault)]);
}

static void rhinet_set_fault_prop(Object *obj, const char *value, Error **errp)
{
    RhinetState *s = RHINET(obj);
    uint32_t f;

    for (f = 0; f < RHINET_FAULT__MAX; f++) {
        if (!strcmp(value, rhinet_fault_names[f])) {
            rhinet_set_fault(s, f);
            return;
        }
    }
    error_setg(errp, "rhinet: fault must be none, hang, fatal, gone, "
               "irq-loss or sq-kick-loss");
}

/*
 * A device reset (system reset, FLR) starts a fresh core: nothing of the
 * old state survives. A core nothing has reached since it started is
 * fresh already (the machine's reset right after realize): a soft core
 * is not spawned twice.
 */
static void rhinet_reset(DeviceState *dev)
{
    RhinetState *s = RHINET(dev);

    rhinet_set_fault(s, RHINET_FAULT_NONE);
    if (rhinet_shell_reset(s) || !qatomic_read(&s->core_fresh)) {
        rhinet_core_restart(s);
    }
}

static void rhinet_shell_free(RhinetState *s)
{
    g_free(s->shell.staging);
    g_free(s->shell.pending);
    g_free(s->shell.running);
    g_free(s->shell.flash);
    memset(&s->shell, 0, sizeof(s->shell));
    qemu_mutex_destroy(&s->shell_lock);
    if (s->boot_file) {
        unlink(s->boot_file);
        g_free(s->boot_file);
        s->boot_file = NULL;
    }
}

static void rhinet_realize(PCIDevice *pdev, Error **errp)
{
    RhinetState *s = RHINET(pdev);
    uint64_t db_size;
    unsigned i;

    s->core = s->core_name ? NULL : &rhinet_core_engine;
    for (i = 0; !s->core && i < ARRAY_SIZE(rhinet_cores); i++) {
        if (!strcmp(s->core_name, rhinet_cores[i]->name)) {
            s->core = rhinet_cores[i];
        }
    }
    if (!s->core) {
        error_setg(errp, "rhinet: core must be engine or softcore");
        return;
    }
    if (s->core == &rhinet_core_softcore && !s->firmware) {
        error_setg(errp, "rhinet: core=softcore needs firmware=PATH, the "
                   "engine's image (rhinet-fw.elf of a build tree)");
        return;
    }
    if (s->core == &rhinet_core_engine && !s->db_pages) {
        s->db_pages = RHINET_DB_PAGES;
    }
    /* 0 for a soft core: as many as it serves (rhinet_sc_start). */
    if (s->db_pages && (s->db_pages < 2 || !is_power_of_2(s->db_pages) ||
                        s->db_pages > 65536)) {
        error_setg(errp, "rhinet: db-pages must be a power of two in 2..65536");
        return;
    }
    if (s->twin_size < RHN_TWIN_PAGE || s->twin_size > RHINET_TWIN_MAX ||
        s->twin_size % RHN_TWIN_PAGE) {
        error_setg(errp, "rhinet: twin-size must be a multiple of 4 KiB "
                   "in 4K..1G (got %" PRIu64 ")", s->twin_size);
        return;
    }
    if (s->wire.path && s->conf.peers.ncs[0]) {
        error_setg(errp, "rhinet: give wire or netdev, not both");
        return;
    }
    if (s->wire.path &&
        strlen(s->wire.path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        error_setg(errp, "rhinet: wire path '%s' is too long for a socket",
                   s->wire.path);
        return;
    }
    if (s->node_id >= RHN_MAX_NODES) {
        error_setg(errp, "rhinet: node-id must be below 0x%x", RHN_MAX_NODES);
        return;
    }
    /* A MAC derived from the node ID unless one is given. */
    if (!memcmp(s->conf.macaddr.a, "\0\0\0\0\0\0", 6)) {
        const uint8_t mac[6] = { 0x02, 0x52, 0x4e, 0x00, s->node_id >> 8,
                                 s->node_id & 0xff };
        memcpy(s->conf.macaddr.a, mac, 6);
    }

    /* The shell, then the core: a soft core's HELLO sizes BAR2. */
    qemu_mutex_init(&s->shell_lock);
    s->shell.staging = g_malloc0(RHN_FW_SHELL_CAPACITY);
    s->shell.pending = g_malloc0(RHN_FW_SHELL_CAPACITY);
    s->shell.running = g_malloc0(RHN_FW_SHELL_CAPACITY);
    s->shell.flash = g_malloc0(RHN_FW_SHELL_CAPACITY);
    rhn_fw_shell_init(&s->shell,
                      s->core == &rhinet_core_softcore ?
                      RHN_BOARD_QEMU_SOFTCORE : RHN_BOARD_QEMU,
                      s->serial ? s->serial :
                      RHINET_SERIAL_BASE | s->node_id,
                      RHN_ENGINE_FW_VERSION);
    qemu_mutex_init(&s->sc_lock);
    if (!rhinet_core_start(s, errp)) {
        goto fail_core;
    }

    pci_config_set_interrupt_pin(pdev->config, 1);
    /* Function level reset, as a kernel driver's pci_reset_function() uses. */
    if (pcie_endpoint_cap_init(pdev, 0) < 0) {
        error_setg(errp, "rhinet: cannot add the PCI Express capability");
        goto fail_pcie;
    }
    pcie_cap_flr_init(pdev);
    if (s->fault_injection) {
        int off = pci_add_capability(pdev, PCI_CAP_ID_VNDR, 0,
                                     RHINET_FAULT_CAP_LEN, errp);

        if (off < 0) {
            goto fail_cap;
        }
        s->fault_cap = off;
        pdev->config[off + PCI_CAP_FLAGS] = RHINET_FAULT_CAP_LEN;
        pci_set_long(pdev->wmask + off + RHINET_FAULT_CAP_MODE, UINT32_MAX);
    }

    memory_region_init_io(&s->regs, OBJECT(s), &rhinet_regs_ops, s,
                          "rhinet-regs", RHN_BAR_REGS_SIZE);
    pci_register_bar(pdev, RHN_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);

    db_size = (uint64_t)s->db_pages * RHN_DB_PAGE_SIZE;
    memory_region_init_io(&s->doorbells, OBJECT(s), &rhinet_doorbell_ops, s,
                          "rhinet-doorbells", db_size);
    pci_register_bar(pdev, RHN_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH,
                     &s->doorbells);

    if (msix_init_exclusive_bar(pdev, RHINET_MSIX_VECTORS, RHN_BAR_MSIX,
                                errp)) {
        goto fail_cap;
    }
    for (i = 0; i < RHINET_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (event_notifier_init(&s->wake, false) < 0) {
        error_setg(errp, "rhinet: cannot create the engine wake-up event");
        goto fail_msix;
    }
    s->tx_ring = g_new0(RhinetTxSlot, RHINET_TX_RING);
    s->wire.fd = -1;
    if (s->wire.path) {
        s->wire.rx = g_malloc(RHINET_WIRE_RX_BYTES);
        s->wire.tx = g_malloc(RHINET_WIRE_TX_BYTES);
    }
    s->bh = qemu_bh_new(rhinet_bh, s);

    /*
     * A QEMU NIC only for the netdev path: with wire= the engine thread owns
     * the link, and a NIC without a netdev would only make QEMU warn that it
     * has no peer.
     */
    if (!s->wire.path) {
        s->nic = qemu_new_nic(&rhinet_net_info, &s->conf,
                              object_get_typename(OBJECT(s)), DEVICE(s)->id,
                              &DEVICE(s)->mem_reentrancy_guard, s);
        qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    }

    if (s->core == &rhinet_core_softcore) {
        rhinet_sc_thread_start(s);
    }
    rhinet_core_run(s);
    return;

fail_msix:
    msix_uninit_exclusive_bar(pdev);
fail_cap:
    pcie_cap_exit(pdev);
fail_pcie:
    s->core->stop(s);
fail_core:
    qemu_mutex_destroy(&s->sc_lock);
    rhinet_shell_free(s);
}

static void rhinet_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                                int len)
{
    RhinetState *s = RHINET(pdev);
    uint32_t mode = s->fault_cap + RHINET_FAULT_CAP_MODE;

    pci_default_write_config(pdev, addr, val, len);
    if (s->fault_cap && ranges_overlap(addr, len, mode, 4)) {
        uint32_t fault = pci_get_long(pdev->config + mode);

        rhinet_set_fault(s, fault < RHINET_FAULT__MAX ? fault :
                                                        RHINET_FAULT_NONE);
    }
    pcie_cap_flr_write_config(pdev, addr, val, len); /* may reset us */
}

static void rhinet_exit(PCIDevice *pdev)
{
    RhinetState *s = RHINET(pdev);

    rhinet_core_stop(s);
    rhinet_sc_thread_stop(s);
    if (s->wire.fd >= 0) {
        close(s->wire.fd);
    }
    g_free(s->wire.rx);
    g_free(s->wire.tx);
    if (s->nic) {
        qemu_del_nic(s->nic);
    }
    qemu_bh_delete(s->bh);
    g_free(s->tx_ring);
    event_notifier_cleanup(&s->wake);
    msix_uninit_exclusive_bar(pdev);
    pcie_cap_exit(pdev);
    qemu_mutex_destroy(&s->sc_lock);
    rhinet_shell_free(s);
}

static Property rhinet_properties[] = {
    DEFINE_NIC_PROPERTIES(RhinetState, conf),
    DEFINE_PROP_STRING("wire", RhinetState, wire.path),
    DEFINE_PROP_UINT16("node-id", RhinetState, node_id, 0),
    /* 0: the engine's 256, or as many as the soft core serves */
    DEFINE_PROP_UINT32("db-pages", RhinetState, db_pages, 0),
    DEFINE_PROP_SIZE("twin-size", RhinetState, twin_size, 16 * MiB),
    DEFINE_PROP_BOOL("fault-injection", RhinetState, fault_injection, false),
    DEFINE_PROP_INT32("engine-nice", RhinetState, engine_nice, 0),
    DEFINE_PROP_UINT32("rto-floor-us", RhinetState, rto_floor_us, 0),
    DEFINE_PROP_STRING("core", RhinetState, core_name),
    DEFINE_PROP_STRING("firmware", RhinetState, firmware),
    DEFINE_PROP_STRING("softcore-qemu", RhinetState, softcore_qemu),
    /* 0: "RHN" and the node ID */
    DEFINE_PROP_UINT64("serial", RhinetState, serial, 0),
    DEFINE_PROP_END_OF_LIST(),
};

/* Core state (queues in flight, peer channels) is not migrated. */
static const VMStateDescription vmstate_rhinet = {
    .name = "rhinet",
    .unmigratable = 1,
};

static void rhinet_instance_init(Object *obj)
{
    RhinetState *s = RHINET(obj);

    /* Frames the engine made while the main loop lagged; `qom-get`. */
    object_property_add_uint64_ptr(obj, "tx-ring-drops", &s->tx_ring_drops,
                                   OBJ_PROP_FLAG_READ);
    /* Connections made to the wire's switch port (1 unless it restarted). */
    object_property_add_uint64_ptr(obj, "wire-connects", &s->wire_connects,
                                   OBJ_PROP_FLAG_READ);
    /* `qom-set <dev> fault hang|fatal|gone|none` from the monitor. */
    object_property_add_str(obj, "fault", rhinet_get_fault,
                            rhinet_set_fault_prop);
}

static void rhinet_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = rhinet_realize;
    k->exit = rhinet_exit;
    k->config_write = rhinet_write_config;
    k->vendor_id = RHN_PCI_VENDOR_ID;
    k->device_id = RHN_PCI_DEVICE_ID;
    k->revision = RHN_PCI_REVISION;
    k->class_id = RHN_PCI_CLASS;
    dc->desc = "RHiNET-NG RDMA NIC";
    dc->reset = rhinet_reset;
    dc->vmsd = &vmstate_rhinet;
    device_class_set_props(dc, rhinet_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo rhinet_info = {
    .name = TYPE_RHINET,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RhinetState),
    .instance_init = rhinet_instance_init,
    .class_init = rhinet_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { },
    },
};

static void rhinet_register_types(void)
{
    type_register_static(&rhinet_info);
}

type_init(rhinet_register_types)
