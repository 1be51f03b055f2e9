// hdp_landscape: the reward landscape HDP searches on a suite graph, in the simulator.
//
//   hdp_landscape [GRAPH [PROFILE [DECISION.json [OUT.json]]]]  (defaults: gnmt_4 p100x4_pcie)
//
// From each start placement (one device; the human expert's; a decision file, e.g. HDP's
// best saved by `gopt simulate --agent hdp --save-decision`), every single-unit move (one
// unit's ops to one other device) is simulated, for three kinds of unit:
//   layer  the ops of one (encoder or decoder) layer with their gradients, or of one
//          unlayered scope (embeddings, softmax, attention);
//   block  one of G contiguous blocks of the topological order (G = HDP's default groups),
//          what a grouper that reads the topological position tends to form;
//   type   every op of one op type, what a grouper that reads only op features forms.
// It reports how whole the layer units are in each start, how many moves improve the step
// and the best one; from the decision file, random moves of k layer units at once; the
// path from one device to the expert's placement, one layer unit at a time; and a greedy
// descent over layer moves from one device and from the decision file (`-`: none;
// OUT.json: where the last descent ends). Not a test: a diagnostic for docs/agents.md
// "hdp" and "Design decisions (GO)".
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "agents/environment.h"
#include "agents/placement_utils.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "datasets/workload_registry.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"

namespace {

using gopt::core::DeviceId;
using gopt::core::NodeId;
using Units = std::vector<std::pair<std::string, std::vector<NodeId>>>;

// A scope unit (agents/placement_utils.h) as a label: "encoder/layer 2", "decoder/attention".
Units layer_units(const gopt::core::CompiledGraph& g) {
  std::map<std::string, std::vector<NodeId>> units;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto [kind, scope, layer, branch] = gopt::agents::scope_unit_key(g, v);
    std::string label = kind == 0 ? scope + "/layer " + std::to_string(layer) : scope;
    if (branch >= 0) label += "/branch " + std::to_string(branch);
    units[label].push_back(v);
  }
  // Scopes of fewer than 20 ops (train_op, loss scalars) join one "misc" unit.
  Units out;
  std::vector<NodeId> misc;
  for (auto& [key, ops] : units) {
    if (ops.size() < 20) {
      misc.insert(misc.end(), ops.begin(), ops.end());
    } else {
      out.emplace_back(key, std::move(ops));
    }
  }
  if (!misc.empty()) out.emplace_back("misc", std::move(misc));
  return out;
}

Units block_units(const gopt::core::CompiledGraph& g, int blocks) {
  Units out(static_cast<std::size_t>(blocks));
  const auto n = static_cast<std::size_t>(g.num_nodes());
  for (std::size_t r = 0; r < n; ++r) {
    const auto b = r * static_cast<std::size_t>(blocks) / n;
    out[b].first = "block " + std::to_string(b);
    out[b].second.push_back(g.topological_order()[r]);
  }
  return out;
}

Units type_units(const gopt::core::CompiledGraph& g) {
  std::map<std::string, std::vector<NodeId>> units;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    units[g.op_types()[static_cast<std::size_t>(v)]].push_back(v);
  }
  return {units.begin(), units.end()};
}

gopt::core::Decision moved(const gopt::agents::Problem& p, const gopt::core::Decision& base,
                           const std::vector<NodeId>& ops, DeviceId device) {
  gopt::core::Decision d = base;
  for (NodeId v : ops) (*d.placement)[static_cast<std::size_t>(v)] = device;
  gopt::agents::apply_colocation(p.graph, *d.placement);
  return d;
}

struct Eval {
  double ms;
  bool oom;
};

Eval eval(gopt::agents::Environment& env, const gopt::core::Decision& d) {
  auto e = env.evaluate(d);
  return {e.step_time_s * 1e3, e.oom};
}

