// The runner's progress display, live learning curves and training observer
// (experiments/run/progress.h).
#include "experiments/run/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <ostream>

#include "experiments/results/provenance.h"
#include "experiments/run/team/team.h"

namespace gopt::experiments::runner {

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

// --- Progress ----------------------------------------------------------------------------

Progress::Progress(std::ostream* out, bool live, double heartbeat_s, std::vector<Item> items,
                   int workers)
    : out_(out),
      live_(live),
      heartbeat_s_(heartbeat_s),
      items_(std::move(items)),
      started_(items_.size(), false),
      running_(static_cast<std::size_t>(workers)) {
  for (const auto& item : items_) total_ += item.rows;
  if (out_ && total_ > 0) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { stop(); }

void Progress::stop() {
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

void Progress::started(int worker, std::size_t index, const std::string& label,
                       std::int64_t max_steps) {
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

int Progress::add_worker() {
  std::lock_guard<std::mutex> lock(mutex_);
  running_.emplace_back();
  return static_cast<int>(running_.size()) - 1;
}

void Progress::training_step(int worker, std::int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& r = running_[static_cast<std::size_t>(worker)];
  r.step = step;
  r.learner = true;
}

void Progress::finished(int worker, const std::vector<std::string>& lines) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& r = running_[static_cast<std::size_t>(worker)];
  times_.add(r.cost, std::chrono::duration<double>(Clock::now() - r.start).count());
  r = {};
  last_line_ = Clock::now();
  if (out_ && live_) *out_ << "\r\033[K";
  for (const auto& line : lines) {
    ++done_;
    if (!out_) continue;
    *out_ << "[" << done_ << "/" << total_ << "] " << line << "  (elapsed " << clock_text(elapsed())
          << eta_text() << ")\n";
  }
  if (!out_) return;
  if (live_) draw_bar();
  out_->flush();
}

void Progress::message(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!out_) return;
  if (live_) *out_ << "\r\033[K";
  *out_ << line << "\n";
  if (live_ && total_ > 0 && !stopping_) draw_bar();
  out_->flush();
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

// Fraction of the rows done, counting learners' completed updates within their budget.
double Progress::fraction() const {
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
std::string Progress::eta_text() const {
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

void Progress::draw_bar() {
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

// Plain mode: a status line naming the running jobs when nothing finished for a while.
void Progress::heartbeat() {
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

void Progress::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto period = live_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
  while (!stopping_) {
    cv_.wait_for(lock, period);
    if (stopping_) break;
    if (live_) {
      draw_bar();
    } else if (std::chrono::duration<double>(Clock::now() - last_line_).count() >= heartbeat_s_) {
      heartbeat();
    }
  }
}

// --- LiveCurve ---------------------------------------------------------------------------

LiveCurve::LiveCurve(Shared& shared, RunningJob job) : shared_(shared), job_(std::move(job)) {
  job_.host = host_name();
  job_.pid = static_cast<std::int64_t>(::getpid());
}

void LiveCurve::point(const std::vector<agents::LearningCurvePoint>& curve) {
  if (shared_.interval_s <= 0 || shared_.failed.load()) return;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (since < std::max(shared_.interval_s, 20 * last_cost_s_)) return;
  flush(curve, "running", "");
}

void LiveCurve::end(const std::vector<agents::LearningCurvePoint>& curve, const std::string& state,
                    const std::string& message) {
  if (shared_.interval_s <= 0 || shared_.failed.load() || curve.empty()) return;
  flush(curve, state, message);
}

void LiveCurve::flush(const std::vector<agents::LearningCurvePoint>& curve,
                      const std::string& state, const std::string& message) {
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

// --- CurveRecorder -----------------------------------------------------------------------

void CurveRecorder::on_training_step(const agents::LearningCurvePoint& point) {
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

}  // namespace gopt::experiments::runner
