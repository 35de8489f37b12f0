#include "fabricbench/engine/gpu_ladder.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fabricbench/core/stats.hpp"

namespace fabricbench {
namespace {

// Sets larger than this many candidates are grown greedily instead of
// searched: C(16, 8) = 12870 stays exhaustive.
constexpr double max_exhaustive_sets = 20000;

// How a set scores on the matrix: its farthest pair and the sum over pairs.
struct SetScore {
  double worst = 0;
  double nearest = std::numeric_limits<double>::infinity();
  double sum = 0;
};

SetScore score(const std::vector<std::vector<double>>& d, const std::vector<int>& members) {
  SetScore s;
  for (std::size_t a = 0; a < members.size(); ++a)
    for (std::size_t b = a + 1; b < members.size(); ++b) {
      const double v = d[static_cast<std::size_t>(members[a])][static_cast<std::size_t>(members[b])];
      s.worst = std::max(s.worst, v);
      s.nearest = std::min(s.nearest, v);
      s.sum += v;
    }
  return s;
}

// Closest: the nearest farthest pair, then the smallest sum. Spread: the
// farthest nearest pair, then the largest sum. Strictly better only, so the
// first set in index order wins a tie.
bool closer(const SetScore& a, const SetScore& b) { return a.worst != b.worst ? a.worst < b.worst : a.sum < b.sum; }
bool wider(const SetScore& a, const SetScore& b) {
  return a.nearest != b.nearest ? a.nearest > b.nearest : a.sum > b.sum;
}

double combinations(int n, int k) {
  double c = 1;
  for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

// The best set of k of n GPUs under `better`: every combination when there
// are few, else grown greedily from GPU 0.
template <typename Better>
std::vector<int> best_set(const std::vector<std::vector<double>>& d, int n, int k, Better better) {
  if (combinations(n, k) <= max_exhaustive_sets) {
    std::vector<int> pick(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) pick[static_cast<std::size_t>(i)] = i;
    std::vector<int> best = pick;
    SetScore best_score = score(d, best);
    while (true) {
      int i = k - 1;
      while (i >= 0 && pick[static_cast<std::size_t>(i)] == n - k + i) --i;
      if (i < 0) break;
      ++pick[static_cast<std::size_t>(i)];
      for (int j = i + 1; j < k; ++j) pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(j - 1)] + 1;
      const SetScore s = score(d, pick);
      if (better(s, best_score)) {
        best = pick;
        best_score = s;
      }
    }
    return best;
  }
  std::vector<int> set{0};
  while (static_cast<int>(set.size()) < k) {
    int pick = -1;
    SetScore pick_score;
    for (int g = 0; g < n; ++g) {
      if (std::find(set.begin(), set.end(), g) != set.end()) continue;
      std::vector<int> trial = set;
      trial.push_back(g);
      const SetScore s = score(d, trial);
      if (pick < 0 || better(s, pick_score)) {
        pick = g;
        pick_score = s;
      }
    }
    set.push_back(pick);
  }
  std::sort(set.begin(), set.end());
  return set;
}

// The distances of a usable matrix, or why it is not usable.
std::optional<std::vector<std::vector<double>>> distances(const LinkMatrix& m, int gpus, std::string& why) {
  if (m.empty()) {
    why = "no GPU link matrix (no GPUs seen by the topology probe)";
    return std::nullopt;
  }
  if (static_cast<int>(m.size()) != gpus) {
    why = fmt::format("the GPU link matrix lists {} GPUs for {} ranks per node", m.size(), gpus);
    return std::nullopt;
  }
  std::vector<std::vector<double>> d(m.size(), std::vector<double>(m.size(), 0.0));
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].size() != m.size()) {
      why = "the GPU link matrix is not square";
      return std::nullopt;
    }
    for (std::size_t j = 0; j < m.size(); ++j) {
      if (i == j) continue;
      const auto v = path_distance(m[i][j]);
      if (!v) {
        why = fmt::format("the GPU link matrix does not tell the path from GPU {} to GPU {}", i, j);
        return std::nullopt;
      }
      d[i][j] = *v;
    }
  }
  return d;
}

