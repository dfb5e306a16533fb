// SPDX-License-Identifier: BSD-2-Clause
// rhinet-diag: a decoded look at a RHiNET-NG NIC for the people bringing it
// up. From a running device it asks the driver (`devlink -j health
// diagnose`: registers, counters, its queues), or, with no driver bound,
// maps BAR0 through sysfs (root); from a file it decodes a dump the driver
// wrote (`devlink -j health dump show DEV reporter NAME > FILE`). The register
// and counter names come from the register map (regmap_desc.h, generated
// from registers.toml), so what is printed follows the contract.
//
//   rhinet-diag [--device BDF] [--all] [--json]
//   rhinet-diag --dump FILE [--all] [--json]
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rhinet/hw.h"
#include "rhinet/regmap_desc.h"

namespace {

// ---- a small JSON reader: what devlink -j prints ---------------------------

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  uint64_t integer = 0;  // exact for the unsigned integers devlink prints
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  // The first member named `key`, here or in any object below (devlink
  // nests the reporter's message inside its own wrapper objects).
  const Json* find(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    for (const auto& [k, v] : members)
      if (const Json* j = v.find(key)) return j;
    for (const Json& v : items)
      if (const Json* j = v.find(key)) return j;
    return nullptr;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  std::optional<Json> parse(std::string& error) {
    Json j;
    if (!value(j) || (skip(), pos_ != s_.size())) {
      error = "malformed JSON at byte " + std::to_string(pos_);
      return std::nullopt;
    }
    return j;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && strchr(" \t\r\n", s_[pos_])) pos_++;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return pos_++, true;
    return false;
  }
  bool string(std::string& out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        c = s_[pos_++];
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
        if (c == 'u') {  // devlink escapes no text we decode: keep a mark
          pos_ = std::min(s_.size(), pos_ + 4);
          c = '?';
        }
      }
      out += c;
    }
    return eat('"');
  }
  bool value(Json& j) {
    skip();
    if (pos_ >= s_.size() || depth_ > 32) return false;
    const char c = s_[pos_];
    if (c == '{' || c == '[') {
      depth_++;
      pos_++;
      const char end = c == '{' ? '}' : ']';
      j.kind = c == '{' ? Json::kObject : Json::kArray;
      if (!eat(end)) {
        do {
          Json v;
          std::string k;
          if (j.kind == Json::kObject && (!string(k) || !eat(':')))
            return false;
          if (!value(v)) return false;
          if (j.kind == Json::kObject)
            j.members.emplace_back(std::move(k), std::move(v));
          else
            j.items.push_back(std::move(v));
        } while (eat(','));
        if (!eat(end)) return false;
      }
      depth_--;
      return true;
    }
    if (c == '"') return j.kind = Json::kString, string(j.text);
    for (const char* word : {"true", "false", "null"}) {
      if (s_.substr(pos_, strlen(word)) == word) {
        pos_ += strlen(word);
        j.kind = word[0] == 'n' ? Json::kNull : Json::kBool;
        j.boolean = word[0] == 't';
        return true;
      }
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && strchr("+-0123456789.eE", s_[pos_])) pos_++;
    if (pos_ == start) return false;
    const std::string num(s_.substr(start, pos_ - start));
    j.kind = Json::kNumber;
    j.number = strtod(num.c_str(), nullptr);
    j.integer = strtoull(num.c_str(), nullptr, 10);
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// ---- what is decoded ------------------------------------------------------

struct Snapshot {
  std::string source;                    // where it came from
  std::map<std::string, uint64_t> regs;  // register name (upper) -> value
  std::vector<uint64_t> counters;        // by index; empty if unknown
  std::optional<Json> driver;            // the driver's diagnose or dump
};

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(toupper(c));
  return s;
}

bool read_file(const std::string& path, std::string& out, std::string& err) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "r"), fclose);
  if (!f) return err = path + ": " + strerror(errno), false;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f.get())) > 0) out.append(buf, n);
  return true;
}

