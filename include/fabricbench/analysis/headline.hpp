#pragma once
// The decision first: the lines a run's summary (terminal and HTML) opens
// with under its verdict, each a plain answer a renter decides on. Peak bus
// bandwidth per op and its share of the reference; scaling across node
// counts as the ladder judged it; the nodes and links named slow; the cost;
// and what the run did not measure or the budget cut, named. Pure logic
// over a judged run (analysis/report.hpp).

#include <string>
#include <vector>

#include "fabricbench/analysis/report.hpp"

namespace fabricbench {

struct HeadlineLine {
  std::string topic;  // "bandwidth", "scaling", "bad nodes", "cost", "not measured"
  std::string text;
};

std::vector<HeadlineLine> headline(const ReportRun& run);

// A bandwidth as people read it: "180 GB/s", "12.4 GB/s", "0.512 GB/s".
std::string gbs_text(double gbs);

}  // namespace fabricbench
