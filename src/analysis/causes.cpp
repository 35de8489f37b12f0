// Causes and their fixes. Each rule reads records only; the fixes name the
// hosts, devices and settings the evidence shows, so a renter can act on one
// line without reading the rest of the report.

#include "fabricbench/analysis/causes.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/core/text.hpp"

namespace fabricbench {
namespace {

using Layers = std::vector<FabricLayer>;

// "PIX" .. "SYS" as nvidia-smi writes them; nullopt for "NV#", "X", "?".
std::optional<PciPath> parse_pci_path(const std::string& text) {
  for (const PciPath p : {PciPath::pix, PciPath::pxb, PciPath::phb, PciPath::node, PciPath::sys})
    if (text == label(p)) return p;
  return std::nullopt;
}

std::string hosts_text(const std::vector<std::string>& hosts) {
  if (hosts.size() <= 6) return fmt::format("{}", fmt::join(hosts, ", "));
  return fmt::format("{} and {} more", fmt::join(hosts.begin(), hosts.begin() + 5, ", "), hosts.size() - 5);
}

// ---- anomalies ------------------------------------------------------------

struct AnomalyRule {
  std::string_view kind;
  Layers layers;
  std::string_view cause;  // why it hurts; the anomaly's detail says what was seen
  std::string_view fix;    // {hosts} and {device} are replaced
};

// One row per anomaly kind the topology probe and the configuration rules
// name (records/topology.hpp lists them).
const std::vector<AnomalyRule>& anomaly_rules() {
  static const std::vector<AnomalyRule> rules{
      {"gpu_count",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "a node with fewer GPUs than its peers runs fewer ranks: a job sized for the others does not fit, and a GPU "
       "that fell off the bus (Xid 79) takes its NVLinks with it",
       "check `nvidia-smi -L` and `dmesg | grep -i xid` on {hosts}; a missing GPU needs a reset or a replacement "
       "from the provider, else leave {hosts} out of the job"},
      {"gpu_model",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "a collective runs at the pace of its slowest GPU",
       "ask the provider for identical GPUs, or leave {hosts} out of the job"},
      {"driver",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "nodes on different GPU drivers can differ in CUDA features (CUMEM, NVLS) and so in what NCCL uses",
       "install the driver most nodes run on {hosts}"},
      {"pcie_downtrained",
       {FabricLayer::host_device, FabricLayer::across_nodes},
       "a PCIe link trained below its maximum caps host copies and GPUDirect RDMA traffic at its lower rate",
       "run `lspci -vv -s {device}` on {hosts} (LnkSta against LnkCap) under load; a link that stays low needs the "
       "GPU or its riser reseated: ask the provider"},
      {"nvlink_down",
       {FabricLayer::within_node},
       "a GPU with NVLinks down reaches its peers at a fraction of the bandwidth, and rings through it slow the node",
       "check `nvidia-smi nvlink -s` on {hosts}; a link that stays down after a GPU reset needs the provider"},
      {"nic_port_down",
       {FabricLayer::across_nodes},
       "NCCL spreads its channels over the active NICs only: a port down leaves its GPUs to share another NIC",
       "check the cable and the switch port of {device} on {hosts} (`ibstat`, `ip link`); ask the provider to "
       "bring it up"},
      {"nic_slow",
       {FabricLayer::across_nodes},
       "a port that negotiated a lower rate carries every flow through it at that rate",
       "check `ibstat` (Rate) or `ethtool` (Speed) of {device} on {hosts}; a cable or switch port that "
       "negotiates low needs the provider"},
      {"gpudirect_rdma_absent",
       {FabricLayer::across_nodes},
       "without GPUDirect RDMA the NIC cannot read GPU memory: NCCL stages every message through host memory",
       "load the peer-memory module on {hosts} (`modprobe nvidia-peermem`), or use a kernel with dma-buf and NCCL "
       "2.19 or newer"},
      {"gpu_no_local_nic",
       {FabricLayer::across_nodes},
       "traffic from a GPU to a NIC across the sockets crosses the CPU interconnect, which caps it and slows "
       "GPUDirect RDMA",
       "ask the provider where the NICs sit; until then bind each rank to the NIC nearest its GPU "
       "(NCCL_IB_HCA per local rank) on {hosts}"},
      {"h2d_slow",
       {FabricLayer::host_device},
       "host-to-device copies below the peers' point at the GPU's PCIe link or its NUMA placement",
       "bind each rank to its GPU's NUMA node (`mpirun --bind-to numa`, or `numactl`) and check the GPU's PCIe link "
       "on {hosts}"},
      {"d2h_slow",
       {FabricLayer::host_device},
       "device-to-host copies below the peers' point at the GPU's PCIe link or its NUMA placement",
       "bind each rank to its GPU's NUMA node (`mpirun --bind-to numa`, or `numactl`) and check the GPU's PCIe link "
       "on {hosts}"},
      {"topology_unreadable",
       {FabricLayer::within_node, FabricLayer::host_device, FabricLayer::across_nodes},
       "without the node's record nothing about its hardware can be judged",
       "run `fabricbench topo` on {hosts} to see why its record did not parse"},
      {"pcie_oversubscribed",
       {FabricLayer::host_device, FabricLayer::within_node},
       "GPUs below one PCIe switch share its uplink: at once they move no more than the uplink carries",
       "expect the uplink's bound when all GPUs of {hosts} copy to the host at once, or ask for a system with one "
       "switch uplink per GPU"},
      {"pcie_contention",
       {FabricLayer::host_device, FabricLayer::within_node},
       "GPUs copying at once got less each than alone: a shared PCIe bridge or the root complex limits them",
       "keep concurrent host copies of {hosts} on GPUs below different bridges, or expect the shared rate"},
      {"acs_redirect",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "ACS sends GPU peer and GPU-NIC traffic up to the root complex instead of across the switch",
       "turn ACS off on {hosts}: in the BIOS, or as root `setpci -s <bridge> ECAP_ACS+0x6.w=0000` for each bridge "
       "listed"},
      {"iommu_translated",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "the IOMMU remaps every DMA: GPU peer and GPUDirect RDMA traffic slows or is refused",
       "boot {hosts} with iommu=pt (with intel_iommu=on or amd_iommu=on), or ask the provider for passthrough"},
      {"p2p_through_host",
       {FabricLayer::within_node},
       "GPU peer copies at host-path speed are staged through host memory",
       "check ACS and the IOMMU on {hosts} and the BIOS' PCIe peer-to-peer setting; ask the provider"},
      {"version_drift",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "nodes that run different software can disagree on protocols and tuning, and hang or slow the collective",
       "install the version most ranks run on {hosts}"},
      {"setting_drift",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "ranks launched with different settings can choose different algorithms, transports or interfaces",
       "launch every rank with the same NCCL_* environment (with Open MPI, one -x list for every app context) and "
       "the same nccl.conf; {hosts} differ"},
      {"nccl_forced",
       {FabricLayer::within_node, FabricLayer::across_nodes},
       "a forced algorithm or protocol stops NCCL choosing per message size and scale",
       "unset the forced NCCL_ALGO or NCCL_PROTO on {hosts} unless you measured it to be better"},
      {"rdma_disabled",
       {FabricLayer::across_nodes},
       "NCCL sends over TCP sockets while RDMA ports are up",
       "unset NCCL_IB_DISABLE (or NCCL_NET=Socket) on {hosts}, in the environment and in nccl.conf"},
      {"nccl_device_missing",
       {FabricLayer::across_nodes},
       "a device list that names no device the node has leaves NCCL fewer NICs, or none",
       "set NCCL_SOCKET_IFNAME or NCCL_IB_HCA on {hosts} to devices it has (`ip link`, `ibv_devices`), or unset it"},
      {"memlock_low",
       {FabricLayer::across_nodes},
       "RDMA pins the buffers it registers: a low locked-memory limit makes NCCL fail or fall back",
       "set the locked-memory limit unlimited on {hosts} (`memlock unlimited` in limits.conf; containers: "
       "--ulimit memlock=-1)"},
      {"mtu_mismatch",
       {FabricLayer::across_nodes},
       "a path between interfaces of different MTUs carries the smaller, and drops large frames where it does not "
       "fragment",
       "set one MTU on every node's interface and the switch ports (`ip link set dev <if> mtu <n>` on {hosts})"},
  };
  return rules;
}

const AnomalyRule* rule_of(std::string_view kind) {
  for (const AnomalyRule& r : anomaly_rules())
    if (r.kind == kind) return &r;
  return nullptr;
}

std::string fill_in(std::string_view text, const std::string& hosts, const std::string& device) {
  std::string out(text);
  for (const auto& [key, value] : {std::pair<std::string_view, const std::string&>{"{hosts}", hosts},
                                   std::pair<std::string_view, const std::string&>{"{device}", device}}) {
    for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size()))
      out.replace(at, key.size(), value);
  }
  return out;
}

