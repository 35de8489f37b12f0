#include "fabricbench/topology/topology_probe.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/topology/node_config.hpp"
#include "fabricbench/topology/pcie_probe.hpp"

namespace fabricbench {
namespace {

// Active NVLink links from GPU a straight to GPU b; through NVSwitches, the
// links both have to switches (every pair is connected), as nvidia-smi counts.
int nvlinks_between(const GpuInfo& a, const GpuInfo& b) {
  int direct = 0;
  int a_switch = 0;
  int b_switch = 0;
  for (const NvLink& l : a.nvlinks) {
    if (l.active != true) continue;
    if (l.remote_pci == b.pci_bus_id) ++direct;
    if (l.remote_kind == LinkPeer::nvswitch) ++a_switch;
  }
  for (const NvLink& l : b.nvlinks) {
    if (l.active == true && l.remote_kind == LinkPeer::nvswitch) ++b_switch;
  }
  return direct > 0 ? direct : std::min(a_switch, b_switch);
}

void compute_matrices(const ProbeRoots& roots, NodeTopology& node) {
  const std::size_t n = node.gpus.size();
  node.gpu_matrix.assign(n, std::vector<std::string>(n, "?"));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        node.gpu_matrix[i][j] = "X";
        continue;
      }
      if (const int links = nvlinks_between(node.gpus[i], node.gpus[j]); links > 0) {
        node.gpu_matrix[i][j] = fmt::format("NV{}", links);
      } else if (const auto path =
                     pci_path(roots, node.gpus[i].pci_bus_id, node.gpus[j].pci_bus_id, node.host.numa_nodes)) {
        node.gpu_matrix[i][j] = label(*path);
      }
    }
  }
  const bool any_rdma = std::any_of(node.nics.begin(), node.nics.end(),
                                    [](const NicInfo& nic) { return is_rdma(nic) && nic.pci_address; });
  node.nic_matrix.assign(n, std::vector<std::string>(node.nics.size(), "?"));
  node.nearest_nic.clear();
  for (std::size_t i = 0; i < n; ++i) {
    GpuNicAffinity best;
    best.gpu = node.gpus[i].pci_bus_id;
    for (std::size_t k = 0; k < node.nics.size(); ++k) {
      const NicInfo& nic = node.nics[k];
      if (!nic.pci_address) continue;
      const auto path = pci_path(roots, node.gpus[i].pci_bus_id, *nic.pci_address, node.host.numa_nodes);
      if (path) node.nic_matrix[i][k] = label(*path);
      // The nearest NIC that can carry GPU traffic: RDMA ones when there are any.
      if (!path || (any_rdma && !is_rdma(nic))) continue;
      if (!best.path || *path < *best.path) {
        best.path = path;
        best.nic = nic.name;
      }
    }
    node.nearest_nic.push_back(best);
  }
}

}  // namespace

