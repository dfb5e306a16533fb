// SPDX-License-Identifier: BSD-2-Clause
// mcast_switch: simultaneous multicast (the switch copies each packet) through
// a switch group, through userlib, with the administrator's part done by root.
//
//  (a) admin: the fabric switch already has the group's pattern (the VM
//      harness sets it: run-cluster.sh --switch-group). Every rank, as
//      root, gives its NIC the member list (one (node, endpoint) per
//      rank) with rhinetdv_set_mcast_group, after checking what rhinet.ko
//      refuses (IDs outside 0xf000..0xf7ff, a node listed twice or beyond
//      the fabric, reserved bits, a 25-bit QPN: EINVAL; 129 members:
//      E2BIG; clearing or reading a group never set: ENOENT) and reading
//      the list back. Rank 0 first checks, in a child that became user
//      nobody, that setting and reading a group are EPERM.
//  (b) mcast: rank 0 multicasts with Group::mcast(SwitchGroup) to ranks
//      1..n-1 (the group lists every rank; the switch copies each frame)
//      in modes basic, DIFF (against a zero twin, then every 97th byte
//      changed), BITMAP and STRIDE; after a NIC barrier every member
//      checks every byte of its target region. Rank 0's NIC counters show
//      one frame per packet (mcast_switch_packets against tx_packets).
//  (c) an mcast to a group this NIC has no list for fails with ENOENT
//      (Syndrome::no_mcast_group) before anything is sent; then every
//      rank clears its list (and a second clear is ENOENT).
//
//   rhinet-run -n 4 --hosts node0,...,node3 rhinet_mcast_switch GROUP
//
// One rank per node. Exit status 0 when every check passed on this rank;
// rank 0 prints "mcast_switch: ok" once every rank has.
#include <infiniband/rhinetdv.h>
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <rhinet/rhinet.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rhinet::Group;
using rhinet::Request;
using rhinet::Stride;
using rhinet::XferOptions;

constexpr auto kWait = 20s;
constexpr std::uint32_t kArea = 1;
constexpr std::size_t kAreaBytes = 256 * 1024;
constexpr std::size_t kTarget = 64 * 1024;  // the target region [0, 64K)
constexpr std::byte kSentinel{0xee};
constexpr std::uint16_t kUnsetGroup = RHINETDV_MCAST_GROUP_LAST;

std::byte pat(std::uint64_t seed, std::size_t i) {
  const std::uint64_t h = (seed ^ (seed >> 29)) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::byte>(((h >> 56) + i * 131u + (i >> 8) * 7u) & 0xff);
}

// What an unprivileged user gets from the admin methods: a child that
// became nobody opens the device itself (nothing of the parent's RDMA
// state is shared: this runs before the parent opens anything).
int unprivileged_errno(std::uint16_t group, bool query) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(100);
    // Not in the rank's process group: it is granted to the rank's user,
    // and nobody is refused at open (EPERM) in a group not granted to it.
    unsetenv("RHINET_GROUPS");
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ibv_context* ctx = nullptr;
    for (int i = 0; list && i < n && !ctx; i++)
      if (std::strncmp(ibv_get_device_name(list[i]), "rhinet", 6) == 0)
        ctx = ibv_open_device(list[i]);
    if (!ctx) _exit(101);
    int err;
    if (query) {
      std::uint16_t eg = 0;
      std::uint32_t count = 0;
      err = rhinetdv_query_mcast_group(ctx, group, &eg, nullptr, &count);
    } else {
      const rhinetdv_mcast_member m{0, 0, 1};
      err = rhinetdv_set_mcast_group(ctx, group, 0, &m, 1);
    }
    _exit(err > 0 && err < 100 ? err : 102);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::uint64_t counter(const std::filesystem::path& dir, const char* name) {
  std::ifstream f(dir / name);
  std::uint64_t v = ~0ull;
  f >> v;
  return v;
}

class Test {
 public:
  Test(Group& g, std::uint16_t group, int nobody_set, int nobody_query)
      : g_(g),
        me_(g.rank()),
        n_(g.size()),
        group_(group),
        nobody_set_(nobody_set),
        nobody_query_(nobody_query) {}

