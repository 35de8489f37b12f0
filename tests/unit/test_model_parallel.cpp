// The model-parallel projection's formulas against figures worked by hand,
// the stage link it takes from the pair matrix, the layout checks, the
// command line's refusals, and the record's JSON form.
#include "fabricbench/engine/model_parallel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/app/cli.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/results/reader.hpp"
#include "fabricbench/results/result_json.hpp"

namespace fabricbench {
namespace {

ModelParallelConfig config(int tp, int pp, int micro_batches, int layers) {
  ModelParallelConfig c;
  c.tp = tp;
  c.pp = pp;
  c.micro_batches = micro_batches;
  c.layers = layers;
  c.hidden = 4096;
  c.seq = 2048;
  return c;
}

TEST(ModelParallel, TensorAndPipelineStepByHand) {
  // 120 ms of compute on one GPU over tp 2 x pp 2: 30 ms per GPU, 7.5 ms per
  // micro-batch (4 of them). TP: 4 all-reduces x 8/2 layers x 0.1 ms = 1.6 ms
  // per micro-batch; PP: 2 transfers x 0.25 ms = 0.5 ms. One slot = 9.6 ms,
  // the step (4 + 2 - 1) slots = 48 ms, of which one slot (9.6 ms, 20%) is
  // the bubble. Two replicas (8 GPUs): speedup 2 x 120 / 48 = 5, efficiency
  // 5 / 8 = 62.5%.
  const ModelParallelPoint p = project_model_parallel(config(2, 2, 4, 8), 120.0, 2, 100.0, 250.0);
  EXPECT_DOUBLE_EQ(p.compute_ms, 30.0);
  EXPECT_DOUBLE_EQ(p.tp_comm_ms, 6.4);
  EXPECT_DOUBLE_EQ(p.pp_comm_ms, 2.0);
  EXPECT_DOUBLE_EQ(p.bubble_ms, 9.6);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 0.2);
  EXPECT_DOUBLE_EQ(p.step_ms, 48.0);
  EXPECT_DOUBLE_EQ(p.speedup, 5.0);
  EXPECT_DOUBLE_EQ(p.efficiency, 0.625);
}

TEST(ModelParallel, TensorParallelOnlyHasNoBubbleAndIgnoresTheStageLink) {
  // 100 ms over tp 4: 25 ms; 4 x 10 layers x 50 us = 2 ms; step 27 ms.
  const ModelParallelPoint p = project_model_parallel(config(4, 1, 1, 10), 100.0, 1, 50.0, 1e9);
  EXPECT_DOUBLE_EQ(p.compute_ms, 25.0);
  EXPECT_DOUBLE_EQ(p.tp_comm_ms, 2.0);
  EXPECT_DOUBLE_EQ(p.pp_comm_ms, 0.0);
  EXPECT_DOUBLE_EQ(p.bubble_ms, 0.0);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 0.0);
  EXPECT_DOUBLE_EQ(p.step_ms, 27.0);
  EXPECT_DOUBLE_EQ(p.speedup, 100.0 / 27.0);
  EXPECT_DOUBLE_EQ(p.efficiency, 25.0 / 27.0);
}

TEST(ModelParallel, WithoutCommunicationTheBubbleAloneSetsTheEfficiency) {
  // pp 4, 12 micro-batches: (4 - 1) / (12 + 4 - 1) = 20% bubble, 80% efficient.
  const ModelParallelPoint p = project_model_parallel(config(1, 4, 12, 8), 96.0, 1, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 0.2);
  EXPECT_DOUBLE_EQ(p.step_ms, 30.0);  // 15 slots of 96 / 4 / 12 = 2 ms
  EXPECT_DOUBLE_EQ(p.bubble_ms, 6.0);
  EXPECT_DOUBLE_EQ(p.efficiency, 0.8);
}

