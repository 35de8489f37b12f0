#include "fabricbench/topology/pcie_probe.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "fabricbench/core/text.hpp"
#include "fabricbench/topology/detail/sysfs_files.hpp"

namespace fabricbench {
namespace fs = std::filesystem;

namespace {

using detail::FileText;
using detail::is_bus_id;
using detail::list_dir;
using detail::Overflow;

// Config space is at most 4 KiB; sysfs text files are small. Longer files are
// cut there (the hypervisor flag is in the first processor of /proc/cpuinfo).
constexpr std::size_t max_read = 4096;

FileText read_bytes(const fs::path& path, std::size_t limit = max_read) {
  return detail::read_small_file(path, limit, Overflow::truncate);
}

// The trimmed first line of a small text file, or empty.
std::optional<std::string> first_line(const fs::path& path) {
  const FileText b = read_bytes(path);
  if (!b.text) return std::nullopt;
  std::string line = trim(b.text->substr(0, b.text->find('\n')));
  if (line.empty()) return std::nullopt;
  return line;
}

std::optional<long long> integer(const fs::path& path) {
  const auto text = first_line(path);
  if (!text) return std::nullopt;
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
  return value;
}

bool dir_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// The bus ids from the root port down to the device itself, from where the
// device sits in /sys/devices; empty when it is not in the tree.
std::vector<std::string> chain_of(const fs::path& devices, const std::string& bus_id, fs::path& canonical) {
  std::error_code ec;
  canonical = fs::canonical(devices / bus_id, ec);
  std::vector<std::string> out;
  if (ec) return out;
  bool in_root = false;
  for (const auto& part : canonical) {
    const std::string s = part.string();
    if (s.rfind("pci", 0) == 0 && s.find(':') != std::string::npos) {
      in_root = true;
      out.clear();
    } else if (in_root && is_bus_id(s)) {
      out.push_back(s);
    }
  }
  return out;
}

// A PCIe link as sysfs states it; unreadable parts stay empty (a bridge's
// link files are absent on some platforms, which is no news worth a note).
PcieLink link_of(const fs::path& dir, std::vector<std::string>& notes, const std::string& shown) {
  PcieLink l;
  const auto speed = [&](const char* file) -> std::optional<int> {
    const auto text = first_line(dir / file);
    if (!text) return std::nullopt;
    const auto gen = pcie_gen_from_speed(*text);
    // "Unknown" is what an empty slot's port reports.
    if (!gen && text->find("Unknown") == std::string::npos)
      notes.push_back(fmt::format("{}/{}: '{}' is not a PCIe link speed", shown, file, *text));
    return gen;
  };
  const auto width = [&](const char* file) -> std::optional<int> {
    const auto v = integer(dir / file);
    if (!v || *v < 1 || *v > 32) return std::nullopt;  // 0: nothing trained on it
    return static_cast<int>(*v);
  };
  l.current_gen = speed("current_link_speed");
  l.max_gen = speed("max_link_speed");
  l.current_width = width("current_link_width");
  l.max_width = width("max_link_width");
  return l;
}

// The rate a link can carry per direction: its capable generation (the
// lower of both ends' max, as current speed drops at idle) times its trained
// width (the max when the trained one is unknown).
std::optional<double> link_gbs(const PcieLink& near, const std::optional<PcieLink>& far) {
  std::optional<int> gen = near.max_gen;
  if (far && far->max_gen) gen = gen ? std::min(*gen, *far->max_gen) : far->max_gen;
  std::optional<int> width = near.current_width ? near.current_width : near.max_width;
  if (far && far->current_width) width = width ? std::min(*width, *far->current_width) : far->current_width;
  if (!gen || !width) return std::nullopt;
  const auto lane = pcie_lane_gbs(*gen);
  if (!lane) return std::nullopt;
  return *lane * *width;
}

bool is_bridge(const fs::path& dir) {
  const auto cls = first_line(dir / "class");
  return cls && cls->rfind("0x0604", 0) == 0;
}

std::uint32_t le32(std::string_view b, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8U |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16U |
         static_cast<std::uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24U;
}

}  // namespace

AcsReading acs_from_config(std::string_view config) {
  AcsReading r;
  constexpr std::size_t extended = 0x100;
  if (config.size() < extended + 4) {
    r.why = config.size() <= 64
                ? fmt::format("config space beyond {} bytes is readable by root only", config.size())
                : fmt::format("only {} bytes of config space: no PCIe extended capabilities visible", config.size());
    return r;
  }
  std::size_t at = extended;
  std::set<std::size_t> seen;
  // The list is at most (4096 - 256) / 4 entries long; a loop is a broken list.
  while (at >= extended && at + 8 <= config.size() && seen.insert(at).second) {
    const std::uint32_t header = le32(config, at);
    if (header == 0 || header == 0xffffffffU) break;
    if ((header & 0xffffU) == 0x000dU) {
      const int control = static_cast<int>((le32(config, at + 4) >> 16U) & 0xffffU);
      r.control = control;
      r.state = (control & 0x000c) != 0 ? AcsState::redirect : AcsState::open;
      return r;
    }
    at = (header >> 20U) & 0xffcU;
  }
  r.state = AcsState::absent;
  return r;
}

std::vector<PcieBridge> probe_pcie_bridges(const ProbeRoots& roots, std::vector<GpuInfo>& gpus,
                                           std::vector<std::string>& notes) {
  const fs::path devices = roots.sysfs / "bus/pci/devices";
  std::vector<PcieBridge> bridges;
  std::map<std::string, std::size_t> by_id;
  std::map<std::string, fs::path> dirs;
  for (GpuInfo& gpu : gpus) {
    fs::path canonical;
    const std::vector<std::string> chain = chain_of(devices, gpu.pci_bus_id, canonical);
    if (chain.size() < 2 || chain.back() != gpu.pci_bus_id) continue;
    // The bridges above the GPU, in the tree: walk up from the GPU's directory.
    std::vector<fs::path> up;
    fs::path dir = canonical.parent_path();
    for (std::size_t k = chain.size() - 1; k-- > 0; dir = dir.parent_path()) up.insert(up.begin(), dir);
    std::size_t usable = 0;
    while (usable < chain.size() - 1 && is_bridge(up[usable])) ++usable;
    if (usable == 0) continue;
    gpu.pcie_switches.clear();
    gpu.root_port = chain[0];
    for (std::size_t k = 0; k < usable; ++k) {
      const std::string& id = chain[k];
      const BridgeRole role = k == 0       ? BridgeRole::root_port
                              : k % 2 == 1 ? BridgeRole::switch_upstream
                                           : BridgeRole::switch_downstream;
      if (role == BridgeRole::switch_upstream) gpu.pcie_switches.push_back(id);
      auto [it, fresh] = by_id.try_emplace(id, bridges.size());
      if (fresh) {
        PcieBridge b;
        b.pci_bus_id = id;
        b.role = role;
        if (k > 0) b.parent = chain[k - 1];
        b.link = link_of(up[k], notes, "/sys/bus/pci/devices/" + id);
        dirs[id] = up[k];
        bridges.push_back(std::move(b));
      }
      bridges[it->second].gpus.push_back(gpu.pci_bus_id);
    }
  }
  for (PcieBridge& b : bridges) {
    const fs::path& dir = dirs[b.pci_bus_id];
    const FileText config = read_bytes(dir / "config");
    if (!config.text) {
      b.acs_unknown = fmt::format("config space unreadable ({})", config.error);
    } else {
      const AcsReading acs = acs_from_config(*config.text);
      b.acs = acs.state;
      b.acs_control = acs.control;
      b.acs_unknown = acs.why;
    }
    if (b.role != BridgeRole::switch_upstream) continue;
    // The switch: its uplink against its downstream ports with a device below.
    std::optional<PcieLink> above;
    if (b.parent) above = link_of(dir.parent_path(), notes, "/sys/bus/pci/devices/" + *b.parent);
    b.uplink_gbs = link_gbs(b.link, above);
    int occupied = 0;
    double sum = 0;
    bool all_known = true;
    for (const std::string& port : list_dir(dir)) {
      if (!is_bus_id(port) || !is_bridge(dir / port)) continue;
      std::optional<std::string> child;
      for (const std::string& below : list_dir(dir / port))
        if (is_bus_id(below)) child = below;
      if (!child) continue;
      ++occupied;
      const PcieLink port_link = link_of(dir / port, notes, "/sys/bus/pci/devices/" + port);
      const PcieLink child_link = link_of(dir / port / *child, notes, "/sys/bus/pci/devices/" + *child);
      const auto rate = link_gbs(port_link, child_link);
      if (rate)
        sum += *rate;
      else
        all_known = false;
    }
    b.occupied_ports = occupied;
    if (occupied > 0 && all_known) b.downstream_gbs = sum;
    if (b.uplink_gbs && b.downstream_gbs && *b.uplink_gbs > 0) b.oversubscription = *b.downstream_gbs / *b.uplink_gbs;
  }
  return bridges;
}

IommuInfo probe_iommu(const ProbeRoots& roots, const std::vector<GpuInfo>& gpus, std::vector<std::string>& notes) {
  IommuInfo info;
  const fs::path units = roots.sysfs / "class/iommu";
  const fs::path groups = roots.sysfs / "kernel/iommu_groups";
  if (dir_exists(units)) info.units = static_cast<int>(list_dir(units).size());
  if (dir_exists(groups)) info.groups = static_cast<int>(list_dir(groups).size());
  if (const FileText cmdline = read_bytes(roots.procfs / "cmdline"); cmdline.text) {
    std::istringstream in(*cmdline.text);
    std::string word;
    while (in >> word) {
      if (word == "--") break;  // what follows is init's, not the kernel's
      for (const char* key : {"iommu=", "intel_iommu=", "amd_iommu="})
        if (word.rfind(key, 0) == 0) info.kernel_parameters.push_back(word);
    }
  }
  std::set<std::string> types;
  for (const GpuInfo& gpu : gpus) {
    std::error_code ec;
    const fs::path group = fs::canonical(roots.sysfs / "bus/pci/devices" / gpu.pci_bus_id / "iommu_group", ec);
    if (ec) continue;
    if (const auto type = first_line(group / "type")) types.insert(*type);
  }
  if (types.empty() && info.groups && *info.groups > 0) {
    for (const std::string& g : list_dir(groups))
      if (const auto type = first_line(groups / g / "type")) types.insert(*type);
  }
  info.domain_types.assign(types.begin(), types.end());
  const bool translated = types.contains("DMA") || types.contains("DMA-FQ");
  if (translated)
    info.mode = IommuMode::translated;
  else if (types.contains("identity"))
    info.mode = IommuMode::passthrough;
  else if (info.groups == 0 && info.units.value_or(0) == 0)
    info.mode = IommuMode::off;
  else if (!info.groups && !info.units)
    notes.push_back("IOMMU: neither /sys/class/iommu nor /sys/kernel/iommu_groups is readable");
  return info;
}

std::optional<std::string> hypervisor_from_dmi(const std::string& vendor, const std::string& product) {
  const std::string v = lower_ascii(vendor);
  const std::string p = lower_ascii(product);
  const auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  if (has(v, "amazon ec2") || has(p, "amazon ec2")) {
    if (p.size() >= 6 && p.compare(p.size() - 6, 6, ".metal") == 0) return std::nullopt;
    return "Amazon EC2";
  }
  if (has(v, "google") || has(p, "google compute engine")) return "Google Compute Engine";
  if (has(v, "vmware") || has(p, "vmware")) return "VMware";
  if (has(v, "microsoft") && has(p, "virtual machine")) return "Microsoft Hyper-V";
  if (has(v, "xen") || has(p, "hvm domu")) return "Xen";
  if (has(v, "innotek") || has(p, "virtualbox")) return "VirtualBox";
  if (has(p, "kvm") || has(v, "kvm")) return "KVM";
  if (has(v, "qemu") || has(p, "qemu")) return "QEMU";
  if (has(v, "openstack") || has(p, "openstack")) return "OpenStack";
  return std::nullopt;
}

Virtualization probe_virtualization(const ProbeRoots& roots, std::vector<GpuInfo>& gpus,
                                    std::vector<std::string>& notes) {
  Virtualization v;
  if (const FileText cpuinfo = read_bytes(roots.procfs / "cpuinfo", std::size_t{1} << 16); cpuinfo.text) {
    // The first CPU's flags say it; they come within the first block.
    std::istringstream in(*cpuinfo.text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("flags", 0) != 0 || line.find(':') == std::string::npos) continue;
      std::istringstream flags(line.substr(line.find(':') + 1));
      std::string flag;
      v.hypervisor_flag = false;
      while (flags >> flag)
        if (flag == "hypervisor") v.hypervisor_flag = true;
      break;
    }
  }
  if (const auto type = first_line(roots.sysfs / "hypervisor/type")) v.hypervisor = type;
  const auto vendor = first_line(roots.sysfs / "class/dmi/id/sys_vendor");
  const auto product = first_line(roots.sysfs / "class/dmi/id/product_name");
  if (vendor || product) {
    v.platform = trim(fmt::format("{} {}", vendor.value_or(""), product.value_or("")));
    if (!v.hypervisor) v.hypervisor = hypervisor_from_dmi(vendor.value_or(""), product.value_or(""));
  }
  v.virtio_devices = static_cast<int>(list_dir(roots.sysfs / "bus/virtio/devices").size());

