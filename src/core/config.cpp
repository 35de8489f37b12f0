#include "fabricbench/core/config.hpp"

namespace fabricbench {

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
