// The collectives of the groups without MPI, built on their one all-gather of
// bytes (detail/local_comm_backend.hpp).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "fabricbench/comm/detail/local_comm_backend.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench::detail {
namespace {

std::string bytes_of(std::span<const std::byte> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};  // NOLINT: raw bytes
}

void check_size(const char* what, std::size_t rank, std::size_t got, std::size_t expected) {
  if (got != expected)
    throw SystemError(fmt::format("{}: rank {} contributed {} bytes, {} expected", what, rank, got, expected));
}

template <typename T, typename Combine>
void combine_all(const std::vector<std::string>& all, std::span<std::byte> values, Combine combine) {
  const std::size_t n = values.size() / sizeof(T);
  std::vector<T> out(n);
  std::vector<T> theirs(n);
  for (std::size_t r = 0; r < all.size(); ++r) {
    check_size("allreduce", r, all[r].size(), values.size());
    std::memcpy(theirs.data(), all[r].data(), values.size());
    for (std::size_t i = 0; i < n; ++i) out[i] = r == 0 ? theirs[i] : combine(out[i], theirs[i]);
  }
  std::memcpy(values.data(), out.data(), values.size());
}

template <typename T>
void reduce_as(const std::vector<std::string>& all, std::span<std::byte> values, Reduction op) {
  switch (op) {
    case Reduction::sum:
      return combine_all<T>(all, values, [](T a, T b) { return a + b; });
    case Reduction::min:
      return combine_all<T>(all, values, [](T a, T b) { return std::min(a, b); });
    case Reduction::max:
      return combine_all<T>(all, values, [](T a, T b) { return std::max(a, b); });
  }
}

}  // namespace

void GroupBackend::barrier() { exchange({}); }

void GroupBackend::broadcast(std::span<std::byte> data, int root) {
  const std::vector<std::string> all = exchange(rank() == root ? bytes_of(data) : std::string());
  const std::string& theirs = all.at(static_cast<std::size_t>(root));
  if (theirs.size() != data.size())
    throw SystemError(fmt::format("broadcast: the root sent {} bytes, {} expected", theirs.size(), data.size()));
  std::memcpy(data.data(), theirs.data(), data.size());
}

void GroupBackend::allreduce(std::span<std::byte> values, Scalar type, Reduction op) {
  const std::vector<std::string> all = exchange(bytes_of(values));
  switch (type) {
    case Scalar::f64:
      return reduce_as<double>(all, values, op);
    case Scalar::u64:
      return reduce_as<std::uint64_t>(all, values, op);
    case Scalar::i64:
      return reduce_as<std::int64_t>(all, values, op);
  }
}

void GroupBackend::allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) {
  const std::vector<std::string> each = exchange(bytes_of(mine));
  for (std::size_t r = 0; r < each.size(); ++r) {
    check_size("allgather", r, each[r].size(), mine.size());
    std::memcpy(all.subspan(r * mine.size(), mine.size()).data(), each[r].data(), mine.size());
  }
}

std::vector<std::string> GroupBackend::allgather_bytes(std::string_view mine) { return exchange(std::string(mine)); }

// Members with the same color, ordered by (key, rank), as MPI_Comm_split.
std::unique_ptr<CommBackend> GroupBackend::split(int color, int key) {
  const std::uint64_t generation = splits_++;
  const std::array<int, 2> mine{color, key};
  const std::vector<std::string> all = exchange(bytes_of(std::as_bytes(std::span<const int>(mine))));
  if (color < 0) return nullptr;
  std::vector<std::array<int, 3>> members;  // key, rank, color
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::array<int, 2> theirs{};
    check_size("split", r, all[r].size(), sizeof(theirs));
    std::memcpy(theirs.data(), all[r].data(), sizeof(theirs));
    if (theirs[0] == color) members.push_back({theirs[1], static_cast<int>(r), theirs[0]});
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  int index = 0;
  for (const auto& m : members) {
    if (m[1] == rank()) index = static_cast<int>(ranks.size());
    ranks.push_back(m[1]);
  }
  return subgroup(ranks, index, fmt::format("s{}c{}", generation, color));
}

std::unique_ptr<CommBackend> GroupBackend::split_shared() {
  const std::vector<std::string> hosts = exchange(this_hostname());
  const auto mine = static_cast<std::size_t>(rank());
  int color = 0;
  while (hosts[static_cast<std::size_t>(color)] != hosts[mine]) ++color;
  return split(color, rank());
}

void GroupBackend::abort(int exit_code) {
  fail(fmt::format("exit code {}", exit_code));
  std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): the end of the process
}

}  // namespace fabricbench::detail
