#pragma once
// Judging the pair matrix and the placement measurements: slow nodes and
// links, latency islands, and the bisection's verdict.

#include <optional>
#include <string>
#include <string_view>
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
  double log_mad = 0;     // median absolute deviation of the logarithms; 0 below spread_sample values
};

// The fewest values whose spread is taken into account. Below, only the
// drop decides: the median deviation of three to five values is the
// distance to one neighbour, and one noisy healthy link (a fourth of the
// other, on a loaded machine) spread them so wide that a link at a
// hundredth was "within the spread" and the run ended OK.
constexpr std::size_t spread_sample = 6;

RobustCenter robust_center(const std::vector<double>& values);

// The first pass: the suspects a pair matrix names, by bandwidth and by
// latency (the lower figure of the small message, so contention, which only
// adds time, is left out), none of them confirmed yet. With two or more
// slow nodes the median link is no reference: each node's best link is
// (a slow node has no fast link, a healthy one has one whenever another
// healthy node exists), so the healthy nodes are those whose best link is
// near the upper median of the nodes' best links; a node's figure is then
// its upper-quartile link to the healthy nodes. Slow nodes are those whose
// figure is an outlier from the links among the healthy nodes (up to half
// the nodes may be slow; with 3 nodes, the
// one whose two links are both slow while the third is not); then slow
// links among the links that touch no slow node. A node with no figure at
// all while others have one (its exchanges were cut) is a suspect of its
// own. Two nodes have one link and no reference: nothing is named.
std::vector<Finding> find_outliers(const PairMatrix& matrix, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds);

// Groups of nodes fast within and slow across (single linkage on the time a
// byte takes, as find_latency_islands on latency; every group two nodes or
// more, the median across below (1 - drop) x the median within; the cut's
// step, as large, puts every pair across below the pairs within): the path
// between them, a switch uplink they share. Its nodes are those behind it.
// Nothing where no split stands, or below 4 nodes.
std::optional<Finding> find_slow_uplink(const PairMatrix& m, const std::vector<std::string>& hosts,
                                        const OutlierThresholds& thresholds);

// The first pass's suspects from the nodes' matrix (find_outliers, and a
// slow uplink, which then explains the slow nodes and links across it) and,
// with several ranks a node, from each rail's: a node named on some of its
// rails and not on every one is those rails' NICs (slow_nic, the node
// itself then not named), a link slow on some rails only is that rail's
// link; slow on every rail, it is the node or link the nodes' matrix names.
// With 8 rails one NIC at a tenth costs its node's sum 11%, which no
// threshold sees; its rail's matrix shows it at a tenth.
std::vector<Finding> find_suspects(const NodePairs& pairs, const std::vector<std::string>& hosts,
                                   const OutlierThresholds& thresholds);

// What two nodes' matrix cannot tell, said wherever its findings would be.
inline constexpr std::string_view two_nodes_text =
    "not judged: 2 nodes have one link, which tells neither a slow node from a slow link nor slow from normal; a "
    "third node tells them apart (or compare the pair's figure with the reference)";

// The second pass: every suspect exchanges again with up to `partners`
// nodes that no suspect involves (a suspect link: the link again, and each
// end with a healthy node), none of them in the first pass's load. What
// `known` names (findings confirmed before: a slow node, link or uplink) is
// no healthy partner either, and is not measured again. The pairs to
// measure, each once, lowest node first.
std::vector<std::pair<int, int>> confirmation_pairs(const std::vector<Finding>& suspects, int nodes,
                                                    const std::vector<Finding>& known = {}, int partners = 3);

// The pairs in rounds in which every node takes part once at most: each
// round is every node's partner (-1: idle), as engine/pairs.hpp's partners()
// gives them.
std::vector<std::vector<int>> pack_rounds(const std::vector<std::pair<int, int>>& pairs, int nodes);

// The second pass's rounds: confirmation_pairs' pairs packed into rounds,
// first those of the suspects of no one rail, every rail at once; then each
// rail's suspects' (a slow NIC, a rail's link) in rounds of that rail alone,
// so that a rail is confirmed slow by its own exchanges with no other rail's
// traffic or ranks beside it (every rail at once on ranks that share cores,
// a healthy rail's pair measured at a fifteenth of its rate, twice, and was
// confirmed a slow link). Partners are chosen over every suspect, as
// confirmation_pairs chooses them.
std::vector<PairRound> confirmation_rounds(const std::vector<Finding>& suspects, int nodes,
                                           const std::vector<Finding>& known = {});

struct Confirmation {
  std::vector<Finding> findings;     // confirmed (a node slow with one partner only becomes that link)
  std::vector<Finding> unconfirmed;  // measured healthy again, or with no healthy partner to measure with
};

// Judges each suspect by the second pass's matrix (a rail's suspect by that
// rail's) against the first pass's healthy reference: a node slow again with most of its partners (two at
// least, or its only one) is confirmed; slow with one of several, that link
// is; slow with none, it is not confirmed. A suspect link is confirmed when
// it is slow again; pairs with what `known` names do not count. The messages
// say with whom and at what figures.
Confirmation confirm_suspects(std::vector<Finding> suspects, const NodePairs& second_pass,
                              const std::vector<std::string>& hosts, const OutlierThresholds& thresholds,
                              const std::vector<Finding>& known = {});

// The same finding, of the same kind, on the same nodes.
bool same_finding(const Finding& a, const Finding& b);

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

// The suspects of `first` that `confirmed` does not already hold (a node or
// link one pass confirmed is not measured again).
std::vector<Finding> new_suspects(const std::vector<Finding>& first, const std::vector<Finding>& confirmed);

}  // namespace fabricbench
