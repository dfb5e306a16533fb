// SPDX-License-Identifier: BSD-2-Clause
// The bootstrap's messages (internal). Every message is a frame:
//
//   u32 length            bytes that follow (the payload)
//   u32 magic             0x424e4852 ("RHNB" in memory order)
//   u16 version           1
//   u16 type              HELLO 1, TABLE 2, BARRIER 3, ERROR 4
//   body                  by type, below
//
// all integers little-endian:
//
//   HELLO    u64 token, u32 group, u32 size, u32 rank, u32 node,
//            u32 endpoint, u16 host length, host bytes (<= 255)
//   TABLE    u32 group, u32 size, size x (u32 node, u32 endpoint)
//   BARRIER  u64 sequence (1, 2, ... per connection)
//   ERROR    u16 text length, text bytes (<= 4096)
//
// A client sends HELLO once, then BARRIERs; the server answers HELLO with
// TABLE (once every rank said hello) and each BARRIER with the same
// BARRIER (once every rank entered it), or anything with ERROR and closes.
// decode() accepts a payload only if it is exactly as long as its type
// says and its fields are in range.
#ifndef RHINET_USERLIB_WIRE_HPP
#define RHINET_USERLIB_WIRE_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rhinet/result.hpp"
#include "rhinet/types.hpp"

namespace rhinet::wire {

constexpr std::uint32_t kMagic = 0x424e4852;
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kPrefix = 4;  // the length
constexpr std::size_t kHeader = 8;  // magic, version, type
constexpr std::size_t kMaxHost = 255;
constexpr std::size_t kMaxText = 4096;
// Largest frames each side accepts (payload bytes).
constexpr std::size_t kMaxClientPayload = kHeader + 8 + 5 * 4 + 2 + kMaxHost;
constexpr std::size_t kMaxServerPayload =
    kHeader + 8 + std::size_t{max_ranks} * 8;

enum class Type : std::uint16_t {
  hello = 1,
  table = 2,
  barrier = 3,
  error = 4
};
const char* type_name(Type t);

struct Hello {
  std::uint64_t token = 0;
  std::uint32_t group = 0, size = 0, rank = 0;
  Peer self;
  std::string host;
};

struct Message {
  Type type = Type::error;
  Hello hello;                 // HELLO
  std::uint32_t group = 0;     // TABLE
  std::vector<Peer> table;     // TABLE (size entries)
  std::uint64_t sequence = 0;  // BARRIER
  std::string text;            // ERROR
};

// Whole frames, length prefix included.
std::vector<std::byte> encode_hello(const Hello& h);
std::vector<std::byte> encode_table(std::uint32_t group,
                                    std::span<const Peer> table);
std::vector<std::byte> encode_barrier(std::uint64_t sequence);
std::vector<std::byte> encode_error(const std::string& text);

// The length prefix of a frame; EPROTO if not within [kHeader, max].
Result<std::size_t> decode_prefix(std::span<const std::byte, kPrefix> prefix,
                                  std::size_t max);
// One payload (after the prefix). EPROTO with what is wrong.
Result<Message> decode(std::span<const std::byte> payload);

}  // namespace rhinet::wire

#endif  // RHINET_USERLIB_WIRE_HPP
