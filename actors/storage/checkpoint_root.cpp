#include "actors/storage/checkpoint_root.hpp"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace actorps {

namespace {

/// `p` absolute, its existing part's symlinks resolved, `.` and `..` gone; empty on error.
fs::path resolved(const std::string& p) {
  std::error_code ec;
  auto absolute = fs::absolute(p, ec);
  if (ec) return {};
  auto canonical = fs::weakly_canonical(absolute, ec);
  if (ec) return {};
  return canonical.lexically_normal();
}

} // namespace

std::string outside_checkpoint_root(const std::string& root, const std::string& dir) {
  if (root.empty())
    return "this shard has no checkpoint root (its process was given no --checkpoint-dir)";
  if (dir.empty()) return "an empty directory name";
  auto base = resolved(root);
  auto target = resolved(dir);
  if (base.empty() || target.empty()) return "cannot resolve " + dir + " or the root " + root;
  // Component by component: /ckpt-root2 is not under /ckpt-root.
  auto b = base.begin(), t = target.begin();
  for (; b != base.end(); ++b, ++t) {
    if (b->empty() && std::next(b) == base.end()) break;  // a trailing separator of the root
    if (t == target.end() || *t != *b)
      return dir + " resolves to " + target.string() + ", outside the checkpoint root "
             + base.string();
  }
  for (; t != target.end(); ++t)
    if (*t == "..") return dir + " climbs out of the checkpoint root " + base.string();
  return "";
}

} // namespace actorps
