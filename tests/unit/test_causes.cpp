// Causes and fixes: each rule fires on its case and stays silent on the
// healthy one, on hand-built topologies and NCCL usage records.

#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "fabricbench/analysis/achievable.hpp"
#include "fabricbench/analysis/causes.hpp"
#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/results/result_json.hpp"
#include "fabricbench/transport/nccl_log.hpp"

namespace fabricbench {
namespace {

// Two nodes of 2 GPUs (NVLink between them) and 2 active InfiniBand ports
// each; mlx5_0 sits by GPU 0, mlx5_1 by GPU 1, the other is across sockets.
NodeTopology node(const std::string& host) {
  NodeTopology n;
  n.host.hostname = host;
  for (int i = 0; i < 2; ++i) {
    GpuInfo g;
    g.index = i;
    g.pci_bus_id = i == 0 ? "0000:18:00.0" : "0000:98:00.0";
    g.name = "NVIDIA H100 80GB HBM3";
    n.gpus.push_back(g);
    NicInfo nic;
    nic.name = i == 0 ? "mlx5_0" : "mlx5_1";
    nic.kind = NicKind::infiniband;
    NicPort port;
    port.state = "ACTIVE";
    port.rate_gbps = 400;
    nic.ports.push_back(port);
    n.nics.push_back(nic);
  }
  n.gpu_matrix = {{"X", "NV18"}, {"NV18", "X"}};
  n.nic_matrix = {{"PIX", "SYS"}, {"SYS", "PIX"}};
  n.nearest_nic = {{"0000:18:00.0", "mlx5_0", PciPath::pix}, {"0000:98:00.0", "mlx5_1", PciPath::pix}};
  n.gpudirect.status = GdrStatus::ready;
  return n;
}

ClusterTopology cluster() {
  ClusterTopology t;
  t.nodes = {node("n0"), node("n1")};
  return t;
}

const std::vector<std::string> devices{
    "rank 0: n0 GPU 0 H100 0000:18:00.0 GPU-a (compute 9.0)", "rank 1: n0 GPU 1 H100 0000:98:00.0 GPU-b (compute 9.0)",
    "rank 2: n1 GPU 0 H100 0000:18:00.0 GPU-c (compute 9.0)", "rank 3: n1 GPU 1 H100 0000:98:00.0 GPU-d (compute 9.0)"};

// What a healthy run's NCCL says: IB with GPUDirect RDMA through each
// GPU's own NIC, NVLink P2P within the node.
NcclUsage healthy() {
  NcclUsage u;
  for (int r = 0; r < 4; ++r) {
    NcclRankUsage ru;
    ru.rank = r;
    ru.host = r < 2 ? "n0" : "n1";
    ru.version = "2.21.5+cuda12.4";
    ru.network = "IB";
    ru.nics = {"mlx5_0:1/IB", "mlx5_1:1/IB"};
    ru.gdr = true;
    ru.paths = {{PeerClass::within_node, "P2P/CUMEM/read", 8},
                {PeerClass::across_nodes, r % 2 == 0 ? "NET/IB/0/GDRDMA" : "NET/IB/1/GDRDMA", 8}};
    ru.coll_channels = 16;
    u.ranks.push_back(ru);
  }
  return u;
}

std::vector<std::string> kinds(const std::vector<Cause>& causes) {
  std::vector<std::string> out;
  for (const Cause& c : causes) out.push_back(c.kind);
  return out;
}

TEST(Causes, AHealthyNcclRunHasNoCause) {
  const ClusterTopology t = cluster();
  EXPECT_TRUE(nccl_causes(healthy(), &t, devices).empty());
}

TEST(Causes, SocketsWhileRdmaIsUpNameTheSettingAndTheHost) {
  const ClusterTopology t = cluster();
  NcclUsage u = healthy();
  for (NcclRankUsage& r : u.ranks)
    if (r.host == "n1") {
      r.network = "Socket";
      r.nics = {"eth0"};
      r.gdr = false;  // said, but sockets carry no GPUDirect RDMA: no gdr_off
      r.paths = {{PeerClass::within_node, "P2P/CUMEM/read", 8}, {PeerClass::across_nodes, "NET/Socket/0", 8}};
      r.environment["NCCL_IB_DISABLE"] = "1";
    }
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(kinds(causes), std::vector<std::string>{"socket_fallback"});
  EXPECT_EQ(causes[0].hosts, std::vector<std::string>{"n1"});
  EXPECT_NE(causes[0].observed.find("n1 (ranks 2, 3)"), std::string::npos) << causes[0].observed;
  EXPECT_NE(causes[0].cause.find("NCCL_IB_DISABLE=1"), std::string::npos);
  EXPECT_EQ(causes[0].fix, "unset NCCL_IB_DISABLE (environment and nccl.conf) on n1");
  // Without the setting: what is missing where the job runs.
  for (NcclRankUsage& r : u.ranks) r.environment.clear();
  const std::vector<Cause> again = nccl_causes(u, &t, devices);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_NE(again[0].cause.find("libibverbs"), std::string::npos);
  // No RDMA NIC on the node: sockets are all there is, no cause.
  ClusterTopology plain = t;
  for (NodeTopology& n : plain.nodes) n.nics.clear();
  EXPECT_TRUE(nccl_causes(u, &plain, devices).empty());
}

TEST(Causes, GpuDirectRdmaOffSaysWhy) {
  ClusterTopology t = cluster();
  NcclUsage u = healthy();
  u.ranks[0].paths[1].via = "NET/IB/0";
  u.ranks[0].gdr = false;
  std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(kinds(causes), std::vector<std::string>{"gdr_off"});
  EXPECT_NE(causes[0].cause.find("GPUDirect RDMA distance"), std::string::npos) << causes[0].cause;
  // The module missing: load it.
  t.nodes[0].gpudirect.status = GdrStatus::absent;
  causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(causes.size(), 1U);
  EXPECT_NE(causes[0].fix.find("modprobe nvidia-peermem"), std::string::npos);
  EXPECT_NE(causes[0].fix.find("n0"), std::string::npos);
  // A level set by hand: unset it.
  u.ranks[0].environment["NCCL_NET_GDR_LEVEL"] = "LOC";
  causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(causes.size(), 1U);
  EXPECT_EQ(causes[0].fix, "unset NCCL_NET_GDR_LEVEL on n0");
}

TEST(Causes, FewerNicsThanActivePorts) {
  const ClusterTopology t = cluster();
  NcclUsage u = healthy();
  for (NcclRankUsage& r : u.ranks)
    if (r.host == "n0") {
      r.nics = {"mlx5_0:1/IB"};
      r.paths[1].via = "NET/IB/0/GDRDMA";
      r.environment["NCCL_IB_HCA"] = "=mlx5_0";
    }
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_FALSE(causes.empty());
  EXPECT_EQ(causes[0].kind, "nics_unused");
  EXPECT_NE(causes[0].observed.find("1 of the 2 active RDMA ports of n0; unused: mlx5_1:1"), std::string::npos)
      << causes[0].observed;
  EXPECT_NE(causes[0].fix.find("NCCL_IB_HCA"), std::string::npos);
}

TEST(Causes, SharedMemoryOrTheNetworkWhereGpusLinkDirectly) {
  const ClusterTopology t = cluster();
  NcclUsage u = healthy();
  u.ranks[0].paths[0].via = "SHM/direct/direct";
  u.ranks[0].environment["NCCL_P2P_DISABLE"] = "1";
  u.ranks[2].paths[0].via = "NET/IB/0/GDRDMA";
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  EXPECT_EQ(kinds(causes), (std::vector<std::string>{"net_within_node", "p2p_disabled"}));
  EXPECT_EQ(causes[1].fix, "unset NCCL_P2P_DISABLE on n0");
  EXPECT_EQ(causes[0].hosts, std::vector<std::string>{"n1"});
}

TEST(Causes, NoNvlsOnAnNvswitchSystem) {
  ClusterTopology t = cluster();
  NcclUsage u = healthy();
  EXPECT_TRUE(nccl_causes(u, &t, devices).empty());
  for (NodeTopology& n : t.nodes)
    for (GpuInfo& g : n.gpus) g.nvlinks.push_back({0, true, 4, std::nullopt, LinkPeer::nvswitch});
  u.ranks[3].nvls = false;
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(kinds(causes), std::vector<std::string>{"nvls_absent"});
  EXPECT_NE(causes[0].fix.find("nvidia-fabricmanager"), std::string::npos);
  EXPECT_NE(causes[0].fix.find("n1"), std::string::npos);
}

TEST(Causes, ARankSendingThroughADistantNic) {
  const ClusterTopology t = cluster();
  NcclUsage u = healthy();
  u.ranks[1].paths[1].via = "NET/IB/0/GDRDMA";  // GPU 1 of n0 through mlx5_0, across the sockets
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(kinds(causes), std::vector<std::string>{"far_nic"});
  EXPECT_NE(causes[0].observed.find("rank 1 (GPU 0000:98:00.0) through mlx5_0 (SYS)"), std::string::npos)
      << causes[0].observed;
  EXPECT_NE(causes[0].cause.find("mlx5_1 (PIX)"), std::string::npos);
}

TEST(Causes, MixedVersionsNameTheOddRanks) {
  const ClusterTopology t = cluster();
  NcclUsage u = healthy();
  u.ranks[3].version = "2.18.1+cuda12.1";
  const std::vector<Cause> causes = nccl_causes(u, &t, devices);
  ASSERT_EQ(kinds(causes), std::vector<std::string>{"nccl_version_mixed"});
  EXPECT_EQ(causes[0].fix, "run NCCL 2.21.5+cuda12.4 on n1");
}

// From NCCL's own lines to the cause: NCCL 2.24's forms, GPUDirect RDMA
// refused by distance on one node, one of its two active ports unused.
TEST(Causes, FromRecordedLogsToCauses) {
  const ClusterTopology t = cluster();
  const auto log = [](int rank, bool far) {
    const std::string p = fmt::format("n{}:9:9 [{}] NCCL INFO ", rank / 2, rank % 2);
    std::string text = p + "NCCL version 2.24.3+cuda12.6\n" + p + "Using network IB\n";
    text += p + (far ? "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
                     : "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n");
    text += p + (far ? "GPU Direct RDMA Disabled for GPU 0 / HCA 1b000 (distance 5 > 4)\n"
                     : "GPU Direct RDMA Enabled for GPU 0 / HCA 1b000 (distance 1 <= 4), read 1\n");
    const int peer = (rank + 2) % 4;
    const std::string nic = far ? "0" : std::to_string(rank % 2);
    text += p + fmt::format("Channel 00/0 : {}[{}] -> {}[{}] [send] via NET/IB/{}{}\n", rank, rank % 2, peer, peer % 2,
                            nic, far ? "" : "/GDRDMA");
    text += p + fmt::format("Channel 00/0 : {}[{}] -> {}[{}] via P2P/CUMEM/read\n", rank, rank % 2, rank ^ 1,
                            (rank ^ 1) % 2);
    return text;
  };
  NcclUsage usage;
  for (int r = 0; r < 4; ++r)
    usage.ranks.push_back(read_nccl_log(log(r, r < 2), r, r < 2 ? "n0" : "n1", [](int q) { return q / 2; }));
  EXPECT_EQ(usage.ranks[0].gdr, false);
  EXPECT_EQ(usage.ranks[2].gdr, true);
  const std::vector<Cause> causes = nccl_causes(usage, &t, devices);
  EXPECT_EQ(kinds(causes), (std::vector<std::string>{"gdr_off", "nics_unused", "far_nic"}));
  for (const Cause& c : causes) EXPECT_EQ(c.hosts, std::vector<std::string>{"n0"}) << c.kind;
  // The healthy node's own lines raise nothing.
  NcclUsage healthy_half;
  healthy_half.ranks = {usage.ranks[2], usage.ranks[3]};
  EXPECT_TRUE(nccl_causes(healthy_half, &t, devices).empty());
}

TEST(Causes, AnomaliesOfOneKindAndDetailBecomeOneCauseNamingEveryHost) {
  const std::vector<Anomaly> anomalies{
      {"mtu_mismatch", "n2", "", "MTU 1400; most ranks (6 of 8) have 1500: why"},
      {"memlock_low", "n1", "", "locked-memory limit 64 KiB"},
      {"memlock_low", "n3", "", "locked-memory limit 64 KiB"},
      {"acs_redirect", "n0", "GPUs 0-1", "ACS redirects. Fix: turn ACS off on 0000:17:00.0"},
  };
  const std::vector<Cause> causes = anomaly_causes(anomalies);
  ASSERT_EQ(causes.size(), 3U);
  EXPECT_EQ(causes[0].hosts, std::vector<std::string>{"n2"});
  EXPECT_NE(causes[0].fix.find("on n2"), std::string::npos) << causes[0].fix;
  EXPECT_EQ(causes[1].hosts, (std::vector<std::string>{"n1", "n3"}));
  EXPECT_NE(causes[1].fix.find("n1, n3"), std::string::npos) << causes[1].fix;
  EXPECT_EQ(causes[2].fix, "turn ACS off on 0000:17:00.0");  // the probe's own, exact fix
  for (const Cause& c : causes) {
    EXPECT_FALSE(c.cause.empty()) << c.kind;
    EXPECT_FALSE(c.fix.empty()) << c.kind;
  }
}

TEST(Causes, EveryAnomalyKindTheProbeNamesHasACauseAndAFix) {
  for (const char* kind : {"gpu_count",
                           "gpu_model",
                           "driver",
                           "pcie_downtrained",
                           "nvlink_down",
                           "nic_port_down",
                           "nic_slow",
                           "gpudirect_rdma_absent",
                           "gpu_no_local_nic",
                           "h2d_slow",
                           "d2h_slow",
                           "topology_unreadable",
                           "pcie_oversubscribed",
                           "pcie_contention",
                           "acs_redirect",
                           "iommu_translated",
                           "p2p_through_host",
                           "version_drift",
                           "setting_drift",
                           "nccl_forced",
                           "rdma_disabled",
                           "nccl_device_missing",
                           "memlock_low",
                           "mtu_mismatch"}) {
    const std::vector<Cause> c = anomaly_causes({{kind, "hostx", "GPU 1 (0000:5d:00.0)", "what was seen"}});
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].cause.find("the probe found"), std::string::npos) << kind << ": no rule of its own";
    EXPECT_NE(c[0].fix.find("hostx"), std::string::npos) << kind << ": " << c[0].fix;
    EXPECT_EQ(c[0].fix.find('{'), std::string::npos) << kind << ": " << c[0].fix;
  }
}

