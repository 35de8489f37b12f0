#pragma once
// A fixture for tests that write files: a fresh folder per test, named after
// the test suite and the process, removed afterwards; and a whole-file read.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

namespace fabricbench {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* suite = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    dir_ =
        std::filesystem::temp_directory_path() / (std::string("fabricbench-") + suite + "-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

}  // namespace fabricbench
