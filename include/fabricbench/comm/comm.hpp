#pragma once
// Comm: a process group for the coordination the engine needs (agreeing on
// counts, gathering timings, barriers). One interface over four kinds of
// group: an MPI communicator (built with MPI), one process alone (without),
// and the groups without MPI of local_comm.hpp (threads of one process, or
// processes meeting in a folder). Move-only; a group obtained by split() is
// owned and freed, world() is not. There is no copy: duplicating a
// communicator is a collective and is only ever done explicitly (split),
// never by accident.
//
// Values cross ranks as their bytes, typed: numbers are never written as text
// and parsed back. A group whose members may not agree on a size (a folder
// other processes write into) checks every contribution before reading it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fabricbench {

namespace detail {
class CommBackend;
struct CommAccess;
}  // namespace detail

// What may cross ranks as its bytes: a plain value (numbers, enums, structs
// and arrays of them), not a pointer, whose meaning would not travel.
template <typename T>
concept WireValue = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !std::is_array_v<T>;

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
  // A barrier whose early members wait asleep, polling every millisecond,
  // where a plain one spins: on ranks that share cores, members that sit out
  // a measurement then leave the cores to those measuring (idle ranks
  // spinning in a collective slowed a pair measured apart to a sixth of its
  // rate). Not more often: on 8 ranks sharing 2 cores, waking every 100 us
  // they preempted the pairs still measuring, and healthy links beside a
  // throttled one measured at a twentieth of their rate (8 runs of 30; none
  // of 30 at a millisecond).
  void quiet_barrier() const;
  void broadcast(std::span<std::byte> data, int root) const;
  // Element-wise reductions over all members; every member gets the result.
  void allreduce_sum(std::span<double> values) const;
  void allreduce_min(std::span<double> values) const;
  void allreduce_max(std::span<double> values) const;
  void allreduce_sum(std::span<std::uint64_t> values) const;
  void allreduce_max(std::span<std::int64_t> values) const;

  // Every member's bytes (text or any encoding), in rank order, on every member.
  [[nodiscard]] std::vector<std::string> allgather(const std::string& mine) const;
  // Every member's value, in rank order, on every member.
  template <WireValue T>
  [[nodiscard]] std::vector<T> allgather_value(const T& mine) const {
    std::vector<T> all(static_cast<std::size_t>(size()));
    allgather_fixed(std::as_bytes(std::span<const T>(&mine, 1)), std::as_writable_bytes(std::span<T>(all)));
    return all;
  }

  // `value` of `root`, on every member.
  template <WireValue T>
  [[nodiscard]] T broadcast_value(T value, int root) const {
    broadcast(std::as_writable_bytes(std::span<T>(&value, 1)), root);
    return value;
  }
  // The bytes of `root`, of any length, on every member.
  [[nodiscard]] std::string broadcast_bytes(std::string bytes, int root) const;

  // Collective over this group: members with equal color form a new group,
  // ordered by key. A negative color yields an empty group for the caller.
  [[nodiscard]] Comm split(int color, int key) const;
  // Collective: the members sharing memory with this process (same node).
  [[nodiscard]] Comm split_shared() const;
  // Whether this member is in no group (a negative color of split()).
  [[nodiscard]] bool empty() const;

  // Aborts every process of the job with this exit code (MPI_Abort), or exits.
  [[noreturn]] void abort(int exit_code) const;

 private:
  friend struct detail::CommAccess;
  explicit Comm(std::unique_ptr<detail::CommBackend> backend);
  void allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) const;
  [[nodiscard]] detail::CommBackend& backend() const;
  std::unique_ptr<detail::CommBackend> backend_;
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
