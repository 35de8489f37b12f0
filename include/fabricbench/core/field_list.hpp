#pragma once
// One field list per record drives its JSON form both ways. A record lists
// its members once, in key order, with a free function found by ADL:
//
//   template <class Self, class Field>  // Self: T or const T
//   void fields_of(Self& t, Field&& field) {
//     field("time_us", t.time_us);
//     field("wrong", t.wrong);  // std::optional: null when empty
//   }
//
// The writer walks it with const members, the reader with mutable ones, and
// a flat form (the results layer's CSV columns) walks it for names and cells; so a new
// member is one line in its record's list and one in the schema. Wrappers
// mark the members whose JSON form is not their C++ form:
//   empty_as_null(s)   an empty string is written as null, null reads as ""
//   omitted(v)         left out when empty (optional, string or vector);
//                      absent reads as empty
//   only_if(c, v)      written only when c holds; read when present
//   inlined(r)         a record whose members sit in the parent object; an
//                      optional one is written when it has a value and
//                      reads as present when any of its keys is
//   written(v)         derived from other members: written, not read back
//   converted(v, to, from)
//                      written as the record to(v) returns; read as that
//                      record and handed to from(form, v, path), which
//                      builds v or throws UsageError naming the path (a
//                      pair matrix is written as its list of links)
// Enums are written by `name(e)` and read by `from_name(text, tag<E>)`, both
// found by ADL. A record's field list sits beside the record; this header
// is all it needs (no JSON library). core/json_fields.hpp walks the lists.

#include <concepts>  // std::same_as and std::remove_const_t: every field list's requires-clause
#include <type_traits>
#include <utility>

namespace fabricbench::fields {

template <class T>
struct EmptyAsNull {
  T& value;
};
template <class T>
struct Omitted {
  T& value;
};
template <class T>
struct Inlined {
  T& value;
};
template <class T>
struct Written {
  T value;
};
template <class T>
struct OnlyIf {
  bool when;
  T& value;
};
template <class T, class To, class From>
struct Converted {
  T& value;
  To to;
  From from;
};

template <class T>
EmptyAsNull<T> empty_as_null(T& value) {
  return {value};
}
template <class T>
Omitted<T> omitted(T& value) {
  return {value};
}
template <class T>
Inlined<T> inlined(T& value) {
  return {value};
}
// A value derived from other members: written for the reader's sake, not
// read back.
template <class T>
Written<T> written(T value) {
  return {std::move(value)};
}

template <class T>
OnlyIf<T> only_if(bool when, T& value) {
  return {when, value};
}
template <class T, class To, class From>
Converted<T, To, From> converted(T& value, To to, From from) {
  return {value, std::move(to), std::move(from)};
}

// The tag `from_name` overloads take: from_name(std::string_view, tag<Op>).
template <class E>
struct tag {};

}  // namespace fabricbench::fields
