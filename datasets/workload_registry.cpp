#include "datasets/workload_registry.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph_io.h"
#include "core/graph_summary.h"
#include "core/strings.h"
#include "datasets/onnx_importer.h"
#include "datasets/workloads.h"

namespace gopt::datasets {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// One integer field of an options struct exposed to --set.
template <typename Options>
struct Field {
  const char* name;
  const char* description;
  std::int64_t Options::*member;
  std::int64_t min_value;
  std::int64_t max_value;
};

template <typename Options>
std::vector<HyperparameterSpec> specs_of(const std::vector<Field<Options>>& fields,
                                         const Options& defaults) {
  std::vector<HyperparameterSpec> specs;
  for (const auto& f : fields) {
    HyperparameterSpec s;
    s.name = f.name;
    s.description = f.description;
    s.default_value = defaults.*(f.member);
    s.min_value = f.min_value;
    s.max_value = f.max_value;
    specs.push_back(std::move(s));
  }
  HyperparameterSpec opt;
  opt.name = "optimizer";
  opt.description = "update ops: ApplyAdam (adam) or ApplyGradientDescent (sgd)";
  opt.choices = {"adam", "sgd"};
  opt.default_choice = defaults.optimizer == Optimizer::kAdam ? "adam" : "sgd";
  specs.push_back(std::move(opt));
  return specs;
}

template <typename Options>
Options options_from(const std::vector<Field<Options>>& fields, const HyperparameterValues& v) {
  Options o;
  for (const auto& f : fields) o.*(f.member) = v.integer(f.name);
  o.optimizer = *optimizer_from_string(v.choice("optimizer"));
  return o;
}

// Registers one workload of a family: `defaults` are the family's defaults with the suite
// entry's own settings (the layer count) applied.
template <typename Options, typename Generate>
void add_workload(WorkloadRegistry& registry, std::string name, std::string family,
                  std::string description, std::vector<Field<Options>> fields,
                  const Options& defaults, Generate generate) {
  WorkloadInfo info{name, std::move(family), std::move(description), specs_of(fields, defaults)};
  registry.add(std::move(info), [fields, generate, name](const HyperparameterValues& v) {
    return generate(options_from(fields, v), name);
  });
}

constexpr std::int64_t kMaxBatch = 4096;

std::vector<Field<RnnlmOptions>> rnnlm_fields() {
  return {{"layers", "LSTM layers", &RnnlmOptions::layers, 1, 64},
          {"hidden", "LSTM units per layer (= embedding width)", &RnnlmOptions::hidden, 8, 16384},
          {"vocab", "vocabulary size (softmax classes)", &RnnlmOptions::vocab, 2, 2000000},
          {"batch", "sequences per step", &RnnlmOptions::batch, 1, kMaxBatch},
          {"seq_len", "unrolled time steps", &RnnlmOptions::seq_len, 1, 1000}};
}

std::vector<Field<GnmtOptions>> gnmt_fields() {
  return {{"layers", "encoder layers = decoder layers (the first encoder layer bidirectional)",
           &GnmtOptions::layers, 1, 32},
          {"hidden", "LSTM units (= embedding width)", &GnmtOptions::hidden, 8, 16384},
          {"vocab", "wordpiece vocabulary size", &GnmtOptions::vocab, 2, 2000000},
          {"batch", "sentence pairs per step", &GnmtOptions::batch, 1, kMaxBatch},
          {"src_len", "encoder time steps", &GnmtOptions::src_len, 1, 500},
          {"tgt_len", "decoder time steps", &GnmtOptions::tgt_len, 1, 500},
          {"dropout", "1: dropout ops on LSTM inputs, 0: none", &GnmtOptions::dropout, 0, 1}};
}

std::vector<Field<TransformerXlOptions>> transformer_xl_fields() {
  using O = TransformerXlOptions;
  return {{"layers", "transformer layers", &O::layers, 1, 128},
          {"d_model", "model width", &O::d_model, 8, 16384},
          {"heads", "attention heads", &O::heads, 1, 256},
          {"d_head", "width per head", &O::d_head, 1, 1024},
          {"d_inner", "feed-forward width", &O::d_inner, 8, 65536},
          {"seg_len", "tokens per segment", &O::seg_len, 1, 8192},
          {"mem_len", "cached tokens from the previous segment", &O::mem_len, 0, 8192},
          {"batch", "segments per step", &O::batch, 1, kMaxBatch},
          {"vocab", "vocabulary size", &O::vocab, 2, 2000000}};
}

std::vector<Field<InceptionV3Options>> inception_fields() {
  using O = InceptionV3Options;
  return {{"batch", "images per step", &O::batch, 1, kMaxBatch},
          {"image", "input height = width, pixels", &O::image, 75, 2048},
          {"classes", "output classes", &O::classes, 2, 100000}};
}

std::vector<Field<AmoebaNetOptions>> amoebanet_fields() {
  using O = AmoebaNetOptions;
  return {{"batch", "images per step", &O::batch, 1, kMaxBatch},
          {"image", "input height = width, pixels", &O::image, 64, 2048},
          {"cells", "normal cells per stack (N)", &O::cells, 1, 64},
          {"filters", "filters of the first stack (F)", &O::filters, 8, 4096},
          {"classes", "output classes", &O::classes, 2, 100000}};
}

std::vector<Field<WavenetOptions>> wavenet_fields() {
  using O = WavenetOptions;
  return {{"stacks", "stacks of dilated layers", &O::stacks, 1, 32},
          {"layers_per_stack", "layers per stack (dilations 1 .. 2^(n-1))", &O::layers_per_stack, 1,
           16},
          {"residual_channels", "residual channels", &O::residual_channels, 1, 4096},
          {"dilation_channels", "gated convolution channels", &O::dilation_channels, 1, 4096},
          {"skip_channels", "skip channels", &O::skip_channels, 1, 8192},
          {"quantization", "mu-law levels (softmax classes)", &O::quantization, 2, 65536},
          {"batch", "examples per step", &O::batch, 1, kMaxBatch},
          {"samples", "audio samples per example", &O::samples, 1, 10000000}};
}

}  // namespace

