#pragma once
// Verdicts: from numbers to decisions. A run is judged three ways:
// - health: the data check, whether the run finished, slow nodes and links
//   from the pair matrix, topology anomalies, ladder warnings;
// - references: measured figures against the expectations file
//   (src/data/expectations.json, built in), matched on the hardware the
//   topology probe found; hardware without a reference gets "no reference",
//   never a guessed figure;
// - gates: `--expect` expressions such as `allreduce.busbw>=350`.
// Pure logic over records, so every rule is tested with fixture runs.

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/name_table.hpp"
#include "fabricbench/records/verdict.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// How the GPUs of a node reach each other, best first.
enum class GpuLink { nvswitch, nvlink, pcie, none };
inline constexpr NameTable<GpuLink, 4> gpu_link_names{{
    {GpuLink::nvswitch, "nvswitch"},
    {GpuLink::nvlink, "nvlink"},
    {GpuLink::pcie, "pcie"},
    {GpuLink::none, "none"},
}};
constexpr std::string_view name(GpuLink link) { return name_in(gpu_link_names, link); }

// The hardware a run's topology shows, as the expectations match on it.
struct Hardware {
  std::optional<std::string> gpu_model;  // the most common GPU name
  int gpus_per_node = 0;                 // fewest over nodes
  GpuLink gpu_link = GpuLink::none;      // none without GPUs
  int rdma_nics = 0;                     // active RDMA NICs per node (fewest over nodes)
  std::optional<NicKind> nic_kind;       // the most common active RDMA kind; empty without one
  std::optional<double> nic_rate_gbps;   // the fastest active RDMA port, Gb/s
  std::optional<int> pcie_gen;           // of the GPUs' links (the most common current generation)
  std::optional<int> pcie_width;
};
Hardware detect_hardware(const ClusterTopology& topology);
// "8×NVIDIA H100 80GB HBM3, NVSwitch, 8×infiniband 400 Gb/s, PCIe Gen5 x16".
std::string describe(const Hardware& hardware);

// The figures a reference gives an expected value for.
enum class ReferenceFigure { allreduce_busbw, p2p_per_nic_gbs, topo_h2d_gbs, topo_d2h_gbs };
inline constexpr NameTable<ReferenceFigure, 4> reference_figure_names{{
    {ReferenceFigure::allreduce_busbw, "allreduce.busbw"},
    {ReferenceFigure::p2p_per_nic_gbs, "p2p.per_nic_gbs"},
    {ReferenceFigure::topo_h2d_gbs, "topo.h2d_gbs"},
    {ReferenceFigure::topo_d2h_gbs, "topo.d2h_gbs"},
}};
constexpr std::string_view name(ReferenceFigure figure) { return name_in(reference_figure_names, figure); }

// One expected figure from `bytes` on (a point of a reference's curve).
struct ReferencePoint {
  std::size_t bytes = 0;
  double gbs = 0;  // the low end of a range
  std::optional<double> gbs_high;
};

struct Reference {
  std::string id;
  std::string label;  // "8×H100 NVSwitch, ring"
  ReferenceFigure figure = ReferenceFigure::allreduce_busbw;
  std::string scope;
  // Match keys; an empty one matches anything.
  std::optional<std::string> gpu_model_contains;
  std::optional<int> gpus_per_node;
  std::optional<GpuLink> gpu_link;
  std::optional<NicKind> nic_kind;
  std::optional<double> nic_rate_gbps;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  std::optional<int> rdma_nics;  // active RDMA NICs per node
  // allreduce.busbw: the run's node count (empty: one node) and NCCL's
  // algorithm (empty: any); `when_algorithm_unknown` marks the reference a
  // run that does not say which algorithm ran is judged on.
  std::optional<int> nodes;
  std::optional<std::string> algorithm;
  bool when_algorithm_unknown = false;
  // The curve, by size, ascending; the point at or below the measured size
  // applies, and below the first one there is no reference.
  std::vector<ReferencePoint> points;
  bool approximate = false;
  bool context_only = false;  // shown beside the verdict, never judged on
  std::string source;
};

// The point of `reference` for a message of `bytes`; nullptr below its first.
const ReferencePoint* point_at(const Reference& reference, std::size_t bytes);

struct Expectations {
  double warn_at = 0.9;     // OK at or above this fraction of the expected figure
  double fail_below = 0.7;  // FAIL below this fraction; WARN between
  std::vector<Reference> references;
};

// Parses an expectations document (fabricbench.expectations/2, or /1 whose
// single figure per reference becomes a one-point curve); throws UsageError
// naming what is wrong.
Expectations parse_expectations(std::string_view text);
// The file built into the binary.
const Expectations& builtin_expectations();
// The built-in references with a provider's file laid over them: the file's
// references replace the built-in ones of each figure it gives, and its
// warn_at and fail_below apply. `provider_text` empty: the built-in ones.
Expectations expectations_with(std::string_view provider_text);

bool matches(const Reference& reference, const Hardware& hardware);

// The references `expectations` holds for an all-reduce busbw measured on
// `hardware` over `nodes` nodes with NCCL's `algorithm` (nullopt: unknown),
// best first: the one to judge on (nullptr when none applies), and the
// others that match the hardware and node count, for context.
struct AllreduceReferences {
  const Reference* judged = nullptr;
  std::vector<const Reference*> context;
};
AllreduceReferences allreduce_references(const Expectations& expectations, const Hardware& hardware, int nodes,
                                         const std::optional<std::string>& algorithm);

