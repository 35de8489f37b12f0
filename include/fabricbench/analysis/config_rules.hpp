#pragma once
// The configuration rules: what differs between the nodes' configuration
// records (versions, NCCL settings, limits, MTUs) and what a setting leaves
// out, as anomalies.

#include <cstdint>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// The smallest locked-memory limit that is not reported: RDMA registers
// (pins) host buffers, and NVIDIA's RDMA documentation asks for unlimited.
inline constexpr std::uint64_t memlock_floor_bytes = 1ULL << 30;

// The rules, over every record (one per node, or per group of ranks of a
// node). Kinds: "version_drift", "env_drift", "nccl_forced", "rdma_disabled",
// "nccl_device_missing", "memlock_low", "mtu_mismatch".
std::vector<Anomaly> check_configuration(const std::vector<NodeConfig>& configs);

}  // namespace fabricbench
