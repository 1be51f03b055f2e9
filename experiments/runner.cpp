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
#include "experiments/plan.h"
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
  const Plan& plan;
  const agents::AgentRegistry& registry;
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

// The result row `row` of `job` for the decision `agent` proposes after training in `env`.
RunResult result_of(const Shared& shared, const PlannedJob& job, const PlannedRow& row,
                    agents::Agent& agent, agents::Environment& env, Clock::time_point start) {
  const core::CompiledGraph& graph = env.problem().graph;
  RunResult r;
  r.key = row.key;
  r.order = row.order;
  r.agent_type = job.agent->type;
  r.held_out = row.workload->held_out;
  r.graph = row.workload->graph;
  r.hardware = shared.cluster.name();
  r.problem_seed = env.problem().seed;
  r.num_nodes = graph.num_nodes();
  r.num_devices = shared.cluster.num_devices();
  r.options = job.agent->options;
  r.resolved_options = resolved_options(shared, job.agent->type, job.options);
  r.provenance = shared.provenance;
  if (job.learner) r.budget = job.agent->budget;
  // A learned agent: one that trains, or one that applies a policy trained elsewhere.
  r.learner = agent.is_learner() || job.transfers;
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

// What a training-set job's snapshot is of: its training graphs ("pretrain ...", the
// identity snapshots written before the plan carry).
std::string training_set_what(const Plan& plan) {
  std::string training = "pretrain";
  for (const auto* w : plan.training) training += " " + w->name;
  if (plan.validation.empty()) return training;
  std::string validation;
  for (const auto* w : plan.validation) validation += " " + w->name;
  return training + " validate" + validation;
}

// A job's training snapshots (RunnerOptions::snapshot_dir): the file, and the identity that
// ties it to this job as configured (a changed option or budget starts the job over).
agents::TrainSnapshots job_snapshots(const RunnerOptions& options, const Plan& plan,
                                     const PlannedJob& job) {
  agents::TrainSnapshots s;
  if (options.snapshot_dir.empty()) return s;
  const AgentConfig& agent = *job.agent;
  const std::string what =
      job.training_set ? training_set_what(plan) : job.rows.front().workload->name;
  std::ostringstream identity;
  identity << what << " | " << agent.name << " (" << agent.type << ") | " << plan.config->hardware
           << " | seed " << job.seed << " | steps " << agent.budget.max_steps << " | samples "
           << agent.budget.max_samples << " | seconds " << agent.budget.max_seconds;
  for (const auto& [key, value] : agent.options) identity << " | " << key << "=" << value;
  std::string file = what + "." + agent.name + ".seed" + std::to_string(job.seed);
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  s.path = (std::filesystem::path(options.snapshot_dir) / (file + ".pt")).string();
  s.identity = identity.str();
  s.interval_s = options.snapshot_interval_s;
  return s;
}

// The job's snapshot, and the temporary file of a write that a kill interrupted.
void remove_snapshot(const agents::TrainSnapshots& s) {
  if (s.path.empty()) return;
  std::error_code ec;
  std::filesystem::remove(s.path, ec);
  std::filesystem::remove(s.path + ".tmp", ec);
}

// Runs a job on one workload (training it first if its agent learns); its one row.
RunResult run_single(const Shared& shared, const PlannedJob& job, CurveRecorder& recorder,
                     const agents::TrainSnapshots& snapshots) {
  const auto start = Clock::now();
  const PlannedRow& row = job.rows.front();
  auto agent = shared.registry.create(job.agent->type, job.options, shared.config.source);
  agents::Problem problem{shared.graphs.at(row.workload->name), shared.cluster, *shared.cost,
                          job_seed(job.seed, row.key.workload, row.key.agent)};
  agents::Environment env(problem);
  if (agent->is_learner()) {
    agent->set_snapshots(snapshots);
    agent->train(env, job.agent->budget, &recorder);
  }
  return result_of(shared, job, row, *agent, env, start);
}

std::string result_line(const RunResult& r) {
  std::string s = r.key.text() + ": step time " + core::format_seconds(r.best_step_time_s);
  if (r.oom) s += " [OOM]";
  return s + " (simulated), " + core::format_seconds(r.wall_s) + " wall";
}

// Trains a training-set job (continuing from its snapshot if there is one), which writes
// its artifacts, and returns its rows. `checkpoint_steps`: set to the updates behind the
// policy it wrote.
std::vector<RunResult> run_training_set(const Shared& shared, const PlannedJob& job,
                                        const agents::TrainSnapshots& snapshots,
                                        agents::TrainingObserver& recorder,
                                        const std::vector<agents::LearningCurvePoint>& curve,
                                        std::int64_t& checkpoint_steps) {
  const Plan& plan = shared.plan;
  const auto start = Clock::now();
  auto agent =
      shared.registry.create_transferable(job.agent->type, job.options, shared.config.source);
  // One environment per graph (owned), and the pointers the agent takes.
  std::vector<std::unique_ptr<agents::Environment>> owned;
  auto environments_of = [&](const std::vector<const WorkloadConfig*>& workloads) {
    std::vector<agents::Environment*> pointers;
    for (const auto* w : workloads) {
      agents::Problem problem{shared.graphs.at(w->name), shared.cluster, *shared.cost,
                              job_seed(job.seed, w->name, job.agent->name)};
      owned.push_back(std::make_unique<agents::Environment>(problem));
      pointers.push_back(owned.back().get());
    }
    return pointers;
  };
  const auto pointers = environments_of(plan.training);
  agent->set_snapshots(snapshots);
  agent->set_validation(environments_of(plan.validation));
  agent->train_on_set(pointers, job.agent->budget, &recorder);
  checkpoint_steps = agent->checkpoint_steps();
  std::vector<RunResult> results;
  for (const auto& row : job.rows) {
    const auto index = static_cast<std::size_t>(
        std::find(plan.training.begin(), plan.training.end(), row.workload) -
        plan.training.begin());
    results.push_back(result_of(shared, job, row, *agent, *pointers[index], start));
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

// Which of the plan's jobs this process runs, in the order it takes them (every job, in
// plan order, when it runs alone), and what each waits for among them (WorkQueue).
struct Assignment {
  std::vector<std::size_t> mine;
  std::vector<std::ptrdiff_t> waits;
};

Assignment assign_jobs(const Plan& plan, const std::vector<Progress::Item>& items, RunTeam* team) {
  Assignment out;
  std::vector<std::ptrdiff_t> waits_for;
  for (const auto& job : plan.jobs) waits_for.push_back(job.waits_for);
  if (team == nullptr) {
    out.mine.resize(plan.jobs.size());
    std::iota(out.mine.begin(), out.mine.end(), std::size_t{0});
    out.waits = waits_for;
    return out;
  }
  const JobTimeModel prior;  // nothing finished: the cost model's prior
  std::vector<double> expected;
  for (const auto& item : items) expected.push_back(prior.expected_s(item.cost));
  const RankPlan ranks = plan_ranks(expected, waits_for, team->size());
  std::vector<int> rank_of = ranks.rank_of;
  team->share_plan(rank_of);  // rank 0's deal is everyone's
  std::vector<std::ptrdiff_t> local_of(plan.jobs.size(), -1);
  for (const auto& dealt : ranks.order) {
    for (const auto i : dealt) {
      if (rank_of[i] != team->rank()) continue;
      local_of[i] = static_cast<std::ptrdiff_t>(out.mine.size());
      out.mine.push_back(i);
    }
  }
  for (const auto i : out.mine) {
    const auto w = waits_for[i];
    GOPT_ASSERT(w < 0 || local_of[static_cast<std::size_t>(w)] >= 0,
                "a job runs on the rank of the job whose artifact it reads");
    out.waits.push_back(w < 0 ? -1 : local_of[static_cast<std::size_t>(w)]);
  }
  return out;
}

// Runs a plan's jobs on a pool of workers (and, shared by ranks, with the other ranks),
// writing each finished job's rows to the sink (rank 0 and a run alone) or sending them to
// rank 0. Knows the plan's jobs and artifacts, never an agent by name.
class Executor {
 public:
  Executor(const Shared& shared, ResultSink& sink, const RunnerOptions& options,
           RunSummary& summary, std::vector<Progress::Item> items, Assignment assignment)
      : shared_(shared),
        plan_(shared.plan),
        sink_(sink),
        options_(options),
        summary_(summary),
        team_(options.team),
        remote_(team_ != nullptr && team_->rank() != 0),
        assignment_(std::move(assignment)),
        workers_(worker_count()),
        progress_(remote_ ? nullptr : options.progress, options.live_bar, options.heartbeat_s,
                  std::move(items), workers_),
        stop_(team_ == nullptr ? options.stop : &halt_),
        queue_(assignment_.waits, stop_),
        job_failed_(plan_.jobs.size(), 0),
        live_shared_{sink_, sink_mutex_, progress_, remote_ ? 0 : options.curve_flush_s} {}

  // Runs this process's jobs; throws core::Error when the sink fails.
  void run() {
    std::int64_t rows_to_write = 0;
    for (std::size_t i = 0; i < plan_.jobs.size(); ++i) {
      const bool counted = !remote_ || std::find(assignment_.mine.begin(), assignment_.mine.end(),
                                                 i) != assignment_.mine.end();
      if (counted) rows_to_write += static_cast<std::int64_t>(plan_.jobs[i].rows.size());
    }
    if (team_ == nullptr) {
      run_alone();
    } else {
      run_shared(
          *team_, workers_, *this, halt_, options_.stop,
          [this](const TeamEvent& e, int slot) { return handle(e, slot); },
          [this] {
            std::lock_guard<std::mutex> lock(sink_mutex_);
            return sink_error_.has_value();
          },
          progress_, summary_);
    }
    progress_.stop();
    if (sink_error_ && summary_.team_failure.empty()) {
      throw core::Error("writing results: " + *sink_error_);
    }
    summary_.interrupted =
        summary_.interrupted ||
        (stop_ && stop_->load() && summary_.team_failure.empty() &&
         summary_.completed + static_cast<std::int64_t>(summary_.failures.size()) < rows_to_write);
  }

  // A worker: takes jobs from the queue until none is left (run_shared's `work`).
  void operator()(int worker) {
    // One LibTorch thread per job, however many jobs run: results depend on the thread
    // count, and a team of every core per job oversubscribed the machine
    // (agents/compute_threads.h).
    agents::limit_compute_threads(1);
    while (true) {
      {
        std::lock_guard<std::mutex> lock(sink_mutex_);
        if (sink_error_) return;
      }
      const auto next = queue_.next();
      if (!next) return;
      if (!run_job(worker, *next)) return;
    }
  }

 private:
  int worker_count() const {
    const int mine = static_cast<int>(assignment_.mine.size());
    return team_ == nullptr ? std::max(1, std::min(options_.jobs, mine))
                            : std::min(options_.jobs, mine);
  }

  void run_alone() {
    if (workers_ == 1) {
      (*this)(0);
      return;
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < workers_; ++w) threads.emplace_back([this, w] { (*this)(w); });
    for (auto& t : threads) t.join();
  }

  // Runs the job at queue position `k`; false when the worker must stop (interrupted, or
  // its rows could not be written).
  bool run_job(int worker, std::size_t k) {
    const std::size_t i = assignment_.mine[k];
    const PlannedJob& job = plan_.jobs[i];
    std::vector<agents::LearningCurvePoint> curve;
    std::optional<LiveCurve> live;
    if (job.training_set || job.learner) live.emplace(live_shared_, running_job(job));
    CurveRecorder recorder(curve, progress_, worker, stop_, remote_ ? team_ : nullptr,
                           live ? &*live : nullptr);
    item_started(worker, i);
    if (const auto waited = job.waits_for; waited >= 0 && failed(waited)) {
      const PlannedJob& producer = plan_.jobs[static_cast<std::size_t>(waited)];
      fail(worker, job, "not run: its pretraining, " + producer.label() + ", failed");
      queue_.ended(k);
      return true;
    }
    const auto snapshots = job_snapshots(options_, plan_, job);
    std::vector<RunResult> results;
    std::int64_t checkpoint_steps = 0;
    try {
      if (job.training_set) {
        results = run_training_set(shared_, job, snapshots, recorder, curve, checkpoint_steps);
      } else {
        results.push_back(run_single(shared_, job, recorder, snapshots));
        results.back().learning_curve = curve;
      }
    } catch (const Interrupted&) {
      if (live) live->end(curve, "stopped", "");
      if (job.training_set) queue_.ended(k);
      return false;
    } catch (const std::exception& e) {
      mark_failed(i);
      if (live) live->end(curve, "failed", e.what());
      fail(worker, job, e.what());
      queue_.ended(k);
      return true;
    }
    // Its artifacts are written: the jobs reading them may start while the rows are written.
    queue_.ended(k);
    if (job.training_set && !plan_.validation.empty()) {
      message("gopt: " + job.label() + ": the checkpoint holds the policy after update " +
              std::to_string(checkpoint_steps) + " of " +
              std::to_string(curve.empty() ? 0 : curve.back().step) +
              ", the best on the validation graphs");
    }
    if (!write(worker, std::move(results))) return false;
    remove_snapshot(snapshots);
    return true;
  }

  // What /running shows of a learner's job while it trains.
  static RunningJob running_job(const PlannedJob& job) {
    RunningJob running;
    for (const auto& row : job.rows) running.rows.push_back(row.key);
    running.agent_type = job.agent->type;
    running.max_steps = job.agent->budget.max_steps;
    return running;
  }

  bool failed(std::ptrdiff_t job) {
    std::lock_guard<std::mutex> lock(sink_mutex_);
    return job_failed_[static_cast<std::size_t>(job)] != 0;
  }
  void mark_failed(std::size_t job) {
    std::lock_guard<std::mutex> lock(sink_mutex_);
    job_failed_[job] = 1;
  }

  // Job `i` started on progress slot `slot`: the display, and rank 0 when remote.
  void item_started(int slot, std::size_t i) {
    const PlannedJob& job = plan_.jobs[i];
    if (!job.training_set) {
      progress_.started(slot, i, job.label(), job.agent->budget.max_steps);
    } else {
      progress_.started(slot, i, "pretraining " + job.label(), job.agent->budget.max_steps);
      if (!remote_) progress_.message(training_set_line(job));
    }
    if (remote_) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kStarted;
      e.worker = slot;
      e.item = static_cast<std::int64_t>(i);
      send(e);
    }
  }

  // "gopt: pretraining go_pretrain (seed 1) on 2 graphs ..., up to 10 updates -> FILE".
  std::string training_set_line(const PlannedJob& job) const {
    const auto n = plan_.training.size();
    std::string line = "gopt: pretraining " + job.label() + " on " + std::to_string(n) +
                       (n == 1 ? " graph" : " graphs");
    if (!plan_.validation.empty()) {
      line += " (checkpoint chosen on " + std::to_string(plan_.validation.size()) + " validation)";
    }
    line += ", up to " + std::to_string(job.agent->budget.max_steps) + " updates";
    for (const auto a : job.produces) line += " -> " + plan_.artifacts[a].path;
    return line;
  }

  // Hands an event to rank 0 (a rank other than 0); false when that failed (the run stops).
  bool send(const TeamEvent& event) {
    try {
      team_->send(event);
      return true;
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(sink_mutex_);
      if (!sink_error_) sink_error_ = std::string("sending to rank 0: ") + e.what();
      return false;
    }
  }

  // Writes a job's rows (rank 0 and a run alone) or sends them to rank 0; false when that
  // failed (the run stops). `where`: appended to each progress line (the rank that ran it).
  bool write(int worker, std::vector<RunResult> results, const std::string& where = "") {
    if (remote_) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kFinished;
      e.worker = worker;
      const auto n = static_cast<std::int64_t>(results.size());
      e.results = std::move(results);
      if (!send(e)) return false;
      std::lock_guard<std::mutex> lock(sink_mutex_);
      summary_.completed += n;
      return true;
    }
    std::vector<std::string> lines;
    {
      std::lock_guard<std::mutex> lock(sink_mutex_);
      try {
        for (const auto& r : results) {
          sink_.write(r);
          ++summary_.completed;
          lines.push_back(result_line(r) + where);
        }
      } catch (const std::exception& e) {
        sink_error_ = e.what();
        return false;
      }
    }
    progress_.finished(worker, lines);
    return true;
  }

  // Records failed rows, given as (row, message).
  void fail_rows(int worker, const std::vector<std::pair<std::string, std::string>>& failed,
                 const std::string& where = "") {
    std::vector<std::string> lines;
    {
      std::lock_guard<std::mutex> lock(sink_mutex_);
      for (const auto& [row, message] : failed) {
        summary_.failures.push_back(row + ": " + message);
        lines.push_back(row + ": FAILED: " + message + where);
      }
    }
    if (remote_) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kFinished;
      e.worker = worker;
      e.failures = failed;
      send(e);
    }
    progress_.finished(worker, lines);
  }

  void fail(int worker, const PlannedJob& job, const std::string& message) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& row : job.rows) named.emplace_back(row.key.text(), message);
    fail_rows(worker, named);
  }

  void message(const std::string& line) {
    if (remote_) {
      TeamEvent e;
      e.kind = TeamEvent::Kind::kMessage;
      e.text = line;
      send(e);
    } else {
      progress_.message(line);
    }
  }

  // Rank 0: an event of another rank, whose worker has progress slot `slot`; false when
  // the run must stop (its rows could not be written).
  bool handle(const TeamEvent& e, int slot) {
    const std::string where = "  [rank " + std::to_string(e.rank) + "]";
    switch (e.kind) {
      case TeamEvent::Kind::kStarted:
        GOPT_ASSERT(e.item >= 0 && static_cast<std::size_t>(e.item) < plan_.jobs.size(),
                    "a started job of this run");
        item_started(slot, static_cast<std::size_t>(e.item));
        break;
      case TeamEvent::Kind::kStep:
        progress_.training_step(slot, e.step);
        break;
      case TeamEvent::Kind::kFinished:
        if (!e.failures.empty()) fail_rows(slot, e.failures, where);
        if (!e.results.empty() && !write(slot, e.results, where)) return false;
        break;
      case TeamEvent::Kind::kMessage:
        progress_.message(e.text);
        break;
      case TeamEvent::Kind::kDone:
        if (e.interrupted) summary_.interrupted = true;
        break;
    }
    return true;
  }

  const Shared& shared_;
  const Plan& plan_;
  ResultSink& sink_;
  const RunnerOptions& options_;
  RunSummary& summary_;
  RunTeam* team_;
  bool remote_;  // a rank other than 0: rank 0 writes every result
  Assignment assignment_;
  int workers_;
  Progress progress_;
  // Alone, the run stops on the caller's flag; shared, on `halt_`, which run_shared sets on
  // the caller's flag or when another rank fails.
  std::atomic<bool> halt_{false};
  const std::atomic<bool>* stop_;
  WorkQueue queue_;
  std::mutex sink_mutex_;  // sinks see one call at a time; also guards summary_, job_failed_
  std::optional<std::string> sink_error_;
  std::vector<char> job_failed_;
  LiveCurve::Shared live_shared_;  // a rank other than 0 has no file: no running curves
};

