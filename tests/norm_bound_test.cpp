// The gradient norm bound (norm_bound.hpp, --gradient-norm-bound): an insider — a worker's own
// certificate, or anyone in-process — pushes 1000.0 everywhere as that worker, at the clock the
// worker is at, before the worker's own push. Every value is within --max-gradient (1e6), but
// the push's norm is thousands of times the recent pushes': the default bound refuses it whole
// (gradient_norm_beyond), counts it (norms_refused), and the run ends bit for bit as the same
// run without the insider. With the bound off (0) the same pushes are taken, and the run is
// another. The running bound itself: warm-up, the lower median, a sender of half the pushes.
#include "actors/roles/norm_bound.hpp"
#include "link_fixture.hpp"
#include "scratch_dir.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <limits>

using namespace actorps;
using namespace actorps::test;

namespace {

bool is(const caf::error& err, errc code) { return err && is_error(err, code); }

/// A worker's honest gradient of clock `c`: small values that vary with the worker and clock.
std::vector<float> honest_gradient(const block_layout& layout, int32_t w, int64_t c) {
  std::vector<float> grad(layout.total_floats());
  for (std::size_t i = 0; i < grad.size(); ++i)
    grad[i] = 0.01f * float((i * 7 + std::size_t(w) * 3 + std::size_t(c)) % 11) - 0.05f;
  return grad;
}

struct run_result {
  std::vector<float> values;
  shard_stats stats;
  std::vector<caf::error> insider_answers;  // one per push of the insider
};

/// Two workers' sync run of 24 clocks (Adam) on one shard with norm bound `k`; from clock 10 on
/// (20 pushes taken: past the warm-up) the insider, when `attacked`, pushes 1000.0 everywhere
/// as worker 1 before worker 1's own push.
run_result sync_run(bool attacked, float k) {
  auto spec = tiny_spec(consistency::sync, 2);
  spec.optimizer.kind = optimizer_kind::adam;
  spec.optimizer.learning_rate = 0.01f;
  value_bounds bounds;
  bounds.gradient_norm_bound = k;
  shard_fixture f(spec, shard_config{"", bounds});
  run_result out;
  for (int64_t c = 0; c < 24; ++c) {
    int replies = 0;
    for (int32_t w = 0; w < 2; ++w) {
      if (attacked && w == 1 && c >= 10) {
        std::vector<float> insider(f.layout.total_floats(), 1000.0f);
        auto answer = f.ask(f.shard, push_pull_atom::value, push_request{encode_push(1, c, 0, f.layout, insider.data())});
        if (answer) {  // taken: it holds worker 1's place in the clock, whose own push is stale
          out.insider_answers.push_back(caf::none);
          ++replies;
          continue;
        }
        out.insider_answers.push_back(answer.error());
      }
      auto grad = honest_gradient(f.layout, w, c);
      (*f.self)->send(f.shard, push_pull_atom::value, push_request{encode_push(w, c, 0, f.layout, grad.data())});
    }
    for (; replies < 2; ++replies)
      (*f.self)->receive([](const wire_buffer&) {}, [](caf::error& e) { FAIL(describe(e)); },
                         caf::after(timeout) >> [] { FAIL("no reply"); });
  }
  out.values = f.snapshot();
  out.stats = f.stats();
  return out;
}

/// The cluster's certificates (scripts/make_certs.sh), made once.
struct norm_certificates {
  scratch_dir dir{"actorps_norm_tls"};
  norm_certificates() {
    auto script = std::string(ACTORPS_SOURCE_DIR) + "/scripts/make_certs.sh";
    REQUIRE(std::system((script + " " + dir.path + " ps:0 worker:0 worker:1 >/dev/null 2>&1").c_str())
            == 0);
  }
  tls_files of(const std::string& stem) const {
    return {dir.path + "/" + stem + ".pem", dir.path + "/" + stem + ".key", dir.path + "/ca.pem"};
  }
};

const norm_certificates& certs() {
  static norm_certificates made;
  return made;
}

} // namespace

TEST_CASE("norm bound: an insider's 1000.0 pushes as its own worker are refused by default, the sync run bit for bit as without") {
  auto clean = sync_run(false, default_gradient_norm_bound);
  auto attacked = sync_run(true, default_gradient_norm_bound);
  REQUIRE(attacked.insider_answers.size() == 14);
  for (const auto& answer : attacked.insider_answers) {
    CHECK_MESSAGE(is(answer, errc::gradient_norm_beyond), describe(answer));
    CHECK(describe(answer).find("--gradient-norm-bound 1000 times the median norm") != std::string::npos);
  }
  REQUIRE(clean.values.size() == attacked.values.size());
  CHECK(std::memcmp(clean.values.data(), attacked.values.data(), clean.values.size() * sizeof(float)) == 0);
  CHECK(attacked.stats.norms_refused == 14);
  CHECK(attacked.stats.dropped == 14);
  CHECK(attacked.stats.gradients_refused == 0);  // every value was within --max-gradient
  CHECK(attacked.stats.updates == 24);
  CHECK(clean.stats.norms_refused == 0);
  CHECK(clean.stats.dropped == 0);
  // The honest pushes came nowhere near the bound.
  CHECK(clean.stats.max_norm_ratio > 0);
  CHECK(clean.stats.max_norm_ratio < 2);
  CHECK(attacked.stats.max_norm_ratio == clean.stats.max_norm_ratio);
}

