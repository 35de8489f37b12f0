#include "fabricbench/analysis/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fabricbench/analysis/causes.hpp"
#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/results/schema_validate.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

template <typename T>
T most_common(const std::vector<T>& values) {
  std::map<T, int> counts;
  for (const T& v : values) ++counts[v];
  return std::max_element(counts.begin(), counts.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::string gbs(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

// The largest out-of-place (else in-place) measured record of `op`: the size
// a reference figure is compared at.
const SweepRecord* largest_measured(const RunResult& result, Op op) {
  const SweepRecord* best = nullptr;
  for (const SweepRecord& r : result.records) {
    if (r.op != op || !r.timing) continue;
    if (best == nullptr || r.bytes > best->bytes ||
        (r.bytes == best->bytes && r.placement == Placement::out_of_place && best->placement != r.placement))
      best = &r;
  }
  return best;
}

struct Measured {
  std::optional<double> value;
  std::string what;                      // "all-reduce busbw"
  std::string why_not;                   // when there is no value
  std::size_t bytes = 0;                 // size measured at, when it matters
  std::optional<std::string> algorithm;  // NCCL's, when the run recorded it
  std::optional<NicWireRate> wire;       // multi-node all-reduce
};

Measured measure_figure(const RunResult& result, const Hardware& hw, ReferenceFigure figure) {
  Measured m;
  switch (figure) {
    case ReferenceFigure::allreduce_busbw: {
      m.what = "all-reduce busbw";
      // Widened: a file's node count may be anything an int holds.
      if (static_cast<long long>(result.run.ranks) != static_cast<long long>(result.run.nodes) * hw.gpus_per_node) {
        m.why_not = fmt::format(
            "the references are for all GPUs of the nodes ({} per node); this run had {} ranks on {} node{}",
            hw.gpus_per_node, result.run.ranks, result.run.nodes, result.run.nodes == 1 ? "" : "s");
        return m;
      }
      const SweepRecord* r = largest_measured(result, Op::allreduce);
      if (r == nullptr) {
        m.why_not = "no all-reduce was measured";
        return m;
      }
      m.value = r->timing->busbw_gbs;
      m.bytes = r->bytes;
      if (r->choice) m.algorithm = r->choice->algorithm;
      m.wire = r->nic_wire;
      break;
    }
    case ReferenceFigure::p2p_per_nic_gbs: {
      m.what = "node-pair bandwidth per NIC";
      if (!result.pairs || result.pairs->nodes.size < 2) {
        m.why_not = "no node-pair matrix in this run";
        return m;
      }
      if (hw.rdma_nics == 0) {
        m.why_not = "no active RDMA NIC";
        return m;
      }
      std::vector<double> links;
      for (const auto& v : result.pairs->nodes.bandwidth_gbs)
        if (v) links.push_back(*v);
      if (links.empty()) {
        m.why_not = "no node pair was measured";
        return m;
      }
      m.value = median(links) / hw.rdma_nics;
      m.bytes = result.pairs->bytes;
      break;
    }
    case ReferenceFigure::topo_h2d_gbs:
    case ReferenceFigure::topo_d2h_gbs: {
      const bool h2d = figure == ReferenceFigure::topo_h2d_gbs;
      m.what = h2d ? "host-to-device copy" : "device-to-host copy";
      std::vector<double> values;
      for (const NodeTopology& n : result.topology->nodes)
        for (const GpuInfo& g : n.gpus)
          if (const auto& v = h2d ? g.h2d_gbs : g.d2h_gbs) values.push_back(*v);
      if (values.empty()) {
        m.why_not = "copies were not measured";
        return m;
      }
      m.value = median(values);
      break;
    }
  }
  return m;
}

Level judge(double value, double expected, const Expectations& e) {
  if (value >= e.warn_at * expected) return Level::ok;
  if (value >= e.fail_below * expected) return Level::warn;
  return Level::fail;
}

std::string expected_text(const Reference& r, const ReferencePoint& p) {
  const std::string approx = r.approximate ? "≈" : "";
  if (p.gbs_high) return fmt::format("{}{}-{} GB/s", approx, gbs(p.gbs), gbs(*p.gbs_high));
  return fmt::format("{}{} GB/s", approx, gbs(p.gbs));
}

// The figure at the reference's largest point: what it says "at large sizes".
std::string expected_text(const Reference& r) { return expected_text(r, r.points.back()); }

// "reference h100-sxm-8gpu-allreduce-ring, from 256 MiB": which entry and point judged.
std::string entry_text(const Reference& r, const ReferencePoint& p) {
  return p.bytes > 0 ? fmt::format("reference {}, from {}", r.id, format_size(p.bytes))
                     : fmt::format("reference {}", r.id);
}

std::string wire_text(const std::optional<NicWireRate>& w) {
  if (!w || !w->gbs) return "";
  return fmt::format("; each of {} NICs per node carried {}{} GB/s ({})", w->nics_per_node,
                     w->basis == "lower_bound" ? "at least " : "", gbs(*w->gbs),
                     w->basis == "ring"         ? "ring: busbw/NICs"
                     : w->basis == "in_network" ? "in-network reduction"
                                                : "the all-reduce lower bound");
}

template <typename T>
std::optional<T> member(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return checked_integer<T>(*it, key);  // range-checked, never wrapped
  else
    return it->get<T>();
}

// Reads one reference: the curve from "points" (version 2) or the single
// figure of version 1 (expected_gbs from min_bytes on).
std::vector<ReferencePoint> read_points(const json& r, const std::string& id) {
  std::vector<ReferencePoint> points;
  if (const auto it = r.find("points"); it != r.end()) {
    for (const json& p : it->get_ref<const json::array_t&>()) {
      ReferencePoint point;
      point.bytes = member<std::size_t>(p, "bytes").value_or(0);
      point.gbs = p.at("gbs").get<double>();
      point.gbs_high = member<double>(p, "gbs_high");
      points.push_back(point);
    }
  } else {
    ReferencePoint point;
    point.bytes = member<std::size_t>(r, "min_bytes").value_or(0);
    point.gbs = r.at("expected_gbs").get<double>();
    point.gbs_high = member<double>(r, "expected_high_gbs");
    points.push_back(point);
  }
  if (points.empty()) throw UsageError(fmt::format("expectations: {} has no points", id));
  for (std::size_t i = 0; i < points.size(); ++i) {
    const ReferencePoint& p = points[i];
    if (!std::isfinite(p.gbs) || p.gbs <= 0 || (p.gbs_high && (!std::isfinite(*p.gbs_high) || *p.gbs_high < p.gbs)))
      throw UsageError(fmt::format("expectations: {}: point {} needs 0 < gbs <= gbs_high", id, i));
    if (i > 0 && p.bytes <= points[i - 1].bytes)
      throw UsageError(fmt::format("expectations: {}: points must be in increasing size", id));
  }
  return points;
}

bool compare(double lhs, Comparison op, double rhs) {
  switch (op) {
    case Comparison::ge:
      return lhs >= rhs;
    case Comparison::le:
      return lhs <= rhs;
    case Comparison::gt:
      return lhs > rhs;
    case Comparison::lt:
      return lhs < rhs;
    case Comparison::eq:
      return lhs == rhs;
  }
  return false;
}

// Which value is the worst for a comparison: the one furthest on the wrong side.
bool worse(double a, double b, Comparison op) {
  switch (op) {
    case Comparison::ge:
    case Comparison::gt:
      return a < b;
    case Comparison::le:
    case Comparison::lt:
      return a > b;
    case Comparison::eq:
      return std::abs(a) > std::abs(b);
  }
  return false;
}

// A match key read from the expectations: a name outside the table is an error.
template <typename Enum, std::size_t N>
std::optional<Enum> named(const std::optional<std::string>& text, const NameTable<Enum, N>& table,
                          const std::string& id, const char* key) {
  if (!text) return std::nullopt;
  if (const std::optional<Enum> value = parse_in(table, *text)) return value;
  throw UsageError(fmt::format("expectations: {}: {} '{}' is not {}", id, key, *text, names_of(table)));
}

std::string number(double v) { return fmt::format("{:.6g}", v); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A value the gate looks at, and what it is.
struct Sample {
  double value = 0;
  std::string where;
};

Verdict gate_verdict(const Gate& gate, const std::vector<Sample>& samples) {
  const std::string_view unit = info(gate.metric).unit;
  Verdict v;
  v.kind = VerdictKind::gate;
  v.subject = gate.text;
  const Sample* worst_sample = &samples.front();
  for (const Sample& s : samples)
    if (worse(s.value, worst_sample->value, gate.comparison)) worst_sample = &s;
  const bool pass = std::all_of(samples.begin(), samples.end(),
                                [&](const Sample& s) { return compare(s.value, gate.comparison, gate.value); });
  v.level = pass ? Level::ok : Level::fail;
  v.reason = fmt::format("{}{} {}{} {} {}{}", samples.size() > 1 ? "worst " : "", number(worst_sample->value), unit,
                         worst_sample->where.empty() ? "" : " (" + worst_sample->where + ")", pass ? "meets" : "fails",
                         name(gate.comparison), number(gate.value));
  return v;
}

Verdict gate_figure(const Gate& gate, const RunResult& result);

// What measures a gate's figure, for a gate whose figure the run lacks.
std::string measure_hint(const Gate& gate) {
  switch (info(gate.metric).family) {
    case GateFamily::op:
      return fmt::format("measure it: fabricbench sweep --ops {}{}", name(gate.op.value_or(Op::allreduce)),
                         gate.at ? fmt::format(" --sizes {}", format_size(*gate.at)) : std::string());
    case GateFamily::scale:
      return "measure it on 2 or more nodes: fabricbench scale (or run)";
    case GateFamily::pairs:
      return "measure it on 2 or more nodes: fabricbench p2p (or run)";
    case GateFamily::topo:
      return "measure it: fabricbench topo (without --no-measure for the copy figures)";
  }
  return "run what measures it";
}

Verdict missing(const Gate& gate, const std::string& why) {
  Verdict v = make_verdict(Level::fail, VerdictKind::gate, gate.text, why);
  v.cause_kind = "not_measured";
  v.cause = "the gate names a figure this run does not hold, and a gate never passes unasked";
  v.fix = measure_hint(gate);
  return v;
}

double timing_value(const Timing& t, GateMetric metric) {
  switch (metric) {
    case GateMetric::busbw:
      return t.busbw_gbs;
    case GateMetric::algbw:
      return t.algbw_gbs;
    case GateMetric::time_us:
      return t.time_us;
    case GateMetric::p50_us:
      return t.p50_us;
    case GateMetric::p99_us:
      return t.p99_us;
    case GateMetric::scale_busbw:
    case GateMetric::scale_busbw_min:
    case GateMetric::scale_efficiency:
    case GateMetric::pairs_bandwidth:
    case GateMetric::pairs_latency_us:
    case GateMetric::pairs_findings:
    case GateMetric::topo_h2d_gbs:
    case GateMetric::topo_d2h_gbs:
    case GateMetric::topo_local_copy_gbs:
    case GateMetric::topo_gpus:
    case GateMetric::topo_anomalies:
      break;
  }
  throw std::logic_error("not an op metric");
}

Verdict evaluate_op_gate(const Gate& gate, Op op, const RunResult& result) {
  std::vector<std::size_t> sizes;
  for (const SweepRecord& r : result.records)
    if (r.op == op && r.timing) sizes.push_back(r.bytes);
  if (sizes.empty()) return missing(gate, fmt::format("{} was not measured in this run", name(op)));
  const std::size_t size = gate.at.value_or(*std::max_element(sizes.begin(), sizes.end()));
  std::vector<Sample> samples;
  for (const SweepRecord& r : result.records) {
    if (r.op != op || !r.timing || r.bytes != size) continue;
    const Timing& t = *r.timing;
    samples.push_back(
        {timing_value(t, gate.metric), fmt::format("{} {} {} {}", name(op), format_size(r.bytes), name(r.dtype),
                                                   r.placement == Placement::in_place ? "in-place" : "out-of-place")});
  }
  if (samples.empty())
    return missing(gate, fmt::format("{} at {} was not measured in this run", name(op), format_size(size)));
  return gate_verdict(gate, samples);
}

Verdict evaluate_scale_gate(const Gate& gate, const RunResult& result) {
  if (!result.scaling || result.scaling->levels.empty()) return missing(gate, "no scaling ladder in this run");
  int largest = 0;
  for (const LevelResult& l : result.scaling->levels)
    if (l.kind == LevelKind::nodes) largest = std::max(largest, l.nodes_per_group);
  const int nodes = gate.at ? static_cast<int>(*gate.at) : largest;
  std::vector<Sample> samples;
  for (const LevelResult& l : result.scaling->levels) {
    if (l.kind != LevelKind::nodes || l.nodes_per_group != nodes) continue;
    const std::string where = fmt::format("{} at {}", name(l.op), level_label(l));
    if (gate.metric == GateMetric::scale_efficiency) {
      if (!l.efficiency) return missing(gate, fmt::format("{}: no efficiency (no 1-node level of the op)", where));
      samples.push_back({*l.efficiency, where});
    } else {
      samples.push_back({gate.metric == GateMetric::scale_busbw ? l.busbw_median_gbs : l.busbw_min_gbs, where});
    }
  }
  if (samples.empty()) return missing(gate, fmt::format("the ladder has no level of {} nodes per group", nodes));
  return gate_verdict(gate, samples);
}

Verdict evaluate_pairs_gate(const Gate& gate, const RunResult& result) {
  if (!result.pairs) return missing(gate, "no node-pair matrix in this run");
  if (gate.metric == GateMetric::pairs_findings)
    return gate_verdict(gate, {{static_cast<double>(result.findings.size()), "findings"}});
  std::vector<Sample> samples;
  const PairMatrix& m = result.pairs->nodes;
  for (int i = 0; i < m.size; ++i)
    for (int j = 0; j < m.size; ++j) {
      const auto& v = gate.metric == GateMetric::pairs_bandwidth ? m.bw(i, j) : m.lat(i, j);
      if (i != j && v)
        samples.push_back({*v, fmt::format("{} -> {}", result.pairs->hosts[static_cast<std::size_t>(i)],
                                           result.pairs->hosts[static_cast<std::size_t>(j)])});
    }
  if (samples.empty()) return missing(gate, "no node pair was measured (one node only)");
  return gate_verdict(gate, samples);
}

Verdict evaluate_topo_gate(const Gate& gate, const RunResult& result) {
  if (!result.topology) return missing(gate, "no topology in this run");
  const ClusterTopology& t = *result.topology;
  if (gate.metric == GateMetric::topo_anomalies)
    return gate_verdict(gate, {{static_cast<double>(t.anomalies.size()), "anomalies"}});
  std::vector<Sample> samples;
  for (const NodeTopology& n : t.nodes) {
    if (gate.metric == GateMetric::topo_gpus) {
      samples.push_back({static_cast<double>(n.gpus.size()), n.host.hostname});
      continue;
    }
    for (std::size_t i = 0; i < n.gpus.size(); ++i) {
      const GpuInfo& g = n.gpus[i];
      const auto& v = gate.metric == GateMetric::topo_h2d_gbs   ? g.h2d_gbs
                      : gate.metric == GateMetric::topo_d2h_gbs ? g.d2h_gbs
                                                                : g.local_copy_gbs;
      if (v) samples.push_back({*v, fmt::format("{} GPU {}", n.host.hostname, g.index.value_or(static_cast<int>(i)))});
    }
  }
  if (samples.empty()) return missing(gate, fmt::format("no {} in this run's topology", name(gate.metric)));
  return gate_verdict(gate, samples);
}

}  // namespace

Hardware detect_hardware(const ClusterTopology& topology) {
  Hardware hw;
  std::vector<std::string> models;
  std::vector<int> gens;
  std::vector<int> widths;
  int min_gpus = std::numeric_limits<int>::max();
  int min_nics = std::numeric_limits<int>::max();
  bool nvswitch = false;
  bool nvlink = false;
  std::vector<NicKind> nic_kinds;
  for (const NodeTopology& n : topology.nodes) {
    min_gpus = std::min(min_gpus, static_cast<int>(n.gpus.size()));
    for (const GpuInfo& g : n.gpus) {
      if (g.name) models.push_back(*g.name);
      if (const auto gen = g.pcie.current_gen ? g.pcie.current_gen : g.pcie.max_gen) gens.push_back(*gen);
      if (const auto w = g.pcie.current_width ? g.pcie.current_width : g.pcie.max_width) widths.push_back(*w);
      for (const NvLink& l : g.nvlinks) {
        if (l.active.value_or(false) || !l.active) {
          if (l.remote_kind == LinkPeer::nvswitch)
            nvswitch = true;
          else if (l.active.value_or(false))
            nvlink = true;
        }
      }
    }
    int active = 0;
    for (const NicInfo& nic : n.nics) {
      if (!is_rdma(nic)) continue;
      bool up = false;
      for (const NicPort& p : nic.ports) {
        if (p.state.value_or("") != "ACTIVE") continue;
        up = true;
        if (p.rate_gbps && (!hw.nic_rate_gbps || *p.rate_gbps > *hw.nic_rate_gbps)) hw.nic_rate_gbps = p.rate_gbps;
      }
      if (up) {
        ++active;
        nic_kinds.push_back(nic.kind);
      }
    }
    min_nics = std::min(min_nics, active);
  }
  if (topology.nodes.empty()) min_gpus = min_nics = 0;
  hw.gpus_per_node = min_gpus;
  hw.rdma_nics = min_nics;
  if (!models.empty()) hw.gpu_model = most_common(models);
  if (!gens.empty()) hw.pcie_gen = most_common(gens);
  if (!widths.empty()) hw.pcie_width = most_common(widths);
  if (!nic_kinds.empty()) hw.nic_kind = most_common(nic_kinds);
  hw.gpu_link = min_gpus == 0 ? GpuLink::none : nvswitch ? GpuLink::nvswitch : nvlink ? GpuLink::nvlink : GpuLink::pcie;
  return hw;
}

std::string describe(const Hardware& hardware) {
  std::vector<std::string> parts;
  if (hardware.gpus_per_node == 0)
    parts.emplace_back("no GPU");
  else
    parts.push_back(fmt::format("{}×{}", hardware.gpus_per_node, hardware.gpu_model.value_or("GPU (model unknown)")));
  switch (hardware.gpu_link) {
    case GpuLink::nvswitch:
      parts.emplace_back("NVSwitch");
      break;
    case GpuLink::nvlink:
      parts.emplace_back("NVLink");
      break;
    case GpuLink::pcie:
      parts.emplace_back("PCIe only between GPUs");
      break;
    case GpuLink::none:
      break;
  }
  if (hardware.rdma_nics > 0)
    parts.push_back(fmt::format("{}×{}{}", hardware.rdma_nics, hardware.nic_kind ? name(*hardware.nic_kind) : "",
                                hardware.nic_rate_gbps ? fmt::format(" {:.0f} Gb/s", *hardware.nic_rate_gbps) : ""));
  else
    parts.emplace_back("no active RDMA NIC");
  if (hardware.pcie_gen)
    parts.push_back(fmt::format("PCIe Gen{} x{}", *hardware.pcie_gen, hardware.pcie_width.value_or(0)));
  return join(parts);
}

Expectations parse_expectations(std::string_view text) {
  Expectations e;
  try {
    const json doc = parse_bounded_json(text, "expectations");
    const std::string schema = doc.value("schema", "");
    if (schema != "fabricbench.expectations/2" && schema != "fabricbench.expectations/1")
      throw UsageError("expectations: schema 'fabricbench.expectations/2' (or /1) was expected");
    e.warn_at = doc.at("warn_at").get<double>();
    e.fail_below = doc.at("fail_below").get<double>();
    for (const json& r : doc.at("references")) {
      Reference ref;
      ref.id = r.at("id").get<std::string>();
      ref.label = r.at("label").get<std::string>();
      ref.figure = *named(std::optional(r.at("figure").get<std::string>()), reference_figure_names, ref.id, "figure");
      ref.scope = r.value("scope", "");
      const json& m = r.at("match");
      ref.gpu_model_contains = member<std::string>(m, "gpu_model_contains");
      ref.gpus_per_node = member<int>(m, "gpus_per_node");
      ref.gpu_link = named(member<std::string>(m, "gpu_link"), gpu_link_names, ref.id, "gpu_link");
      ref.nic_kind = named(member<std::string>(m, "nic_kind"), nic_kind_names, ref.id, "nic_kind");
      ref.nic_rate_gbps = member<double>(m, "nic_rate_gbps");
      ref.pcie_gen = member<int>(m, "pcie_gen");
      ref.pcie_width = member<int>(m, "pcie_width");
      ref.rdma_nics = member<int>(m, "rdma_nics");
      ref.nodes = member<int>(m, "nodes");
      ref.algorithm = member<std::string>(m, "algorithm");
      ref.when_algorithm_unknown = r.value("when_algorithm_unknown", false);
      ref.points = read_points(r, ref.id);
      ref.approximate = r.value("approximate", false);
      ref.context_only = r.value("context_only", false);
      ref.source = r.at("source").get<std::string>();
      if (ref.source.empty()) throw UsageError(fmt::format("expectations: {} has no source", ref.id));
      e.references.push_back(std::move(ref));
    }
  } catch (const json::exception& ex) {
    throw UsageError(fmt::format("expectations: {}", ex.what()));
  }
  return e;
}

const Expectations& builtin_expectations() {
  // Parsed once; immutable afterwards.
  static const Expectations expectations = parse_expectations(expectations_text());
  return expectations;
}

Expectations expectations_with(std::string_view provider_text) {
  if (provider_text.empty()) return builtin_expectations();
  Expectations out = parse_expectations(provider_text);
  std::set<ReferenceFigure> given;
  for (const Reference& r : out.references) given.insert(r.figure);
  for (const Reference& r : builtin_expectations().references)
    if (!given.contains(r.figure)) out.references.push_back(r);
  return out;
}

bool matches(const Reference& reference, const Hardware& hardware) {
  if (reference.gpu_model_contains &&
      (!hardware.gpu_model || hardware.gpu_model->find(*reference.gpu_model_contains) == std::string::npos))
    return false;
  if (reference.gpus_per_node && hardware.gpus_per_node != *reference.gpus_per_node) return false;
  if (reference.gpu_link && hardware.gpu_link != *reference.gpu_link) return false;
  if (reference.nic_kind && (hardware.rdma_nics == 0 || hardware.nic_kind != *reference.nic_kind)) return false;
  if (reference.nic_rate_gbps &&
      (!hardware.nic_rate_gbps || std::abs(*hardware.nic_rate_gbps - *reference.nic_rate_gbps) > 0.5))
    return false;
  if (reference.pcie_gen && (hardware.gpus_per_node == 0 || hardware.pcie_gen != reference.pcie_gen)) return false;
  if (reference.pcie_width && (hardware.gpus_per_node == 0 || hardware.pcie_width != reference.pcie_width))
    return false;
  if (reference.rdma_nics && hardware.rdma_nics != *reference.rdma_nics) return false;
  return true;
}

const ReferencePoint* point_at(const Reference& reference, std::size_t bytes) {
  const ReferencePoint* at = nullptr;
  for (const ReferencePoint& p : reference.points)
    if (p.bytes <= bytes) at = &p;
  return at;
}

AllreduceReferences allreduce_references(const Expectations& expectations, const Hardware& hardware, int nodes,
                                         const std::optional<std::string>& algorithm) {
  AllreduceReferences out;
  std::vector<const Reference*> candidates;
  for (const Reference& r : expectations.references)
    if (r.figure == ReferenceFigure::allreduce_busbw && matches(r, hardware) && r.nodes.value_or(1) == nodes)
      candidates.push_back(&r);
  // Best first: the algorithm's own reference; one for any algorithm; with
  // the algorithm unknown, the one marked for that case.
  const auto rank = [&algorithm](const Reference* r) {
    if (r->context_only) return 9;
    if (algorithm && r->algorithm == algorithm) return 0;
    if (!r->algorithm) return 1;
    if (!algorithm && r->when_algorithm_unknown) return 2;
    return 9;
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&rank](const Reference* a, const Reference* b) { return rank(a) < rank(b); });
  for (const Reference* r : candidates) {
    if (out.judged == nullptr && rank(r) < 9)
      out.judged = r;
    else
      out.context.push_back(r);
  }
  return out;
}

std::vector<Verdict> health_verdicts(const RunResult& result) {
  std::vector<Verdict> out;
  // Wrong elements anywhere in the file fail it, whatever its status says.
  if (!data_ok(result)) {
    Verdict v = make_verdict(Level::fail, VerdictKind::data, "data check",
                             fmt::format("{} wrong elements", wrong_elements(result)));
    v.cause_kind = "wrong_data";
    v.cause =
        "a collective returned values other than the exact reduction of the pattern: memory, a GPU or NIC "
        "corrupting data, or a library bug";
    v.fix =
        "run the sweep again on the nodes the records name with --iters 1 and check each node alone "
        "(fabricbench sweep on one node); report the failing node to the provider";
    out.push_back(std::move(v));
  } else if (!result.checked) {
    out.push_back(make_verdict(Level::info, VerdictKind::data, "data check", "data not checked (--no-check)"));
  } else {
    out.push_back(make_verdict(Level::ok, VerdictKind::data, "data check", "every checked element was right"));
  }
  if (!result.complete) {
    Verdict v = make_verdict(Level::warn, VerdictKind::complete, "run",
                             result.end_reason.empty() ? "the run did not finish (interrupted, or still running)"
                                                       : "the run did not finish: " + result.end_reason);
    v.cause_kind = "incomplete";
    v.cause = result.end_reason.empty() ? "the file was saved before the run ended" : result.end_reason;
    v.fix =
        "the file holds every point that finished; run again (with a larger --timeout if a step outlived it) "
        "for the rest";
    out.push_back(std::move(v));
  }
  // One rank crosses no link: whatever it measured says nothing of the
  // fabric (a storage test alone is the exception: it needs no link).
  if (result.run.ranks == 1 && !(result.storage && result.records.empty() && !result.pairs && !result.scaling)) {
    Verdict v = make_verdict(Level::warn, VerdictKind::complete, "run",
                             "1 rank: nothing crossed a link, so no figure of this run measures the fabric");
    v.cause_kind = "one_rank";
    v.cause = "the run was started without a launcher, or with one rank (mpirun -np 1)";
    v.fix = "launch one rank per GPU: mpirun -np <GPUs> fabricbench run (or srun), several nodes for the network";
    out.push_back(std::move(v));
  }
  // Slow nodes and links, what NCCL used, the topology's anomalies: each
  // with its cause and fix, worst first.
  for (const Cause& c : find_causes(result)) out.push_back(verdict_of(c));
  // Two nodes: a matrix of one link names nothing, and says so.
  if (result.pairs && result.pairs->hosts.size() == 2 && result.findings.empty())
    out.push_back(make_verdict(Level::info, VerdictKind::finding, "node pairs", std::string(two_nodes_text)));
  // Placement and storage: the islands and the storage figures inform; an
  // oversubscribed bisection and files left behind warn.
  if (result.islands && result.islands->islands.size() > 1)
    out.push_back(make_verdict(Level::info, VerdictKind::finding, "latency islands", result.islands->message));
  if (result.bisection && result.bisection->oversubscription) {
    Verdict v = make_verdict(result.bisection->blocking ? Level::warn : Level::ok, VerdictKind::finding, "bisection",
                             result.bisection->message);
    if (result.bisection->blocking) {
      v.cause_kind = "oversubscribed";
      v.cause =
          "half the nodes sending to the other half moved less together than the pairs alone: the switches' "
          "uplinks between them carry less than the nodes can send";
      v.fix =
          "ask the provider for the fabric's oversubscription ratio; keep jobs that all-reduce across halves "
          "within one leaf switch (the latency islands show them), or expect this ratio at full scale";
    }
    out.push_back(std::move(v));
  }
  if (result.storage) {
    const StorageResult& s = *result.storage;
    out.push_back(make_verdict(Level::info, VerdictKind::finding, "storage", s.message));
    if (s.files_removed < s.files_written) {
      Verdict v = make_verdict(Level::warn, VerdictKind::finding, "storage",
                               fmt::format("{} of {} test files could not be removed from {}",
                                           s.files_written - s.files_removed, s.files_written, s.path));
      v.cause_kind = "files_left";
      v.cause = "the run ended, or a node lost the folder, before each writer removed its file";
      v.fix = s.files_left.empty() ? fmt::format("remove fabricbench's test files from {} by hand", s.path)
                                   : fmt::format("remove by hand: {}", join_paths(s.files_left));
      out.push_back(std::move(v));
    }
  }
  // A ladder level above the NIC-bound ceiling: tree and NVLS algorithms
  // move less than the busbw formula assumes; said, never a false alarm.
  if (result.scaling)
    for (const LevelResult& l : result.scaling->levels)
      if (!l.warning.empty())
        out.push_back(make_verdict(Level::info, VerdictKind::ladder, fmt::format("{} {}", name(l.op), level_label(l)),
                                   l.warning));
  return out;
}

namespace {

std::vector<Evidence> figure_evidence(const Measured& m, const ReferencePoint& point) {
  return {{fmt::format("{} at {}", m.what, format_size(m.bytes)), *m.value, "GB/s"},
          {"expected", point.gbs, "GB/s"},
          {"share of expected", 100.0 * *m.value / point.gbs, "%"}};
}

// The layers a reference figure measures: what a cause must weigh on to
// explain it.
std::vector<FabricLayer> layers_of(ReferenceFigure figure, int nodes) {
  switch (figure) {
    case ReferenceFigure::allreduce_busbw:
      return nodes > 1 ? std::vector<FabricLayer>{FabricLayer::across_nodes, FabricLayer::within_node}
                       : std::vector<FabricLayer>{FabricLayer::within_node};
    case ReferenceFigure::p2p_per_nic_gbs:
      return {FabricLayer::across_nodes};
    case ReferenceFigure::topo_h2d_gbs:
    case ReferenceFigure::topo_d2h_gbs:
      return {FabricLayer::host_device};
  }
  return {};
}

// A reference verdict below its figure gets the causes that weigh on the
// figure's layers, worst first: the first gives the fix, the others are
// named. With none, it says what was looked at and what to do next.
void explain(Verdict& v, ReferenceFigure figure, const RunResult& result, const std::vector<Cause>& causes) {
  if (v.level < Level::warn) return;
  const std::vector<FabricLayer> layers = layers_of(figure, result.run.nodes);
  std::vector<const Cause*> bearing;
  for (const Cause& c : causes)
    if (c.level >= Level::warn &&
        std::any_of(layers.begin(), layers.end(), [&c](FabricLayer l) { return bears_on(c, l); }))
      bearing.push_back(&c);
  if (!bearing.empty()) {
    const Cause& first = *bearing.front();
    v.cause_kind = first.kind;
    v.cause = fmt::format("{} ({})", first.observed, first.cause);
    for (std::size_t i = 1; i < bearing.size() && i < 4; ++i) v.cause += fmt::format("; also {}", bearing[i]->observed);
    if (bearing.size() > 4) v.cause += fmt::format("; and {} more below", bearing.size() - 4);
    v.fix = first.fix;
    for (const Cause* c : bearing)
      for (const std::string& h : c->hosts)
        if (std::find(v.hosts.begin(), v.hosts.end(), h) == v.hosts.end()) v.hosts.push_back(h);
    return;
  }
  v.cause_kind = "unexplained";
  const bool nccl = result.run.transport == "nccl";
  std::vector<std::string> looked{"the topology", "the configuration"};
  if (nccl && result.nccl) looked.emplace_back("NCCL's own log");
  if (result.pairs) looked.emplace_back("the pair matrix");
  const std::string last = looked.back();
  looked.pop_back();
  v.cause = fmt::format("nothing probed or captured explains it: {} and {} show no fault that weighs on it ({}){}",
                        join(looked), last, name(layers.front()),
                        nccl && !result.nccl ? "; NCCL's log was not captured" : "");
  switch (figure) {
    case ReferenceFigure::allreduce_busbw:
      v.fix = fmt::format(
          "run nccl-tests' all_reduce_perf at the same size and rank count on the same nodes; if it agrees, send "
          "both results and the reference's source to the provider{}",
          result.run.nodes > 1 && !result.pairs ? ", and run `fabricbench p2p` to find a slow node or link" : "");
      break;
    case ReferenceFigure::p2p_per_nic_gbs:
      v.fix =
          "send the pair matrix and the reference's source to the provider, and ask for the NICs' and switch "
          "ports' error counters (`perfquery`, `ethtool -S`)";
      break;
    case ReferenceFigure::topo_h2d_gbs:
    case ReferenceFigure::topo_d2h_gbs:
      v.fix =
          "bind each rank to its GPU's NUMA node (`mpirun --bind-to numa`) and measure again with `fabricbench "
          "topo`; if it stays low, ask the provider to check the GPU's PCIe slot";
      break;
  }
}

// The layers a gate's figure measures.
std::vector<FabricLayer> gate_layers(const Gate& gate, int nodes) {
  switch (info(gate.metric).family) {
    case GateFamily::op:
      return nodes > 1 ? std::vector<FabricLayer>{FabricLayer::across_nodes, FabricLayer::within_node}
                       : std::vector<FabricLayer>{FabricLayer::within_node};
    case GateFamily::scale:
    case GateFamily::pairs:
      return {FabricLayer::across_nodes};
    case GateFamily::topo:
      if (gate.metric == GateMetric::topo_h2d_gbs || gate.metric == GateMetric::topo_d2h_gbs)
        return {FabricLayer::host_device};
      if (gate.metric == GateMetric::topo_local_copy_gbs) return {FabricLayer::within_node};
      return {FabricLayer::within_node, FabricLayer::host_device, FabricLayer::across_nodes};
  }
  return {};
}

// The all-reduce verdict: the reference for the run's node count and NCCL's
// algorithm (allreduce_references), at the measured size.
Verdict allreduce_verdict(const RunResult& result, const Hardware& hw, const Measured& m,
                          const Expectations& expectations, const std::vector<const Reference*>& for_hardware) {
  Verdict v;
  v.kind = VerdictKind::reference;
  v.subject = name(ReferenceFigure::allreduce_busbw);
  v.level = Level::info;
  const int nodes = result.run.nodes;
  const std::string algorithm_text = m.algorithm ? fmt::format(" (NCCL {})", *m.algorithm) : "";
  if (!m.value) {
    const Reference& any = *for_hardware.front();
    v.source = any.source;
    v.reason = fmt::format("no reference applies: {} (reference {} for {})", m.why_not, expected_text(any), any.label);
    return v;
  }
  const AllreduceReferences refs = allreduce_references(expectations, hw, nodes, m.algorithm);
  if (refs.judged == nullptr) {
    std::vector<std::string> known;
    for (const Reference* r : for_hardware) known.push_back(r->label);
    v.source = for_hardware.front()->source;
    v.reason =
        fmt::format("no reference for all-reduce on {} node{}{}: {} {} GB/s at {}; references for this hardware: {}",
                    nodes, nodes == 1 ? "" : "s", m.algorithm ? " with NCCL " + *m.algorithm : "", m.what,
                    gbs(*m.value), format_size(m.bytes), join(known));
    return v;
  }
  const Reference& ref = *refs.judged;
  v.source = ref.source;
  const ReferencePoint* point = point_at(ref, m.bytes);
  if (point == nullptr) {
    v.reason = fmt::format(
        "no reference at this size: {} {} GB/s{} at {}; the {} reference for {} ({}) needs messages of {} or more",
        m.what, gbs(*m.value), algorithm_text, format_size(m.bytes), expected_text(ref), ref.label, ref.id,
        format_size(ref.points.front().bytes));
    return v;
  }
  v.level = judge(*m.value, point->gbs, expectations);
  v.evidence = figure_evidence(m, *point);
  v.reason =
      fmt::format("{} {} GB/s{} is {:.0f}% of the {} expected for {} ({})", m.what, gbs(*m.value), algorithm_text,
                  100.0 * *m.value / point->gbs, expected_text(ref, *point), ref.label, entry_text(ref, *point));
  if (!m.algorithm && ref.algorithm)
    v.reason += fmt::format("; NCCL's algorithm is not recorded, so the {} figure judges", *ref.algorithm);
  for (const Reference* other : refs.context) v.reason += fmt::format("; {} {}", expected_text(*other), other->label);
  v.reason += wire_text(m.wire);
  return v;
}

}  // namespace

std::vector<Verdict> reference_verdicts(const RunResult& result, const Expectations& expectations) {
  std::vector<Verdict> out;
  if (!result.topology || result.topology->nodes.empty()) {
    out.push_back(make_verdict(Level::info, VerdictKind::reference, "expectations",
                               "no reference (no GPU/NIC topology in this run)"));
    return out;
  }
  const Hardware hw = detect_hardware(*result.topology);
  std::map<ReferenceFigure, std::vector<const Reference*>> by_figure;  // in file order within a figure
  std::vector<ReferenceFigure> figures;
  for (const Reference& r : expectations.references) {
    if (!matches(r, hw)) continue;
    if (by_figure[r.figure].empty()) figures.push_back(r.figure);
    by_figure[r.figure].push_back(&r);
  }
  if (figures.empty()) {
    out.push_back(make_verdict(Level::info, VerdictKind::reference, "expectations",
                               fmt::format("no reference for {}", describe(hw))));
    return out;
  }
  const std::vector<Cause> causes = find_causes(result);
  for (const ReferenceFigure figure : figures) {
    const Measured m = measure_figure(result, hw, figure);
    if (figure == ReferenceFigure::allreduce_busbw) {
      out.push_back(allreduce_verdict(result, hw, m, expectations, by_figure[figure]));
      explain(out.back(), figure, result, causes);
      continue;
    }
    const std::vector<const Reference*>& refs = by_figure[figure];
    const auto primary = std::find_if(refs.begin(), refs.end(), [](const Reference* r) { return !r->context_only; });
    if (primary == refs.end()) continue;
    const Reference& ref = **primary;
    Verdict v;
    v.kind = VerdictKind::reference;
    v.subject = name(figure);
    v.source = ref.source;
    const ReferencePoint* point = point_at(ref, m.bytes);
    if (!m.value) {
      v.level = Level::info;
      v.reason =
          fmt::format("no reference applies: {} (reference {} for {})", m.why_not, expected_text(ref), ref.label);
    } else if (point == nullptr) {
      v.level = Level::info;
      v.reason = fmt::format(
          "no reference at this size: {} {} GB/s at {}; the {} reference for {} needs messages of "
          "{} or more",
          m.what, gbs(*m.value), format_size(m.bytes), expected_text(ref), ref.label,
          format_size(ref.points.front().bytes));
    } else {
      v.level = judge(*m.value, point->gbs, expectations);
      v.evidence = figure_evidence(m, *point);
      v.reason =
          fmt::format("{} {} GB/s is {:.0f}% of the {} expected for {} ({})", m.what, gbs(*m.value),
                      100.0 * *m.value / point->gbs, expected_text(ref, *point), ref.label, entry_text(ref, *point));
      for (const Reference* other : refs)
        if (other != &ref) v.reason += fmt::format("; {} {}", expected_text(*other), other->label);
    }
    explain(v, figure, result, causes);
    out.push_back(std::move(v));
  }
  return out;
}

void require_reference(std::vector<Verdict>& reference_verdicts) {
  for (Verdict& v : reference_verdicts) {
    // The whole-run "no reference" verdicts; a figure without a figure to judge keeps info.
    if (v.kind != VerdictKind::reference || v.subject != "expectations" || v.level != Level::info) continue;
    v.level = Level::warn;
    v.reason += "; give --expect";
    v.cause_kind = "no_reference";
    v.cause = "--expect-reference asks for a reference, and none covers this hardware or run";
    v.fix =
        "give the figures your provider promises as --expect gates (e.g. --expect 'allreduce.busbw>=350'), or "
        "an expectations file with --expectations";
  }
}

const GateMetricInfo& info(GateMetric metric) {
  for (const GateMetricInfo& m : gate_metrics)
    if (m.metric == metric) return m;
  throw std::logic_error("a gate metric outside the table");
}

std::string_view name(GateMetric metric) { return info(metric).name; }

Gate parse_gate(std::string_view text) {
  const std::string t(text);
  const auto bad = [&t](const std::string& why) { return UsageError(fmt::format("--expect '{}': {}", t, why)); };
  const auto cmp_at = t.find_first_of("<>=");
  if (cmp_at == std::string::npos) throw bad("no comparison (use >=, <=, >, < or ==), e.g. allreduce.busbw>=350");
  Gate g;
  g.text = t;
  std::string lhs = t.substr(0, cmp_at);
  const std::string_view rest = std::string_view(t).substr(cmp_at);
  std::optional<Comparison> comparison;
  for (const auto& [value, label] : comparison_names) {
    if (rest.substr(0, label.size()) == label) {
      comparison = value;
      break;
    }
  }
  if (!comparison) throw bad("unknown comparison (use >=, <=, >, < or ==)");
  g.comparison = *comparison;
  const std::string value_text(rest.substr(name(g.comparison).size()));
  std::size_t used = 0;
  try {
    g.value = std::stod(value_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value_text.size() || !std::isfinite(g.value))
    throw bad(fmt::format("'{}' is not a number", value_text));
  std::string arg;
  if (const auto at = lhs.find('@'); at != std::string::npos) {
    arg = lhs.substr(at + 1);
    lhs.resize(at);
    if (arg.empty()) throw bad("nothing after '@'");
  }
  const auto dot = lhs.find('.');
  if (dot == std::string::npos) throw bad("expected SUBJECT.METRIC, e.g. allreduce.busbw");
  g.subject = lhs.substr(0, dot);
  const std::string metric = lhs.substr(dot + 1);
  GateFamily family = GateFamily::op;
  if ((g.op = parse_op(g.subject))) {
    g.subject = std::string(name(*g.op));
  } else if (g.subject == "scale") {
    family = GateFamily::scale;
  } else if (g.subject == "pairs") {
    family = GateFamily::pairs;
  } else if (g.subject == "topo") {
    family = GateFamily::topo;
  } else {
    std::vector<std::string> subjects;
    for (const Op op : all_ops()) subjects.emplace_back(name(op));
    subjects.insert(subjects.end(), {"scale", "pairs", "topo"});
    throw bad(fmt::format("unknown subject '{}' ({})", g.subject, join(subjects)));
  }
  std::vector<std::string> known;
  std::optional<GateMetric> found;
  for (const GateMetricInfo& m : gate_metrics) {
    if (m.family != family) continue;
    known.emplace_back(m.name);
    if (m.name == metric) found = m.metric;
  }
  if (!found) throw bad(fmt::format("unknown metric '{}' for {} ({})", metric, g.subject, join(known)));
  g.metric = *found;
  switch (family) {
    case GateFamily::op:
      if (!arg.empty()) {
        const auto size = parse_size(arg);
        if (!size || *size == 0) throw bad(fmt::format("'@{}' is not a size (bytes, or K/M/G, e.g. @64M)", arg));
        g.at = *size;
      }
      break;
    case GateFamily::scale:
      if (!arg.empty()) {
        const bool digits = arg.find_first_not_of("0123456789") == std::string::npos && arg.size() < 7;
        if (!digits || std::stoi(arg) < 1) throw bad(fmt::format("'@{}' is not a node count", arg));
        g.at = static_cast<std::size_t>(std::stoi(arg));
      }
      break;
    case GateFamily::pairs:
    case GateFamily::topo:
      if (!arg.empty()) throw bad(fmt::format("{}.{} takes no @", g.subject, metric));
      break;
  }
  return g;
}

Verdict evaluate_gate(const Gate& gate, const RunResult& result) {
  Verdict v = gate_figure(gate, result);
  if (v.level != Level::fail || !v.cause.empty()) return v;
  // A measured figure past the gate's bound: the causes that weigh on it.
  const std::vector<FabricLayer> layers = gate_layers(gate, result.run.nodes);
  std::vector<const Cause*> bearing;
  const std::vector<Cause> causes = find_causes(result);
  for (const Cause& c : causes)
    if (c.level >= Level::warn &&
        std::any_of(layers.begin(), layers.end(), [&c](FabricLayer l) { return bears_on(c, l); }))
      bearing.push_back(&c);
  if (bearing.empty()) {
    v.cause_kind = "unexplained";
    v.cause = fmt::format("the figure is past the gate's bound and nothing probed or captured explains it ({})",
                          name(layers.front()));
    v.fix =
        "hold the bound against the hardware's reference (--expect-reference) or nccl-tests on the same nodes; "
        "if they agree, the bound asks more than this hardware gives";
    return v;
  }
  v.cause_kind = bearing.front()->kind;
  v.cause = fmt::format("{} ({})", bearing.front()->observed, bearing.front()->cause);
  for (std::size_t i = 1; i < bearing.size() && i < 4; ++i) v.cause += fmt::format("; also {}", bearing[i]->observed);
  v.fix = bearing.front()->fix;
  v.hosts = bearing.front()->hosts;
  return v;
}

namespace {

Verdict gate_figure(const Gate& gate, const RunResult& result) {
  switch (info(gate.metric).family) {
    case GateFamily::op:
      return evaluate_op_gate(gate, gate.op.value_or(Op::allreduce), result);
    case GateFamily::scale:
      return evaluate_scale_gate(gate, result);
    case GateFamily::pairs:
      return evaluate_pairs_gate(gate, result);
    case GateFamily::topo:
      return evaluate_topo_gate(gate, result);
  }
  throw std::logic_error("a gate family outside the table");
}

}  // namespace

Level worst(std::span<const Verdict> verdicts) {
  Level w = Level::ok;
  for (const Verdict& v : verdicts) w = std::max(w, v.level);
  return w;
}

}  // namespace fabricbench
