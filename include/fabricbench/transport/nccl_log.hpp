#pragma once
// Reads what NCCL used from its own INFO lines: the network and its devices,
// the net plugin, GPUDirect RDMA, each channel's connection to each peer,
// the channel counts, NVLS, the settings NCCL took from the environment,
// its warnings and its diagnostics. Host-side (no CUDA), so it is tested on
// recorded logs where no GPU exists; the NCCL transport captures the lines
// (NcclLogCapture with the INIT, NET, ENV and GRAPH subsystems) while its
// world communicator is made and while it connects, never in a timed batch.
//
// The forms read, from NCCL's sources at the tags v2.19.1-1 to v2.30.7-1
// and 2.31.2 (the file of each form and the tags it holds for are in
// docs/guides/nccl.md, "What NCCL used"):
//   prefix   "%s:%d:%d [%d] NCCL INFO " host, pid, tid, CUDA device
//            (src/debug.cc, every tag); WARN lines put the source file and
//            line ("%s:%d ", from 2.30.7 also "(%s) ", the function) before
//            "NCCL WARN"; from 2.26 a timestamp ("[%F %T] ") may come first
//   version  "NCCL version %s" ("2.21.5+cuda12.4"; src/init.cc) and from
//            2.29 "NCCL git version %s %s" (src/misc/git_version.cc)
//   network  "Using network %s" (src/init.cc, every tag)
//   plugin   "NET/Plugin: Loaded net plugin %s (v%d)" (every tag),
//            "Successfully loaded external plugin %s" (2.27),
//            "Successfully loaded external network plugin %s" (2.28 on)
//   devices  "NET/IB : Using%s %s; OOB %s:%s" with " [%d]%s:%d/%s" per port
//            (merged ports "[%d]={...}" in 2.20-2.23, rail and plane
//            fields in 2.30.7; src/transport/net_ib.cc, net_ib/init.cc from
//            2.29) and "NET/Socket : Using%s" with " [%d]%s:%s" per
//            interface (src/transport/net_socket.cc)
//   GDR      "GPU Direct RDMA Enabled for ..." / "... Disabled for ..."
//            (src/graph/paths.cc, INFO up to 2.29, TRACE from 2.30.3: the
//            "/GDRDMA" of the NET connections says it there) and "NET/%s :
//            GPU Direct RDMA %s for HCA %d '%s'" (src/graph/topo.cc)
//   channels "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"
//            and "[receive]" (src/transport/net.cc; "/GDRDMA", "(PCI)" from
//            2.26, "/Shared", "/flush=%s" in 2.31), "Channel %02d/%01d :
//            %d[%d] -> %d[%d] via P2P/%s%s%s" (CUMEM or MNNVL, "/read",
//            "/CE"; "P2P/IPC", "P2P/direct pointer"; src/transport/p2p.cc),
//            "Channel %02d : %d[%d] -> %d[%d] via SHM/%s/%s" ("SHM/direct"
//            in 2.30.7; src/transport/shm.cc), "CollNet %02d/%1d : %d [send]
//            via COLLNET/%s/%d%s" (src/transport/coll_net.cc); NVLS has no
//            channel line: "NVLS comm %p headRank ..." says it is in use
//   counts   "%d coll channels, %d nvls channels, %d p2p channels, %d p2p
//            channels per peer" (2.19), with "%d collnet channels, " after
//            the first from 2.20 (src/init.cc)
//   NVLS     "NVLS multicast support is %savailable on dev %d" (src/transport/nvls.cc)
//   env      "%s set by environment to %lld." (src/misc/param.cc, with the
//            period), "NCCL_SOCKET_IFNAME set by environment to %s" and the
//            other variables read by hand (no period), "NCCL_IB_HCA set to %s"
//   diag     NCCL 2.31's diagnostics (NCCL_RUN_DIAGNOSTICS,
//            NCCL_RUN_RAS_DIAGNOSTICS): "%s:%d NCCL DIAG %s" on stdout
//            (src/include/diagnostics_log.h) and "Diagnostics ..." INFO lines
// A line of another form is ignored: the log is read for what it says, and a
// newer NCCL that rewords a line leaves that field empty, never wrong.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "fabricbench/records/nccl_usage.hpp"

namespace fabricbench {

// One line of NCCL's log, split at its prefix.
struct NcclLogLine {
  std::string host;
  std::optional<int> device;  // the CUDA device in "[%d]"
  bool warning = false;       // "NCCL WARN" rather than "NCCL INFO"
  std::string message;
};
std::optional<NcclLogLine> split_nccl_line(std::string_view line);

// One channel connection NCCL logged: the ranks as written, `send` unless
// the line says "[receive]".
struct NcclChannelLine {
  int channel = 0;
  int from = 0;
  int to = 0;
  std::string via;
};
std::optional<NcclChannelLine> parse_channel_line(std::string_view message);

// What one rank's log says. `rank`: its rank in the world communicator;
// `node_of`: the node of a world rank (classifies each peer as within or
// across nodes); `device`: only lines of this CUDA device (several ranks in
// one process share one log), or every line.
NcclRankUsage read_nccl_log(std::string_view log, int rank, const std::string& host,
                            const std::function<int(int)>& node_of, std::optional<int> device = std::nullopt);

}  // namespace fabricbench
