// reporter_scale: rank 0's side of a large run, fed with synthetic inputs.
//
// For R ranks (8 per node) it builds what rank 0 receives from a real run --
// every node's topology record as the JSON text it travels as, every rank's
// batch time for each pair round, ladder group lines, a full sweep -- then
// times rank 0's merge (records parsed and analysed, the pair matrix filled
// and searched for slow nodes, the ladder analysed), the verdicts, and the
// writers (JSON, CSV, table). Prints the seconds of each step and the peak
// resident memory of the process; writes the JSON to the path given, for
// `fabricbench report` to be timed on next (bench/time_to_verdict.sh).
//
//   reporter_scale RANKS OUT.json
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/analysis/topology_analysis.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/core/sizes.hpp"
#include "fabricbench/engine/pairs.hpp"
#include "fabricbench/engine/scaling.hpp"
#include "fabricbench/engine/sweep.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/results/result.hpp"
#include "fabricbench/results/result_json.hpp"

namespace fb = fabricbench;

namespace {

constexpr int ranks_per_node = 8;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// One node as its probe would report it: 8 GPUs, 8 NICs and their matrices.
fb::NodeTopology synthetic_node(int node) {
  fb::NodeTopology n;
  n.host.hostname = fmt::format("node{:04d}", node);
  n.host.cpu_model = "Synthetic CPU";
  n.host.cores = 112;
  n.host.memory_bytes = std::uint64_t{2} << 40;
  n.host.gpu_driver = "580.00";
  n.gpu_status = "ok";
  for (int g = 0; g < ranks_per_node; ++g) {
    fb::GpuInfo gpu;
    gpu.index = g;
    gpu.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + g * 0x10);
    gpu.name = "Synthetic GPU";
    gpu.memory_bytes = std::uint64_t{80} << 30;
    gpu.numa_node = g / 4;
    gpu.pcie = {5, 5, 16, 16};
    for (int l = 0; l < 18; ++l) gpu.nvlinks.push_back({l, true, 4, std::nullopt, fb::LinkPeer::nvswitch});
    n.gpus.push_back(gpu);
    fb::NicInfo nic;
    nic.name = fmt::format("mlx5_{}", g);
    nic.kind = fb::NicKind::infiniband;
    nic.pci_address = fmt::format("0000:{:02x}:00.0", 0x19 + g * 0x10);
    nic.bus = fb::NicBus::pci;
    nic.ports.push_back({1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"});
    n.nics.push_back(nic);
  }
  n.gpu_matrix.assign(ranks_per_node, std::vector<std::string>(ranks_per_node, "NV18"));
  n.nic_matrix.assign(ranks_per_node, std::vector<std::string>(ranks_per_node, "PIX"));
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: reporter_scale RANKS OUT.json\n";
    return 2;
  }
  const int ranks = std::atoi(argv[1]);
  if (ranks < 2 * ranks_per_node || ranks % ranks_per_node != 0) {
    std::cerr << "reporter_scale: RANKS must be a multiple of 8, 16 or more\n";
    return 2;
  }
  const int nodes = ranks / ranks_per_node;
  std::mt19937 noise(1);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);

  // What arrives at rank 0: one JSON text per node (as gather_topology sends).
  std::vector<std::string> wire;
  for (int n = 0; n < nodes; ++n) wire.push_back(fb::node_to_json(synthetic_node(n)).dump());

  const auto t_merge = std::chrono::steady_clock::now();
  fb::RunResult result;
  result.tool.version = "0.0.0";
  result.tool.git = "synthetic";
  result.tool.transports = {"mpi", "nccl"};
  result.run.ranks = ranks;
  result.run.nodes = nodes;
  result.run.ranks_per_node.assign(static_cast<std::size_t>(nodes), ranks_per_node);
  result.run.transport = "nccl";
  result.run.start_utc = "2026-01-01T00:00:00Z";
  result.run.command_line = {"fabricbench", "run"};
  std::vector<fb::NodeTopology> records;
  for (const std::string& text : wire) records.push_back(fb::node_from_json(nlohmann::json::parse(text)));
  for (const fb::NodeTopology& n : records) result.run.hostnames.push_back(n.host.hostname);
  result.topology = fb::analyze_cluster(std::move(records));

  // The full pair matrix: N-1 rounds, every rank's time each round, node 7 slow.
  fb::PairsResult pairs;
  pairs.bytes = std::size_t{64} << 20;
  pairs.small_bytes = 8;
  pairs.ranks_per_node = ranks_per_node;
  pairs.hosts = result.run.hostnames;
  pairs.nodes = fb::PairMatrix(nodes);
  pairs.rounds_planned = fb::pair_round_count(nodes);
  pairs.intra.assign(static_cast<std::size_t>(nodes), fb::PairMatrix(ranks_per_node));
  const int slow = 7;
  for (int round = 0; round < pairs.rounds_planned; ++round) {
    pairs.rounds.push_back(round);
    std::vector<double> times(static_cast<std::size_t>(ranks));
    const std::vector<int> partner = fb::partners(nodes, round);
    for (int r = 0; r < ranks; ++r) {
      const int node = r / ranks_per_node;
      const bool touches_slow = node == slow || partner[static_cast<std::size_t>(node)] == slow;
      times[static_cast<std::size_t>(r)] = (touches_slow ? 0.05 : 0.0026) * jitter(noise);
    }
    for (int a = 0; a < nodes; ++a) {
      const int b = partner[static_cast<std::size_t>(a)];
      if (b < 0) continue;
      double gbs = 0;
      for (int l = 0; l < ranks_per_node; ++l) {
        const double t = fb::exchange_seconds(times[static_cast<std::size_t>(a * ranks_per_node + l)],
                                              times[static_cast<std::size_t>(b * ranks_per_node + l)]);
        gbs += static_cast<double>(pairs.bytes) / t / 1e9;
      }
      pairs.nodes.bw(a, b) = gbs;
      pairs.nodes.lat(a, b) = 5.0 * jitter(noise);
    }
  }
  result.findings = fb::find_outliers(pairs.nodes, pairs.hosts, fb::OutlierThresholds{});
  result.pairs = std::move(pairs);

