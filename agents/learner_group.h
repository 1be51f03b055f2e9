// Data-parallel learners: the processes (ranks) that share one learner's updates, as the
// learner sees them. Every member runs the same job with the same seed; collectives are
// called by every member in the same order. The learner decides what it splits and
// exchanges (GO: go_ppo.h); whatever the group's size, every member ends each update with
// the same state, and the same state a learner alone would have. Implemented outside
// agents/: over a c10d process group (experiments/run/team/distributed.h) and, for tests, over
// threads of one process.
//
//   agent->set_learner_group(&group);  // before train(); null: alone
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/environment.h"

namespace gopt::agents {

class LearnerGroup {
 public:
  virtual ~LearnerGroup() = default;
  LearnerGroup(const LearnerGroup&) = delete;
  LearnerGroup& operator=(const LearnerGroup&) = delete;

  /// This member, 0 .. size()-1.
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Element-wise sum over the members, in place: every member passes as many values and
  /// gets the sums. A learner sends what only it computed with zeros elsewhere, so that the
  /// sum is each value exactly (x + 0 = x). Throws core::Error when a member does not take
  /// part within the group's timeout.
  virtual void all_reduce_sum(std::vector<double>& values) = 0;
  virtual void all_reduce_sum(std::vector<float>& values) = 0;

 protected:
  LearnerGroup() = default;
};

/// Simulates `count` decisions (`decision(i)` builds the i-th) and counts them on `env` in
/// order, as a learner alone does (Environment::evaluate). With a group of several members,
/// member r simulates the decisions i with i % size == r and the members exchange their
/// evaluations, so that every member counts the same evaluations in the same order and
/// ends with the same best decision. A collective.
std::vector<Evaluation> evaluate_shared(Environment& env, std::int64_t count,
                                        const std::function<core::Decision(std::int64_t)>& decision,
                                        LearnerGroup* group);

/// Rank 0's `flag` on every member (the flag itself alone): how members take a decision that
/// depends on a clock at the same update. A collective.
[[nodiscard]] bool rank0_flag(LearnerGroup* group, bool flag);

}  // namespace gopt::agents
