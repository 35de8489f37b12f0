#pragma once
// Which GPU a rank drives: pure logic, decided before the first CUDA call
// that would create a context, and testable without a GPU.
//
// The local rank is the launcher's when it says (OMPI_COMM_WORLD_LOCAL_RANK,
// SLURM_LOCALID, LOCAL_RANK, in that order: the launcher bound CPUs and
// devices by it), otherwise the rank within the shared-memory group
// (MPI_COMM_TYPE_SHARED). Rank i on a node drives visible device i. More
// ranks on a node than visible devices is an error unless sharing is allowed
// (a functional check only: ranks sharing a GPU measure each other), except
// that ranks seeing exactly one device each may have been given distinct GPUs
// by the launcher: then the caller compares device UUIDs.

#include <functional>
#include <optional>
#include <string>

namespace fabricbench {

struct DeviceSelectionInput {
  int group_local_rank = 0;   // rank within the node's shared-memory group
  int group_local_ranks = 1;  // ranks in that group
  int visible_devices = 0;    // cudaGetDeviceCount
  bool allow_shared = false;  // --allow-shared-gpu
  // Reads an environment variable (nullopt when unset); injected for tests.
  std::function<std::optional<std::string>(const char*)> getenv;
};

struct DeviceSelection {
  int device = -1;  // index among the visible devices; -1 on error
  int local_rank = 0;
  std::string local_rank_source;  // "OMPI_COMM_WORLD_LOCAL_RANK", ..., or "shared-memory group"
  bool shared = false;            // another rank of the node drives the same device
  // Several ranks each see one device: sharing is decided by comparing the
  // devices' UUIDs across the node (an error unless allowed).
  bool compare_uuids = false;
  std::string error;  // non-empty: why no device was chosen (a usage error)
};

DeviceSelection select_device(const DeviceSelectionInput& input);

// The process environment, for DeviceSelectionInput::getenv.
std::optional<std::string> process_getenv(const char* name);

}  // namespace fabricbench
