// The configuration probe and its gather. Reads sysfs, procfs and a few
// files of the system (library directories, ld.so.conf, nccl.conf,
// ofed_info) under the injected roots; never throws for what it cannot read.

#include "fabricbench/topology/node_config.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>
#include <system_error>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/byte_strings.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/topology/detail/sysfs_files.hpp"

#if FABRICBENCH_HAVE_CUDA
#include "fabricbench/transport/cuda/cuda_support.hpp"
#endif

extern char** environ;  // NOLINT: POSIX

namespace fabricbench {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_text_bytes = 1 << 20;

using detail::list_dir;

// A small text file, whole; empty when it cannot be read, is not a regular
// file or is larger than expected.
std::optional<std::string> read_text(const fs::path& path) {
  return detail::read_small_file(path, max_text_bytes).text;
}

std::optional<std::string> read_trimmed(const fs::path& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  std::string t = trim(*text);
  if (t.empty()) return std::nullopt;
  return t;
}

// An absolute system path read under the injected root.
fs::path under(const fs::path& root, const fs::path& absolute) { return root / absolute.relative_path(); }

// Launcher bookkeeping that differs between ranks by design, not settings.
bool is_launcher_variable(std::string_view name) {
  if (!name.starts_with("OMPI_")) return false;
  if (!name.starts_with("OMPI_MCA_")) return true;  // OMPI_COMM_WORLD_RANK, OMPI_ARGV, ...
  for (const std::string_view own : {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_prte_",
                                     "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME_QUERY_hint"})
    if (name.starts_with(own)) return true;
  return false;
}

bool is_compared_variable(std::string_view name) {
  for (const std::string_view prefix : {"NCCL_", "UCX_", "OMPI_", "FI_"})
    if (name.starts_with(prefix)) return !is_launcher_variable(name);
  return false;
}

std::optional<std::string> env_value(const std::vector<std::string>& environment, std::string_view name) {
  for (const std::string& entry : environment) {
    if (entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name))
      return entry.substr(name.size() + 1);
  }
  return std::nullopt;
}

// "KEY=VALUE" lines; '#' starts a comment, as NCCL's setEnvFile reads them.
std::map<std::string, std::string> parse_conf(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out.emplace(trim(t.substr(0, eq)), trim(t.substr(eq + 1)));
  }
  return out;
}

// Files matching one '*' in the last component ("/etc/ld.so.conf.d/*.conf").
std::vector<fs::path> glob_one(const fs::path& root, const std::string& pattern) {
  const fs::path p(pattern);
  const std::string base = p.filename().string();
  const auto star = base.find('*');
  if (star == std::string::npos) return {under(root, p)};
  const std::string head = base.substr(0, star);
  const std::string tail = base.substr(star + 1);
  std::vector<fs::path> out;
  for (const std::string& name : list_dir(under(root, p.parent_path())))
    if (name.size() >= head.size() + tail.size() && name.starts_with(head) &&
        name.compare(name.size() - tail.size(), tail.size(), tail) == 0)
      out.push_back(under(root, p.parent_path() / name));
  return out;
}

void read_ld_conf(const fs::path& root, const fs::path& file, std::vector<std::string>& dirs, int depth) {
  if (depth > 4) return;
  const auto text = read_text(file);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line.substr(0, line.find('#')));
    if (t.empty()) continue;
    if (t.starts_with("include")) {
      for (const fs::path& f : glob_one(root, trim(t.substr(7)))) read_ld_conf(root, f, dirs, depth + 1);
    } else if (t[0] == '/') {
      dirs.push_back(t);
    }
  }
}

