#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/analysis/pairs.hpp"
#include "fabricbench/analysis/storage.hpp"
#include "fabricbench/analysis/stragglers.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/engine/model_parallel.hpp"
#include "fabricbench/engine/multinode.hpp"
#include "fabricbench/engine/storage.hpp"
#include "fabricbench/engine/stragglers.hpp"
#include "fabricbench/transport/mpi/mpi_transport.hpp"

namespace fabricbench {
namespace {

RunConfig small_config() {
  RunConfig config;
  config.iterations.fixed_iters = 3;
  config.iterations.warmup = 1;
  config.scale.bytes = 64 * 1024;
  config.pairs.bytes = 64 * 1024;
  return config;
}

TEST(MultinodeMpi, PairMatrixWithinOneNodeCoversEveryLocalPair) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  const PairsResult pairs = run_pairs(small_config(), transport, world, layout);
  if (world.rank() != 0) return;
  EXPECT_EQ(pairs.wrong, 0U);
  EXPECT_TRUE(pairs.rounds.empty());  // one node: no node pairs
  ASSERT_EQ(pairs.intra.size(), 1U);
  const PairMatrix& m = pairs.intra[0];
  ASSERT_EQ(m.size, world.size());
  for (int a = 0; a < m.size; ++a) {
    for (int b = 0; b < m.size; ++b) {
      if (a == b) {
        EXPECT_FALSE(m.bw(a, b));
        continue;
      }
      ASSERT_TRUE(m.bw(a, b)) << a << "," << b;
      EXPECT_GT(*m.bw(a, b), 0.0);
      EXPECT_EQ(*m.bw(a, b), *m.bw(b, a));
      ASSERT_TRUE(m.lat(a, b));
    }
  }
}

// A transport that passes every call on to `inner`: the base of those
// that change some of them.
class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::optional<std::string> unsupported(Op op, DType d, RedOp r) const override {
    return inner_->unsupported(op, d, r);
  }
  void prepare(const OpSpec& s) override { inner_->prepare(s); }
  void fill(const OpSpec& s) override { inner_->fill(s); }
  void run_once(const OpSpec& s) override { inner_->run_once(s); }
  std::uint64_t verify(const OpSpec& s) override { return inner_->verify(s); }
  void barrier() override { inner_->barrier(); }
  AlgorithmChoice capture_choice(const OpSpec& s) override { return inner_->capture_choice(s); }
  double time_p2p(const P2PSpec& s, int iters) override { return inner_->time_p2p(s, iters); }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    return inner_->time_batch(s, iters, per_iteration);
  }

 protected:
  Transport& inner() { return *inner_; }

 private:
  std::unique_ptr<Transport> inner_;
};

// The MPI transport with every send/recv (or `op`) of this rank as slow as
// a link of `bytes_per_s` one way, whoever the partner: each exchange,
// checked or timed, takes its bytes over that rate more. Its
// sub-transports are as slow. `checked` (where given) gets the message of
// every checked run of `op`, sub-transports' included.
class SlowLinkTransport final : public ForwardingTransport {
 public:
  SlowLinkTransport(std::unique_ptr<Transport> inner, double bytes_per_s, Op op = Op::sendrecv,
                    std::shared_ptr<std::vector<std::size_t>> checked = nullptr)
      : ForwardingTransport(std::move(inner)), bytes_per_s_(bytes_per_s), op_(op), checked_(std::move(checked)) {}
  // World rank `rank` (every rank: -1) fills its buffers at `bytes_per_s`
  // (a slow rank's work), but at full pace in the first `burst_s` after
  // each prepare of larger buffers than before (each step of the pace
  // work's sizing starts so: a CPU quota lets a rank run a few milliseconds
  // past its slice and takes them back later); not passed on by split.
  void slow_fill(int rank, double bytes_per_s, double burst_s = 0) {
    fill_rank_ = rank;
    fill_bytes_per_s_ = bytes_per_s;
    burst_s_ = burst_s;
  }
  // World rank `rank`'s every `nth` fill waits `wait_s` after it (a CPU
  // quota: full pace inside the slice, then a wait for the next period).
  void wait_every(int rank, int nth, double wait_s) {
    wait_rank_ = rank;
    wait_nth_ = nth;
    wait_s_ = wait_s;
  }
  // World rank `rank` makes larger buffers at `bytes_per_s`, the whole of
  // them (a rank held to a tenth of a core made 72 MiB in 3.6 s); not
  // passed on by split.
  void slow_make(int rank, double bytes_per_s) {
    make_rank_ = rank;
    make_bytes_per_s_ = bytes_per_s;
  }
  void prepare(const OpSpec& s) override {
    inner().prepare(s);
    if (s.counts.bytes > largest_) {
      largest_ = s.counts.bytes;
      grown_ = SteadyClock::now();
    }
    if (rank() == make_rank_ && make_bytes_per_s_ > 0 && s.counts.bytes > made_) {
      made_ = s.counts.bytes;
      std::this_thread::sleep_for(std::chrono::duration<double>(static_cast<double>(made_) / make_bytes_per_s_));
    }
  }
  void fill(const OpSpec& s) override {
    const bool burst = std::chrono::duration<double>(SteadyClock::now() - grown_).count() < burst_s_;
    inner().fill(s);
    if ((fill_rank_ < 0 || rank() == fill_rank_) && fill_bytes_per_s_ > 0 && !burst)
      std::this_thread::sleep_for(
          std::chrono::duration<double>(static_cast<double>(s.counts.bytes) / fill_bytes_per_s_));
    if (rank() == wait_rank_ && ++waited_fills_ % wait_nth_ == 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s_));
  }
  void run_once(const OpSpec& s) override {
    inner().run_once(s);
    if (checked_ && s.op == op_) checked_->push_back(s.counts.bytes);
    (void)hold(s, 1);
  }
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    std::unique_ptr<Transport> part = inner().split(sub, color, key);
    return part ? std::make_unique<SlowLinkTransport>(std::move(part), bytes_per_s_, op_, checked_) : nullptr;
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    BatchTiming t = inner().time_batch(s, iters, per_iteration);
    const double extra = hold(s, iters);
    t.seconds += extra;
    for (double& each : t.per_iteration) each += extra / iters;
    return t;
  }

 private:
  double hold(const OpSpec& s, int iters) const {
    if (s.op != op_ || bytes_per_s_ <= 0) return 0;
    const double seconds = iters * static_cast<double>(s.counts.bytes) / bytes_per_s_;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return seconds;
  }
  double bytes_per_s_;
  Op op_;
  std::shared_ptr<std::vector<std::size_t>> checked_;
  int fill_rank_ = -1;
  double fill_bytes_per_s_ = 0;
  double burst_s_ = 0;
  std::size_t largest_ = 0;
  SteadyClock::time_point grown_ = SteadyClock::now();
  int wait_rank_ = -1;
  int wait_nth_ = 1;
  double wait_s_ = 0;
  int waited_fills_ = 0;
  int make_rank_ = -1;
  double make_bytes_per_s_ = 0;
  std::size_t made_ = 0;
};