  int run() {
    if (!g_.switch_multicast()) {
      std::fprintf(stderr, "mcast_switch: no RHINETDV_CAP_MCAST_SWITCH\n");
      return 1;
    }
    if (g_.local_size() != 1) {
      std::fprintf(stderr, "mcast_switch: one rank per node, please\n");
      return 1;
    }
    area_mem_.assign(kAreaBytes, kSentinel);
    auto a = g_.area(kArea, area_mem_);
    if (!a) return fatal("area", a.error());
    area_.emplace(std::move(*a));
    local_mem_.assign(kAreaBytes, std::byte{0});
    auto b = g_.buffer(local_mem_);
    if (!b) return fatal("buffer", b.error());
    local_.emplace(std::move(*b));

    phase("admin");
    admin();
    report("admin");
    bootstrap_barrier();  // every NIC has the list, every area registered
    phase("mcast");
    if (!bad_ && n_ >= 2) {
      mcasts();
      mcast_diff();
    }
    phase("unset group");
    unset_group();
    bootstrap_barrier();
    phase("clear");
    clear();
    phase("done");
    std::printf("mcast_switch: rank %u of %u: %d checks passed, %d failed\n",
                me_, n_, checks_ - bad_, bad_);
    std::fflush(stdout);
    bootstrap_barrier();
    if (me_ == 0 && !bad_) std::printf("mcast_switch: ok\n");
    return bad_ ? 1 : 0;
  }

 private:
  Group& g_;
  const std::uint32_t me_, n_;
  const std::uint16_t group_;
  const int nobody_set_, nobody_query_;
  int bad_ = 0, checks_ = 0;
  std::vector<std::byte> area_mem_, local_mem_;
  // Sender's counters: switch multicast packets, repairs, frames sent.
  // IP frames are the node's own traffic on the same NIC (the ranks' ssh
  // sessions), counted by its Ethernet interface.
  struct Counts {
    std::uint64_t packets = 0, repairs = 0, frames = 0, ip_frames = 0;
    Counts operator-(const Counts& o) const {
      return {packets - o.packets, repairs - o.repairs, frames - o.frames,
              ip_frames - o.ip_frames};
    }
  };
  Counts last_;  // of rank 0's last mcast_case
  static Counts counts(const std::string& dir) {
    return {counter(dir, "mcast_switch_packets"), counter(dir, "mcast_repairs"),
            counter(dir, "tx_packets"), ip_frames_sent()};
  }
  // Frames sent by the Ethernet interfaces rhinet.ko drives.
  static std::uint64_t ip_frames_sent() {
    std::uint64_t sum = 0;
    for (const auto& e :
         std::filesystem::directory_iterator("/sys/class/net")) {
      std::error_code ec;
      const auto drv =
          std::filesystem::read_symlink(e.path() / "device" / "driver", ec);
      if (!ec && drv.filename() == "rhinet")
        sum += counter(e.path() / "statistics", "tx_packets");
    }
    return sum;
  }
  std::optional<rhinet::Area> area_;
  std::optional<rhinet::Buffer> local_;

  int fatal(const char* what, const rhinet::Error& e) {
    std::fprintf(stderr, "mcast_switch: rank %u: %s: %s\n", me_, what,
                 e.to_string().c_str());
    return 1;
  }
  __attribute__((format(printf, 3, 4))) bool expect(bool good, const char* fmt,
                                                    ...) {
    checks_++;
    if (good) return true;
    bad_++;
    std::fprintf(stderr, "mcast_switch: rank %u: ", me_);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    return false;
  }
  bool ok(const rhinet::Result<void>& r, const std::string& what) {
    return expect(static_cast<bool>(r), "%s: %s", what.c_str(),
                  r ? "" : r.error().to_string().c_str());
  }
  void bootstrap_barrier() {
    if (auto r = g_.barrier_bootstrap(120s); !r) {
      std::fprintf(stderr, "mcast_switch: rank %u: bootstrap barrier: %s\n",
                   me_, r.error().to_string().c_str());
      std::exit(1);
    }
  }
  void phase(const char* what) {
    std::fprintf(stderr, "mcast_switch: rank %u: %s (%d checks, %d failed)\n",
                 me_, what, checks_, bad_);
  }
  void report(const std::string& what) {
    if (me_ == 0 && !bad_) std::printf("mcast_switch: %s: ok\n", what.c_str());
  }
  std::string counters_dir() const {
    return std::string("/sys/class/infiniband/") +
           ibv_get_device_name(g_.context()->device) + "/ports/1/hw_counters";
  }

  // ---- (a) the administrator's part ---------------------------------------

