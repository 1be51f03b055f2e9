// FLOPs charged per element by the workload generators and the ONNX importer, in one
// place so that generated and imported graphs are costed alike (docs/workloads.md, "Cost
// conventions"). Matrix products and convolutions are counted exactly (2 per multiply-add).
#pragma once

namespace gopt::datasets {

inline constexpr double kPointwiseFlops = 1;       ///< add, mul, relu, ...
inline constexpr double kTranscendentalFlops = 4;  ///< exp, tanh, sigmoid, ...
inline constexpr double kSoftmaxFlops = 5;         ///< per element of a softmax
inline constexpr double kNormFlops = 8;            ///< per element of batch/layer norm
inline constexpr double kAdamFlops = 10;           ///< per parameter of an Adam update
inline constexpr double kSgdFlops = 2;             ///< per parameter of an SGD update

}  // namespace gopt::datasets
