#pragma once
// Text that came from a file (a host name, a reason, a message) is printed
// or written only through these: a result file may be forged, and its
// strings must neither drive the terminal (escape sequences) nor run as a
// spreadsheet formula (CSV injection). HTML has its own escaping
// (html_writer.cpp).

#include <string>
#include <string_view>

namespace fabricbench {

// `text` with every control character except newline and tab shown as an
// escape: C0 and DEL as \xHH, the C1 controls (U+0080..U+009F, which some
// terminals obey like ESC) as \u00HH. Everything else, UTF-8 included, is
// kept.
std::string terminal_safe(std::string_view text);

// One CSV cell: control characters escaped as by terminal_safe (newline and
// tab too), a text that a spreadsheet would take for a formula (starting
// with = + - @ tab or CR) prefixed with ' unless it is a plain number, then
// RFC 4180 quoting where needed.
std::string csv_safe_cell(std::string_view text);

}  // namespace fabricbench
