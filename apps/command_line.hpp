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

/// Parses `args` against `desc` into a variables map (not yet notified), refusing what
/// Boost.Program_options would otherwise pass in silence: a stray argument (every command takes
/// flags only, so `simulate foo` and anything after `--` is a mistake, not ignored), and a flag
/// given as the value of the one before (`--export-dir --steps 3` would export to
/// "./--steps"); `--export-dir=--odd` still sets such a value on purpose.
inline boost::program_options::variables_map
parse_flags(const std::vector<std::string>& args,
            const boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  auto parsed = po::command_line_parser(args).options(desc).run();
  for (const auto& option : parsed.options) {
    if (option.string_key.empty()) {  // a positional token: no flag names it
      const auto& token = option.original_tokens.empty() ? std::string()
                                                          : option.original_tokens.front();
      throw po::error("unexpected argument '" + token
                      + "': this command takes only flags (--name VALUE), and nothing after "
                        "'--'");
    }
    if (option.original_tokens.size() == 2 && option.value.size() == 1) {
      const auto& value = option.value.front();
      if (value.size() > 2 && value.compare(0, 2, "--") == 0
          && desc.find_nothrow(value.substr(2, value.find('=') - 2), true))
        throw po::error("--" + option.string_key + " needs a value, but the next argument is the "
                        "flag " + value + " (write --" + option.string_key + "=" + value
                        + " if that is really the value)");
    }
  }
  po::variables_map vm;
  po::store(parsed, vm);
  return vm;
}

/// Parses `args` into the variables bound by `desc`, then returns body() — or 0 after printing
/// `usage` and `desc` for --help, or 2 after printing "actorps <name>: <what>" for any
/// exception (bad usage and bad input alike).
template <class Body>
int run_command_line(const std::string& name, const std::vector<std::string>& args,
                     const boost::program_options::options_description& desc,
                     const std::string& usage, Body&& body) {
  namespace po = boost::program_options;
  try {
    auto vm = parse_flags(args, desc);
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
