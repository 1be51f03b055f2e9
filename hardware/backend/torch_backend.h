// Internal to gopt_hardware_backend: the LibTorch implementation of Backend for CPU
// worker threads and CUDA GPUs (one executor; the device type differs). Created through
// make_backend().
#pragma once

#include <memory>

#include "hardware/backend/backend.h"

namespace gopt::hardware::backend {

class TorchBackend final : public Backend {
 public:
  /// Throws InputError for num_devices < 1 and BackendUnavailable when CUDA cannot run.
  TorchBackend(BackendKind kind, DeviceId num_devices, const BackendOptions& options);
  ~TorchBackend() override;

  [[nodiscard]] BackendKind kind() const override;
  [[nodiscard]] DeviceId num_devices() const override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::vector<int> worker_cpus() const override;
  [[nodiscard]] ExecutionResult execute(const core::Graph& graph, const core::Decision& decision,
                                        const ExecutionOptions& options) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gopt::hardware::backend
