// Golden results: exact outcomes of the simulator on a few random cases, pinned so that an
// engine change cannot silently alter its semantics (event order, tie-breaking, memory
// accounting, transfers, fusion, OOM). The values were computed by the engine of commit
// 4b10647 and checked unchanged by every later engine (tests/simulator/simulator_digest.cpp
// compares many more cases); the two fused cases were updated once, for the model change
// of at most one library call per fused group (docs/simulator.md "Fusion"). Lookup cases use dyadic
// times, bandwidths and latencies, so every sum is exact on any IEEE platform; times print as hex
// floats. Update a golden only for an intended change of the model, and say so in
// docs/simulator.md.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"
#include "simulator/simulator.h"
#include "tests/simulator/test_support.h"
#include "tests/support/random_dag.h"

namespace gopt::simulator {
namespace {

using core::CompiledGraph;
using core::Decision;

// Counts callbacks and hashes every field in callback order (FNV-1a).
class EventDigest final : public SimulationObserver {
 public:
  int events = 0;
  std::uint64_t hash = 0xcbf29ce484222325ULL;

  void on_kernel_start(const KernelEvent& k) override { kernel(1, k); }
  void on_kernel_end(const KernelEvent& k) override { kernel(2, k); }
  void on_transfer_start(const TransferEvent& t) override { transfer(3, t); }
  void on_transfer_end(const TransferEvent& t) override { transfer(4, t); }

 private:
  template <typename T>
  void add(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) hash = (hash ^ b) * 0x100000001b3ULL;
  }
  void kernel(int tag, const KernelEvent& k) {
    ++events;
    add(tag);
    add(k.task);
    for (int i = 0; i < k.num_members; ++i) add(k.members[i]);
    add(k.device);
    add(k.stream);
    add(k.start_s);
    add(k.end_s);
  }
  void transfer(int tag, const TransferEvent& t) {
    ++events;
    add(tag);
    add(t.transfer);
    add(t.producer);
    add(t.src);
    add(t.dst);
    add(t.bytes);
    add(t.num_hops);
    add(t.request_s);
    add(t.start_s);
    add(t.end_s);
  }
};

// Everything a result reports, one line per device and link.
std::string describe(const SimulationResult& r) {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line,
                "step=%a oom=%d dev=%d at=%a moved=%" PRId64 " transfers=%d kernels=%d lb=%a/%a\n",
                r.step_time_s, r.oom ? 1 : 0, r.oom_device, r.oom_time_s, r.bytes_moved,
                r.num_transfers, r.num_kernels, r.lower_bound_critical_path_s,
                r.lower_bound_work_s);
  out += line;
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const auto& dev = r.devices[d];
    std::snprintf(line, sizeof line, "d%zu busy=%a peak=%" PRId64 " params=%" PRId64 " k=%d\n", d,
                  dev.busy_s, dev.peak_memory_bytes, dev.param_bytes, dev.num_kernels);
    out += line;
  }
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    const auto& link = r.links[l];
    if (link.num_transfers == 0) continue;
    std::snprintf(line, sizeof line, "l%zu bytes=%" PRId64 " busy=%a n=%d\n", l, link.bytes_moved,
                  link.busy_s, link.num_transfers);
    out += line;
  }
  return out;
}

// Runs `decision` plain and observed; both must agree, and the observed stream is pinned.
std::string run(Simulator& sim, const Decision& decision) {
  std::string plain = describe(sim.simulate(decision));
  EventDigest digest;
  std::string observed = describe(sim.simulate(decision, &digest));
  EXPECT_EQ(plain, observed) << "an observer changed the result";
  char line[64];
  std::snprintf(line, sizeof line, "events=%d hash=%016" PRIx64, digest.events, digest.hash);
  return observed + line;
}

CompiledGraph dag(core::NodeId nodes, core::NodeId window, std::uint64_t seed) {
  return CompiledGraph::compile(gopt::testing::random_dag(
      gopt::testing::RandomDagOptions().with_nodes(nodes).with_window(window).with_seed(seed)));
}

// Times k * 2^-10 s (k in 0..63): sums stay exact.
std::vector<double> dyadic_times(const CompiledGraph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> times(static_cast<std::size_t>(g.num_nodes()));
  for (auto& t : times) t = std::ldexp(static_cast<double>(rng() % 64), -10);
  return times;
}

