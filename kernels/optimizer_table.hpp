// The dense optimizers as the shards' loops see them: row i of the traits table
// (actors/ps/optimizer.hpp: name, slots, default rate, hyper-parameters) joined with its rule
// (kernels/math.hpp: what an update computes once, one element's step). Parsing, naming, state
// sizes, defaults, the update loops and what an export records all read this table; nothing
// here changes for a new optimizer. A traits row out of kind order, a kind of no row or of no
// rule, or a row of no kind fails the build here; actors/protocol/schema_enums.cpp holds the
// schema's Optimizer to the table the same way.
#pragma once

#include "actors/ps/optimizer.hpp"
#include "kernels/enumerator_name.hpp"
#include "kernels/math.hpp"

#include <cstddef>
#include <tuple>
#include <utility>

namespace actorps {

inline constexpr std::size_t optimizer_count = std::size(optimizer_traits_table);

/// Row I: its traits and its rule, read as static members (Row::name, Row::step, ...).
template <std::size_t I>
struct optimizer_row : math::optimizer_rule<optimizer_traits_table[I].kind> {
  static constexpr optimizer_kind kind = optimizer_traits_table[I].kind;
  static constexpr const char* name = optimizer_traits_table[I].name;
  static constexpr std::size_t slots = optimizer_traits_table[I].slots;
  static constexpr float default_learning_rate = optimizer_traits_table[I].default_learning_rate;
  static constexpr uint8_t hyper = optimizer_traits_table[I].hyper;
};

namespace detail {
template <std::size_t... I>
std::tuple<optimizer_row<I>...> optimizer_rows(std::index_sequence<I...>);

template <std::size_t... I>
constexpr bool traits_in_kind_order(std::index_sequence<I...>) {
  return ((static_cast<std::size_t>(optimizer_traits_table[I].kind) == I) && ...);
}
} // namespace detail

/// The table, in the order of optimizer_kind (and of the schema's Optimizer enum).
using optimizer_table =
  decltype(detail::optimizer_rows(std::make_index_sequence<optimizer_count>{}));

static_assert(detail::traits_in_kind_order(std::make_index_sequence<optimizer_count>{}),
              "row i of optimizer_traits_table is optimizer_kind i");
// The enum follows the table: a kind without a row fails here, as a row of no kind fails to
// compile.
static_assert(rows_name_enumerators<optimizer_kind, optimizer_table>(
                std::make_index_sequence<optimizer_count>{}),
              "optimizer_kind i is named as row i of the optimizer table, and has no more values");

/// Calls f(Row{}) for the row of `kind` and returns true; false for a kind of no row.
template <class F>
bool visit_optimizer(optimizer_kind kind, F&& f) {
  return std::apply(
    [&](auto... rows) { return ((decltype(rows)::kind == kind ? (f(rows), true) : false) || ...); },
    optimizer_table{});
}

/// Calls f(Row{}) for every row, in order.
template <class F>
void for_each_optimizer(F&& f) {
  std::apply([&](auto... rows) { (f(rows), ...); }, optimizer_table{});
}

} // namespace actorps
