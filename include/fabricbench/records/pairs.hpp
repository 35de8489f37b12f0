#pragma once
// The node-pair matrix's records: bandwidth and latency per pair of nodes (and
// of local ranks), with "not measured" distinct from zero, and the findings
// named from them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricbench {

// A matrix over members (nodes, or local ranks) with "not measured" distinct
// from zero.
struct PairMatrix {
  int size = 0;
  std::vector<std::optional<double>> bandwidth_gbs;  // [from * size + to]
  std::vector<std::optional<double>> latency_us;
  explicit PairMatrix(int n = 0)
      : size(n),
        bandwidth_gbs(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)),
        latency_us(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {}
  std::optional<double>& bw(int from, int to) {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  const std::optional<double>& bw(int from, int to) const {
    return bandwidth_gbs[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) +
                         static_cast<std::size_t>(to)];
  }
  std::optional<double>& lat(int from, int to) {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
  const std::optional<double>& lat(int from, int to) const {
    return latency_us[static_cast<std::size_t>(from) * static_cast<std::size_t>(size) + static_cast<std::size_t>(to)];
  }
};

struct PairsResult {
  std::size_t bytes = 0;        // large message: bandwidth
  std::size_t small_bytes = 0;  // small message: latency
  std::string mode = "full";    // "full": the tournament in node order; "random": a few rounds in a seeded order
  unsigned seed = 0;            // random: the order's seed
  int rounds_planned = 0;       // before the budget cut any
  std::vector<int> rounds;      // the rounds that ran
  int ranks_per_node = 0;
  std::vector<std::string> hosts;
  PairMatrix nodes;               // node <-> node (symmetric), summed over rails
  std::vector<PairMatrix> intra;  // per node: local rank <-> local rank
  std::uint64_t wrong = 0;        // wrong elements over all rounds
};

enum class FindingKind { slow_node, slow_link };

struct Finding {
  FindingKind kind = FindingKind::slow_node;
  std::vector<int> nodes;  // the node, or the link's two ends (from, to)
  std::vector<std::string> hosts;
  double value_gbs = 0;      // the node's median link, or the link's bandwidth
  double reference_gbs = 0;  // the median it is compared with
  std::string message;
};

std::string_view name(FindingKind kind);

}  // namespace fabricbench
