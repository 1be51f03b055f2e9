#include "experiments/tables/ablation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "agents/registry.h"
#include "core/errors.h"
#include "core/strings.h"
#include "experiments/config/config.h"
#include "experiments/tables/bound_refresh.h"
#include "experiments/tables/report.h"

namespace gopt::experiments {
namespace {

// A change counts as level when it is within this fraction either way.
constexpr double kLevel = 0.005;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

std::string percent(double change) {
  return (change >= 0 ? "+" : "") + fixed(100 * change, 1) + "%";
}

// The side's results by workload and seed.
std::map<std::string, std::map<std::uint64_t, const RunResult*>> by_workload(
    const AblationSide& side) {
  std::map<std::string, std::map<std::uint64_t, const RunResult*>> out;
  for (const auto& r : side.file->results) {
    if (r.key.agent == side.agent) out[r.key.workload][r.key.seed] = &r;
  }
  if (out.empty()) {
    throw core::InputError(side.file->path, "--agent",
                           "no result of agent '" + side.agent + "' in this file");
  }
  return out;
}

// What the side's rows were made by: each revision with its count of results.
std::string revisions(const AblationSide& side, const std::vector<AblationRow>& rows) {
  std::map<std::string, int> counts;
  std::set<std::string> workloads;
  for (const auto& row : rows) workloads.insert(row.workload);
  for (const auto& r : side.file->results) {
    if (r.key.agent == side.agent && workloads.count(r.key.workload) > 0) {
      ++counts[r.provenance.git_revision.empty() ? "unknown" : r.provenance.git_revision];
    }
  }
  std::vector<std::string> parts;
  for (const auto& [revision, n] : counts) {
    parts.push_back(revision + " (" + std::to_string(n) + " results)");
  }
  return core::join(parts);
}

// `agent`'s first result in `file`, or nullptr for an agent the file lacks.
const RunResult* first_result(const ResultsFile& file, const std::string& agent) {
  for (const auto& r : file.results) {
    if (r.key.agent == agent) return &r;
  }
  return nullptr;
}

// The resolved options of `agent`'s first result in `file` (empty for files from before
// they were recorded, and for an agent the file lacks).
std::map<std::string, std::string> options_of(const ResultsFile& file, const std::string& agent) {
  const RunResult* r = first_result(file, agent);
  if (r == nullptr) return {};
  return r->resolved_options.empty() ? r->options : r->resolved_options;
}

// The agent type of `agent`'s first result in `file` ("" for an agent the file lacks).
std::string type_of(const ResultsFile& file, const std::string& agent) {
  const RunResult* r = first_result(file, agent);
  return r == nullptr ? "" : r->agent_type;
}

// The registry's default of option `name` of agent type `type`, or nothing when either is
// unknown.
std::optional<std::string> default_of(const agents::AgentRegistry* registry,
                                      const std::string& type, const std::string& name) {
  if (registry == nullptr || !registry->contains(type)) return std::nullopt;
  for (const auto& spec : registry->info(type).options) {
    if (spec.name == name) return spec.default_value;
  }
  return std::nullopt;
}

// "name: value" lists, one per side: `differ` for every option whose value differs between
// the two agents ("(not recorded)" for an option one side's results lack: one that came
// after its run); `one_sided` for an option one side lacks and the other records at its
// registry default, which `differ` leaves out (most options keep the behaviour before them
// as their default, but not all, so the page still lists them). Options in `skip` are left
// out.
struct OptionDiff {
  std::pair<std::string, std::string> differ;
  std::pair<std::string, std::string> one_sided;  ///< empty when there is none
};

OptionDiff differing_options(const ResultsFile& with_file, const std::string& with_agent,
                             const ResultsFile& without_file, const std::string& without_agent,
                             const agents::AgentRegistry* registry,
                             const std::set<std::string>& skip = {}) {
  const auto a = options_of(with_file, with_agent);
  const auto b = options_of(without_file, without_agent);
  const std::string type_a = type_of(with_file, with_agent);
  const std::string type_b = type_of(without_file, without_agent);
  std::set<std::string> names;
  for (const auto& [name, value] : a) names.insert(name);
  for (const auto& [name, value] : b) names.insert(name);
  std::vector<std::string> left, right, left_default, right_default;
  for (const auto& name : names) {
    if (skip.count(name) > 0) continue;
    const auto x = a.find(name);
    const auto y = b.find(name);
    const std::string vx = x == a.end() ? "(not recorded)" : portable_path(x->second);
    const std::string vy = y == b.end() ? "(not recorded)" : portable_path(y->second);
    if (vx == vy) continue;
    const bool at_default = (x == a.end() && y->second == default_of(registry, type_b, name)) ||
                            (y == b.end() && x->second == default_of(registry, type_a, name));
    (at_default ? left_default : left).push_back(name + ": " + vx);
    (at_default ? right_default : right).push_back(name + ": " + vy);
  }
  OptionDiff out;
  out.differ = left.empty() ? std::pair<std::string, std::string>{"none", "none"}
                            : std::pair{core::join(left), core::join(right)};
  if (!left_default.empty()) out.one_sided = {core::join(left_default), core::join(right_default)};
  return out;
}

// The workloads `side`'s agent has results on that `other`'s has none on ("none" when
// there are none): for a pretraining agent, the training graphs only one side trained on.
std::string workloads_only_in(const AblationSide& side, const AblationSide& other) {
  const auto theirs = by_workload(other);
  std::vector<std::string> only;
  for (const auto& [workload, seeds] : by_workload(side)) {
    if (theirs.count(workload) == 0) only.push_back(workload);
  }
  return only.empty() ? "none" : core::join(only);
}

// The config `agent`'s results in `file` ran under (config_yaml_of its first result); ""
// when the file records none that matches.
std::string config_of(const ResultsFile& file, const std::string& agent) {
  const auto r = std::find_if(file.results.begin(), file.results.end(),
                              [&](const RunResult& x) { return x.key.agent == agent; });
  return r == file.results.end() ? "" : config_yaml_of(file, *r);
}

// The validation graphs of the config `agent` ran under (workloads marked
// pretrain_validation, on which a pretraining picks its checkpoint), each as "name (graph,
// key=value ...)"; nullopt when the file records no such config, or one this gopt no
// longer reads (an older run's).
std::optional<std::set<std::string>> validation_graphs(const ResultsFile& file,
                                                       const std::string& agent) {
  const std::string yaml = config_of(file, agent);
  if (yaml.empty()) return std::nullopt;
  ExperimentConfig config;
  try {
    config = parse_config(yaml, file.path + " (its config)",
                          std::filesystem::path(file.metadata.config_source).parent_path());
  } catch (const core::InputError&) {
    return std::nullopt;  // the page stays without the row, as for a file without a config
  }
  std::set<std::string> graphs;
  for (const auto& w : config.workloads) {
    if (!w.pretrain_validation) continue;
    std::string text = w.name + " (" + w.graph;
    for (const auto& [key, value] : w.overrides) text += ", " + key + "=" + value;
    graphs.insert(text + ")");
  }
  return graphs;
}

// The members of `a` not in `b`, joined ("none" when there are none).
std::string only_in(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::vector<std::string> only;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
  return only.empty() ? "none" : core::join(only);
}

// The provenance rows of the options that differ: the agents', then their upstream agents'
// pair by pair (an upstream agent only one side has is named, with nothing to compare).
// Each is followed by the options one side records only at their defaults, if any.
std::string option_rows(const AblationSide& with, const AblationSide& without,
                        const agents::AgentRegistry* registry) {
  std::ostringstream rows;
  const auto one_sided_row = [&rows](const std::string& whose, const OptionDiff& diff) {
    if (diff.one_sided.first.empty()) return;
    rows << "| " << whose
         << " only one side records (they came after the other's run), at their defaults | "
         << diff.one_sided.first << " | " << diff.one_sided.second << " |\n";
  };
  // An option naming an upstream agent's file on both sides differs with the files' places;
  // the upstream agents' own options say what differs between them.
  std::set<std::string> skip;
  for (const auto& name : with.upstream.options) {
    const auto& theirs = without.upstream.options;
    if (std::find(theirs.begin(), theirs.end(), name) != theirs.end()) skip.insert(name);
  }
  const OptionDiff own =
      differing_options(*with.file, with.agent, *without.file, without.agent, registry, skip);
  rows << "| options that differ | " << own.differ.first << " | " << own.differ.second << " |\n";
  one_sided_row("options", own);
  const auto& a = with.upstream.agents;
  const auto& b = without.upstream.agents;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size()) {
      const bool in_with = i < a.size();
      const std::string& label = in_with ? a[i] : b[i];
      rows << "| it reads " << label << " | " << (in_with ? "yes" : "no") << " | "
           << (in_with ? "no" : "yes") << " |\n";
      continue;
    }
    const OptionDiff theirs = differing_options(*with.file, a[i], *without.file, b[i], registry);
    const std::string label = a[i] == b[i] ? a[i] : a[i] + " / " + b[i];
    rows << "| options of " << label << " (whose output it reads) that differ | "
         << theirs.differ.first << " | " << theirs.differ.second << " |\n";
    one_sided_row("options of " + label, theirs);
    // A pretraining on other graphs differs with the same options.
    const AblationSide theirs_with{with.file, a[i]};
    const AblationSide theirs_without{without.file, b[i]};
    const std::string only_with = workloads_only_in(theirs_with, theirs_without);
    const std::string only_without = workloads_only_in(theirs_without, theirs_with);
    if (only_with != "none" || only_without != "none") {
      rows << "| workloads of " << label << " only one side has | " << only_with << " | "
           << only_without << " |\n";
    }
    // So does one that picked its checkpoint on other graphs.
    const auto validation_with = validation_graphs(*with.file, a[i]);
    const auto validation_without = validation_graphs(*without.file, b[i]);
    if (validation_with && validation_without && *validation_with != *validation_without) {
      rows << "| validation graphs of " << label << " only one side has | "
           << only_in(*validation_with, *validation_without) << " | "
           << only_in(*validation_without, *validation_with) << " |\n";
    }
  }
  return rows.str();
}

}  // namespace

