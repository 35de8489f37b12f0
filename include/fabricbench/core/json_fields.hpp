#pragma once
// The walkers of the field lists (core/field_list.hpp says how a record
// lists its members): a record to JSON and back, strict or lenient, and the
// keys of a list. Integers are range-checked in the type they are read into
// (checked_integer, core/bounded_json.hpp).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fabricbench/core/bounded_json.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/field_list.hpp"

namespace fabricbench::fields {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

// Accepts every field; used to ask whether a type has a field list.
struct AnyField {
  template <class... A>
  void operator()(A&&...) const {}
};

template <class T>
concept Described = requires(T& t) {
  fields_of(t, AnyField{});
};

template <class E>
concept Named = std::is_enum_v<E> && requires(E e) {
  name(e);
};

template <class T>
bool is_empty(const T& value) {
  if constexpr (is_optional<T>::value)
    return !value.has_value();
  else
    return value.empty();
}

// ---- writing -------------------------------------------------------------

using ojson = nlohmann::ordered_json;

template <class T>
ojson to_value(const T& value);

struct Writer {
  ojson& out;
  template <class T>
  void operator()(const char* key, const T& value) const {
    out[key] = to_value(value);
  }
  template <class T>
  void operator()(const char* key, EmptyAsNull<T> s) const {
    out[key] = s.value.empty() ? ojson(nullptr) : ojson(s.value);
  }
  template <class T>
  void operator()(const char* key, Omitted<T> v) const {
    if (!is_empty(v.value)) out[key] = to_value(v.value);
  }
  template <class T>
  void operator()(const char* key, OnlyIf<T> v) const {
    if (v.when) out[key] = to_value(v.value);
  }
  template <class T>
  void operator()(Inlined<T> v) const {
    if constexpr (is_optional<std::remove_const_t<T>>::value) {
      if (v.value) fields_of(*v.value, *this);
    } else {
      fields_of(v.value, *this);
    }
  }
  template <class T>
  void operator()(const char* key, const Written<T>& v) const {
    out[key] = to_value(v.value);
  }
  template <class T, class To, class From>
  void operator()(const char* key, const Converted<T, To, From>& c) const {
    out[key] = to_value(c.to(c.value));
  }
};

template <class T>
ojson to_value(const T& value) {
  if constexpr (Described<const T>) {
    ojson out = ojson::object();
    fields_of(value, Writer{out});
    return out;
  } else if constexpr (Named<T>) {
    return ojson(std::string(name(value)));
  } else if constexpr (is_optional<T>::value) {
    return value ? to_value(*value) : ojson(nullptr);
  } else if constexpr (is_vector<T>::value) {
    ojson out = ojson::array();
    for (const auto& item : value) out.push_back(to_value(item));
    return out;
  } else {
    return ojson(value);
  }
}

// ---- reading -------------------------------------------------------------

// Strict: the document was validated; a member that does not read is an
// error naming its path. Lenient: a member that is missing or does not read
// keeps the value the record starts with (text another process sent).
enum class Mode { strict, lenient };

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw UsageError(fmt::format("{}: {}", path, what));
}

inline std::string join(const std::string& path, std::string_view key) {
  std::string out;
  out.reserve(path.size() + 1 + key.size());
  if (!path.empty()) (out += path) += '/';
  out += key;
  return out;
}

template <class T>
void from_value(const nlohmann::json& j, T& value, const std::string& path, Mode mode);

// The keys of a record's field list (inlined members' keys included).
struct KeyCollector {
  std::vector<std::string>& keys;
  template <class T>
  void operator()(const char* key, T&&) const {
    keys.emplace_back(key);
  }
  template <class T>
  void operator()(Inlined<T> /*inlined*/) const {
    using Record = std::remove_const_t<T>;
    if constexpr (is_optional<Record>::value) {
      typename Record::value_type inner{};
      fields_of(inner, *this);
    } else {
      Record inner{};
      fields_of(inner, *this);
    }
  }
};

template <class T>
std::vector<std::string> keys_of() {
  std::vector<std::string> keys;
  T record{};
  fields_of(record, KeyCollector{keys});
  return keys;
}

struct Reader {
  const nlohmann::json& in;
  std::string path;
  Mode mode;

