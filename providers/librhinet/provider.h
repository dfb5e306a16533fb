// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// librhinet: the rdma-core provider of the RHiNET-NG NIC. Objects wrap the
// libibverbs ones; queues live in buffers this library allocates, laid out
// as rdma/rhinet-abi.h says, and are driven without system calls: WQEs and
// doorbell records in memory, then a kick on the process's doorbell page.
#pragma once

#include <rdma/rhinet-abi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "barriers.h"
#include "rhinet/hw.h"
#include "verbs_abi44.h"

namespace rhinet {

template <typename T>
inline T* container_of_member(void* member, std::size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(member) - offset);
}

struct Device {
  verbs_device vdev;  // first: libibverbs frees it through uninit_device
};

struct Qp;
struct Srq;

// QPs (and TM SRQs) by number, for completions: two levels over the whole
// 24-bit number space, whatever the NIC's limits; a leaf of 4096 entries
// is allocated on first use and kept until the context goes, so pollers
// read without a lock. An entry is set before the object can have
// completions and cleared under its CQs' locks after they were cleaned of
// its CQEs (clean_cq).
template <typename T>
class NumTable {
 public:
  static constexpr uint32_t kLeafBits = 12;
  static constexpr uint32_t kLeaves = 1u << (24 - kLeafBits);
  ~NumTable() {
    for (auto& l : leaves_) delete[] l.load(std::memory_order_relaxed);
  }
  T* get(uint32_t num) const {
    T** leaf =
        leaves_[(num >> kLeafBits) % kLeaves].load(std::memory_order_acquire);
    return leaf ? leaf[num & ((1u << kLeafBits) - 1)] : nullptr;
  }
  // False when a leaf cannot be allocated. Callers hold table_lock.
  bool set(uint32_t num, T* obj) {
    std::atomic<T**>& slot = leaves_[(num >> kLeafBits) % kLeaves];
    T** leaf = slot.load(std::memory_order_relaxed);
    if (!leaf) {
      leaf = new (std::nothrow) T*[1u << kLeafBits]();
      if (!leaf) return false;
      slot.store(leaf, std::memory_order_release);
    }
    leaf[num & ((1u << kLeafBits) - 1)] = obj;
    return true;
  }

 private:
  std::atomic<T**> leaves_[kLeaves] = {};
};

// One CQE decoded once (completion.cpp), whoever polls: poll_cq and the
// ibv_cq_ex calls read it as verbs do, rhinetdv_poll as direct verbs do.
// A CQE only direct verbs know (a signal, an irecv's, a pin-down's, ...)
// has no verbs opcode (kNoWcOpcode); it occurs only on an endpoint's CQ,
// which the library keeps to itself.
constexpr int kNoWcOpcode = -1;
struct Completion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  uint32_t vendor_err = 0;  // the NIC's syndrome
  uint32_t byte_len = 0;
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint16_t src_node = 0;
  uint8_t cqe_opcode = 0;       // RHN_CQE_OP_*
  uint8_t ext_flags = 0;        // the CQE's RHN_CQE_X_* bits
  int wc_opcode = kNoWcOpcode;  // enum ibv_wc_opcode
  int dv_opcode = 0;            // enum rhinetdv_opcode, 0 if none
  unsigned int wc_flags = 0;
  __be32 imm_data = 0;  // or the invalidated key (IBV_WC_WITH_INV)
  uint8_t sl = 0;
  bool reported = true;  // a send the poster wants to hear of
  // A watch fired (RHN_CQE_OP_WATCH without RHN_CQE_F_SQ): wr_id is the
  // area key; direct verbs count it (dv_poll.cpp).
  bool watch_fired = false;
  uint16_t wqe_index = 0;
  uint64_t tag = 0;     // direct verbs' tag operations: the message's tag
  ibv_wc_tm_info tm{};  // an IBV_WC_TM_RECV that matched an entry
};

