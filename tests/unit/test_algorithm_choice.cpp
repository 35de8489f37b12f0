// NCCL's tuning log read back: lines in the forms NCCL writes them (the 2.28
// format strings of src/enqueue.cc and src/scheduler/symmetric_sched.cc, and
// the numbered forms of 2.19-2.23), and the switching of NCCL's log to a
// private file and back.

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "fabricbench/transport/algorithm_choice.hpp"

namespace fabricbench {
namespace {

// As NCCL 2.28 writes them with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING: the
// prefix is "hostname:pid:tid [cudaDev] NCCL INFO " (src/debug.cc).
constexpr const char* ring_line =
    "gpu-a-01:51234:51234 [0] NCCL INFO AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}";
constexpr const char* nvls_line =
    "gpu-a-01:51234:51234 [0] NCCL INFO AllReduce: 4294967296 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}";
constexpr const char* allgather_line =
    "gpu-a-01:51234:51234 [0] NCCL INFO AllGather: 131072 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..7}";
constexpr const char* symmetric_line =
    "gpu-a-01:51234:51234 [0] NCCL INFO AllReduce [Symmetric]: 1048576 Bytes -> Kernel AllReduce_AGxLLMC_R "
    "nchannels 16 nthreads 512 nWorks 1";

TEST(NcclTuningLine, ReadsTheFormOfNccl228) {
  const auto t = parse_nccl_tuning_line(ring_line);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "AllReduce");
  EXPECT_EQ(t->bytes, 268435456U);
  EXPECT_EQ(t->algorithm, "RING");
  EXPECT_EQ(t->protocol, "SIMPLE");
  EXPECT_EQ(t->channel_lo, 0);
  EXPECT_EQ(t->channel_hi, 31);
  EXPECT_FALSE(t->kernel);

  const auto n = parse_nccl_tuning_line(nvls_line);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->bytes, 4294967296U);  // beyond 32 bits
  EXPECT_EQ(n->algorithm, "NVLS");
  EXPECT_EQ(n->channel_hi, 15);
}

TEST(NcclTuningLine, ReadsTheMessageWithoutPrefixOrWithATimestamp) {
  const auto bare = parse_nccl_tuning_line("ReduceScatter: 65536 Bytes -> Algo PAT proto LL channel{Lo..Hi}={0..0}\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->function, "ReduceScatter");
  EXPECT_EQ(bare->algorithm, "PAT");
  EXPECT_EQ(bare->protocol, "LL");
  // NCCL_DEBUG_TIMESTAMP_LEVELS puts a time before the host.
  const auto stamped = parse_nccl_tuning_line(
      "[2026-12-01 02:30:11] gpu-a-01:7:9 [3] NCCL INFO AllReduce: 1024 Bytes -> Algo NVLS_TREE proto LL128 "
      "channel{Lo..Hi}={2..5}");
  ASSERT_TRUE(stamped);
  EXPECT_EQ(stamped->algorithm, "NVLS_TREE");
  EXPECT_EQ(stamped->protocol, "LL128");
  EXPECT_EQ(stamped->channel_lo, 2);
}

TEST(NcclTuningLine, ReadsSymmetricKernels) {
  const auto t = parse_nccl_tuning_line(symmetric_line);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "AllReduce");
  EXPECT_EQ(t->algorithm, "SYMMETRIC");
  EXPECT_EQ(t->kernel, "AllReduce_AGxLLMC_R");
  EXPECT_FALSE(t->protocol);
  EXPECT_EQ(t->channel_hi, 15);
}

TEST(NcclTuningLine, ReadsTheNumberedFormsOfOlderNccl) {
  // 2.23: "%s: %ld Bytes -> Algo %d proto %d time %f"
  const auto v223 =
      parse_nccl_tuning_line("h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 36.514999");
  ASSERT_TRUE(v223);
  EXPECT_EQ(v223->function, "AllReduce");
  EXPECT_EQ(v223->algorithm, "RING");
  EXPECT_EQ(v223->protocol, "SIMPLE");
  // 2.19-2.22: "%ld Bytes -> Algo %d proto %d time %f"
  const auto v221 = parse_nccl_tuning_line("h:1:1 [0] NCCL INFO 8388608 Bytes -> Algo 4 proto 2 time 20.123000");
  ASSERT_TRUE(v221);
  EXPECT_EQ(v221->function, "");
  EXPECT_EQ(v221->algorithm, "NVLS");
  const auto odd = parse_nccl_tuning_line("h:1:1 [0] NCCL INFO 8 Bytes -> Algo 9 proto -1 time 1.0");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->algorithm, "Unknown (9)");
  EXPECT_EQ(odd->protocol, "Unknown (-1)");
}

TEST(NcclTuningLine, RefusesOtherLines) {
  for (const char* line : {
           "",
           "gpu-a-01:51234:51234 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7",
           "gpu-a-01:51234:51234 [0] NCCL INFO NCCL_DEBUG_SUBSYS set by environment to TUNING",
           "gpu-a-01:51234:51234 [0] NCCL INFO AllReduce: x Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}",
           "AllReduce: 99999999999999999999999 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}",
           "AllReduce: 1024 Bytes -> Algo RING",
       })
    EXPECT_FALSE(parse_nccl_tuning_line(line)) << line;
}

