// ChromeTraceWriter: an observer that records a simulation as Chrome trace-event JSON,
// which opens in Perfetto (ui.perfetto.dev) and chrome://tracing. One process per device
// with one thread (track) per compute stream, and one process "links" with one track per
// link; a transfer appears on every link of its route. Times are in microseconds.
// A kernel's `args` hold its op's name, type, kind, FLOPs and bytes (a fused kernel: its
// member ops and their summed FLOPs and bytes); flow arrows link each cross-device tensor's
// producer to its transfer and on to the consumers it feeds on the destination device; a
// counter track per device ("memory in use") follows its allocated bytes.
//
//   ChromeTraceWriter trace;
//   simulator.simulate(decision, &trace);
//   trace.write("step.trace.json");   // or trace.to_json()
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "simulator/observer.h"

namespace gopt::simulator {

class ChromeTraceWriter final : public SimulationObserver {
 public:
  void on_simulation_begin(const SimulationContext& context) override;
  void on_kernel_end(const KernelEvent& kernel) override;
  void on_transfer_end(const TransferEvent& transfer) override;
  void on_memory(const MemoryEvent& memory) override;

  /// The trace of the last simulation as a JSON object {"traceEvents": [...], ...}.
  [[nodiscard]] std::string to_json() const;
  /// Writes to_json() atomically; throws InputError when the file cannot be written.
  void write(const std::filesystem::path& path) const;

  [[nodiscard]] std::size_t num_kernels() const { return kernels_.size(); }
  [[nodiscard]] std::size_t num_transfers() const { return transfers_.size(); }

 private:
  struct Kernel {
    std::string name;
    std::vector<NodeId> members;
    DeviceId device;
    int stream;
    Seconds start_s;
    Seconds end_s;
  };
  struct Transfer {
    NodeId producer;
    DeviceId src;
    DeviceId dst;
    Bytes bytes;
    std::vector<hardware::Hop> hops;
    Seconds request_s;
    Seconds start_s;
    Seconds end_s;
  };

  const core::CompiledGraph* graph_ = nullptr;
  const hardware::Cluster* cluster_ = nullptr;
  std::string graph_name_;
  std::vector<std::string> device_names_;
  std::vector<int> device_streams_;
  std::vector<std::string> link_names_;
  std::vector<Kernel> kernels_;
  std::vector<std::int32_t> kernel_of_node_;  ///< index in kernels_, -1 while not run
  std::vector<Transfer> transfers_;
  /// Per device, (time, bytes in use) with one entry per distinct time (the last wins).
  std::vector<std::vector<std::pair<Seconds, Bytes>>> memory_;
};

}  // namespace gopt::simulator