// The pair matrix over this host's ranks with rank 0's link at
// `bytes_per_s` (SlowLinkTransport), at `pair_bytes`, within
// `seconds_per_round` a round; its cuts into `cuts` (rank 0's).
PairsResult pairs_with_a_slow_rank0(double bytes_per_s, std::size_t pair_bytes, double seconds_per_round,
                                    std::vector<Cut>& cuts) {
  const Comm world = Comm::world();
  MpiTransport mpi(world);
  SlowLinkTransport slow(world.rank() == 0 ? mpi.split(world, 0, world.rank()) : nullptr, bytes_per_s);
  Transport& transport = world.rank() == 0 ? static_cast<Transport&>(slow) : static_cast<Transport&>(mpi);
  RunConfig config = small_config();
  config.pairs.bytes = pair_bytes;
  const double seconds = seconds_per_round * pair_round_count(world.size());
  return run_pairs(config, transport, world, discover_layout(world), PhaseLimit{seconds, &cuts, {}});
}

// Rank 0's link is slow (1 MiB/s): its 1 MiB exchange's check, warm-up and
// two timed iterations (4 s) fit in no round's bandwidth half (1 s, 2 s a
// round, and at most 6 s for the last), so that pair's bandwidth is
// measured with a smaller message, found from 64 KiB probes, recorded on
// the link and listed as a cut; the other pairs keep the full message.
TEST(MultinodeMpi, ASlowLinksBandwidthIsMeasuredWithAMessageItsShareHolds) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "no pairs with one rank";
  constexpr double bytes_per_s = 1 << 20;
  std::vector<Cut> cuts;
  const PairsResult pairs = pairs_with_a_slow_rank0(bytes_per_s, std::size_t{1} << 20, 2.0, cuts);
  if (world.rank() != 0) return;
  ASSERT_EQ(pairs.intra.size(), 1U);
  const PairMatrix& m = pairs.intra[0];
  for (int a = 0; a < m.size; ++a) {
    for (int b = 0; b < m.size; ++b) {
      if (a == b) continue;
      ASSERT_TRUE(m.bw(a, b)) << a << "," << b;
      if (a == 0 || b == 0) {
        ASSERT_TRUE(m.smaller(a, b)) << a << "," << b;
        EXPECT_LE(*m.smaller(a, b), std::size_t{512} << 10);
        EXPECT_GE(*m.smaller(a, b), std::size_t{64} << 10);
        EXPECT_LE(*m.bw(a, b), bytes_per_s / 1e9);  // no faster than the link
      } else {
        EXPECT_FALSE(m.smaller(a, b)) << a << "," << b;
      }
    }
  }
  const auto smaller =
      std::count_if(cuts.begin(), cuts.end(), [](const Cut& c) { return c.action == "smaller messages"; });
  EXPECT_EQ(smaller, world.size() - 1);  // a round for each of rank 0's partners
  for (const Cut& c : cuts)
    if (c.action == "smaller messages") {
      EXPECT_NE(c.what.find("rank 0"), std::string::npos) << c.what;
      EXPECT_NE(c.what.find("of 1 MiB"), std::string::npos) << c.what;
    }
  // The links in the file carry the message they were measured with.
  for (const IntraNodeLinks& node : intra_links_of(pairs))
    for (const PairLink& l : node.links) EXPECT_EQ(l.bytes.has_value(), l.from == 0 || l.to == 0);
}

// Rank 0's link is so slow (1 MiB/s) that after its probes (two checked
// and three timed 64 KiB exchanges, a third of a second) no round's
// bandwidth half (0.3 s) holds another measurement, not even at the probe's size:
// the probe's exchanges are that pair's figure, with their message, never
// a link with none.
TEST(MultinodeMpi, ALinkTooSlowToMeasureAgainAfterItsProbeKeepsTheProbesFigure) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "no pairs with one rank";
  constexpr double bytes_per_s = 1 << 20;
  std::vector<Cut> cuts;
  const PairsResult pairs = pairs_with_a_slow_rank0(bytes_per_s, std::size_t{4} << 20, 0.6, cuts);
  if (world.rank() != 0) return;
  ASSERT_EQ(pairs.intra.size(), 1U);
  const PairMatrix& m = pairs.intra[0];
  for (int b = 1; b < m.size; ++b) {
    ASSERT_TRUE(m.bw(0, b)) << b;
    ASSERT_TRUE(m.smaller(0, b)) << b;
    EXPECT_EQ(*m.smaller(0, b), std::size_t{64} << 10);
    EXPECT_LE(*m.bw(0, b), bytes_per_s / 1e9);  // no faster than the link
    EXPECT_GE(*m.bw(0, b), 0.2 * bytes_per_s / 1e9);
  }
}

// Rank 0 expects an all-reduce's check to cost a second a byte (what the
// sweep's checks would have shown): no all-reduce step of the ladder can
// fit its share, so each is skipped before it starts and listed; the
// all-gather, with no such figure, is measured.
TEST(MultinodeMpi, ALadderStepWhoseCheckCannotFitIsSkippedBeforeItStarts) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  std::vector<Cut> cuts;
  PhaseLimit limit{30.0, &cuts, {}};
  if (world.rank() == 0) limit.check_s_per_byte = {{Op::allreduce, 1.0}};
  const ScaleResult scaling = run_ladder(small_config(), transport, world, layout, limit);
  if (world.rank() != 0) return;
  ASSERT_FALSE(scaling.levels.empty());
  for (const LevelResult& l : scaling.levels) EXPECT_EQ(l.op, Op::allgather);
  ASSERT_FALSE(cuts.empty());
  for (const Cut& c : cuts) {
    EXPECT_EQ(c.action, "skipped");
    EXPECT_EQ(c.what.rfind("allreduce", 0), 0U) << c.what;
  }
}

// No sweep ran before the ladder (`scale`): rank 0's all-reduce runs at
// 1 MiB/s, so a 4 MiB step's check alone (4 s) would outlast the whole
// phase (2 s). The step's probe (two checked 64 KiB all-reduces) shows it: the
// step is skipped before its check ever runs at 4 MiB, and listed; the
// all-gather, unslowed, is measured.
TEST(MultinodeMpi, ALadderStepWithNoSweepBeforeItIsSkippedWhenItsProbeShowsItCannotFit) {
  const Comm world = Comm::world();
  MpiTransport mpi(world);
  auto checked = std::make_shared<std::vector<std::size_t>>();
  SlowLinkTransport slow(world.rank() == 0 ? mpi.split(world, 0, world.rank()) : nullptr, 1 << 20, Op::allreduce,
                         checked);
  Transport& transport = world.rank() == 0 ? static_cast<Transport&>(slow) : static_cast<Transport&>(mpi);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.bytes = std::size_t{4} << 20;
  std::vector<Cut> cuts;
  const ScaleResult scaling = run_ladder(config, transport, world, layout, PhaseLimit{2.0, &cuts, {}});
  if (world.rank() != 0) return;
  for (const std::size_t bytes : *checked) EXPECT_LT(bytes, config.scale.bytes);  // only the probes
  EXPECT_FALSE(checked->empty());
  ASSERT_FALSE(scaling.levels.empty());
  for (const LevelResult& l : scaling.levels) EXPECT_EQ(l.op, Op::allgather);
  ASSERT_FALSE(cuts.empty());
  for (const Cut& c : cuts) {
    EXPECT_EQ(c.action, "skipped");
    EXPECT_EQ(c.what.rfind("allreduce", 0), 0U) << c.what;
  }
}

