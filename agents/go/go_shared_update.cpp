#include "agents/go/go_shared_update.h"

#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "agents/torch_utils.h"

namespace gopt::agents::go {
namespace {

// Where slot j's outcome lies in the exchanged buffer: the reward reference, the index of
// the evaluation that became the new best (-1: none), three values per evaluation (step
// time, out of memory, device), and the new best decision (a presence flag and one value
// per op for each of placement, priority and fusion).
struct OutcomeLayout {
  std::vector<std::size_t> offset;
  std::size_t evaluations = 0;
  std::size_t size = 0;

  OutcomeLayout(const std::vector<PpoTask*>& slots, std::size_t evaluations_per_slot)
      : evaluations(evaluations_per_slot) {
    for (const auto* task : slots) {
      offset.push_back(size);
      size += 2 + 3 * evaluations + 3 * (1 + static_cast<std::size_t>(task->tensors.num_nodes));
    }
  }
};

template <typename T>
void put_field(const std::optional<std::vector<T>>& field, double* at, std::size_t n) {
  at[0] = field ? 1.0 : 0.0;
  if (!field) return;
  for (std::size_t i = 0; i < n; ++i) at[1 + i] = static_cast<double>((*field)[i]);
}

template <typename T>
std::optional<std::vector<T>> get_field(const double* at, std::size_t n) {
  if (at[0] == 0.0) return std::nullopt;
  std::vector<T> field(n);
  for (std::size_t i = 0; i < n; ++i) field[i] = static_cast<T>(at[1 + i]);
  return field;
}

// The owner of slot `task`: its outcome into `out`. `best_before`: the environment's best
// step time before the update's evaluations.
void put_outcome(const PpoTask& task, const PpoBatch& batch, double best_before, double* out) {
  out[0] = task.reference_s;
  std::int64_t best = -1;
  double best_s = best_before;
  for (std::size_t i = 0; i < batch.evaluations.size(); ++i) {
    const Evaluation& e = batch.evaluations[i];
    out[2 + 3 * i] = e.step_time_s;
    out[3 + 3 * i] = e.oom ? 1.0 : 0.0;
    out[4 + 3 * i] = static_cast<double>(e.oom_device);
    if (!e.oom && e.step_time_s < best_s) {
      best_s = e.step_time_s;
      best = static_cast<std::int64_t>(i);
    }
  }
  out[1] = static_cast<double>(best);
  if (best < 0) return;
  const core::Decision& d = task.env->best_decision();
  const auto n = static_cast<std::size_t>(task.tensors.num_nodes);
  double* at = out + 2 + 3 * batch.evaluations.size();
  put_field(d.placement, at, n);
  put_field(d.priority, at + 1 + n, n);
  put_field(d.fusion, at + 2 * (1 + n), n);
}

// Another member's slot: counts its evaluations on this member's environment, in order.
std::vector<Evaluation> take_outcome(PpoTask& task, std::size_t evaluations, const double* in) {
  task.reference_s = in[0];
  const auto best = static_cast<std::int64_t>(in[1]);
  core::Decision decision;
  if (best >= 0) {
    const auto n = static_cast<std::size_t>(task.tensors.num_nodes);
    const double* at = in + 2 + 3 * evaluations;
    decision.placement = get_field<DeviceId>(at, n);
    decision.priority = get_field<std::int32_t>(at + 1 + n, n);
    decision.fusion = get_field<std::int32_t>(at + 2 * (1 + n), n);
  }
  std::vector<Evaluation> out;
  for (std::size_t i = 0; i < evaluations; ++i) {
    const Evaluation e{in[2 + 3 * i], in[3 + 3 * i] != 0.0, static_cast<DeviceId>(in[4 + 3 * i])};
    task.env->record(e, static_cast<std::int64_t>(i) == best ? decision : core::Decision{});
    out.push_back(e);
  }
  return out;
}

// The policy's gradients, flattened in parameter order (zeros where a parameter has none).
void read_gradients(const std::vector<torch::Tensor>& params, float* out) {
  for (const auto& p : params) {
    const auto n = static_cast<std::size_t>(p.numel());
    if (p.grad().defined()) {
      const auto g = p.grad().to(torch::kCPU).contiguous();
      std::memcpy(out, g.data_ptr<float>(), n * sizeof(float));
    } else {
      std::memset(out, 0, n * sizeof(float));
    }
    out += n;
  }
}

void write_gradients(std::vector<torch::Tensor>& params, const float* in) {
  for (auto& p : params) {
    auto g = torch::empty(p.sizes(), torch::kFloat);
    const auto n = static_cast<std::size_t>(p.numel());
    std::memcpy(g.data_ptr<float>(), in, n * sizeof(float));
    p.mutable_grad() = g.to(p.device());
    in += n;
  }
}

}  // namespace

PpoStepStats shared_update(TrainedPolicy& trained, core::Rng& rng, const PpoOptions& options,
                           const std::vector<PpoTask*>& slots, LearnerGroup* group) {
  const std::size_t count = slots.size();
  const int rank = group != nullptr ? group->rank() : 0;
  const int size = group != nullptr ? group->size() : 1;
  const bool shared = size > 1;
  auto owned = [&](std::size_t j) {
    return static_cast<int>(j % static_cast<std::size_t>(size)) == rank;
  };
  const std::size_t evaluations =
      static_cast<std::size_t>(options.samples_per_step) + (options.evaluate_greedy ? 1 : 0);

  // Sampling: each slot from its own generator, every member drawing every slot's seed.
  std::vector<at::Generator> generators;
  for (std::size_t j = 0; j < count; ++j) generators.push_back(make_generator(rng));
  std::vector<PpoBatch> batches(count);
  const OutcomeLayout layout(slots, evaluations);
  std::vector<double> outcomes(shared ? layout.size : 0, 0.0);
  for (std::size_t j = 0; j < count; ++j) {
    if (!owned(j)) continue;
    const double best_before = slots[j]->env->best_step_time_s();
    PpoTrainer trainer(trained.policy, *trained.optimizer, options, generators[j]);
    PpoStepStats ignored;
    batches[j] = trainer.sample_batch(*slots[j], ignored);
    if (shared) put_outcome(*slots[j], batches[j], best_before, &outcomes[layout.offset[j]]);
  }
  if (shared) {
    group->all_reduce_sum(outcomes);
    for (std::size_t j = 0; j < count; ++j) {
      if (!owned(j)) {
        batches[j].evaluations = take_outcome(*slots[j], evaluations, &outcomes[layout.offset[j]]);
      }
    }
  }

  // Every epoch: each slot's gradient, exchanged, then their mean (summed in slot order).
  auto params = trained.policy->parameters();
  std::size_t numel = 0;
  for (const auto& p : params) numel += static_cast<std::size_t>(p.numel());
  for (std::int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    std::vector<float> gradients(count * numel, 0.0f);
    for (std::size_t j = 0; j < count; ++j) {
      if (!owned(j)) continue;
      trained.optimizer->zero_grad();
      ppo_backward(trained.policy, slots[j]->tensors, batches[j], options, epoch, nullptr);
      read_gradients(params, &gradients[j * numel]);
    }
    if (shared) group->all_reduce_sum(gradients);
    std::vector<float> mean(numel, 0.0f);
    for (std::size_t j = 0; j < count; ++j) {
      for (std::size_t i = 0; i < numel; ++i) mean[i] += gradients[j * numel + i];
    }
    for (auto& g : mean) g /= static_cast<float>(count);
    write_gradients(params, mean.data());
    torch::nn::utils::clip_grad_norm_(params, options.grad_clip);
    trained.optimizer->step();
  }

  // What the update did, from every slot's evaluations (the same on every member).
  PpoStepStats stats;
  double time_sum = 0;
  std::int64_t valid = 0;
  const std::size_t first = options.evaluate_greedy ? 1 : 0;
  for (const auto& batch : batches) {
    stats.samples += static_cast<std::int64_t>(batch.evaluations.size());
    for (std::size_t i = first; i < batch.evaluations.size(); ++i) {
      const Evaluation& e = batch.evaluations[i];
      if (e.oom) {
        ++stats.oom;
      } else {
        time_sum += e.step_time_s;
        ++valid;
      }
    }
  }
  stats.mean_step_time_s =
      valid > 0 ? time_sum / static_cast<double>(valid) : std::numeric_limits<double>::infinity();
  return stats;
}

}  // namespace gopt::agents::go
