#pragma once
// Shared by the fuzz targets and the replay driver. Each target defines
// LLVMFuzzerTestOneInput; libFuzzer drives it in a clang build
// (FABRICBENCH_FUZZ=ON), replay_main.cpp feeds it the corpus files in every
// build, so ctest exercises the corpora without clang.
//
// What counts as a defect: a crash or a sanitizer report, an exception that
// is not one of fabricbench's own (a library's raw message, which main()
// turns into exit 4 instead of naming the bad input), and a broken oracle
// (a property the target checks after a successful load). Each defect prints
// one line starting with "fabricbench-fuzz: defect:" and aborts, so libFuzzer
// keeps the input.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fabricbench::fuzz {

// Prints "fabricbench-fuzz: defect: <kind>: <detail>" and aborts.
[[noreturn]] void defect(std::string_view kind, std::string_view detail);

// Which exceptions are an acceptable answer to bad input.
enum class Accept {
  usage_errors,  // fabricbench::UsageError only: what main() reports as bad input (exit 2)
  any_error,     // any fabricbench::Error (a process group reports forged files as SystemError)
};

// Where the input comes from. What a file holds is printed only after its
// control characters are neutralised; a command-line argument is the
// user's own and may be echoed as given.
enum class Source { file, command_line };

// Runs `body`; an exception outside `accept` is a defect, and so is, for
// input from a file, an accepted one whose message (printed as one line by
// main()) carries a control character or a line break.
void guarded(Accept accept, Source source, const std::function<void()>& body);

// A private folder (mkdtemp, 0700) for the life of the process, removed at exit.
const std::string& scratch_dir();

// Writes bytes to `path`, replacing it.
void write_file(const std::string& path, std::string_view bytes);

// The first C0 control character (below 0x20: escape sequences, bells,
// carriage returns) in `text`, as an offset; npos when there is none. A tab
// passes (terminal_safe keeps it), and '\n' where `lines`. DEL does nothing
// on a terminal and passes.
std::size_t find_control_char(std::string_view text, bool lines = true);

}  // namespace fabricbench::fuzz
