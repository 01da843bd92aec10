#include "actors/ps/model_registry.hpp"

#include "actors/model/criteo_lr_plugin.hpp"
#include "actors/model/dlrm_plugin.hpp"
#include "actors/model/mlp_plugin.hpp"
#include "actors/model/sparse_lr_plugin.hpp"
#include "actors/model/wide_deep_plugin.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace actorps {

namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, model_factory> factories;
};

registry& the_registry() {
  static registry* r = [] {  // never destroyed: plug-ins may be resolved during shutdown
    auto* fresh = new registry;
    fresh->factories["mlp"] = make_mlp_plugin;
    fresh->factories["sparse-lr"] = make_sparse_lr_plugin;
    fresh->factories["lr"] = make_criteo_lr_plugin;
    fresh->factories["dlrm"] = make_dlrm_plugin;
    fresh->factories["wdl"] = make_wdl_plugin;
    fresh->factories["deepfm"] = make_deepfm_plugin;
    return fresh;
  }();
  return *r;
}

bool bare_widths(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '-';
  });
}

} // namespace

void register_model(const std::string& name, model_factory factory) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      }))
    throw model_error("a model name must be letters, digits, '_' or '-' (got '" + name + "')");
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> registered_models() {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

std::unique_ptr<model_plugin> make_model(const std::string& name_and_args) {
  auto text = bare_widths(name_and_args) ? "mlp:" + name_and_args : name_and_args;
  auto colon = text.find(':');
  auto name = text.substr(0, colon);
  auto args = colon == std::string::npos ? std::string{} : text.substr(colon + 1);
  model_factory factory;
  {
    auto& r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto i = r.factories.find(name);
    if (i != r.factories.end()) factory = i->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& n : registered_models()) known += (known.empty() ? "" : ", ") + n;
    throw model_error("unknown model '" + name + "' (registered: " + known + ")");
  }
  return factory(args);
}

} // namespace actorps