// "gopt: resuming ..." and "gopt: N unfinished job(s) continue ..." for a resumed run.
void say_what_resumes(const Plan& plan, const RunnerOptions& options) {
  if (!options.progress) return;
  if (plan.done_rows > 0) {
    *options.progress << "gopt: resuming: " << plan.done_rows << " of " << plan.total_rows
                      << " results are already in the file\n"
                      << std::flush;
  }
  if (options.snapshot_dir.empty()) return;
  std::set<std::string> snapshots;
  for (const auto& job : plan.jobs) snapshots.insert(job_snapshots(options, plan, job).path);
  std::error_code ec;
  const auto found = std::count_if(snapshots.begin(), snapshots.end(), [&](const std::string& f) {
    return std::filesystem::exists(f, ec);
  });
  if (found > 0) {
    *options.progress << "gopt: " << found << " unfinished job(s) continue from their training "
                      << "snapshots in " << options.snapshot_dir << "\n"
                      << std::flush;
  }
}

// Compiles the graphs the plan's jobs run on (a training-set job: the training and
// validation graphs).
void load_graphs(const Plan& plan, std::map<std::string, core::CompiledGraph>& graphs) {
  const bool sets = std::any_of(plan.jobs.begin(), plan.jobs.end(),
                                [](const PlannedJob& j) { return j.training_set; });
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  for (const auto& w : plan.config->workloads) {
    const bool needed = (sets && !w.held_out) ||
                        std::any_of(plan.jobs.begin(), plan.jobs.end(), [&](const auto& j) {
                          return !j.training_set && j.rows.front().workload == &w;
                        });
    if (!needed) continue;
    datasets::LoadOptions load;
    load.overrides = w.overrides;
    load.onnx_batch = w.onnx_batch;
    load.onnx_training = w.onnx_training;
    graphs.emplace(w.name,
                   core::CompiledGraph::compile(datasets::load_graph(w.graph, workloads, load)));
  }
}

