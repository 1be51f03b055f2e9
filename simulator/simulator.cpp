#include "simulator/simulator.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/errors.h"
#include "simulator/indexing.h"
#include "simulator/packed_graph.h"
#include "simulator/step_model.h"

namespace gopt::simulator {
namespace {

struct ResultBounds {
  Seconds critical_path_s = 0;
  Seconds work_s = 0;
};

// The two lower bounds of SimulationResult, once per (graph, cluster, cost model): each op
// at its fastest device type's time, unfused, with zero communication. (The tighter
// bounds of lower_bounds.h are computed by their callers, not per Simulator.)
ResultBounds result_lower_bounds(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                                 const PackedGraph& packed) {
  const NodeId n = graph.num_nodes();
  std::vector<Seconds> fastest(at(n), std::numeric_limits<Seconds>::infinity());
  for (NodeId v = 0; v < n; ++v) {
    for (int t = 0; t < packed.num_device_types(); ++t) {
      fastest[at(v)] = std::min(fastest[at(v)], packed.op_time(v, t));
    }
  }
  ResultBounds bounds;
  std::vector<Seconds> finish(at(n), 0);
  Seconds total = 0;
  for (NodeId v : graph.topological_order()) {
    Seconds ready = 0;
    for (auto s = graph.in_begin(v); s < graph.in_end(v); ++s) {
      ready = std::max(ready, finish[at(graph.in_source(s))]);
    }
    finish[at(v)] = ready + fastest[at(v)];
    bounds.critical_path_s = std::max(bounds.critical_path_s, finish[at(v)]);
    total += fastest[at(v)];
  }
  bounds.work_s = total / static_cast<double>(cluster.total_compute_streams());
  return bounds;
}

}  // namespace

class Simulator::Impl {
 public:
  Impl(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
       const hardware::CostModel& cost_model, const hardware::NetworkModel* network,
       SimulatorOptions options)
      : graph_(graph),
        cluster_(cluster),
        options_(std::move(options)),
        own_network_(network ? nullptr
                             : std::make_unique<hardware::NetworkModel>(cluster, cost_model)),
        network_(network ? *network : *own_network_),
        packed_(graph, cluster, cost_model),
        step_(packed_, cluster, cost_model, network_) {
    const ResultBounds bounds = result_lower_bounds(graph, cluster, packed_);
    result_.lower_bound_critical_path_s = bounds.critical_path_s;
    result_.lower_bound_work_s = bounds.work_s;
    result_.devices.resize(at(cluster.num_devices()));
    result_.links.resize(at(cluster.num_links()));
  }

  const SimulationResult& simulate(const core::Decision& decision, SimulationObserver* observer) {
    if (options_.validate_decisions) {
      core::validate_decision(decision, graph_.num_nodes(), cluster_.num_devices(),
                              options_.decision_source, &graph_.node_names());
    }
    step_.simulate(decision, options_.stop_on_oom, observer, result_);
    return result_;
  }

  const core::CompiledGraph& graph_;
  const hardware::Cluster& cluster_;
  SimulatorOptions options_;
  std::unique_ptr<hardware::NetworkModel> own_network_;  // when none was injected
  const hardware::NetworkModel& network_;
  PackedGraph packed_;
  StepModel step_;
  SimulationResult result_;
};

Simulator::Simulator(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                     const hardware::CostModel& cost_model, SimulatorOptions options)
    : impl_(std::make_unique<Impl>(graph, cluster, cost_model, nullptr, std::move(options))) {}
Simulator::Simulator(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                     const hardware::CostModel& cost_model, const hardware::NetworkModel& network,
                     SimulatorOptions options)
    : impl_(std::make_unique<Impl>(graph, cluster, cost_model, &network, std::move(options))) {}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

const SimulationResult& Simulator::simulate(const core::Decision& decision,
                                            SimulationObserver* observer) {
  return impl_->simulate(decision, observer);
}

const SimulationResult& Simulator::simulate_delta(const core::Decision& decision) {
  Impl& impl = *impl_;
  if (impl.options_.validate_decisions) {
    core::validate_decision(decision, impl.graph_.num_nodes(), impl.cluster_.num_devices(),
                            impl.options_.decision_source, &impl.graph_.node_names());
  }
  if (impl.options_.stop_on_oom) {
    impl.step_.simulate(decision, true, nullptr, impl.result_);
  } else {
    impl.step_.simulate_delta(decision, impl.result_);
  }
  return impl.result_;
}

void Simulator::keep_as_base() { impl_->step_.keep_as_base(); }

double Simulator::last_delta_share() const {
  const StepModel& step = impl_->step_;
  if (step.delta_events() < 0 || step.step_events() == 0) return 1.0;
  return static_cast<double>(step.delta_events()) / static_cast<double>(step.step_events());
}

Seconds Simulator::op_time(NodeId op, DeviceId device) const {
  return impl_->packed_.op_time_on(op, device);
}

const FusionGroups& Simulator::last_groups() const { return impl_->step_.tasks().groups(); }
const core::CompiledGraph& Simulator::graph() const { return impl_->graph_; }
const hardware::Cluster& Simulator::cluster() const { return impl_->cluster_; }
const SimulatorOptions& Simulator::options() const { return impl_->options_; }

SimulationResult simulate_once(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                               const hardware::CostModel& cost_model,
                               const core::Decision& decision, SimulationObserver* observer) {
  Simulator simulator(graph, cluster, cost_model);
  return simulator.simulate(decision, observer);
}

}  // namespace gopt::simulator
