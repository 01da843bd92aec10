// Files a user names or a peer leaves on disk are read only when they are regular files, and
// only as much as they may hold: a FIFO given as a dataset, cluster or checkpoint file is
// refused at once (it would block the reader until someone writes to it), /dev/zero as the
// cluster file too (it never ends), and a checkpoint manifest that lists a 2 GiB file is
// refused before 2 GiB are taken for it. Each refusal names the file.
#include "actors/data/criteo_reader.hpp"
#include "actors/data/csv_dataset.hpp"
#include "actors/ps/dataset.hpp"
#include "actors/data/libsvm_reader.hpp"
#include "actors/deploy/cluster_spec.hpp"
#include "actors/tls/tls_files.hpp"
#include "actors/storage/checkpoint_signing.hpp"
#include "actors/storage/checkpoint_store.hpp"
#include "tests/command_runner.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

extern char** environ;

using namespace actorps;
using actorps::test::contains;
using actorps::test::run_command;
using actorps::test::scratch_dir;
namespace fs = std::filesystem;

namespace {

/// A FIFO at `path`, for a reader to be handed instead of a file.
std::string make_fifo(const std::string& path) {
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

/// What `read` throws (its what()), run on a thread of its own so that a reader blocked on the
/// FIFO `fifo` fails the test after 10 s instead of hanging it: the FIFO is then opened for
/// writing and closed, which hands the blocked reader an end of file.
std::string refusal_within_10s(const std::string& fifo, std::function<void()> read) {
  auto done = std::async(std::launch::async, [read]() -> std::string {
    try {
      read();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(nothing thrown)";
  });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    for (int i = 0; i < 100 && done.wait_for(std::chrono::milliseconds(50))
                                   != std::future_status::ready; ++i) {
      int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // the reader is waiting in open()
      if (fd >= 0) ::close(fd);
    }
    FAIL_CHECK("the reader blocked on the FIFO " << fifo << " for 10 s");
  }
  return done.get();
}

struct peak {
  int status = -1;
  long max_rss_kib = 0;
};

/// Runs the actorps binary with `args` (no shell) and returns its exit status and its own peak
/// resident memory (wait4's rusage of that process alone).
peak run_measured(const std::vector<std::string>& args) {
  std::vector<std::string> all{ACTORPS_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  peak out;
  if (posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ) != 0) return out;
  posix_spawn_file_actions_destroy(&quiet);
  int raw = 0;
  struct rusage usage {};
  if (::wait4(pid, &raw, 0, &usage) != pid) return out;
  out.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  out.max_rss_kib = usage.ru_maxrss;
  return out;
}

} // namespace

TEST_CASE("a FIFO, a directory or a device as a dataset file is refused at once, naming it") {
  scratch_dir dir("actorps_input_files");
  const auto fifo = make_fifo(dir.path + "/train.csv");
  const std::string refusal = fifo + ": a FIFO, not a regular file";
  CHECK(refusal_within_10s(fifo, [&] { load_csv(fifo); }) == refusal);
  CHECK(refusal_within_10s(fifo, [&] { libsvm_reader r(fifo); }) == refusal);
  CHECK(refusal_within_10s(fifo, [&] { criteo_reader r(fifo); }) == refusal);
  CHECK(refusal_within_10s(fifo, [&] { load_idx_images(fifo); }) == refusal);
  // Fashion-MNIST's directory, its training images a FIFO under the name tried first (.gz)
  const auto images = make_fifo(dir.path + "/train-images-idx3-ubyte.gz");
  CHECK(refusal_within_10s(images, [&] { load_fashion_mnist(dir.path, true); })
        == images + ": a FIFO, not a regular file");

  fs::create_directory(dir.path + "/folder.csv");
  CHECK_THROWS_WITH_AS(load_csv(dir.path + "/folder.csv"),
                       (dir.path + "/folder.csv: a directory, not a regular file").c_str(),
                       dataset_error);
  CHECK_THROWS_WITH_AS(libsvm_reader("/dev/zero"),
                       "/dev/zero: a character device, not a regular file", dataset_error);
}

TEST_CASE("--cluster naming a FIFO or /dev/zero is refused at once with exit 2") {
  scratch_dir dir("actorps_input_files");
  const auto fifo = make_fifo(dir.path + "/cluster.json");
  // 20 s for what takes milliseconds; the address space bounded, so that a reader that does
  // not refuse /dev/zero fails with bad_alloc rather than take the machine's memory
  auto task = [](const std::string& file) {
    return run_command("sh -c 'ulimit -v 4000000; exec " + std::string(ACTORPS_BINARY)
                       + " ps --insecure --cluster " + file + " --task ps:0'", 20);
  };
  auto r = task(fifo);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, "--cluster " + fifo + ": a FIFO, not a regular file"));
  r = task("/dev/zero");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, "--cluster /dev/zero: a character device, not a regular file"));
  CHECK_THROWS_WITH_AS(read_tf_config_file(dir.path),
                       doctest::Contains((dir.path + ": a directory, not a regular file").c_str()),
                       cluster_error);
}

