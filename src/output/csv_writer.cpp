#include <ostream>
#include <string>

#include "fabricbench/core/text_safety.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/results/result_csv.hpp"

namespace fabricbench {
namespace {

// RFC 4180 quoting where needed, formulas and control characters defused.
std::string cell(const std::string& text) { return csv_safe_cell(text); }

void write_row(const std::vector<CsvCell>& row, std::ostream& out) {
  for (std::size_t i = 0; i < row.size(); ++i)
    out << (i ? "," : "") << (row[i].is_text ? cell(row[i].text) : row[i].text);
  out << '\n';
}

}  // namespace

void write_csv_table(const CsvTable& table, std::ostream& out) {
  for (std::size_t i = 0; i < table.columns.size(); ++i) out << (i ? "," : "") << table.columns[i];
  out << '\n';
  for (const std::vector<CsvCell>& row : table.rows) write_row(row, out);
}

void write_csv(const RunResult& result, std::ostream& out) {
  const std::vector<std::string> columns = record_csv_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << '\n';
  for (const SweepRecord& r : result.records) write_row(record_csv_row(result.run, r), out);
}

}  // namespace fabricbench
