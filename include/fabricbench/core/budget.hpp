#pragma once
// A run's time budget (`--budget`): one deadline for the whole run, shared
// out among its phases in order, and the list of what was cut to keep it.
//
// Time is read on one rank only (the steady clocks of different hosts share
// no epoch): that rank turns what remains into seconds for the next step and
// broadcasts them, so every rank makes the same cut.

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabricbench/core/field_list.hpp"

namespace fabricbench {

using SteadyClock = std::chrono::steady_clock;

inline constexpr double unlimited_seconds = std::numeric_limits<double>::infinity();

// `run`'s budget when --budget is not given: a renter's whole suite in ten
// minutes, up to 16 nodes (what does not fit is cut and named).
inline constexpr std::string_view default_run_budget = "10m";

// The phases that spend the budget, in the order they run. Start-up and the
// topology probe come before and are not shared out: they are short and
// bounded by the probe itself.
enum class Phase { health, sweep, ladder, gpu_ladder, pairs };
std::string_view name(Phase phase);

// Something the budget took away: a point, level or round skipped, or
// measured with fewer iterations than asked.
struct Cut {
  Phase phase = Phase::sweep;
  std::string what;    // e.g. "allreduce 16 MiB out-of-place"
  std::string action;  // "skipped", "fewer iterations" or "smaller messages" (a pair's bandwidth on a slow link)
  std::string reason = "budget";
};

// How long a phase was given and took.
struct PhaseSpend {
  Phase phase = Phase::sweep;
  double share_s = 0;
  double used_s = 0;
};

// The budget as the result file records it.
struct BudgetRecord {
  double seconds = 0;
  // When the health pass named a host and --on-finding halve kept half of
  // what was left: the seconds into the run at which it did.
  std::optional<double> shortened_at_s;
  std::vector<PhaseSpend> phases;
  std::vector<Cut> cuts;
};

class Budget {
 public:
  Budget() = default;  // unlimited
  Budget(std::optional<double> seconds, SteadyClock::time_point start) : seconds_(seconds), start_(start) {}

  [[nodiscard]] bool limited() const { return seconds_.has_value(); }
  [[nodiscard]] double seconds() const { return seconds_.value_or(unlimited_seconds); }
  [[nodiscard]] double remaining_s(SteadyClock::time_point now = SteadyClock::now()) const;

  // The seconds `phase` may use when it starts now, with `later` still to
  // run: what remains, split by weight among this phase, the later ones and
  // a reserve for saving the result. Time a phase leaves unused flows on to
  // the next. Unlimited without a budget.
  [[nodiscard]] double share_s(Phase phase, const std::vector<Phase>& later,
                               SteadyClock::time_point now = SteadyClock::now()) const;

  // Keeps `fraction` of what remains at `now`: the deadline moves closer.
  void shorten(double fraction, SteadyClock::time_point now = SteadyClock::now());

  // The weights: health 1, sweep 4, ladder 2, GPU ladder 1, pairs 2, reserve 1.
  static double weight(Phase phase);
  static constexpr double reserve_weight = 1.0;

 private:
  std::optional<double> seconds_;
  SteadyClock::time_point start_{};
};

// A stretch of time with an end, from when it was opened: a phase, or one
// point of it. Read on the deciding rank only.
class Window {
 public:
  explicit Window(double seconds = unlimited_seconds, SteadyClock::time_point start = SteadyClock::now())
      : seconds_(seconds), start_(start) {}
  [[nodiscard]] double seconds() const { return seconds_; }
  [[nodiscard]] double elapsed_s(SteadyClock::time_point now = SteadyClock::now()) const {
    return std::chrono::duration<double>(now - start_).count();
  }
  [[nodiscard]] double left_s(SteadyClock::time_point now = SteadyClock::now()) const {
    return seconds_ - elapsed_s(now);
  }

 private:
  double seconds_;
  SteadyClock::time_point start_;
};

// A duration as typed: a number with an optional unit s, m or h ("90",
// "90s", "5m", "1.5h"); nullopt when it is not one or not above zero.
std::optional<double> parse_duration_s(std::string_view text);

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<Phase> from_name(std::string_view text, fields::tag<Phase>) {
  for (const Phase p : {Phase::health, Phase::sweep, Phase::ladder, Phase::gpu_ladder, Phase::pairs})
    if (text == name(p)) return p;
  return std::nullopt;
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, PhaseSpend>
void fields_of(Self& p, Field&& field) {
  field("phase", p.phase);
  field("share_s", p.share_s);
  field("used_s", p.used_s);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Cut>
void fields_of(Self& c, Field&& field) {
  field("phase", c.phase);
  field("what", c.what);
  field("action", c.action);
  field("reason", c.reason);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, BudgetRecord>
void fields_of(Self& b, Field&& field) {
  field("seconds", b.seconds);
  field("shortened_at_s", fields::omitted(b.shortened_at_s));
  field("phases", b.phases);
  field("cuts", b.cuts);
}

}  // namespace fabricbench
