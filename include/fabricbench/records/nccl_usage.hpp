#pragma once
// What NCCL really used, as its own log says: read on every rank from the
// INFO lines NCCL writes while it builds and connects the run's world
// communicator (INIT, NET, ENV and GRAPH subsystems; transport/nccl_log.hpp
// reads them), then gathered to rank 0. Which network and NICs, whether
// GPUDirect RDMA was on, how each channel reached each peer (NVLink P2P,
// shared memory, the IB verbs or the socket transport), the channel counts
// and the NCCL_* settings NCCL says it took from the environment. The
// analysis layer turns it into causes (analysis/causes.hpp).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/name_table.hpp"

namespace fabricbench {

// Where the peer of a connection sits: on the rank's own node or another.
enum class PeerClass { within_node, across_nodes };
inline constexpr NameTable<PeerClass, 2> peer_class_names{{
    {PeerClass::within_node, "within_node"},
    {PeerClass::across_nodes, "across_nodes"},
}};
constexpr std::string_view name(PeerClass c) { return name_in(peer_class_names, c); }

// One way a rank's channels reached peers of one class, as NCCL names it:
// "P2P/CUMEM/read", "P2P/IPC", "SHM/direct/direct", "NET/IB/0/GDRDMA",
// "NET/Socket/0", "NVLS", "CollNet".
struct NcclPath {
  PeerClass between = PeerClass::within_node;
  std::string via;
  int connections = 0;  // channel connections NCCL logged over it (send and receive)
};

// The transport family of a path: "P2P", "SHM", "NET", "NVLS", "CollNet".
std::string_view path_family(std::string_view via);
// The network of a NET path: "IB", "Socket", or a plugin's name; empty otherwise.
std::string_view path_network(std::string_view via);
// Whether a NET path ran with GPUDirect RDMA ("/GDRDMA").
bool path_gdr(std::string_view via);

struct NcclRankUsage {
  int rank = 0;
  std::string host;
  std::optional<std::string> version;     // "2.21.5+cuda12.4", from "NCCL version ..."
  std::optional<std::string> git;         // "<branch> <describe>", from "NCCL git version ..." (2.29 on)
  std::optional<std::string> network;     // "IB", "Socket", a plugin's network: "Using network ..."
  std::optional<std::string> net_plugin;  // the external plugin NCCL loaded; empty: its own
  std::vector<std::string> nics;          // as NCCL listed them: "mlx5_0:1/IB", "eth0"
  // GPUDirect RDMA between this rank's GPU and its NIC, from NCCL's
  // "GPU Direct RDMA Enabled/Disabled" lines; empty when NCCL said neither.
  std::optional<bool> gdr;
  std::vector<NcclPath> paths;
  std::optional<int> coll_channels;  // "%d coll channels, ..."
  std::optional<int> nvls_channels;
  std::optional<int> p2p_channels;
  std::optional<bool> nvls;                        // NVLS multicast available (NVSwitch systems)
  std::map<std::string, std::string> environment;  // "NCCL_X set by environment to Y"
  std::vector<std::string> warnings;               // NCCL's WARN lines, the first few
  std::vector<std::string> diagnostics;            // NCCL's DIAG/RAS lines, the first few
};

// The world communicator's usage over the ranks whose log was read.
struct NcclUsage {
  std::vector<NcclRankUsage> ranks;
  std::vector<std::string> notes;  // why a rank's log is missing or partial
};

// The most lines of one kind (warnings, diagnostics) a rank keeps.
inline constexpr std::size_t nccl_lines_kept = 16;

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<PeerClass> from_name(std::string_view text, fields::tag<PeerClass>) {
  return parse_in(peer_class_names, text);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NcclPath>
void fields_of(Self& p, Field&& field) {
  field("between", p.between);
  field("via", p.via);
  field("connections", p.connections);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NcclRankUsage>
void fields_of(Self& u, Field&& field) {
  field("rank", u.rank);
  field("host", u.host);
  field("version", u.version);
  field("git", u.git);
  field("network", u.network);
  field("net_plugin", u.net_plugin);
  field("nics", u.nics);
  field("gdr", u.gdr);
  field("paths", u.paths);
  field("coll_channels", u.coll_channels);
  field("nvls_channels", u.nvls_channels);
  field("p2p_channels", u.p2p_channels);
  field("nvls", u.nvls);
  field("environment", u.environment);
  field("warnings", u.warnings);
  field("diagnostics", u.diagnostics);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, NcclUsage>
void fields_of(Self& u, Field&& field) {
  field("ranks", u.ranks);
  field("notes", u.notes);
}

}  // namespace fabricbench
