#pragma once
// Result files: written whole or not at all (a temporary file beside the
// target, then rename), so an interrupted run leaves the last complete file.
// The rules are those of safe_file.hpp.

#include <functional>
#include <iosfwd>
#include <string>

namespace fabricbench {

// Throws UsageError naming `flag` and `path` when the file cannot be created
// in its directory or is not a regular file (check_output_target).
void check_writable(const std::string& path, const std::string& flag);

// Writes through `produce` into a mkstemp temporary beside path, syncs, then
// renames onto path (write_file_safely). Throws SystemError on failure and
// leaves `path` as it was.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& produce);

}  // namespace fabricbench
