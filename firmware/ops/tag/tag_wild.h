// SPDX-License-Identifier: BSD-2-Clause
// A tag-matching owner's wildcard receives (ops/tag), kept in the
// endpoint QP and the TM SRQ objects.
#pragma once

#include "core/bounded.h"
#include "core/freestanding.h"

namespace rhinet::fw {

// The posted receives of a tag-matching owner (endpoint or TM SRQ) that
// take any source with a masked tag. The first kClasses distinct masks
// each get hash chains keyed by the masked tag (a message looks up one
// chain per mask); receives with further masks wait in one list, walked.
struct TagWild {
  static constexpr uint32_t kClasses = 4;
  static constexpr uint8_t kNoClass = 0xff;
  uint64_t masks[kClasses] = {};
  uint32_t uses[kClasses] = {};
  uint32_t head = kNone, tail = kNone;  // the others, in posting order
};

}  // namespace rhinet::fw
