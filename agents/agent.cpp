#include "agents/agent.h"

namespace gopt::agents {

void Agent::train(Environment&, const TrainBudget&, TrainingObserver*) {}
void Agent::set_snapshots(TrainSnapshots) {}

void Agent::set_learner_group(LearnerGroup*) {}

}  // namespace gopt::agents
