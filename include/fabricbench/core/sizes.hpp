#pragma once
// Message sizes: parsing "8", "1K", "64M", "2GiB" (binary multiples, as
// nccl-tests) and the geometric ladder from a minimum to a maximum.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench {

// The largest message a run accepts (1 TiB: beyond any GPU's memory) and the
// most sizes one sweep may have, so a typo cannot start an endless run.
inline constexpr std::size_t max_message_bytes = std::size_t{1} << 40;
inline constexpr std::size_t max_ladder_sizes = 1000;

// Bytes for "123", "123B", "4K", "64M", "1G", "1T" (either case, as
// nccl-tests) or "4KiB", "64MiB", "1GiB", "1TiB": every multiple is binary
// (K = KiB = 1024). nullopt on anything else: empty, negative, a fraction, an
// unknown suffix, overflow, and the ambiguous "1MB", "1kb", "8b".
std::optional<std::size_t> parse_size(std::string_view text);

// Why `text` is not a size, for an error line ("'1MB' is ambiguous ...",
// "'7X' is not a size ...").
std::string size_error(std::string_view text);

// "8 B", "64 KiB", "1.5 MiB": for the progress line and messages.
std::string format_size(std::size_t bytes);

// min, min*f, min*f^2, ... up to max (max included when reached). Each step
// is rounded down to a multiple of `align` and always grows by at least
// `align`, so a factor close to 1 still terminates. Requires min <= max,
// factor > 1, align > 0. Stops after `limit` sizes, so a caller can tell an
// endless-looking ladder (a factor of 1.0000001) from a long one cheaply.
std::vector<std::size_t> size_ladder(std::size_t min_bytes, std::size_t max_bytes, double factor, std::size_t align = 1,
                                     std::size_t limit = max_ladder_sizes + 1);

}  // namespace fabricbench