TEST(ModelParallel, ActivationBytesAndTransferTime) {
  ModelParallelConfig c = config(2, 1, 1, 1);
  c.micro_batch = 2;
  EXPECT_EQ(activation_bytes(c), std::size_t{4096} * 2048 * 2 * 2);  // bfloat16: 32 MiB
  c.dtype = DType::float32;
  EXPECT_EQ(activation_bytes(c), std::size_t{4096} * 2048 * 2 * 4);
  c.hidden = std::size_t{1} << 40;
  EXPECT_FALSE(activation_bytes(c));  // above the largest message, never a wrapped product
  // 10 us + 25e6 B at 12.5 GB/s (2000 us).
  EXPECT_DOUBLE_EQ(pp_transfer_us(10.0, 12.5, 25'000'000), 2010.0);
  EXPECT_TRUE(std::isinf(pp_transfer_us(10.0, 0.0, 8)));
}

PairsResult four_nodes() {
  PairsResult p;
  p.ranks_per_node = 2;
  p.hosts = {"n0", "n1", "n2", "n3"};
  p.nodes = PairMatrix(4);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) {
        p.nodes.bw(a, b) = 20.0;
        p.nodes.lat(a, b) = 5.0;
      }
  return p;
}

TEST(ModelParallel, StageLinkIsTheSlowestBetweenConsecutiveStages) {
  PairsResult p = four_nodes();
  // pp 2 on 4 nodes: stages {n0, n1} and {n2, n3}; n0 -> n2 and n1 -> n3.
  p.nodes.bw(1, 3) = 10.0;  // 5 GB/s per rank: 5 + 1e6 / 5e3 = 205 us
  p.nodes.bw(0, 1) = 0.1;   // within a stage: not a pipeline link
  std::string why;
  const std::optional<PpLink> link = pipeline_link(p, 2, 1'000'000, why);
  ASSERT_TRUE(link) << why;
  EXPECT_EQ(link->from, 1);
  EXPECT_EQ(link->to, 3);
  EXPECT_DOUBLE_EQ(link->bandwidth_gbs, 5.0);
  EXPECT_DOUBLE_EQ(link->latency_us, 5.0);
  EXPECT_DOUBLE_EQ(link->transfer_us, 205.0);
  // pp 4: every node its own stage, links 0->1, 1->2, 2->3; 0->1 is slowest.
  const std::optional<PpLink> four = pipeline_link(p, 4, 1'000'000, why);
  ASSERT_TRUE(four) << why;
  EXPECT_EQ(four->from, 0);
  EXPECT_EQ(four->to, 1);
  // A link the pipeline needs without a figure: no projection, and why.
  p.nodes.bw(0, 2).reset();
  EXPECT_FALSE(pipeline_link(p, 2, 1'000'000, why));
  EXPECT_NE(why.find("n0 <-> n2"), std::string::npos) << why;
}

