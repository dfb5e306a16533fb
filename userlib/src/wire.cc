// SPDX-License-Identifier: BSD-2-Clause
#include "wire.hpp"

#include <cerrno>
#include <cstdio>

namespace rhinet::wire {

namespace {

class Writer {
 public:
  explicit Writer(Type t) {
    put32(0);  // length, filled by finish()
    put32(kMagic);
    put16(kVersion);
    put16(static_cast<std::uint16_t>(t));
  }
  void put16(std::uint16_t v) { put(v, 2); }
  void put32(std::uint32_t v) { put(v, 4); }
  void put64(std::uint64_t v) { put(v, 8); }
  void bytes(const std::string& s) {
    for (char c : s) b_.push_back(static_cast<std::byte>(c));
  }
  std::vector<std::byte> finish() {
    const auto len = static_cast<std::uint32_t>(b_.size() - kPrefix);
    for (int i = 0; i < 4; i++)
      b_[i] = static_cast<std::byte>((len >> (8 * i)) & 0xff);
    return std::move(b_);
  }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; i++)
      b_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
  std::vector<std::byte> b_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : b_(b) {}
  std::size_t left() const { return b_.size() - pos_; }
  bool get16(std::uint16_t& v) { return get(v, 2); }
  bool get32(std::uint32_t& v) { return get(v, 4); }
  bool get64(std::uint64_t& v) { return get(v, 8); }
  bool bytes(std::size_t n, std::string& s) {
    if (left() < n) return false;
    s.assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return true;
  }

 private:
  template <class T>
  bool get(T& v, int n) {
    if (left() < static_cast<std::size_t>(n)) return false;
    std::uint64_t x = 0;
    for (int i = 0; i < n; i++)
      x |= static_cast<std::uint64_t>(b_[pos_ + i]) << (8 * i);
    pos_ += n;
    v = static_cast<T>(x);
    return true;
  }
  std::span<const std::byte> b_;
  std::size_t pos_ = 0;
};

Error proto(const std::string& what) { return Error(EPROTO, what); }

// Text from the other side goes into messages: no control characters.
void sanitize(std::string& s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
}

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::hello:
      return "HELLO";
    case Type::table:
      return "TABLE";
    case Type::barrier:
      return "BARRIER";
    case Type::error:
      return "ERROR";
  }
  return "?";
}

std::vector<std::byte> encode_hello(const Hello& h) {
  Writer w(Type::hello);
  w.put64(h.token);
  w.put32(h.group);
  w.put32(h.size);
  w.put32(h.rank);
  w.put32(h.self.node_id);
  w.put32(h.self.endpoint_id);
  const std::string host = h.host.substr(0, kMaxHost);
  w.put16(static_cast<std::uint16_t>(host.size()));
  w.bytes(host);
  return w.finish();
}

std::vector<std::byte> encode_table(std::uint32_t group,
                                    std::span<const Peer> table) {
  Writer w(Type::table);
  w.put32(group);
  w.put32(static_cast<std::uint32_t>(table.size()));
  for (const Peer& p : table) {
    w.put32(p.node_id);
    w.put32(p.endpoint_id);
  }
  return w.finish();
}

std::vector<std::byte> encode_barrier(std::uint64_t sequence) {
  Writer w(Type::barrier);
  w.put64(sequence);
  return w.finish();
}

std::vector<std::byte> encode_error(const std::string& text) {
  Writer w(Type::error);
  const std::string t = text.substr(0, kMaxText);
  w.put16(static_cast<std::uint16_t>(t.size()));
  w.bytes(t);
  return w.finish();
}

Result<std::size_t> decode_prefix(std::span<const std::byte, kPrefix> p,
                                  std::size_t max) {
  std::uint32_t len = 0;
  for (int i = 0; i < 4; i++)
    len |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  if (len < kHeader || len > max)
    return proto("frame length " + std::to_string(len) + " outside [" +
                 std::to_string(kHeader) + ", " + std::to_string(max) + "]");
  return std::size_t{len};
}

Result<Message> decode(std::span<const std::byte> payload) {
  Reader r(payload);
  std::uint32_t magic = 0;
  std::uint16_t version = 0, type = 0;
  if (!r.get32(magic) || !r.get16(version) || !r.get16(type))
    return proto("message shorter than its header");
  if (magic != kMagic) {
    char buf[16];
    snprintf(buf, sizeof(buf), "0x%08x", magic);
    return proto(std::string("bad magic ") + buf +
                 " (not a rhinet bootstrap message)");
  }
  if (version != kVersion)
    return proto("protocol version " + std::to_string(version) +
                 ", this library speaks " + std::to_string(kVersion));
  Message m;
  m.type = static_cast<Type>(type);
  bool good = true;
  switch (m.type) {
    case Type::hello: {
      Hello& h = m.hello;
      std::uint16_t hlen = 0;
      good = r.get64(h.token) && r.get32(h.group) && r.get32(h.size) &&
             r.get32(h.rank) && r.get32(h.self.node_id) &&
             r.get32(h.self.endpoint_id) && r.get16(hlen);
      if (!good) return proto("HELLO truncated");
      if (hlen > kMaxHost)
        return proto("HELLO host name of " + std::to_string(hlen) + " bytes");
      if (!r.bytes(hlen, h.host)) return proto("HELLO truncated");
      sanitize(h.host);
      if (h.group > 0xffff)
        return proto("HELLO group " + std::to_string(h.group) +
                     " beyond 65535");
      if (h.size < 1 || h.size > max_ranks)
        return proto("HELLO size " + std::to_string(h.size) + " outside 1.." +
                     std::to_string(max_ranks));
      if (h.rank >= h.size)
        return proto("HELLO rank " + std::to_string(h.rank) +
                     " not below size " + std::to_string(h.size));
      break;
    }
    case Type::table: {
      std::uint32_t n = 0;
      if (!r.get32(m.group) || !r.get32(n)) return proto("TABLE truncated");
      if (n < 1 || n > max_ranks)
        return proto("TABLE size " + std::to_string(n) + " outside 1.." +
                     std::to_string(max_ranks));
      if (r.left() != std::size_t{n} * 8)
        return proto("TABLE of " + std::to_string(n) + " ranks carries " +
                     std::to_string(r.left()) + " bytes of entries, not " +
                     std::to_string(std::size_t{n} * 8));
      m.table.resize(n);
      for (Peer& p : m.table) {
        r.get32(p.node_id);
        r.get32(p.endpoint_id);
      }
      break;
    }
    case Type::barrier:
      if (!r.get64(m.sequence)) return proto("BARRIER truncated");
      break;
    case Type::error: {
      std::uint16_t n = 0;
      if (!r.get16(n) || n > kMaxText || !r.bytes(n, m.text))
        return proto("ERROR truncated or too long");
      sanitize(m.text);
      break;
    }
    default:
      return proto("unknown message type " + std::to_string(type));
  }
  if (r.left())
    return proto(std::string(type_name(m.type)) + " with " +
                 std::to_string(r.left()) + " trailing bytes");
  return m;
}

}  // namespace rhinet::wire
