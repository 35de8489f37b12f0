// The decision-first lines and the scaling judgement: hand-built runs, each
// line checked for what a renter reads in it.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fabricbench/analysis/headline.hpp"
#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/analysis/report.hpp"
#include "fabricbench/core/text.hpp"

namespace fabricbench {
namespace {

LevelResult level(Op op, int nodes, double busbw) {
  LevelResult l;
  l.op = op;
  l.nodes_per_group = nodes;
  l.bytes = 1 << 20;
  l.busbw_median_gbs = busbw;
  l.busbw_min_gbs = busbw;
  return l;
}

ScaleResult ladder(std::initializer_list<std::pair<int, double>> busbw) {
  ScaleResult s;
  for (const auto& [nodes, gbs] : busbw) s.levels.push_back(level(Op::allreduce, nodes, gbs));
  return s;
}

RunResult run_of(int nodes, int ranks) {
  RunResult r;
  r.complete = true;
  r.checked = true;
  r.run.nodes = nodes;
  r.run.ranks = ranks;
  r.duration_s = 60;
  for (int n = 0; n < nodes; ++n) r.run.hostnames.push_back("node" + std::to_string(n));
  return r;
}

SweepRecord record(Op op, std::size_t bytes, double busbw) {
  SweepRecord s;
  s.op = op;
  s.bytes = bytes;
  s.timing = Timing{};
  s.timing->busbw_gbs = busbw;
  return s;
}

std::string line(const std::vector<HeadlineLine>& lines, const std::string& topic) {
  for (const HeadlineLine& l : lines)
    if (l.topic == topic) return l.text;
  ADD_FAILURE() << "no " << topic << " line";
  return {};
}

ReportRun judged(RunResult r, const ReportConfig& config = {}) {
  ReportRun run;
  run.path = "r.json";
  RunVerdicts v = judge_run(r, config, expectations_with(""));
  run.verdicts = std::move(v.verdicts);
  run.level = v.level;
  run.cost = cost_of(r, PriceInfo{config.price_per_gpu_hour, config.price_per_node_hour, config.currency});
  run.result = std::move(r);
  return run;
}

TEST(Scaling, FourNodesBelowTheThresholdOfTwoNodesWarnWithCauseAndFix) {
  const std::vector<Verdict> v = scaling_verdicts(ladder({{1, 100}, {2, 40}, {4, 20}}), 0.8, {});
  ASSERT_EQ(v.size(), 1U);
  EXPECT_EQ(v[0].level, Level::warn);
  EXPECT_EQ(v[0].subject, "scaling allreduce");
  EXPECT_EQ(v[0].cause_kind, "scaling_loss");
  EXPECT_NE(v[0].reason.find("50% of 2 nodes'"), std::string::npos) << v[0].reason;
  EXPECT_NE(v[0].reason.find("1 -> 4 nodes: 20% of one node's"), std::string::npos) << v[0].reason;
  EXPECT_NE(v[0].fix.find("--bisection-halvings"), std::string::npos) << v[0].fix;
  // Named slow nodes become the cause and the fix.
  const std::vector<Verdict> named = scaling_verdicts(ladder({{1, 100}, {2, 40}, {4, 20}}), 0.8, {"node2"});
  EXPECT_NE(named[0].cause.find("node2"), std::string::npos);
  EXPECT_NE(named[0].fix.find("leave node2 out"), std::string::npos);
  EXPECT_EQ(named[0].hosts, std::vector<std::string>{"node2"});
}

TEST(Scaling, AFlatTrendFromTwoNodesIsOkHoweverFarBelowOneNode) {
  // One node moves through NVLink or shared memory; the network is slower:
  // that step alone is never a WARN.
  const std::vector<Verdict> v = scaling_verdicts(ladder({{1, 400}, {2, 4}, {3, 3.9}, {4, 3.8}}), 0.8, {});
  ASSERT_EQ(v.size(), 1U);
  EXPECT_EQ(v[0].level, Level::ok) << v[0].reason;
  EXPECT_NE(v[0].reason.find("95% of 2 nodes'"), std::string::npos) << v[0].reason;
  // The threshold is the user's: at 99% the same ladder warns.
  EXPECT_EQ(scaling_verdicts(ladder({{1, 400}, {2, 4}, {4, 3.8}}), 0.99, {})[0].level, Level::warn);
}

TEST(Scaling, TwoNodesSayWhatJudgingNeeds) {
  const std::vector<Verdict> v = scaling_verdicts(ladder({{1, 100}, {2, 1}}), 0.8, {});
  ASSERT_EQ(v.size(), 1U);
  EXPECT_EQ(v[0].level, Level::info);
  EXPECT_NE(v[0].reason.find("needs a ladder to 3 or more nodes"), std::string::npos) << v[0].reason;
  EXPECT_TRUE(scaling_verdicts(ladder({{1, 100}}), 0.8, {}).empty());
}

TEST(Headline, OneRankWarnsAndSaysWhatIsMissing) {
  RunResult r = run_of(1, 1);
  r.records.push_back(record(Op::allreduce, 1 << 20, 2.5));
  const ReportRun run = judged(r);
  EXPECT_EQ(run.level, Level::warn);
  const auto one = std::find_if(run.verdicts.begin(), run.verdicts.end(),
                                [](const Verdict& v) { return v.cause_kind == "one_rank"; });
  ASSERT_NE(one, run.verdicts.end());
  EXPECT_NE(one->fix.find("mpirun -np"), std::string::npos);
  const auto lines = headline(run);
  EXPECT_NE(line(lines, "not measured").find("1 rank"), std::string::npos);
  EXPECT_EQ(line(lines, "scaling"), "one node: nothing to scale (run on 2 or more nodes for the ladder)");
}

TEST(Headline, PeakPerOpScalingBadNodesCostAndCuts) {
  RunResult r = run_of(4, 8);
  r.records.push_back(record(Op::allreduce, 1 << 20, 2.5));
  r.records.push_back(record(Op::allreduce, 64 << 20, 12.25));
  r.records.push_back(record(Op::allgather, 1 << 20, 150));
  r.scaling = ladder({{1, 100}, {2, 40}, {4, 20}});
  Finding f;
  f.kind = FindingKind::slow_node;
  f.hosts = {"node1"};
  f.value_gbs = 1;
  f.reference_gbs = 10;
  f.message = "slow node node1";
  r.findings = {f};
  r.budget = BudgetRecord{120, std::nullopt, {}, {Cut{Phase::sweep, "allreduce float 1 GiB out_of_place", "skipped"}}};
  ReportConfig config;
  config.price_per_gpu_hour = 3;
  config.currency = "EUR";
  const ReportRun run = judged(r, config);
  const auto lines = headline(run);
  ASSERT_EQ(lines.size(), 5U);
  EXPECT_EQ(lines[0].topic, "bandwidth");
  EXPECT_NE(line(lines, "bandwidth").find("allreduce peak 12.2 GB/s at 64 MiB; allgather peak 150 GB/s at 1 MiB"),
            std::string::npos)
      << line(lines, "bandwidth");
  EXPECT_NE(line(lines, "scaling").find("allreduce at 4 nodes keeps 50% of 2 nodes' busbw: WARN (20% of one node's"),
            std::string::npos)
      << line(lines, "scaling");
  EXPECT_EQ(line(lines, "bad nodes"), "node1 (slow node)");
  EXPECT_EQ(line(lines, "cost"), "this run EUR 0.4");
  EXPECT_NE(line(lines, "not measured")
                .find("--budget 120 s cut 1 step (1 skipped, 0 with fewer iterations): "
                      "sweep allreduce float 1 GiB out_of_place (skipped)"),
            std::string::npos)
      << line(lines, "not measured");
  // A budgeted run with a pair matrix on 4 nodes went without the bisection.
  EXPECT_EQ(line(lines, "not measured").find("bisection"), std::string::npos);  // no pair matrix here
  RunResult with_pairs = r;
  with_pairs.pairs = PairsResult{};
  EXPECT_NE(line(headline(judged(with_pairs, config)), "not measured")
                .find("the bisection test, which runs only without a budget"),
            std::string::npos);
  // The scaling WARN names the slow node as its cause.
  const auto scaling = std::find_if(run.verdicts.begin(), run.verdicts.end(),
                                    [](const Verdict& v) { return v.subject == "scaling allreduce"; });
  ASSERT_NE(scaling, run.verdicts.end());
  EXPECT_NE(scaling->cause.find("node1"), std::string::npos) << scaling->cause;
}

TEST(Headline, AHealthyMatrixAndNoPriceSayTheirAnswer) {
  RunResult r = run_of(2, 2);
  r.records.push_back(record(Op::allreduce, 1 << 20, 2.5));
  PairsResult p;
  p.hosts = {"node0", "node1"};
  r.pairs = p;
  ReportRun two = judged(r);
  const auto lines = headline(two);
  // Two nodes have one link: nothing is named, and the line says why.
  EXPECT_EQ(line(lines, "bad nodes"), two_nodes_text);
  EXPECT_TRUE(std::any_of(two.verdicts.begin(), two.verdicts.end(), [](const Verdict& v) {
    return v.level == Level::info && v.subject == "node pairs" && v.reason == two_nodes_text;
  }));
  EXPECT_EQ(line(lines, "cost"), "no price given (--price-per-gpu-hour or --price-per-node-hour, --currency)");
  EXPECT_EQ(line(lines, "not measured"), "nothing: every planned point was measured");
  EXPECT_NE(line(lines, "scaling").find("not measured: the scaling ladder did not run"), std::string::npos);
  // Three nodes, one suspect the second pass cleared: none named, the suspect counted.
  RunResult three = run_of(3, 3);
  p.hosts = {"node0", "node1", "node2"};
  p.nodes = PairMatrix(3);
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}})
    p.nodes.bw(a, b) = p.nodes.bw(b, a) = 1.0;
  three.pairs = p;
  Finding cleared;
  cleared.nodes = {1};
  cleared.hosts = {"node1"};
  cleared.confirmed = false;
  cleared.message = "not confirmed: slow node node1";
  three.unconfirmed = {cleared};
  ReportRun judged_three = judged(three);
  EXPECT_EQ(
      line(headline(judged_three), "bad nodes"),
      "none: every node and link of the 3 node pairs measured stands with the others (1 suspect of the first pass not "
      "confirmed by the second)");
  const auto info = std::find_if(judged_three.verdicts.begin(), judged_three.verdicts.end(),
                                 [](const Verdict& v) { return v.cause_kind == "not_confirmed"; });
  ASSERT_NE(info, judged_three.verdicts.end());
  EXPECT_EQ(info->level, Level::info);
  EXPECT_EQ(info->reason, "not confirmed: slow node node1");
}

