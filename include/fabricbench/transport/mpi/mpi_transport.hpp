#pragma once
// The MPI host transport: page-aligned host buffers, MPI collectives, timed
// with MPI_Wtime. Send/recv is a ring: each rank sends to rank+1 and receives
// from rank-1 at the same time. Runs wherever MPI does, and is how every piece
// of the engine is tested where no GPU exists.

#include <cstddef>
#include <memory>
#include <span>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

struct MpiCall;

// Page-aligned host memory; move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes);
  [[nodiscard]] std::span<std::byte> bytes() { return {data_.get(), size_}; }
  [[nodiscard]] std::span<const std::byte> bytes() const { return {data_.get(), size_}; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

class MpiTransport final : public Transport {
 public:
  // Runs over `comm` (not owned; must outlive the transport).
  explicit MpiTransport(const Comm& comm);

  [[nodiscard]] std::string_view name() const override { return "mpi"; }
  [[nodiscard]] int rank() const override;
  [[nodiscard]] int size() const override;
  [[nodiscard]] std::optional<std::string> unsupported(Op op, DType dtype, RedOp redop) const override;
  void prepare(const OpSpec& spec) override;
  void fill(const OpSpec& spec) override;
  void run_once(const OpSpec& spec) override;
  [[nodiscard]] std::uint64_t verify(const OpSpec& spec) override;
  BatchTiming time_batch(const OpSpec& spec, int iters, bool per_iteration) override;
  // Measured when the transport is made: an MPI_Wtime read and a store.
  [[nodiscard]] double stamp_cost_s() const override { return stamp_cost_s_; }
  void barrier() override;
  double time_p2p(const P2PSpec& spec, int iters) override;
  [[nodiscard]] std::unique_ptr<Transport> split(const Comm& sub, int color, int key) override;
  // The MPI library chooses inside MPI: no algorithm, and the note says so.
  [[nodiscard]] AlgorithmChoice capture_choice(const OpSpec& spec) override;

  // This rank's output as verify() reads it (for tests that corrupt it).
  [[nodiscard]] std::span<std::byte> output(const OpSpec& spec);

 private:
  MpiCall resolve(const OpSpec& spec);
  const Comm* comm_;
  int rank_ = 0;
  int size_ = 1;
  HostBuffer send_;
  HostBuffer recv_;
  double stamp_cost_s_ = 0;
};

}  // namespace fabricbench
