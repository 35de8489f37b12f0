#pragma once
// The meeting folder of processes started without a launcher
// (FABRICBENCH_BOOTSTRAP): every rank reads what the others write there, so
// it must be out of reach of other users.
//  - created 0700; an existing one must be a real folder (not a symlink)
//    owned by this user and writable by nobody else, or it is refused;
//  - files are written through a mkstemp temporary (O_CREAT|O_EXCL, 0600)
//    renamed into place, so a planted symlink is replaced, never written
//    through; they are read with O_NOFOLLOW, and a symlink is refused;
//  - what is read is bounded in size; its fields are validated by the reader.

#include <cstddef>
#include <optional>
#include <string>

namespace fabricbench {

// The most one exchange file may hold (a node's topology is a few KiB).
inline constexpr std::size_t max_exchange_bytes = std::size_t{64} << 20;

// Creates `dir` (0700, parents as needed) or checks an existing one. Throws
// UsageError "FABRICBENCH_BOOTSTRAP DIR: ..." naming what is wrong.
void prepare_private_folder(const std::string& dir);

// Writes `bytes` to dir/name through a fresh temporary and a rename. Throws
// SystemError.
void write_private_file(const std::string& dir, const std::string& name, const std::string& bytes);

// The content of `path`, or nullopt when it does not exist (yet). Throws
// SystemError when it is a symlink, not a regular file, larger than
// max_exchange_bytes or unreadable.
std::optional<std::string> read_private_file(const std::string& path);

}  // namespace fabricbench
