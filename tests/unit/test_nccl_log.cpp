// NCCL's connection log read into what NCCL used. The logs are written here
// from NCCL's format strings (transport/nccl_log.hpp names each and its
// file), one per version range, never copied from a real run.

#include <gtest/gtest.h>

#include "fabricbench/transport/nccl_log.hpp"

namespace fabricbench {
namespace {

// 2 nodes of 2 ranks: ranks 0, 1 on node 0 and 2, 3 on node 1.
int node_of(int rank) { return rank / 2; }

const NcclPath* path(const NcclRankUsage& u, PeerClass between, const std::string& via) {
  for (const NcclPath& p : u.paths)
    if (p.between == between && p.via == via) return &p;
  return nullptr;
}

TEST(NcclLog, SplitsNcclsPrefixOfEveryVersion) {
  const auto info = split_nccl_line("gpu-a:4242:4250 [3] NCCL INFO Using network IB\n");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->host, "gpu-a");
  EXPECT_EQ(info->device, 3);
  EXPECT_FALSE(info->warning);
  EXPECT_EQ(info->message, "Using network IB");
  // 2.19-2.25 WARN: file and line before "NCCL WARN".
  const auto warn = split_nccl_line("gpu-a:4242:4250 [0] transport/net_ib.cc:123 NCCL WARN NET/IB : oops");
  ASSERT_TRUE(warn);
  EXPECT_TRUE(warn->warning);
  EXPECT_EQ(warn->message, "NET/IB : oops");
  // 2.26 on: a timestamp first; 2.30.7: the function in parentheses.
  const auto stamped = split_nccl_line(
      "[2026-05-05 06:16:47] node-01:189884:189884 [3] plugin/net.cc:334 (ncclNetInit) NCCL WARN "
      "Failed to initialize any NET plugin");
  ASSERT_TRUE(stamped);
  EXPECT_EQ(stamped->host, "node-01");
  EXPECT_EQ(stamped->device, 3);
  EXPECT_EQ(stamped->message, "Failed to initialize any NET plugin");
  EXPECT_FALSE(split_nccl_line("# allreduce on 8 ranks"));
  EXPECT_FALSE(split_nccl_line(""));
}

TEST(NcclLog, ReadsChannelLinesOfEachTransport) {
  const auto p2p = parse_channel_line("Channel 03/1 : 0[0] -> 1[1] via P2P/CUMEM/read");
  ASSERT_TRUE(p2p);
  EXPECT_EQ(p2p->channel, 3);
  EXPECT_EQ(p2p->from, 0);
  EXPECT_EQ(p2p->to, 1);
  EXPECT_EQ(p2p->via, "P2P/CUMEM/read");
  EXPECT_EQ(parse_channel_line("Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer")->via, "P2P/direct pointer");
  EXPECT_EQ(parse_channel_line("Channel 05 : 1[1] -> 0[0] via SHM/direct/direct")->via, "SHM/direct/direct");
  EXPECT_EQ(parse_channel_line("Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA/flush=None")->via,
            "NET/IB/0/GDRDMA");
  EXPECT_EQ(parse_channel_line("Channel 01/0 : 0[0] -> 2[0] [send] via NET/IB/1(3)/GDRDMA(PCI)")->via,
            "NET/IB/1(3)/GDRDMA(PCI)");
  // The ring dump of rings.cc has no arrow: not a connection.
  EXPECT_FALSE(parse_channel_line("Channel 00/02 :    0   1   2   3"));
}

// NCCL 2.19 on InfiniBand with GPUDirect RDMA, NVLink within the node.
TEST(NcclLog, IbWithGdrOn219) {
  const std::string log =
      "n0:100:100 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
      "n0:100:100 [0] NCCL INFO cudaDriverVersion 12030\n"
      "n0:100:100 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ib0\n"
      "n0:100:100 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file "
      "or directory No plugin found (libnccl-net.so), using internal implementation\n"
      "n0:100:100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
      "n0:100:100 [0] NCCL INFO Using network IB\n"
      "n0:100:100 [0] NCCL INFO NCCL_IB_HCA set to mlx5\n"
      "n0:100:100 [0] NCCL INFO NCCL_NET_GDR_READ set by environment to 1.\n"
      "n0:100:100 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 1b000 / HCA 0 (distance 4 <= 4), read 1\n"
      "n0:100:100 [0] NCCL INFO 24 coll channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer\n"
      "n0:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "n0:100:100 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
      "n0:100:100 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
      "n0:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0/GDRDMA\n"
      "n0:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0/GDRDMA\n"  // a second algorithm
      "n0:100:100 [0] NCCL INFO Connected all rings\n";
  const NcclRankUsage u = read_nccl_log(log, 0, "n0", node_of);
  EXPECT_EQ(u.version, "2.19.3+cuda12.3");
  EXPECT_EQ(u.network, "IB");
  EXPECT_FALSE(u.net_plugin);
  EXPECT_EQ(u.nics, (std::vector<std::string>{"mlx5_0:1/IB", "mlx5_1:1/IB"}));
  EXPECT_EQ(u.gdr, true);
  EXPECT_EQ(u.coll_channels, 24);
  EXPECT_EQ(u.nvls_channels, 16);
  EXPECT_EQ(u.p2p_channels, 32);
  EXPECT_EQ(u.environment.at("NCCL_SOCKET_IFNAME"), "ib0");
  EXPECT_EQ(u.environment.at("NCCL_IB_HCA"), "mlx5");
  EXPECT_EQ(u.environment.at("NCCL_NET_GDR_READ"), "1");
  ASSERT_TRUE(path(u, PeerClass::within_node, "P2P/CUMEM/read"));
  EXPECT_EQ(path(u, PeerClass::within_node, "P2P/CUMEM/read")->connections, 2);
  ASSERT_TRUE(path(u, PeerClass::across_nodes, "NET/IB/0/GDRDMA"));
  EXPECT_EQ(path(u, PeerClass::across_nodes, "NET/IB/0/GDRDMA")->connections, 2);  // send and receive, once each
  EXPECT_TRUE(u.warnings.empty());
}

// NCCL 2.28: no RDMA device, so the socket transport; a warning with a timestamp.
TEST(NcclLog, SocketFallbackOn228) {
  const std::string log =
      "n1:7:7 [1] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
      "n1:7:7 [1] NCCL INFO NET/Plugin: Could not find: libnccl-net.so\n"
      "n1:7:7 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
      "n1:7:7 [1] NCCL INFO NET/IB : No device found.\n"
      "n1:7:7 [1] NCCL INFO NET/IB : Using ; OOB eth0:10.1.0.2<0>\n"
      "n1:7:7 [1] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.2<0> [1]eth1:10.2.0.2<0>\n"
      "n1:7:7 [1] NCCL INFO Using network Socket\n"
      "n1:7:7 [1] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels "
      "per peer\n"
      "n1:7:7 [1] NCCL INFO NVLS multicast support is not available on dev 1 (NVLS_NCHANNELS 0)\n"
      "\n[2026-12-01 10:00:00] n1:7:9 [1] misc/socket.cc:50 NCCL WARN socket timeout, retrying\n"
      "n1:7:7 [1] NCCL INFO Channel 00/0 : 1[1] -> 3[1] [send] via NET/Socket/0\n"
      "n1:7:7 [1] NCCL INFO Channel 00/0 : 3[1] -> 1[1] [receive] via NET/Socket/1\n"
      "n1:7:7 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct\n";
  const NcclRankUsage u = read_nccl_log(log, 1, "n0", node_of);
  EXPECT_EQ(u.network, "Socket");
  EXPECT_EQ(u.nics, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_EQ(u.environment.at("NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(u.nvls, false);
  EXPECT_EQ(u.coll_channels, 4);
  EXPECT_EQ(u.nvls_channels, 0);
  EXPECT_FALSE(u.gdr);
  EXPECT_TRUE(path(u, PeerClass::across_nodes, "NET/Socket/0"));
  EXPECT_TRUE(path(u, PeerClass::across_nodes, "NET/Socket/1"));
  EXPECT_TRUE(path(u, PeerClass::within_node, "SHM/direct/direct"));
  ASSERT_EQ(u.warnings.size(), 1U);
  EXPECT_EQ(u.warnings.front(), "socket timeout, retrying");
}

// NCCL 2.30.7: a plugin, PCI-mode GDR, SHM/direct, NVLS, merged IB listing
// of 2.22 on another rank's line, the git line, diagnostics.
TEST(NcclLog, PluginNvlsAndNewerFormsOn230) {
  const std::string log =
      "n0:5:5 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
      "n0:5:5 [0] NCCL INFO NCCL git version master v2.30.7-1\n"
      "n0:5:5 [0] NCCL INFO Successfully loaded external network plugin /opt/lib/libnccl-net.so\n"
      "n0:5:5 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v11 (v11)\n"
      "n0:5:5 [0] NCCL INFO Using network NCCL RDMA Plugin v11\n"
      "n0:5:5 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
      "n0:5:5 [0] NCCL INFO NVLS comm 0x5555 headRank 0 nHeads 1 nvlsRanks 2 buffSize 1048576 nvlsPerRankSize 1 "
      "nvlsTotalSize 2\n"
      "n0:5:5 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
      "n0:5:5 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via SHM/direct\n"
      "n0:5:5 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/IB/0/GDRDMA(PCI)\n"
      "n0:5:5 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/IB/0/GDRDMA\n"
      "n0:5:5 [0] NCCL INFO Diagnostics P2P verified srcRank=0 srcCudaDev=0 srcNvmlDev=0 dstRank=1\n"
      "n0:5 NCCL DIAG [OK]   p2p: all 2 directed GPU P2P edges verified\n"
      "n0:5:5 [1] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL\n";  // another device's line
  const NcclRankUsage u = read_nccl_log(log, 0, "n0", node_of, 0);
  EXPECT_EQ(u.git, "master v2.30.7-1");
  EXPECT_EQ(u.net_plugin, "NCCL RDMA Plugin v11");
  EXPECT_EQ(u.network, "NCCL RDMA Plugin v11");
  EXPECT_EQ(u.nvls, true);
  EXPECT_TRUE(path(u, PeerClass::within_node, "NVLS"));
  EXPECT_TRUE(path(u, PeerClass::within_node, "P2P/CUMEM"));
  EXPECT_TRUE(path(u, PeerClass::within_node, "SHM/direct"));
  EXPECT_TRUE(path(u, PeerClass::across_nodes, "NET/IB/0/GDRDMA(PCI)"));
  EXPECT_TRUE(path(u, PeerClass::across_nodes, "COLLNET/IB/0/GDRDMA"));
  EXPECT_EQ(u.diagnostics.size(), 2U);
  EXPECT_FALSE(u.environment.contains("NCCL_P2P_LEVEL"));  // device 1's, filtered out
  EXPECT_TRUE(path_gdr("NET/IB/0/GDRDMA(PCI)"));
  EXPECT_EQ(path_network("NET/IB/0/GDRDMA(PCI)"), "IB");
  EXPECT_EQ(path_family("COLLNET/IB/0"), "COLLNET");
}

TEST(NcclLog, MergedPortsOf220ListEachPort) {
  const NcclRankUsage u = read_nccl_log(
      "n0:5:5 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_0:1/RoCE, [1] mlx5_1:1/RoCE} [1]mlx5_2:1/RoCE ; OOB "
      "eth0:10.0.0.1<0>\n",
      0, "n0", node_of);
  EXPECT_EQ(u.nics, (std::vector<std::string>{"mlx5_0:1/RoCE", "mlx5_1:1/RoCE", "mlx5_2:1/RoCE"}));
}

TEST(NcclLog, AnEmptyOrForeignLogSaysNothing) {
  const NcclRankUsage u = read_nccl_log("hello\nworld\n", 2, "n1", node_of);
  EXPECT_EQ(u.rank, 2);
  EXPECT_FALSE(u.version);
  EXPECT_FALSE(u.network);
  EXPECT_TRUE(u.paths.empty());
  EXPECT_TRUE(u.nics.empty());
}

}  // namespace
}  // namespace fabricbench
