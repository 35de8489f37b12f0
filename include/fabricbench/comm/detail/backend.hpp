#pragma once
// comm's internals: the one interface every process group implements (MPI,
// one process, threads of one process, processes meeting in a folder), and
// the door through which comm's sources wrap one in a Comm and reach it back.
// Comm's methods only forward here; no caller outside comm sees a backend.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/comm/comm.hpp"

namespace fabricbench::detail {

// The element types of Comm's all-reduces and what they combine with.
enum class Scalar { f64, u64, i64 };
enum class Reduction { sum, min, max };

class CommBackend {
 public:
  CommBackend() = default;
  CommBackend(const CommBackend&) = delete;
  CommBackend& operator=(const CommBackend&) = delete;
  virtual ~CommBackend() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;

  // Every collective below is entered by every member, with the same sizes.
  virtual void barrier() = 0;
  // A barrier whose early members sleep between polls rather than spin: by
  // default the plain one.
  virtual void quiet_barrier() { barrier(); }
  // `data` of `root`, on every member.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Element-wise over the members, in place: `values` holds elements of `type`.
  virtual void allreduce(std::span<std::byte> values, Scalar type, Reduction op) = 0;
  // Every member contributes mine.size() bytes; `all` (size() times as many)
  // gets them in rank order. A member that contributed another size is an
  // error (SystemError), not a misread.
  virtual void allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  // Every member's bytes, of any length, in rank order.
  virtual std::vector<std::string> allgather_bytes(std::string_view mine) = 0;
  // Members with equal color form a group ordered by (key, rank); nullptr for
  // a negative color (MPI_Comm_split).
  virtual std::unique_ptr<CommBackend> split(int color, int key) = 0;
  // The members sharing memory with this one (same node).
  virtual std::unique_ptr<CommBackend> split_shared() = 0;

  // Every member's pending and later collectives fail with `why`; a no-op
  // where the launcher ends the job instead.
  virtual void fail(const std::string& why) noexcept = 0;
  // Ends every process of the job (MPI_Abort), or this one.
  [[noreturn]] virtual void abort(int exit_code) = 0;
  // Whether the group was formed without a launcher (threads, folder).
  [[nodiscard]] virtual bool launcher_free() const { return false; }
};

// The only code that builds a Comm from a backend or reaches one back.
struct CommAccess {
  static Comm wrap(std::unique_ptr<CommBackend> backend) { return Comm(std::move(backend)); }
  // nullptr for an empty group.
  static CommBackend* backend(const Comm& comm) { return comm.backend_.get(); }
};

// The world of this process: MPI's when built with MPI, else one process.
std::unique_ptr<CommBackend> make_world_backend();
// One process alone (its own world without MPI).
std::unique_ptr<CommBackend> make_single_backend();

}  // namespace fabricbench::detail