  template <class T>
  void operator()(const char* key, T& value) const {
    const auto it = in.find(key);
    if (it == in.end()) {
      if (mode == Mode::lenient || is_optional<T>::value) return;
      fail(join(path, key), "missing");
    }
    read(*it, value, join(path, key));
  }
  template <class T>
  void operator()(const char* key, EmptyAsNull<T> s) const {
    const auto it = in.find(key);
    if (it == in.end() || it->is_null()) {
      s.value.clear();
      return;
    }
    read(*it, s.value, join(path, key));
  }
  template <class T>
  void operator()(const char* key, Omitted<T> v) const {
    if (const auto it = in.find(key); it != in.end()) read(*it, v.value, join(path, key));
  }
  template <class T>
  void operator()(const char* key, OnlyIf<T> v) const {
    if (const auto it = in.find(key); it != in.end()) read(*it, v.value, join(path, key));
  }
  template <class T>
  void operator()(const char*, const Written<T>&) const {}
  template <class T>
  void operator()(Inlined<T> v) const {
    if constexpr (is_optional<T>::value) {
      using Inner = typename T::value_type;
      bool present = false;
      for (const std::string& key : keys_of<Inner>()) present = present || in.contains(key);
      if (!present) return;
      Inner inner{};
      fields_of(inner, *this);
      v.value = std::move(inner);
    } else {
      fields_of(v.value, *this);
    }
  }
  // An absent key reads as an empty form when the form is optional.
  template <class T, class To, class From>
  void operator()(const char* key, const Converted<T, To, From>& c) const {
    using Form = std::decay_t<decltype(c.to(c.value))>;
    const std::string where = join(path, key);
    Form form{};
    if (const auto it = in.find(key); it != in.end()) {
      if (mode == Mode::strict) {
        from_value(*it, form, where, mode);
      } else {
        try {
          from_value(*it, form, where, mode);
        } catch (const UsageError&) {
          return;  // as good as absent
        }
      }
    } else if (!is_optional<Form>::value) {
      if (mode == Mode::lenient) return;
      fail(where, "missing");
    }
    if (mode == Mode::strict) return c.from(form, c.value, where);
    try {
      c.from(form, c.value, where);
    } catch (const UsageError&) {
      // as good as absent
    }
  }

 private:
  template <class T>
  void read(const nlohmann::json& j, T& value, const std::string& where) const {
    if (mode == Mode::strict) return from_value(j, value, where, mode);
    T fresh = value;
    try {
      from_value(j, fresh, where, mode);
      value = std::move(fresh);
    } catch (const UsageError&) {
      // as good as absent
    }
  }
};

template <class T>
void from_value(const nlohmann::json& j, T& value, const std::string& path, Mode mode) {
  if constexpr (Described<T>) {
    if (!j.is_object()) fail(path, fmt::format("expected an object, found {}", j.type_name()));
    fields_of(value, Reader{j, path, mode});
  } else if constexpr (Named<T>) {
    if (!j.is_string()) fail(path, fmt::format("expected a name, found {}", j.type_name()));
    const std::optional<T> parsed = from_name(j.get<std::string>(), tag<T>{});
    if (!parsed) fail(path, fmt::format("'{}' is unknown to this build", j.get<std::string>()));
    value = *parsed;
  } else if constexpr (is_optional<T>::value) {
    if (j.is_null()) {
      value.reset();
      return;
    }
    typename T::value_type inner{};
    if (mode == Mode::lenient) {
      try {
        from_value(j, inner, path, mode);
      } catch (const UsageError&) {
        value.reset();
        return;
      }
    } else {
      from_value(j, inner, path, mode);
    }
    value = std::move(inner);
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) fail(path, fmt::format("expected an array, found {}", j.type_name()));
    T out;
    out.reserve(j.size());
    for (std::size_t i = 0; i < j.size(); ++i) {
      typename T::value_type item{};
      if (mode == Mode::lenient) {
        // A list keeps the items that read (an optional item reads as empty).
        try {
          from_value(j[i], item, join(path, std::to_string(i)), mode);
        } catch (const UsageError&) {
          if constexpr (!is_optional<typename T::value_type>::value) continue;
        }
      } else {
        from_value(j[i], item, join(path, std::to_string(i)), mode);
      }
      out.push_back(std::move(item));
    }
    value = std::move(out);
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    if (!j.is_object()) fail(path, fmt::format("expected an object, found {}", j.type_name()));
    T out;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const nlohmann::json& item = it.value();
      if (!item.is_string()) fail(join(path, it.key()), fmt::format("expected a string, found {}", item.type_name()));
      out.emplace(it.key(), item.get<std::string>());
    }
    value = std::move(out);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) fail(path, fmt::format("expected a string, found {}", j.type_name()));
    value = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) fail(path, fmt::format("expected true or false, found {}", j.type_name()));
    value = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    value = checked_integer<T>(j, path);
  } else {
    static_assert(std::is_floating_point_v<T>, "a field type the JSON form does not know");
    if (!j.is_number()) fail(path, fmt::format("expected a number, found {}", j.type_name()));
    value = j.get<T>();
  }
}

// Reads `T` from `j`; errors name the path below `path` ("records/3/bytes").
template <class T>
T read(const nlohmann::json& j, const std::string& path, Mode mode = Mode::strict) {
  T value{};
  from_value(j, value, path, mode);
  return value;
}

}  // namespace fabricbench::fields
