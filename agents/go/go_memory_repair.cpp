#include "agents/go/go_memory_repair.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace gopt::agents::go {
namespace {

// The ops that move together, as in sampling: the decision units with unit decisions; else,
// as in exploration, a layer, or a block of positions. The positions of group g are
// members[begin[g] .. begin[g + 1]).
struct MoveGroups {
  std::int64_t count = 0;
  std::vector<std::int64_t> of;  // per position: its group
  std::vector<std::int64_t> begin;
  std::vector<std::int64_t> members;
};

MoveGroups move_groups(const GraphTensors& tensors, bool by_unit, std::int64_t block) {
  const std::int64_t n = tensors.num_nodes;
  const auto layer_tensor = tensors.layer.contiguous();
  const std::int64_t* layer = layer_tensor.data_ptr<std::int64_t>();
  const auto unit_tensor = tensors.unit.contiguous();
  const std::int64_t* unit = unit_tensor.data_ptr<std::int64_t>();
  MoveGroups groups;
  groups.count = by_unit ? tensors.num_units : tensors.num_layers + (n + block - 1) / block;
  groups.of.resize(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < n; ++p) {
    groups.of[static_cast<std::size_t>(p)] =
        by_unit ? unit[p] : (layer[p] >= 0 ? layer[p] : tensors.num_layers + p / block);
  }
  groups.begin.assign(static_cast<std::size_t>(groups.count) + 1, 0);
  for (const std::int64_t g : groups.of) ++groups.begin[static_cast<std::size_t>(g) + 1];
  for (std::size_t g = 0; g < static_cast<std::size_t>(groups.count); ++g) {
    groups.begin[g + 1] += groups.begin[g];
  }
  groups.members.resize(static_cast<std::size_t>(n));
  std::vector<std::int64_t> next(groups.begin.begin(), groups.begin.end() - 1);
  for (std::int64_t p = 0; p < n; ++p) {
    const auto g = static_cast<std::size_t>(groups.of[static_cast<std::size_t>(p)]);
    groups.members[static_cast<std::size_t>(next[g]++)] = p;
  }
  return groups;
}

// One repair: the placement by position (`choice`) and, after each simulation, the
// devices' loads; rebalance() moves groups off the devices over their capacity.
class Repair {
 public:
  Repair(const torch::Tensor& log_p, const GraphTensors& tensors, const Problem& problem,
         MoveGroups groups, std::vector<std::int64_t> placement)
      : log_p_(log_p),
        mask_(tensors.action_mask.contiguous()),
        order_(tensors.order.contiguous()),
        problem_(problem),
        groups_(std::move(groups)),
        devices_(static_cast<std::size_t>(problem.num_devices())),
        choice_(std::move(placement)),
        on_device_(static_cast<std::size_t>(groups_.count)),
        load_(devices_),
        capacity_(devices_),
        over_(devices_) {}

  // Reads the last simulation's peaks; false when every device is full (moving ops cannot
  // help).
  bool read_loads(const simulator::SimulationResult& result) {
    bool any_room = false;
    for (std::size_t d = 0; d < devices_; ++d) {
      load_[d] = static_cast<double>(result.devices[d].peak_memory_bytes);
      capacity_[d] = static_cast<double>(
          problem_.cluster.device(static_cast<DeviceId>(d)).memory_capacity_bytes);
      over_[d] = load_[d] > capacity_[d];
      any_room = any_room || !over_[d];
    }
    return any_room;
  }

  void rebalance() {
    for (std::size_t d = 0; d < devices_; ++d) {
      if (!over_[d]) continue;
      const double total_weight = weigh_groups_on(d);
      if (total_weight <= 0) continue;
      move_off(d, total_weight);
    }
  }

  /// The device of every position.
  [[nodiscard]] const std::vector<std::int64_t>& choice() const { return choice_; }

 private:
  struct GroupOnDevice {
    double margin = 0;  // summed log p(d) - log p(best device with room)
    double weight = 0;  // summed parameter + output bytes
    std::int64_t ops = 0;
  };

  // Sums, per group, the margins and weights of its ops on `d`; returns d's total weight.
  double weigh_groups_on(std::size_t d) {
    const double* lp = log_p_.data_ptr<double>();
    const float* decides = mask_.data_ptr<float>();
    const std::int64_t* order = order_.data_ptr<std::int64_t>();
    const auto& params = problem_.graph.param_bytes();
    const auto& outputs = problem_.graph.output_bytes();
    const auto devices = static_cast<std::int64_t>(devices_);
    std::fill(on_device_.begin(), on_device_.end(), GroupOnDevice{});
    double total_weight = 0;
    for (std::size_t p = 0; p < choice_.size(); ++p) {
      if (choice_[p] != static_cast<std::int64_t>(d) || decides[p] == 0) continue;
      const double* row = lp + static_cast<std::int64_t>(p) * devices;
      double alternative = -std::numeric_limits<double>::infinity();
      for (std::size_t e = 0; e < devices_; ++e) {
        if (!over_[e]) alternative = std::max(alternative, row[e]);
      }
      const auto v = static_cast<std::size_t>(order[p]);
      const auto weight = static_cast<double>(params[v] + outputs[v]);
      auto& g = on_device_[static_cast<std::size_t>(groups_.of[p])];
      g.margin += row[d] - alternative;
      g.weight += weight;
      ++g.ops;
      total_weight += weight;
    }
    return total_weight;
  }

