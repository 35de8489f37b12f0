#include "fabricbench/comm/local_comm.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/comm/detail/local_comm_backend.hpp"
#include "fabricbench/comm/detail/private_folder.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"

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

// The meeting. All the members of a group share is the folder's path, their
// rank and the size, and the folder may hold what an earlier group left (a
// dead group's `abort`, its round files) or be in use by another group at
// this moment. So each group meets in a generation of its own, a fresh
// subfolder g.<random>, and liveness is told by flock(), which the kernel
// drops when a process ends however it ends (no pid or clock to trust):
//  - rank 0 holds an exclusive lock on <folder>/lock for its life: a second
//    rank 0 in the folder finds it taken and is refused (exit 2);
//  - holding it, rank 0 removes generations no process holds any more,
//    creates its own and announces it in <folder>/group. The announcement is
//    locked before it is renamed into place and stays locked until rank 0
//    ends: a member that finds `group` unlocked knows its writer is gone (a
//    stale announcement) and waits for its own rank 0's;
//  - every member holds a shared lock on the generation's `live` file and
//    claims its rank with an O_EXCL file join.<rank>. A rank claimed twice
//    means two groups met in one generation: the later process is refused,
//    and when the group has not formed yet (rank 0 has not seen every member
//    in a first exchange: either process may be the stranger), the
//    generation is stopped too (its `abort`, as a usage error), so no group
//    runs with a stranger;
//  - the member that leaves last (it gets the `live` lock exclusively)
//    removes the generation, rank 0 removes `group` and `lock`, and whoever
//    finds the folder empty removes it.
// Members are told apart only by rank: when a stranger takes a rank before
// the group's own process comes and the group forms with it, the own process
// is refused as the later one; the error names the folder on both sides.

constexpr std::string_view announcement_magic = "fabricbench-group 1";
// An abort that is a usage problem (two groups in one folder) starts so.
constexpr std::string_view usage_mark = "usage: ";

std::string another_group(const std::string& folder, const std::string& detail) {
  return fmt::format(
      "FABRICBENCH_BOOTSTRAP {}: another group is using this folder ({}); give each group a folder of "
      "its own",
      folder, detail);
}

void poll_pause(int& polls) { std::this_thread::sleep_for(std::chrono::microseconds(++polls < 50 ? 100 : 2000)); }

class Meeting {
 public:
  Meeting(const std::string& folder, int rank, int size, std::chrono::milliseconds timeout)
      : folder_(folder), top_(PrivateFolder::prepare(folder)), rank_(rank) {
    try {
      if (rank == 0) {
        lead(size);
      } else {
        join(size, timeout);
      }
    } catch (...) {
      end();  // a refused process leaves what it made (a folder it created, say) as it found it
      throw;
    }
  }
  Meeting(const Meeting&) = delete;
  Meeting& operator=(const Meeting&) = delete;
  ~Meeting() { end(); }

  [[nodiscard]] const PrivateFolder& generation() const { return *gen_; }
  // Rank 0 has seen every member in the group's first exchange: a rank
  // claimed twice from now on is a later group's.
  void formed() const {
    if (rank_ == 0 && !gen_->exists("formed")) gen_->write("formed", "");
  }

 private:
  void end() noexcept {
    if (announcement_.valid() && top_.is_file("group", announcement_)) top_.remove("group");
    if (lock_.valid() && top_.is_file("lock", lock_)) top_.remove("lock");
    announcement_ = Fd();
    lock_ = Fd();
    leave(top_, gen_, live_);
    // Only when empty, and only the folder that was checked.
    const std::string path = without_trailing_slashes(folder_);
    if (top_.named_by(path)) ::rmdir(path.c_str());
  }

