#pragma once
// `p2p --sweep`: the OSU point-to-point tests (osu_latency, osu_bw,
// osu_bibw) over a size ladder between two chosen ranks, on any transport.
// The two ranks run in a group of their own; the other ranks wait, and the
// figures reach world rank 0 after every size.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/config.hpp"
#include "fabricbench/records/p2p.hpp"
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// The two world ranks a sweep runs between: --ranks as given, --nodes as
// local rank 0 of each node, or by default rank 0 and the first rank of the
// next node (rank 1 on one node). Throws UsageError naming the option when a
// rank or node does not exist or the two are the same.
std::vector<int> p2p_sweep_ranks(const P2PSweepConfig& config, const Layout& layout);

// The figures of one test from the first rank's seconds for `iters`
// iterations.
P2PRecord make_p2p_record(P2PTest test, std::size_t bytes, int window, double seconds, int iters);

// Collective over `world`. `on_size` is called on world rank 0 with the
// records of each size as it completes. Returns the result on world rank 0.
P2PSweepResult run_p2p_sweep(const RunConfig& config, Transport& transport, const Comm& world, const Layout& layout,
                             const std::function<void(std::span<const P2PRecord>)>& on_size = {});

}  // namespace fabricbench
