#pragma once
// Causes: why a figure is low, from what was probed and captured, each with
// one concrete fix. Sources: the topology's anomalies and the configuration
// rules (PCIe, NVLink, NICs, ACS, IOMMU, settings, versions, MTUs), what
// NCCL's own log says it used (records/nccl_usage.hpp: sockets while RDMA
// NICs are up, GPUDirect RDMA off, fewer NICs than present, shared memory or
// the network where GPUs could reach each other directly, no NVLS on an
// NVSwitch system, a NIC far from its GPU while a near one exists) and the
// pair matrix's slow nodes and links. Pure logic over records: every rule
// is a unit test on fixtures, firing on its case and silent on the healthy
// one.
//
// Each cause says which layer of the fabric it weighs on, so a reference
// verdict below its figure carries the causes that bear on that figure.

#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/name_table.hpp"
#include "fabricbench/records/nccl_usage.hpp"
#include "fabricbench/records/topology.hpp"
#include "fabricbench/records/verdict.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// Where a figure is measured, and what a cause slows.
enum class FabricLayer { within_node, host_device, across_nodes };
inline constexpr NameTable<FabricLayer, 3> fabric_layer_names{{
    {FabricLayer::within_node, "within a node"},
    {FabricLayer::host_device, "host <-> device"},
    {FabricLayer::across_nodes, "across nodes"},
}};
constexpr std::string_view name(FabricLayer layer) { return name_in(fabric_layer_names, layer); }

struct Cause {
  std::string kind;  // "socket_fallback", "slow_node", an anomaly's kind, ...
  Level level = Level::warn;
  VerdictKind verdict_kind = VerdictKind::anomaly;
  std::vector<FabricLayer> layers;
  std::vector<std::string> hosts;
  std::string subject;   // "node2", "node2 GPU 3 (0000:5d:00.0)"
  std::string observed;  // what was seen
  std::string cause;     // why, from the evidence
  std::string fix;       // one concrete action
  std::vector<Evidence> evidence;
};

// The anomalies of the topology and the configuration rules, as causes:
// anomalies of one kind whose detail is the same become one cause naming
// every host.
std::vector<Cause> anomaly_causes(const std::vector<Anomaly>& anomalies);

// What NCCL's log says it used, judged against the topology (nullptr when
// the run has none): the rules listed above. `devices` is the run's
// "rank R: host GPU index name bus-id ..." lines (run.devices), which tie
// a rank to its GPU's PCI address.
std::vector<Cause> nccl_causes(const NcclUsage& usage, const ClusterTopology* topology,
                               const std::vector<std::string>& devices);

// The pace rounds' slow ranks and nodes (WARN, with what to check) and their
// unconfirmed suspects (INFO "not confirmed").
std::vector<Cause> straggler_causes(const StragglersResult& stragglers);

// The pair matrix's slow nodes and links, with their pair figures, and what
// the node's own probe shows that would explain them.
std::vector<Cause> finding_causes(const std::vector<Finding>& findings, const RunResult& result);

// Every cause of a run, worst first (FAIL, WARN, INFO; then the order found).
std::vector<Cause> find_causes(const RunResult& result);

// A cause as the verdict that reports it.
Verdict verdict_of(const Cause& cause);

// Whether `cause` weighs on `layer`.
bool bears_on(const Cause& cause, FabricLayer layer);

}  // namespace fabricbench
