#include "fabricbench/output/topology_summary.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/analysis/node_analysis.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

std::string or_unknown(const std::optional<std::string>& v) { return v.value_or("unknown"); }

template <typename T>
std::string num_or_unknown(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string("unknown");
}

std::string gbs(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : std::string("-"); }

std::string gib(std::uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ULL << 30)); }

void write_node(const NodeTopology& n, std::ostream& out) {
  const HostInfo& h = n.host;
  // "1 socket", "2 sockets", "unknown sockets".
  const auto counted = [](const std::optional<int>& v, const char* noun) {
    return fmt::format("{} {}{}", num_or_unknown(v), noun, v && *v == 1 ? "" : "s");
  };
  out << fmt::format("  host {}: {}, {}, {}, {}, {}, {}\n", h.hostname, or_unknown(h.cpu_model),
                     counted(h.sockets, "socket"), counted(h.cores, "core"), counted(h.threads, "thread"),
                     h.memory_bytes ? gib(*h.memory_bytes) : "memory unknown", counted(h.numa_nodes, "NUMA node"));
  out << fmt::format("  {}, kernel {}, GPU driver {}\n", h.os.value_or("OS unknown"), or_unknown(h.kernel),
                     or_unknown(h.gpu_driver));
  if (!n.gpu_status.empty()) out << "  " << n.gpu_status << '\n';
  if (!n.gpus.empty()) {
    out << fmt::format("  {:<4} {:<13} {:<26} {:>5} {:<17} {:<14} {:>6} {:>6} {:>6}\n", "GPU", "PCI", "name", "NUMA",
                       "PCIe now/max", "nearest NIC", "H2D", "D2H", "local");
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const GpuInfo& g = n.gpus[i];
      const PcieLink& p = g.pcie;
      std::string nic = "-";
      if (i < n.nearest_nic.size() && n.nearest_nic[i].nic)
        nic = fmt::format("{} {}", *n.nearest_nic[i].nic, n.nearest_nic[i].path ? label(*n.nearest_nic[i].path) : "?");
      const auto gen = [](std::optional<int> v) { return v ? std::to_string(*v) : std::string("?"); };
      out << fmt::format("  {:<4} {:<13} {:<26} {:>5} {:<17} {:<14} {:>6} {:>6} {:>6}\n",
                         g.index ? std::to_string(*g.index) : fmt::format("({})", i), g.pci_bus_id,
                         g.name.value_or("unknown").substr(0, 26), g.numa_node ? std::to_string(*g.numa_node) : "?",
                         fmt::format("Gen{} x{}/Gen{} x{}", gen(p.current_gen), gen(p.current_width), gen(p.max_gen),
                                     gen(p.max_width)),
                         nic, gbs(g.h2d_gbs), gbs(g.d2h_gbs), gbs(g.local_copy_gbs));
    }
    if (!n.method.empty()) out << "  bandwidths in GB/s: " << n.method << '\n';
    // The matrix, as nvidia-smi topo -m lays it out.
    out << fmt::format("  {:<6}", "");
    for (std::size_t j = 0; j < n.gpus.size(); ++j) out << fmt::format(" {:>5}", fmt::format("GPU{}", j));
    for (const NicInfo& nic : n.nics)
      out << fmt::format(" {:>{}}", nic.name, std::max<std::size_t>(nic.name.size(), 4));
    out << '\n';
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      out << fmt::format("  {:<6}", fmt::format("GPU{}", i));
      for (std::size_t j = 0; j < n.gpus.size(); ++j)
        out << fmt::format(" {:>5}", i < n.gpu_matrix.size() && j < n.gpu_matrix[i].size() ? n.gpu_matrix[i][j] : "?");
      for (std::size_t k = 0; k < n.nics.size(); ++k)
        out << fmt::format(" {:>{}}", i < n.nic_matrix.size() && k < n.nic_matrix[i].size() ? n.nic_matrix[i][k] : "?",
                           std::max<std::size_t>(n.nics[k].name.size(), 4));
      out << '\n';
    }
  }
  if (n.nics.empty()) out << "  no NIC found\n";
  for (const NicInfo& nic : n.nics) {
    std::string detail;
    if (!nic.ports.empty()) {
      std::vector<std::string> ports;
      for (const NicPort& p : nic.ports)
        ports.push_back(fmt::format("port {} {} {}", p.port, p.state.value_or("unknown"),
                                    p.rate_gbps ? fmt::format("{:g} Gb/s", *p.rate_gbps) : "rate unknown"));
      detail = fmt::format("{}, fw {}", fmt::join(ports, ", "), or_unknown(nic.firmware));
    } else {
      detail = fmt::format("{} {}, mtu {}", nic.operstate.value_or("state unknown"),
                           nic.speed_gbps ? fmt::format("{:g} Gb/s", *nic.speed_gbps) : "speed unknown",
                           num_or_unknown(nic.mtu));
    }
    out << fmt::format("  {:<14} {:<10} {:<13} {:<7} {}\n", nic.name, name(nic.kind),
                       nic.pci_address.value_or(std::string(name(nic.bus))),
                       nic.numa_node ? fmt::format("NUMA {}", *nic.numa_node) : "NUMA ?", detail);
  }
  out << fmt::format("  GPUDirect RDMA: {}{}\n", name(n.gpudirect.status),
                     n.gpudirect.module ? fmt::format(" ({})", *n.gpudirect.module) : "");
  for (const std::string& line : inside_node_lines(n)) out << "  " << line << '\n';
  if (!n.notes.empty())
    out << fmt::format("  {} fact{} unknown or odd; the JSON lists why\n", n.notes.size(),
                       n.notes.size() == 1 ? "" : "s");
}

