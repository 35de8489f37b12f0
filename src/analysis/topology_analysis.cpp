#include "fabricbench/analysis/topology_analysis.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/analysis/config_rules.hpp"
#include "fabricbench/analysis/node_analysis.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

// The most common value, ties to the smallest; empty for no values.
template <typename T>
std::optional<T> mode(const std::vector<T>& values) {
  std::map<T, int> counts;
  for (const T& v : values) ++counts[v];
  std::optional<T> best;
  int best_count = 0;
  for (const auto& [v, c] : counts) {
    if (c > best_count) {
      best = v;
      best_count = c;
    }
  }
  return best;
}

std::string model_of(const GpuInfo& gpu) { return gpu.name.value_or("unknown GPU"); }

std::string link_text(std::optional<int> gen, std::optional<int> width) {
  return fmt::format("Gen{} x{}", gen ? std::to_string(*gen) : "?", width ? std::to_string(*width) : "?");
}

std::string rate_text(double gbps) { return fmt::format("{:g} Gb/s", gbps); }

struct Context {
  ClusterTopology* cluster;
  void add(std::string kind, const std::string& host, std::string device, std::string detail) const {
    cluster->anomalies.push_back({std::move(kind), host, std::move(device), std::move(detail)});
  }
};

void compare_nodes(const Context& c, const std::vector<NodeTopology>& nodes) {
  if (nodes.size() < 2) return;
  std::vector<std::size_t> counts;
  std::vector<std::string> drivers;
  std::vector<std::string> models;
  for (const NodeTopology& n : nodes) {
    counts.push_back(n.gpus.size());
    if (n.host.gpu_driver) drivers.push_back(*n.host.gpu_driver);
    for (const GpuInfo& g : n.gpus) {
      if (g.name) models.push_back(*g.name);
    }
  }
  const auto usual_count = mode(counts);
  const auto usual_driver = mode(drivers);
  const auto usual_model = mode(models);
  for (const NodeTopology& n : nodes) {
    if (usual_count && n.gpus.size() != *usual_count)
      c.add("gpu_count", n.host.hostname, "", fmt::format("{} GPUs; most nodes have {}", n.gpus.size(), *usual_count));
    if (usual_driver && n.host.gpu_driver && *n.host.gpu_driver != *usual_driver)
      c.add("driver", n.host.hostname, "",
            fmt::format("driver {}; most nodes run {}", *n.host.gpu_driver, *usual_driver));
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const GpuInfo& g = n.gpus[i];
      if (usual_model && g.name && *g.name != *usual_model)
        c.add("gpu_model", n.host.hostname, gpu_label(g, i),
              fmt::format("{}; most GPUs are {}", *g.name, *usual_model));
    }
  }
}

void check_pcie(const Context& c, const std::vector<NodeTopology>& nodes) {
  std::map<std::string, int> best_gen;  // by model
  for (const NodeTopology& n : nodes) {
    for (const GpuInfo& g : n.gpus) {
      if (g.pcie.current_gen) best_gen[model_of(g)] = std::max(best_gen[model_of(g)], *g.pcie.current_gen);
    }
  }
  int idle_like = 0;
  for (const NodeTopology& n : nodes) {
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const GpuInfo& g = n.gpus[i];
      const PcieLink& p = g.pcie;
      std::vector<std::string> why;
      if (p.current_width && p.max_width && *p.current_width < *p.max_width)
        why.push_back(fmt::format("x{} of x{} lanes", *p.current_width, *p.max_width));
      const bool below_max = p.current_gen && p.max_gen && *p.current_gen < *p.max_gen;
      const int peers = best_gen[model_of(g)];
      if (below_max && *p.current_gen < peers) {
        why.push_back(fmt::format("Gen{} while its peers run Gen{}", *p.current_gen, peers));
      } else if (below_max) {
        ++idle_like;
      }
      if (!why.empty())
        c.add("pcie_downtrained", n.host.hostname, gpu_label(g, i),
              fmt::format("PCIe {} below its max {}: {}", link_text(p.current_gen, p.current_width),
                          link_text(p.max_gen, p.max_width), fmt::join(why, ", ")));
    }
  }
  if (idle_like > 0)
    c.cluster->notes.push_back(fmt::format(
        "{} GPU{} report a PCIe generation below their max, as all their peers do: GPUs lower the link speed "
        "when idle, so this is expected at rest",
        idle_like, idle_like == 1 ? "" : "s"));
}

