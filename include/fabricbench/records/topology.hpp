#pragma once
// Topology records: what one node holds (host, GPUs, NICs, GPUDirect RDMA
// readiness, measured copy bandwidths) and the cluster view rank 0 derives.
// Plain records: probes fill them, analysis reads them, writers format them.
// A fact that could not be told is an empty std::optional, and the node's
// `notes` say why; it is never a zero standing in for a value.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/name_table.hpp"

namespace fabricbench {

// The closed sets of the records, each with its one name table (the names in
// result files and reports).

// What an NVLink reaches at its other end.
enum class LinkPeer { gpu, nvswitch, cpu, unknown };
inline constexpr NameTable<LinkPeer, 4> link_peer_names{{
    {LinkPeer::gpu, "gpu"},
    {LinkPeer::nvswitch, "switch"},
    {LinkPeer::cpu, "cpu"},
    {LinkPeer::unknown, "unknown"},
}};
constexpr std::string_view name(LinkPeer peer) { return name_in(link_peer_names, peer); }
// An unknown name is LinkPeer::unknown.
constexpr LinkPeer parse_link_peer(std::string_view text) {
  return parse_in(link_peer_names, text).value_or(LinkPeer::unknown);
}

enum class NicKind { infiniband, roce, ethernet };
inline constexpr NameTable<NicKind, 3> nic_kind_names{{
    {NicKind::infiniband, "infiniband"},
    {NicKind::roce, "roce"},
    {NicKind::ethernet, "ethernet"},
}};
constexpr std::string_view name(NicKind kind) { return name_in(nic_kind_names, kind); }
constexpr std::optional<NicKind> parse_nic_kind(std::string_view text) { return parse_in(nic_kind_names, text); }
// InfiniBand and RoCE devices carry RDMA; a plain Ethernet interface does not.
constexpr bool is_rdma(NicKind kind) { return kind == NicKind::infiniband || kind == NicKind::roce; }

// The bus a NIC sits on.
enum class NicBus { pci, virtio, unknown };
inline constexpr NameTable<NicBus, 3> nic_bus_names{{
    {NicBus::pci, "pci"},
    {NicBus::virtio, "virtio"},
    {NicBus::unknown, "unknown"},
}};
constexpr std::string_view name(NicBus bus) { return name_in(nic_bus_names, bus); }
// An unknown name is NicBus::unknown.
constexpr NicBus parse_nic_bus(std::string_view text) {
  return parse_in(nic_bus_names, text).value_or(NicBus::unknown);
}

// Whether GPUDirect RDMA can work: a peer-memory module is loaded (ready), is
// not (absent), or it cannot be told.
enum class GdrStatus { ready, absent, unknown };
inline constexpr NameTable<GdrStatus, 3> gdr_status_names{{
    {GdrStatus::ready, "ready"},
    {GdrStatus::absent, "absent"},
    {GdrStatus::unknown, "unknown"},
}};
constexpr std::string_view name(GdrStatus status) { return name_in(gdr_status_names, status); }
// An unknown name is GdrStatus::unknown.
constexpr GdrStatus parse_gdr_status(std::string_view text) {
  return parse_in(gdr_status_names, text).value_or(GdrStatus::unknown);
}

// How two PCI devices reach each other, in the vocabulary of
// `nvidia-smi topo -m`, best first. NVLink (NV#) is kept apart as a link count.
enum class PciPath { pix, pxb, phb, node, sys };
// "PIX", "PXB", "PHB", "NODE", "SYS".
const char* label(PciPath path);
// "same PCIe switch", "same PCIe root complex", "same NUMA node", "across sockets".
const char* describe(PciPath path);

struct PcieLink {
  std::optional<int> current_gen;  // 1..6, from the link speed in GT/s
  std::optional<int> max_gen;
  std::optional<int> current_width;  // lanes
  std::optional<int> max_width;
};

struct NvLink {
  int link = 0;  // NVML link index
  std::optional<bool> active;
  std::optional<int> version;
  std::optional<std::string> remote_pci;  // bus id at the other end
  std::optional<LinkPeer> remote_kind;
};

struct GpuInfo {
  std::optional<int> index;  // CUDA/NVML index; empty when seen only in sysfs
  std::string pci_bus_id;    // "0000:18:00.0", lower case, 4-digit domain
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::uint64_t> memory_bytes;
  std::optional<int> sm_count;
  std::optional<int> numa_node;
  PcieLink pcie;
  std::vector<NvLink> nvlinks;          // supported links only
  std::optional<std::string> mig_mode;  // "enabled", "disabled"
  std::optional<std::string> ecc_mode;  // "enabled", "disabled"
  // Measured, GB/s (1e9 bytes per second).
  std::optional<double> h2d_gbs;
  std::optional<double> d2h_gbs;
  std::optional<double> local_copy_gbs;
  // Its path to the root complex (sysfs): the root port, and the upstream
  // ports of the PCIe switches between, from the root down.
  std::optional<std::string> root_port;
  std::vector<std::string> pcie_switches;
  // GPU instances carved out of it (MIG), from the driver's capabilities in procfs.
  std::optional<int> mig_instances;
  // "vgpu", "passthrough", "host_vgpu", "host_vsga" (NVML's virtualization
  // mode), "sriov_vf" (an SR-IOV virtual function in sysfs); empty on bare
  // metal or when unknown.
  std::optional<std::string> virtualization;
};

struct HostInfo {
  std::string hostname;
  std::optional<std::string> cpu_model;
  std::optional<int> sockets;
  std::optional<int> cores;    // physical cores, all sockets
  std::optional<int> threads;  // logical CPUs
  std::optional<std::uint64_t> memory_bytes;
  std::optional<int> numa_nodes;
  std::optional<std::string> os;
  std::optional<std::string> kernel;
  std::optional<std::string> gpu_driver;
};

struct NicPort {
  int port = 1;
  std::optional<std::string> state;       // "ACTIVE", "DOWN", "INIT", ...
  std::optional<std::string> phys_state;  // "LinkUp", "Disabled", "Polling", ...
  std::optional<double> rate_gbps;        // Gb/s
  std::optional<std::string> link_layer;  // "InfiniBand", "Ethernet"
};

// An RDMA device (InfiniBand or RoCE) or an Ethernet interface.
struct NicInfo {
  std::string name;  // "mlx5_0", "eth0"
  NicKind kind = NicKind::ethernet;
  std::optional<std::string> pci_address;  // the PCI function (for virtio: the virtio PCI device)
  NicBus bus = NicBus::unknown;
  std::optional<std::string> driver;
  std::optional<int> numa_node;
  std::optional<std::string> firmware;  // RDMA devices
  std::vector<NicPort> ports;           // RDMA devices
  std::vector<std::string> netdevs;     // RDMA devices: their network interfaces
  std::optional<double> speed_gbps;     // Ethernet interfaces
  std::optional<int> mtu;
  std::optional<std::string> operstate;  // "up", "down", ...
};

// An RDMA device (InfiniBand or RoCE), the one definition.
inline bool is_rdma(const NicInfo& nic) { return is_rdma(nic.kind); }

struct GpuDirectRdma {
  GdrStatus status = GdrStatus::unknown;
  std::optional<std::string> module;  // "nvidia_peermem" or "nv_peer_mem" when loaded
  std::optional<bool> dma_buf;        // the kernel exposes dma-buf (the GPU side is not verified)
};

// The nearest NIC of one GPU.
struct GpuNicAffinity {
  std::string gpu;                 // the GPU's PCI bus id
  std::optional<std::string> nic;  // empty when no NIC with a PCI address
  std::optional<PciPath> path;     // empty when it cannot be told
};

// ---- Inside one node: PCIe sharing, peer-to-peer readiness, virtualization

// A bridge's place on the PCIe tree.
enum class BridgeRole { root_port, switch_upstream, switch_downstream };
inline constexpr NameTable<BridgeRole, 3> bridge_role_names{{
    {BridgeRole::root_port, "root_port"},
    {BridgeRole::switch_upstream, "switch_upstream"},
    {BridgeRole::switch_downstream, "switch_downstream"},
}};
constexpr std::string_view name(BridgeRole role) { return name_in(bridge_role_names, role); }

// Access Control Services on a bridge: P2P request or completion redirect on
// (peer traffic is sent up to the root complex), the capability with both
// off (open), no ACS capability (absent), or it cannot be read (unknown).
enum class AcsState { redirect, open, absent, unknown };
inline constexpr NameTable<AcsState, 4> acs_state_names{{
    {AcsState::redirect, "redirect"},
    {AcsState::open, "open"},
    {AcsState::absent, "absent"},
    {AcsState::unknown, "unknown"},
}};
constexpr std::string_view name(AcsState state) { return name_in(acs_state_names, state); }

// A PCIe bridge on some GPU's path to the root complex.
struct PcieBridge {
  std::string pci_bus_id;
  BridgeRole role = BridgeRole::root_port;
  std::optional<std::string> parent;  // the bridge above; empty for a root port
  PcieLink link;                      // for an upstream port: the switch's uplink
  std::vector<std::string> gpus;      // GPUs below it, by PCI bus id
  // Switch upstream ports: downstream ports with a device below, and the
  // per-direction rate of the links from generation and width (GB/s).
  std::optional<int> occupied_ports;
  std::optional<double> uplink_gbs;
  std::optional<double> downstream_gbs;
  std::optional<double> oversubscription;  // downstream_gbs / uplink_gbs
  AcsState acs = AcsState::unknown;
  std::optional<int> acs_control;          // the ACS Control register
  std::optional<std::string> acs_unknown;  // why acs is unknown
};

// How the IOMMU treats DMA: off, passthrough (identity domains), translated
// (DMA or DMA-FQ domains: every device access is remapped), or unknown.
enum class IommuMode { off, passthrough, translated, unknown };
inline constexpr NameTable<IommuMode, 4> iommu_mode_names{{
    {IommuMode::off, "off"},
    {IommuMode::passthrough, "passthrough"},
    {IommuMode::translated, "translated"},
    {IommuMode::unknown, "unknown"},
}};
constexpr std::string_view name(IommuMode mode) { return name_in(iommu_mode_names, mode); }

struct IommuInfo {
  IommuMode mode = IommuMode::unknown;
  std::optional<int> units;                    // /sys/class/iommu entries
  std::optional<int> groups;                   // /sys/kernel/iommu_groups entries
  std::vector<std::string> domain_types;       // distinct default domain types: of the GPUs' groups, else all
  std::vector<std::string> kernel_parameters;  // iommu=, intel_iommu=, amd_iommu= from /proc/cmdline
};

// Signs that the node is a virtual machine.
struct Virtualization {
  std::optional<bool> hypervisor_flag;    // the "hypervisor" CPU flag in /proc/cpuinfo
  std::optional<std::string> hypervisor;  // /sys/hypervisor/type, or the one the DMI names
  std::optional<std::string> platform;    // DMI system vendor and product name
  int virtio_devices = 0;                 // /sys/bus/virtio/devices
};

enum class CopyDirection { host_to_device, device_to_host };
inline constexpr NameTable<CopyDirection, 2> copy_direction_names{{
    {CopyDirection::host_to_device, "host_to_device"},
    {CopyDirection::device_to_host, "device_to_host"},
}};
constexpr std::string_view name(CopyDirection d) { return name_in(copy_direction_names, d); }

// Host<->device copies by a group of GPUs at once, against each alone.
struct ConcurrentCopy {
  std::string scope;                  // "PCIe switch 0000:41:00.0", "root port ...", "all GPUs"
  std::optional<std::string> bridge;  // the bridge the group shares, when one
  CopyDirection direction = CopyDirection::host_to_device;
  std::vector<int> gpus;                           // CUDA indices
  std::vector<std::optional<double>> alone_gbs;    // by position in gpus
  std::vector<std::optional<double>> at_once_gbs;  // the same GPUs, all copying at once
};

struct NodeTopology {
  HostInfo host;
  std::vector<GpuInfo> gpus;  // by index, then PCI bus id
  // Why no GPU is visible ("no GPU visible (...)"); empty when GPUs were found
  // through CUDA/NVML.
  std::string gpu_status;
  std::vector<NicInfo> nics;
  GpuDirectRdma gpudirect;
  // gpu_matrix[i][j]: "X" on the diagonal, "NV#", PIX..SYS, or "?" unknown.
  std::vector<std::vector<std::string>> gpu_matrix;
  // nic_matrix[i][k]: GPU i to nics[k] (PIX..SYS, or "?"), nics without a PCI address included.
  std::vector<std::vector<std::string>> nic_matrix;
  std::vector<GpuNicAffinity> nearest_nic;
  // CUDA peer access and performance rank; empty when not queried.
  std::vector<std::vector<std::optional<bool>>> p2p_access;
  std::vector<std::vector<std::optional<int>>> p2p_rank;
  // Device-to-device copy bandwidth between local GPUs, GB/s; empty when not measured.
  std::vector<std::vector<std::optional<double>>> d2d_gbs;
  std::string method;              // how the bandwidths were measured; empty when not measured
  std::vector<std::string> notes;  // "what: why" for each fact that could not be told
  // Inside the node: the bridges on the GPUs' paths, the IOMMU, signs of a
  // VM (empty in records written before they were probed), and host copies
  // at once against alone (empty when not measured).
  std::vector<PcieBridge> pcie_bridges;
  std::optional<IommuInfo> iommu;
  std::optional<Virtualization> virtualization;
  std::vector<ConcurrentCopy> host_copy_contention;
  std::string contention_method;
};

// ---- configuration: what each rank runs with (node_config.hpp probes and compares it)

// A network interface (/sys/class/net).
struct NetInterface {
  std::string name;
  std::optional<int> mtu;
  std::optional<std::string> operstate;
};

// One RDMA port (/sys/class/infiniband/<dev>/ports/<n>).
struct RdmaPortConfig {
  std::string device;
  int port = 1;
  std::optional<std::string> state;       // "ACTIVE", ...
  std::optional<std::string> link_layer;  // "InfiniBand", "Ethernet"
  std::vector<std::string> pkeys;         // the non-zero partition keys, "0xffff"
  // The GID type at NCCL_IB_GID_INDEX ("RoCE v2", "IB/RoCE v1"); empty when
  // the index is not set or the entry cannot be read.
  std::optional<std::string> gid_type;
};

// The record of one node, or of the ranks of one node that share it.
struct NodeConfig {
  std::string host;
  int node = 0;
  std::vector<int> ranks;  // the world ranks of `node` with this record
  std::optional<std::string> nccl_version;
  std::string nccl_version_source;             // "ncclGetVersion", or the library file found
  std::optional<std::string> nccl_net_plugin;  // the file NCCL would load, "none" when disabled
  std::optional<std::string> nccl_tuner_plugin;
  std::vector<std::string> nccl_plugins_found;  // every libnccl-net*.so / libnccl-tuner*.so on the library path
  std::optional<std::string> cuda_driver;
  std::optional<std::string> cuda_runtime;
  std::optional<std::string> nvidia_driver;         // /proc/driver/nvidia/version
  std::optional<std::string> kernel;                // uname release (/proc/sys/kernel/osrelease)
  std::optional<std::string> libibverbs;            // the library's file version, "1.14.50.0" (rdma-core 50)
  std::optional<std::string> ofed;                  // MLNX_OFED release from ofed_info
  std::optional<std::string> mlx5_core;             // /sys/module/mlx5_core/version (out-of-tree drivers)
  std::map<std::string, std::string> nic_firmware;  // RDMA device -> fw_ver
  std::map<std::string, std::string> environment;   // NCCL_*, UCX_*, OMPI_* (settings), FI_*
  std::map<std::string, std::string> nccl_conf;     // the settings of the nccl.conf files NCCL would read
  std::vector<std::string> nccl_conf_files;         // the files read, in NCCL's order of precedence
  std::optional<std::uint64_t> memlock_bytes;       // empty when unlimited or unknown
  std::optional<bool> memlock_unlimited;            // empty when unknown
  std::vector<NetInterface> interfaces;             // every interface
  std::vector<std::string> nccl_interfaces;         // those NCCL's socket transport would use
  std::vector<RdmaPortConfig> rdma_ports;
  std::vector<std::string> notes;
};

// A problem rank 0 names, by host and device.
struct Anomaly {
  std::string kind;  // "gpu_count", "gpu_model", "driver", "pcie_downtrained", "nvlink_down",
                     // "nic_port_down", "nic_slow", "gpudirect_rdma_absent", "gpu_no_local_nic",
                     // "h2d_slow", "d2h_slow", "topology_unreadable" (a node's record did not parse),
                     // "pcie_oversubscribed", "pcie_contention", "acs_redirect", "iommu_translated",
                     // "p2p_through_host";
                     // configuration (node_config.hpp): "version_drift", "setting_drift",
                     // "nccl_forced", "rdma_disabled", "nccl_device_missing", "memlock_low", "mtu_mismatch"
  std::string host;
  std::string device;  // "GPU 3 (0000:5d:00.0)", "mlx5_3 port 1", "ranks 0-2" (configuration),
                       // or empty for the node
  std::string detail;
};

// Nodes of identical configuration.
struct NodeGroup {
  std::string signature;  // one line describing the configuration
  std::vector<std::string> hosts;
};

struct ClusterTopology {
  std::vector<NodeTopology> nodes;  // by node index
  std::vector<NodeGroup> groups;    // largest first
  std::vector<Anomaly> anomalies;
  std::vector<std::string> notes;  // cluster-wide remarks that are not anomalies
  // One record per node, or per group of its ranks that differ; empty when not gathered.
  std::vector<NodeConfig> configuration;
};

// Per-direction rate of one PCIe lane in GB/s (1e9 bytes/s), after line
// encoding: 8b/10b for Gen1 and Gen2, 128b/130b for Gen3 to Gen5, and the
// 242-of-256-byte FLIT of Gen6 (PCI Express Base Specifications 1.0 to 6.0).
// Empty for a generation outside 1..6.
std::optional<double> pcie_lane_gbs(int gen);

// "GPU 3", "GPUs 0-3", "GPUs 0, 2, 5-7".
std::string gpu_list(std::vector<int> indices);

}  // namespace fabricbench
