// The frame of a command whose flags Boost.Program_options parses: --help prints the usage and
// the flags; a bad flag or bad input (any exception) becomes one line naming it and exit 2.
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace actorps {

/// Parses `args` into the variables bound by `desc`, then returns body() — or 0 after printing
/// `usage` and `desc` for --help, or 2 after printing "actorps <name>: <what>" for any
/// exception (bad usage and bad input alike).
template <class Body>
int run_command_line(const std::string& name, const std::vector<std::string>& args,
                     const boost::program_options::options_description& desc,
                     const std::string& usage, Body&& body) {
  namespace po = boost::program_options;
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      std::ostringstream out;
      out << usage << desc;
      std::fputs(out.str().c_str(), stdout);
      return 0;
    }
    po::notify(vm);
    return body();
  } catch (const po::error& e) {
    std::fprintf(stderr, "actorps %s: %s\n(see actorps %s --help)\n", name.c_str(), e.what(),
                 name.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorps %s: %s\n", name.c_str(), e.what());
    return 2;
  }
}

} // namespace actorps
