// The names of an optimizer table's rows (kernels/optimizer_table.hpp,
// kernels/sparse/row_optimizer_table.hpp) as a message lists them.
#pragma once

#include <cstddef>
#include <string>
#include <tuple>

namespace actorps {

/// The rows' names in table order: "a, b or c".
template <class Table>
std::string table_names() {
  constexpr std::size_t n = std::tuple_size_v<Table>;
  std::string out;
  std::size_t i = 0;
  std::apply(
    [&](auto... rows) {
      ((out += i == 0 ? "" : i + 1 == n ? " or " : ", ", out += decltype(rows)::name, ++i), ...);
    },
    Table{});
  return out;
}

} // namespace actorps
