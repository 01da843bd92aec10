#include "actors/link/link_authorisation.hpp"

#include "actors/protocol/errors.hpp"


namespace actorps {

namespace {

/// The task a CN names ("worker:12" → worker, 12); index -1 when it names none.
struct named_task {
  std::string role;
  int64_t index = -1;
};

named_task parse_identity(const std::string& cn) {
  auto colon = cn.find(':');
  if (colon == std::string::npos || colon + 1 >= cn.size() || cn.size() - colon > 10) return {};
  named_task out{cn.substr(0, colon), 0};
  for (auto i = colon + 1; i < cn.size(); ++i) {
    if (cn[i] < '0' || cn[i] > '9') return {};
    out.index = out.index * 10 + (cn[i] - '0');
  }
  return out;
}

caf::error refused(const std::string& identity, const std::string& what) {
  return make_error(errc::not_authorised, "the certificate of \"" + identity + "\" may not " + what);
}

/// Whether `task` may make a request of `kind` at all: none when it may if the worker it speaks
/// for is its own (`speaks`: true), or when it may whatever it claims (false).
caf::error may_ask(const named_task& task, const std::string& identity, frame_kind kind,
                   bool& speaks) {
  speaks = false;
  bool client = task.index >= 0
                && (task.role == "worker" || task.role == "evaluator" || task.role == "chief");
  if (!client) return refused(identity, "use the data link (only workers, the evaluator and the chief do)");
  if (kind == frame_kind::snapshot || kind == frame_kind::keyed_snapshot) return {};
  if (task.role != "worker") return refused(identity, "push or pull (it may only take snapshots)");
  if (kind != frame_kind::pull && kind != frame_kind::push_pull && kind != frame_kind::keyed_pull)
    return refused(identity, "send a frame of kind " + std::to_string(static_cast<int>(kind)));
  speaks = true;
  return {};
}

caf::error claimed_as(const named_task& task, const std::string& identity, frame_kind kind,
                      int64_t claimed) {
  if (claimed == task.index) return {};
  return refused(identity, std::string(kind == frame_kind::push_pull ? "push" : "pull")
                             + " as worker " + std::to_string(claimed));
}

} // namespace

caf::error authorise_link_request(const std::string& identity, frame_kind kind, int64_t a,
                                  const wire_buffer& payload) {
  auto task = parse_identity(identity);
  bool speaks = false;
  if (auto err = may_ask(task, identity, kind, speaks); err || !speaks) return err;
  int64_t claimed = a;
  if (kind == frame_kind::push_pull) {
    auto push = decode_push(payload);
    if (!push) return push.error();
    claimed = push->worker;
  } else if (kind == frame_kind::keyed_pull) {
    auto pull = decode_pull(payload);
    if (!pull) return pull.error();
    claimed = pull->worker;
  }
  return claimed_as(task, identity, kind, claimed);
}

caf::error authorise_link_push(const std::string& identity, int32_t worker) {
  auto task = parse_identity(identity);
  bool speaks = false;
  if (auto err = may_ask(task, identity, frame_kind::push_pull, speaks); err || !speaks)
    return err;
  return claimed_as(task, identity, frame_kind::push_pull, worker);
}

} // namespace actorps
