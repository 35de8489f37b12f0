#pragma once
// What the collective library chose for one operation: NCCL's algorithm and
// protocol, read from NCCL's own tuning log. Host-side (no CUDA): the log
// parser and the switching of NCCL's log to a private file are here, so they
// are tested where no GPU exists; the NCCL transport calls them around one
// extra iteration of each measured point.
//
// The line NCCL 2.24 to 2.28 writes (src/enqueue.cc, on rank 0 of the
// communicator, when NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS holds TUNING):
//   "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}"
// after NCCL's prefix "host:pid:tid [dev] NCCL INFO ", e.g.
//   node1:4242:4242 [0] NCCL INFO AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}
// NCCL 2.27 and 2.28 write, for their symmetric-memory kernels
// (src/scheduler/symmetric_sched.cc in 2.28):
//   "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d nWorks %d"
// NCCL 2.23 wrote numbers ("%s: %ld Bytes -> Algo %d proto %d time %f"), and
// 2.19 to 2.22 the same without the function name; both are read, the
// numbers mapped through NCCL's enum order of those versions (algorithms
// TREE RING COLLNET_DIRECT COLLNET_CHAIN NVLS NVLS_TREE PAT, protocols LL
// LL128 SIMPLE).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "fabricbench/core/types.hpp"
#include "fabricbench/records/sweep.hpp"

namespace fabricbench {

// The choice on a transport that does not see one (the MPI host transport).
AlgorithmChoice mpi_library_choice();
// The choice of an op that is point-to-point in NCCL (send/recv, all-to-all).
AlgorithmChoice point_to_point_choice(Op op);

// One tuning line of NCCL's log, as read.
struct TuningLine {
  std::string function;  // "AllReduce"; empty in the 2.19-2.22 form
  std::uint64_t bytes = 0;
  std::string algorithm;  // "RING"; "SYMMETRIC" for a symmetric kernel
  std::optional<std::string> protocol;
  std::optional<std::string> kernel;  // a symmetric kernel's name
  std::optional<int> channel_lo;
  std::optional<int> channel_hi;
};

// Reads one line of NCCL's log (with or without NCCL's prefix); nullopt when
// it is not a tuning line of a known form.
std::optional<TuningLine> parse_nccl_tuning_line(std::string_view line);

// NCCL's name of a collective as its log writes it ("AllReduce"); empty for
// the point-to-point ops, which write no tuning line.
std::string_view nccl_function_name(Op op);

// The choice for `op` from the log of one iteration: the first tuning line of
// that function. A log without one gives a choice with the reason in `note`.
AlgorithmChoice choice_from_nccl_log(std::string_view log, Op op);

// What the file at `path` (in a private folder; not followed if a link)
// holds, at most `limit` bytes, and the file removed; empty when there is none.
std::string take_private_file(const std::string& path, std::size_t limit);

// Switches NCCL's log to a private file for one iteration (or one
// connection step) and back; begin() and finish() may alternate many times.
//
// NCCL reads NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE when its log
// starts, and again after ncclResetDebugInit(): begin() sets the three
// (INFO, TUNING, a file in a 0700 folder of its own) and calls `reset`;
// finish() puts the caller's values back, calls `reset` again and returns
// what the file holds. A caller that set NCCL_DEBUG_FILE itself keeps its
// log: NCCL opens that file with "w" on every restart, so switching back
// would truncate it; available() is false then and reason() says so. The
// environment is changed from the calling thread only, between operations.
class NcclLogCapture {
 public:
  using Reset = std::function<void()>;
  using Getenv = std::function<const char*(const char*)>;
  // `reset`: NCCL's ncclResetDebugInit, or empty when the library has none.
  // `subsystems`: NCCL_DEBUG_SUBSYS while capturing ("TUNING" for the
  // algorithm; "INIT,NET,ENV,GRAPH" for how the ranks connected).
  NcclLogCapture(Reset reset, const Getenv& getenv, std::string subsystems = "TUNING");
  ~NcclLogCapture();
  NcclLogCapture(const NcclLogCapture&) = delete;
  NcclLogCapture& operator=(const NcclLogCapture&) = delete;

  [[nodiscard]] bool available() const { return reason_.empty(); }
  [[nodiscard]] const std::string& reason() const { return reason_; }
  // Where NCCL writes while capturing (for tests).
  [[nodiscard]] const std::string& file() const { return file_; }

  void begin();
  std::string finish();

 private:
  struct Saved {
    const char* name;
    std::optional<std::string> value;
  };
  void restore();

  Reset reset_;
  std::string subsystems_;
  std::string reason_;
  std::string folder_;
  std::string file_;
  bool capturing_ = false;
  Saved saved_[3] = {{"NCCL_DEBUG", {}}, {"NCCL_DEBUG_SUBSYS", {}}, {"NCCL_DEBUG_FILE", {}}};
};

}  // namespace fabricbench
