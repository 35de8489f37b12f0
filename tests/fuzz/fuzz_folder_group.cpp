// The records of the launcher-free process group (FABRICBENCH_BOOTSTRAP):
// rank 0 of a group meeting in a folder reads the other members' round files
// and decodes them in the collectives it runs at start-up (discover_layout:
// host names, the shared-memory split, node leaders and local ranks), then a
// barrier, a broadcast, two all-reduces and an all-gather. The input plays
// every other member: the files are written into the group's exchange folder
// once rank 0 has made it and before it runs a collective, so any byte string
// another user could plant there reaches the decoders.
//
// Input: byte 0 picks the group size (2..8), byte 1 bit 0 says whether the
// last chunk is written as the folder's `abort` file; then chunks, each a
// little-endian 16-bit length and its bytes, filling in order the world
// rounds 0..9 of ranks 1..N-1 (file w_r<round>.<rank>), then round 0 of
// indices 1..N-1 of rank 0's node group (w_s0c0_r0.<index>).
//
// Oracle: a layout that is accepted is consistent (every rank on a node in
// range, the per-node counts adding up to the ranks).

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/comm/comm.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/comm/local_comm.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace fabricbench;

constexpr int world_rounds = 10;
// No waiting: every file rank 0 will ever read is written before it starts,
// so a missing one is missing for good and the wait ends at the first poll.
constexpr std::chrono::milliseconds no_wait{0};

class Chunks {
 public:
  explicit Chunks(std::string_view rest) : rest_(rest) {}
  bool next(std::string_view& chunk) {
    if (rest_.size() < 2) return false;
    const std::size_t length =
        static_cast<unsigned char>(rest_[0]) | (static_cast<std::size_t>(static_cast<unsigned char>(rest_[1])) << 8U);
    rest_.remove_prefix(2);
    chunk = rest_.substr(0, length);
    rest_.remove_prefix(chunk.size());
    return true;
  }

 private:
  std::string_view rest_;
};

void check_layout(const Layout& layout) {
  int total = 0;
  for (const int n : layout.ranks_per_node) total += n;
  bool ok = layout.nodes == static_cast<int>(layout.ranks_per_node.size()) &&
            layout.nodes == static_cast<int>(layout.hostnames.size()) && total == layout.ranks && layout.node >= 0 &&
            layout.node < layout.nodes && static_cast<int>(layout.node_of_rank.size()) == layout.ranks;
  for (const int node : layout.node_of_rank) ok = ok && node >= 0 && node < layout.nodes;
  if (!ok)
    fuzz::defect("oracle layout-inconsistent", fmt::format("{} ranks, {} nodes, ranks per node {}", layout.ranks,
                                                           layout.nodes, fmt::join(layout.ranks_per_node, ",")));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  if (size < 2) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);  // NOLINT: bytes as text
  const int n = 2 + static_cast<int>(data[0] % 7);
  const bool abort_file = (data[1] & 1U) != 0;

  static std::atomic<std::uint64_t> runs{0};
  const fs::path dir = fs::path(fuzz::scratch_dir()) / fmt::format("group{}", runs++);
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);

  std::vector<std::string> names;
  for (int round = 0; round < world_rounds; ++round)
    for (int rank = 1; rank < n; ++rank) names.push_back(fmt::format("w_r{}.{}", round, rank));
  for (int index = 1; index < n; ++index) names.push_back(fmt::format("w_s0c0_r0.{}", index));
  std::vector<std::pair<std::string, std::string_view>> files;
  Chunks chunks(bytes.substr(2));
  std::string_view chunk;
  while (files.size() < names.size() && chunks.next(chunk)) files.emplace_back(names[files.size()], chunk);
  if (abort_file && !files.empty()) files.back().first = "abort";

  fuzz::guarded(fuzz::Accept::any_error, fuzz::Source::file, [&] {
    const Comm world = make_file_comm(dir.string(), 0, n, no_wait);
    const fs::path exchanges = exchange_folder(world);
    for (const auto& [name, content] : files) fuzz::write_file((exchanges / name).string(), content);
    const Layout layout = discover_layout(world);
    check_layout(layout);
    world.barrier();
    (void)world.broadcast_value<std::int64_t>(0, 1);
    std::array<double, 2> sums{1.0, 2.0};
    world.allreduce_sum(std::span<double>(sums));
    std::array<std::int64_t, 1> maxima{3};
    world.allreduce_max(std::span<std::int64_t>(maxima));
    (void)world.allgather("done");
  });
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return 0;
}
