#include "agents/go/go_checkpoint.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/errors.h"
#include "core/strings.h"

#include <unistd.h>

namespace gopt::agents::go {
namespace {

// The options text is integers: every member a checkpoint records is an integer or a bool.
constexpr bool saved_members_are_integers() {
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (m.saved && std::holds_alternative<GoPolicyMember::Number>(m.access)) return false;
  }
  return true;
}
static_assert(saved_members_are_integers(), "a recorded policy member that is no integer");

// The one recorded field that is no member: the features per op the policy reads.
constexpr const char* kFeaturesKey = "features";

// What a checkpoint's options text records, by key: every saved member of kGoPolicyMembers
// (bools as 0/1) and the features per op, so that fine-tuning and zero-shot rebuild the
// network the checkpoint was trained with, and refuse one that reads other features.
std::map<std::string, std::int64_t> recorded_fields(GoPolicyOptions o) {
  std::map<std::string, std::int64_t> fields;
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (!m.saved) continue;
    std::visit(
        [&](auto accessor) {
          const auto value = o.*accessor;
          if constexpr (std::is_integral_v<decltype(value)>) {
            fields[m.name] = static_cast<std::int64_t>(value);
          }
        },
        m.access);
  }
  fields[kFeaturesKey] = kNumericFeatures;
  return fields;
}

// The fields a version-1 file may lack, with the value its policy had: the multi-task
// fields (a placement-only policy), unit decisions (per op) and the feature count (before
// the memory columns, 20 per op).
const std::map<std::string, std::int64_t>& version1_defaults() {
  static const std::map<std::string, std::int64_t> defaults = {
      {"place", 1},           {"schedule", 0},      {"fuse", 0},           {"task_layers", 0},
      {"priority_levels", 8}, {"fusion_levels", 4}, {"unit_decisions", 0}, {"features", 20}};
  return defaults;
}

// A field version 2 records from a minor version on, with the value its policy had in a
// file of an earlier one (or of version 1). Checkpoints and snapshots alike.
struct MinorField {
  std::int64_t minor_version;
  const char* key;
  std::int64_t before;
};
constexpr MinorField kVersion2MinorFields[] = {
    {1, "unit_gate", 0},  // no gate
};

// "2.1".
std::string version_text(std::int64_t version, std::int64_t minor_version) {
  return std::to_string(version) + "." + std::to_string(minor_version);
}

// The format tag, version and minor version an archive records ("", 0 and 0 when it
// records none: a file from before minor versions is minor 0).
struct Format {
  std::string tag;
  std::int64_t version = 0;
  std::int64_t minor_version = 0;
};

Format read_format(torch::serialize::InputArchive& archive) {
  Format format;
  c10::IValue v;
  if (archive.try_read("format", v) && v.isString()) format.tag = v.toStringRef();
  if (archive.try_read("version", v) && v.isInt()) format.version = v.toInt();
  if (archive.try_read("minor_version", v) && v.isInt()) format.minor_version = v.toInt();
  return format;
}

void write_format(torch::serialize::OutputArchive& archive, const char* tag, std::int64_t version,
                  std::int64_t minor_version) {
  archive.write("format", c10::IValue(std::string(tag)));
  archive.write("version", c10::IValue(version));
  archive.write("minor_version", c10::IValue(minor_version));
}

// Whether this build reads files of `format`'s version: 1 to the current version, and of
// the current version up to its current minor version (a later minor adds fields this build
// would not read).
bool readable(const Format& format, std::int64_t version, std::int64_t minor_version) {
  return format.version >= 1 && format.version <= version &&
         (format.version < version || format.minor_version <= minor_version);
}

void check_version(const Format& format, std::int64_t version, std::int64_t minor_version,
                   const std::string& what, const std::string& path) {
  if (!readable(format, version, minor_version)) {
    const std::string found = format.version == version
                                  ? version_text(format.version, format.minor_version)
                                  : std::to_string(format.version);
    throw core::InputError(path, "version",
                           what + " version " + found + " is not one this build reads (1 to " +
                               version_text(version, minor_version) + ")");
  }
}