TEST(MultinodeMpi, LadderOnOneNodeIsItsOwnBaseline) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.grad_bytes = 32 * 1024;
  config.scale.compute_ms = 10;
  ScaleResult scaling = run_ladder(config, transport, world, layout);
  if (world.rank() != 0) return;
  judge_ladder(scaling);
  ASSERT_EQ(scaling.levels.size(), 3U);  // allreduce and allgather at 64 KiB, allreduce at 32 KiB
  for (const LevelResult& l : scaling.levels) {
    EXPECT_EQ(l.nodes_per_group, 1);
    ASSERT_EQ(l.groups.size(), 1U);
    EXPECT_EQ(l.groups[0].ranks, world.size());
    EXPECT_EQ(l.groups[0].wrong, 0U);
    if (l.busbw_median_gbs > 0) {
      ASSERT_TRUE(l.efficiency);
      EXPECT_DOUBLE_EQ(*l.efficiency, 1.0);
    } else {
      EXPECT_FALSE(l.efficiency);  // one rank moves nothing: no baseline, no ratio
    }
  }
  ASSERT_EQ(scaling.projection.size(), 1U);
  EXPECT_EQ(scaling.projection[0].gpus, world.size());
}

// Tensor parallel on one node: every group of tp local ranks measures the
// all-reduce at the activation size at once; rank 0 projects from the median.
TEST(MultinodeMpi, TensorParallelGroupsMeasureTheActivationAllReduce) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "tensor parallel needs 2 or more ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  std::vector<int> tps{world.size()};
  if (world.size() % 2 == 0 && world.size() > 2) tps.push_back(2);
  for (const int tp : tps) {
    RunConfig config = small_config();
    config.scale.compute_ms = 10;
    config.model.tp = tp;
    config.model.hidden = 64;
    config.model.seq = 16;
    config.model.micro_batch = 2;
    config.model.layers = 4;
    const ModelParallelResult mp = run_model_parallel(config, transport, world, layout, nullptr);
    if (world.rank() != 0) continue;
    EXPECT_EQ(mp.tp, tp);
    EXPECT_EQ(mp.dp, world.size() / tp);
    EXPECT_EQ(mp.activation_bytes, 64U * 16 * 2 * 2);
    ASSERT_TRUE(mp.tp_allreduce);
    EXPECT_EQ(mp.tp_allreduce->groups, world.size() / tp);
    EXPECT_EQ(mp.tp_allreduce->ranks, tp);
    EXPECT_EQ(mp.tp_allreduce->dtype, DType::float32);  // the mpi transport has no bfloat16
    EXPECT_EQ(mp.tp_allreduce->bytes, mp.activation_bytes);
    EXPECT_EQ(mp.tp_allreduce->wrong, 0U);
    EXPECT_GT(mp.tp_allreduce->time_us, 0.0);
    EXPECT_GE(mp.tp_allreduce->time_max_us, mp.tp_allreduce->time_us);
    EXPECT_FALSE(mp.pp_link);
    ASSERT_TRUE(mp.projection) << mp.skipped;
    EXPECT_DOUBLE_EQ(mp.projection->tp_comm_ms, 4 * 4 * mp.tp_allreduce->time_us / 1e3);
    EXPECT_DOUBLE_EQ(mp.projection->step_ms, 10.0 / tp + mp.projection->tp_comm_ms);
  }
}

// Local ranks stand in for the GPUs of one node. Without a link matrix the
// sets are the first k ranks, and the result says so.
TEST(MultinodeMpi, GpuLadderInRankOrderWithoutATopology) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.grad_bytes = 32 * 1024;
  config.scale.compute_ms = 10;
  config.scale.steps = 100;
  config.report.price_per_gpu_hour = 2.0;
  GpuLadderResult g = run_gpu_ladder(config, transport, world, layout, {LinkMatrix{}});
  if (world.rank() != 0) return;
  judge_gpu_ladder(g, config.scale.steps, config.report.price_per_gpu_hour, config.scale.server_prices);
  const std::vector<int> sizes = gpu_ladder_sizes(world.size(), {});
  EXPECT_EQ(g.gpus_per_node, world.size());
  EXPECT_FALSE(g.from_topology);
  EXPECT_NE(g.note.find("rank order"), std::string::npos);
  ASSERT_EQ(g.levels.size(), sizes.size() * 3);  // allreduce, allgather at 64 KiB; allreduce at 32 KiB
  for (std::size_t i = 0; i < g.levels.size(); ++i) {
    const GpuLevelResult& l = g.levels[i];
    EXPECT_EQ(l.gpus, sizes[i / 3]);
    EXPECT_EQ(l.choice, GpuSetChoice::rank_order);
    ASSERT_EQ(l.sets.size(), 1U);
    std::vector<int> first(static_cast<std::size_t>(l.gpus));
    for (int r = 0; r < l.gpus; ++r) first[static_cast<std::size_t>(r)] = r;
    EXPECT_EQ(l.sets[0].gpus, first);
    EXPECT_EQ(l.sets[0].wrong, 0U);
    EXPECT_GT(l.sets[0].busbw_gbs, 0.0);
    EXPECT_GT(l.sets[0].time_us, 0.0);
  }
  ASSERT_EQ(g.projection.size(), sizes.size() + 1);
  EXPECT_EQ(g.projection[0].gpus, 1);
  EXPECT_DOUBLE_EQ(g.projection[0].step_ms, 10.0);
  for (const GpuProjectionPoint& p : g.projection) {
    ASSERT_TRUE(p.cost_per_job);
    EXPECT_DOUBLE_EQ(*p.job_hours, 100 * p.step_ms / 3.6e6);
    EXPECT_DOUBLE_EQ(*p.cost_per_job, *p.job_hours * p.gpus * 2.0);
  }
  EXPECT_TRUE(g.cheapest_gpus);
  EXPECT_TRUE(g.fastest_gpus);
}

