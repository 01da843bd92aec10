#include "actors/storage/checkpoint_io.hpp"
#include "actors/storage/checkpoint_store.hpp"

#include <caf/all.hpp>

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

checkpoint_io_actor::behavior_type checkpoint_io(checkpoint_io_actor::pointer) {
  return {
    [](prepare_atom, const std::string& root, int64_t clock) -> caf::result<std::string> {
      return guarded([&] { return prepare_checkpoint_dir(root, clock).string(); });
    },
    [](write_atom, const std::string& path, const wire_buffer& bytes) -> caf::result<file_record> {
      return guarded([&] { return write_file_durably(path, bytes.bytes(), bytes.size_bytes()); });
    },
    [](commit_atom, const std::string& dir, int64_t clock, std::vector<file_record>& files,
       const wire_buffer& run, int32_t keep) -> caf::result<caf::ok_atom> {
      return guarded([&] {
        commit_checkpoint(dir, clock, std::move(files), run, keep);
        return caf::ok_atom::value;
      });
    },
    [](load_atom, const std::string& path) -> caf::result<loaded_checkpoint> {
      return guarded([&] { return load_newest_checkpoint(path); });
    },
  };
}

} // namespace

checkpoint_io_actor spawn_checkpoint_io(caf::actor_system& sys) {
  return sys.spawn<caf::detached>(checkpoint_io);
}

} // namespace actorps
