#include "fabricbench/analysis/achievable.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "fabricbench/analysis/causes.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

constexpr const char* pcie_source =
    "PCI Express Base Specifications 1.0 to 6.0 (PCI-SIG): 2.5, 5, 8, 16, 32 and 64 GT/s per lane, 8b/10b "
    "encoding to Gen2, 128b/130b from Gen3, FLIT (242 of 256 bytes) at Gen6";
constexpr const char* nvlink_source =
    "NVIDIA V100, A100, H100 and B200 datasheets: 25 GB/s each way per NVLink for NVLink 2, 3 and 4, 50 GB/s "
    "for NVLink 5";
constexpr const char* line_source =
    "the node's active RDMA ports (else its Ethernet interfaces) at the rate the probe read from sysfs, 8 bits "
    "a byte";

Verdict layer_verdict(std::string subject, std::string reason, std::string source) {
  return make_verdict(Level::info, VerdictKind::achievable, std::move(subject), std::move(reason), std::move(source));
}

void add_share(Verdict& v, const std::string& what, double measured, double physical) {
  v.evidence = {{what, measured, "GB/s"}, {"physical", physical, "GB/s"}, {"share", 100.0 * measured / physical, "%"}};
}

bool any_gpu(const ClusterTopology& t) {
  return std::any_of(t.nodes.begin(), t.nodes.end(), [](const NodeTopology& n) { return !n.gpus.empty(); });
}

std::optional<double> pcie_gbs(const PcieLink& link) {
  const std::optional<int> gen = link.max_gen ? link.max_gen : link.current_gen;
  const std::optional<int> width = link.max_width ? link.max_width : link.current_width;
  if (!gen || !width || *width <= 0) return std::nullopt;
  const std::optional<double> lane = pcie_lane_gbs(*gen);
  if (!lane) return std::nullopt;
  return *lane * *width;
}

std::string pcie_text(const PcieLink& link) {
  return fmt::format("PCIe Gen{} x{}", link.max_gen.value_or(link.current_gen.value_or(0)),
                     link.max_width.value_or(link.current_width.value_or(0)));
}

void host_device(const ClusterTopology& t, std::vector<Verdict>& out) {
  for (const bool h2d : {true, false}) {
    const char* what = h2d ? "host-to-device copy" : "device-to-host copy";
    std::optional<double> worst;
    Verdict v = layer_verdict(std::string(name(FabricLayer::host_device)), "", pcie_source);
    for (const NodeTopology& n : t.nodes)
      for (std::size_t i = 0; i < n.gpus.size(); ++i) {
        const GpuInfo& g = n.gpus[i];
        const std::optional<double>& measured = h2d ? g.h2d_gbs : g.d2h_gbs;
        const std::optional<double> physical = pcie_gbs(g.pcie);
        if (!measured || !physical) continue;
        const double share = *measured / *physical;
        if (worst && share >= *worst) continue;
        worst = share;
        v.hosts = {n.host.hostname};
        v.reason = fmt::format("{} {:.1f} GB/s is {:.0f}% of the {:.1f} GB/s of its {} (the lowest share: {} GPU {})",
                               what, *measured, 100 * share, *physical, pcie_text(g.pcie), n.host.hostname,
                               g.index.value_or(static_cast<int>(i)));
        add_share(v, what, *measured, *physical);
      }
    if (!worst)
      v.reason = any_gpu(t) ? fmt::format("{}: not measured, or no GPU whose PCIe link the probe could read", what)
                            : fmt::format("{}: no GPU in this run", what);
    out.push_back(std::move(v));
  }
}

