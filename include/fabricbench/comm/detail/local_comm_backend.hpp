#pragma once
// comm's internals: the interface behind the non-MPI groups of local_comm.hpp.
// One primitive, an all-gather of byte strings, carries every collective of
// Comm; it is small-value coordination, so simplicity wins over speed.

#include <memory>
#include <string>
#include <vector>

namespace fabricbench {

class GroupBackend {
 public:
  GroupBackend() = default;
  GroupBackend(const GroupBackend&) = delete;
  GroupBackend& operator=(const GroupBackend&) = delete;
  virtual ~GroupBackend() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  // Every member's bytes, in rank order. Collective.
  virtual std::vector<std::string> exchange(const std::string& mine) = 0;
  // The group of `members` (ranks of this group, in new rank order), of which
  // this member is `index`. Called by exactly those members, after an
  // exchange that agreed on the members; `tag` is the same on all of them and
  // unique among the subgroups of this group.
  virtual std::unique_ptr<GroupBackend> subgroup(const std::vector<int>& members, int index,
                                                 const std::string& tag) = 0;
  // Every member's pending and later collectives fail with `why`.
  virtual void fail(const std::string& why) noexcept = 0;
};

}  // namespace fabricbench