std::vector<AblationRow> ablation_rows(const AblationSide& with, const AblationSide& without) {
  const auto a = by_workload(with);
  const auto b = by_workload(without);
  // The workloads in the order `with`'s file ran them.
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const auto& r : with.file->results) {
    if (r.key.agent == with.agent && seen.insert(r.key.workload).second) {
      order.push_back(r.key.workload);
    }
  }
  std::vector<AblationRow> rows;
  for (const auto& workload : order) {
    const auto other = b.find(workload);
    if (other == b.end()) continue;
    AblationRow row;
    row.workload = workload;
    for (const auto& [seed, result] : a.at(workload)) {
      const auto match = other->second.find(seed);
      if (match == other->second.end()) continue;
      row.seeds.push_back(seed);
      row.with_s += result->best_step_time_s;
      row.without_s += match->second->best_step_time_s;
      row.with_by_seed_s.push_back(result->best_step_time_s);
      row.without_by_seed_s.push_back(match->second->best_step_time_s);
      row.oom_by_seed.push_back(result->oom || match->second->oom);
      row.with_samples += static_cast<double>(result->samples);
      row.without_samples += static_cast<double>(match->second->samples);
      row.oom = row.oom || result->oom || match->second->oom;
    }
    if (row.seeds.empty()) continue;
    const auto n = static_cast<double>(row.seeds.size());
    row.with_s /= n;
    row.without_s /= n;
    row.with_samples /= n;
    row.without_samples /= n;
    rows.push_back(std::move(row));
  }
  return rows;
}

