// actorps — an actor-model parameter-server runtime. Entry point: dispatches the subcommand.
#include "apps/cluster_commands.hpp"
#include "apps/evaluate_command.hpp"
#include "apps/export_command.hpp"
#include "apps/gen_data_command.hpp"
#include "apps/predict_command.hpp"
#include "apps/scale_command.hpp"
#include "apps/simulate_command.hpp"
#include "actors/ps/blas.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

const char* usage = R"(usage: actorps <command> [flags]

commands:
  simulate    run a whole parameter-server cluster (shards, workers, chief, evaluator)
              inside this process and train an MLP; `actorps simulate --help` lists its flags
  run         one task of a distributed run, the role its task names: one command for every
              replica (the cluster: --cluster FILE --task TYPE:INDEX, or the TF_CONFIG variable
              as Kubeflow's TFJob sets it); the chief takes the training flags
  chief       the chief of a distributed run (as `run` for a chief task)
  ps          a parameter-shard task
  worker      a worker task
  evaluator   the evaluator task
  scale       grow or shrink the shards of a running distributed job (spare ps tasks join it)
  predict     classify images with a model exported by --export-dir (one JSON line each)
  evaluate    an exported model's accuracy, loss and confusion matrix on a test split
  export      export a saved checkpoint as a model directory, as --export-dir does after a run
  gen-data    write a seeded sparse binary problem as libsvm files (`gen-data libsvm --help`)
  version     print the version and the OpenBLAS kernels this CPU runs

Examples:
  actorps simulate --ps 2 --workers 2 --mode ssp --staleness 2 --epochs 5 --metrics run.jsonl
  scripts/launch_local.sh --ps 2 --workers 2 -- --epochs 5     (one process per task, loopback)
  TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 0}}' actorps run --epochs 5
  actorps simulate --export-dir export && actorps predict --model export/1 --input images.idx
  actorps gen-data libsvm --out data --rows 1000000 --features 1000000 --gzip
)";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(usage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  auto command = args[0];
  args.erase(args.begin());
  // Before any GEMM (blas.hpp); not for the commands that run none (a ps task, gen-data).
  if (command != "ps" && command != "gen-data" && command != "scale")
    actorps::rerun_with_better_blas_core(argv);
  actorps::stop_blas_thread_pool();  // unused, and it spins at first (blas.hpp)
  if (command == "simulate") return actorps::simulate_command(args);
  if (command == "run" || command == "chief" || command == "ps" || command == "worker"
      || command == "evaluator")
    return actorps::cluster_command(command, args);
  if (command == "scale") return actorps::scale_command(args);
  if (command == "predict") return actorps::predict_command(args);
  if (command == "evaluate") return actorps::evaluate_command(args);
  if (command == "export") return actorps::export_command(args);
  if (command == "gen-data") return actorps::gen_data_command(args);
  if (command == "version" || command == "--version") {
    std::printf("actorps %s\nOpenBLAS kernels: %s\n", ACTORPS_VERSION,
                actorps::blas_core_in_use().c_str());
    return 0;
  }
  std::fprintf(stderr, "actorps: unknown command '%s'\n\n%s", command.c_str(), usage);
  return 2;
}
