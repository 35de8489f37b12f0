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
class FileBackend final : public GroupBackend {
 public:
  FileBackend(fs::path dir, std::string prefix, int rank, int size, std::chrono::milliseconds timeout)
      : dir_(std::move(dir)), prefix_(std::move(prefix)), rank_(rank), size_(size), timeout_(timeout) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }

  std::vector<std::string> exchange(const std::string& mine) override {
    const std::uint64_t round = round_++;
    write_atomically(file(round, rank_), mine);
    std::vector<std::string> out(static_cast<std::size_t>(size_));
    std::vector<bool> have(out.size(), false);
    const auto deadline = Clock::now() + timeout_;
    int polls = 0;
    for (std::size_t got = 0; got < out.size();) {
      for (std::size_t r = 0; r < out.size(); ++r) {
        if (have[r]) continue;
        std::ifstream in(file(round, static_cast<int>(r)), std::ios::binary);
        if (!in) continue;
        std::ostringstream text;
        text << in.rdbuf();
        out[r] = text.str();
        have[r] = true;
        ++got;
      }
      if (got == out.size()) break;
      if (fs::exists(dir_ / "abort")) {
        std::ifstream in(dir_ / "abort");
        std::string why;
        std::getline(in, why);
        throw SystemError(fmt::format("another process of the group failed: {}", why));
      }
      if (Clock::now() > deadline) {
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
    try {
      write_atomically(dir_ / "abort", fmt::format("rank {}: {}\n", rank_, why));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the others time out instead
    }
  }

 private:
  [[nodiscard]] fs::path file(std::uint64_t round, int rank) const {
    return dir_ / fmt::format("{}r{}.{}", prefix_, round, rank);
  }

  void write_atomically(const fs::path& path, const std::string& bytes) const {
    const fs::path aside = path.string() + fmt::format(".tmp.{}", getpid());
    {
      std::ofstream out(aside, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw SystemError(fmt::format("cannot write {}", aside.string()));
    }
    fs::rename(aside, path);
  }

  fs::path dir_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::uint64_t round_ = 0;
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
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (!fs::is_directory(directory))
    throw UsageError(fmt::format("FABRICBENCH_BOOTSTRAP: cannot create the directory {}", directory));
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
