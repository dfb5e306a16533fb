// SPDX-License-Identifier: BSD-2-Clause
// The bootstrap: how the ranks of a parallel process group learn
// each other's (node ID, endpoint ID) before the NIC can address them.
//
// Every rank connects by TCP to one rendezvous server (rhinet-run runs it;
// BootstrapServer is that server, usable on its own) and sends a HELLO with
// its rank, node ID and endpoint ID; once all `size` ranks have said hello,
// the server sends every rank the whole table rank -> (node, endpoint).
// The connection then stays open for bootstrap-socket barriers. Messages
// are length-prefixed little-endian binary frames; both sides validate
// everything they receive (sizes, rank range, duplicates, group, token).
//
// None of this touches the NIC: the classes here are usable (and tested)
// on machines without one.
#ifndef RHINET_BOOTSTRAP_HPP
#define RHINET_BOOTSTRAP_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rhinet/result.hpp"
#include "rhinet/types.hpp"

namespace rhinet {

// A spin budget as people write one (RHINET_SPIN_US, a tool's option): a
// decimal number of microseconds 0..1000000, or "never" (never_sleep).
// EINVAL otherwise, the message quoting the text and saying what is
// taken, for the caller to put its variable's name before.
Result<std::chrono::microseconds> parse_spin(const char* text);

// How a rank joins its group. join_from_env() fills it from the
// environment rhinet-run sets; programs started some other way fill it
// themselves and call Group::join(options) (or Bootstrap::exchange).
struct BootstrapOptions {
  std::uint32_t rank = 0;   // 0 .. size-1
  std::uint32_t size = 0;   // ranks in the group, 1 .. max_ranks
  std::uint32_t group = 0;  // group ID 0..65535 (0: the open group)
  // The rendezvous server, "a.b.c.d:port" (IPv4 dotted quad).
  std::string rendezvous;
  // The group's secret, shown to the rendezvous server (which refuses a
  // wrong one) and, for group != 0, to the NIC through RHINET_GROUPS.
  std::optional<std::uint64_t> token;
  // Host name sent to the server for its messages ("" = gethostname()).
  std::string host;
  // Connecting (the server may not be listening yet: refused connections
  // are retried), and each later wait for the server.
  std::chrono::milliseconds timeout{60000};

  // Used by Group::join only (not by the bootstrap):
  // the ibverbs device; "" = the first whose name starts with "rhinet".
  std::string device;
  // Operations in flight at once (and status words in the pool);
  // 0 = 64, or the device's limit when that is smaller.
  std::uint32_t max_outstanding = 0;
  // irecvs pending at once, on a device with tag matching (the endpoint's
  // RHINETDV_ENDPOINT_INIT_ATTR_MAX_IRECV; rounded up to a power of two by
  // the provider); 0 = 1024.
  std::uint32_t max_irecv = 0;
  // Where the endpoint's queues live (its send and receive rings, their
  // doorbell records, its completion ring): by default in this process's
  // memory. Set, in memory of another device: `memory` is this process's
  // mapping of bytes [offset, offset + memory.size()) of the dma-buf `fd`
  // (an accelerator's, vgem's), which the NIC reaches by peer-to-peer DMA
  // (RHINETDV_ENDPOINT_INIT_ATTR_QUEUE_BUFS). The completion ring comes
  // first, the queue pair's rings 4 KiB further on; join fails with
  // EINVAL naming the bytes needed when the span is too small. The span
  // must stay mapped while the Group lives; `fd` may be closed after join.
  struct QueueMemory {
    int fd = -1;
    std::uint64_t offset = 0;  // 64-byte aligned, as the span
    std::span<std::byte> memory;
  };
  std::optional<QueueMemory> queue_memory;
  // How long a wait (Request::wait, wait_all, wait_any, Group::sync, the
  // collectives, a full pool of status words) spins on memory before it
  // sleeps until the NIC interrupts: default_spin; never_sleep (negative)
  // spins, yields and naps instead. Group::set_spin changes it later.
  std::chrono::microseconds spin = default_spin;

