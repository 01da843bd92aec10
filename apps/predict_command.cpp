#include "apps/predict_command.hpp"

#include "actors/ps/prediction.hpp"
#include "apps/command_line.hpp"
#include "apps/value_bound_flags.hpp"

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace po = boost::program_options;

namespace actorps {

namespace {

const char* predict_intro = R"(usage: actorps predict --model DIR/<version> --input FILE [--top K]

Scores every row of FILE with the exported model in DIR/<version> (from --export-dir) and
prints one JSON object per row, in file order.

A classifier (MLP) classifies images:
  {"index":0,"class":9,"probabilities":[p0,p1,...,p9]}
With --top K, the K most probable classes instead, best first (ties: lower class first):
  {"index":0,"class":9,"top":[{"class":9,"probability":0.91},{"class":7,"probability":0.05}]}
FILE is an IDX image file (Fashion-MNIST's format, gzip-compressed or not; its uint8 pixels
are scaled as in training, / 255) or raw little-endian float32, N x 784 values already scaled
to [0, 1], no header.

A CTR model (lr, dlrm, wdl, deepfm) gives the click probability of each line of a Criteo file
(plain or gzip; label, I1-I13, C1-C26, TAB-separated, the label read but not used; a value the
model never saw gets the unknown row, zeros):
  {"index":0,"probability":0.2371}

)";

po::options_description predict_options(prediction_options& f) {
  po::options_description desc("actorps predict flags");
  desc.add_options()
    ("help,h", "print this help")
    ("model", po::value(&f.model), "the export version directory, DIR/<version>")
    ("input", po::value(&f.input), "the images: an IDX file (.gz or not) or raw float32")
    ("top", po::value(&f.top)->default_value(f.top),
     "print the K most probable classes with their probabilities (0: every probability)")
    ("format", po::value(&f.format)->default_value(f.format),
     "auto | idx | raw: how to read --input (auto: IDX when the file starts like one)")
    ("backend", po::value(&f.backend)->default_value(f.backend),
     "cpu | cuda | auto: where the forward pass runs")
    ("max-parameter", po::value(&f.max_parameter)->default_value(f.max_parameter),
     max_parameter_help);
  return desc;
}

} // namespace

int predict_command(const std::vector<std::string>& args) {
  prediction_options f;
  return run_command_line("predict", args, predict_options(f), predict_intro,
                          [&] { return print_predictions(f); });
}

} // namespace actorps
