// Inside one node: PCIe switches shared by 2 and 4 GPUs, ACS on and off, the
// IOMMU, MIG and a VM on fixture trees (real files, real parsers), and the
// judgement of host copies at once and of peer copies on recorded figures.

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "../topology/fixture_tree.hpp"
#include "fabricbench/analysis/node_analysis.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/output/topology_summary.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/topology/pcie_probe.hpp"
#include "fabricbench/topology/topology_probe.hpp"
#include "scratch_dir.hpp"

namespace fabricbench {
namespace {

namespace fs = std::filesystem;

class InsideNode : public ScratchDirTest {
 protected:
  ProbeRoots write(const std::string& fixture, const std::string& host) {
    const fs::path root = dir_ / host;
    testing::write_fixture(fixture, root, host);
    return probe_roots((root / "sys").string(), (root / "proc").string());
  }
  NodeTopology probe(const std::string& fixture, const std::string& host) {
    GpuReport none;
    none.unavailable = "recorded: no device";
    RecordedGpuSource source(none, {});
    return probe_node(write(fixture, host), source, true);
  }
};

std::vector<std::string> lines_of(const ClusterTopology& c) {
  std::vector<std::string> out;
  for (const Anomaly& a : c.anomalies) out.push_back(a.kind + " " + a.host + " " + a.device + ": " + a.detail);
  return out;
}

std::set<std::string> kinds_of(const ClusterTopology& c) {
  std::set<std::string> out;
  for (const Anomaly& a : c.anomalies) out.insert(a.kind);
  return out;
}

// Recorded CUDA/NVML view of a fixture's GPUs: indices in bus order.
GpuReport report_for(const NodeTopology& sysfs_view) {
  GpuReport r;
  r.driver_version = "550.54.15";
  for (std::size_t i = 0; i < sysfs_view.gpus.size(); ++i) {
    GpuInfo g;
    g.index = static_cast<int>(i);
    g.pci_bus_id = sysfs_view.gpus[i].pci_bus_id;
    g.name = "NVIDIA H100 PCIe";
    r.gpus.push_back(g);
  }
  return r;
}

GpuBandwidth host_rates(std::size_t n) {
  GpuBandwidth b;
  b.method = "recorded";
  b.h2d_gbs.assign(n, 26.0);
  b.d2h_gbs.assign(n, 26.0);
  b.local_copy_gbs.assign(n, 1500.0);
  return b;
}

TEST_F(InsideNode, SwitchesUplinksAndGpuPaths) {
  const NodeTopology n = probe("pcie-switch-2-4", "sw");
  ASSERT_EQ(n.gpus.size(), 6U);
  EXPECT_EQ(n.gpus[0].root_port, "0000:10:01.0");
  EXPECT_EQ(n.gpus[0].pcie_switches, std::vector<std::string>{"0000:11:00.0"});
  EXPECT_EQ(n.gpus[5].pci_bus_id, "0000:36:00.0");
  EXPECT_EQ(n.gpus[5].pcie_switches, std::vector<std::string>{"0000:31:00.0"});
  // Root port, upstream port, the downstream ports with a GPU; the empty ports are on no GPU's path.
  ASSERT_EQ(n.pcie_bridges.size(), 4U + 6U);
  const auto bridge = [&](const std::string& id) {
    const auto it = std::find_if(n.pcie_bridges.begin(), n.pcie_bridges.end(),
                                 [&](const PcieBridge& b) { return b.pci_bus_id == id; });
    if (it == n.pcie_bridges.end()) throw std::runtime_error("no bridge " + id);
    return *it;
  };
  const PcieBridge two = bridge("0000:11:00.0");
  EXPECT_EQ(two.role, BridgeRole::switch_upstream);
  EXPECT_EQ(two.parent, "0000:10:01.0");
  EXPECT_EQ(two.link.current_gen, 5);
  EXPECT_EQ(two.link.current_width, 16);
  EXPECT_EQ(two.gpus, (std::vector<std::string>{"0000:13:00.0", "0000:14:00.0"}));
  EXPECT_EQ(two.occupied_ports, 2);
  EXPECT_NEAR(*two.uplink_gbs, 63.015, 0.001);
  EXPECT_NEAR(*two.downstream_gbs, 126.03, 0.01);
  EXPECT_NEAR(*two.oversubscription, 2.0, 1e-9);
  const PcieBridge four = bridge("0000:31:00.0");
  EXPECT_EQ(four.occupied_ports, 4);
  EXPECT_NEAR(*four.oversubscription, 4.0, 1e-9);
  EXPECT_EQ(bridge("0000:10:01.0").role, BridgeRole::root_port);
  EXPECT_EQ(bridge("0000:32:03.0").role, BridgeRole::switch_downstream);
  EXPECT_EQ(bridge("0000:32:03.0").gpus, std::vector<std::string>{"0000:36:00.0"});
  EXPECT_EQ(bridge("0000:32:03.0").acs, AcsState::open);
  EXPECT_EQ(bridge("0000:32:03.0").acs_control, 0);
  EXPECT_EQ(four.acs, AcsState::absent);
  ASSERT_TRUE(n.iommu);
  EXPECT_EQ(n.iommu->mode, IommuMode::off);
  EXPECT_EQ(n.iommu->units, 0);
  EXPECT_EQ(n.iommu->groups, 0);

  EXPECT_EQ(lines_of(analyze_cluster({n})),
            std::vector<std::string>{
                "pcie_oversubscribed sw PCIe switch 0000:31:00.0: GPUs 2-5 share one Gen5 x16 uplink (63.0 GB/s) "
                "under 252.1 GB/s of downstream links: 4.0:1, where its peers have 2.0:1; spread the GPUs over more "
                "switches, or expect host copies at once to share it"});
}

TEST_F(InsideNode, EachRuleFiresOnItsFixtureOnly) {
  const std::map<std::string, std::set<std::string>> expected{
      {"dgx", {}},
      {"pcie4-roce", {}},
      {"cloud-vm", {}},
      {"dgx-port-down", {"nic_port_down"}},
      {"dgx-slow-port", {"nic_slow"}},
      {"dgx-pcie-gen4x8", {"pcie_downtrained"}},
      {"dgx-no-peermem", {"gpudirect_rdma_absent"}},
      {"pcie-switch-2x2", {}},
      {"pcie-switch-2-4", {"pcie_oversubscribed"}},
      {"pcie-switch-acs", {"acs_redirect"}},
      {"pcie-switch-iommu", {"iommu_translated"}},
      {"pcie-switch-mig", {}},
      {"pcie-switch-vm", {}},
  };
  ASSERT_EQ(expected.size(), testing::fixture_names().size());
  for (const std::string& name : testing::fixture_names()) {
    const NodeTopology n = probe(name, name);
    EXPECT_EQ(kinds_of(analyze_cluster({n})), expected.at(name)) << name;
    const bool virtual_node = name == "pcie-switch-mig" || name == "pcie-switch-vm";
    EXPECT_EQ(virtualization_summary(n).empty(), !virtual_node) << name << ": " << virtualization_summary(n);
  }
}

TEST_F(InsideNode, AcsRedirectNamesTheBridgesAndTheFix) {
  const ClusterTopology c = analyze_cluster({probe("pcie-switch-acs", "acs")});
  EXPECT_EQ(lines_of(c),
            std::vector<std::string>{
                "acs_redirect acs GPUs 0-3: ACS redirects peer-to-peer requests up to the root complex on 6 PCIe "
                "bridges between GPUs: 0000:10:01.0 (ACSCtl 0x001d), 0000:12:00.0 (ACSCtl 0x001d), 0000:12:01.0 "
                "(ACSCtl 0x001d), 0000:30:01.0 (ACSCtl 0x001d), 0000:32:00.0 (ACSCtl 0x001d), 0000:32:01.0 (ACSCtl "
                "0x001d); GPU peer traffic takes the long way or fails. Fix: turn ACS off in the BIOS, or as root "
                "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` on each (not across a reboot), unless a VM host needs the "
                "isolation"});
  std::ostringstream out;
  write_topology_summary(c, out);
  EXPECT_NE(out.str().find("  ACS on the PCIe bridges between GPUs: 6 redirect\n"), std::string::npos) << out.str();
}

TEST_F(InsideNode, IommuTranslatingIsNamedWithTheFix) {
  const NodeTopology n = probe("pcie-switch-iommu", "io");
  ASSERT_TRUE(n.iommu);
  EXPECT_EQ(n.iommu->mode, IommuMode::translated);
  EXPECT_EQ(n.iommu->units, 1);
  EXPECT_EQ(n.iommu->groups, 4);
  EXPECT_EQ(n.iommu->domain_types, std::vector<std::string>{"DMA-FQ"});
  EXPECT_EQ(n.iommu->kernel_parameters, std::vector<std::string>{"amd_iommu=on"});
  EXPECT_EQ(lines_of(analyze_cluster({n})),
            std::vector<std::string>{
                "iommu_translated io : the IOMMU translates DMA (default domain DMA-FQ; kernel command line "
                "amd_iommu=on): GPU peer-to-peer and GPUDirect RDMA traffic is remapped, slower or refused. Fix: "
                "boot with iommu=pt (passthrough; with intel_iommu=on or amd_iommu=on kept) unless the node hosts "
                "VMs that need translation"});
}

TEST_F(InsideNode, MigAndVmAreNamedInTheSummary) {
  const NodeTopology mig = probe("pcie-switch-mig", "mig");
  EXPECT_EQ(mig.gpus.at(0).mig_instances, 7);
  EXPECT_FALSE(mig.gpus.at(1).mig_instances);
  EXPECT_EQ(virtualization_summary(mig), "MIG: 0000:13:00.0 split into 7 MIG instances");
  const NodeTopology vm = probe("pcie-switch-vm", "vm");
  ASSERT_TRUE(vm.virtualization);
  EXPECT_EQ(vm.virtualization->hypervisor_flag, true);
  EXPECT_EQ(vm.virtualization->hypervisor, "QEMU");
  EXPECT_EQ(vm.virtualization->platform, "QEMU Standard PC (Q35 + ICH9, 2009)");
  EXPECT_EQ(vm.virtualization->virtio_devices, 3);
  EXPECT_EQ(virtualization_summary(vm),
            "virtual machine on QEMU (hypervisor CPU flag, DMI 'QEMU Standard PC (Q35 + ICH9, 2009)', 3 virtio "
            "devices)");
  const ClusterTopology c = analyze_cluster({vm});
  EXPECT_NE(c.groups.at(0).signature.find("| virtual machine on QEMU"), std::string::npos);
  std::ostringstream out;
  write_topology_summary(c, out);
  EXPECT_NE(out.str().find("  virtualization: virtual machine on QEMU"), std::string::npos) << out.str();

  // CUDA lists MIG slices by their parent's bus id: seven "GPUs" that are one.
  NodeTopology sysfs_view = probe("pcie-switch-mig", "mig2");
  GpuReport r;
  for (int i = 0; i < 7; ++i) {
    GpuInfo g;
    g.index = i;
    g.pci_bus_id = "0000:13:00.0";
    g.name = "NVIDIA H100 PCIe MIG 1g.10gb";
    g.mig_mode = "enabled";
    r.gpus.push_back(g);
  }
  RecordedGpuSource slices(r, {});
  const NodeTopology sliced = probe_node(write("pcie-switch-mig", "mig3"), slices, false);
  EXPECT_EQ(virtualization_summary(sliced),
            "MIG: 0000:13:00.0 split into 7 MIG instances; 7 CUDA devices are slices of 1 physical GPU");
  GpuReport vgpu = report_for(sysfs_view);
  for (GpuInfo& g : vgpu.gpus) g.virtualization = "vgpu";
  RecordedGpuSource virtual_gpus(vgpu, {});
  EXPECT_EQ(virtualization_summary(probe_node(write("pcie-switch-2x2", "vg"), virtual_gpus, false)),
            "GPUs 0-3 NVIDIA vGPUs (time or memory shares of a physical GPU)");
}

TEST_F(InsideNode, HostCopiesAtOnceByTheGroupsThatShareALink) {
  const NodeTopology sysfs_view = probe("pcie-switch-2-4", "view");
  ConcurrentCopies recorded;
  recorded.method = "recorded";
  const auto copy = [](std::string scope, std::optional<std::string> bridge, CopyDirection d, std::vector<int> gpus,
                       double alone, std::vector<std::optional<double>> at_once) {
    ConcurrentCopy c{std::move(scope), std::move(bridge), d, std::move(gpus), {}, std::move(at_once)};
    c.alone_gbs.assign(c.gpus.size(), alone);
    return c;
  };
  const auto h2d = CopyDirection::host_to_device;
  const auto d2h = CopyDirection::device_to_host;
  recorded.copies = {
      copy("PCIe switch 0000:11:00.0", "0000:11:00.0", h2d, {0, 1}, 54.0, {53.5, 53.1}),
      copy("PCIe switch 0000:31:00.0", "0000:31:00.0", h2d, {2, 3, 4, 5}, 54.0, {13.8, 13.9, 13.7, 13.8}),
      copy("all GPUs", std::nullopt, h2d, {0, 1, 2, 3, 4, 5}, 54.0, {50.0, 50.0, 13.0, 13.0, 13.0, 13.0}),
      copy("PCIe switch 0000:11:00.0", "0000:11:00.0", d2h, {0, 1}, 52.0, {51.0, 51.0}),
      copy("PCIe switch 0000:31:00.0", "0000:31:00.0", d2h, {2, 3, 4, 5}, 52.0, {40.0, 40.0, 40.0, std::nullopt}),
      copy("all GPUs", std::nullopt, d2h, {0, 1, 2, 3, 4, 5}, 52.0, {48.0, 48.0, 40.0, 40.0, 40.0, 40.0}),
  };
  RecordedGpuSource source(report_for(sysfs_view), host_rates(6), recorded);
  const NodeTopology n = probe_node(write("pcie-switch-2-4", "cc"), source, true);
  ASSERT_EQ(source.groups_asked().size(), 3U);
  EXPECT_EQ(source.groups_asked()[0].scope, "PCIe switch 0000:11:00.0");
  EXPECT_EQ(source.groups_asked()[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(source.groups_asked()[1].scope, "PCIe switch 0000:31:00.0");
  EXPECT_EQ(source.groups_asked()[1].bridge, "0000:31:00.0");
  EXPECT_EQ(source.groups_asked()[2].scope, "all GPUs");
  EXPECT_EQ(source.groups_asked()[2].gpus, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(n.host_copy_contention.size(), 6U);
  EXPECT_EQ(n.contention_method, "recorded");
  EXPECT_EQ(lines_of(analyze_cluster({n})),
            (std::vector<std::string>{
                "pcie_oversubscribed cc PCIe switch 0000:31:00.0: GPUs 2-5 share one Gen5 x16 uplink (63.0 GB/s) "
                "under 252.1 GB/s of downstream links: 4.0:1, where its peers have 2.0:1; spread the GPUs over more "
                "switches, or expect host copies at once to share it",
                "pcie_contention cc PCIe switch 0000:31:00.0: GPUs 2-5 share one Gen5 x16 uplink (PCIe switch "
                "0000:31:00.0): 4 at once get 13.8 GB/s each of 54.0 alone, host-to-device",
                "pcie_contention cc all GPUs: GPUs 0-5, all copying: 6 at once get 13.0 GB/s each of 54.0 alone, "
                "host-to-device; a shared link, the root complex or host memory limits them",
            }));
  std::ostringstream out;
  write_topology_summary(analyze_cluster({n}), out);
  EXPECT_NE(out.str().find("  host copies at once, PCIe switch 0000:31:00.0 (GPUs 2-5), GB/s per GPU alone -> at "
                           "once: H2D 54.0 -> 13.8, D2H 52.0 -> 40.0\n"),
            std::string::npos)
      << out.str();
  // The record reads back as written.
  const auto j = node_to_json(n);
  EXPECT_EQ(node_to_json(node_from_json(nlohmann::json::parse(j.dump()))).dump(), j.dump());
}

TEST(ContentionJudgement, RecordedAloneAndAtOnceFigures) {
  PcieBridge sw;
  sw.pci_bus_id = "0000:41:00.0";
  sw.role = BridgeRole::switch_upstream;
  sw.link = {5, 5, 16, 16};
  ConcurrentCopy c{"PCIe switch 0000:41:00.0", "0000:41:00.0",          CopyDirection::host_to_device, {0, 1, 2, 3},
                   {54.0, 53.8, 54.2, 54.0},   {13.8, 13.9, 13.7, 13.8}};
  EXPECT_EQ(judge_contention(c, &sw),
            "GPUs 0-3 share one Gen5 x16 uplink (PCIe switch 0000:41:00.0): 4 at once get "
            "13.8 GB/s each of 54.0 alone, host-to-device");
  // A root port shared by two GPUs, device-to-host.
  PcieBridge rp;
  rp.pci_bus_id = "0000:40:01.1";
  rp.link = {4, 4, 16, 16};
  ConcurrentCopy two{
      "root port 0000:40:01.1", "0000:40:01.1", CopyDirection::device_to_host, {4, 6}, {26.0, 26.0}, {13.0, 13.1}};
  EXPECT_EQ(judge_contention(two, &rp),
            "GPUs 4, 6 share one Gen4 x16 link (root port 0000:40:01.1): 2 at once get "
            "13.1 GB/s each of 26.0 alone, device-to-host");
  // At 75% of alone or more: they keep up.
  c.at_once_gbs = {40.5, 40.5, 40.5, 40.5};
  EXPECT_FALSE(judge_contention(c, &sw));
  c.at_once_gbs = {40.4, 40.4, 40.4, 40.4};
  EXPECT_TRUE(judge_contention(c, &sw));
  // Fewer than two GPUs with both figures: nothing to judge.
  c.at_once_gbs = {10.0, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_FALSE(judge_contention(c, &sw));
  c.alone_gbs = {std::nullopt, 54.0, std::nullopt, 54.0};
  c.at_once_gbs = {10.0, 10.0, 10.0, std::nullopt};
  EXPECT_FALSE(judge_contention(c, &sw));
}

TEST_F(InsideNode, PeerCapablePairsAtHostPathSpeedAreNamed) {
  const NodeTopology sysfs_view = probe("pcie-switch-2x2", "view");
  GpuReport report = report_for(sysfs_view);
  report.p2p_access.assign(4, std::vector<std::optional<bool>>(4, true));
  for (std::size_t i = 0; i < 4; ++i) report.p2p_access[i][i].reset();
  report.p2p_access[1][3] = false;  // not peer-capable: slow is expected
  GpuBandwidth bw = host_rates(4);
  bw.d2d_gbs.assign(4, std::vector<std::optional<double>>(4, 24.0));
  for (std::size_t i = 0; i < 4; ++i) bw.d2d_gbs[i][i].reset();
  bw.d2d_gbs[0][2] = 9.0;
  bw.d2d_gbs[1][3] = 8.0;
  bw.d2d_gbs[2][0] = 19.5;  // exactly 75% of one hop: not slow
  RecordedGpuSource source(report, bw);
  NodeTopology n = probe_node(write("pcie-switch-2x2", "p2p"), source, true);
  EXPECT_EQ(n.gpu_matrix[0][1], "PIX");
  EXPECT_EQ(lines_of(analyze_cluster({n})),
            std::vector<std::string>{
                "p2p_through_host p2p 1 GPU pair: CUDA reports peer access, but the copies run at host-path speed: "
                "0->2 9.0 GB/s (one PCIe hop 26.0); the traffic is staged through host memory or throttled by a "
                "root complex. Check ACS and the IOMMU (above), and the BIOS' PCIe peer-to-peer setting"});
  // Over NVLink a pair must beat PCIe clearly.
  n.gpu_matrix[0][1] = "NV4";
  n.d2d_gbs[0][1] = 30.0;
  n.d2d_gbs[0][2] = 24.0;
  EXPECT_EQ(lines_of(analyze_cluster({n})),
            std::vector<std::string>{
                "p2p_through_host p2p 1 GPU pair: CUDA reports peer access, but the copies run at host-path speed: "
                "0->1 30.0 GB/s over NV4 (one PCIe hop 26.0); the traffic is staged through host memory or "
                "throttled by a root complex. Check ACS and the IOMMU (above), and the BIOS' PCIe peer-to-peer "
                "setting"});
  n.d2d_gbs[0][1] = 33.0;
  EXPECT_TRUE(analyze_cluster({n}).anomalies.empty());
}

TEST(AcsConfigSpace, ReadsTheControlRegisterOrSaysWhyNot) {
  EXPECT_EQ(acs_from_config(std::string(64, '\0')).why, "config space beyond 64 bytes is readable by root only");
  EXPECT_EQ(acs_from_config(std::string(64, '\0')).state, AcsState::unknown);
  EXPECT_EQ(acs_from_config(std::string(256, '\0')).why,
            "only 256 bytes of config space: no PCIe extended capabilities visible");
  std::string c(4096, '\0');
  EXPECT_EQ(acs_from_config(c).state, AcsState::absent);
  const auto put32 = [&](std::size_t at, unsigned v) {
    for (int b = 0; b < 4; ++b) c[at + static_cast<std::size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xffU);
  };
  put32(0x100, 0x0001U | (1U << 16) | (0x200U << 20));
  put32(0x200, 0x000dU | (1U << 16));
  put32(0x204, 0x005fU | (0x0011U << 16));  // Source Validation and Upstream Forwarding only
  EXPECT_EQ(acs_from_config(c).state, AcsState::open);
  EXPECT_EQ(acs_from_config(c).control, 0x11);
  put32(0x204, 0x005fU | (0x0004U << 16));  // P2P Request Redirect
  EXPECT_EQ(acs_from_config(c).state, AcsState::redirect);
  put32(0x204, 0x005fU | (0x0008U << 16));  // P2P Completion Redirect
  EXPECT_EQ(acs_from_config(c).state, AcsState::redirect);
  // A list that loops back on itself ends; no ACS in it.
  put32(0x200, 0x0002U | (1U << 16) | (0x100U << 20));
  EXPECT_EQ(acs_from_config(c).state, AcsState::absent);
}

TEST(InsideNodeText, LaneRatesDmiNamesAndGpuLists) {
  EXPECT_NEAR(*pcie_lane_gbs(5) * 16, 63.015, 0.001);
  EXPECT_NEAR(*pcie_lane_gbs(4) * 16, 31.508, 0.001);
  EXPECT_NEAR(*pcie_lane_gbs(1), 0.25, 1e-12);
  EXPECT_FALSE(pcie_lane_gbs(7));
  EXPECT_EQ(hypervisor_from_dmi("Amazon EC2", "p5.48xlarge"), "Amazon EC2");
  EXPECT_EQ(hypervisor_from_dmi("Amazon EC2", "p4d.metal"), std::nullopt);
  EXPECT_EQ(hypervisor_from_dmi("Google", "Google Compute Engine"), "Google Compute Engine");
  EXPECT_EQ(hypervisor_from_dmi("VMware, Inc.", "VMware Virtual Platform"), "VMware");
  EXPECT_EQ(hypervisor_from_dmi("Microsoft Corporation", "Virtual Machine"), "Microsoft Hyper-V");
  EXPECT_EQ(hypervisor_from_dmi("QEMU", "Standard PC (i440FX + PIIX, 1996)"), "QEMU");
  EXPECT_EQ(hypervisor_from_dmi("Dell Inc.", "PowerEdge XE9680"), std::nullopt);
  EXPECT_EQ(gpu_list({3}), "GPU 3");
  EXPECT_EQ(gpu_list({3, 0, 1, 2}), "GPUs 0-3");
  EXPECT_EQ(gpu_list({0, 1}), "GPUs 0, 1");
  EXPECT_EQ(gpu_list({0, 2, 5, 6, 7}), "GPUs 0, 2, 5-7");
}

// This machine's own sysfs: whatever it holds, the probes give a record.
TEST(InsideNodeReal, ThisMachineProbesWithoutThrowing) {
  std::vector<GpuInfo> gpus;
  std::vector<std::string> notes;
  const ProbeRoots roots = probe_roots("", "");
  ASSERT_NO_THROW((void)probe_pcie_bridges(roots, gpus, notes));
  ASSERT_NO_THROW((void)probe_iommu(roots, gpus, notes));
  ASSERT_NO_THROW((void)probe_virtualization(roots, gpus, notes));
}

}  // namespace
}  // namespace fabricbench
