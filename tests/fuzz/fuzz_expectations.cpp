// The expectations loader (the format of src/data/expectations.json), and
// each file that loads matched against a golden run's topology, as the
// reference verdicts of `report` do.

#include <cstddef>
#include <cstdint>
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
  fuzz::guarded(fuzz::Accept::usage_errors, fuzz::Source::file, [&] {
    const Expectations expectations = parse_expectations(text);
    (void)reference_verdicts(golden, expectations);
  });
  return 0;
}
