#pragma once
// The guides of docs/guides/, compiled in so that they ship with the binary:
// `fabricbench help` lists them, `fabricbench help TOPIC` prints one.

#include <span>
#include <string>
#include <string_view>

namespace fabricbench {

struct Guide {
  std::string_view topic;  // the file's name without .md
  std::string_view text;   // the whole file, as written
};

// Every guide, sorted by topic.
std::span<const Guide> guides();

// The guide's title: its first line without the leading "# " and the
// backquotes of code spans ("Shared storage: fabricbench storage").
std::string guide_title(const Guide& guide);

}  // namespace fabricbench