// Where the dynamic loader looks, in its order: LD_LIBRARY_PATH, the
// directories of ld.so.conf, then the standard ones.
std::vector<std::string> library_dirs(const fs::path& root, const std::vector<std::string>& environment) {
  std::vector<std::string> dirs;
  if (const auto ld = env_value(environment, "LD_LIBRARY_PATH")) {
    std::istringstream in(*ld);
    std::string d;
    while (std::getline(in, d, ':'))
      if (!d.empty() && d[0] == '/') dirs.push_back(d);
  }
  read_ld_conf(root, under(root, "/etc/ld.so.conf"), dirs, 0);
  for (const char* d : {"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                        "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"})
    dirs.emplace_back(d);
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& d : dirs)
    if (seen.insert(d).second) unique.push_back(d);
  return unique;
}

// The file a library name resolves to in the first directory holding it
// (links followed, so "libnccl.so.2" gives "libnccl.so.2.21.5").
std::optional<std::string> find_library(const fs::path& root, const std::vector<std::string>& dirs,
                                        const std::string& name) {
  for (const std::string& d : dirs) {
    const fs::path p = under(root, fs::path(d) / name);
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    const fs::path real = fs::canonical(p, ec);
    return (ec ? p : real).filename().string();
  }
  return std::nullopt;
}

// NCCL's plugin lookup: NCCL_NET_PLUGIN=none disables it; a value names
// "libnccl-net-<value>.so" or, failing that, the library itself; unset is
// "libnccl-net.so". The same for the tuner.
std::optional<std::string> plugin(const fs::path& root, const std::vector<std::string>& dirs,
                                  const std::optional<std::string>& setting, const std::string& kind) {
  if (setting && (*setting == "none" || setting->empty())) return std::string("none");
  std::vector<std::string> names;
  if (setting) {
    names.push_back(fmt::format("libnccl-{}-{}.so", kind, *setting));
    names.push_back(*setting);
  } else {
    names.push_back(fmt::format("libnccl-{}.so", kind));
  }
  for (const std::string& n : names) {
    // A path names the file itself.
    if (n.find('/') != std::string::npos) {
      std::error_code ec;
      if (fs::exists(under(root, n), ec)) return fs::path(n).filename().string();
      continue;
    }
    if (auto found = find_library(root, dirs, n)) return found;
  }
  return std::nullopt;
}

// "2.21.5" from "libnccl.so.2.21.5".
std::optional<std::string> version_suffix(const std::string& file, const std::string& stem) {
  if (!file.starts_with(stem) || file.size() <= stem.size()) return std::nullopt;
  return file.substr(stem.size());
}

void probe_net(const ProbeRoots& roots, NodeConfig& c) {
  const fs::path net = roots.sysfs / "class/net";
  for (const std::string& name : list_dir(net)) {
    NetInterface i;
    i.name = name;
    if (const auto mtu = read_trimmed(net / name / "mtu")) i.mtu = whole_int(*mtu);
    if (!i.mtu) c.notes.push_back(fmt::format("{} mtu: not readable", name));
    i.operstate = read_trimmed(net / name / "operstate");
    c.interfaces.push_back(std::move(i));
  }
}

void probe_rdma(const ProbeRoots& roots, const std::optional<std::string>& gid_index, NodeConfig& c) {
  const fs::path ib = roots.sysfs / "class/infiniband";
  for (const std::string& dev : list_dir(ib)) {
    if (const auto fw = read_trimmed(ib / dev / "fw_ver")) c.nic_firmware[dev] = *fw;
    for (const std::string& port : list_dir(ib / dev / "ports")) {
      const auto n = whole_int(port);
      if (!n) continue;
      RdmaPortConfig p;
      p.device = dev;
      p.port = *n;
      const fs::path dir = ib / dev / "ports" / port;
      // "4: ACTIVE"
      if (const auto state = read_trimmed(dir / "state")) {
        const auto colon = state->find(':');
        p.state = colon == std::string::npos ? *state : trim(state->substr(colon + 1));
      }
      p.link_layer = read_trimmed(dir / "link_layer");
      for (const std::string& k : list_dir(dir / "pkeys")) {
        const auto key = read_trimmed(dir / "pkeys" / k);
        // 0x0000 is an empty slot; the top bit is full vs limited membership.
        if (key && *key != "0x0000") p.pkeys.push_back(*key);
      }
      std::sort(p.pkeys.begin(), p.pkeys.end());
      p.pkeys.erase(std::unique(p.pkeys.begin(), p.pkeys.end()), p.pkeys.end());
      if (gid_index && whole_int(*gid_index)) p.gid_type = read_trimmed(dir / "gid_attrs/types" / *gid_index);
      c.rdma_ports.push_back(std::move(p));
    }
  }
}

}  // namespace

