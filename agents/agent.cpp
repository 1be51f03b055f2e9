#include "agents/agent.h"

namespace gopt::agents {

void Agent::train(Environment&, const TrainBudget&, TrainingObserver*) {}

}  // namespace gopt::agents