// Four local ranks as a recorded PCIe server (GPUs 0,1 and 2,3 under two
// switches on two sockets): the closest pair, the spread pair, the node.
TEST(MultinodeMpi, GpuLadderClosestAndSpreadFromARecordedMatrix) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "needs 4 ranks";
  MpiTransport transport(world);
  const Layout layout = discover_layout(world);
  RunConfig config = small_config();
  config.scale.ops = {Op::allreduce};
  const LinkMatrix pcie{
      {"X", "PIX", "SYS", "SYS"}, {"PIX", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "PIX"}, {"SYS", "SYS", "PIX", "X"}};
  GpuLadderResult g = run_gpu_ladder(config, transport, world, layout, {pcie});
  if (world.rank() != 0) return;
  judge_gpu_ladder(g, config.scale.steps, config.report.price_per_gpu_hour, config.scale.server_prices);
  EXPECT_TRUE(g.from_topology);
  ASSERT_EQ(g.levels.size(), 3U);
  EXPECT_EQ(gpu_level_label(g.levels[0].gpus, g.levels[0].choice), "2 GPUs closest");
  EXPECT_EQ(g.levels[0].sets.at(0).gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(g.levels[0].path, "PIX");
  EXPECT_EQ(gpu_level_label(g.levels[1].gpus, g.levels[1].choice), "2 GPUs spread");
  EXPECT_EQ(g.levels[1].sets.at(0).gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(g.levels[1].path, "SYS");
  EXPECT_EQ(gpu_level_label(g.levels[2].gpus, g.levels[2].choice), "4 GPUs any");
  EXPECT_EQ(g.levels[2].path, "SYS");
  for (const GpuLevelResult& l : g.levels) {
    EXPECT_EQ(l.sets.at(0).wrong, 0U);
    EXPECT_GT(l.busbw_median_gbs, 0.0);
    ASSERT_TRUE(l.efficiency);
  }
  EXPECT_DOUBLE_EQ(*g.levels[0].efficiency, 1.0);
  EXPECT_FALSE(g.projection_input);
}

TEST(MultinodeMpi, LadderBytesRespectTheMemoryCap) {
  ScaleConfig scale;
  scale.bytes = std::size_t{1} << 30;
  scale.mem_cap = 100 << 20;  // 100 MiB: two buffers of 32 MiB fit, of 64 do not
  EXPECT_EQ(ladder_bytes(scale), std::size_t{32} << 20);
  scale.bytes = 1000;
  EXPECT_EQ(ladder_bytes(scale), 1000U);
}

// Every rank as a node of its own ("h0", "h1", ...), so the node-level
// tests run across the ranks of one machine.
Layout rank_per_node_layout(const Comm& world) {
  std::vector<std::string> hosts;
  std::vector<int> leaders;
  for (int r = 0; r < world.size(); ++r) {
    hosts.push_back("h" + std::to_string(r));
    leaders.push_back(r);
  }
  return layout_from(world.rank(), hosts, leaders, std::vector<int>(static_cast<std::size_t>(world.size()), 0));
}

// A rank whose work runs at 20 MB/s still gets its round: the work is sized
// so that the fewest iterations fit three times over at the slowest rank's rate,
// not only the fastest's (sized for the fastest, its iterations took a
// quarter of a second or more, fewer than the fewest fitted, and the round
// was skipped: the slower a rank, the less it was judged).
TEST(MultinodeMpi, APaceRoundFitsItsFewestIterationsAtTheSlowestRanksRate) {
  const Comm world = Comm::world();
  if (world.size() < 2) return;  // one rank: no other rank to be slower than
  SlowLinkTransport transport(std::make_unique<MpiTransport>(world), 0);
  transport.slow_fill(world.size() - 1, 20e6);
  const Layout layout = rank_per_node_layout(world);
  constexpr double share_s = 2.0;
  const PaceWork work = size_pace_work(transport, world, 3 * share_s);
  EXPECT_LE(work.bytes, std::size_t{2} << 20);
  EXPECT_EQ(work.fills, 1);  // the slowest rank's one fill is most of an iteration's share
  const PaceRound round = run_pace_round(transport, world, layout, work, share_s);
  EXPECT_GE(round.iterations, pace_min_iterations);
  ASSERT_EQ(round.ranks.size(), static_cast<std::size_t>(world.size()));
  const RankPace& slow = round.ranks.back();
  EXPECT_GT(slow.work_us, 5 * round.ranks.front().work_us);
}

// A slow rank that runs at full pace for 20 ms at the start of each step
// of the sizing (a CPU quota's slice and what the kernel lets it run past
// it), then at 100 MiB/s (10 ms a MiB), is sized at that pace, and the
// round fits twice the fewest iterations or more (some 30, as the sizing
// means). Timed over 64 fills at most, all inside the burst, it was sized
// at full pace; its iterations took a quarter of a second or more, and the
// round was skipped (a rank held to a tenth of a core fitted 9 iterations
// so on the test bed).
TEST(MultinodeMpi, ARankThatStartsEachStepInABurstIsSizedAtItsPace) {
  const Comm world = Comm::world();
  if (world.size() < 2) return;  // one rank: no other rank to be slower than
  SlowLinkTransport transport(std::make_unique<MpiTransport>(world), 0);
  constexpr double slow_bytes_per_s = 100.0 * (1 << 20);
  transport.slow_fill(world.size() - 1, slow_bytes_per_s, 20e-3);
  const Layout layout = rank_per_node_layout(world);
  constexpr double share_s = 1.0;
  const PaceWork work = size_pace_work(transport, world, 3 * share_s);
  const double slow_iteration_s = work.fills * static_cast<double>(work.bytes) / slow_bytes_per_s;
  EXPECT_LE(slow_iteration_s, share_s / (2 * pace_min_iterations)) << work.fills << " x " << work.bytes;
  const PaceRound round = run_pace_round(transport, world, layout, work, share_s);
  EXPECT_GE(round.iterations, 2 * pace_min_iterations);
  ASSERT_EQ(round.ranks.size(), static_cast<std::size_t>(world.size()));
  EXPECT_GT(round.ranks.back().work_us, 5 * round.ranks.front().work_us);
}

// A slow rank whose every 8th fill waits 80 ms (a CPU quota's wait for its
// next period; 11 ms a fill in the long run) is sized at that pace, and its
// work is the fills the room for it holds (33 ms, 3 fills). Timed over the
// second half of 50 ms, it read as one fill in 82 ms (one fill, then the
// wait), its work fell to one fill, and a rank held to a tenth of a core
// then came late in only 16 of 40 iterations on the test bed.
TEST(MultinodeMpi, ARankWhoseFillsWaitNowAndThenIsSizedAtItsPaceOverSeveralWaits) {
  const Comm world = Comm::world();
  if (world.size() < 2) return;  // one rank: no other rank to be slower than
  SlowLinkTransport transport(std::make_unique<MpiTransport>(world), 0);
  transport.slow_fill(-1, 1e9);  // 1 MiB in 1 ms on every rank: the buffers stay at 1 MiB
  transport.wait_every(world.size() - 1, 8, 80e-3);
  const Layout layout = rank_per_node_layout(world);
  constexpr double share_s = 1.0;
  const PaceWork work = size_pace_work(transport, world, 3 * share_s);
  EXPECT_EQ(work.bytes, std::size_t{1} << 20);
  EXPECT_GE(work.fills, 2);
  EXPECT_LE(work.fills, 5);  // the others' 5 ms
  const PaceRound round = run_pace_round(transport, world, layout, work, share_s);
  EXPECT_GE(round.iterations, pace_min_iterations);
}

// A rank that makes buffers slowly costs the sizing no more than its
// share: the buffers grow in steps, each only where the slowest rank's
// making of it (the last step's, scaled) fits in half of what is left.
// Sized from one make of 1 MiB, the work grew to 112 MiB now and then, whose
// making took a rank held to a tenth of a core the whole share, and the
// round was skipped.
TEST(MultinodeMpi, PaceWorkSizingKeepsToItsShareWhereARankMakesBuffersSlowly) {
  const Comm world = Comm::world();
  if (world.size() < 2) return;  // one rank: no other rank to be slower than
  SlowLinkTransport transport(std::make_unique<MpiTransport>(world), 0);
  transport.slow_make(world.size() - 1, 40e6);  // 1 MiB in 26 ms, 64 MiB in 1.7 s
  const Layout layout = rank_per_node_layout(world);
  constexpr double share_s = 1.0;
  const SteadyClock::time_point start = SteadyClock::now();
  const PaceWork work = size_pace_work(transport, world, 3 * share_s);  // sized within a third
  std::array<double, 1> spent{std::chrono::duration<double>(SteadyClock::now() - start).count()};
  world.allreduce_max(std::span<double>(spent));
  EXPECT_LE(spent[0], share_s);
  EXPECT_LT(work.bytes, std::size_t{20} << 20);
  const PaceRound round = run_pace_round(transport, world, layout, work, share_s);
  EXPECT_GE(round.iterations, pace_min_iterations);
}

// Where the buffers stay small, an iteration's work is made up of several
// fills, every one timed: a fill of 1 MiB at 1 GB/s on every rank (1 ms,
// what pace_fill_s asks of the buffers) is done about 5 times, so the
// iteration lasts longer than the slice a CPU quota gives at a time.
TEST(MultinodeMpi, PaceWorkIsSeveralFillsWhereOneIsShort) {
  const Comm world = Comm::world();
  SlowLinkTransport transport(std::make_unique<MpiTransport>(world), 0);
  constexpr double bytes_per_s = 1e9;
  transport.slow_fill(-1, bytes_per_s);
  const Layout layout = rank_per_node_layout(world);
  const PaceWork work = size_pace_work(transport, world, unlimited_seconds);
  EXPECT_EQ(work.bytes, std::size_t{1} << 20);
  EXPECT_GE(work.fills, 2);
  EXPECT_LE(work.fills, 5);
  const PaceRound round = run_pace_round(transport, world, layout, work, unlimited_seconds);
  ASSERT_EQ(round.iterations, pace_iterations);
  EXPECT_EQ(round.work_fills, work.fills);
  const double least_us = work.fills * static_cast<double>(work.bytes) / bytes_per_s * 1e6;
  for (const RankPace& pace : round.ranks) EXPECT_GE(pace.work_us, least_us) << pace.rank;
}

// Every rank gets the same round: each iteration names at least one rank as
// the last to arrive, each rank's node comes from the layout, and a share
// too short for the fewest iterations measures nothing.
TEST(MultinodeMpi, PaceRoundCountsWhoArrivedLastOnEveryRank) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = rank_per_node_layout(world);
  const PaceWork work = size_pace_work(transport, world, unlimited_seconds);
  const PaceRound round = run_pace_round(transport, world, layout, work, unlimited_seconds);
  if (world.size() == 1) {
    // Alone, every iteration is its own: still counted, never judged.
    EXPECT_EQ(round.iterations, pace_iterations);
  }
  ASSERT_EQ(round.iterations, pace_iterations);
  ASSERT_EQ(round.ranks.size(), static_cast<std::size_t>(world.size()));
  EXPECT_GE(round.work_bytes, std::size_t{1} << 20);
  EXPECT_EQ(round.work_bytes, work.bytes);
  EXPECT_EQ(round.work_fills, work.fills);
  EXPECT_GE(round.work_fills, 1);
  int last = 0;
  for (int r = 0; r < world.size(); ++r) {
    const RankPace& pace = round.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(pace.rank, r);
    EXPECT_EQ(pace.node, r);
    EXPECT_GT(pace.work_us, 0.0);
    EXPECT_LE(pace.last, round.iterations);
    EXPECT_LE(pace.late, round.iterations);
    EXPECT_GE(pace.lateness_us, 0.0);
    last += pace.last;
  }
  EXPECT_GE(last, round.iterations);  // ties count each tied rank
  // The same figures on every rank (they come from one reduction).
  std::vector<double> mine{static_cast<double>(round.ranks.back().last), round.ranks.front().work_us};
  std::vector<double> most(mine);
  world.allreduce_max(std::span<double>(most));
  EXPECT_EQ(mine, most);

  const PaceRound none = run_pace_round(transport, world, layout, work, 1e-9);
  EXPECT_EQ(none.iterations, 0);
  EXPECT_TRUE(none.ranks.empty());
}

