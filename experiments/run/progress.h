// What a run shows while it runs (internal to the runner, experiments/run/runner.cpp): the
// progress display (`Progress`: a live bar on a terminal, or plain lines), the learning
// curves of jobs still training handed to the sink (`LiveCurve`), and the training observer
// that feeds both and stops training when the run is interrupted (`CurveRecorder`).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agents/agent.h"
#include "experiments/results/result_sink.h"
#include "experiments/run/job_time_model.h"

namespace gopt::experiments {

class RunTeam;

namespace runner {

using Clock = std::chrono::steady_clock;

/// "m:ss", or "h:mm:ss" from an hour on; `seconds` rounded to the nearest second.
[[nodiscard]] std::string clock_text(double seconds);

/// Thrown from the training observer when the stop flag is set: unwinds out of an agent's
/// train() loop between two policy updates.
struct Interrupted {};

/// The progress display: a live bar redrawn a few times a second on a terminal, or plain
/// lines (one per finished job, plus a heartbeat) otherwise. A thread of its own redraws so
/// that elapsed time and ETA move while a long job runs. Thread-safe.
class Progress {
 public:
  /// One entry per work item (a job, or a pretraining unit that writes several rows), in
  /// item order: its cost (for the ETA) and its result rows.
  struct Item {
    JobCost cost;
    std::int64_t rows = 1;
  };
  /// `out` null: nothing is shown. `workers`: the progress slots of this process's workers.
  Progress(std::ostream* out, bool live, double heartbeat_s, std::vector<Item> items, int workers);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Stops the redrawing thread and, on a terminal, leaves the final bar on its own line.
  void stop();
  /// Item `index` started on `worker`; `label` names it in the status line.
  void started(int worker, std::size_t index, const std::string& label, std::int64_t max_steps);
  /// A worker slot for another rank's worker (rank 0 of a run shared by ranks); its index.
  int add_worker();
  /// A learner on `worker` finished update `step`.
  void training_step(int worker, std::int64_t step);
  /// A finished item: a plain line per result row in both modes (above the bar on a
  /// terminal).
  void finished(int worker, const std::vector<std::string>& lines);
  /// A line of its own (above the bar on a terminal).
  void message(const std::string& line);

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

  [[nodiscard]] double elapsed() const;
  [[nodiscard]] double fraction() const;
  [[nodiscard]] std::string eta_text() const;
  void draw_bar();
  void heartbeat();
  void loop();

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

/// Hands a training job's learning curve to the sink while it trains
/// (ResultSink::update_running), so a long run can be watched: after an update, once
/// `interval_s` has passed since the last flush and 20 times that flush's own time (the file
/// is copied per write; flushing stays under 5% of the job). A sink that fails here is
/// reported once and not asked again; results are still written when jobs finish.
class LiveCurve {
 public:
  /// What every job's flushes share.
  struct Shared {
    ResultSink& sink;
    std::mutex& sink_mutex;  ///< the runner's: sinks see one call at a time
    Progress& progress;
    double interval_s = 0;  ///< 0: never
    std::atomic<bool> failed{false};
  };

  LiveCurve(Shared& shared, RunningJob job);

  /// The curve after an update: flushed when it is time.
  void point(const std::vector<agents::LearningCurvePoint>& curve);
  /// The run ends without the job's result: the curve so far, marked `state` (when anything
  /// was learned).
  void end(const std::vector<agents::LearningCurvePoint>& curve, const std::string& state,
           const std::string& message);

 private:
  void flush(const std::vector<agents::LearningCurvePoint>& curve, const std::string& state,
             const std::string& message);

  Shared& shared_;
  RunningJob job_;
  Clock::time_point last_ = Clock::now();
  double last_cost_s_ = 0;
};

/// Records the learning curve, feeds the progress display (on a rank other than 0, rank
/// 0's through `team`) and the live curve, and stops training (throws Interrupted) when the
/// stop flag is set.
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
  void on_training_step(const agents::LearningCurvePoint& point) override;

 private:
  std::vector<agents::LearningCurvePoint>& curve_;
  Progress& progress_;
  int worker_;
  const std::atomic<bool>* stop_;
  RunTeam* team_;
  LiveCurve* live_;
};

}  // namespace runner
}  // namespace gopt::experiments
