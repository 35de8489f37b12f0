#pragma once
// A verdict: one judgement of a run, as the summary, the HTML and the result
// file's `verdicts` list carry it. What was observed (`reason`), the cause
// found in what was probed and captured (`cause`), one concrete action
// (`fix`), the nodes it names and the figures behind it. Made by the
// analysis layer (analysis/verdict.hpp, analysis/causes.hpp); a record here
// so that a result file holds its verdicts without the layer that makes them.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabricbench/core/field_list.hpp"
#include "fabricbench/core/name_table.hpp"

namespace fabricbench {

// Worst last, so "worse" is "greater". info: said, never gating.
enum class Level { info, ok, warn, fail };
inline constexpr NameTable<Level, 4> level_names{{
    {Level::info, "INFO"},
    {Level::ok, "OK"},
    {Level::warn, "WARN"},
    {Level::fail, "FAIL"},
}};
constexpr std::string_view name(Level level) { return name_in(level_names, level); }

// What a verdict judges.
enum class VerdictKind { data, complete, finding, anomaly, ladder, reference, gate, nccl, achievable };
inline constexpr NameTable<VerdictKind, 9> verdict_kind_names{{
    {VerdictKind::data, "data"},
    {VerdictKind::complete, "complete"},
    {VerdictKind::finding, "finding"},
    {VerdictKind::anomaly, "anomaly"},
    {VerdictKind::ladder, "ladder"},
    {VerdictKind::reference, "reference"},
    {VerdictKind::gate, "gate"},
    {VerdictKind::nccl, "nccl"},
    {VerdictKind::achievable, "achievable"},
}};
constexpr std::string_view name(VerdictKind kind) { return name_in(verdict_kind_names, kind); }

// One figure a verdict rests on: "median link of node2" 0.012 "GB/s".
struct Evidence {
  std::string what;
  double value = 0;
  std::string unit;  // "GB/s", "us", "%", "Gb/s", or empty for a count
};

struct Verdict {
  Level level = Level::info;
  VerdictKind kind = VerdictKind::data;
  std::string subject;  // "allreduce.busbw", "node-b", the gate's text
  std::string reason;   // what was observed, one sentence
  std::string source;   // references: where the expected figure comes from
  // WARN and FAIL: the cause from what was probed or captured, and one
  // concrete action; empty on OK and INFO.
  std::string cause;
  std::string fix;
  std::vector<std::string> hosts;  // the nodes it names, none for the whole run
  std::vector<Evidence> evidence;
  // The cause's short name ("socket_fallback", "slow_node", an anomaly's
  // kind): what a spreadsheet or a CI script filters on.
  std::string cause_kind;
};

// A verdict that needs no cause or fix (OK, INFO, a gate's).
inline Verdict make_verdict(Level level, VerdictKind kind, std::string subject, std::string reason,
                            std::string source = {}) {
  Verdict v;
  v.level = level;
  v.kind = kind;
  v.subject = std::move(subject);
  v.reason = std::move(reason);
  v.source = std::move(source);
  return v;
}

// ---- field lists (core/field_list.hpp) ------------------------------------

inline std::optional<Level> from_name(std::string_view text, fields::tag<Level>) { return parse_in(level_names, text); }
inline std::optional<VerdictKind> from_name(std::string_view text, fields::tag<VerdictKind>) {
  return parse_in(verdict_kind_names, text);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Evidence>
void fields_of(Self& e, Field&& field) {
  field("what", e.what);
  field("value", e.value);
  field("unit", e.unit);
}

template <class Self, class Field>
requires std::same_as<std::remove_const_t<Self>, Verdict>
void fields_of(Self& v, Field&& field) {
  field("level", v.level);
  field("kind", v.kind);
  field("subject", v.subject);
  field("hosts", v.hosts);
  field("reason", v.reason);
  field("cause_kind", fields::omitted(v.cause_kind));
  field("cause", fields::omitted(v.cause));
  field("fix", fields::omitted(v.fix));
  field("evidence", fields::omitted(v.evidence));
  field("source", fields::omitted(v.source));
}

}  // namespace fabricbench
