#include "experiments/runner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "agents/compute_threads.h"
#include "agents/environment.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/rng.h"
#include "core/strings.h"
#include "core/units.h"
#include "datasets/workload_registry.h"
#include "experiments/job_time_model.h"
#include "experiments/machine_info.h"
#include "experiments/run_team.h"
#include "experiments/work_queue.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/lower_bounds.h"

namespace gopt::experiments {
namespace {

using Clock = std::chrono::steady_clock;

std::string clock_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

// Generalization agents: a producer (go_pretrain) trains one policy on every training
// graph and writes a checkpoint; consumers (go_finetune, go_zero_shot) load it and run on
// each held-out graph.
enum class TransferRole { kNone, kProducer, kConsumer };

TransferRole transfer_role(const std::string& type) {
  if (type == "go_pretrain") return TransferRole::kProducer;
  if (type == "go_finetune" || type == "go_zero_shot") return TransferRole::kConsumer;
  return TransferRole::kNone;
}

struct Job {
  ResultKey key;
  std::int64_t order = 0;
  const WorkloadConfig* workload = nullptr;
  const AgentConfig* agent = nullptr;
};

// Thrown from the training observer when the stop flag is set: unwinds out of an
// agent's train() loop between two policy updates.
struct Interrupted {};

// The progress display: a live bar redrawn a few times a second on a terminal, or plain
// lines (one per finished job, plus a heartbeat) otherwise. A thread of its own redraws
// so that elapsed time and ETA move while a long job runs.
class Progress {
 public:
  // One entry per work item (a job, or a pretraining unit that writes several rows), in
  // item order: its agent label, its graphs' op count (for the ETA) and its result rows.
  struct Item {
    JobCost cost;
    std::int64_t rows = 1;
  };
  Progress(std::ostream* out, bool live, double heartbeat_s, std::vector<Item> items, int workers)
      : out_(out),
        live_(live),
        heartbeat_s_(heartbeat_s),
        items_(std::move(items)),
        started_(items_.size(), false),
        running_(static_cast<std::size_t>(workers)) {
    for (const auto& item : items_) total_ += item.rows;
    if (out_ && total_ > 0) thread_ = std::thread([this] { loop(); });
  }
  ~Progress() { stop(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (out_ && live_ && total_ > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      draw_bar();
      *out_ << "\n";
      out_->flush();
    }
  }

  // Item `index` started on `worker`; `label` names it in the status line.
  void started(int worker, std::size_t index, const std::string& label, std::int64_t max_steps) {
    std::lock_guard<std::mutex> lock(mutex_);
    started_[index] = true;
    auto& r = running_[static_cast<std::size_t>(worker)];
    r.job = label;
    r.cost = items_[index].cost;
    r.rows = items_[index].rows;
    r.start = Clock::now();
    r.step = 0;
    r.max_steps = max_steps;
    r.learner = false;
  }

  // A worker slot for another rank's worker (rank 0 of a run shared by ranks); its index.
  int add_worker() {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.emplace_back();
    return static_cast<int>(running_.size()) - 1;
  }

  void training_step(int worker, std::int64_t step) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& r = running_[static_cast<std::size_t>(worker)];
    r.step = step;
    r.learner = true;
  }

  // A finished item: a plain line per result row in both modes (above the bar on a
  // terminal).
  void finished(int worker, const std::vector<std::string>& lines) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& r = running_[static_cast<std::size_t>(worker)];
    times_.add(r.cost, std::chrono::duration<double>(Clock::now() - r.start).count());
    r = {};
    last_line_ = Clock::now();
    if (out_ && live_) *out_ << "\r\033[K";
    for (const auto& line : lines) {
      ++done_;
      if (!out_) continue;
      *out_ << "[" << done_ << "/" << total_ << "] " << line << "  (elapsed "
            << clock_text(elapsed()) << eta_text() << ")\n";
    }
    if (!out_) return;
    if (live_) draw_bar();
    out_->flush();
  }

  void message(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!out_) return;
    if (live_) *out_ << "\r\033[K";
    *out_ << line << "\n";
    if (live_ && total_ > 0 && !stopping_) draw_bar();
    out_->flush();
  }

 private:
  struct Running {
    std::string job;
    JobCost cost;
    std::int64_t rows = 0;
    Clock::time_point start;
    std::int64_t step = 0;
    std::int64_t max_steps = 0;
    bool learner = false;
  };

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  // Fraction of the rows done, counting learners' completed updates within their budget.
  double fraction() const {
    double units = static_cast<double>(done_);
    for (const auto& r : running_) {
      if (r.learner && r.max_steps > 0) {
        units += static_cast<double>(r.rows) *
                 std::min(1.0, static_cast<double>(r.step) / static_cast<double>(r.max_steps));
      }
    }
    return total_ > 0 ? units / static_cast<double>(total_) : 1.0;
  }

