// The topology probe on fixture trees (real files and symlinks), the anomaly
// logic with recorded NVML values, the JSON round trip and the summary.

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "../topology/fixture_tree.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/output/topology_summary.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"
#include "fabricbench/topology/topology_probe.hpp"

namespace fabricbench {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fabricbench-topo-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

ProbeRoots roots_of(const fs::path& root) { return probe_roots((root / "sys").string(), (root / "proc").string()); }

RecordedGpuSource no_gpu() {
  GpuReport report;
  report.unavailable = "recorded: no device";
  return RecordedGpuSource(report, {});
}

NodeTopology probe_fixture(const TempDir& dir, const std::string& name, const std::string& host = "node-a") {
  const fs::path root = dir.path() / host;
  testing::write_fixture(name, root, host);
  RecordedGpuSource source = no_gpu();
  return probe_node(roots_of(root), source, true);
}

std::vector<std::string> anomaly_lines(const ClusterTopology& c) {
  std::vector<std::string> out;
  for (const Anomaly& a : c.anomalies) out.push_back(a.kind + " " + a.host + " " + a.device + ": " + a.detail);
  return out;
}

const NicInfo& nic_named(const NodeTopology& n, const std::string& name) {
  const auto it = std::find_if(n.nics.begin(), n.nics.end(), [&](const NicInfo& nic) { return nic.name == name; });
  if (it == n.nics.end()) throw std::runtime_error("no NIC " + name);
  return *it;
}

TEST(TopologyFixture, DgxHostGpusNicsAndMatrices) {
  const TempDir dir;
  const NodeTopology n = probe_fixture(dir, "dgx");
  EXPECT_EQ(n.host.hostname, "node-a");
  EXPECT_EQ(n.host.cpu_model, "Intel(R) Xeon(R) Platinum 8480CL");
  EXPECT_EQ(n.host.sockets, 2);
  EXPECT_EQ(n.host.cores, 112);
  EXPECT_EQ(n.host.threads, 224);
  EXPECT_EQ(n.host.memory_bytes, 2113389036ULL * 1024);
  EXPECT_EQ(n.host.numa_nodes, 2);
  EXPECT_EQ(n.host.os, "Ubuntu 22.04.4 LTS");
  EXPECT_EQ(n.host.kernel, "5.15.0-105-generic");
  EXPECT_EQ(n.host.gpu_driver, "550.54.15");
  EXPECT_EQ(n.gpu_status, "no GPU visible (recorded: no device)");

  ASSERT_EQ(n.gpus.size(), 8U);
  const std::vector<std::string> ids{"0000:18:00.0", "0000:29:00.0", "0000:3a:00.0", "0000:4b:00.0",
                                     "0000:9a:00.0", "0000:ab:00.0", "0000:bc:00.0", "0000:cd:00.0"};
  for (std::size_t i = 0; i < 8; ++i) {
    const GpuInfo& g = n.gpus[i];
    EXPECT_EQ(g.pci_bus_id, ids[i]);
    EXPECT_FALSE(g.index);
    EXPECT_EQ(g.numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(g.pcie.current_gen, 5);
    EXPECT_EQ(g.pcie.max_gen, 5);
    EXPECT_EQ(g.pcie.current_width, 16);
    EXPECT_EQ(g.pcie.max_width, 16);
  }

  ASSERT_EQ(n.nics.size(), 10U);  // 8 InfiniBand, 2 Ethernet; IPoIB and lo are not NICs of their own
  const NicInfo& ib0 = nic_named(n, "mlx5_0");
  EXPECT_EQ(name(ib0.kind), "infiniband");
  EXPECT_EQ(ib0.pci_address, "0000:19:00.0");
  EXPECT_EQ(name(ib0.bus), "pci");
  EXPECT_EQ(ib0.driver, "mlx5_core");
  EXPECT_EQ(ib0.numa_node, 0);
  EXPECT_EQ(ib0.firmware, "28.39.1002");
  ASSERT_EQ(ib0.ports.size(), 1U);
  EXPECT_EQ(ib0.ports[0].state, "ACTIVE");
  EXPECT_EQ(ib0.ports[0].phys_state, "LinkUp");
  EXPECT_EQ(ib0.ports[0].rate_gbps, 400.0);
  EXPECT_EQ(ib0.ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(ib0.netdevs, std::vector<std::string>{"ibp25s0"});
  const NicInfo& eth = nic_named(n, "enp218s0f1");
  EXPECT_EQ(name(eth.kind), "ethernet");
  EXPECT_EQ(eth.pci_address, "0000:da:00.1");
  EXPECT_EQ(eth.driver, "i40e");
  EXPECT_EQ(eth.numa_node, 1);
  EXPECT_EQ(eth.speed_gbps, 100.0);
  EXPECT_EQ(eth.mtu, 1500);
  EXPECT_EQ(eth.operstate, "up");

  EXPECT_EQ(name(n.gpudirect.status), "ready");
  EXPECT_EQ(n.gpudirect.module, "nvidia_peermem");

  EXPECT_EQ(n.gpu_matrix[0][0], "X");
  EXPECT_EQ(n.gpu_matrix[0][1], "NODE");
  EXPECT_EQ(n.gpu_matrix[0][4], "SYS");
  EXPECT_EQ(n.gpu_matrix[7][4], "NODE");
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(n.nearest_nic[i].nic, "mlx5_" + std::to_string(i));
    EXPECT_EQ(n.nearest_nic[i].path, PciPath::pix);
  }
  EXPECT_EQ(n.nic_matrix[0][1], "NODE");  // GPU0 to mlx5_1
  EXPECT_EQ(n.nic_matrix[0][7], "SYS");   // GPU0 to mlx5_7
  EXPECT_EQ(n.nic_matrix[0][8], "SYS");   // GPU0 to enp218s0f0 on socket 1
  EXPECT_TRUE(analyze_cluster({n}).anomalies.empty());
}

TEST(TopologyFixture, PcieFourGpusWithRoce) {
  const TempDir dir;
  const NodeTopology n = probe_fixture(dir, "pcie4-roce");
  EXPECT_EQ(n.host.cpu_model, "AMD EPYC 9354 32-Core Processor");
  EXPECT_EQ(n.host.cores, 64);
  EXPECT_EQ(n.host.os, "Rocky Linux 9.3 (Blue Onyx)");
  ASSERT_EQ(n.gpus.size(), 4U);
  EXPECT_EQ(n.gpus[0].pci_bus_id, "0000:43:00.0");
  EXPECT_EQ(n.gpus[3].pci_bus_id, "0000:c4:00.0");
  EXPECT_EQ(n.gpus[2].pcie.current_gen, 4);
  EXPECT_EQ(n.gpu_matrix[0][1], "PIX");
  EXPECT_EQ(n.gpu_matrix[0][2], "SYS");
  EXPECT_EQ(n.gpu_matrix[3][2], "PIX");
  const NicInfo& roce = nic_named(n, "mlx5_1");
  EXPECT_EQ(name(roce.kind), "roce");
  EXPECT_EQ(roce.pci_address, "0000:c5:00.0");
  EXPECT_EQ(roce.ports.at(0).rate_gbps, 200.0);
  EXPECT_EQ(roce.ports.at(0).link_layer, "Ethernet");
  EXPECT_EQ(roce.netdevs, std::vector<std::string>{"enp197s0np0"});
  const NicInfo& roce_if = nic_named(n, "enp197s0np0");
  EXPECT_EQ(name(roce_if.kind), "ethernet");
  EXPECT_EQ(roce_if.speed_gbps, 200.0);
  EXPECT_EQ(roce_if.mtu, 9000);
  EXPECT_EQ(nic_named(n, "eno1").speed_gbps, 1.0);
  EXPECT_EQ(n.nearest_nic[0].nic, "mlx5_0");
  EXPECT_EQ(n.nearest_nic[2].nic, "mlx5_1");
  EXPECT_EQ(n.nearest_nic[2].path, PciPath::pix);
  // The management port is on socket 0's other root complex.
  EXPECT_EQ(n.nic_matrix[0][2], "NODE");  // NICs: mlx5_0, mlx5_1, eno1, ...
  EXPECT_TRUE(analyze_cluster({n}).anomalies.empty());
}

TEST(TopologyFixture, CloudVmWithVirtioOnly) {
  const TempDir dir;
  const NodeTopology n = probe_fixture(dir, "cloud-vm");
  EXPECT_EQ(n.host.sockets, 1);
  EXPECT_EQ(n.host.cores, 4);
  EXPECT_EQ(n.host.threads, 8);
  EXPECT_EQ(n.host.numa_nodes, 1);
  EXPECT_FALSE(n.host.gpu_driver);
  EXPECT_TRUE(n.gpus.empty());
  ASSERT_EQ(n.nics.size(), 1U);
  const NicInfo& eth = n.nics[0];
  EXPECT_EQ(eth.name, "eth0");
  EXPECT_EQ(name(eth.bus), "virtio");
  EXPECT_EQ(eth.pci_address, "0000:00:03.0");
  EXPECT_EQ(eth.driver, "virtio_net");
  EXPECT_FALSE(eth.numa_node);
  EXPECT_FALSE(eth.speed_gbps);
  EXPECT_EQ(eth.mtu, 1460);
  EXPECT_EQ(name(n.gpudirect.status), "absent");
  EXPECT_NE(std::find(n.notes.begin(), n.notes.end(), "/sys/class/net/eth0/speed: not reported by the driver (-1)"),
            n.notes.end());
  EXPECT_TRUE(analyze_cluster({n}).anomalies.empty());
}

TEST(TopologyFixture, BrokenVariantsNameTheirAnomaly) {
  const TempDir dir;
  const auto lines = [&](const std::string& fixture) {
    return anomaly_lines(analyze_cluster({probe_fixture(dir, fixture, fixture)}));
  };
  EXPECT_EQ(lines("dgx-port-down"),
            std::vector<std::string>{"nic_port_down dgx-port-down mlx5_3 port 1: state DOWN (physical Disabled)"});
  EXPECT_EQ(lines("dgx-slow-port"),
            std::vector<std::string>{"nic_slow dgx-slow-port mlx5_5 port 1: 200 Gb/s while its peers run 400 Gb/s"});
  EXPECT_EQ(lines("dgx-pcie-gen4x8"),
            std::vector<std::string>{"pcie_downtrained dgx-pcie-gen4x8 GPU 2 (0000:3a:00.0): PCIe Gen4 x8 below its "
                                     "max Gen5 x16: x8 of x16 lanes, Gen4 while its peers run Gen5"});
  EXPECT_EQ(lines("dgx-no-peermem"),
            std::vector<std::string>{"gpudirect_rdma_absent dgx-no-peermem : RDMA NICs and GPUs, but neither "
                                     "nvidia_peermem nor nv_peer_mem is loaded"});
}

TEST(TopologyFixture, MalformedEntriesBecomeUnknownWithANote) {
  const TempDir dir;
  const fs::path root = dir.path() / "odd";
  testing::write_fixture("pcie4-roce", root, "odd");
  const fs::path gpu = root / "sys/bus/pci/devices/0000:43:00.0";
  std::ofstream(gpu / "current_link_speed") << "\x01\x02garbage";
  std::ofstream(gpu / "current_link_width") << "sixteen\n";
  fs::remove(gpu / "max_link_width");
  fs::create_directory(gpu / "max_link_width");  // unreadable: a directory where a file should be
  fs::remove(gpu / "numa_node");
  std::ofstream(root / "sys/class/infiniband/mlx5_0/ports/1/rate") << "fast\n";
  std::ofstream(root / "proc/meminfo") << "nothing here\n";
  fs::remove(root / "sys/class/net/eno1/device");
  fs::create_directory_symlink("../../../nowhere", root / "sys/class/net/eno1/device");
  fs::remove_all(root / "sys/devices/system/node");

  RecordedGpuSource source = no_gpu();
  NodeTopology n;
  ASSERT_NO_THROW(n = probe_node(roots_of(root), source, true));
  const GpuInfo& g = n.gpus.at(0);
  EXPECT_FALSE(g.pcie.current_gen);
  EXPECT_FALSE(g.pcie.current_width);
  EXPECT_FALSE(g.pcie.max_width);
  EXPECT_EQ(g.pcie.max_gen, 4);
  EXPECT_FALSE(g.numa_node);
  EXPECT_FALSE(nic_named(n, "mlx5_0").ports.at(0).rate_gbps);
  EXPECT_FALSE(n.host.memory_bytes);
  EXPECT_FALSE(n.host.numa_nodes);
  EXPECT_FALSE(nic_named(n, "eno1").pci_address);
  const auto has = [&](const std::string& text) {
    return std::any_of(n.notes.begin(), n.notes.end(), [&](const std::string& s) { return s.find(text) == 0; });
  };
  EXPECT_TRUE(
      has("/sys/bus/pci/devices/0000:43:00.0/current_link_speed: "
          "not text"));
  EXPECT_TRUE(
      has("/sys/bus/pci/devices/0000:43:00.0/current_link_width: "
          "'sixteen' is not a number"));
  EXPECT_TRUE(
      has("/sys/bus/pci/devices/0000:43:00.0/max_link_width: "
          "unreadable (Is a directory)"));
  EXPECT_TRUE(
      has("/sys/bus/pci/devices/0000:43:00.0/numa_node: "
          "unreadable (No such file or directory)"));
  EXPECT_TRUE(has("/sys/class/infiniband/mlx5_0/ports/1/rate: 'fast' is not a rate"));
  EXPECT_TRUE(has("/proc/meminfo: no readable MemTotal line"));
  EXPECT_TRUE(has("/sys/class/net/eno1/device: dangling"));
  EXPECT_TRUE(has("/sys/devices/system/node: no NUMA node entries"));
  // The analysis and writers take the holes too.
  const ClusterTopology c = analyze_cluster({n});
  std::ostringstream out;
  write_topology_summary(c, out);
  EXPECT_NE(out.str().find("Gen? x?/Gen4 x?"), std::string::npos) << out.str();
}

TEST(TopologyFixture, MissingRootsGiveUnknownsNotErrors) {
  const TempDir dir;
  RecordedGpuSource source = no_gpu();
  NodeTopology n;
  ASSERT_NO_THROW(n = probe_node(roots_of(dir.path() / "absent"), source, true));
  EXPECT_EQ(n.host.hostname, "unknown");
  EXPECT_TRUE(n.gpus.empty());
  EXPECT_TRUE(n.nics.empty());
  EXPECT_EQ(name(n.gpudirect.status), "unknown");
  EXPECT_FALSE(n.notes.empty());
}

// Recorded NVML and CUDA values for the DGX fixture's eight GPUs: every GPU
// with 18 NVLink links to NVSwitches.
GpuReport dgx_report(const NodeTopology& sysfs_view, const std::string& driver) {
  GpuReport r;
  r.driver_version = driver;
  for (std::size_t i = 0; i < sysfs_view.gpus.size(); ++i) {
    GpuInfo g;
    g.index = static_cast<int>(i);
    g.pci_bus_id = "0000" + sysfs_view.gpus[i].pci_bus_id;  // NVML's 8-digit domain
    g.name = "NVIDIA H100 80GB HBM3";
    g.memory_bytes = 85520809984ULL;
    g.sm_count = 132;
    g.ecc_mode = "enabled";
    g.mig_mode = "disabled";
    for (int l = 0; l < 18; ++l) g.nvlinks.push_back({l, true, 4, std::nullopt, LinkPeer::nvswitch});
    r.gpus.push_back(g);
  }
  return r;
}

GpuBandwidth dgx_bandwidth(std::size_t n, double h2d) {
  GpuBandwidth b;
  b.method = "recorded";
  b.h2d_gbs.assign(n, h2d);
  b.d2h_gbs.assign(n, 53.0);
  b.local_copy_gbs.assign(n, 1500.0);
  return b;
}

TEST(TopologyAnalysis, RecordedNvmlValues) {
  const TempDir dir;
  std::vector<NodeTopology> nodes;
  const char* hosts[] = {"dgx-01", "dgx-02", "dgx-03", "dgx-04"};
  for (const char* host : hosts) {
    const fs::path root = dir.path() / host;
    testing::write_fixture("dgx", root, host);
    RecordedGpuSource plain = no_gpu();
    const NodeTopology sysfs_view = probe_node(roots_of(root), plain, false);
    GpuReport report = dgx_report(sysfs_view, std::string(host) == "dgx-03" ? "535.161.08" : "550.54.15");
    GpuBandwidth bw = dgx_bandwidth(8, 55.0);
    if (std::string(host) == "dgx-02") {
      report.gpus[3].nvlinks[4].active = false;
      report.gpus[3].nvlinks[9].active = false;
      bw.h2d_gbs[5] = 12.5;
    }
    if (std::string(host) == "dgx-04") report.gpus.pop_back();
    RecordedGpuSource source(report, bw);
    nodes.push_back(probe_node(roots_of(root), source, true));
  }
  EXPECT_EQ(nodes[0].gpu_status, "");
  EXPECT_EQ(nodes[0].gpus[0].index, 0);
  EXPECT_EQ(nodes[0].gpus[0].pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(nodes[0].gpus[0].pcie.max_gen, 5);  // from sysfs, merged by bus id
  EXPECT_EQ(nodes[0].gpus[0].numa_node, 0);
  EXPECT_EQ(nodes[0].gpus[2].h2d_gbs, 55.0);
  EXPECT_EQ(nodes[0].gpu_matrix[0][5], "NV18");
  EXPECT_EQ(nodes[1].gpu_matrix[3][0], "NV16");
  EXPECT_EQ(nodes[0].method, "recorded");

  const ClusterTopology c = analyze_cluster(nodes);
  EXPECT_EQ(anomaly_lines(c),
            (std::vector<std::string>{
                "driver dgx-03 : driver 535.161.08; most nodes run 550.54.15",
                "gpu_count dgx-04 : 7 GPUs; most nodes have 8",
                "nvlink_down dgx-02 GPU 3 (0000:4b:00.0): NVLink links 4, 9 down: 16 of 18 active, peers have 18",
                "h2d_slow dgx-02 GPU 5 (0000:ab:00.0): host-to-device 12.5 GB/s, below 75% of its peers' median "
                "55.0 GB/s",
            }));
  ASSERT_EQ(c.groups.size(), 3U);
  EXPECT_EQ(c.groups[0].hosts, (std::vector<std::string>{"dgx-01", "dgx-02"}));
  EXPECT_EQ(c.groups[0].signature,
            "8x NVIDIA H100 80GB HBM3, driver 550.54.15 | 2x ethernet 100 Gb/s, 8x infiniband 400 Gb/s | "
            "GPUDirect RDMA ready | 2 sockets, 112 cores, 2015 GiB");
}

TEST(TopologyAnalysis, GpuWithoutNicOnItsNumaNodeAndDifferentModel) {
  const TempDir dir;
  NodeTopology a = probe_fixture(dir, "pcie4-roce", "a");
  NodeTopology b = probe_fixture(dir, "pcie4-roce", "b");
  NodeTopology c = probe_fixture(dir, "pcie4-roce", "c");
  for (NodeTopology* n : {&a, &b, &c}) {
    for (GpuInfo& g : n->gpus) g.name = "NVIDIA L40S";
  }
  c.gpus[1].name = "NVIDIA L4";
  // Node b lost the NIC of socket 1: GPUs 2 and 3 reach the other socket's NIC.
  b.nearest_nic[2] = {b.gpus[2].pci_bus_id, "mlx5_0", PciPath::sys};
  b.nearest_nic[3] = {b.gpus[3].pci_bus_id, "mlx5_0", PciPath::sys};
  EXPECT_EQ(anomaly_lines(analyze_cluster({a, b, c})),
            (std::vector<std::string>{
                "gpu_model c GPU 1 (0000:44:00.0): NVIDIA L4; most GPUs are NVIDIA L40S",
                "gpu_no_local_nic b GPU 2 (0000:c3:00.0): no NIC on its NUMA node; the nearest, mlx5_0, is across "
                "sockets (SYS)",
                "gpu_no_local_nic b GPU 3 (0000:c4:00.0): no NIC on its NUMA node; the nearest, mlx5_0, is across "
                "sockets (SYS)",
            }));
}

TEST(TopologyAnalysis, IdleLinkSpeedIsANoteNotAnAnomaly) {
  const TempDir dir;
  NodeTopology n = probe_fixture(dir, "dgx");
  for (GpuInfo& g : n.gpus) g.pcie.current_gen = 1;  // idle GPUs drop to 2.5 GT/s
  const ClusterTopology c = analyze_cluster({n});
  EXPECT_TRUE(c.anomalies.empty());
  ASSERT_EQ(c.notes.size(), 1U);
  EXPECT_EQ(c.notes[0].rfind("8 GPUs report a PCIe generation below their max", 0), 0U);
}

// A node whose record does not parse is named, not dropped.
TEST(TopologyGather, UnreadableRecordIsAnAnomalyNamingTheNode) {
  Layout layout = layout_from(0, {"n-a", "n-a", "n-b", "n-b"}, {0, 0, 2, 2}, {0, 1, 0, 1});
  NodeTopology a;
  a.host.hostname = "n-a";
  nlohmann::ordered_json j = node_to_json(a);
  j["node_index"] = 0;
  const ClusterTopology cluster = cluster_from_records({j.dump(), "", "{\"host\": {\"hostn", ""}, layout);
  ASSERT_EQ(cluster.nodes.size(), 2U);
  EXPECT_EQ(cluster.nodes[0].host.hostname, "n-a");
  EXPECT_EQ(cluster.nodes[1].host.hostname, "n-b");
  ASSERT_FALSE(cluster.anomalies.empty());
  EXPECT_EQ(cluster.anomalies.front().kind, "topology_unreadable");
  EXPECT_EQ(cluster.anomalies.front().host, "n-b");
  EXPECT_EQ(cluster.anomalies.front().detail, "the topology record of node 1 (rank 2) is not JSON");

  j["node_index"] = 7;  // names no node of this run
  const ClusterTopology stray = cluster_from_records({j.dump(), "", "", ""}, layout);
  ASSERT_FALSE(stray.anomalies.empty());
  EXPECT_EQ(stray.anomalies.front().host, "n-a");
  EXPECT_EQ(stray.anomalies.front().detail, "the topology record of node 0 (rank 0) names no node of this run");
}

TEST(TopologyWriters, JsonRoundTrip) {
  const TempDir dir;
  const fs::path root = dir.path() / "n";
  testing::write_fixture("dgx", root, "n");
  RecordedGpuSource plain = no_gpu();
  GpuReport report = dgx_report(probe_node(roots_of(root), plain, false), "550.54.15");
  report.p2p_access = {{std::nullopt, true}, {true, std::nullopt}};
  report.p2p_rank = {{std::nullopt, 0}, {0, std::nullopt}};
  GpuBandwidth bw = dgx_bandwidth(8, 55.0);
  bw.d2d_gbs = {{std::nullopt, 380.5}, {381.0, std::nullopt}};
  RecordedGpuSource source(report, bw);
  const NodeTopology n = probe_node(roots_of(root), source, true);
  const auto j = node_to_json(n);
  EXPECT_EQ(node_to_json(node_from_json(nlohmann::json::parse(j.dump()))).dump(), j.dump());
}

// Names in files map to the closed sets and back; an unknown NIC kind is an
// error naming the NIC, an unknown bus or link peer the explicit "unknown".
TEST(TopologyWriters, ClosedSetsReadBackByName) {
  for (const auto& [kind, label] : nic_kind_names) EXPECT_EQ(parse_nic_kind(label), kind);
  for (const auto& [bus, label] : nic_bus_names) EXPECT_EQ(parse_nic_bus(label), bus);
  for (const auto& [peer, label] : link_peer_names) EXPECT_EQ(parse_link_peer(label), peer);
  for (const auto& [status, label] : gdr_status_names) EXPECT_EQ(parse_gdr_status(label), status);
  EXPECT_TRUE(is_rdma(NicKind::infiniband));
  EXPECT_TRUE(is_rdma(NicKind::roce));
  EXPECT_FALSE(is_rdma(NicKind::ethernet));

  auto j = nlohmann::json::parse(R"({"nics": [{"name": "mlx5_0", "kind": "roce", "bus": "usb"}],
      "gpus": [{"pci_bus_id": "0000:18:00.0", "nvlinks": [{"link": 0, "remote_kind": "bridge"}]}],
      "gpudirect_rdma": {"status": "maybe"}})");
  const NodeTopology n = node_from_json(j);
  EXPECT_EQ(n.nics.at(0).kind, NicKind::roce);
  EXPECT_EQ(n.nics.at(0).bus, NicBus::unknown);
  EXPECT_EQ(n.gpus.at(0).nvlinks.at(0).remote_kind, LinkPeer::unknown);
  EXPECT_EQ(n.gpudirect.status, GdrStatus::unknown);
  j["nics"][0]["kind"] = "token-ring";
  try {
    (void)node_from_json(j);
    FAIL() << "an unknown NIC kind was read";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "topology: NIC 'mlx5_0' has kind 'token-ring', not infiniband, roce or ethernet");
  }
}

TEST(TopologyWriters, SummaryMatchesGolden) {
  const TempDir dir;
  std::vector<NodeTopology> nodes;
  nodes.push_back(probe_fixture(dir, "dgx", "dgx-01"));
  nodes.push_back(probe_fixture(dir, "dgx-pcie-gen4x8", "dgx-02"));
  nodes.push_back(probe_fixture(dir, "cloud-vm", "vm-01"));
  std::ostringstream out;
  write_topology_summary(analyze_cluster(nodes), out);
  const std::string golden_path = std::string(FABRICBENCH_GOLDEN_DIR) + "/topology_summary.txt";
  if (std::getenv("FABRICBENCH_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path) << out.str();
  std::ifstream in(golden_path);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(out.str(), golden.str());
}

TEST(TopologyParsing, BusIdsAndLinkSpeeds) {
  EXPECT_EQ(normalize_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_bus_id("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_bus_id("garbage"), "garbage");
  EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_from_speed("8 GT/s"), 3);
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_speed("Unknown"), std::nullopt);
  EXPECT_EQ(pcie_gen_from_speed("7 GT/s"), std::nullopt);
}

TEST(TopologyProbe, SystemSourceNeverThrows) {
  const std::unique_ptr<GpuInfoSource> source = make_system_gpu_source();
  GpuReport report;
  ASSERT_NO_THROW(report = source->query());
  // Without a GPU it says why; with one it lists them. Either way a record.
  EXPECT_TRUE(!report.unavailable.empty() || !report.gpus.empty());
}

}  // namespace
}  // namespace fabricbench

namespace fabricbench {
namespace {

TEST(TopologyNetworkRate, ActiveRdmaPortsOrEthernetOrUnknown) {
  const TempDir dir;
  // 8 x 400 Gb/s InfiniBand; the 2 Ethernet ports do not count next to RDMA.
  EXPECT_EQ(network_gbit(probe_fixture(dir, "dgx", "dgx")), 3200.0);
  EXPECT_EQ(network_gbit(probe_fixture(dir, "dgx-slow-port", "slow")), 3000.0);
  EXPECT_EQ(network_gbit(probe_fixture(dir, "dgx-port-down", "down")), 2800.0);
  // virtio does not report a speed: no rate, never a guess.
  EXPECT_FALSE(network_gbit(probe_fixture(dir, "cloud-vm", "vm")));
  const ClusterTopology two =
      analyze_cluster({probe_fixture(dir, "dgx", "a"), probe_fixture(dir, "dgx-slow-port", "b")});
  EXPECT_EQ(network_gbit_per_node(two), 3000.0);
  const ClusterTopology mixed = analyze_cluster({probe_fixture(dir, "dgx", "c"), probe_fixture(dir, "cloud-vm", "d")});
  EXPECT_FALSE(network_gbit_per_node(mixed));
}

}  // namespace
}  // namespace fabricbench