struct Context {
  verbs_context vctx;              // libibverbs' part, at the offset we tell it
  volatile uint8_t* db = nullptr;  // the doorbell page
  size_t db_size = 0;
  rhinet_alloc_ucontext_resp attr{};
  // Plain RQs' posts may leave out the kick (both the NIC and the driver
  // say so, and RHINET_RQ_DOORBELL=always did not ask for every kick).
  bool rq_kick_on_request = false;
  // The same for plain SQs (RHINET_SQ_DOORBELL=always keeps every kick,
  // and leaves the WQE out of the doorbell page, as before).
  bool sq_kick_on_request = false;
  // Plain SQs are created with an event index (the driver says the NIC
  // has one; RHINET_SQ_DOORBELL=bit keeps the request bit alone).
  bool sq_event_index = false;
  // A kick may carry a one-slot WQE in the page's inline window.
  bool sq_inline_db = false;
  // CQs are created with RHINET_CREATE_CQ_RUNS: the NIC may write runs,
  // one CQE for several completions (the driver offers it and
  // RHINET_CQE_RUNS=0 did not turn it off).
  bool cqe_runs = false;
  // The page has one window: held from its first store to the kick, so
  // two QPs' posters never mix their WQEs in it. A poster that finds it
  // held kicks without the window rather than wait.
  std::atomic_flag inline_window_held = ATOMIC_FLAG_INIT;
  // The groups joined at open (RHINET_GROUPS), for rhinetdv.
  uint32_t num_groups = 0;
  uint16_t groups[RHINET_MAX_GROUPS] = {};
  std::mutex table_lock;  // create/destroy of qps and srqs entries
  NumTable<Qp> qps;
  // TM SRQs (their list operations complete by srqn) and XRC SRQs (their
  // receives complete naming the SRQ, not a QP of this process).
  NumTable<Srq> srqs;
  // Destroyed multi-producer QPs: their structs stay (and are freed with
  // the context) so that a poster racing the destroy gets EINVAL rather
  // than touching freed memory. Under table_lock.
  Qp* mp_closed_qps = nullptr;

  void kick(uint32_t offset, uint32_t value) {
    to_device_barrier();
    *reinterpret_cast<volatile uint32_t*>(db + offset) = value;
  }
};

struct Pd {
  ibv_pd ibpd;
};

// Twin memory, handed out as device memory (dm.cpp).
struct Dm {
  ibv_dm ibdm;
  uint32_t twin_handle = 0;
  uint64_t length = 0;
  bool copies = false;  // the driver copies and registers it (DM_COPY)
};

struct Mr {
  verbs_mr vmr;
};

// A queue's buffer the application gives (rhinetdv_create_qp/cq): bytes
// of a dma-buf, and the process's mapping of them, where the provider
// writes WQEs and reads CQEs. The provider neither allocates nor frees it.
struct QueueBuf {
  int dmabuf_fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* addr = nullptr;
};

struct Cq {
  verbs_cq vcq;
  std::mutex lock;
  uint8_t* buf = nullptr;  // ring, then the record
  size_t buf_len = 0;
  bool foreign_buf = false;  // a QueueBuf: not the provider's to free
  rhn_cqe* ring = nullptr;
  rhn_cq_record* record = nullptr;
  uint32_t cqn = 0;
  uint32_t log_depth = 0;
  uint32_t consumer = 0;  // next CQE to look at
  // Of the run (RHN_CQE_X_RUN) at consumer, the completions handed out:
  // a poll that asked for fewer keeps the rest here, and the entry is
  // consumed with its last one (completion.cpp).
  uint32_t run_given = 0;
  // ibv_cq_ex polling (cq_ex.cpp): the completion start_poll/next_poll
  // decoded last, and the consumer index when start_poll took the lock.
  Completion cur{};
  uint32_t poll_start = 0;
};

struct Srq {
  verbs_srq vsrq;
  std::mutex lock;
  uint8_t* buf = nullptr;
  size_t buf_len = 0;
  rhn_recv_wqe* ring = nullptr;
  rhn_queue_record* record = nullptr;
  uint32_t srqn = 0;
  uint32_t depth = 0;
  uint32_t max_sge = 0;
  // By ring position. WQEs complete in any order (several QPs share the
  // SRQ), so a position is reused only after its completion was polled.
  uint64_t* wr_ids = nullptr;
  uint8_t* busy = nullptr;
  uint32_t producer = 0;  // WQEs posted
  // A TM SRQ (IBV_SRQT_TM): the ring of tag-list operations (executed
  // in order; a slot is reused once the record's nic_consumer passed it),
  // what each posted one was, and the tag list's entries by handle. An
  // entry goes back to the free list when no CQE is owed for it any more
  // (refs: its ADD's if signaled, its DEL's, its match's).
  struct TmOp {
    uint64_t wr_id;
    uint32_t handle;
    uint8_t opcode;  // enum rhn_tm_op
    bool signaled;
  };
  struct TmTag {
    uint64_t wr_id;  // recv_wr_id
    uint32_t refs;
    uint32_t next_free;
  };
  bool tm = false;
  Cq* tm_cq = nullptr;
  rhn_tm_op_wqe* ops = nullptr;
  rhn_queue_record* ops_record = nullptr;
  uint32_t ops_depth = 0;
  uint32_t ops_producer = 0;
  TmOp* op_info = nullptr;
  TmTag* tags = nullptr;
  uint32_t max_tags = 0;
  uint32_t free_tag = UINT32_MAX;
  // Unexpected messages polled, and the count last reported with
  // IBV_OPS_TM_SYNC: too far apart, completions ask for a sync.
  uint32_t unexp_in = 0, unexp_out = 0;
  // An XRC SRQ (IBV_SRQT_XRC): its receives complete on xrc_cq whichever
  // target QP they came through; srqn is the index, vsrq.srq_num the
  // number with its incarnation that peers name.
  bool xrc = false;
  Cq* xrc_cq = nullptr;
};