NodeTopology probe_node(const ProbeRoots& roots, GpuInfoSource& source, bool measure) {
  NodeTopology node;
  node.host = probe_host(roots, node.notes);
  std::vector<GpuInfo> pci_gpus = probe_pci_gpus(roots, node.notes);
  node.nics = probe_nics(roots, node.notes);
  node.gpudirect = probe_gpudirect(roots, node.notes);

  GpuReport report = source.query();
  if (report.driver_version) node.host.gpu_driver = report.driver_version;
  node.notes.insert(node.notes.end(), report.notes.begin(), report.notes.end());
  if (report.unavailable.empty()) {
    std::map<std::string, const GpuInfo*> by_bus;
    for (const GpuInfo& g : pci_gpus) by_bus[g.pci_bus_id] = &g;
    for (GpuInfo& gpu : report.gpus) {
      gpu.pci_bus_id = normalize_bus_id(gpu.pci_bus_id);
      const auto it = by_bus.find(gpu.pci_bus_id);
      if (it == by_bus.end()) continue;
      const GpuInfo& seen = *it->second;
      if (seen.numa_node) gpu.numa_node = seen.numa_node;
      if (seen.pcie.current_gen) gpu.pcie.current_gen = seen.pcie.current_gen;
      if (seen.pcie.max_gen) gpu.pcie.max_gen = seen.pcie.max_gen;
      if (seen.pcie.current_width) gpu.pcie.current_width = seen.pcie.current_width;
      if (seen.pcie.max_width) gpu.pcie.max_width = seen.pcie.max_width;
    }
    node.gpus = std::move(report.gpus);
    node.p2p_access = std::move(report.p2p_access);
    node.p2p_rank = std::move(report.p2p_rank);
  } else {
    node.gpu_status = fmt::format("no GPU visible ({})", report.unavailable);
    // The PCI facts of GPUs CUDA cannot use are still worth reporting.
    node.gpus = std::move(pci_gpus);
  }
  compute_matrices(roots, node);
  node.pcie_bridges = probe_pcie_bridges(roots, node.gpus, node.notes);
  node.iommu = probe_iommu(roots, node.gpus, node.notes);
  node.virtualization = probe_virtualization(roots, node.gpus, node.notes);

  if (measure && node.gpu_status.empty() && !node.gpus.empty()) {
    GpuBandwidth bw = source.measure();
    node.method = bw.method;
    node.notes.insert(node.notes.end(), bw.notes.begin(), bw.notes.end());
    for (GpuInfo& gpu : node.gpus) {
      if (!gpu.index || *gpu.index < 0) continue;
      const auto i = static_cast<std::size_t>(*gpu.index);
      if (i < bw.h2d_gbs.size()) gpu.h2d_gbs = bw.h2d_gbs[i];
      if (i < bw.d2h_gbs.size()) gpu.d2h_gbs = bw.d2h_gbs[i];
      if (i < bw.local_copy_gbs.size()) gpu.local_copy_gbs = bw.local_copy_gbs[i];
    }
    node.d2d_gbs = std::move(bw.d2d_gbs);
    // Host copies at once, by the groups that share a link.
    if (const std::vector<CopyGroup> groups = contention_groups(node); !groups.empty()) {
      ConcurrentCopies copies = source.measure_concurrent(groups);
      node.host_copy_contention = std::move(copies.copies);
      node.contention_method = std::move(copies.method);
      node.notes.insert(node.notes.end(), copies.notes.begin(), copies.notes.end());
    }
  }
  return node;
}

ClusterTopology gather_topology(const Comm& world, const Layout& layout, const TopologyOptions& options) {
  std::string mine;
  if (layout.local_rank == 0) {
    const std::unique_ptr<GpuInfoSource> source = make_system_gpu_source();
    nlohmann::ordered_json j = node_to_json(probe_node(options.roots, *source, options.measure));
    j["node_index"] = layout.node;
    mine = exchange_text(std::move(j));
  }
  ClusterTopology cluster = cluster_from_records(world.allgather(mine), layout);
  if (options.configuration) {
    const ConfigInputs inputs{options.roots, process_environment(), memlock_limit(options.roots), runtime_versions()};
    cluster.configuration = gather_configuration(world, layout, inputs, cluster.notes);
  }
  return cluster;
}

ClusterTopology cluster_from_records(const std::vector<std::string>& records, const Layout& layout) {
  std::vector<NodeTopology> nodes(static_cast<std::size_t>(layout.nodes));
  std::vector<Anomaly> unreadable;
  for (std::size_t rank = 0; rank < records.size(); ++rank) {
    const std::string& text = records[rank];
    if (text.empty()) continue;
    // Without MPI another process wrote this: bounded, and the index checked
    // in its own type before it is used.
    nlohmann::json j;
    bool parsed = true;
    try {
      j = parse_exchange_text(text, "topology");
    } catch (const UsageError&) {
      parsed = false;
    }
    std::optional<int> index;
    if (parsed && j.is_object() && j.contains("node_index")) {
      index = integer_value<int>(j["node_index"]);
      if (index && (*index < 0 || *index >= layout.nodes)) index.reset();
    }
    if (index) {
      nodes[static_cast<std::size_t>(*index)] = node_from_json(j);
      continue;
    }
    // Not dropped in silence: the node is named, from the layout, and kept
    // with what is known of it (its name).
    const int node = rank < layout.node_of_rank.size() ? layout.node_of_rank[rank] : -1;
    const std::string host = node >= 0 && static_cast<std::size_t>(node) < layout.hostnames.size()
                                 ? layout.hostnames[static_cast<std::size_t>(node)]
                                 : fmt::format("rank {}", rank);
    if (node >= 0 && node < layout.nodes) nodes[static_cast<std::size_t>(node)].host.hostname = host;
    unreadable.push_back({"topology_unreadable", host, "",
                          fmt::format("the topology record of node {} (rank {}) {}", node, rank,
                                      parsed ? "names no node of this run" : "is not JSON")});
  }
  ClusterTopology cluster;
  cluster.nodes = std::move(nodes);
  cluster.anomalies = std::move(unreadable);
  return cluster;
}

}  // namespace fabricbench
