// SPDX-License-Identifier: BSD-2-Clause
// ops/share's internals shared by its files (share.cpp: requester and
// engine hooks; share_responder.cpp: home, members, directory messages).
#pragma once

#include "core/freestanding.h"
#include "ops/family.h"
#include "ops/partial/partial.h"
#include "ops/share/share.h"

namespace rhinet::fw {
// A member's update lands as a WRITE would (ops/rdma).
extern const OpFamily kRdmaFamily;
}  // namespace rhinet::fw

namespace rhinet::fw::share_detail {

// What a firmware message of ours was, for its outcome (FwOwner::kShare).
enum class Msg : uint8_t { kProbe, kAdd, kJoined, kOther };

uint64_t cookie_of(Msg kind, uint32_t region, uint16_t gen, uint16_t node);
uint32_t share_of(uint32_t total, uint32_t share);
uint32_t src_of(const Impl& m, uint32_t qpn);
uint32_t qpn_of(const Impl& m, const QpObj& qp);
uint32_t index_of(const Impl& m, const ShareRegion& r);
ShareRegion* find_region(Impl& m, uint32_t qpn, uint32_t area_key);
ShareRegion* new_region(Impl& m, uint32_t qpn, uint32_t area_key,
                        ShareState state);
void free_region(Impl& m, ShareRegion& r);
int member_index(const ShareRegion& r, uint16_t node, uint32_t src);
void drop_member(ShareRegion& r, uint32_t i);
bool is_self(const Impl& m, const ShareRegion& r, const ShareMember& mb);
void arm_probe(Impl& m);
bool post(Impl& m, uint16_t node, uint32_t kind, const void* msg, size_t len,
          uint64_t cookie, uint32_t context);
rhn_fw_share message(const ShareRegion& r, uint32_t to_qpn,
                     uint16_t member_node, uint32_t member_src);
void fail_subscribe(Impl& m, ShareRegion& r, uint8_t status, uint8_t syndrome);
void become_ready(Impl& m, ShareRegion& r);
bool answer_failure(Impl& m, const ShareRegion& h, uint8_t syndrome);
void end_join(ShareRegion& h);
void home_remove(Impl& m, ShareRegion& h, uint32_t i);
void abort_join(Impl& m, ShareRegion& h, uint8_t syndrome);
bool send_add(Impl& m, ShareRegion& h, ShareMember& mb);
void send_joined(Impl& m, ShareRegion& h);
void try_finish_join(Impl& m, ShareRegion& h);
void start_stream(Impl& m, ShareRegion& h);
uint8_t fail(Impl& m, uint8_t* syndrome, uint8_t status, uint8_t syn);
uint8_t check(Impl& m, const QpObj& qp, const DecodedWqe& w, uint8_t* syndrome);
bool next_destination(Impl& m, QpObj& qp, const DecodedWqe& w, uint32_t index,
                      uint16_t* node, uint32_t* qpn, uint32_t* count);
uint32_t fanout_imm(Impl& m, QpObj& qp, const DecodedWqe& w);
bool build_packet(Impl& m, QpObj& qp, const DecodedWqe& w, uint64_t offset,
                  rhn_op_hdr& op, PacketOut& out);
uint8_t status_of_failure(uint8_t syndrome);
void on_response(Impl& m, Peer&, uint32_t qpn, Inflight& e, const Packet& pkt);
void message_done(Impl& m, uint32_t qpn, const Inflight& e);
void home_subscribe(Impl& m, Request& r);
void home_unsubscribe(Impl& m, Request& r);
void member_update(Impl& m, Request& r);
void on_request(Impl& m, Request& r);
ShareRegion* region_for(Impl& m, const rhn_fw_share& f);
void on_add(Impl& m, uint16_t from, const rhn_fw_share& f);
void on_added(Impl& m, uint16_t from, const rhn_fw_share& f);
void on_joined(Impl& m, uint16_t from, Span<const uint8_t> payload);
void on_remove(Impl& m, uint16_t from, const rhn_fw_share& f);

}  // namespace rhinet::fw::share_detail
