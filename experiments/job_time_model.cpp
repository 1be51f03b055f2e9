#include "experiments/job_time_model.h"

namespace gopt::experiments {

void JobTimeModel::add(const std::string& agent, double nodes, double seconds) {
  auto& t = by_agent_[agent];
  t.seconds += seconds;
  t.nodes += nodes;
  all_.seconds += seconds;
  all_.nodes += nodes;
}

double JobTimeModel::expected_s(const std::string& agent, double nodes) const {
  auto it = by_agent_.find(agent);
  const Totals& t = it != by_agent_.end() && it->second.nodes > 0 ? it->second : all_;
  return t.nodes > 0 ? t.seconds / t.nodes * nodes : -1;
}

}  // namespace gopt::experiments
