#include "fuzz_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <typeinfo>

#include <cxxabi.h>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/text_safety.hpp"

namespace fabricbench::fuzz {

void defect(std::string_view kind, std::string_view detail) {
  // Control characters of the input would garble the line the CI script reads.
  std::string clean(detail.substr(0, 300));
  for (char& c : clean)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  std::fprintf(stderr, "fabricbench-fuzz: defect: %.*s: %s\n", static_cast<int>(kind.size()), kind.data(),
               clean.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {
std::string type_name(const std::exception& e) {
  int status = 0;
  char* readable = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && readable != nullptr ? readable : typeid(e).name();
  std::free(readable);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle's contract
  return out;
}

// What main() prints of the message: src/app/exit_status.cpp passes every
// message through terminal_safe (a message may quote a file's bytes).
void check_message(const Error& e) {
  const std::string printed = terminal_safe(e.what());
  const std::string_view text = printed;
  if (const std::size_t at = find_control_char(text, false); at != std::string_view::npos)
    defect("oracle control-char-in-message",
           std::string(text.substr(0, at)) + "<" + std::to_string(static_cast<unsigned char>(text[at])) + ">");
}
}  // namespace

void guarded(Accept accept, Source source, const std::function<void()>& body) {
  try {
    body();
  } catch (const UsageError& e) {
    if (source == Source::file) check_message(e);
  } catch (const Error& e) {
    if (accept != Accept::any_error) defect("unexpected-exception fabricbench::Error", e.what());
    if (source == Source::file) check_message(e);
  } catch (const std::exception& e) {
    defect("unexpected-exception " + type_name(e), e.what());
  }
}

namespace {
struct ScratchDir {
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fabricbench-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("fabricbench-fuzz: mkdtemp");
      std::exit(2);
    }
    path = pattern;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};
}  // namespace

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fabricbench-fuzz: cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

std::size_t find_control_char(std::string_view text, bool lines) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && !(lines && c == '\n')) return i;
  }
  return std::string_view::npos;
}

}  // namespace fabricbench::fuzz
