#pragma once
// The pace rounds' records: who reached each collective last, and how long
// each rank's own work took, and the slow ranks and nodes named from them.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/name_table.hpp"

namespace fabricbench {

// One rank in one pace round.
struct RankPace {
  int rank = 0;
  int node = 0;
  int local_rank = 0;
  double work_us = 0;      // its median time for the round's fixed work
  int last = 0;            // iterations it reached the all-reduce last in
  int late = 0;            // iterations it came half the fastest rank's work or more after the first arrival
  double lateness_us = 0;  // its median time after the first arrival
  // Its mean time after the first arrival: what the collective lost to it
  // per iteration (empty in files written before it was kept).
  std::optional<double> lost_us;
};

// One round: every rank does the same fixed work (`work_fills` fills of
// `work_bytes` of its buffers: GPU memory on NCCL, host memory on MPI), then
// joins a small all-reduce, `iterations` times back to back
// (engine/stragglers.hpp).
struct PaceRound {
  int iterations = 0;
  std::size_t work_bytes = 0;
  int work_fills = 1;
  double seconds = 0;           // the round's wall time (rank 0)
  std::vector<RankPace> ranks;  // by world rank
};

// slow_rank: a rank came late to most collectives while its node's other
// ranks kept pace; slow_rank_node: every rank of a node came late.
enum class StragglerKind { slow_rank, slow_rank_node };
inline constexpr NameTable<StragglerKind, 2> straggler_kind_names{{
    {StragglerKind::slow_rank, "slow_rank"},
    {StragglerKind::slow_rank_node, "slow_rank_node"},
}};
constexpr std::string_view name(StragglerKind kind) { return name_in(straggler_kind_names, kind); }

struct Straggler {
  StragglerKind kind = StragglerKind::slow_rank;
  std::vector<int> ranks;  // the rank, or every rank of the node
  int node = 0;
  std::string host;
  int iterations = 0;             // the first round's
  int late = 0;                   // iterations it came late in (a node: its least late rank's)
  int last = 0;                   // iterations it (a node: any of its ranks) arrived last in
  double lateness_us = 0;         // its median time after the first arrival (a node: its least late rank's)
  std::optional<double> lost_us;  // its mean time after the first arrival (a node: its least late rank's)
  double work_us = 0;             // its median work (a node: its quickest rank's)
  double reference_us = 0;        // the median work of the ranks
  std::optional<bool> confirmed;  // by the second round
  int again_late = 0;             // the second round: iterations it came late in
  int again_iterations = 0;
  std::string message;
};

struct StragglersResult {
  std::vector<PaceRound> rounds;       // the first, and the second when the first named a suspect
  std::vector<Straggler> found;        // confirmed by the second round
  std::vector<Straggler> unconfirmed;  // suspects the second round did not confirm
  // Half the ranks or more came late and worked slower: what that says (ranks
  // sharing cores or GPUs, or half of them throttled); no one is named.
  std::string uneven;
  // The ranks share CPU cores (MPI transport: the work is the host's): why
  // the rounds did not run; no one is judged.
  std::string shared;
};

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<StragglerKind> from_name(std::string_view text, fields::tag<StragglerKind>) {
  return parse_in(straggler_kind_names, text);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, RankPace>
void fields_of(Self& r, Field&& field) {
  field("rank", r.rank);
  field("node", r.node);
  field("local_rank", r.local_rank);
  field("work_us", r.work_us);
  field("last", r.last);
  field("late", r.late);
  field("lateness_us", r.lateness_us);
  field("lost_us", r.lost_us);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PaceRound>
void fields_of(Self& r, Field&& field) {
  field("iterations", r.iterations);
  field("work_bytes", r.work_bytes);
  field("work_fills", r.work_fills);
  field("seconds", r.seconds);
  field("ranks", r.ranks);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Straggler>
void fields_of(Self& s, Field&& field) {
  field("kind", s.kind);
  field("ranks", s.ranks);
  field("node", s.node);
  field("host", s.host);
  field("iterations", s.iterations);
  field("late", s.late);
  field("last", s.last);
  field("lateness_us", s.lateness_us);
  field("lost_us", s.lost_us);
  field("work_us", s.work_us);
  field("reference_us", s.reference_us);
  field("confirmed", fields::omitted(s.confirmed));
  field("again_late", s.again_late);
  field("again_iterations", s.again_iterations);
  field("message", s.message);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StragglersResult>
void fields_of(Self& s, Field&& field) {
  field("rounds", s.rounds);
  field("found", s.found);
  field("unconfirmed", fields::omitted(s.unconfirmed));
  field("uneven", fields::omitted(s.uneven));
  field("shared", fields::omitted(s.shared));
}

}  // namespace fabricbench
