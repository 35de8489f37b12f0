#include "fabricbench/results/result_csv.hpp"

#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fabricbench/core/json_fields.hpp"
#include "fabricbench/results/result.hpp"

namespace fabricbench {
namespace {

// The run's identity, ahead of every record's own columns.
template <class Field>
void identity_fields(const RunInfo& run, Field&& field) {
  field("start_utc", CsvCell{run.start_utc, true});
  field("label", CsvCell{run.label, true});
  field("hostnames", CsvCell{fmt::format("{}", fmt::join(run.hostnames, " ")), true});
}

template <class T>
CsvCell cell_of(const T& value) {
  if constexpr (fields::is_optional<T>::value) {
    return value ? cell_of(*value) : CsvCell{};
  } else if constexpr (fields::Named<T>) {
    return {std::string(name(value)), false};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {value, true};
  } else {
    static_assert(std::is_arithmetic_v<T>, "a sweep record member with no flat form");
    return {fmt::format("{}", value), false};
  }
}

struct Flattener {
  std::vector<std::string>* names;
  std::vector<CsvCell>* cells;

  void add(const char* key, CsvCell cell) const {
    if (names) names->emplace_back(key);
    if (cells) cells->push_back(std::move(cell));
  }
  void operator()(const char* key, CsvCell cell) const { add(key, std::move(cell)); }
  template <class T>
  void operator()(const char* key, const T& value) const {
    add(key, cell_of(value));
  }
  template <class T>
  void operator()(const char* key, fields::Omitted<T> v) const {
    add(key, cell_of(v.value));
  }
  template <class T>
  void operator()(const char* key, fields::EmptyAsNull<T> v) const {
    add(key, cell_of(v.value));
  }
  template <class T>
  void operator()(fields::Inlined<T> v) const {
    if (v.value) {
      fields_of(*v.value, *this);
    } else {
      const typename std::remove_const_t<T>::value_type none{};
      const Flattener blank{names, nullptr};
      fields_of(none, blank);
      if (cells) cells->resize(cells->size() + fields::keys_of<typename std::remove_const_t<T>::value_type>().size());
    }
  }
};

}  // namespace

std::vector<std::string> record_csv_columns() {
  std::vector<std::string> names;
  const Flattener f{&names, nullptr};
  identity_fields(RunInfo{}, f);
  SweepRecord record;
  record.timing = Timing{};
  fields_of(static_cast<const SweepRecord&>(record), f);
  return names;
}

std::vector<CsvCell> record_csv_row(const RunInfo& run, const SweepRecord& record) {
  std::vector<CsvCell> cells;
  const Flattener f{nullptr, &cells};
  identity_fields(run, f);
  fields_of(record, f);
  return cells;
}

}  // namespace fabricbench
