#include "fabricbench/comm/local_comm.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/comm/detail/local_comm_backend.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"
#include "private_folder.hpp"

namespace fabricbench {

namespace {

using detail::CommAccess;
using detail::GroupBackend;

using Clock = std::chrono::steady_clock;

// Threads ------------------------------------------------------------------

// The shared state of one thread group: a reusable all-gather. The last member
// to arrive publishes the round; a member cannot arrive at the next round
// before it has copied this one, so one published copy is enough.
struct ThreadState {
  explicit ThreadState(int n) : slots(static_cast<std::size_t>(n)), size(n) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> slots;
  std::vector<std::string> published;
  int size;
  int arrived = 0;
  std::uint64_t round = 0;
  std::string failure;
  std::map<std::string, std::shared_ptr<ThreadState>> subgroups;
};

class ThreadBackend final : public GroupBackend {
 public:
  ThreadBackend(std::shared_ptr<ThreadState> state, int rank, std::chrono::milliseconds timeout)
      : state_(std::move(state)), rank_(rank), timeout_(timeout) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return state_->size; }

  std::vector<std::string> exchange(const std::string& mine) override {
    ThreadState& s = *state_;
    std::unique_lock lock(s.mutex);
    if (!s.failure.empty()) throw SystemError(s.failure);
    s.slots[static_cast<std::size_t>(rank_)] = mine;
    const std::uint64_t round = s.round;
    if (++s.arrived == s.size) {
      s.published = s.slots;
      s.arrived = 0;
      ++s.round;
      s.changed.notify_all();
      return s.published;
    }
    const bool done = s.changed.wait_for(lock, timeout_, [&] { return s.round != round || !s.failure.empty(); });
    if (!s.failure.empty()) throw SystemError(s.failure);
    if (!done) {
      const std::string why =
          fmt::format("rank {} waited {} ms for the other threads of its group", rank_, timeout_.count());
      s.failure = why;
      s.changed.notify_all();
      throw SystemError(why);
    }
    return s.published;
  }

  std::unique_ptr<GroupBackend> subgroup(const std::vector<int>& members, int index, const std::string& tag) override {
    std::shared_ptr<ThreadState> sub;
    {
      const std::lock_guard lock(state_->mutex);
      auto& slot = state_->subgroups[tag];
      if (!slot) slot = std::make_shared<ThreadState>(static_cast<int>(members.size()));
      sub = slot;
    }
    return std::make_unique<ThreadBackend>(std::move(sub), index, timeout_);
  }

  void fail(const std::string& why) noexcept override {
    const std::lock_guard lock(state_->mutex);
    if (state_->failure.empty()) state_->failure = why;
    for (auto& [tag, sub] : state_->subgroups) {
      const std::lock_guard sub_lock(sub->mutex);
      if (sub->failure.empty()) sub->failure = why;
      sub->changed.notify_all();
    }
    state_->changed.notify_all();
  }