TEST(NcclTuningLog, TakesTheFirstLineOfTheOpsFunction) {
  const std::string log = std::string("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 - Init COMPLETE\n") +
                          allgather_line + "\n" + nvls_line + "\n" + ring_line + "\n";
  const AlgorithmChoice ar = choice_from_nccl_log(log, Op::allreduce);
  EXPECT_EQ(ar.algorithm, "NVLS");
  EXPECT_EQ(ar.protocol, "SIMPLE");
  EXPECT_EQ(ar.note, "");
  const AlgorithmChoice ag = choice_from_nccl_log(log, Op::allgather);
  EXPECT_EQ(ag.algorithm, "RING");
  EXPECT_EQ(ag.protocol, "LL128");
  const AlgorithmChoice bc = choice_from_nccl_log(log, Op::broadcast);
  EXPECT_FALSE(bc.algorithm);
  EXPECT_EQ(bc.note, "NCCL wrote no tuning line for Broadcast in the captured iteration");
  const AlgorithmChoice sym = choice_from_nccl_log(symmetric_line, Op::allreduce);
  EXPECT_EQ(sym.algorithm, "SYMMETRIC");
  EXPECT_FALSE(sym.protocol);
  EXPECT_EQ(sym.note, "NCCL symmetric-memory kernel AllReduce_AGxLLMC_R");
}

TEST(NcclTuningLog, PointToPointOpsAndMpiHaveNoAlgorithm) {
  const AlgorithmChoice p = choice_from_nccl_log(ring_line, Op::sendrecv);
  EXPECT_FALSE(p.algorithm);
  EXPECT_FALSE(p.protocol);
  EXPECT_EQ(p.note, "sendrecv is point-to-point in NCCL (grouped send/recv): no collective algorithm");
  EXPECT_EQ(choice_from_nccl_log("", Op::alltoall), point_to_point_choice(Op::alltoall));
  const AlgorithmChoice mpi = mpi_library_choice();
  EXPECT_FALSE(mpi.algorithm);
  EXPECT_NE(mpi.note.find("MPI library"), std::string::npos);
}

// The capture sets NCCL's three variables for one iteration, restarts NCCL's
// log, and puts the caller's values back; what NCCL wrote comes back once.
TEST(NcclLogCapture, SwitchesTheLogAndRestoresTheCallersSettings) {
  ::setenv("NCCL_DEBUG", "WARN", 1);
  ::unsetenv("NCCL_DEBUG_SUBSYS");
  ::unsetenv("NCCL_DEBUG_FILE");
  int resets = 0;
  std::map<std::string, std::string> seen;
  std::string folder;
  {
    NcclLogCapture capture([&] { ++resets; }, [](const char* n) { return std::getenv(n); });
    ASSERT_TRUE(capture.available()) << capture.reason();
    folder = capture.file().substr(0, capture.file().rfind('/'));
    capture.begin();
    EXPECT_EQ(resets, 1);
    for (const char* n : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}) seen[n] = std::getenv(n);
    {
      // What NCCL does while the iteration runs.
      std::ofstream log(seen["NCCL_DEBUG_FILE"]);
      log << ring_line << '\n';
    }
    const std::string text = capture.finish();
    EXPECT_EQ(resets, 2);
    EXPECT_EQ(choice_from_nccl_log(text, Op::allreduce).algorithm, "RING");
    EXPECT_STREQ(std::getenv("NCCL_DEBUG"), "WARN");
    EXPECT_EQ(std::getenv("NCCL_DEBUG_SUBSYS"), nullptr);
    EXPECT_EQ(std::getenv("NCCL_DEBUG_FILE"), nullptr);
    // A second capture starts from an empty file.
    capture.begin();
    EXPECT_EQ(capture.finish(), "");
    EXPECT_EQ(resets, 4);
  }
  EXPECT_EQ(seen["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(seen["NCCL_DEBUG_SUBSYS"], "TUNING");
  EXPECT_EQ(seen["NCCL_DEBUG_FILE"], folder + "/tuning.log");
  EXPECT_NE(folder.find("fabricbench-nccl-"), std::string::npos);
  struct stat st {};
  EXPECT_NE(::stat(folder.c_str(), &st), 0);  // removed with the capture
  ::unsetenv("NCCL_DEBUG");
}

TEST(NcclLogCapture, LeavesACallersLogFileAlone) {
  const std::map<std::string, std::string> env{{"NCCL_DEBUG_FILE", "/var/log/nccl.%h.%p"}};
  const auto getenv = [&env](const char* n) -> const char* {
    const auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  int resets = 0;
  NcclLogCapture capture([&] { ++resets; }, getenv);
  EXPECT_FALSE(capture.available());
  EXPECT_NE(capture.reason().find("NCCL_DEBUG_FILE is set"), std::string::npos);
  capture.begin();
  EXPECT_EQ(capture.finish(), "");
  EXPECT_EQ(resets, 0);
  NcclLogCapture no_reset({}, [](const char*) -> const char* { return nullptr; });
  EXPECT_FALSE(no_reset.available());
  EXPECT_NE(no_reset.reason().find("ncclResetDebugInit"), std::string::npos);
}

}  // namespace
}  // namespace fabricbench
