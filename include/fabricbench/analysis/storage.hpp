#pragma once
// Judging the shared-storage test: rates per node and what stands out.

#include "fabricbench/records/storage.hpp"

namespace fabricbench {

// Per-node rows, aggregate figures, the slowest node and the message, from
// the rows' bytes and times (pure; run_storage calls it on rank 0).
void analyze_storage(StorageResult& result);

}  // namespace fabricbench
