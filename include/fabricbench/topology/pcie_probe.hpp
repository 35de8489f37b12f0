#pragma once
// Inside one node, from sysfs and procfs: the PCIe bridges on each GPU's
// path to the root complex (switches, their uplinks and how many devices
// share them), Access Control Services on those bridges, the IOMMU mode, and
// the signs of a virtual machine, MIG slices and virtual GPUs. Like
// sysfs_probe.hpp, nothing here throws for an odd or unreadable entry: the
// fact stays unknown, with the reason in the record or in `notes`.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/records/topology.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"

namespace fabricbench {

// The bridges on the GPUs' paths (root ports, then switch ports, in tree
// order), with the GPUs below each, the switch uplinks' rate against the sum
// of their occupied downstream ports, and ACS read from each bridge's
// config space. Fills each GPU's root_port and pcie_switches.
std::vector<PcieBridge> probe_pcie_bridges(const ProbeRoots& roots, std::vector<GpuInfo>& gpus,
                                           std::vector<std::string>& notes);

struct AcsReading {
  AcsState state = AcsState::unknown;
  std::optional<int> control;
  std::optional<std::string> why;  // when unknown
};
// ACS from the bytes of a function's config space (the sysfs `config` file):
// walks the extended capability list from offset 0x100 for capability 0x000D
// and reads its Control register (offset 6); redirect when P2P Request
// Redirect (bit 2) or P2P Completion Redirect (bit 3) is set.
AcsReading acs_from_config(std::string_view config);

// /sys/class/iommu, /sys/kernel/iommu_groups (the default domain type of the
// GPUs' groups, else of all groups) and the IOMMU parameters in /proc/cmdline.
IommuInfo probe_iommu(const ProbeRoots& roots, const std::vector<GpuInfo>& gpus, std::vector<std::string>& notes);

// The hypervisor CPU flag, /sys/hypervisor, the DMI system vendor and
// product, virtio devices; per GPU, MIG instances (procfs) and SR-IOV
// virtual functions (sysfs `physfn`), filled into `gpus`.
Virtualization probe_virtualization(const ProbeRoots& roots, std::vector<GpuInfo>& gpus,
                                    std::vector<std::string>& notes);

// The hypervisor a DMI vendor and product name point to ("KVM", "QEMU",
// "VMware", "Amazon EC2", "Google Compute Engine", "Microsoft Hyper-V",
// "Xen", "VirtualBox"); empty for bare metal (EC2 ".metal" instances
// included) or a name it does not know.
std::optional<std::string> hypervisor_from_dmi(const std::string& vendor, const std::string& product);

}  // namespace fabricbench
