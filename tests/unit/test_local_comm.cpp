// The groups without MPI: threads, and processes meeting in a folder (here
// threads standing in for the processes, which exercises the same files).
#include "fabricbench/comm/local_comm.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

using namespace std::chrono_literals;

void on_each(std::vector<Comm>& group, const std::function<void(const Comm&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(group.size());
  for (std::size_t r = 0; r < group.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        body(group[r]);
      } catch (const std::exception& e) {
        failures[r] = e.what();
        fail_group(group[r], e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

struct Probe {
  int rank;
  double third;
  std::uint64_t big;
};

void collectives(const Comm& c) {
  const int n = c.size();
  const int r = c.rank();
  for (int round = 0; round < 20; ++round) {
    c.barrier();
    EXPECT_EQ(c.broadcast_value(r == 1 % n ? 40 + round : -1, 1 % n), 40 + round);
    std::vector<double> v{static_cast<double>(r), 1.0};
    c.allreduce_sum(std::span<double>(v));
    EXPECT_EQ(v[0], n * (n - 1) / 2.0);
    EXPECT_EQ(v[1], n);
    double low = r;
    c.allreduce_min(std::span<double>(&low, 1));
    EXPECT_EQ(low, 0);
    std::int64_t high = r;
    c.allreduce_max(std::span<std::int64_t>(&high, 1));
    EXPECT_EQ(high, n - 1);
    std::uint64_t count = 2;
    c.allreduce_sum(std::span<std::uint64_t>(&count, 1));
    EXPECT_EQ(count, 2U * static_cast<std::uint64_t>(n));
    const std::vector<std::string> all = c.allgather(std::string(static_cast<std::size_t>(r), 'x'));
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(all[static_cast<std::size_t>(q)].size(), static_cast<std::size_t>(q));
    // Typed values cross as their bytes: exact, not printed and parsed.
    const std::vector<Probe> probes = c.allgather_value(Probe{r, r / 3.0, ~std::uint64_t{0} - r});
    ASSERT_EQ(probes.size(), static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      const Probe& p = probes[static_cast<std::size_t>(q)];
      EXPECT_EQ(p.rank, q);
      EXPECT_EQ(p.third, q / 3.0);
      EXPECT_EQ(p.big, ~std::uint64_t{0} - q);
    }
    EXPECT_EQ(c.broadcast_bytes(r == n - 1 ? std::string("from the last\0rank", 18) : std::string("x"), n - 1),
              std::string("from the last\0rank", 18));
  }
  // Odd and even ranks, ordered by descending key; rank 0 sits out.
  const Comm sub = c.split(r == 0 ? -1 : r % 2, -r);
  if (r == 0) {
    EXPECT_TRUE(sub.empty());
  } else {
    EXPECT_FALSE(sub.empty());
    int members = 0;
    for (int q = 1; q < n; ++q) members += q % 2 == r % 2 ? 1 : 0;
    EXPECT_EQ(sub.size(), members);
    const std::vector<std::string> order = sub.allgather(std::to_string(r));
    EXPECT_EQ(order.front(), std::to_string(r % 2 == 1         ? (n - 1) % 2 == 1 ? n - 1 : n - 2
                                            : (n - 1) % 2 == 0 ? n - 1
                                                               : n - 2));
  }
  const Comm node = c.split_shared();
  EXPECT_EQ(node.size(), n);
  const Layout layout = discover_layout(c);
  EXPECT_EQ(layout.nodes, 1);
  EXPECT_EQ(layout.local_rank, r);
}

TEST(LocalComm, ThreadGroupCollectives) {
  for (const int n : {1, 2, 3, 4}) {
    std::vector<Comm> group = make_thread_comms(n, 20s);
    on_each(group, collectives);
  }
}

TEST(LocalComm, FileGroupCollectives) {
  for (const int n : {1, 3, 4}) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("fabricbench-comm-test-" + std::to_string(n) + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::vector<Comm> group;
    for (int r = 0; r < n; ++r) group.push_back(make_file_comm(dir.string(), r, n, 20s));
    on_each(group, collectives);
    std::filesystem::remove_all(dir);
  }
}

TEST(LocalComm, AbsentMemberTimesOut) {
  std::vector<Comm> group = make_thread_comms(2, 200ms);
  EXPECT_THROW(group[0].barrier(), SystemError);
  // And the group stays failed for the other member.
  EXPECT_THROW(group[1].barrier(), SystemError);
}

TEST(LocalComm, FailedMemberReleasesTheOthers) {
  std::vector<Comm> group = make_thread_comms(2, 20s);
  std::thread failing([&] { fail_group(group[1], "rank 1 gave up"); });
  failing.join();
  try {
    group[0].barrier();
    FAIL() << "barrier returned";
  } catch (const SystemError& e) {
    EXPECT_STREQ(e.what(), "rank 1 gave up");
  }
}

TEST(LocalComm, FileGroupNamesTheMissingRank) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabricbench-comm-missing-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Comm lone = make_file_comm(dir.string(), 0, 3, 300ms);
  try {
    lone.barrier();
    FAIL() << "barrier returned";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 1, 2"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// Another process wrote the files of a folder group: a value of the wrong
// size is an error naming the rank, never a misread.
TEST(LocalComm, FileGroupRefusesAValueOfTheWrongSize) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("fabricbench-comm-forged-value-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Comm first = make_file_comm(dir.string(), 0, 2, 20s);
  {
    std::ofstream forged(std::filesystem::path(exchange_folder(first)) / "w_r0.1", std::ios::binary);
    forged << "abc";
  }
  try {
    (void)first.allgather_value(42);
    FAIL() << "allgather_value returned";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 contributed 3 bytes, 4 expected"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LocalComm, FileGroupFolderIsPrivateAndCleanedUp) {
  const fs::path dir = fresh_folder("fabricbench-comm-private");
  {
    std::vector<Comm> group;
    for (int r = 0; r < 3; ++r) group.push_back(make_file_comm(dir.string(), r, 3, 20s));
    EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
    on_each(group, collectives);
  }
  EXPECT_FALSE(fs::exists(dir)) << "files or the folder were left behind";
}

TEST(LocalComm, FileGroupRefusesAFolderOthersCanWrite) {
  const fs::path dir = fresh_folder("fabricbench-comm-open");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  EXPECT_NE(usage_error_of([&] { (void)make_file_comm(dir.string(), 0, 1, 1s); }).find("writable by everyone"),
            std::string::npos);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_all);
  EXPECT_NE(usage_error_of([&] { (void)make_file_comm(dir.string(), 0, 1, 1s); }).find("writable by its group"),
            std::string::npos);
  const fs::path link = fresh_folder("fabricbench-comm-link");
  fs::permissions(dir, fs::perms::owner_all);
  fs::create_directory_symlink(dir, link);
  EXPECT_NE(usage_error_of([&] { (void)make_file_comm(link.string(), 0, 1, 1s); }).find("is a symlink"),
            std::string::npos);
  // A trailing "/" (or "/.") makes the kernel follow the link: refused alike.
  for (const std::string& named : {link.string() + "/", link.string() + "//", link.string() + "/."})
    EXPECT_NE(usage_error_of([&] { (void)make_file_comm(named, 0, 1, 1s); }).find("is a symlink"), std::string::npos)
        << named;
  EXPECT_TRUE(fs::is_empty(dir)) << "a file was written through the link";
  fs::remove(link);
  fs::remove_all(dir);
}

TEST(LocalComm, FileGroupWritesNoFileThroughAPlantedSymlink) {
  const fs::path dir = fresh_folder("fabricbench-comm-planted");
  const fs::path victim = fresh_folder("fabricbench-comm-victim");
  std::ofstream(victim) << "precious";
  const Comm lone = make_file_comm(dir.string(), 0, 1, 1s);
  const fs::path exchanges = exchange_folder(lone);
  // The old writer wrote <file>.tmp.<pid>, and "abort" directly.
  fs::create_symlink(victim, exchanges / ("w_r0.0.tmp." + std::to_string(::getpid())));
  fs::create_symlink(victim, exchanges / "abort");
  fail_group(lone, "stop");
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
  fs::remove_all(dir);
  fs::remove(victim);
}

TEST(LocalComm, FileGroupShowsAForgedAbortWithoutItsEscapes) {
  const fs::path dir = fresh_folder("fabricbench-comm-abort");
  const Comm lone = make_file_comm(dir.string(), 0, 2, 5s);
  std::ofstream(fs::path(exchange_folder(lone)) / "abort")
      << "rank 1: \x1b]0;owned\x07\x1b[2J" << std::string(1000, 'x') << "\nsecond line";
  try {
    lone.barrier();
    FAIL() << "barrier returned";
  } catch (const SystemError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
    EXPECT_NE(what.find("\\x1b]0;owned"), std::string::npos) << what;
    EXPECT_EQ(what.find("second line"), std::string::npos);
    EXPECT_LT(what.size(), 500U);
  }
  fs::remove_all(dir);
}

TEST(LocalComm, FileGroupRefusesAForgedRoundFile) {
  const fs::path dir = fresh_folder("fabricbench-comm-forged");
  const Comm first = make_file_comm(dir.string(), 0, 2, 5s);
  // Rank 1 never comes; a forged file of its first round is 3 bytes where a
  // split sends 8.
  std::ofstream(fs::path(exchange_folder(first)) / "w_r0.1") << "abc";
  EXPECT_THROW((void)first.split(0, 0), SystemError);
  fs::remove_all(dir);
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A group that died (killed, or failed before its end) left its announcement,
// an abort and a round file behind: a new group in the folder reads none of
// them, and its rank 0 removes the dead generation.
TEST(LocalComm, FileGroupIgnoresWhatADeadGroupLeft) {
  const fs::path dir = fresh_folder("fabricbench-comm-stale");
  fs::create_directories(dir / "g.stale");
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(dir / "g.stale", fs::perms::owner_all, fs::perm_options::replace);
  write_text(dir / "group", "fabricbench-group 1\ng.stale\n2\n");
  for (const char* name : {"live", "join.0", "join.1", "w_r0.0"}) write_text(dir / "g.stale" / name, "");
  write_text(dir / "g.stale" / "abort", "rank 1: the dead group failed\n");
  write_text(dir / "g.stale" / "w_r0.1", "abc");
  write_text(dir / "abort", "rank 1: an older layout's abort\n");
  // No rank 0 holds the announcement: a member waits for its own group's.
  try {
    (void)make_file_comm(dir.string(), 1, 2, 300ms);
    FAIL() << "joined a dead group";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("for rank 0 of its group to start it"), std::string::npos) << e.what();
  }
  {
    std::vector<Comm> group;
    for (int r = 0; r < 2; ++r) group.push_back(make_file_comm(dir.string(), r, 2, 20s));
    EXPECT_FALSE(fs::exists(dir / "g.stale")) << "the dead generation was kept";
    on_each(group, collectives);
  }
  EXPECT_FALSE(fs::exists(dir / "group"));
  EXPECT_TRUE(fs::exists(dir / "abort"));  // not this tool's to remove
  fs::remove_all(dir);
}

// A second group in a folder in use: its rank 0 is refused, and so is a
// member that comes once the group has formed; the group goes on and cleans up.
TEST(LocalComm, FileGroupRefusesASecondGroupInItsFolder) {
  const fs::path dir = fresh_folder("fabricbench-comm-second");
  {
    std::vector<Comm> group;
    for (int r = 0; r < 2; ++r) group.push_back(make_file_comm(dir.string(), r, 2, 20s));
    on_each(group, [](const Comm& c) { c.barrier(); });
    const std::string rank0 = usage_error_of([&] { (void)make_file_comm(dir.string(), 0, 2, 1s); });
    EXPECT_NE(rank0.find("FABRICBENCH_BOOTSTRAP " + dir.string() + ": another group is using this folder"),
              std::string::npos)
        << rank0;
    const std::string rank1 = usage_error_of([&] { (void)make_file_comm(dir.string(), 1, 2, 1s); });
    EXPECT_NE(rank1.find("another group is using this folder (rank 1 of it is already running)"), std::string::npos)
        << rank1;
    const std::string other_size = usage_error_of([&] { (void)make_file_comm(dir.string(), 1, 3, 1s); });
    EXPECT_NE(other_size.find("a group of 2 processes, where FABRICBENCH_WORLD_SIZE is 3"), std::string::npos)
        << other_size;
    on_each(group, collectives);
  }
  EXPECT_FALSE(fs::exists(dir)) << "files or the folder were left behind";
}

// Two processes came as rank 1 before the group formed: either may be the
// stranger, so the group stops with the same usage error, and still cleans up.
TEST(LocalComm, FileGroupStopsWhenARankComesTwiceBeforeItFormed) {
  const fs::path dir = fresh_folder("fabricbench-comm-twice");
  {
    std::vector<Comm> group;
    group.push_back(make_file_comm(dir.string(), 0, 3, 20s));
    group.push_back(make_file_comm(dir.string(), 1, 3, 20s));
    const std::string twice = usage_error_of([&] { (void)make_file_comm(dir.string(), 1, 3, 1s); });
    EXPECT_NE(twice.find("another group is using this folder"), std::string::npos) << twice;
    group.push_back(make_file_comm(dir.string(), 2, 3, 20s));
    std::vector<std::string> errors(group.size());
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < group.size(); ++r)
      threads.emplace_back([&, r] { errors[r] = usage_error_of([&] { group[r].barrier(); }); });
    for (auto& t : threads) t.join();
    for (const std::string& e : errors)
      EXPECT_NE(e.find("another group is using this folder (two processes came as rank 1)"), std::string::npos) << e;
  }
  EXPECT_FALSE(fs::exists(dir)) << "files or the folder were left behind";
}

// The folder is checked once, on a descriptor: swapped for another under its
// path afterwards, the group goes on in the one it checked.
TEST(LocalComm, FileGroupKeepsToTheFolderItChecked) {
  const fs::path dir = fresh_folder("fabricbench-comm-swapped");
  const fs::path moved = fresh_folder("fabricbench-comm-swapped-away");
  {
    const Comm lone = make_file_comm(dir.string(), 0, 1, 1s);
    fs::rename(dir, moved);
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::all);  // another user's, open to all
    lone.barrier();
    fail_group(lone, "stop");
    EXPECT_TRUE(fs::is_empty(dir)) << "a file went into the swapped-in folder";
    EXPECT_EQ(fs::path(exchange_folder(lone)).parent_path(), dir);  // named as given
    bool found = false;
    for (const auto& entry : fs::directory_iterator(moved)) found = found || fs::exists(entry.path() / "abort");
    EXPECT_TRUE(found) << "the abort is not in the folder that was checked";
  }
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
  fs::remove_all(moved);
}

}  // namespace
}  // namespace fabricbench
