#include "fabricbench/app/exit_status.hpp"

#include <exception>
#include <iostream>
#include <new>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"

namespace fabricbench {

int run_guarded(const std::function<int()>& body, const Guard& guard) {
  try {
    return body();
  } catch (const UsageError& e) {
    if (guard.lead) std::cerr << "fabricbench: error: " << terminal_safe(e.what()) << '\n';
    return exit_usage;
  } catch (const std::bad_alloc&) {
    // One line, never an abort: the allocator's own message says nothing.
    const char* what = "out of memory (an allocation failed; raise the memory limit or give the run less to hold)";
    if (guard.where.empty())
      std::cerr << "fabricbench: error: " << what << '\n';
    else
      std::cerr << "fabricbench: error on " << guard.where << ": " << what << '\n';
    if (guard.on_error) guard.on_error(what);
    return exit_error;
  } catch (const std::exception& e) {
    if (guard.where.empty())
      std::cerr << fmt::format("fabricbench: error: {}\n", terminal_safe(e.what()));
    else
      std::cerr << fmt::format("fabricbench: error on {}: {}\n", guard.where, terminal_safe(e.what()));
    if (guard.on_error) guard.on_error(e.what());
    return exit_error;
  }
}

}  // namespace fabricbench
