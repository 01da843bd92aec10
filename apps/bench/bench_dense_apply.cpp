// actorps_bench_dense_apply: what the value bounds cost a shard's dense update.
//
// One shard's blocks (--floats floats in blocks of --block-floats) updated by every optimizer two
// ways, alternating round by round so both figures come from the same window of a shared
// machine: "unchecked" as a shard applied before the bounds (all_finite over the gradient, then
// apply_update in place), "checked" as it applies now (all_within over the gradient against
// --max-gradient, then apply_update_checked into spare buffers, bounds checked in the same
// loop, buffers swapped) and "fused" as a shard applies a push now (apply_pushed_update: the
// gradient's bound checked in the update's own loop, no pass of its own); the sampled
// max_gradient statistic, every 16th push, is left out. Prints one JSON object: per optimizer
// and size, the median ns per float of each and their ratios.
#include "kernels/denormals.hpp"
#include "kernels/optimizer.hpp"
#include "kernels/value_bounds.hpp"

#include "apps/bench/bench_main.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;
using ordered_json = nlohmann::ordered_json;

namespace {

struct options {
  std::vector<std::size_t> floats{117573, 2925578};  // default MLP / 784-2048-2048-10, per shard of 2
  std::size_t block_floats = 4096;
  int rounds = 15;
};

struct shard_buffers {
  std::vector<float> params, state, grad, params_next, state_next;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// ns per float of one update of every block, run `repeats` times.
template <class Update>
double timed(std::size_t floats, int repeats, Update update) {
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) update();
  std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / (double(floats) * repeats);
}

ordered_json run_case(optimizer_kind kind, std::size_t floats, const options& o) {
  optimizer_config cfg;
  cfg.kind = kind;
  const auto slots = optimizer_state_slots(kind);
  shard_buffers b;
  b.params.assign(floats, 0.01f);
  b.state.assign(slots * floats, 0.0f);
  b.grad.resize(floats);
  for (std::size_t i = 0; i < floats; ++i) b.grad[i] = 1e-3f * float(int(i % 17) - 8);
  b.params_next.resize(floats);
  b.state_next.resize(slots * floats);
  int64_t step = 0;
  const float lr = 1e-4f;  // small: thousands of updates stay far from any bound

  auto unchecked = [&] {
    ++step;
    for (std::size_t at = 0; at < floats; at += o.block_floats) {
      auto n = std::min(o.block_floats, floats - at);
      if (!all_finite(b.grad.data() + at, n)) throw std::runtime_error("non-finite gradient");
    }
    for (std::size_t at = 0; at < floats; at += o.block_floats) {
      auto n = std::min(o.block_floats, floats - at);
      apply_update(cfg, lr, step, b.params.data() + at, b.grad.data() + at,
                   b.state.data() + slots * at, n);
    }
  };
  auto checked = [&] {
    for (std::size_t at = 0; at < floats; at += o.block_floats) {
      auto n = std::min(o.block_floats, floats - at);
      if (!all_within(b.grad.data() + at, n, default_max_gradient))
        throw std::runtime_error("gradient beyond the bound");
    }
    for (std::size_t at = 0; at < floats; at += o.block_floats) {
      auto n = std::min(o.block_floats, floats - at);
      if (!apply_update_checked(cfg, lr, step + 1, b.params.data() + at,
                                b.state.data() + slots * at, b.grad.data() + at,
                                b.params_next.data() + at, b.state_next.data() + slots * at, n,
                                default_max_parameter))
        throw std::runtime_error("update refused");
    }
    ++step;
    std::swap(b.params, b.params_next);
    std::swap(b.state, b.state_next);
  };
  auto fused = [&] {
    for (std::size_t at = 0; at < floats; at += o.block_floats) {
      auto n = std::min(o.block_floats, floats - at);
      if (apply_pushed_update(cfg, lr, step + 1, b.params.data() + at,
                              b.state.data() + slots * at, b.grad.data() + at,
                              b.params_next.data() + at, b.state_next.data() + slots * at, n,
                              default_max_parameter, default_max_gradient)
          != update_check::applied)
        throw std::runtime_error("push refused");
    }
    ++step;
    std::swap(b.params, b.params_next);
    std::swap(b.state, b.state_next);
  };
  // Enough repeats for ~20 ms a figure; a warm-up of each first.
  const int repeats = int(std::max<std::size_t>(3, 20'000'000 / std::max<std::size_t>(floats, 1)));
  unchecked();
  checked();
  fused();
  std::vector<double> plain_ns, checked_ns, fused_ns;
  for (int r = 0; r < o.rounds; ++r) {
    plain_ns.push_back(timed(floats, repeats, unchecked));
    checked_ns.push_back(timed(floats, repeats, checked));
    fused_ns.push_back(timed(floats, repeats, fused));
  }
  auto p = median(plain_ns), c = median(checked_ns), f = median(fused_ns);
  return ordered_json{{"optimizer", to_string(kind)},
                      {"floats", floats},
                      {"unchecked_ns_per_float", p},
                      {"checked_ns_per_float", c},
                      {"fused_ns_per_float", f},
                      {"checked_over_unchecked", c / p},
                      {"fused_over_checked", f / c}};
}

} // namespace

int main(int argc, char** argv) {
  options o;
  po::options_description desc("actorps_bench_dense_apply flags");
  desc.add_options()("help,h", "print this help")
    ("floats", po::value(&o.floats)->multitoken(), "shard sizes in floats (default 117573 2925578)")
    ("block-floats", po::value(&o.block_floats)->default_value(o.block_floats), "floats a block")
    ("rounds", po::value(&o.rounds)->default_value(o.rounds), "alternating rounds; medians");
  return run_benchmark(
    "actorps_bench_dense_apply", argc, argv, desc,
    [&] {
      if (o.block_floats == 0 || o.rounds < 1 || o.floats.empty())
        throw po::error("--block-floats, --rounds and --floats must be positive");
    },
    [&] {
      flush_denormals_to_zero();  // as every thread that runs optimizer code does
      ordered_json cases = ordered_json::array();
      for (auto floats : o.floats)
        for (auto kind : {optimizer_kind::sgd, optimizer_kind::momentum, optimizer_kind::adam,
                          optimizer_kind::adagrad})
          cases.push_back(run_case(kind, floats, o));
      ordered_json out{{"bench", "dense_apply"}, {"block_floats", o.block_floats},
                       {"rounds", o.rounds}, {"cases", cases}};
      std::printf("%s\n", out.dump(1).c_str());
      return 0;
    });
}
