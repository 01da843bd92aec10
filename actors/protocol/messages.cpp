#include "actors/protocol/messages.hpp"

#include <caf/all.hpp>

namespace actorps {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<wire_buffer>("actorps::wire_buffer");
  cfg.add_message_type<std::vector<wire_buffer>>("std::vector<actorps::wire_buffer>");
  cfg.add_message_type<push_request>("actorps::push_request");
  cfg.add_message_type<train_report>("actorps::train_report");
  cfg.add_message_type<std::vector<train_report>>("std::vector<actorps::train_report>");
  cfg.add_message_type<eval_report>("actorps::eval_report");
  cfg.add_message_type<shard_stats>("actorps::shard_stats");
  cfg.add_message_type<std::vector<shard_stats>>("std::vector<actorps::shard_stats>");
  cfg.add_message_type<run_summary>("actorps::run_summary");
  cfg.add_message_type<replica_image>("actorps::replica_image");
  cfg.add_message_type<rejoin_point>("actorps::rejoin_point");
  cfg.add_message_type<std::vector<int64_t>>("std::vector<int64_t>");
  cfg.add_message_type<std::vector<uint32_t>>("std::vector<uint32_t>");
  cfg.add_message_type<std::vector<uint16_t>>("std::vector<uint16_t>");  // a bucket placement
  cfg.add_message_type<file_record>("actorps::file_record");
  cfg.add_message_type<checkpoint_link>("actorps::checkpoint_link");
  cfg.add_message_type<std::vector<file_record>>("std::vector<actorps::file_record>");
  cfg.add_message_type<loaded_checkpoint>("actorps::loaded_checkpoint");
  cfg.add_message_type<checkpoint_io_actor>("actorps::checkpoint_io_actor");
  cfg.add_message_type<ps_shard_actor>("actorps::ps_shard_actor");
  cfg.add_message_type<ps_task_actor>("actorps::ps_task_actor");
  cfg.add_message_type<worker_actor>("actorps::worker_actor");
  cfg.add_message_type<evaluator_actor>("actorps::evaluator_actor");
  cfg.add_message_type<task_node_actor>("actorps::task_node_actor");
  cfg.add_message_type<chief_actor>("actorps::chief_actor");
  cfg.add_message_type<failover_done>("actorps::failover_done");
  cfg.add_message_type<failover_failed>("actorps::failover_failed");
  cfg.add_error_category(error_category,
                         [](uint8_t code, caf::atom_value, const caf::message& context) {
                           auto text = std::string("actorps: ") + to_string(static_cast<errc>(code));
                           if (context.match_elements<std::string>())
                             text += " (" + context.get_as<std::string>(0) + ")";
                           return text;
                         });
}

train_spec spec_at_end(const train_spec& planned, const run_summary& summary) {
  auto spec = planned;
  if (summary.shards > 0) {  // (0: a summary of no run)
    spec.shards = summary.shards;
    spec.block_shards = summary.final_block_shards;
  }
  return spec;
}

} // namespace actorps