  std::vector<rhinetdv_mcast_member> all_ranks() const {
    std::vector<rhinetdv_mcast_member> v;
    for (std::uint32_t r = 0; r < n_; r++)
      v.push_back({static_cast<std::uint16_t>(g_.peer(r).node_id), 0,
                   g_.peer(r).endpoint_id});
    return v;
  }
  int set(std::uint16_t group, const std::vector<rhinetdv_mcast_member>& m) {
    return rhinetdv_set_mcast_group(
        g_.context(), group, static_cast<std::uint16_t>(g_.group_id()),
        m.data(), static_cast<std::uint32_t>(m.size()));
  }
  void refused(std::uint16_t group, const std::vector<rhinetdv_mcast_member>& m,
               int want, const char* what) {
    const int err = set(group, m);
    expect(err == want, "set_mcast_group %s: %s, expected %s", what,
           std::strerror(err), std::strerror(want));
  }

  void admin() {
    if (me_ == 0)
      expect(nobody_set_ == EPERM && nobody_query_ == EPERM,
             "user nobody: set_mcast_group %d, query_mcast_group %d; "
             "expected EPERM (%d) for both (100+: the child failed)",
             nobody_set_, nobody_query_, EPERM);
    const auto mine = all_ranks();
    auto m = mine;
    refused(RHINETDV_MCAST_GROUP_FIRST - 1, m, EINVAL, "of ID 0xefff");
    refused(RHINETDV_MCAST_GROUP_LAST + 1, m, EINVAL,
            "of ID 0xf800 (verbs UD multicast's)");
    m.push_back(m.front());
    refused(group_, m, EINVAL, "with a node listed twice");
    m = mine;
    m.back().node = 0xefff;
    refused(group_, m, EINVAL, "with a node beyond the fabric");
    m = mine;
    m.back().reserved = 1;
    refused(group_, m, EINVAL, "with reserved bits");
    m = mine;
    m.back().qpn = 1u << 24;
    refused(group_, m, EINVAL, "with a 25-bit QPN");
    m.assign(RHINETDV_MCAST_GROUP_MAX_MEMBERS + 1, rhinetdv_mcast_member{});
    for (std::size_t i = 0; i < m.size(); i++)
      m[i].node = static_cast<std::uint16_t>(i);
    refused(group_, m, E2BIG, "of 129 members");
    refused(kUnsetGroup, {}, ENOENT, "clearing a group never set");
    std::uint16_t eg = 0;
    std::uint32_t count = 0;
    expect(rhinetdv_query_mcast_group(g_.context(), kUnsetGroup, &eg, nullptr,
                                      &count) == ENOENT,
           "query_mcast_group of a group never set was not ENOENT");

    if (!expect(set(group_, mine) == 0, "set_mcast_group %#x: %s",
                unsigned(group_), std::strerror(set(group_, mine))))
      return;
    std::vector<rhinetdv_mcast_member> back(RHINETDV_MCAST_GROUP_MAX_MEMBERS);
    count = static_cast<std::uint32_t>(back.size());
    const int err = rhinetdv_query_mcast_group(g_.context(), group_, &eg,
                                               back.data(), &count);
    back.resize(err ? 0 : count);
    bool same = back.size() == mine.size() && eg == g_.group_id();
    for (std::size_t i = 0; same && i < back.size(); i++)
      same = back[i].node == mine[i].node && back[i].qpn == mine[i].qpn &&
             !back[i].reserved;
    expect(same,
           "query_mcast_group: %s, %u members, endpoint group %u; expected "
           "the %zu set, endpoint group %u",
           std::strerror(err), count, unsigned(eg), mine.size(),
           unsigned(g_.group_id()));
  }

  // ---- (b) multicast through the switch ----------------------------------

