// SPDX-License-Identifier: BSD-2-Clause
// The RHiNET programming model (one-sided PUSH and PULL between the areas
// of a process group; Documentation/userlib/design.md) in C++20, on the
// direct verbs of the RHiNET-NG NIC (infiniband/rhinetdv.h):
//
//   auto g = rhinet::Group::join_from_env();   // started by rhinet-run
//   if (!g) { fprintf(stderr, "%s\n", g.error().to_string().c_str()); ... }
//   rhinet::Group& group = **g;
//   auto area = group.area(7, std::span(mem));   // group-wide area ID 7
//   group.barrier_bootstrap();                   // everyone registered
//   auto r = group.push(peer, 7, 0, std::as_bytes(std::span(src)));
//   if (auto w = r.wait(); !w) ... w.error().syndrome_name() ...
//   group.sync();                                // all PUSHes complete
//   auto rx = group.irecv(rhinet::any_source, 42, std::span(inbox));
//   auto tx = group.isend(peer, 42, std::as_bytes(std::span(src)));
//   rx.wait(); rx.message()->source ...          // matched by the NIC
//
// Reference: Documentation/userlib/reference.md.
#ifndef RHINET_RHINET_HPP
#define RHINET_RHINET_HPP

#include "rhinet/area.hpp"
#include "rhinet/bootstrap.hpp"
#include "rhinet/communicator.hpp"
#include "rhinet/group.hpp"
#include "rhinet/inbox.hpp"
#include "rhinet/message.hpp"
#include "rhinet/request.hpp"
#include "rhinet/result.hpp"
#include "rhinet/trigger.hpp"
#include "rhinet/types.hpp"
#include "rhinet/version.hpp"
#include "rhinet/xfer.hpp"

#endif  // RHINET_RHINET_HPP
