// The optimizer tables (the traits of actors/ps/optimizer.hpp and row_optimizer.hpp joined with
// their rules: kernels/optimizer_table.hpp, kernels/sparse/row_optimizer_table.hpp)
// against what lies outside them: the schema's Optimizer enums, whose ordinals the wire carries
// (checked by name through Cap'n Proto's own reflection), and the figures their readers give.

#include "kernels/optimizer.hpp"
#include "kernels/optimizer_table.hpp"
#include "kernels/sparse/row_optimizer.hpp"
#include "kernels/sparse/row_optimizer_table.hpp"
#include "schema/actorps.capnp.h"

#include <capnp/schema.h>
#include <doctest/doctest.h>

#include <string>

using namespace actorps;

TEST_CASE("optimizer table: row i is the schema's Optimizer enumerant i, by name") {
  auto enumerants = capnp::Schema::from<wire::Optimizer>().getEnumerants();
  REQUIRE(enumerants.size() == optimizer_count);
  std::size_t i = 0;
  for_each_optimizer([&](auto row) {
    CHECK(std::string(enumerants[i].getProto().getName().cStr()) == decltype(row)::name);
    CHECK(static_cast<std::size_t>(decltype(row)::kind) == i);
    ++i;
  });
}

TEST_CASE("optimizer table: a kind of no row is refused, not read past the table") {
  // Each optimizer's own figures (names, state, default rate, hyper-parameters) are checked in
  // tests/optimizer_test.cpp, beside its formula.
  CHECK_THROWS_AS(optimizer_state_slots(static_cast<optimizer_kind>(optimizer_count)),
                  std::invalid_argument);
  CHECK(std::string(to_string(static_cast<optimizer_kind>(optimizer_count))) == "unknown");
}

TEST_CASE("row optimizer table: row i is the schema's SparseTableSpec.Optimizer enumerant i") {
  auto enumerants = capnp::Schema::from<wire::SparseTableSpec::Optimizer>().getEnumerants();
  REQUIRE(enumerants.size() == row_optimizer_count);
  std::size_t i = 0;
  for_each_row_optimizer([&](auto row) {
    CHECK(std::string(enumerants[i].getProto().getName().cStr()) == decltype(row)::name);
    CHECK(static_cast<std::size_t>(decltype(row)::kind) == i);
    ++i;
  });
}

TEST_CASE("row optimizer table: a kind of no row is refused by every reader") {
  // Each row optimizer's own figures are checked in tests/row_optimizer_test.cpp.
  const auto none = static_cast<row_optimizer_kind>(row_optimizer_count);
  CHECK_THROWS_AS(row_state_slots(none), std::invalid_argument);
  CHECK_THROWS_AS(row_counts_steps(none), std::invalid_argument);
  CHECK_THROWS_AS(default_row_learning_rate(none), std::invalid_argument);
  row_optimizer_config cfg;
  cfg.kind = none;
  CHECK_THROWS_AS(validate_row_optimizer(cfg), std::invalid_argument);
  float value = 1, grad = 1, state[2] = {0, 0};
  CHECK_THROWS_AS(apply_row_update(cfg, 1, 1, &value, &grad, state, 1), std::invalid_argument);
  CHECK(value == 1.0f);
  CHECK(std::string(to_string(none)) == "unknown");
}