struct SendSlot {
  uint64_t wr_id;
  uint8_t slots;  // slots this WQE takes
  bool report;    // its poster wants its completion (see sq_write)
  bool signaled;  // RHN_WQE_F_SIGNALED: a run's expansion stops at it
  // Triggered (sq_hold): its own CQE reports it, out of ring order, before
  // or after the ring passed it; a run's expansion never stops at it.
  bool triggered;
};

// A triggered WQE not completed yet (sq_hold): what its CQE will need once
// the ring has moved on, and its full index, whose low 16 bits the CQE
// names.
struct HeldWqe {
  uint64_t wr_id;
  uint32_t index;
  bool report;
};

struct Ah;

// One send work request as the WQE builder takes it, from an ibv_send_wr
// (post_send) or from the ibv_qp_ex wr_* calls (qp_ex.cpp).
struct SendDesc {
  ibv_wr_opcode opcode = IBV_WR_SEND;
  unsigned int send_flags = 0;  // SIGNALED, SOLICITED, FENCE
  bool inline_data = false;     // copy the bytes the SGEs name into the WQE
  const ibv_sge* sge = nullptr;
  uint32_t num_sge = 0;
  __be32 imm_data = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0, swap = 0;
  // BIND_MW: the window's key now (rkey: its key once bound), the region,
  // the length, the NIC rights; LOCAL_INV and SEND_WITH_INV: the key.
  uint32_t bind_mw_key = 0, bind_mr_lkey = 0, bind_rights = 0;
  uint64_t bind_length = 0;
  uint32_t invalidate_rkey = 0;
  const Ah* ah = nullptr;  // UD
  // UD: the destination QP; XRC_SEND: the target's XRC SRQ number.
  uint32_t remote_qpn = 0, remote_qkey = 0;
  // rhinetdv_wr_set_trigger: RHN_WQE_X_* and the WQE's trigger slot.
  uint16_t xflags = 0;
  rhn_wqe_trigger trigger{};
};

// The ibv_qp_ex batch between wr_start and wr_complete/wr_abort: the WR
// being described (its SGEs and inline bytes copied here) is built into
// the ring when the next one starts or the batch completes.
struct WrBatch {
  uint32_t start = 0;  // sq_producer at wr_start
  int err = 0;         // first error; wr_complete posts nothing then
  bool staged = false;
  // The WR's destination was given: wr_set_ud_addr (UD) or
  // wr_set_xrc_srqn (XRC_SEND), which those QPs' WRs need.
  bool dest_set = false;
  uint64_t wr_id = 0;
  SendDesc desc;
  ibv_sge sges[RHN_WQE_MAX_SGES];
  uint8_t inline_buf[RHN_WQE_MAX_INLINE];
};