  void lead(int size) {
    for (int attempt = 0; !lock_.valid(); ++attempt) {
      if (attempt > 100) throw SystemError(fmt::format("cannot hold {}/lock: it keeps being removed", top_.path()));
      // The folder may have been removed (an earlier group's end) after it
      // was opened: make it again.
      if (top_.removed()) top_ = PrivateFolder::prepare(folder_);
      Fd lock = top_.open_rw("lock", true);
      if (!lock.valid()) continue;
      if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) throw UsageError(another_group(folder_, "its rank 0 is running"));
        throw SystemError(fmt::format("cannot lock {}/lock: {}", top_.path(), errno_text(errno)));
      }
      // The holder before may have removed the file after it was opened.
      if (top_.is_file("lock", lock)) lock_ = std::move(lock);
    }
    remove_stale();
    gen_ = top_.make_folder("g.");
    live_ = gen_->open_rw("live", true);
    if (!live_.valid() || ::flock(live_.get(), LOCK_SH) != 0 || !gen_->create_new("join.0"))
      throw SystemError(fmt::format("cannot start the group in {}", gen_->path()));
    top_.write("group", fmt::format("{}\n{}\n{}\n", announcement_magic, gen_->name(), size), &announcement_);
  }

  // Generations no process holds (dead groups', or one whose last member
  // was killed) and temporaries of a writer that died; only the holder of
  // the lock writes at the top level.
  void remove_stale() const {
    for (const std::string& name : top_.entries()) {
      if (name.rfind(".tmp.", 0) == 0) top_.remove(name);
      if (name.rfind("g.", 0) != 0) continue;
      const std::optional<PrivateFolder> gen = top_.open_folder(name);
      if (!gen) continue;
      const Fd live = gen->open_rw("live", false);
      if (live.valid() && ::flock(live.get(), LOCK_EX | LOCK_NB) != 0) continue;  // still held
      for (const std::string& file : gen->entries()) gen->remove(file);
      (void)top_.remove_folder_if_empty(name);
    }
  }

  void join(int size, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int polls = 0;
    while (!try_join(size)) {
      if (Clock::now() > deadline)
        throw SystemError(
            fmt::format("rank {} waited {} ms in {} for rank 0 of its group to start it (a 'group' "
                        "file there that is not locked is from a group that has ended)",
                        rank_, timeout.count(), folder_));
      // Removed by the end of an earlier group after it was opened: the next
      // rank 0 makes a new one at the path.
      if (top_.removed()) top_ = PrivateFolder::prepare(folder_);
      poll_pause(polls);
    }
  }

  bool try_join(int size) {
    const Fd announcement = top_.open_file("group");
    if (!announcement.valid()) return false;
    if (::flock(announcement.get(), LOCK_SH | LOCK_NB) == 0) return false;  // its writer has ended
    if (errno != EWOULDBLOCK)
      throw SystemError(fmt::format("cannot lock {}/group: {}", top_.path(), errno_text(errno)));
    const std::string text = read_whole(announcement, top_.path() + "/group");
    const std::vector<std::string> lines = split_lines(text);
    int announced = -1;
    if (lines.size() != 3 || lines[0] != announcement_magic || lines[1].rfind("g.", 0) != 0 ||
        lines[1].find_first_not_of("g.abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos ||
        std::from_chars(lines[2].data(), lines[2].data() + lines[2].size(), announced).ptr !=
            lines[2].data() + lines[2].size())
      throw SystemError(fmt::format("{}/group: not an announcement of a group; not used", top_.path()));
    if (announced != size)
      throw UsageError(another_group(folder_, fmt::format("a group of {} processes, where FABRICBENCH_WORLD_SIZE is "
                                                          "{}; or the ranks disagree on the size",
                                                          announced, size)));
    std::optional<PrivateFolder> gen = top_.open_folder(lines[1]);
    if (!gen) return false;
    Fd live = gen->open_rw("live", false);
    if (!live.valid() || ::flock(live.get(), LOCK_SH | LOCK_NB) != 0) return false;  // it is ending
    if (!gen->create_new(fmt::format("join.{}", rank_))) {
      // Before the group has formed, either process may be the stranger:
      // stop the generation. After, this one came late.
      if (!gen->exists("formed")) {
        try {
          gen->write("abort", fmt::format("{}{}\n", usage_mark,
                                          another_group(folder_, fmt::format("two processes came as rank {}", rank_))));
        } catch (const SystemError&) {  // NOLINT(bugprone-empty-catch): the group has ended already
        }
      }
      leave(top_, gen, live);
      throw UsageError(another_group(folder_, fmt::format("rank {} of it is already running", rank_)));
    }
    gen_ = std::move(gen);
    live_ = std::move(live);
    return true;
  }

  // Gives up this process's hold on the generation; the last to go (who
  // gets its `live` lock exclusively) removes it.
  static void leave(const PrivateFolder& top, std::optional<PrivateFolder>& gen, Fd& live) noexcept {
    if (gen && live.valid() && ::flock(live.get(), LOCK_EX | LOCK_NB) == 0) {
      try {
        for (const std::string& name : gen->entries()) gen->remove(name);
      } catch (...) {  // NOLINT(bugprone-empty-catch): files left behind go with the next group in the folder
      }
      (void)top.remove_folder_if_empty(gen->name());
    }
    live = Fd();
  }

  static std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = text.find('\n', start);
      if (end == std::string::npos) {
        out.push_back(text.substr(start));
        break;
      }
      out.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }

  std::string folder_;
  PrivateFolder top_;
  int rank_;
  std::optional<PrivateFolder> gen_;
  Fd lock_;          // rank 0: <folder>/lock, held exclusively
  Fd announcement_;  // rank 0: <folder>/group, held exclusively
  Fd live_;          // <generation>/live, held shared
};

