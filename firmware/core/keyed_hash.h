// SPDX-License-Identifier: BSD-2-Clause
// The hash of the engine's tables that users key (lock and barrier IDs,
// area IDs): SipHash-1-3 under a per-NIC secret, so that a user cannot
// pick keys that land on the chains of somebody else's. The tables place
// an entry in any free slot and only find it again through the hash, so
// fairness never depends on the secret; the secret only keeps a user from
// making another's lookups walk long chains.
#pragma once

#include "core/card_memory.h"

namespace rhinet::fw {

class KeyedHash {
 public:
  // A new secret from whatever entropy the host gives (clock, identity,
  // a boot session) mixed with the previous one (splitmix64).
  void reseed(uint64_t entropy) {
    uint64_t seed = entropy ^ key_[1];
    for (uint64_t& k : key_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ z >> 27) * 0x94d049bb133111ebull;
      k = z ^ z >> 31;
    }
  }

  uint64_t operator()(uint64_t a, uint64_t b) const {
    uint64_t v0 = key_[0] ^ 0x736f6d6570736575ull;
    uint64_t v1 = key_[1] ^ 0x646f72616e646f6dull;
    uint64_t v2 = key_[0] ^ 0x6c7967656e657261ull;
    uint64_t v3 = key_[1] ^ 0x7465646279746573ull;
    auto round = [&] {
      v0 += v1;
      v1 = rotl(v1, 13) ^ v0;
      v0 = rotl(v0, 32);
      v2 += v3;
      v3 = rotl(v3, 16) ^ v2;
      v0 += v3;
      v3 = rotl(v3, 21) ^ v0;
      v2 += v1;
      v1 = rotl(v1, 17) ^ v2;
      v2 = rotl(v2, 32);
    };
    for (const uint64_t w : {a, b, uint64_t{16} << 56}) {
      v3 ^= w;
      round();
      v0 ^= w;
    }
    v2 ^= 0xff;
    round();
    round();
    round();
    return v0 ^ v1 ^ v2 ^ v3;
  }

 private:
  uint64_t key_[2] = {};
};

// Entry `i` out of the chain that starts at `head` (entries link through
// their `chain` field): the tables placed by KeyedHash share it.
template <typename Entry>
void unchain(Table<Entry>& table, uint32_t& head, uint32_t i) {
  uint32_t* link = &head;
  while (*link != i) link = &table[*link].chain;
  *link = table[i].chain;
  table[i].chain = UINT32_MAX;
}

}  // namespace rhinet::fw
