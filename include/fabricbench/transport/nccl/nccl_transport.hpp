#pragma once
// The NCCL transport: device buffers, one CUDA stream per rank, NCCL
// collectives and grouped send/recv, timed with CUDA events.
//
// Two communicators per transport. The control communicator is
// non-blocking: its initialization, its splits and its teardown are polled
// against the deadline, so a rank that never arrives cannot hang the job.
// The measuring communicator, split from it, is blocking, as nccl-tests'
// are: a non-blocking communicator makes NCCL start a thread for every
// group it launches, which would put host work into every measured
// iteration. Every operation runs on the measuring communicator; waits on
// its work poll the stream and ncclCommGetAsyncError against the deadline,
// and past it the communicator is aborted and a TimeoutError names the op,
// size, rank, host and GPU.
//
// A batch is timed with events around the whole batch, minus the enqueue
// cost: a spin kernel holds the stream while the batch is enqueued, every
// rank enqueues its batch and meets the others at a host barrier, then each
// releases its hold; the start event follows the hold, each iteration is
// followed by an event (for the distribution), and the end event closes the
// batch; t = elapsed / iters. With `graph`, the batch is captured once into a
// CUDA graph and launched behind the hold.
//
// The hold is bounded by what is really queued: NCCL queues several stream
// entries of its own per launch (gpu_wait.hpp), and a stream whose queue is
// full blocks the host inside a launch while the GPU waits for a release
// that never comes. A batch that would not fit is enqueued without the
// hold, so its first iterations may include some enqueue time (as in
// nccl-tests, which never holds). A watchdog releases a hold that the host
// has not released within a few seconds (a launch blocked after all, a rank
// late at the barrier); the batch is then measured again, on every rank.
// Under CUDA_LAUNCH_BLOCKING=1 there is no hold at all, nor for the first
// batch of a new operation, size or placement (the sweep's warm-up, during
// which NCCL makes its connections). Graph batches always fit. Every path
// out of a batch, errors included, releases the hold.
//
// In place, send/recv and all-to-all read and write one buffer. The
// correctness check stages the input into the send buffer first (NCCL's
// point-to-point calls may overwrite data before it is sent); the timed
// batches pass the one buffer as both send and receive buffer, as
// nccl-tests' in-place columns do, with no copy inside the timed loop.
//
// Every call that touches CUDA names the transport's device (DeviceGuard)
// and restores the caller's.
//
// Only built with CUDA; include only where FABRICBENCH_HAVE_CUDA is 1.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/transport/cuda/cuda_support.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

struct NcclOptions {
  int device = 0;                                                // index among the visible devices
  bool graph = false;                                            // --graph
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  // --timeout
  // Capture NCCL's connection log (INIT, NET, ENV, GRAPH) while the world
  // communicator is made and while it connects (the first batch of each new
  // operation, size or placement, and run_once), never in a held batch. Only
  // where this rank is alone in its process: NCCL's log settings are the
  // process's environment, which other ranks' threads would read mid-change.
  bool capture_connections = false;
  // --nccl-diagnostics (NCCL 2.31 and newer): NCCL_RUN_DIAGNOSTICS and
  // NCCL_RUN_RAS_DIAGNOSTICS set before NCCL starts; their lines, which NCCL
  // prints to stdout, go to the connection log instead. Needs
  // capture_connections.
  bool diagnostics = false;
};

class StdoutToFile;

class NcclTransport final : public Transport {
 public:
  // Collective over `comm` (not owned; must outlive the transport): makes the
  // control communicator from a unique id broadcast over `comm` and splits
  // the measuring one from it, on the device `options.device`.
  NcclTransport(const Comm& comm, const NcclOptions& options);
  ~NcclTransport() override;
  NcclTransport(NcclTransport&&) = delete;
  NcclTransport& operator=(NcclTransport&&) = delete;