// The MPI transport with world rank `rank` held `hold_s` in its work every
// `every`-th pace iteration (the iterations counted by the round's small
// all-reduces, whose count runs on from one round into the next): on time in
// the others, very late in those, as a CPU quota holds a rank whose work is
// shorter than the quota's slice.
class HeldArrivalTransport final : public ForwardingTransport {
 public:
  HeldArrivalTransport(std::unique_ptr<Transport> inner, int rank, int every, double hold_s)
      : ForwardingTransport(std::move(inner)), rank_(rank), every_(every), hold_s_(hold_s) {}
  void fill(const OpSpec& s) override {
    inner().fill(s);
    if (rank() != rank_ || joined_ % every_ != every_ - 1 || held_ == joined_) return;
    held_ = joined_;
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s_));
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    BatchTiming t = inner().time_batch(s, iters, per_iteration);
    ++joined_;
    return t;
  }
  // The pace rounds run on the world's transport itself.
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    return inner().split(sub, color, key);
  }

 private:
  int rank_;
  int every_;
  double hold_s_;
  int joined_ = 0;
  int held_ = -1;
};

// What the rounds found and measured, for a failure's message: each
// finding, then each round's ranks (late, last, work, median lateness and
// the time lost on average).
std::string said_of(const StragglersResult& judged) {
  std::string said;
  for (const Straggler& s : judged.found) said += s.message + "\n";
  for (const Straggler& s : judged.unconfirmed) said += s.message + "\n";
  for (const PaceRound& round : judged.rounds) {
    said += fmt::format("round: {} iterations of {} fills of {} bytes\n", round.iterations, round.work_fills,
                        round.work_bytes);
    for (const RankPace& r : round.ranks)
      said += fmt::format("  rank {}: late {}, last {}, work {:.0f} us, lateness {:.0f} us, lost {:.0f} us\n", r.rank,
                          r.late, r.last, r.work_us, r.lateness_us, r.lost_us.value_or(-1));
  }
  return said;
}

// Both pace rounds with the last rank held `hold_s` every `every`-th
// iteration, judged on rank 0 (empty elsewhere). Alone, or where ranks
// share cores (whose rounds would time the scheduler; the run skips them):
// nullopt on every rank.
std::optional<StragglersResult> judge_a_held_rank(int every, double hold_s) {
  const Comm world = Comm::world();
  if (world.size() < 2) return std::nullopt;
  const Layout layout = rank_per_node_layout(world);
  if (world.broadcast_value(shared_cores(world, layout).empty() ? 0 : 1, 0) != 0) return std::nullopt;
  HeldArrivalTransport transport(std::make_unique<MpiTransport>(world), world.size() - 1, every, hold_s);
  const PaceWork work = size_pace_work(transport, world, unlimited_seconds);
  std::vector<PaceRound> rounds;
  rounds.push_back(run_pace_round(transport, world, layout, work, unlimited_seconds));
  rounds.push_back(run_pace_round(transport, world, layout, work, unlimited_seconds));
  if (world.rank() != 0) return StragglersResult{};
  return judge_stragglers(std::move(rounds), layout.hostnames);
}

