#include "fabricbench/records/topology_json.hpp"

#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/json_fields.hpp"

namespace fabricbench {

// ---- field lists: the JSON form of the topology records (core/json_fields.hpp)

std::string_view name(PciPath path) { return label(path); }
std::optional<PciPath> from_name(std::string_view text, fields::tag<PciPath>) {
  for (const PciPath p : {PciPath::pix, PciPath::pxb, PciPath::phb, PciPath::node, PciPath::sys})
    if (text == label(p)) return p;
  return std::nullopt;
}

// Names of the closed sets as the walker reads them: a link's far end, a
// NIC's bus and the GPUDirect status this build does not know read as
// "unknown"; an unknown NIC kind is refused by node_from_json, never a guess.
std::optional<LinkPeer> from_name(std::string_view text, fields::tag<LinkPeer>) { return parse_link_peer(text); }
std::optional<NicBus> from_name(std::string_view text, fields::tag<NicBus>) { return parse_nic_bus(text); }
std::optional<GdrStatus> from_name(std::string_view text, fields::tag<GdrStatus>) { return parse_gdr_status(text); }
std::optional<NicKind> from_name(std::string_view text, fields::tag<NicKind>) { return parse_nic_kind(text); }
// The sets inside a node: a name this build does not know reads as unknown
// where the set has one, else the field stays at its default.
std::optional<BridgeRole> from_name(std::string_view text, fields::tag<BridgeRole>) {
  return parse_in(bridge_role_names, text);
}
std::optional<AcsState> from_name(std::string_view text, fields::tag<AcsState>) {
  return parse_in(acs_state_names, text).value_or(AcsState::unknown);
}
std::optional<IommuMode> from_name(std::string_view text, fields::tag<IommuMode>) {
  return parse_in(iommu_mode_names, text).value_or(IommuMode::unknown);
}
std::optional<CopyDirection> from_name(std::string_view text, fields::tag<CopyDirection>) {
  return parse_in(copy_direction_names, text);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, HostInfo>
void fields_of(Self& h, Field&& field) {
  field("hostname", h.hostname);
  field("cpu_model", h.cpu_model);
  field("sockets", h.sockets);
  field("cores", h.cores);
  field("threads", h.threads);
  field("memory_bytes", h.memory_bytes);
  field("numa_nodes", h.numa_nodes);
  field("os", h.os);
  field("kernel", h.kernel);
  field("gpu_driver", h.gpu_driver);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PcieLink>
void fields_of(Self& p, Field&& field) {
  field("current_gen", p.current_gen);
  field("max_gen", p.max_gen);
  field("current_width", p.current_width);
  field("max_width", p.max_width);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NvLink>
void fields_of(Self& l, Field&& field) {
  field("link", l.link);
  field("active", l.active);
  field("version", l.version);
  field("remote_pci", l.remote_pci);
  field("remote_kind", l.remote_kind);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuInfo>
void fields_of(Self& g, Field&& field) {
  field("index", g.index);
  field("pci_bus_id", g.pci_bus_id);
  field("name", g.name);
  field("uuid", g.uuid);
  field("memory_bytes", g.memory_bytes);
  field("sm_count", g.sm_count);
  field("numa_node", g.numa_node);
  field("pcie", g.pcie);
  field("nvlinks", g.nvlinks);
  field("mig_mode", g.mig_mode);
  field("ecc_mode", g.ecc_mode);
  field("h2d_gbs", g.h2d_gbs);
  field("d2h_gbs", g.d2h_gbs);
  field("local_copy_gbs", g.local_copy_gbs);
  field("root_port", fields::omitted(g.root_port));
  field("pcie_switches", fields::omitted(g.pcie_switches));
  field("mig_instances", fields::omitted(g.mig_instances));
  field("virtualization", fields::omitted(g.virtualization));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NicPort>
void fields_of(Self& p, Field&& field) {
  field("port", p.port);
  field("state", p.state);
  field("phys_state", p.phys_state);
  field("rate_gbps", p.rate_gbps);
  field("link_layer", p.link_layer);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NicInfo>
void fields_of(Self& n, Field&& field) {
  field("name", n.name);
  field("kind", n.kind);
  field("pci_address", n.pci_address);
  field("bus", n.bus);
  field("driver", n.driver);
  field("numa_node", n.numa_node);
  field("firmware", n.firmware);
  field("ports", n.ports);
  field("netdevs", n.netdevs);
  field("speed_gbps", n.speed_gbps);
  field("mtu", n.mtu);
  field("operstate", n.operstate);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuDirectRdma>
void fields_of(Self& g, Field&& field) {
  field("status", g.status);
  field("module", g.module);
  field("dma_buf", g.dma_buf);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, GpuNicAffinity>
void fields_of(Self& a, Field&& field) {
  field("gpu", a.gpu);
  field("nic", a.nic);
  field("path", a.path);
  field("relation", fields::written(a.path ? std::optional<std::string>(describe(*a.path)) : std::nullopt));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PcieBridge>
void fields_of(Self& b, Field&& field) {
  field("pci_bus_id", b.pci_bus_id);
  field("role", b.role);
  field("parent", b.parent);
  field("link", b.link);
  field("gpus", b.gpus);
  field("occupied_ports", b.occupied_ports);
  field("uplink_gbs", b.uplink_gbs);
  field("downstream_gbs", b.downstream_gbs);
  field("oversubscription", b.oversubscription);
  field("acs", b.acs);
  field("acs_control", b.acs_control);
  field("acs_unknown", b.acs_unknown);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, IommuInfo>
void fields_of(Self& i, Field&& field) {
  field("mode", i.mode);
  field("units", i.units);
  field("groups", i.groups);
  field("domain_types", i.domain_types);
  field("kernel_parameters", i.kernel_parameters);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Virtualization>
void fields_of(Self& v, Field&& field) {
  field("hypervisor_flag", v.hypervisor_flag);
  field("hypervisor", v.hypervisor);
  field("platform", v.platform);
  field("virtio_devices", v.virtio_devices);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ConcurrentCopy>
void fields_of(Self& c, Field&& field) {
  field("scope", c.scope);
  field("bridge", c.bridge);
  field("direction", c.direction);
  field("gpus", c.gpus);
  field("alone_gbs", c.alone_gbs);
  field("at_once_gbs", c.at_once_gbs);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NodeTopology>
void fields_of(Self& n, Field&& field) {
  field("host", n.host);
  field("gpu_status", fields::empty_as_null(n.gpu_status));
  field("gpus", n.gpus);
  field("nics", n.nics);
  field("gpudirect_rdma", n.gpudirect);
  field("gpu_matrix", n.gpu_matrix);
  field("nic_matrix", n.nic_matrix);
  field("nearest_nic", n.nearest_nic);
  field("p2p_access", n.p2p_access);
  field("p2p_rank", n.p2p_rank);
  field("d2d_gbs", n.d2d_gbs);
  field("method", fields::empty_as_null(n.method));
  field("notes", n.notes);
  // Left out when empty, so records written before they existed read back unchanged.
  field("pcie_bridges", fields::omitted(n.pcie_bridges));
  field("iommu", fields::omitted(n.iommu));
  field("virtualization", fields::omitted(n.virtualization));
  field("host_copy_contention", fields::omitted(n.host_copy_contention));
  field("contention_method", fields::omitted(n.contention_method));
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NodeGroup>
void fields_of(Self& g, Field&& field) {
  field("signature", g.signature);
  field("hosts", g.hosts);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Anomaly>
void fields_of(Self& a, Field&& field) {
  field("kind", a.kind);
  field("host", a.host);
  field("device", a.device);
  field("detail", a.detail);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NetInterface>
void fields_of(Self& i, Field&& field) {
  field("name", i.name);
  field("mtu", i.mtu);
  field("operstate", i.operstate);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, RdmaPortConfig>
void fields_of(Self& p, Field&& field) {
  field("device", p.device);
  field("port", p.port);
  field("state", p.state);
  field("link_layer", p.link_layer);
  field("pkeys", p.pkeys);
  field("gid_type", p.gid_type);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NodeConfig>
void fields_of(Self& c, Field&& field) {
  field("host", c.host);
  field("node", c.node);
  field("ranks", c.ranks);
  field("nccl_version", c.nccl_version);
  field("nccl_version_source", fields::empty_as_null(c.nccl_version_source));
  field("nccl_net_plugin", c.nccl_net_plugin);
  field("nccl_tuner_plugin", c.nccl_tuner_plugin);
  field("nccl_plugins_found", c.nccl_plugins_found);
  field("cuda_driver", c.cuda_driver);
  field("cuda_runtime", c.cuda_runtime);
  field("nvidia_driver", c.nvidia_driver);
  field("kernel", c.kernel);
  field("libibverbs", c.libibverbs);
  field("ofed", c.ofed);
  field("mlx5_core", c.mlx5_core);
  field("nic_firmware", c.nic_firmware);
  field("environment", c.environment);
  field("nccl_conf", c.nccl_conf);
  field("nccl_conf_files", c.nccl_conf_files);
  field("memlock_bytes", c.memlock_bytes);
  field("memlock_unlimited", c.memlock_unlimited);
  field("interfaces", c.interfaces);
  field("nccl_interfaces", c.nccl_interfaces);
  field("rdma_ports", c.rdma_ports);
  field("notes", c.notes);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, ClusterTopology>
void fields_of(Self& c, Field&& field) {
  field("nodes", c.nodes);
  field("groups", c.groups);
  field("anomalies", c.anomalies);
  field("notes", c.notes);
  field("configuration", fields::omitted(c.configuration));
}

nlohmann::ordered_json node_to_json(const NodeTopology& node) { return fields::to_value(node); }

namespace {
// A NIC is InfiniBand, RoCE or Ethernet; anything else in a record is an
// error, never a guess (the lenient walk would keep the default kind).
void refuse_unknown_nic_kinds(const nlohmann::json& j) {
  const auto nics = j.find("nics");
  if (nics == j.end() || !nics->is_array()) return;
  for (const nlohmann::json& n : *nics) {
    if (!n.is_object()) continue;
    const auto kind = n.find("kind");
    if (kind == n.end() || !kind->is_string() || parse_nic_kind(kind->get<std::string>())) continue;
    const auto nic = n.find("name");
    throw UsageError(fmt::format("topology: NIC '{}' has kind '{}', not {}",
                                 nic != n.end() && nic->is_string() ? nic->get<std::string>() : "?",
                                 kind->get<std::string>(), names_of(nic_kind_names)));
  }
}
}  // namespace

NodeTopology node_from_json(const nlohmann::json& j) {
  NodeTopology node;
  node.host.hostname = "unknown";  // what a record without one reads as
  if (!j.is_object()) return node;
  refuse_unknown_nic_kinds(j);
  fields_of(node, fields::Reader{j, "", fields::Mode::lenient});
  return node;
}

nlohmann::ordered_json config_to_json(const NodeConfig& config) { return fields::to_value(config); }

NodeConfig config_from_json(const nlohmann::json& j) {
  NodeConfig config;
  if (!j.is_object()) throw UsageError("configuration: expected an object");
  fields_of(config, fields::Reader{j, "", fields::Mode::lenient});
  return config;
}

nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster) { return fields::to_value(cluster); }

namespace {
// A field writer that puts a placeholder where one member would go.
struct WriterWithout {
  fields::Writer inner;
  std::string_view left_out;
  const nlohmann::ordered_json& placeholder;
  template <class T>
  void operator()(const char* key, const T& value) const {
    if (key == left_out)
      inner.out[key] = placeholder;
    else
      inner(key, value);
  }
};
}  // namespace

nlohmann::ordered_json topology_to_json(const ClusterTopology& cluster,
                                        const nlohmann::ordered_json& nodes_placeholder) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  fields_of(cluster, WriterWithout{fields::Writer{out}, "nodes", nodes_placeholder});
  return out;
}

ClusterTopology topology_from_json(const nlohmann::json& j) {
  ClusterTopology cluster;
  if (!j.is_object()) return cluster;
  if (const auto nodes = j.find("nodes"); nodes != j.end() && nodes->is_array())
    for (const nlohmann::json& node : *nodes)
      if (node.is_object()) refuse_unknown_nic_kinds(node);
  fields_of(cluster, fields::Reader{j, "", fields::Mode::lenient});
  return cluster;
}

}  // namespace fabricbench