// The policy an archive of `format` records: its "options" text (returned in
// `options_text`) and its "policy" parameters. LibTorch errors propagate.
GoPolicy read_policy(torch::serialize::InputArchive& archive, const Format& format,
                     const std::string& path, std::string& options_text) {
  c10::IValue text;
  archive.read("options", text);
  options_text = text.toStringRef();
  GoPolicy policy(parse_policy_options(options_text, format.version, path, format.minor_version));
  torch::serialize::InputArchive policy_archive;
  archive.read("policy", policy_archive);
  policy->load(policy_archive);
  return policy;
}

// The parameters and optimizer state of the file at `path` are read from `archive` (every
// tensor on the CPU) when `device` is the CPU; else from the file read again into `copy`
// with every tensor on `device`. A policy on a GPU is written with its tensors there; the
// CPU reading of every other field keeps such files readable on machines without one.
torch::serialize::InputArchive& on_device(torch::serialize::InputArchive& archive,
                                          torch::serialize::InputArchive& copy,
                                          const std::string& path, torch::Device device) {
  if (device.is_cpu()) return archive;
  copy.load_from(path, device);
  return copy;
}

void write_policy_and_optimizer(torch::serialize::OutputArchive& archive,
                                const TrainedPolicy& trained) {
  torch::serialize::OutputArchive policy_archive;
  trained.policy->save(policy_archive);
  archive.write("policy", policy_archive);
  torch::serialize::OutputArchive optimizer_archive;
  trained.optimizer->save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
}

// Writes `archive` to `path` through a temporary file and a rename, so that a reader (or a
// later run, after a crash mid-write) never sees half a file; `what` names it in errors.
// The temporary file is the writer's own (`<path>.tmp-<pid>-<count>`): the members of a
// data-parallel learner on one machine write the same file at the same update.
void save_atomically(torch::serialize::OutputArchive& archive, const std::string& path,
                     const std::string& what) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  static std::atomic<std::uint64_t> writes{0};
  const std::string temporary =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(writes++);
  try {
    archive.save_to(temporary);
  } catch (const c10::Error& e) {
    throw core::Error("writing " + what + " " + path + ": " + e.what_without_backtrace());
  }
  std::filesystem::rename(temporary, target);
}

void write_ints(torch::serialize::OutputArchive& archive, const std::string& key,
                const std::vector<std::int32_t>& values) {
  auto t = torch::empty({static_cast<std::int64_t>(values.size())}, torch::kInt);
  std::copy(values.begin(), values.end(), t.data_ptr<std::int32_t>());
  archive.write(key, t);
}

std::optional<std::vector<std::int32_t>> read_ints(torch::serialize::InputArchive& archive,
                                                   const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t)) return std::nullopt;
  t = t.to(torch::kInt).contiguous();
  const auto* p = t.data_ptr<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

// The learning curve as a [points, 5] double tensor: step, samples, best and mean step
// time, wall seconds.
torch::Tensor curve_tensor(const std::vector<LearningCurvePoint>& points) {
  auto curve = torch::empty({static_cast<std::int64_t>(points.size()), 5}, torch::kDouble);
  auto c = curve.accessor<double, 2>();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto row = static_cast<std::int64_t>(i);
    c[row][0] = static_cast<double>(points[i].step);
    c[row][1] = static_cast<double>(points[i].samples);
    c[row][2] = points[i].best_step_time_s;
    c[row][3] = points[i].mean_step_time_s;
    c[row][4] = points[i].wall_s;
  }
  return curve;
}

std::vector<LearningCurvePoint> curve_points(torch::Tensor curve) {
  curve = curve.to(torch::kDouble).contiguous();
  std::vector<LearningCurvePoint> points;
  auto c = curve.accessor<double, 2>();
  for (std::int64_t row = 0; row < curve.size(0); ++row) {
    LearningCurvePoint p;
    p.step = static_cast<std::int64_t>(c[row][0]);
    p.samples = static_cast<std::int64_t>(c[row][1]);
    p.best_step_time_s = c[row][2];
    p.mean_step_time_s = c[row][3];
    p.wall_s = c[row][4];
    points.push_back(p);
  }
  return points;
}

