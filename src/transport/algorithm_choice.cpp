#include "fabricbench/transport/algorithm_choice.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

// NCCL's enum order in 2.19-2.23, whose log wrote numbers (src/include/nccl_common.h of 2.23).
constexpr std::array<std::string_view, 7> numbered_algorithms{
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
constexpr std::array<std::string_view, 3> numbered_protocols{"LL", "LL128", "SIMPLE"};

// The most of NCCL's log one captured iteration may hold: a tuning line per
// call is a few hundred bytes.
constexpr std::size_t max_log_bytes = std::size_t{1} << 20;

template <typename T>
std::optional<T> number(const std::string& text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

template <std::size_t N>
std::string numbered(const std::array<std::string_view, N>& names, const std::string& text) {
  const std::optional<int> i = number<int>(text);
  if (!i || *i < 0 || static_cast<std::size_t>(*i) >= N) return fmt::format("Unknown ({})", text);
  return std::string(names[static_cast<std::size_t>(*i)]);
}

// The message after NCCL's "host:pid:tid [dev] NCCL INFO " prefix.
std::string_view message_of(std::string_view line) {
  constexpr std::string_view marker = "NCCL INFO ";
  if (const auto at = line.find(marker); at != std::string_view::npos) line.remove_prefix(at + marker.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

}  // namespace

AlgorithmChoice mpi_library_choice() {
  return {std::nullopt, std::nullopt, "the MPI library chose its algorithm inside MPI; fabricbench does not see which"};
}

AlgorithmChoice point_to_point_choice(Op op) {
  return {std::nullopt, std::nullopt,
          fmt::format("{} is point-to-point in NCCL (grouped send/recv): no collective algorithm", name(op))};
}

std::optional<TuningLine> parse_nccl_tuning_line(std::string_view line) {
  // Built once; read-only afterwards.
  static const std::regex current(
      R"(^(\w+): (\d+) Bytes -> Algo ([A-Za-z_]+) proto ([A-Za-z0-9_]+) channel\{Lo\.\.Hi\}=\{(-?\d+)\.\.(-?\d+)\})");
  static const std::regex symmetric(R"(^(\w+) \[Symmetric\]: (\d+) Bytes -> Kernel (\S+)(?: nchannels (-?\d+))?)");
  static const std::regex numbered_form(R"(^(?:(\w+): )?(\d+) Bytes -> Algo (-?\d+) proto (-?\d+)(?: |$))");
  const std::string message(message_of(line));
  std::smatch m;
  TuningLine t;
  if (std::regex_search(message, m, current)) {
    t.function = m[1];
    t.algorithm = m[3];
    t.protocol = m[4];
    t.channel_lo = number<int>(m[5]);
    t.channel_hi = number<int>(m[6]);
  } else if (std::regex_search(message, m, symmetric)) {
    t.function = m[1];
    t.algorithm = "SYMMETRIC";
    t.kernel = m[3];
    if (m[4].matched) {
      t.channel_lo = 0;
      if (const auto n = number<int>(m[4]); n && *n > 0) t.channel_hi = *n - 1;
    }
  } else if (std::regex_search(message, m, numbered_form)) {
    t.function = m[1].matched ? std::string(m[1]) : std::string();
    t.algorithm = numbered(numbered_algorithms, m[3]);
    t.protocol = numbered(numbered_protocols, m[4]);
  } else {
    return std::nullopt;
  }
  const std::optional<std::uint64_t> bytes = number<std::uint64_t>(m[2]);
  if (!bytes) return std::nullopt;  // beyond 2^64: not a line NCCL wrote
  t.bytes = *bytes;
  return t;
}

std::string_view nccl_function_name(Op op) {
  switch (op) {
    case Op::allreduce:
      return "AllReduce";
    case Op::allgather:
      return "AllGather";
    case Op::reducescatter:
      return "ReduceScatter";
    case Op::broadcast:
      return "Broadcast";
    case Op::reduce:
      return "Reduce";
    case Op::alltoall:
    case Op::sendrecv:
      break;
  }
  return {};
}

AlgorithmChoice choice_from_nccl_log(std::string_view log, Op op) {
  const std::string_view function = nccl_function_name(op);
  if (function.empty()) return point_to_point_choice(op);
  while (!log.empty()) {
    const auto end = log.find('\n');
    const std::string_view line = log.substr(0, end);
    log.remove_prefix(end == std::string_view::npos ? log.size() : end + 1);
    const std::optional<TuningLine> t = parse_nccl_tuning_line(line);
    // The 2.19-2.22 form names no function; one iteration holds one op.
    if (!t || (!t->function.empty() && t->function != function)) continue;
    AlgorithmChoice c;
    c.algorithm = t->algorithm;
    c.protocol = t->protocol;
    if (t->kernel) c.note = fmt::format("NCCL symmetric-memory kernel {}", *t->kernel);
    return c;
  }
  return {std::nullopt, std::nullopt,
          fmt::format("NCCL wrote no tuning line for {} in the captured iteration", function)};
}

NcclLogCapture::NcclLogCapture(Reset reset, const Getenv& getenv, std::string subsystems)
    : reset_(std::move(reset)), subsystems_(std::move(subsystems)) {
  for (Saved& s : saved_)
    if (const char* v = getenv(s.name)) s.value = v;
  if (saved_[2].value) {
    reason_ =
        "not captured: NCCL_DEBUG_FILE is set, and NCCL reopens that file with \"w\" when its log restarts, which "
        "would truncate it; unset it to record what NCCL chose and used";
    return;
  }
  if (!reset_) {
    reason_ = "not captured: this NCCL library has no ncclResetDebugInit to restart its log";
    return;
  }
  const char* tmp = getenv("TMPDIR");
  std::string pattern = fmt::format("{}/fabricbench-nccl-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {  // 0700, a fresh name: nobody else can plant the file
    reason_ = fmt::format("not captured: no private folder for NCCL's log under {} ({})", pattern, errno_text(errno));
    return;
  }
  folder_ = buffer.data();
  file_ = folder_ + "/tuning.log";
}

NcclLogCapture::~NcclLogCapture() {
  if (capturing_) {
    restore();
    if (reset_) reset_();
  }
  if (!file_.empty()) ::unlink(file_.c_str());
  if (!folder_.empty()) ::rmdir(folder_.c_str());
}

void NcclLogCapture::begin() {
  if (!available() || capturing_) return;
  // NOLINTBEGIN(concurrency-mt-unsafe): the calling thread only, between operations (see the header)
  ::setenv("NCCL_DEBUG", "INFO", 1);
  ::setenv("NCCL_DEBUG_SUBSYS", subsystems_.c_str(), 1);
  ::setenv("NCCL_DEBUG_FILE", file_.c_str(), 1);
  // NOLINTEND(concurrency-mt-unsafe)
  capturing_ = true;
  reset_();
}

void NcclLogCapture::restore() {
  // NOLINTBEGIN(concurrency-mt-unsafe): as in begin()
  for (const Saved& s : saved_) {
    if (s.value)
      ::setenv(s.name, s.value->c_str(), 1);
    else
      ::unsetenv(s.name);
  }
  // NOLINTEND(concurrency-mt-unsafe)
}

std::string NcclLogCapture::finish() {
  if (!capturing_) return {};
  capturing_ = false;
  restore();
  reset_();
  // NCCL writes its log line-buffered and keeps the file open until its log
  // next restarts; what the iteration wrote is there. The file is removed
  // now, so the next capture starts from an empty one. No file: NCCL wrote
  // nothing (a rank other than the communicator's first).
  return take_private_file(file_, max_log_bytes);
}

std::string take_private_file(const std::string& path, std::size_t limit) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return text;
  std::array<char, 65536> chunk{};
  while (text.size() < limit) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(got));
  }
  ::close(fd);
  ::unlink(path.c_str());
  return text;
}

}  // namespace fabricbench