// --- HyperparameterSpec / HyperparameterValues ------------------------------------------------

std::string HyperparameterSpec::default_string() const {
  return choices.empty() ? std::to_string(default_value) : default_choice;
}

std::string HyperparameterSpec::allowed() const {
  if (!choices.empty()) return "one of " + join(choices);
  return "[" + std::to_string(min_value) + ", " + std::to_string(max_value) + "]";
}

HyperparameterValues::HyperparameterValues(std::string workload,
                                           const std::vector<HyperparameterSpec>& specs,
                                           const Overrides& overrides) {
  std::vector<std::string> valid;
  for (const auto& s : specs) valid.push_back(s.name);
  for (const auto& given : overrides) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const std::string& key = given.first;
    auto it = std::find_if(specs.begin(), specs.end(),
                           [&](const HyperparameterSpec& s) { return s.name == key; });
    if (it == specs.end()) {
      throw core::InputError("workload '" + workload + "'", "--set " + key,
                             "unknown hyperparameter '" + key + "' (valid: " + join(valid) + ")");
    }
  }
  for (const auto& s : specs) {
    auto it = overrides.find(s.name);
    if (!s.choices.empty()) {
      std::string value = it == overrides.end() ? s.default_choice : it->second;
      if (std::find(s.choices.begin(), s.choices.end(), value) == s.choices.end()) {
        throw core::InputError("workload '" + workload + "'", "--set " + s.name,
                               "'" + value + "' is not allowed: expected " + s.allowed());
      }
      strings_[s.name] = value;
      continue;
    }
    std::int64_t value = s.default_value;
    if (it != overrides.end()) {
      const std::string& text = it->second;
      const auto parsed = core::parse_integer(text);
      if (parsed) value = *parsed;
      if (!parsed || value < s.min_value || value > s.max_value) {
        throw core::InputError("workload '" + workload + "'", "--set " + s.name,
                               "expected an integer in " + s.allowed() + " (" + s.description +
                                   "), found '" + text + "'");
      }
    }
    integers_[s.name] = value;
    strings_[s.name] = std::to_string(value);
  }
}

std::int64_t HyperparameterValues::integer(const std::string& name) const {
  auto it = integers_.find(name);
  GOPT_ASSERT(it != integers_.end(), "no integer hyperparameter '" + name + "'");
  return it->second;
}

const std::string& HyperparameterValues::choice(const std::string& name) const {
  auto it = strings_.find(name);
  GOPT_ASSERT(it != strings_.end(), "no hyperparameter '" + name + "'");
  return it->second;
}

// --- WorkloadRegistry --------------------------------------------------------------------------

void WorkloadRegistry::add(WorkloadInfo info, Generator generator) {
  if (contains(info.name)) throw std::logic_error("workload '" + info.name + "' registered twice");
  entries_.push_back(Entry{std::move(info), std::move(generator)});
}

bool WorkloadRegistry::contains(const std::string& name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.info.name == name; });
}

std::vector<WorkloadInfo> WorkloadRegistry::list() const {
  std::vector<WorkloadInfo> out;
  for (const auto& e : entries_) out.push_back(e.info);
  return out;
}

std::vector<std::string> WorkloadRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.info.name);
  return out;
}

const WorkloadInfo& WorkloadRegistry::info(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.info.name == name) return e.info;
  }
  throw core::InputError("", "workload '" + name + "'",
                         "unknown workload (valid: " + join(names()) + ")");
}