// Reads a snapshot's per-graph state; false when it is not for graphs of `task_nodes` ops.
// Each graph's improvements are required from snapshot version 2.2 on.
bool read_tasks(torch::serialize::InputArchive& archive, const Format& format,
                const std::vector<std::int64_t>& task_nodes,
                std::vector<TrainingSnapshot::Task>& tasks) {
  const bool improvements_required =
      format.version > 2 || (format.version == 2 && format.minor_version >= 2);
  c10::IValue v;
  archive.read("tasks", v);
  if (v.toInt() != static_cast<std::int64_t>(task_nodes.size())) return false;
  for (std::size_t i = 0; i < task_nodes.size(); ++i) {
    archive.read("task" + std::to_string(i) + ".nodes", v);
    if (v.toInt() != task_nodes[i]) return false;
  }
  for (std::size_t i = 0; i < task_nodes.size(); ++i) {
    const std::string key = "task" + std::to_string(i) + ".";
    TrainingSnapshot::Task t;
    t.nodes = task_nodes[i];
    archive.read(key + "samples", v);
    t.samples = v.toInt();
    archive.read(key + "best_s", v);
    t.best_s = v.toDouble();
    archive.read(key + "reference_s", v);
    t.reference_s = v.toDouble();
    t.best.placement = read_ints(archive, key + "placement");
    t.best.priority = read_ints(archive, key + "priority");
    t.best.fusion = read_ints(archive, key + "fusion");
    torch::Tensor improvements;
    if (archive.try_read(key + "improvements", improvements)) {
      if (improvements.dim() != 2 || improvements.size(1) != 2) return false;
      improvements = improvements.to(torch::kDouble).contiguous();
      auto c = improvements.accessor<double, 2>();
      for (std::int64_t row = 0; row < improvements.size(0); ++row) {
        t.improvements.push_back({static_cast<std::int64_t>(c[row][0]), c[row][1]});
      }
    } else if (improvements_required) {
      return false;
    } else if (t.samples > 0 && std::isfinite(t.best_s)) {
      t.improvements.push_back({t.samples, t.best_s});
    }
    tasks.push_back(std::move(t));
  }
  return true;
}

// The model selection's state. A version-1 snapshot from before validation existed has
// none: no check yet (the defaults).
void read_model_selection(torch::serialize::InputArchive& archive, std::int64_t version,
                          TrainingSnapshot& snapshot) {
  c10::IValue best;
  c10::IValue steps;
  if (version < 2) {
    if (archive.try_read("best_validation", best)) snapshot.best_validation = best.toDouble();
    if (archive.try_read("best_validation_steps", steps)) {
      snapshot.best_validation_steps = steps.toInt();
    }
    return;
  }
  archive.read("best_validation", best);
  archive.read("best_validation_steps", steps);
  snapshot.best_validation = best.toDouble();
  snapshot.best_validation_steps = steps.toInt();
}

}  // namespace

void TrainedPolicy::make_optimizer(double learning_rate) {
  optimizer = std::make_unique<torch::optim::Adam>(policy->parameters(),
                                                   torch::optim::AdamOptions(learning_rate));
}

void TrainedPolicy::set_learning_rate(double learning_rate) {
  for (auto& group : optimizer->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(learning_rate);
  }
}

std::string policy_options_text(const GoPolicyOptions& options) {
  std::string text;
  for (const auto& [key, value] : recorded_fields(options)) {
    if (!text.empty()) text += ";";
    text += key + "=" + std::to_string(value);
  }
  return text;
}

void migrate_policy_fields(std::map<std::string, std::int64_t>& fields) {
  for (const auto& [key, value] : version1_defaults()) fields.emplace(key, value);
}

