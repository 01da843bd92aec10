// `--export-dir`, `actorps predict` and `actorps evaluate` as a user meets them: versions that
// never overwrite, numbers that agree with metadata.json, and bad input refused with exit 2,
// a message naming the file, and nothing half-written left behind.
#include "actors/ps/data_source.hpp"
#include "actors/protocol/digest.hpp"
#include "actors/serving/file_bytes.hpp"
#include "actors/data/load_split.hpp"

#include "tests/command_runner.hpp"
#include "tests/model_bytes_edit.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace actorps {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::run_actorps;

// A short synthetic run; its test split is rebuilt by `evaluate --dataset synthetic` from the
// same flags (seed 1 is the default of both).
const std::string synthetic = "--dataset synthetic --synthetic-test-rows 512";
const std::string quick_run = "simulate " + synthetic + " --model 784-32-10 --steps 40 "
                              "--synthetic-rows 2048 --eval-every 0 --no-progress";

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The synthetic test split of quick_run, as raw float32 rows.
dataset synthetic_test_split() {
  data_source src;
  src.what = data_source::kind::synthetic;
  src.test_rows = 512;
  src.seed = 1;
  src.cols = 784;
  return *load_split(src, false);
}

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

/// One exported model in a scratch directory, shared by the tests that only read it.
struct exported_run {
  test::scratch_dir scratch{"actorps_export_cli"};
  std::string root = scratch.path + "/export";
  std::string version = root + "/1";
  exported_run() {
    auto r = run_actorps(quick_run + " --export-dir " + root);
    REQUIRE_MESSAGE(r.status == 0, r.output);
  }
};

void check_refused(const test::command_result& r, const std::string& file,
                   const std::string& problem) {
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.output.find(file) != std::string::npos);
  CHECK(r.output.find(problem) != std::string::npos);
}

} // namespace

TEST_CASE("--export-dir: a run exports 1/, the next 2/, and 1/ keeps every byte") {
  test::scratch_dir scratch("actorps_export_cli");
  const std::string root = scratch.path + "/export";
  auto first = run_actorps(quick_run + " --export-dir " + root);
  REQUIRE_MESSAGE(first.status == 0, first.output);
  CHECK(first.output.find("exported to " + root + "/1 (model.capnp ") != std::string::npos);
  const auto before = test::dir_contents(root + "/1");
  CHECK(before.size() == 3);
  CHECK(before.count("metadata.json") + before.count("model.capnp") + before.count("model.onnx")
        == 3);

  auto second = run_actorps(quick_run + " --seed 2 --export-dir " + root);
  REQUIRE_MESSAGE(second.status == 0, second.output);
  CHECK(second.output.find("exported to " + root + "/2 ") != std::string::npos);
  CHECK(test::dir_entries(root) == std::set<std::string>{"1", "2"});  // no temporary left
  CHECK(test::dir_contents(root + "/1") == before);
  CHECK(read_file_bytes(root + "/2/model.capnp") != before.at("model.capnp"));
}

TEST_CASE("evaluate reproduces metadata.json's test accuracy and loss, and predict agrees") {
  exported_run run;
  const auto meta = json::parse(read_file_bytes(run.version + "/metadata.json"));
  const double accuracy = meta["test_accuracy"], loss = meta["test_loss"];
  CHECK(accuracy > 0.5);  // a trained model, not chance
  CHECK(meta["training"]["clocks"] == 40);
  CHECK(meta["training"]["samples"] == 2 * 40 * 64);
  CHECK(meta["training"]["source"] == "simulate");

  auto evaluated = run_actorps("evaluate --model " + run.version + " " + synthetic + " --json");
  REQUIRE_MESSAGE(evaluated.status == 0, evaluated.output);
  const auto e = json::parse(evaluated.output);
  CHECK(std::abs(e["accuracy"].get<double>() - accuracy) <= 1e-6);
  CHECK(std::abs(e["loss"].get<double>() - loss) <= 1e-6);
  CHECK(e["rows"] == 512);
  int64_t total = 0, diagonal = 0;
  for (int t = 0; t < 10; ++t)
    for (int p = 0; p < 10; ++p) {
      total += e["confusion"][t][p].get<int64_t>();
      if (t == p) diagonal += e["confusion"][t][p].get<int64_t>();
    }
  CHECK(total == 512);
  CHECK(diagonal == e["correct"]);

  auto table = run_actorps("evaluate --model " + run.version + " " + synthetic);
  REQUIRE(table.status == 0);
  CHECK(table.output.find("confusion matrix (rows: true class, columns: predicted class)")
        != std::string::npos);

  // predict on the same rows, given as raw float32: its classes score the same accuracy.
  const auto split = synthetic_test_split();
  const std::string raw = run.scratch.path + "/test.f32";
  write_bytes(raw, std::string(reinterpret_cast<const char*>(split.x.data()), split.x.size() * 4));
  auto predicted = run_actorps("predict --model " + run.version + " --input " + raw);
  REQUIRE_MESSAGE(predicted.status == 0, predicted.output.substr(0, 2000));
  const auto lines = json_lines(predicted.output);
  REQUIRE(lines.size() == 512);
  int correct = 0;
  for (int i = 0; i < 512; ++i) {
    CHECK(lines[i]["index"] == i);
    REQUIRE(lines[i]["probabilities"].size() == 10);
    double sum = 0;
    for (double p : lines[i]["probabilities"]) sum += p;
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    correct += lines[i]["class"] == split.y[i] ? 1 : 0;
  }
  CHECK(correct == e["correct"]);
}

