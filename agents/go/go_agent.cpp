#include "agents/go/go_agent.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "agents/baselines/tf_default.h"
#include "agents/go/go_inspect.h"
#include "agents/go/go_memory_repair.h"
#include "agents/torch_utils.h"
#include "core/errors.h"
#include "core/rng.h"

namespace gopt::agents::go {
namespace {

using Clock = std::chrono::steady_clock;

// Training snapshots (TrainSnapshots): everything run_ppo's remaining updates depend on.
constexpr const char* kSnapshotFormat = "gopt-go-training-snapshot";
constexpr std::int64_t kSnapshotVersion = 1;

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

// Writes `archive` to `path` through a temporary file and a rename, so that a reader (or a
// later run, after a crash mid-write) never sees half a file; `what` names it in errors.
void save_atomically(torch::serialize::OutputArchive& archive, const std::string& path,
                     const std::string& what) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  const std::string temporary = path + ".tmp";
  try {
    archive.save_to(temporary);
  } catch (const c10::Error& e) {
    throw core::Error("writing " + what + " " + path + ": " + e.what_without_backtrace());
  }
  std::filesystem::rename(temporary, target);
}

std::string engine_text(core::Rng& rng) {
  std::ostringstream s;
  s << rng.engine();
  return s.str();
}

const char* mode_name(GoMode mode) {
  switch (mode) {
    case GoMode::kOne:
      return "go_one";
    case GoMode::kPretrain:
      return "go_pretrain";
    case GoMode::kFinetune:
      return "go_finetune";
    case GoMode::kZeroShot:
      return "go_zero_shot";
  }
  return "go";
}

// The policy options as text and back; the checkpoint stores them so that fine-tuning and
// zero-shot rebuild the network the checkpoint was trained with.
std::map<std::string, std::int64_t> policy_fields(const GoPolicyOptions& o) {
  return {{"hidden", o.hidden()},
          {"kind_embedding", o.kind_embedding()},
          {"sage_layers", o.sage_layers()},
          {"attention_layers", o.attention_layers()},
          {"heads", o.heads()},
          {"segment_length", o.segment_length()},
          {"max_devices", o.max_devices()},
          {"refine_passes", o.refine_passes()},
          {"modulation", o.modulation() ? 1 : 0},
          {"place", o.place() ? 1 : 0},
          {"schedule", o.schedule() ? 1 : 0},
          {"fuse", o.fuse() ? 1 : 0},
          {"task_layers", o.task_layers() ? 1 : 0},
          {"priority_levels", o.priority_levels()},
          {"fusion_levels", o.fusion_levels()},
          {"unit_decisions", o.unit_decisions() ? 1 : 0},
          {"features", kNumericFeatures}};
}

// Fields added after the first checkpoints: the multi-task ones (older files hold a
// placement-only policy, which is what their defaults describe), unit decisions (off
// before 2026-11-25) and the feature count (an
// older file's policy reads kFeaturesBeforeMemoryColumns).
bool optional_field(const std::string& key) {
  return key == "place" || key == "schedule" || key == "fuse" || key == "task_layers" ||
         key == "priority_levels" || key == "fusion_levels" || key == "unit_decisions" ||
         key == "features";
}

// Node features per op of the policies written before the count was recorded.
constexpr std::int64_t kFeaturesBeforeMemoryColumns = 20;

GoPolicyOptions parse_policy_fields(const std::string& text, const std::string& path) {
  std::map<std::string, std::int64_t> values;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ';')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    try {
      values[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      throw core::InputError(path, "options", "unreadable policy option '" + item + "'");
    }
  }
  GoPolicyOptions o;
  for (const auto& [key, value] : policy_fields(o)) {
    if (values.count(key)) continue;
    if (!optional_field(key)) {
      throw core::InputError(path, "options", "the checkpoint does not record '" + key + "'");
    }
    values[key] = key == "features" ? kFeaturesBeforeMemoryColumns : value;
  }
  if (values["features"] != kNumericFeatures) {
    throw core::InputError(path, "options.features",
                           "the policy reads " + std::to_string(values["features"]) +
                               " features per op and this build computes " +
                               std::to_string(kNumericFeatures) +
                               " (a GO policy from before 2026-11-22: pretrain it again)");
  }
  o.hidden(values["hidden"])
      .kind_embedding(values["kind_embedding"])
      .sage_layers(values["sage_layers"])
      .attention_layers(values["attention_layers"])
      .heads(values["heads"])
      .segment_length(values["segment_length"])
      .max_devices(values["max_devices"])
      .refine_passes(values["refine_passes"])
      .modulation(values["modulation"] != 0)
      .place(values["place"] != 0)
      .schedule(values["schedule"] != 0)
      .fuse(values["fuse"] != 0)
      .task_layers(values["task_layers"] != 0)
      .priority_levels(values["priority_levels"])
      .fusion_levels(values["fusion_levels"])
      .unit_decisions(values["unit_decisions"] != 0);
  return o;
}