RunResult run_with_slow_node() {
  RunResult r;
  r.run.ranks = 8;
  r.run.nodes = 4;
  r.run.transport = "mpi";
  r.checked = true;
  r.complete = true;
  Finding f;
  f.kind = FindingKind::slow_node;
  f.nodes = {2};
  f.hosts = {"node2"};
  f.value_gbs = 0.012;
  f.reference_gbs = 0.4;
  f.message = "slow node node2: its links run at 0.012 GB/s";
  r.findings = {f};
  return r;
}

TEST(Causes, ASlowNodeCarriesItsPairFiguresAndWhatItsProbeShows) {
  RunResult r = run_with_slow_node();
  std::vector<Cause> causes = finding_causes(r.findings, r);
  ASSERT_EQ(causes.size(), 1U);
  EXPECT_EQ(causes[0].kind, "slow_node");
  ASSERT_EQ(causes[0].evidence.size(), 3U);
  EXPECT_DOUBLE_EQ(causes[0].evidence[0].value, 0.012);
  EXPECT_DOUBLE_EQ(causes[0].evidence[2].value, 3.0);
  EXPECT_NE(causes[0].fix.find("leave node2 out"), std::string::npos);
  // With an anomaly of its own on the network, the cause names it.
  r.topology = ClusterTopology{};
  r.topology->anomalies.push_back({"mtu_mismatch", "node2", "", "MTU 1400; most ranks (6 of 8) have 1500"});
  causes = finding_causes(r.findings, r);
  EXPECT_NE(causes[0].cause.find("node2 MTU 1400"), std::string::npos) << causes[0].cause;
}

