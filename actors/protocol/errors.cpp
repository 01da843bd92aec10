#include "actors/protocol/errors.hpp"

#include <caf/message.hpp>

namespace actorps {

const char* to_string(errc code) {
  switch (code) {
    case errc::malformed_message: return "malformed_message";
    case errc::wrong_shard: return "wrong_shard";
    case errc::unknown_worker: return "unknown_worker";
    case errc::unknown_block: return "unknown_block";
    case errc::wrong_element_count: return "wrong_element_count";
    case errc::missing_block: return "missing_block";
    case errc::future_clock: return "future_clock";
    case errc::stale_clock: return "stale_clock";
    case errc::non_finite_value: return "non_finite_value";
    case errc::not_initialized: return "not_initialized";
    case errc::invalid_spec: return "invalid_spec";
    case errc::checkpoint_failed: return "checkpoint_failed";
    case errc::rolled_back: return "rolled_back";
    case errc::shard_lost: return "shard_lost";
    case errc::unknown_table: return "unknown_table";
    case errc::key_not_owned: return "key_not_owned";
    case errc::duplicate_key: return "duplicate_key";
    case errc::run_interrupted: return "run_interrupted";
    case errc::peer_unreachable: return "peer_unreachable";
    case errc::checkpoint_superseded: return "checkpoint_superseded";
    case errc::checkpoint_clock_passed: return "checkpoint_clock_passed";
    case errc::value_out_of_bounds: return "value_out_of_bounds";
    case errc::outside_checkpoint_root: return "outside_checkpoint_root";
    case errc::not_authorised: return "not_authorised";
    case errc::cluster_mismatch: return "cluster_mismatch";
    case errc::gradient_norm_beyond: return "gradient_norm_beyond";
    case errc::bad_data: return "bad_data";
  }
  return "unknown_error";
}

caf::error make_error(errc code) {
  return caf::error{static_cast<uint8_t>(code), error_category};
}

caf::error make_error(errc code, std::string context) {
  return caf::error{static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(context))};
}

bool is_error(const caf::error& err, errc code) {
  return err && err.category() == error_category && err.code() == static_cast<uint8_t>(code);
}

std::optional<errc> code_of(const caf::error& err) {
  if (!err || err.category() != error_category) return std::nullopt;
  return static_cast<errc>(err.code());
}

std::string describe(const caf::error& err) {
  if (!err) return "no error";
  const auto& context = err.context();
  // Our own errors, and CAF errors we built with one sentence: the sentence says it all.
  if (err.category() == error_category) {
    std::string out = to_string(static_cast<errc>(err.code()));
    if (context.match_elements<std::string>()) out += ": " + context.get_as<std::string>(0);
    return out;
  }
  if (context.match_elements<std::string>()) return context.get_as<std::string>(0);
  if (context.size() > 0 && context.match_element<std::string>(0))  // CAF: (what, details...)
    return context.get_as<std::string>(0);
  return caf::to_string(err);
}

} // namespace actorps
