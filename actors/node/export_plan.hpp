// --export-dir, --export-every and --full-export-every of `actorps simulate` and `actorps chief`:
// the run's export (actors/serving/export_after_run.hpp) from the training plan.
#pragma once

#include "actors/serving/export_after_run.hpp"
#include "actors/node/training_plan.hpp"

#include <string>

namespace actorps {

/// The request of `plan` (run by `actorps <source>`). When it exports, proves now that the
/// model can be exported and the directory written (prepare_export), throwing usage_error
/// naming --export-dir, and sets the plan's chief up for the export and its versions.
export_request plan_export(training_plan& plan, const std::string& source);

} // namespace actorps
