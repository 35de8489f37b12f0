#include "fabricbench/records/storage.hpp"

namespace fabricbench {

std::string join_paths(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace fabricbench
