#include "fabricbench/records/nccl_usage.hpp"

namespace fabricbench {

std::string_view path_family(std::string_view via) { return via.substr(0, via.find('/')); }

std::string_view path_network(std::string_view via) {
  if (path_family(via) != "NET") return {};
  via.remove_prefix(4);
  return via.substr(0, via.find('/'));
}

bool path_gdr(std::string_view via) {
  return path_family(via) == "NET" && via.find("/GDRDMA") != std::string_view::npos;
}

}  // namespace fabricbench
