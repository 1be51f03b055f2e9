// The executor of a plan: workers, waits between jobs, and where finished rows go
// (experiments/run/job_workers.h).
#include "experiments/run/job_workers.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "agents/compute_threads.h"
#include "core/errors.h"
#include "experiments/run/assignment.h"
#include "experiments/run/team/shared_run.h"
#include "experiments/run/team/team.h"
#include "experiments/run/work_queue.h"

namespace gopt::experiments::runner {
namespace {

// Runs a plan's jobs on a pool of workers (and, shared by ranks, with the other ranks),
// writing each finished job's rows to the sink (rank 0 and a run alone) or sending them to
// rank 0.
class Executor {
 public:
  Executor(const JobContext& context, ResultSink& sink, const RunnerOptions& options,
           RunSummary& summary, std::vector<Progress::Item> items, Assignment assignment)
      : context_(context),
        plan_(context.plan),
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
    const std::int64_t rows_to_write = rows_this_process_writes();
    const auto shared = std::count(assignment_.shared.begin(), assignment_.shared.end(), 1);
    if (shared > 0 && !remote_) {
      progress_.message("gopt: data parallel: " + std::to_string(shared) + " jobs run on all " +
                        std::to_string(team_->size()) +
                        " ranks together, each update's simulations split among them");
    }
    if (team_ == nullptr) {
      run_alone();
    } else {
      run_shared(
          *team_, workers_, [this](int worker) { work(worker); }, halt_, options_.stop,
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

 private:
  int worker_count() const {
    const int mine = static_cast<int>(assignment_.mine.size());
    // Shared jobs take every rank's one worker in the same order.
    GOPT_ASSERT(options_.learners == nullptr || options_.jobs == 1,
                "data parallelism runs one job at a time per rank");
    return team_ == nullptr ? std::max(1, std::min(options_.jobs, mine))
                            : std::min(options_.jobs, mine);
  }

  // The rows this process accounts for: every row of the plan on rank 0 and alone (rank 0
  // writes the others' rows too), its own jobs' rows on another rank.
  std::int64_t rows_this_process_writes() const {
    std::int64_t rows = 0;
    std::vector<char> counted(plan_.jobs.size(), remote_ ? 0 : 1);
    for (std::size_t k = 0; k < assignment_.mine.size(); ++k) {
      if (assignment_.shared[k] == 0) counted[assignment_.mine[k]] = 1;
    }
    for (std::size_t i = 0; i < plan_.jobs.size(); ++i) {
      if (counted[i] != 0) rows += static_cast<std::int64_t>(plan_.jobs[i].rows.size());
    }
    return rows;
  }

  void run_alone() {
    if (workers_ == 1) {
      work(0);
      return;
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < workers_; ++w) threads.emplace_back([this, w] { work(w); });
    for (auto& t : threads) t.join();
  }

  // A worker: takes jobs from the queue until none is left.
  void work(int worker) {
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

  // Runs the job at queue position `k`; false when the worker must stop (interrupted, or
  // its rows could not be written).
  bool run_job(int worker, std::size_t k) {
    const std::size_t i = assignment_.mine[k];
    const PlannedJob& job = plan_.jobs[i];
    // Shared by every rank (data parallelism): rank 0 reports and writes it, the others
    // take part silently; rank 0's stop stops them (agents/go/go_training.h).
    const bool shared = assignment_.shared[k] != 0;
    if (shared && remote_) return run_shared_job(k);
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
    agents::LearnerGroup* learners = shared ? options_.learners : nullptr;
    try {
      if (job.training_set) {
        results =
            run_training_set(context_, job, snapshots, recorder, curve, checkpoint_steps, learners);
      } else {
        results.push_back(run_single(context_, job, recorder, snapshots, learners));
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

  // A rank other than 0 takes its part in shared job `k`: no progress, no rows (rank 0
  // writes them, and reports a failure).
  bool run_shared_job(std::size_t k) {
    const std::size_t i = assignment_.mine[k];
    const PlannedJob& job = plan_.jobs[i];
    std::vector<agents::LearningCurvePoint> curve;
    CurveRecorder recorder(curve, progress_, 0, nullptr, nullptr);
    const auto snapshots = job_snapshots(options_, plan_, job);
    std::int64_t checkpoint_steps = 0;
    try {
      if (job.training_set) {
        (void)run_training_set(context_, job, snapshots, recorder, curve, checkpoint_steps,
                               options_.learners);
      } else {
        (void)run_single(context_, job, recorder, snapshots, options_.learners);
      }
    } catch (const std::exception&) {
      mark_failed(i);
      queue_.ended(k);
      return !(stop_ && stop_->load());
    }
    queue_.ended(k);
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

  const JobContext& context_;
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

}  // namespace

void execute_plan(const JobContext& context, ResultSink& sink, const RunnerOptions& options,
                  RunSummary& summary, std::vector<Progress::Item> items) {
  std::vector<char> shared(context.plan.jobs.size(), 0);
  if (options.learners != nullptr) {
    for (std::size_t i = 0; i < shared.size(); ++i) {
      const PlannedJob& job = context.plan.jobs[i];
      shared[i] = job.learner && context.registry.info(job.agent->type).data_parallel ? 1 : 0;
    }
  }
  Assignment assignment = assign_jobs(context.plan, items, options.team, std::move(shared));
  Executor(context, sink, options, summary, std::move(items), std::move(assignment)).run();
}

}  // namespace gopt::experiments::runner
