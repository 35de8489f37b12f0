#include "fabricbench/topology/sysfs_probe.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "fabricbench/core/text.hpp"
#include "fabricbench/topology/detail/sysfs_files.hpp"

namespace fabricbench {
namespace fs = std::filesystem;

namespace {

using detail::FileText;
using detail::is_bus_id;
using detail::list_dir;

// sysfs files are small; anything larger than this is not what we expect.
constexpr std::size_t max_file_bytes = 1 << 20;

FileText read_file(const fs::path& path) { return detail::read_small_file(path, max_file_bytes); }

bool printable(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f;
  });
}

// Collects the notes of one probe, each naming the entry relative to its root.
class Reader {
 public:
  Reader(const ProbeRoots& roots, std::vector<std::string>& notes) : roots_(&roots), notes_(&notes) {}

  void note(const std::string& what, const std::string& why) { notes_->push_back(fmt::format("{}: {}", what, why)); }

  // The trimmed first line, or empty with a note.
  std::optional<std::string> line(const fs::path& path, bool note_missing = true) {
    const FileText r = read_file(path);
    if (!r.text) {
      if (note_missing || fs::exists(path)) note(shown(path), "unreadable (" + r.error + ")");
      return std::nullopt;
    }
    std::string first = trim(r.text->substr(0, r.text->find('\n')));
    if (first.empty() || !printable(first)) {
      note(shown(path), first.empty() ? "empty" : "not text");
      return std::nullopt;
    }
    return first;
  }

  std::optional<std::string> whole(const fs::path& path) {
    const FileText r = read_file(path);
    if (!r.text) {
      note(shown(path), "unreadable (" + r.error + ")");
      return std::nullopt;
    }
    return r.text;
  }

  // A whole decimal integer, or empty with a note.
  std::optional<long long> integer(const fs::path& path, bool note_missing = true) {
    const auto text = line(path, note_missing);
    if (!text) return std::nullopt;
    long long value = 0;
    const char* first = text->data();
    const char* last = first + text->size();
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) {
      note(shown(path), fmt::format("'{}' is not a number", *text));
      return std::nullopt;
    }
    return value;
  }

  std::string shown(const fs::path& path) const {
    for (const fs::path* root : {&roots_->sysfs, &roots_->procfs, &roots_->etc}) {
      std::error_code ec;
      const fs::path rel = path.lexically_relative(*root);
      if (!rel.empty() && *rel.begin() != "..") {
        const std::string prefix = root == &roots_->sysfs ? "/sys" : root == &roots_->procfs ? "/proc" : "/etc";
        return prefix + "/" + rel.generic_string();
      }
    }
    return path.generic_string();
  }

  const ProbeRoots& roots() const { return *roots_; }

 private:
  const ProbeRoots* roots_;
  std::vector<std::string>* notes_;
};

// The canonical path of a sysfs link, or empty.
std::optional<fs::path> resolve(const fs::path& link) {
  std::error_code ec;
  fs::path p = fs::canonical(link, ec);
  if (ec) return std::nullopt;
  return p;
}

// The PCI function at or above a device path: the last component that is a bus id.
std::optional<std::string> pci_function_of(const fs::path& device) {
  std::optional<std::string> found;
  for (const auto& part : device) {
    const std::string s = part.string();
    if (is_bus_id(s)) found = s;
  }
  return found;
}

std::optional<int> numa_of(Reader& r, const fs::path& pci_dir) {
  const auto value = r.integer(pci_dir / "numa_node");
  // -1: the platform reports no affinity (one-node hosts, most VMs).
  if (!value || *value < 0) return std::nullopt;
  return static_cast<int>(*value);
}

std::string after_colon(const std::string& text) {
  // "4: ACTIVE" -> "ACTIVE"
  const auto colon = text.find(':');
  return colon == std::string::npos ? text : trim(text.substr(colon + 1));
}

std::optional<double> leading_number(const std::string& text) {
  double value = 0;
  const char* first = text.data();
  const auto [ptr, ec] = std::from_chars(first, first + text.size(), value);
  if (ec != std::errc() || ptr == first) return std::nullopt;
  return value;
}

}  // namespace

ProbeRoots probe_roots(const std::string& sysfs_root, const std::string& procfs_root) {
  ProbeRoots roots;
  if (!sysfs_root.empty()) roots.sysfs = sysfs_root;
  if (!procfs_root.empty()) {
    roots.procfs = procfs_root;
    roots.etc = fs::path(procfs_root).lexically_normal().parent_path() / "etc";
    if (roots.etc == "/etc" || fs::path(procfs_root).lexically_normal() == "/proc") roots.etc = "/etc";
  }
  return roots;
}