NodeConfig probe_config(const ConfigInputs& in) {
  NodeConfig c;
  const ProbeRoots& roots = in.roots;
  const fs::path root = roots.etc.parent_path().empty() ? fs::path("/") : roots.etc.parent_path();

  for (const std::string& entry : in.environment) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (is_compared_variable(name)) c.environment[name] = entry.substr(eq + 1);
  }
  // NCCL reads NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf, and
  // keeps the first value of each setting; the environment wins over both.
  std::vector<fs::path> conf;
  if (const auto file = env_value(in.environment, "NCCL_CONF_FILE"); file && !file->empty()) {
    conf.emplace_back(*file);
  } else if (const auto home = env_value(in.environment, "HOME"); home && !home->empty()) {
    conf.push_back(fs::path(*home) / ".nccl.conf");
  }
  conf.emplace_back("/etc/nccl.conf");
  for (const fs::path& f : conf) {
    const auto text = read_text(f.is_absolute() ? under(root, f) : f);
    if (!text) continue;
    c.nccl_conf_files.push_back(f.string());
    for (auto& [k, v] : parse_conf(*text)) c.nccl_conf.emplace(k, v);
  }

  const std::vector<std::string> dirs = library_dirs(root, in.environment);
  if (in.runtime.nccl) {
    c.nccl_version = in.runtime.nccl;
    c.nccl_version_source = "ncclGetVersion";
  } else if (const auto lib = find_library(root, dirs, "libnccl.so.2")) {
    c.nccl_version = version_suffix(*lib, "libnccl.so.");
    c.nccl_version_source = *lib;
  }
  c.nccl_net_plugin = plugin(root, dirs, effective_setting(c, "NCCL_NET_PLUGIN"), "net");
  c.nccl_tuner_plugin = plugin(root, dirs, effective_setting(c, "NCCL_TUNER_PLUGIN"), "tuner");
  std::set<std::string> found;
  for (const std::string& d : dirs)
    for (const std::string& name : list_dir(under(root, d)))
      if ((name.starts_with("libnccl-net") || name.starts_with("libnccl-tuner")) &&
          name.find(".so") != std::string::npos)
        found.insert(name);
  c.nccl_plugins_found.assign(found.begin(), found.end());
  if (const auto lib = find_library(root, dirs, "libibverbs.so.1"))
    c.libibverbs = version_suffix(*lib, "libibverbs.so.");

  c.cuda_driver = in.runtime.cuda_driver;
  c.cuda_runtime = in.runtime.cuda_runtime;
  if (const auto text = read_text(roots.procfs / "driver/nvidia/version")) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..."
    const auto at = text->find("Kernel Module");
    if (at != std::string::npos) {
      std::istringstream words(text->substr(at + 13));
      std::string v;
      if (words >> v) c.nvidia_driver = v;
    }
  }
  c.kernel = read_trimmed(roots.procfs / "sys/kernel/osrelease");
  if (!c.kernel) c.notes.emplace_back("kernel: /proc/sys/kernel/osrelease not readable");
  c.mlx5_core = read_trimmed(roots.sysfs / "module/mlx5_core/version");
  // ofed_info is a shell script with the release written into it.
  if (const auto script = read_text(under(root, "/usr/bin/ofed_info"))) {
    const auto at = script->find("MLNX_OFED_LINUX-");
    if (at != std::string::npos) {
      const auto end = script->find_first_of(": \"'\n", at);
      c.ofed = script->substr(at, end == std::string::npos ? std::string::npos : end - at);
    }
  }

  if (in.memlock) {
    c.memlock_unlimited = !in.memlock->bytes.has_value();
    c.memlock_bytes = in.memlock->bytes;
  } else {
    c.notes.emplace_back("memlock: the limit could not be read");
  }

  probe_net(roots, c);
  c.nccl_interfaces = nccl_socket_interfaces(c.interfaces, effective_setting(c, "NCCL_SOCKET_IFNAME"));
  probe_rdma(roots, effective_setting(c, "NCCL_IB_GID_INDEX"), c);
  return c;
}

RuntimeVersions runtime_versions() {
  RuntimeVersions v;
#if FABRICBENCH_HAVE_CUDA
  const auto set = [](std::optional<std::string>& field, std::string text) {
    if (!text.empty()) field = std::move(text);
  };
  set(v.nccl, nccl_runtime_version());
  set(v.cuda_driver, cuda_driver_version());
  set(v.cuda_runtime, cuda_runtime_version());
#endif
  return v;
}

