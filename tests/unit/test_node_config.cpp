// The configuration probe on a fixture tree written at test time (real files
// and symlinks), the NCCL device-list syntax, each rule on hand-built records
// (it fires on its case and only there), the gather's record assignment, the
// JSON round trip and the summary.

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>

#include "fabricbench/analysis/config_rules.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/output/topology_summary.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/topology/node_config.hpp"
#include "scratch_dir.hpp"

namespace fabricbench {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

void link(const fs::path& path, const std::string& target) {
  fs::create_directories(path.parent_path());
  fs::create_symlink(target, path);
}

// A GPU node with one InfiniBand HCA and two Ethernet interfaces.
void write_node(const fs::path& root) {
  const fs::path sys = root / "sys";
  put(sys / "class/net/eth0/mtu", "9000\n");
  put(sys / "class/net/eth0/operstate", "up\n");
  put(sys / "class/net/eth1/mtu", "1500\n");
  put(sys / "class/net/eth1/operstate", "up\n");
  put(sys / "class/net/lo/mtu", "65536\n");
  put(sys / "class/net/lo/operstate", "unknown\n");
  put(sys / "class/net/docker0/mtu", "1500\n");
  put(sys / "class/net/docker0/operstate", "down\n");
  const fs::path ib = sys / "class/infiniband/mlx5_0";
  put(ib / "fw_ver", "28.39.1002\n");
  put(ib / "ports/1/state", "4: ACTIVE\n");
  put(ib / "ports/1/link_layer", "InfiniBand\n");
  put(ib / "ports/1/pkeys/0", "0xffff\n");
  put(ib / "ports/1/pkeys/1", "0x0000\n");
  put(ib / "ports/1/pkeys/2", "0x8001\n");
  put(ib / "ports/1/gid_attrs/types/3", "RoCE v2\n");
  put(sys / "module/mlx5_core/version", "23.10-1.1.9\n");
  put(root / "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
  put(root / "proc/driver/nvidia/version",
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
  put(root / "etc/nccl.conf", "# site defaults\nNCCL_DEBUG=WARN\nNCCL_PROTO=Simple\n");
  put(root / "etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  put(root / "etc/ld.so.conf.d/cuda.conf", "/usr/local/cuda/lib64\n");
  put(root / "home/u/.nccl.conf", "NCCL_PROTO=LL128\n");
  const fs::path lib = root / "usr/lib/x86_64-linux-gnu";
  put(lib / "libnccl.so.2.21.5", "");
  link(lib / "libnccl.so.2", "libnccl.so.2.21.5");
  put(lib / "libibverbs.so.1.14.50.0", "");
  link(lib / "libibverbs.so.1", "libibverbs.so.1.14.50.0");
  put(root / "usr/local/cuda/lib64/libnccl-net-ofi.so", "");
  put(root / "opt/plugins/libnccl-tuner-site.so", "");
  put(root / "usr/bin/ofed_info", "#!/bin/bash\nif [ \"$1\" = \"-s\" ]; then\n  echo MLNX_OFED_LINUX-23.10-1.1.9.0:\n");
}

class NodeConfigProbe : public ScratchDirTest {
 protected:
  ConfigInputs inputs(std::vector<std::string> env) const {
    ConfigInputs in;
    in.roots = probe_roots((dir_ / "sys").string(), (dir_ / "proc").string());
    in.environment = std::move(env);
    in.memlock = MemlockLimit{65536};
    return in;
  }
};

TEST_F(NodeConfigProbe, ReadsVersionsPluginsSettingsAndInterfacesFromTheTree) {
  write_node(dir_);
  const NodeConfig c =
      probe_config(inputs({"HOME=/home/u", "LD_LIBRARY_PATH=/opt/plugins", "NCCL_TUNER_PLUGIN=site",
                           "NCCL_IB_GID_INDEX=3", "OMPI_MCA_btl_tcp_if_include=eth0", "OMPI_COMM_WORLD_RANK=3",
                           "OMPI_MCA_orte_hnp_uri=x", "PATH=/bin", "UCX_TLS=rc", "FI_PROVIDER=efa"}));
  EXPECT_EQ(c.nccl_version, "2.21.5");
  EXPECT_EQ(c.nccl_version_source, "libnccl.so.2.21.5");
  EXPECT_EQ(c.libibverbs, "1.14.50.0");
  EXPECT_EQ(c.ofed, "MLNX_OFED_LINUX-23.10-1.1.9.0");
  EXPECT_EQ(c.mlx5_core, "23.10-1.1.9");
  EXPECT_EQ(c.kernel, "6.1.0-18-amd64");
  EXPECT_EQ(c.nvidia_driver, "535.104.05");
  // Unset NCCL_NET_PLUGIN looks for libnccl-net.so, which is not there.
  EXPECT_EQ(c.nccl_net_plugin, std::nullopt);
  EXPECT_EQ(c.nccl_tuner_plugin, "libnccl-tuner-site.so");
  EXPECT_EQ(c.nccl_plugins_found, (std::vector<std::string>{"libnccl-net-ofi.so", "libnccl-tuner-site.so"}));
  // Settings only: launcher bookkeeping and other variables stay out.
  EXPECT_EQ(c.environment, (std::map<std::string, std::string>{{"FI_PROVIDER", "efa"},
                                                               {"NCCL_IB_GID_INDEX", "3"},
                                                               {"NCCL_TUNER_PLUGIN", "site"},
                                                               {"OMPI_MCA_btl_tcp_if_include", "eth0"},
                                                               {"UCX_TLS", "rc"}}));
  // ~/.nccl.conf wins over /etc/nccl.conf.
  EXPECT_EQ(c.nccl_conf_files, (std::vector<std::string>{"/home/u/.nccl.conf", "/etc/nccl.conf"}));
  EXPECT_EQ(effective_setting(c, "NCCL_PROTO"), "LL128");
  EXPECT_EQ(effective_setting(c, "NCCL_DEBUG"), "WARN");
  EXPECT_EQ(c.memlock_bytes, 65536U);
  EXPECT_EQ(c.memlock_unlimited, false);
  EXPECT_EQ(c.nic_firmware, (std::map<std::string, std::string>{{"mlx5_0", "28.39.1002"}}));
  ASSERT_EQ(c.rdma_ports.size(), 1U);
  EXPECT_EQ(c.rdma_ports[0].state, "ACTIVE");
  EXPECT_EQ(c.rdma_ports[0].pkeys, (std::vector<std::string>{"0x8001", "0xffff"}));
  EXPECT_EQ(c.rdma_ports[0].gid_type, "RoCE v2");
  EXPECT_EQ(c.interfaces.size(), 4U);
  // No "ib*" interface: all but docker and lo that are up.
  EXPECT_EQ(c.nccl_interfaces, (std::vector<std::string>{"eth0", "eth1"}));
}

TEST_F(NodeConfigProbe, NcclConfFileReplacesTheHomeFileAndTheEnvironmentWins) {
  write_node(dir_);
  // Absolute paths from the environment are read under the tree's root too.
  put(dir_ / "opt/site.conf", "NCCL_PROTO=LL\nNCCL_ALGO=Tree\n");
  const NodeConfig c =
      probe_config(inputs({"HOME=/home/u", "NCCL_CONF_FILE=/opt/site.conf", "NCCL_ALGO=Ring", "NCCL_NET_PLUGIN=none"}));
  EXPECT_EQ(c.nccl_conf_files, (std::vector<std::string>{"/opt/site.conf", "/etc/nccl.conf"}));
  EXPECT_EQ(effective_setting(c, "NCCL_PROTO"), "LL");
  EXPECT_EQ(effective_setting(c, "NCCL_ALGO"), "Ring");
  EXPECT_EQ(c.nccl_net_plugin, "none");
}

TEST_F(NodeConfigProbe, RuntimeVersionsWinOverTheLibraryFoundAndAnEmptyTreeIsNotAnError) {
  ConfigInputs in = inputs({});
  in.runtime.nccl = "2.23.4";
  in.runtime.cuda_driver = "12.4";
  in.memlock.reset();
  const NodeConfig c = probe_config(in);
  EXPECT_EQ(c.nccl_version, "2.23.4");
  EXPECT_EQ(c.nccl_version_source, "ncclGetVersion");
  EXPECT_EQ(c.cuda_driver, "12.4");
  EXPECT_FALSE(c.kernel);
  EXPECT_FALSE(c.memlock_unlimited);
  EXPECT_TRUE(c.interfaces.empty());
  EXPECT_FALSE(c.notes.empty());
}

TEST_F(NodeConfigProbe, MemlockFromTheTreesLimitsFile) {
  const ProbeRoots roots = probe_roots((dir_ / "sys").string(), (dir_ / "proc").string());
  EXPECT_FALSE(memlock_limit(roots));  // none in the tree: unknown, not this process's
  put(dir_ / "proc/self/limits",
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max locked memory         65536                65536                bytes     \n");
  ASSERT_TRUE(memlock_limit(roots));
  EXPECT_EQ(memlock_limit(roots)->bytes, 65536U);
  EXPECT_FALSE(parse_memlock_limit("Max locked memory         unlimited            unlimited            bytes")->bytes);
  EXPECT_FALSE(parse_memlock_limit("Max locked memory  lots"));
  EXPECT_FALSE(parse_memlock_limit(""));
}

TEST(NcclDeviceList, PrefixesExclusionExactAndPorts) {
  EXPECT_TRUE(selects(parse_device_list("eth"), "eth0"));
  EXPECT_FALSE(selects(parse_device_list("eth"), "ib0"));
  EXPECT_FALSE(selects(parse_device_list("^eth,lo"), "eth1"));
  EXPECT_TRUE(selects(parse_device_list("^eth,lo"), "ib0"));
  EXPECT_FALSE(selects(parse_device_list("=eth"), "eth0"));
  EXPECT_TRUE(selects(parse_device_list("=eth0,eth1"), "eth1"));
  EXPECT_FALSE(selects(parse_device_list("^=eth0"), "eth0"));
  EXPECT_TRUE(selects(parse_device_list("^=eth0"), "eth01"));
  EXPECT_TRUE(selects(parse_device_list("mlx5_0:1,mlx5_1:1"), "mlx5_1", 1));
  EXPECT_FALSE(selects(parse_device_list("mlx5_0:1"), "mlx5_0", 2));
  const std::vector<NetInterface> ifs{{"ib0", 2044, "up"}, {"eth0", 1500, "up"}, {"lo", 65536, "unknown"}};
  EXPECT_EQ(nccl_socket_interfaces(ifs, std::nullopt), (std::vector<std::string>{"ib0"}));
  EXPECT_EQ(nccl_socket_interfaces(ifs, "eth"), (std::vector<std::string>{"eth0"}));
  EXPECT_EQ(nccl_socket_interfaces({{"lo", 65536, "unknown"}}, std::nullopt), (std::vector<std::string>{"lo"}));
}

// ---- rules on hand-built records

NodeConfig record(const std::string& host, int node, std::vector<int> ranks) {
  NodeConfig c;
  c.host = host;
  c.node = node;
  c.ranks = std::move(ranks);
  c.nccl_version = "2.21.5";
  c.cuda_driver = "12.4";
  c.kernel = "6.1.0";
  c.memlock_unlimited = true;
  c.interfaces = {{"eth0", 1500, "up"}, {"lo", 65536, "unknown"}};
  c.nccl_interfaces = {"eth0"};
  return c;
}

NodeConfig with_rdma(NodeConfig c) {
  RdmaPortConfig p;
  p.device = "mlx5_0";
  p.state = "ACTIVE";
  p.link_layer = "InfiniBand";
  c.rdma_ports.push_back(p);
  return c;
}

std::vector<NodeConfig> four_nodes() {
  return {record("a", 0, {0}), record("b", 1, {1}), record("c", 2, {2}), record("d", 3, {3})};
}

std::vector<std::string> lines(const std::vector<Anomaly>& found) {
  std::vector<std::string> out;
  for (const Anomaly& a : found) out.push_back(a.kind + " " + a.host + (a.device.empty() ? "" : " " + a.device));
  return out;
}

TEST(ConfigurationRules, IdenticalRecordsAreClean) {
  EXPECT_TRUE(check_configuration(four_nodes()).empty());
  EXPECT_TRUE(check_configuration({with_rdma(record("a", 0, {0, 1})), with_rdma(record("b", 1, {2, 3}))}).empty());
  EXPECT_TRUE(check_configuration({}).empty());
}

TEST(ConfigurationRules, AVersionOtherThanTheMajorityNamesTheOddNode) {
  auto nodes = four_nodes();
  nodes[2].nccl_version = "2.18.3";
  const auto found = check_configuration(nodes);
  EXPECT_EQ(lines(found), (std::vector<std::string>{"version_drift c"}));
  EXPECT_NE(found[0].detail.find("NCCL 2.18.3; most ranks (3 of 4) have 2.21.5"), std::string::npos) << found[0].detail;
  nodes = four_nodes();
  nodes[1].nic_firmware = {{"mlx5_0", "28.36.1010"}};
  for (std::size_t i : {0, 2, 3}) nodes[i].nic_firmware = {{"mlx5_0", "28.39.1002"}};
  EXPECT_EQ(lines(check_configuration(nodes)), (std::vector<std::string>{"version_drift b"}));
  nodes = four_nodes();
  nodes[3].nccl_version.reset();  // not found there
  EXPECT_EQ(lines(check_configuration(nodes)), (std::vector<std::string>{"version_drift d"}));
}

TEST(ConfigurationRules, WithoutAMajorityEveryRecordIsNamedWithTheSplit) {
  auto nodes = std::vector<NodeConfig>{record("a", 0, {0}), record("b", 1, {1})};
  nodes[1].kernel = "6.8.0";
  const auto found = check_configuration(nodes);
  EXPECT_EQ(lines(found), (std::vector<std::string>{"version_drift a", "version_drift b"}));
  EXPECT_NE(found[0].detail.find("no majority"), std::string::npos);
}

TEST(ConfigurationRules, AnEnvironmentVariableOnOneRankNamesThatRank) {
  // One node, ranks 0-2 alike, rank 3 with a variable of its own.
  NodeConfig odd = record("a", 0, {3});
  odd.environment["NCCL_IB_QPS_PER_CONNECTION"] = "4";
  const auto found = check_configuration({record("a", 0, {0, 1, 2}), odd});
  EXPECT_EQ(lines(found), (std::vector<std::string>{"setting_drift a rank 3"}));
  EXPECT_NE(
      found[0].detail.find("NCCL_IB_QPS_PER_CONNECTION=4; most ranks (3 of 4) have NCCL_IB_QPS_PER_CONNECTION unset"),
      std::string::npos)
      << found[0].detail;
}

TEST(ConfigurationRules, ForcedAlgorithmOrProtocolIsNamedWhereverItComesFrom) {
  auto nodes = four_nodes();
  for (auto& n : nodes) n.environment["NCCL_ALGO"] = "Ring";
  nodes[0].nccl_conf["NCCL_PROTO"] = "Simple";
  for (std::size_t i = 1; i < 4; ++i) nodes[i].nccl_conf["NCCL_PROTO"] = "Simple";
  const auto found = check_configuration(nodes);
  EXPECT_EQ(lines(found),
            (std::vector<std::string>{"nccl_forced a", "nccl_forced a", "nccl_forced b", "nccl_forced b",
                                      "nccl_forced c", "nccl_forced c", "nccl_forced d", "nccl_forced d"}));
  EXPECT_NE(found[1].detail.find("NCCL_PROTO=Simple (nccl.conf)"), std::string::npos) << found[1].detail;
}

TEST(ConfigurationRules, RdmaDisabledOnlyWhereRdmaPortsAreActive) {
  NodeConfig ib = with_rdma(record("a", 0, {0}));
  ib.environment["NCCL_IB_DISABLE"] = "1";
  EXPECT_EQ(lines(check_configuration({ib})), (std::vector<std::string>{"rdma_disabled a"}));
  NodeConfig socket = with_rdma(record("a", 0, {0}));
  socket.nccl_conf["NCCL_NET"] = "Socket";
  EXPECT_EQ(lines(check_configuration({socket})), (std::vector<std::string>{"rdma_disabled a"}));
  NodeConfig no_rdma = record("a", 0, {0});
  no_rdma.environment["NCCL_IB_DISABLE"] = "1";
  EXPECT_TRUE(check_configuration({no_rdma}).empty());
  NodeConfig down = with_rdma(record("a", 0, {0}));
  down.rdma_ports[0].state = "DOWN";
  down.environment["NCCL_IB_DISABLE"] = "1";
  EXPECT_TRUE(check_configuration({down}).empty());
  NodeConfig enabled = with_rdma(record("a", 0, {0}));
  enabled.environment["NCCL_IB_DISABLE"] = "0";
  EXPECT_TRUE(check_configuration({enabled}).empty());
}

TEST(ConfigurationRules, DevicesNamedButAbsent) {
  NodeConfig c = with_rdma(record("a", 0, {0}));
  c.environment["NCCL_SOCKET_IFNAME"] = "=eth0,bond0";
  auto found = check_configuration({c});
  ASSERT_EQ(lines(found), (std::vector<std::string>{"nccl_device_missing a"}));
  EXPECT_NE(found[0].detail.find("names no interface bond0"), std::string::npos) << found[0].detail;
  c.environment["NCCL_SOCKET_IFNAME"] = "^docker";  // an exclusion names nothing that must exist
  EXPECT_TRUE(check_configuration({c}).empty());
  c.environment["NCCL_SOCKET_IFNAME"] = "eth";
  EXPECT_TRUE(check_configuration({c}).empty());
  c.environment.erase("NCCL_SOCKET_IFNAME");
  c.environment["NCCL_IB_HCA"] = "mlx5_0:1,mlx5_1";
  found = check_configuration({c});
  ASSERT_EQ(lines(found), (std::vector<std::string>{"nccl_device_missing a"}));
  EXPECT_NE(found[0].detail.find("names no RDMA device mlx5_1"), std::string::npos) << found[0].detail;
  c.environment["NCCL_IB_HCA"] = "=mlx5_0:2";
  EXPECT_EQ(lines(check_configuration({c})), (std::vector<std::string>{"nccl_device_missing a"}));
  c.environment["NCCL_IB_HCA"] = "mlx5";
  EXPECT_TRUE(check_configuration({c}).empty());
}

TEST(ConfigurationRules, LowMemlockMattersOnlyWithRdma) {
  NodeConfig c = with_rdma(record("a", 0, {0}));
  c.memlock_unlimited = false;
  c.memlock_bytes = 64 * 1024;
  const auto found = check_configuration({c});
  ASSERT_EQ(lines(found), (std::vector<std::string>{"memlock_low a"}));
  EXPECT_NE(found[0].detail.find("64 KiB"), std::string::npos);
  c.memlock_bytes = memlock_floor_bytes;
  EXPECT_TRUE(check_configuration({c}).empty());
  NodeConfig plain = record("a", 0, {0});
  plain.memlock_unlimited = false;
  plain.memlock_bytes = 64 * 1024;
  EXPECT_TRUE(check_configuration({plain}).empty());
}

TEST(ConfigurationRules, MtuAcrossNodesAndWithinTheInterfacesNcclUses) {
  auto nodes = four_nodes();
  nodes[1].interfaces[0].mtu = 9000;
  auto found = check_configuration(nodes);
  ASSERT_EQ(lines(found), (std::vector<std::string>{"mtu_mismatch b"}));
  EXPECT_NE(found[0].detail.find("MTU 9000; most ranks (3 of 4) have 1500"), std::string::npos) << found[0].detail;
  NodeConfig mixed = record("a", 0, {0});
  mixed.interfaces.push_back({"eth1", 9000, "up"});
  mixed.nccl_interfaces = {"eth0", "eth1"};
  found = check_configuration({mixed});
  ASSERT_EQ(lines(found), (std::vector<std::string>{"mtu_mismatch a"}));
  EXPECT_NE(found[0].detail.find("1500 (eth0), 9000 (eth1)"), std::string::npos) << found[0].detail;
  // An interface NCCL does not use may differ.
  mixed.nccl_interfaces = {"eth0"};
  EXPECT_TRUE(check_configuration({mixed}).empty());
}

TEST(ConfigurationRules, AFindingAlikeOnEveryRecordOfANodeIsTheNodesSaidOnce) {
  // Ranks 0-1 and rank 2 of one node differ in a variable; both records see
  // the machine's interfaces of two MTUs.
  const auto two_mtus = [](NodeConfig c) {
    c.interfaces.push_back({"eth1", 9000, "up"});
    c.nccl_interfaces = {"eth0", "eth1"};
    return c;
  };
  NodeConfig odd = two_mtus(record("a", 0, {2}));
  odd.environment["NCCL_DEBUG"] = "INFO";
  auto found = check_configuration({two_mtus(record("a", 0, {0, 1})), odd, record("b", 1, {3})});
  ASSERT_EQ(lines(found), (std::vector<std::string>{"setting_drift a rank 2", "mtu_mismatch a"}));
  EXPECT_NE(found[1].detail.find("1500 (eth0), 9000 (eth1)"), std::string::npos) << found[1].detail;
  // Alike on some of the node's records: those records' ranks, together.
  NodeConfig one_interface = record("a", 0, {2});
  one_interface.environment["NCCL_SOCKET_IFNAME"] = "eth0";
  found = check_configuration({two_mtus(record("a", 0, {0, 1})), one_interface, two_mtus(record("a", 0, {3}))});
  EXPECT_EQ(lines(found), (std::vector<std::string>{"setting_drift a rank 2", "mtu_mismatch a ranks 0, 1, 3"}));
}

// ---- the gather's assignment, the JSON form, the summary

TEST(ConfigurationRecords, SilentRanksJoinTheRecordTheirNodeSent) {
  Layout layout;
  layout.ranks = 4;
  layout.nodes = 2;
  layout.node_of_rank = {0, 0, 1, 1};
  layout.hostnames = {"a", "b"};
  NodeConfig same = record("", 0, {});
  NodeConfig other = same;
  other.environment["NCCL_ALGO"] = "Ring";
  const std::string s = config_to_json(same).dump();
  const std::string o = config_to_json(other).dump();
  std::vector<std::string> notes;
  // Ranks 0, 1 and 2 share fingerprint 7; rank 3 has its own.
  const auto configs = configs_from_records({s, "", s, o}, {7, 7, 7, 9}, layout, notes);
  ASSERT_EQ(configs.size(), 3U);
  EXPECT_EQ(configs[0].host, "a");
  EXPECT_EQ(configs[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(configs[1].host, "b");
  EXPECT_EQ(configs[1].ranks, (std::vector<int>{2}));
  EXPECT_EQ(configs[2].ranks, (std::vector<int>{3}));
  EXPECT_EQ(configs[2].environment.at("NCCL_ALGO"), "Ring");
  EXPECT_TRUE(notes.empty());
  const auto broken = configs_from_records({s, "", "[1,", s}, {7, 7, 8, 8}, layout, notes);
  EXPECT_EQ(broken.size(), 2U);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("rank 2"), std::string::npos);
}

TEST(ConfigurationRecords, RoundTripThroughTheTopologyJsonAndTheSummary) {
  ClusterTopology cluster;
  NodeConfig c = with_rdma(record("a", 0, {0, 1}));
  c.environment["NCCL_ALGO"] = "Ring";
  c.nic_firmware["mlx5_0"] = "28.39.1002";
  c.rdma_ports[0].pkeys = {"0xffff"};
  cluster.configuration = {c, record("b", 1, {2, 3})};
  cluster.anomalies = check_configuration(cluster.configuration);
  const ClusterTopology back = topology_from_json(nlohmann::json::parse(topology_to_json(cluster).dump()));
  ASSERT_EQ(back.configuration.size(), 2U);
  EXPECT_EQ(back.configuration[0].environment, c.environment);
  EXPECT_EQ(back.configuration[0].ranks, c.ranks);
  EXPECT_EQ(back.configuration[0].rdma_ports[0].pkeys, c.rdma_ports[0].pkeys);
  EXPECT_EQ(back.configuration[0].interfaces[0].mtu, 1500);
  EXPECT_EQ(back.configuration[0].memlock_unlimited, true);
  EXPECT_EQ(back.anomalies.size(), cluster.anomalies.size());
  // Without configuration records the key is left out, as files before it.
  EXPECT_FALSE(topology_to_json(ClusterTopology{}).contains("configuration"));

  std::ostringstream out;
  write_topology_summary(back, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("software and settings (2 variants):"), std::string::npos) << text;
  EXPECT_NE(text.find("a: NCCL 2.21.5"), std::string::npos) << text;
  EXPECT_NE(text.find("eth0 mtu 1500"), std::string::npos) << text;
  EXPECT_NE(text.find("a: nccl_forced: NCCL_ALGO=Ring (environment)"), std::string::npos) << text;
}

}  // namespace
}  // namespace fabricbench
