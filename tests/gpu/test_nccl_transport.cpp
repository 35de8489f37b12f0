// The NCCL transport on real GPUs: every op x dtype x redop x placement
// correct, the device pattern equal to the host's byte for byte, corruption
// caught, batches timed (plain, graph, past the held-batch limit, in place),
// communicators torn down and split again and again in one process, the
// transport's device current after the topology probe, and the timeout path.
// One rank on one GPU, then one thread per visible GPU when there are
// several. scripts/gpu-check.sh runs each case in its own process.
#include "fabricbench/transport/nccl/nccl_transport.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fabricbench/comm/layout.hpp"
#include "fabricbench/comm/local_comm.hpp"
#include "fabricbench/engine/gpu_ladder.hpp"
#include "fabricbench/topology/gpu_probe.hpp"
#include "fabricbench/transport/cuda/gpu_wait.hpp"
#include "fabricbench/transport/cuda/kernels.hpp"
#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
namespace {

using namespace std::chrono_literals;

std::vector<RedOp> redops_for(Op op) {
  if (!reduces(op)) return {RedOp::sum};
  return {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
}

// Runs `body(r, transport)` on a thread per member of `group`, each with
// its own NcclTransport on GPU r. What a body returns, or the message of
// what it throws, is that member's failure (a throw also fails the group, so
// the others leave their waits); every member must end with none.
template <typename Body>
void on_every_gpu(std::vector<Comm>& group, Body&& body) {
  std::vector<std::string> failures(group.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        NcclOptions options;
        options.device = static_cast<int>(r);
        options.timeout = 60s;
        NcclTransport t(group[r], options);
        failures[r] = body(static_cast<int>(r), t);
      } catch (const std::exception& e) {
        failures[r] = e.what();
        fail_group(group[r], e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

// Runs every combination on every member of `group`; wrong counts fail.
void check_all(std::vector<Comm>& group) {
  const int n = static_cast<int>(group.size());
  on_every_gpu(group, [n](int, NcclTransport& t) {
    std::string wrongs;
    for (const Op op : all_ops())
      for (const DType d : all_dtypes())
        for (const RedOp redop : redops_for(op))
          for (const Placement p : {Placement::out_of_place, Placement::in_place}) {
            // fp8 on GPUs before compute capability 9.0, and fp8 avg, are refused with a reason.
            if (t.unsupported(op, d, redop)) continue;
            const Counts c = counts_for(op, d, 4096 * element_size(d) * static_cast<std::size_t>(n), n);
            const OpSpec spec{op, d, redop, p, n - 1, c};
            t.prepare(spec);
            t.fill(spec);
            t.barrier();
            t.run_once(spec);
            const std::uint64_t wrong = t.verify(spec);
            if (wrong != 0)
              wrongs += fmt::format("{} {} {} {}: {} wrong; ", name(op), name(d), name(redop), name(p), wrong);
          }
    return wrongs;
  });
}

int visible() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

TEST(NcclTransport, EveryOpDtypeRedopPlacementOnOneGpu) {
  std::vector<Comm> group = make_thread_comms(1, 120s);
  check_all(group);
}

TEST(NcclTransport, EveryOpOnEveryVisibleGpu) {
  const int n = visible();
  if (n < 2) GTEST_SKIP() << "one GPU visible";
  std::vector<Comm> group = make_thread_comms(n, 120s);
  check_all(group);
}

// The GPU-count ladder on every visible GPU, one thread each as one node's
// ranks: each row's sets split by ncclCommSplit, the idle GPUs with no
// colour, every set's data checked.
TEST(NcclTransport, GpuLadderOnEveryVisibleGpu) {
  const int n = visible();
  if (n < 2) GTEST_SKIP() << "one GPU visible";
  std::vector<Comm> group = make_thread_comms(n, 120s);
  GpuLadderResult lead;
  on_every_gpu(group, [&group, &lead](int r, NcclTransport& t) {
    const Comm& comm = group[static_cast<std::size_t>(r)];
    RunConfig config;
    config.iterations.fixed_iters = 3;
    config.iterations.warmup = 1;
    config.scale.bytes = std::size_t{1} << 20;
    GpuLadderResult g = run_gpu_ladder(config, t, comm, discover_layout(comm), {LinkMatrix{}});
    if (r == 0) lead = std::move(g);
    return std::string();
  });
  EXPECT_EQ(lead.gpus_per_node, n);
  EXPECT_EQ(lead.levels.size(), gpu_ladder_sizes(n, {}).size() * 2);  // allreduce and allgather
  for (const GpuLevelResult& l : lead.levels) {
    ASSERT_EQ(l.sets.size(), 1U);
    EXPECT_EQ(l.sets[0].wrong, 0U);
    EXPECT_GT(l.sets[0].busbw_gbs, 0.0);
  }
}

TEST(NcclTransport, DeviceFillEqualsHostPatternByteForByte) {
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclTransport t(group[0], NcclOptions{});
  for (const Op op : all_ops())
    for (const DType d : all_dtypes())
      for (const RedOp redop : redops_for(op)) {
        const int n = 5;  // pattern of rank 2 of 5, as if there were five
        const Counts c = counts_for(op, d, 3000 * element_size(d), n);
        const kernels::PatternLaunch l{op, d, redop, 2, n, 0, c.param, c.send, c.recv};
        DeviceBuffer buffer(c.send * element_size(d));
        ASSERT_EQ(kernels::fill_input(buffer.get(), l, t.stream()), cudaSuccess);
        std::vector<std::byte> device(buffer.size());
        std::vector<std::byte> host(buffer.size());
        ASSERT_EQ(cudaMemcpyAsync(device.data(), buffer.get(), device.size(), cudaMemcpyDeviceToHost, t.stream()),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(t.stream()), cudaSuccess);
        pattern::fill_input(op, d, redop, 2, n, 0, c, host);
        ASSERT_EQ(device, host) << name(op) << ' ' << name(d) << ' ' << name(redop);
      }
}

TEST(NcclTransport, CorruptionIsCaught) {
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclTransport t(group[0], NcclOptions{});
  for (const DType d : {DType::float32, DType::half, DType::int8}) {
    const Counts c = counts_for(Op::allreduce, d, 1 << 16, 1);
    const OpSpec spec{Op::allreduce, d, RedOp::sum, Placement::out_of_place, 0, c};
    t.prepare(spec);
    t.fill(spec);
    t.run_once(spec);
    ASSERT_EQ(t.verify(spec), 0U);
    ASSERT_EQ(kernels::fill_value(static_cast<std::byte*>(t.output(spec)) + 7 * element_size(d), d, 3,
                                  pattern::garbage_value(d), t.stream()),
              cudaSuccess);
    EXPECT_EQ(t.verify(spec), 3U) << name(d);
  }
}

TEST(NcclTransport, BatchesAreTimedPlainAndAsGraph) {
  for (const bool graph : {false, true}) {
    std::vector<Comm> group = make_thread_comms(1, 60s);
    NcclOptions options;
    options.graph = graph;
    NcclTransport t(group[0], options);
    // Out of place: on one rank NCCL makes an in-place all-reduce a no-op,
    // so its batch would be events only and could read 0. Out of place it
    // is a 1 MiB copy per iteration.
    const Counts c = counts_for(Op::allreduce, DType::float32, 1 << 20, 1);
    const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
    t.prepare(spec);
    for (const int iters : {1, 20, 600}) {
      const BatchTiming b = t.time_batch(spec, iters, true);
      EXPECT_GT(b.seconds, 0.0);
      ASSERT_EQ(b.per_iteration.size(), static_cast<std::size_t>(iters));
      double sum = 0;
      for (const double s : b.per_iteration) sum += s;
      // The stamps telescope to the batch but for the last stamp's distance
      // to the end event; CUDA events resolve about 0.5 us each.
      EXPECT_NEAR(sum, b.seconds, b.seconds * 0.01 + 2e-6) << "graph " << graph;
    }
  }
}

TEST(NcclTransport, BatchesPastTheHeldLimitAndInPlacePointToPointAreTimed) {
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclTransport t(group[0], NcclOptions{});
  for (const Op op : {Op::sendrecv, Op::alltoall, Op::allreduce})
    for (const Placement p : {Placement::out_of_place, Placement::in_place}) {
      const Counts c = counts_for(op, DType::float32, 1 << 16, 1);
      const OpSpec spec{op, DType::float32, RedOp::sum, p, 0, c};
      t.prepare(spec);
      // Twice the held limit: enqueued without the hold, never stalls.
      const int iters = 2 * held_iteration_limit(op, 1, true) + 1;
      const BatchTiming b = t.time_batch(spec, iters, true);
      EXPECT_GT(b.seconds, 0.0) << name(op) << ' ' << name(p);
      EXPECT_EQ(b.per_iteration.size(), static_cast<std::size_t>(iters));
      // The checked run still stages in place and is right.
      t.fill(spec);
      t.run_once(spec);
      EXPECT_EQ(t.verify(spec), 0U) << name(op) << ' ' << name(p);
    }
}

TEST(NcclTransport, CommunicatorsComeAndGoInOneProcess) {
  // Finalize, then poll, then destroy: a destroy while the finalize is in
  // progress would leave this thread inside an NCCL group, and every later
  // transport's calls would only queue.
  for (int round = 0; round < 3; ++round) {
    std::vector<Comm> group = make_thread_comms(1, 60s);
    NcclOptions options;
    options.timeout = 30s;
    NcclTransport t(group[0], options);
    const Counts c = counts_for(Op::allreduce, DType::float32, 1 << 20, 1);
    const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
    t.prepare(spec);
    t.fill(spec);
    t.run_once(spec);
    EXPECT_EQ(t.verify(spec), 0U) << "round " << round;
    // Split after split, as the ladder and the pair rounds do.
    for (int split = 0; split < 3; ++split) {
      const Comm sub = group[0].split(0, 0);
      const std::unique_ptr<Transport> part = t.split(sub, 0, 0);
      ASSERT_NE(part, nullptr);
      part->prepare(spec);
      part->fill(spec);
      part->run_once(spec);
      EXPECT_EQ(part->verify(spec), 0U) << "round " << round << " split " << split;
      EXPECT_GT(part->time_batch(spec, 10, false).seconds, 0.0);
    }
  }
}

TEST(NcclTransport, TheTransportsDeviceIsCurrentAfterTheTopologyProbe) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const int mine = count - 1;  // the probe visits every GPU; the last one is the one it used to leave current
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclOptions options;
  options.device = mine;
  NcclTransport t(group[0], options);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0) << "the transport left its device current";
  const std::unique_ptr<GpuInfoSource> probe = make_system_gpu_source();
  const GpuReport report = probe->query();
  ASSERT_EQ(report.gpus.size(), static_cast<std::size_t>(count));
  const GpuBandwidth bandwidth = probe->measure();
  for (const std::string& note : bandwidth.notes) ADD_FAILURE() << note;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0) << "the probe left GPU " << current << " current";
  // The transport's buffers and stream live on its own device.
  const Counts c = counts_for(Op::allreduce, DType::float32, 1 << 20, 1);
  const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
  t.prepare(spec);
  t.fill(spec);
  t.run_once(spec);
  EXPECT_EQ(t.verify(spec), 0U);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, t.output(spec)), cudaSuccess);
  EXPECT_EQ(attributes.device, mine);
  int stream_device = -1;
  ASSERT_EQ(cudaStreamGetDevice(t.stream(), &stream_device), cudaSuccess);
  EXPECT_EQ(stream_device, mine);
  EXPECT_GT(t.time_batch(spec, 20, true).seconds, 0.0);
}

