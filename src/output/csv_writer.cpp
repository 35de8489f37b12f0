#include <ostream>
#include <string>

#include "fabricbench/model/result_csv.hpp"
#include "fabricbench/output/writers.hpp"

namespace fabricbench {
namespace {

// RFC 4180 quoting, only where needed.
std::string cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

}  // namespace

void write_csv(const RunResult& result, std::ostream& out) {
  const std::vector<std::string> columns = record_csv_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << '\n';
  for (const SweepRecord& r : result.records) {
    const std::vector<CsvCell> row = record_csv_row(result.run, r);
    for (std::size_t i = 0; i < row.size(); ++i)
      out << (i ? "," : "") << (row[i].is_text ? cell(row[i].text) : row[i].text);
    out << '\n';
  }
}

}  // namespace fabricbench
