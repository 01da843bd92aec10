// An exported model is served only as it was exported: metadata.json records model.capnp's
// SHA-256 and `actorps predict` / `actorps evaluate` refuse a model.capnp with 64 bytes flipped
// (which still decodes: the bytes are weights), a model whose weights were set to 3e38 (the
// checksum rewritten to match: a value bound, as checkpoints have, refuses it), an export that
// records no checksum, and a FIFO in place of any file they read — with exit 2 and the file.
#include "actors/protocol/digest.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/served_model.hpp"

#include "tests/command_runner.hpp"
#include "tests/model_bytes_edit.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace actorps {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::contains;
using test::run_actorps;

const std::string synthetic = "--dataset synthetic --synthetic-test-rows 512";

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// One exported model, and copies of its version directory to damage.
struct exported_run {
  test::scratch_dir scratch{"actorps_export_integrity"};
  std::string version = scratch.path + "/export/1";
  std::string input = scratch.path + "/one.f32";
  exported_run() {
    auto r = run_actorps("simulate " + synthetic + " --model 784-32-10 --steps 40 "
                         "--synthetic-rows 2048 --eval-every 0 --no-progress --export-dir "
                         + scratch.path + "/export");
    REQUIRE_MESSAGE(r.status == 0, r.output);
    write_bytes(input, std::string(784 * 4, '\0'));
  }
  std::string copy(const std::string& name) const {
    const auto dir = scratch.path + "/" + name;
    fs::copy(version, dir, fs::copy_options::recursive);
    return dir;
  }
  /// Both commands on `dir`, each refusing with exit 2 and a message holding `problem`.
  void both_refuse(const std::string& dir, const std::string& problem,
                   const std::string& flags = "") const {
    for (const auto& cmd : {"predict --model " + dir + " --input " + input + flags,
                            "evaluate --model " + dir + " " + synthetic + flags}) {
      // 20 s for what takes a second: a reader blocked on a FIFO fails instead of hanging
      auto r = test::run_command(std::string(ACTORPS_BINARY) + " " + cmd, 20);
      INFO(cmd);
      INFO(r.output);
      CHECK(r.status == 2);
      CHECK(contains(r.output, problem));
    }
  }
};

/// metadata.json of `dir` recording `bytes` as model.capnp's digest (a consistent rewrite).
void record_sha256(const std::string& dir, const std::string& bytes) {
  json meta;
  std::ifstream(dir + "/metadata.json") >> meta;
  meta["sha256"]["model.capnp"] = sha256_hex(bytes);
  std::ofstream(dir + "/metadata.json") << meta.dump(2);
}

} // namespace

TEST_CASE("an export records model.capnp's SHA-256, and predict serves it as exported") {
  exported_run run;
  json meta;
  std::ifstream(run.version + "/metadata.json") >> meta;
  CHECK(meta["sha256"]["model.capnp"] == sha256_hex(read_file_bytes(run.version + "/model.capnp")));
  CHECK(meta["sha256"]["model.onnx"] == sha256_hex(read_file_bytes(run.version + "/model.onnx")));
  auto r = run_actorps("predict --model " + run.version + " --input " + run.input);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "{\"index\":0,\"class\":"));
}

TEST_CASE("predict and evaluate refuse a model.capnp with 64 bytes flipped, naming it") {
  exported_run run;
  const auto dir = run.copy("flipped");
  auto bytes = read_file_bytes(dir + "/model.capnp");
  for (std::size_t i = 0; i < 64; ++i) bytes[bytes.size() / 2 + i] ^= 0x01;  // weights' low bits
  write_bytes(dir + "/model.capnp", bytes);
  // the flipped bytes still decode: only the checksum tells
  CHECK_NOTHROW(decode_served_model(bytes, "flipped"));
  run.both_refuse(dir, dir + "/model.capnp: SHA-256 " + sha256_hex(bytes) + " differs from ");
  run.both_refuse(dir, "metadata.json's (corrupt, or changed after the export)");
}

TEST_CASE("predict and evaluate refuse weights of 3e38, even with the checksum rewritten") {
  exported_run run;
  const auto dir = run.copy("huge");
  const auto good = read_file_bytes(run.version + "/model.capnp");
  const auto huge = test::edited_model(good, [](auto m) {
    auto values = m.getTensors()[0].getValues();  // dense0/kernel
    const float big = 3e38f;
    std::memcpy(values.begin() + 4 * 100, &big, sizeof big);
  });
  write_bytes(dir + "/model.capnp", huge);
  record_sha256(dir, huge);
  run.both_refuse(dir, dir + "/model.capnp: tensor dense0/kernel value 3e+38 is beyond the bound "
                        "1e+06 (--max-parameter");
  // the bound is the flag's: a model trained with a larger --max-parameter is served with it
  auto r = run_actorps("predict --model " + dir + " --input " + run.input
                       + " --max-parameter 3.4e38");
  INFO(r.output);
  CHECK(r.status == 0);
  run.both_refuse(dir, "--max-parameter must be positive and finite", " --max-parameter -1");
}

TEST_CASE("predict and evaluate refuse an export that records no checksum") {
  exported_run run;
  const auto dir = run.copy("unrecorded");
  json meta;
  std::ifstream(dir + "/metadata.json") >> meta;
  meta.erase("sha256");
  std::ofstream(dir + "/metadata.json") << meta.dump(2);
  run.both_refuse(dir, dir + "/metadata.json: records no SHA-256 of model.capnp");
  fs::remove(dir + "/metadata.json");
  run.both_refuse(dir, dir + "/metadata.json: missing or unreadable (No such file or directory)");
}

TEST_CASE("predict and evaluate refuse a FIFO as model.capnp, metadata.json or input at once") {
  exported_run run;
  for (const char* file : {"model.capnp", "metadata.json"}) {
    const auto dir = run.copy(std::string("fifo-") + file);
    const auto path = dir + "/" + file;
    fs::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    run.both_refuse(dir, path + ": a FIFO, not a regular file");
  }
  const auto fifo = run.scratch.path + "/input.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto r = test::run_command(std::string(ACTORPS_BINARY) + " predict --model " + run.version
                             + " --input " + fifo, 20);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(contains(r.output, fifo + ": a FIFO, not a regular file"));
}

} // namespace actorps
