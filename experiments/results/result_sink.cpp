#include "experiments/results/result_sink.h"

#include <cstdio>
#include <ostream>
#include <tuple>

#include "core/strings.h"
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

bool Provenance::empty() const { return *this == Provenance{}; }

bool Provenance::operator==(const Provenance& o) const {
  const auto mine = provenance_fields(*this);
  const auto theirs = provenance_fields(o);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (*mine[i].second != *theirs[i].second) return false;
  }
  return true;
}

std::string config_hash(const std::string& resolved_yaml) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(core::fnv1a(resolved_yaml)));
  return hex;
}

void ResultSink::update_running(const RunningJob& /*job*/) {}

void ConsoleSink::begin(const RunMetadata& metadata) {
  out_ << "experiment " << metadata.experiment << " (gopt " << metadata.provenance.gopt_version
       << ", git " << metadata.provenance.git_revision << ")\n";
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
