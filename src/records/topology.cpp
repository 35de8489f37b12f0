#include "fabricbench/records/topology.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fabricbench {

const char* label(PciPath path) {
  switch (path) {
    case PciPath::pix:
      return "PIX";
    case PciPath::pxb:
      return "PXB";
    case PciPath::phb:
      return "PHB";
    case PciPath::node:
      return "NODE";
    case PciPath::sys:
      return "SYS";
  }
  return "?";
}

const char* describe(PciPath path) {
  switch (path) {
    case PciPath::pix:
    case PciPath::pxb:
      return "same PCIe switch";
    case PciPath::phb:
      return "same PCIe root complex";
    case PciPath::node:
      return "same NUMA node";
    case PciPath::sys:
      return "across sockets";
  }
  return "unknown";
}

std::string gpu_list(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(indices[i])
                           : fmt::format("{}{}{}", indices[i], j == i + 1 ? ", " : "-", indices[j]));
    i = j + 1;
  }
  return fmt::format("GPU{} {}", indices.size() == 1 ? "" : "s", fmt::join(parts, ", "));
}

std::optional<double> pcie_lane_gbs(int gen) {
  switch (gen) {
    case 1:
      return 2.5 * 8 / 10 / 8;
    case 2:
      return 5.0 * 8 / 10 / 8;
    case 3:
      return 8.0 * 128 / 130 / 8;
    case 4:
      return 16.0 * 128 / 130 / 8;
    case 5:
      return 32.0 * 128 / 130 / 8;
    case 6:
      return 64.0 * 242 / 256 / 8;
    default:
      return std::nullopt;
  }
}

}  // namespace fabricbench