// rng() % k: std::mt19937_64's sequence is fixed by the standard, distributions are not.
std::vector<std::int32_t> random_values(const CompiledGraph& g, std::uint64_t seed,
                                        std::uint64_t k) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> v(static_cast<std::size_t>(g.num_nodes()));
  for (auto& x : v) x = static_cast<std::int32_t>(rng() % k);
  return v;
}

TEST(SimulatorGoldenTest, RoundRobinOnThreeDevices) {
  auto g = dag(120, 8, 3);
  auto cluster = testing::mesh_cluster(3, 1 << 20, std::ldexp(1.0, -12));
  testing::LookupCostModel cost(cluster, dyadic_times(g, 1));
  Simulator sim(g, cluster, cost);
  Decision d;
  d.placement = round_robin_placement(g, 3);
  EXPECT_EQ(
      run(sim, d),
      R"(step=0x1.d01p+1 oom=0 dev=-1 at=0x0p+0 moved=5906432 transfers=115 kernels=120 lb=0x1.5d4p+0/0x1.30cp+0
d0 busy=0x1.4c8p+0 peak=13271040 params=12877824 k=40
d1 busy=0x1.0ap+0 peak=14336000 params=13844480 k=40
d2 busy=0x1.3bcp+0 peak=11894784 params=11468800 k=40
l0 bytes=1982464 busy=0x1.e66p+0 n=38
l1 bytes=2015232 busy=0x1.ee6p+0 n=38
l2 bytes=1908736 busy=0x1.d47p+0 n=39
events=470 hash=b053b2996d18c956)");
}

TEST(SimulatorGoldenTest, TwoStreamsPrioritiesAndFusion) {
  auto g = dag(150, 6, 4);
  auto cluster = testing::mesh_cluster(3, 1 << 22, std::ldexp(1.0, -14), 1LL << 40, 2);
  testing::LookupCostModel cost(cluster, dyadic_times(g, 2));
  Simulator sim(g, cluster, cost);
  Decision d;
  d.placement = random_values(g, 5, 3);
  d.priority = random_values(g, 6, 4);
  d.fusion = random_values(g, 7, 4);
  EXPECT_EQ(
      run(sim, d),
      R"(step=0x1.57dcp+1 oom=0 dev=-1 at=0x0p+0 moved=6692864 transfers=123 kernels=127 lb=0x1.ad4p+0/0x1.7e15555555555p-1
d0 busy=0x1.8d8p+0 peak=6799360 params=6242304 k=46
d1 busy=0x1.7b8p+0 peak=12517376 params=11960320 k=43
d2 busy=0x1.714p+0 peak=16662528 params=16171008 k=38
l0 bytes=1720320 busy=0x1.a63p-2 n=35
l1 bytes=2228224 busy=0x1.114p-1 n=40
l2 bytes=2744320 busy=0x1.508p-1 n=48
events=500 hash=b27738753eadacd1)");
}

TEST(SimulatorGoldenTest, OutOfMemoryContinuesOrStops) {
  auto g = dag(100, 16, 5);
  auto cluster = testing::mesh_cluster(2, 1 << 16, 0, 12000000);
  testing::LookupCostModel cost(cluster, dyadic_times(g, 3));
  Decision d;
  d.placement = random_values(g, 8, 2);
  Simulator sim(g, cluster, cost);
  EXPECT_EQ(
      run(sim, d),
      R"(step=0x1.ddf4p+4 oom=1 dev=1 at=0x1.152p+2 moved=2859008 transfers=54 kernels=100 lb=0x1.9fp-1/0x1.782p+0
d0 busy=0x1.7ep+0 peak=9314304 params=8749056 k=47
d1 busy=0x1.724p+0 peak=12247040 params=11649024 k=53
l0 bytes=2859008 busy=0x1.5dp+5 n=54
events=308 hash=a598e775c8b3e825)");
  Simulator stopping(g, cluster, cost, SimulatorOptions().with_stop_on_oom(true));
  EXPECT_EQ(
      run(stopping, d),
      R"(step=0x1.152p+2 oom=1 dev=1 at=0x1.152p+2 moved=647168 transfers=12 kernels=15 lb=0x1.9fp-1/0x1.782p+0
d0 busy=0x1.f2p-3 peak=9191424 params=8749056 k=9
d1 busy=0x1.bcp-4 peak=12034048 params=11649024 k=6
l0 bytes=647168 busy=0x1.3cp+3 n=12
events=47 hash=a90adb62a0d11925)");
}