  void check_target(const std::function<std::byte(std::size_t)>& want,
                    const std::string& what) {
    std::atomic_thread_fence(std::memory_order_acquire);
    int wrong = 0;
    for (std::size_t i = 0; i < kTarget; i++)
      if (area_mem_[i] != want(i) && wrong++ < 4)
        std::fprintf(stderr,
                     "mcast_switch: rank %u: %s: byte %zu is 0x%02x, expected "
                     "0x%02x\n",
                     me_, what.c_str(), i,
                     std::to_integer<unsigned>(area_mem_[i]),
                     std::to_integer<unsigned>(want(i)));
    expect(!wrong, "%s: %d bytes wrong", what.c_str(), wrong);
  }
  // Members reset their target region, rank 0 multicasts, and after a NIC
  // barrier each member checks every byte against want().
  void mcast_case(const std::string& what, const std::function<Request()>& send,
                  const std::function<std::byte(std::size_t)>& want) {
    std::fill(area_mem_.begin(), area_mem_.begin() + kTarget, kSentinel);
    ok(g_.barrier({}, kWait), "barrier");  // targets reset before the send
    if (me_ == 0) {
      // The sender's counters around this one operation only (the
      // barriers' frames are outside).
      const std::string dir = counters_dir();
      const Counts before = counts(dir);
      ok(send().wait(kWait), "mcast " + what);
      // The RDMA core caches hw_counters for 10 ms after a read: a fast
      // multicast would otherwise read the "before" figures again.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      last_ = counts(dir) - before;
    }
    ok(g_.barrier({}, kWait), "barrier");  // every member acknowledged
    if (me_ != 0) check_target(want, "mcast " + what);
    report("mcast " + what + " to " + std::to_string(n_ - 1) + " ranks");
  }
  Request mcast(std::span<const std::byte> src, std::size_t off,
                const XferOptions& o = {}) {
    return g_.mcast(Group::SwitchGroup{group_}, kArea, off, src, o);
  }

  void mcasts() {
    auto src = std::span<std::byte>(local_mem_);
    // Basic, several packets: the sender's NIC sends each packet once.
    {
      constexpr std::size_t off = 100, len = 40000;
      for (std::size_t i = 0; i < len; i++) src[i] = pat(1, i);
      mcast_case(
          "basic 40000 bytes", [&] { return mcast(src.first(len), off); },
          [&](std::size_t i) {
            return i >= off && i < off + len ? pat(1, i - off) : kSentinel;
          });
      if (me_ == 0) frames_per_packet(len, last_);
    }
    // STRIDE: 300 blocks of 24 bytes, 40 apart here, 56 apart there.
    {
      const Stride s{24, 300, 40, 56};
      constexpr std::size_t off = 1000;
      const std::size_t extent = (s.count - 1) * s.local_stride + s.block;
      for (std::size_t i = 0; i < extent; i++) src[i] = pat(3, i);
      mcast_case(
          "stride 300 x 24 bytes",
          [&] {
            return mcast(src.first(extent), off, XferOptions::strided(s));
          },
          [&](std::size_t i) {
            if (i < off) return kSentinel;
            const std::size_t o = i - off, blk = o / s.remote_stride,
                              in = o % s.remote_stride;
            if (blk >= s.count || in >= s.block) return kSentinel;
            return pat(3, blk * s.local_stride + in);
          });
    }
    // BITMAP: blocks of 64 bytes, about two in three marked.
    {
      constexpr std::size_t off = 20000, len = 8192, gran = 64;
      constexpr std::size_t bits_at = 100000;  // in the same Buffer
      for (std::size_t i = 0; i < len; i++) src[i] = pat(4, i);
      auto marked = [](std::size_t blk) { return (blk * 7 + 1) % 3 != 0; };
      for (std::size_t b = 0; b < len / gran / 8; b++) {
        unsigned byte = 0;
        for (unsigned j = 0; j < 8; j++)
          if (marked(b * 8 + j)) byte |= 1u << j;
        src[bits_at + b] = static_cast<std::byte>(byte);
      }
      mcast_case(
          "bitmap 8192 bytes in blocks of 64",
          [&] {
            return mcast(src.first(len), off,
                         XferOptions::with_bitmap(
                             src.subspan(bits_at, len / gran / 8), gran));
          },
          [&](std::size_t i) {
            return i >= off && i < off + len && marked((i - off) / gran)
                       ? pat(4, i - off)
                       : kSentinel;
          });
    }
  }

