// How a shard counts and logs what it refuses (declared in shard_state.hpp).
#include "actors/roles/shard_state.hpp"

#include "actors/roles/authorisation.hpp"
#include "actors/protocol/errors.hpp"
#include "kernels/value_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace actorps::shard_internals {

void log_refusal(ps_shard_state& st, const std::string& kind, const std::string& text) {
  st.refusals.flush();
  st.refusals.write(kind, text);
}

caf::error refused(ps_shard_state& st, caf::error err) {
  if (!err) return err;
  ++st.stats.refused_unauthorised;
  ++st.stats.dropped;
  return note_refusal(st.who(), std::move(err));
}

caf::error drop(ps_shard_state& st, const std::string& what, caf::error err) {
  ++st.stats.dropped;
  // One kind per message type ("push from worker 7" is a push): ids a stranger makes up do
  // not make kinds of their own.
  log_refusal(st, "dropped " + what.substr(0, what.find(' ')),
              "dropped " + what + ": " + describe(err));
  return err;
}

caf::error gradient_error(const float* values, std::size_t n, float bound, uint32_t id) {
  auto at = first_outside(values, n, bound).value_or(0);
  return make_error(std::isfinite(values[at]) ? errc::value_out_of_bounds : errc::non_finite_value,
                    gradient_refusal(values, n, bound, "block " + std::to_string(id)));
}

caf::error refuse_gradient(ps_shard_state& st, int32_t worker, caf::error err) {
  ++st.stats.dropped;
  ++st.stats.gradients_refused;
  log_refusal(st, "refused a gradient",
              "dropped push from worker " + std::to_string(worker) + ": " + describe(err));
  return err;
}

caf::error norm_error(const norm_bound& bound, float norm, const char* what) {
  return make_error(errc::gradient_norm_beyond,
                    std::string(what) + " gradient norm " + value_text(norm) + " is beyond "
                      + value_text(bound.limit()) + " (--gradient-norm-bound "
                      + value_text(bound.k()) + " times the median norm "
                      + value_text(bound.median()) + " of the last "
                      + std::to_string(norm_bound::window) + " pushes taken)");
}

caf::error refuse_norm(ps_shard_state& st, int32_t worker, caf::error err) {
  ++st.stats.dropped;
  ++st.stats.norms_refused;
  log_refusal(st, "refused a gradient norm",
              "dropped push from worker " + std::to_string(worker) + ": " + describe(err));
  return err;
}

void norm_taken(ps_shard_state& st, norm_bound& bound, float norm) {
  bound.taken(norm);
  st.stats.max_norm_ratio = std::max(st.stats.max_norm_ratio, bound.largest_ratio());
}

} // namespace actorps::shard_internals