TEST(SimulatorGoldenTest, TwelveDevicesWithPriorities) {
  auto g = dag(200, 32, 6);
  auto cluster = testing::mesh_cluster(12, 1 << 24, std::ldexp(1.0, -16));
  testing::LookupCostModel cost(cluster, dyadic_times(g, 4));
  Simulator sim(g, cluster, cost);
  Decision d;
  d.placement = random_values(g, 9, 12);
  d.priority = random_values(g, 10, 1000);
  EXPECT_EQ(
      run(sim, d),
      R"(step=0x1.498cp+0 oom=0 dev=-1 at=0x0p+0 moved=12910592 transfers=276 kernels=200 lb=0x1.fcp-1/0x1.f68p-2
d0 busy=0x1.03p-1 peak=2088960 params=1654784 k=18
d1 busy=0x1.c3p-2 peak=13238272 params=12681216 k=13
d2 busy=0x1.5fp-2 peak=1490944 params=1179648 k=13
d3 busy=0x1.27p-1 peak=12992512 params=12582912 k=18
d4 busy=0x1.3ap-1 peak=3678208 params=3244032 k=21
d5 busy=0x1.1d8p-1 peak=2867200 params=2359296 k=17
d6 busy=0x1.24p-1 peak=6881280 params=6438912 k=21
d7 busy=0x1.fbp-2 peak=5160960 params=4784128 k=18
d8 busy=0x1.9cp-2 peak=720896 params=344064 k=14
d9 busy=0x1.8dp-2 peak=5906432 params=5521408 k=13
d10 busy=0x1.87p-2 peak=9388032 params=8994816 k=14
d11 busy=0x1.3bp-1 peak=10534912 params=9961472 k=20
l0 bytes=360448 busy=0x1.61p-6 n=4
l1 bytes=24576 busy=0x1.88p-10 n=2
l2 bytes=475136 busy=0x1.d24p-6 n=9
l3 bytes=180224 busy=0x1.63p-7 n=6
l4 bytes=180224 busy=0x1.628p-7 n=5
l5 bytes=57344 busy=0x1.c8p-9 n=4
l6 bytes=163840 busy=0x1.438p-7 n=7
l7 bytes=139264 busy=0x1.128p-7 n=5
l8 bytes=73728 busy=0x1.23p-8 n=3
l9 bytes=139264 busy=0x1.12p-7 n=4
l10 bytes=237568 busy=0x1.d3p-7 n=6
l11 bytes=155648 busy=0x1.318p-7 n=3
l12 bytes=106496 busy=0x1.a5p-8 n=5
l13 bytes=352256 busy=0x1.594p-6 n=5
l14 bytes=139264 busy=0x1.11p-7 n=2
l15 bytes=16384 busy=0x1.04p-10 n=1
l16 bytes=32768 busy=0x1.02p-9 n=1
l17 bytes=131072 busy=0x1.008p-7 n=1
l18 bytes=245760 busy=0x1.e2p-7 n=4
l19 bytes=180224 busy=0x1.618p-7 n=3
l20 bytes=204800 busy=0x1.92p-7 n=4
l21 bytes=32768 busy=0x1.02p-9 n=1
l22 bytes=188416 busy=0x1.72p-7 n=4
l23 bytes=147456 busy=0x1.218p-7 n=3
l24 bytes=147456 busy=0x1.21p-7 n=2
l25 bytes=73728 busy=0x1.24p-8 n=4
l26 bytes=212992 busy=0x1.a2p-7 n=4
l27 bytes=16384 busy=0x1.04p-10 n=1
l28 bytes=40960 busy=0x1.44p-9 n=2
l30 bytes=393216 busy=0x1.80cp-6 n=3
l31 bytes=98304 busy=0x1.82p-8 n=2
l32 bytes=335872 busy=0x1.4ap-6 n=8
l33 bytes=40960 busy=0x1.46p-9 n=3
l34 bytes=196608 busy=0x1.82p-7 n=4
l36 bytes=57344 busy=0x1.c6p-9 n=3
l37 bytes=589824 busy=0x1.214p-5 n=10
l38 bytes=598016 busy=0x1.258p-5 n=12
l39 bytes=294912 busy=0x1.21cp-6 n=7
l40 bytes=303104 busy=0x1.29cp-6 n=7
l41 bytes=262144 busy=0x1.01p-6 n=4
l42 bytes=180224 busy=0x1.62p-7 n=4
l43 bytes=221184 busy=0x1.b2p-7 n=4
l44 bytes=327680 busy=0x1.42p-6 n=8
l45 bytes=221184 busy=0x1.b3p-7 n=6
l46 bytes=221184 busy=0x1.b3p-7 n=6
l47 bytes=212992 busy=0x1.a28p-7 n=5
l48 bytes=212992 busy=0x1.a3p-7 n=6
l49 bytes=360448 busy=0x1.61p-6 n=4
l50 bytes=294912 busy=0x1.20cp-6 n=3
l51 bytes=278528 busy=0x1.11p-6 n=4
l52 bytes=40960 busy=0x1.44p-9 n=2
l53 bytes=81920 busy=0x1.43p-8 n=3
l54 bytes=40960 busy=0x1.44p-9 n=2
l55 bytes=327680 busy=0x1.41cp-6 n=7
l56 bytes=204800 busy=0x1.918p-7 n=3
l57 bytes=278528 busy=0x1.10cp-6 n=3
l58 bytes=311296 busy=0x1.318p-6 n=6
l59 bytes=229376 busy=0x1.c3p-7 n=6
l60 bytes=278528 busy=0x1.10cp-6 n=3
l61 bytes=147456 busy=0x1.22p-7 n=4
l62 bytes=237568 busy=0x1.d38p-7 n=7
l63 bytes=98304 busy=0x1.82p-8 n=2
l64 bytes=90112 busy=0x1.64p-8 n=4
l65 bytes=385024 busy=0x1.798p-6 n=6
events=952 hash=2d21d3124e02ffd1)");
}

