#pragma once
// Fixture trees for the topology probe: real directory layouts of sysfs,
// procfs and etc (with the relative symlinks sysfs has), written at test time
// from a compact description in fixture_tree.cpp, so the real parsers run on
// real files.
//
// Nodes: "dgx" (2 sockets, 8 GPUs each sharing a PCIe switch with one mlx5
// InfiniBand port at 400 Gb/s, 2 Ethernet), "pcie4-roce" (4 PCIe GPUs, 2 RoCE
// NICs at 200 Gb/s, one management port), "cloud-vm" (virtio Ethernet only),
// and the broken DGX variants "dgx-port-down" (mlx5_3 DOWN), "dgx-slow-port"
// (mlx5_5 at 200 Gb/s), "dgx-pcie-gen4x8" (GPU 2 at Gen4 x8), "dgx-no-peermem".
// PCIe switch nodes (one socket, each switch under its own root port, Gen5
// x16 links everywhere, one empty downstream port per switch, config space
// with an ACS capability): "pcie-switch-2x2" (two switches of 2 GPUs, ACS
// open, IOMMU off), "pcie-switch-2-4" (2 and 4 GPUs), "pcie-switch-acs" (P2P
// redirect on every bridge), "pcie-switch-iommu" (DMA-FQ domains,
// amd_iommu=on), "pcie-switch-mig" (GPU 0 split into 7 MIG instances),
// "pcie-switch-vm" (hypervisor CPU flag, QEMU DMI, 3 virtio devices).

#include <filesystem>
#include <string>
#include <vector>

namespace fabricbench::testing {

std::vector<std::string> fixture_names();

// Writes the named fixture under `root` (root/sys, root/proc, root/etc),
// with `hostname` as the node's name. Throws std::invalid_argument for an
// unknown name.
void write_fixture(const std::string& name, const std::filesystem::path& root, const std::string& hostname);

}  // namespace fabricbench::testing
