// SPDX-License-Identifier: BSD-2-Clause
// What a link's faults do to one frame, decided in one place for the
// fabric switch (SwitchCore, per egress port) and the simulator's links
// (SimSwitch). The injector only decides, from its seeded generator; its
// owner applies the verdict in its own terms: the switch holds a
// reordered frame back until the next one, the simulator delays it in
// virtual time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

namespace rhinet::fabric {

// Probabilities per frame leaving a port, each in [0, 1].
struct FaultSpec {
  double loss = 0;
  double duplicate = 0;
  double reorder = 0;  // held back: overtaken by what follows it
  double corrupt = 0;  // one random bit flipped
};

// The fate of one frame: lost (no copies), or sent once or twice, each
// copy corrupted and held back on its own.
struct FaultVerdict {
  struct Copy {
    bool corrupt = false;
    size_t bit = 0;  // with corrupt: the bit to flip
    bool reorder = false;
  };
  unsigned copies = 1;  // 0: lost; 2: duplicated
  std::array<Copy, 2> copy{};
  bool lost() const { return copies == 0; }
};

class FaultInjector {
 public:
  explicit FaultInjector(uint64_t seed = 0) : rng_(seed) {}
  void seed(uint64_t seed) { rng_.seed(seed); }

  // Whether the frame is lost: all that can happen to a frame that is not
  // forwarded (one for the switch itself).
  bool lose(const FaultSpec& f) { return chance(f.loss); }
  // Everything that happens to a frame of frame_size (> 0) bytes. The
  // draws come in a fixed order (loss, duplication, then per copy
  // corruption and its bit, reordering) so a seed replays the same faults;
  // a probability of 0 draws nothing.
  FaultVerdict decide(const FaultSpec& f, size_t frame_size);

  // Applies a copy's corruption to the frame's bytes.
  static void corrupt(const FaultVerdict::Copy& c, std::span<uint8_t> frame) {
    if (c.corrupt) frame[c.bit / 8] ^= uint8_t(1u << (c.bit % 8));
  }

 private:
  bool chance(double p);

  std::mt19937_64 rng_;
};

}  // namespace rhinet::fabric