struct Qp {
  verbs_qp vqp;
  std::mutex sq_lock, rq_lock;
  uint8_t* buf = nullptr;
  size_t buf_len = 0;
  bool foreign_buf = false;  // a QueueBuf: not the provider's to free
  uint32_t qpn = 0;
  bool sq_sig_all = false;
  // Send queue: slots, free-running indices.
  uint8_t* sq = nullptr;
  uint32_t sq_log = 0;
  uint32_t sq_producer = 0, sq_consumer = 0;
  // Triggered WQEs not completed yet, oldest first (sq_hold).
  HeldWqe* sq_held = nullptr;
  uint32_t sq_num_held = 0;
  uint32_t max_send_sge = 0, max_inline = 0;
  bool no_sq = false;  // created with max_send_wr 0: every post is ENOMEM
  // An XRC target QP (IBV_QPT_XRC_RECV, created or opened): the kernel's,
  // with no queues here; the provider only names it in commands.
  bool xrc_target = false;
  SendSlot* sq_info = nullptr;  // per slot of a WQE's first slot
  rhn_queue_record* sq_record = nullptr;
  // Receive queue (none with an SRQ, nor on an XRC initiator).
  rhn_recv_wqe* rq = nullptr;
  uint32_t rq_depth = 0;
  uint32_t rq_producer = 0, rq_consumer = 0;
  uint32_t max_recv_sge = 0;
  uint64_t* rq_wr_ids = nullptr;
  rhn_queue_record* rq_record = nullptr;
  // Posts ring RHN_DB_RQ only when the record asks (plain RQs on a NIC
  // and driver that allow it; see rq_kick_wanted in post.cpp).
  bool rq_kick_on_request = false;
  // Posts ring RHN_DB_SQ only when the record asks (see sq_publish).
  bool sq_kick_on_request = false;
  // The producer index at the last sq_publish: the first WQE not yet
  // announced, which a kick may carry in the inline window.
  uint32_t sq_announced = 0;
  Srq* srq = nullptr;
  // ibv_qp_ex (created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS): guarded by
  // sq_lock, which wr_start takes and wr_complete/wr_abort release.
  uint64_t send_ops = 0;
  WrBatch wr;
  // Many producers (RHINETDV_QP_INIT_ATTR_MULTI_PRODUCER, sq_mp_write):
  // posters take no lock; the record is sq_mp_record, sq_record names its
  // first 8 bytes. mp_credit: slots a poster may still reserve, returned
  // when a poller has taken the completion covering them (sq_complete),
  // so that a slot is rewritten only after its wr_id was read. mp_users
  // counts posters inside the QP, mp_closed turns new ones away (destroy).
  bool mp = false;
  rhn_mp_queue_record* sq_mp_record = nullptr;
  std::atomic<uint64_t> mp_reserve{0};
  std::atomic<int64_t> mp_credit{0};
  std::atomic<uint32_t> mp_users{0};
  std::atomic<bool> mp_closed{false};
  int64_t mp_credit_max = 0;
  Qp* mp_next_closed = nullptr;  // Context::mp_closed_qps
};

struct Ah {
  ibv_ah ibah;
  uint16_t dest_node;
  rhn_wqe_grh grh;  // the last slot of every UD WQE through this AH
};

inline Context* to_ctx(ibv_context* c) {
  return container_of_member<Context>(c, offsetof(Context, vctx.context));
}
inline Cq* to_cq(ibv_cq* c) {
  return container_of_member<Cq>(c, offsetof(Cq, vcq.cq));
}
inline Qp* to_qp(ibv_qp* q) {
  return container_of_member<Qp>(q, offsetof(Qp, vqp.qp));
}
inline Srq* to_srq(ibv_srq* s) {
  return container_of_member<Srq>(s, offsetof(Srq, vsrq.srq));
}
inline Ah* to_ah(ibv_ah* a) {
  return container_of_member<Ah>(a, offsetof(Ah, ibah));
}

// Smallest send queue: 64 slots (one 4 KiB page).
constexpr uint32_t kMinSqLog = 6;

// Queue memory: page-aligned, zeroed, and excluded from fork() copies.
uint8_t* alloc_queue_buffer(size_t len);
void free_queue_buffer(uint8_t* buf, size_t len);
uint32_t log2_ceil(uint32_t v);

// resources.cpp
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va,
               int access);
// With @area_id, the MR is also the process's area of that ID; with
// @on_demand as well, the range is declared, not pinned (remote pin-down).
ibv_mr* reg_mr_area(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va,
                    int access, const uint32_t* area_id,
                    bool on_demand = false);
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                      int fd, int access);
int rereg_mr(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length,
             int access);
int dereg_mr(verbs_mr* vmr);
ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel,
                  int comp_vector);
