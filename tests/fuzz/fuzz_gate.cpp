// The gate parser (`--expect SUBJECT.METRIC[@ARG] CMP VALUE`), and each gate
// that parses evaluated against a full golden run (records, ladder, pairs,
// topology), as `report --expect` and the measuring commands do.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fabricbench/analysis/verdict.hpp"
#include "fabricbench/results/reader.hpp"
#include "fuzz_support.hpp"

#ifndef FABRICBENCH_GOLDEN_DIR
#error "FABRICBENCH_GOLDEN_DIR must name tests/golden"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabricbench;
  static const RunResult golden = read_result_file(FABRICBENCH_GOLDEN_DIR "/run_a.json");
  const std::string_view text(reinterpret_cast<const char*>(data), size);  // NOLINT: bytes as text
  fuzz::guarded(fuzz::Accept::usage_errors, fuzz::Source::command_line, [&] {
    const Gate gate = parse_gate(text);
    const Verdict verdict = evaluate_gate(gate, golden);
    // A gate never passes unasked: a figure the run does not hold fails it.
    if (verdict.level != Level::ok && verdict.level != Level::fail)
      fuzz::defect("oracle gate-level", std::string("a gate gave ") + std::string(name(verdict.level)));
  });
  return 0;
}