// Host copies at once: every GPU alone and all of them together, each with a
// rate, and the device left current as it was.
TEST(TopologyGpu, HostCopiesAtOnceHaveARatePerGpu) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::unique_ptr<GpuInfoSource> probe = make_system_gpu_source();
  ASSERT_EQ(probe->query().gpus.size(), static_cast<std::size_t>(count));
  CopyGroup all{"all GPUs", std::nullopt, {}};
  for (int d = 0; d < count; ++d) all.gpus.push_back(d);
  const ConcurrentCopies copies = probe->measure_concurrent({all});
  for (const std::string& note : copies.notes) ADD_FAILURE() << note;
  EXPECT_FALSE(copies.method.empty());
  ASSERT_EQ(copies.copies.size(), 2U);  // host-to-device, device-to-host
  for (const ConcurrentCopy& c : copies.copies) {
    EXPECT_EQ(c.gpus, all.gpus);
    ASSERT_EQ(c.alone_gbs.size(), all.gpus.size());
    ASSERT_EQ(c.at_once_gbs.size(), all.gpus.size());
    for (std::size_t i = 0; i < all.gpus.size(); ++i) {
      EXPECT_GT(c.alone_gbs[i].value_or(0), 0.0);
      EXPECT_GT(c.at_once_gbs[i].value_or(0), 0.0);
    }
  }
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
}

