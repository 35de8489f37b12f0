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
#include "fabricbench/transport/transport.hpp"

namespace fabricbench {

// One test at one size, as the pair's first rank timed it (the sender's
// clock, as OSU reports).
struct P2PRecord {
  P2PTest test = P2PTest::latency;
  std::size_t bytes = 0;     // one message
  int window = 1;            // messages per iteration and direction (1 for latency)
  double time_us = 0;        // one iteration: a round trip, or a window (and its acknowledgement)
  double latency_us = 0;     // latency: half the round trip; bandwidth tests: time_us / window
  double bandwidth_gbs = 0;  // bytes moved per second, both directions for bibw; GB = 1e9 bytes
  int iterations = 0;
  std::optional<std::uint64_t> wrong;  // the check exchange at this size, both ranks; nullopt when unchecked
};

struct P2PSweepResult {
  std::vector<int> ranks;  // the two world ranks
  std::vector<std::string> hosts;
  int window = 1;
  std::vector<P2PRecord> records;  // by size, then test
  std::uint64_t wrong = 0;
};

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
