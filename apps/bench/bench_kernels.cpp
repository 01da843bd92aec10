// actorps_bench_kernels: every backend kernel and one worker step, CPU and CUDA side by side.
//
// For 784-256-128-10 at batch 64 and 784-2048-2048-10 at batch 512: each gemm of a train step
// (GFLOP/s), the element-wise kernels and reductions on the first hidden layer's shape (GB/s of
// compulsory traffic), and one worker step = set_parameters + train_step with its copies
// (parameters and gradients in host_buffers, as a worker keeps them). Plus the model's largest
// gemm alone, the "plain cuBLAS sgemm" rate a step is judged against. CUDA results are checked
// against the CPU before anything is timed; CUDA is timed with events after warm-up. Prints one
// JSON object; CUDA entries are null with "cuda_skipped" when no GPU is usable.
#include "kernels/backend_factory.hpp"
#include "kernels/blas_core.hpp"
#include "kernels/denormals.hpp"
#include "kernels/mlp.hpp"
#include "kernels/parameter_init.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace actorps;

namespace {

// --- JSON ---------------------------------------------------------------------------------

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// A JSON object built field by field; values given as already-encoded JSON text.
class json {
public:
  json& raw(const std::string& key, const std::string& value) {
    text_ += (text_.empty() ? "{" : ",") + quoted(key) + ":" + value;
    return *this;
  }
  json& add(const std::string& key, const std::string& v) { return raw(key, quoted(v)); }
  json& add(const std::string& key, const char* v) { return raw(key, quoted(v)); }
  json& add(const std::string& key, double v) { return raw(key, number(v)); }
  json& add(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  std::string str() const { return text_.empty() ? "{}" : text_ + "}"; }

private:
  std::string text_;
};

std::string array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ",\n " : "") + items[i];
  return out + "]";
}

// --- timing and checking ------------------------------------------------------------------

struct options {
  std::string backends = "both";
  double min_ms = 200;
  int device = 0;
};

/// Mean milliseconds per call of `op` after two warm-up calls: one probe, then enough calls to
/// fill min_ms, timed together with the backend's stopwatch (CUDA events on the GPU).
double time_ms(backend& be, const std::function<void()>& op, double min_ms) {
  op();
  op();
  auto watch = make_stopwatch(be);
  watch->start();
  op();
  const double probe = std::max(watch->stop_ms(), 1e-4);
  const int reps = static_cast<int>(std::clamp(min_ms / probe, 1.0, 100000.0));
  watch->start();
  for (int r = 0; r < reps; ++r) op();
  return watch->stop_ms() / reps;
}

/// |got − ref| ≤ 1e-4·max|ref| + 1e-3·|ref| everywhere; returns the largest |got − ref|.
bool close(const std::vector<float>& got, const std::vector<float>& ref, double* max_diff) {
  double scale = 0, diff = 0;
  bool ok = got.size() == ref.size();
  for (float r : ref) scale = std::max(scale, std::fabs(static_cast<double>(r)));
  for (std::size_t i = 0; ok && i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    diff = std::max(diff, d);
    ok = d <= 1e-4 * scale + 1e-3 * std::fabs(static_cast<double>(ref[i]));
  }
  *max_diff = diff;
  return ok;
}

