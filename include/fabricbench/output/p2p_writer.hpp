#pragma once
// `p2p --sweep` as a terminal table in the sweep table's style: one row per
// size, a column per OSU test (latency in us, bw and bibw in GB/s), the
// wrong bytes of the size's checked exchange last.

#include <iosfwd>
#include <span>

#include "fabricbench/records/p2p.hpp"

namespace fabricbench {

// The header: who runs, the window, the column titles for `tests`.
void write_p2p_sweep_header(const P2PSweepResult& sweep, std::span<const P2PTest> tests, std::ostream& out);
// One size: its records, in the header's test order.
void write_p2p_sweep_row(std::span<const P2PRecord> records, std::ostream& out);

}  // namespace fabricbench