// A detail that carries its own fix ("...; ... . Fix: turn ACS off ...")
// keeps it: the probe knew the exact bridges.
std::pair<std::string, std::string> split_fix(const std::string& detail) {
  const std::size_t at = detail.find("Fix: ");
  if (at == std::string::npos) return {detail, ""};
  std::string before = detail.substr(0, at);
  while (!before.empty() && (before.back() == ' ' || before.back() == '.')) before.pop_back();
  return {before, detail.substr(at + 5)};
}

// The PCI address in a device label "GPU 3 (0000:5d:00.0)"; else the label.
std::string device_address(const std::string& device) {
  const std::size_t open = device.find('(');
  const std::size_t close = device.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return device.empty() ? "<device>" : device;
  return device.substr(open + 1, close - open - 1);
}

// ---- NCCL's log -----------------------------------------------------------

const NodeTopology* node_of(const ClusterTopology* topology, const std::string& host) {
  if (topology == nullptr) return nullptr;
  for (const NodeTopology& n : topology->nodes)
    if (n.host.hostname == host) return &n;
  return nullptr;
}

const NodeConfig* config_of(const ClusterTopology* topology, const std::string& host) {
  if (topology == nullptr) return nullptr;
  for (const NodeConfig& c : topology->configuration)
    if (c.host == host) return &c;
  return nullptr;
}

std::vector<std::string> active_rdma_ports(const NodeTopology* node) {
  std::vector<std::string> ports;
  if (node == nullptr) return ports;
  for (const NicInfo& nic : node->nics) {
    if (!is_rdma(nic)) continue;
    for (const NicPort& p : nic.ports)
      if (p.state == "ACTIVE") ports.push_back(fmt::format("{}:{}", nic.name, p.port));
  }
  return ports;
}

// A setting as NCCL said it took it, else as the configuration probe read it.
std::optional<std::string> setting(const NcclRankUsage& rank, const NodeConfig* config, const std::string& name) {
  if (const auto it = rank.environment.find(name); it != rank.environment.end()) return it->second;
  if (config != nullptr) {
    if (const auto it = config->environment.find(name); it != config->environment.end()) return it->second;
    if (const auto it = config->nccl_conf.find(name); it != config->nccl_conf.end()) return it->second;
  }
  return std::nullopt;
}

// The ranks a rule names, gathered by host: "node2 (ranks 4, 5)".
struct ByHost {
  std::map<std::string, std::vector<int>> ranks;
  std::vector<std::string> order;
  void add(const NcclRankUsage& r) {
    auto [it, added] = ranks.try_emplace(r.host);
    if (added) order.push_back(r.host);
    it->second.push_back(r.rank);
  }
  [[nodiscard]] bool empty() const { return order.empty(); }
  [[nodiscard]] std::string text() const {
    std::vector<std::string> parts;
    for (const std::string& h : order) {
      const std::vector<int>& rs = ranks.at(h);
      parts.push_back(fmt::format("{} (rank{} {})", h, rs.size() == 1 ? "" : "s", fmt::join(rs, ", ")));
    }
    return hosts_text(parts);
  }
};

