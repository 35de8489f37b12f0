#pragma once
// RunConfig: everything a run needs, decided once from the command line and
// passed down. No globals.

#include <cstddef>
#include <string>
#include <vector>

#include "fabricbench/types.hpp"

namespace fabricbench {

enum class TransportChoice { automatic, nccl, mpi };
enum class InPlaceChoice { both, only, no };
enum class Command { run, sweep, version };

struct IterationPolicy {
  int warmup = 5;
  int fixed_iters = 0;        // > 0: exactly this many timed iterations
  double min_time_ms = 20.0;  // adaptive: fill this budget per size and placement
  int min_iters = 5;
  int max_iters = 10000;
};

struct RunConfig {
  Command command = Command::run;
  TransportChoice transport = TransportChoice::automatic;
  std::vector<std::size_t> sizes;  // bytes, ascending, before per-dtype alignment checks
  std::vector<Op> ops{Op::allreduce, Op::allgather, Op::sendrecv};
  std::vector<DType> dtypes{DType::float32};
  std::vector<RedOp> redops{RedOp::sum};
  int root = 0;
  IterationPolicy iterations;
  bool check = true;
  InPlaceChoice inplace = InPlaceChoice::both;
  std::string json_path;
  std::string csv_path;
  bool quiet = false;
  std::vector<std::string> command_line;
};

std::vector<Placement> placements(InPlaceChoice choice);

}  // namespace fabricbench