std::vector<int> indices_of(const NodeTopology& n, const std::vector<std::string>& bus_ids) {
  std::vector<int> out;
  for (std::size_t i = 0; i < n.gpus.size(); ++i)
    if (std::find(bus_ids.begin(), bus_ids.end(), n.gpus[i].pci_bus_id) != bus_ids.end())
      out.push_back(n.gpus[i].index ? *n.gpus[i].index : static_cast<int>(i));
  return out;
}

std::string uplink_text(const PcieLink& l) {
  const auto v = [](std::optional<int> x) { return x ? std::to_string(*x) : std::string("?"); };
  return fmt::format("Gen{} x{} (max Gen{} x{})", v(l.current_gen), v(l.current_width), v(l.max_gen), v(l.max_width));
}

std::optional<double> median_of(const std::vector<std::optional<double>>& values) {
  std::vector<double> known;
  for (const auto& v : values)
    if (v) known.push_back(*v);
  if (known.empty()) return std::nullopt;
  return median(known);
}

// One line per distinct configuration, with the hosts (and ranks) that run it.
void write_configuration(const std::vector<NodeConfig>& configs, std::ostream& out) {
  if (configs.empty()) return;
  std::map<int, int> records_of_node;
  for (const NodeConfig& c : configs) ++records_of_node[c.node];
  std::vector<std::string> lines;
  std::map<std::string, std::vector<std::string>> who;
  for (const NodeConfig& c : configs) {
    std::vector<std::string> mtus;
    for (const std::string& name : c.nccl_interfaces)
      for (const NetInterface& i : c.interfaces)
        if (i.name == name) mtus.push_back(fmt::format("{} mtu {}", name, num_or_unknown(i.mtu)));
    const std::string memlock = c.memlock_unlimited == true ? std::string("unlimited")
                                : c.memlock_bytes           ? fmt::format("{} KiB", *c.memlock_bytes >> 10)
                                                            : std::string("unknown");
    const std::string line = fmt::format(
        "NCCL {} (net plugin {}), CUDA driver {} runtime {}, kernel {}, libibverbs {}{}; memlock {}; NCCL "
        "interfaces {}; {} setting{}",
        or_unknown(c.nccl_version), c.nccl_net_plugin.value_or("none found"), or_unknown(c.cuda_driver),
        or_unknown(c.cuda_runtime), or_unknown(c.kernel), c.libibverbs.value_or("not found"),
        c.ofed ? fmt::format(", {}", *c.ofed) : "", memlock,
        mtus.empty() ? "none" : fmt::format("{}", fmt::join(mtus, ", ")), c.environment.size() + c.nccl_conf.size(),
        c.environment.size() + c.nccl_conf.size() == 1 ? "" : "s");
    if (!who.contains(line)) lines.push_back(line);
    std::string host = c.host;
    if (records_of_node[c.node] > 1 && !c.ranks.empty())
      host += fmt::format(" (rank{} {})", c.ranks.size() == 1 ? "" : "s", fmt::join(c.ranks, ","));
    who[line].push_back(host);
  }
  out << fmt::format("software and settings ({} variant{}):\n", lines.size(), lines.size() == 1 ? "" : "s");
  for (const std::string& line : lines) out << fmt::format("  {}: {}\n", fmt::join(who[line], ", "), line);
}

}  // namespace

