#include "simulator/chrome_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/graph_io.h"
#include "core/op_kind.h"

namespace gopt::simulator {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

// Fused kernels list at most this many member names in their args (the rest are counted).
constexpr std::size_t kMaxListedMembers = 64;

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// One end of a flow arrow (Chrome's v1 flow events): bound to the slice on (pid, tid) that
// encloses `ts_us`, so the arrow starts or ends at that slice.
nlohmann::json flow(const char* phase, std::int64_t id, int pid, int tid, double ts_us) {
  nlohmann::json e = {{"ph", phase}, {"name", "tensor"}, {"cat", "flow"}, {"id", id},
                      {"pid", pid},  {"tid", tid},       {"ts", ts_us}};
  if (phase[0] != 's') e["bp"] = "e";
  return e;
}

}  // namespace

void ChromeTraceWriter::on_simulation_begin(const SimulationContext& context) {
  graph_ = context.graph;
  cluster_ = context.cluster;
  graph_name_ = graph_->name();
  kernels_.clear();
  transfers_.clear();
  kernel_of_node_.assign(static_cast<std::size_t>(graph_->num_nodes()), -1);
  memory_.assign(static_cast<std::size_t>(cluster_->num_devices()), {});
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
  const auto index = static_cast<std::int32_t>(kernels_.size());
  std::vector<NodeId> members(kernel.members, kernel.members + kernel.num_members);
  for (NodeId v : members) kernel_of_node_[static_cast<std::size_t>(v)] = index;
  kernels_.push_back(Kernel{std::move(name), std::move(members), kernel.device, kernel.stream,
                            kernel.start_s, kernel.end_s});
}

void ChromeTraceWriter::on_transfer_end(const TransferEvent& transfer) {
  transfers_.push_back(
      Transfer{transfer.producer, transfer.src, transfer.dst, transfer.bytes,
               std::vector<hardware::Hop>(transfer.hops, transfer.hops + transfer.num_hops),
               transfer.request_s, transfer.start_s, transfer.end_s});
}

void ChromeTraceWriter::on_memory(const MemoryEvent& memory) {
  auto& track = memory_[static_cast<std::size_t>(memory.device)];
  if (!track.empty() && track.back().first == memory.time_s) {
    track.back().second = memory.in_use_bytes;
  } else {
    track.emplace_back(memory.time_s, memory.in_use_bytes);
  }
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
  const auto& names = graph_->node_names();
  const auto& types = graph_->op_types();
  auto at = [](Seconds s) { return s * kMicrosecondsPerSecond; };
  auto mid = [&](Seconds a, Seconds b) { return at(a + 0.5 * (b - a)); };
  for (const auto& k : kernels_) {
    nlohmann::json args;
    core::Flops flops = 0;
    Bytes read = 0;
    Bytes written = 0;
    for (NodeId v : k.members) {
      const auto i = static_cast<std::size_t>(v);
      flops += graph_->flops()[i];
      read += graph_->bytes_read()[i];
      written += graph_->bytes_written()[i];
    }
    if (k.members.size() == 1) {
      const auto v = static_cast<std::size_t>(k.members[0]);
      args = {{"op", names[v]},
              {"type", types[v]},
              {"kind", std::string(core::to_string(graph_->kind()[v]))},
              {"flops", flops},
              {"bytes_read", read},
              {"bytes_written", written},
              {"output_bytes", graph_->output_bytes()[v]}};
    } else {
      nlohmann::json listed = nlohmann::json::array();
      for (std::size_t m = 0; m < k.members.size() && m < kMaxListedMembers; ++m) {
        const auto v = static_cast<std::size_t>(k.members[m]);
        listed.push_back(names[v] + " (" + types[v] + ")");
      }
      args = {{"ops", k.members.size()},
              {"members", std::move(listed)},
              {"flops", flops},
              {"members_bytes_read", read},
              {"members_bytes_written", written}};
      if (k.members.size() > kMaxListedMembers) {
        args["members_not_listed"] = k.members.size() - kMaxListedMembers;
      }
    }
    events.push_back({{"ph", "X"},
                      {"name", k.name},
                      {"cat", k.members.size() > 1 ? "fused" : "op"},
                      {"pid", k.device},
                      {"tid", k.stream},
                      {"ts", at(k.start_s)},
                      {"dur", at(k.end_s - k.start_s)},
                      {"args", std::move(args)}});
  }
  for (std::size_t d = 0; d < memory_.size(); ++d) {
    for (const auto& [time_s, bytes] : memory_[d]) {
      events.push_back({{"ph", "C"},
                        {"name", "memory in use (bytes)"},
                        {"pid", static_cast<int>(d)},
                        {"ts", at(time_s)},
                        {"args", {{"bytes", bytes}}}});
    }
  }
  std::int64_t next_flow = 1;
  for (const auto& t : transfers_) {
    const std::string& producer = names[static_cast<std::size_t>(t.producer)];
    std::string name = producer + " -> " + device_names_[static_cast<std::size_t>(t.dst)];
    for (const auto& hop : t.hops) {
      events.push_back({{"ph", "X"},
                        {"name", name},
                        {"cat", "transfer"},
                        {"pid", links_pid},
                        {"tid", hop.link},
                        {"ts", at(t.start_s)},
                        {"dur", at(t.end_s - t.start_s)},
                        {"args",
                         {{"tensor_of", producer},
                          {"bytes", t.bytes},
                          {"from", device_names_[static_cast<std::size_t>(t.src)]},
                          {"to", device_names_[static_cast<std::size_t>(t.dst)]},
                          {"direction", hop.forward ? "a->b" : "b->a"},
                          {"queued_us", at(t.start_s - t.request_s)}}}});
    }
    // Arrows: producer -> transfer (on its first hop) -> each consumer kernel it feeds on dst.
    const auto producer_kernel = kernel_of_node_[static_cast<std::size_t>(t.producer)];
    if (producer_kernel < 0 || t.hops.empty()) continue;
    std::vector<std::int32_t> consumers;
    for (auto e = graph_->out_begin(t.producer); e < graph_->out_end(t.producer); ++e) {
      const auto c = kernel_of_node_[static_cast<std::size_t>(graph_->out_target(e))];
      if (c < 0 || c == producer_kernel || kernels_[static_cast<std::size_t>(c)].device != t.dst) {
        continue;
      }
      if (std::find(consumers.begin(), consumers.end(), c) == consumers.end()) {
        consumers.push_back(c);
      }
    }
    const auto& pk = kernels_[static_cast<std::size_t>(producer_kernel)];
    const int link = t.hops.front().link;
    const double transfer_mid = mid(t.start_s, t.end_s);
    for (std::size_t i = 0; i < consumers.size(); ++i) {
      const auto& ck = kernels_[static_cast<std::size_t>(consumers[i])];
      const std::int64_t id = next_flow++;
      if (i == 0) {
        events.push_back(flow("s", id, pk.device, pk.stream, mid(pk.start_s, pk.end_s)));
        events.push_back(flow("t", id, links_pid, link, transfer_mid));
      } else {
        events.push_back(flow("s", id, links_pid, link, transfer_mid));
      }
      events.push_back(flow("f", id, ck.device, ck.stream, mid(ck.start_s, ck.end_s)));
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
