#include <ostream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/output/sections.hpp"

namespace fabricbench {
namespace {

std::string gbs(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }
std::string ratio(const std::optional<double>& v) { return v ? fmt::format("{:.2f}:1", *v) : "-"; }

std::string hosts_text(const std::vector<std::string>& hosts) {
  std::string text;
  for (const std::string& h : hosts) text += (text.empty() ? "" : " ") + h;
  return text;
}

}  // namespace

void print_islands(const IslandsResult& r, std::ostream& out) {
  out << "#\n# Latency islands (pairs closer to each other than to the rest)\n";
  for (const LatencyIsland& island : r.islands)
    out << fmt::format("  {:<4} {:>3} node{} {}\n", island.name, island.nodes.size(),
                       island.nodes.size() == 1 ? " " : "s", hosts_text(island.hosts));
  out << "# " << r.message << '\n';
}

void print_bisection(const BisectionResult& b, std::ostream& out) {
  out << fmt::format(
      "#\n# Bisection at {} (seed {}; half the nodes exchange with the other half at once, then the "
      "first pairs alone)\n",
      format_size(b.bytes), b.seed);
  out << fmt::format("# {:>7} {:>5} {:>14} {:>14} {:>16}\n", "halving", "pairs", "alone (GB/s)", "loaded (GB/s)",
                     "oversubscription");
  for (std::size_t k = 0; k < b.halvings.size(); ++k) {
    const HalvingResult& h = b.halvings[k];
    out << fmt::format("  {:>7} {:>5} {:>14.3f} {:>14.3f} {:>16}\n", k + 1, h.pairs.size(), h.isolated_gbs,
                       h.loaded_gbs, ratio(h.oversubscription));
    for (const BisectionPair& p : h.pairs)
      out << fmt::format("  {:>7} {} <-> {}: loaded {} GB/s, alone {} GB/s\n", "", p.host_a, p.host_b,
                         gbs(p.loaded_gbs), gbs(p.isolated_gbs));
  }
  out << "# " << b.message << '\n';
}

void print_storage(const StorageResult& s, std::ostream& out) {
  out << fmt::format("#\n# Storage in {} ({}{}; {} file{} of {}, written then read back, all at once)\n", s.path,
                     s.io_mode == "direct" ? "O_DIRECT" : "buffered", s.io_note.empty() ? "" : ": " + s.io_note,
                     s.files_written, s.files_written == 1 ? "" : "s", format_size(s.file_bytes));
  out << fmt::format("# {:<20} {:>5} {:>12} {:>10} {:>10} {:>12} {:>12}\n", "node", "files", "bytes", "write (s)",
                     "read (s)", "write GB/s", "read GB/s");
  for (const StorageNode& n : s.nodes)
    out << fmt::format("  {:<20} {:>5} {:>12} {:>10.3f} {:>10.3f} {:>12.3f} {:>12.3f}{}\n", n.host, n.files, n.bytes,
                       n.write_s, n.read_s, n.write_gbs, n.read_gbs,
                       s.slowest_write_node == n.node || s.slowest_read_node == n.node ? "  slowest" : "");
  out << fmt::format("  {:<20} {:>5} {:>12} {:>10.3f} {:>10.3f} {:>12.3f} {:>12.3f}\n", "all", s.files_written,
                     s.bytes_written, s.write_s, s.read_s, s.write_gbs, s.read_gbs);
  out << fmt::format("# files removed afterwards: {} of {}{}\n", s.files_removed, s.files_written,
                     s.wrong_blocks > 0 ? fmt::format("; {} blocks read back wrong", s.wrong_blocks) : "");
  out << "# " << s.message << '\n';
}

}  // namespace fabricbench
