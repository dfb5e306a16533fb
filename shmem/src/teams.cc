// Teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and the teams split from them
// (Documentation/userlib/shmem.md, "Teams"). A split team is a userlib
// Communicator over its members' ranks, so its collectives run on the NICs
// as the world's do.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "shmem_internal.hpp"

using namespace rhinet::shmem::internal;

// The object behind a split team's shmem_team_t.
struct rhinet_shmem_team {
  std::vector<int> pes;  // world PEs in team order
  int me = 0;
  std::optional<rhinet::Communicator> comm;
  shmem_team_config_t config{};
};

namespace {

// A NIC keys a communicator by (group, ID): two live teams with PEs on one
// node need different IDs. Split teams' IDs are 0x8000 | round << 8 |
// lowest PE: teams that share a PE were made in different rounds (that PE
// took part in both splits), teams that share none differ in their lowest
// PE. `round` is 7 bits: teams 128 rounds apart may collide.
constexpr std::uint16_t team_comm_id(std::uint64_t round, int lowest_pe) {
  return static_cast<std::uint16_t>(0x8000 | (round % 128) << 8 |
                                    static_cast<unsigned>(lowest_pe) % 256);
}

struct Teams {
  std::set<shmem_team_t> live;
  std::vector<int> world_pes;
  int shared_pe = -1;
  // The next split round this PE would use (see next_rounds).
  std::uint64_t next_round = 0;
};

Teams& teams() {
  static Teams t;
  return t;
}

bool predefined(shmem_team_t team) {
  return team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED;
}

// `count` split rounds every PE of the parent agrees on: the largest
// next_round among them (one allreduce), so no PE has used any of them.
std::optional<std::uint64_t> next_rounds(const char* routine,
                                         const TeamView& parent,
                                         std::uint64_t count) {
  Teams& t = teams();
  std::uint64_t first = t.next_round;
  if (parent.comm) {
    auto word = scratch().first(8);
    auto* v = reinterpret_cast<std::uint64_t*>(word.data());
    *v = t.next_round;
    auto r = parent.comm->allreduce<std::uint64_t>({v, 1}, {v, 1},
                                                   rhinet::Reduce::max);
    if (!r) {
      refuse(routine, "%s", r.error().to_string().c_str());
      return std::nullopt;
    }
    first = *v;
  }
  t.next_round = first + count;
  return first;
}

// The members (world PEs, in team order) as a team made in split round
// `round`; this PE is one of them.
shmem_team_t make_team(const char* routine, std::vector<int> pes,
                       std::uint64_t round, const shmem_team_config_t* config,
                       long mask) {
  auto team = std::make_unique<rhinet_shmem_team>();
  const int me = shmem_my_pe();
  team->me =
      static_cast<int>(std::find(pes.begin(), pes.end(), me) - pes.begin());
  std::vector<std::uint32_t> ranks(pes.begin(), pes.end());
  auto comm = rhinet::Communicator::create(
      group(routine), ranks,
      {.id = team_comm_id(round, *std::min_element(pes.begin(), pes.end()))});
  if (!comm) {
    refuse(routine, "cannot create the team's NIC communicator: %s",
           comm.error().to_string().c_str());
    return SHMEM_TEAM_INVALID;
  }
  team->comm.emplace(std::move(*comm));
  team->pes = std::move(pes);
  if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) team->config = *config;
  shmem_team_t handle = team.release();
  teams().live.insert(handle);
  return handle;
}

}  // namespace

namespace rhinet::shmem::internal {

TeamView team_view(const char* routine, shmem_team_t team, bool collective) {
  Teams& t = teams();
  group(routine);
  if (team == SHMEM_TEAM_WORLD) {
    if (t.world_pes.empty())
      for (int pe = 0; pe < shmem_n_pes(); pe++) t.world_pes.push_back(pe);
    return {t.world_pes, shmem_my_pe(), collective ? &world(routine) : nullptr};
  }
  if (team == SHMEM_TEAM_SHARED) {
    t.shared_pe = shmem_my_pe();
    return {{&t.shared_pe, 1}, 0, nullptr};
  }
  if (!t.live.count(team))
    die(routine,
        "team %p is not a team (SHMEM_TEAM_INVALID, destroyed, or "
        "never created)",
        static_cast<void*>(team));
  return {team->pes, team->me, &*team->comm};
}

void team_barrier(const char* routine, const TeamView& team) {
  quiet_all(routine);
  if (team.comm) complete(routine, team.comm->barrier());
}

}  // namespace rhinet::shmem::internal

