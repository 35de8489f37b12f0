#include "fabricbench/topology/topology_writers.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/topology/topology_analysis.hpp"

namespace fabricbench {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

template <typename T>
ojson opt(const std::optional<T>& value) {
  return value ? ojson(*value) : ojson(nullptr);
}

template <typename T>
ojson matrix(const std::vector<std::vector<std::optional<T>>>& m) {
  ojson out = ojson::array();
  for (const auto& row : m) {
    ojson r = ojson::array();
    for (const auto& v : row) r.push_back(opt(v));
    out.push_back(r);
  }
  return out;
}

// Reading back: a member of the wrong type is as good as absent.
template <typename T>
std::optional<T> get(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
  } else {
    // Out of T's range is as good as absent: never wrapped.
    if (v.is_number_integer()) return integer_value<T>(v);
  }
  return std::nullopt;
}

const json& member(const json& j, const char* key) {
  static const json empty;  // read-only, shared by every miss
  return j.is_object() && j.contains(key) ? j[key] : empty;
}

template <typename T>
std::vector<std::vector<std::optional<T>>> read_matrix(const json& j) {
  std::vector<std::vector<std::optional<T>>> out;
  if (!j.is_array()) return out;
  for (const json& row : j) {
    std::vector<std::optional<T>> r;
    if (row.is_array()) {
      for (const json& v : row) {
        json holder{{"v", v}};
        r.push_back(get<T>(holder, "v"));
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> strings(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const json& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::optional<PciPath> path_from(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  for (const PciPath p : {PciPath::pix, PciPath::pxb, PciPath::phb, PciPath::node, PciPath::sys}) {
    if (*text == label(p)) return p;
  }
  return std::nullopt;
}

}  // namespace

nlohmann::ordered_json node_to_json(const NodeTopology& node) {
  ojson j;
  const HostInfo& h = node.host;
  j["host"] = {{"hostname", h.hostname},          {"cpu_model", opt(h.cpu_model)},
               {"sockets", opt(h.sockets)},       {"cores", opt(h.cores)},
               {"threads", opt(h.threads)},       {"memory_bytes", opt(h.memory_bytes)},
               {"numa_nodes", opt(h.numa_nodes)}, {"os", opt(h.os)},
               {"kernel", opt(h.kernel)},         {"gpu_driver", opt(h.gpu_driver)}};
  j["gpu_status"] = node.gpu_status.empty() ? ojson(nullptr) : ojson(node.gpu_status);
  ojson gpus = ojson::array();
  for (const GpuInfo& g : node.gpus) {
    ojson links = ojson::array();
    for (const NvLink& l : g.nvlinks)
      links.push_back({{"link", l.link},
                       {"active", opt(l.active)},
                       {"version", opt(l.version)},
                       {"remote_pci", opt(l.remote_pci)},
                       {"remote_kind", opt(l.remote_kind)}});
    gpus.push_back({{"index", opt(g.index)},
                    {"pci_bus_id", g.pci_bus_id},
                    {"name", opt(g.name)},
                    {"uuid", opt(g.uuid)},
                    {"memory_bytes", opt(g.memory_bytes)},
                    {"sm_count", opt(g.sm_count)},
                    {"numa_node", opt(g.numa_node)},
                    {"pcie",
                     {{"current_gen", opt(g.pcie.current_gen)},
                      {"max_gen", opt(g.pcie.max_gen)},
                      {"current_width", opt(g.pcie.current_width)},
                      {"max_width", opt(g.pcie.max_width)}}},
                    {"nvlinks", links},
                    {"mig_mode", opt(g.mig_mode)},
                    {"ecc_mode", opt(g.ecc_mode)},
                    {"h2d_gbs", opt(g.h2d_gbs)},
                    {"d2h_gbs", opt(g.d2h_gbs)},
                    {"local_copy_gbs", opt(g.local_copy_gbs)}});
  }
  j["gpus"] = gpus;
  ojson nics = ojson::array();
  for (const NicInfo& n : node.nics) {
    ojson ports = ojson::array();
    for (const NicPort& p : n.ports)
      ports.push_back({{"port", p.port},
                       {"state", opt(p.state)},
                       {"phys_state", opt(p.phys_state)},
                       {"rate_gbps", opt(p.rate_gbps)},
                       {"link_layer", opt(p.link_layer)}});
    nics.push_back({{"name", n.name},
                    {"kind", n.kind},
                    {"pci_address", opt(n.pci_address)},
                    {"bus", n.bus},
                    {"driver", opt(n.driver)},
                    {"numa_node", opt(n.numa_node)},
                    {"firmware", opt(n.firmware)},
                    {"ports", ports},
                    {"netdevs", n.netdevs},
                    {"speed_gbps", opt(n.speed_gbps)},
                    {"mtu", opt(n.mtu)},
                    {"operstate", opt(n.operstate)}});
  }
  j["nics"] = nics;
  j["gpudirect_rdma"] = {{"status", node.gpudirect.status},
                         {"module", opt(node.gpudirect.module)},
                         {"dma_buf", opt(node.gpudirect.dma_buf)}};
  j["gpu_matrix"] = node.gpu_matrix;
  j["nic_matrix"] = node.nic_matrix;
  ojson nearest = ojson::array();
  for (const GpuNicAffinity& a : node.nearest_nic)
    nearest.push_back({{"gpu", a.gpu},
                       {"nic", opt(a.nic)},
                       {"path", a.path ? ojson(label(*a.path)) : ojson(nullptr)},
                       {"relation", a.path ? ojson(describe(*a.path)) : ojson(nullptr)}});
  j["nearest_nic"] = nearest;
  j["p2p_access"] = matrix(node.p2p_access);
  j["p2p_rank"] = matrix(node.p2p_rank);
  j["d2d_gbs"] = matrix(node.d2d_gbs);
  j["method"] = node.method.empty() ? ojson(nullptr) : ojson(node.method);
  j["notes"] = node.notes;
  return j;
}

NodeTopology node_from_json(const nlohmann::json& j) {
  NodeTopology node;
  const json& h = member(j, "host");
  node.host.hostname = get<std::string>(h, "hostname").value_or("unknown");
  node.host.cpu_model = get<std::string>(h, "cpu_model");
  node.host.sockets = get<int>(h, "sockets");
  node.host.cores = get<int>(h, "cores");
  node.host.threads = get<int>(h, "threads");
  node.host.memory_bytes = get<std::uint64_t>(h, "memory_bytes");
  node.host.numa_nodes = get<int>(h, "numa_nodes");
  node.host.os = get<std::string>(h, "os");
  node.host.kernel = get<std::string>(h, "kernel");
  node.host.gpu_driver = get<std::string>(h, "gpu_driver");
  node.gpu_status = get<std::string>(j, "gpu_status").value_or("");
  if (const json& gpus = member(j, "gpus"); gpus.is_array()) {
    for (const json& g : gpus) {
      GpuInfo gpu;
      gpu.index = get<int>(g, "index");
      gpu.pci_bus_id = get<std::string>(g, "pci_bus_id").value_or("");
      gpu.name = get<std::string>(g, "name");
      gpu.uuid = get<std::string>(g, "uuid");
      gpu.memory_bytes = get<std::uint64_t>(g, "memory_bytes");
      gpu.sm_count = get<int>(g, "sm_count");
      gpu.numa_node = get<int>(g, "numa_node");
      const json& p = member(g, "pcie");
      gpu.pcie = {get<int>(p, "current_gen"), get<int>(p, "max_gen"), get<int>(p, "current_width"),
                  get<int>(p, "max_width")};
      if (const json& links = member(g, "nvlinks"); links.is_array()) {
        for (const json& l : links) {
          gpu.nvlinks.push_back({get<int>(l, "link").value_or(0), get<bool>(l, "active"), get<int>(l, "version"),
                                 get<std::string>(l, "remote_pci"), get<std::string>(l, "remote_kind")});
        }
      }
      gpu.mig_mode = get<std::string>(g, "mig_mode");
      gpu.ecc_mode = get<std::string>(g, "ecc_mode");
      gpu.h2d_gbs = get<double>(g, "h2d_gbs");
      gpu.d2h_gbs = get<double>(g, "d2h_gbs");
      gpu.local_copy_gbs = get<double>(g, "local_copy_gbs");
      node.gpus.push_back(std::move(gpu));
    }
  }
  if (const json& nics = member(j, "nics"); nics.is_array()) {
    for (const json& n : nics) {
      NicInfo nic;
      nic.name = get<std::string>(n, "name").value_or("");
      nic.kind = get<std::string>(n, "kind").value_or("");
      nic.pci_address = get<std::string>(n, "pci_address");
      nic.bus = get<std::string>(n, "bus").value_or("unknown");
      nic.driver = get<std::string>(n, "driver");
      nic.numa_node = get<int>(n, "numa_node");
      nic.firmware = get<std::string>(n, "firmware");
      if (const json& ports = member(n, "ports"); ports.is_array()) {
        for (const json& p : ports) {
          nic.ports.push_back({get<int>(p, "port").value_or(1), get<std::string>(p, "state"),
                               get<std::string>(p, "phys_state"), get<double>(p, "rate_gbps"),
                               get<std::string>(p, "link_layer")});
        }
      }
      nic.netdevs = strings(member(n, "netdevs"));
      nic.speed_gbps = get<double>(n, "speed_gbps");
      nic.mtu = get<int>(n, "mtu");
      nic.operstate = get<std::string>(n, "operstate");
      node.nics.push_back(std::move(nic));
    }
  }
  const json& gdr = member(j, "gpudirect_rdma");
  node.gpudirect.status = get<std::string>(gdr, "status").value_or("unknown");
  node.gpudirect.module = get<std::string>(gdr, "module");
  node.gpudirect.dma_buf = get<bool>(gdr, "dma_buf");
  for (const char* key : {"gpu_matrix", "nic_matrix"}) {
    auto& target = std::string(key) == "gpu_matrix" ? node.gpu_matrix : node.nic_matrix;
    if (const json& m = member(j, key); m.is_array()) {
      for (const json& row : m) target.push_back(strings(row));
    }
  }
  if (const json& nearest = member(j, "nearest_nic"); nearest.is_array()) {
    for (const json& a : nearest) {
      node.nearest_nic.push_back({get<std::string>(a, "gpu").value_or(""), get<std::string>(a, "nic"),
                                  path_from(get<std::string>(a, "path"))});
    }
  }
  node.p2p_access = read_matrix<bool>(member(j, "p2p_access"));
  node.p2p_rank = read_matrix<int>(member(j, "p2p_rank"));
  node.d2d_gbs = read_matrix<double>(member(j, "d2d_gbs"));
  node.method = get<std::string>(j, "method").value_or("");
  node.notes = strings(member(j, "notes"));
  return node;
}

nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster) {
  ojson j;
  ojson nodes = ojson::array();
  for (const NodeTopology& n : cluster.nodes) nodes.push_back(node_to_json(n));
  j["nodes"] = nodes;
  ojson groups = ojson::array();
  for (const NodeGroup& g : cluster.groups) groups.push_back({{"signature", g.signature}, {"hosts", g.hosts}});
  j["groups"] = groups;
  ojson anomalies = ojson::array();
  for (const Anomaly& a : cluster.anomalies)
    anomalies.push_back({{"kind", a.kind}, {"host", a.host}, {"device", a.device}, {"detail", a.detail}});
  j["anomalies"] = anomalies;
  j["notes"] = cluster.notes;
  return j;
}

}  // namespace fabricbench
