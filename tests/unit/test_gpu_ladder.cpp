// The GPU-count ladder inside a node: which GPUs form the closest and the
// spread set on recorded topologies (sysfs fixture trees and recorded link
// matrices), the projection and the job-cost arithmetic against hand-computed
// values, the record's JSON form and its table.

#include <sstream>

#include <gtest/gtest.h>

#include "../topology/fixture_tree.hpp"
#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/analysis/report.hpp"
#include "fabricbench/app/cli.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/results/result_json.hpp"
#include "fabricbench/results/schema_validate.hpp"
#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/topology/sysfs_probe.hpp"
#include "fabricbench/topology/topology_probe.hpp"
#include "scratch_dir.hpp"

namespace fabricbench {
namespace {

class GpuLadderFixture : public ScratchDirTest {
 protected:
  // The GPU link matrix the probe reads from a fixture tree's sysfs.
  LinkMatrix matrix_of(const std::string& fixture, const std::string& host = "node-a") {
    const std::filesystem::path root = dir_ / host;
    testing::write_fixture(fixture, root, host);
    GpuReport report;
    report.unavailable = "recorded: no device";
    RecordedGpuSource source(report, {});
    return probe_node(probe_roots((root / "sys").string(), (root / "proc").string()), source, false).gpu_matrix;
  }
};

std::vector<std::string> rows_of(const GpuLadderPlan& plan, std::size_t node = 0) {
  std::vector<std::string> out;
  for (const auto& row : plan.rows) {
    const GpuSetPlan& s = row.at(node);
    std::string members;
    for (const int g : s.members) members += (members.empty() ? "" : ",") + std::to_string(g);
    out.push_back(gpu_level_label(s.gpus, s.choice) + " {" + members + "} " + s.path);
  }
  return out;
}

LinkMatrix uniform(int n, const std::string& cell) {
  LinkMatrix m(static_cast<std::size_t>(n), std::vector<std::string>(static_cast<std::size_t>(n), cell));
  for (int i = 0; i < n; ++i) m[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)] = "X";
  return m;
}

TEST(GpuLadder, PathDistanceOrdersNvlinkBeforeEveryPciePath) {
  EXPECT_LT(*path_distance("NV18"), *path_distance("NV4"));
  EXPECT_LT(*path_distance("NV4"), *path_distance("PIX"));
  EXPECT_LT(*path_distance("PIX"), *path_distance("PXB"));
  EXPECT_LT(*path_distance("PXB"), *path_distance("PHB"));
  EXPECT_LT(*path_distance("PHB"), *path_distance("NODE"));
  EXPECT_LT(*path_distance("NODE"), *path_distance("SYS"));
  for (const char* nothing : {"?", "X", "", "NV", "NV0", "NVx", "pix"}) EXPECT_FALSE(path_distance(nothing)) << nothing;
  EXPECT_EQ(set_path(uniform(4, "PIX"), {0, 2}), "PIX");
  EXPECT_EQ(set_path(uniform(4, "PIX"), {3}), "-");
}

TEST(GpuLadder, SizesArePowersOfTwoThenTheNodeAndPricedServerSizes) {
  EXPECT_EQ(gpu_ladder_sizes(8, {}), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(gpu_ladder_sizes(6, {}), (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(gpu_ladder_sizes(8, {3, 6, 8, 16, 1}), (std::vector<int>{2, 3, 4, 6, 8}));
  EXPECT_EQ(gpu_ladder_sizes(2, {}), (std::vector<int>{2}));
  EXPECT_TRUE(gpu_ladder_sizes(1, {}).empty());
}

// pcie4-roce: GPUs 0,1 under one PCIe switch, 2,3 under another on the
// other socket.
TEST_F(GpuLadderFixture, PcieServerClosestSharesASwitchSpreadCrossesSockets) {
  const LinkMatrix m = matrix_of("pcie4-roce");
  const GpuLadderPlan plan = plan_gpu_ladder({m}, 4, {});
  EXPECT_TRUE(plan.from_topology);
  EXPECT_EQ(plan.note, "");
  EXPECT_EQ(rows_of(plan), (std::vector<std::string>{"2 GPUs closest {0,1} PIX", "2 GPUs spread {0,2} SYS",
                                                     "4 GPUs any {0,1,2,3} SYS"}));
}

// dgx (sysfs only, no NVLink seen): four GPUs per socket, each on its own
// switch, so pairs on a socket are NODE and across sockets SYS.
TEST_F(GpuLadderFixture, EightGpuServerSpreadTakesHalfFromEachSocket) {
  const LinkMatrix m = matrix_of("dgx");
  const GpuLadderPlan plan = plan_gpu_ladder({m}, 8, {});
  EXPECT_EQ(rows_of(plan), (std::vector<std::string>{
                               "2 GPUs closest {0,1} NODE",
                               "2 GPUs spread {0,4} SYS",
                               "4 GPUs closest {0,1,2,3} NODE",
                               "4 GPUs spread {0,1,4,5} SYS",
                               "8 GPUs any {0,1,2,3,4,5,6,7} SYS",
                           }));
}

// A recorded NVSwitch server: every pair NV18, no set better than another.
TEST(GpuLadder, NvswitchServerOffersNoChoice) {
  const GpuLadderPlan plan = plan_gpu_ladder({uniform(8, "NV18")}, 8, {6});
  EXPECT_EQ(rows_of(plan),
            (std::vector<std::string>{"2 GPUs any {0,1} NV18", "4 GPUs any {0,1,2,3} NV18",
                                      "6 GPUs any {0,1,2,3,4,5} NV18", "8 GPUs any {0,1,2,3,4,5,6,7} NV18"}));
}

// Two NVLink cliques of four (NV12 inside, SYS between): the closest four
// are one clique, wherever the matrix puts it.
TEST(GpuLadder, EachNodePlansFromItsOwnMatrix) {
  LinkMatrix a = uniform(8, "SYS");
  LinkMatrix b = uniform(8, "SYS");
  const std::vector<int> clique_a{0, 1, 2, 3};
  const std::vector<int> clique_b{1, 3, 5, 7};
  for (const int i : clique_a)
    for (const int j : clique_a)
      if (i != j) a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = "NV12";
  for (const int i : clique_b)
    for (const int j : clique_b)
      if (i != j) b[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = "NV12";
  const GpuLadderPlan plan = plan_gpu_ladder({a, b}, 8, {});
  ASSERT_TRUE(plan.from_topology);
  EXPECT_EQ(rows_of(plan, 0)[2], "4 GPUs closest {0,1,2,3} NV12");
  EXPECT_EQ(rows_of(plan, 1)[2], "4 GPUs closest {1,3,5,7} NV12");
  EXPECT_EQ(rows_of(plan, 0)[1], "2 GPUs spread {0,4} SYS");
  EXPECT_EQ(rows_of(plan, 1)[1], "2 GPUs spread {0,1} SYS");
}

TEST(GpuLadder, WithoutAUsableMatrixSetsGoInRankOrderAndSaySo) {
  const GpuLadderPlan none = plan_gpu_ladder({LinkMatrix{}}, 4, {});
  EXPECT_FALSE(none.from_topology);
  EXPECT_EQ(none.note,
            "no GPU link matrix (no GPUs seen by the topology probe): sets in rank order (the first k "
            "local ranks)");
  EXPECT_EQ(rows_of(none), (std::vector<std::string>{"2 GPUs rank-order {0,1} ?", "4 GPUs rank-order {0,1,2,3} ?"}));

  EXPECT_EQ(plan_gpu_ladder({uniform(8, "PIX")}, 4, {}).note,
            "the GPU link matrix lists 8 GPUs for 4 ranks per node: sets in rank order (the first k local ranks)");
  LinkMatrix unknown = uniform(4, "PIX");
  unknown[1][2] = "?";
  EXPECT_EQ(plan_gpu_ladder({unknown}, 4, {}).note,
            "the GPU link matrix does not tell the path from GPU 1 to GPU 2: sets in rank order (the first k local "
            "ranks)");
  // One node without a matrix puts every node in rank order.
  const GpuLadderPlan mixed = plan_gpu_ladder({uniform(4, "PIX"), LinkMatrix{}}, 4, {});
  EXPECT_FALSE(mixed.from_topology);
  EXPECT_EQ(mixed.note.substr(0, 8), "node 1: ");
  EXPECT_EQ(rows_of(mixed, 0), rows_of(mixed, 1));
}

GpuLevelResult level(int gpus, GpuSetChoice choice, Op op, std::size_t bytes, std::vector<double> busbw,
                     double time_us = 0) {
  GpuLevelResult l;
  l.gpus = gpus;
  l.choice = choice;
  l.op = op;
  l.bytes = bytes;
  for (std::size_t n = 0; n < busbw.size(); ++n)
    l.sets.push_back({static_cast<int>(n), "h", {0, 1}, "PIX", time_us, busbw[n], 0});
  return l;
}

TEST(GpuLadder, EfficiencyIsAgainstTheBestPair) {
  std::vector<GpuLevelResult> levels{
      level(2, GpuSetChoice::closest, Op::allreduce, 64, {100, 80, 120}),
      level(2, GpuSetChoice::spread, Op::allreduce, 64, {50}),
      level(4, GpuSetChoice::any, Op::allreduce, 64, {75}),
      level(4, GpuSetChoice::any, Op::allgather, 64, {75}),
  };
  analyze_gpu_ladder(levels);
  EXPECT_EQ(levels[0].busbw_min_gbs, 80);
  EXPECT_EQ(levels[0].busbw_median_gbs, 100);
  EXPECT_DOUBLE_EQ(*levels[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(*levels[1].efficiency, 0.5);
  EXPECT_DOUBLE_EQ(*levels[2].efficiency, 0.75);
  EXPECT_FALSE(levels[3].efficiency);  // no all-gather pair measured
}

TEST(GpuLadder, ProjectionFromTheMeasuredTimes) {
  const ProjectionInput input{1024, 100, 0.0, false};
  const std::vector<GpuLevelResult> levels{
      level(2, GpuSetChoice::closest, Op::allreduce, 1024, {1}, 20000),  // 20 ms
      level(2, GpuSetChoice::spread, Op::allreduce, 1024, {1}, 50000),   // 50 ms
      level(2, GpuSetChoice::closest, Op::allgather, 1024, {1}, 1000),   // not the projection's op
      level(4, GpuSetChoice::any, Op::allreduce, 4096, {1}, 1000),       // another size
  };
  const std::vector<GpuProjectionPoint> points = project_gpu_levels(input, levels);
  ASSERT_EQ(points.size(), 3U);
  EXPECT_EQ(points[0].gpus, 1);
  EXPECT_EQ(points[0].comm_ms, 0);
  EXPECT_EQ(points[0].step_ms, 100);
  EXPECT_EQ(points[0].speedup, 1);
  EXPECT_EQ(points[1].choice, GpuSetChoice::closest);
  EXPECT_DOUBLE_EQ(points[1].step_ms, 120);
  EXPECT_DOUBLE_EQ(points[1].speedup, 200.0 / 120.0);
  EXPECT_DOUBLE_EQ(points[1].efficiency, 100.0 / 120.0);
  EXPECT_EQ(points[2].choice, GpuSetChoice::spread);
  EXPECT_DOUBLE_EQ(points[2].step_ms, 150);
}

// The buyer's guide example: 4 GPUs finish in 4 h, 8 GPUs in 2.5 h.
GpuLadderResult four_versus_eight() {
  GpuLadderResult g;
  g.gpus_per_node = 8;
  g.projection_input = ProjectionInput{1024, 100, 0, false};
  const auto point = [](int gpus, GpuSetChoice choice, double step_ms) {
    GpuProjectionPoint p;
    p.gpus = gpus;
    p.choice = choice;
    p.step_ms = step_ms;
    return p;
  };
  // 1000 steps: 4 h = 14400 ms per step, 2.5 h = 9000 ms per step.
  g.projection = {point(1, GpuSetChoice::any, 50000), point(4, GpuSetChoice::closest, 14400),
                  point(4, GpuSetChoice::spread, 20000), point(8, GpuSetChoice::any, 9000)};
  return g;
}

TEST(GpuLadder, CostPerJobAtAPricePerGpuHour) {
  EXPECT_DOUBLE_EQ(job_hours(1000, 14400), 4.0);
  EXPECT_DOUBLE_EQ(job_hours(1000, 9000), 2.5);
  GpuLadderResult g = four_versus_eight();
  price_gpu_ladder(g, 1000, 1.0, {});
  EXPECT_DOUBLE_EQ(*g.projection[1].job_hours, 4.0);
  EXPECT_DOUBLE_EQ(*g.projection[1].cost_per_job, 16.0);
  EXPECT_DOUBLE_EQ(*g.projection[3].job_hours, 2.5);
  EXPECT_DOUBLE_EQ(*g.projection[3].cost_per_job, 20.0);
  EXPECT_DOUBLE_EQ(*g.projection[0].cost_per_job, 50000.0 * 1000 / 3.6e6);  // 1 GPU: 13.9 h, 13.9
  EXPECT_EQ(g.cheapest_gpus, 1);  // one GPU is cheapest per job here, the slowest
  EXPECT_EQ(g.fastest_gpus, 8);
  // Without the single GPU the 4-vs-8 answer of the guide.
  g.projection.erase(g.projection.begin());
  price_gpu_ladder(g, 1000, 1.0, {});
  EXPECT_EQ(g.cheapest_gpus, 4);
  EXPECT_EQ(g.fastest_gpus, 8);
}

TEST(GpuLadder, CostPerJobPerServerSize) {
  GpuLadderResult g = four_versus_eight();
  price_gpu_ladder(g, 1000, std::nullopt, {{4, 4.0}, {8, 8.0}, {16, 15.0}, {2, 1.0}});
  ASSERT_EQ(g.servers.size(), 4U);
  EXPECT_EQ(g.servers[0].gpus, 4);
  EXPECT_DOUBLE_EQ(*g.servers[0].job_hours, 4.0);
  EXPECT_DOUBLE_EQ(*g.servers[0].cost_per_job, 16.0);
  EXPECT_DOUBLE_EQ(*g.servers[1].job_hours, 2.5);
  EXPECT_DOUBLE_EQ(*g.servers[1].cost_per_job, 20.0);
  EXPECT_FALSE(g.servers[2].cost_per_job);
  EXPECT_EQ(g.servers[2].why_not, "not measured: a node here has 8 GPUs");
  EXPECT_EQ(g.servers[3].why_not, "not measured");
  EXPECT_EQ(g.cheapest_gpus, 4);
  EXPECT_EQ(g.fastest_gpus, 8);
  EXPECT_FALSE(g.projection[1].cost_per_job);  // no price per GPU-hour
  // A tie goes to fewer GPUs.
  price_gpu_ladder(g, 1000, std::nullopt, {{4, 5.0}, {8, 8.0}});
  EXPECT_DOUBLE_EQ(*g.servers[0].cost_per_job, 20.0);
  EXPECT_EQ(g.cheapest_gpus, 4);
  // Without --steps: step times only, the fastest by step.
  price_gpu_ladder(g, std::nullopt, 1.0, {});
  EXPECT_FALSE(g.projection[1].job_hours);
  EXPECT_FALSE(g.cheapest_gpus);
  EXPECT_EQ(g.fastest_gpus, 8);
}

GpuLadderResult full_ladder() {
  GpuLadderResult g = four_versus_eight();
  g.bytes = 1024;
  g.from_topology = true;
  g.note = "a note";
  GpuLevelResult l = level(4, GpuSetChoice::closest, Op::allreduce, 1024, {10}, 5);
  l.path = "PIX";
  l.efficiency = 0.9;
  g.levels.push_back(l);
  price_gpu_ladder(g, 1000, 1.0, {{4, 4.0}, {8, 8.0}, {16, 15.0}});
  return g;
}

TEST(GpuLadder, JsonRoundTripAndSchema) {
  RunResult r;
  r.run.ranks = 8;
  r.run.nodes = 1;
  r.run.ranks_per_node = {8};
  r.run.hostnames = {"a"};
  r.run.transport = "mpi";
  r.run.command_line = {"fabricbench", "scale"};
  r.run.start_utc = "2026-01-02T03:04:05Z";
  r.tool = {"fabricbench", "0.1.0", "0123456789ab", {"mpi"}, {}};
  r.gpu_ladder = full_ladder();
  std::ostringstream out;
  write_json(r, out);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["gpu_ladder"]["levels"][0]["choice"], "closest");
  EXPECT_EQ(doc["gpu_ladder"]["cheapest_gpus"], 4);
  EXPECT_EQ(doc["gpu_ladder"]["servers"][1]["cost_per_job"], 20.0);
  const std::vector<SchemaError> errors = SchemaValidator(nlohmann::json::parse(result_schema_text())).validate(doc);
  EXPECT_TRUE(errors.empty()) << errors.front().path << ": " << errors.front().message;
  const RunResult back = result_from_valid_json(nlohmann::json::parse(out.str()));
  ASSERT_TRUE(back.gpu_ladder);
  std::ostringstream again;
  write_json(back, again);
  EXPECT_EQ(again.str(), out.str());
}

TEST(GpuLadder, ReportTextAndHtmlShowTheLadderAndItsChart) {
  RunResult r;
  r.run.ranks = 8;
  r.run.nodes = 1;
  r.run.ranks_per_node = {8};
  r.run.hostnames = {"a"};
  r.run.transport = "nccl";
  r.gpu_ladder = full_ladder();
  std::vector<ReportRun> runs;
  runs.push_back({"run.json", r, {}, Level::ok, {}});
  const Report report = build_report(std::move(runs), {}, builtin_expectations());
  std::ostringstream text;
  print_report(report, text);
  EXPECT_NE(text.str().find("# GPU-count ladder inside each node (8 GPUs per node"), std::string::npos);
  EXPECT_NE(text.str().find("# cheapest per job: 4 GPUs (16 per job)"), std::string::npos);
  std::ostringstream html;
  write_report_html(report, html);
  const std::string page = html.str();
  EXPECT_NE(page.find("<section id=\"gpu-ladder\">"), std::string::npos);
  EXPECT_NE(page.find("id=\"gpu-ladder-0\""), std::string::npos);
  EXPECT_NE(page.find("Job time and cost per job against GPU count"), std::string::npos);
  EXPECT_NE(page.find("<title>4 GPUs: 16 per job</title>"), std::string::npos) << page;
  EXPECT_NE(page.find("<title>8 GPUs: 2.5 h</title>"), std::string::npos);
  EXPECT_NE(page.find("Cheapest per job: 4 GPUs. Fastest: 8 GPUs."), std::string::npos);

  // `report --price-per-gpu-hour` prices the job again; the server prices stay.
  ReportConfig at_three;
  at_three.price_per_gpu_hour = 3.0;
  std::vector<ReportRun> again;
  again.push_back({"run.json", r, {}, Level::ok, {}});
  const Report repriced = build_report(std::move(again), at_three, builtin_expectations());
  const GpuLadderResult& g = *repriced.runs[0].result.gpu_ladder;
  EXPECT_DOUBLE_EQ(*g.projection[1].cost_per_job, 48.0);  // 4 h x 4 GPUs x 3
  EXPECT_DOUBLE_EQ(*g.servers[0].cost_per_job, 16.0);
}

TEST(GpuLadder, TableNamesTheCheapestAndTheFastest) {
  std::ostringstream out;
  print_gpu_ladder(full_ladder(), out);
  const std::string text = out.str();
  EXPECT_NE(text.find("# GPU-count ladder inside each node (8 GPUs per node"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce"), std::string::npos);
  EXPECT_NE(text.find("closest"), std::string::npos);
  EXPECT_NE(text.find("# cheapest per job: 4 GPUs (16 per job)"), std::string::npos) << text;
  EXPECT_NE(text.find("# fastest: 8 GPUs (2.500 h per job)"), std::string::npos) << text;
  EXPECT_NE(text.find("not measured: a node here has 8 GPUs"), std::string::npos) << text;
}

std::string error_of(std::vector<std::string> args) {
  try {
    (void)parse_command_line(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuLadder, CommandLine) {
  const RunConfig c = parse_command_line({"scale", "--grad-bytes", "1M", "--compute-ms", "10", "--steps", "1000",
                                          "--price", "8:8, 4:4", "--price-per-gpu-hour", "1"})
                          .config;
  EXPECT_TRUE(c.scale.gpu_ladder);
  EXPECT_EQ(c.scale.steps, 1000);
  ASSERT_EQ(c.scale.server_prices.size(), 2U);
  EXPECT_EQ(c.scale.server_prices[0].gpus, 4);
  EXPECT_EQ(c.scale.server_prices[1].per_hour, 8.0);
  EXPECT_FALSE(parse_command_line({"--no-gpu-ladder"}).config.scale.gpu_ladder);
  const std::vector<std::string> job{"--grad-bytes", "1M", "--compute-ms", "10"};
  const auto with_job = [&job](std::vector<std::string> args) {
    args.insert(args.begin(), job.begin(), job.end());
    return error_of(args);
  };
  EXPECT_EQ(with_job({"--steps", "1", "--price", "4:x"}),
            "--price 4:x: 'x' is not a price (a finite number, 0 or above)");
  EXPECT_EQ(error_of({"--price", "4:x"}), "--price 4:x: 'x' is not a price (a finite number, 0 or above)");
  EXPECT_EQ(with_job({"--steps", "0"}), "--steps 0: must be a whole number of steps, 1 or more");
  EXPECT_EQ(with_job({"--steps", "1.5"}), "--steps 1.5: must be a whole number of steps, 1 or more");
  EXPECT_EQ(with_job({"--steps", "1", "--price", "x:4"}),
            "--price x:4: 'x:4' is not GPUS:PRICE (GPUs a whole number, 1 or more; e.g. 8:8)");
  EXPECT_EQ(with_job({"--steps", "1", "--price", "0:4"}),
            "--price 0:4: '0:4' is not GPUS:PRICE (GPUs a whole number, 1 or more; e.g. 8:8)");
  EXPECT_EQ(with_job({"--steps", "1", "--price", "4:-1"}),
            "--price 4:-1: '-1' is not a price (a finite number, 0 or above)");
  EXPECT_EQ(with_job({"--steps", "1", "--price", "4:4,4:5"}), "--price 4:4,4:5: 4 GPUs priced twice");
  EXPECT_EQ(with_job({"--price", "4:4"}), "--price: the cost per job needs the job length (--steps N)");
  EXPECT_EQ(error_of({"--steps", "10"}),
            "--steps: the job needs the training projection (--grad-bytes or --params, and --compute-ms)");
  EXPECT_EQ(with_job({"--steps", "10", "--no-gpu-ladder"}),
            "--steps: prices the GPU ladder, which --no-gpu-ladder skips");
  EXPECT_NE(error_of({"sweep", "--steps", "10"}).find("--steps: sweep does not use it"), std::string::npos);
}

}  // namespace
}  // namespace fabricbench