int destroy_cq(ibv_cq* cq);
int resize_cq(ibv_cq* cq, int cqe);
int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr);
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);
// A bind's description from IB's: rights translated, the new key kept.
void describe_bind(SendDesc* d, const ibv_mw* mw, uint32_t new_rkey,
                   const ibv_mw_bind_info& info);
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
// Basic and tag-matching (IBV_SRQT_TM) SRQs.
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
int destroy_srq(ibv_srq* srq);
// XRC (queues.md "XRC"): domains shared between processes through a file,
// XRC SRQs (create_srq_ex) and their numbers, target QPs opened by number.
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr);
int close_xrcd(ibv_xrcd* xrcd);
int get_srq_num(ibv_srq* srq, uint32_t* srq_num);
ibv_qp* open_qp(ibv_context* context, ibv_qp_open_attr* attr);
// An XRC target QP of attr->xrcd (ibv_create_qp_ex, IBV_QPT_XRC_RECV).
ibv_qp* create_xrc_target(ibv_context* context, ibv_qp_init_attr_ex* attr);
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
// create_qp, create_qp_ex and the endpoint (attr->pd set, comp_mask
// checked): RC/UD with driver_qp_type 0, or IBV_QPT_DRIVER of that
// rhinet_qp_driver_type.
// A QP's queues as create_qp_common lays them out for @attr's caps: its
// buffer's length and ring depths; 0 or the errno that refuses them.
struct QpGeometry {
  uint32_t slots = 0;  // per WQE
  uint32_t sq_log = 0, rq_log = 0, rq_depth = 0;
  bool no_sq = false;
  bool has_rq = false;  // not on an SRQ, not an XRC initiator
  size_t buf_len = 0;
};
// @mp: a multi-producer QP (its 16-byte SQ record, at least 64 slots).
int qp_geometry(Context* ctx, const ibv_qp_init_attr_ex* attr,
                uint32_t driver_qp_type, QpGeometry* g, bool mp = false);
// With @buf, the QP's rings and records lie in that dma-buf.
Qp* create_qp_common(ibv_qp_init_attr_ex* attr, uint32_t driver_qp_type,
                     const QueueBuf* buf = nullptr, bool mp = false);
// Frees what destroy_qp left of a multi-producer QP (the context goes).
void free_closed_qps(Context* ctx);
ibv_qp* create_qp_typed(ibv_pd* pd, ibv_qp_init_attr* attr,
                        uint32_t driver_qp_type);
// Both create_cq and create_cq_ex: wc_flags and comp_mask checked.
// Bytes of a CQ's buffer for @cqe entries (RHINET_CQ_LAYOUT).
size_t cq_buf_len(uint32_t cqe);
// With @buf, the CQ's ring and record lie in that dma-buf.
Cq* create_cq_common(ibv_context* context, const ibv_cq_init_attr_ex* attr,
                     const QueueBuf* buf = nullptr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init);
int destroy_qp(ibv_qp* qp);
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
int destroy_ah(ibv_ah* ah);

// device.cpp: whether @context is one of this provider's.
bool is_rhinet_context(ibv_context* context);
ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr);
int free_dm(ibv_dm* dm);
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length,
                  unsigned int access);
// The DM's struct if it is one of this provider's contexts', else null.
inline Dm* to_dm(ibv_dm* dm) { return reinterpret_cast<Dm*>(dm); }

// sq.cpp: the one writer of a send queue. Every post, verbs' and direct
// verbs', builds its WQE (any number of slots) elsewhere and hands it to
// sq_write, then publishes with sq_publish; both with sq_lock held, which
// is the only lock that orders SQ writers. sq_write returns ENOMEM when
// the ring has no room for @slots, else stamps the WQE's index, copies it
// in and advances the (unpublished) producer; @first, if given, receives
// the WQE's first slot. @report: the completion goes to the poster (a
// direct-verbs post the library signaled for itself sets it false).
int sq_write(Qp* qp, uint8_t* wqe, uint32_t slots, uint64_t wr_id,
             bool report = true, uint32_t* first = nullptr);
// Slots free in the ring now.
uint32_t sq_room(const Qp* qp);
// The WQEs written: barrier, the producer index in the doorbell record,
// then the doorbell.
void sq_publish(Qp* qp);
// Forgets WQEs written since the producer was @producer (never published).
void sq_rollback(Qp* qp, uint32_t producer);
// Many producers, no lock (qp->mp): reserves @slots, waits for room and
// for the WQEs before it to be published, writes and publishes the WQE,
// rings the doorbell where the batch rule says so (unless @no_doorbell).
// ENOMEM when the ring or the completions owed are at their limit,
// EINVAL when the QP was destroyed meanwhile.
int sq_mp_write(Qp* qp, uint8_t* wqe, uint32_t slots, uint64_t wr_id,
                bool no_doorbell);
