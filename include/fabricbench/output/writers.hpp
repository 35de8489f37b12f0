#pragma once
// Writers only format records, each to an injected std::ostream. The JSON
// form of a result is the model's (model/result_json.hpp).

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "fabricbench/model/result.hpp"
#include "fabricbench/model/result_json.hpp"

namespace fabricbench {

// CSV: a header row, one row per sweep record with the run's identity
// first; the columns are the JSON's names (model/result_csv.hpp), plain
// numbers, empty cells for what was not measured.
void write_csv(const RunResult& result, std::ostream& out);

// The ladder, the pair matrix and the findings as terminal tables.
void write_ladder(const ScaleResult& scaling, std::ostream& out);
// The GPU-count ladder inside each node, its projection and job costs.
void write_gpu_ladder(const GpuLadderResult& ladder, std::ostream& out);
void write_pairs(const PairsResult& pairs, const std::vector<Finding>& findings, std::ostream& out);

// The model-parallel projection (--tp, --pp) as terminal lines.
void write_model_parallel(const ModelParallelResult& mp, std::ostream& out);

// Latency islands, the bisection test and the storage test as terminal
// tables (output/placement_writer.cpp).
void write_islands(const IslandsResult& r, std::ostream& out);
void write_bisection(const BisectionResult& b, std::ostream& out);
void write_storage(const StorageResult& s, std::ostream& out);

// The terminal table is a printer: TablePrinter in printer.hpp.

}  // namespace fabricbench
