#include "simulator/chrome_trace.h"

#include <nlohmann/json.hpp>

#include "core/graph_io.h"

namespace gopt::simulator {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

void ChromeTraceWriter::on_simulation_begin(const SimulationContext& context) {
  graph_ = context.graph;
  cluster_ = context.cluster;
  graph_name_ = graph_->name();
  kernels_.clear();
  transfers_.clear();
  device_names_.clear();
  device_streams_.clear();
  link_names_.clear();
  for (DeviceId d = 0; d < cluster_->num_devices(); ++d) {
    device_names_.push_back(cluster_->device(d).name);
    device_streams_.push_back(cluster_->device(d).compute_streams);
  }
  for (hardware::LinkId l = 0; l < cluster_->num_links(); ++l) {
    const auto& link = cluster_->link(l);
    link_names_.push_back(link.name + " (" + link.a + " <-> " + link.b + ")");
  }
}

void ChromeTraceWriter::on_kernel_end(const KernelEvent& kernel) {
  const auto& names = graph_->node_names();
  std::string name = names[static_cast<std::size_t>(kernel.members[0])];
  if (kernel.num_members > 1) {
    name = "fused(" + name + " +" + std::to_string(kernel.num_members - 1) + ")";
  }
  kernels_.push_back(Kernel{std::move(name), kernel.num_members, kernel.device, kernel.stream,
                            kernel.start_s, kernel.end_s});
}

void ChromeTraceWriter::on_transfer_end(const TransferEvent& transfer) {
  transfers_.push_back(Transfer{
      graph_->node_names()[static_cast<std::size_t>(transfer.producer)], transfer.src, transfer.dst,
      transfer.bytes, std::vector<hardware::Hop>(transfer.hops, transfer.hops + transfer.num_hops),
      transfer.request_s, transfer.start_s, transfer.end_s});
}

std::string ChromeTraceWriter::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  const int num_devices = static_cast<int>(device_names_.size());
  const int links_pid = num_devices;
  for (int d = 0; d < num_devices; ++d) {
    events.push_back(metadata("process_name", d, 0, device_names_[static_cast<std::size_t>(d)]));
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", d},
                      {"tid", 0},
                      {"args", {{"sort_index", d}}}});
    for (int s = 0; s < device_streams_[static_cast<std::size_t>(d)]; ++s) {
      events.push_back(metadata("thread_name", d, s, "stream " + std::to_string(s)));
    }
  }
  if (!link_names_.empty()) {
    events.push_back(metadata("process_name", links_pid, 0, "links"));
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", links_pid},
                      {"tid", 0},
                      {"args", {{"sort_index", links_pid}}}});
    for (std::size_t l = 0; l < link_names_.size(); ++l) {
      events.push_back(metadata("thread_name", links_pid, static_cast<int>(l), link_names_[l]));
    }
  }
  for (const auto& k : kernels_) {
    events.push_back({{"ph", "X"},
                      {"name", k.name},
                      {"cat", k.num_members > 1 ? "fused" : "op"},
                      {"pid", k.device},
                      {"tid", k.stream},
                      {"ts", k.start_s * kMicrosecondsPerSecond},
                      {"dur", (k.end_s - k.start_s) * kMicrosecondsPerSecond},
                      {"args", {{"ops", k.num_members}}}});
  }
  for (const auto& t : transfers_) {
    std::string name = t.producer + " -> " + device_names_[static_cast<std::size_t>(t.dst)];
    for (const auto& hop : t.hops) {
      events.push_back({{"ph", "X"},
                        {"name", name},
                        {"cat", "transfer"},
                        {"pid", links_pid},
                        {"tid", hop.link},
                        {"ts", t.start_s * kMicrosecondsPerSecond},
                        {"dur", (t.end_s - t.start_s) * kMicrosecondsPerSecond},
                        {"args",
                         {{"bytes", t.bytes},
                          {"from", device_names_[static_cast<std::size_t>(t.src)]},
                          {"to", device_names_[static_cast<std::size_t>(t.dst)]},
                          {"direction", hop.forward ? "a->b" : "b->a"},
                          {"queued_us", (t.start_s - t.request_s) * kMicrosecondsPerSecond}}}});
    }
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ms"},
                          {"otherData", {{"graph", graph_name_}, {"generator", "gopt simulate"}}}};
  return trace.dump();
}

void ChromeTraceWriter::write(const std::filesystem::path& path) const {
  core::write_text_file_atomic(path, to_json());
}

}  // namespace gopt::simulator
