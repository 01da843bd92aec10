// An enumerator's name at compile time, read from the compiler's own spelling of a template
// argument: GCC and Clang write a value that names an enumerator as its qualified name
// ("actorps::optimizer_kind::adam") and any other value as a cast ("(actorps::optimizer_kind)4").
// It lets a table of rows be held to an enum it does not define: every value has a row, and a
// row of the same name (the optimizer tables against optimizer_kind and the schema's enums).
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

namespace actorps {

/// The unqualified name of the enumerator whose value is V ("adam", "ADAM"); "" when V is the
/// value of none.
template <auto V>
constexpr std::string_view enumerator_name() {
  const std::string_view signature = __PRETTY_FUNCTION__;  // "...[with auto V = ns::e::x; ...]"
  auto from = signature.find("V = ");
  if (from == std::string_view::npos) return {};
  from += 4;
  const auto value = signature.substr(from, signature.find_first_of(";]", from) - from);
  if (value.empty() || value.front() == '(') return {};
  const auto last = value.rfind("::");
  return last == std::string_view::npos ? value : value.substr(last + 2);
}

/// Whether two names are the same letters, case aside ("adam" and "ADAM").
constexpr bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

/// Whether row i of `Table` (a tuple of rows with a `name`) is the enumerator of `Enum` whose
/// value is i, by name and case aside, for every row, and `Enum` has no value past the last row.
template <class Enum, class Table, std::size_t... I>
constexpr bool rows_name_enumerators(std::index_sequence<I...>) {
  return (same_name(std::tuple_element_t<I, Table>::name,
                    enumerator_name<static_cast<Enum>(I)>()) && ...)
         && enumerator_name<static_cast<Enum>(sizeof...(I))>().empty();
}

} // namespace actorps