std::string normalize_bus_id(const std::string& bus_id) {
  std::string s = bus_id;
  std::transform(s.begin(), s.end(), s.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  // NVML writes an 8-digit domain.
  if (s.size() == 16 && s.substr(0, 4) == "0000" && is_bus_id(s.substr(4))) s = s.substr(4);
  return is_bus_id(s) ? s : bus_id;
}

std::optional<int> pcie_gen_from_speed(const std::string& text) {
  const auto gts = leading_number(text);
  if (!gts || text.find("GT/s") == std::string::npos) return std::nullopt;
  static const std::pair<double, int> gens[] = {{2.5, 1}, {5.0, 2}, {8.0, 3}, {16.0, 4}, {32.0, 5}, {64.0, 6}};
  for (const auto& [speed, gen] : gens) {
    if (*gts > speed - 0.1 && *gts < speed + 0.1) return gen;
  }
  return std::nullopt;
}

HostInfo probe_host(const ProbeRoots& roots, std::vector<std::string>& notes) {
  Reader r(roots, notes);
  HostInfo host;
  host.hostname = r.line(roots.procfs / "sys/kernel/hostname").value_or("unknown");
  host.kernel = r.line(roots.procfs / "sys/kernel/osrelease");

  if (const auto cpuinfo = r.whole(roots.procfs / "cpuinfo")) {
    std::istringstream in(*cpuinfo);
    std::string line;
    std::set<std::string> packages;
    std::set<std::pair<std::string, std::string>> cores;
    std::string package;
    int threads = 0;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim(line.substr(0, colon));
      const std::string value = trim(line.substr(colon + 1));
      if (key == "processor") {
        ++threads;
        package.clear();
      } else if (key == "model name" && !host.cpu_model) {
        host.cpu_model = value;
      } else if (key == "physical id") {
        package = value;
        packages.insert(value);
      } else if (key == "core id") {
        cores.emplace(package, value);
      }
    }
    if (threads > 0) host.threads = threads;
    if (!packages.empty()) host.sockets = static_cast<int>(packages.size());
    if (!cores.empty()) host.cores = static_cast<int>(cores.size());
    if (!host.cpu_model) r.note("/proc/cpuinfo", "no 'model name' line (CPU model unknown)");
    if (packages.empty()) r.note("/proc/cpuinfo", "no 'physical id' lines (sockets and cores unknown)");
  }

  if (const auto meminfo = r.whole(roots.procfs / "meminfo")) {
    std::istringstream in(*meminfo);
    long long kib = -1;
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("MemTotal:", 0) != 0) continue;
      std::istringstream fields(line.substr(9));
      if (!(fields >> kib)) kib = -1;
      break;
    }
    if (kib > 0)
      host.memory_bytes = static_cast<std::uint64_t>(kib) * 1024U;
    else
      r.note("/proc/meminfo", "no readable MemTotal line");
  }

  const fs::path node_dir = roots.sysfs / "devices/system/node";
  int numa = 0;
  for (const std::string& name : list_dir(node_dir)) {
    if (name.size() > 4 && name.rfind("node", 0) == 0 &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      ++numa;
  }
  if (numa > 0)
    host.numa_nodes = numa;
  else
    r.note(r.shown(node_dir), "no NUMA node entries");

  if (const auto os_release = r.whole(roots.etc / "os-release")) {
    std::istringstream in(*os_release);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
      std::string value = trim(line.substr(12));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\''))
        value = value.substr(1, value.size() - 2);
      if (!value.empty()) host.os = value;
    }
    if (!host.os) r.note("/etc/os-release", "no PRETTY_NAME");
  }

  // The kernel module's version is the driver version; NVML may confirm it later.
  const fs::path version = roots.sysfs / "module/nvidia/version";
  if (fs::exists(version)) {
    host.gpu_driver = r.line(version);
  } else if (const FileText proc = read_file(roots.procfs / "driver/nvidia/version"); proc.text) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..."
    const std::string first = proc.text->substr(0, proc.text->find('\n'));
    const auto at = first.find("Kernel Module");
    if (at != std::string::npos) {
      std::istringstream fields(first.substr(at + 13));
      std::string v;
      if (fields >> v) host.gpu_driver = v;
    }
    if (!host.gpu_driver) r.note("/proc/driver/nvidia/version", "no driver version in it");
  }
  return host;
}