void single_moves(gopt::agents::Environment& env, const char* start,
                  const gopt::core::Decision& base, const char* kind, const Units& units) {
  const auto& p = env.problem();
  const Eval b = eval(env, base);
  int better = 0, worse = 0, oom = 0, total = 0;
  double best_ms = b.ms;
  std::string best;
  for (const auto& [name, ops] : units) {
    for (DeviceId dev = 0; dev < p.num_devices(); ++dev) {
      // Skip a move that changes nothing (the whole unit already there).
      bool all_there =
          std::all_of(ops.begin(), ops.end(), [&](NodeId v) { return base.device_of(v) == dev; });
      if (all_there) continue;
      const Eval e = eval(env, moved(p, base, ops, dev));
      ++total;
      if (e.oom) {
        ++oom;
      } else if (e.ms < b.ms * 0.999) {
        ++better;
      } else if (e.ms > b.ms * 1.001) {
        ++worse;
      }
      if (!e.oom && e.ms < best_ms) {
        best_ms = e.ms;
        best = name + " -> gpu" + std::to_string(dev);
      }
    }
  }
  std::printf(
      "%-8s %-6s %5zu units %5d moves: %4d better, %4d worse, %4d within 0.1%%, %3d OOM;"
      " start %.0f ms, best %.0f ms (%s)\n",
      start, kind, units.size(), total, better, worse, total - better - worse - oom, oom, b.ms,
      best_ms, best.empty() ? "none" : best.c_str());
}

// Random placements of whole units (each unit on a uniformly random device): what a policy
// that keeps each unit together but has not yet learnt where samples.
void random_unit_placements(gopt::agents::Environment& env, const char* kind, const Units& units,
                            int samples) {
  const auto& p = env.problem();
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<DeviceId> device(0, p.num_devices() - 1);
  double sum = 0, best = 1e30;
  int oom = 0, fit = 0;
  gopt::core::Decision d;
  d.placement = std::vector<DeviceId>(static_cast<std::size_t>(p.num_nodes()), 0);
  for (int s = 0; s < samples; ++s) {
    for (const auto& unit : units) {
      const DeviceId dev = device(rng);
      for (NodeId v : unit.second) (*d.placement)[static_cast<std::size_t>(v)] = dev;
    }
    gopt::agents::apply_colocation(p.graph, *d.placement);
    const Eval e = eval(env, d);
    if (e.oom) {
      ++oom;
      continue;
    }
    ++fit;
    sum += e.ms;
    best = std::min(best, e.ms);
  }
  std::printf("random   %-6s %5zu units %5d samples: mean %.0f ms, best %.0f ms, %d OOM\n", kind,
              units.size(), samples, fit > 0 ? sum / fit : 0.0, best, oom);
}

// Units by the workload's layer metadata alone (encoder and decoder layer l together; one
// unit of every op without a layer): the groups a grouper that reads only the layer forms.
Units metadata_layer_units(const gopt::core::CompiledGraph& g) {
  std::map<std::int32_t, std::vector<NodeId>> units;
  for (NodeId v = 0; v < g.num_nodes(); ++v)
    units[g.layer()[static_cast<std::size_t>(v)]].push_back(v);
  Units out;
  for (auto& [layer, ops] : units) {
    out.emplace_back(layer < 0 ? "no layer" : "layer " + std::to_string(layer), std::move(ops));
  }
  return out;
}

// Every placement of the units (devices^units of them; skipped above 5,000).
void exhaustive(gopt::agents::Environment& env, const char* kind, const Units& units) {
  const auto& p = env.problem();
  double total = 1;
  for (std::size_t u = 0; u < units.size(); ++u) total *= p.num_devices();
  if (total > 5000) return;
  gopt::core::Decision d;
  d.placement = std::vector<DeviceId>(static_cast<std::size_t>(p.num_nodes()), 0);
  double best = 1e30;
  std::string best_name;
  std::vector<double> all;
  for (long code = 0; code < static_cast<long>(total); ++code) {
    long c = code;
    std::string name;
    for (const auto& unit : units) {
      const auto dev = static_cast<DeviceId>(c % p.num_devices());
      c /= p.num_devices();
      name += std::to_string(dev);
      for (NodeId v : unit.second) (*d.placement)[static_cast<std::size_t>(v)] = dev;
    }
    gopt::agents::apply_colocation(p.graph, *d.placement);
    const Eval e = eval(env, d);
    if (e.oom) continue;
    all.push_back(e.ms);
    if (e.ms < best) {
      best = e.ms;
      best_name = name;
    }
  }
  std::sort(all.begin(), all.end());
  std::printf(
      "all      %-6s %5zu units %5zu placements that fit: best %.0f ms (devices %s, in "
      "unit order), median %.0f ms\n",
      kind, units.size(), all.size(), best, best_name.c_str(), all[all.size() / 2]);
}