  [[nodiscard]] std::string_view name() const override { return "nccl"; }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::optional<std::string> unsupported(Op op, DType dtype, RedOp redop) const override;
  void prepare(const OpSpec& spec) override;
  void fill(const OpSpec& spec) override;
  void run_once(const OpSpec& spec) override;
  [[nodiscard]] std::uint64_t verify(const OpSpec& spec) override;
  BatchTiming time_batch(const OpSpec& spec, int iters, bool per_iteration) override;
  void barrier() override;
  double time_p2p(const P2PSpec& spec, int iters) override;
  [[nodiscard]] std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override;
  // Runs `spec` once with NCCL's tuning log switched to a private file
  // (NcclLogCapture) on the group's rank 0, between barriers, so no other
  // rank of this process is inside NCCL while the environment changes; the
  // choice is read on rank 0, where NCCL writes it.
  [[nodiscard]] AlgorithmChoice capture_choice(const OpSpec& spec) override;
  [[nodiscard]] std::optional<std::string> device_text() const override;
  [[nodiscard]] std::optional<ConnectionLog> connection_log() override;
  [[nodiscard]] std::map<std::string, std::string> libraries() const override;

  [[nodiscard]] const GpuDescription& gpu() const { return gpu_; }
  // Device address of this rank's output as verify() reads it, and the
  // transport's stream (for tests that corrupt the output).
  [[nodiscard]] void* output(const OpSpec& spec) const;
  [[nodiscard]] cudaStream_t stream() const { return stream_.get(); }
  // Whether batches may be held (false under CUDA_LAUNCH_BLOCKING=1).
  [[nodiscard]] bool holds() const { return hold_allowed_; }
  // Holds the stream and never releases it, then waits for `spec` behind the
  // hold: the wait must end in TimeoutError within the deadline (tests).
  void run_held_forever(const OpSpec& spec);

 private:
  NcclTransport(const Comm& comm, const NcclOptions& options, NcclComm control);
  void split_measuring();
  [[nodiscard]] std::unique_ptr<StdoutToFile> diagnostics_stdout() const;
  // run_once and time_batch without the connection log.
  void run_plain(const OpSpec& spec);
  BatchTiming timed_batch(const OpSpec& spec, int iters, bool per_iteration);
  // `offset` (bytes, into both buffers): a timed iteration's slot.
  void issue(const OpSpec& spec, bool timed, std::size_t offset = 0);
  [[nodiscard]] std::size_t rotation_offset(const OpSpec& spec, std::size_t iteration) const;
  void settle(const std::string& what);
  void wait(cudaEvent_t event, const std::string& what);
  [[nodiscard]] bool enqueue_batch(const OpSpec& spec, int iters, bool per_iteration, const cudaGraphExec_t graph);
  [[nodiscard]] std::string describe(const OpSpec& spec) const;
  [[nodiscard]] std::chrono::steady_clock::time_point deadline() const;

  // The connection log's capture runs around `step` (see capture_connections).
  template <class Step>
  decltype(auto) logging_connections(bool connects, Step&& step);

  // The device is current while the members are made and unmade.
  std::optional<DeviceGuard> member_device_;
  const Comm* comm_;
  NcclOptions options_;
  int rank_ = 0;
  int size_ = 1;
  GpuDescription gpu_;
  // Made and begun before the control communicator, so NCCL's lines of its
  // making are in it; paused after the measuring communicator is split.
  std::unique_ptr<NcclLogCapture> connection_capture_;
  std::string connection_text_;
  // stdout while a communicator is made, with --nccl-diagnostics.
  std::unique_ptr<StdoutToFile> diagnostics_stdout_;
  int nccl_version_ = 0;  // the loaded library's (ncclGetVersion), not the headers'
  // --graph: communication buffers from ncclMemAlloc where the library has it.
  NcclMemory nccl_memory_;
  bool hold_allowed_ = true;
  int hold_limit_ = 0;  // a lower bound learnt from a watchdog release; 0: none
  // What the last timed batch ran: the first batch of anything else is not held.
  struct TimedKind {
    Op op;
    DType dtype;
    Placement placement;
    std::size_t bytes;
    bool operator==(const TimedKind&) const = default;
  };
  std::optional<TimedKind> last_timed_;
  // Filled by NCCL when a split finishes, on its own thread: it must outlive
  // every wait, including one that ends in a timeout.
  ncclComm_t split_slot_ = nullptr;
  NcclComm control_;
  NcclComm nccl_;
  Stream stream_;
  Event start_;
  Event end_;
  std::vector<Event> marks_;
  MappedHostInts hold_flags_{2};  // [0] release, [1] expired
  DeviceBuffer wrong_{sizeof(unsigned long long)};
  DeviceBuffer send_;
  DeviceBuffer recv_;
  std::unique_ptr<NcclLogCapture> log_capture_;  // made on the first capture, on rank 0
};

}  // namespace fabricbench
