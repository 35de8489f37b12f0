#include "fabricbench/records/pairs.hpp"

namespace fabricbench {

std::string_view name(FindingKind kind) { return kind == FindingKind::slow_node ? "slow_node" : "slow_link"; }

}  // namespace fabricbench