std::vector<std::string> inside_node_lines(const NodeTopology& n) {
  std::vector<std::string> lines;
  for (const PcieBridge& b : n.pcie_bridges) {
    if (b.role != BridgeRole::switch_upstream || b.gpus.empty()) continue;
    const std::string ratio = b.oversubscription ? fmt::format("{:.1f} GB/s up, {:.1f} GB/s below: {:.1f}:1",
                                                               *b.uplink_gbs, *b.downstream_gbs, *b.oversubscription)
                                                 : std::string("rates unknown");
    lines.push_back(fmt::format("PCIe switch {}{}: {} below ({} port{} in use), uplink {}, {}", b.pci_bus_id,
                                b.parent ? fmt::format(" under {}", *b.parent) : "", gpu_list(indices_of(n, b.gpus)),
                                b.occupied_ports ? std::to_string(*b.occupied_ports) : "?",
                                b.occupied_ports == 1 ? "" : "s", uplink_text(b.link), ratio));
  }
  // ACS on the bridges between GPUs (some GPU below, some not), else on all.
  std::map<AcsState, int> acs;
  std::optional<std::string> why;
  for (const PcieBridge& b : n.pcie_bridges) {
    if (b.role == BridgeRole::switch_upstream || (n.gpus.size() >= 2 && b.gpus.size() >= n.gpus.size())) continue;
    ++acs[b.acs];
    if (b.acs == AcsState::unknown && b.acs_unknown && !why) why = b.acs_unknown;
  }
  if (!acs.empty()) {
    std::vector<std::string> parts;
    for (const auto& [state, count] : acs)
      parts.push_back(fmt::format("{} {}{}", count, name(state),
                                  state == AcsState::unknown && why ? fmt::format(" ({})", *why) : ""));
    lines.push_back(fmt::format("ACS on the PCIe bridges{}: {}", n.gpus.size() >= 2 ? " between GPUs" : "",
                                fmt::join(parts, ", ")));
  }
  if (n.iommu) {
    const IommuInfo& io = *n.iommu;
    std::vector<std::string> iommu;
    if (!io.domain_types.empty()) iommu.push_back(fmt::format("domains {}", fmt::join(io.domain_types, ", ")));
    if (io.units) iommu.push_back(fmt::format("{} unit{}", *io.units, *io.units == 1 ? "" : "s"));
    if (io.groups) iommu.push_back(fmt::format("{} group{}", *io.groups, *io.groups == 1 ? "" : "s"));
    if (!io.kernel_parameters.empty()) iommu.push_back(fmt::format("kernel {}", fmt::join(io.kernel_parameters, " ")));
    lines.push_back(
        fmt::format("IOMMU: {}{}", name(io.mode), iommu.empty() ? "" : fmt::format(" ({})", fmt::join(iommu, ", "))));
  }
  if (const std::string virt = virtualization_summary(n); !virt.empty()) lines.push_back("virtualization: " + virt);
  // Host copies at once, a line per group: median per GPU alone -> at once.
  std::vector<std::string> scopes;
  for (const ConcurrentCopy& c : n.host_copy_contention)
    if (std::find(scopes.begin(), scopes.end(), c.scope) == scopes.end()) scopes.push_back(c.scope);
  for (const std::string& scope : scopes) {
    std::vector<std::string> parts;
    std::vector<int> gpus;
    for (const ConcurrentCopy& c : n.host_copy_contention) {
      if (c.scope != scope) continue;
      gpus = c.gpus;
      const auto fmt_gbs = [](std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : std::string("-"); };
      parts.push_back(fmt::format("{} {} -> {}", c.direction == CopyDirection::host_to_device ? "H2D" : "D2H",
                                  fmt_gbs(median_of(c.alone_gbs)), fmt_gbs(median_of(c.at_once_gbs))));
    }
    lines.push_back(fmt::format("host copies at once, {} ({}), GB/s per GPU alone -> at once: {}", scope,
                                gpu_list(gpus), fmt::join(parts, ", ")));
  }
  if (!n.contention_method.empty()) lines.push_back("copies at once: " + n.contention_method);
  return lines;
}

void write_topology_summary(const ClusterTopology& cluster, std::ostream& out) {
  out << fmt::format("# topology: {} node{}, {} configuration{}\n", cluster.nodes.size(),
                     cluster.nodes.size() == 1 ? "" : "s", cluster.groups.size(),
                     cluster.groups.size() == 1 ? "" : "s");
  for (std::size_t g = 0; g < cluster.groups.size(); ++g) {
    const NodeGroup& group = cluster.groups[g];
    out << fmt::format("configuration {} ({} node{}: {})\n  {}\n", g + 1, group.hosts.size(),
                       group.hosts.size() == 1 ? "" : "s", fmt::join(group.hosts, ", "), group.signature);
    // The first node stands for its configuration; the others are the same.
    for (const NodeTopology& n : cluster.nodes) {
      if (!group.hosts.empty() && n.host.hostname == group.hosts.front()) {
        write_node(n, out);
        break;
      }
    }
  }
  write_configuration(cluster.configuration, out);
  if (cluster.anomalies.empty()) {
    out << "no anomalies\n";
  } else {
    out << fmt::format("anomalies ({}):\n", cluster.anomalies.size());
    for (const Anomaly& a : cluster.anomalies)
      out << fmt::format("  {}{}{}: {}: {}\n", a.host, a.device.empty() ? "" : " ", a.device, a.kind, a.detail);
  }
  for (const std::string& note : cluster.notes) out << "note: " << note << '\n';
}

}  // namespace fabricbench