// The WQE written at @first is triggered: the NIC may complete it after
// WQEs behind it, so its 16-bit index names nothing else until its own
// CQE (sq_complete). 0, or ENOMEM when the QP holds kMaxHeld already.
constexpr uint32_t kMaxHeld = 256;
int sq_hold(Qp* qp, uint32_t first);
// A send CQE naming @wqe_index came (sq_lock held): the wr_id and report of
// the WQE it completes; a held WQE is done alone, any other with every WQE
// before it in the ring.
void sq_complete(Qp* qp, uint16_t wqe_index, uint64_t* wr_id, bool* report);
// A send-side run's completion before its last, whose WQE is @last
// (sq_lock held): the oldest signalled WQE from the consumer on that is
// not held, completed with the unsignalled ones before it; its wr_id,
// report and index. False if there is none before @last (a run the ring
// does not match): nothing moved, the caller completes @last.
bool sq_complete_run_member(Qp* qp, uint16_t last, uint64_t* wr_id,
                            bool* report, uint16_t* index);
// Both indices back to 0 (the QP goes to RESET).
void sq_reset(Qp* qp);

// post.cpp
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
// Tag-list operations of a TM SRQ (ibv_post_srq_ops(3)).
int post_srq_ops(ibv_srq* srq, ibv_ops_wr* wr, ibv_ops_wr** bad);
// Takes a TM SRQ's list-operation CQEs, or an XRC SRQ's receive CQEs, out
// of its CQ, and its entry out of the SRQ table (destroy).
void clean_srq_cqes(Srq* srq);
// Builds one verbs WQE and writes it with sq_write (sq_lock held); 0 or
// errno.
int enqueue_send(Qp* qp, const SendDesc& desc, uint64_t wr_id);
// ibv_post_send on a multi-producer QP, and rhinetdv_mp_post_send: each WR
// built as enqueue_send does and handed to sq_mp_write. @flags: enum
// rhinetdv_mp_post_flags.
int mp_post_send(Qp* qp, ibv_send_wr* wr, ibv_send_wr** bad, uint32_t flags);
void reset_qp_queues(Qp* qp);

// completion.cpp
int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
// Decodes the next CQE into @c (cq->lock held); false if there is none.
bool poll_one(Cq* cq, Completion* c);
// A decoded completion as verbs report it.
void to_wc(const Completion& c, ibv_wc* wc);
// Its verbs opcode. A CQE only direct verbs know never reaches a verbs CQ
// (endpoint CQs are the library's); should one, it is a driver completion.
inline ibv_wc_opcode wc_opcode_of(const Completion& c) {
  return c.wc_opcode == kNoWcOpcode ? IBV_WC_DRIVER1
                                    : static_cast<ibv_wc_opcode>(c.wc_opcode);
}
// Hands cq->consumer back to the NIC through the CQ record.
void publish_consumer(Cq* cq);
int req_notify_cq(ibv_cq* cq, int solicited_only);
// Takes the QP's CQEs out of its CQs and, with @forget, its entry out of
// the QP table, under the CQs' locks (destroy and RESET, as mlx5 does).
void clean_qp_cqes(Qp* qp, bool forget);

// qp_ex.cpp
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);
// Inside an ibv_qp_ex batch (sq_lock held): the WR the last wr_<opcode>
// started, or null and the batch fails with EINVAL; a failure of the batch.
SendDesc* wr_current(ibv_qp_ex* q);
void wr_fail(ibv_qp_ex* q, int err);
// A WR of an operation verbs have no opcode for, started as ibv_wr_<op>
// would start one (dv_trigger.cpp's remote increment).
SendDesc* wr_begin_private(ibv_qp_ex* q, ibv_wr_opcode op);

// Verbs have no opcode for a remote trigger add: the provider's own value,
// outside enum ibv_wr_opcode's range, taken only from a SendDesc.
constexpr auto kWrTriggerAdd = static_cast<ibv_wr_opcode>(0x1000 | 0x50);
ibv_qp* create_qp_ex_in(ibv_context* context, ibv_qp_init_attr_ex* attr,
                        const QueueBuf* buf, bool mp = false);

// cq_ex.cpp
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);
ibv_cq_ex* create_cq_ex_in(ibv_context* context, ibv_cq_init_attr_ex* attr,
                           const QueueBuf* buf);
// The ibv_cq_ex calls of a created CQ (also what the unit tests poll a
// CQ of their own with).
void set_cq_ex_ops(Cq* cq);

}  // namespace rhinet
