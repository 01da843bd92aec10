#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <caf/all.hpp>

#include <filesystem>

namespace actorps {

namespace {

/// Runs `f`, turning a checkpoint_error (or any filesystem exception) into an error reply.
template <class F>
auto guarded(F f) -> caf::result<decltype(f())> {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(errc::checkpoint_failed, e.what());
  }
}

checkpoint_io_actor::behavior_type checkpoint_io(checkpoint_io_actor::pointer,
                                                 checkpoint_io_options opts) {
  return {
    [=](prepare_atom, const std::string& root, int64_t clock) -> caf::result<std::string> {
      return guarded([&] { return prepare_checkpoint_dir(root, clock, opts.run_id).string(); });
    },
    [](write_atom, const std::string& path, const wire_buffer& bytes) -> caf::result<file_record> {
      return guarded([&] {
        auto rec = write_file_durably(path, bytes.bytes(), bytes.size_bytes());
        rec.delta_since = shard_checkpoint_delta_since(bytes);  // only shard files come here
        return rec;
      });
    },
    [=](commit_atom, const std::string& dir, int64_t clock, std::vector<file_record>& files,
        const wire_buffer& run, int32_t keep,
        const checkpoint_link& link) -> caf::result<std::string> {
      return guarded([&] {
        if (clock == opts.fail_at)
          throw checkpoint_error(dir + "/" + manifest_name
                                 + ": cannot be written: fault injection (disk@checkpoint="
                                 + std::to_string(clock) + ")");
        return commit_checkpoint(dir, clock, std::move(files), run, keep, opts.key, link);
      });
    },
    [](discard_atom, const std::string& dir) {
      // A failed checkpoint left as it is would read later as one the run stopped writing.
      // Best effort: what stays is only disk space, and loading skips it (no manifest).
      std::error_code ec;
      if (!std::filesystem::exists(std::filesystem::path(dir) / manifest_name, ec) && !ec)
        std::filesystem::remove_all(dir, ec);
    },
    [=](load_atom, const std::string& path) -> caf::result<loaded_checkpoint> {
      auto ours = [id = opts.run_id](const run_checkpoint& run) -> std::string {
        return run.run_id == id ? "" : "another run's (run " + run.run_id + ")";
      };
      return guarded([&] {
        return opts.run_id.empty()
                 ? load_newest_checkpoint(path, {}, opts.max_parameter, opts.key)
                 : load_newest_checkpoint(path, ours, opts.max_parameter, opts.key);
      });
    },
  };
}

} // namespace

checkpoint_io_actor spawn_checkpoint_io(caf::actor_system& sys, checkpoint_io_options opts) {
  return sys.spawn<caf::detached>(checkpoint_io, std::move(opts));
}

} // namespace actorps