TEST(Causes, HealthVerdictsCarryCauseAndFixAndTheFileKeepsThem) {
  RunResult r = run_with_slow_node();
  const RunVerdicts judged = judge_run(r, ReportConfig{}, builtin_expectations());
  ASSERT_FALSE(judged.verdicts.empty());
  EXPECT_EQ(judged.verdicts.front().level, Level::warn);  // worst first
  const Verdict& v = judged.verdicts.front();
  EXPECT_EQ(v.cause_kind, "slow_node");
  EXPECT_EQ(v.hosts, std::vector<std::string>{"node2"});
  EXPECT_FALSE(v.cause.empty());
  EXPECT_FALSE(v.fix.empty());
  for (const Verdict& each : judged.verdicts)
    if (each.level >= Level::warn) {
      EXPECT_FALSE(each.cause.empty()) << each.reason;
      EXPECT_FALSE(each.fix.empty()) << each.reason;
    }
  r.verdicts = judged.verdicts;
  const RunResult back = result_from_valid_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_EQ(back.verdicts.size(), r.verdicts.size());
  EXPECT_EQ(back.verdicts.front().fix, v.fix);
  EXPECT_EQ(back.verdicts.front().evidence.size(), 3U);
}

TEST(Causes, AReferenceBelowItsFigureCarriesTheCauseThatWeighsOnIt) {
  RunResult r;
  r.run.ranks = 4;
  r.run.nodes = 2;
  r.run.transport = "nccl";
  r.topology = cluster();
  r.nccl = healthy();
  for (NcclRankUsage& u : r.nccl->ranks) {
    u.network = "Socket";
    u.paths[1].via = "NET/Socket/0";
    u.environment["NCCL_NET"] = "Socket";
  }
  r.run.devices = devices;
  const std::vector<Cause> causes = find_causes(r);
  ASSERT_FALSE(causes.empty());
  // The pair matrix at 2 GB/s a node pair: 1 GB/s per NIC, far below the
  // InfiniBand NDR reference the two 400 Gb/s ports match.
  PairsResult pairs;
  pairs.nodes = PairMatrix(2);
  pairs.hosts = {"n0", "n1"};
  pairs.bytes = std::size_t{64} << 20;
  pairs.nodes.bw(0, 1) = 2.0;
  pairs.nodes.bw(1, 0) = 2.0;
  r.pairs = pairs;
  const std::vector<Verdict> refs = reference_verdicts(r, builtin_expectations());
  const auto p2p =
      std::find_if(refs.begin(), refs.end(), [](const Verdict& x) { return x.subject == "p2p.per_nic_gbs"; });
  ASSERT_NE(p2p, refs.end());
  EXPECT_EQ(p2p->level, Level::fail) << p2p->reason;
  EXPECT_EQ(p2p->cause_kind, "socket_fallback");
  EXPECT_NE(p2p->cause.find("NCCL_NET=Socket"), std::string::npos) << p2p->cause;
  EXPECT_NE(p2p->fix.find("unset NCCL_NET on n0, n1"), std::string::npos) << p2p->fix;
  EXPECT_EQ(p2p->hosts, (std::vector<std::string>{"n0", "n1"}));
  ASSERT_EQ(p2p->evidence.size(), 3U);
  EXPECT_DOUBLE_EQ(p2p->evidence[0].value, 1.0);
  // A figure with nothing to explain it says what was looked at and what to run.
  r.nccl = healthy();
  const std::vector<Verdict> plain = reference_verdicts(r, builtin_expectations());
  const auto unexplained =
      std::find_if(plain.begin(), plain.end(), [](const Verdict& x) { return x.subject == "p2p.per_nic_gbs"; });
  ASSERT_NE(unexplained, plain.end());
  EXPECT_EQ(unexplained->cause_kind, "unexplained");
  EXPECT_NE(unexplained->cause.find("NCCL's own log and the pair matrix"), std::string::npos) << unexplained->cause;
  EXPECT_FALSE(unexplained->fix.empty());
  EXPECT_EQ(causes[0].kind, "socket_fallback");
  EXPECT_NE(causes[0].cause.find("NCCL_NET=Socket"), std::string::npos);
}

