// The NCCL transport on real GPUs: every op x dtype x redop x placement
// correct, the device pattern equal to the host's byte for byte, corruption
// caught, batches timed (plain and graph), and the timeout path. One rank on
// one GPU, then one thread per visible GPU when there are several.
#include "fabricbench/transport/nccl/nccl_transport.hpp"

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fabricbench/comm/local_comm.hpp"
#include "fabricbench/transport/cuda/kernels.hpp"
#include "fabricbench/transport/pattern.hpp"

namespace fabricbench {
namespace {

using namespace std::chrono_literals;

std::vector<RedOp> redops_for(Op op) {
  if (!reduces(op)) return {RedOp::sum};
  return {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
}

// Runs every combination on every member of `group`; returns wrong counts.
void check_all(std::vector<Comm>& group) {
  const int n = static_cast<int>(group.size());
  std::vector<std::string> failures(group.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        NcclOptions options;
        options.device = r;
        options.timeout = 60s;
        NcclTransport t(group[static_cast<std::size_t>(r)], options);
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
                  failures[static_cast<std::size_t>(r)] +=
                      fmt::format("{} {} {} {}: {} wrong; ", name(op), name(d), name(redop), name(p), wrong);
              }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
        fail_group(group[static_cast<std::size_t>(r)], e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
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
    const Counts c = counts_for(Op::allreduce, DType::float32, 1 << 20, 1);
    const OpSpec spec{Op::allreduce, DType::float32, RedOp::sum, Placement::in_place, 0, c};
    t.prepare(spec);
    for (const int iters : {1, 20, 600}) {
      const BatchTiming b = t.time_batch(spec, iters, true);
      EXPECT_GT(b.seconds, 0.0);
      ASSERT_EQ(b.per_iteration.size(), static_cast<std::size_t>(iters));
      double sum = 0;
      for (const double s : b.per_iteration) sum += s;
      EXPECT_NEAR(sum, b.seconds, b.seconds * 0.01 + 1e-6) << "graph " << graph;
    }
  }
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

}  // namespace
}  // namespace fabricbench