// How whole the layer units are in `d`: units with every op on one device, ops off their
// unit's majority device (each such op pays a transfer to or from its layer), and the step
// time with every unit moved whole to its majority device.
void coherence(gopt::agents::Environment& env, const char* start, const gopt::core::Decision& d,
               const Units& units) {
  const auto& p = env.problem();
  int whole = 0;
  std::size_t stray = 0;
  gopt::core::Decision snapped = d;
  for (const auto& unit : units) {
    std::vector<std::size_t> count(static_cast<std::size_t>(p.num_devices()), 0);
    for (NodeId v : unit.second) ++count[static_cast<std::size_t>(d.device_of(v))];
    const auto majority = std::max_element(count.begin(), count.end());
    whole += *majority == unit.second.size() ? 1 : 0;
    stray += unit.second.size() - *majority;
    snapped = moved(p, snapped, unit.second, static_cast<DeviceId>(majority - count.begin()));
  }
  const Eval e = eval(env, snapped);
  std::printf(
      "%-8s layer units whole: %d of %zu; ops off their unit's majority device: %zu; every unit"
      " on its majority device: %.0f ms%s\n",
      start, whole, units.size(), stray, e.ms, e.oom ? " OOM" : "");
}

// Random perturbations of `start` that move k layer units (distinct, each whole, to a
// uniformly random device), 100 per k: how often a sample that changes few units improves
// on the start, against one that changes many (what a sampled placement does).
void unit_perturbations(gopt::agents::Environment& env, const gopt::core::Decision& start,
                        const Units& units) {
  const auto& p = env.problem();
  const Eval base = eval(env, start);
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<DeviceId> device(0, p.num_devices() - 1);
  std::vector<std::size_t> index(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) index[u] = u;
  std::vector<std::size_t> ks = {1, 2, 3, units.size() / 2, units.size()};
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());  // 6 units: 3 is also half
  for (std::size_t k : ks) {
    int better = 0, oom = 0;
    double best = base.ms;
    for (int s = 0; s < 100; ++s) {
      std::shuffle(index.begin(), index.end(), rng);
      gopt::core::Decision d = start;
      for (std::size_t u = 0; u < k; ++u) {
        d = moved(p, d, units[index[u]].second, device(rng));
      }
      const Eval e = eval(env, d);
      if (e.oom) {
        ++oom;
        continue;
      }
      better += e.ms < base.ms * 0.999 ? 1 : 0;
      best = std::min(best, e.ms);
    }
    std::printf(
        "perturb  %2zu of %zu layer units, 100 samples: %3d better than %.0f ms, best %.0f"
        " ms, %d OOM\n",
        k, units.size(), better, base.ms, best, oom);
  }
}

