#include "tests/support/task_graphs.h"

#include <string>
#include <vector>

namespace gopt::testing {
namespace {

constexpr std::int64_t kFloat = 4;  // bytes per float32

// An n x n x n float32 matmul without inputs in the graph (its operands are resident).
core::NodeId add_matmul(core::GraphBuilder& b, const std::string& name, std::int64_t n) {
  return b.add(name, "MatMul")
      .output({n, n})
      .flops(2.0 * static_cast<double>(n * n * n))
      .bytes_read(2 * n * n * kFloat)
      .param_bytes(n * n * kFloat);
}

}  // namespace

TaskGraph scheduling_task_graph() {
  core::GraphBuilder b("scheduling_task");
  add_matmul(b, "big", 2048);
  const core::NodeId feeder = add_matmul(b, "feeder", 1024);
  const core::NodeId consumer = b.add("consumer", "MatMul")
                                    .output({2048, 2048})
                                    .flops(2.0 * 2048 * 2048 * 2048)
                                    .param_bytes(2048 * 2048 * kFloat);
  b.connect(feeder, consumer);
  TaskGraph t{std::move(b).build(), {}, {}};
  t.baseline.placement = std::vector<core::DeviceId>{0, 0, 1};
  t.improved = t.baseline;
  std::vector<std::int32_t> priority(3, 0);
  priority[static_cast<std::size_t>(feeder)] = 1;  // before big, which FIFO runs first
  t.improved.priority = std::move(priority);
  return t;
}

TaskGraph fusion_task_graph(std::int32_t length) {
  constexpr std::int64_t kElements = std::int64_t{1} << 22;
  static constexpr const char* kOps[] = {"Relu", "Mul", "Tanh", "Add", "Sigmoid", "Neg"};
  core::GraphBuilder b("fusion_task");
  core::NodeId prev = b.add("x", "Placeholder").output({kElements});
  for (std::int32_t i = 0; i < length; ++i) {
    core::NodeId op = b.add("op" + std::to_string(i), kOps[i % 6])
                          .output({kElements})
                          .flops(static_cast<double>(kElements));
    b.connect(prev, op);
    prev = op;
  }
  core::NodeId sum = b.add("sum", "Sum").output({}).flops(static_cast<double>(kElements));
  b.connect(prev, sum);
  TaskGraph t{std::move(b).build(), {}, {}};
  const auto n = static_cast<std::size_t>(length) + 2;
  t.baseline.placement = std::vector<core::DeviceId>(n, 0);
  t.improved = t.baseline;
  std::vector<std::int32_t> fusion(n, 1);
  fusion[0] = 0;  // the placeholder is an input, not a kernel to fuse
  t.improved.fusion = std::move(fusion);
  return t;
}

TaskGraph placement_task_graph(std::int32_t branches) {
  core::GraphBuilder b("placement_task");
  for (std::int32_t i = 0; i < branches; ++i) add_matmul(b, "branch" + std::to_string(i), 2048);
  TaskGraph t{std::move(b).build(), {}, {}};
  const auto n = static_cast<std::size_t>(branches);
  t.baseline.placement = std::vector<core::DeviceId>(n, 0);
  std::vector<core::DeviceId> placement(n);
  for (std::size_t i = 0; i < n; ++i) placement[i] = static_cast<core::DeviceId>(i);
  t.improved.placement = std::move(placement);
  return t;
}

}  // namespace gopt::testing
