// The equal-budget search reference (`annealing`): simulated annealing (Kirkpatrick, Gelatt
// & Vecchi, "Optimization by Simulated Annealing", Science 1983) over decisions, evaluated
// on the same simulator as every other agent, started from the best of the baseline
// agents' decisions, as FlexFlow's execution optimizer (Jia, Zaharia & Aiken, "Beyond Data
// and Model Parallelism for Deep Neural Networks", SysML 2019) runs its Metropolis-Hastings
// search from the best known strategy. It learns nothing: it answers "what does the
// simulator allow within the samples GO gets?".
//
// Moves: a whole colocation group, a whole layer (the workload's `layer` metadata), a whole
// scope unit (agents/placement_utils.h: an encoder layer, the attention, the softmax) or a
// block of consecutive ops in topological order goes to another device; with `tasks`
// including scheduling or fusion, a block's priorities or fusion levels change too.
// Every start and every move costs one sample: the budget counts them all.
//
//   auto search = registry.create("annealing", {{"tasks", "placement"}});
//   search->train(env, TrainBudget().with_max_steps(200), nullptr);  // 200 x 17 samples
//   core::Decision d = search->propose(problem);  // never worse than its best start
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/registry.h"
#include "core/options.h"

namespace gopt::agents::search {

/// GO's simulations per PPO update with its default options (PpoOptions: 16 sampled
/// placements and the greedy one): `annealing` reports one learning-curve step per this
/// many samples, so equal `budget.steps` means equal samples.
inline constexpr std::int64_t kGoSamplesPerUpdate = 17;

/// Every option of `annealing`, with its default.
struct AnnealingOptions {
  /// Agents whose decisions are the candidate starts; the best one that fits is where the
  /// search begins.
  GOPT_OPTION(std::vector<std::string>, starts,
              (std::vector<std::string>{"single_device", "human_expert", "metis", "heft", "m_etf"}))
  GOPT_OPTION(bool, search_placement, true)
  GOPT_OPTION(bool, search_priority, false)  ///< scheduling: per-op priorities
  GOPT_OPTION(bool, search_fusion, false)    ///< per-op fusion levels
  GOPT_OPTION(std::int64_t, samples_per_step,
              kGoSamplesPerUpdate)  ///< samples per learning-curve point
  /// Temperature as a relative step-time increase: a move 5% worse is accepted with
  /// probability 1/e at the start; it falls geometrically to final_temperature (at most
  /// initial_temperature: the registry rejects a search that would heat up).
  GOPT_OPTION(double, initial_temperature, 0.05)
  GOPT_OPTION(double, final_temperature, 0.001)
  GOPT_OPTION(std::int64_t, max_block, 64)  ///< most ops one block move takes
  /// Placement moves also take whole scope units (scope_units), the parts of a model that
  /// name scopes delimit; off: colocation groups, layers and blocks only.
  GOPT_OPTION(bool, scope_moves, true)
  /// Samples without a new best before the search returns to the best decision (0: a
  /// tenth of the budget).
  GOPT_OPTION(std::int64_t, restart_after, 0)
  /// Step time charged to a decision that runs out of memory: its simulated time times this.
  GOPT_OPTION(double, oom_factor, 10.0)
  /// Without the scheduling task: every placement runs in critical-path order
  /// (agents::critical_path_priorities), the search for a system whose executor orders
  /// ready ops so, instead of the executor's order (GO's `order` option).
  GOPT_OPTION(bool, critical_path_order, false)
  GOPT_OPTION(std::uint64_t, seed, 0)  ///< mixed with the problem seed
};

/// Registers `annealing`. Its `starts` may name the agents registered before it that
/// neither learn nor read another agent's file (register_builtin_agents registers it
/// last); it creates them from a registry of the built-in agents that it builds itself
/// (so it never depends on the lifetime of `registry`).
void register_annealing(AgentRegistry& registry);

/// Creates the agent directly (tests).
[[nodiscard]] std::unique_ptr<Agent> make_annealing_agent(const AnnealingOptions& options);

}  // namespace gopt::agents::search
