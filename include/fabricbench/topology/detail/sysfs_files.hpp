#pragma once
// topology's internals: how the probes read the small files of sysfs, procfs
// and /etc under their injected roots. One reader for all of them, so each
// probe bounds what it reads and reports why a file did not read the same way.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench::detail {

struct FileText {
  std::optional<std::string> text;  // empty when the file did not read
  std::string error;                // why, for a note ("Permission denied", ...)
};

// What to do with a file longer than the limit.
enum class Overflow {
  refuse,   // not the file expected: no text, error "larger than expected"
  truncate  // its first `limit` bytes (e.g. the first processors of /proc/cpuinfo)
};

// A small file whole, through POSIX reads: sysfs reports failures (EINVAL
// for a link speed the driver does not know, EACCES for config space beyond
// the header) on read(), and the reason belongs in the note. Opened without
// blocking, and only a regular file is read: a FIFO or a device planted under
// a root can neither hang nor flood the probe.
FileText read_small_file(const std::filesystem::path& path, std::size_t limit, Overflow overflow = Overflow::refuse);

// The names in a directory, sorted; empty when it cannot be listed.
std::vector<std::string> list_dir(const std::filesystem::path& dir);

// A PCI bus id as sysfs names devices: dddd:bb:dd.f, in hexadecimal.
bool is_bus_id(std::string_view text);

}  // namespace fabricbench::detail