std::set<std::string> vias(const NcclRankUsage& r, PeerClass between) {
  std::set<std::string> out;
  for (const NcclPath& p : r.paths)
    if (p.between == between && p.connections > 0) out.insert(p.via);
  return out;
}

// The NIC a NET path used: "NET/IB/1/GDRDMA" is NCCL's device 1 of its list.
std::optional<std::string> nic_of_path(const NcclRankUsage& r, std::string_view via) {
  if (path_family(via) != "NET") return std::nullopt;
  const std::size_t first = via.find('/', 4);
  if (first == std::string_view::npos) return std::nullopt;
  const std::string_view rest = via.substr(first + 1);
  // "NET/IB/1(2)/GDRDMA": device 1, through rank 2's NIC (PXN).
  const std::optional<int> index = whole_int(rest.substr(0, rest.find_first_of("/(")));
  if (!index || *index < 0 || static_cast<std::size_t>(*index) >= r.nics.size()) return std::nullopt;
  std::string nic = r.nics[static_cast<std::size_t>(*index)];
  return nic.substr(0, nic.find(':'));  // "mlx5_0:1/IB" -> "mlx5_0"
}

// The PCI address of a rank's GPU, from run.devices
// ("rank R: host GPU index name... bus-id UUID (compute X.Y)").
std::optional<std::string> gpu_address_of(const std::vector<std::string>& devices, int rank) {
  const std::string prefix = fmt::format("rank {}: ", rank);
  for (const std::string& d : devices) {
    if (d.rfind(prefix, 0) != 0) continue;
    std::istringstream words(d.substr(prefix.size()));
    std::string w;
    while (words >> w)
      if (w.size() >= 12 && w[4] == ':' && w[7] == ':' && w[10] == '.') return lower_ascii(w);
  }
  return std::nullopt;
}

struct NcclRules {
  const NcclUsage& usage;
  const ClusterTopology* topology;
  const std::vector<std::string>& devices;
  std::vector<Cause> out;

  void add(std::string kind, Level level, Layers layers, const ByHost& who, std::string observed, std::string cause,
           std::string fix) {
    Cause c;
    c.kind = std::move(kind);
    c.level = level;
    c.verdict_kind = VerdictKind::nccl;
    c.layers = std::move(layers);
    c.hosts = who.order;
    c.subject = hosts_text(who.order);
    c.observed = std::move(observed);
    c.cause = std::move(cause);
    c.fix = std::move(fix);
    out.push_back(std::move(c));
  }

  // Sockets across nodes while the node has active RDMA ports; the setting
  // that did it when one is set, else what NCCL's own lines show.
  void socket_fallback() {
    std::map<std::string, ByHost> by_reason;
    std::map<std::string, std::string> fix_of;
    std::vector<std::string> reasons;
    for (const NcclRankUsage& r : usage.ranks) {
      const std::set<std::string> across = vias(r, PeerClass::across_nodes);
      const bool sockets =
          std::any_of(across.begin(), across.end(), [](const std::string& v) { return path_network(v) == "Socket"; }) ||
          (across.empty() && r.network == "Socket");
      if (!sockets) continue;
      const NodeTopology* node = node_of(topology, r.host);
      const std::vector<std::string> ports = active_rdma_ports(node);
      if (ports.empty()) continue;  // no RDMA to fall back from: the references say what sockets reach
      const NodeConfig* config = config_of(topology, r.host);
      std::string reason;
      std::string fix;
      const auto ib_disable = setting(r, config, "NCCL_IB_DISABLE");
      const auto net = setting(r, config, "NCCL_NET");
      const auto hca = setting(r, config, "NCCL_IB_HCA");
      if (ib_disable && *ib_disable != "0") {
        reason = fmt::format("NCCL_IB_DISABLE={} is set", *ib_disable);
        fix = "unset NCCL_IB_DISABLE (environment and nccl.conf) on {hosts}";
      } else if (net && lower_ascii(*net) == "socket") {
        reason = fmt::format("NCCL_NET={} is set", *net);
        fix = "unset NCCL_NET on {hosts}, or set it to the network the RDMA NICs carry (IB)";
      } else if (hca) {
        reason = fmt::format("NCCL_IB_HCA={} selects none of the active ports ({})", *hca, fmt::join(ports, ", "));
        fix =
            fmt::format("set NCCL_IB_HCA on {{hosts}} to ports the node has ({}), or unset it", fmt::join(ports, ","));
      } else if (r.net_plugin) {
        reason = fmt::format("the net plugin {} offered no RDMA device", *r.net_plugin);
        fix = "check the plugin's own log (NCCL_DEBUG=INFO) on {hosts}, or remove it so NCCL's IB transport is used";
      } else {
        reason =
            "NCCL found no usable IB device: libibverbs (rdma-core) missing where the job runs, or the RDMA devices "
            "(/dev/infiniband) not passed into the container";
        fix =
            "install rdma-core (libibverbs) where the job runs on {hosts} and pass /dev/infiniband into the "
            "container (Kubernetes: the RDMA device plugin's resource)";
      }
      auto [it, added] = by_reason.try_emplace(reason);
      if (added) reasons.push_back(reason);
      it->second.add(r);
      fix_of[reason] = fix;
    }
    for (const std::string& reason : reasons) {
      const ByHost& who = by_reason.at(reason);
      std::vector<std::string> ports;
      for (const std::string& h : who.order)
        for (const std::string& p : active_rdma_ports(node_of(topology, h)))
          ports.push_back(fmt::format("{} {}", h, p));
      add("socket_fallback", Level::warn, {FabricLayer::across_nodes}, who,
          fmt::format("NCCL sent across nodes over TCP sockets on {} while RDMA ports are active ({})", who.text(),
                      hosts_text(ports)),
          reason, fill_in(fix_of.at(reason), hosts_text(who.order), ""));
    }
  }

