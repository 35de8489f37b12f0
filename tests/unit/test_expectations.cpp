// Reference curves: matching by hardware, node count, NCCL's algorithm and
// message size; the verdict names the entry it used; the NIC wire rate of a
// multi-node all-reduce against hand-computed values.

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/analysis/wire_rate.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/engine/sweep.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/results/reader.hpp"

namespace fabricbench {
namespace {

std::string golden_path(const std::string& name) { return std::string(FABRICBENCH_GOLDEN_DIR) + "/" + name; }

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t GiB = std::size_t{1} << 30;

// The golden two-node 8×H100 run (8 NDR 400 NICs per node), made to hold one
// all-reduce point of `bytes` at `busbw` on `nodes` nodes of 8 GPUs, with
// NCCL's `algorithm` (nullopt: not recorded).
RunResult run_with(int nodes, std::size_t bytes, double busbw, std::optional<std::string> algorithm) {
  RunResult r = read_result_file(golden_path("run_a.json"));
  r.run.nodes = nodes;
  r.run.ranks = 8 * nodes;
  SweepRecord rec;
  rec.op = Op::allreduce;
  rec.bytes = bytes;
  rec.ranks = r.run.ranks;
  rec.timing = Timing{};
  rec.timing->busbw_gbs = busbw;
  if (algorithm) rec.choice = AlgorithmChoice{algorithm, "SIMPLE", ""};
  r.records = with_nic_wire(std::vector<SweepRecord>{rec}, nodes, 8);
  return r;
}

Verdict allreduce_verdict(const RunResult& r) {
  for (const Verdict& v : reference_verdicts(r, builtin_expectations()))
    if (v.subject == "allreduce.busbw") return v;
  ADD_FAILURE() << "no all-reduce verdict";
  return {};
}

TEST(ReferenceCurves, OneNodeIsJudgedAgainstTheFigureOfNcclsAlgorithm) {
  const Verdict nvls = allreduce_verdict(run_with(1, 1 * GiB, 460, "NVLS"));
  EXPECT_EQ(nvls.level, Level::ok);
  EXPECT_EQ(nvls.reason.rfind("all-reduce busbw 460 GB/s (NCCL NVLS) is 96% of the ≈480 GB/s expected for 8×H100 "
                              "NVSwitch, NVLS (reference h100-sxm-8gpu-allreduce-nvls, from 256 MiB)",
                              0),
            0U)
      << nvls.reason;
  // 360 GB/s is fine for the ring, not for NVLS.
  EXPECT_EQ(allreduce_verdict(run_with(1, 1 * GiB, 360, "RING")).level, Level::ok);
  const Verdict slow = allreduce_verdict(run_with(1, 1 * GiB, 360, "NVLS"));
  EXPECT_EQ(slow.level, Level::warn);
  EXPECT_NE(slow.reason.find("75% of the ≈480 GB/s"), std::string::npos) << slow.reason;
  EXPECT_NE(slow.reason.find("; ≈365-370 GB/s 8×H100 NVSwitch, ring"), std::string::npos) << slow.reason;
  EXPECT_NE(slow.source.find("NVLink SHARP"), std::string::npos);
}

TEST(ReferenceCurves, AnUnknownAlgorithmIsJudgedOnTheMarkedReference) {
  const Verdict v = allreduce_verdict(run_with(1, 512 * MiB, 212, std::nullopt));
  EXPECT_EQ(v.level, Level::fail);
  EXPECT_EQ(v.reason,
            "all-reduce busbw 212 GB/s is 58% of the ≈365-370 GB/s expected for 8×H100 NVSwitch, ring (reference "
            "h100-sxm-8gpu-allreduce-ring, from 256 MiB); NCCL's algorithm is not recorded, so the RING figure "
            "judges; ≈480 GB/s 8×H100 NVSwitch, NVLS");
}

TEST(ReferenceCurves, NodeCountAndSizeSelectTheEntry) {
  // Two nodes over 8 NDR rails: the two-node reference, from 1 GiB.
  const Verdict small = allreduce_verdict(run_with(2, 256 * MiB, 180, "RING"));
  EXPECT_EQ(small.level, Level::info);
  EXPECT_EQ(small.reason,
            "no reference at this size: all-reduce busbw 180 GB/s (NCCL RING) at 256 MiB; the ≈368-384 GB/s "
            "reference for 2×8 H100 over 8 InfiniBand NDR rails, ring (h100-2node-8x-ndr400-allreduce-ring) needs "
            "messages of 1 GiB or more");
  const Verdict big = allreduce_verdict(run_with(2, 4 * GiB, 370, "RING"));
  EXPECT_EQ(big.level, Level::ok);
  EXPECT_EQ(big.reason,
            "all-reduce busbw 370 GB/s (NCCL RING) is 101% of the ≈368-384 GB/s expected for 2×8 H100 over 8 "
            "InfiniBand NDR rails, ring (reference h100-2node-8x-ndr400-allreduce-ring, from 1 GiB); each of 8 NICs "
            "per node carried 46.2 GB/s (ring: busbw/NICs)");
  // NCCL's tree on two nodes has no reference of its own here.
  const Verdict tree = allreduce_verdict(run_with(2, 4 * GiB, 420, "NVLS_TREE"));
  EXPECT_EQ(tree.level, Level::info);
  EXPECT_EQ(tree.reason.rfind("no reference for all-reduce on 2 nodes with NCCL NVLS_TREE: all-reduce busbw 420 GB/s "
                              "at 4 GiB; references for this hardware: 8×H100 NVSwitch, ring",
                              0),
            0U)
      << tree.reason;
  // Three nodes: none of the references is for three.
  EXPECT_EQ(
      allreduce_verdict(run_with(3, 4 * GiB, 300, "RING")).reason.rfind("no reference for all-reduce on 3 nodes", 0),
      0U);
}

TEST(ReferenceCurves, ThePointAtOrBelowTheMeasuredSizeApplies) {
  const Expectations e = parse_expectations(
      R"({"schema": "fabricbench.expectations/2", "warn_at": 0.9, "fail_below": 0.7, "references": [)"
      R"({"id": "c", "label": "C", "figure": "allreduce.busbw", "source": "s", "match": {"gpus_per_node": 8},)"
      R"( "points": [{"bytes": 1048576, "gbs": 10}, {"bytes": 1073741824, "gbs": 100, "gbs_high": 120}]}]})");
  const Reference& r = e.references.at(0);
  ASSERT_EQ(r.points.size(), 2U);
  EXPECT_EQ(point_at(r, 1 * MiB - 1), nullptr);
  EXPECT_EQ(point_at(r, 1 * MiB)->gbs, 10);
  EXPECT_EQ(point_at(r, 512 * MiB)->gbs, 10);
  EXPECT_EQ(point_at(r, 1 * GiB)->gbs, 100);
  EXPECT_EQ(point_at(r, 16 * GiB)->gbs_high, 120);
  // Judged at 512 MiB on the first point, at 2 GiB on the second.
  const auto judged = [&e](std::size_t bytes, double busbw) {
    for (const Verdict& v : reference_verdicts(run_with(1, bytes, busbw, "RING"), e))
      if (v.subject == "allreduce.busbw") return v;
    return Verdict{};
  };
  EXPECT_EQ(judged(512 * MiB, 9.5).level, Level::ok);
  EXPECT_EQ(judged(2 * GiB, 9.5).level, Level::fail);
  EXPECT_NE(judged(2 * GiB, 95).reason.find("(reference c, from 1 GiB)"), std::string::npos);
}

TEST(ReferenceCurves, VersionOneFilesStillRead) {
  const Expectations e = parse_expectations(
      R"({"schema": "fabricbench.expectations/1", "warn_at": 0.9, "fail_below": 0.7, "references": [)"
      R"({"id": "old", "label": "Old", "figure": "allreduce.busbw", "source": "s", "match": {"gpus_per_node": 8},)"
      R"( "min_bytes": 268435456, "expected_gbs": 370, "expected_high_gbs": 380, "approximate": true}]})");
  const Reference& r = e.references.at(0);
  ASSERT_EQ(r.points.size(), 1U);
  EXPECT_EQ(r.points[0].bytes, 256 * MiB);
  EXPECT_EQ(r.points[0].gbs, 370);
  EXPECT_EQ(r.points[0].gbs_high, 380);
  EXPECT_FALSE(r.nodes);
  EXPECT_FALSE(r.algorithm);
  // No node count: one node, any algorithm.
  const AllreduceReferences one = allreduce_references(e, detect_hardware(*run_with(1, 0, 0, {}).topology), 1, "NVLS");
  EXPECT_EQ(one.judged, &r);
  EXPECT_EQ(allreduce_references(e, detect_hardware(*run_with(1, 0, 0, {}).topology), 2, "NVLS").judged, nullptr);
}

TEST(ReferenceCurves, BadCurvesAreRefused) {
  const auto with = [](const std::string& points) {
    return R"({"schema": "fabricbench.expectations/2", "warn_at": 0.9, "fail_below": 0.7, "references": [)"
           R"({"id": "c", "label": "C", "figure": "allreduce.busbw", "source": "s", "match": {}, "points": )" +
           points + "}]}";
  };
  EXPECT_NO_THROW((void)parse_expectations(with(R"([{"bytes": 0, "gbs": 1}])")));
  EXPECT_THROW((void)parse_expectations(with("[]")), UsageError);
  EXPECT_THROW((void)parse_expectations(with(R"([{"bytes": 8, "gbs": 1}, {"bytes": 8, "gbs": 2}])")), UsageError);
  EXPECT_THROW((void)parse_expectations(with(R"([{"bytes": 8, "gbs": 2, "gbs_high": 1}])")), UsageError);
  EXPECT_THROW((void)parse_expectations(with(R"([{"bytes": 8, "gbs": 0}])")), UsageError);
  EXPECT_THROW((void)parse_expectations(with(R"({"bytes": 8})")), UsageError);
  EXPECT_THROW((void)parse_expectations(R"({"schema": "fabricbench.expectations/3"})"), UsageError);
}

TEST(ReferenceCurves, EveryBuiltInEntryNamesASource) {
  const Expectations& e = builtin_expectations();
  EXPECT_GE(e.references.size(), 15U);
  for (const Reference& r : e.references) {
    EXPECT_FALSE(r.source.empty()) << r.id;
    EXPECT_FALSE(r.points.empty()) << r.id;
  }
}

// Hand-computed: n ranks, k nodes, m NICs per node.
TEST(NicWireRate, MatchesHandComputedValues) {
  // Ring, 2 nodes of 8, 8 NICs: busbw / m = 368 / 8.
  auto w = nic_wire_rate(368, 16, 2, 8, "RING");
  ASSERT_TRUE(w && w->gbs);
  EXPECT_DOUBLE_EQ(*w->gbs, 46.0);
  EXPECT_EQ(w->basis, "ring");
  EXPECT_EQ(w->nics_per_node, 8);
  // Tree on 2 nodes of 8 (one NIC per rank): busbw x (k-1)/(n-1) = 487 / 15.
  w = nic_wire_rate(487, 16, 2, 8, "NVLS_TREE");
  EXPECT_EQ(w->basis, "lower_bound");
  EXPECT_NEAR(*w->gbs, 32.4667, 1e-4);
  // The same over 32 EFA interfaces: 487 x 1/2 x 16/15 / 32.
  EXPECT_NEAR(*nic_wire_rate(487, 16, 2, 32, std::nullopt)->gbs, 8.11667, 1e-5);
  // 4 nodes of 8: (k-1)/(n-1) = 3/31.
  EXPECT_NEAR(*nic_wire_rate(300, 32, 4, 8, "TREE")->gbs, 300.0 * 3 / 31, 1e-9);
  // In-network reduction: busbw x n/(2(n-1)) / m = 400 x 16/30 / 8.
  w = nic_wire_rate(400, 16, 2, 8, "COLLNET_DIRECT");
  EXPECT_EQ(w->basis, "in_network");
  EXPECT_NEAR(*w->gbs, 26.6667, 1e-4);
  // NVLS across nodes: one NVLink domain, no NIC.
  w = nic_wire_rate(800, 72, 18, 4, "NVLS");
  EXPECT_EQ(w->basis, "nvlink");
  EXPECT_FALSE(w->gbs);
  // Not applicable: one node, uneven layouts, no NIC.
  EXPECT_FALSE(nic_wire_rate(480, 8, 1, 8, "RING"));
  EXPECT_FALSE(nic_wire_rate(100, 10, 4, 8, "RING"));
  EXPECT_FALSE(nic_wire_rate(100, 16, 2, 0, "RING"));
}

TEST(NicWireRate, FilledForMultiNodeAllReduceOnly) {
  SweepRecord ar;
  ar.op = Op::allreduce;
  ar.ranks = 16;
  ar.timing = Timing{};
  ar.timing->busbw_gbs = 80;
  ar.choice = AlgorithmChoice{"RING", "LL128", ""};
  SweepRecord ag = ar;
  ag.op = Op::allgather;
  SweepRecord skipped = ar;
  skipped.timing.reset();
  const std::vector<SweepRecord> out = with_nic_wire(std::vector<SweepRecord>{ar, ag, skipped}, 2, 8);
  ASSERT_TRUE(out[0].nic_wire);
  EXPECT_DOUBLE_EQ(*out[0].nic_wire->gbs, 10.0);
  EXPECT_FALSE(out[1].nic_wire);
  EXPECT_FALSE(out[2].nic_wire);
  EXPECT_FALSE(with_nic_wire(std::vector<SweepRecord>{ar}, 1, 8)[0].nic_wire);
}

// The choice and the wire rate reach the table, the report text and the HTML.
TEST(AlgorithmInOutput, TableReportAndHtmlShowTheChoiceAndTheWireRate) {
  RunResult r = run_with(2, 4 * GiB, 370, "RING");
  SweepRecord sr = r.records.front();
  sr.op = Op::sendrecv;
  sr.nic_wire.reset();
  sr.choice = point_to_point_choice(Op::sendrecv);
  r.records.push_back(sr);
  std::ostringstream table;
  TablePrinter printer(table);
  printer.context(RunConfig{}, r.run);  // nccl, 2 nodes
  printer.point(std::span(r.records).subspan(0, 1));
  EXPECT_NE(table.str().find("algo/proto  NIC wire"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("RING/SIMPLE     46.25"), std::string::npos) << table.str();

  std::vector<ReportRun> runs{{"a.json", r, {}, Level::ok, {}}};
  const Report report = build_report(std::move(runs), {}, builtin_expectations());
  std::ostringstream text;
  print_report(report, text);
  EXPECT_NE(text.str().find("RING/SIMPLE     46.25"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("(reference h100-2node-8x-ndr400-allreduce-ring, from 1 GiB)"), std::string::npos);
  std::ostringstream html;
  write_report_html(report, html);
  EXPECT_NE(html.str().find("<h2>What NCCL chose</h2>"), std::string::npos);
  EXPECT_NE(html.str().find("<td class=\"l\">RING</td><td class=\"l\">SIMPLE</td><td>46.25 (ring, 8 NICs per node)"),
            std::string::npos)
      << html.str();
  EXPECT_NE(html.str().find("Other points: sendrecv is point-to-point in NCCL"), std::string::npos);

  // The MPI transport: no column, one line saying why.
  r.run.transport = "mpi";
  r.run.nodes = 1;
  std::ostringstream mpi;
  TablePrinter mpi_printer(mpi);
  mpi_printer.context(RunConfig{}, r.run);
  mpi_printer.point(std::span(r.records).subspan(0, 1));
  EXPECT_NE(mpi.str().find("# Algorithm: the MPI library's own choice, not visible to fabricbench"), std::string::npos);
  EXPECT_EQ(mpi.str().find("algo/proto"), std::string::npos);
  EXPECT_EQ(mpi.str().find("NIC wire"), std::string::npos);
}

}  // namespace
}  // namespace fabricbench
