// SPDX-License-Identifier: BSD-2-Clause
// One line of text per RHiNET frame, for reading captures: the switch's
// `--dump FILE.pcap` and test failure messages use it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace rhinet::fabric {

// "DATA 0->1 ses=3 seq=17 SYN|ACK_REQ ack=3/12 | SEND qp 1->1 msn=4 ..."
std::string describe_frame(std::span<const uint8_t> frame);

// Prints every frame of a capture written by Capture; false if the file is
// not one (message on stderr).
bool dump_capture(const std::string& path);

}  // namespace rhinet::fabric