  // IB without GPUDirect RDMA where the node could do it, or could with its
  // peer-memory module loaded.
  void gdr_off() {
    ByHost ready;
    ByHost absent;
    ByHost forced;
    std::string level_setting;
    for (const NcclRankUsage& r : usage.ranks) {
      const std::set<std::string> across = vias(r, PeerClass::across_nodes);
      // An RDMA network: IB or a plugin's, not the socket transport.
      const auto rdma = [](const std::string& v) { return path_family(v) == "NET" && path_network(v) != "Socket"; };
      const bool rdma_path = std::any_of(across.begin(), across.end(), rdma);
      const bool gdr_path = std::any_of(across.begin(), across.end(), [](const std::string& v) { return path_gdr(v); });
      // Off: RDMA connections without /GDRDMA, or (no connection logged) NCCL
      // said so for this GPU on an RDMA network.
      const bool off = rdma_path ? !gdr_path : across.empty() && r.gdr == false && r.network && *r.network != "Socket";
      if (!off) continue;
      const NodeTopology* node = node_of(topology, r.host);
      const NodeConfig* config = config_of(topology, r.host);
      if (const auto level = setting(r, config, "NCCL_NET_GDR_LEVEL")) {
        level_setting = *level;
        forced.add(r);
      } else if (node != nullptr && (node->gpudirect.status == GdrStatus::ready || node->gpudirect.dma_buf == true)) {
        ready.add(r);
      } else {
        absent.add(r);
      }
    }
    if (!forced.empty())
      add("gdr_off", Level::warn, {FabricLayer::across_nodes}, forced,
          fmt::format("NCCL ran its RDMA network without GPUDirect RDMA on {}", forced.text()),
          fmt::format("NCCL_NET_GDR_LEVEL={} keeps GPUDirect RDMA to GPU-NIC paths closer than these", level_setting),
          fmt::format("unset NCCL_NET_GDR_LEVEL on {}", hosts_text(forced.order)));
    if (!ready.empty())
      add("gdr_off", Level::warn, {FabricLayer::across_nodes}, ready,
          fmt::format("NCCL ran its RDMA network without GPUDirect RDMA on {}, though the node has a peer-memory "
                      "module or dma-buf",
                      ready.text()),
          "the GPU-NIC path is longer than NCCL's GPUDirect RDMA distance (PHB by default): the NIC is across "
          "a root complex or the sockets from the GPU, or ACS or the IOMMU stop peer traffic",
          fmt::format("bind each rank to the NIC under its GPU's PCIe switch on {} (NCCL_IB_HCA per local rank) and "
                      "check the ACS and IOMMU anomalies; NCCL_NET_GDR_LEVEL=SYS forces it where the path allows",
                      hosts_text(ready.order)));
    if (!absent.empty())
      add("gdr_off", Level::warn, {FabricLayer::across_nodes}, absent,
          fmt::format("NCCL ran its RDMA network without GPUDirect RDMA on {}", absent.text()),
          "no peer-memory module (nvidia_peermem) is loaded and the kernel offers no dma-buf the NIC can use, so "
          "every message is staged through host memory",
          fmt::format("`modprobe nvidia-peermem` on {} (or a kernel with dma-buf and NCCL 2.19 or newer)",
                      hosts_text(absent.order)));
  }

  // Fewer NICs listed and used than the node has active RDMA ports.
  void nics_unused() {
    std::map<std::string, std::set<std::string>> used;
    std::map<std::string, ByHost> who;
    std::vector<std::string> order;
    for (const NcclRankUsage& r : usage.ranks) {
      bool ib = false;
      for (const std::string& n : r.nics)
        if (n.find("/IB") != std::string::npos || n.find("/RoCE") != std::string::npos) {
          ib = true;
          used[r.host].insert(n.substr(0, n.find('/')));
        }
      if (!ib) continue;
      auto [it, added] = who.try_emplace(r.host);
      if (added) order.push_back(r.host);
      it->second.add(r);
    }
    for (const std::string& host : order) {
      const std::vector<std::string> ports = active_rdma_ports(node_of(topology, host));
      std::vector<std::string> unused;
      for (const std::string& p : ports)
        if (!used[host].contains(p)) unused.push_back(p);
      if (unused.empty()) continue;
      const NodeConfig* config = config_of(topology, host);
      std::optional<std::string> hca;
      for (const NcclRankUsage& r : usage.ranks)
        if (r.host == host && !hca) hca = setting(r, config, "NCCL_IB_HCA");
      add("nics_unused", Level::warn, {FabricLayer::across_nodes}, who.at(host),
          fmt::format("NCCL used {} of the {} active RDMA ports of {}; unused: {}", used[host].size(), ports.size(),
                      host, fmt::join(unused, ", ")),
          hca ? fmt::format("NCCL_IB_HCA={} leaves them out", *hca)
              : std::string("NCCL left them out: ports on another subnet or partition than their peers, or a "
                            "link layer NCCL does not pair"),
          hca ? fmt::format("widen NCCL_IB_HCA on {} to every active port ({}), or unset it", host,
                            fmt::join(ports, ","))
              : fmt::format("check `ibstat` and the partition keys of {} on {} against the other nodes'",
                            fmt::join(unused, ", "), host));
    }
  }

