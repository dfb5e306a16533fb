/*
 * RHiNET-NG: hosting an external NIC core (SPDX-License-Identifier: BSD-2-Clause)
 *
 * The QEMU device's side of the link to a NIC core that runs in another
 * process: the engine firmware in qemu-system-riscv32 (spawned here), or
 * anything else that speaks the protocol of firmware/card/link.h on a
 * stream socket. The library plays the card's blocks for that core: the
 * doorbell block, the register file that answers BAR0 reads, the MAC's
 * FIFO ends, and the DMA window, MSI-X and the wire through callbacks the
 * device provides. Documentation/hardware/soft-core.md describes the
 * protocol and its ordering rules.
 *
 * Plain C with no QEMU headers. Not thread-safe: the device calls every
 * function under one lock of its own, and spawns from a thread that lives
 * as long as the device (the core is killed when the thread that spawned
 * it ends).
 */
#ifndef RHINET_SOFTCORE_H
#define RHINET_SOFTCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "link.h"
#include "rhinet/fw/card.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RhnSoftCore RhnSoftCore;

/*
 * What the device provides. DMA calls return an enum rhn_card_status.
 * The library calls them in the order the core sent its messages.
 */
typedef struct RhnSoftCoreOps {
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, uint32_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                     uint32_t len);
    /* One aligned 8-byte store the guest's CPUs see whole. */
    int (*dma_store64)(void *opaque, uint64_t addr, uint64_t value);
    /* Orders the writes before it ahead of those after (smp_wmb). */
    void (*write_barrier)(void *opaque);
    void (*irq)(void *opaque, uint16_t vector);
    void (*frame_out)(void *opaque, const void *frame, uint32_t len);
    /*
     * The core sleeps until deadline_ns (UINT64_MAX: none): the device
     * arms a timer and calls rhn_sc_tick when it fires. Replaces the
     * previous deadline.
     */
    void (*deadline)(void *opaque, uint64_t deadline_ns);
    /* Optional: told of each REG_SET after the file took it. */
    void (*reg_set)(void *opaque, uint32_t offset, uint64_t value);
    /* The device's monotonic clock, ns; NULL: CLOCK_MONOTONIC. */
    uint64_t (*now_ns)(void *opaque);
    /*
     * Optional (NULL: the card takes no image): the shell's firmware
     * slot, answering rhn_card_fw_stage and rhn_card_fw_commit with an
     * enum rhn_fw_verdict.
     */
    uint32_t (*fw_stage)(void *opaque, uint32_t offset, const void *data,
                         uint32_t len);
    uint32_t (*fw_commit)(void *opaque, uint32_t length, uint32_t flags);
} RhnSoftCoreOps;

typedef struct RhnSoftCoreConfig {
    const char *qemu;     /* NULL: qemu-system-riscv32 from PATH */
    const char *firmware; /* the core's ELF image */
    const char *dir;      /* socket and RAM file; NULL: /dev/shm or /tmp */
    uint32_t ram_mib;     /* the core's RAM; 0: 64 */
    /*
     * The whole stream through the UART instead of the shared rings (the
     * firmware must be linked with transport_uart.c). For measurements.
     */
    bool uart_stream;
    /* BAR2 pages the doorbell block serves; 0: as many as the core's
     * HELLO names (rhn_sc_hello), for a device that sizes BAR2 after it */
    uint32_t db_pages;
    uint16_t node_id;          /* the card's identity, given to the core */
    uint8_t mac[6];
    uint32_t rto_floor_us;     /* the core's settings (0: its own) */
    int timeout_ms;            /* for the core's HELLO; 0: 10000 */
    /*
     * rhn_sc_run looks at the core's ring this long before it sleeps in
     * poll: a core that sends again soon (the next DMA read) then needs
     * no wake-up through the socket. Costs host CPU while idle, and is
     * slower when cores and devices outnumber the CPUs (soft-core.md has
     * numbers); 0 is the default for that reason.
     */
    uint32_t spin_us;
    const char *const *extra_args; /* more qemu arguments, NULL-ended */
} RhnSoftCoreConfig;

/*
 * Starts qemu-system-riscv32 with the firmware, waits for its HELLO and
 * answers it. NULL on failure, with the reason in err.
 */
RhnSoftCore *rhn_sc_spawn(const RhnSoftCoreConfig *cfg,
                          const RhnSoftCoreOps *ops, void *opaque,
                          char *err, size_t errlen);
/*
 * The identity the device's HELLO gives the core (rhn_card_get_identity):
 * its fabric node and MAC address. Before the core's HELLO is answered.
 */
void rhn_sc_set_identity(RhnSoftCore *sc, uint16_t node_id,
                         const uint8_t mac[6]);
/*
 * Hosts a core already connected on a stream socket (fd is taken over).
 * The core's HELLO is answered when it comes (rhn_sc_process).
 */
