// --tensorboard at its source (actors/chief/tensorboard_*.hpp, tf_event.hpp, tfrecord.hpp): the
// checksum and the protocol-buffer bytes against values worked out from their specifications,
// and the writer's files (one per run, flushed at evaluations). tests/tfevents_check.py reads
// whole runs' files independently.
#include "actors/chief/tensorboard_writer.hpp"
#include "actors/chief/tf_event.hpp"
#include "actors/chief/tfrecord.hpp"
#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

using namespace actorps;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::set<std::string> event_files(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().string());
  return out;
}

} // namespace

TEST_CASE("crc32c is the Castagnoli CRC and TFRecord's masked form of it") {
  CHECK(crc32c("123456789") == 0xE3069283u);  // the check value of CRC-32C
  CHECK(crc32c("") == 0u);
  // ((crc >> 15) | (crc << 17)) + 0xa282ead8 of the check value, worked out by hand
  CHECK(masked_crc32c("123456789") == 0xC78AB0E5u);
  std::string record;
  append_tfrecord(record, "abc");
  REQUIRE(record.size() == 8 + 4 + 3 + 4);
  CHECK(record.substr(0, 8) == bytes({3, 0, 0, 0, 0, 0, 0, 0}));  // the length, little-endian
  CHECK(record.substr(12, 3) == "abc");
}

TEST_CASE("tf_event writes Event, Summary and Value by their field numbers") {
  // Event{wall_time 1.5 (field 1, fixed64), file_version "brain.Event:2" (field 3)}
  CHECK(encode_file_version_event(1.5)
        == bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}) + bytes({0x1a, 13}) + "brain.Event:2");
  // Event{wall_time 1.5, step 300 (field 2, varint: ac 02), summary (field 5) {value (field 1)
  // {tag "a" (field 1), simple_value 0.5f (field 2, fixed32)}}}
  auto value = bytes({0x0a, 1, 'a', 0x15, 0, 0, 0, 0x3f});
  CHECK(encode_scalars_event(1.5, 300, {{"a", 0.5f}})
        == bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}) + bytes({0x10, 0xac, 0x02})
             + bytes({0x2a, 10, 0x0a, 8}) + value);
}

TEST_CASE("tensorboard_writer: a file per run, written out at each evaluation") {
  actorps::test::scratch_dir dir("actorps_tensorboard");
  const auto tb = dir.path + "/tb";  // created by the writer
  auto first = std::make_shared<tensorboard_writer>(tb);
  CHECK(std::filesystem::path(first->path()).filename().string().rfind("events.out.tfevents.", 0)
        == 0);
  metrics_file metrics("");  // no JSONL file: the observer still sees every event
  metrics.add_observer(first);
  const auto header = std::filesystem::file_size(first->path());  // the version event, written
  CHECK(header > 0);
  metrics.write(json_object().add("event", "train").add("worker", 0).add("clock", 0)
                  .add("loss", 2.0).add("samples", 64).add("staleness", 0).add("wall_s", 0.5));
  CHECK(std::filesystem::file_size(first->path()) == header);  // held until an evaluation
  metrics.write(json_object().add("event", "eval").add("clock", 1).add("test_accuracy", 0.5)
                  .add("test_loss", 1.0));
  const auto after_eval = std::filesystem::file_size(first->path());
  CHECK(after_eval > header);
  metrics.write(json_object().add("event", "failure").add("role", "worker").add("clock", 1));
  metrics.flush();  // as the chief does after a failure
  CHECK(std::filesystem::file_size(first->path()) > after_eval);
  // A second run at once (a resume) gets a file of its own, never the first one's.
  tensorboard_writer second(tb);
  CHECK(second.path() != first->path());
  CHECK(event_files(tb) == std::set<std::string>{first->path(), second.path()});
  CHECK_THROWS_WITH_AS(tensorboard_writer(first->path() + "/below_a_file"),
                       doctest::Contains("cannot create directory"), std::runtime_error);
}
