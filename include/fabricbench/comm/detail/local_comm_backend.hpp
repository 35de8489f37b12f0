#pragma once
// comm's internals: the base of the groups without MPI of local_comm.hpp
// (threads, processes meeting in a folder). One primitive, an all-gather of
// byte strings, carries every collective; it is small-value coordination, so
// simplicity wins over speed. Every member reduces the same values in the same
// rank order, so results agree bit for bit, and every contribution is checked
// for its size before it is read (in a folder, another process wrote it).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabricbench/comm/detail/backend.hpp"

namespace fabricbench::detail {

class GroupBackend : public CommBackend {
 public:
  // Every member's bytes, in rank order. Collective.
  virtual std::vector<std::string> exchange(const std::string& mine) = 0;
  // The group of `members` (ranks of this group, in new rank order), of which
  // this member is `index`. Called by exactly those members, after an
  // exchange that agreed on the members; `tag` is the same on all of them and
  // unique among the subgroups of this group.
  virtual std::unique_ptr<GroupBackend> subgroup(const std::vector<int>& members, int index,
                                                 const std::string& tag) = 0;

  void barrier() override;
  void broadcast(std::span<std::byte> data, int root) override;
  void allreduce(std::span<std::byte> values, Scalar type, Reduction op) override;
  void allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) override;
  std::vector<std::string> allgather_bytes(std::string_view mine) override;
  std::unique_ptr<CommBackend> split(int color, int key) override;
  // Members with the same host name: without MPI there is no shared-memory
  // query, and these groups are one node in practice.
  std::unique_ptr<CommBackend> split_shared() override;
  [[noreturn]] void abort(int exit_code) override;
  [[nodiscard]] bool launcher_free() const override { return true; }

 private:
  std::uint64_t splits_ = 0;
};

}  // namespace fabricbench::detail
