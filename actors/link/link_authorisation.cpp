#include "actors/link/link_authorisation.hpp"

#include "actors/link/link_verbs.hpp"
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

/// Whether `task` may make a request of `verb` at all (its asker in the verb table).
caf::error may_ask(const named_task& task, const std::string& identity, const link_verb_info& verb) {
  bool client = task.index >= 0
                && (task.role == "worker" || task.role == "evaluator" || task.role == "chief");
  if (!client) return refused(identity, "use the data link (only workers, the evaluator and the chief do)");
  switch (verb.asker) {
    case link_asker::client:
      return {};
    case link_asker::named_worker:
      if (task.role != "worker") return refused(identity, "push or pull (it may only take snapshots)");
      return {};
  }
  return {};
}

/// Whether the worker `task` may speak for worker `claimed` in a request of `verb`.
caf::error claimed_as(const named_task& task, const std::string& identity,
                      const link_verb_info& verb, int64_t claimed) {
  if (claimed == task.index) return {};
  return refused(identity, std::string(verb.name) + " as worker " + std::to_string(claimed));
}

} // namespace

caf::error authorise_link_request(const std::string& identity, frame_kind kind, int64_t a,
                                  const wire_buffer& payload) {
  auto task = parse_identity(identity);
  auto verb = verb_of(kind);
  if (!verb) return refused(identity, "send a frame of kind " + std::to_string(static_cast<int>(kind)));
  if (auto err = may_ask(task, identity, *verb)) return err;
  auto named = worker_named(kind, a, payload);
  if (!named) return std::move(named.error());
  if (!*named) return {};
  return claimed_as(task, identity, *verb, **named);
}

caf::error authorise_link_push(const std::string& identity, int32_t worker) {
  auto task = parse_identity(identity);
  auto verb = *verb_of(frame_kind::push_pull);
  if (auto err = may_ask(task, identity, verb)) return err;
  return claimed_as(task, identity, verb, worker);
}

} // namespace actorps