void check_nvlink(const Context& c, const std::vector<NodeTopology>& nodes) {
  std::map<std::string, int> best_active;
  const auto active = [](const GpuInfo& g) {
    return static_cast<int>(
        std::count_if(g.nvlinks.begin(), g.nvlinks.end(), [](const NvLink& l) { return l.active == true; }));
  };
  for (const NodeTopology& n : nodes) {
    for (const GpuInfo& g : n.gpus) best_active[model_of(g)] = std::max(best_active[model_of(g)], active(g));
  }
  for (const NodeTopology& n : nodes) {
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const GpuInfo& g = n.gpus[i];
      const int up = active(g);
      const int peers = best_active[model_of(g)];
      if (up >= peers) continue;
      std::vector<int> down;
      for (const NvLink& l : g.nvlinks) {
        if (l.active == false) down.push_back(l.link);
      }
      c.add("nvlink_down", n.host.hostname, gpu_label(g, i),
            fmt::format("NVLink link{} {} down: {} of {} active, peers have {}", down.size() == 1 ? "" : "s",
                        down.empty() ? std::string("?") : fmt::format("{}", fmt::join(down, ", ")), up,
                        g.nvlinks.size(), peers));
    }
  }
}

void check_nics(const Context& c, const std::vector<NodeTopology>& nodes) {
  std::map<std::string, double> best_rate;  // by link layer, active ports
  for (const NodeTopology& n : nodes) {
    for (const NicInfo& nic : n.nics) {
      for (const NicPort& p : nic.ports) {
        if (p.state == "ACTIVE" && p.rate_gbps) {
          double& best = best_rate[p.link_layer.value_or("?")];
          best = std::max(best, *p.rate_gbps);
        }
      }
    }
  }
  for (const NodeTopology& n : nodes) {
    std::set<std::string> rdma_netdevs;
    for (const NicInfo& nic : n.nics) rdma_netdevs.insert(nic.netdevs.begin(), nic.netdevs.end());
    for (const NicInfo& nic : n.nics) {
      for (const NicPort& p : nic.ports) {
        const std::string device = fmt::format("{} port {}", nic.name, p.port);
        if (p.state && *p.state != "ACTIVE") {
          c.add("nic_port_down", n.host.hostname, device,
                fmt::format("state {}{}", *p.state, p.phys_state ? fmt::format(" (physical {})", *p.phys_state) : ""));
        } else if (p.state && p.rate_gbps) {
          const double best = best_rate[p.link_layer.value_or("?")];
          if (*p.rate_gbps < best)
            c.add("nic_slow", n.host.hostname, device,
                  fmt::format("{} while its peers run {}", rate_text(*p.rate_gbps), rate_text(best)));
        }
      }
      // A RoCE interface's state is its RDMA port's; physical Ethernet only.
      if (nic.kind == NicKind::ethernet && nic.bus == NicBus::pci && nic.operstate == "down" &&
          !rdma_netdevs.contains(nic.name))
        c.add("nic_port_down", n.host.hostname, nic.name, "operstate down");
    }
  }
}

void check_node_local(const Context& c, const std::vector<NodeTopology>& nodes) {
  for (const NodeTopology& n : nodes) {
    const bool has_rdma = std::any_of(n.nics.begin(), n.nics.end(), [](const NicInfo& nic) { return is_rdma(nic); });
    if (has_rdma && !n.gpus.empty() && n.gpudirect.status == GdrStatus::absent)
      c.add("gpudirect_rdma_absent", n.host.hostname, "",
            "RDMA NICs and GPUs, but neither nvidia_peermem nor nv_peer_mem is loaded");
    for (std::size_t i = 0; i < n.gpus.size() && i < n.nearest_nic.size(); ++i) {
      const GpuNicAffinity& a = n.nearest_nic[i];
      if (a.nic && a.path == PciPath::sys)
        c.add("gpu_no_local_nic", n.host.hostname, gpu_label(n.gpus[i], i),
              fmt::format("no NIC on its NUMA node; the nearest, {}, is across sockets (SYS)", *a.nic));
    }
  }
}

void check_bandwidth(const Context& c, const std::vector<NodeTopology>& nodes) {
  const auto check = [&](const char* kind, const char* what, std::optional<double> GpuInfo::*field) {
    std::map<std::string, std::vector<double>> by_model;
    for (const NodeTopology& n : nodes) {
      for (const GpuInfo& g : n.gpus) {
        if (g.*field) by_model[model_of(g)].push_back(*(g.*field));
      }
    }
    for (const NodeTopology& n : nodes) {
      for (std::size_t i = 0; i < n.gpus.size(); ++i) {
        const GpuInfo& g = n.gpus[i];
        const auto& peers = by_model[model_of(g)];
        if (!(g.*field) || peers.size() < 2) continue;
        const double m = median(peers);
        if (*(g.*field) < slow_fraction * m)
          c.add(kind, n.host.hostname, gpu_label(g, i),
                fmt::format("{} {:.1f} GB/s, below {:.0f}% of its peers' median {:.1f} GB/s", what, *(g.*field),
                            slow_fraction * 100, m));
      }
    }
  };
  check("h2d_slow", "host-to-device", &GpuInfo::h2d_gbs);
  check("d2h_slow", "device-to-host", &GpuInfo::d2h_gbs);
}

}  // namespace