// A rank on time in two iterations of three and 100 ms late in the third
// (13 of 40) costs every collective some 30 ms on average, six times the
// work: the rounds keep that mean (the holds alone make 13 x 100 ms in 40),
// and the rank is named and confirmed with it. (Whether a third of the
// iterations suffices without the rest is the judging's, tested on its
// figures: on a busy machine the held rank came late in most iterations
// here too.)
TEST(MultinodeMpi, ARankLateInAThirdOfTheIterationsIsNamedWithTheTimeLost) {
  const std::optional<StragglersResult> judged = judge_a_held_rank(3, 0.1);
  if (!judged) GTEST_SKIP() << "needs 2 ranks or more, each with a core of its own";
  if (Comm::world().rank() != 0) return;
  const int held = Comm::world().size() - 1;
  const std::string said = said_of(*judged);
  ASSERT_EQ(judged->found.size(), 1U) << said;
  const Straggler& s = judged->found.front();
  EXPECT_EQ(s.ranks, std::vector<int>{held});
  EXPECT_TRUE(s.confirmed.value_or(false));
  ASSERT_EQ(judged->rounds.size(), 2U);
  for (const PaceRound& round : judged->rounds) {
    ASSERT_EQ(round.iterations, pace_iterations);
    const RankPace& r = round.ranks.back();
    EXPECT_GE(r.late, 13) << s.message;
    ASSERT_TRUE(r.lost_us);
    EXPECT_GE(*r.lost_us, 0.9 * 13 * 100e3 / pace_iterations) << s.message;
  }
  ASSERT_TRUE(s.lost_us);
  EXPECT_GE(*s.lost_us, pace_lost * s.reference_us) << s.message;
  EXPECT_NE(s.message.find(" on average"), std::string::npos) << s.message;
  EXPECT_TRUE(judged->unconfirmed.empty());
}

// The MPI transport with world rank `rank` held `hold_s` on its way out of
// every all-reduce that comes after work (fills), its data sent: as a CPU
// quota holds a rank whose work takes about one slice, whose slice runs out
// in the all-reduce in nearly every iteration. It leaves every such
// all-reduce late, and so comes late to the next.
class LeavesLateTransport final : public ForwardingTransport {
 public:
  LeavesLateTransport(std::unique_ptr<Transport> inner, int rank, double hold_s)
      : ForwardingTransport(std::move(inner)), rank_(rank), hold_s_(hold_s) {}
  void fill(const OpSpec& s) override {
    inner().fill(s);
    worked_ = true;
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    BatchTiming t = inner().time_batch(s, iters, per_iteration);
    if (rank() == rank_ && worked_) std::this_thread::sleep_for(std::chrono::duration<double>(hold_s_));
    worked_ = false;
    return t;
  }
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    return inner().split(sub, color, key);
  }

 private:
  int rank_;
  double hold_s_;
  bool worked_ = false;
};

// A rank that leaves every all-reduce of the rounds 100 ms late comes
// 100 ms late to every next one, some 20 times the others' work: named and
// confirmed, on the time lost outside its work. (Held 20 ms, four times
// their work, it went unnamed on a machine busy with other tests, where the
// others' work took 15 to 25 ms: rightly, by the rule of twice their work.)
// The ranks' clocks are matched in bare all-reduces of the world before and
// after each round: matched by the round's own, by how much later the rank
// left in most of them, the hold read as the clocks' shift and the rank as
// on time in every iteration (a rank held to a tenth of a core went unnamed
// so in one run of the test bed's).
TEST(MultinodeMpi, ARankThatLeavesEveryAllReduceLateIsNamedOnTheTimeLost) {
  const Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "needs 2 ranks or more";
  const Layout layout = rank_per_node_layout(world);
  if (world.broadcast_value(shared_cores(world, layout).empty() ? 0 : 1, 0) != 0)
    GTEST_SKIP() << "needs a core for each rank (ranks sharing cores time the scheduler)";
  const int held = world.size() - 1;
  constexpr double hold_s = 100e-3;
  LeavesLateTransport transport(std::make_unique<MpiTransport>(world), held, hold_s);
  const PaceWork work = size_pace_work(transport, world, unlimited_seconds);
  std::vector<PaceRound> rounds;
  rounds.push_back(run_pace_round(transport, world, layout, work, unlimited_seconds));
  rounds.push_back(run_pace_round(transport, world, layout, work, unlimited_seconds));
  if (world.rank() != 0) return;
  const StragglersResult judged = judge_stragglers(std::move(rounds), layout.hostnames);
  const std::string said = said_of(judged);
  ASSERT_EQ(judged.found.size(), 1U) << said;
  EXPECT_TRUE(judged.unconfirmed.empty()) << said;
  const Straggler& s = judged.found.front();
  EXPECT_EQ(s.ranks, std::vector<int>{held});
  EXPECT_TRUE(s.confirmed.value_or(false));
  EXPECT_NE(s.message.find("so the time was lost outside it"), std::string::npos) << s.message;
  for (const PaceRound& round : judged.rounds) {
    ASSERT_EQ(round.iterations, pace_iterations);
    const RankPace& r = round.ranks.back();
    EXPECT_GE(r.late, pace_iterations - 1) << s.message;        // all but the first
    EXPECT_GE(r.lateness_us, 0.5 * hold_s * 1e6) << s.message;  // its work may be shorter than the others'
  }
}