  // Remaining time: expected durations of the jobs not started, plus what is left of the
  // running ones, spread over the workers.
  std::string eta_text() const {
    if (done_ >= total_) return "";
    double remaining = 0;
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (!started_[i]) remaining += times_.expected_s(items_[i].cost);
    }
    for (const auto& r : running_) {
      if (r.job.empty()) continue;
      double expected = times_.expected_s(r.cost);
      const double so_far = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (r.learner && r.max_steps > 0 && r.step > 0) {
        expected = so_far * static_cast<double>(r.max_steps) / static_cast<double>(r.step);
      }
      remaining += std::max(0.0, expected - so_far);
    }
    const auto workers = std::max<std::size_t>(running_.size(), 1);
    return ", ETA " + clock_text(remaining / static_cast<double>(workers));
  }

  void draw_bar() {
    constexpr int kWidth = 24;
    double f = fraction();
    int filled = static_cast<int>(f * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(kWidth - filled), '.');
    *out_ << "\r\033[K[" << bar << "] " << done_ << "/" << total_ << "  elapsed "
          << clock_text(elapsed()) << eta_text();
    for (const auto& r : running_) {
      if (r.job.empty()) continue;
      *out_ << "  | " << r.job;
      if (r.learner) *out_ << " step " << r.step << "/" << r.max_steps;
    }
    out_->flush();
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto period = live_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
    while (!stopping_) {
      cv_.wait_for(lock, period);
      if (stopping_) break;
      if (live_) {
        draw_bar();
      } else if (std::chrono::duration<double>(Clock::now() - last_line_).count() >= heartbeat_s_) {
        *out_ << "[" << done_ << "/" << total_ << "] running";
        for (const auto& r : running_) {
          if (r.job.empty()) continue;
          *out_ << "  " << r.job;
          if (r.learner) *out_ << " (step " << r.step << "/" << r.max_steps << ")";
        }
        *out_ << "  (elapsed " << clock_text(elapsed()) << eta_text() << ")\n";
        out_->flush();
        last_line_ = Clock::now();
      }
    }
  }

  std::ostream* out_;
  bool live_;
  double heartbeat_s_;
  std::vector<Item> items_;
  std::int64_t total_ = 0;  // result rows
  std::int64_t done_ = 0;
  std::vector<bool> started_;
  std::vector<Running> running_;
  JobTimeModel times_;  // of the finished jobs
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_line_ = Clock::now();
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// Hands a training job's learning curve to the sink while it trains
// (ResultSink::update_running), so a long run can be watched: after an update, once
// `interval_s` has passed since the last flush and 20 times that flush's own time (the file
// is copied per write; flushing stays under 5% of the job). A sink that fails here is
// reported once and not asked again; results are still written when jobs finish.
class LiveCurve {
 public:
  // What every job's flushes share.
  struct Shared {
    ResultSink& sink;
    std::mutex& sink_mutex;  // the runner's: sinks see one call at a time
    Progress& progress;
    double interval_s = 0;  // 0: never
    std::atomic<bool> failed{false};
  };

  LiveCurve(Shared& shared, RunningJob job) : shared_(shared), job_(std::move(job)) {
    job_.host = host_name();
    job_.pid = static_cast<std::int64_t>(::getpid());
  }

  void point(const std::vector<agents::LearningCurvePoint>& curve) {
    if (shared_.interval_s <= 0 || shared_.failed.load()) return;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (since < std::max(shared_.interval_s, 20 * last_cost_s_)) return;
    flush(curve, "running", "");
  }

  // The run ends without the job's result: the curve so far, marked `state` (when anything
  // was learned).
  void end(const std::vector<agents::LearningCurvePoint>& curve, const std::string& state,
           const std::string& message) {
    if (shared_.interval_s <= 0 || shared_.failed.load() || curve.empty()) return;
    flush(curve, state, message);
  }

 private:
  void flush(const std::vector<agents::LearningCurvePoint>& curve, const std::string& state,
             const std::string& message) {
    job_.learning_curve = curve;
    job_.state = state;
    job_.message = message;
    job_.updated = utc_now();
    const auto start = Clock::now();
    try {
      std::lock_guard<std::mutex> lock(shared_.sink_mutex);
      shared_.sink.update_running(job_);
    } catch (const std::exception& e) {
      if (!shared_.failed.exchange(true)) {
        shared_.progress.message(std::string("gopt: warning: cannot write learning curves of "
                                             "running jobs (") +
                                 e.what() + "); each is written with its result");
      }
    }
    last_ = Clock::now();
    last_cost_s_ = std::chrono::duration<double>(last_ - start).count();
  }

  Shared& shared_;
  RunningJob job_;
  Clock::time_point last_ = Clock::now();
  double last_cost_s_ = 0;
};

// Records the learning curve, feeds the progress display (on a rank other than 0, rank
// 0's through `team`) and the live curve, and stops training when the stop flag is set.
class CurveRecorder final : public agents::TrainingObserver {
 public:
  CurveRecorder(std::vector<agents::LearningCurvePoint>& curve, Progress& progress, int worker,
                const std::atomic<bool>* stop, RunTeam* team, LiveCurve* live = nullptr)
      : curve_(curve),
        progress_(progress),
        worker_(worker),
        stop_(stop),
        team_(team),
        live_(live) {}
  void on_training_step(const agents::LearningCurvePoint& point) override {
    curve_.push_back(point);
    progress_.training_step(worker_, point.step);
    if (live_) live_->point(curve_);
    if (team_) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kStep;
      e.worker = worker_;
      e.step = point.step;
      try {
        team_->send(e);
      } catch (const std::exception&) {
        // Only the display misses a step; a store that is gone stops the run through
        // RunTeam::failure, not as this job's failure.
      }
    }
    if (stop_ && stop_->load()) throw Interrupted{};
  }

 private:
  std::vector<agents::LearningCurvePoint>& curve_;
  Progress& progress_;
  int worker_;
  const std::atomic<bool>* stop_;
  RunTeam* team_;
  LiveCurve* live_;
};

