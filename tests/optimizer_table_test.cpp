// The optimizer tables (kernels/optimizer_table.hpp, kernels/sparse/row_optimizer_table.hpp)
// against what lies outside them: the schema's Optimizer enums, whose ordinals the wire carries
// (checked by name through Cap'n Proto's own reflection), and the figures their readers give.

#include "kernels/optimizer_table.hpp"
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

TEST_CASE("optimizer table: names, state, default rates and hyper-parameters as its rows say") {
  CHECK(optimizer_names() == "sgd, momentum, adam or adagrad");
  CHECK(default_learning_rate(optimizer_kind::sgd) == 0.1f);
  CHECK(default_learning_rate(optimizer_kind::momentum) == 0.05f);
  CHECK(default_learning_rate(optimizer_kind::adam) == 0.001f);
  CHECK(default_learning_rate(optimizer_kind::adagrad) == 0.05f);
  CHECK(optimizer_hyper_parameters(optimizer_kind::sgd) == hyper_none);
  CHECK(optimizer_hyper_parameters(optimizer_kind::momentum) == hyper_momentum);
  CHECK(optimizer_hyper_parameters(optimizer_kind::adam) == (hyper_betas | hyper_epsilon));
  CHECK(optimizer_hyper_parameters(optimizer_kind::adagrad) == hyper_epsilon);
  // A kind of no row is refused, not read past the table.
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

TEST_CASE("row optimizer table: names, state, steps and default rates as its rows say") {
  CHECK(row_optimizer_names() == "sgd, adagrad, adam or ftrl");
  CHECK(row_state_slots(row_optimizer_kind::sgd) == 0);
  CHECK(row_state_slots(row_optimizer_kind::adagrad) == 1);
  CHECK(row_state_slots(row_optimizer_kind::adam) == 2);
  CHECK(row_state_slots(row_optimizer_kind::ftrl) == 2);
  // Only Adam's bias correction needs each row's own count of updates.
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::sgd));
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::adagrad));
  CHECK(row_counts_steps(row_optimizer_kind::adam));
  CHECK_FALSE(row_counts_steps(row_optimizer_kind::ftrl));
  for_each_row_optimizer([](auto row) {
    CHECK(default_row_learning_rate(decltype(row)::kind) == 0.05f);
    CHECK(parse_row_optimizer_kind(decltype(row)::name) == decltype(row)::kind);
  });
  // A kind of no row is refused by every reader, not read past the table.
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
