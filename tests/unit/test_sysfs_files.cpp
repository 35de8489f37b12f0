// The probes' one reader of small files (topology/detail/sysfs_files.hpp)
// and the descriptor owner it closes through (core/fd.hpp).

#include "fabricbench/topology/detail/sysfs_files.hpp"

#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fabricbench/core/fd.hpp"
#include "fabricbench/core/text.hpp"
#include "scratch_dir.hpp"

namespace fabricbench {
namespace {

using detail::Overflow;
using detail::read_small_file;

class SysfsFiles : public ScratchDirTest {
 protected:
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

TEST_F(SysfsFiles, AFileWithinTheLimitReadsWhole) {
  const auto p = write("speed", "400000\n");
  const auto r = read_small_file(p, 7);
  ASSERT_TRUE(r.text) << r.error;
  EXPECT_EQ(*r.text, "400000\n");
}

TEST_F(SysfsFiles, ALongerFileIsRefusedOrCutAsAsked) {
  const auto p = write("cpuinfo", std::string(10000, 'x'));
  const auto refused = read_small_file(p, 4096);
  EXPECT_FALSE(refused.text);
  EXPECT_EQ(refused.error, "larger than expected");
  const auto cut = read_small_file(p, 4096, Overflow::truncate);
  ASSERT_TRUE(cut.text) << cut.error;
  EXPECT_EQ(cut.text->size(), 4096U);
}

TEST_F(SysfsFiles, WhatDoesNotReadSaysWhy) {
  EXPECT_EQ(read_small_file(dir_ / "absent", 64).error, "No such file or directory");
  EXPECT_EQ(read_small_file(dir_, 64).error, "Is a directory");
  // A FIFO planted under a root neither blocks the open nor the read.
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto r = read_small_file(fifo, 64);
  EXPECT_FALSE(r.text);
  EXPECT_EQ(r.error, "not a regular file");
}

TEST(SysfsText, TrimListAndBusIds) {
  EXPECT_EQ(trim(" \t0x10de\r\n"), "0x10de");
  EXPECT_EQ(trim(" \n "), "");
  EXPECT_TRUE(detail::is_bus_id("0000:1b:00.0"));
  EXPECT_TRUE(detail::is_bus_id("0000:aB:1f.7"));
  EXPECT_FALSE(detail::is_bus_id("0000:1b:00"));
  EXPECT_FALSE(detail::is_bus_id("0000-1b:00.0"));
  EXPECT_FALSE(detail::is_bus_id("0000:1g:00.0"));
  EXPECT_TRUE(detail::list_dir("/nonexistent-folder-of-fabricbench").empty());
}

TEST_F(SysfsFiles, ADirectoryIsListedSorted) {
  write("b", "");
  write("a", "");
  write("c", "");
  EXPECT_EQ(detail::list_dir(dir_), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(SysfsFiles, TheDescriptorOwnerClosesOnceAndMoves) {
  const auto p = write("f", "x");
  int raw = -1;
  {
    Fd a(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(a.valid());
    raw = a.get();
    Fd b(std::move(a));
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
    EXPECT_EQ(b.get(), raw);
    EXPECT_EQ(::fcntl(raw, F_GETFD), FD_CLOEXEC);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);  // closed with its last owner
  Fd c(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  c.close_checked("f");
  EXPECT_FALSE(c.valid());
  EXPECT_FALSE(Fd(-1).valid());
}

}  // namespace
}  // namespace fabricbench
