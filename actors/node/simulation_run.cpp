// simulation_run: `actorps simulate`'s options through the planner into simulate().
#include "actors/ps/simulation_run.hpp"

#include "actors/data/load_split.hpp"
#include "actors/deploy/simulation.hpp"
#include "actors/node/export_plan.hpp"
#include "actors/node/print_summary.hpp"
#include "actors/node/training_plan.hpp"

#include <cstdio>
#include <filesystem>

namespace actorps {

namespace {

/// In one process the backend is decided up front: `cuda` without a usable GPU is refused with
/// the CUDA error text, and `auto` says when it falls back to the CPU.
void resolve_backend_here(chief_config& c) {
  if (c.backend == backend_kind::cpu) return;
  std::string why;
  int devices = cuda_device_count(&why);
  if (devices == 0) {
    if (c.backend == backend_kind::cuda)
      throw usage_error("--backend cuda needs a usable CUDA device and this host has none (" + why
                        + ")");
    std::printf("backend: auto chose cpu (%s)\n", why.c_str());
    c.backend = backend_kind::cpu;
    return;
  }
  for (int id : c.gpus)
    if (id >= devices)
      throw usage_error("--gpus names device " + std::to_string(id) + " but this host has "
                        + std::to_string(devices));
  c.backend = backend_kind::cuda;
  std::printf("backend: cuda on %d device(s)\n", devices);
}

} // namespace

struct simulation_run::impl {
  simulation_options sim;
  export_request exporting;
  std::shared_ptr<const dataset> test;
};

simulation_run::simulation_run(const training_flags& flags) : impl_(std::make_unique<impl>()) {
  auto plan = plan_training(flags);
  if (plan.data.what == data_source::kind::fashion_mnist
      && !std::filesystem::is_directory(plan.data.dir))
    throw usage_error("--data-dir " + plan.data.dir
                      + " is not a directory (install Debian's dataset-fashion-mnist: "
                        "scripts/setup.sh)");
  resolve_backend_here(plan.chief);
  impl_->exporting = plan_export(plan, "simulate");
  auto& sim = impl_->sim;
  sim.chief = std::move(plan.chief);
  sim.scheduler_threads = plan.scheduler_threads;
  sim.prometheus_port = plan.prometheus_port;
  sim.chief.train = plan.train_split ? plan.train_split : load_split(plan.data, true);
  sim.chief.test = load_split(plan.data, false);
  sim.chief.source = plan.data;
  impl_->test = sim.chief.test;
}

simulation_run::~simulation_run() = default;
simulation_run::simulation_run(simulation_run&&) noexcept = default;
simulation_run& simulation_run::operator=(simulation_run&&) noexcept = default;

bool simulation_run::follows() const { return impl_->sim.chief.source.follow; }

caf::expected<run_summary> simulation_run::run(const std::function<void(stop_call)>& started) {
  return simulate(std::move(impl_->sim), started);
}

int simulation_run::finish(const run_summary& summary) {
  if (int status = print_summary(summary)) return status;
  return export_run(impl_->exporting, summary, impl_->test);
}

} // namespace actorps
