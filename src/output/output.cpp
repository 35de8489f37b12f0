#include "fabricbench/output/output.hpp"

#include "fabricbench/core/safe_file.hpp"

namespace fabricbench {

void check_writable(const std::string& path, const std::string& flag) { check_output_target(path, flag); }

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& produce) {
  write_file_safely(path, produce);
}

}  // namespace fabricbench