  // The network between ranks of one node, or shared memory where GPUs
  // could reach each other directly.
  void within_node() {
    ByHost net;
    ByHost shm;
    std::string shm_reason;
    std::string shm_fix;
    for (const NcclRankUsage& r : usage.ranks) {
      const std::set<std::string> within = vias(r, PeerClass::within_node);
      if (std::any_of(within.begin(), within.end(), [](const std::string& v) { return path_family(v) == "NET"; }))
        net.add(r);
      const bool uses_shm =
          std::any_of(within.begin(), within.end(), [](const std::string& v) { return path_family(v) == "SHM"; });
      if (!uses_shm) continue;
      const NodeTopology* node = node_of(topology, r.host);
      bool direct = false;  // some GPU pair of the node could use P2P: NVLink, or one PCIe switch
      if (node != nullptr)
        for (const auto& row : node->gpu_matrix)
          for (const std::string& cell : row)
            direct = direct || cell.rfind("NV", 0) == 0 || cell == "PIX" || cell == "PXB";
      if (!direct) continue;
      const NodeConfig* config = config_of(topology, r.host);
      if (const auto d = setting(r, config, "NCCL_P2P_DISABLE"); d && *d != "0") {
        shm_reason = fmt::format("NCCL_P2P_DISABLE={} is set", *d);
        shm_fix = "unset NCCL_P2P_DISABLE on {hosts}";
      } else if (const auto l = setting(r, config, "NCCL_P2P_LEVEL")) {
        shm_reason = fmt::format("NCCL_P2P_LEVEL={} is closer than the GPUs' paths", *l);
        shm_fix = "unset NCCL_P2P_LEVEL on {hosts}";
      } else if (shm_reason.empty()) {
        shm_reason =
            "CUDA peer access is refused between these GPUs (ACS, the IOMMU, a VM without peer-to-peer, or "
            "processes in containers that cannot share GPU memory)";
        shm_fix =
            "see the ACS and IOMMU anomalies of {hosts}; in containers run the node's ranks in one container or "
            "with --ipc=host and every GPU visible";
      }
      shm.add(r);
    }
    if (!net.empty())
      add("net_within_node", Level::warn, {FabricLayer::within_node}, net,
          fmt::format("NCCL connected ranks of one node through the network on {}", net.text()),
          "neither P2P nor shared memory worked between them: NCCL_P2P_DISABLE and NCCL_SHM_DISABLE set, or "
          "ranks in containers that share no /dev/shm and no IPC namespace (or distinct NCCL_HOSTID)",
          fmt::format("unset NCCL_P2P_DISABLE and NCCL_SHM_DISABLE on {} and run each node's ranks in one container, "
                      "or with --ipc=host and a shared /dev/shm",
                      hosts_text(net.order)));
    if (!shm.empty())
      add("p2p_disabled", Level::warn, {FabricLayer::within_node}, shm,
          fmt::format("NCCL copied between GPUs of one node through host shared memory on {}, though the GPUs are "
                      "linked by NVLink or one PCIe switch",
                      shm.text()),
          shm_reason, fill_in(shm_fix, hosts_text(shm.order), ""));
  }

  // An NVSwitch system without NVLS.
  void nvls_absent() {
    ByHost off;
    std::string reason =
        "NVLink SHARP (multicast) is not available: the fabric manager is not running, or the GPUs sit in a "
        "partition without multicast";
    std::string fix =
        "start the fabric manager on {hosts} (`systemctl start nvidia-fabricmanager`) and check "
        "`nvidia-smi -q | grep -A2 Fabric`";
    for (const NcclRankUsage& r : usage.ranks) {
      const NodeTopology* node = node_of(topology, r.host);
      if (node == nullptr) continue;
      bool nvswitch = false;
      for (const GpuInfo& g : node->gpus)
        for (const NvLink& l : g.nvlinks) nvswitch = nvswitch || l.remote_kind == LinkPeer::nvswitch;
      if (!nvswitch || !(r.nvls == false || r.nvls_channels == 0)) continue;
      const NodeConfig* config = config_of(topology, r.host);
      if (const auto e = setting(r, config, "NCCL_NVLS_ENABLE"); e && *e == "0") {
        reason = "NCCL_NVLS_ENABLE=0 is set";
        fix = "unset NCCL_NVLS_ENABLE on {hosts}";
      }
      off.add(r);
    }
    if (!off.empty())
      add("nvls_absent", Level::warn, {FabricLayer::within_node}, off,
          fmt::format("NCCL has no NVLS on {}, an NVSwitch system", off.text()), reason,
          fill_in(fix, hosts_text(off.order), ""));
  }

  // A rank whose NET traffic left through a NIC farther from its GPU than
  // the nearest one.
  void far_nic() {
    ByHost who;
    std::vector<std::string> what;
    std::vector<std::string> nearer;
    for (const NcclRankUsage& r : usage.ranks) {
      const NodeTopology* node = node_of(topology, r.host);
      const std::optional<std::string> gpu = gpu_address_of(devices, r.rank);
      if (node == nullptr || !gpu) continue;
      std::optional<std::size_t> gi;
      for (std::size_t i = 0; i < node->gpus.size(); ++i)
        if (lower_ascii(node->gpus[i].pci_bus_id) == *gpu) gi = i;
      if (!gi || *gi >= node->nic_matrix.size() || *gi >= node->nearest_nic.size()) continue;
      const GpuNicAffinity& best = node->nearest_nic[*gi];
      if (!best.nic || !best.path) continue;
      for (const NcclPath& p : r.paths) {
        if (p.between != PeerClass::across_nodes) continue;
        const std::optional<std::string> nic = nic_of_path(r, p.via);
        if (!nic || *nic == *best.nic) continue;
        for (std::size_t k = 0; k < node->nics.size() && k < node->nic_matrix[*gi].size(); ++k) {
          if (node->nics[k].name != *nic) continue;
          const std::optional<PciPath> used = parse_pci_path(node->nic_matrix[*gi][k]);
          if (!used || *used <= *best.path || *used < PciPath::node) continue;
          who.add(r);
          what.push_back(fmt::format("rank {} (GPU {}) through {} ({})", r.rank, *gpu, *nic, label(*used)));
          nearer.push_back(fmt::format("{} ({})", *best.nic, label(*best.path)));
        }
      }
    }
    if (who.empty()) return;
    add("far_nic", Level::warn, {FabricLayer::across_nodes}, who,
        fmt::format("NCCL sent across nodes through a distant NIC: {}", hosts_text(what)),
        fmt::format("a nearer NIC exists ({}); the rank's GPU and NIC order do not match, so traffic crosses the "
                    "CPU interconnect",
                    hosts_text(nearer)),
        fmt::format("bind each local rank to the GPU and NIC under one PCIe switch on {} (the launcher's GPU "
                    "order, or NCCL_IB_HCA per local rank)",
                    hosts_text(who.order)));
  }

