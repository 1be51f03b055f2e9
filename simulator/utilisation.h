// UtilisationStats: an observer that summarises how busy each device stream and each link
// was during a simulation and how long transfers queued for their links.
//
//   UtilisationStats stats;
//   simulator.simulate(decision, &stats);
//   for (const auto& d : stats.devices()) print(d.utilisation);
#pragma once

#include <string>
#include <vector>

#include "simulator/observer.h"

namespace gopt::simulator {

class UtilisationStats final : public SimulationObserver {
 public:
  struct Device {
    std::string name;
    Seconds busy_s = 0;  ///< sum of kernel times
    std::int32_t kernels = 0;
    int streams = 1;
    double utilisation = 0;  ///< busy_s / (step time * streams), in [0, 1]
  };
  struct Link {
    std::string name;
    Seconds busy_s = 0;  ///< held time summed over both directions
    Bytes bytes = 0;
    std::int32_t transfers = 0;
    Seconds queued_s = 0;    ///< total time transfers waited for the route to free
    double utilisation = 0;  ///< busy_s / (2 * step time): both directions
  };

  void on_simulation_begin(const SimulationContext& context) override;
  void on_kernel_end(const KernelEvent& kernel) override;
  void on_transfer_end(const TransferEvent& transfer) override;
  void on_simulation_end(const SimulationResult& result) override;

  [[nodiscard]] const std::vector<Device>& devices() const { return devices_; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] Seconds step_time_s() const { return step_time_s_; }
  /// Mean of the devices' utilisation.
  [[nodiscard]] double mean_device_utilisation() const;
  /// A plain-text table, one line per device and per used link.
  [[nodiscard]] std::string format() const;

 private:
  std::vector<Device> devices_;
  std::vector<Link> links_;
  Seconds step_time_s_ = 0;
};

}  // namespace gopt::simulator
