// A directory of numbered versions — DIR/1, DIR/2, … — that only grows. A new version is
// written under a temporary sibling name (DIR/.tmp-<version>-<pid>), every file and the
// directory fsynced, and renamed to DIR/<version> only when complete, so a reader sees a
// version whole or not at all. The rename never replaces anything: when the number was taken
// meanwhile (another process publishing into DIR), the next free one is used.
//
//   staged_version v(dir);               // creates dir if needed, then the temporary directory
//   v.write_file("model.onnx", bytes);   // written and fsynced
//   v.make_dir("vocab");                 // a subdirectory, for v.write_file("vocab/C1.tsv", ...)
//   uint64_t n = v.publish();            // dir/<n> now exists, complete
//
// A staged_version destroyed before publish() removes its temporary directory.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace actorps {

/// The directory cannot be created, written or published; what() names the path and the
/// system's reason.
struct versioned_dir_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The largest version in root: its largest subdirectory named by a positive decimal number
/// (0 when there is none, or root does not exist). Other entries are ignored.
uint64_t latest_version(const std::string& root);

/// Renames the directory `from` to root/<v> for the first v ≥ first that is free, never
/// replacing an existing entry (renameat2 RENAME_NOREPLACE); returns v.
uint64_t rename_to_free_version(const std::string& from, const std::string& root, uint64_t first);

class staged_version {
public:
  /// Creates root (with its parents) if missing, then a fresh temporary directory in it.
  explicit staged_version(std::string root);
  ~staged_version();
  staged_version(const staged_version&) = delete;
  staged_version& operator=(const staged_version&) = delete;

  /// The temporary directory (until publish()), then the published one.
  const std::string& path() const { return path_; }

  /// Writes path()/name (a new file) and fsyncs it. `name` may lie in a directory of make_dir.
  void write_file(const std::string& name, const std::string& bytes);

  /// Creates the directory path()/name (publish() fsyncs it with the version).
  void make_dir(const std::string& name);

  /// Fsyncs the temporary directory, renames it to root/<latest_version + 1> (or the next
  /// free number), fsyncs root; returns the version. Call once.
  uint64_t publish();

private:
  std::string root_, path_;
  std::vector<std::string> dirs_;  // made by make_dir, relative to path_
  bool published_ = false;
};

} // namespace actorps