// All ranks here run on one machine: they share its cores once they
// outnumber them, whatever nodes the layout calls them.
TEST(MultinodeMpi, SharedCoresAreTheRanksBeyondOneMachinesCores) {
  const Comm world = Comm::world();
  const Layout layout = rank_per_node_layout(world);
  const std::vector<SharedCores> shared = shared_cores(world, layout);
  if (world.rank() != 0) {
    EXPECT_TRUE(shared.empty());
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cores = CPU_COUNT(&set);
  if (world.size() <= cores) {
    EXPECT_TRUE(shared.empty());
    return;
  }
  ASSERT_EQ(shared.size(), 1U);
  EXPECT_EQ(shared[0].ranks, world.size());
  EXPECT_EQ(shared[0].cores, cores);
  EXPECT_EQ(shared[0].nodes.size(), static_cast<std::size_t>(world.size()));
}

TEST(MultinodeMpi, BisectionPairsEveryNodeOfEachHalvingAndMeasuresTheFirstPairsAlone) {
  const Comm world = Comm::world();
  MpiTransport transport(world);
  const Layout layout = rank_per_node_layout(world);
  RunConfig config = small_config();
  config.placement.bisection_halvings = 2;
  config.placement.bisection_seed = 5;
  BisectionResult b = run_bisection(config, transport, world, layout);
  if (world.rank() != 0) return;
  analyze_bisection(b, config.placement.oversubscription_limit);
  EXPECT_EQ(b.wrong, 0U);
  EXPECT_EQ(b.seed, 5U);
  EXPECT_EQ(b.bytes, config.pairs.bytes);
  if (world.size() < 2) {
    EXPECT_TRUE(b.halvings.empty());
    EXPECT_FALSE(b.oversubscription);
    return;
  }
  // The node order's cut, then seeded random ones, no cut twice (2 nodes have one cut).
  const std::vector<Halving> plan = plan_bisection(world.size(), 2, 5);
  ASSERT_EQ(b.halvings.size(), world.size() == 2 ? 1U : 2U);
  ASSERT_EQ(b.halvings.size(), plan.size());
  EXPECT_EQ(b.halvings[0].source, "node order");
  for (std::size_t k = 0; k < b.halvings.size(); ++k) {
    const HalvingResult& h = b.halvings[k];
    EXPECT_EQ(h.half_a, plan[k].half_a);
    EXPECT_EQ(h.half_b, plan[k].half_b);
    EXPECT_EQ(h.source, plan[k].source);
    ASSERT_EQ(h.pairs.size(), static_cast<std::size_t>(world.size() / 2));
    double alone = 0;
    double loaded = 0;
    for (const BisectionPair& p : h.pairs) {
      EXPECT_EQ(p.host_a, "h" + std::to_string(p.a));
      EXPECT_EQ(p.host_b, "h" + std::to_string(p.b));
      EXPECT_GT(p.loaded_gbs, 0.0);
      ASSERT_TRUE(p.isolated_gbs);
      EXPECT_GT(*p.isolated_gbs, 0.0);
      alone += *p.isolated_gbs;
      loaded += p.loaded_gbs;
    }
    ASSERT_TRUE(h.oversubscription);
    EXPECT_NEAR(*h.oversubscription, alone / loaded, 1e-12);
  }
  ASSERT_TRUE(b.oversubscription);
  EXPECT_EQ(b.blocking, *b.oversubscription > b.limit);
}

// The MPI transport with its small exchanges (8 bytes; with `large`, its
// larger ones) slowed by `hold_s` an iteration in the first `noisy`
// measurements of them (all, where negative), its sub-transports' counted
// with its own: a rank that waited for a core through one burst, or (all) a
// link that adds a delay.
class NoisyExchangeTransport final : public ForwardingTransport {
 public:
  NoisyExchangeTransport(std::unique_ptr<Transport> inner, double hold_s, int noisy, bool large = false,
                         std::shared_ptr<int> seen = std::make_shared<int>(0))
      : ForwardingTransport(std::move(inner)), hold_s_(hold_s), noisy_(noisy), large_(large), seen_(std::move(seen)) {}
  void prepare(const OpSpec& s) override {
    inner().prepare(s);
    if (held(s)) ++*seen_;
  }
  std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override {
    std::unique_ptr<Transport> part = inner().split(sub, color, key);
    return part ? std::make_unique<NoisyExchangeTransport>(std::move(part), hold_s_, noisy_, large_, seen_) : nullptr;
  }
  BatchTiming time_batch(const OpSpec& s, int iters, bool per_iteration) override {
    BatchTiming t = inner().time_batch(s, iters, per_iteration);
    if (!held(s) || (noisy_ >= 0 && *seen_ > noisy_)) return t;
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s_ * iters));
    t.seconds += hold_s_ * iters;
    for (double& each : t.per_iteration) each += hold_s_;
    return t;
  }

 private:
  [[nodiscard]] bool held(const OpSpec& s) const { return s.op == Op::sendrecv && (s.counts.bytes <= 8) != large_; }
  double hold_s_;
  int noisy_;
  bool large_;
  std::shared_ptr<int> seen_;
};

// Two nodes of two ranks each ("h0", "h1") from four ranks of one machine.
Layout two_nodes_of_two(const Comm& world) {
  return layout_from(world.rank(), {"h0", "h0", "h1", "h1"}, {0, 0, 2, 2}, {0, 1, 0, 1});
}

// The second pass over h0 <-> h1 with rank 0 (h0's rail 0) as `noisy` and
// `hold_s` say (NoisyExchangeTransport), in `bursts` bursts of the small
// message; rank 0's figures.
NodePairs checks_with_noise(const Comm& world, double hold_s, int noisy, int bursts) {
  NoisyExchangeTransport transport(std::make_unique<MpiTransport>(world), world.rank() == 0 ? hold_s : 0.0, noisy);
  std::uint64_t wrong = 0;
  const NodePairs checks = run_pair_checks(small_config(), transport, world, two_nodes_of_two(world),
                                           {PairRound{{1, 0}, -1}}, wrong, 60.0, bursts);
  EXPECT_EQ(wrong, 0U);
  return checks;
}

// A latency suspect is measured again in bursts, each rail on its own, its
// latency the fastest: a rank held off its core for one burst (5 ms an
// exchange, the only burst of one pass) is seen at its healthy figure in
// three, while a link that is slow in every burst (a delay) stays slow.
TEST(MultinodeMpi, ALatencyCheckInBurstsSeesPastOneHeldBurstAndNotPastADelay) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "two nodes of two ranks";
  constexpr double hold_s = 5e-3;
  const NodePairs once = checks_with_noise(world, hold_s, 1, 1);
  const NodePairs bursts = checks_with_noise(world, hold_s, 1, 3);
  const NodePairs delayed = checks_with_noise(world, hold_s, -1, 3);
  if (world.rank() != 0) return;
  for (const NodePairs* pairs : {&once, &bursts, &delayed}) {
    ASSERT_EQ(pairs->rails.size(), 2U);
    ASSERT_TRUE(pairs->nodes.lat(0, 1));
    ASSERT_TRUE(pairs->nodes.bw(0, 1));
    ASSERT_TRUE(pairs->rails[0].lat(0, 1));
    ASSERT_TRUE(pairs->rails[1].lat(0, 1));
    // The node pair's latency is the mean of its rails' fastest.
    EXPECT_DOUBLE_EQ(*pairs->nodes.lat(0, 1), (*pairs->rails[0].lat(0, 1) + *pairs->rails[1].lat(0, 1)) / 2);
    EXPECT_LT(*pairs->rails[1].lat(0, 1), hold_s * 1e6);  // the rail with no noise
  }
  EXPECT_GE(*once.rails[0].lat(0, 1), hold_s * 1e6);
  EXPECT_LT(*bursts.rails[0].lat(0, 1), hold_s * 1e6);
  EXPECT_GE(*delayed.rails[0].lat(0, 1), hold_s * 1e6);
}

// A round of one rail runs that rail's pair alone: its figures and, with
// bursts, its small message's, and none of the other rail's or of the node
// pair (whose figure is its rails' sum).
TEST(MultinodeMpi, ARoundOfOneRailMeasuresThatRailAlone) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "two nodes of two ranks";
  MpiTransport transport(world);
  for (const int bursts : {1, 3}) {
    std::uint64_t wrong = 0;
    const NodePairs checks = run_pair_checks(small_config(), transport, world, two_nodes_of_two(world),
                                             {PairRound{{1, 0}, 1}}, wrong, 60.0, bursts);
    EXPECT_EQ(wrong, 0U);
    if (world.rank() != 0) continue;
    ASSERT_EQ(checks.rails.size(), 2U);
    EXPECT_TRUE(checks.rails[1].bw(0, 1)) << bursts;
    EXPECT_TRUE(checks.rails[1].lat(0, 1)) << bursts;
    EXPECT_FALSE(checks.rails[0].bw(0, 1)) << bursts;
    EXPECT_FALSE(checks.rails[0].lat(0, 1)) << bursts;
    EXPECT_FALSE(checks.nodes.bw(0, 1)) << bursts;
    EXPECT_FALSE(checks.nodes.lat(0, 1)) << bursts;
  }
}