std::map<std::string, double> ops_of(const std::map<std::string, core::CompiledGraph>& graphs) {
  std::map<std::string, double> ops;
  for (const auto& [name, graph] : graphs) ops[name] = static_cast<double>(graph.num_nodes());
  return ops;
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

std::uint64_t job_seed(std::uint64_t seed, const std::string& workload, const std::string& agent) {
  return core::mix_seed(core::mix_seed(seed, core::fnv1a(workload)), core::fnv1a(agent));
}

RunSummary run_experiment(const ExperimentConfig& config, ResultSink& sink,
                          const RunnerOptions& options) {
  const auto start = Clock::now();
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const Plan plan = without_done(build_plan(config, registry), options.done);
  RunSummary summary;
  summary.total = plan.total_rows;
  summary.already_done = plan.done_rows;
  say_what_resumes(plan, options);

  Shared shared{config,
                plan,
                registry,
                hardware::load_profile(config.hardware),
                nullptr,
                {},
                options.metadata.provenance};
  shared.cost = hardware::make_cost_model(shared.cluster);  // calibrated for measured profiles
  load_graphs(plan, shared.graphs);
  std::vector<Progress::Item> items;
  const auto ops = ops_of(shared.graphs);
  for (const auto& job : plan.jobs) {
    items.push_back({job_cost(plan, job, ops), static_cast<std::int64_t>(job.rows.size())});
  }
  // A run shared by ranks: rank 0 writes every result; the others send theirs to it.
  const bool remote = options.team != nullptr && options.team->rank() != 0;
  if (!remote) sink.begin(options.metadata);
  if (!plan.jobs.empty()) {
    Assignment assignment = assign_jobs(plan, items, options.team);
    Executor(shared, sink, options, summary, std::move(items), std::move(assignment)).run();
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

void print_run_plan(const ExperimentConfig& config, const std::vector<ResultKey>& done,
                    std::ostream& out) {
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const Plan plan = without_done(build_plan(config, registry), done);
  std::map<std::string, core::CompiledGraph> graphs;
  load_graphs(plan, graphs);
  print_plan(plan, ops_of(graphs), out);
}

}  // namespace gopt::experiments