TEST(ModelParallel, LayoutChecksNameTheFlagAndTheCounts) {
  // 2 nodes of 4 ranks.
  const Layout l =
      layout_from(0, {"a", "a", "a", "a", "b", "b", "b", "b"}, {0, 0, 0, 0, 4, 4, 4, 4}, {0, 1, 2, 3, 0, 1, 2, 3});
  const auto error_of = [&l](int tp, int pp) -> std::string {
    ModelParallelConfig c = config(tp, pp, 1, 8);
    try {
      check_model_parallel_layout(c, l);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(4, 2), "");
  EXPECT_EQ(error_of(2, 1), "");
  EXPECT_EQ(error_of(3, 1), "--tp 3: must divide the 4 ranks per node (tensor parallel stays within a node)");
  EXPECT_EQ(error_of(8, 1), "--tp 8: must divide the 4 ranks per node (tensor parallel stays within a node)");
  EXPECT_EQ(error_of(1, 4), "--pp 4: must divide the 2 nodes (one pipeline stage per block of nodes)");
  EXPECT_EQ(error_of(1, 3), "--pp 3: must divide the 2 nodes (one pipeline stage per block of nodes)");
}

std::string cli_error(std::vector<std::string> args) {
  try {
    parse_command_line(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelParallel, CommandLineTakesTheModelAndRefusesWhatCannotBe) {
  const RunConfig c = parse_command_line({"run", "--tp", "2", "--pp", "2", "--hidden", "4096", "--seq", "2048",
                                          "--layers", "32", "--micro-batches", "8", "--compute-ms", "500"})
                          .config;
  EXPECT_EQ(c.model.tp, 2);
  EXPECT_EQ(c.model.pp, 2);
  EXPECT_EQ(c.model.hidden, 4096U);
  EXPECT_EQ(c.model.seq, 2048U);
  EXPECT_EQ(c.model.layers, 32);
  EXPECT_EQ(c.model.micro_batches, 8);
  EXPECT_EQ(c.model.micro_batch, 1U);
  EXPECT_EQ(c.model.dtype, DType::bfloat16);
  EXPECT_TRUE(c.model.enabled());
  EXPECT_FALSE(parse_command_line({"run"}).config.model.enabled());

  const std::vector<std::string> model{"--hidden", "64", "--seq", "8", "--layers", "4", "--compute-ms", "10"};
  const auto with = [&model](std::vector<std::string> args) {
    args.insert(args.end(), model.begin(), model.end());
    return cli_error(args);
  };
  EXPECT_EQ(with({"scale", "--tp", "2"}), "");
  EXPECT_EQ(with({"scale", "--tp", "0"}), "--tp 0: must be between 1 and 1048576");
  EXPECT_EQ(with({"run", "--pp", "-1"}), "--pp -1: must be between 1 and 1048576");
  EXPECT_EQ(with({"scale", "--pp", "2"}),
            "--pp 2: the pipeline projection uses the node-pair matrix, which only `run` measures");
  EXPECT_EQ(with({"run", "--pp", "3"}), "--layers 4: must be a multiple of --pp 3 (whole layers on every stage)");
  EXPECT_EQ(with({"run", "--tp", "2", "--micro-batches", "0"}), "--micro-batches 0: must be 1 or above");
  EXPECT_EQ(with({"run", "--tp", "2", "--micro-batch", "0"}), "--micro-batch 0: must be 1 or above");
  EXPECT_EQ(with({"run", "--tp", "2", "--act-dtype", "float9"}).rfind("--act-dtype: unknown dtype 'float9'", 0), 0U);
  EXPECT_EQ(cli_error({"run", "--tp", "2", "--seq", "8", "--layers", "4", "--compute-ms", "10"}),
            "--hidden: the model-parallel projection needs it (a whole number above 0)");
  EXPECT_EQ(cli_error({"run", "--tp", "2", "--hidden", "0", "--seq", "8", "--layers", "4", "--compute-ms", "10"}),
            "--hidden 0: must be a whole number above 0");
  EXPECT_EQ(cli_error({"run", "--tp", "2", "--hidden", "8", "--seq", "8", "--compute-ms", "10"}),
            "--layers: the model-parallel projection needs the layer count");
  EXPECT_EQ(cli_error({"run", "--tp", "2", "--hidden", "8", "--seq", "8", "--layers", "4"}),
            "--compute-ms: the model-parallel projection needs the compute time per step (above 0)");
  EXPECT_EQ(cli_error({"run", "--hidden", "8"}), "--hidden: used only with --tp or --pp above 1");
  EXPECT_NE(
      cli_error({"run", "--tp", "2", "--hidden", "1099511627776", "--seq", "8", "--layers", "4", "--compute-ms", "10"})
          .find("the activation is above the largest message size"),
      std::string::npos);
  EXPECT_NE(cli_error({"sweep", "--tp", "2"}).find("--tp"), std::string::npos);  // not a sweep option
}

TEST(ModelParallel, RecordRoundTripsThroughJson) {
  RunResult r;
  r.tool = {"fabricbench", "0.1.0", "0123456789ab", {"mpi"}, {}};
  r.run.start_utc = "2026-01-02T03:04:05Z";
  r.run.command_line = {"fabricbench", "run"};
  r.run.ranks = 8;
  r.run.nodes = 2;
  r.run.ranks_per_node = {4, 4};
  r.run.hostnames = {"a", "b"};
  r.run.transport = "mpi";
  r.complete = true;
  ModelParallelResult m;
  m.tp = 2;
  m.pp = 2;
  m.dp = 2;
  m.nodes = 2;
  m.gpus = 8;
  m.hidden = 64;
  m.seq = 8;
  m.micro_batches = 4;
  m.layers = 8;
  m.compute_ms = 120;
  m.activation_bytes = 1024;
  m.tp_allreduce = TpAllReduce{1024, DType::float32, 2, 4, 100, 110, 0};
  m.pp_link = PpLink{0, 1, 5, 10, 5.1024};
  m.projection = project_model_parallel(config(2, 2, 4, 8), 120.0, 2, 100.0, 250.0);
  r.model_parallel = m;
  const std::string text = to_json(r).dump(2);
  const RunResult back = result_from_json(nlohmann::json::parse(text), "mp.json");
  ASSERT_TRUE(back.model_parallel);
  EXPECT_EQ(to_json(back).dump(2), text);
  EXPECT_DOUBLE_EQ(back.model_parallel->projection->efficiency, 0.625);
}

TEST(ModelParallel, CostOfAThousandStepsAndTheTextTable) {
  RunResult r;
  r.run.ranks = 8;
  r.run.nodes = 2;
  r.run.transport = "nccl";
  ModelParallelResult m;
  m.tp = 2;
  m.pp = 2;
  m.dp = 2;
  m.nodes = 2;
  m.gpus = 8;
  m.layers = 8;
  m.micro_batches = 4;
  m.compute_ms = 120;
  m.projection = project_model_parallel(config(2, 2, 4, 8), 120.0, 2, 100.0, 250.0);  // a 48 ms step
  r.model_parallel = m;
  // 48 ms x 1000 = 48 s on 8 GPUs at 2.5 an hour: 48 / 3600 x 8 x 2.5; by node: 48 / 3600 x 2 x 20.
  const std::optional<CostSummary> by_gpu = cost_of(r, PriceInfo{2.5, std::nullopt, ""});
  ASSERT_TRUE(by_gpu && by_gpu->model_parallel);
  EXPECT_DOUBLE_EQ(by_gpu->model_parallel->step_ms, 48.0);
  EXPECT_NEAR(by_gpu->model_parallel->per_1000_steps, 48.0 / 3600 * 8 * 2.5, 1e-12);
  const std::optional<CostSummary> by_node = cost_of(r, PriceInfo{std::nullopt, 20.0, ""});
  ASSERT_TRUE(by_node && by_node->model_parallel);
  EXPECT_NEAR(by_node->model_parallel->per_1000_steps, 48.0 / 3600 * 2 * 20, 1e-12);

  std::ostringstream text;
  print_model_parallel(m, text);
  EXPECT_NE(text.str().find("tp 2 x pp 2 x dp 2 on 8 ranks (2 nodes)"), std::string::npos) << text.str();
  EXPECT_NE(
      text.str().find("      30.000        6.400        2.000        9.600      20.0%     48.000      5.00      62.5%"),
      std::string::npos)
      << text.str();
  m.projection.reset();
  m.skipped = "the pair matrix has no figure for a <-> b";
  std::ostringstream skipped;
  print_model_parallel(m, skipped);
  EXPECT_NE(skipped.str().find("# skipped: the pair matrix has no figure for a <-> b"), std::string::npos);
  r.model_parallel = m;
  EXPECT_FALSE(cost_of(r, PriceInfo{2.5, std::nullopt, ""})->model_parallel);  // no step, no cost
}

}  // namespace
}  // namespace fabricbench
