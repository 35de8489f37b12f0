#pragma once
// Results are plain records: the sweep fills them, analysis reads them,
// writers only format them.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/pairs.hpp"
#include "fabricbench/scaling.hpp"
#include "fabricbench/topology.hpp"
#include "fabricbench/types.hpp"

namespace fabricbench {

// What the tool is: written into every result file.
struct ToolInfo {
  std::string version;
  std::string git;
  std::vector<std::string> transports;           // compiled in
  std::map<std::string, std::string> libraries;  // name -> version (built against / at run time)
};

// The price of the machines, as the person running the tool gave it (any
// currency): what the reports turn into the cost of the run and of training.
struct PriceInfo {
  std::optional<double> per_gpu_hour;  // per rank-hour: one rank drives one GPU
  std::optional<double> per_node_hour;
};

// Who ran where, and how.
struct RunInfo {
  std::string start_utc;  // ISO 8601, e.g. 2026-11-29T19:09:14Z
  std::vector<std::string> command_line;
  int ranks = 0;
  int nodes = 0;
  std::vector<int> ranks_per_node;     // by node index
  std::vector<std::string> hostnames;  // by node index
  std::string transport;
  std::map<std::string, std::string> environment;  // NCCL_*, UCX_*, OMPI_MCA_*, ...
  // nccl: one line per rank, "rank R: host GPU index name bus-id UUID (compute X.Y)".
  std::vector<std::string> devices;
  std::optional<PriceInfo> cost;  // when a price was given
};

// One measured placement of one sweep point. Times in microseconds.
struct Timing {
  double time_us = 0;      // mean over ranks of each rank's batch time / iters (the headline)
  double time_min_us = 0;  // fastest rank
  double time_max_us = 0;  // slowest rank
  double p50_us = 0;       // per-iteration times, each the mean over ranks
  double p99_us = 0;
  double cv = 0;
  double algbw_gbs = 0;  // bytes / time_us, GB = 1e9 bytes
  double busbw_gbs = 0;  // algbw * busbw_factor
  int iterations = 0;
  std::optional<std::uint64_t> wrong;  // summed over ranks; nullopt when not checked
};

// One (op, dtype, redop, placement, size) point.
struct SweepRecord {
  Op op = Op::allreduce;
  DType dtype = DType::float32;
  std::optional<RedOp> redop;  // reducing ops only
  std::optional<int> root;     // rooted ops only
  Placement placement = Placement::out_of_place;
  std::size_t bytes = 0;         // reported size S
  std::size_t count = 0;         // elements per call, as nccl-tests' count column
  int ranks = 0;                 // ranks in the group that ran it
  std::optional<Timing> timing;  // nullopt when skipped
  std::string skipped;           // why, when skipped
};

struct RunResult {
  ToolInfo tool;
  RunInfo run;
  std::vector<SweepRecord> records;
  std::optional<ScaleResult> scaling;       // the ladder, when it ran
  std::optional<PairsResult> pairs;         // the pair matrix, when it ran
  std::vector<Finding> findings;            // slow nodes and links from the pair matrix
  std::optional<ClusterTopology> topology;  // the topology probe, when it ran
  bool complete = false;                    // false while the run is still going (or was interrupted)
  std::optional<double> duration_s;         // wall time from start to the last save
  std::uint64_t wrong_total = 0;
  bool checked = false;
  std::string end_reason;  // why an incomplete run ended (timeout, signal); empty otherwise
};

// Every wrong element the result holds: the status total, or the sum of the
// records', ladder groups' and pair matrix's counts when that is more (a file
// read back may disagree with itself; the larger count wins, saturating).
inline std::uint64_t wrong_elements(const RunResult& result) {
  std::uint64_t parts = 0;
  const auto add = [&parts](std::uint64_t n) { parts = n > UINT64_MAX - parts ? UINT64_MAX : parts + n; };
  for (const SweepRecord& r : result.records)
    if (r.timing && r.timing->wrong) add(*r.timing->wrong);
  if (result.scaling)
    for (const LevelResult& l : result.scaling->levels)
      for (const GroupResult& g : l.groups) add(g.wrong);
  if (result.pairs) add(result.pairs->wrong);
  return std::max(parts, result.wrong_total);
}

// True when no element was found wrong. Unchecked data is not "ok": the JSON
// writes data_ok as null then, and reports say "not checked".
inline bool data_ok(const RunResult& result) { return wrong_elements(result) == 0; }

}  // namespace fabricbench
