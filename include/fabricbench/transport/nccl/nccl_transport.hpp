#pragma once
// The NCCL transport: device buffers, one CUDA stream per rank, NCCL
// collectives and grouped send/recv, timed with CUDA events.
//
// A batch is timed the way nccl-tests times it, minus the enqueue cost: a
// spin kernel holds the stream while the whole batch is enqueued, the start
// event follows the hold, each iteration is followed by an event (for the
// distribution), and the end event closes the batch; t = elapsed / iters.
// With `graph`, the batch is captured once into a CUDA graph and launched
// behind the hold. Every wait polls the stream and ncclCommGetAsyncError
// against a deadline; past it the communicator is aborted and a TimeoutError
// names the op, size, rank, host and GPU.
//
// Caveat: a stream holds a bounded number of pending launches (about a
// thousand); a batch that would not fit behind the hold is enqueued without
// it, so its first iterations may include some enqueue time (as in
// nccl-tests, which never holds). Graph batches always fit.
//
// In place, send/recv and all-to-all read and write one buffer, which NCCL's
// point-to-point calls cannot do safely; the input is staged into the send
// buffer with a device copy that is part of the timed iteration.
//
// Only built with CUDA; include only where FABRICBENCH_HAVE_CUDA is 1.

#include <chrono>
#include <map>
#include <memory>
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
};

class NcclTransport final : public Transport {
 public:
  // Collective over `comm` (not owned; must outlive the transport): selects
  // the device, makes the communicator from a unique id broadcast over `comm`.
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
  [[nodiscard]] std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override;
  [[nodiscard]] std::optional<std::string> device_text() const override;
  [[nodiscard]] std::map<std::string, std::string> libraries() const override;

  [[nodiscard]] const GpuDescription& gpu() const { return gpu_; }
  // Device address of this rank's output as verify() reads it, and the
  // transport's stream (for tests that corrupt the output).
  [[nodiscard]] void* output(const OpSpec& spec) const;
  [[nodiscard]] cudaStream_t stream() const { return stream_.get(); }
  // Holds the stream and never releases it, then waits for `spec` behind the
  // hold: the wait must end in TimeoutError within the deadline (tests).
  void run_held_forever(const OpSpec& spec);

 private:
  NcclTransport(const Comm& comm, const NcclOptions& options, NcclComm nccl, GpuDescription gpu);
  void issue(const OpSpec& spec);
  void settle(const std::string& what);
  void wait(cudaEvent_t event, const std::string& what);
  [[nodiscard]] std::string describe(const OpSpec& spec) const;
  [[nodiscard]] std::chrono::steady_clock::time_point deadline() const;

  const Comm* comm_;
  NcclOptions options_;
  int rank_ = 0;
  int size_ = 1;
  GpuDescription gpu_;
  NcclComm nccl_;
  Stream stream_;
  Event start_;
  Event end_;
  std::vector<Event> marks_;
  MappedHostInts hold_flags_{2};  // [0] release, [1] expired
  DeviceBuffer wrong_{sizeof(unsigned long long)};
  DeviceBuffer send_;
  DeviceBuffer recv_;
};

}  // namespace fabricbench
