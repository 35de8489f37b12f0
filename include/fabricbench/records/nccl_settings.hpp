#pragma once
// How NCCL reads its settings and device lists, over a node's configuration
// record: shared by the probe (which interfaces NCCL would pick) and the
// configuration rules (what a setting leaves out).

#include <optional>
#include <string>
#include <vector>

#include "fabricbench/records/topology.hpp"

namespace fabricbench {

// The setting NCCL sees: the environment, else NCCL_CONF_FILE or
// ~/.nccl.conf, else /etc/nccl.conf (NCCL's src/misc/param.cc).
std::optional<std::string> effective_setting(const NodeConfig& config, const std::string& name);

// Whether `name` is selected by a NCCL interface/device list in the syntax of
// NCCL_SOCKET_IFNAME and NCCL_IB_HCA: comma-separated prefixes, `^` in front
// excludes, `=` in front matches names exactly; an entry may end in
// ":<port>" (NCCL_IB_HCA), which `port` is checked against when given.
struct DeviceList {
  bool exclude = false;
  bool exact = false;
  struct Entry {
    std::string name;
    std::optional<int> port;
  };
  std::vector<Entry> entries;
};

DeviceList parse_device_list(const std::string& text);

bool selects(const DeviceList& list, const std::string& name, std::optional<int> port = std::nullopt);

// The interfaces NCCL's socket transport would pick: NCCL_SOCKET_IFNAME when
// set, else those starting with "ib", else all but docker* and lo, else
// docker*, else lo; only interfaces that are not down.
std::vector<std::string> nccl_socket_interfaces(const std::vector<NetInterface>& interfaces,
                                                const std::optional<std::string>& socket_ifname);

}  // namespace fabricbench