// Registers and counters by name, and the driver's state, from what the
// driver's devlink reporters print (a dump, or diagnose).
bool from_json(Json j, Snapshot& snap, std::string& err) {
  if (const Json* regs = j.find("registers"))
    for (const auto& [k, v] : regs->members) snap.regs[upper(k)] = v.integer;
  if (const Json* cnt = j.find("counters")) {
    snap.counters.assign(RHN_CNT_COUNT, 0);
    for (const auto& [k, v] : cnt->members)
      for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
        if (k == rhn_regmap_counters[i].name) snap.counters[i] = v.integer;
  }
  if (snap.regs.empty() && !j.find("stopped"))
    return err = "not a rhinet devlink dump (no registers)", false;
  snap.driver = std::move(j);
  return true;
}

bool from_dump(const std::string& path, Snapshot& snap, std::string& err) {
  std::string text;
  if (!read_file(path, text, err)) return false;
  auto j = JsonReader(text).parse(err);
  if (!j || !from_json(std::move(*j), snap, err))
    return err = path + ": " + err, false;
  snap.source = "dump " + path;
  return true;
}

// The one RHiNET function when none is named.
std::string find_device(std::string& err) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/sys/bus/pci/devices"),
                                        closedir);
  if (!d) return err = "no /sys/bus/pci/devices", "";
  std::string found;
  while (dirent* e = readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    std::string base = std::string("/sys/bus/pci/devices/") + e->d_name;
    std::string v, id, e2;
    if (read_file(base + "/vendor", v, e2) &&
        read_file(base + "/device", id, e2) &&
        strtoul(v.c_str(), nullptr, 16) == RHN_PCI_VENDOR_ID &&
        strtoul(id.c_str(), nullptr, 16) == RHN_PCI_DEVICE_ID) {
      if (!found.empty())
        return err = "several RHiNET devices: name one with --device", "";
      found = e->d_name;
    }
  }
  if (found.empty()) err = "no RHiNET device (PCI 1234:4e47) on this machine";
  return found;
}

// A running device. With the driver bound, everything comes through it
// (devlink -j health diagnose: needs CAP_NET_ADMIN); without one, BAR0 is
// mapped through sysfs (root).
bool from_device(std::string bdf, Snapshot& snap, std::string& err) {
  if (bdf.empty() && (bdf = find_device(err)).empty()) return false;
  const std::string cmd =
      "devlink -j health diagnose pci/" + bdf + " reporter fatal 2>/dev/null";
  std::string out, perr;
  {
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof(buf), p.get())) > 0)
      out.append(buf, n);
  }
  if (!out.empty()) {
    auto j = JsonReader(out).parse(perr);
    if (j && j->find("registers") && from_json(std::move(*j), snap, perr)) {
      snap.source = "device " + bdf + " (through the driver)";
      return true;
    }
  }
  const std::string res = "/sys/bus/pci/devices/" + bdf + "/resource0";
  const int fd = open(res.c_str(), O_RDONLY | O_SYNC);
  if (fd < 0)
    return err = res + ": " + strerror(errno) +
                 (errno == EACCES || errno == EPERM
                      ? " (reading BAR0 needs root: CAP_SYS_ADMIN)"
                      : ""),
           false;
  void* map = mmap(nullptr, RHN_BAR_REGS_SIZE, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return err = res + ": mmap: " + strerror(errno) +
                 " (a driver holds the device but devlink gave nothing: "
                 "is devlink installed, are you CAP_NET_ADMIN?)",
           false;
  auto* bar = static_cast<volatile uint8_t*>(map);
  auto rd32 = [&](unsigned off) {
    return *reinterpret_cast<volatile uint32_t*>(bar + off);
  };
  for (const rhn_regmap_reg& r : rhn_regmap_regs) {
    if (!strcmp(r.access, "WO")) continue;
    uint64_t v = rd32(r.offset);
    if (r.width == 64) v |= uint64_t{rd32(r.offset + 4)} << 32;
    snap.regs[r.name] = v;
  }
  snap.counters.resize(RHN_CNT_COUNT);
  for (unsigned i = 0; i < RHN_CNT_COUNT; i++)
    snap.counters[i] = rd32(RHN_REG_COUNTERS + 8 * i) |
                       uint64_t{rd32(RHN_REG_COUNTERS + 8 * i + 4)} << 32;
  munmap(map, RHN_BAR_REGS_SIZE);
  snap.source = "device " + bdf + " (BAR0 through sysfs, no driver bound)";
  return true;
}

