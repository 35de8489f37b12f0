#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/sections.hpp"

namespace fabricbench {
namespace {

std::string percent(const std::optional<double>& v) { return v ? fmt::format("{:.0f}%", *v * 100.0) : "-"; }

// Wider than this, a matrix is listed link by link: its text then grows with
// the links measured, not with the square of the node count.
constexpr int max_matrix_columns = 32;

// `divisor`: latencies above 1000 us are shown in ms (divisor 1000).
void matrix_table(const PairMatrix& m, const std::vector<std::string>& labels, bool bandwidth, std::ostream& out,
                  double divisor = 1) {
  if (m.size > max_matrix_columns) {
    out << fmt::format("# {} nodes: listed link by link (from -> to), links without a figure left out\n", m.size);
    for (int i = 0; i < m.size; ++i)
      for (int j = 0; j < m.size; ++j) {
        const std::optional<double>& v = bandwidth ? m.bw(i, j) : m.lat(i, j);
        if (i != j && v)
          out << fmt::format("  {} -> {} {:.3f}\n", labels[static_cast<std::size_t>(i)],
                             labels[static_cast<std::size_t>(j)], *v / divisor);
      }
    return;
  }
  std::size_t width = 9;
  for (const std::string& l : labels) width = std::max(width, l.size() + 1);
  out << fmt::format("# {:>{}}", "from \\ to", width);
  for (const std::string& l : labels) out << fmt::format(" {:>{}}", l, width);
  out << '\n';
  for (int i = 0; i < m.size; ++i) {
    out << fmt::format("  {:>{}}", labels[static_cast<std::size_t>(i)], width);
    for (int j = 0; j < m.size; ++j) {
      const std::optional<double>& v = bandwidth ? m.bw(i, j) : m.lat(i, j);
      out << fmt::format(" {:>{}}",
                         i == j ? std::string("-")
                         : v    ? fmt::format("{:.3f}", *v / divisor)
                                : std::string("n/a"),
                         width);
    }
    out << '\n';
  }
}

// The links of `m` whose bandwidth the budget measured with a smaller
// message than the heading's, each pair once: one line, or nothing.
void smaller_messages_line(const PairMatrix& m, const std::vector<std::string>& names, std::ostream& out) {
  std::vector<std::string> links;
  for (int i = 0; i < m.size; ++i)
    for (int j = i + 1; j < m.size; ++j) {
      const std::optional<std::size_t>& bytes = m.smaller(i, j) ? m.smaller(i, j) : m.smaller(j, i);
      if (bytes)
        links.push_back(fmt::format("{}-{} at {}", names[static_cast<std::size_t>(i)],
                                    names[static_cast<std::size_t>(j)], format_size(*bytes)));
    }
  if (!links.empty())
    out << fmt::format("# measured with a smaller message to fit the budget: {}\n", fmt::join(links, ", "));
}

}  // namespace

void print_ladder(const ScaleResult& s, std::ostream& out) {
  out << fmt::format("#\n# Scaling ladder ({} ranks per node; every group of a level runs at once)\n",
                     s.ranks_per_node);
  out << fmt::format("# {:<14} {:>10} {:<20} {:>6} {:>6} {:>11} {:>11} {:>10} {:>8}\n", "op", "size", "level", "groups",
                     "ranks", "busbw min", "busbw med", "efficiency", "of NIC");
  out << fmt::format("# {:<14} {:>10} {:<20} {:>6} {:>6} {:>11} {:>11} {:>10} {:>8}\n", "", "", "", "", "/group",
                     "(GB/s)", "(GB/s)", "vs 1 node", "ceiling");
  for (const LevelResult& l : s.levels) {
    out << fmt::format("  {:<14} {:>10} {:<20} {:>6} {:>6} {:>11.3f} {:>11.3f} {:>10} {:>8}\n", name(l.op),
                       format_size(l.bytes), level_label(l), l.groups.size(), l.ranks_per_group, l.busbw_min_gbs,
                       l.busbw_median_gbs, percent(l.efficiency), percent(l.ceiling_fraction));
  }
  for (const LevelResult& l : s.levels)
    if (!l.warning.empty()) out << "# warning: " << level_label(l) << ": " << l.warning << '\n';
  if (!s.nic_gbit_per_node) out << "# NIC line rate unknown: no NIC-bound ceiling (--nic-gbit-per-node sets it)\n";
  if (s.projection_input) {
    const ProjectionInput& p = *s.projection_input;
    out << fmt::format(
        "#\n# Projected data-parallel training: {} of gradients ({}), {} ms compute per step, {:.0f}% "
        "overlap\n",
        format_size(p.grad_bytes), p.sharded ? "reduce-scatter + all-gather" : "all-reduce", p.compute_ms,
        p.overlap * 100.0);
    out << fmt::format("# {:>6} {:>6} {:>10} {:>10} {:>9} {:>10}\n", "nodes", "GPUs", "comm (ms)", "step (ms)",
                       "speedup", "efficiency");
    for (const ProjectionPoint& pt : s.projection)
      out << fmt::format("  {:>6} {:>6} {:>10.3f} {:>10.3f} {:>9.2f} {:>9.0f}%\n", pt.nodes, pt.gpus, pt.comm_ms,
                         pt.step_ms, pt.speedup, pt.efficiency * 100.0);
  }
  out << std::flush;
}

void print_pairs(const PairsResult& p, const std::vector<Finding>& findings, std::ostream& out) {
  if (p.nodes.size > 1) {
    out << fmt::format("#\n# Node pairs: send/recv bandwidth at {} (GB/s, all {} rails at once), row sends to column\n",
                       format_size(p.bytes), p.ranks_per_node);
    matrix_table(p.nodes, p.hosts, true, out);
    smaller_messages_line(p.nodes, p.hosts, out);
    // Plain units: a matrix whose slowest link takes 1000 us or more reads in ms.
    double slowest = 0;
    for (int i = 0; i < p.nodes.size; ++i)
      for (int j = 0; j < p.nodes.size; ++j)
        if (const std::optional<double>& v = p.nodes.lat(i, j); i != j && v) slowest = std::max(slowest, *v);
    const bool ms = slowest >= 1000;
    out << fmt::format("# Node pairs: latency at {} ({}, the fastest exchange)\n", format_size(p.small_bytes),
                       ms ? "ms" : "us");
    matrix_table(p.nodes, p.hosts, false, out, ms ? 1000 : 1);
  }
  if (p.ranks_per_node > 1) {
    std::vector<std::string> labels;
    for (int l = 0; l < p.ranks_per_node; ++l) labels.push_back(fmt::format("local{}", l));
    for (std::size_t n = 0; n < p.intra.size(); ++n) {
      out << fmt::format("# Within {}: send/recv bandwidth at {} (GB/s)\n", p.hosts[n], format_size(p.bytes));
      matrix_table(p.intra[n], labels, true, out);
      smaller_messages_line(p.intra[n], labels, out);
    }
  }
  if (p.nodes.size > 1) {
    out << "# Findings:\n";
    if (findings.empty()) out << "#   none: no node or link stands out from the others\n";
    for (const Finding& f : findings) out << "#   " << f.message << '\n';
  }
  out << std::flush;
}

}  // namespace fabricbench
