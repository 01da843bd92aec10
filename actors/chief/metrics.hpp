// What a user sees: `--metrics FILE.jsonl` (one JSON object per event, the contract that tests,
// benchmarks and plots read) and the progress line on the terminal (updated in place on a TTY,
// plain lines otherwise). Both belong to the chief, the only writer.
#pragma once

#include "actors/protocol/console.hpp"
#include "actors/ps/json.hpp"  // render_json, json_object

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace actorps {

/// Another reader of the metrics events, told each one as it is written (the TensorBoard file,
/// tensorboard_writer.hpp): fed from the one place, the two cannot disagree.
class metrics_observer {
public:
  virtual ~metrics_observer() = default;
  virtual void on_event(const nlohmann::ordered_json& event) = 0;
  /// The events so far must be out (metrics_file::flush: an evaluation, a failure).
  virtual void flush() = 0;
};

/// Writes JSON lines to a file (truncated first, or appended to for a resumed run: one history
/// across restarts); an empty path disables it. Each event is one
/// write(2) of its whole line, unbuffered, to a file opened O_APPEND: `tail -f` and live plots
/// see it at once, and a run killed at any moment leaves only whole lines. The constructor
/// throws std::runtime_error naming the file if it cannot be opened for writing.
class metrics_file {
public:
  explicit metrics_file(const std::string& path, bool append = false);
  ~metrics_file();
  metrics_file(const metrics_file&) = delete;
  metrics_file& operator=(const metrics_file&) = delete;

  void write(const nlohmann::ordered_json& event);
  void write(const json_object& event) { write(event.json()); }
  /// Nothing of the file is held back; the observers write out what they hold.
  void flush();
  /// Tells `observer` every event written from now on (the file's path may be empty).
  void add_observer(std::shared_ptr<metrics_observer> observer);

private:
  int fd_ = -1;
  std::vector<std::shared_ptr<metrics_observer>> observers_;
};

/// The terminal progress line, drawn through the console (actors/protocol/console.hpp): on a
/// TTY redrawn in place (at most every 100 ms) and cut to the terminal's width; on anything
/// else printed as a whole line only when `important` (evaluations, the end).
class progress_line {
public:
  explicit progress_line(bool enabled, console& out = console::process());
  /// Whether show() would draw now; lets the caller skip formatting a line nobody sees.
  bool due(bool important) const;
  void show(const std::string& text, bool important);
  /// Ends the in-place line so later output starts on a fresh line.
  void finish();

private:
  bool enabled_;
  console& out_;
  std::chrono::steady_clock::time_point last_draw_{};
};

} // namespace actorps
