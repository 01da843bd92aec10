#include "apps/scale_command.hpp"

#include "actors/ps/scale.hpp"
#include "apps/command_line.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace po = boost::program_options;

namespace actorps {

namespace {

const char* scale_intro = R"(usage: actorps scale --chief HOST:PORT [--ps N] [--workers M] [TLS flags | --insecure]

Asks the chief of a running distributed job to go on with N shards and/or M workers, and waits
until it does. The chief makes the change at the next clock it can, which every worker pauses
at: every shard's state at that clock is cut for N shards, and the minibatches no worker has
trained are shared out among M workers (nothing is lost or trained twice). A growth takes in
spare tasks: start ps:P .. ps:N-1 (or worker:W .. worker:M-1) first with a cluster spec that
lists them after the chief's; each joins and waits. A shrink stops ps:N and above once their
state is in hand, worker:M and above once they trained their clocks before the change; they
exit 0.
Exit 0 once done, 2 when refused (the reason printed: no spare task, a resize under way, a bad
N, a certificate other than admin:0 or chief:0), 1 when the chief cannot be reached.

)";

struct scale_flags {
  scale_options options;
  int32_t ps = -1, workers = -1;  // -1: not given
  bool insecure = false;
  double connect_timeout = 60, timeout = 600;
};

po::options_description scale_flag_options(scale_flags& f) {
  po::options_description desc("actorps scale flags");
  desc.add_options()
    ("help,h", "print this help")
    ("chief", po::value(&f.options.chief), "the chief's address, HOST:PORT, as its cluster lists it")
    ("ps", po::value(&f.ps), "the number of shards the run goes on with")
    ("workers", po::value(&f.workers), "the number of workers the run goes on with")
    ("timeout", po::value(&f.timeout)->default_value(f.timeout),
     "seconds to wait for the change to be done")
    ("connect-timeout", po::value(&f.connect_timeout)->default_value(f.connect_timeout),
     "seconds to keep retrying the chief")
    ("tls-cert", po::value(&f.options.tls_cert),
     "PEM certificate whose CN is admin:0 (scripts/make_certs.sh DIR admin:0), signed by --tls-ca")
    ("tls-key", po::value(&f.options.tls_key), "PEM private key of --tls-cert")
    ("tls-ca", po::value(&f.options.tls_ca), "PEM certificate of the cluster's CA")
    ("insecure", po::bool_switch(&f.insecure), "talk to a cluster that runs without TLS");
  return desc;
}

int run_scale(scale_flags& f) {
  const bool tls = !f.options.tls_cert.empty() || !f.options.tls_key.empty()
                   || !f.options.tls_ca.empty();
  if (f.options.chief.empty()) throw po::error("--chief HOST:PORT is required");
  if (f.ps == -1 && f.workers == -1) throw po::error("--ps N, --workers M or both are required");
  for (auto [flag, n] : {std::pair{"--ps", f.ps}, std::pair{"--workers", f.workers}})
    if (n != -1 && n < 1) {
      std::fprintf(stderr, "actorps scale: refused: %s must be 1 or more, got %d\n", flag, n);
      return 2;
    }
  f.options.ps = std::max(f.ps, 0);
  f.options.workers = std::max(f.workers, 0);
  if (f.insecure && tls)
    throw po::error("--insecure with --tls-cert/--tls-key/--tls-ca: give one or the other");
  if (!f.insecure && !tls)
    throw po::error("no TLS certificates: give --tls-cert, --tls-key and --tls-ca, or "
                    "--insecure for a cluster without TLS");
  for (double s : {f.timeout, f.connect_timeout})
    if (!(s > 0 && s <= 7 * 24 * 3600))
      throw po::error("--timeout and --connect-timeout must be positive and at most a week");
  f.options.wait = std::chrono::milliseconds(static_cast<int64_t>(f.timeout * 1000));
  f.options.connect_timeout =
    std::chrono::milliseconds(static_cast<int64_t>(f.connect_timeout * 1000));
  auto outcome = scale_job(f.options);
  int status = 0;
  switch (outcome.status) {
    case scale_status::done:
      std::printf("actorps scale: %s\n", outcome.message.c_str());
      break;
    case scale_status::refused:
      std::fprintf(stderr, "actorps scale: refused: %s\n", outcome.message.c_str());
      status = 2;
      break;
    case scale_status::unreachable:
      std::fprintf(stderr, "actorps scale: %s\n", outcome.message.c_str());
      status = 1;
      break;
  }
  // The actor system scale_job talked through is never destroyed (scale.hpp).
  std::fflush(nullptr);
  std::_Exit(status);
}

} // namespace

int scale_command(const std::vector<std::string>& args) {
  scale_flags f;
  return run_command_line("scale", args, scale_flag_options(f), scale_intro,
                          [&] { return run_scale(f); });
}

} // namespace actorps
