#include "fabricbench/core/safe_file.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "scratch_dir.hpp"

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

namespace fs = std::filesystem;

class SafeFileTest : public ScratchDirTest {
 protected:
  static void put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string usage_error(const std::function<void()>& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(SafeFileTest, RefusesTargetsThatAreNotRegularFiles) {
  // A fifo stands in for /dev/full: the old writer renamed a regular file
  // over whatever was there.
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(usage_error([&] { check_output_target(fifo.string(), "--json"); }).find("is a fifo"), std::string::npos);
  EXPECT_THROW(write_file_safely(fifo.string(), [](std::ostream& o) { o << "x"; }), SystemError);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_NE(usage_error([&] { check_output_target(dir_.string(), "--csv"); }).find("is a folder"), std::string::npos);
  EXPECT_NE(usage_error([] { check_output_target("/dev/null", "--json"); }).find("character device"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              check_output_target((dir_ / "no/such/r.json").string(), "--json");
            }).find("cannot write there"),
            std::string::npos);
  EXPECT_EQ(usage_error([&] { check_output_target((dir_ / "new.json").string(), "--json"); }), "");
  EXPECT_FALSE(fs::exists(dir_ / "new.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);  // the fifo alone
}

TEST_F(SafeFileTest, NeverWritesThroughASymlinkPlantedAtTheOldTemporaryName) {
  const fs::path victim = dir_ / "victim";
  put(victim, "precious");
  const fs::path target = dir_ / "r.json";
  // The old writer and probe opened "<target>.tmp.<pid>" with fopen("w").
  fs::create_symlink(victim, target.string() + ".tmp." + std::to_string(getpid()));
  check_output_target(target.string(), "--json");
  write_file_safely(target.string(), [](std::ostream& o) { o << "result"; });
  EXPECT_EQ(read(victim), "precious");
  EXPECT_EQ(read(target), "result");
}

TEST_F(SafeFileTest, ReplacesASymlinkAtTheTargetInsteadOfWritingThroughIt) {
  const fs::path victim = dir_ / "victim";
  put(victim, "precious");
  const fs::path target = dir_ / "r.json";
  fs::create_symlink(victim, target);
  write_file_safely(target.string(), [](std::ostream& o) { o << "result"; });
  EXPECT_EQ(read(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(target));
  EXPECT_EQ(read(target), "result");
}

TEST_F(SafeFileTest, NewFilesGetTheUmaskModeAndNoTemporaryStays) {
  const fs::path target = dir_ / "r.csv";
  const mode_t old = umask(027);
  write_file_safely(target.string(), [](std::ostream& o) { o << "a,b\n"; });
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640U);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(SafeFileTest, AFailingProducerLeavesTheTargetAsItWas) {
  const fs::path target = dir_ / "r.json";
  put(target, "old");
  EXPECT_THROW(write_file_safely(target.string(), [](std::ostream&) { throw SystemError("stop"); }), SystemError);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(SafeFileTest, ANameOfTheLongestLegalLengthIsWritten) {
  // 255 bytes (NAME_MAX): its temporary's name is shortened, not refused.
  const fs::path target = dir_ / std::string(255, 'n');
  check_output_target(target.string(), "--json");
  write_file_safely(target.string(), [](std::ostream& o) { o << "{}"; });
  EXPECT_EQ(read(target), "{}");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

// The lead's save as the launcher ends the job (with the reason) while the
// main thread's save of an older result is in flight (a slow fsync): the
// older one is dropped at its rename, so it never replaces the newer, and
// a save whose content is taken after it lands.
TEST_F(SafeFileTest, ASaveTakenBeforeANewerOneIsDroppedAtItsRename) {
  const fs::path target = dir_ / "r.json";
  std::atomic<int> stage{0};
  bool older_landed = true;
  std::thread older([&] {
    const ContentSnapshot snapshot;  // the result is read now
    older_landed = write_file_safely(target.string(), [&](std::ostream& o) {
      o << "older";
      stage = 1;
      while (stage < 2) std::this_thread::yield();
    });
  });
  while (stage < 1) std::this_thread::yield();
  supersede_writes();
  EXPECT_TRUE(write_file_safely(target.string(), [](std::ostream& o) { o << "with the reason"; }));
  stage = 2;
  older.join();
  EXPECT_FALSE(older_landed);
  EXPECT_EQ(read(target), "with the reason");
  {
    const ContentSnapshot snapshot;
    EXPECT_TRUE(write_file_safely(target.string(), [](std::ostream& o) { o << "later"; }));
  }
  EXPECT_EQ(read(target), "later");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

// What the watchdog does when a signal ends the run while another thread is
// writing the same file: in a child process, as the real end is _Exit.
TEST_F(SafeFileTest, TheLastWordsAreNotReplacedAndNoTemporaryStays) {
  const fs::path target = dir_ / "r.json";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> stage{0};
    // The run's own write of the file, reaching its rename after the end
    // began (it held an older result).
    std::thread late([&] {
      write_file_safely(target.string(), [&](std::ostream& o) {
        o << "older";
        stage = 1;
        while (stage < 2) std::this_thread::yield();
      });
      std::_Exit(3);  // never reached: the write is dropped and waits for the end
    });
    while (stage < 1) std::this_thread::yield();
    begin_final_writes();
    write_file_safely(target.string(), [](std::ostream& o) { o << "last words"; });
    stage = 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the late rename would land now
    remove_unfinished_temporaries();
    std::_Exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
  EXPECT_EQ(read(target), "last words");
  // Only the target: the dropped write's temporary is gone.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(SafeFileTest, RefusesTwoOutputsOnOneFileAndAnOutputThatIsAnInput) {
  const fs::path in = dir_ / "in.json";
  put(in, "{}");
  const std::string x = (dir_ / "x").string();
  EXPECT_NE(usage_error([&] {
              check_distinct_outputs({{"--json", x}, {"--csv", x}}, {});
            }).find("one file for two outputs"),
            std::string::npos);
  EXPECT_NE(usage_error([&] {
              check_distinct_outputs({{"--csv", in.string()}}, {in.string()});
            }).find("is an input of this report"),
            std::string::npos);
  // Another name for the same file: a hard link, a path through "..".
  fs::create_hard_link(in, dir_ / "link.json");
  EXPECT_NE(usage_error([&] {
              check_distinct_outputs({{"--html", (dir_ / "link.json").string()}}, {in.string()});
            }),
            "");
  const std::string roundabout = (dir_ / ".." / dir_.filename() / "x").string();
  EXPECT_NE(usage_error([&] { check_distinct_outputs({{"--json", x}, {"--csv", roundabout}}, {}); }), "");
  EXPECT_EQ(usage_error([&] {
              check_distinct_outputs({{"--json", x}, {"--csv", (dir_ / "y").string()}, {"--html", ""}}, {in.string()});
            }),
            "");
}

}  // namespace
}  // namespace fabricbench