std::vector<std::string> process_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

std::optional<MemlockLimit> memlock_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return std::nullopt;
  MemlockLimit m;
  if (limit.rlim_cur != RLIM_INFINITY) m.bytes = static_cast<std::uint64_t>(limit.rlim_cur);
  return m;
}

std::optional<MemlockLimit> parse_memlock_limit(const std::string& limits) {
  std::istringstream in(limits);
  std::string line;
  const std::string key = "Max locked memory";
  while (std::getline(in, line)) {
    if (!line.starts_with(key)) continue;
    std::istringstream words(line.substr(key.size()));
    std::string soft;
    if (!(words >> soft)) return std::nullopt;
    if (soft == "unlimited") return MemlockLimit{};
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(soft.data(), soft.data() + soft.size(), v);
    if (ec != std::errc() || p != soft.data() + soft.size()) return std::nullopt;
    return MemlockLimit{v};
  }
  return std::nullopt;
}

std::optional<MemlockLimit> memlock_limit(const ProbeRoots& roots) {
  if (roots.procfs.lexically_normal() == fs::path("/proc")) return memlock_limit();
  const auto text = read_text(roots.procfs / "self/limits");
  return text ? parse_memlock_limit(*text) : std::nullopt;
}

namespace {
// FNV-1a: the same on every rank of one build, unlike std::hash's promise.
std::uint64_t fingerprint(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char ch : text) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  return h;
}
}  // namespace

std::vector<NodeConfig> gather_configuration(const Comm& world, const Layout& layout, const ConfigInputs& inputs,
                                             std::vector<std::string>& notes) {
  const std::string mine = exchange_text(config_to_json(probe_config(inputs)));
  // Each rank's fingerprint first, so a node sends each distinct record once.
  const std::vector<std::uint64_t> prints = world.allgather_value(fingerprint(mine));
  bool first = true;
  for (int r = 0; r < layout.rank && first; ++r)
    if (layout.node_of_rank[static_cast<std::size_t>(r)] == layout.node &&
        prints[static_cast<std::size_t>(r)] == prints[static_cast<std::size_t>(layout.rank)])
      first = false;
  return configs_from_records(world.allgather(first ? mine : std::string()), prints, layout, notes);
}

std::vector<NodeConfig> configs_from_records(const std::vector<std::string>& records,
                                             const std::vector<std::uint64_t>& fingerprint_of_rank,
                                             const Layout& layout, std::vector<std::string>& notes) {
  std::vector<NodeConfig> out;
  // (node, fingerprint) -> position in out
  std::map<std::pair<int, std::uint64_t>, std::size_t> where;
  const auto node_of = [&](std::size_t rank) {
    return rank < layout.node_of_rank.size() ? layout.node_of_rank[rank] : -1;
  };
  const auto host_of = [&](int node) {
    return node >= 0 && static_cast<std::size_t>(node) < layout.hostnames.size()
               ? layout.hostnames[static_cast<std::size_t>(node)]
               : std::string("unknown");
  };
  for (std::size_t rank = 0; rank < records.size(); ++rank) {
    if (records[rank].empty()) continue;
    NodeConfig c;
    try {
      c = config_from_json(parse_exchange_text(records[rank], "configuration"));
    } catch (const UsageError& e) {
      notes.push_back(fmt::format("the configuration record of rank {} is not readable: {}", rank, e.what()));
      continue;
    }
    c.node = node_of(rank);
    c.host = host_of(c.node);
    c.ranks.clear();
    if (rank < fingerprint_of_rank.size()) where[{c.node, fingerprint_of_rank[rank]}] = out.size();
    out.push_back(std::move(c));
  }
  for (std::size_t rank = 0; rank < fingerprint_of_rank.size(); ++rank) {
    const auto it = where.find({node_of(rank), fingerprint_of_rank[rank]});
    if (it != where.end()) out[it->second].ranks.push_back(static_cast<int>(rank));
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeConfig& a, const NodeConfig& b) {
    return std::pair(a.node, a.ranks.empty() ? 0 : a.ranks.front()) <
           std::pair(b.node, b.ranks.empty() ? 0 : b.ranks.front());
  });
  return out;
}

}  // namespace fabricbench