// The policy an archive (checkpoint or training snapshot) records: its "options" text
// (returned in `options_text`) and its "policy" parameters. LibTorch errors propagate.
GoPolicy read_policy(torch::serialize::InputArchive& archive, const std::string& path,
                     std::string& options_text) {
  c10::IValue text;
  archive.read("options", text);
  options_text = text.toStringRef();
  GoPolicy policy(parse_policy_fields(options_text, path));
  torch::serialize::InputArchive policy_archive;
  archive.read("policy", policy_archive);
  policy->load(policy_archive);
  return policy;
}

class GoAgent final : public TransferableAgent {
 public:
  explicit GoAgent(GoOptions options) : options_(std::move(options)) {}

  std::string name() const override {
    return options_.name.empty() ? mode_name(options_.mode) : options_.name;
  }
  // Zero-shot too: it does not learn, but it simulates the greedy placement (and its memory
  // repairs) on the environment, so that the samples it took are counted.
  bool is_learner() const override { return true; }
  std::string checkpoint_path() const override { return options_.checkpoint; }

  core::Decision propose(const Problem& problem) override {
    auto it = best_.find(&problem.graph);
    if (it != best_.end() && it->second.first == problem.num_devices()) {
      return it->second.second;
    }
    if (!policy_) {
      if (options_.mode == GoMode::kFinetune || options_.mode == GoMode::kZeroShot) {
        load_checkpoint();
      } else {
        create_policy(core::mix_seed(options_.seed, problem.seed));
      }
    }
    check_devices(problem);
    const DecisionBase base = base_for(problem);
    GraphTensors tensors = make_graph_tensors(problem.graph);
    set_priors(tensors, base, problem.graph);
    const SubnormalsFlushed flushed;
    return greedy_decision(policy_, tensors, problem, base);
  }

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    switch (options_.mode) {
      case GoMode::kZeroShot:
        place_zero_shot(env);
        return;
      case GoMode::kPretrain:
        train_on_set({&env}, budget, observer);
        return;
      case GoMode::kOne:
        create_policy(core::mix_seed(options_.seed, env.problem().seed));
        if (options_.oversize_learning_rate > 0 && oversize(env)) {
          set_learning_rate(options_.oversize_learning_rate);
        }
        break;
      case GoMode::kFinetune:
        if (!policy_) load_checkpoint();
        rng_ = core::Rng(core::mix_seed(options_.seed, env.problem().seed));
        break;
    }
    std::vector<PpoTask> tasks;
    add_task(tasks, env);
    const std::int64_t cap =
        options_.mode == GoMode::kFinetune ? options_.finetune_steps : budget.max_steps;
    run_ppo(tasks, 1, budget, cap, observer);
  }

  void train_on_set(const std::vector<Environment*>& environments, const TrainBudget& budget,
                    TrainingObserver* observer) override {
    if (environments.empty()) {
      throw core::Error(name() + ": pretraining needs at least one training graph");
    }
    create_policy(core::mix_seed(options_.seed, environments.front()->problem().seed));
    std::vector<PpoTask> tasks;
    for (auto* env : environments) add_task(tasks, *env);
    const auto n = static_cast<std::int64_t>(tasks.size());
    const std::int64_t per_batch =
        options_.graphs_per_batch > 0 ? std::min(options_.graphs_per_batch, n) : n;
    validation_graphs_.clear();
    if (!validation_.empty()) {
      if (options_.checkpoint.empty()) {
        throw core::Error(name() +
                          ": validation graphs need a checkpoint file to keep the best "
                          "policy in");
      }
      for (auto* env : validation_) {
        check_devices(env->problem());
        ValidationGraph v{env, base_for(env->problem()), make_graph_tensors(env->problem().graph)};
        set_priors(v.tensors, v.base, env->problem().graph);
        validation_graphs_.push_back(std::move(v));
      }
    }
    best_validation_ = std::numeric_limits<double>::infinity();
    best_validation_steps_ = 0;
    run_ppo(tasks, per_batch, budget, budget.max_steps, observer);
    validation_graphs_.clear();
    if (validation_.empty()) {
      checkpoint_steps_ = trained_steps_;
      if (!options_.checkpoint.empty()) save_checkpoint(options_.checkpoint);
    } else {
      // The checkpoint was written at each new best (validate()), the last update included.
      checkpoint_steps_ = best_validation_steps_;
    }
  }

  void set_validation(std::vector<Environment*> environments) override {
    validation_ = std::move(environments);
  }
  std::int64_t checkpoint_steps() const override { return checkpoint_steps_; }

  void save_checkpoint(const std::string& path) const override {
    if (!policy_) throw core::Error(name() + ": no policy to save (train first)");
    torch::serialize::OutputArchive archive;
    archive.write("format", c10::IValue(std::string(kCheckpointFormat)));
    archive.write("version", c10::IValue(kCheckpointVersion));
    archive.write("options", c10::IValue(policy_options_text(policy_->options)));
    archive.write("steps", c10::IValue(trained_steps_));
    write_policy_and_optimizer(archive);
    save_atomically(archive, path, "GO checkpoint");
  }

 private:
  void create_policy(std::uint64_t seed) {
    rng_ = core::Rng(seed);
    policy_ = GoPolicy(options_.policy);
    initialise(*policy_, rng_);
    policy_->reset_heads();
    // A task with a prior starts exactly at the default: its head's random logits would
    // otherwise compete with the prior (the placement head starts at 3x the usual scale).
    const auto& o = options_.policy;
    if (options_.placement_prior > 0 && o.place()) policy_->zero_head(GoTask::kPlacement);
    if (options_.priority_prior > 0 && o.schedule()) policy_->zero_head(GoTask::kScheduling);
    if (options_.fusion_prior > 0 && o.fuse()) policy_->zero_head(GoTask::kFusion);
    make_optimizer();
    trained_steps_ = 0;
    best_.clear();
  }

  void make_optimizer() {
    optimizer_ = std::make_unique<torch::optim::Adam>(
        policy_->parameters(), torch::optim::AdamOptions(options_.ppo.learning_rate));
  }

  void set_learning_rate(double learning_rate) {
    for (auto& group : optimizer_->param_groups()) {
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(learning_rate);
    }
  }

  // Whether the graph runs out of memory with every op on one device. Asked of the
  // simulator directly: a property of the problem, not a sample of the search.
  static bool oversize(Environment& env) { return env.simulator().simulate(core::Decision{}).oom; }

  void load_checkpoint() {
    const std::string& path = options_.checkpoint;
    if (path.empty()) {
      throw core::InputError("", std::string("agents.") + name() + ".checkpoint",
                             "no checkpoint given: " + name() +
                                 " needs a pretrained policy (run go_pretrain first, or set "
                                 "the option 'checkpoint')");
    }
    if (!std::filesystem::exists(path)) {
      throw core::InputError(path, "checkpoint", "no such file (run go_pretrain first)");
    }
    torch::serialize::InputArchive archive;
    std::string problem;
    try {
      archive.load_from(path);
      c10::IValue format;
      if (!archive.try_read("format", format) || !format.isString() ||
          format.toStringRef() != kCheckpointFormat) {
        throw core::InputError(path, "format", "not a GO checkpoint (no gopt-go-checkpoint tag)");
      }
      c10::IValue version;
      archive.read("version", version);
      if (!version.isInt() || version.toInt() != kCheckpointVersion) {
        throw core::InputError(path, "version",
                               "checkpoint version is not " + std::to_string(kCheckpointVersion) +
                                   ", the version this build reads");
      }
      c10::IValue steps;
      archive.read("steps", steps);
      std::string options_text;
      policy_ = read_policy(archive, path, options_text);
      make_optimizer();
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer_->load(optimizer_archive);
      set_learning_rate(options_.ppo.learning_rate);
      trained_steps_ = steps.toInt();
    } catch (const c10::Error& e) {
      problem = e.what_without_backtrace();
    }
    if (!problem.empty()) {
      policy_ = GoPolicy(nullptr);
      optimizer_.reset();
      auto line = problem.find('\n');
      throw core::InputError(path, "checkpoint",
                             "corrupt or mismatched GO checkpoint: " + problem.substr(0, line));
    }
    rng_ = core::Rng(options_.seed);
  }

  DecisionBase base_for(const Problem& problem) const {
    DecisionBase base = options_.base ? options_.base(problem) : DecisionBase{};
    const bool decides_placement = policy_ ? policy_->options.place() : options_.policy.place();
    if (base.xla_fusion && !decides_placement) {
      // The placement is fixed, so is its rule-based fusion: form it once, not per sample.
      const auto& placement = base.decision.placement;
      base.decision.fusion = xla_fusion_priorities(
          problem.graph, placement ? placement->data() : nullptr, XlaFusionOptions());
      base.xla_fusion = false;
    }
    return base;
  }

  // The greedy placement of the loaded policy, moved into memory if it does not fit
  // (memory_fitting_decision); no parameter changes.
  void place_zero_shot(Environment& env) {
    if (!policy_) load_checkpoint();
    const Problem& problem = env.problem();
    check_devices(problem);
    const DecisionBase base = base_for(problem);
    GraphTensors tensors = make_graph_tensors(problem.graph);
    set_priors(tensors, base, problem.graph);
    const SubnormalsFlushed flushed;
    best_[&problem.graph] = {
        problem.num_devices(),
        memory_fitting_decision(policy_, tensors, env, base, options_.memory_repairs,
                                options_.ppo.exploration_block)};
  }

  void add_task(std::vector<PpoTask>& tasks, Environment& env) const {
    tasks.emplace_back(env, base_for(env.problem()));
    set_priors(tasks.back().tensors, tasks.back().base, env.problem().graph);
  }

  // The default-pipeline priors (GraphTensors::placement_prior, priority_prior,
  // fusion_prior), by position, for the tasks the policy decides and whose option is > 0:
  // the base placement's device of every op; one middle priority level for every op (equal
  // priorities: the FIFO order); the top fusion level for the ops the base's rule-based
  // fusion fuses under the base placement and level 0 for the others.
  void set_snapshots(TrainSnapshots snapshots) override { snapshots_ = std::move(snapshots); }

  void set_priors(GraphTensors& tensors, const DecisionBase& base,
                  const core::CompiledGraph& graph) const {
    const GoPolicyOptions& o = policy_ ? policy_->options : options_.policy;
    const auto* order = tensors.order.data_ptr<std::int64_t>();
    const std::int64_t n = tensors.num_nodes;
    if (options_.placement_prior > 0 && o.place() && base.decision.placement) {
      const auto& placement = *base.decision.placement;
      auto prior = torch::zeros({n, o.max_devices()});
      auto p = prior.accessor<float, 2>();
      for (std::int64_t pos = 0; pos < n; ++pos) {
        p[pos][placement[static_cast<std::size_t>(order[pos])]] =
            static_cast<float>(options_.placement_prior);
      }
      tensors.placement_prior = prior;
    }
    if (options_.priority_prior > 0 && o.schedule()) {
      auto prior = torch::zeros({n, o.priority_levels()});
      prior.select(1, o.priority_levels() / 2).fill_(options_.priority_prior);
      tensors.priority_prior = prior;
    }
    if (options_.fusion_prior > 0 && o.fuse()) {
      std::vector<std::int32_t> fusion;
      if (base.decision.fusion) {
        fusion = *base.decision.fusion;
      } else if (base.xla_fusion) {
        const auto& placement = base.decision.placement;
        fusion = xla_fusion_priorities(graph, placement ? placement->data() : nullptr,
                                       XlaFusionOptions());
      } else {
        fusion.assign(static_cast<std::size_t>(n), 0);
      }
      auto prior = torch::zeros({n, o.fusion_levels()});
      auto p = prior.accessor<float, 2>();
      for (std::int64_t pos = 0; pos < n; ++pos) {
        const bool fused = fusion[static_cast<std::size_t>(order[pos])] > 0;
        p[pos][fused ? o.fusion_levels() - 1 : 0] = static_cast<float>(options_.fusion_prior);
      }
      tensors.fusion_prior = prior;
    }
  }

  void check_devices(const Problem& problem) const {
    if (problem.num_devices() > policy_->options.max_devices()) {
      throw core::InputError(options_.checkpoint, std::string("agents.") + name() + ".max_devices",
                             "the cluster has " + std::to_string(problem.num_devices()) +
                                 " devices but the policy places on at most " +
                                 std::to_string(policy_->options.max_devices()));
    }
  }

  // PPO over `tasks`, cycling through batches of `per_batch` graphs every switch_steps.
  void run_ppo(std::vector<PpoTask>& tasks, std::int64_t per_batch, const TrainBudget& budget,
               std::int64_t cap, TrainingObserver* observer) {
    const SubnormalsFlushed flushed;  // a trained policy's subnormals cost 6x (torch_utils.h)
    for (const auto& t : tasks) check_devices(t.env->problem());
    PpoTrainer trainer(policy_, *optimizer_, options_.ppo, make_generator(rng_));
    const auto n = static_cast<std::int64_t>(tasks.size());
    const std::int64_t batches = (n + per_batch - 1) / per_batch;
    const auto start = Clock::now();
    auto samples = [&] {
      std::int64_t total = 0;
      for (const auto& t : tasks) total += t.env->samples();
      return total;
    };
    const std::int64_t limit = std::min(budget.max_steps, cap);
    std::vector<LearningCurvePoint> points;
    std::int64_t first_step = 0;
    double earlier_s = 0;  // wall time of the run a snapshot was taken in
    if (restore_snapshot(tasks, trainer, points, first_step, earlier_s)) {
      if (observer) {
        for (const auto& p : points) observer->on_training_step(p);
      }
    }
    auto last_snapshot = Clock::now();
    auto wall = [&] {
      return earlier_s + std::chrono::duration<double>(Clock::now() - start).count();
    };
    for (std::int64_t step = first_step; step < limit; ++step) {
      if (samples() + trainer.samples_per_update() > budget.max_samples ||
          wall() >= budget.max_seconds) {
        break;
      }
      const std::int64_t batch =
          (step / std::max<std::int64_t>(1, options_.switch_steps)) % batches;
      const std::int64_t first = batch * per_batch;
      const std::int64_t size = std::min(per_batch, n - first);
      PpoTask& task = tasks[static_cast<std::size_t>(first + step % size)];
      // Coarse to fine (unit_phase): unit decisions for the first updates only. The policy's
      // own option is what checkpoints and snapshots record.
      const bool per_unit = policy_->options.unit_decisions();
      if (step < options_.unit_phase) policy_->options.unit_decisions(true);
      auto stats = trainer.step(task);
      policy_->options.unit_decisions(per_unit);
      ++trained_steps_;
      if (!validation_graphs_.empty() &&
          ((step + 1) % options_.validate_every == 0 || step + 1 == limit)) {
        validate(step + 1);
      }
      LearningCurvePoint point;
      point.step = step + 1;
      point.samples = samples();
      point.best_step_time_s = task.env->best_step_time_s();
      point.mean_step_time_s = stats.mean_step_time_s;
      point.wall_s = wall();
      points.push_back(point);
      if (!snapshots_.path.empty() &&
          std::chrono::duration<double>(Clock::now() - last_snapshot).count() >=
              snapshots_.interval_s) {
        write_snapshot(tasks, trainer, points, step + 1);
        last_snapshot = Clock::now();
      }
      if (observer) {
        try {
          observer->on_training_step(point);
        } catch (...) {  // stopped: keep this update
          if (!snapshots_.path.empty()) write_snapshot(tasks, trainer, points, step + 1);
          throw;
        }
      }
    }
    for (const auto& t : tasks) {
      const Problem& p = t.env->problem();
      if (std::isfinite(t.env->best_step_time_s())) {
        best_[&p.graph] = {p.num_devices(), t.env->best_decision()};
      }
    }
  }

  // Model selection: the policy's zero-shot placements (greedy, moved into memory as
  // go_zero_shot does) of the validation graphs; when their score beats every earlier
  // check, the policy after `steps` updates becomes the checkpoint. The score is the mean
  // log step time over the graphs (each graph weighs the same whatever its size), an
  // out-of-memory placement counting 10x its time. Greedy and simulated only: neither the
  // random state nor the training graphs' sample counts change.
  void validate(std::int64_t steps) {
    double score = 0;
    for (auto& v : validation_graphs_) {
      const core::Decision decision =
          memory_fitting_decision(policy_, v.tensors, *v.env, v.base, options_.memory_repairs,
                                  options_.ppo.exploration_block);
      const Evaluation e = v.env->evaluate(decision);
      score += std::log(e.step_time_s) + (e.oom ? std::log(10.0) : 0.0);
    }
    score /= static_cast<double>(validation_graphs_.size());
    if (score < best_validation_) {
      best_validation_ = score;
      best_validation_steps_ = steps;
      save_checkpoint(options_.checkpoint);
    }
  }

  void write_policy_and_optimizer(torch::serialize::OutputArchive& archive) const {
    torch::serialize::OutputArchive policy_archive;
    policy_->save(policy_archive);
    archive.write("policy", policy_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer_->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }

  // The state after `steps` updates of run_ppo: the policy, the optimizer, both random
  // streams, every graph's samples, best decision and reward reference, and the curve.
  void write_snapshot(const std::vector<PpoTask>& tasks, PpoTrainer& trainer,
                      const std::vector<LearningCurvePoint>& points, std::int64_t steps) {
    torch::serialize::OutputArchive archive;
    archive.write("format", c10::IValue(std::string(kSnapshotFormat)));
    archive.write("version", c10::IValue(kSnapshotVersion));
    archive.write("identity", c10::IValue(snapshots_.identity));
    archive.write("options", c10::IValue(policy_options_text(policy_->options)));
    archive.write("steps", c10::IValue(steps));
    archive.write("trained_steps", c10::IValue(trained_steps_));
    archive.write("best_validation", c10::IValue(best_validation_));
    archive.write("best_validation_steps", c10::IValue(best_validation_steps_));
    archive.write("rng", c10::IValue(engine_text(rng_)));
    archive.write("generator", trainer.generator().get_state());
    write_policy_and_optimizer(archive);
    archive.write("tasks", c10::IValue(static_cast<std::int64_t>(tasks.size())));
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const std::string key = "task" + std::to_string(i) + ".";
      const Environment& env = *tasks[i].env;
      archive.write(key + "nodes",
                    c10::IValue(static_cast<std::int64_t>(env.problem().num_nodes())));
      archive.write(key + "samples", c10::IValue(env.samples()));
      archive.write(key + "best_s", c10::IValue(env.best_step_time_s()));
      archive.write(key + "reference_s", c10::IValue(tasks[i].reference_s));
      const core::Decision& best = env.best_decision();
      if (best.placement) write_ints(archive, key + "placement", *best.placement);
      if (best.priority) write_ints(archive, key + "priority", *best.priority);
      if (best.fusion) write_ints(archive, key + "fusion", *best.fusion);
    }
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
    archive.write("curve", curve);
    save_atomically(archive, snapshots_.path, "training snapshot");
  }

  // Restores the state write_snapshot() saved when snapshots_.path holds a snapshot of this
  // identity, policy shape and set of graphs; false (nothing changed) otherwise. A file that
  // does not read as one is ignored the same way: training starts over and replaces it.
  bool restore_snapshot(std::vector<PpoTask>& tasks, PpoTrainer& trainer,
                        std::vector<LearningCurvePoint>& points, std::int64_t& steps,
                        double& wall_s) {
    std::error_code ec;
    if (snapshots_.path.empty() || !std::filesystem::exists(snapshots_.path, ec)) return false;
    try {
      torch::serialize::InputArchive archive;
      archive.load_from(snapshots_.path);
      c10::IValue v;
      auto text = [&](const char* key) {
        return archive.try_read(key, v) && v.isString() ? v.toStringRef() : std::string();
      };
      auto integer = [&](const std::string& key) {
        archive.read(key, v);
        return v.toInt();
      };
      if (text("format") != kSnapshotFormat || integer("version") != kSnapshotVersion ||
          text("identity") != snapshots_.identity ||
          text("options") != policy_options_text(policy_->options) ||
          integer("tasks") != static_cast<std::int64_t>(tasks.size())) {
        return false;
      }
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        const std::string key = "task" + std::to_string(i) + ".";
        if (integer(key + "nodes") != tasks[i].env->problem().num_nodes()) return false;
      }
      // Read everything before changing anything.
      const std::int64_t saved_steps = integer("steps");
      const std::int64_t saved_trained = integer("trained_steps");
      // Snapshots from before validation existed have no validation state: none checked.
      double saved_best_validation = std::numeric_limits<double>::infinity();
      std::int64_t saved_best_validation_steps = 0;
      if (archive.try_read("best_validation", v)) saved_best_validation = v.toDouble();
      if (archive.try_read("best_validation_steps", v)) saved_best_validation_steps = v.toInt();
      const std::string rng = text("rng");
      torch::Tensor generator;
      archive.read("generator", generator);
      torch::Tensor curve;
      archive.read("curve", curve);
      curve = curve.to(torch::kDouble).contiguous();
      torch::serialize::InputArchive policy_archive;
      archive.read("policy", policy_archive);
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      struct TaskState {
        std::int64_t samples;
        double best_s;
        double reference_s;
        core::Decision best;
      };
      std::vector<TaskState> states;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        const std::string key = "task" + std::to_string(i) + ".";
        TaskState t;
        t.samples = integer(key + "samples");
        archive.read(key + "best_s", v);
        t.best_s = v.toDouble();
        archive.read(key + "reference_s", v);
        t.reference_s = v.toDouble();
        t.best.placement = read_ints(archive, key + "placement");
        t.best.priority = read_ints(archive, key + "priority");
        t.best.fusion = read_ints(archive, key + "fusion");
        states.push_back(std::move(t));
      }
      std::istringstream rng_text(rng);
      core::Rng::Engine engine;
      rng_text >> engine;
      if (!rng_text) return false;
      // Shapes and names were checked above (same policy options), so a failure from here
      // on is a damaged file, which must not leave a half-restored run behind.
      try {
        policy_->load(policy_archive);
        optimizer_->load(optimizer_archive);
        trainer.generator().set_state(generator);
      } catch (const c10::Error& e) {
        throw core::Error("restoring training snapshot " + snapshots_.path + ": " +
                          e.what_without_backtrace() + " (delete the file to start over)");
      }
      rng_.engine() = engine;
      steps = saved_steps;
      trained_steps_ = saved_trained;
      best_validation_ = saved_best_validation;
      best_validation_steps_ = saved_best_validation_steps;
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        tasks[i].env->restore(states[i].samples, states[i].best_s, std::move(states[i].best));
        tasks[i].reference_s = states[i].reference_s;
      }
      points.clear();
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
      wall_s = points.empty() ? 0.0 : points.back().wall_s;
      return true;
    } catch (const c10::Error&) {
      return false;
    }
  }

  GoOptions options_;
  TrainSnapshots snapshots_;
  GoPolicy policy_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  core::Rng rng_{0};
  std::int64_t trained_steps_ = 0;
  // Pretraining's model selection (set_validation, validate()).
  struct ValidationGraph {
    Environment* env;
    DecisionBase base;
    GraphTensors tensors;
  };
  std::vector<Environment*> validation_;
  std::vector<ValidationGraph> validation_graphs_;  // during train_on_set
  double best_validation_ = std::numeric_limits<double>::infinity();
  std::int64_t best_validation_steps_ = 0;
  std::int64_t checkpoint_steps_ = 0;
  std::map<const core::CompiledGraph*, std::pair<DeviceId, core::Decision>> best_;
};

}  // namespace