TEST_CASE("predict --top K: the K most probable classes, best first, from an IDX file too") {
  exported_run run;
  const auto split = synthetic_test_split();
  const std::string raw = run.scratch.path + "/three.f32";
  write_bytes(raw, std::string(reinterpret_cast<const char*>(split.x.data()), 3 * 784 * 4));
  auto all = run_actorps("predict --model " + run.version + " --input " + raw);
  auto top = run_actorps("predict --model " + run.version + " --input " + raw + " --top 3");
  REQUIRE_MESSAGE(top.status == 0, top.output);
  const auto full = json_lines(all.output), best = json_lines(top.output);
  REQUIRE(best.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    REQUIRE(best[i]["top"].size() == 3);
    CHECK(best[i]["top"][0]["class"] == best[i]["class"]);
    CHECK(best[i]["class"] == full[i]["class"]);
    std::vector<double> sorted = full[i]["probabilities"];
    std::sort(sorted.rbegin(), sorted.rend());
    for (int k = 0; k < 3; ++k) {
      const int c = best[i]["top"][k]["class"];
      CHECK(best[i]["top"][k]["probability"] == full[i]["probabilities"][c]);
      CHECK(best[i]["top"][k]["probability"].get<double>() == sorted[k]);
    }
  }
  // An IDX image file (28×28 uint8, here 2 images): read and scaled like the training data.
  std::string idx("\0\0\x08\x03\0\0\0\x02\0\0\0\x1c\0\0\0\x1c", 16);
  idx += std::string(2 * 784, '\x10');
  write_bytes(run.scratch.path + "/two.idx", idx);
  auto from_idx = run_actorps("predict --model " + run.version + " --input "
                              + run.scratch.path + "/two.idx --top 1");
  REQUIRE_MESSAGE(from_idx.status == 0, from_idx.output);
  CHECK(json_lines(from_idx.output).size() == 2);
}

TEST_CASE("--export-dir that cannot be written is refused with exit 2 before training") {
  test::scratch_dir scratch("actorps_export_cli");
  REQUIRE(chmod(scratch.path.c_str(), 0755) == 0);
  const std::string locked = scratch.path + "/locked";
  REQUIRE(mkdir(locked.c_str(), 0555) == 0);
  // root writes anywhere: run as nobody then, for whom 0555 means read-only, from a copy of
  // the binary that nobody can reach (the build tree may sit below a private directory).
  std::string binary = ACTORPS_BINARY;
  if (geteuid() == 0) {
    fs::copy_file(binary, scratch.path + "/actorps");
    binary = "setpriv --reuid=65534 --regid=65534 --clear-groups " + scratch.path + "/actorps";
  }
  for (const std::string& dir : {locked, locked + "/sub"}) {
    CAPTURE(dir);
    auto r = test::run_command(binary + " " + quick_run + " --export-dir " + dir);
    check_refused(r, "--export-dir cannot be written: " + dir, "Permission denied");
    CHECK(r.output.find("summary:") == std::string::npos);  // refused before the run
  }
  CHECK(fs::is_empty(locked));
  const std::string file = scratch.path + "/file";
  write_bytes(file, "x");
  check_refused(run_actorps(quick_run + " --export-dir " + file), file, "Not a directory");
}

