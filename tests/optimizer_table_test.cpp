// The optimizer table (kernels/optimizer_table.hpp) against what lies outside it: the schema's
// Optimizer enum, whose ordinals the wire carries (checked by name through Cap'n Proto's own
// reflection), and the figures its readers give.

#include "kernels/optimizer_table.hpp"
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
