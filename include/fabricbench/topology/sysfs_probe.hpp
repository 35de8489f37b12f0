#pragma once
// What a node holds, read from sysfs and procfs (and os-release). The roots
// are injectable so the same parsers run on fixture trees. No function here
// throws for odd or unreadable entries: the fact stays empty and a note
// ("what: why") is appended to `notes`.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

struct ProbeRoots {
  std::filesystem::path sysfs = "/sys";
  std::filesystem::path procfs = "/proc";
  std::filesystem::path etc = "/etc";  // for os-release
};

// Roots from the command line or the environment (FABRICBENCH_SYSFS_ROOT,
// FABRICBENCH_PROCFS_ROOT). An empty argument keeps the default. When procfs
// is moved, os-release is looked for in <procfs>/../etc, so a fixture tree
// holds sys/, proc/ and etc/ side by side.
ProbeRoots probe_roots(const std::string& sysfs_root, const std::string& procfs_root);

// Hostname, CPU, memory, NUMA, OS, kernel, GPU driver (from procfs).
HostInfo probe_host(const ProbeRoots& roots, std::vector<std::string>& notes);

// NVIDIA display and 3D controllers on the PCI bus (vendor 0x10de, class
// 0x0300xx or 0x0302xx), in bus order, with their PCIe link and NUMA node.
std::vector<GpuInfo> probe_pci_gpus(const ProbeRoots& roots, std::vector<std::string>& notes);

// RDMA devices (/sys/class/infiniband) then Ethernet interfaces with a device
// behind them (/sys/class/net), each by name.
std::vector<NicInfo> probe_nics(const ProbeRoots& roots, std::vector<std::string>& notes);

// nvidia_peermem / nv_peer_mem from /proc/modules or /sys/module.
GpuDirectRdma probe_gpudirect(const ProbeRoots& roots, std::vector<std::string>& notes);

// The PCIe path between two PCI functions, from where they sit in the
// device tree: PIX (at most one switch between), PXB (more than one), PHB
// (through the root complex), NODE (other root complex, same NUMA node), SYS
// (other NUMA node). Empty when a device is not in the tree, or the NUMA
// nodes cannot be told on a host with several. `numa_nodes` is the host's count.
std::optional<PciPath> pci_path(const ProbeRoots& roots, const std::string& a, const std::string& b,
                                std::optional<int> numa_nodes);

// "0000:18:00.0" from "00000000:18:00.0" or "0000:18:00.0" (any case); the
// text unchanged when it is not a bus id.
std::string normalize_bus_id(const std::string& bus_id);

// PCIe generation from a sysfs link speed ("32.0 GT/s PCIe", "8 GT/s").
std::optional<int> pcie_gen_from_speed(const std::string& text);

}  // namespace fabricbench