TEST(SimulatorGoldenTest, RooflineOnP100Pcie) {
  auto g = dag(300, 16, 7);
  auto cluster = hardware::load_profile("p100x4_pcie");
  hardware::RooflineCostModel cost(cluster);
  Simulator sim(g, cluster, cost);
  Decision d;
  d.placement = random_values(g, 11, 4);
  d.fusion = random_values(g, 12, 3);
  EXPECT_EQ(
      run(sim, d),
      R"(step=0x1.107f7a47eabb6p-9 oom=0 dev=-1 at=0x0p+0 moved=15654912 transfers=297 kernels=275 lb=0x1.b5e921453c384p-12/0x1.d7505f787b111p-12
d0 busy=0x1.b49e572462d69p-12 peak=27983872 params=27377664 k=68
d1 busy=0x1.e27da6ad19402p-12 peak=30916608 params=30228480 k=74
d2 busy=0x1.a1ea20c5abc3ap-12 peak=21454848 params=20840448 k=67
d3 busy=0x1.9d85781f8d5a4p-12 peak=22265856 params=21708800 k=66
l0 bytes=7372800 busy=0x1.5f60b8a77bda6p-10 n=143
l1 bytes=7815168 busy=0x1.7a57ceb7cd501p-10 n=154
l2 bytes=8175616 busy=0x1.70ea64cf23802p-10 n=143
l3 bytes=7946240 busy=0x1.7d34d0b3d3c92p-10 n=154
l4 bytes=11173888 busy=0x1.1e69b6910a3dp-9 n=209
l5 bytes=11173888 busy=0x1.1e69b6910a3dp-9 n=209
events=1144 hash=5f420f680bd1030d)");
  EXPECT_EQ(
      run(sim, Decision{}),
      R"(step=0x1.d7505f787b111p-10 oom=0 dev=-1 at=0x0p+0 moved=0 transfers=0 kernels=300 lb=0x1.b5e921453c384p-12/0x1.d7505f787b111p-12
d0 busy=0x1.d7505f787b111p-10 peak=101056512 params=100155392 k=300
d1 busy=0x0p+0 peak=0 params=0 k=0
d2 busy=0x0p+0 peak=0 params=0 k=0
d3 busy=0x0p+0 peak=0 params=0 k=0
events=600 hash=691412b491a29fd5)");
}

}  // namespace
}  // namespace gopt::simulator
