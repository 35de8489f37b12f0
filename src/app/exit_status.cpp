#include "fabricbench/app/exit_status.hpp"

#include <exception>
#include <iostream>
#include <new>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"

namespace fabricbench {

int run_guarded(const std::function<int()>& body, const Guard& guard) {
  try {
    return body();
  } catch (const UsageError& e) {
    if (guard.lead) std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
    return exit_usage;
  } catch (const std::exception& e) {
    // Out of memory gets a line of its own, written without allocating: the
    // allocator's message says nothing, and a failed allocation here would
    // end the process.
    static const char* const out_of_memory =
        "out of memory (an allocation failed; raise the memory limit or give the run less to hold)";
    const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    const std::string safe = oom ? std::string() : terminal_safe(e.what());
    std::cerr << "fabricbench: error" << (guard.where.empty() ? "" : " on ") << guard.where << ": "
              << (oom ? out_of_memory : safe.c_str()) << '\n';
    if (guard.on_error) guard.on_error(oom ? out_of_memory : e.what());
    return exit_error;
  }
}

}  // namespace fabricbench
