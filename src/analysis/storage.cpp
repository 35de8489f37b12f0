#include "fabricbench/analysis/storage.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {

void analyze_storage(StorageResult& r) {
  r.bytes_written = 0;
  r.bytes_read = 0;
  r.write_s = 0;
  r.read_s = 0;
  for (StorageNode& n : r.nodes) {
    n.write_gbs = n.write_s > 0 ? static_cast<double>(n.bytes) / n.write_s / 1e9 : 0;
    n.read_gbs = n.read_s > 0 ? static_cast<double>(n.bytes) / n.read_s / 1e9 : 0;
    r.bytes_written += n.bytes;
    r.write_s = std::max(r.write_s, n.write_s);
    r.read_s = std::max(r.read_s, n.read_s);
  }
  r.bytes_read = r.bytes_written - std::min(r.bytes_written, r.wrong_blocks * storage_block_bytes);
  r.write_gbs = r.write_s > 0 ? static_cast<double>(r.bytes_written) / r.write_s / 1e9 : 0;
  r.read_gbs = r.read_s > 0 ? static_cast<double>(r.bytes_written) / r.read_s / 1e9 : 0;
  r.slowest_write_node.reset();
  r.slowest_read_node.reset();
  const std::string mode = r.io_mode == "direct" ? "O_DIRECT" : "buffered, cache dropped";
  r.message = fmt::format("{} file{} of {} on {} node{} wrote {:.3f} GB/s and read {:.3f} GB/s together ({})",
                          r.files_written, r.files_written == 1 ? "" : "s", format_size(r.file_bytes), r.nodes.size(),
                          r.nodes.size() == 1 ? "" : "s", r.write_gbs, r.read_gbs, mode);
  if (r.nodes.size() >= 2) {
    std::vector<double> writes;
    std::vector<double> reads;
    for (const StorageNode& n : r.nodes) {
      writes.push_back(n.write_gbs);
      reads.push_back(n.read_gbs);
    }
    const auto slowest = [&r](double StorageNode::*field) {
      std::size_t at = 0;
      for (std::size_t i = 1; i < r.nodes.size(); ++i)
        if (r.nodes[i].*field < r.nodes[at].*field) at = i;
      return at;
    };
    const std::size_t w = slowest(&StorageNode::write_gbs);
    const std::size_t rd = slowest(&StorageNode::read_gbs);
    r.slowest_write_node = r.nodes[w].node;
    r.slowest_read_node = r.nodes[rd].node;
    r.message += fmt::format(
        "; slowest node to write {} ({:.3f} GB/s, median {:.3f}), to read {} ({:.3f} GB/s, "
        "median {:.3f})",
        r.nodes[w].host, r.nodes[w].write_gbs, median(writes), r.nodes[rd].host, r.nodes[rd].read_gbs, median(reads));
  }
  if (!r.files_left.empty())
    r.message += fmt::format("; not removed afterwards (delete by hand): {}", join_paths(r.files_left));
}

}  // namespace fabricbench