GoPolicyOptions parse_policy_options(const std::string& text, std::int64_t version,
                                     const std::string& path, std::int64_t minor_version) {
  std::map<std::string, std::int64_t> values;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    const auto value = core::parse_integer(std::string_view(item).substr(eq + 1));
    if (!value) throw core::InputError(path, "options", "unreadable policy option '" + item + "'");
    values[item.substr(0, eq)] = *value;
  }
  if (version < 2) migrate_policy_fields(values);
  for (const MinorField& field : kVersion2MinorFields) {
    if (version < 2 || (version == 2 && minor_version < field.minor_version)) {
      values.emplace(field.key, field.before);
    }
  }
  const auto recorded = recorded_fields(GoPolicyOptions());
  for (const auto& field : recorded) {  // by key: the first missing one alphabetically
    if (values.count(field.first) == 0) {
      throw core::InputError(path, "options",
                             "the checkpoint does not record '" + field.first + "'");
    }
  }
  if (values[kFeaturesKey] != kNumericFeatures) {
    throw core::InputError(
        path, "options.features",
        "the policy reads " + std::to_string(values[kFeaturesKey]) +
            " features per op (a file of format version " + version_text(version, minor_version) +
            ") and this build needs features=" + std::to_string(kNumericFeatures) +
            ": pretrain it again");
  }
  GoPolicyOptions options;
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (!m.saved) continue;
    const std::int64_t value = values.at(m.name);
    std::visit(
        [&](auto accessor) {
          auto& member = options.*accessor;
          using T = std::remove_reference_t<decltype(member)>;
          if constexpr (std::is_same_v<T, bool>) {
            member = value != 0;
          } else if constexpr (std::is_integral_v<T>) {
            member = static_cast<T>(value);
          }
        },
        m.access);
  }
  return options;
}

void read_or_input_error(const std::string& path, const std::string& field, const std::string& what,
                         const std::function<void()>& read) {
  std::string problem;
  try {
    read();
  } catch (const c10::Error& e) {
    problem = e.what_without_backtrace();
  } catch (const torch::jit::ObjectAttributeError& e) {  // a field the version requires
    problem = e.what();
  }
  if (!problem.empty()) {
    throw core::InputError(path, field, what + ": " + problem.substr(0, problem.find('\n')));
  }
}

void save_checkpoint(const std::string& path, const TrainedPolicy& trained) {
  torch::serialize::OutputArchive archive;
  write_format(archive, kCheckpointFormat, kCheckpointVersion, kCheckpointMinorVersion);
  archive.write("options", c10::IValue(policy_options_text(trained.policy->options)));
  archive.write("steps", c10::IValue(trained.updates));
  write_policy_and_optimizer(archive, trained);
  save_atomically(archive, path, "GO checkpoint");
}

TrainedPolicy load_checkpoint(const std::string& path, double learning_rate, torch::Device device) {
  if (!std::filesystem::exists(path)) {
    throw core::InputError(path, "checkpoint", "no such file (run go_pretrain first)");
  }
  TrainedPolicy trained;
  read_or_input_error(path, "checkpoint", "corrupt or mismatched GO checkpoint", [&] {
    torch::serialize::InputArchive archive;
    archive.load_from(path, torch::Device(torch::kCPU));
    const Format format = read_format(archive);
    if (format.tag != kCheckpointFormat) {
      throw core::InputError(path, "format", "not a GO checkpoint (no gopt-go-checkpoint tag)");
    }
    check_version(format, kCheckpointVersion, kCheckpointMinorVersion, "checkpoint", path);
    c10::IValue steps;
    archive.read("steps", steps);
    std::string options_text;
    trained.policy = read_policy(archive, format, path, options_text);
    trained.policy->to(device);
    trained.make_optimizer(learning_rate);
    torch::serialize::InputArchive optimizer_archive;
    torch::serialize::InputArchive copy;
    on_device(archive, copy, path, device).read("optimizer", optimizer_archive);
    trained.optimizer->load(optimizer_archive);
    trained.set_learning_rate(learning_rate);
    trained.updates = steps.toInt();
  });
  return trained;
}

GoPolicy read_any_policy(const std::string& path, std::int64_t& updates,
                         std::string& options_text) {
  torch::serialize::InputArchive archive;
  archive.load_from(path, torch::Device(torch::kCPU));
  const Format format = read_format(archive);
  const bool checkpoint = format.tag == kCheckpointFormat;
  if (!checkpoint && format.tag != kSnapshotFormat) {
    throw core::InputError(path, "format", "not a GO checkpoint or training snapshot");
  }
  check_version(format, checkpoint ? kCheckpointVersion : kSnapshotVersion,
                checkpoint ? kCheckpointMinorVersion : kSnapshotMinorVersion,
                checkpoint ? "checkpoint" : "training snapshot", path);
  c10::IValue steps;
  archive.read(checkpoint ? "steps" : "trained_steps", steps);
  updates = steps.toInt();
  return read_policy(archive, format, path, options_text);
}

