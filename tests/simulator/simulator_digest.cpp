// simulator_digest: prints one 64-bit digest per (graph, cluster, decision, options,
// observer) case of the simulator, over everything it reports: the result (every field,
// bit patterns of the times), the fused groups, and the observer's event stream. An engine
// change that must not alter semantics is checked by diffing this output before and after:
//
//   build/bin/simulator_digest > before.txt   # on the old engine
//   build/bin/simulator_digest > after.txt    # on the new one
//   diff before.txt after.txt && tail -1 after.txt
//
// `--quick` skips the large suite graphs. `--ci` also skips the 20,000-node DAG and prints
// one digest per (graph, cluster) instead of one per case; `--expect FILE` compares what
// it prints with FILE and exits 1 at the first difference (the CTest test
// simulator_digest_ci runs `--ci --expect tests/data/simulator/digest_ci.txt`). After an
// intended change of semantics, regenerate that file with `simulator_digest --ci`.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "datasets/workload_registry.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"
#include "simulator/simulator.h"
#include "tests/simulator/test_support.h"
#include "tests/support/random_dag.h"

namespace {

using gopt::core::CompiledGraph;
using gopt::core::Decision;
using gopt::core::DeviceId;
using gopt::core::NodeId;
namespace sim = gopt::simulator;

// FNV-1a over bytes, then a final mix: order-sensitive, so event streams hash by order.
class Digest {
 public:
  template <typename T>
  void add(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) {
      h_ ^= b;
      h_ *= 0x100000001b3ULL;
    }
  }
  [[nodiscard]] std::uint64_t value() const {
    std::uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Hashes every callback with every field, in callback order.
class RecordingObserver final : public sim::SimulationObserver {
 public:
  Digest digest;
  void on_simulation_begin(const sim::SimulationContext& /*context*/) override { digest.add(1); }
  void on_kernel_start(const sim::KernelEvent& k) override { kernel(2, k); }
  void on_kernel_end(const sim::KernelEvent& k) override { kernel(3, k); }
  void on_transfer_start(const sim::TransferEvent& t) override { transfer(4, t); }
  void on_transfer_end(const sim::TransferEvent& t) override { transfer(5, t); }
  void on_simulation_end(const sim::SimulationResult& r) override {
    digest.add(6);
    digest.add(r.step_time_s);
  }

 private:
  void kernel(int tag, const sim::KernelEvent& k) {
    digest.add(tag);
    digest.add(k.task);
    for (int i = 0; i < k.num_members; ++i) digest.add(k.members[i]);
    digest.add(k.num_members);
    digest.add(k.device);
    digest.add(k.stream);
    digest.add(k.start_s);
    digest.add(k.end_s);
  }
  void transfer(int tag, const sim::TransferEvent& t) {
    digest.add(tag);
    digest.add(t.transfer);
    digest.add(t.producer);
    digest.add(t.src);
    digest.add(t.dst);
    digest.add(t.bytes);
    for (int i = 0; i < t.num_hops; ++i) digest.add(t.hops[i].channel());
    digest.add(t.num_hops);
    digest.add(t.request_s);
    digest.add(t.start_s);
    digest.add(t.end_s);
  }
};

std::uint64_t result_digest(const sim::SimulationResult& r, const sim::FusionGroups& groups) {
  Digest d;
  d.add(r.step_time_s);
  d.add(r.oom);
  d.add(r.oom_device);
  d.add(r.oom_time_s);
  d.add(r.bytes_moved);
  d.add(r.num_transfers);
  d.add(r.num_kernels);
  d.add(r.lower_bound_critical_path_s);
  d.add(r.lower_bound_work_s);
  for (const auto& dev : r.devices) {
    d.add(dev.busy_s);
    d.add(dev.peak_memory_bytes);
    d.add(dev.param_bytes);
    d.add(dev.num_kernels);
  }
  for (const auto& link : r.links) {
    d.add(link.bytes_moved);
    d.add(link.busy_s);
    d.add(link.num_transfers);
  }
  for (auto g : groups.group_of) d.add(g);
  for (auto m : groups.members) d.add(m);
  return d.value();
}

struct Totals {
  Digest all;
  long cases = 0;
  long ooms = 0;
  bool per_case = true;            // else one line per run_cases() call
  std::vector<std::string> lines;  // everything printed, for --expect
};

void emit(Totals& totals, const std::string& line) {
  std::printf("%s\n", line.c_str());
  totals.lines.push_back(line);
}

std::string hex(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Decisions: placements from single-device to random, priorities absent / few levels /
// full range, fusion absent / zero / random levels.
std::vector<std::pair<std::string, Decision>> decisions(const CompiledGraph& g, DeviceId devices,
                                                        std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto n = static_cast<std::size_t>(g.num_nodes());
  auto rand_below = [&](std::uint64_t k) { return static_cast<std::int32_t>(rng() % k); };
  std::vector<std::pair<std::string, std::vector<DeviceId>>> placements;
  placements.emplace_back("none", std::vector<DeviceId>{});
  placements.emplace_back("rr", sim::round_robin_placement(g, devices));
  {
    std::vector<DeviceId> p(n);
    for (auto& x : p) x = rand_below(static_cast<std::uint64_t>(devices));
    placements.emplace_back("random", p);
  }
  {
    // Contiguous blocks in topological order: long local chains, few transfers.
    std::vector<DeviceId> p(n);
    const auto& order = g.topological_order();
    for (std::size_t r = 0; r < n; ++r) {
      p[static_cast<std::size_t>(order[r])] =
          static_cast<DeviceId>(r * static_cast<std::size_t>(devices) / n);
    }
    placements.emplace_back("blocks", p);
  }
  {
    // Mostly blocks, some random: mixed local and remote edges.
    std::vector<DeviceId> p = placements.back().second;
    for (auto& x : p) {
      if (rng() % 5 == 0) x = rand_below(static_cast<std::uint64_t>(devices));
    }
    placements.emplace_back("mixed", p);
  }
  std::vector<std::pair<std::string, Decision>> out;
  for (const auto& [pname, placement] : placements) {
    for (int pr = 0; pr < 4; ++pr) {
      for (int fu = 0; fu < 3; ++fu) {
        Decision d;
        if (!placement.empty()) d.placement = placement;
        if (pr == 1) d.priority = std::vector<std::int32_t>(n, 0);
        if (pr == 2) {
          std::vector<std::int32_t> p(n);
          for (auto& x : p) x = rand_below(4);
          d.priority = p;
        }
        if (pr == 3) {
          std::vector<std::int32_t> p(n);
          for (auto& x : p) {
            auto r = rng() % 10;
            x = r == 0   ? std::numeric_limits<std::int32_t>::min()
                : r == 1 ? std::numeric_limits<std::int32_t>::max()
                         : static_cast<std::int32_t>(rng());
          }
          d.priority = p;
        }
        if (fu == 1) d.fusion = std::vector<std::int32_t>(n, 0);
        if (fu == 2) {
          std::vector<std::int32_t> f(n);
          for (auto& x : f) x = rng() % 3 == 0 ? 0 : rand_below(6);
          d.fusion = f;
        }
        out.emplace_back(pname + "/p" + std::to_string(pr) + "/f" + std::to_string(fu), d);
      }
    }
  }
  return out;
}

void run_cases(const std::string& name, const CompiledGraph& g, const gopt::hardware::Cluster& c,
               const gopt::hardware::CostModel& cost, std::uint64_t seed, Totals& totals,
               bool observe_all) {
  sim::Simulator plain(g, c, cost, sim::SimulatorOptions());
  sim::Simulator stopping(g, c, cost, sim::SimulatorOptions().with_stop_on_oom(true));
  Digest op_times;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    for (DeviceId d = 0; d < c.num_devices(); ++d) op_times.add(plain.op_time(v, d));
  }
  if (totals.per_case) emit(totals, name + "/op_times " + hex(op_times.value()));
  totals.all.add(op_times.value());
  Digest group;
  group.add(op_times.value());
  long group_cases = 0;
  long group_ooms = 0;
  int k = 0;
  for (const auto& [dname, decision] : decisions(g, c.num_devices(), seed)) {
    for (int mode = 0; mode < 3; ++mode) {
      // 0: plain; 1: observed; 2: stop at OOM. Observed runs on every other decision of
      // large graphs (they are slow), all of small ones.
      if (mode == 1 && !observe_all && (k % 2) != 0) continue;
      sim::Simulator& s = mode == 2 ? stopping : plain;
      RecordingObserver obs;
      const auto& r = s.simulate(decision, mode == 1 ? &obs : nullptr);
      std::uint64_t h = result_digest(r, s.last_groups());
      if (mode == 1) h ^= obs.digest.value() * 3;
      totals.ooms += r.oom;
      ++totals.cases;
      totals.all.add(h);
      group.add(h);
      ++group_cases;
      group_ooms += r.oom;
      if (totals.per_case) {
        emit(totals, name + "/" + dname + "/m" + std::to_string(mode) + " " + hex(h) +
                         (r.oom ? " oom" : ""));
      }
    }
    ++k;
  }
  if (!totals.per_case) {
    emit(totals, name + " cases=" + std::to_string(group_cases) +
                     " ooms=" + std::to_string(group_ooms) + " digest=" + hex(group.value()));
  }
}

// Compares the printed lines with the file `path`; prints the first difference.
int compare_with(const std::vector<std::string>& lines, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "simulator_digest: cannot read expected digest file %s\n", path.c_str());
    return 1;
  }
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  for (std::size_t i = 0; i < lines.size() || i < expected.size(); ++i) {
    const std::string got = i < lines.size() ? lines[i] : "<end of output>";
    const std::string want = i < expected.size() ? expected[i] : "<end of file>";
    if (got != want) {
      std::fprintf(stderr,
                   "simulator_digest: line %zu differs from %s\n  expected: %s\n  found:    "
                   "%s\nThe simulator's results changed. If that is intended, regenerate the "
                   "file with `simulator_digest --ci`; otherwise diff the full per-case output "
                   "(`simulator_digest`) against the previous engine's to find the cases.\n",
                   i + 1, path.c_str(), want.c_str(), got.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "simulator_digest: %zu lines identical to %s\n", lines.size(), path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  bool ci = false;
  std::string expect;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--ci") {
      quick = ci = true;
    } else if (arg == "--expect" && i + 1 < argc) {
      expect = argv[++i];
    } else {
      std::fprintf(stderr, "usage: simulator_digest [--quick | --ci] [--expect FILE]\n");
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a failing case shows after the last line
  Totals totals;
  totals.per_case = !ci;
  const char* profiles[] = {"p100x4_pcie", "v100x8_dgx1", "h100x8_nvswitch", "p100x2_pcie",
                            "p100x8_pcie"};
  // Random DAGs on the shipped profiles with the roofline cost model.
  struct Dag {
    NodeId nodes;
    NodeId window;
    std::uint64_t seed;
  };
  const Dag dags[] = {{40, 4, 1}, {300, 8, 2}, {300, 64, 3}, {3000, 16, 4}, {20000, 64, 5}};
  for (const auto& dag : dags) {
    if (ci && dag.nodes > 3000) continue;
    auto g = CompiledGraph::compile(gopt::testing::random_dag(gopt::testing::RandomDagOptions()
                                                                  .with_nodes(dag.nodes)
                                                                  .with_window(dag.window)
                                                                  .with_seed(dag.seed)));
    for (const char* p : profiles) {
      auto cluster = gopt::hardware::load_profile(p);
      gopt::hardware::RooflineCostModel cost(cluster);
      run_cases("dag" + std::to_string(dag.nodes) + "w" + std::to_string(dag.window) + "/" + p, g,
                cluster, cost, dag.seed * 31 + 7, totals, dag.nodes <= 3000);
    }
  }
  // Meshes with lookup costs: several streams per device, more than 8 devices (the heap
  // event queue), small memories (OOM), zero-time ops and free links (ties everywhere).
  struct Mesh {
    int devices;
    int streams;
    double bandwidth;
    double latency;
    gopt::core::Bytes capacity;
    bool copy_engine = true;  // false: receiver copies (last, so earlier lines keep places)
  };
  const Mesh meshes[] = {{3, 2, 1e9, 1e-6, 1LL << 40},     {4, 1, 1e3, 0, 400000},
                         {12, 1, 1e6, 1e-5, 1LL << 40},    {5, 3, 1e12, 0, 2000000},
                         {2, 1, 1e9, 1e-6, 100000},        {9, 2, 1e8, 2e-6, 3000000},
                         {2, 1, 1e9, 1e-6, 100000, false}, {4, 2, 1e8, 2e-6, 3000000, false}};
  const Dag mesh_dags[] = {{60, 4, 11}, {500, 16, 12}, {4000, 64, 13}};
  int m = 0;
  for (const auto& mesh : meshes) {
    for (const auto& dag : mesh_dags) {
      auto g = CompiledGraph::compile(gopt::testing::random_dag(gopt::testing::RandomDagOptions()
                                                                    .with_nodes(dag.nodes)
                                                                    .with_window(dag.window)
                                                                    .with_seed(dag.seed + m)));
      auto cluster =
          gopt::simulator::testing::mesh_cluster(mesh.devices, mesh.bandwidth, mesh.latency,
                                                 mesh.capacity, mesh.streams, mesh.copy_engine);
      std::mt19937_64 rng(static_cast<std::uint64_t>(m) * 1000 + 17);
      // Times >= the launch cost: the lookup model's fused time (launch + sum of members'
      // time - launch) must not go negative.
      const double launch_s = m % 2 == 0 ? 0.0 : 5e-7;
      std::vector<double> times(static_cast<std::size_t>(g.num_nodes()));
      for (auto& t : times) {
        auto r = rng() % 8;
        t = launch_s + (r == 0 ? 0.0 : r == 1 ? 1e-6 : static_cast<double>(rng() % 1000) * 1e-7);
      }
      gopt::simulator::testing::LookupCostModel cost(cluster, times, launch_s);
      run_cases((mesh.copy_engine ? "mesh" : "receiver") + std::to_string(m) + "/dag" +
                    std::to_string(dag.nodes),
                g, cluster, cost, dag.seed * 131 + static_cast<std::uint64_t>(m), totals, true);
    }
    ++m;
  }
  if (!quick) {
    gopt::datasets::WorkloadRegistry registry;
    gopt::datasets::register_builtin_workloads(registry);
    const char* workloads[] = {"inception_v3", "gnmt_8", "rnnlm_2", "transformer_xl_2",
                               "wavenet_2"};
    const char* suite_profiles[] = {"p100x4_pcie", "v100x8_dgx1", "h100x8_nvswitch"};
    for (const char* w : workloads) {
      auto g = CompiledGraph::compile(registry.generate(w));
      for (const char* p : suite_profiles) {
        auto cluster = gopt::hardware::load_profile(p);
        gopt::hardware::RooflineCostModel cost(cluster);
        run_cases(std::string(w) + "/" + p, g, cluster, cost, 99, totals, g.num_nodes() < 10000);
      }
    }
  }
  emit(totals, "TOTAL cases=" + std::to_string(totals.cases) +
                   " ooms=" + std::to_string(totals.ooms) + " digest=" + hex(totals.all.value()));
  return expect.empty() ? 0 : compare_with(totals.lines, expect);
}