TEST_CASE("a FIFO as a TLS file is refused at once, naming the flag") {
  scratch_dir dir("actorps_input_files");
  const auto fifo = make_fifo(dir.path + "/task.pem");
  std::string why;
  CHECK(refusal_within_10s(fifo, [&] { why = check_tls_files({fifo, fifo, fifo}); })
        == "(nothing thrown)");
  CHECK(why == "--tls-cert " + fifo + ": cannot read it (a FIFO, not a regular file)");
}

TEST_CASE("a cluster file larger than any cluster spec is refused unread") {
  scratch_dir dir("actorps_input_files");
  const auto big = dir.path + "/cluster.json";
  { std::ofstream create(big); }
  fs::resize_file(big, max_cluster_file_bytes + 1);
  CHECK_THROWS_WITH_AS(read_tf_config_file(big),
                       doctest::Contains("1048577 bytes, more than the 1048576"), cluster_error);
}

TEST_CASE("a checkpoint file, manifest or key that is a FIFO is refused at once, naming it") {
  scratch_dir dir("actorps_input_files");
  const auto ckpt = fs::path(dir.path) / "ckpt-000000000010";
  fs::create_directories(ckpt);
  const auto manifest = make_fifo((ckpt / manifest_name).string());
  CHECK(refusal_within_10s(manifest, [&] { load_checkpoint(ckpt); })
        == manifest + ": a FIFO, not a regular file");
  fs::remove(manifest);
  std::ofstream(manifest) << nlohmann::json{
    {"format", "actorps-checkpoint"},
    {"version", 1},
    {"clock", 10},
    {"files", {{{"name", "run.capnp"}, {"bytes", 8}, {"crc32", "00000000"}}}}}.dump();
  const auto run = make_fifo((ckpt / run_file_name).string());
  CHECK(refusal_within_10s(run, [&] { load_checkpoint(ckpt); })
        == run + ": a FIFO, not a regular file");
  const auto key = make_fifo(dir.path + "/cluster.key");
  CHECK(refusal_within_10s(key, [&] { read_checkpoint_key(key); })
        == key + ": a FIFO, not a regular file");
}

TEST_CASE("a manifest listing a 2 GiB file is refused without taking 2 GiB") {
  scratch_dir dir("actorps_input_files");
  const std::string root = dir.path + "/ckpt";
  auto trained = run_command(std::string(ACTORPS_BINARY)
                             + " simulate --dataset synthetic --model 784-32-10 --steps 20 "
                               "--eval-every 0 --no-progress --checkpoint-dir " + root);
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  const auto ckpt = fs::path(root) / "ckpt-000000000020";
  // shard 0's file grown to 2 GiB (sparse: no disk, no memory) and the manifest saying so, its
  // CRC left as it was: what a corrupt or hostile checkpoint directory may hold
  const uint64_t two_gib = uint64_t(1) << 31;
  fs::resize_file(ckpt / shard_file_name(0), two_gib);
  nlohmann::json m;
  std::ifstream(ckpt / manifest_name) >> m;
  for (auto& f : m["files"])
    if (f["name"] == shard_file_name(0)) f["bytes"] = two_gib;
  std::ofstream(ckpt / manifest_name) << m.dump(2);

  auto got = run_measured({"export", "--checkpoint", ckpt.string(), "--export-dir",
                           dir.path + "/out", "--dataset", "synthetic"});
  CHECK(got.status == 2);
  MESSAGE("peak resident memory of the refusing export: " << got.max_rss_kib / 1024 << " MiB");
  CHECK(got.max_rss_kib > 0);
  CHECK(got.max_rss_kib < 512 * 1024);  // far below the 2 GiB the manifest asks for
  CHECK_THROWS_WITH_AS(load_checkpoint(ckpt),
                       doctest::Contains("shard-0.capnp: checksum"), checkpoint_error);
  CHECK_FALSE(fs::exists(dir.path + "/out/1"));
}