// ---- printing --------------------------------------------------------------

// What the shell's identity registers say, for people.
std::string identity(const rhn_regmap_reg& r, uint64_t v) {
  static const char* const boards[] = {RHN_BOARD_NAME_LIST};
  static const char* const states[] = {RHN_FW_STATE_STATE_NAMES};
  const std::string name = r.name;
  if (name == "BOARD_ID")
    return v < std::size(boards) && *boards[v] ? boards[v] : "unknown board";
  if (name == "FW_RUNNING" || name == "FW_STORED")
    return v ? std::to_string(v >> 16) + "." + std::to_string(v >> 8 & 0xff) +
                   "." + std::to_string(v & 0xff)
             : "none";
  if (name == "FW_STATE")
    return ((v & 0xf) < std::size(states) ? states[v & 0xf] : "undefined") +
           std::string(",");
  return "";
}

// The set fields of a register, "READY LINK_UP" or "VALUE=5".
std::string fields(const rhn_regmap_reg& r, uint64_t v) {
  std::string s = identity(r, v);
  uint64_t named = 0;
  for (unsigned i = 0; i < r.nfields; i++) {
    const rhn_regmap_field& f = r.fields[i];
    const uint64_t mask = (f.width == 64 ? ~0ull : (1ull << f.width) - 1);
    const uint64_t x = (v >> f.lsb) & mask;
    named |= mask << f.lsb;
    if (f.width == 1) {
      if (x) s += std::string(s.empty() ? "" : " ") + f.name;
    } else {
      s += std::string(s.empty() ? "" : " ") + f.name + "=" + std::to_string(x);
    }
  }
  if (r.nfields && (v & ~named & (r.width == 64 ? ~0ull : 0xffffffffull)))
    s += std::string(s.empty() ? "" : " ") + "RESERVED-BITS-SET";
  return s;
}