// Read-only data every job of a run shares.
struct Shared {
  const ExperimentConfig& config;
  agents::AgentRegistry registry;
  hardware::Cluster cluster;
  std::unique_ptr<hardware::CostModel> cost;
  std::map<std::string, core::CompiledGraph> graphs;  // by workload label
  Provenance provenance;  // this process's, stamped on every result it produces
};

// Every option of agent `type`: `used` (what it was created with) over the defaults, so a
// results file says what ran even after a default changes.
std::map<std::string, std::string> resolved_options(
    const Shared& shared, const std::string& type, const std::map<std::string, std::string>& used) {
  std::map<std::string, std::string> all;
  for (const auto& spec : shared.registry.info(type).options) all[spec.name] = spec.default_value;
  for (const auto& [key, value] : used) all[key] = value;
  return all;
}

// The result row of `job` for the decision `agent` (created with options `used`) proposes
// after training in `env`.
RunResult result_of(const Shared& shared, const Job& job, agents::Agent& agent,
                    const std::map<std::string, std::string>& used, agents::Environment& env,
                    Clock::time_point start) {
  const core::CompiledGraph& graph = env.problem().graph;
  RunResult r;
  r.key = job.key;
  r.order = job.order;
  r.agent_type = job.agent->type;
  r.held_out = job.workload->held_out;
  r.graph = job.workload->graph;
  r.hardware = shared.cluster.name();
  r.problem_seed = env.problem().seed;
  r.num_nodes = graph.num_nodes();
  r.num_devices = shared.cluster.num_devices();
  r.options = job.agent->options;
  r.resolved_options = resolved_options(shared, job.agent->type, used);
  r.provenance = shared.provenance;
  if (shared.registry.info(job.agent->type).learner) r.budget = job.agent->budget;
  // A learned agent: one that trains, or one that applies a pretrained policy.
  r.learner = agent.is_learner() || transfer_role(job.agent->type) != TransferRole::kNone;
  r.decision = agent.propose(env.problem());
  auto evaluation = env.evaluate(r.decision);
  const auto& sim = env.last_result();
  r.best_step_time_s = evaluation.step_time_s;
  r.oom = evaluation.oom;
  r.oom_device = evaluation.oom_device;
  r.lower_bound_critical_path_s = sim.lower_bound_critical_path_s;
  r.lower_bound_work_s = sim.lower_bound_work_s;
  r.lower_bound_s = simulator::compute_lower_bounds(graph, shared.cluster, *shared.cost).best_s();
  r.bytes_moved = sim.bytes_moved;
  for (const auto& d : sim.devices) {
    r.device_busy_s.push_back(d.busy_s);
    r.device_peak_memory_bytes.push_back(d.peak_memory_bytes);
  }
  r.samples = env.samples();
  r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// A job's training snapshots (RunnerOptions::snapshot_dir): the file, and the identity that
// ties it to this job as configured (a changed option or budget starts the job over).
agents::TrainSnapshots job_snapshots(const RunnerOptions& options, const ExperimentConfig& config,
                                     const AgentConfig& agent, const std::string& what,
                                     std::uint64_t seed) {
  agents::TrainSnapshots s;
  if (options.snapshot_dir.empty()) return s;
  std::ostringstream identity;
  identity << what << " | " << agent.name << " (" << agent.type << ") | " << config.hardware
           << " | seed " << seed << " | steps " << agent.budget.max_steps << " | samples "
           << agent.budget.max_samples << " | seconds " << agent.budget.max_seconds;
  for (const auto& [key, value] : agent.options) identity << " | " << key << "=" << value;
  std::string file = what + "." + agent.name + ".seed" + std::to_string(seed);
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  s.path = (std::filesystem::path(options.snapshot_dir) / (file + ".pt")).string();
  s.identity = identity.str();
  s.interval_s = options.snapshot_interval_s;
  return s;
}

// The job's snapshot, and the temporary file of a write that a kill interrupted.
// What a pretraining job's snapshot is of: its training graphs.
std::string pretrain_what(const ExperimentConfig& config) {
  std::string training = "pretrain";
  std::string validation;
  for (const auto& w : config.workloads) {
    if (w.pretrain_validation) {
      validation += " " + w.name;
    } else if (!w.held_out) {
      training += " " + w.name;
    }
  }
  return validation.empty() ? training : training + " validate" + validation;
}

void remove_snapshot(const agents::TrainSnapshots& s) {
  if (s.path.empty()) return;
  std::error_code ec;
  std::filesystem::remove(s.path, ec);
  std::filesystem::remove(s.path + ".tmp", ec);
}

RunResult run_job(const Shared& shared, const Job& job, CurveRecorder& recorder,
                  const agents::TrainSnapshots& snapshots) {
  const auto start = Clock::now();
  const core::CompiledGraph& graph = shared.graphs.at(job.workload->name);
  auto options = job.agent->options;
  if (transfer_role(job.agent->type) == TransferRole::kConsumer && options["checkpoint"].empty()) {
    options["checkpoint"] = default_checkpoint(shared.config, job.key.seed);
  }
  auto agent = shared.registry.create(job.agent->type, options, shared.config.source);
  agents::Problem problem{graph, shared.cluster, *shared.cost,
                          job_seed(job.key.seed, job.key.workload, job.key.agent)};
  agents::Environment env(problem);
  if (agent->is_learner()) {
    agent->set_snapshots(snapshots);
    agent->train(env, job.agent->budget, &recorder);
  }
  return result_of(shared, job, *agent, options, env, start);
}

std::string result_line(const RunResult& r) {
  std::string s = r.key.text() + ": step time " + core::format_seconds(r.best_step_time_s);
  if (r.oom) s += " [OOM]";
  return s + " (simulated), " + core::format_seconds(r.wall_s) + " wall";
}

// A pretraining unit: one go_pretrain agent and seed, one policy trained on every
// training graph; it writes the checkpoint and then one result row per training graph
// (`rows`, the pending jobs of that agent and seed).
struct Unit {
  const AgentConfig* agent = nullptr;
  std::uint64_t seed = 0;
  std::vector<const Job*> rows;
};

// Trains `unit` (continuing from its snapshot if there is one) and returns its rows.
// `checkpoint_steps`: set to the updates behind the checkpoint's policy.
std::vector<RunResult> run_unit(const Shared& shared, const Unit& unit,
                                const std::vector<const WorkloadConfig*>& training,
                                const std::vector<const WorkloadConfig*>& validation,
                                const RunnerOptions& options, agents::TrainingObserver& recorder,
                                const std::vector<agents::LearningCurvePoint>& curve,
                                std::int64_t& checkpoint_steps) {
  const ExperimentConfig& config = shared.config;
  const AgentConfig& a = *unit.agent;
  const auto start = Clock::now();
  auto agent_options = a.options;
  agent_options["checkpoint"] = pretrain_checkpoint(config, a, unit.seed);
  auto agent = shared.registry.create(a.type, agent_options, config.source);
  auto* transferable = dynamic_cast<agents::TransferableAgent*>(agent.get());
  if (!transferable) throw core::Error("agent '" + a.type + "' cannot pretrain");
  // One environment per graph (owned), and the pointers the agent takes.
  std::vector<std::unique_ptr<agents::Environment>> owned;
  auto environments_of = [&](const std::vector<const WorkloadConfig*>& workloads) {
    std::vector<agents::Environment*> pointers;
    for (const auto* w : workloads) {
      agents::Problem problem{shared.graphs.at(w->name), shared.cluster, *shared.cost,
                              job_seed(unit.seed, w->name, a.name)};
      owned.push_back(std::make_unique<agents::Environment>(problem));
      pointers.push_back(owned.back().get());
    }
    return pointers;
  };
  const auto pointers = environments_of(training);
  const auto validation_pointers = environments_of(validation);
  const auto snapshots = job_snapshots(options, config, a, pretrain_what(config), unit.seed);
  transferable->set_snapshots(snapshots);
  transferable->set_validation(validation_pointers);
  transferable->train_on_set(pointers, a.budget, &recorder);
  checkpoint_steps = transferable->checkpoint_steps();
  std::vector<RunResult> results;
  for (const auto* j : unit.rows) {
    const auto index = static_cast<std::size_t>(
        std::find(training.begin(), training.end(), j->workload) - training.begin());
    results.push_back(result_of(shared, *j, *agent, agent_options, *pointers[index], start));
    results.back().learning_curve = curve;
  }
  return results;
}

// Runs this rank's share of a run shared by ranks: `workers` threads run `work` while this
// thread watches. On rank 0 it hands each event of the other ranks to `handle` with the
// progress slot of the worker that sent it, until every rank is done. It sets `halt` when
// the caller's `stop` flag is set, when `failed()` (a sink or a send failed), or when
// another rank fails (summary.team_failure then says which and why). A rank other than 0
// ends by telling rank 0 that it is done.
template <typename Work, typename Handle, typename Failed>
void run_shared(RunTeam& team, int workers, Work& work, std::atomic<bool>& halt,
                const std::atomic<bool>* stop, Handle handle, Failed failed, Progress& progress,
                RunSummary& summary) {
  // After a stop (Ctrl-C, or torchrun's agent stopping every worker), rank 0 waits this long
  // for the others to send what they finished before it exits.
  constexpr double kDrainSeconds = 5;
  const bool remote = team.rank() != 0;
  std::atomic<int> running{workers};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&work, &running, w] {
      work(w);
      --running;
    });
  }
  std::map<std::pair<int, int>, int> slots;  // (rank, worker) -> progress slot
  std::vector<char> done(static_cast<std::size_t>(team.size()), 0);
  done[0] = 1;
  std::optional<Clock::time_point> halted_at;
  bool interrupted = false;
  for (;;) {
    if (!halted_at && stop != nullptr && stop->load()) {
      halt = true;
      interrupted = true;
      halted_at = Clock::now();
    }
    if (!halted_at && failed()) {
      halt = true;
      halted_at = Clock::now();
    }
    if (summary.team_failure.empty()) {
      if (auto why = team.failure()) {
        summary.team_failure = *why;
        halt = true;
      }
    }
    if (!remote && summary.team_failure.empty()) {
      try {
        for (const auto& e : team.receive()) {
          const auto key = std::make_pair(e.rank, e.worker);
          auto it = slots.find(key);
          if (it == slots.end()) it = slots.emplace(key, progress.add_worker()).first;
          if (e.kind == TeamEvent::Kind::kDone) done[static_cast<std::size_t>(e.rank)] = 1;
          if (!handle(e, it->second) && !halted_at) {
            halt = true;
            halted_at = Clock::now();
          }
        }
      } catch (const std::exception& e) {
        summary.team_failure = std::string("reading the other ranks' results: ") + e.what();
        halt = true;
      }
    }
    if (running == 0) {
      const bool all_done = std::all_of(done.begin(), done.end(), [](char d) { return d != 0; });
      const bool drained =
          halted_at &&
          std::chrono::duration<double>(Clock::now() - *halted_at).count() > kDrainSeconds;
      if (remote || all_done || !summary.team_failure.empty() || drained) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : threads) t.join();
  if (remote && summary.team_failure.empty()) {
    TeamEvent e;
    e.kind = TeamEvent::Kind::kDone;
    e.interrupted = interrupted;
    try {
      team.send(e);
    } catch (const std::exception& ex) {
      summary.team_failure = std::string("telling rank 0 this rank is done: ") + ex.what();
    }
  }
}

}  // namespace

