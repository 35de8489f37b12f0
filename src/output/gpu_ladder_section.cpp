#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/text.hpp"
#include "fabricbench/output/sections.hpp"

namespace fabricbench {
namespace {

// A job's length: hours, or minutes when below a tenth of an hour.
std::string hours(double h) { return h >= 0.1 ? fmt::format("{:.3f} h", h) : fmt::format("{:.3g} min", h * 60); }

std::string members(const std::vector<int>& gpus) {
  std::string text;
  for (const int g : gpus) text += (text.empty() ? "" : ",") + std::to_string(g);
  return text;
}

void write_projection(const GpuLadderResult& g, std::ostream& out) {
  const ProjectionInput& p = *g.projection_input;
  out << fmt::format(
      "#\n# Projected data-parallel training inside a node: {} of gradients ({}), {} ms compute per step, {:.0f}% "
      "overlap{}\n",
      format_size(p.grad_bytes), p.sharded ? "reduce-scatter + all-gather" : "all-reduce", p.compute_ms,
      p.overlap * 100.0, g.steps ? fmt::format(", {} steps per job", *g.steps) : std::string());
  const bool priced = g.price_per_gpu_hour.has_value() && g.steps.has_value();
  out << fmt::format("# {:>4} {:<10} {:>10} {:>10} {:>8} {:>10} {:>10}{}\n", "GPUs", "set", "comm (ms)", "step (ms)",
                     "speedup", "efficiency", "job", priced ? fmt::format(" {:>12}", "cost per job") : "");
  for (const GpuProjectionPoint& pt : g.projection) {
    out << fmt::format("  {:>4} {:<10} {:>10.3f} {:>10.3f} {:>8.2f} {:>9.0f}% {:>10}", pt.gpus, name(pt.choice),
                       pt.comm_ms, pt.step_ms, pt.speedup, pt.efficiency * 100.0,
                       pt.job_hours ? hours(*pt.job_hours) : "-");
    if (priced) out << fmt::format(" {:>12}", pt.cost_per_job ? money_text(*pt.cost_per_job) : "-");
    out << '\n';
  }
  if (priced)
    out << fmt::format("# cost per job = job hours x GPUs x {} per GPU-hour\n", money_text(*g.price_per_gpu_hour));
  if (!g.steps) out << "# job time and cost per job: give --steps N (and a price)\n";
  if (!g.servers.empty()) {
    out << "#\n# The job per server size (--price: per hour of a whole server)\n";
    out << fmt::format("# {:>4} {:>12} {:>10} {:>12}\n", "GPUs", "price/hour", "job", "cost per job");
    for (const ServerCost& s : g.servers) {
      out << fmt::format("  {:>4} {:>12} {:>10} {:>12}", s.gpus, money_text(s.price_per_hour),
                         s.job_hours ? hours(*s.job_hours) : "-", s.cost_per_job ? money_text(*s.cost_per_job) : "-");
      if (!s.why_not.empty()) out << "  " << s.why_not;
      out << '\n';
    }
  }
  const auto find = [&g](int gpus) -> const GpuProjectionPoint* {
    for (const GpuProjectionPoint& pt : g.projection)
      if (pt.gpus == gpus && pt.choice != GpuSetChoice::spread) return &pt;
    return nullptr;
  };
  const auto server = [&g](int gpus) -> const ServerCost* {
    for (const ServerCost& s : g.servers)
      if (s.gpus == gpus) return &s;
    return nullptr;
  };
  if (g.cheapest_gpus) {
    const ServerCost* s = server(*g.cheapest_gpus);
    const GpuProjectionPoint* pt = find(*g.cheapest_gpus);
    const std::optional<double> cost = s != nullptr ? s->cost_per_job : pt != nullptr ? pt->cost_per_job : std::nullopt;
    out << fmt::format("# cheapest per job: {} GPUs{}\n", *g.cheapest_gpus,
                       cost ? fmt::format(" ({} per job)", money_text(*cost)) : std::string());
  }
  if (g.fastest_gpus) {
    const GpuProjectionPoint* pt = find(*g.fastest_gpus);
    out << fmt::format("# fastest: {} GPUs{}\n", *g.fastest_gpus,
                       pt == nullptr   ? std::string()
                       : pt->job_hours ? fmt::format(" ({} per job)", hours(*pt->job_hours))
                                       : fmt::format(" ({:.3f} ms per step)", pt->step_ms));
  }
}

}  // namespace

void print_gpu_ladder(const GpuLadderResult& g, std::ostream& out) {
  out << fmt::format("#\n# GPU-count ladder inside each node ({} GPUs per node, every node at once; {})\n",
                     g.gpus_per_node, g.from_topology ? "sets from the GPU link matrix" : "sets in rank order");
  if (!g.note.empty()) out << "# " << g.note << '\n';
  out << fmt::format("# {:<14} {:>10} {:>4} {:<10} {:>6} {:>11} {:>11} {:>10}  {}\n", "op", "size", "GPUs", "set",
                     "path", "busbw min", "busbw med", "efficiency", "GPUs of node 0");
  out << fmt::format("# {:<14} {:>10} {:>4} {:<10} {:>6} {:>11} {:>11} {:>10}\n", "", "", "", "", "", "(GB/s)",
                     "(GB/s)", "vs pair");
  for (const GpuLevelResult& l : g.levels) {
    out << fmt::format("  {:<14} {:>10} {:>4} {:<10} {:>6} {:>11.3f} {:>11.3f} {:>10}  {}\n", name(l.op),
                       format_size(l.bytes), l.gpus, name(l.choice), l.path, l.busbw_min_gbs, l.busbw_median_gbs,
                       l.efficiency ? fmt::format("{:.0f}%", *l.efficiency * 100.0) : "-",
                       l.sets.empty() ? std::string("-") : members(l.sets.front().gpus));
  }
  out << "# path: the farthest link between two GPUs of the set (NV# NVLink, PIX, PXB, PHB, NODE, SYS; ? unknown); "
         "efficiency: busbw over the best pair's\n";
  if (g.projection_input) write_projection(g, out);
  out << std::flush;
}

}  // namespace fabricbench
