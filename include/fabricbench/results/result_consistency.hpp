#pragma once
// What a schema cannot say about a result file: that its parts agree. The
// reader runs these checks on every file before any writer sees it, so a
// forged or corrupted file is refused with the field named (exit 2) instead
// of indexing outside an array or printing a size the file does not hold.

#include <cstddef>

#include "fabricbench/results/result.hpp"

namespace fabricbench {

// The bound on the pair matrices a file may make the reader allocate is
// with them (records/pairs.hpp: max_matrix_cells, check_matrix_sizes).

// Throws UsageError naming the first field that disagrees with another:
//   run.nodes vs run.hostnames and run.ranks_per_node, run.ranks vs the
//   sum of run.ranks_per_node; pairs.hosts vs run.nodes; pairs.intra_node
//   vs pairs.hosts; node indices in scaling groups and findings vs the
//   nodes there are.
void check_consistency(const RunResult& result);

}  // namespace fabricbench