RhnSoftCore *rhn_sc_attach(int fd, uint32_t db_pages,
                           const RhnSoftCoreOps *ops, void *opaque);
/*
 * Says BYE and waits up to timeout_ms for the emulator to end: its exit
 * status, or -1 when it had to be killed (or was never ours).
 */
int rhn_sc_stop(RhnSoftCore *sc, int timeout_ms);
/* Stops the core (rhn_sc_stop) if it runs, frees everything. */
void rhn_sc_free(RhnSoftCore *sc);

/* The descriptor to poll for reading (and for writing if want_write). */
int rhn_sc_fd(const RhnSoftCore *sc);
bool rhn_sc_want_write(const RhnSoftCore *sc);
/*
 * Takes in what the core sent and sends what is queued; calls the ops.
 * Never blocks. 0, or -1 once the link is down (rhn_sc_error says why:
 * the core left, ended with BYE, or sent something invalid); then the
 * register file shows RHN_STATUS_FATAL and sends are dropped.
 */
int rhn_sc_process(RhnSoftCore *sc);
/*
 * Waits (poll) up to timeout_ms for the core and processes; for hosts
 * without a main loop (tests, benchmarks). -1 as rhn_sc_process.
 */
int rhn_sc_run(RhnSoftCore *sc, int timeout_ms);
const char *rhn_sc_error(const RhnSoftCore *sc);
/*
 * The core sleeps with nothing on the way in either direction (shared-
 * memory rings only; false otherwise). A host that owns the clock (a test
 * target) advances time only then. The core may be about to sleep a
 * moment after this says false; a caller that needs "quiet" asks twice.
 */
bool rhn_sc_core_idle(const RhnSoftCore *sc);
/*
 * Describes the link for a bring-up log: both rings' indices and sleep
 * flags, what the device holds back. Returns buf.
 */
const char *rhn_sc_describe(const RhnSoftCore *sc, char *buf, size_t len);
bool rhn_sc_alive(const RhnSoftCore *sc);
/* The core's HELLO, once received; NULL before. */
const struct rhn_link_hello *rhn_sc_hello(const RhnSoftCore *sc);
/* The status the core's BYE carried; -1 when it sent none. */
int rhn_sc_bye_status(const RhnSoftCore *sc);
/* The emulator's process, or -1 (attached cores). */
pid_t rhn_sc_pid(const RhnSoftCore *sc);
/*
 * Waits up to timeout_ms for the spawned emulator to end: its exit
 * status, or -1 when it is still running (or was never ours).
 */
int rhn_sc_wait_exit(RhnSoftCore *sc, int timeout_ms);

/* ---- Towards the core ---------------------------------------------- */

/*
 * Queues one doorbell FIFO entry (and a 512-byte staged WQE when
 * entry->flags has RHN_CARD_DB_F_INLINE). False when it was dropped: the
 * core is then told that doorbells were lost (its overflow bit).
 */
bool rhn_sc_doorbell(RhnSoftCore *sc, const struct rhn_card_doorbell *entry,
                     const void *wqe);
/*
 * A frame from the wire; false when dropped: empty or too long (counted in
 * RHN_CNT_MALFORMED_PACKETS, as a MAC counts runts and giants), link down,
 * or no room. A frame the core has no room for is held back (link.h's
 * flow control); when the held ones fill their buffer the frame is
 * dropped, and the core is told: its firmware counts RHN_CNT_RX_DROPS.
 */
bool rhn_sc_frame_in(RhnSoftCore *sc, const void *frame, uint32_t len);
/* The MAC's link state; a change becomes a LINK doorbell entry. */
void rhn_sc_set_link(RhnSoftCore *sc, bool up);
/* Sends the clock (TIME); call when the deadline timer fires. */
void rhn_sc_tick(RhnSoftCore *sc);

/* ---- The host's accesses ------------------------------------------- */

/* BAR0 reads, answered from the register file without the core. */
uint64_t rhn_sc_bar0_read(RhnSoftCore *sc, uint32_t offset, unsigned size);
/* BAR0 writes: into the file, the doorbell FIFO, or both. */
void rhn_sc_bar0_write(RhnSoftCore *sc, uint32_t offset, uint64_t value,
                       unsigned size);
/* BAR2 writes: kicks and the inline WQE window (the doorbell block). */
void rhn_sc_bar2_write(RhnSoftCore *sc, uint64_t addr, uint64_t value,
                       unsigned size);
/* A counter of the counter block (what BAR0 reads at its offset). */
uint64_t rhn_sc_counter(const RhnSoftCore *sc, unsigned int index);
/* Frames the transmit block for plain WRITEs sent (link.h, TXW_KICK). */
uint64_t rhn_sc_txw_frames(const RhnSoftCore *sc);

#ifdef __cplusplus
}
#endif

#endif /* RHINET_SOFTCORE_H */
