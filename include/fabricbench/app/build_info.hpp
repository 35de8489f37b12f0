#pragma once
// What this binary is: version, git hash, compiled-in transports and the
// library versions it was built against.

#include <string>

#include "fabricbench/results/result.hpp"

namespace fabricbench {

ToolInfo tool_info();
// The `fabricbench version` text.
std::string version_text();

}  // namespace fabricbench
