// The row optimizers as the sparse table's loops see them, built as the dense table is
// (kernels/optimizer_table.hpp): row i of the traits table (actors/ps/row_optimizer.hpp: name,
// slots, whether a row counts its steps, default rate) joined with its rule (kernels/math.hpp:
// what a configuration must satisfy, the state a new row starts with, one row's update).
// Parsing, naming, state sizes, validation, the sparse table's loops and its checkpoints all
// read this table; nothing here changes for a new row optimizer. A traits row out of kind
// order, a kind of no row or of no rule fails the build here; actors/protocol/schema_enums.cpp
// holds the schema's SparseTableSpec.Optimizer to the table the same way.
#pragma once

#include "actors/ps/row_optimizer.hpp"
#include "kernels/enumerator_name.hpp"
#include "kernels/math.hpp"

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

namespace actorps {

inline constexpr std::size_t row_optimizer_count = std::size(row_optimizer_traits_table);

/// Row I: its traits and its rule, read as static members (Row::name, Row::update, ...).
template <std::size_t I>
struct row_optimizer_row : math::row_optimizer_rule<row_optimizer_traits_table[I].kind> {
  static constexpr row_optimizer_kind kind = row_optimizer_traits_table[I].kind;
  static constexpr const char* name = row_optimizer_traits_table[I].name;
  static constexpr uint32_t slots = row_optimizer_traits_table[I].slots;
  static constexpr bool counts_steps = row_optimizer_traits_table[I].counts_steps;
  static constexpr float default_learning_rate =
    row_optimizer_traits_table[I].default_learning_rate;
};

namespace detail {
template <std::size_t... I>
std::tuple<row_optimizer_row<I>...> row_optimizer_rows(std::index_sequence<I...>);

template <std::size_t... I>
constexpr bool row_traits_in_kind_order(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(row_optimizer_traits_table[I].kind) == I) && ...);
}
} // namespace detail

/// The table, in the order of row_optimizer_kind (and of the schema's SparseTableSpec.Optimizer).
using row_optimizer_table =
  decltype(detail::row_optimizer_rows(std::make_index_sequence<row_optimizer_count>{}));

static_assert(detail::row_traits_in_kind_order(std::make_index_sequence<row_optimizer_count>{}),
              "row i of row_optimizer_traits_table is row_optimizer_kind i");
// The enum follows the table, as the dense one's does.
static_assert(rows_name_enumerators<row_optimizer_kind, row_optimizer_table>(
                std::make_index_sequence<row_optimizer_count>{}),
              "row_optimizer_kind i is named as row i of the row optimizer table, and has no more "
              "values");

/// Calls f(Row{}) for the row of `kind` and returns true; false for a kind of no row.
template <class F>
bool visit_row_optimizer(row_optimizer_kind kind, F&& f) {
  return std::apply(
    [&](auto... rows) { return ((decltype(rows)::kind == kind ? (f(rows), true) : false) || ...); },
    row_optimizer_table{});
}

/// Calls f(Row{}) for every row, in order.
template <class F>
void for_each_row_optimizer(F&& f) {
  std::apply([&](auto... rows) { (f(rows), ...); }, row_optimizer_table{});
}

} // namespace actorps