// A pair the budget left without a bandwidth figure is not cleared: the
// line names it and what measures it; with no pair measured, nothing is
// judged.
TEST(Headline, APairWithNoBandwidthFigureIsNotClearedByTheBadNodesLine) {
  RunResult r = run_of(4, 4);
  r.records.push_back(record(Op::allreduce, 1 << 20, 2.5));
  PairsResult p;
  p.hosts = {"node0", "node1", "node2", "node3"};
  p.nodes = PairMatrix(4);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b && a != 2 && b != 2) p.nodes.bw(a, b) = 1.0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) p.nodes.lat(a, b) = 7.0;  // latency alone clears nothing
  r.pairs = p;
  EXPECT_EQ(line(headline(judged(r)), "bad nodes"),
            "none among the 3 node pairs measured; 3 of 6 have no bandwidth figure (node0-node2, node1-node2, "
            "node2-node3), so a slow node or link there is not ruled out: a longer --budget (or none) measures them");
  p.nodes = PairMatrix(4);
  r.pairs = p;
  EXPECT_EQ(line(headline(judged(r)), "bad nodes"),
            "not judged: no node pair's bandwidth was measured (a longer --budget, or none, measures them)");
}

TEST(Money, PlainNumbersWithTheCurrency) {
  EXPECT_EQ(money_text(1250.4, "USD"), "USD 1250");
  EXPECT_EQ(money_text(0.41666, "EUR"), "EUR 0.4167");
  EXPECT_EQ(money_text(0.0000123), "0.000012");
  EXPECT_EQ(money_text(12730), "12730");
  EXPECT_EQ(gbs_text(12.25), "12.2 GB/s");
  EXPECT_EQ(gbs_text(0.5123), "0.512 GB/s");
}

}  // namespace
}  // namespace fabricbench