// Greedy descent over layer-unit moves from `start`: each round takes the best single move
// (a whole unit to one device), until none shortens the step by 0.1%. Returns the minimum.
gopt::core::Decision greedy_descent(gopt::agents::Environment& env, const char* start_name,
                                    const gopt::core::Decision& start, const Units& layers) {
  const auto& p = env.problem();
  std::printf("\ngreedy descent over layer-unit moves from %s:\n", start_name);
  gopt::core::Decision d = start;
  Eval current = eval(env, d);
  int simulations = 1;
  for (int round = 0; round < 40; ++round) {
    Eval best{current.ms, false};
    gopt::core::Decision best_d;
    std::string best_name;
    for (const auto& [name, ops] : layers) {
      for (DeviceId dev = 0; dev < p.num_devices(); ++dev) {
        auto m = moved(p, d, ops, dev);
        const Eval e = eval(env, m);
        ++simulations;
        if (!e.oom && e.ms < best.ms * 0.999) {
          best = e;
          best_d = std::move(m);
          best_name = name + " -> gpu" + std::to_string(dev);
        }
      }
    }
    if (best_name.empty()) {
      std::printf("  local minimum at %.0f ms after %d moves (%d simulations)\n", current.ms, round,
                  simulations);
      break;
    }
    d = std::move(best_d);
    current = best;
    std::printf("  %2d: %-36s %7.0f ms\n", round + 1, best_name.c_str(), current.ms);
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string graph_name = argc > 1 ? argv[1] : "gnmt_4";
  const std::string profile = argc > 2 ? argv[2] : "p100x4_pcie";
  gopt::datasets::WorkloadRegistry workloads;
  gopt::datasets::register_builtin_workloads(workloads);
  const auto graph = gopt::core::CompiledGraph::compile(workloads.generate(graph_name));
  const auto cluster = gopt::hardware::load_profile(profile);
  const auto cost = gopt::hardware::make_cost_model(cluster);
  gopt::agents::Problem problem{graph, cluster, *cost, 1};
  gopt::agents::Environment env(problem);
  gopt::agents::AgentRegistry agents;
  gopt::agents::register_builtin_agents(agents);

  const DeviceId devices = problem.num_devices();
  gopt::core::Decision single;
  single.placement = std::vector<DeviceId>(static_cast<std::size_t>(graph.num_nodes()), 0);
  const auto expert = agents.create("human_expert")->propose(problem);
  std::vector<std::pair<std::string, gopt::core::Decision>> starts = {{"one GPU", single},
                                                                      {"expert", expert}};
  const bool file_start = argc > 3 && std::string(argv[3]) != "-";
  if (file_start)
    starts.emplace_back("file", gopt::simulator::read_decision_file(argv[3], graph, cluster));

  const Units layers = layer_units(graph);
  const Units blocks = block_units(graph, std::min(256, 20 * devices));
  const Units types = type_units(graph);
  std::printf("%s on %s: %d ops\n", graph_name.c_str(), profile.c_str(), graph.num_nodes());
  const Units metadata = metadata_layer_units(graph);
  for (const auto& [name, ops] : metadata)
    std::printf("  unit %s: %zu ops\n", name.c_str(), ops.size());
  exhaustive(env, "meta", metadata);
  random_unit_placements(env, "meta", metadata, 100);
  random_unit_placements(env, "layer", layers, 100);
  random_unit_placements(env, "block", blocks, 100);
  random_unit_placements(env, "type", types, 100);
  for (const auto& [name, d] : starts) {
    coherence(env, name.c_str(), d, layers);
    single_moves(env, name.c_str(), d, "layer", layers);
    single_moves(env, name.c_str(), d, "block", blocks);
    single_moves(env, name.c_str(), d, "type", types);
  }

  // One device -> the expert, one layer unit at a time (in unit order), each unit taking
  // the device the expert gives most of its ops.
  std::printf("\npath from one GPU to the expert, one layer unit at a time:\n");
  gopt::core::Decision d = single;
  for (const auto& [name, ops] : layers) {
    std::vector<int> votes(static_cast<std::size_t>(devices), 0);
    for (NodeId v : ops) ++votes[static_cast<std::size_t>(expert.device_of(v))];
    for (NodeId v : ops) (*d.placement)[static_cast<std::size_t>(v)] = expert.device_of(v);
    const Eval e = eval(env, d);
    std::printf("  %-28s %6zu ops -> mostly gpu%ld: %7.0f ms%s\n", name.c_str(), ops.size(),
                static_cast<long>(std::max_element(votes.begin(), votes.end()) - votes.begin()),
                e.ms, e.oom ? " OOM" : "");
  }

  gopt::core::Decision descended = greedy_descent(env, "one GPU", single, layers);
  if (file_start) unit_perturbations(env, starts.back().second, layers);
  if (file_start) descended = greedy_descent(env, "file", starts.back().second, layers);
  if (argc > 4) {
    std::ofstream out(argv[4]);
    out << gopt::simulator::to_decision_json(descended, graph);
  }
  return 0;
}
