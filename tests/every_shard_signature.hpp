// Every signature of ps_shard_actor asked of one handle, in an order that keeps the shard
// serving, and what came back: for comparing a proxy (over each path of the data link) with the
// shard itself, the independent observer. A signature the proxy did not handle, or handled as
// another, answers differently (an unexpected-message error, a timeout, other values).
#pragma once

#include "scratch_dir.hpp"
#include "shard_fixture.hpp"

#include <filesystem>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace actorps::test {

/// "error <code>: <text>" for `err`, without the text's variable parts (none here).
inline std::string outcome_of(const caf::error& err) {
  return "error " + std::to_string(err.code()) + " (" + caf::to_string(err.category()) + ")";
}

/// The outcome of asking `to` (Ts...) for a reply of type R; `show` renders the value.
template <class R, class Show, class... Ts>
std::string ask_outcome(shard_fixture& f, const ps_shard_actor& to, Show show, Ts&&... xs) {
  std::string out = "no answer";
  (*f.self)->request(to, timeout, std::forward<Ts>(xs)...)
    .receive([&](R& value) { out = show(value); }, [&](caf::error& err) { out = outcome_of(err); });
  return out;
}

/// The lines ask_every_signature returns: one per verb of the shard (shard_verbs.hpp: a new one
/// is asked below) and 20 more: the messages over CAF alone, and three asked again another way
/// (a push with a reply stream, done of a worker the run lacks, the snapshot after all).
inline constexpr std::size_t lines_asked = std::tuple_size_v<shard_verbs> + 20;