  // The ladder: every level's group lines, analysed.
  fb::ScaleResult scaling;
  scaling.bytes = std::size_t{256} << 20;
  scaling.ranks_per_node = ranks_per_node;
  scaling.nic_gbit_per_node = 3200;
  for (const fb::LevelPlan& plan : fb::plan_ladder(nodes)) {
    for (const fb::Op op : {fb::Op::allreduce, fb::Op::allgather}) {
      fb::LevelResult level;
      level.kind = plan.kind;
      level.op = op;
      level.bytes = scaling.bytes;
      level.nodes_per_group = plan.nodes_per_group;
      level.ranks_per_group = plan.kind == fb::LevelKind::rail ? nodes : plan.nodes_per_group * ranks_per_node;
      const int groups = plan.kind == fb::LevelKind::rail ? ranks_per_node : nodes / plan.nodes_per_group;
      for (int g = 0; g < groups; ++g) {
        fb::GroupResult group;
        group.group = g;
        group.ranks = level.ranks_per_group;
        group.busbw_gbs = 350 * jitter(noise);
        group.time_us = 1000 * jitter(noise);
        for (int n = 0; n < nodes; ++n)
          if (plan.kind == fb::LevelKind::rail || plan.group_of_node[static_cast<std::size_t>(n)] == g) {
            group.nodes.push_back(n);
            group.hosts.push_back(result.run.hostnames[static_cast<std::size_t>(n)]);
          }
        level.groups.push_back(std::move(group));
      }
      scaling.levels.push_back(std::move(level));
    }
  }
  fb::analyze_ladder(scaling.levels, scaling.nic_gbit_per_node, ranks_per_node);
  result.scaling = std::move(scaling);

  // A full default sweep: 3 ops, 8 B..64 MiB x2, both placements.
  for (const fb::Op op : {fb::Op::allreduce, fb::Op::allgather, fb::Op::sendrecv}) {
    for (std::size_t bytes = 8; bytes <= (std::size_t{64} << 20); bytes *= 2) {
      const fb::Counts counts = fb::counts_for(op, fb::DType::float32, bytes, ranks);
      for (const fb::Placement placement : {fb::Placement::out_of_place, fb::Placement::in_place}) {
        fb::SweepRecord r;
        r.op = op;
        r.placement = placement;
        r.bytes = counts.bytes;
        r.count = counts.param;
        r.ranks = ranks;
        if (op != fb::Op::sendrecv) r.redop = op == fb::Op::allreduce ? std::optional(fb::RedOp::sum) : std::nullopt;
        if (counts.param == 0) {
          r.skipped = "too small for the rank count";
        } else {
          std::vector<double> samples(50);
          for (double& s : samples) s = (20e-6 + static_cast<double>(counts.bytes) / 300e9) * jitter(noise);
          r.timing = fb::make_timing(op, ranks, counts.bytes, samples[0], samples[1], samples[2], samples, 50);
          r.timing->wrong = 0;
        }
        result.records.push_back(std::move(r));
      }
    }
  }
  result.complete = true;
  result.checked = true;
  result.duration_s = 60;
  const double merge_s = seconds_since(t_merge);

  const auto t_analysis = std::chrono::steady_clock::now();
  const std::vector<fb::Verdict> verdicts = fb::health_verdicts(result);
  const std::vector<fb::Verdict> refs = fb::reference_verdicts(result, fb::builtin_expectations());
  const double analysis_s = seconds_since(t_analysis);

  // Each writer on its own clock: JSON, CSV, table (sweep), ladder, pairs.
  double json_s = 0;
  double csv_s = 0;
  double table_s = 0;
  double ladder_s = 0;
  double pairs_s = 0;
  {
    auto t = std::chrono::steady_clock::now();
    std::ofstream json(argv[2]);
    fb::write_json(result, json);
    json.close();
    json_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    std::ostringstream csv;
    fb::write_csv(result, csv);
    csv_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    std::ostringstream table_text;
    fb::TablePrinter table(table_text);
    for (std::size_t i = 0; i + 1 < result.records.size(); i += 2)
      table.point(std::span<const fb::SweepRecord>(&result.records[i], 2));
    table.summary(result);
    table_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    fb::print_ladder(*result.scaling, table_text);
    ladder_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    fb::print_pairs(*result.pairs, result.findings, table_text);
    pairs_s = seconds_since(t);
  }
  const double write_s = json_s + csv_s + table_s + ladder_s + pairs_s;

  std::printf(
      "ranks %d nodes %d: merge %.3f s, analysis %.3f s, writers %.3f s (json %.3f, csv %.3f, table %.3f, "
      "ladder %.3f, pairs %.3f); total %.3f s; peak %.1f MB; findings %zu, verdicts %zu\n",
      ranks, nodes, merge_s, analysis_s, write_s, json_s, csv_s, table_s, ladder_s, pairs_s,
      merge_s + analysis_s + write_s, static_cast<double>(peak_rss_kib()) / 1024.0, result.findings.size(),
      verdicts.size() + refs.size());
  return 0;
}