TEST_CASE("norm bound: off (--gradient-norm-bound 0), the insider's pushes are taken and the run is another") {
  auto clean = sync_run(false, 0);
  auto attacked = sync_run(true, 0);
  REQUIRE(attacked.insider_answers.size() == 14);
  for (const auto& answer : attacked.insider_answers) CHECK_FALSE(answer);
  CHECK(attacked.stats.norms_refused == 0);
  CHECK(clean.values != attacked.values);
  CHECK(clean.stats.max_norm_ratio == 0);  // nothing measured
}

TEST_CASE("norm bound: a worker's certificate pushing 1000.0 as itself on the TLS data link is refused, the async run as without") {
  auto spec = tiny_spec(consistency::async, 2);
  spec.optimizer.learning_rate = 0.1f;
  auto run = [&](bool attacked) {
    link_fixture f(spec, certs().of("ps-0"));
    auto insider = f.try_attach(false, 0, certs().of("worker-1"));
    REQUIRE(insider);
    std::vector<caf::error> answers;
    for (int64_t c = 0; c < 16; ++c)
      for (int32_t w = 0; w < 2; ++w) {
        if (attacked && w == 1 && c >= 10) {
          auto answer = f.ask(insider->handle, push_pull_atom::value, push_request{f.push_of(1, c, 1000.0f)});
          answers.push_back(answer ? caf::error{} : answer.error());
        }
        auto grad = honest_gradient(f.layout, w, c);
        auto own = f.ask(f.shard, push_pull_atom::value, push_request{encode_push(w, c, 0, f.layout, grad.data())});
        REQUIRE_MESSAGE(own, describe(own.error()));
      }
    insider->close();
    return std::make_tuple(f.snapshot(), f.stats(), answers);
  };
  auto [clean, clean_stats, none] = run(false);
  auto [values, stats, answers] = run(true);
  CHECK(none.empty());
  REQUIRE(answers.size() == 6);
  for (const auto& answer : answers) CHECK_MESSAGE(is(answer, errc::gradient_norm_beyond), describe(answer));
  CHECK(same_floats(clean, values));
  CHECK(stats.norms_refused == 6);
  CHECK(stats.pushes == clean_stats.pushes);
  CHECK(stats.pushes == 32);
  CHECK(clean_stats.norms_refused == 0);
}

TEST_CASE("norm bound: refuses nothing while warming up, then k times the lower median of the last pushes taken") {
  norm_bound off{0};
  for (int i = 0; i < 100; ++i) off.taken(1.0f);
  CHECK(off.limit() == std::numeric_limits<float>::infinity());

  norm_bound b{10};
  for (std::size_t i = 0; i + 1 < norm_bound::warmup; ++i) b.taken(1000.0f * float(i + 1));
  CHECK(b.limit() == std::numeric_limits<float>::infinity());  // warming up
  b.taken(1.0f);
  CHECK(b.limit() > 1000.0f);  // the large first gradients set the scale
  // Training goes on with norms about 2: within a window the median is 2.
  for (std::size_t i = 0; i < norm_bound::window; ++i) b.taken(i % 2 ? 1.5f : 2.5f);
  CHECK(b.median() == 1.5f);  // the lower median of an even count
  CHECK(b.limit() == 15.0f);
  CHECK(b.largest_ratio() < 1000.0f);
  // One of two workers pushing 14 (within the bound) every time does not raise the median: the
  // lower median of a window half its is the other worker's largest.
  for (std::size_t i = 0; i < 4 * norm_bound::window; ++i) b.taken(i % 2 ? 14.0f : 2.0f);
  CHECK(b.median() == 2.0f);
  CHECK(b.limit() == 20.0f);
  // All gradients zero: a median of 0 bounds nothing.
  for (std::size_t i = 0; i < norm_bound::window; ++i) b.taken(0.0f);
  CHECK(b.limit() == std::numeric_limits<float>::infinity());
}

TEST_CASE("norm bound: a push's sparse rows are bounded apart from its dense gradient") {
  auto spec = tiny_spec(consistency::async, 1);
  spec.shards = 2;
  sparse_table_spec table;
  table.name = "emb";
  table.config.dim = 2;
  table.config.optimizer.kind = row_optimizer_kind::sgd;
  table.config.optimizer.learning_rate = 0.1f;
  spec.model.sparse_tables.push_back(table);
  place_buckets(spec);
  shard_fixture f(spec);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < 4; ++k)
    if (spec.shard_of_key(k) == 0) keys.push_back(k);
  // An honest dense gradient, and rows of `value`.
  auto push = [&](int64_t clock, float value) {
    std::vector<float> dense(f.layout.total_floats(), 0.01f);
    std::vector<float> grads(keys.size() * 2, value);
    std::vector<sparse_rows_ref> rows{{0, 2, keys.data(), nullptr, keys.size(), grads.data()}};
    return encode_push(0, clock, 0, f.layout, dense.data(), 0, rows, {});
  };
  for (int64_t c = 0; c < 20; ++c) {
    auto taken = f.ask(f.shard, push_pull_atom::value, push_request{push(c, 0.01f + 0.002f * float(c % 5))});
    REQUIRE_MESSAGE(taken, describe(taken.error()));
  }
  auto before = f.stats();
  auto refused = f.ask(f.shard, push_pull_atom::value, push_request{push(20, 1000.0f)});
  REQUIRE_FALSE(refused);
  CHECK_MESSAGE(is(refused.error(), errc::gradient_norm_beyond), describe(refused.error()));
  CHECK(describe(refused.error()).find("sparse rows' gradient norm") != std::string::npos);
  auto after = f.stats();
  CHECK(after.norms_refused == 1);
  CHECK(after.pushes == before.pushes);
  CHECK(after.updates == before.updates);  // nothing applied, the dense part neither
  CHECK(f.ask(f.shard, push_pull_atom::value, push_request{push(20, 0.01f)}));  // its clock is still open
}
