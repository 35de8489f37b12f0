// One process alone: every collective is the identity.
#include <algorithm>
#include <cstdlib>

#include "fabricbench/comm/detail/backend.hpp"

namespace fabricbench::detail {
namespace {

class SingleBackend final : public CommBackend {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  void barrier() override {}
  void broadcast(std::span<std::byte> /*data*/, int /*root*/) override {}
  void allreduce(std::span<std::byte> /*values*/, Scalar /*type*/, Reduction /*op*/) override {}
  void allgather_fixed(std::span<const std::byte> mine, std::span<std::byte> all) override {
    std::copy(mine.begin(), mine.end(), all.begin());
  }
  std::vector<std::string> allgather_bytes(std::string_view mine) override { return {std::string(mine)}; }
  std::unique_ptr<CommBackend> split(int color, int /*key*/) override {
    return color < 0 ? nullptr : std::make_unique<SingleBackend>();
  }
  std::unique_ptr<CommBackend> split_shared() override { return std::make_unique<SingleBackend>(); }
  void fail(const std::string& /*why*/) noexcept override {}
  [[noreturn]] void abort(int exit_code) override {
    std::exit(exit_code);  // NOLINT(concurrency-mt-unsafe): the end of the process
  }
};

}  // namespace

std::unique_ptr<CommBackend> make_single_backend() { return std::make_unique<SingleBackend>(); }

}  // namespace fabricbench::detail