std::vector<GpuInfo> probe_pci_gpus(const ProbeRoots& roots, std::vector<std::string>& notes) {
  Reader r(roots, notes);
  std::vector<GpuInfo> gpus;
  const fs::path devices = roots.sysfs / "bus/pci/devices";
  for (const std::string& bdf : list_dir(devices)) {
    const fs::path dir = devices / bdf;
    const FileText vendor = read_file(dir / "vendor");
    if (!vendor.text || trim(*vendor.text) != "0x10de") continue;
    const FileText cls = read_file(dir / "class");
    if (!cls.text) continue;
    const std::string c = trim(*cls.text);
    if (c.rfind("0x0300", 0) != 0 && c.rfind("0x0302", 0) != 0) continue;
    GpuInfo gpu;
    gpu.pci_bus_id = normalize_bus_id(bdf);
    gpu.numa_node = numa_of(r, dir);
    const auto speed = [&](const char* file) -> std::optional<int> {
      const auto text = r.line(dir / file);
      if (!text) return std::nullopt;
      const auto gen = pcie_gen_from_speed(*text);
      if (!gen) r.note(r.shown(dir / file), fmt::format("'{}' is not a PCIe link speed", *text));
      return gen;
    };
    gpu.pcie.current_gen = speed("current_link_speed");
    gpu.pcie.max_gen = speed("max_link_speed");
    const auto width = [&](const char* file) -> std::optional<int> {
      const auto value = r.integer(dir / file);
      if (!value) return std::nullopt;
      if (*value < 1 || *value > 32) {
        r.note(r.shown(dir / file), fmt::format("{} is not a link width", *value));
        return std::nullopt;
      }
      return static_cast<int>(*value);
    };
    gpu.pcie.current_width = width("current_link_width");
    gpu.pcie.max_width = width("max_link_width");
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::vector<NicInfo> probe_nics(const ProbeRoots& roots, std::vector<std::string>& notes) {
  Reader r(roots, notes);
  std::vector<NicInfo> nics;

  const fs::path ib = roots.sysfs / "class/infiniband";
  for (const std::string& dev : list_dir(ib)) {
    const fs::path dir = ib / dev;
    NicInfo nic;
    nic.name = dev;
    nic.firmware = r.line(dir / "fw_ver");
    if (const auto device = resolve(dir / "device")) {
      nic.pci_address = pci_function_of(*device);
      nic.bus = nic.pci_address ? NicBus::pci : NicBus::unknown;
      if (nic.pci_address) nic.numa_node = numa_of(r, *device);
      if (const auto driver = resolve(*device / "driver")) nic.driver = driver->filename().string();
      for (const std::string& netdev : list_dir(*device / "net")) {
        nic.netdevs.push_back(netdev);
      }
    } else {
      nic.bus = NicBus::unknown;
      r.note(r.shown(dir / "device"), "missing or dangling (PCI address unknown)");
    }
    for (const std::string& port_name : list_dir(dir / "ports")) {
      int number = 0;
      const auto [ptr, ec] = std::from_chars(port_name.data(), port_name.data() + port_name.size(), number);
      if (ec != std::errc() || ptr != port_name.data() + port_name.size()) continue;
      const fs::path pdir = dir / "ports" / port_name;
      NicPort port;
      port.port = number;
      if (const auto s = r.line(pdir / "state")) port.state = after_colon(*s);
      if (const auto s = r.line(pdir / "phys_state")) port.phys_state = after_colon(*s);
      if (const auto s = r.line(pdir / "rate")) {
        // "400 Gb/sec (4X NDR)"
        port.rate_gbps = leading_number(*s);
        if (!port.rate_gbps || s->find("Gb/sec") == std::string::npos) {
          port.rate_gbps.reset();
          r.note(r.shown(pdir / "rate"), fmt::format("'{}' is not a rate", *s));
        }
      }
      port.link_layer = r.line(pdir / "link_layer");
      nic.ports.push_back(port);
    }
    const bool ethernet = !nic.ports.empty() && nic.ports.front().link_layer == "Ethernet";
    nic.kind = ethernet ? NicKind::roce : NicKind::infiniband;
    if (nic.ports.empty()) r.note(r.shown(dir / "ports"), "no ports");
    nics.push_back(std::move(nic));
  }

  const fs::path net = roots.sysfs / "class/net";
  for (const std::string& ifname : list_dir(net)) {
    const fs::path dir = net / ifname;
    // Interfaces without a device (loopback, bridges, veth, ifb) are software.
    std::error_code link_ec;
    if (!fs::exists(dir / "device", link_ec) && !fs::is_symlink(dir / "device", link_ec)) continue;
    // IPoIB interfaces (type 32) are the InfiniBand ports listed above.
    if (const FileText type = read_file(dir / "type"); type.text && trim(*type.text) != "1") continue;
    NicInfo nic;
    nic.name = ifname;
    nic.kind = NicKind::ethernet;
    if (const auto device = resolve(dir / "device")) {
      nic.pci_address = pci_function_of(*device);
      const bool virtio = device->filename().string().rfind("virtio", 0) == 0;
      nic.bus = virtio ? NicBus::virtio : nic.pci_address ? NicBus::pci : NicBus::unknown;
      if (nic.pci_address) {
        fs::path pci_dir = virtio ? device->parent_path() : *device;
        nic.numa_node = numa_of(r, pci_dir);
      }
      if (const auto driver = resolve(*device / "driver")) nic.driver = driver->filename().string();
    } else {
      nic.bus = NicBus::unknown;
      r.note(r.shown(dir / "device"), "dangling (PCI address unknown)");
    }
    nic.operstate = r.line(dir / "operstate");
    if (const auto mtu = r.integer(dir / "mtu")) nic.mtu = static_cast<int>(*mtu);
    // Reading speed fails (EINVAL) or gives -1 when the driver cannot tell,
    // as virtio and down links do.
    const FileText speed = read_file(dir / "speed");
    if (!speed.text) {
      r.note(r.shown(dir / "speed"), "not reported by the driver (" + speed.error + ")");
    } else {
      const std::string s = trim(*speed.text);
      long long mbps = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), mbps);
      if (ec != std::errc() || ptr != s.data() + s.size()) {
        r.note(r.shown(dir / "speed"), fmt::format("'{}' is not a number", printable(s) ? s : "?"));
      } else if (mbps <= 0) {
        r.note(r.shown(dir / "speed"), "not reported by the driver (-1)");
      } else {
        nic.speed_gbps = static_cast<double>(mbps) / 1000.0;
      }
    }
    nics.push_back(std::move(nic));
  }
  return nics;
}