  // The sender emitted one frame per packet, not one per member: its
  // frames are its packets and repairs, and at most a few frames of the
  // node's IP traffic (the ranks' ssh sessions ride the same NIC).
  // One emission per packet (mcast_switch_packets), whatever the number
  // of members. Repairs are not asserted on: under TCG a member's
  // acknowledgement can come after the sender's timer, and the repair then
  // arrives as a duplicate (mcast_duplicates at the members).
  void frames_per_packet(std::size_t len, const Counts& c) {
    const std::uint64_t packets = c.packets, repairs = c.repairs,
                        frames = c.frames - c.ip_frames;
    ibv_port_attr pa{};
    const std::uint64_t mtu =
        ibv_query_port(g_.context(), 1, &pa) == 0 && pa.max_mtu >= IBV_MTU_256
            ? 128u << pa.max_mtu
            : 0;
    const std::uint64_t want = mtu ? (len + mtu - 1) / mtu : 0;
    std::printf(
        "mcast_switch: sender: %llu bytes to %u members: %llu packets "
        "(%llu of MTU %llu expected), %llu frames sent besides %llu IP "
        "frames, %llu repairs\n",
        static_cast<unsigned long long>(len), n_ - 1,
        static_cast<unsigned long long>(packets),
        static_cast<unsigned long long>(want),
        static_cast<unsigned long long>(mtu),
        static_cast<unsigned long long>(frames),
        static_cast<unsigned long long>(c.ip_frames),
        static_cast<unsigned long long>(repairs));
    expect(packets == want, "mcast_switch_packets %llu, expected %llu",
           static_cast<unsigned long long>(packets),
           static_cast<unsigned long long>(want));
    // Not asserted: the rest of the frames (the NIC's ACKs and the like;
    // in the VM about as many again as packets and repairs together).
    std::printf("mcast_switch: sender: %llu other frames in that time\n",
                static_cast<unsigned long long>(frames > packets + repairs
                                                    ? frames - packets - repairs
                                                    : 0));
  }

  // DIFF against a zero twin of rank 0, then every 97th byte changed.
  void mcast_diff() {
    constexpr std::size_t off = 30000, len = 6000;
    auto src = std::span<std::byte>(local_mem_).first(len);
    auto twin = g_.twin(len);
    if (!ok(twin ? rhinet::ok() : rhinet::Result<void>(twin.error()),
            "twin for the diff mcast"))
      return;
    for (std::size_t i = 0; i < len; i++) src[i] = pat(6, i);
    mcast_case(
        "diff against a zero twin",
        [&] { return mcast(src, off, XferOptions::diff(*twin)); },
        [&](std::size_t i) {
          if (i < off || i >= off + len || pat(6, i - off) == std::byte{0})
            return kSentinel;
          return pat(6, i - off);
        });
    auto changed = [](std::size_t i) { return i % 97 == 5; };
    for (std::size_t i = 0; i < len; i++)
      if (changed(i)) src[i] = ~pat(6, i);
    mcast_case(
        "diff of every 97th byte",
        [&] { return mcast(src, off, XferOptions::diff(*twin)); },
        [&](std::size_t i) {
          return i >= off && i < off + len && changed(i - off)
                     ? ~pat(6, i - off)
                     : kSentinel;
        });
  }

  // ---- (c) errors and clean-up ---------------------------------------------

  // Last: a refused work request takes the endpoint to error.
  void unset_group() {
    if (me_ != 0) return;
    auto src = std::span<std::byte>(local_mem_).first(100);
    auto r =
        g_.mcast(Group::SwitchGroup{kUnsetGroup}, kArea, 0, src).wait(kWait);
    if (!expect(!r, "mcast to a group never set succeeded")) return;
    expect(r.error().errno_value() == ENOENT &&
               r.error().syndrome() ==
                   static_cast<std::uint32_t>(rhinet::Syndrome::no_mcast_group),
           "mcast to a group never set: %s; expected ENOENT, no_mcast_group",
           r.error().to_string().c_str());
    report("mcast to a group never set (ENOENT)");
  }

  void clear() {
    expect(set(group_, {}) == 0, "clearing the group failed");
    refused(group_, {}, ENOENT, "clearing it again");
    report("clear");
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const auto group = static_cast<std::uint16_t>(
      argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 0xf001);
  // Before this process opens the device (see unprivileged_errno).
  const char* rank = std::getenv("RHINET_RANK");
  int nobody_set = 0, nobody_query = 0;
  if (rank && std::strcmp(rank, "0") == 0 && geteuid() == 0) {
    nobody_set = unprivileged_errno(group, false);
    nobody_query = unprivileged_errno(group, true);
  }
  auto joined = Group::join_from_env();
  if (!joined) {
    std::fprintf(stderr, "mcast_switch: join: %s\n",
                 joined.error().to_string().c_str());
    return 1;
  }
  return Test(**joined, group, nobody_set, nobody_query).run();
}
