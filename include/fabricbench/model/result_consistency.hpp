#pragma once
// What a schema cannot say about a result file: that its parts agree. The
// reader runs these checks on every file before any writer sees it, so a
// forged or corrupted file is refused with the field named (exit 2) instead
// of indexing outside an array or printing a size the file does not hold.

#include <cstddef>

#include "fabricbench/model/result.hpp"

namespace fabricbench {

// The most pair-matrix cells a file may make the reader allocate (nodes^2
// plus each node's ranks^2): a 2,048-node matrix, 64 MiB of memory. Beyond
// it a few bytes of JSON ("ranks_per_node": 2147483647) would cost
// gigabytes.
inline constexpr std::size_t max_matrix_cells = std::size_t{1} << 22;

// Throws UsageError "pairs: a matrix of N nodes and M x R ranks is larger
// than ..." before the matrices are allocated.
void check_matrix_sizes(std::size_t nodes, std::size_t intra_nodes, int ranks_per_node);

// Throws UsageError naming the first field that disagrees with another:
//   run.nodes vs run.hostnames and run.ranks_per_node, run.ranks vs the
//   sum of run.ranks_per_node; pairs.hosts vs run.nodes; pairs.intra_node
//   vs pairs.hosts; node indices in scaling groups and findings vs the
//   nodes there are.
void check_consistency(const RunResult& result);

}  // namespace fabricbench
