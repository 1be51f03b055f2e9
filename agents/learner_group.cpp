// Data-parallel learners' shared simulations and clock decisions (agents/learner_group.h).
#include "agents/learner_group.h"

namespace gopt::agents {

std::vector<Evaluation> evaluate_shared(Environment& env, std::int64_t count,
                                        const std::function<core::Decision(std::int64_t)>& decision,
                                        LearnerGroup* group) {
  if (group == nullptr || group->size() == 1) {
    std::vector<core::Decision> decisions;
    decisions.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) decisions.push_back(decision(i));
    return env.evaluate_many(decisions);
  }
  const int rank = group->rank();
  const int size = group->size();
  std::vector<double> exchanged(static_cast<std::size_t>(3 * count), 0.0);
  std::vector<core::Decision> mine;  // this member's share, i = rank, rank + size, ...
  for (std::int64_t i = rank; i < count; i += size) mine.push_back(decision(i));
  const std::vector<Evaluation> simulated = env.simulate_many(mine);
  for (std::size_t k = 0; k < simulated.size(); ++k) {
    const auto at = static_cast<std::size_t>(rank) + k * static_cast<std::size_t>(size);
    const Evaluation& e = simulated[k];
    exchanged[3 * at] = e.step_time_s;
    exchanged[3 * at + 1] = e.oom ? 1.0 : 0.0;
    exchanged[3 * at + 2] = static_cast<double>(e.oom_device);
  }
  group->all_reduce_sum(exchanged);
  std::vector<Evaluation> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const Evaluation e{exchanged[3 * at], exchanged[3 * at + 1] != 0.0,
                       static_cast<DeviceId>(exchanged[3 * at + 2])};
    if (!env.improves(e)) {
      env.record(e, core::Decision{});
    } else {
      env.record(e, i % size == rank ? mine[at / static_cast<std::size_t>(size)] : decision(i));
    }
    out[at] = e;
  }
  return out;
}

bool rank0_flag(LearnerGroup* group, bool flag) {
  if (group == nullptr || group->size() == 1) return flag;
  std::vector<double> value{group->rank() == 0 && flag ? 1.0 : 0.0};
  group->all_reduce_sum(value);
  return value[0] != 0.0;
}

}  // namespace gopt::agents
