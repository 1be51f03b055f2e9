// The tail of a training step (datasets/training_step.h).
#include "datasets/training_step.h"

#include "datasets/flop_conventions.h"

namespace gopt::datasets {
namespace {

double elems(const core::Shape& s) { return static_cast<double>(core::num_elements(s)); }

}  // namespace

std::optional<Optimizer> optimizer_from_string(std::string_view name) {
  if (name == "adam") return Optimizer::kAdam;
  if (name == "sgd") return Optimizer::kGradientDescent;
  return std::nullopt;
}

std::string_view optimizer_name(Optimizer optimizer) {
  return optimizer == Optimizer::kAdam ? "adam" : "sgd";
}

GradientSum gradient_sum(const std::string& owner, const core::Shape& shape, std::size_t parts) {
  GradientSum sum;
  sum.name = "gradients/" + owner + "_grad/AddN";
  sum.flops = elems(shape) * static_cast<double>(parts - 1);
  return sum;
}

VariableUpdate variable_update(const std::string& variable, Optimizer optimizer,
                               const core::Shape& shape, core::Bytes bytes) {
  const bool adam = optimizer == Optimizer::kAdam;
  VariableUpdate u;
  u.op_type = adam ? "ApplyAdam" : "ApplyGradientDescent";
  u.name = variable + "/" + std::string(u.op_type);
  u.flops = elems(shape) * (adam ? kAdamFlops : kSgdFlops);
  u.param_bytes = adam ? 2 * bytes : 0;
  u.bytes_read = adam ? 4 * bytes : 2 * bytes;
  u.bytes_written = adam ? 3 * bytes : bytes;
  return u;
}

}  // namespace gopt::datasets
