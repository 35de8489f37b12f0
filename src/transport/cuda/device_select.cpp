#include "fabricbench/transport/cuda/device_select.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

namespace fabricbench {
namespace {

std::optional<int> parse_rank(const std::string& text) {
  int value = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> process_getenv(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

DeviceSelection select_device(const DeviceSelectionInput& in) {
  DeviceSelection out;
  out.local_rank = in.group_local_rank;
  out.local_rank_source = "shared-memory group";
  if (in.getenv) {
    for (const char* key : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
      const std::optional<std::string> text = in.getenv(key);
      if (!text) continue;
      const std::optional<int> value = parse_rank(*text);
      if (!value) {
        out.error = fmt::format("{}='{}' is not a local rank (a number from 0)", key, *text);
        return out;
      }
      out.local_rank = *value;
      out.local_rank_source = key;
      break;
    }
  }
  if (in.visible_devices <= 0) {
    out.error = "no CUDA device is visible";
    return out;
  }
  const int ranks_on_node = std::max({in.group_local_ranks, out.local_rank + 1, 1});
  if (ranks_on_node > in.visible_devices) {
    // One visible device per process is also how launchers isolate GPUs
    // (CUDA_VISIBLE_DEVICES per task): only the devices' UUIDs tell sharing
    // from isolation, so the transport compares them.
    if (in.visible_devices == 1 && !in.allow_shared) {
      out.device = 0;
      out.compare_uuids = true;
      return out;
    }
    if (!in.allow_shared) {
      out.error = fmt::format(
          "{} ranks on this node but {} visible GPU{}: run one rank per GPU, or pass --allow-shared-gpu "
          "(a functional check only; ranks sharing a GPU measure each other)",
          ranks_on_node, in.visible_devices, in.visible_devices == 1 ? "" : "s");
      return out;
    }
    out.shared = true;
  }
  out.device = out.local_rank % in.visible_devices;
  return out;
}

}  // namespace fabricbench