// "NV18" -> 18.
std::optional<int> nvlinks_of(const std::string& cell) {
  if (cell.rfind("NV", 0) != 0) return std::nullopt;
  int n = 0;
  for (std::size_t i = 2; i < cell.size(); ++i) {
    if (cell[i] < '0' || cell[i] > '9') return std::nullopt;
    n = n * 10 + (cell[i] - '0');
  }
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

void within_node(const ClusterTopology& t, std::vector<Verdict>& out) {
  std::optional<double> worst;
  Verdict v = layer_verdict(std::string(name(FabricLayer::within_node)), "", nvlink_source);
  for (const NodeTopology& n : t.nodes)
    for (std::size_t i = 0; i < n.d2d_gbs.size() && i < n.gpus.size(); ++i)
      for (std::size_t j = 0; j < n.d2d_gbs[i].size() && j < n.gpus.size(); ++j) {
        const std::optional<double>& measured = n.d2d_gbs[i][j];
        if (i == j || !measured) continue;
        std::optional<double> physical;
        std::string part;
        const std::string cell = i < n.gpu_matrix.size() && j < n.gpu_matrix[i].size() ? n.gpu_matrix[i][j] : "";
        if (const std::optional<int> links = nvlinks_of(cell)) {
          int version = 0;
          for (const NvLink& l : n.gpus[i].nvlinks)
            if (l.version) version = std::max(version, *l.version);
          if (nvlink_gbs(version) > 0) {
            physical = *links * nvlink_gbs(version);
            part = fmt::format("{} NVLink {} links", *links, version);
          }
        } else {
          const std::optional<double> a = pcie_gbs(n.gpus[i].pcie);
          const std::optional<double> b = pcie_gbs(n.gpus[j].pcie);
          if (a && b) {
            physical = std::min(*a, *b);
            part = "the slower GPU's " + pcie_text(*a <= *b ? n.gpus[i].pcie : n.gpus[j].pcie);
          }
        }
        if (!physical) continue;
        const double share = *measured / *physical;
        if (worst && share >= *worst) continue;
        worst = share;
        v.hosts = {n.host.hostname};
        v.source = cell.rfind("NV", 0) == 0 ? nvlink_source : pcie_source;
        v.reason = fmt::format(
            "GPU peer copy {:.1f} GB/s is {:.0f}% of the {:.1f} GB/s of {} (the lowest share: {} "
            "GPU {} to GPU {})",
            *measured, 100 * share, *physical, part, n.host.hostname, i, j);
        add_share(v, "GPU peer copy", *measured, *physical);
      }
  if (!worst)
    v.reason = any_gpu(t) ? "GPU peer copies: not measured (one GPU per node, or --no-measure)"
                          : "GPU peer copies: no GPU in this run";
  out.push_back(std::move(v));
}

void across_nodes(const RunResult& r, std::vector<Verdict>& out) {
  Verdict v = layer_verdict(std::string(name(FabricLayer::across_nodes)), "", line_source);
  if (!r.pairs || r.pairs->nodes.size < 2) {
    v.reason = "node pairs: not measured (one node, or the pair matrix did not run)";
    out.push_back(std::move(v));
    return;
  }
  const double gbit = r.topology ? network_gbit_per_node(*r.topology).value_or(0.0) : 0.0;
  std::vector<double> links;
  double worst = 0;
  std::string worst_pair;
  const int n = r.pairs->nodes.size;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const std::optional<double> b = r.pairs->nodes.bw(i, j);
      if (i == j || !b) continue;
      links.push_back(*b);
      if (worst_pair.empty() || *b < worst) {
        worst = *b;
        worst_pair = fmt::format("{} -> {}", r.pairs->hosts[static_cast<std::size_t>(i)],
                                 r.pairs->hosts[static_cast<std::size_t>(j)]);
      }
    }
  if (links.empty()) {
    v.reason = "node pairs: no pair was measured";
  } else if (!(gbit > 0)) {
    v.reason = fmt::format(
        "node pair {:.3g} GB/s (median; worst {:.3g} GB/s, {}): the line rate of the nodes' NICs is unknown (the "
        "probe read no speed), so no share of it",
        median(links), worst, worst_pair);
  } else {
    const double line = gbit / 8;
    const double med = median(links);
    v.reason = fmt::format(
        "node pair {:.3g} GB/s (median) is {:.0f}% of the {:.3g} GB/s line rate of a node's NICs ({:g} Gb/s); the "
        "worst pair, {}, {:.3g} GB/s ({:.0f}%)",
        med, 100 * med / line, line, gbit, worst_pair, worst, 100 * worst / line);
    add_share(v, "node pair (median)", med, line);
  }
  out.push_back(std::move(v));
}

}  // namespace

double nvlink_gbs(int version) {
  if (version >= 2 && version <= 4) return 25;
  if (version == 5) return 50;
  return 0;
}

std::vector<Verdict> achievable_verdicts(const RunResult& result) {
  std::vector<Verdict> out;
  if (result.topology && any_gpu(*result.topology)) {
    host_device(*result.topology, out);
    within_node(*result.topology, out);
  } else if (result.topology) {
    out.push_back(
        layer_verdict("GPU layers", "no GPU in this run: host <-> device and GPU peer copies do not apply", ""));
  }
  across_nodes(result, out);
  // A layer without a figure has no part to cite.
  for (Verdict& v : out)
    if (v.evidence.empty()) v.source.clear();
  return out;
}

}  // namespace fabricbench