extern "C" {

int shmem_team_my_pe(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  return team_view("shmem_team_my_pe", team, false).me;
}

int shmem_team_n_pes(shmem_team_t team) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  return static_cast<int>(
      team_view("shmem_team_n_pes", team, false).pes.size());
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                            shmem_team_t dest_team) {
  const char* routine = "shmem_team_translate_pe";
  if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID)
    return -1;
  const auto src = team_view(routine, src_team, false);
  if (src_pe < 0 || static_cast<std::size_t>(src_pe) >= src.pes.size())
    return -1;
  const int world_pe = src.pes[static_cast<std::size_t>(src_pe)];
  const auto dest = team_view(routine, dest_team, false);
  const auto at = std::find(dest.pes.begin(), dest.pes.end(), world_pe);
  return at == dest.pes.end() ? -1 : static_cast<int>(at - dest.pes.begin());
}

int shmem_team_get_config(shmem_team_t team, long config_mask,
                          shmem_team_config_t* config) {
  const char* routine = "shmem_team_get_config";
  if (team == SHMEM_TEAM_INVALID)
    return refuse(routine, "SHMEM_TEAM_INVALID is not a team");
  team_view(routine, team, false);
  if (config && (config_mask & SHMEM_TEAM_NUM_CONTEXTS))
    config->num_contexts = predefined(team) ? 0 : team->config.num_contexts;
  return 0;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                             int size, const shmem_team_config_t* config,
                             long config_mask, shmem_team_t* new_team) {
  const char* routine = "shmem_team_split_strided";
  if (!new_team) return refuse(routine, "new_team is NULL");
  *new_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return 0;  // not a member: nothing
  const auto parent = team_view(routine, parent_team);
  const long n = static_cast<long>(parent.pes.size());
  const long last = start + static_cast<long>(stride) * (size - 1);
  if (size < 1 || start < 0 || start >= n || last < 0 || last >= n ||
      (stride == 0 && size > 1))
    return refuse(routine,
                  "start %d, stride %d, size %d name PEs that are not PEs of "
                  "the parent team (0 to %ld) or one PE twice",
                  start, stride, size, n - 1);
  // Every PE of the parent takes part, members or not, so that all agree
  // on the communicator ID.
  const auto round = next_rounds(routine, parent, 1);
  if (!round) return -1;
  std::vector<int> pes;
  bool member = false;
  for (int i = 0; i < size; i++) {
    const int index = start + i * stride;
    pes.push_back(parent.pes[static_cast<std::size_t>(index)]);
    member |= index == parent.me;
  }
  if (!member) return 0;
  *new_team = make_team(routine, std::move(pes), *round, config, config_mask);
  return *new_team == SHMEM_TEAM_INVALID ? -1 : 0;
}

// PE i of the parent is at (x, y) = (i % xrange, i / xrange): the x-axis
// team is its row, the y-axis team its column.
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team,
                        const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  const char* routine = "shmem_team_split_2d";
  if (!xaxis_team || !yaxis_team)
    return refuse(routine, "xaxis_team or yaxis_team is NULL");
  *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return 0;
  if (xrange < 1) return refuse(routine, "xrange %d is not positive", xrange);
  const auto parent = team_view(routine, parent_team);
  const int n = static_cast<int>(parent.pes.size());
  const int x = std::min(xrange, n);
  // The rows share a round (they share no PE), the columns the next one.
  const auto round = next_rounds(routine, parent, 2);
  if (!round) return -1;
  const int my_row = parent.me / x, my_col = parent.me % x;
  std::vector<int> row, col;
  for (int i = my_row * x; i < std::min(n, (my_row + 1) * x); i++)
    row.push_back(parent.pes[static_cast<std::size_t>(i)]);
  for (int i = my_col; i < n; i += x)
    col.push_back(parent.pes[static_cast<std::size_t>(i)]);
  *xaxis_team =
      make_team(routine, std::move(row), *round, xaxis_config, xaxis_mask);
  *yaxis_team =
      make_team(routine, std::move(col), *round + 1, yaxis_config, yaxis_mask);
  return *xaxis_team == SHMEM_TEAM_INVALID || *yaxis_team == SHMEM_TEAM_INVALID
             ? -1
             : 0;
}

int shmem_team_sync(shmem_team_t team) {
  const char* routine = "shmem_team_sync";
  if (team == SHMEM_TEAM_WORLD) {
    shmem_sync_all();
    return 0;
  }
  const auto view = team_view(routine, team);
  if (view.comm) complete(routine, view.comm->barrier());
  return 0;
}

void shmem_team_destroy(shmem_team_t team) {
  const char* routine = "shmem_team_destroy";
  if (team == SHMEM_TEAM_INVALID) return;
  if (predefined(team))
    die(routine,
        "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED are predefined and cannot be "
        "destroyed");
  team_view(routine, team, false);  // ends the PE for a team that is no team
  teams().live.erase(team);
  delete team;
}

}  // extern "C"
