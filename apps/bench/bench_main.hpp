// The frame of a benchmark program's main: flags parsed by Boost.Program_options, --help prints
// them, a bad flag is one line naming it and exit 2, a failed run one line and exit 1.
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

namespace actorps {

/// Parses argv into the variables bound by `desc` (which must offer --help), then returns
/// check() (throws po::error for values out of range) followed by run().
template <class Check, class Run>
int run_benchmark(const char* name, int argc, char** argv,
                  const boost::program_options::options_description& desc, Check check, Run run) {
  namespace po = boost::program_options;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::printf("usage: %s [flags]\n\n", name);
      desc.print(std::cout);
      return 0;
    }
    po::notify(vm);
    check();
    return run();
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

} // namespace actorps
