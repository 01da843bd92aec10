// A worker's or evaluator's role on the wire (role_setup_codec.hpp).
#include "actors/chief/role_setup_codec.hpp"

#include "actors/protocol/wire_message.hpp"

namespace actorps {

using namespace wire_detail;

wire_buffer encode_role_setup(const role_setup& setup) {
  std::size_t text = 0;
  for (const auto& a : setup.shard_addresses) text += words_for(a.size() + 1) + 1;
  auto bound = header_bound + spec_bound(setup.spec) + words_for(setup.data.dir.size() + 1)
               + words_for(setup.data.train_path.size() + 1) + words_for(setup.data.test_path.size() + 1)
               + words_for(setup.data.schema_path.size() + 1) + text + 1 + 3 * setup.plan.size();
  return build(bound, bound, [&](capnp::MessageBuilder& mb) {  // rare: zero it all
    auto msg = mb.initRoot<wire::RoleSetup>();
    write_spec(msg.initSpec(), setup.spec);
    msg.setIndex(setup.index);
    msg.setBatch(static_cast<uint32_t>(setup.batch));
    msg.setSteps(setup.steps);
    msg.setSlowMs(static_cast<uint32_t>(setup.slow_ms));
    msg.setRequestTimeoutMs(static_cast<uint32_t>(setup.request_timeout.count()));
    auto data = msg.initData();
    // the schema's kinds are data_source::kind's, in the same order
    data.setKind(static_cast<wire::DataSource::Kind>(setup.data.what));
    data.setTrainPath(setup.data.train_path);
    data.setTestPath(setup.data.test_path);
    data.setDir(setup.data.dir);
    data.setTrainRows(static_cast<uint32_t>(setup.data.train_rows));
    data.setTestRows(static_cast<uint32_t>(setup.data.test_rows));
    data.setSeed(setup.data.seed);
    data.setCols(static_cast<uint32_t>(setup.data.cols));
    data.setGroupField(setup.data.group_field);
    data.setSliceField(setup.data.slice_field);
    data.setFollow(setup.data.follow);
    data.setSchemaPath(setup.data.schema_path);
    data.setDelimiter(static_cast<uint8_t>(setup.data.delimiter));
    auto addresses = msg.initShardAddresses(static_cast<unsigned>(setup.shard_addresses.size()));
    for (unsigned i = 0; i < setup.shard_addresses.size(); ++i)
      addresses.set(i, setup.shard_addresses[i]);
    msg.setBackend(static_cast<uint8_t>(setup.backend));
    msg.setDevice(setup.device);
    msg.setStartClock(setup.start_clock);
    msg.setIncarnation(setup.incarnation);
    msg.setDataOffset(setup.data_offset);
    msg.setFollowUntil(setup.follow_until);
    msg.setPauseAt(setup.pause_at);
    auto plan = msg.initPlan(static_cast<unsigned>(setup.plan.size()));
    for (unsigned i = 0; i < setup.plan.size(); ++i) {
      plan[i].setParts(setup.plan[i].parts);
      plan[i].setPart(setup.plan[i].part);
      plan[i].setFirst(setup.plan[i].first);
      plan[i].setCount(setup.plan[i].count);
    }
  });
}

caf::expected<role_setup> decode_role_setup(const wire_buffer& buf) {
  using result = caf::expected<role_setup>;
  return decode<role_setup>(buf, "role setup", [](capnp::MessageReader& reader) -> result {
    auto msg = reader.getRoot<wire::RoleSetup>();
    role_setup out;
    if (auto err = take(read_spec(msg.getSpec()), out.spec)) return err;
    out.index = msg.getIndex();
    out.batch = static_cast<int>(msg.getBatch());
    out.steps = msg.getSteps();
    out.slow_ms = static_cast<int>(msg.getSlowMs());
    out.request_timeout = std::chrono::milliseconds(msg.getRequestTimeoutMs());
    auto data = msg.getData();
    if (data.getKind() > wire::DataSource::Kind::LOGS)
      return make_error(errc::malformed_message, "unknown data source kind "
                                                   + std::to_string(unsigned(data.getKind())));
    out.data.what = static_cast<data_source::kind>(data.getKind());
    out.data.train_path = data.getTrainPath();
    out.data.test_path = data.getTestPath();
    out.data.dir = data.getDir();
    out.data.train_rows = static_cast<int>(data.getTrainRows());
    out.data.test_rows = static_cast<int>(data.getTestRows());
    out.data.seed = data.getSeed();
    out.data.cols = static_cast<int>(data.getCols());
    out.data.group_field = data.getGroupField();
    out.data.slice_field = data.getSliceField();
    out.data.schema_path = data.getSchemaPath();
    out.data.delimiter = static_cast<char>(data.getDelimiter());
    // C1..C26; a schema's key fields are the keys' 256 tables at most, crosses aside
    const int fields = out.data.what == data_source::kind::logs ? 1 << 16 : 26;
    for (auto [what, field] : {std::pair{"group", out.data.group_field},
                               std::pair{"slice", out.data.slice_field}})
      if (field < -1 || field >= fields)
        return make_error(errc::malformed_message, std::string(what) + " field "
                                                     + std::to_string(field) + " is out of range");
    out.data.follow = data.getFollow();
    if (out.data.what == data_source::kind::logs
        && (out.data.schema_path.empty()
            || (out.data.delimiter != '\t' && out.data.delimiter != ',')))
      return make_error(errc::invalid_spec, "a log without a schema or with an unknown delimiter");
    if (out.data.follow && !read_in_parts(out.data.what))
      return make_error(errc::invalid_spec, "a followed stream of a data source not streamed");
    for (auto a : msg.getShardAddresses()) out.shard_addresses.emplace_back(a.cStr());
    if (msg.getBackend() > static_cast<uint8_t>(backend_kind::automatic))
      return make_error(errc::invalid_spec, "unknown backend in RoleSetup");
    out.backend = static_cast<backend_kind>(msg.getBackend());
    out.device = msg.getDevice();
    out.start_clock = msg.getStartClock();
    out.incarnation = msg.getIncarnation();
    out.data_offset = msg.getDataOffset();
    out.follow_until = msg.getFollowUntil();
    out.pause_at = msg.getPauseAt();
    for (auto segment : msg.getPlan()) {
      data_segment d{segment.getParts(), segment.getPart(), segment.getFirst(),
                     segment.getCount()};
      if (d.parts < 1 || d.parts > max_workers || d.part < 0 || d.part >= d.parts || d.first < 0
          || d.count < 0)
        return make_error(errc::invalid_spec, "out-of-range data segment in RoleSetup");
      out.plan.push_back(d);
    }
    if (!out.plan.empty() && plan_batches(out.plan) != out.steps)
      return make_error(errc::invalid_spec, "a RoleSetup's plan does not hold its steps");
    if (out.batch <= 0 || out.steps < 0 || out.start_clock < 0
        || out.start_clock < out.data_offset  // a minibatch before the first
        || out.follow_until < -1 || (out.follow_until >= 0 && !out.data.follow)
        || out.pause_at < -1
        || out.index < 0 || out.index >= out.spec.workers
        || out.shard_addresses.size() != static_cast<std::size_t>(out.spec.shards)
        || out.data.train_rows <= 0 || out.data.test_rows <= 0)
      return make_error(errc::invalid_spec, "out-of-range field in RoleSetup");
    return out;
  });
}

} // namespace actorps
