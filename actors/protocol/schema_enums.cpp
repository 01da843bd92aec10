// Every project enum the wire carries is cast to and from its schema enum by value (the codecs,
// *_codec.cpp). These checks hold the two lists together at compile time: an enumerant added,
// removed or reordered on one side only fails the build here, instead of decoding as another
// value or being refused as out of range at the first message. The optimizers' enums are
// checked whole, by name, against their tables (a value added at the end of either is caught);
// for the others, a value added at the end of one list only is not: add it to both, and to its
// check.
#include "actors/protocol/bf16.hpp"
#include "actors/protocol/model_spec.hpp"
#include "actors/ps/data_source.hpp"
#include "actors/ps/lr_schedule.hpp"
#include "actors/ps/sparse_table_config.hpp"
#include "kernels/enumerator_name.hpp"
#include "kernels/optimizer_table.hpp"
#include "kernels/sparse/row_optimizer_table.hpp"
#include "schema/actorps.capnp.h"

#include <type_traits>

namespace actorps {
namespace {

/// Whether project value `ours` and schema enumerant `theirs` have the same number.
template <class Ours, class Theirs>
constexpr bool same(Ours ours, Theirs theirs) {
  return static_cast<std::underlying_type_t<Ours>>(ours) == static_cast<int>(theirs);
}

} // namespace

static_assert(same(consistency::sync, wire::Mode::SYNC) && same(consistency::ssp, wire::Mode::SSP)
              && same(consistency::async, wire::Mode::ASYNC));

// The optimizers are held to their tables, whose rows the kinds follow: the schema's enumerant
// i is row i, by name, and there are no more; a new optimizer touches nothing here.
static_assert(rows_name_enumerators<wire::Optimizer, optimizer_table>(
                std::make_index_sequence<optimizer_count>{}),
              "schema Optimizer's enumerant i is named as row i of actors/ps/optimizer.hpp's "
              "traits table");
static_assert(rows_name_enumerators<wire::SparseTableSpec::Optimizer, row_optimizer_table>(
                std::make_index_sequence<row_optimizer_count>{}),
              "schema SparseTableSpec.Optimizer's enumerant i is named as row i of "
              "actors/ps/row_optimizer.hpp's traits table");

static_assert(same(row_init::zeros, wire::SparseTableSpec::Init::ZEROS)
              && same(row_init::uniform, wire::SparseTableSpec::Init::UNIFORM)
              && same(row_init::normal, wire::SparseTableSpec::Init::NORMAL));

static_assert(same(tensor_init::zeros, wire::TensorSpec::Init::ZEROS)
              && same(tensor_init::uniform, wire::TensorSpec::Init::UNIFORM));

static_assert(same(lr_schedule::constant, wire::LrSchedule::CONSTANT)
              && same(lr_schedule::cosine, wire::LrSchedule::COSINE)
              && same(lr_schedule::linear, wire::LrSchedule::LINEAR));

static_assert(same(wire_precision::fp32, wire::WirePrecision::FP32)
              && same(wire_precision::bf16, wire::WirePrecision::BF16));

static_assert(same(data_source::kind::fashion_mnist, wire::DataSource::Kind::FASHION_MNIST)
              && same(data_source::kind::synthetic, wire::DataSource::Kind::SYNTHETIC)
              && same(data_source::kind::csv, wire::DataSource::Kind::CSV)
              && same(data_source::kind::libsvm, wire::DataSource::Kind::LIBSVM)
              && same(data_source::kind::criteo, wire::DataSource::Kind::CRITEO)
              && same(data_source::kind::logs, wire::DataSource::Kind::LOGS));

} // namespace actorps
