#include "experiments/result_sink.h"

#include <ostream>
#include <tuple>

#include "core/units.h"

namespace gopt::experiments {

bool ResultKey::operator<(const ResultKey& o) const {
  return std::tie(workload, agent, seed) < std::tie(o.workload, o.agent, o.seed);
}

bool ResultKey::operator==(const ResultKey& o) const {
  return workload == o.workload && agent == o.agent && seed == o.seed;
}

std::string ResultKey::text() const {
  return workload + " / " + agent + " / seed " + std::to_string(seed);
}

void ResultSink::update_running(const RunningJob& /*job*/) {}

void ConsoleSink::begin(const RunMetadata& metadata) {
  out_ << "experiment " << metadata.experiment << " (gopt " << metadata.gopt_version << ", git "
       << metadata.git_revision << ")\n";
}

void ConsoleSink::write(const RunResult& r) {
  out_ << r.key.workload << "  " << r.key.agent << "  seed " << r.key.seed << "  step "
       << core::format_seconds(r.best_step_time_s) << (r.oom ? "  [OOM]" : "") << "  (" << r.samples
       << " samples, " << core::format_seconds(r.wall_s) << " wall)\n";
  out_.flush();
}

void TeeSink::begin(const RunMetadata& metadata) {
  for (auto* s : sinks_) s->begin(metadata);
}

void TeeSink::write(const RunResult& result) {
  for (auto* s : sinks_) s->write(result);
}

void TeeSink::update_running(const RunningJob& job) {
  for (auto* s : sinks_) s->update_running(job);
}

}  // namespace gopt::experiments
