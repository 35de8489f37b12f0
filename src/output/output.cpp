#include "fabricbench/output/output.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

std::string temp_path_for(const std::string& path) { return fmt::format("{}.tmp.{}", path, getpid()); }

}  // namespace

void check_writable(const std::string& path, const std::string& flag) {
  if (path.empty()) throw UsageError(fmt::format("{}: empty file name", flag));
  const std::string probe = temp_path_for(path);
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr) throw UsageError(fmt::format("{} {}: cannot write there: {}", flag, path, std::strerror(errno)));
  std::fclose(f);
  std::remove(probe.c_str());
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& produce) {
  const std::string temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw SystemError(fmt::format("cannot create {}: {}", temp, std::strerror(errno)));
    produce(out);
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw SystemError(fmt::format("cannot write {}: {}", temp, std::strerror(errno)));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    throw SystemError(fmt::format("cannot rename {} to {}: {}", temp, path, std::strerror(err)));
  }
}

}  // namespace fabricbench
