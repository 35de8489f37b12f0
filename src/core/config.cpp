#include "fabricbench/core/config.hpp"

#include <array>

namespace fabricbench {
namespace {

constexpr std::array<ChoiceName<TransportChoice>, 3> transport_names{{
    {"auto", TransportChoice::automatic},
    {"nccl", TransportChoice::nccl},
    {"mpi", TransportChoice::mpi},
}};
constexpr std::array<ChoiceName<InPlaceChoice>, 3> inplace_names{{
    {"both", InPlaceChoice::both},
    {"only", InPlaceChoice::only},
    {"no", InPlaceChoice::no},
}};
constexpr std::array<ChoiceName<ProgressChoice>, 3> progress_names{{
    {"auto", ProgressChoice::automatic},
    {"on", ProgressChoice::on},
    {"off", ProgressChoice::off},
}};
constexpr std::array<ChoiceName<OutputFormat>, 2> format_names{{
    {"table", OutputFormat::table},
    {"nccl-tests", OutputFormat::nccl_tests},
}};
constexpr std::array<ChoiceName<OnFinding>, 2> on_finding_names{{
    {"keep", OnFinding::keep},
    {"halve", OnFinding::halve},
}};
// nccl-tests' -a numbers after the names, in the same order.
constexpr std::array<ChoiceName<RankTime>, 8> rank_time_names{{
    {"rank0", RankTime::rank0},
    {"mean", RankTime::mean},
    {"min", RankTime::min},
    {"max", RankTime::max},
    {"0", RankTime::rank0},
    {"1", RankTime::mean},
    {"2", RankTime::min},
    {"3", RankTime::max},
}};

}  // namespace

std::span<const ChoiceName<TransportChoice>> choice_names(TransportChoice) { return transport_names; }
std::span<const ChoiceName<InPlaceChoice>> choice_names(InPlaceChoice) { return inplace_names; }
std::span<const ChoiceName<ProgressChoice>> choice_names(ProgressChoice) { return progress_names; }
std::span<const ChoiceName<OutputFormat>> choice_names(OutputFormat) { return format_names; }
std::span<const ChoiceName<OnFinding>> choice_names(OnFinding) { return on_finding_names; }
std::span<const ChoiceName<RankTime>> choice_names(RankTime) { return rank_time_names; }

std::vector<Placement> placements(InPlaceChoice choice) {
  switch (choice) {
    case InPlaceChoice::only:
      return {Placement::in_place};
    case InPlaceChoice::no:
      return {Placement::out_of_place};
    case InPlaceChoice::both:
      break;
  }
  return {Placement::out_of_place, Placement::in_place};
}

}  // namespace fabricbench