  // MIG: the driver lists each GPU's instances under its capabilities, by
  // device minor; the minor of a bus id is in the GPU's information file.
  const fs::path nvidia = roots.procfs / "driver/nvidia";
  for (const std::string& bus : list_dir(nvidia / "gpus")) {
    const FileText info = read_bytes(nvidia / "gpus" / bus / "information");
    if (!info.text) continue;
    std::optional<int> minor;
    std::istringstream in(*info.text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Device Minor:", 0) != 0) continue;
      const std::string value = trim(line.substr(13));
      int m = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), m);
      if (ec == std::errc() && ptr == value.data() + value.size()) minor = m;
    }
    if (!minor) {
      notes.push_back(fmt::format("/proc/driver/nvidia/gpus/{}/information: no Device Minor line", bus));
      continue;
    }
    const fs::path mig = nvidia / fmt::format("capabilities/gpu{}/mig", *minor);
    if (!dir_exists(mig)) continue;
    int instances = 0;
    for (const std::string& e : list_dir(mig))
      if (e.rfind("gi", 0) == 0) ++instances;
    for (GpuInfo& gpu : gpus)
      if (gpu.pci_bus_id == normalize_bus_id(bus)) gpu.mig_instances = instances;
  }
  for (GpuInfo& gpu : gpus) {
    std::error_code ec;
    if (!gpu.virtualization && fs::exists(roots.sysfs / "bus/pci/devices" / gpu.pci_bus_id / "physfn", ec))
      gpu.virtualization = "sriov_vf";
  }
  return v;
}

}  // namespace fabricbench
