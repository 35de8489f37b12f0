#include "fabricbench/records/nccl_settings.hpp"

#include <string_view>

#include "fabricbench/core/text.hpp"

namespace fabricbench {
DeviceList parse_device_list(const std::string& text) {
  DeviceList list;
  std::string_view t = text;
  if (!t.empty() && t.front() == '^') {
    list.exclude = true;
    t.remove_prefix(1);
  }
  if (!t.empty() && t.front() == '=') {
    list.exact = true;
    t.remove_prefix(1);
  }
  std::size_t start = 0;
  while (start <= t.size()) {
    const auto comma = t.find(',', start);
    const std::string item =
        trim(t.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!item.empty()) {
      DeviceList::Entry e;
      const auto colon = item.find(':');
      e.name = item.substr(0, colon);
      if (colon != std::string::npos) e.port = whole_int(item.substr(colon + 1));
      list.entries.push_back(std::move(e));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return list;
}

bool selects(const DeviceList& list, const std::string& name, std::optional<int> port) {
  bool matched = false;
  for (const DeviceList::Entry& e : list.entries) {
    const bool name_ok = list.exact ? name == e.name : std::string_view(name).starts_with(e.name);
    const bool port_ok = !e.port || !port || *e.port == *port;
    if (name_ok && port_ok) matched = true;
  }
  return list.exclude ? !matched : matched;
}

std::vector<std::string> nccl_socket_interfaces(const std::vector<NetInterface>& interfaces,
                                                const std::optional<std::string>& socket_ifname) {
  const auto pick = [&](const DeviceList& list) {
    std::vector<std::string> out;
    for (const NetInterface& i : interfaces)
      if (i.operstate != "down" && selects(list, i.name)) out.push_back(i.name);
    return out;
  };
  if (socket_ifname) return pick(parse_device_list(*socket_ifname));
  for (const char* rule : {"ib", "^docker,lo", "docker", "lo"}) {
    auto found = pick(parse_device_list(rule));
    if (!found.empty()) return found;
  }
  return {};
}

std::optional<std::string> effective_setting(const NodeConfig& config, const std::string& name) {
  if (const auto it = config.environment.find(name); it != config.environment.end()) return it->second;
  if (const auto it = config.nccl_conf.find(name); it != config.nccl_conf.end()) return it->second;
  return std::nullopt;
}

}  // namespace fabricbench