/// Asks `to` every signature of the shard, a push_pull as a worker asks it (a push still
/// arriving and the notice of its progress, which a link's server alone sends its own shard, are
/// asked of the proxy directly: shard_proxy_signatures_test). `dir` receives the checkpoint written by (checkpoint, dir, clock). Returns one line
/// per signature: its name and the outcome.
inline std::vector<std::string> ask_every_signature(shard_fixture& f, const ps_shard_actor& to,
                                                    const std::string& dir) {
  std::vector<std::string> lines;
  auto note = [&](const char* what, std::string outcome) {
    lines.push_back(std::string(what) + ": " + std::move(outcome));
  };
  auto params = [&](wire_buffer& reply) {
    auto values = f.parameters_of(reply);
    return "parameters summing to " + std::to_string(std::accumulate(values.begin(), values.end(), 0.0));
  };
  auto bytes = [](wire_buffer& reply) { return "a message of " + std::to_string(reply.size_bytes()) + " bytes"; };
  auto ok = [](caf::ok_atom) { return std::string("ok"); };
  auto number = [](int64_t x) { return "the number " + std::to_string(x); };
  std::vector<float> grad(f.layout.total_floats(), 1.0f);
  auto push = [&](int64_t clock) { return encode_push(0, clock, 0, f.layout, grad.data()); };

  note("init", ask_outcome<caf::ok_atom>(f, to, ok, init_atom::value, wire_buffer{}));
  note("stats", ask_outcome<shard_stats>(f, to, [](shard_stats& s) {
    return "stats of shard " + std::to_string(s.shard);
  }, stats_atom::value));
  note("pull", ask_outcome<wire_buffer>(f, to, params, pull_atom::value, int32_t{0}, int64_t{0}));
  note("snapshot", ask_outcome<wire_buffer>(f, to, params, snapshot_atom::value));
  note("keyed pull", ask_outcome<wire_buffer>(f, to, params, pull_atom::value, wire_buffer{}));
  note("keyed snapshot",
       ask_outcome<wire_buffer>(f, to, params, snapshot_atom::value, wire_buffer{}));
  note("push", ask_outcome<wire_buffer>(f, to, params, push_pull_atom::value, push_request{push(0)}));
  note("push with a reply stream",
       ask_outcome<wire_buffer>(f, to, params, push_pull_atom::value, push_request{push(1), reply_stream_ptr{}}));
  note("checkpoint bytes", ask_outcome<wire_buffer>(f, to, bytes, checkpoint_atom::value, int64_t{2}));
  wire_buffer image;
  (*f.self)->request(to, timeout, checkpoint_atom::value, int64_t{2})
    .receive([&](wire_buffer& b) { image = std::move(b); }, [&](caf::error&) {});
  note("checkpoint file", ask_outcome<file_record>(f, to, [&](file_record& r) {
    return r.name + " of " + std::to_string(r.bytes) + " bytes, on disk: "
           + std::to_string(std::filesystem::file_size(dir + "/" + r.name));
  }, checkpoint_atom::value, dir, int64_t{2}));
  note("restore", ask_outcome<caf::ok_atom>(f, to, ok, restore_atom::value, image,
                                            std::vector<uint32_t>{0}));
  // a live resize's hand-over under the placement now (no row leaves), and the move back in
  note("hand-over", ask_outcome<std::vector<wire_buffer>>(f, to, [&](std::vector<wire_buffer>& v) {
    std::string out = std::to_string(v.size()) + " files:";
    for (auto& b : v) out += " " + bytes(b);
    return out;
  }, resize_atom::value, int64_t{2}, f.spec.bucket_shards, std::vector<uint16_t>{}));
  note("move", ask_outcome<caf::ok_atom>(f, to, ok, restore_atom::value, resize_atom::value,
                                         image, std::vector<wire_buffer>{},
                                         std::vector<uint32_t>{1}));
  (*f.self)->send(to, leave_atom::value, int32_t{0});
  note("rejoin", ask_outcome<rejoin_point>(f, to, [](rejoin_point& p) {
    return "live at " + std::to_string(p.clock) + ", " + std::to_string(p.pushed) + " pushed";
  }, rejoin_atom::value, int32_t{0}));
  note("admit", ask_outcome<caf::ok_atom>(f, to, ok, admit_atom::value, int32_t{0}, int64_t{2},
                                          uint32_t{1}));
  note("done", ask_outcome<caf::ok_atom>(f, to, ok, done_atom::value, int32_t{0}));
  note("done of a worker the run lacks",
       ask_outcome<caf::ok_atom>(f, to, ok, done_atom::value, int32_t{99}));
  note("replicate a push", ask_outcome<caf::ok_atom>(f, to, ok, replicate_atom::value, wire_buffer{}));
  note("replicate a leave",
       ask_outcome<caf::ok_atom>(f, to, ok, replicate_atom::value, leave_atom::value, int32_t{0}));
  note("replicate a rejoin",
       ask_outcome<caf::ok_atom>(f, to, ok, replicate_atom::value, rejoin_atom::value, int32_t{0}));
  note("replicate an admission",
       ask_outcome<caf::ok_atom>(f, to, ok, replicate_atom::value, admit_atom::value, int32_t{0},
                                 int64_t{2}, uint32_t{2}));
  note("replicate an image",
       ask_outcome<caf::ok_atom>(f, to, ok, replicate_atom::value, replica_image{}));
  note("backup", ask_outcome<uint64_t>(f, to, [](uint64_t x) { return std::to_string(x) + " bytes"; },
                                      backup_atom::value, caf::strong_actor_ptr{}));
  note("promote", ask_outcome<int64_t>(f, to, number, promote_atom::value));
  note("snapshot after all", ask_outcome<wire_buffer>(f, to, params, snapshot_atom::value));
  return lines;
}

/// A shard's configuration that lets it write checkpoints under `dir`.
inline shard_config checkpoints_into(const std::string& dir) {
  shard_config config;
  config.checkpoint_root = dir;
  return config;
}

/// What a shard of `spec` answers to every signature asked of it directly.
inline std::vector<std::string> asked_of_the_shard_itself(const train_spec& spec) {
  scratch_dir dir;
  shard_fixture f(spec, checkpoints_into(dir.path));
  return ask_every_signature(f, f.shard, dir.path);
}

} // namespace actorps::test
