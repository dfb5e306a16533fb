// SPDX-License-Identifier: BSD-2-Clause
// rhinet-run's parts: the command line and the hosts (run_options.cc), the
// launcher (rhinet_run.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rhinet_run {

constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;
constexpr const char* kMe = "rhinet-run";

[[noreturn]] void usage_error(const std::string& msg);
// What fatal() undoes first: the grants of the privileged step.
extern void (*g_at_fatal)();
[[noreturn]] void fatal(const std::string& msg, int code = 1);

struct Options {
  long ranks = 0;
  std::optional<long> per_node;
  std::vector<std::string> hosts;
  bool hosts_given = false;
  bool oversubscribe = false;
  std::vector<std::string> rsh{"ssh"};
  std::string iface, advertise;
  long port = 0;
  std::vector<std::string> exports;  // NAME=VALUE
  // Where the ranks start: --wdir, else this process's working directory
  // (remote ranks fall back to the remote shell's when it has none).
  std::string wdir;
  bool wdir_given = false;
  std::optional<long> timeout_s;
  bool verbose = false;
  // A group the administrator granted (--group, --token-file), else the
  // privileged step's command (--grant-cmd).
  std::optional<std::uint32_t> group;
  std::optional<std::uint64_t> token;
  std::vector<std::string> grant_cmd;
  std::vector<std::string> command;  // PROGRAM ARGS...
};

Options parse(int argc, char** argv);

// The hosts: this machine's IPv4 addresses, an address as text, an
// interface's address, this host's name, whether @host is this machine.
std::set<std::uint32_t> local_ipv4s();
std::string ipv4_string(std::uint32_t a);
std::optional<std::uint32_t> interface_ipv4(const std::string& name);
std::string host_name();
bool is_local(const std::string& host, const std::set<std::uint32_t>& mine);

}  // namespace rhinet_run
