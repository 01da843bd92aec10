#include "apps/simulate_command.hpp"

#include "actors/protocol/errors.hpp"
#include "actors/protocol/log.hpp"
#include "actors/deploy/simulation.hpp"
#include "apps/command_line.hpp"
#include "apps/export_plan.hpp"
#include "apps/stop_signals.hpp"
#include "apps/training_flags.hpp"
#include "actors/data/load_split.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

namespace po = boost::program_options;

namespace actorps {

namespace {

po::options_description simulate_options(training_flags& flags) {
  po::options_description desc("actorps simulate flags");
  desc.add_options()("help,h", "print this help");
  add_training_options(desc, flags);
  add_fault_options(desc, flags);
  add_stream_options(desc, flags);
  return desc;
}

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

std::string simulate_help() {
  training_flags flags;
  std::ostringstream out;
  out << "usage: actorps simulate [flags]\n\n" << simulate_options(flags);
  return out.str();
}

int simulate_command(const std::vector<std::string>& args) {
  training_flags flags;
  auto desc = simulate_options(flags);
  simulation_options sim;
  export_request exporting;
  try {
    auto vm = parse_flags(args, desc);
    if (vm.count("help")) {
      std::fputs(simulate_help().c_str(), stdout);
      return 0;
    }
    po::notify(vm);
    note_given_flags(vm, flags);
    auto plan = plan_training(flags);
    if (plan.data.what == data_source::kind::fashion_mnist
        && !std::filesystem::is_directory(plan.data.dir))
      throw usage_error("--data-dir " + plan.data.dir
                        + " is not a directory (install Debian's dataset-fashion-mnist: "
                          "scripts/setup.sh)");
    resolve_backend_here(plan.chief);
    exporting = plan_export(plan, "simulate");
    sim.chief = std::move(plan.chief);
    sim.scheduler_threads = plan.scheduler_threads;
    sim.prometheus_port = plan.prometheus_port;
    sim.chief.train = plan.train_split ? plan.train_split : load_split(plan.data, true);
    sim.chief.test = load_split(plan.data, false);
    sim.chief.source = plan.data;
  } catch (const po::error& e) {
    std::fprintf(stderr, "actorps simulate: %s\n(see actorps simulate --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // usage_error, dataset_error
    std::fprintf(stderr, "actorps simulate: %s\n", e.what());
    return 2;
  }
  auto test = sim.chief.test;
  // Following a stream, SIGTERM or SIGINT ends it as its stop file does (chief/follow.cpp); a
  // second one stops the run at once.
  std::optional<stop_signals> signals;
  if (sim.chief.source.follow) signals.emplace();
  auto result = simulate(std::move(sim), [&](std::function<void(const std::string&)> stop) {
    if (!signals) return;
    signals->on_signal([stop](int signal, int count) {
      log_line("simulate", std::string(stop_signals::name(signal))
                             + (count > 1 ? " again" : " received") + ": stopping the run");
      stop(stop_signals::name(signal));
    });
  });
  if (signals) signals->on_signal(nullptr);
  if (!result) {
    std::fprintf(stderr, "actorps simulate: the run failed: %s\n", describe(result.error()).c_str());
    return 1;
  }
  if (int status = print_summary(*result)) return status;
  return export_run(exporting, *result, test);
}

} // namespace actorps
