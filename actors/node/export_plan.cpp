#include "actors/node/export_plan.hpp"

#include <stdexcept>

namespace actorps {

export_request plan_export(training_plan& plan, const std::string& source) {
  export_request request;
  request.dir = plan.export_dir;
  request.source = source;
  request.spec = plan.chief.spec;
  request.data = plan.data;
  request.batch = plan.chief.batch;
  try {
    prepare_export(request, plan.export_every, plan.full_export_every, plan.chief,
                   "--export-dir");
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  return request;
}

} // namespace actorps
