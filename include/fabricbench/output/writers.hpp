#pragma once
// Writers only format records, each to an injected std::ostream.

#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabricbench/model/result.hpp"

namespace fabricbench {

// The JSON document of a run; schema "fabricbench.result/1", stable key order.
inline constexpr const char* result_schema_id = "fabricbench.result/1";
nlohmann::ordered_json to_json(const RunResult& result);
void write_json(const RunResult& result, std::ostream& out);

// CSV: a header row, one row per record, plain numbers, units in the column
// names; empty cells for what was not measured.
void write_csv(std::span<const SweepRecord> records, std::ostream& out);

// The ladder, the pair matrix and the findings as terminal tables.
void write_ladder(const ScaleResult& scaling, std::ostream& out);
void write_pairs(const PairsResult& pairs, const std::vector<Finding>& findings, std::ostream& out);

// The terminal table, nccl-tests-like: one row per point with out-of-place and
// in-place side by side.
class TableWriter {
 public:
  explicit TableWriter(std::ostream& out) : out_(&out) {}
  void point(std::span<const SweepRecord> placements);
  void summary(const RunResult& result);

 private:
  std::ostream* out_;
  std::string current_header_;
};

}  // namespace fabricbench
