// What the chief tells a worker or evaluator process (RoleSetup, role_setup_codec.hpp): each
// field a run's data needs arrives as it left, and one the process could not use is refused on
// arrival, named.

#include "actors/chief/role_setup_codec.hpp"
#include "actors/protocol/errors.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/ps/model_registry.hpp"

#include <doctest/doctest.h>

#include <string>

namespace actorps {

namespace {

/// A RoleSetup of the "lr" model with one address per shard of its spec.
role_setup lr_setup() {
  role_setup setup;
  setup.spec.model = make_model("lr")->spec();
  place_buckets(setup.spec);
  setup.shard_addresses = {"127.0.0.1:1", "127.0.0.1:2"};
  return setup;
}

} // namespace

TEST_CASE("slice auc: the slice field travels in a RoleSetup, none by default") {
  auto setup = lr_setup();
  setup.data.what = data_source::kind::criteo;
  setup.data.test_path = "test.tsv";
  auto plain = decode_role_setup(encode_role_setup(setup));
  REQUIRE(plain);
  CHECK(plain->data.slice_field == -1);
  setup.data.slice_field = 5;  // C6
  auto sliced = decode_role_setup(encode_role_setup(setup));
  REQUIRE(sliced);
  CHECK(sliced->data.slice_field == 5);
  CHECK(sliced->data.group_field == -1);
  setup.data.slice_field = 26;  // past C26: refused on arrival, named
  auto bad = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(bad);
  CHECK(describe(bad.error()).find("slice field 26") != std::string::npos);
}

TEST_CASE("ctr metrics: the GAUC group field travels in a RoleSetup, none by default") {
  auto setup = lr_setup();
  setup.data.what = data_source::kind::criteo;
  setup.data.test_path = "test.tsv";
  auto plain = decode_role_setup(encode_role_setup(setup));
  REQUIRE(plain);
  CHECK(plain->data.group_field == -1);
  setup.data.group_field = 25;  // C26
  auto grouped = decode_role_setup(encode_role_setup(setup));
  REQUIRE(grouped);
  CHECK(grouped->data.group_field == 25);
  setup.data.group_field = 26;  // past C26: refused on arrival, named
  auto bad = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(bad);
  CHECK(describe(bad.error()).find("group field 26") != std::string::npos);
}

TEST_CASE("a worker process is told it follows a stream and the clocks it may compute") {
  auto setup = lr_setup();
  setup.data.what = data_source::kind::criteo;
  setup.data.train_path = "days";
  auto plain = decode_role_setup(encode_role_setup(setup));
  REQUIRE(plain);
  CHECK_FALSE(plain->data.follow);
  CHECK(plain->follow_until == -1);
  setup.data.follow = true;
  setup.follow_until = 5;
  auto followed = decode_role_setup(encode_role_setup(setup));
  REQUIRE(followed);
  CHECK(followed->data.follow);
  CHECK(followed->follow_until == 5);
  setup.data.follow = false;  // a grant without a stream: refused on arrival
  CHECK_FALSE(decode_role_setup(encode_role_setup(setup)));
  setup.data.follow = true;
  setup.data.what = data_source::kind::synthetic;  // generated in memory, never followed
  setup.follow_until = -1;
  auto generated = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(generated);
  CHECK(describe(generated.error()).find("followed stream") != std::string::npos);
  setup.data.what = data_source::kind::csv;  // a dense model's worker streams its part
  CHECK(decode_role_setup(encode_role_setup(setup)));
}

TEST_CASE("a worker process is told its data plan and the clock to pause at") {
  auto setup = lr_setup();
  auto plain = decode_role_setup(encode_role_setup(setup));
  REQUIRE(plain);
  CHECK(plain->plan.empty());  // its own part
  CHECK(plain->pause_at == -1);
  // a worker taken in by a change of workers: other workers' untrained minibatches
  setup.steps = 7;
  setup.plan = {{2, 0, 10, 3}, {2, 1, 12, 4}};
  setup.pause_at = 25;
  auto planned = decode_role_setup(encode_role_setup(setup));
  REQUIRE(planned);
  CHECK(planned->plan == setup.plan);
  CHECK(planned->steps == 7);
  CHECK(planned->pause_at == 25);
  setup.steps = 8;  // not the plan's count
  auto short_plan = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(short_plan);
  CHECK(describe(short_plan.error()).find("plan does not hold its steps") != std::string::npos);
  setup.steps = 7;
  setup.plan[1].part = 2;  // part 2 of 2
  auto bad_part = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(bad_part);
  CHECK(describe(bad_part.error()).find("data segment") != std::string::npos);
}

TEST_CASE("a log's schema and delimiter travel in a RoleSetup, and a log without a schema is refused") {
  auto setup = lr_setup();
  setup.data.what = data_source::kind::logs;
  setup.data.train_path = "logs/";
  setup.data.test_path = "test.csv";
  setup.data.schema_path = "/data/schema.yaml";
  setup.data.delimiter = ',';
  setup.data.group_field = 300;  // a schema may have more key fields than Criteo's 26
  auto got = decode_role_setup(encode_role_setup(setup));
  REQUIRE(got);
  CHECK(got->data.what == data_source::kind::logs);
  CHECK(got->data.schema_path == "/data/schema.yaml");
  CHECK(got->data.delimiter == ',');
  CHECK(got->data.group_field == 300);
  setup.data.schema_path.clear();
  auto bad = decode_role_setup(encode_role_setup(setup));
  REQUIRE_FALSE(bad);
  CHECK(describe(bad.error()).find("a log without a schema") != std::string::npos);
}

} // namespace actorps