void write_snapshot(const std::string& path, const TrainingSnapshot& snapshot,
                    const TrainedPolicy& policy) {
  torch::serialize::OutputArchive archive;
  write_format(archive, kSnapshotFormat, kSnapshotVersion, kSnapshotMinorVersion);
  archive.write("identity", c10::IValue(snapshot.identity));
  archive.write("options", c10::IValue(snapshot.options));
  archive.write("steps", c10::IValue(snapshot.steps));
  archive.write("trained_steps", c10::IValue(snapshot.updates));
  archive.write("best_validation", c10::IValue(snapshot.best_validation));
  archive.write("best_validation_steps", c10::IValue(snapshot.best_validation_steps));
  archive.write("rng", c10::IValue(snapshot.rng));
  archive.write("generator", snapshot.generator);
  write_policy_and_optimizer(archive, policy);
  archive.write("tasks", c10::IValue(static_cast<std::int64_t>(snapshot.tasks.size())));
  for (std::size_t i = 0; i < snapshot.tasks.size(); ++i) {
    const std::string key = "task" + std::to_string(i) + ".";
    const TrainingSnapshot::Task& task = snapshot.tasks[i];
    archive.write(key + "nodes", c10::IValue(task.nodes));
    archive.write(key + "samples", c10::IValue(task.samples));
    archive.write(key + "best_s", c10::IValue(task.best_s));
    archive.write(key + "reference_s", c10::IValue(task.reference_s));
    if (task.best.placement) write_ints(archive, key + "placement", *task.best.placement);
    if (task.best.priority) write_ints(archive, key + "priority", *task.best.priority);
    if (task.best.fusion) write_ints(archive, key + "fusion", *task.best.fusion);
    // [improvements, 2] doubles: samples, step time (sample counts stay exact below 2^53).
    auto improvements =
        torch::empty({static_cast<std::int64_t>(task.improvements.size()), 2}, torch::kDouble);
    auto c = improvements.accessor<double, 2>();
    for (std::size_t j = 0; j < task.improvements.size(); ++j) {
      const auto row = static_cast<std::int64_t>(j);
      c[row][0] = static_cast<double>(task.improvements[j].samples);
      c[row][1] = task.improvements[j].step_time_s;
    }
    archive.write(key + "improvements", improvements);
  }
  archive.write("curve", curve_tensor(snapshot.curve));
  save_atomically(archive, path, "training snapshot");
}

std::optional<SnapshotFile> read_snapshot(const std::string& path, const std::string& identity,
                                          const std::string& options_text,
                                          const std::vector<std::int64_t>& task_nodes,
                                          torch::Device device) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    SnapshotFile file;
    torch::serialize::InputArchive archive;
    archive.load_from(path, torch::Device(torch::kCPU));
    const Format format = read_format(archive);
    c10::IValue v;
    auto text = [&](const char* key) {
      return archive.try_read(key, v) && v.isString() ? v.toStringRef() : std::string();
    };
    TrainingSnapshot& s = file.snapshot;
    s.identity = text("identity");
    s.options = text("options");
    if (format.tag != kSnapshotFormat ||
        !readable(format, kSnapshotVersion, kSnapshotMinorVersion) || s.identity != identity ||
        s.options != options_text || !read_tasks(archive, format, task_nodes, s.tasks)) {
      return std::nullopt;
    }
    archive.read("steps", v);
    s.steps = v.toInt();
    archive.read("trained_steps", v);
    s.updates = v.toInt();
    read_model_selection(archive, format.version, s);
    s.rng = text("rng");
    archive.read("generator", s.generator);
    torch::Tensor curve;
    archive.read("curve", curve);
    s.curve = curve_points(curve);
    torch::serialize::InputArchive copy;
    auto& parameters = on_device(archive, copy, path, device);
    parameters.read("policy", file.policy);
    parameters.read("optimizer", file.optimizer);
    return file;
  } catch (const c10::Error&) {
    return std::nullopt;
  } catch (const torch::jit::ObjectAttributeError&) {  // a field the version requires
    return std::nullopt;
  }
}

}  // namespace gopt::agents::go
