#include "fabricbench/transport/nccl_log.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "fabricbench/core/text.hpp"

namespace fabricbench {
namespace {

std::string_view strip_end(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

bool starts(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// The devices of "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB
// ib0:10.0.0.1<0>" (2.20 to 2.23 may merge ports: "[0]={[0] mlx5_0:1/IB,
// [1] mlx5_1:1/IB}"; 2.30.7 adds rail and plane: "[0]mlx5_0:1:2:0/IB"), or
// the interfaces of "NET/Socket : Using [0]eth0:10.0.0.1<0>".
std::vector<std::string> listed_devices(std::string_view list, bool socket) {
  std::vector<std::string> out;
  if (const std::size_t semi = list.find(';'); semi != std::string_view::npos) list = list.substr(0, semi);
  static const std::regex ib(R"(\[\d+\] ?([^\s\[\]{},=]+:\d+(?::\d*)*/[A-Za-z]+))");
  static const std::regex interface(R"(\[\d+\]([^\s:\[\]]+):)");
  const std::string text(list);
  for (std::sregex_iterator it(text.begin(), text.end(), socket ? interface : ib), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

void keep(std::vector<std::string>& lines, std::string line) {
  if (lines.size() < nccl_lines_kept && std::find(lines.begin(), lines.end(), line) == lines.end())
    lines.push_back(std::move(line));
}

}  // namespace

std::optional<NcclLogLine> split_nccl_line(std::string_view line) {
  line = strip_end(line);
  // "host:pid:tid [dev] NCCL INFO message"; the host may hold anything but
  // the last two ':'-separated numbers are pid and tid.
  // WARN lines carry the source file and line (and from 2.30.7 the
  // function) between the device and "NCCL WARN"; from 2.26 a timestamp
  // ("[%F %T] ") may come first.
  static const std::regex prefix(
      R"(^(?:\[[^\]]*\] )?([^ ]*?):\d+:\d+ \[(\d+)\] (?:[^ ]+:\d+ (?:\([^)]*\) )?)?NCCL (INFO|WARN) ?)");
  const std::string text(line);
  std::smatch m;
  if (!std::regex_search(text, m, prefix)) return std::nullopt;
  NcclLogLine out;
  out.host = m[1];
  out.device = whole_int(std::string(m[2]));
  out.warning = m[3] == "WARN";
  out.message = text.substr(static_cast<std::size_t>(m.length(0)));
  return out;
}

std::optional<NcclChannelLine> parse_channel_line(std::string_view message) {
  static const std::regex channel(
      R"(^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-Fx]+\] -> (\d+)\[[0-9a-fA-Fx]+\](?: \[(send|receive)\])? via (.+)$)");
  const std::string text(strip_end(message));
  std::smatch m;
  if (!std::regex_search(text, m, channel)) return std::nullopt;
  const auto channel_id = whole_int(std::string(m[1]));
  const auto from = whole_int(std::string(m[2]));
  const auto to = whole_int(std::string(m[3]));
  if (!channel_id || !from || !to) return std::nullopt;
  NcclChannelLine out{*channel_id, *from, *to, trim(std::string(m[5]))};
  // "P2P/direct pointer" keeps its space; 2.31's receive side adds how it
  // flushes ("/flush=None"), which is no part of the transport's name.
  if (const std::size_t f = out.via.find("/flush="); f != std::string::npos) out.via.resize(f);
  return out;
}

NcclRankUsage read_nccl_log(std::string_view log, int rank, const std::string& host,
                            const std::function<int(int)>& node_of, std::optional<int> device) {
  NcclRankUsage usage;
  usage.rank = rank;
  usage.host = host;
  std::map<std::pair<PeerClass, std::string>, int> paths;
  // One connection per channel, peer, direction and transport: NCCL logs a
  // channel again when a later algorithm connects it the same way.
  std::set<std::tuple<int, int, int, std::string>> seen;
  static const std::regex counts(R"((\d+) (coll|collnet|nvls|p2p) channels(?=,|$))");
  // "%s set by environment to %lld." (param.cc, with the period), the
  // variables read by hand without it, and "NCCL_IB_HCA set to %s".
  static const std::regex env_set(R"(^(NCCL_[A-Za-z0-9_]+) set (?:by environment )?to (.*?)\.?$)");
  // "NET/Plugin: Loaded net plugin %s (vN)" (2.19 on), "Successfully loaded
  // external plugin %s" (2.27), "... external network plugin %s" (2.28 on).
  static const std::regex plugin(
      R"(^(?:NET/Plugin ?: ?Loaded net plugin|Successfully loaded external (?:network )?plugin) (.+?)(?: \(v\d+\))?$)");
  // "CollNet %02d/%1d : %d [send] via COLLNET/%s/%d%s%s" (coll_net.cc).
  static const std::regex collnet(R"(^CollNet (\d+)/\d+ : \d+ \[(send|receive)\] via (COLLNET/\S+)$)");
  const int own_node = node_of(rank);
  while (!log.empty()) {
    const std::size_t end = log.find('\n');
    const std::string_view raw = log.substr(0, end);
    log.remove_prefix(end == std::string_view::npos ? log.size() : end + 1);
    // 2.31's diagnostics go to stdout as "host:pid NCCL DIAG ...", outside
    // the logger; read wherever they were captured.
    if (const std::size_t diag = raw.find(" NCCL DIAG "); diag != std::string_view::npos) {
      keep(usage.diagnostics, std::string(strip_end(raw.substr(diag + 1))));
      continue;
    }
    const std::optional<NcclLogLine> line = split_nccl_line(raw);
    if (!line || (device && line->device != device)) continue;
    const std::string& msg = line->message;
    if (line->warning) {
      keep(usage.warnings, msg);
      continue;
    }
    std::smatch m;
    if (starts(msg, "NCCL version ")) {
      usage.version = trim(msg.substr(13));
    } else if (starts(msg, "NCCL git version ")) {
      usage.git = trim(msg.substr(17));
    } else if (starts(msg, "Using network ")) {
      usage.network = trim(msg.substr(14));
    } else if (std::regex_search(msg, m, plugin)) {
      const std::string name = trim(std::string(m[1]));
      // "Loaded net plugin NCCL RDMA Plugin v8 (v8)" names the plugin; the
      // internal one is no plugin.
      if (name.find("internal") == std::string::npos) usage.net_plugin = name;
    } else if (starts(msg, "NET/IB : Using") || starts(msg, "NET/IB: Using")) {
      usage.nics = listed_devices(msg.substr(msg.find("Using") + 5), false);
    } else if (starts(msg, "NET/Socket : Using") || starts(msg, "NET/Socket: Using")) {
      // The IB list wins where both were made (the socket one also serves bootstrap).
      if (usage.network != "IB" || usage.nics.empty())
        if (!usage.network || *usage.network == "Socket")
          usage.nics = listed_devices(msg.substr(msg.find("Using") + 5), true);
    } else if (starts(msg, "GPU Direct RDMA Enabled for")) {
      usage.gdr = true;
    } else if (starts(msg, "GPU Direct RDMA Disabled for")) {
      if (usage.gdr != true) usage.gdr = false;
    } else if (msg.find(" : GPU Direct RDMA Disabled for HCA") != std::string::npos) {
      // The NIC cannot reach GPU memory at all (topo.cc): no per-GPU line follows.
      if (usage.gdr != true) usage.gdr = false;
    } else if (starts(msg, "NVLS comm ")) {
      // NVLS has no per-channel line: its communicator line says it is in use.
      ++paths[{PeerClass::within_node, "NVLS"}];
    } else if (std::regex_search(msg, m, collnet)) {
      const std::string via = m[3];
      if (seen.insert({whole_int(std::string(m[1])).value_or(0), -1, m[2] == "receive" ? 1 : 0, via}).second)
        ++paths[{PeerClass::across_nodes, via}];
    } else if (starts(msg, "NVLS multicast support is available")) {
      usage.nvls = true;
    } else if (starts(msg, "NVLS multicast support is not available")) {
      usage.nvls = false;
    } else if (std::regex_search(msg, m, env_set)) {
      usage.environment[m[1]] = trim(std::string(m[2]));
    } else if (starts(msg, "Diagnostics")) {
      keep(usage.diagnostics, msg);
    } else if (const std::optional<NcclChannelLine> c = parse_channel_line(msg)) {
      const int peer = c->from == rank ? c->to : c->from;
      if (peer == rank) continue;  // a rank to itself: no transport between two GPUs
      const bool receive = msg.find("[receive]") != std::string::npos;
      if (!seen.insert({c->channel, peer, receive ? 1 : 0, c->via}).second) continue;
      const PeerClass between = node_of(peer) == own_node ? PeerClass::within_node : PeerClass::across_nodes;
      ++paths[{between, c->via}];
    } else if (msg.find(" channels") != std::string::npos && msg.find("coll channels") != std::string::npos) {
      for (std::sregex_iterator it(msg.begin(), msg.end(), counts), stop; it != stop; ++it) {
        const std::optional<int> n = whole_int(std::string((*it)[1]));
        const std::string kind = (*it)[2];
        if (kind == "coll") usage.coll_channels = n;
        if (kind == "nvls") usage.nvls_channels = n;
        if (kind == "p2p" && !usage.p2p_channels) usage.p2p_channels = n;
      }
    }
  }
  for (const auto& [key, n] : paths) usage.paths.push_back({key.first, key.second, n});
  return usage;
}

}  // namespace fabricbench
