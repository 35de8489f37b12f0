#pragma once
// Judgements inside one node: PCIe switches shared by more devices than
// their peers', host copies that slow down when GPUs copy at once, ACS and
// the IOMMU in the way of peer traffic, peer-capable pairs that copy at
// host-path speed, and what of the node is virtual. Pure logic over
// records, tested on fixture trees and recorded figures.

#include <optional>
#include <string>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// When the GPUs of `copy` get less than `slow_fraction` (topology_analysis.hpp)
// of their alone rate each (medians over the group) while copying at once,
// the sentence that says so, e.g. "GPUs 0-3 share one Gen5 x16 uplink (PCIe
// switch 0000:41:00.0): 4 at once get 13.8 GB/s each of 54.0 alone,
// host-to-device"; `shared` is the bridge the group shares, if any. Empty
// when they keep up, or fewer than two GPUs have both figures.
std::optional<std::string> judge_contention(const ConcurrentCopy& copy, const PcieBridge* shared);

// One line on what of the node is virtual (a VM, vGPUs, MIG slices, CUDA
// devices that share one physical GPU); empty when nothing is.
std::string virtualization_summary(const NodeTopology& node);

// Adds the anomalies inside each node: "pcie_oversubscribed" (a switch whose
// downstream-to-uplink ratio exceeds the lowest of its peers', same GPU
// model, and 1:1), "pcie_contention" (judge_contention), "acs_redirect"
// (bridges between GPUs with P2P redirect on), "iommu_translated" (a GPU
// node whose GPUs' IOMMU domains translate DMA), "p2p_through_host" (CUDA
// says peer access, but the copy runs at host-path speed: over NVLink no
// faster than 1.25x one PCIe hop, over PCIe below slow_fraction of it; one
// hop is the lower of the sender's device-to-host and the receiver's
// host-to-device rate).
void check_inside_nodes(ClusterTopology& cluster);

}  // namespace fabricbench