std::vector<float> random_floats(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<int32_t> random_labels(std::size_t n, unsigned seed, int classes) {
  std::mt19937 rng(seed);
  std::vector<int32_t> v(n);
  for (auto& y : v) y = static_cast<int32_t>(rng() % static_cast<unsigned>(classes));
  return v;
}

template <class T>
std::shared_ptr<device_buffer<T>> upload(backend& be, const std::vector<T>& host) {
  auto buf = std::make_shared<device_buffer<T>>(be, host.size());
  be.copy_to_device(buf->get(), host.data(), host.size() * sizeof(T));
  return buf;
}

std::vector<float> download(backend& be, const device_buffer<float>& buf) {
  std::vector<float> host(buf.size());
  be.copy_to_host(host.data(), buf.get(), host.size() * sizeof(float));
  return host;
}

// --- the cases ----------------------------------------------------------------------------

/// A kernel call bound to its inputs on one backend: run() repeats it, output() reads it back.
struct bound_call {
  std::function<void()> run;
  std::function<std::vector<float>()> output;
};

struct kernel_case {
  std::string kernel, shape;
  double flops = 0;  // gemm: rated in GFLOP/s
  double bytes = 0;  // the rest: rated in GB/s of compulsory traffic
  std::function<bound_call(backend&)> bind;
};

kernel_case gemm_case(bool ta, bool tb, int m, int n, int k, unsigned seed) {
  kernel_case kc;
  kc.kernel = "gemm";
  kc.shape = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " m=" + std::to_string(m) +
             " n=" + std::to_string(n) + " k=" + std::to_string(k);
  kc.flops = 2.0 * m * n * k;
  auto a = random_floats(std::size_t(m) * k, seed, -1, 1);
  auto b = random_floats(std::size_t(k) * n, seed + 1, -1, 1);
  kc.bind = [=](backend& be) {
    auto da = upload(be, a), db = upload(be, b);
    auto dc = std::make_shared<device_buffer<float>>(be, std::size_t(m) * n);
    const int lda = ta ? m : k, ldb = tb ? k : n;
    return bound_call{
      [=, &be] {
        be.gemm(ta, tb, m, n, k, 1.0f, da->get(), lda, db->get(), ldb, 0.0f, dc->get(), n);
      },
      [=, &be] { return download(be, *dc); }};
  };
  return kc;
}

std::vector<kernel_case> model_cases(const std::vector<int>& layers, int batch) {
  std::vector<kernel_case> cases;
  const unsigned seed = static_cast<unsigned>(layers[1] + batch);
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {  // the gemms of mlp::train_step
    const int in = layers[l], out = layers[l + 1];
    cases.push_back(gemm_case(false, false, batch, out, in, seed + 10 * l));      // forward
    cases.push_back(gemm_case(true, false, in, out, batch, seed + 10 * l + 3));   // dW
    if (l > 0) cases.push_back(gemm_case(false, true, batch, in, out, seed + 10 * l + 6));  // dX
  }
  const int rows = batch, cols = layers[1], classes = layers.back();
  const std::size_t n = std::size_t(rows) * cols;
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  const auto z = random_floats(n, seed + 100, -2, 2);
  const auto bias = random_floats(cols, seed + 101, -1, 1);
  auto relu_out = random_floats(n, seed + 102, -1, 1);
  for (auto& v : relu_out) v = std::max(v, 0.0f);

  kernel_case fwd{"bias_activation_forward relu", shape, 0, 4.0 * (2 * n + cols), {}};
  fwd.bind = [=](backend& be) {
    auto dz = upload(be, z), db = upload(be, bias);
    return bound_call{
      [=, &be] { be.bias_activation_forward(dz->get(), db->get(), rows, cols, activation::relu); },
      [=, &be] { return download(be, *dz); }};
  };
  kernel_case bwd{"activation_backward relu", shape, 0, 4.0 * 3 * n, {}};
  bwd.bind = [=](backend& be) {
    auto dz = upload(be, z), dout = upload(be, relu_out);
    return bound_call{
      [=, &be] { be.activation_backward(dz->get(), dout->get(), n, activation::relu); },
      [=, &be] { return download(be, *dz); }};
  };
  kernel_case colsum{"bias_backward", shape, 0, 4.0 * (n + cols), {}};
  colsum.bind = [=](backend& be) {
    auto dz = upload(be, z);
    auto db = std::make_shared<device_buffer<float>>(be, cols);
    return bound_call{[=, &be] { be.bias_backward(db->get(), dz->get(), rows, cols); },
                      [=, &be] { return download(be, *db); }};
  };
  const std::size_t ln = std::size_t(rows) * classes;
  const auto logits = random_floats(ln, seed + 103, -3, 3);
  const auto labels = random_labels(rows, seed + 104, classes);
  kernel_case loss{"softmax_cross_entropy", std::to_string(rows) + "x" + std::to_string(classes),
                   0, 4.0 * (2 * ln + rows), {}};
  loss.bind = [=](backend& be) {
    auto dl = upload(be, logits);
    auto dy = upload(be, labels);
    auto dd = std::make_shared<device_buffer<float>>(be, ln);
    return bound_call{
      [=, &be] { be.softmax_cross_entropy(dl->get(), dy->get(), rows, classes, dd->get(), 0.5f); },
      [=, &be] { return download(be, *dd); }};
  };
  for (auto* kc : {&fwd, &bwd, &colsum, &loss}) cases.push_back(std::move(*kc));
  return cases;
}

std::string layers_name(const std::vector<int>& layers) {
  std::string s;
  for (std::size_t i = 0; i < layers.size(); ++i) s += (i ? "-" : "") + std::to_string(layers[i]);
  return s;
}

double step_flops(const std::vector<int>& layers, int batch) {
  double flops = 0;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    flops += 2.0 * batch * layers[l] * layers[l + 1] * (l > 0 ? 3 : 2);  // fwd, dW (+ dX)
  }
  return flops;
}

struct session {
  options opt;
  std::unique_ptr<backend> cpu, cuda;  // cpu is also the reference for the CUDA checks
  bool time_cpu = true;
  std::string cuda_skipped;
  bool all_valid = true;

