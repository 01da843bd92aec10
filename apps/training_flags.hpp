// The training flags shared by `actorps simulate` and `actorps chief`: what to train and how,
// bound to the options the library plans a run from (actors/ps/training_flags.hpp).
#pragma once

#include "actors/ps/training_flags.hpp"

#include <boost/program_options.hpp>

namespace actorps {

/// Adds every training flag, with its default and help text, bound to `flags`.
void add_training_options(boost::program_options::options_description& desc,
                          training_flags& flags);

/// Records which flags were typed rather than left at their defaults (--resume, --staleness,
/// and those whose default is the model's); call after the variables map has been stored.
void note_given_flags(const boost::program_options::variables_map& vm, training_flags& flags);

/// Adds --kill (fault injection) and --replicas (hot standbys); `actorps simulate` only.
void add_fault_options(boost::program_options::options_description& desc, training_flags& flags);

/// Adds --follow and --stop-file (a training directory followed as it grows): `actorps
/// simulate` and `actorps chief` (whose worker tasks read the same directory, and whose host
/// watches it and the stop file).
void add_stream_options(boost::program_options::options_description& desc, training_flags& flags);

/// --copy-ahead, how a change of shards moves the sparse rows (simulate's --resize and the
/// chief's actorps scale).
void add_copy_ahead_option(boost::program_options::options_description& desc,
                           training_flags& flags);
/// Adds --replicas (hot standbys): `actorps simulate` and `actorps chief`.
void add_replica_options(boost::program_options::options_description& desc, training_flags& flags);

/// The help of --prometheus-port (training flags, and a ps, worker or evaluator task's).
extern const char* const prometheus_port_help;

} // namespace actorps