// Each round every member writes <prefix>r<round>.<rank> (written aside and
// renamed, so a reader never sees half a file) and reads all of them. Once a
// member has read round r, every member has written round r and so has read
// round r-1: the member's own file of round r-1 can go. What is left when
// the group ends goes with its generation (Meeting).
class FileBackend final : public GroupBackend {
 public:
  FileBackend(std::shared_ptr<const Meeting> meeting, std::string prefix, int rank, int size,
              std::chrono::milliseconds timeout)
      : meeting_(std::move(meeting)), prefix_(std::move(prefix)), rank_(rank), size_(size), timeout_(timeout) {}
  FileBackend(const FileBackend&) = delete;
  FileBackend& operator=(const FileBackend&) = delete;
  ~FileBackend() override = default;
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }

  std::vector<std::string> exchange(const std::string& mine) override {
    const PrivateFolder& dir = meeting_->generation();
    const std::uint64_t round = round_++;
    dir.write(name(round, rank_), mine);
    std::vector<std::string> out(static_cast<std::size_t>(size_));
    std::vector<bool> have(out.size(), false);
    const auto deadline = Clock::now() + timeout_;
    int polls = 0;
    for (std::size_t got = 0; got < out.size();) {
      for (std::size_t r = 0; r < out.size(); ++r) {
        if (have[r]) continue;
        std::optional<std::string> text = dir.read(name(round, static_cast<int>(r)));
        if (!text) continue;
        out[r] = std::move(*text);
        have[r] = true;
        ++got;
      }
      check_abort(dir);
      if (got == out.size()) break;
      if (Clock::now() > deadline) {
        std::string missing;
        for (std::size_t r = 0; r < out.size(); ++r)
          if (!have[r]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
        throw SystemError(fmt::format("rank {} waited {} ms in {} for rank(s) {} of its group", rank_, timeout_.count(),
                                      dir.path(), missing));
      }
      poll_pause(polls);
    }
    if (round > 0) dir.remove(name(round - 1, rank_));
    if (round == 0 && prefix_ == "w_") meeting_->formed();
    return out;
  }

  std::unique_ptr<GroupBackend> subgroup(const std::vector<int>& members, int index, const std::string& tag) override {
    return std::make_unique<FileBackend>(meeting_, prefix_ + tag + "_", index, static_cast<int>(members.size()),
                                         timeout_);
  }

  void fail(const std::string& why) noexcept override {
    try {
      meeting_->generation().write("abort", fmt::format("rank {}: {}\n", rank_, why));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the others time out instead
    }
  }

  [[nodiscard]] const std::string& folder() const { return meeting_->generation().path(); }

 private:
  // Also once every file of a round is in: a group stopped before it formed
  // (two processes as one rank) must not go on with a round that completed.
  static void check_abort(const PrivateFolder& dir) {
    const std::optional<std::string> abort = dir.read("abort");
    if (!abort) return;
    // Only the first line, shortened, and shown, not obeyed, by a terminal.
    const std::string first = abort->substr(0, abort->find('\n'));
    if (first.rfind(usage_mark, 0) == 0)  // it names a path: up to PATH_MAX and the words around it
      throw UsageError(terminal_safe(first.substr(usage_mark.size(), 4400)));
    throw SystemError(fmt::format("another process of the group failed: {}", terminal_safe(first.substr(0, 300))));
  }

  [[nodiscard]] std::string name(std::uint64_t round, int rank) const {
    return fmt::format("{}r{}.{}", prefix_, round, rank);
  }

  std::shared_ptr<const Meeting> meeting_;
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
  auto meeting = std::make_shared<const Meeting>(directory, rank, size, timeout);
  return CommAccess::wrap(std::make_unique<FileBackend>(std::move(meeting), "w_", rank, size, timeout));
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

std::string exchange_folder(const Comm& member) {
  const auto* b = dynamic_cast<const FileBackend*>(CommAccess::backend(member));
  return b == nullptr ? std::string() : b->folder();
}

bool is_local_group(const Comm& comm) {
  const detail::CommBackend* b = CommAccess::backend(comm);
  return b != nullptr && b->launcher_free();
}

}  // namespace fabricbench
