#pragma once
// Comm: a process group for the coordination the engine needs (agreeing on
// counts, gathering timings, barriers). Backed by an MPI communicator when
// built with MPI, or a single process without, or by one of the groups
// without MPI of local_comm.hpp (threads, or processes meeting in a folder). Move-only; a communicator
// obtained by split() is owned and freed, world() is not. There is no copy:
// duplicating a communicator is a collective and is only ever done
// explicitly (split / duplicate), never by accident.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace fabricbench {

class Comm {
 public:
  // The world group of this process (the MPI world, or just this process).
  static Comm world();

  Comm(Comm&&) noexcept;
  Comm& operator=(Comm&&) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;

  void barrier() const;
  void broadcast(std::span<std::byte> data, int root) const;
  // Element-wise reductions over all members; every member gets the result.
  void allreduce_sum(std::span<double> values) const;
  void allreduce_min(std::span<double> values) const;
  void allreduce_max(std::span<double> values) const;
  void allreduce_sum(std::span<std::uint64_t> values) const;
  void allreduce_max(std::span<std::int64_t> values) const;
  // Every member's string, in rank order, on every member.
  [[nodiscard]] std::vector<std::string> allgather(const std::string& mine) const;

  template <typename T>
  T broadcast_value(T value, int root) const {
    broadcast(std::as_writable_bytes(std::span<T>(&value, 1)), root);
    return value;
  }

  // Collective over this group: members with equal color form a new group,
  // ordered by key. A negative color yields an empty group for the caller.
  [[nodiscard]] Comm split(int color, int key) const;
  // Collective: the members sharing memory with this process (same node).
  [[nodiscard]] Comm split_shared() const;
  [[nodiscard]] bool empty() const;

  // Aborts every process of the job with this exit code (MPI_Abort), or exits.
  [[noreturn]] void abort(int exit_code) const;

  struct Impl;
  [[nodiscard]] const Impl& impl() const { return *impl_; }
  // Wraps an implementation made by the transports' sources (the groups
  // without MPI of local_comm.hpp).
  static Comm adopt(std::unique_ptr<Impl> impl);

 private:
  explicit Comm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// MPI_Init / MPI_Finalize for the life of main(); a no-op without MPI.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession();
};

bool built_with_mpi();
// "Open MPI v4.1.4, ..." — the library's own version string; empty without MPI.
std::string mpi_library_version();

}  // namespace fabricbench