TEST_CASE("predict and evaluate refuse a missing or damaged model, naming the file") {
  exported_run run;
  const std::string input = run.scratch.path + "/one.f32";
  write_bytes(input, std::string(784 * 4, '\0'));
  const auto good = read_file_bytes(run.version + "/model.capnp");
  // each with a metadata.json that records its bytes: what the decoder refuses behind the
  // checksum (export_integrity_test.cpp: what the checksum refuses)
  auto damaged = [&](const std::string& name, const std::string& bytes) {
    const std::string dir = run.scratch.path + "/" + name;
    fs::create_directory(dir);
    write_bytes(dir + "/model.capnp", bytes);
    write_bytes(dir + "/metadata.json",
                json{{"sha256", {{"model.capnp", sha256_hex(bytes)}}}}.dump());
    return dir;
  };
  auto both = [&](const std::string& dir, const std::string& file, const std::string& problem) {
    check_refused(run_actorps("predict --model " + dir + " --input " + input), file, problem);
    check_refused(run_actorps("evaluate --model " + dir + " " + synthetic), file, problem);
  };
  fs::create_directory(run.scratch.path + "/empty");
  both(run.scratch.path + "/empty", run.scratch.path + "/empty/model.capnp", "missing");
  both(run.scratch.path + "/absent", run.scratch.path + "/absent", "not a directory");
  // an export directory serves its newest version (export_chain_test.sh: its newest chain)
  const auto of_root = run_actorps("predict --model " + run.root + " --input " + input);
  CHECK(of_root.status == 0);
  CHECK(of_root.output == run_actorps("predict --model " + run.version + " --input " + input).output);
  const auto cut = damaged("cut", good.substr(0, good.size() / 2));
  both(cut, cut + "/model.capnp", "truncated");
  const auto garbage = damaged("garbage", std::string(1000, '\x7f'));
  both(garbage, garbage + "/model.capnp", "not");
  const auto mismatch = damaged("mismatch", test::edited_model(good, [](auto m) {
    m.getLayers().set(1, 33);
  }));
  both(mismatch, mismatch + "/model.capnp",
       "tensor dense0/kernel has shape [784, 32] but the spec (layers 784-33-10) needs [784, 33]");
}

TEST_CASE("predict refuses input of the wrong size or format, and bad flags, with exit 2") {
  exported_run run;
  const std::string dir = run.scratch.path;
  write_bytes(dir + "/odd.f32", std::string(784 * 4 + 6, '\0'));
  write_bytes(dir + "/nan.f32", std::string(784 * 4, '\xff'));
  std::string labels("\0\0\x08\x01\0\0\0\x01\x05", 9);
  write_bytes(dir + "/labels.idx", labels);
  write_bytes(dir + "/empty.f32", "");
  auto predict = [&](const std::string& args) {
    return run_actorps("predict --model " + run.version + " " + args);
  };
  check_refused(predict("--input " + dir + "/odd.f32"), dir + "/odd.f32",
                "3142 bytes is not a whole number of rows of 784 float32 values");
  check_refused(predict("--input " + dir + "/nan.f32"), dir + "/nan.f32", "NaN");
  check_refused(predict("--input " + dir + "/labels.idx"), dir + "/labels.idx",
                "bad magic 0x00000801, expected 0x00000803");
  check_refused(predict("--input " + dir + "/labels.idx --format raw"), dir + "/labels.idx",
                "not a whole number of rows");
  check_refused(predict("--input " + dir + "/empty.f32"), dir + "/empty.f32", "empty");
  check_refused(predict("--input " + dir + "/none.f32"), dir + "/none.f32", "missing");
  check_refused(predict("--input " + dir + "/odd.f32 --top 11"), "--top", "(got 11)");
  check_refused(predict("--input " + dir + "/odd.f32 --format csv"), "--format", "csv");
  check_refused(run_actorps("predict --input " + dir + "/odd.f32"), "--model", "required");
  check_refused(predict(""), "--input", "required");
  check_refused(run_actorps("evaluate --model " + run.version + " --dataset imagenet"), "--dataset",
                "imagenet");
  check_refused(run_actorps("evaluate --model " + run.version + " --data-dir " + dir),
                dir + "/t10k-images-idx3-ubyte.gz", "missing");
}

TEST_CASE("help documents predict, evaluate and --export-dir") {
  auto predict = run_actorps("predict --help");
  CHECK(predict.status == 0);
  for (const char* text :
       {"--model", "--input", "--top", "--format", "\"probabilities\"", "\"top\""})
    CHECK_MESSAGE(predict.output.find(text) != std::string::npos, text);
  auto evaluate = run_actorps("evaluate --help");
  CHECK(evaluate.status == 0);
  for (const char* text : {"--model", "--dataset", "--json", "--synthetic-test-rows arg (=2048)"})
    CHECK_MESSAGE(evaluate.output.find(text) != std::string::npos, text);
  CHECK(run_actorps("simulate --help").output.find("--export-dir") != std::string::npos);
  auto top = run_actorps("--help");
  CHECK(top.output.find("predict") != std::string::npos);
  CHECK(top.output.find("evaluate") != std::string::npos);
}

} // namespace actorps