std::string snapshot_dir_for(const std::string& results_file) {
  std::string stem = results_file;
  const std::string suffix = ".h5";
  if (stem.size() > suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  return stem + ".snapshots";
}

std::string pretrain_checkpoint(const ExperimentConfig& config, const AgentConfig& agent,
                                std::uint64_t seed) {
  auto given = agent.options.find("checkpoint");
  if (given != agent.options.end() && !given->second.empty()) return given->second;
  std::string stem = config.output;
  const std::string suffix = ".h5";
  if (stem.size() > suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  return stem + "." + agent.name + ".seed" + std::to_string(seed) + ".ckpt";
}

std::string default_checkpoint(const ExperimentConfig& config, std::uint64_t seed) {
  for (const auto& a : config.agents) {
    if (transfer_role(a.type) == TransferRole::kProducer) {
      return pretrain_checkpoint(config, a, seed);
    }
  }
  return "";
}

std::uint64_t job_seed(std::uint64_t seed, const std::string& workload, const std::string& agent) {
  return core::mix_seed(core::mix_seed(seed, core::fnv1a(workload)), core::fnv1a(agent));
}

RunSummary run_experiment(const ExperimentConfig& config, ResultSink& sink,
                          const RunnerOptions& options) {
  const auto start = Clock::now();
  RunSummary summary;
  std::set<ResultKey> done(options.done.begin(), options.done.end());
  auto say = [&](const std::string& line) {
    if (options.progress) *options.progress << line << "\n" << std::flush;
  };

  // The job list in config order: workload-major, then agent, then seed.
  std::vector<Job> jobs;
  std::int64_t order = 0;
  // Pretraining runs one job per (go_pretrain agent, seed) over every training graph and
  // produces the rows of those graphs; consumers run on the held-out graphs only.
  std::vector<Job> pretrain_jobs;
  const bool any_held_out = std::any_of(config.workloads.begin(), config.workloads.end(),
                                        [](const WorkloadConfig& w) { return w.held_out; });
  for (const auto& w : config.workloads) {
    if (w.pretrain_validation) continue;  // only go_pretrain reads it, to pick its checkpoint
    for (const auto& a : config.agents) {
      const auto role = transfer_role(a.type);
      if (role == TransferRole::kProducer && w.held_out) continue;
      if (role == TransferRole::kConsumer && any_held_out && !w.held_out) continue;
      for (auto seed : config.seeds) {
        ++summary.total;
        Job job{{w.name, a.name, seed}, order++, &w, &a};
        if (done.count(job.key)) {
          ++summary.already_done;
          continue;
        }
        (role == TransferRole::kProducer ? pretrain_jobs : jobs).push_back(job);
      }
    }
  }
  if (summary.already_done > 0) {
    say("gopt: resuming: " + std::to_string(summary.already_done) + " of " +
        std::to_string(summary.total) + " results are already in the file");
  }
  if (!options.snapshot_dir.empty()) {
    std::set<std::string> snapshots;
    for (const auto& j : jobs) {
      snapshots.insert(job_snapshots(options, config, *j.agent, j.workload->name, j.key.seed).path);
    }
    for (const auto& j : pretrain_jobs) {
      snapshots.insert(
          job_snapshots(options, config, *j.agent, pretrain_what(config), j.key.seed).path);
    }
    std::error_code ec;
    const auto found = std::count_if(snapshots.begin(), snapshots.end(), [&](const std::string& f) {
      return std::filesystem::exists(f, ec);
    });
    if (found > 0) {
      say("gopt: " + std::to_string(found) + " unfinished job(s) continue from their training " +
          "snapshots in " + options.snapshot_dir);
    }
  }

  Shared shared{config,  {}, hardware::load_profile(config.hardware),
                nullptr, {}, options.metadata.provenance};
  agents::register_builtin_agents(shared.registry);
  shared.cost = hardware::make_cost_model(shared.cluster);  // calibrated for measured profiles
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  for (const auto& w : config.workloads) {
    bool needed =
        std::any_of(jobs.begin(), jobs.end(), [&](const Job& j) { return j.workload == &w; }) ||
        (!pretrain_jobs.empty() && !w.held_out);  // training and validation graphs
    if (!needed) continue;
    datasets::LoadOptions load;
    load.overrides = w.overrides;
    load.onnx_batch = w.onnx_batch;
    load.onnx_training = w.onnx_training;
    shared.graphs.emplace(
        w.name, core::CompiledGraph::compile(datasets::load_graph(w.graph, workloads, load)));
  }

  // The pretraining units, per (go_pretrain agent, seed) with rows still to write.
  std::vector<Unit> units;
  for (const auto& a : config.agents) {
    for (auto seed : config.seeds) {
      Unit unit{&a, seed, {}};
      for (const auto& j : pretrain_jobs) {
        if (j.agent == &a && j.key.seed == seed) unit.rows.push_back(&j);
      }
      if (!unit.rows.empty()) units.push_back(std::move(unit));
    }
  }
  std::vector<const WorkloadConfig*> training;
  std::vector<const WorkloadConfig*> validation;
  for (const auto& w : config.workloads) {
    if (w.pretrain_validation) {
      validation.push_back(&w);
    } else if (!w.held_out) {
      training.push_back(&w);
    }
  }
  // Items: units[0, U), then jobs. A consumer waits for the unit that writes the checkpoint
  // it reads (its own `checkpoint` option, else the first go_pretrain agent's for its
  // seed) when this run trains it.
  std::vector<std::ptrdiff_t> waits_for(units.size(), -1);
  std::vector<Progress::Item> items;
  double training_nodes = 0;
  if (!units.empty()) {  // else the training graphs were not loaded
    for (const auto* w : training) {
      training_nodes += static_cast<double>(shared.graphs.at(w->name).num_nodes());
    }
  }
  for (const auto& u : units) {
    items.push_back({JobCost{u.agent->name, training_nodes, true, u.agent->budget.max_steps},
                     static_cast<std::int64_t>(u.rows.size())});
  }
  for (const auto& j : jobs) {
    std::ptrdiff_t b = -1;
    if (transfer_role(j.agent->type) == TransferRole::kConsumer) {
      const auto given = j.agent->options.find("checkpoint");
      const std::string reads = given != j.agent->options.end() && !given->second.empty()
                                    ? given->second
                                    : default_checkpoint(config, j.key.seed);
      for (std::size_t u = 0; u < units.size() && b < 0; ++u) {
        if (pretrain_checkpoint(config, *units[u].agent, units[u].seed) == reads) {
          b = static_cast<std::ptrdiff_t>(u);
        }
      }
    }
    waits_for.push_back(b);
    const bool learns = shared.registry.info(j.agent->type).learner;
    items.push_back(
        {JobCost{j.key.agent, static_cast<double>(shared.graphs.at(j.workload->name).num_nodes()),
                 learns, learns ? j.agent->budget.max_steps : 0},
         1});
  }
  // A run shared by ranks: rank 0 writes every result; the others send theirs to it.
  RunTeam* team = options.team;
  const bool remote = team != nullptr && team->rank() != 0;
  if (!remote) sink.begin(options.metadata);
  if (items.empty()) {
    summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return summary;
  }
  // The items this process runs, in the order it takes them (all of them, in config order,
  // when it runs alone), and what each waits for among them.
  std::vector<std::size_t> mine;
  std::vector<std::ptrdiff_t> local_waits;
  if (team == nullptr) {
    mine.resize(items.size());
    std::iota(mine.begin(), mine.end(), std::size_t{0});
    local_waits = waits_for;
  } else {
    const JobTimeModel prior;  // nothing finished: the cost model's prior
    std::vector<double> expected;
    for (const auto& item : items) expected.push_back(prior.expected_s(item.cost));
    const RankPlan plan = plan_ranks(expected, waits_for, team->size());
    std::vector<int> rank_of = plan.rank_of;
    team->share_plan(rank_of);  // rank 0's plan is everyone's
    std::vector<std::ptrdiff_t> local_of(items.size(), -1);
    for (const auto& dealt : plan.order) {
      for (const auto i : dealt) {
        if (rank_of[i] != team->rank()) continue;
        local_of[i] = static_cast<std::ptrdiff_t>(mine.size());
        mine.push_back(i);
      }
    }
    for (const auto i : mine) {
      const auto w = waits_for[i];
      GOPT_ASSERT(w < 0 || local_of[static_cast<std::size_t>(w)] >= 0,
                  "a job runs on the rank of the pretraining it waits for");
      local_waits.push_back(w < 0 ? -1 : local_of[static_cast<std::size_t>(w)]);
    }
  }
  const int workers = team == nullptr
                          ? std::max(1, std::min(options.jobs, static_cast<int>(mine.size())))
                          : std::min(options.jobs, static_cast<int>(mine.size()));
  Progress progress(remote ? nullptr : options.progress, options.live_bar, options.heartbeat_s,
                    items, workers);
  // Alone, the run stops on the caller's flag; shared, on `halt`, which the loop below
  // sets on the caller's flag or when another rank fails.
  std::atomic<bool> halt{false};
  const std::atomic<bool>* stop = team == nullptr ? options.stop : &halt;
  WorkQueue queue(local_waits, stop);
  std::vector<char> unit_failed(units.size(), 0);
  std::mutex sink_mutex;  // sinks see one call at a time; also guards `summary`, unit_failed
  std::optional<std::string> sink_error;
  std::int64_t rows_to_write = 0;
  if (remote) {
    for (const auto i : mine) rows_to_write += items[i].rows;
  } else {
    for (const auto& item : items) rows_to_write += item.rows;
  }
  // A rank other than 0 has no file: its learners' running curves are not written.
  LiveCurve::Shared live_shared{sink, sink_mutex, progress, remote ? 0 : options.curve_flush_s};

  // Hands an event to rank 0 (a rank other than 0); false when that failed (the run stops).
  auto send = [&](const TeamEvent& event) {
    try {
      team->send(event);
      return true;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(sink_mutex);
      if (!sink_error) sink_error = std::string("sending to rank 0: ") + e.what();
      return false;
    }
  };
  // Writes an item's rows (rank 0 and a run alone) or sends them to rank 0; false when
  // that failed (the run stops).
  // `where`: appended to each progress line (the rank that ran the job).
  auto write = [&](int worker, std::vector<RunResult> results, const std::string& where = "") {
    if (remote) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kFinished;
      e.worker = worker;
      const auto n = static_cast<std::int64_t>(results.size());
      e.results = std::move(results);
      if (!send(e)) return false;
      std::lock_guard<std::mutex> lock(sink_mutex);
      summary.completed += n;
      return true;
    }
    std::vector<std::string> lines;
    {
      std::lock_guard<std::mutex> lock(sink_mutex);
      try {
        for (const auto& r : results) {
          sink.write(r);
          ++summary.completed;
          lines.push_back(result_line(r) + where);
        }
      } catch (const std::exception& e) {
        sink_error = e.what();
        return false;
      }
    }
    progress.finished(worker, lines);
    return true;
  };
  // Records failed jobs, given as (job, message).
  auto fail_jobs = [&](int worker, const std::vector<std::pair<std::string, std::string>>& failed,
                       const std::string& where = "") {
    std::vector<std::string> lines;
    {
      std::lock_guard<std::mutex> lock(sink_mutex);
      for (const auto& [job, message] : failed) {
        summary.failures.push_back(job + ": " + message);
        lines.push_back(job + ": FAILED: " + message + where);
      }
    }
    if (remote) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kFinished;
      e.worker = worker;
      e.failures = failed;
      send(e);
    }
    progress.finished(worker, lines);
  };
  auto fail = [&](int worker, const std::vector<const Job*>& failed, const std::string& message) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto* j : failed) named.emplace_back(j->key.text(), message);
    fail_jobs(worker, named);
  };
  auto message = [&](const std::string& line) {
    if (remote) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kMessage;
      e.text = line;
      send(e);
    } else {
      progress.message(line);
    }
  };
  auto on_rank = [](int rank) { return "  [rank " + std::to_string(rank) + "]"; };
  // Item `i` started on progress slot `slot`: the display, and rank 0 when remote.
  auto item_started = [&](int slot, std::size_t i) {
    if (i < units.size()) {
      const Unit& unit = units[i];
      const AgentConfig& a = *unit.agent;
      const std::string label = a.name + " (seed " + std::to_string(unit.seed) + ")";
      progress.started(slot, i, "pretraining " + label, a.budget.max_steps);
      if (!remote) {
        progress.message(
            "gopt: pretraining " + label + " on " + std::to_string(training.size()) +
            (training.size() == 1 ? " graph" : " graphs") +
            (validation.empty()
                 ? std::string()
                 : " (checkpoint chosen on " + std::to_string(validation.size()) + " validation)") +
            ", up to " + std::to_string(a.budget.max_steps) + " updates -> " +
            pretrain_checkpoint(config, a, unit.seed));
      }
    } else {
      const Job& job = jobs[i - units.size()];
      progress.started(slot, i, job.key.text(), job.agent->budget.max_steps);
    }
    if (remote) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kStarted;
      e.worker = slot;
      e.item = static_cast<std::int64_t>(i);
      send(e);
    }
  };

  auto work = [&](int worker) {
    // One LibTorch thread per job, however many jobs run: results depend on the thread
    // count, and a team of every core per job oversubscribed the machine
    // (agents/compute_threads.h).
    agents::limit_compute_threads(1);
    while (true) {
      {
        std::lock_guard<std::mutex> lock(sink_mutex);
        if (sink_error) return;
      }
      const auto next = queue.next();
      if (!next) return;
      const std::size_t k = *next;  // in the queue
      const std::size_t i = mine[k];
      std::vector<agents::LearningCurvePoint> curve;
      // What /running shows of this item while it trains (learners only).
      RunningJob running;
      if (i < units.size()) {
        for (const auto* j : units[i].rows) running.rows.push_back(j->key);
        running.agent_type = units[i].agent->type;
        running.max_steps = units[i].agent->budget.max_steps;
      } else if (const Job& j = jobs[i - units.size()];
                 shared.registry.info(j.agent->type).learner) {
        running.rows.push_back(j.key);
        running.agent_type = j.agent->type;
        running.max_steps = j.agent->budget.max_steps;
      }
      std::optional<LiveCurve> live;
      if (!running.rows.empty()) live.emplace(live_shared, std::move(running));
      CurveRecorder recorder(curve, progress, worker, stop, remote ? team : nullptr,
                             live ? &*live : nullptr);
      item_started(worker, i);
      if (i < units.size()) {
        const Unit& unit = units[i];
        const AgentConfig& a = *unit.agent;
        const std::string label = a.name + " (seed " + std::to_string(unit.seed) + ")";
        std::vector<RunResult> results;
        std::int64_t checkpoint_steps = 0;
        try {
          results = run_unit(shared, unit, training, validation, options, recorder, curve,
                             checkpoint_steps);
        } catch (const Interrupted&) {
          if (live) live->end(curve, "stopped", "");
          queue.ended(k);
          return;
        } catch (const std::exception& e) {
          {
            std::lock_guard<std::mutex> lock(sink_mutex);
            unit_failed[i] = 1;
          }
          if (live) live->end(curve, "failed", e.what());
          fail(worker, unit.rows, e.what());
          queue.ended(k);
          continue;
        }
        // The checkpoint is written: its consumers may start while the rows are written.
        queue.ended(k);
        if (!validation.empty()) {
          message("gopt: " + label + ": the checkpoint holds the policy after update " +
                  std::to_string(checkpoint_steps) + " of " +
                  std::to_string(curve.empty() ? 0 : curve.back().step) +
                  ", the best on the validation graphs");
        }
        if (!write(worker, std::move(results))) return;
        remove_snapshot(job_snapshots(options, config, a, pretrain_what(config), unit.seed));
        continue;
      }
      const Job& job = jobs[i - units.size()];
      const auto u = waits_for[i];
      bool pretraining_failed = false;
      if (u >= 0) {
        std::lock_guard<std::mutex> lock(sink_mutex);
        pretraining_failed = unit_failed[static_cast<std::size_t>(u)] != 0;
      }
      if (pretraining_failed) {
        const Unit& unit = units[static_cast<std::size_t>(u)];
        fail(worker, {&job},
             "not run: its pretraining, " + unit.agent->name + " (seed " +
                 std::to_string(unit.seed) + "), failed");
        queue.ended(k);
        continue;
      }
      const auto snapshots =
          job_snapshots(options, config, *job.agent, job.workload->name, job.key.seed);
      RunResult result;
      try {
        result = run_job(shared, job, recorder, snapshots);
      } catch (const Interrupted&) {
        if (live) live->end(curve, "stopped", "");
        return;
      } catch (const std::exception& e) {
        if (live) live->end(curve, "failed", e.what());
        fail(worker, {&job}, e.what());
        queue.ended(k);
        continue;
      }
      queue.ended(k);
      result.learning_curve = std::move(curve);
      if (!write(worker, {std::move(result)})) return;
      remove_snapshot(snapshots);
    }
  };

  if (team == nullptr) {
    if (workers == 1) {
      work(0);
    } else {
      std::vector<std::thread> threads;
      for (int w = 0; w < workers; ++w) threads.emplace_back(work, w);
      for (auto& t : threads) t.join();
    }
  } else {
    run_shared(
        *team, workers, work, halt, options.stop,
        [&](const TeamEvent& e, int slot) {
          switch (e.kind) {
            case TeamEvent::Kind::kStarted:
              GOPT_ASSERT(e.item >= 0 && static_cast<std::size_t>(e.item) < items.size(),
                          "a started item of this run");
              item_started(slot, static_cast<std::size_t>(e.item));
              break;
            case TeamEvent::Kind::kStep:
              progress.training_step(slot, e.step);
              break;
            case TeamEvent::Kind::kFinished:
              if (!e.failures.empty()) fail_jobs(slot, e.failures, on_rank(e.rank));
              if (!e.results.empty() && !write(slot, e.results, on_rank(e.rank))) return false;
              break;
            case TeamEvent::Kind::kMessage:
              progress.message(e.text);
              break;
            case TeamEvent::Kind::kDone:
              if (e.interrupted) summary.interrupted = true;
              break;
          }
          return true;
        },
        [&] {
          std::lock_guard<std::mutex> lock(sink_mutex);
          return sink_error.has_value();
        },
        progress, summary);
  }
  progress.stop();
  if (sink_error && summary.team_failure.empty()) {
    throw core::Error("writing results: " + *sink_error);
  }
  summary.interrupted =
      summary.interrupted ||
      (stop && stop->load() && summary.team_failure.empty() &&
       summary.completed + static_cast<std::int64_t>(summary.failures.size()) < rows_to_write);
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace gopt::experiments