// Health verdicts of one run (see above).
std::vector<Verdict> health_verdicts(const RunResult& result);

// Reference verdicts of one run: one per judged figure, or one INFO "no
// reference (...)" saying why none applies.
std::vector<Verdict> reference_verdicts(const RunResult& result, const Expectations& expectations);

// Asked to gate on the references (--expect-reference), a run that no
// reference can judge must not pass silently: its "no reference" INFO
// becomes a WARN that says to give --expect (so --fail-on-warn exits 1).
void require_reference(std::vector<Verdict>& reference_verdicts);

// A gate: SUBJECT.METRIC[@ARG] CMP VALUE, CMP one of >= <= > < ==.
//   <op>.busbw|algbw|time_us|p50_us|p99_us[@SIZE]   sweep records of the op at SIZE
//                                                   (default: its largest measured size),
//                                                   every dtype and placement measured there
//   scale.busbw|busbw_min|efficiency[@NODES]        ladder levels of NODES nodes per group
//                                                   (default: the largest), every op
//   pairs.bandwidth|latency_us|findings             node-pair links (every link), finding count
//   topo.h2d_gbs|d2h_gbs|local_copy_gbs|gpus|anomalies   every GPU / node; anomaly count
// Every value in scope must satisfy the comparison; the verdict names the
// worst. A figure the run does not hold (no ladder, no topology, a size not
// measured) fails the gate with that reason: a gate never passes unasked.
// The subjects of a gate: any op, or one of the named families.
enum class GateFamily { op, scale, pairs, topo };

// Every metric a gate can name, once: its family, its name after the dot and
// the unit of its values. Parsing lists and looks metrics up in this table;
// evaluation dispatches on the family and takes the unit from it.
enum class GateMetric {
  busbw,
  algbw,
  time_us,
  p50_us,
  p99_us,
  scale_busbw,
  scale_busbw_min,
  scale_efficiency,
  pairs_bandwidth,
  pairs_latency_us,
  pairs_findings,
  topo_h2d_gbs,
  topo_d2h_gbs,
  topo_local_copy_gbs,
  topo_gpus,
  topo_anomalies,
};
struct GateMetricInfo {
  GateMetric metric;
  GateFamily family;
  std::string_view name;
  std::string_view unit;  // "GB/s", "us", or empty for counts and ratios
};
inline constexpr std::array<GateMetricInfo, 16> gate_metrics{{
    {GateMetric::busbw, GateFamily::op, "busbw", "GB/s"},
    {GateMetric::algbw, GateFamily::op, "algbw", "GB/s"},
    {GateMetric::time_us, GateFamily::op, "time_us", "us"},
    {GateMetric::p50_us, GateFamily::op, "p50_us", "us"},
    {GateMetric::p99_us, GateFamily::op, "p99_us", "us"},
    {GateMetric::scale_busbw, GateFamily::scale, "busbw", "GB/s"},
    {GateMetric::scale_busbw_min, GateFamily::scale, "busbw_min", "GB/s"},
    {GateMetric::scale_efficiency, GateFamily::scale, "efficiency", ""},
    {GateMetric::pairs_bandwidth, GateFamily::pairs, "bandwidth", "GB/s"},
    {GateMetric::pairs_latency_us, GateFamily::pairs, "latency_us", "us"},
    {GateMetric::pairs_findings, GateFamily::pairs, "findings", ""},
    {GateMetric::topo_h2d_gbs, GateFamily::topo, "h2d_gbs", "GB/s"},
    {GateMetric::topo_d2h_gbs, GateFamily::topo, "d2h_gbs", "GB/s"},
    {GateMetric::topo_local_copy_gbs, GateFamily::topo, "local_copy_gbs", "GB/s"},
    {GateMetric::topo_gpus, GateFamily::topo, "gpus", ""},
    {GateMetric::topo_anomalies, GateFamily::topo, "anomalies", ""},
}};
const GateMetricInfo& info(GateMetric metric);
// "busbw": the name after the dot.
std::string_view name(GateMetric metric);

enum class Comparison { ge, le, eq, gt, lt };
// Two-character forms first, so ">=" is not read as ">".
inline constexpr NameTable<Comparison, 5> comparison_names{{
    {Comparison::ge, ">="},
    {Comparison::le, "<="},
    {Comparison::eq, "=="},
    {Comparison::gt, ">"},
    {Comparison::lt, "<"},
}};
constexpr std::string_view name(Comparison comparison) { return name_in(comparison_names, comparison); }

struct Gate {
  std::string text;
  std::string subject;   // the op's name, "scale", "pairs", "topo"
  std::optional<Op> op;  // for an op's gate
  GateMetric metric = GateMetric::busbw;
  std::optional<std::size_t> at;  // size in bytes, or nodes per group for scale
  Comparison comparison = Comparison::ge;
  double value = 0;
};

// Throws UsageError: "--expect 'allreduce.bw>=3': unknown metric 'bw' for allreduce (busbw, ...)".
Gate parse_gate(std::string_view text);
Verdict evaluate_gate(const Gate& gate, const RunResult& result);

// The worst gating level among `verdicts` (info never counts).
Level worst(std::span<const Verdict> verdicts);

}  // namespace fabricbench