TEST(Achievable, PhysicalFiguresOfEachPart) {
  EXPECT_NEAR(*pcie_lane_gbs(5) * 16, 63.015, 0.001);
  EXPECT_DOUBLE_EQ(nvlink_gbs(4), 25);
  EXPECT_DOUBLE_EQ(nvlink_gbs(5), 50);
  EXPECT_DOUBLE_EQ(nvlink_gbs(1), 0);
}

TEST(Achievable, EachLayerAgainstItsPartOrWhyNot) {
  RunResult r;
  r.run.nodes = 2;
  r.topology = cluster();
  for (NodeTopology& n : r.topology->nodes) {
    n.nics.clear();
    NicInfo eth;
    eth.name = "eth0";
    eth.speed_gbps = 100;
    eth.operstate = "up";
    n.nics.push_back(eth);
    for (GpuInfo& g : n.gpus) {
      g.pcie.max_gen = 5;
      g.pcie.max_width = 16;
      g.h2d_gbs = 50;
      g.d2h_gbs = 52;
      g.nvlinks.push_back({0, true, 4, std::nullopt, LinkPeer::gpu});
    }
    n.d2d_gbs = {{std::nullopt, 400.0}, {405.0, std::nullopt}};
  }
  r.topology->nodes[1].gpus[1].h2d_gbs = 31.5;  // the lowest share
  PairsResult pairs;
  pairs.nodes = PairMatrix(2);
  pairs.hosts = {"n0", "n1"};
  pairs.nodes.bw(0, 1) = 10.0;
  pairs.nodes.bw(1, 0) = 6.25;
  r.pairs = pairs;
  const std::vector<Verdict> v = achievable_verdicts(r);
  ASSERT_EQ(v.size(), 4U);
  for (const Verdict& each : v) {
    EXPECT_EQ(each.kind, VerdictKind::achievable);
    EXPECT_EQ(each.level, Level::info);
    EXPECT_FALSE(each.source.empty());
  }
  EXPECT_NE(v[0].reason.find("31.5 GB/s is 50% of the 63.0 GB/s of its PCIe Gen5 x16"), std::string::npos)
      << v[0].reason;
  EXPECT_EQ(v[0].hosts, std::vector<std::string>{"n1"});
  EXPECT_NE(v[2].reason.find("400.0 GB/s is 89% of the 450.0 GB/s of 18 NVLink 4 links"), std::string::npos)
      << v[2].reason;
  EXPECT_NE(v[3].reason.find("8.12 GB/s (median) is 65% of the 12.5 GB/s line rate"), std::string::npos) << v[3].reason;
  EXPECT_NE(v[3].reason.find("n1 -> n0, 6.25 GB/s (50%)"), std::string::npos) << v[3].reason;
  ASSERT_EQ(v[3].evidence.size(), 3U);
  EXPECT_DOUBLE_EQ(v[3].evidence[1].value, 12.5);
  // Not measured, or no part to hold it against: said, never a zero.
  RunResult bare;
  bare.topology = ClusterTopology{};
  bare.topology->nodes.push_back(NodeTopology{});
  const std::vector<Verdict> none = achievable_verdicts(bare);
  ASSERT_EQ(none.size(), 2U);
  EXPECT_EQ(none[0].reason, "no GPU in this run: host <-> device and GPU peer copies do not apply");
  EXPECT_EQ(none[1].reason, "node pairs: not measured (one node, or the pair matrix did not run)");
  for (const Verdict& each : none) {
    EXPECT_TRUE(each.evidence.empty());
    EXPECT_TRUE(each.source.empty());
  }
  // GPUs whose copies were not measured: each layer says so.
  bare.topology->nodes.front().gpus.push_back(GpuInfo{});
  const std::vector<Verdict> unmeasured = achievable_verdicts(bare);
  ASSERT_EQ(unmeasured.size(), 4U);
  EXPECT_NE(unmeasured[0].reason.find("not measured"), std::string::npos);
  EXPECT_NE(unmeasured[2].reason.find("not measured"), std::string::npos);
}