core::Graph WorkloadRegistry::generate(const std::string& name, const Overrides& overrides) const {
  const WorkloadInfo& wi = info(name);
  HyperparameterValues values(name, wi.hyperparameters, overrides);
  for (const auto& e : entries_) {
    if (e.info.name != name) continue;
    core::Graph g = e.generator(values);
    g.set_name(name);
    for (const auto& [k, v] : values.all()) g.mutable_attrs()[k] = v;
    g.mutable_attrs()["workload"] = name;
    return g;
  }
  GOPT_ASSERT(false, "workload vanished");
  return core::Graph();
}

void register_builtin_workloads(WorkloadRegistry& registry) {
  for (std::int64_t layers : {2, 4, 8}) {
    std::string n = std::to_string(layers);
    add_workload(registry, "rnnlm_" + n, "rnnlm",
                 "RNN language model, " + n + " LSTM layers of 2048 units unrolled 40 steps",
                 rnnlm_fields(), RnnlmOptions().with_layers(layers), generate_rnnlm);
  }
  for (std::int64_t layers : {2, 4, 8}) {
    std::string n = std::to_string(layers);
    add_workload(registry, "gnmt_" + n, "gnmt",
                 "GNMT translation, " + n + "+" + n +
                     " LSTM layers with attention, 50 source and 50 target steps",
                 gnmt_fields(), GnmtOptions().with_layers(layers), generate_gnmt);
  }
  for (std::int64_t layers : {2, 4, 8}) {
    std::string n = std::to_string(layers);
    add_workload(registry, "transformer_xl_" + n, "transformer_xl",
                 "Transformer-XL language model, " + n +
                     " layers, d_model 512, 128-token segments with 128-token memory",
                 transformer_xl_fields(), TransformerXlOptions().with_layers(layers),
                 generate_transformer_xl);
  }
  add_workload(registry, "inception_v3", "inception",
               "Inception-v3 image classifier, 299x299 images, batch 32", inception_fields(),
               InceptionV3Options(), generate_inception_v3);
  add_workload(registry, "amoebanet", "amoebanet",
               "AmoebaNet-A (N=6, F=190) image classifier, 331x331 images, batch 16",
               amoebanet_fields(), AmoebaNetOptions(), generate_amoebanet);
  for (std::int64_t stacks : {2, 4, 5}) {
    std::string n = std::to_string(stacks);
    add_workload(registry, "wavenet_" + n, "wavenet",
                 "WaveNet, " + n + " stacks of 10 dilated causal conv layers, 100k samples",
                 wavenet_fields(), WavenetOptions().with_stacks(stacks), generate_wavenet);
  }
}

void parse_override(const std::string& assignment, Overrides& overrides) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw core::InputError("", "--set " + assignment, "expected key=value");
  }
  overrides[assignment.substr(0, eq)] = assignment.substr(eq + 1);
}

core::Graph load_graph(const std::string& name_or_path, const WorkloadRegistry& registry,
                       const LoadOptions& options) {
  if (registry.contains(name_or_path)) return registry.generate(name_or_path, options.overrides);
  std::error_code ec;
  std::filesystem::path path(name_or_path);
  if (!std::filesystem::exists(path, ec)) {
    throw core::InputError(name_or_path, "",
                           "no such file, and not a suite workload" +
                               core::did_you_mean(name_or_path, registry.names()) +
                               " (valid workloads: " + join(registry.names()) + ")");
  }
  if (!options.overrides.empty()) {
    throw core::InputError(name_or_path, "--set",
                           "hyperparameter overrides apply to suite workloads, not to files");
  }
  if (path.extension() == ".onnx") {
    OnnxImportOptions io;
    io.batch = options.onnx_batch;
    io.training = options.onnx_training;
    return import_onnx(path, io).graph;
  }
  return core::read_graph_file(path);
}

std::string size_cells_markdown(const core::Graph& g) {
  auto s = core::summarize(core::CompiledGraph::compile(g));
  auto params = g.attrs().find("num_parameters");
  std::ostringstream out;
  out << s.num_nodes << " | " << s.num_edges << " | " << core::format_flops(s.total_flops) << " | "
      << (params == g.attrs().end() ? "?" : params->second) << " | "
      << core::format_bytes(static_cast<double>(s.total_param_bytes));
  return out.str();
}

std::string suite_table_markdown(const WorkloadRegistry& registry) {
  std::ostringstream out;
  out << "| graph | family | nodes | edges | FLOPs per step | parameters | parameter bytes "
         "(with optimizer slots) | default hyperparameters |\n";
  out << "|---|---|---:|---:|---:|---:|---:|---|\n";
  for (const auto& wi : registry.list()) {
    std::vector<std::string> hp;
    for (const auto& spec : wi.hyperparameters)
      hp.push_back(spec.name + "=" + spec.default_string());
    out << "| " << wi.name << " | " << wi.family << " | "
        << size_cells_markdown(registry.generate(wi.name)) << " | " << join(hp, " ") << " |\n";
  }
  return out.str();
}

}  // namespace gopt::datasets
