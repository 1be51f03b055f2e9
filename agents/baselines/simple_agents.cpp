#include "agents/baselines/simple_agents.h"

#include "agents/option_fields.h"
#include "agents/placement_utils.h"
#include "core/errors.h"
#include "core/rng.h"

namespace gopt::agents {
namespace {

// TensorFlow's default without a device scope: every op on the first GPU, ops run in the
// executor's FIFO order of readiness, no fusion (Abadi et al., OSDI 2016).
class SingleDeviceAgent final : public Agent {
 public:
  explicit SingleDeviceAgent(SingleDeviceOptions options) : device_(options.device) {}
  std::string name() const override { return "single_device"; }
  core::Decision propose(const Problem& problem) override {
    if (device_ >= problem.num_devices()) {
      throw core::InputError("", "agents.single_device.device",
                             "device " + std::to_string(device_) +
                                 " does not exist; the cluster has " +
                                 std::to_string(problem.num_devices()) + " devices");
    }
    core::Decision d;
    d.placement = std::vector<DeviceId>(static_cast<std::size_t>(problem.num_nodes()), device_);
    return d;
  }

 private:
  DeviceId device_;
};

// Op i of the topological order on device i mod D: spreads work evenly while ignoring
// communication; a classic strawman in the placement literature.
class RoundRobinAgent final : public Agent {
 public:
  std::string name() const override { return "round_robin"; }
  core::Decision propose(const Problem& problem) override {
    std::vector<DeviceId> placement(static_cast<std::size_t>(problem.num_nodes()));
    const auto& order = problem.graph.topological_order();
    for (std::size_t i = 0; i < order.size(); ++i) {
      placement[static_cast<std::size_t>(order[i])] =
          static_cast<DeviceId>(i % static_cast<std::size_t>(problem.num_devices()));
    }
    apply_colocation(problem.graph, placement);
    core::Decision d;
    d.placement = std::move(placement);
    return d;
  }
};

// Each op on a uniformly random device (seeded: the option, mixed with the problem seed).
class RandomAgent final : public Agent {
 public:
  explicit RandomAgent(RandomOptions options) : seed_(options.seed) {}
  std::string name() const override { return "random"; }
  core::Decision propose(const Problem& problem) override {
    core::Rng rng(core::mix_seed(seed_, problem.seed));
    std::vector<DeviceId> placement(static_cast<std::size_t>(problem.num_nodes()));
    for (auto& d : placement) {
      d = static_cast<DeviceId>(rng.uniform_int(0, problem.num_devices() - 1));
    }
    apply_colocation(problem.graph, placement);
    core::Decision d;
    d.placement = std::move(placement);
    return d;
  }

 private:
  std::uint64_t seed_;
};

}  // namespace

void register_simple_agents(AgentRegistry& registry) {
  registry.add(describe_agent(
      "single_device", "TensorFlow's default: every op on one GPU, FIFO scheduling, no fusion",
      false,
      OptionFields<SingleDeviceOptions>()
          .integer("device", &SingleDeviceOptions::device, "the device that runs every op", 0, 1023)
          .cluster_rule("device",
                        [](const SingleDeviceOptions& o, std::int64_t devices) -> std::string {
                          if (o.device < devices) return "";
                          return "expected a device of the cluster's " + std::to_string(devices) +
                                 " (0 to " + std::to_string(devices - 1) + ")";
                        }),
      SingleDeviceOptions(),
      [](const SingleDeviceOptions& o) { return std::make_unique<SingleDeviceAgent>(o); }));
  registry.add({"round_robin",
                "op i of the topological order on device i mod D (colocation respected)",
                false,
                {},
                [](const AgentOptions&) { return std::make_unique<RoundRobinAgent>(); }});
  registry.add(describe_agent(
      "random", "every op on a uniformly random device (colocation respected)", false,
      OptionFields<RandomOptions>().seed(&RandomOptions::seed), RandomOptions(),
      [](const RandomOptions& o) { return std::make_unique<RandomAgent>(o); }));
}

}  // namespace gopt::agents