  // From RHINET_RANK, RHINET_SIZE, RHINET_GROUP, RHINET_RENDEZVOUS
  // (required), RHINET_GROUPS (the token of RHINET_GROUP, if named),
  // RHINET_DEVICE, RHINET_BOOTSTRAP_TIMEOUT (seconds) and RHINET_SPIN_US
  // (microseconds 0..1000000, or "never") (optional).
  // Errors: EINVAL naming the variable that is missing or malformed.
  static Result<BootstrapOptions> from_env();
};

// "a.b.c.d:port" -> address and port; EINVAL with a message otherwise.
struct SocketAddress {
  std::uint32_t ipv4 = 0;  // host byte order
  std::uint16_t port = 0;
  std::string to_string() const;
  static Result<SocketAddress> parse(const std::string& text);
};

// The client side: one rank's TCP exchange, and bootstrap-socket barriers.
class Bootstrap {
 public:
  // Connects to options.rendezvous, sends (rank, self), receives and
  // validates the table. Errors: EINVAL (options), ETIMEDOUT (no server,
  // or no table within options.timeout), ECONNABORTED (the server refused
  // this rank or the exchange failed: its reason is in the message),
  // EPROTO (the server sent something malformed or inconsistent),
  // ECONNRESET (the server went away), other errno of the socket calls.
  static Result<Bootstrap> exchange(const BootstrapOptions& options, Peer self);

  Bootstrap(Bootstrap&&) noexcept;
  Bootstrap& operator=(Bootstrap&&) noexcept;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;
  ~Bootstrap();

  std::uint32_t rank() const { return rank_; }
  std::uint32_t size() const { return size_; }
  std::uint32_t group() const { return group_; }
  // Index: rank.
  std::span<const Peer> table() const { return table_; }

  // A barrier through the rendezvous server over the bootstrap socket (not
  // the NIC): returns when every rank of the group entered it. Errors:
  // ETIMEDOUT, ECONNABORTED (a rank left the group, or the server aborted),
  // ECONNRESET, EPROTO.
  Result<void> barrier(std::chrono::milliseconds timeout = forever);

 private:
  Bootstrap() = default;
  int fd_ = -1;
  std::uint32_t rank_ = 0, size_ = 0, group_ = 0;
  std::uint64_t barrier_seq_ = 0;
  std::string server_;
  std::vector<Peer> table_;
};

// The rendezvous server for one group (rhinet-run's; also usable by a
// program that starts its ranks itself, e.g. from a thread of rank 0).
// Single-threaded: call step() (or run()) from one thread.
class BootstrapServer {
 public:
  struct Config {
    std::uint32_t size = 0;   // ranks expected
    std::uint32_t group = 0;  // every HELLO must name this group
    // When set, every HELLO must carry this token.
    std::optional<std::uint64_t> token;
  };

  // Binds and listens on "a.b.c.d:port" (port 0: any free port).
  static Result<BootstrapServer> listen(const std::string& address,
                                        const Config& config);

  BootstrapServer(BootstrapServer&&) noexcept;
  BootstrapServer& operator=(BootstrapServer&&) noexcept;
  ~BootstrapServer();

  // The port bound (useful after port 0).
  std::uint16_t port() const;
  // The address bound, "a.b.c.d:port".
  std::string address() const;

  // Accepts, reads and answers for at most max_wait. An error means the
  // exchange failed for good (a connection sent something malformed, a
  // wrong group/size/token, a rank out of range or twice, two ranks with
  // the same (node, endpoint)): every connected rank has been sent the
  // reason and the server stops. A connection closed before sending any
  // byte is ignored (a port probe); one closed later before the table
  // fails the exchange.
  Result<void> step(std::chrono::milliseconds max_wait);
  // Every rank has the table.
  bool exchanged() const;
  // Exchanged and every rank has disconnected (or the server failed).
  bool finished() const;
  // Ranks that have not said hello yet, ascending.
  std::vector<std::uint32_t> missing() const;
  // The host a rank named in its hello ("" before it).
  std::string host_of(std::uint32_t rank) const;
  // The table so far (entries of missing ranks are zero).
  std::span<const Peer> table() const;
  // Fails the exchange: sends `reason` to every connected rank, closes.
  void abort(const std::string& reason);

  // step() until finished(); ETIMEDOUT naming the missing ranks, or the
  // first error of step().
  Result<void> run(std::chrono::milliseconds timeout);

 private:
  struct State;
  explicit BootstrapServer(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace rhinet

#endif  // RHINET_BOOTSTRAP_HPP
