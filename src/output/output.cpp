#include "fabricbench/output/output.hpp"

#include <string>

#include "fabricbench/core/safe_file.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/results/result_csv.hpp"

namespace fabricbench {

void check_writable(const std::string& path, const std::string& flag) { check_output_target(path, flag); }

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& produce) {
  write_file_safely(path, produce);
}

std::string section_csv_path(const std::string& csv_path, const std::string& section) {
  const std::string ext = ".csv";
  const bool has_ext =
      csv_path.size() > ext.size() && csv_path.compare(csv_path.size() - ext.size(), ext.size(), ext) == 0;
  return (has_ext ? csv_path.substr(0, csv_path.size() - ext.size()) : csv_path) + "." + section + ext;
}

std::vector<NamedOutput> csv_outputs(const std::string& csv_path) {
  if (csv_path.empty()) return {};
  std::vector<NamedOutput> outputs{{"--csv", csv_path}};
  for (const std::string& section : csv_section_names())
    outputs.push_back({"--csv (" + section + " section)", section_csv_path(csv_path, section)});
  return outputs;
}

void write_section_csv_files(const std::string& csv_path, const RunResult& result) {
  for (const CsvTable& table : section_csv_tables(result))
    write_file_atomically(section_csv_path(csv_path, table.section),
                          [&table](std::ostream& out) { write_csv_table(table, out); });
}

}  // namespace fabricbench
