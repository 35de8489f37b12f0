// What NCCL used, as lines: each distinct value once, with how many ranks
// (and which hosts, when not all) said it.

#include <map>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "fabricbench/output/sections.hpp"

namespace fabricbench {
namespace {

// "IB on 8 ranks" or "IB on 6 ranks; Socket on 2 ranks (node3)".
std::string tally(const NcclUsage& usage, const std::function<std::optional<std::string>(const NcclRankUsage&)>& of) {
  std::map<std::string, std::vector<const NcclRankUsage*>> by;
  std::vector<std::string> order;
  for (const NcclRankUsage& r : usage.ranks) {
    const std::optional<std::string> v = of(r);
    const std::string key = v.value_or("not said");
    auto [it, added] = by.try_emplace(key);
    if (added) order.push_back(key);
    it->second.push_back(&r);
  }
  if (order.size() == 1) return order.front();
  std::vector<std::string> parts;
  for (const std::string& key : order) {
    std::set<std::string> hosts;
    for (const NcclRankUsage* r : by.at(key)) hosts.insert(r->host);
    parts.push_back(fmt::format("{} on {} rank{} ({})", key, by.at(key).size(), by.at(key).size() == 1 ? "" : "s",
                                fmt::join(hosts, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

std::vector<std::string> nccl_usage_lines(const NcclUsage& usage) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("What NCCL used on the world communicator (its own log, {} rank{})", usage.ranks.size(),
                              usage.ranks.size() == 1 ? "" : "s"));
  if (!usage.ranks.empty()) {
    lines.push_back("  version: " + tally(usage, [](const NcclRankUsage& r) { return r.version; }));
    lines.push_back("  network: " + tally(usage, [](const NcclRankUsage& r) -> std::optional<std::string> {
                      if (!r.network) return std::nullopt;
                      std::string text = *r.network;
                      if (r.net_plugin) text += fmt::format(" (plugin {})", *r.net_plugin);
                      if (!r.nics.empty()) text += fmt::format(" over {}", fmt::join(r.nics, " "));
                      return text;
                    }));
    lines.push_back("  GPUDirect RDMA: " + tally(usage, [](const NcclRankUsage& r) -> std::optional<std::string> {
                      bool net = false;
                      bool gdr = false;
                      for (const NcclPath& p : r.paths) {
                        net = net || path_family(p.via) == "NET";
                        gdr = gdr || path_gdr(p.via);
                      }
                      if (net) return std::string(gdr ? "on" : "off");
                      if (r.gdr) return std::string(*r.gdr ? "on" : "off");
                      return std::string("no network traffic");
                    }));
    for (const PeerClass between : {PeerClass::within_node, PeerClass::across_nodes}) {
      std::map<std::string, int> connections;
      std::set<int> ranks;
      for (const NcclRankUsage& r : usage.ranks)
        for (const NcclPath& p : r.paths)
          if (p.between == between) {
            connections[p.via] += p.connections;
            ranks.insert(r.rank);
          }
      if (connections.empty()) continue;
      std::vector<std::string> parts;
      for (const auto& [via, n] : connections) parts.push_back(fmt::format("{} ({})", via, n));
      lines.push_back(fmt::format("  {}: {}", between == PeerClass::within_node ? "within a node" : "across nodes",
                                  fmt::join(parts, ", ")));
    }
    lines.push_back("  channels: " + tally(usage, [](const NcclRankUsage& r) -> std::optional<std::string> {
                      if (!r.coll_channels) return std::nullopt;
                      return fmt::format("{} coll, {} nvls, {} p2p{}", *r.coll_channels, r.nvls_channels.value_or(0),
                                         r.p2p_channels.value_or(0),
                                         r.nvls ? (*r.nvls ? "; NVLS available" : "; NVLS not available") : "");
                    }));
    std::map<std::string, int> settings;
    for (const NcclRankUsage& r : usage.ranks)
      for (const auto& [k, v] : r.environment) ++settings[k + "=" + v];
    if (!settings.empty()) {
      std::vector<std::string> parts;
      for (const auto& [kv, n] : settings) parts.push_back(fmt::format("{} ({} rank{})", kv, n, n == 1 ? "" : "s"));
      lines.push_back(fmt::format("  set by environment: {}", fmt::join(parts, ", ")));
    }
  }
  for (const std::string& note : usage.notes) lines.push_back("  note: " + note);
  return lines;
}

void print_nccl_usage(const NcclUsage& usage, std::ostream& out) {
  for (const std::string& line : nccl_usage_lines(usage)) out << "# " << line << '\n';
}

}  // namespace fabricbench
