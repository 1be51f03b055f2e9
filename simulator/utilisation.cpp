#include "simulator/utilisation.h"

#include <cstdio>

#include "simulator/simulator.h"

namespace gopt::simulator {

void UtilisationStats::on_simulation_begin(const SimulationContext& context) {
  devices_.clear();
  links_.clear();
  step_time_s_ = 0;
  for (DeviceId d = 0; d < context.cluster->num_devices(); ++d) {
    Device dev;
    dev.name = context.cluster->device(d).name;
    dev.streams = context.cluster->device(d).compute_streams;
    devices_.push_back(dev);
  }
  for (hardware::LinkId l = 0; l < context.cluster->num_links(); ++l) {
    Link link;
    link.name = context.cluster->link(l).name;
    links_.push_back(link);
  }
}

void UtilisationStats::on_kernel_end(const KernelEvent& kernel) {
  auto& dev = devices_[static_cast<std::size_t>(kernel.device)];
  dev.busy_s += kernel.end_s - kernel.start_s;
  ++dev.kernels;
}

void UtilisationStats::on_transfer_end(const TransferEvent& transfer) {
  for (std::int32_t h = 0; h < transfer.num_hops; ++h) {
    auto& link = links_[static_cast<std::size_t>(transfer.hops[h].link)];
    link.busy_s += transfer.end_s - transfer.start_s;
    link.bytes += transfer.bytes;
    ++link.transfers;
    link.queued_s += transfer.start_s - transfer.request_s;
  }
}

void UtilisationStats::on_simulation_end(const SimulationResult& result) {
  step_time_s_ = result.step_time_s;
  for (auto& dev : devices_) {
    dev.utilisation = step_time_s_ > 0 ? dev.busy_s / (step_time_s_ * dev.streams) : 0;
  }
  for (auto& link : links_) {
    link.utilisation = step_time_s_ > 0 ? link.busy_s / (2 * step_time_s_) : 0;
  }
}

double UtilisationStats::mean_device_utilisation() const {
  if (devices_.empty()) return 0;
  double sum = 0;
  for (const auto& dev : devices_) sum += dev.utilisation;
  return sum / static_cast<double>(devices_.size());
}

std::string UtilisationStats::format() const {
  std::string out;
  char line[256];
  for (const auto& dev : devices_) {
    std::snprintf(line, sizeof line, "  %-12s %6.1f%% busy  %8d kernels\n", dev.name.c_str(),
                  100.0 * dev.utilisation, dev.kernels);
    out += line;
  }
  for (const auto& link : links_) {
    if (link.transfers == 0) continue;
    std::snprintf(line, sizeof line, "  %-24s %6.1f%% busy  %8d transfers  %s queued\n",
                  link.name.c_str(), 100.0 * link.utilisation, link.transfers,
                  core::format_seconds(link.queued_s).c_str());
    out += line;
  }
  return out;
}

}  // namespace gopt::simulator