TEST(NcclTransport, NoHoldUnderCudaLaunchBlocking) {
  // The runtime reads CUDA_LAUNCH_BLOCKING once per process (gpu-check.sh
  // runs the binary under it); the transport's own reading is checked here.
  ASSERT_EQ(setenv("CUDA_LAUNCH_BLOCKING", "1", 1), 0);  // NOLINT(concurrency-mt-unsafe): no other thread yet
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclTransport t(group[0], NcclOptions{});
  ASSERT_EQ(unsetenv("CUDA_LAUNCH_BLOCKING"), 0);  // NOLINT(concurrency-mt-unsafe)
  EXPECT_FALSE(t.holds());
  const Counts c = counts_for(Op::allreduce, DType::float32, 4096, 1);
  const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
  t.prepare(spec);
  EXPECT_GT(t.time_batch(spec, 5, true).seconds, 0.0);
  std::vector<Comm> other = make_thread_comms(1, 60s);
  EXPECT_TRUE(NcclTransport(other[0], NcclOptions{}).holds());
}

TEST(NcclTransport, AHoldThatNeverReleasesEndsInAnAbortWithinTheDeadline) {
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclOptions options;
  options.timeout = 2s;
  NcclTransport t(group[0], options);
  const Counts c = counts_for(Op::allreduce, DType::float32, 4096, 1);
  const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
  t.prepare(spec);
  const auto start = std::chrono::steady_clock::now();
  try {
    t.run_held_forever(spec);
    FAIL() << "the wait returned";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("allreduce float"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("aborted"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
}

TEST(NcclTransport, ATimedOutTransportIsTornDownWithinTheDeadline) {
  // The hold is released on the way out, and the destructor's own wait has
  // a deadline: no stall to the spin kernel's expiry.
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<Comm> group = make_thread_comms(1, 60s);
    NcclOptions options;
    options.timeout = 2s;
    NcclTransport t(group[0], options);
    const Counts c = counts_for(Op::allreduce, DType::float32, 4096, 1);
    const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
    t.prepare(spec);
    EXPECT_THROW(t.run_held_forever(spec), TimeoutError);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  // The process is still usable: a new transport works.
  std::vector<Comm> group = make_thread_comms(1, 60s);
  NcclTransport t(group[0], NcclOptions{});
  const Counts c = counts_for(Op::allreduce, DType::float32, 4096, 1);
  const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
  t.prepare(spec);
  t.fill(spec);
  t.run_once(spec);
  EXPECT_EQ(t.verify(spec), 0U);
}

// NCCL's algorithm read from its tuning log for one iteration: on rank 0 a
// name (with two GPUs or more; one rank takes NCCL's single-rank path, which
// chooses no algorithm and says so), and the caller's NCCL_DEBUG back after.
TEST(NcclTransport, CaptureNamesNcclsAlgorithmAndRestoresTheLog) {
  const int n = std::max(1, std::min(visible(), 8));
  ::setenv("NCCL_DEBUG", "WARN", 1);
  std::vector<Comm> group = make_thread_comms(n, 60s);
  std::vector<AlgorithmChoice> choices(static_cast<std::size_t>(n));
  std::vector<AlgorithmChoice> p2p(static_cast<std::size_t>(n));
  on_every_gpu(group, [n, &choices, &p2p](int r, NcclTransport& t) {
    const Counts c = counts_for(Op::allreduce, DType::float32, std::size_t{64} << 20, n);
    const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::out_of_place, 0, c};
    t.prepare(spec);
    choices[static_cast<std::size_t>(r)] = t.capture_choice(spec);
    OpSpec sr = spec;
    sr.op = Op::sendrecv;
    sr.counts = counts_for(Op::sendrecv, DType::float32, std::size_t{1} << 20, n);
    t.prepare(sr);
    p2p[static_cast<std::size_t>(r)] = t.capture_choice(sr);
    return std::string();
  });
  const AlgorithmChoice& first = choices[0];
  if (n >= 2) {
    ASSERT_TRUE(first.algorithm) << first.note;
    EXPECT_TRUE(first.protocol) << first.note;
  } else {
    EXPECT_TRUE(first.algorithm || first.note == "NCCL wrote no tuning line for AllReduce in the captured iteration")
        << first.note;
  }
  EXPECT_FALSE(p2p[0].algorithm);
  EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "WARN");
  EXPECT_EQ(std::getenv("NCCL_DEBUG_SUBSYS"), nullptr);
  EXPECT_EQ(std::getenv("NCCL_DEBUG_FILE"), nullptr);
  ::unsetenv("NCCL_DEBUG");
}

}  // namespace
}  // namespace fabricbench
