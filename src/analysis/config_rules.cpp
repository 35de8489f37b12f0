// The configuration rules: pure logic over the records, so each is tested
// with hand-built ones. Every finding says why it hurts.

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/analysis/config_rules.hpp"
#include "fabricbench/core/text.hpp"
#include "fabricbench/records/nccl_settings.hpp"

namespace fabricbench {
namespace {

// "rank 3", "ranks 0-2", "ranks 0, 2, 5".
std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  if (ranks.size() == 1) return fmt::format("rank {}", ranks.front());
  bool run = true;
  for (std::size_t i = 1; i < ranks.size(); ++i) run = run && ranks[i] == ranks[i - 1] + 1;
  if (run) return fmt::format("ranks {}-{}", ranks.front(), ranks.back());
  return fmt::format("ranks {}", fmt::join(ranks, ", "));
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ULL << 20) && bytes % (1ULL << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ULL << 10) && bytes % (1ULL << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

struct Rules {
  const std::vector<NodeConfig>& configs;
  std::vector<Anomaly> out;
  std::map<int, int> records_of_node;

  explicit Rules(const std::vector<NodeConfig>& c) : configs(c) {
    for (const NodeConfig& r : configs) ++records_of_node[r.node];
  }

  // Which records of which node each finding in `out` was found on.
  struct Source {
    int node = 0;
    std::vector<int> ranks;
    int records = 0;
  };
  std::vector<Source> sources;

  // A finding names the ranks whose records it was found on; found alike on
  // every record of its node (interfaces of different MTUs, where the ranks
  // differ only in a variable), it is the node's, said once.
  void add(const char* kind, const NodeConfig& c, std::string detail) {
    std::size_t i = 0;
    while (i < out.size() && !(sources[i].node == c.node && out[i].kind == kind && out[i].detail == detail)) ++i;
    if (i == out.size()) {
      out.push_back({kind, c.host, "", std::move(detail)});
      sources.push_back({c.node, {}, 0});
    }
    Source& s = sources[i];
    s.ranks.insert(s.ranks.end(), c.ranks.begin(), c.ranks.end());
    std::sort(s.ranks.begin(), s.ranks.end());
    ++s.records;
    out[i].device = s.records == records_of_node.at(c.node) ? std::string() : ranks_text(s.ranks);
  }

  // Compares one value across the records, each weighing its rank count, and
  // names the records that differ from the majority; with no majority, every
  // record, with the split.
  void compare(const char* kind, const std::string& what,
               const std::function<std::optional<std::string>(const NodeConfig&)>& value, const std::string& absent,
               const std::string& why) {
    std::map<std::string, std::size_t> weight;
    std::vector<std::string> values;
    bool any = false;
    std::size_t total = 0;
    for (const NodeConfig& c : configs) {
      const auto v = value(c);
      any = any || v.has_value();
      values.push_back(v.value_or(absent));
      const std::size_t w = std::max<std::size_t>(1, c.ranks.size());
      weight[values.back()] += w;
      total += w;
    }
    if (!any || weight.size() < 2) return;
    std::size_t best = 0;
    for (const auto& [v, w] : weight) best = std::max(best, w);
    std::vector<std::string> top;
    for (const auto& [v, w] : weight)
      if (w == best) top.push_back(v);
    if (top.size() == 1) {
      for (std::size_t i = 0; i < configs.size(); ++i)
        if (values[i] != top.front())
          add(kind, configs[i],
              fmt::format("{} {}; most ranks ({} of {}) have {}: {}", what, values[i], best, total, top.front(), why));
      return;
    }
    std::vector<std::string> split;
    for (const auto& [v, w] : weight) split.push_back(fmt::format("{} on {} rank{}", v, w, w == 1 ? "" : "s"));
    for (std::size_t i = 0; i < configs.size(); ++i)
      add(kind, configs[i], fmt::format("{} {}; no majority ({}): {}", what, values[i], fmt::join(split, ", "), why));
  }

  void versions() {
    const std::string why =
        "nodes that run different software can disagree on protocols and tuning, and hang or slow "
        "the collective";
    const auto field = [&](const char* what, std::optional<std::string> NodeConfig::*member, const char* absent) {
      compare(
          "version_drift", what, [member](const NodeConfig& c) { return c.*member; }, absent, why);
    };
    field("NCCL", &NodeConfig::nccl_version, "not found");
    field("NCCL net plugin", &NodeConfig::nccl_net_plugin, "not found");
    field("NCCL tuner plugin", &NodeConfig::nccl_tuner_plugin, "not found");
    field("CUDA driver", &NodeConfig::cuda_driver, "unknown");
    field("CUDA runtime", &NodeConfig::cuda_runtime, "unknown");
    field("kernel", &NodeConfig::kernel, "unknown");
    field("libibverbs", &NodeConfig::libibverbs, "not found");
    field("MLNX_OFED", &NodeConfig::ofed, "not installed");
    field("mlx5_core", &NodeConfig::mlx5_core, "inbox or absent");
    compare(
        "version_drift", "NIC firmware",
        [](const NodeConfig& c) -> std::optional<std::string> {
          std::set<std::string> fw;
          for (const auto& [dev, v] : c.nic_firmware) fw.insert(v);
          if (fw.empty()) return std::nullopt;
          return fmt::format("{}", fmt::join(fw, " + "));
        },
        "none", why);
  }

  void settings() {
    const std::string why =
        "ranks that run with different settings can choose different algorithms, transports or "
        "interfaces, and hang or slow the collective";
    std::set<std::string> env_names;
    std::set<std::string> conf_names;
    for (const NodeConfig& c : configs) {
      for (const auto& [k, v] : c.environment) env_names.insert(k);
      for (const auto& [k, v] : c.nccl_conf) conf_names.insert(k);
    }
    for (const std::string& name : env_names)
      compare(
          "setting_drift", "environment",
          [&name](const NodeConfig& c) -> std::optional<std::string> {
            const auto it = c.environment.find(name);
            if (it == c.environment.end()) return std::nullopt;
            return fmt::format("{}={}", name, it->second);
          },
          fmt::format("{} unset", name), why);
    for (const std::string& name : conf_names)
      compare(
          "setting_drift", "nccl.conf",
          [&name](const NodeConfig& c) -> std::optional<std::string> {
            const auto it = c.nccl_conf.find(name);
            if (it == c.nccl_conf.end()) return std::nullopt;
            return fmt::format("{}={}", name, it->second);
          },
          fmt::format("{} unset", name), why);
    compare(
        "setting_drift", "locked-memory limit",
        [](const NodeConfig& c) -> std::optional<std::string> {
          if (c.memlock_unlimited == true) return std::string("unlimited");
          if (c.memlock_bytes) return size_text(*c.memlock_bytes);
          return std::nullopt;
        },
        "unknown", why);
    compare(
        "setting_drift", "IB partition keys",
        [](const NodeConfig& c) -> std::optional<std::string> {
          std::set<std::string> keys;
          for (const RdmaPortConfig& p : c.rdma_ports) keys.insert(p.pkeys.begin(), p.pkeys.end());
          if (keys.empty()) return std::nullopt;
          return fmt::format("{}", fmt::join(keys, " "));
        },
        "none", why);
    compare(
        "setting_drift", "GID type at NCCL_IB_GID_INDEX",
        [](const NodeConfig& c) -> std::optional<std::string> {
          std::set<std::string> types;
          for (const RdmaPortConfig& p : c.rdma_ports)
            if (p.gid_type && p.state == "ACTIVE") types.insert(*p.gid_type);
          if (types.empty()) return std::nullopt;
          return fmt::format("{}", fmt::join(types, " + "));
        },
        "none", why);
  }

  static std::vector<std::string> active_ports(const NodeConfig& c) {
    std::vector<std::string> ports;
    for (const RdmaPortConfig& p : c.rdma_ports)
      if (p.state == "ACTIVE") ports.push_back(fmt::format("{}:{}", p.device, p.port));
    return ports;
  }

  static std::string where(const NodeConfig& c, const std::string& name) {
    return c.environment.contains(name) ? "environment" : "nccl.conf";
  }

  void forced() {
    for (const NodeConfig& c : configs) {
      for (const char* name : {"NCCL_ALGO", "NCCL_PROTO"}) {
        const auto v = effective_setting(c, name);
        if (!v || v->empty()) continue;
        add("nccl_forced", c,
            fmt::format("{}={} ({}): NCCL no longer picks the {} per message size and scale, so bandwidth at "
                        "other sizes and node counts falls below what it would choose",
                        name, *v, where(c, name), std::string_view(name) == "NCCL_ALGO" ? "algorithm" : "protocol"));
      }
    }
  }

  void rdma_disabled() {
    for (const NodeConfig& c : configs) {
      const std::vector<std::string> ports = active_ports(c);
      if (ports.empty()) continue;
      const auto ib_disable = effective_setting(c, "NCCL_IB_DISABLE");
      const auto net = effective_setting(c, "NCCL_NET");
      std::string setting;
      if (ib_disable && ib_disable != "0")
        setting = fmt::format("NCCL_IB_DISABLE={} ({})", *ib_disable, where(c, "NCCL_IB_DISABLE"));
      else if (net && lower_ascii(*net) == "socket")
        setting = fmt::format("NCCL_NET={} ({})", *net, where(c, "NCCL_NET"));
      if (setting.empty()) continue;
      add("rdma_disabled", c,
          fmt::format("{} with active RDMA ports ({}): NCCL sends over TCP sockets instead, at a fraction of the "
                      "RDMA bandwidth",
                      setting, fmt::join(ports, ", ")));
    }
  }

  void missing_devices() {
    for (const NodeConfig& c : configs) {
      if (const auto ifname = effective_setting(c, "NCCL_SOCKET_IFNAME")) {
        const DeviceList list = parse_device_list(*ifname);
        std::vector<std::string> have;
        for (const NetInterface& i : c.interfaces) have.push_back(i.name);
        std::vector<std::string> missing;
        if (!list.exclude)
          for (const DeviceList::Entry& e : list.entries) {
            const bool found = std::any_of(have.begin(), have.end(), [&](const std::string& n) {
              return list.exact ? n == e.name : n.rfind(e.name, 0) == 0;
            });
            if (!found) missing.push_back(e.name);
          }
        if (!missing.empty() || c.nccl_interfaces.empty())
          add("nccl_device_missing", c,
              fmt::format("NCCL_SOCKET_IFNAME={} ({}) {}; the node has {}: NCCL cannot bootstrap or fails over to "
                          "another interface",
                          *ifname, where(c, "NCCL_SOCKET_IFNAME"),
                          missing.empty() ? std::string("selects no interface that is up")
                                          : fmt::format("names no interface {}", fmt::join(missing, ", ")),
                          have.empty() ? std::string("no interface") : fmt::format("{}", fmt::join(have, ", "))));
      }
      if (const auto hca = effective_setting(c, "NCCL_IB_HCA")) {
        const DeviceList list = parse_device_list(*hca);
        std::vector<std::string> missing;
        if (!list.exclude)
          for (const DeviceList::Entry& e : list.entries) {
            const bool found = std::any_of(c.rdma_ports.begin(), c.rdma_ports.end(), [&](const RdmaPortConfig& p) {
              const bool name = list.exact ? p.device == e.name : p.device.rfind(e.name, 0) == 0;
              return name && (!e.port || *e.port == p.port);
            });
            if (!found) missing.push_back(e.port ? fmt::format("{}:{}", e.name, *e.port) : e.name);
          }
        if (!missing.empty()) {
          std::set<std::string> devices;
          for (const RdmaPortConfig& p : c.rdma_ports) devices.insert(fmt::format("{}:{}", p.device, p.port));
          add("nccl_device_missing", c,
              fmt::format("NCCL_IB_HCA={} ({}) names no RDMA device {}; the node has {}: NCCL uses fewer NICs than "
                          "intended, or none",
                          *hca, where(c, "NCCL_IB_HCA"), fmt::join(missing, ", "),
                          devices.empty() ? std::string("none") : fmt::format("{}", fmt::join(devices, ", "))));
        }
      }
    }
  }

  void memlock() {
    for (const NodeConfig& c : configs) {
      const std::vector<std::string> ports = active_ports(c);
      if (ports.empty() || c.memlock_unlimited != false || !c.memlock_bytes) continue;
      if (*c.memlock_bytes >= memlock_floor_bytes) continue;
      add("memlock_low", c,
          fmt::format("locked-memory limit {} (ulimit -l), below {} with active RDMA ports ({}): registering "
                      "buffers for RDMA pins memory, and NCCL fails or falls back when it cannot; set it unlimited",
                      size_text(*c.memlock_bytes), size_text(memlock_floor_bytes), fmt::join(ports, ", ")));
    }
  }

  static std::optional<int> nccl_mtu(const NodeConfig& c) {
    std::optional<int> lowest;
    for (const std::string& name : c.nccl_interfaces)
      for (const NetInterface& i : c.interfaces)
        if (i.name == name && i.mtu && (!lowest || *i.mtu < *lowest)) lowest = i.mtu;
    return lowest;
  }

  void mtu() {
    for (const NodeConfig& c : configs) {
      std::map<int, std::vector<std::string>> by_mtu;
      for (const std::string& name : c.nccl_interfaces)
        for (const NetInterface& i : c.interfaces)
          if (i.name == name && i.mtu) by_mtu[*i.mtu].push_back(name);
      if (by_mtu.size() < 2) continue;
      std::vector<std::string> parts;
      for (const auto& [m, names] : by_mtu) parts.push_back(fmt::format("{} ({})", m, fmt::join(names, ", ")));
      add("mtu_mismatch", c,
          fmt::format("the interfaces NCCL would use have different MTUs: {}; traffic across them is cut to the "
                      "smallest, or dropped where a path does not fragment",
                      fmt::join(parts, ", ")));
    }
    compare(
        "mtu_mismatch", "MTU",
        [](const NodeConfig& c) -> std::optional<std::string> {
          const auto m = nccl_mtu(c);
          if (!m) return std::nullopt;
          return std::to_string(*m);
        },
        "unknown",
        "a path between nodes of different MTUs carries the smaller, and where it does not fragment large frames "
        "are dropped, which stalls the connection");
  }
};

}  // namespace

std::vector<Anomaly> check_configuration(const std::vector<NodeConfig>& configs) {
  Rules rules(configs);
  rules.versions();
  rules.settings();
  rules.forced();
  rules.rdma_disabled();
  rules.missing_devices();
  rules.memlock();
  rules.mtu();
  return std::move(rules.out);
}

}  // namespace fabricbench
