#pragma once
// Judging the pair matrix and the placement measurements: slow nodes and
// links, latency islands, and the bisection's verdict.

#include <optional>
#include <string>
#include <vector>

#include "fabricbench/records/pairs.hpp"
#include "fabricbench/records/placement.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {

// When a bandwidth is an outlier: below (1 - drop) x the median, and more than
// `mads` scaled MADs below the median on a log scale (bandwidth noise is
// multiplicative: a link at half speed is as far off as one at double).
// Both must hold, so a tight cluster (tiny MAD) does not flag noise and a
// wide one does not hide a slow member.
struct OutlierThresholds {
  double mads = 4.0;
  double drop = 0.5;
};

// The centre and spread the outlier test compares with.
struct RobustCenter {
  double median = 0;      // of the values
  double log_median = 0;  // of their logarithms
  double log_mad = 0;     // median absolute deviation of the logarithms
};

RobustCenter robust_center(const std::vector<double>& values);

// Slow nodes first: a node whose upper-quartile link bandwidth is an outlier
// among the nodes' (all, or nearly all, its links slow). Then slow links among the links
// that touch no slow node.
std::vector<Finding> find_outliers(const PairMatrix& matrix, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds);

bool is_outlier(double value, const RobustCenter& center, const OutlierThresholds& thresholds);

// Single-linkage clustering with a ratio criterion: the pair latencies are
// sorted, and the largest steps between neighbours (as ratios, since latency
// noise is multiplicative) are the candidate cuts; at a cut, nodes joined by
// a pair at or below it form an island. A split stands only when the largest
// step is at least `min_ratio`, every island holds two nodes or more (a node
// far from all others is a slow node, not a group) and the median across
// islands is at least `min_ratio` times the median within them; the largest
// step whose split stands is taken. Where none stands there is one island (a
// flat fabric), and the message says why from the largest step. Trying more
// than the largest step keeps one noisy pair inside an island (its step can
// be the largest) from hiding the islands; single linkage keeps one slow link
// from splitting anything: its two ends stay joined through their other,
// fast, pairs.
IslandsResult find_latency_islands(const PairMatrix& matrix, const std::vector<std::string>& hosts, double min_ratio);

// The sums, each halving's ratio, the worst, and the message: a non-blocking
// fabric carries every pair of a halving at its isolated speed (a ratio of
// 1); the fabric is named oversubscribed when the worst ratio exceeds
// `limit`. The message also says how much of the cut space the halvings
// sampled (different halvings measured of all the nodes have) and, when not
// all, how to measure more.
void analyze_bisection(BisectionResult& result, double limit);

// The findings that stand once the full matrix ran: its own when it ran
// whole (every planned round, nothing cut by the budget, `cut` false) or no
// health pass ran; else the health pass's, since a matrix the budget cut
// short names nodes from fewer links than the health pass saw (a slow host's
// links are the first to be cut).
std::vector<Finding> standing_findings(const PairsResult& matrix, bool cut, const std::optional<HealthResult>& health,
                                       const OutlierThresholds& thresholds);

}  // namespace fabricbench