  // Moves the groups d holds, those the policy is least sure of first (mean margin), to
  // the device with the most room until d's estimated peak fits, with 10% to spare (peak
  // bytes per byte of op weight as on d).
  void move_off(std::size_t d, double total_weight) {
    std::vector<std::int64_t> ranked;
    for (std::int64_t g = 0; g < groups_.count; ++g) {
      if (on_device_[static_cast<std::size_t>(g)].ops > 0) ranked.push_back(g);
    }
    auto mean_margin = [&](std::int64_t g) {
      const auto& s = on_device_[static_cast<std::size_t>(g)];
      return s.margin / static_cast<double>(s.ops);
    };
    std::sort(ranked.begin(), ranked.end(), [&](std::int64_t a, std::int64_t b) {
      const double ma = mean_margin(a);
      const double mb = mean_margin(b);
      return ma < mb || (ma == mb && a < b);
    });
    const double per_weight = load_[d] / total_weight;
    for (const std::int64_t g : ranked) {
      if (load_[d] <= 0.9 * capacity_[d]) break;
      std::size_t to = devices_;
      for (std::size_t e = 0; e < devices_; ++e) {
        if (e == d) continue;
        if (to == devices_ || capacity_[e] - load_[e] > capacity_[to] - load_[to]) to = e;
      }
      if (to == devices_) break;
      const auto group = static_cast<std::size_t>(g);
      for (auto i = groups_.begin[group]; i < groups_.begin[group + 1]; ++i) {
        auto& c = choice_[static_cast<std::size_t>(groups_.members[static_cast<std::size_t>(i)])];
        if (c == static_cast<std::int64_t>(d)) c = static_cast<std::int64_t>(to);
      }
      const double moved = on_device_[group].weight * per_weight;
      load_[d] -= moved;
      load_[to] += moved;
    }
  }

  torch::Tensor log_p_;  // [N, devices] double, log p(device) by position
  torch::Tensor mask_;
  torch::Tensor order_;
  const Problem& problem_;
  MoveGroups groups_;
  std::size_t devices_;
  std::vector<std::int64_t> choice_;
  std::vector<GroupOnDevice> on_device_;
  std::vector<double> load_;
  std::vector<double> capacity_;
  std::vector<bool> over_;
};

}  // namespace

core::Decision memory_fitting_decision(GoPolicy& policy, const GraphTensors& tensors,
                                       Environment& env, const DecisionBase& base,
                                       std::int64_t max_repairs, std::int64_t block,
                                       MemoryRepair* report) {
  torch::NoGradGuard no_grad;
  const Problem& problem = env.problem();
  const auto devices = static_cast<std::int64_t>(problem.num_devices());
  auto out = policy->forward(tensors, problem.num_devices());
  TaskActions actions;
  for (auto task : enabled_tasks(policy->options)) actions.of(task) = out.of(task).argmax(1);
  MemoryRepair repair;
  core::Decision greedy = task_decision(actions, tensors, problem, base);
  ++repair.simulations;
  repair.fits = !env.evaluate(greedy).oom;
  if (repair.fits || !actions.placement.defined() || max_repairs <= 0) {
    if (report) *report = repair;
    return greedy;
  }
  const std::int64_t n = tensors.num_nodes;
  const auto greedy_placement = actions.placement.contiguous();
  const std::vector<std::int64_t> greedy_choice(greedy_placement.data_ptr<std::int64_t>(),
                                                greedy_placement.data_ptr<std::int64_t>() + n);
  Repair fix(out.logits.slice(1, 0, devices).to(torch::kDouble).contiguous(), tensors, problem,
             move_groups(tensors, policy->options.unit_decisions,
                         exploration_block_size(block, n, devices)),
             greedy_choice);
  for (std::int64_t step = 0; step < max_repairs; ++step) {
    if (!fix.read_loads(env.last_result())) break;
    fix.rebalance();
    TaskActions repaired = actions;
    repaired.placement = torch::tensor(fix.choice(), torch::kLong);
    core::Decision decision = task_decision(repaired, tensors, problem, base);
    ++repair.simulations;
    if (!env.evaluate(decision).oom) {
      repair.fits = true;
      for (std::size_t p = 0; p < greedy_choice.size(); ++p) {
        repair.moved_ops += fix.choice()[p] != greedy_choice[p] ? 1 : 0;
      }
      if (report) *report = repair;
      return decision;
    }
  }
  if (report) *report = repair;
  return greedy;
}

}  // namespace gopt::agents::go
