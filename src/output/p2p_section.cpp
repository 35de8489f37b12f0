#include "fabricbench/output/sections.hpp"

#include <ostream>
#include <string>

#include <fmt/format.h>

namespace fabricbench {
namespace {

std::string_view column_title(P2PTest test) {
  switch (test) {
    case P2PTest::latency:
      return "latency";
    case P2PTest::bandwidth:
      return "bw";
    case P2PTest::bibandwidth:
      return "bibw";
  }
  return "?";
}

}  // namespace

void print_p2p_sweep_header(const P2PSweepResult& sweep, std::span<const P2PTest> tests, std::ostream& out) {
  out << "#\n";
  out << fmt::format("# Point-to-point sweep: rank {} ({}) <-> rank {} ({}); bw and bibw: {} messages in flight\n",
                     sweep.ranks.at(0), sweep.hosts.at(0), sweep.ranks.at(1), sweep.hosts.at(1), sweep.window);
  out << "#\n";
  std::string titles = fmt::format("# {:>12}", "size");
  std::string units = fmt::format("# {:>12}", "(B)");
  for (const P2PTest t : tests) {
    titles += fmt::format(" {:>10}", column_title(t));
    units += fmt::format(" {:>10}", t == P2PTest::latency ? "(us)" : "(GB/s)");
  }
  out << titles << fmt::format(" {:>8}\n", "#wrong");
  out << units << '\n';
}

void print_p2p_sweep_row(std::span<const P2PRecord> records, std::ostream& out) {
  if (records.empty()) return;
  std::string row = fmt::format("  {:>12}", records.front().bytes);
  for (const P2PRecord& r : records)
    row += fmt::format(" {:>10.2f}", r.test == P2PTest::latency ? r.latency_us : r.bandwidth_gbs);
  const auto& wrong = records.front().wrong;
  row += fmt::format(" {:>8}", wrong ? std::to_string(*wrong) : std::string("N/A"));
  out << row << '\n' << std::flush;
}

}  // namespace fabricbench
