// SPDX-License-Identifier: BSD-2-Clause
// Channel state: send-packet memory and the per-node channel (Peer).
#pragma once

#include "core/bounded.h"
#include "core/freestanding.h"
#include "rhinet/hw.h"

namespace rhinet::fw {

// SendSlot::completes_message: the last packet of a request, and of one
// whose message retires quietly (Inflight::quiet), which its ACK hands to
// retire_quiet first; and such a packet that starts a run of them
// (SendSlot::quiet_run), which its ACK hands to retire_quiet_range first.
constexpr uint8_t kCompletes = 1, kCompletesQuiet = 2, kCompletesQuietRun = 3;

struct SendSlot {
  uint16_t len = 0;
  uint8_t completes_message = 0;  // 0 or a kCompletes*
  // With kCompletesQuietRun, the first packet of a run of quiet
  // one-packet messages of one QP the transmit block sent together
  // (consecutive serials and in-flight entries, the slots linked in
  // order): their number, the run's last slot and the QP's quiet_spoils
  // when it was sent. An ACK that covers the whole run retires it at
  // once (retire_quiet_range).
  uint8_t quiet_run = 0;
  uint32_t serial = 0;
  uint32_t qpn = kNone;
  uint32_t qp_gen = 0;
  uint32_t context = kNone;   // charged to this context (kNone: firmware)
  uint32_t next = kNone;      // the peer's unacknowledged packets, in order
  uint32_t run_last = kNone;  // with kCompletesQuietRun
  uint16_t run_spoils = 0;    // with kCompletesQuietRun
  alignas(64) uint8_t frame[RHN_MAX_FRAME];
};

// The free send slots: a stack linked through SendSlot::next, so that
// slots already linked in order (an acknowledged run, still linked as
// the channel's list had them) go back in one step.
class FreeSlots {
 public:
  void place(SendSlot* slots) { slots_ = slots; }
  bool empty() const { return count_ == 0; }
  uint32_t size() const { return count_; }
  uint32_t front() const { return head_; }
  void pop() {
    head_ = slots_[head_].next;
    count_--;
  }
  void push(uint32_t id) {
    slots_[id].next = head_;
    head_ = id;
    count_++;
  }
  // n slots, first to last linked in order through next.
  void push_chain(uint32_t first, uint32_t last, uint32_t n) {
    slots_[last].next = head_;
    head_ = first;
    count_ += n;
  }
  // The caller took n slots from the front down their links; after is
  // the link of the last.
  void took(uint32_t after, uint32_t n) {
    head_ = after;
    count_ -= n;
  }
  // Slots 0..n-1 free, 0 first.
  void fill(uint32_t n) {
    head_ = kNone;
    count_ = 0;
    for (uint32_t i = n; i-- > 0;) push(i);
  }

 private:
  SendSlot* slots_ = nullptr;
  uint32_t head_ = kNone;
  uint32_t count_ = 0;
};

struct Gate {
  uint32_t ack_seq;
  uint16_t session;  // the acknowledging side's stream
  uint32_t seq;      // its next serial when it acknowledged
};

constexpr uint32_t kGates = 4;
constexpr uint32_t kNakMemory = 4;

// Channel state towards one node, indexed by node ID. Kept small (its
// size is asserted below): the bulky parts (unacknowledged packets, READ
// streams, receives in progress) are shared pools linked from here.
struct Peer {
  // Transmit side.
  uint16_t tx_session = 0;
  bool tx_syn = true;  // until the first ACK of this session
  bool in_busy = false, in_ready = false;
  uint8_t retries = 0;
  uint8_t gate_count = 0;
  bool timing = false;  // a packet is being timed (timed_seq)
  uint32_t tx_next = 0;
  uint32_t acked_seen = 0;  // highest ack_seq seen (gated or not)
  uint32_t unacked_head = kNone, unacked_tail = kNone;  // send slots
  uint32_t unacked_count = 0;
  uint32_t resend = kNone;  // next slot to send again (go-back-N)
  uint64_t rto_deadline = 0;
  // Round-trip estimate (RFC 6298): one packet at a time is timed, never
  // one that was sent again (Karn), so the timeout follows how fast this
  // peer really answers (a host that runs the NIC on a busy CPU is slow).
  // In microseconds, to keep the state small (4096 peers).
  uint32_t srtt_us = 0, rttvar_us = 0;  // srtt_us 0: no sample yet
  uint32_t timed_at_us = 0;             // low32_div1000(now)
  uint32_t timed_seq = 0;
  // Retries ran out: datagrams are dropped at once until then (or until
  // the node is heard from), after which the next one probes again.
  uint64_t dead_until = 0;
  Gate gates[kGates];
  WaitList waiters;  // QPs waiting for this peer's window
  uint32_t reads_head = kNone, reads_tail = kNone;  // READ streams
  // Receive side.
  bool rx_synced : 1 = false;
  // The receive placement block has this channel armed (RxSource::arm);
  // it disarms it itself on a DATA frame it hands over unplaced. A bit
  // beside rx_synced: the state stays within its size.
  bool rxw_armed : 1 = false;
  bool nak_sent = false;
  uint16_t rx_session = 0;
  uint8_t nak_next = 0;
  // (Transmit side, here where a byte was free.) Timeouts since the last
  // RTT sample: the timeout stays doubled this often until a packet that
  // went once is acknowledged (RFC 6298 5.7), or a peer slower than the
  // first estimate would never be measured.
  uint8_t backoff = 0;
  // Recovery after a first timeout (slow start): one unacknowledged packet
  // goes again, then twice as many for every ACK that moves on. A timeout
  // that was only a slow peer (its ACKs were on their way) then costs a
  // few packets, not the window; real losses are all sent again within a
  // few round trips. 0: not recovering (go-back-N sends without limit).
  uint8_t recover_window = 0;
  uint8_t recover_budget = 0;  // packets the window still allows
  uint32_t rx_expected = 0;
  uint32_t rx_unacked = 0;
  uint64_t ack_deadline = 0;
  uint64_t rx_last = 0;      // when the current session last delivered
  uint32_t rx_head = kNone;  // receive contexts in use
  // When the NAK of the current gap went (low 32 bits of microseconds). It
  // is sent again when packets past the gap still arrive a timeout later:
  // the resend it asked for (or the NAK) was lost too.
  uint32_t nak_at_us = 0;
  // Requests NAKed lately, so the rest of a multi-packet message is
  // dropped and NAKed once.
  struct Naked {
    uint32_t src = kNone;
    uint32_t msn = 0;
  } naks[kNakMemory];
  // The busy list: peers with timers running.
  uint32_t busy_prev = kNone, busy_next = kNone;
};
static_assert(sizeof(Peer) <= 208, "per-node channel state must stay small");

}  // namespace rhinet::fw
