// A push_pull as the shard takes it (ps_shard_actor's one push_pull): the Push's bytes, and two
// things only a shard's own data link, in the shard's process, may add to them: where the reply
// may go ahead in parts (reply_stream.hpp) and how far the bytes have arrived while the link
// still reads them (request_progress.hpp). Every sender builds one: a worker's is its bytes
// alone, as is everything that crosses processes (only the bytes travel; see inspect below).
//
// The link also tells the shard, after each run of bytes it reads, that more of a push still
// arriving is in (or never will be): a notice, sent and never asked, naming the push by its
// progress (more_arrived). It may reach the shard before the push itself or after the push
// was answered; the shard acts on it only for the push it is applying as it arrives.
#pragma once

#include "actors/protocol/reply_stream.hpp"
#include "actors/protocol/request_progress.hpp"
#include "actors/protocol/wire_buffer.hpp"

#include <caf/meta/type_name.hpp>

#include <utility>

namespace actorps {

struct push_request {
  wire_buffer bytes;                     ///< a Cap'n Proto Push (wire.hpp)
  reply_stream_ptr reply_stream = nullptr;  ///< none: the reply goes whole
  request_progress_ptr progress = nullptr;  ///< none: the bytes are all in
  bool notice = false;  ///< no push: more of progress's push has arrived, or never will

  push_request() = default;
  explicit push_request(wire_buffer push, reply_stream_ptr stream = nullptr,
                        request_progress_ptr arriving = nullptr)
    : bytes(std::move(push)), reply_stream(std::move(stream)), progress(std::move(arriving)) {}

  /// The notice that more of the push `arriving` describes is in (or that it failed).
  static push_request more_arrived(request_progress_ptr arriving) {
    push_request out;
    out.progress = std::move(arriving);
    out.notice = true;
    return out;
  }
};

/// Only the bytes cross processes: the stream and the progress are a local link's, and a notice
/// is sent by the shard's own link alone (one arriving from elsewhere is an ordinary push).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, push_request& x) {
  return f(caf::meta::type_name("push_request"), x.bytes);
}

} // namespace actorps
