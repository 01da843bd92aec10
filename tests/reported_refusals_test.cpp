// The refusals the workers and the evaluator report to the chief (their counts since each
// process started, in train and eval reports), as the chief adds them to the summary's
// refused_unauthorised (actors/chief/state.hpp): each count once, a new process's from zero.
#include "actors/chief/state.hpp"

#include <doctest/doctest.h>

using namespace actorps;
using namespace actorps::chief_detail;

TEST_CASE("chief: refusals reported by workers and the evaluator are summed once each, a restarted process counting from zero") {
  chief_state st;
  st.note_reported_refusals(worker_role(0), 0);
  st.note_reported_refusals(worker_role(1), 2);
  st.note_reported_refusals(worker_role(1), 2);  // the same count in the next report
  CHECK(st.refused_by_roles == 2);
  st.note_reported_refusals(worker_role(1), 5);
  st.note_reported_refusals(evaluator_role(), 1);
  CHECK(st.refused_by_roles == 6);
  st.note_reported_refusals(worker_role(1), 1);  // its next process: 1 of its own
  CHECK(st.refused_by_roles == 7);
  st.note_reported_refusals(worker_role(0), -3);  // nonsense from a peer: ignored
  CHECK(st.refused_by_roles == 7);
}
