#pragma once
// Errors of fabricbench. Every error that reaches main() becomes one line on
// stderr and an exit status (core/exit_codes.hpp): UsageError (bad flag or
// value, an output that cannot be written) exits 2, anything else 4. Wrong
// data is not an exception: the run finishes, saves what it measured and
// exits 3 (the judge phase of app/app.cpp).

#include <stdexcept>
#include <string>

namespace fabricbench {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the person running the tool. Exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A failing call into MPI, CUDA, NCCL or the operating system.
class SystemError : public Error {
 public:
  using Error::Error;
};

// The system's text for an errno value ("No such file or directory").
std::string errno_text(int error);

// "file:line: call failed: what" — the text every check macro throws.
std::string describe_failure(const char* call, const char* file, int line, const std::string& what);

}  // namespace fabricbench
