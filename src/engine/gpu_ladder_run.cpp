// Running the GPU-count ladder: rank 0 plans, every rank learns its sets,
// then each row's sets (one per node) are split from the world and run at
// once, as the node ladder runs its groups.

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/engine/sweep.hpp"

namespace fabricbench {
namespace {

constexpr DType ladder_dtype = DType::float32;

// The plan on the wire: per row, the GPU count, the choice, then per node
// the member count and the members. Every rank decodes the same rows.
std::string encode(const GpuLadderPlan& plan) {
  std::vector<int> v{plan.from_topology ? 1 : 0, static_cast<int>(plan.rows.size())};
  for (const auto& row : plan.rows) {
    v.push_back(row.front().gpus);
    v.push_back(static_cast<int>(row.front().choice));
    v.push_back(static_cast<int>(row.size()));
    for (const GpuSetPlan& s : row) {
      v.push_back(static_cast<int>(s.members.size()));
      v.insert(v.end(), s.members.begin(), s.members.end());
    }
  }
  std::string bytes(v.size() * sizeof(int), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

GpuLadderPlan decode(const std::string& bytes, const std::string& note) {
  std::vector<int> v(bytes.size() / sizeof(int));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(int));
  std::size_t at = 0;
  const auto next = [&]() {
    if (at >= v.size()) throw Error("GPU ladder: the plan sent by rank 0 is cut short");
    return v[at++];
  };
  GpuLadderPlan plan;
  plan.from_topology = next() != 0;
  plan.note = note;
  const int rows = next();
  for (int r = 0; r < rows; ++r) {
    const int gpus = next();
    const auto choice = static_cast<GpuSetChoice>(next());
    const int nodes = next();
    std::vector<GpuSetPlan> row;
    for (int n = 0; n < nodes; ++n) {
      GpuSetPlan s{gpus, choice, {}, ""};
      const int members = next();
      for (int m = 0; m < members; ++m) s.members.push_back(next());
      row.push_back(std::move(s));
    }
    plan.rows.push_back(std::move(row));
  }
  return plan;
}

// What a set's first rank reports, gathered to every rank.
struct SetLine {
  bool speaks = false;
  int node = -1;
  double time_us = 0;
  double busbw_gbs = 0;
  std::uint64_t wrong = 0;
  bool cut = false;  // measured with fewer iterations than asked (the budget)
};

}  // namespace

GpuLadderResult run_gpu_ladder(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                               const std::vector<LinkMatrix>& matrices, const PhaseLimit& limit) {
  const Window phase(limit.seconds);
  const int rpn = uniform_ranks_per_node(layout);
  const bool lead = world.rank() == 0;
  std::vector<int> extra;
  for (const ServerPrice& s : config.scale.server_prices) extra.push_back(s.gpus);

  GpuLadderPlan full;
  if (lead) {
    std::vector<LinkMatrix> per_node = matrices;
    per_node.resize(static_cast<std::size_t>(layout.nodes));
    full = plan_gpu_ladder(per_node, rpn, extra);
  }
  const std::string note = world.broadcast_bytes(lead ? full.note : std::string(), 0);
  const GpuLadderPlan plan = decode(world.broadcast_bytes(lead ? encode(full) : std::string(), 0), note);

  GpuLadderResult result;
  result.gpus_per_node = rpn;
  result.bytes = ladder_bytes(config.scale);
  result.from_topology = plan.from_topology;
  result.note = plan.note;
  // The node ladder's ops and the projection's, at the ladder's one size.
  const std::vector<LadderJob> jobs = ladder_jobs(config.scale, result.bytes, false);
  auto measurements_left = static_cast<int>(plan.rows.size() * jobs.size());
  double last_step_s = 0;

  for (std::size_t r = 0; r < plan.rows.size(); ++r) {
    const auto& row = plan.rows[r];
    const std::vector<int>& mine = row[static_cast<std::size_t>(layout.node)].members;
    const auto at = std::find(mine.begin(), mine.end(), layout.local_rank);
    const int color = at == mine.end() ? -1 : layout.node;
    const int key = at == mine.end() ? 0 : static_cast<int>(at - mine.begin());
    const Comm group = world.split(color, key);
    const std::unique_ptr<Transport> sub = transport.split(group, color, key);
    for (const LadderJob& job : jobs) {
      // Rank 0 gives this row an even part of what is left of the phase,
      // or none (-1) once it is spent or the last row's step outlasted it
      // (a row of more GPUs takes no less); every rank follows.
      const Window step;
      const Counts counts = counts_for(job.op, ladder_dtype, job.bytes, group.empty() ? 1 : group.size());
      const OpSpec spec{job.op, ladder_dtype, RedOp::sum, Placement::out_of_place, 0, counts};
      const double least_s = expected_step_s(limit, phase, world, counts.param > 0 ? sub.get() : nullptr, spec);
      const double share = next_share(world, phase, measurements_left--, last_step_s, least_s);
      SetLine line;
      if (sub && counts.param > 0 && share >= 0) {
        sub->prepare(spec);
        const Measurement m = measure_op(config, *sub, group, spec, share);
        if (group.rank() == 0 && !m.skipped)
          line = SetLine{true, layout.node, m.timing.time_us, m.timing.busbw_gbs, m.timing.wrong.value_or(0), m.cut};
      }
      std::vector<SetLine> lines = world.allgather_value(line);
      last_step_s = step.elapsed_s();
      if (!lead) continue;
      const bool none = std::none_of(lines.begin(), lines.end(), [](const SetLine& l) { return l.speaks; });
      const bool fewer = std::any_of(lines.begin(), lines.end(), [](const SetLine& l) { return l.cut; });
      if (limit.cuts != nullptr && counts.param > 0 && (none || fewer))
        limit.cuts->push_back(Cut{Phase::gpu_ladder,
                                  fmt::format("{} {} {}", gpu_level_label(row.front().gpus, row.front().choice),
                                              name(job.op), format_size(counts.bytes)),
                                  none ? "skipped" : "fewer iterations"});
      if (none) continue;
      GpuLevelResult level;
      level.gpus = row.front().gpus;
      level.choice = row.front().choice;
      level.op = job.op;
      level.bytes = counts.bytes;
      double worst = -1;
      for (const SetLine& l : lines) {
        if (!l.speaks) continue;
        const auto node = static_cast<std::size_t>(l.node);
        GpuSetResult s;
        s.node = l.node;
        s.host = layout.hostnames[node];
        s.gpus = full.rows[r][node].members;
        s.path = full.rows[r][node].path;
        s.time_us = l.time_us;
        s.busbw_gbs = l.busbw_gbs;
        s.wrong = l.wrong;
        const double d = path_distance(s.path).value_or(1e9);
        if (d > worst) {
          worst = d;
          level.path = s.path;
        }
        level.sets.push_back(std::move(s));
      }
      std::sort(level.sets.begin(), level.sets.end(),
                [](const GpuSetResult& a, const GpuSetResult& b) { return a.node < b.node; });
      result.levels.push_back(std::move(level));
    }
  }
  // What the projection is made of; analysis judges the levels, projects and
  // prices.
  if (lead && config.scale.grad_bytes > 0) result.projection_input = projection_input(config.scale, ladder_dtype);
  return result;
}

}  // namespace fabricbench