GpuDirectRdma probe_gpudirect(const ProbeRoots& roots, std::vector<std::string>& notes) {
  Reader r(roots, notes);
  GpuDirectRdma gdr;
  bool told = false;
  const FileText modules = read_file(roots.procfs / "modules");
  if (modules.text) {
    told = true;
    std::istringstream in(*modules.text);
    std::string line;
    while (std::getline(in, line)) {
      const std::string name = line.substr(0, line.find(' '));
      if (name == "nvidia_peermem" || name == "nv_peer_mem") gdr.module = name;
    }
  }
  for (const char* name : {"nvidia_peermem", "nv_peer_mem"}) {
    // Built-in or loaded modules appear here even when /proc/modules is hidden.
    if (!gdr.module && fs::exists(roots.sysfs / "module" / name / "initstate")) gdr.module = name;
  }
  if (fs::exists(roots.sysfs / "module")) told = true;
  if (gdr.module)
    gdr.status = GdrStatus::ready;
  else if (told)
    gdr.status = GdrStatus::absent;
  else
    r.note("GPUDirect RDMA", "neither /proc/modules nor /sys/module is readable");
  if (fs::exists(roots.sysfs / "kernel/dmabuf")) gdr.dma_buf = true;
  return gdr;
}

std::optional<PciPath> pci_path(const ProbeRoots& roots, const std::string& a, const std::string& b,
                                std::optional<int> numa_nodes) {
  const fs::path devices = roots.sysfs / "bus/pci/devices";
  const auto pa = resolve(devices / normalize_bus_id(a));
  const auto pb = resolve(devices / normalize_bus_id(b));
  if (!pa || !pb) return std::nullopt;
  // Each chain: the root complex ("pci0000:15"), then every bus id from the root port down.
  const auto chain = [](const fs::path& p) {
    std::vector<std::string> out;
    for (const auto& part : p) {
      const std::string s = part.string();
      if (s.rfind("pci", 0) == 0 && s.size() > 3 && s.find(':') != std::string::npos)
        out.assign(1, s);
      else if (!out.empty() && is_bus_id(s))
        out.push_back(s);
    }
    return out;
  };
  const auto ca = chain(*pa);
  const auto cb = chain(*pb);
  if (ca.size() < 2 || cb.size() < 2) return std::nullopt;
  if (ca.front() != cb.front()) {
    if (numa_nodes && *numa_nodes <= 1) return PciPath::node;
    std::vector<std::string> ignored;
    Reader r(roots, ignored);
    const auto na = numa_of(r, *pa);
    const auto nb = numa_of(r, *pb);
    if (!na || !nb) return std::nullopt;
    return *na == *nb ? PciPath::node : PciPath::sys;
  }
  std::size_t common = 1;
  while (common < ca.size() && common < cb.size() && ca[common] == cb[common]) ++common;
  // Only the root complex in common: they meet at the host bridge.
  if (common == 1) return PciPath::phb;
  // Below the deepest common bridge: a switch's downstream port and the
  // device is one switch; anything deeper crosses another.
  const std::size_t below = std::max(ca.size() - common, cb.size() - common);
  return below <= 2 ? PciPath::pix : PciPath::pxb;
}

}  // namespace fabricbench
