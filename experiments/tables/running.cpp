// The running-jobs table: jobs still training when the file was last written
// (experiments/tables/families.h).
#include <signal.h>

#include <cerrno>
#include <cmath>

#include "experiments/results/provenance.h"
#include "experiments/tables/families.h"

namespace gopt::experiments::tables {
namespace {

// A running job's state as a reader should see it: "running" from a process that is gone
// (killed, or the machine restarted) is not running any more.
std::string running_state(const RunningJob& j) {
  if (j.state == "failed") return "failed: " + j.message;
  if (j.state == "stopped") return "stopped (--resume continues it)";
  if (j.host == host_name() && j.pid > 0 && ::kill(static_cast<pid_t>(j.pid), 0) != 0 &&
      errno == ESRCH) {
    return "not running: its process " + std::to_string(j.pid) + " is gone (--resume continues it)";
  }
  return j.state;
}

}  // namespace

Table running_table(const ResultsFile& file) {
  Table t;
  t.id = "running";
  t.title = "Running: jobs still training (their learning curves so far)";
  t.header = {"workload",         "agent",          "seed",         "state", "updates", "samples",
              "best so far (ms)", "last mean (ms)", "written (UTC)"};
  for (const auto& j : file.running) {
    std::string workloads = j.rows.front().workload;
    if (j.rows.size() > 1) {
      workloads = "pretraining on " + std::to_string(j.rows.size()) + " graphs (" + workloads;
      for (std::size_t i = 1; i < j.rows.size() && i < 3; ++i)
        workloads += ", " + j.rows[i].workload;
      workloads += j.rows.size() > 3 ? ", ...)" : ")";
    }
    const auto* last = j.learning_curve.empty() ? nullptr : &j.learning_curve.back();
    std::string updates = last ? std::to_string(last->step) : "0";
    if (j.max_steps > 0) updates += " of " + std::to_string(j.max_steps);
    auto finite_ms = [](double s) { return std::isfinite(s) ? ms(s) : std::string("none yet"); };
    t.rows.push_back({workloads, j.rows.front().agent, std::to_string(j.rows.front().seed),
                      running_state(j), updates, last ? std::to_string(last->samples) : "0",
                      last ? finite_ms(last->best_step_time_s) : "",
                      last ? finite_ms(last->mean_step_time_s) : "", j.updated});
  }
  t.notes.push_back(
      "Written by `gopt run` while the jobs train (every --curve-every seconds, default 30); a "
      "job leaves this table when its result is written. Their cells in the tables above stay "
      "empty until then.");
  return t;
}

}  // namespace gopt::experiments::tables
