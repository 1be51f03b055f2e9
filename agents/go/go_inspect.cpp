#include "agents/go/go_inspect.h"

#include <filesystem>

#include "agents/go/go_checkpoint.h"
#include "core/errors.h"

namespace gopt::agents::go {

PlacementSpread placement_spread(const std::string& path, const core::CompiledGraph& graph,
                                 std::int32_t devices) {
  if (!std::filesystem::exists(path)) throw core::InputError(path, "", "no such file");
  PlacementSpread spread;
  GoPolicy policy(nullptr);
  read_or_input_error(path, "policy", "corrupt GO checkpoint or snapshot",
                      [&] { policy = read_any_policy(path, spread.updates, spread.options); });
  if (!policy->options.place) {
    throw core::InputError(path, "options", "the policy does not decide placement");
  }
  if (devices < 1 || devices > policy->options.max_devices) {
    throw core::InputError(path, "options.max_devices",
                           "the policy places on at most " +
                               std::to_string(policy->options.max_devices) + " devices, not " +
                               std::to_string(devices));
  }
  torch::NoGradGuard no_grad;
  const auto out = policy->forward(make_graph_tensors(graph), devices);
  const auto logits = out.logits.slice(1, 0, devices);
  const auto probability = torch::softmax(logits, 1);
  const auto mean = probability.mean(0);
  const auto std = logits.std(0, /*unbiased=*/false);
  const auto counts = torch::bincount(logits.argmax(1), {}, devices);
  for (std::int32_t d = 0; d < devices; ++d) {
    spread.mean_probability.push_back(mean[d].item<double>());
    spread.logit_spread.push_back(std[d].item<double>());
    spread.argmax_ops.push_back(counts[d].item<std::int64_t>());
  }
  if (out.unit_gate.defined()) {
    spread.unit_gate_mean = out.unit_gate.mean().item<double>();
    spread.ops_following_unit = out.unit_gate.gt(0.5).to(torch::kDouble).mean().item<double>();
  }
  return spread;
}

}  // namespace gopt::agents::go
