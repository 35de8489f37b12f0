#include "fabricbench/output/output.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include <gtest/gtest.h>

#include "scratch_dir.hpp"

#include "fabricbench/core/error.hpp"
#include "fabricbench/output/terminal_stream.hpp"

namespace fabricbench {
namespace {

namespace fs = std::filesystem;

using OutputTest = ScratchDirTest;

TEST_F(OutputTest, WritesWholeFileAndLeavesNoTemporary) {
  const fs::path target = dir_ / "r.json";
  write_file_atomically(target.string(), [](std::ostream& out) { out << "first"; });
  write_file_atomically(target.string(), [](std::ostream& out) { out << "second"; });
  EXPECT_EQ(read(target), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(OutputTest, AFailureWhileProducingKeepsThePreviousFile) {
  const fs::path target = dir_ / "r.json";
  write_file_atomically(target.string(), [](std::ostream& out) { out << "complete"; });
  EXPECT_THROW(write_file_atomically(target.string(),
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("interrupted");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(target), "complete");
}

TEST_F(OutputTest, UnwritablePathIsAUsageErrorNamingFlagAndPath) {
  const std::string bad = (dir_ / "no" / "such" / "dir" / "r.json").string();
  try {
    check_writable(bad, "--json");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--json " + bad + ": cannot write there"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(check_writable((dir_ / "ok.json").string(), "--json"));
  EXPECT_FALSE(fs::exists(dir_ / "ok.json"));
  EXPECT_THROW(write_file_atomically(bad, [](std::ostream& out) { out << "x"; }), SystemError);
}

TEST(TerminalSafeStream, EscapesWhatTerminalSafeEscapesAcrossWrites) {
  std::ostringstream terminal;
  {
    TerminalSafeStream out(terminal);
    out << "host \x1b[2Jx\tok\n";
    // A C1 control split between two writes, and a character at a time.
    out << "a\xc2";
    out << "\x9b" << 'b' << '\xc2' << '\x85';
    out << "caf\xc3\xa9 \xc2";  // UTF-8 kept; a 0xC2 at the very end waits for the flush
  }
  EXPECT_EQ(terminal.str(), "host \\x1b[2Jx\tok\na\\u009bb\\u0085caf\xc3\xa9 \xc2");
}

}  // namespace
}  // namespace fabricbench