  // Different NCCL versions across ranks, as NCCL itself said.
  void versions() {
    std::map<std::string, ByHost> by_version;
    for (const NcclRankUsage& r : usage.ranks)
      if (r.version) by_version[*r.version].add(r);
    if (by_version.size() < 2) return;
    std::size_t most = 0;
    std::string usual;
    for (const auto& [v, who] : by_version) {
      std::size_t n = 0;
      for (const auto& [h, rs] : who.ranks) n += rs.size();
      if (n > most) {
        most = n;
        usual = v;
      }
    }
    for (const auto& [v, who] : by_version) {
      if (v == usual) continue;
      add("nccl_version_mixed", Level::warn, {FabricLayer::within_node, FabricLayer::across_nodes}, who,
          fmt::format("NCCL {} on {}; most ranks run {}", v, who.text(), usual),
          "ranks on different NCCL versions can choose different protocols and hang or slow the collective",
          fmt::format("run NCCL {} on {}", usual, hosts_text(who.order)));
    }
  }

  // What NCCL warned about, as NCCL wrote it.
  void warnings() {
    std::map<std::string, ByHost> by_line;
    std::vector<std::string> order;
    for (const NcclRankUsage& r : usage.ranks)
      for (const std::string& w : r.warnings) {
        auto [it, added] = by_line.try_emplace(w);
        if (added) order.push_back(w);
        it->second.add(r);
      }
    for (const std::string& w : order) {
      Cause c;
      c.kind = "nccl_warning";
      c.level = Level::info;
      c.verdict_kind = VerdictKind::nccl;
      c.layers = {FabricLayer::within_node, FabricLayer::across_nodes};
      c.hosts = by_line.at(w).order;
      c.subject = hosts_text(c.hosts);
      c.observed = fmt::format("NCCL warned on {}: {}", by_line.at(w).text(), w);
      out.push_back(std::move(c));
    }
    for (const NcclRankUsage& r : usage.ranks)
      for (const std::string& d : r.diagnostics) {
        Cause c;
        c.kind = "nccl_diagnostic";
        c.level = Level::info;
        c.verdict_kind = VerdictKind::nccl;
        c.layers = {FabricLayer::within_node, FabricLayer::across_nodes};
        c.hosts = {r.host};
        c.subject = r.host;
        c.observed = fmt::format("NCCL's diagnostics on {} (rank {}): {}", r.host, r.rank, d);
        out.push_back(std::move(c));
      }
  }
};

}  // namespace

std::vector<Cause> anomaly_causes(const std::vector<Anomaly>& anomalies) {
  std::vector<Cause> out;
  std::map<std::pair<std::string, std::string>, std::size_t> at;
  for (const Anomaly& a : anomalies) {
    const auto [observed, own_fix] = split_fix(a.detail);
    const auto key = std::make_pair(a.kind, observed);
    if (const auto it = at.find(key); it != at.end()) {
      Cause& c = out[it->second];
      if (std::find(c.hosts.begin(), c.hosts.end(), a.host) == c.hosts.end()) c.hosts.push_back(a.host);
      c.subject = hosts_text(c.hosts);
      continue;
    }
    at.emplace(key, out.size());
    Cause c;
    c.kind = a.kind;
    c.level = Level::warn;
    c.verdict_kind = VerdictKind::anomaly;
    c.hosts = {a.host};
    c.subject = a.device.empty() ? a.host : a.host + " " + a.device;
    c.observed = fmt::format("{}: {}", a.kind, observed);
    if (const AnomalyRule* rule = rule_of(a.kind)) {
      c.layers = rule->layers;
      c.cause = std::string(rule->cause);
      c.fix = own_fix.empty() ? fill_in(rule->fix, a.host, device_address(a.device)) : own_fix;
    } else {
      c.layers = {FabricLayer::within_node, FabricLayer::host_device, FabricLayer::across_nodes};
      c.cause = "the probe found " + a.kind + " on this node and not on its peers";
      c.fix = own_fix.empty() ? fmt::format("compare `fabricbench topo` of {} with a healthy node's", a.host) : own_fix;
    }
    out.push_back(std::move(c));
  }
  // Grouped causes name every host in their fix.
  for (Cause& c : out) {
    if (c.hosts.size() < 2) continue;
    if (const AnomalyRule* rule = rule_of(c.kind); rule != nullptr && c.fix.find(c.hosts.front()) != std::string::npos)
      c.fix = fill_in(rule->fix, hosts_text(c.hosts), "<device>");
  }
  return out;
}

std::vector<Cause> nccl_causes(const NcclUsage& usage, const ClusterTopology* topology,
                               const std::vector<std::string>& devices) {
  NcclRules rules{usage, topology, devices, {}};
  rules.socket_fallback();
  rules.gdr_off();
  rules.nics_unused();
  rules.within_node();
  rules.nvls_absent();
  rules.far_nic();
  rules.versions();
  rules.warnings();
  return std::move(rules.out);
}