std::string policy_options_text(const GoPolicyOptions& options) {
  std::string text;
  for (const auto& [key, value] : policy_fields(options)) {
    if (!text.empty()) text += ";";
    text += key + "=" + std::to_string(value);
  }
  return text;
}

DecisionBase tf_default_base(const Problem& problem, bool single_device) {
  DecisionBase base;
  base.decision.placement = tf_default_placement(problem, single_device);
  base.xla_fusion = true;
  return base;
}

PlacementSpread placement_spread(const std::string& path, const core::CompiledGraph& graph,
                                 std::int32_t devices) {
  if (!std::filesystem::exists(path)) throw core::InputError(path, "", "no such file");
  PlacementSpread spread;
  GoPolicy policy(nullptr);
  std::string problem;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    c10::IValue format;
    if (!archive.try_read("format", format) || !format.isString() ||
        (format.toStringRef() != kCheckpointFormat && format.toStringRef() != kSnapshotFormat)) {
      throw core::InputError(path, "format", "not a GO checkpoint or training snapshot");
    }
    c10::IValue steps;
    archive.read(format.toStringRef() == kCheckpointFormat ? "steps" : "trained_steps", steps);
    spread.updates = steps.toInt();
    policy = read_policy(archive, path, spread.options);
  } catch (const c10::Error& e) {
    problem = e.what_without_backtrace();
  }
  if (!problem.empty()) {
    throw core::InputError(
        path, "policy",
        "corrupt GO checkpoint or snapshot: " + problem.substr(0, problem.find('\n')));
  }
  if (!policy->options.place()) {
    throw core::InputError(path, "options", "the policy does not decide placement");
  }
  if (devices < 1 || devices > policy->options.max_devices()) {
    throw core::InputError(path, "options.max_devices",
                           "the policy places on at most " +
                               std::to_string(policy->options.max_devices()) + " devices, not " +
                               std::to_string(devices));
  }
  torch::NoGradGuard no_grad;
  const auto logits =
      policy->forward(make_graph_tensors(graph), devices).logits.slice(1, 0, devices);
  const auto probability = torch::softmax(logits, 1);
  const auto mean = probability.mean(0);
  const auto std = logits.std(0, /*unbiased=*/false);
  const auto counts = torch::bincount(logits.argmax(1), {}, devices);
  for (std::int32_t d = 0; d < devices; ++d) {
    spread.mean_probability.push_back(mean[d].item<double>());
    spread.logit_spread.push_back(std[d].item<double>());
    spread.argmax_ops.push_back(counts[d].item<std::int64_t>());
  }
  return spread;
}

std::unique_ptr<Agent> make_go_agent(const GoOptions& options) {
  return std::make_unique<GoAgent>(options);
}

}  // namespace gopt::agents::go