std::vector<int> first(int k) {
  std::vector<int> v(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace

std::optional<double> path_distance(std::string_view cell) {
  if (cell.size() > 2 && cell.substr(0, 2) == "NV") {
    int links = 0;
    for (const char ch : cell.substr(2)) {
      if (ch < '0' || ch > '9') return std::nullopt;
      links = std::min(links * 10 + (ch - '0'), 999);
    }
    if (links < 1) return std::nullopt;
    return 1.0 - links / 1000.0;  // in (0, 1): below every PCIe path, more links closer
  }
  constexpr std::array<std::string_view, 5> pci{"PIX", "PXB", "PHB", "NODE", "SYS"};
  for (std::size_t i = 0; i < pci.size(); ++i)
    if (cell == pci[i]) return static_cast<double>(i + 1);
  return std::nullopt;
}

std::string set_path(const LinkMatrix& matrix, const std::vector<int>& members) {
  std::string worst = "-";
  double worst_d = -1;
  for (std::size_t a = 0; a < members.size(); ++a)
    for (std::size_t b = a + 1; b < members.size(); ++b) {
      const auto i = static_cast<std::size_t>(members[a]);
      const auto j = static_cast<std::size_t>(members[b]);
      const std::string cell = i < matrix.size() && j < matrix[i].size() ? matrix[i][j] : "?";
      const double d = path_distance(cell).value_or(std::numeric_limits<double>::infinity());
      if (d > worst_d) {
        worst_d = d;
        worst = path_distance(cell) ? cell : "?";
      }
    }
  return worst;
}

std::vector<int> gpu_ladder_sizes(int gpus_per_node, const std::vector<int>& extra) {
  std::vector<int> sizes;
  for (int k = 2; k < gpus_per_node; k *= 2) sizes.push_back(k);
  if (gpus_per_node >= 2) sizes.push_back(gpus_per_node);
  for (const int k : extra)
    if (k >= 2 && k <= gpus_per_node) sizes.push_back(k);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

GpuLadderPlan plan_gpu_ladder(const std::vector<LinkMatrix>& matrices, int gpus_per_node,
                              const std::vector<int>& extra_sizes) {
  GpuLadderPlan plan;
  const std::vector<int> sizes = gpu_ladder_sizes(gpus_per_node, extra_sizes);
  std::vector<std::vector<std::vector<double>>> d;
  for (std::size_t n = 0; n < matrices.size() && plan.note.empty(); ++n) {
    std::string why;
    if (auto dist = distances(matrices[n], gpus_per_node, why))
      d.push_back(std::move(*dist));
    else
      plan.note = fmt::format("{}{}: sets in rank order (the first k local ranks)",
                              matrices.size() > 1 ? fmt::format("node {}: ", n) : std::string(), why);
  }
  plan.from_topology = plan.note.empty() && !matrices.empty();
  if (!plan.from_topology) {
    if (plan.note.empty()) plan.note = "no topology: sets in rank order (the first k local ranks)";
    for (const int k : sizes) {
      std::vector<GpuSetPlan> row;
      for (std::size_t n = 0; n < std::max<std::size_t>(matrices.size(), 1); ++n)
        row.push_back({k, GpuSetChoice::rank_order, first(k), "?"});
      plan.rows.push_back(std::move(row));
    }
    return plan;
  }
  for (const int k : sizes) {
    std::vector<GpuSetPlan> closest;
    std::vector<GpuSetPlan> spread;
    bool offered = false;
    for (std::size_t n = 0; n < matrices.size(); ++n) {
      const std::vector<int> near = best_set(d[n], gpus_per_node, k, closer);
      const std::vector<int> far = best_set(d[n], gpus_per_node, k, wider);
      const SetScore a = score(d[n], near);
      const SetScore b = score(d[n], far);
      if (a.worst != b.worst || a.nearest != b.nearest || a.sum != b.sum) offered = true;
      closest.push_back({k, GpuSetChoice::closest, near, set_path(matrices[n], near)});
      spread.push_back({k, GpuSetChoice::spread, far, set_path(matrices[n], far)});
    }
    if (!offered)
      for (GpuSetPlan& s : closest) s.choice = GpuSetChoice::any;
    plan.rows.push_back(std::move(closest));
    if (offered) plan.rows.push_back(std::move(spread));
  }
  return plan;
}

}  // namespace fabricbench
