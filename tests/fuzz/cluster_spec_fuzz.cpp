// TF_CONFIG and --cluster files (actors/deploy/cluster_spec.hpp): JSON from the environment or
// a file, written by a launcher, an operator or a person. The first byte picks the reader:
// 0, a whole TF_CONFIG for the runtime's loop; 1, the same for a loop of the user's own; 2,
// only TF_CONFIG's "task"; 3, the text of --task. Whatever it is given, a reader returns a spec
// whose every task has an address, or throws cluster_error; anything else is a finding.
#include "actors/deploy/cluster_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstdlib>

namespace actorps {
namespace {

/// Every task the spec lists answers address() with the address it was given.
void check_addresses(const cluster_spec& spec) {
  for (const auto& [type, list] : spec.jobs)
    for (int i = 0; i < static_cast<int>(list.size()); ++i)
      if (spec.address({type, i}).text() != list[i].text()) std::abort();
}

} // namespace
} // namespace actorps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace actorps;
  fuzz::selected in;
  if (!fuzz::select(data, size, 4, in)) return 0;
  const std::string text(in.text());
  try {
    switch (in.choice) {
      case 0:
      case 1: {
        auto owner = in.choice == 0 ? loop_owner::runtime : loop_owner::user;
        auto cfg = parse_tf_config(text, "TF_CONFIG", owner);
        check_addresses(cfg.cluster);
        if (cfg.task && owner == loop_owner::runtime) (void)cfg.cluster.own_address(*cfg.task);
        break;
      }
      case 2: (void)parse_tf_config_task(text, "TF_CONFIG"); break;
      case 3: (void)parse_task(text); break;
    }
  } catch (const cluster_error&) {
    // refused with a reason: what a malformed spec must get
  }
  return 0;
}