std::string gpu_label(const GpuInfo& gpu, std::size_t position) {
  const int shown = gpu.index ? *gpu.index : static_cast<int>(position);
  return fmt::format("GPU {} ({})", shown, gpu.pci_bus_id);
}

std::string node_signature(const NodeTopology& node) {
  std::vector<std::string> parts;
  if (node.gpus.empty()) {
    parts.emplace_back("no GPU");
  } else {
    std::map<std::string, int> models;
    for (const GpuInfo& g : node.gpus) ++models[model_of(g)];
    std::vector<std::string> gpus;
    for (const auto& [m, k] : models) gpus.push_back(fmt::format("{}x {}", k, m));
    parts.push_back(fmt::format("{}, driver {}", fmt::join(gpus, " + "), node.host.gpu_driver.value_or("unknown")));
  }
  std::map<std::string, int> nics;
  for (const NicInfo& nic : node.nics) {
    std::optional<double> rate = nic.speed_gbps;
    for (const NicPort& p : nic.ports) {
      if (p.rate_gbps) rate = std::max(rate.value_or(0.0), *p.rate_gbps);
    }
    ++nics[fmt::format("{} {}", name(nic.kind), rate ? rate_text(*rate) : "speed unknown")];
  }
  std::vector<std::string> nic_parts;
  for (const auto& [what, k] : nics) nic_parts.push_back(fmt::format("{}x {}", k, what));
  parts.push_back(nic_parts.empty() ? std::string("no NIC") : fmt::format("{}", fmt::join(nic_parts, ", ")));
  parts.push_back(fmt::format("GPUDirect RDMA {}", name(node.gpudirect.status)));
  const HostInfo& h = node.host;
  parts.push_back(fmt::format("{} socket{}, {} cores, {} GiB", h.sockets ? std::to_string(*h.sockets) : "?",
                              h.sockets && *h.sockets == 1 ? "" : "s", h.cores ? std::to_string(*h.cores) : "?",
                              h.memory_bytes ? std::to_string(*h.memory_bytes >> 30) : "?"));
  // A VM or sliced GPUs are another configuration than bare metal.
  if (std::string virt = virtualization_summary(node); !virt.empty()) parts.push_back(std::move(virt));
  return fmt::format("{}", fmt::join(parts, " | "));
}

ClusterTopology analyze_cluster(std::vector<NodeTopology> nodes) {
  ClusterTopology cluster;
  cluster.nodes = std::move(nodes);
  std::map<std::string, std::vector<std::string>> groups;
  std::vector<std::string> order;
  for (const NodeTopology& n : cluster.nodes) {
    const std::string sig = node_signature(n);
    if (!groups.contains(sig)) order.push_back(sig);
    groups[sig].push_back(n.host.hostname);
  }
  for (const std::string& sig : order) cluster.groups.push_back({sig, groups[sig]});
  std::stable_sort(cluster.groups.begin(), cluster.groups.end(),
                   [](const NodeGroup& a, const NodeGroup& b) { return a.hosts.size() > b.hosts.size(); });

  const Context c{&cluster};
  compare_nodes(c, cluster.nodes);
  check_pcie(c, cluster.nodes);
  check_nvlink(c, cluster.nodes);
  check_nics(c, cluster.nodes);
  check_node_local(c, cluster.nodes);
  check_bandwidth(c, cluster.nodes);
  check_inside_nodes(cluster);
  return cluster;
}

void judge_cluster(ClusterTopology& cluster) {
  ClusterTopology judged = analyze_cluster(std::move(cluster.nodes));
  judged.anomalies.insert(judged.anomalies.begin(), cluster.anomalies.begin(), cluster.anomalies.end());
  judged.configuration = std::move(cluster.configuration);
  judged.notes.insert(judged.notes.end(), cluster.notes.begin(), cluster.notes.end());
  const std::vector<Anomaly> found = check_configuration(judged.configuration);
  judged.anomalies.insert(judged.anomalies.end(), found.begin(), found.end());
  cluster = std::move(judged);
}

std::optional<double> network_gbit(const NodeTopology& node) {
  double rdma = 0;
  double ethernet = 0;
  for (const NicInfo& nic : node.nics) {
    if (is_rdma(nic)) {
      for (const NicPort& port : nic.ports)
        if (port.rate_gbps && port.state && *port.state == "ACTIVE") rdma += *port.rate_gbps;
    } else if (nic.kind == NicKind::ethernet && nic.speed_gbps && nic.operstate && *nic.operstate == "up") {
      ethernet += *nic.speed_gbps;
    }
  }
  if (rdma > 0) return rdma;
  if (ethernet > 0) return ethernet;
  return std::nullopt;
}

std::optional<double> network_gbit_per_node(const ClusterTopology& cluster) {
  std::optional<double> lowest;
  for (const NodeTopology& node : cluster.nodes) {
    const std::optional<double> rate = network_gbit(node);
    if (!rate) return std::nullopt;
    if (!lowest || *rate < *lowest) lowest = rate;
  }
  return lowest;
}

}  // namespace fabricbench