 private:
  std::shared_ptr<ThreadState> state_;
  int rank_;
  std::chrono::milliseconds timeout_;
};

// Files --------------------------------------------------------------------

namespace fs = std::filesystem;

// Each round every member writes <prefix>r<round>.<rank> (written aside and
// renamed, so a reader never sees half a file) and reads all of them. Once a
// member has read round r, every member has written round r and so has read
// round r-1: the member's own file of round r-1 can go.
// When a member is done with the group it leaves <prefix>done.<rank>; the
// member that finds every mark (all have read all they needed) removes the
// group's files, and the world group's last member the folder if empty.
class FileBackend final : public GroupBackend {
 public:
  FileBackend(fs::path dir, std::string prefix, int rank, int size, std::chrono::milliseconds timeout)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), rank_(rank), size_(size), timeout_(timeout) {}
  FileBackend(const FileBackend&) = delete;
  FileBackend& operator=(const FileBackend&) = delete;
  ~FileBackend() override {
    try {
      if (!failed_) clean_up();
    } catch (...) {  // NOLINT(bugprone-empty-catch): files left behind are no reason to fail a finished run
    }
  }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }

  std::vector<std::string> exchange(const std::string& mine) override {
    const std::uint64_t round = round_++;
    write_private_file(dir_.string(), name(round, rank_), mine);
    std::vector<std::string> out(static_cast<std::size_t>(size_));
    std::vector<bool> have(out.size(), false);
    const auto deadline = Clock::now() + timeout_;
    int polls = 0;
    for (std::size_t got = 0; got < out.size();) {
      for (std::size_t r = 0; r < out.size(); ++r) {
        if (have[r]) continue;
        std::optional<std::string> text = read_private_file(file(round, static_cast<int>(r)).string());
        if (!text) continue;
        out[r] = std::move(*text);
        have[r] = true;
        ++got;
      }
      if (got == out.size()) break;
      if (const std::optional<std::string> abort = read_private_file((dir_ / "abort").string())) {
        // Only the first line, shortened, and shown, not obeyed, by a terminal.
        std::string why = abort->substr(0, std::min(abort->find('\n'), std::size_t{300}));
        failed_ = true;
        throw SystemError(fmt::format("another process of the group failed: {}", terminal_safe(why)));
      }
      if (Clock::now() > deadline) {
        failed_ = true;
        std::string missing;
        for (std::size_t r = 0; r < out.size(); ++r)
          if (!have[r]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
        throw SystemError(fmt::format("rank {} waited {} ms in {} for rank(s) {} of its group", rank_, timeout_.count(),
                                      dir_.string(), missing));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(++polls < 50 ? 100 : 2000));
    }
    if (round > 0) {
      std::error_code ignored;
      fs::remove(file(round - 1, rank_), ignored);
    }
    return out;
  }

  std::unique_ptr<GroupBackend> subgroup(const std::vector<int>& members, int index, const std::string& tag) override {
    return std::make_unique<FileBackend>(dir_, prefix_ + tag + "_", index, static_cast<int>(members.size()), timeout_);
  }

  void fail(const std::string& why) noexcept override {
    failed_ = true;
    try {
      write_private_file(dir_.string(), "abort", fmt::format("rank {}: {}\n", rank_, why));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the others time out instead
    }
  }

 private:
  [[nodiscard]] std::string name(std::uint64_t round, int rank) const {
    return fmt::format("{}r{}.{}", prefix_, round, rank);
  }
  [[nodiscard]] fs::path file(std::uint64_t round, int rank) const { return dir_ / name(round, rank); }

  // This group's own files: <prefix>r<round>.<rank> and <prefix>done.<rank>
  // (not a subgroup's, whose prefix extends this one).
  [[nodiscard]] bool own_file(const std::string& file_name) const {
    if (file_name.rfind(prefix_, 0) != 0) return false;
    std::string_view rest(file_name);
    rest.remove_prefix(prefix_.size());
    if (rest.rfind("done.", 0) == 0) {
      rest.remove_prefix(5);
    } else if (rest.rfind('r', 0) == 0) {
      rest.remove_prefix(1);
      const auto dot = rest.find('.');
      if (dot == 0 || dot == std::string_view::npos ||
          rest.substr(0, dot).find_first_not_of("0123456789") != std::string_view::npos)
        return false;
      rest.remove_prefix(dot + 1);
    } else {
      return false;
    }
    return !rest.empty() && rest.find_first_not_of("0123456789") == std::string_view::npos;
  }

  void clean_up() {
    write_private_file(dir_.string(), fmt::format("{}done.{}", prefix_, rank_), "");
    for (int r = 0; r < size_; ++r)
      if (!fs::exists(dir_ / fmt::format("{}done.{}", prefix_, r))) return;
    std::error_code ignored;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ignored))
      if (own_file(entry.path().filename().string())) fs::remove(entry.path(), ignored);
    if (prefix_ == "w_") fs::remove(dir_, ignored);  // only when empty
  }

  fs::path dir_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::uint64_t round_ = 0;
  bool failed_ = false;
};

std::optional<int> env_int(const char* name) {
  const char* text = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before any thread starts
  if (text == nullptr) return std::nullopt;
  int value = -1;
  const std::string_view s(text);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw UsageError(fmt::format("{}='{}' is not a number", name, text));
  return value;
}

}  // namespace

std::vector<Comm> make_thread_comms(int size, std::chrono::milliseconds timeout) {
  if (size < 1) throw UsageError(fmt::format("a group needs at least one member, not {}", size));
  auto state = std::make_shared<ThreadState>(size);
  std::vector<Comm> out;
  out.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out.push_back(CommAccess::wrap(std::make_unique<ThreadBackend>(state, r, timeout)));
  return out;
}

void fail_group(const Comm& member, const std::string& why) noexcept {
  if (detail::CommBackend* b = CommAccess::backend(member)) b->fail(why);
}

Comm make_file_comm(const std::string& directory, int rank, int size, std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size)
    throw UsageError(fmt::format("rank {} of {} processes is not a valid position", rank, size));
  prepare_private_folder(directory);
  return CommAccess::wrap(std::make_unique<FileBackend>(directory, "w_", rank, size, timeout));
}

std::optional<Comm> file_comm_from_environment(std::chrono::milliseconds timeout) {
  const char* dir = std::getenv("FABRICBENCH_BOOTSTRAP");  // NOLINT(concurrency-mt-unsafe)
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  const std::optional<int> rank = env_int("FABRICBENCH_RANK");
  const std::optional<int> size = env_int("FABRICBENCH_WORLD_SIZE");
  if (!rank || !size)
    throw UsageError("FABRICBENCH_BOOTSTRAP is set: FABRICBENCH_RANK and FABRICBENCH_WORLD_SIZE must be set too");
  return make_file_comm(dir, *rank, *size, timeout);
}

bool is_local_group(const Comm& comm) {
  const detail::CommBackend* b = CommAccess::backend(comm);
  return b != nullptr && b->launcher_free();
}

}  // namespace fabricbench
