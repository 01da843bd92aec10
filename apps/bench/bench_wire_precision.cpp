// What --wire-precision bf16 costs per push, apart from the run: one shard's push of the
// default MLP (784-256-128-10 on 2 shards) encoded as the worker does (fp32 by reference, bf16
// rounded into the message) and decoded as the shard does (fp32 read in place, bf16 widened into
// a pooled float buffer), and what widening into a fresh buffer each time would cost instead.
// Medians of ROUNDS rounds of ITERATIONS calls each, in microseconds. Prints one JSON object.
#include "actors/chief/metrics.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/protocol/bf16.hpp"
#include "actors/protocol/wire.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

using namespace actorps;

namespace {

volatile float sink = 0;  // keeps the timed work from being optimised away

template <class F>
double median_us(int rounds, int iterations, F&& f) {
  std::vector<double> each;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) f();
    auto t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0);
    each.push_back(t.count() / iterations);
  }
  std::sort(each.begin(), each.end());
  return each[each.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  int rounds = 5, iterations = 1000;
  po::options_description desc("actorps_bench_wire_precision");
  desc.add_options()("help", "this text")
    ("rounds", po::value(&rounds)->default_value(rounds), "rounds (the median is reported)")
    ("iterations", po::value(&iterations)->default_value(iterations), "calls per round");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  if (vm.count("help") || rounds < 1 || iterations < 1) {
    std::cerr << desc;
    return vm.count("help") ? 0 : 2;
  }
  train_spec spec;
  spec.model = mlp_model({784, 256, 128, 10});
  spec.shards = 2;
  block_layout layout(spec);
  std::vector<float> grad(layout.total_floats());
  for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = 1e-3f * float(i % 977) - 0.4f;
  const auto floats = layout.shard_floats(0);
  auto fp32 = encode_push(0, 0, 0, layout, grad.data());
  auto bf16 = encode_push(0, 0, 0, layout, grad.data(), 0, {}, {}, wire_precision::bf16);
  std::vector<uint16_t> narrow(floats);
  to_bf16(grad.data(), floats, narrow.data());

  json_object out;
  out.add("benchmark", "wire_precision_codec").add("shard_floats", floats)
    .add("push_bytes_fp32", fp32.size_bytes()).add("push_bytes_bf16", bf16.size_bytes())
    .add("encode_fp32_by_reference_us", median_us(rounds, iterations, [&] {
      sink = float(encode_push_by_reference(0, 0, 0, layout, grad.data()).size_bytes());
    }))
    .add("encode_bf16_us", median_us(rounds, iterations, [&] {
      sink = float(encode_push(0, 0, 0, layout, grad.data(), 0, {}, {}, wire_precision::bf16)
                     .size_bytes());
    }))
    .add("decode_fp32_us", median_us(rounds, iterations, [&] {
      sink = decode_push(fp32)->blocks[0].values[0];
    }))
    .add("decode_bf16_pooled_us", median_us(rounds, iterations, [&] {
      sink = decode_push(bf16)->blocks[0].values[0];
    }))
    .add("widen_into_fresh_buffer_us", median_us(rounds, iterations, [&] {
      auto fresh = std::make_shared<std::vector<float>>(floats);
      from_bf16(narrow.data(), floats, fresh->data());
      sink = (*fresh)[floats / 2];
    }));
  std::cout << out.str() << "\n";
}
