#include "fabricbench/app/guides.hpp"

#include <algorithm>

namespace fabricbench {

std::string guide_title(const Guide& guide) {
  std::string_view line = guide.text.substr(0, guide.text.find('\n'));
  if (line.substr(0, 2) == "# ") line.remove_prefix(2);
  std::string title(line);
  title.erase(std::remove(title.begin(), title.end(), '`'), title.end());
  return title;
}

}  // namespace fabricbench
