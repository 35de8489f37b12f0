#pragma once
// The GPU-count ladder's records: what each set of GPUs inside one server
// measured, the projection over GPU counts and its price.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/types.hpp"
#include "fabricbench/records/scaling.hpp"

namespace fabricbench {

// Which GPUs of a node form a level's set. `any`: every set of that size is
// alike on the link matrix (all NVSwitch, or the whole node); `rank_order`:
// no link matrix to choose by, the first k local ranks.
enum class GpuSetChoice { closest, spread, any, rank_order };

std::string_view name(GpuSetChoice choice);

std::optional<GpuSetChoice> parse_gpu_set_choice(std::string_view text);

// What one node's set measured.
struct GpuSetResult {
  int node = 0;
  std::string host;
  std::vector<int> gpus;  // local ranks (= GPU indices on the node)
  std::string path;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
};

struct GpuLevelResult {
  int gpus = 0;
  GpuSetChoice choice = GpuSetChoice::rank_order;
  Op op = Op::allreduce;
  std::size_t bytes = 0;
  std::string path;  // the farthest path over the nodes' sets
  std::vector<GpuSetResult> sets;
  double busbw_min_gbs = 0;
  double busbw_median_gbs = 0;
  // Median busbw over the best pair's (2 GPUs, closest or any, same op and
  // size): busbw is normalised so that a perfect fabric holds it flat as
  // GPUs are added, so the best pair is the ideal every level is held to.
  std::optional<double> efficiency;
};

// One GPU count of the projection, on one choice of set.
struct GpuProjectionPoint {
  int gpus = 0;
  GpuSetChoice choice = GpuSetChoice::any;
  double comm_ms = 0;
  double step_ms = 0;
  double speedup = 0;
  double efficiency = 0;               // speedup / gpus
  std::optional<double> job_hours;     // steps x step time, with --steps
  std::optional<double> cost_per_job;  // job hours x gpus x price per GPU-hour
};

// The job on a whole server of `gpus` GPUs at its price per hour.
struct ServerCost {
  int gpus = 0;
  double price_per_hour = 0;
  std::optional<double> job_hours;
  std::optional<double> cost_per_job;  // job hours x price per hour
  std::string why_not;                 // when the job was not projected at that size
};

struct GpuLadderResult {
  int gpus_per_node = 0;
  std::size_t bytes = 0;
  bool from_topology = false;
  std::string note;
  std::vector<GpuLevelResult> levels;
  std::optional<ProjectionInput> projection_input;
  std::optional<std::int64_t> steps;
  std::vector<GpuProjectionPoint> projection;
  std::optional<double> price_per_gpu_hour;
  std::vector<ServerCost> servers;
  // Over the servers when --price is given, else over the projection's
  // closest (or any) sets: the lowest cost per job, and the shortest job
  // (or step, without --steps). Ties go to fewer GPUs.
  std::optional<int> cheapest_gpus;
  std::optional<int> fastest_gpus;
};

// Job hours for `steps` steps of `step_ms`.
double job_hours(std::int64_t steps, double step_ms);

// The one label of a level, wherever it is shown: "4 GPUs closest".
std::string gpu_level_label(int gpus, GpuSetChoice choice);

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<GpuSetChoice> from_name(std::string_view text, fields::tag<GpuSetChoice>) {
  return parse_gpu_set_choice(text);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuSetResult>
void fields_of(Self& s, Field&& field) {
  field("node", s.node);
  field("host", s.host);
  field("gpus", s.gpus);
  field("path", s.path);
  field("time_us", s.time_us);
  field("busbw_gbs", s.busbw_gbs);
  field("wrong", s.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuLevelResult>
void fields_of(Self& l, Field&& field) {
  field("gpus", l.gpus);
  field("choice", l.choice);
  field("op", l.op);
  field("bytes", l.bytes);
  field("path", l.path);
  field("sets", l.sets);
  field("busbw_min_gbs", l.busbw_min_gbs);
  field("busbw_median_gbs", l.busbw_median_gbs);
  field("efficiency", l.efficiency);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuProjectionPoint>
void fields_of(Self& p, Field&& field) {
  field("gpus", p.gpus);
  field("choice", p.choice);
  field("comm_ms", p.comm_ms);
  field("step_ms", p.step_ms);
  field("speedup", p.speedup);
  field("efficiency", p.efficiency);
  field("job_hours", p.job_hours);
  field("cost_per_job", p.cost_per_job);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ServerCost>
void fields_of(Self& c, Field&& field) {
  field("gpus", c.gpus);
  field("price_per_hour", c.price_per_hour);
  field("job_hours", c.job_hours);
  field("cost_per_job", c.cost_per_job);
  field("why_not", fields::empty_as_null(c.why_not));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuLadderResult>
void fields_of(Self& g, Field&& field) {
  field("gpus_per_node", g.gpus_per_node);
  field("bytes", g.bytes);
  field("from_topology", g.from_topology);
  field("note", fields::empty_as_null(g.note));
  field("levels", g.levels);
  field("projection_input", g.projection_input);
  field("steps", g.steps);
  field("projection", g.projection);
  field("price_per_gpu_hour", g.price_per_gpu_hour);
  field("servers", g.servers);
  field("cheapest_gpus", g.cheapest_gpus);
  field("fastest_gpus", g.fastest_gpus);
}

}  // namespace fabricbench