TEST(Achievable, AProvidersFileReplacesTheFiguresItGives) {
  const Expectations e = expectations_with(R"({"schema": "fabricbench.expectations/2", "warn_at": 0.8,
      "fail_below": 0.5, "references": [{"id": "mine", "label": "promised", "figure": "topo.h2d_gbs",
      "match": {}, "points": [{"bytes": 0, "gbs": 40}], "source": "the provider"}]})");
  EXPECT_DOUBLE_EQ(e.warn_at, 0.8);
  int h2d = 0;
  int others = 0;
  for (const Reference& r : e.references) (r.figure == ReferenceFigure::topo_h2d_gbs ? h2d : others) += 1;
  EXPECT_EQ(h2d, 1);
  EXPECT_GT(others, 0);
  EXPECT_EQ(expectations_with("").references.size(), builtin_expectations().references.size());
  EXPECT_THROW((void)expectations_with("{}"), UsageError);
}

TEST(Causes, AFailingGateSaysWhyAndWhatToDo) {
  RunResult r = run_with_slow_node();
  PairsResult pairs;
  pairs.nodes = PairMatrix(4);
  pairs.hosts = {"node0", "node1", "node2", "node3"};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) pairs.nodes.bw(i, j) = i == 2 || j == 2 ? 0.012 : 0.4;
  r.pairs = pairs;
  const Verdict past = evaluate_gate(parse_gate("pairs.bandwidth>=0.3"), r);
  EXPECT_EQ(past.level, Level::fail);
  EXPECT_EQ(past.cause_kind, "slow_node");
  EXPECT_NE(past.fix.find("leave node2 out"), std::string::npos) << past.fix;
  const Verdict lacking = evaluate_gate(parse_gate("scale.efficiency@2>=0.9"), r);
  EXPECT_EQ(lacking.level, Level::fail);
  EXPECT_EQ(lacking.cause_kind, "not_measured");
  EXPECT_NE(lacking.fix.find("fabricbench scale"), std::string::npos);
  r.findings.clear();
  const Verdict bare = evaluate_gate(parse_gate("pairs.bandwidth>=0.3"), r);
  EXPECT_EQ(bare.cause_kind, "unexplained");
  EXPECT_FALSE(bare.fix.empty());
  EXPECT_TRUE(evaluate_gate(parse_gate("pairs.bandwidth>=0.001"), r).cause.empty());  // passes: nothing to explain
}

}  // namespace
}  // namespace fabricbench