Upstream upstream_of(const ResultsFile& file, const std::string& agent,
                     const agents::AgentRegistry& registry) {
  const RunResult* reader = first_result(file, agent);
  if (reader == nullptr || !registry.contains(reader->agent_type)) return {};
  Upstream out;
  for (const auto& spec : registry.info(reader->agent_type).artifacts.consumes) {
    if (reader->options.count(spec.option) > 0) continue;  // the config named its own file
    // The producer of the kind that comes first in the job order.
    const RunResult* first = nullptr;
    for (const auto& r : file.results) {
      if (!registry.contains(r.agent_type)) continue;
      const auto& produces = registry.info(r.agent_type).artifacts.produces;
      const bool producer = std::any_of(produces.begin(), produces.end(),
                                        [&](const auto& p) { return p.kind == spec.kind; });
      if (producer && (first == nullptr || r.order < first->order)) first = &r;
    }
    if (first == nullptr) continue;
    out.options.push_back(spec.option);
    if (std::find(out.agents.begin(), out.agents.end(), first->key.agent) == out.agents.end()) {
      out.agents.push_back(first->key.agent);
    }
  }
  return out;
}

std::string render_ablation(const AblationSide& with, const AblationSide& without,
                            const std::string& regenerate, const agents::AgentRegistry* registry) {
  const auto rows = ablation_rows(with, without);
  std::ostringstream page;
  page << "# Ablation: " << with.agent << " against " << without.agent << "\n\n"
       << "<!-- Generated by gopt ablation from two results files; do not edit by hand. -->\n\n"
       << "Made with `" << regenerate << "`. Mean simulated step time over the seeds both "
       << "sides have, per workload; change: with against without (negative: faster).\n\n"
       << "| | with | without |\n|---|---|---|\n"
       << "| file | `" << portable_path(with.file->path) << "` | `"
       << portable_path(without.file->path) << "` |\n"
       << "| experiment | " << with.file->metadata.experiment << " | "
       << without.file->metadata.experiment << " |\n"
       << "| agent | " << with.agent << " | " << without.agent << " |\n"
       << option_rows(with, without, registry) << "| revisions | " << revisions(with, rows) << " | "
       << revisions(without, rows) << " |\n\n";
  if (rows.empty()) {
    page << "No workload has results of both agents at a common seed.\n";
    return page.str();
  }
  page << "| workload | seeds | without (ms) | with (ms) | change | change per seed | samples "
          "without | samples with |\n|:---|:---|---:|---:|---:|:---|---:|---:|\n";
  double log_sum = 0;
  int compared = 0, faster = 0, level = 0, slower = 0;
  for (const auto& row : rows) {
    std::vector<std::string> seeds;
    for (auto s : row.seeds) seeds.push_back(std::to_string(s));
    std::string change = "OOM";
    if (!row.oom) {
      const double c = row.with_s / row.without_s - 1;
      change = percent(c);
      log_sum += std::log(row.with_s / row.without_s);
      ++compared;
      (c < -kLevel ? faster : c > kLevel ? slower : level) += 1;
    }
    std::vector<std::string> per_seed;
    for (std::size_t i = 0; i < row.seeds.size(); ++i) {
      per_seed.push_back(row.oom_by_seed[i]
                             ? "OOM"
                             : percent(row.with_by_seed_s[i] / row.without_by_seed_s[i] - 1));
    }
    page << "| " << row.workload << " | " << core::join(seeds) << " | "
         << fixed(1e3 * row.without_s, 1) << " | " << fixed(1e3 * row.with_s, 1) << " | " << change
         << " | " << core::join(per_seed) << " | " << fixed(row.without_samples, 0) << " | "
         << fixed(row.with_samples, 0) << " |\n";
  }
  page << "\nSummary: " << with.agent << " with the change against " << without.agent
       << " without it: ";
  if (compared == 0) {
    page << "no workload where both fit in memory.\n";
    return page.str();
  }
  page << percent(std::exp(log_sum / compared) - 1) << " in the geometric mean of the step "
       << "time over " << compared << " workloads; faster on " << faster << ", level (within "
       << fixed(100 * kLevel, 1) << "%) on " << level << ", slower on " << slower << ".\n";
  return page.str();
}

}  // namespace gopt::experiments
