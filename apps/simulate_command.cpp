#include "apps/simulate_command.hpp"

#include "actors/ps/log_level.hpp"
#include "actors/ps/simulation_run.hpp"
#include "apps/command_line.hpp"
#include "apps/stop_signals.hpp"
#include "apps/training_flags.hpp"

#include <cstdio>
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
  std::optional<simulation_run> run;
  try {
    auto vm = parse_flags(args, desc);
    if (vm.count("help")) {
      std::fputs(simulate_help().c_str(), stdout);
      return 0;
    }
    po::notify(vm);
    note_given_flags(vm, flags);
    run.emplace(flags);
  } catch (const po::error& e) {
    std::fprintf(stderr, "actorps simulate: %s\n(see actorps simulate --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // usage_error, dataset_error
    std::fprintf(stderr, "actorps simulate: %s\n", e.what());
    return 2;
  }
  // Following a stream, SIGTERM or SIGINT ends it as its stop file does (chief/follow.cpp); a
  // second one stops the run at once.
  std::optional<stop_signals> signals;
  if (run->follows()) signals.emplace();
  auto result = run->run([&](stop_call stop) {
    if (!signals) return;
    signals->on_signal([stop](int signal, int count) {
      log_info("simulate", std::string(stop_signals::name(signal))
                             + (count > 1 ? " again" : " received") + ": stopping the run");
      stop(stop_signals::name(signal));
    });
  });
  if (signals) signals->on_signal(nullptr);
  if (!result) {
    std::fprintf(stderr, "actorps simulate: the run failed: %s\n", describe(result.error()).c_str());
    return 1;
  }
  return run->finish(*result);
}

} // namespace actorps