void json_string(const std::string& s) {
  putchar('"');
  for (char c : s) {
    if (c == '"' || c == '\\') putchar('\\');
    if (static_cast<unsigned char>(c) < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

void print_json(const Snapshot& snap, bool all) {
  printf("{\"source\":");
  json_string(snap.source);
  printf(",\"registers\":{");
  bool first = true;
  for (const rhn_regmap_reg& r : rhn_regmap_regs) {
    auto it = snap.regs.find(r.name);
    if (it == snap.regs.end()) continue;
    printf("%s\"%s\":{\"value\":%llu,\"fields\":", first ? "" : ",", r.name,
           static_cast<unsigned long long>(it->second));
    json_string(fields(r, it->second));
    printf("}");
    first = false;
  }
  printf("},\"counters\":{");
  first = true;
  for (size_t i = 0; i < snap.counters.size(); i++) {
    if (!all && !snap.counters[i]) continue;
    printf("%s\"%s\":%llu", first ? "" : ",", rhn_regmap_counters[i].name,
           static_cast<unsigned long long>(snap.counters[i]));
    first = false;
  }
  printf("}");
  if (snap.driver) {
    const Json* f = snap.driver->find("last_failure");
    const Json* r = snap.driver->find("reason");
    const Json* st = snap.driver->find("stopped");
    printf(",\"driver\":{\"stopped\":%s,\"last_failure\":",
           st && st->boolean ? "true" : "false");
    json_string(f ? f->text : "");
    printf(",\"reason\":");
    json_string(r ? r->text : "");
    printf("}");
  }
  printf("}\n");
}

void print_text(const Snapshot& snap, bool all) {
  printf("rhinet-diag: %s\n\nregisters\n", snap.source.c_str());
  for (const rhn_regmap_reg& r : rhn_regmap_regs) {
    auto it = snap.regs.find(r.name);
    if (it == snap.regs.end()) continue;
    const std::string f = fields(r, it->second);
    printf("  %-16s 0x%0*llx%s%s\n", r.name, r.width / 4,
           static_cast<unsigned long long>(it->second), f.empty() ? "" : "  ",
           f.c_str());
  }
  auto st = snap.regs.find("STATUS");
  if (st != snap.regs.end() && st->second == 0xffffffffu)
    printf(
        "  -> STATUS reads all ones: the card does not answer (gone from "
        "the bus, or its BARs lost after the FPGA was reprogrammed: "
        "rescan or reset the device)\n");
  else if (st != snap.regs.end() && (st->second & RHN_STATUS_FATAL))
    printf("  -> STATUS.FATAL: the NIC stopped itself; a reset is needed\n");
  else if (st != snap.regs.end() && !(st->second & RHN_STATUS_READY))
    printf("  -> STATUS.READY is 0: the engine (firmware) is not running\n");
  if (!snap.counters.empty()) {
    printf("\ncounters%s\n",
           all ? "" : " (those not zero; --all for every one)");
    for (size_t i = 0; i < snap.counters.size(); i++)
      if (all || snap.counters[i])
        printf("  %-24s %12llu  %s\n", rhn_regmap_counters[i].name,
               static_cast<unsigned long long>(snap.counters[i]),
               rhn_regmap_counters[i].doc);
  }
  if (!snap.driver) {
    printf("\ndriver: no state (no driver bound)\n");
    return;
  }
  const Json& d = *snap.driver;
  printf("\ndriver\n");
  if (const Json* r = d.find("reason"))
    printf("  reason          %s\n", r->text.c_str());
  if (const Json* s = d.find("stopped"))
    printf("  stopped         %s\n", s->boolean ? "yes" : "no");
  if (const Json* f = d.find("last_failure"))
    printf("  last failure    %s\n", f->text.c_str());
  if (const Json* a = d.find("admin"))
    printf("  admin queue     sq_tail %llu cq_head %llu interrupts %llu\n",
           static_cast<unsigned long long>(
               a->find("sq_tail") ? a->find("sq_tail")->integer : 0),
           static_cast<unsigned long long>(
               a->find("cq_head") ? a->find("cq_head")->integer : 0),
           static_cast<unsigned long long>(
               a->find("interrupts") ? a->find("interrupts")->integer : 0));
  if (const Json* eqs = d.find("eqs"))
    for (const Json& e : eqs->items) {
      auto u = [&](const char* k) {
        const Json* x = e.find(k);
        return static_cast<unsigned long long>(x ? x->integer : 0);
      };
      const Json* w = e.find("entry_waiting");
      printf(
          "  eq %llu          vector %llu depth %llu consumer %llu%s, %llu "
          "recoveries\n",
          u("eqn"), u("vector"), u("depth"), u("consumer"),
          w && w->boolean ? ", an entry waits" : "", u("recoveries"));
    }
}

int usage() {
  fprintf(stderr,
          "usage: rhinet-diag [--device BDF] [--all] [--json]\n"
          "       rhinet-diag --dump FILE [--all] [--json]\n"
          "  a running device (root: BAR0 through sysfs), or a dump from\n"
          "  devlink -j health dump show pci/BDF reporter NAME > FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, dump, err;
  bool json = false, all = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--all") {
      all = true;
    } else if ((a == "--device" || a == "--dump") && i + 1 < argc) {
      (a == "--device" ? device : dump) = argv[++i];
    } else {
      fprintf(stderr, "rhinet-diag: unknown argument '%s'\n", a.c_str());
      return usage();
    }
  }
  if (!device.empty() && !dump.empty()) return usage();
  Snapshot snap;
  if (!(dump.empty() ? from_device(device, snap, err)
                     : from_dump(dump, snap, err))) {
    fprintf(stderr, "rhinet-diag: %s\n", err.c_str());
    return 1;
  }
  if (json)
    print_json(snap, all);
  else
    print_text(snap, all);
  return 0;
}
