#pragma once
// The scaling ladder's records: what each level and group measured, and the
// data-parallel projection made from them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"

namespace fabricbench {

enum class LevelKind { nodes, rail };

// What one group measured.
struct GroupResult {
  int group = 0;
  std::vector<int> nodes;          // node indices
  std::vector<std::string> hosts;  // their hostnames
  int ranks = 0;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
};

struct LevelResult {
  LevelKind kind = LevelKind::nodes;
  Op op = Op::allreduce;
  std::size_t bytes = 0;
  int nodes_per_group = 1;
  int ranks_per_group = 0;
  std::vector<GroupResult> groups;
  double busbw_min_gbs = 0;
  double busbw_median_gbs = 0;
  std::optional<double> efficiency;        // median busbw / median busbw of 1 node
  std::optional<double> ceiling_gbs;       // NIC-bound busbw ceiling, when the line rate is known
  std::optional<double> ceiling_fraction;  // median busbw / ceiling
  std::string warning;                     // e.g. busbw above the NIC ceiling
};

// Projected data-parallel training at one node count.
struct ProjectionInput {
  std::size_t grad_bytes = 0;
  double compute_ms = 0;
  double overlap = 0;    // fraction of the compute time that communication can hide under
  bool sharded = false;  // reduce-scatter + all-gather instead of all-reduce
};

struct ProjectionPoint {
  int nodes = 0;
  int gpus = 0;
  double comm_ms = 0;
  double step_ms = 0;
  double speedup = 0;     // over one GPU without communication
  double efficiency = 0;  // speedup / gpus
};

struct ScaleResult {
  std::size_t bytes = 0;  // the large size every level runs
  int ranks_per_node = 0;
  std::optional<double> nic_gbit_per_node;
  std::vector<LevelResult> levels;
  std::optional<ProjectionInput> projection_input;
  std::vector<ProjectionPoint> projection;
};

// The projection's JSON form: its input's members and its points in one
// object, null when no projection was made.
struct ProjectionForm {
  ProjectionInput input;
  std::vector<ProjectionPoint> points;
};

std::string_view name(LevelKind kind);

// The one label of a level, wherever it is shown: "1 node", "2 nodes",
// "rail (1 rank/node)".
std::string level_label(LevelKind kind, int nodes_per_group);

std::string level_label(const LevelResult& level);

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<LevelKind> from_name(std::string_view text, fields::tag<LevelKind>) {
  for (const LevelKind k : {LevelKind::nodes, LevelKind::rail})
    if (text == name(k)) return k;
  return std::nullopt;
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GroupResult>
void fields_of(Self& g, Field&& field) {
  field("group", g.group);
  field("nodes", g.nodes);
  field("hosts", g.hosts);
  field("ranks", g.ranks);
  field("time_us", g.time_us);
  field("busbw_gbs", g.busbw_gbs);
  field("wrong", g.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, LevelResult>
void fields_of(Self& l, Field&& field) {
  field("kind", l.kind);
  field("op", l.op);
  field("bytes", l.bytes);
  field("nodes_per_group", l.nodes_per_group);
  field("ranks_per_group", l.ranks_per_group);
  field("groups", l.groups);
  field("busbw_min_gbs", l.busbw_min_gbs);
  field("busbw_median_gbs", l.busbw_median_gbs);
  field("efficiency", l.efficiency);
  field("ceiling_gbs", l.ceiling_gbs);
  field("ceiling_fraction", l.ceiling_fraction);
  field("warning", fields::empty_as_null(l.warning));
}

// The projection's input; its points sit beside it (ProjectionForm).
template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ProjectionInput>
void fields_of(Self& p, Field&& field) {
  field("grad_bytes", p.grad_bytes);
  field("compute_ms", p.compute_ms);
  field("overlap", p.overlap);
  field("sharded", p.sharded);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ProjectionForm>
void fields_of(Self& p, Field&& field) {
  field(fields::inlined(p.input));
  field("points", p.points);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ScaleResult>
void fields_of(Self& s, Field&& field) {
  field("bytes", s.bytes);
  field("ranks_per_node", s.ranks_per_node);
  field("nic_gbit_per_node", s.nic_gbit_per_node);
  field("levels", s.levels);
  field("projection", fields::converted(
                          s,
                          [](const ScaleResult& r) {
                            return r.projection_input ? std::optional<ProjectionForm>(
                                                            ProjectionForm{*r.projection_input, r.projection})
                                                      : std::nullopt;
                          },
                          [](const std::optional<ProjectionForm>& form, auto& out, const std::string&) {
                            out.projection_input.reset();
                            out.projection.clear();
                            if (!form) return;
                            out.projection_input = form->input;
                            out.projection = form->points;
                          }));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ProjectionPoint>
void fields_of(Self& p, Field&& field) {
  field("nodes", p.nodes);
  field("gpus", p.gpus);
  field("comm_ms", p.comm_ms);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
}

}  // namespace fabricbench