std::vector<Cause> finding_causes(const std::vector<Finding>& findings, const RunResult& result) {
  std::vector<Cause> out;
  const std::vector<Anomaly> none;
  const std::vector<Anomaly>& anomalies = result.topology ? result.topology->anomalies : none;
  for (const Finding& f : findings) {
    Cause c;
    c.kind = std::string(name(f.kind));
    c.level = Level::warn;
    c.verdict_kind = VerdictKind::finding;
    c.layers = {FabricLayer::across_nodes};
    c.hosts = f.hosts;
    const std::string rail = f.rail ? fmt::format(" rail {}", *f.rail) : std::string();
    const std::string on_rail = f.rail ? fmt::format(" on rail {}", *f.rail) : std::string();
    std::string what;
    std::string median;
    switch (f.kind) {
      case FindingKind::slow_node:
        c.subject = hosts_text(f.hosts);
        what = fmt::format("links of {}", hosts_text(f.hosts));
        median = "median of the nodes";
        break;
      case FindingKind::slow_nic:
        c.subject = fmt::format("{}{}", hosts_text(f.hosts), rail);
        what = fmt::format("{} links of {}", rail.substr(1), hosts_text(f.hosts));
        median = fmt::format("median of the nodes'{}", rail);
        break;
      case FindingKind::slow_uplink:
        c.subject = fmt::format("uplink of {}", hosts_text(f.hosts));
        what = fmt::format("node pairs across the uplink of {}", hosts_text(f.hosts));
        median = "node pairs within each group";
        break;
      case FindingKind::slow_link:
        c.subject = fmt::format("{}{}", fmt::join(f.hosts, " <-> "), on_rail);
        what = fmt::format("link {}{}", fmt::join(f.hosts, " <-> "), on_rail);
        median = f.rail ? fmt::format("median{} link", rail) : std::string("median link");
        break;
    }
    c.observed = f.message;
    const double share = f.reference_gbs > 0 ? 100.0 * f.value_gbs / f.reference_gbs : 0;
    if (f.metric == FindingMetric::latency && f.value_us && f.reference_us) {
      c.evidence = {{what, *f.value_us, "us"},
                    {median, *f.reference_us, "us"},
                    {"times the median", *f.value_us / *f.reference_us, "x"}};
    } else {
      c.evidence = {
          {what, f.value_gbs, "GB/s"}, {median, f.reference_gbs, "GB/s"}, {"share of the median", share, "%"}};
    }
    // The second pass's figures, partner by partner.
    for (const Recheck& r : f.checks) {
      if (r.bandwidth_gbs)
        c.evidence.push_back({fmt::format("again {} <-> {}", r.hosts[0], r.hosts[1]), *r.bandwidth_gbs, "GB/s"});
      if (r.latency_us && f.metric != FindingMetric::bandwidth)
        c.evidence.push_back({fmt::format("again {} <-> {}", r.hosts[0], r.hosts[1]), *r.latency_us, "us"});
    }
    if (f.confirmed && !*f.confirmed) {
      // Never an accusation: one pass saw it, the second did not.
      c.kind = "not_confirmed";
      c.level = Level::info;
      c.cause =
          "the first pass measured it slow; measured again with other partners, apart from the first "
          "pass's load, it was not";
      c.fix = "run again to see whether it comes back; a node that is slow now and then is worth a longer p2p run";
      out.push_back(std::move(c));
      continue;
    }
    // What the node's own probe shows that would explain it.
    std::vector<std::string> probed;
    for (const Anomaly& a : anomalies) {
      if (std::find(f.hosts.begin(), f.hosts.end(), a.host) == f.hosts.end()) continue;
      const AnomalyRule* rule = rule_of(a.kind);
      const bool network = rule == nullptr || std::find(rule->layers.begin(), rule->layers.end(),
                                                        FabricLayer::across_nodes) != rule->layers.end();
      if (network) probed.push_back(fmt::format("{} {}", a.host, split_fix(a.detail).first));
    }
    if (!probed.empty()) {
      c.cause = fmt::format("confirmed with other partners; {}'s own probe shows {}", hosts_text(f.hosts),
                            fmt::join(probed, "; "));
      c.fix = fmt::format(
          "fix what the probe shows on {} (see its anomaly), then measure again; until then leave it "
          "out of the job",
          hosts_text(f.hosts));
    } else if (f.kind == FindingKind::slow_uplink) {
      c.cause = fmt::format(
          "every node is fast with its own group and slow with the other: the path between the groups, a switch "
          "uplink (or a route) that {} share, is slower than the nodes' own links",
          hosts_text(f.hosts));
      c.fix = fmt::format(
          "ask the provider for the uplink between the switches of these groups (its speed, errors and "
          "oversubscription), with these figures; until then place the ranks that talk most within one group, "
          "or take nodes from one group only");
    } else if (f.kind == FindingKind::slow_nic) {
      c.cause = fmt::format(
          "{}'s exchanges{} are slow with every partner, while its other rails and the other nodes'{} links are "
          "not: the NIC of that rail (the one local rank {} uses), its cable or its switch port",
          hosts_text(f.hosts), on_rail, rail, *f.rail);
      c.fix = fmt::format(
          "ask the provider to check the{} NIC of {} (its link speed and errors: ibstat or ethtool on the node), its "
          "cable and switch port, with these figures; until then the job runs at that NIC's speed wherever it "
          "crosses nodes, so leave {} out (mpirun --host without it)",
          rail, hosts_text(f.hosts), hosts_text(f.hosts));
    } else if (f.kind == FindingKind::slow_node) {
      c.cause = fmt::format(
          "every link of {} is slow and the other links are not: its NIC, cable, switch port or a shaping rule on "
          "the node, which its probe does not show",
          hosts_text(f.hosts));
      c.fix = fmt::format(
          "leave {} out of the job (mpirun --host without it) and ask the provider to check its NIC, cable and "
          "switch port, with these pair figures",
          hosts_text(f.hosts));
    } else {
      c.cause = fmt::format(
          "this pair is slow{} while each end is fast with its other partners: the path between them (a switch "
          "uplink, a cable, a route)",
          on_rail);
      c.fix = fmt::format(
          "ask the provider to check the path between {}{} (switch ports and uplinks), with these pair figures; "
          "place ranks that talk most on other pairs until then",
          fmt::join(f.hosts, " and "), on_rail);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Cause> straggler_causes(const StragglersResult& stragglers) {
  std::vector<Cause> out;
  // Why no rank is named: an INFO about the ranks as a whole.
  const auto note = [&out](std::string kind, const std::string& observed, std::string cause, std::string fix) {
    if (observed.empty()) return;
    Cause c;
    c.kind = std::move(kind);
    c.level = Level::info;
    c.verdict_kind = VerdictKind::finding;
    c.layers = {FabricLayer::within_node};
    c.subject = "ranks";
    c.observed = observed;
    c.cause = std::move(cause);
    c.fix = std::move(fix);
    out.push_back(std::move(c));
  };
  note("pace_not_judged", stragglers.shared,
       "ranks that share CPU cores or a GPU wait for that sharing, not for a slow rank",
       "give each rank a core and a GPU of its own (fewer ranks, or a larger machine) to find slow ranks");
  note("uneven_pace", stragglers.uneven,
       "half the ranks or more are slow together: no one rank or node stands out to name",
       "check that each rank has its own GPU and CPU cores (the launcher's binding), then run again");
  for (const auto* list : {&stragglers.found, &stragglers.unconfirmed}) {
    for (const Straggler& s : *list) {
      Cause c;
      const bool rank = s.kind == StragglerKind::slow_rank;
      c.kind = std::string(name(s.kind));
      c.level = Level::warn;
      c.verdict_kind = VerdictKind::finding;
      c.layers = {FabricLayer::within_node};
      c.hosts = {s.host};
      c.subject = rank && !s.ranks.empty() ? fmt::format("rank {} on {}", s.ranks.front(), s.host) : s.host;
      c.observed = s.message;
      c.evidence = {{"iterations it came late in", static_cast<double>(s.late), ""},
                    {"of iterations", static_cast<double>(s.iterations), ""},
                    {"iterations it arrived last in", static_cast<double>(s.last), ""},
                    {"median time after the first rank", s.lateness_us, "us"},
                    {"its work", s.work_us, "us"},
                    {"the ranks' median work", s.reference_us, "us"}};
      if (s.lost_us) c.evidence.push_back({"mean time after the first rank", *s.lost_us, "us"});
      if (s.again_iterations > 0)
        c.evidence.push_back({"measured again: iterations late in", static_cast<double>(s.again_late), ""});
      if (s.confirmed && !*s.confirmed) {
        c.kind = "not_confirmed";
        c.level = Level::info;
        c.cause = s.again_iterations > 0 ? "the first pace round saw it come late; the second, apart from it, did not"
                                         : "the first pace round saw it come late; the second did not fit the budget";
        c.fix = "run again to see whether it comes back; a rank that falls behind now and then is worth watching";
        out.push_back(std::move(c));
        continue;
      }
      if (rank) {
        c.cause = fmt::format(
            "in both pace rounds this rank came late to the all-reduce, after the same work as every other rank; "
            "its node's other ranks kept pace: its GPU (clocks, power or thermal limits, another process on it) "
            "or, on the MPI transport, the CPU core it runs on");
        c.fix = fmt::format(
            "every collective waits for it: check that GPU on {} (nvidia-smi -q -d PERFORMANCE for throttle "
            "reasons, nvidia-smi for other processes) and the core the rank is bound to, or leave the GPU out",
            s.host);
      } else {
        c.cause = fmt::format(
            "in both pace rounds every rank of {} came late to the all-reduce after the same work as the others: "
            "the node itself (another job on it, power or thermal limits, a slower model), not one GPU",
            s.host);
        c.fix = fmt::format(
            "every collective waits for {}: look for other jobs and throttling on it (nvidia-smi -q -d "
            "PERFORMANCE, top), or leave it out of the job",
            s.host);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Cause> find_causes(const RunResult& result) {
  std::vector<Cause> out = finding_causes(result.findings, result);
  std::vector<Cause> unconfirmed = finding_causes(result.unconfirmed, result);
  out.insert(out.end(), unconfirmed.begin(), unconfirmed.end());
  if (result.stragglers) {
    std::vector<Cause> s = straggler_causes(*result.stragglers);
    out.insert(out.end(), s.begin(), s.end());
  }
  if (result.nccl) {
    std::vector<Cause> n = nccl_causes(*result.nccl, result.topology ? &*result.topology : nullptr, result.run.devices);
    out.insert(out.end(), n.begin(), n.end());
  }
  if (result.topology) {
    std::vector<Cause> a = anomaly_causes(result.topology->anomalies);
    out.insert(out.end(), a.begin(), a.end());
  }
  std::stable_sort(out.begin(), out.end(), [](const Cause& a, const Cause& b) { return a.level > b.level; });
  return out;
}

Verdict verdict_of(const Cause& cause) {
  Verdict v;
  v.level = cause.level;
  v.kind = cause.verdict_kind;
  v.subject = cause.subject;
  v.reason = cause.observed;
  v.hosts = cause.hosts;
  v.evidence = cause.evidence;
  v.cause_kind = cause.kind;
  if (cause.level >= Level::warn) {
    v.cause = cause.cause;
    v.fix = cause.fix;
  }
  return v;
}

bool bears_on(const Cause& cause, FabricLayer layer) {
  return std::find(cause.layers.begin(), cause.layers.end(), layer) != cause.layers.end();
}

}  // namespace fabricbench
