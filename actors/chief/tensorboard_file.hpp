// `--tensorboard DIR`: one TensorBoard event file per run (a resumed run adds another), named
// as TensorFlow names them, DIR/events.out.tfevents.<unix time>.<host>: TFRecords
// (tfrecord.hpp) holding Event messages (tf_event.hpp), the first one the file's version.
#pragma once

#include "actors/chief/tf_event.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace actorps {

/// An event file being written. Events are held in memory until flush(), 1 MiB of them, or an
/// event added 5 s after the last write (a run without evaluations is followed too), so a
/// scalar seldom costs a system call; each write is whole records, appended with write(2).
class tensorboard_file {
public:
  /// Creates DIR (and its parents) and a new file in it; a name taken already (a second run
  /// within the same second) gets a ".N" suffix rather than adding to another run's file.
  /// Throws std::runtime_error naming what could not be created.
  explicit tensorboard_file(const std::string& dir);
  ~tensorboard_file();
  tensorboard_file(const tensorboard_file&) = delete;
  tensorboard_file& operator=(const tensorboard_file&) = delete;

  /// The file's path.
  const std::string& path() const { return path_; }
  /// Adds an event holding `values` at `step`, stamped with the time now.
  void add(int64_t step, const std::vector<tf_scalar>& values);
  /// Writes the events held; a disk that refuses loses them, the run goes on.
  void flush();

private:
  std::string path_;
  int fd_ = -1;
  std::string pending_;  ///< whole records not yet written
  std::chrono::steady_clock::time_point written_;  ///< the last flush
};

} // namespace actorps