// A link suspect's large message runs the rounds three times over and its
// bandwidth is the fastest: a rank held off its core through one
// measurement (50 ms an exchange) is seen at its healthy rate in the others,
// while a link slow every time stays slow.
TEST(MultinodeMpi, ABandwidthCheckThreeTimesOverSeesPastOneHeldTimeAndNotPastASlowLink) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "two nodes of two ranks";
  constexpr double hold_s = 50e-3;
  const double held_gbs = static_cast<double>(small_config().pairs.bytes) / hold_s / 1e9;
  const auto checks = [&](int noisy, int times) {
    NoisyExchangeTransport transport(std::make_unique<MpiTransport>(world), world.rank() == 0 ? hold_s : 0.0, noisy,
                                     true);
    std::uint64_t wrong = 0;
    const NodePairs pairs = run_pair_checks(small_config(), transport, world, two_nodes_of_two(world),
                                            {PairRound{{1, 0}, -1}}, wrong, unlimited_seconds, 1, times);
    EXPECT_EQ(wrong, 0U);
    return pairs;
  };
  const NodePairs once = checks(1, 1);
  const NodePairs thrice = checks(1, 3);
  const NodePairs slow = checks(-1, 3);
  if (world.rank() != 0) return;
  for (const NodePairs* pairs : {&once, &thrice, &slow}) {
    ASSERT_EQ(pairs->rails.size(), 2U);
    ASSERT_TRUE(pairs->rails[0].bw(0, 1));
    ASSERT_TRUE(pairs->rails[1].bw(0, 1));
    ASSERT_TRUE(pairs->nodes.bw(0, 1));
    EXPECT_GT(*pairs->rails[1].bw(0, 1), 2 * held_gbs);  // the rail with no hold
  }
  EXPECT_LE(*once.rails[0].bw(0, 1), held_gbs);
  EXPECT_GT(*thrice.rails[0].bw(0, 1), 2 * held_gbs);
  EXPECT_LE(*slow.rails[0].bw(0, 1), held_gbs);
  // The node pair's figure is its rails' sum from one round, the fastest round's.
  EXPECT_GT(*thrice.nodes.bw(0, 1), 2 * held_gbs);
}

// The pair matrix's small message runs twice, the second time after every
// round and each rail on its own, and a rail's latency is the fastest: a
// rank held off its core through the rounds' burst (5 ms an exchange) is
// seen at its healthy figure, while a link that adds a delay to every burst
// stays slow.
TEST(MultinodeMpi, APairMatrixsLatencyIsTheFastestOfTwoBurstsPastAHeldOneNotPastADelay) {
  const Comm world = Comm::world();
  if (world.size() != 4) GTEST_SKIP() << "two nodes of two ranks";
  constexpr double hold_s = 5e-3;
  const auto matrix = [&](int noisy) {
    NoisyExchangeTransport transport(std::make_unique<MpiTransport>(world), world.rank() == 0 ? hold_s : 0.0, noisy);
    const PairsResult pairs = run_pairs(small_config(), transport, world, two_nodes_of_two(world));
    EXPECT_EQ(pairs.wrong, 0U);
    return pairs;
  };
  const PairsResult held = matrix(1);
  const PairsResult delayed = matrix(-1);
  if (world.rank() != 0) return;
  for (const PairsResult* pairs : {&held, &delayed}) {
    ASSERT_EQ(pairs->rails.size(), 2U);
    ASSERT_TRUE(pairs->rails[0].lat(0, 1));
    ASSERT_TRUE(pairs->rails[1].lat(0, 1));
    ASSERT_TRUE(pairs->nodes.lat(0, 1));
    // The node pair's latency is the mean of its rails' fastest.
    EXPECT_DOUBLE_EQ(*pairs->nodes.lat(0, 1), (*pairs->rails[0].lat(0, 1) + *pairs->rails[1].lat(0, 1)) / 2);
    EXPECT_LT(*pairs->rails[1].lat(0, 1), hold_s * 1e6);  // the rail with no noise
  }
  EXPECT_LT(*held.rails[0].lat(0, 1), hold_s * 1e6);
  EXPECT_GE(*delayed.rails[0].lat(0, 1), hold_s * 1e6);
}

// The folder every rank writes into: rank 0's scratch folder, named to all.
std::string shared_scratch(const Comm& world, const char* name) {
  std::string dir;
  if (world.rank() == 0) {
    dir = (std::filesystem::temp_directory_path() /
           (std::string("fabricbench-") + name + "-" + std::to_string(::getpid())))
              .string();
    std::filesystem::create_directories(dir);
  }
  return world.broadcast_bytes(dir, 0);
}

TEST(MultinodeMpi, StorageEveryRankWritesReadsAndRemovesItsOwnFile) {
  const Comm world = Comm::world();
  const Layout layout = discover_layout(world);
  RunConfig config;
  config.storage.path = shared_scratch(world, "storage-mpi");
  config.storage.file_bytes = (std::size_t{1} << 20) + 100;  // rounded up to whole 4 KiB blocks
  StorageResult r = run_storage(config, world, layout);
  world.barrier();
  if (world.rank() != 0) return;
  analyze_storage(r);
  const std::uint64_t file = (std::uint64_t{1} << 20) + 4096;
  EXPECT_EQ(r.file_bytes, file);
  EXPECT_EQ(r.files_written, world.size());
  EXPECT_EQ(r.files_removed, world.size());
  EXPECT_EQ(r.bytes_written, file * static_cast<std::uint64_t>(world.size()));
  EXPECT_EQ(r.bytes_read, r.bytes_written);
  EXPECT_EQ(r.wrong_blocks, 0U);
  ASSERT_EQ(r.nodes.size(), 1U);
  EXPECT_EQ(r.nodes[0].files, world.size());
  EXPECT_EQ(r.nodes[0].bytes, r.bytes_written);
  EXPECT_TRUE(r.io_mode == "direct" || r.io_mode == "buffered") << r.io_mode;
  EXPECT_EQ(r.io_note.empty(), r.io_mode == "direct");
  EXPECT_TRUE(std::filesystem::is_empty(config.storage.path));
  std::filesystem::remove_all(config.storage.path);
}

TEST(MultinodeMpi, StorageOnePerNodeWritesOneFilePerNode) {
  const Comm world = Comm::world();
  const Layout layout = rank_per_node_layout(world);
  RunConfig config;
  config.storage.path = shared_scratch(world, "storage-node");
  config.storage.file_bytes = 64 * 1024;
  config.storage.per_node = true;
  config.storage.buffered = true;
  StorageResult r = run_storage(config, world, layout);
  world.barrier();
  if (world.rank() != 0) return;
  analyze_storage(r);
  EXPECT_EQ(r.io_mode, "buffered");
  EXPECT_EQ(r.io_note, "--storage-buffered");
  EXPECT_EQ(r.files_written, world.size());  // one rank per node here
  ASSERT_EQ(r.nodes.size(), static_cast<std::size_t>(world.size()));
  for (const StorageNode& n : r.nodes) {
    EXPECT_EQ(n.files, 1);
    EXPECT_EQ(n.bytes, 64U * 1024U);
  }
  EXPECT_EQ(r.slowest_write_node.has_value(), world.size() > 1);
  EXPECT_TRUE(std::filesystem::is_empty(config.storage.path));
  std::filesystem::remove_all(config.storage.path);
}

TEST(MultinodeMpi, AMissingStorageFolderIsAUsageErrorOnEveryRank) {
  const Comm world = Comm::world();
  const Layout layout = discover_layout(world);
  RunConfig config;
  config.storage.path = "/nonexistent/fabricbench-storage";
  EXPECT_THROW((void)run_storage(config, world, layout), UsageError);
}

}  // namespace
}  // namespace fabricbench
