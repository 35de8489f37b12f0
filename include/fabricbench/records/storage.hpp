#pragma once
// The shared-storage test's records: what each node wrote and read, and the
// files a cut run left.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabricbench/core/field_list.hpp"

namespace fabricbench {

// The block the test stamps and checks; wrong_blocks counts these.
inline constexpr std::uint64_t storage_block_bytes = 4096;

struct StorageNode {
  int node = 0;
  std::string host;
  int files = 0;            // writers on this node
  std::uint64_t bytes = 0;  // written (and read) by them together
  double write_s = 0;       // the slowest of its writers, from the common start
  double read_s = 0;
  double write_gbs = 0;  // bytes / write_s, GB = 1e9 bytes
  double read_gbs = 0;
};

struct StorageResult {
  std::string path;
  std::string io_mode;  // "direct" (O_DIRECT) or "buffered"
  std::string io_note;  // why buffered, when it is
  std::uint64_t file_bytes = 0;
  std::uint64_t block_bytes = 0;  // one write or read call
  bool per_node = false;
  int files_written = 0;
  int files_removed = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  double write_s = 0;  // the slowest writer's time, from the common start
  double read_s = 0;
  double write_gbs = 0;  // aggregate: all bytes / the slowest writer's time
  double read_gbs = 0;
  std::vector<StorageNode> nodes;
  std::optional<int> slowest_write_node;  // with 2 or more nodes
  std::optional<int> slowest_read_node;
  std::uint64_t wrong_blocks = 0;       // 4 KiB blocks read back unlike what was written
  std::vector<std::string> files_left;  // the test files that could not be removed: delete by hand
  std::string message;
};

// "a, b, c": the paths of files left, as messages name them.
std::string join_paths(const std::vector<std::string>& paths);

// ---- field lists (core/field_list.hpp) ------------------------------------

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StorageNode>
void fields_of(Self& n, Field&& field) {
  field("node", n.node);
  field("host", n.host);
  field("files", n.files);
  field("bytes", n.bytes);
  field("write_s", n.write_s);
  field("read_s", n.read_s);
  field("write_gbs", n.write_gbs);
  field("read_gbs", n.read_gbs);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, StorageResult>
void fields_of(Self& s, Field&& field) {
  field("path", s.path);
  field("io_mode", s.io_mode);
  field("io_note", fields::empty_as_null(s.io_note));
  field("file_bytes", s.file_bytes);
  field("block_bytes", s.block_bytes);
  field("per_node", s.per_node);
  field("files_written", s.files_written);
  field("files_removed", s.files_removed);
  field("bytes_written", s.bytes_written);
  field("bytes_read", s.bytes_read);
  field("write_s", s.write_s);
  field("read_s", s.read_s);
  field("write_gbs", s.write_gbs);
  field("read_gbs", s.read_gbs);
  field("nodes", s.nodes);
  field("slowest_write_node", s.slowest_write_node);
  field("slowest_read_node", s.slowest_read_node);
  field("wrong_blocks", s.wrong_blocks);
  field("files_left", fields::omitted(s.files_left));
  field("message", s.message);
}

}  // namespace fabricbench