  /// {"ms":…, unit:…} for one backend, or null.
  static std::string rate(double ms, double flops, double bytes) {
    json j;
    j.add("ms", ms);
    if (flops > 0) j.add("gflops", flops / (ms * 1e6));
    if (bytes > 0) j.add("gb_s", bytes / (ms * 1e6));
    return j.str();
  }

  std::string run_kernel(const std::string& model, int batch, const kernel_case& kc) {
    json j;
    j.add("model", model).add("batch", double(batch)).add("kernel", kc.kernel)
      .add("shape", kc.shape);
    if (kc.flops > 0) j.add("flops", kc.flops);
    if (kc.bytes > 0) j.add("bytes", kc.bytes);
    if (time_cpu) {
      const bound_call on_cpu = kc.bind(*cpu);
      j.raw("cpu", rate(time_ms(*cpu, on_cpu.run, opt.min_ms), kc.flops, kc.bytes));
    } else {
      j.raw("cpu", "null");
    }
    if (!cuda) return j.raw("cuda", "null").add("cuda_skipped", cuda_skipped).str();
    bound_call on_cuda = kc.bind(*cuda);
    auto ref = kc.bind(*cpu);  // a fresh CPU run from the same inputs, for the check
    ref.run();
    on_cuda.run();
    double diff = 0;
    const bool ok = close(on_cuda.output(), ref.output(), &diff);
    all_valid = all_valid && ok;
    j.add("valid", ok).add("max_abs_diff", diff);
    if (!ok) return j.raw("cuda", "null").add("cuda_skipped", "result differs from the CPU").str();
    return j.raw("cuda", rate(time_ms(*cuda, on_cuda.run, opt.min_ms), kc.flops, kc.bytes)).str();
  }

  /// One worker step on `be`: set_parameters from, and gradients into, host_buffers.
  struct worker_step {
    worker_step(backend& be, const std::vector<int>& layers, int batch,
                const std::vector<float>& params, const std::vector<float>& x,
                const std::vector<int32_t>& y)
      : be(be), net(be, layers, batch), params(be, params.size()), grads(be, params.size()),
        x(x), y(y), batch(batch) {
      std::copy(params.begin(), params.end(), this->params.begin());
    }
    loss_stats run() {
      net.set_parameters(params.get());
      return net.train_step(x.data(), y.data(), batch, grads.get());
    }
    backend& be;
    mlp net;
    host_buffer<float> params, grads;
    const std::vector<float>& x;
    const std::vector<int32_t>& y;
    int batch;
  };

  std::string step_rates(worker_step& step, double flops, int batch, double* gflops = nullptr) {
    const double ms = time_ms(step.be, [&] { step.run(); }, opt.min_ms);
    if (gflops) *gflops = flops / (ms * 1e6);
    json j;
    j.add("ms", ms).add("steps_per_s", 1e3 / ms).add("samples_per_s", 1e3 * batch / ms)
      .add("gflops", flops / (ms * 1e6));
    // The step's two copies alone, through a scratch device buffer of the same size.
    device_buffer<float> scratch(step.be, step.params.size());
    const double bytes = 4.0 * step.params.size();
    const double h2d = time_ms(step.be, [&] {
      step.be.copy_to_device(scratch.get(), step.params.get(), std::size_t(bytes));
    }, opt.min_ms / 4);
    const double d2h = time_ms(step.be, [&] {
      step.be.copy_to_host(step.grads.get(), scratch.get(), std::size_t(bytes));
    }, opt.min_ms / 4);
    j.add("params_mb", bytes / 1e6).add("h2d_params_ms", h2d).add("d2h_grads_ms", d2h)
      .add("compute_ms_estimate", std::max(0.0, ms - h2d - d2h));
    return j.str();
  }

  std::string run_step(const std::vector<int>& layers, int batch, double* cuda_gflops) {
    const auto params = initial_parameters(layers, 1);
    const auto x = random_floats(std::size_t(batch) * layers[0], 7, 0, 1);
    const auto y = random_labels(batch, 8, layers.back());
    const double flops = step_flops(layers, batch);
    json j;
    j.add("model", layers_name(layers)).add("batch", double(batch)).add("flops", flops)
      .add("inputs", "x, y pageable; parameters, gradients in host_buffer");
    worker_step on_cpu(*cpu, layers, batch, params, x, y);
    j.raw("cpu", time_cpu ? step_rates(on_cpu, flops, batch) : "null");
    if (!cuda) return j.raw("cuda", "null").add("cuda_skipped", cuda_skipped).str();
    worker_step on_cuda(*cuda, layers, batch, params, x, y);
    const loss_stats ref = on_cpu.run(), got = on_cuda.run();
    double diff = 0;
    const std::vector<float> g(on_cuda.grads.begin(), on_cuda.grads.end());
    const std::vector<float> r(on_cpu.grads.begin(), on_cpu.grads.end());
    const bool ok = close(g, r, &diff) && got.correct == ref.correct &&
                    std::fabs(got.loss_sum - ref.loss_sum) <= 1e-4 * std::fabs(ref.loss_sum);
    all_valid = all_valid && ok;
    j.add("valid", ok).add("max_abs_grad_diff", diff);
    if (!ok) return j.raw("cuda", "null").add("cuda_skipped", "result differs from the CPU").str();
    return j.raw("cuda", step_rates(on_cuda, flops, batch, cuda_gflops)).str();
  }
};

