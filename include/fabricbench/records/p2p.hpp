#pragma once
// The point-to-point sweep's records (OSU-style latency, bandwidth and
// bidirectional bandwidth between two ranks).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/config.hpp"
#include "fabricbench/core/field_list.hpp"

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

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, P2PRecord>
void fields_of(Self& r, Field&& field) {
  field("test", r.test);
  field("bytes", r.bytes);
  field("window", r.window);
  field("time_us", r.time_us);
  field("latency_us", r.latency_us);
  field("bandwidth_gbs", r.bandwidth_gbs);
  field("iterations", r.iterations);
  field("wrong", r.wrong);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, P2PSweepResult>
void fields_of(Self& p, Field&& field) {
  field("ranks", p.ranks);
  field("hosts", p.hosts);
  field("window", p.window);
  field("records", p.records);
  field("wrong", p.wrong);
}

}  // namespace fabricbench