int run(const options& opt) {
  flush_denormals_to_zero();
  session s;
  s.opt = opt;
  s.cpu = make_cpu_backend();
  s.time_cpu = opt.backends != "cuda";
  if (opt.backends != "cpu") {
    s.cuda = make_backend(backend_kind::cuda, opt.device, &s.cuda_skipped);
  } else {
    s.cuda_skipped = "--backends cpu";
  }

  struct model { std::vector<int> layers; int batch; };
  const std::vector<model> models = {{{784, 256, 128, 10}, 64}, {{784, 2048, 2048, 10}, 512}};
  std::vector<std::string> kernels, steps;
  double large_step_cuda_gflops = NAN;
  for (const model& m : models) {
    for (const kernel_case& kc : model_cases(m.layers, m.batch)) {
      kernels.push_back(s.run_kernel(layers_name(m.layers), m.batch, kc));
      std::cerr << "." << std::flush;
    }
    double cuda_gflops = NAN;
    steps.push_back(s.run_step(m.layers, m.batch, &cuda_gflops));
    large_step_cuda_gflops = cuda_gflops;  // the last model is the large one
    std::cerr << "." << std::flush;
  }
  std::cerr << "\n";

  // The large model's largest gemm alone: the rate a worker step is judged against.
  const kernel_case sgemm = gemm_case(false, false, 512, 2048, 2048, 99);
  json ref;
  ref.add("shape", sgemm.shape).add("flops", sgemm.flops)
    .add("how", "one backend::gemm call (one cublasSgemm on CUDA, OpenBLAS sgemm on the CPU)");
  auto sgemm_gflops = [&](backend* be) {
    if (be == nullptr) return double(NAN);  // → null
    const bound_call call = sgemm.bind(*be);
    return sgemm.flops / (time_ms(*be, call.run, opt.min_ms) * 1e6);
  };
  const double sgemm_cuda_gflops = sgemm_gflops(s.cuda.get());
  ref.add("cpu_gflops", sgemm_gflops(s.time_cpu ? s.cpu.get() : nullptr))
    .add("cuda_gflops", sgemm_cuda_gflops);
  ref.add("cuda_step_gflops", large_step_cuda_gflops)
    .add("cuda_step_over_half_sgemm", large_step_cuda_gflops / (0.5 * sgemm_cuda_gflops));

  json out;
  out.add("bench", "kernels").add("cpu_threads", 1.0)
    .add("cuda", s.cuda ? "available" : "unavailable");
  if (!s.cuda) out.add("cuda_skipped", s.cuda_skipped);
  out.add("valid", s.all_valid).raw("kernels", array(kernels)).raw("steps", array(steps))
    .raw("sgemm_reference", ref.str());
  std::printf("%s\n", out.str().c_str());
  if (!s.all_valid) {
    std::fprintf(stderr, "actorps_bench_kernels: CUDA results differ from the CPU\n");
  }
  return s.all_valid ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  actorps::rerun_with_better_blas_core(argv);  // before any GEMM: see blas_core.hpp
  options opt;
  po::options_description desc(
    "actorps_bench_kernels: backend kernels, CPU vs CUDA (JSON on stdout)");
  desc.add_options()("help,h", "this help")(
    "backends", po::value(&opt.backends)->default_value(opt.backends), "cpu, cuda or both")(
    "min-ms", po::value(&opt.min_ms)->default_value(opt.min_ms), "timed span per figure, ms")(
    "device", po::value(&opt.device)->default_value(opt.device), "CUDA device index");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    if (opt.backends != "cpu" && opt.backends != "cuda" && opt.backends != "both") {
      throw po::error("--backends must be cpu, cuda or both");
    }
    return run(opt);
  } catch (const po::error& e) {
    std::cerr << "actorps_bench_kernels: " << e.what() << "\n" << desc << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "actorps_bench_kernels: " << e.what() << "\n";
    return 1;
  }
}
