#include "experiments/run/plan.h"

#include <algorithm>
#include <limits>
#include <ostream>
#include <set>

#include "agents/registry.h"
#include "core/errors.h"
#include "core/strings.h"
#include "core/units.h"

namespace gopt::experiments {
namespace {

using agents::AgentArtifacts;
using agents::ArtifactSpec;
using agents::WorkloadScope;

std::string seed_text(std::uint64_t seed) { return "seed " + std::to_string(seed); }

PlannedJob job_of(const AgentConfig& agent, std::uint64_t seed, bool training_set) {
  PlannedJob job;
  job.agent = &agent;
  job.seed = seed;
  job.training_set = training_set;
  return job;
}

// Whether agent `a` has a row on workload `w` (validation workloads have none).
bool covers(const AgentArtifacts& a, const WorkloadConfig& w, bool any_held_out) {
  if (a.workloads == WorkloadScope::kTrainingSet) return !w.held_out;
  if (a.workloads == WorkloadScope::kHeldOut) return w.held_out || !any_held_out;
  return true;
}

// The jobs of `config` with their rows, in the order they are first taken: training-set
// jobs (per agent, then seed), then one job per row in config order (workload, agent,
// seed). A training-set agent with no training workload has no job.
void add_jobs(const ExperimentConfig& config, const agents::AgentRegistry& registry, Plan& plan) {
  const bool any_held_out = std::any_of(config.workloads.begin(), config.workloads.end(),
                                        [](const WorkloadConfig& w) { return w.held_out; });
  std::vector<PlannedJob> sets;  // per (agent, seed), agent-major
  std::vector<PlannedJob> singles;
  for (const auto& a : config.agents) {
    for (auto seed : config.seeds) sets.push_back(job_of(a, seed, true));
  }
  std::int64_t order = 0;
  for (const auto& w : config.workloads) {
    if (w.pretrain_validation) continue;  // only training-set jobs read it, to select
    for (std::size_t ai = 0; ai < config.agents.size(); ++ai) {
      const AgentConfig& a = config.agents[ai];
      const auto& declared = registry.info(a.type, config.source).artifacts;
      if (!covers(declared, w, any_held_out)) continue;
      for (std::size_t si = 0; si < config.seeds.size(); ++si) {
        PlannedRow row{{w.name, a.name, config.seeds[si]}, order++, &w};
        ++plan.total_rows;
        if (declared.workloads == WorkloadScope::kTrainingSet) {
          sets[ai * config.seeds.size() + si].rows.push_back(row);
        } else {
          singles.push_back(job_of(a, row.key.seed, false));
          singles.back().rows.push_back(row);
        }
      }
    }
  }
  for (auto* group : {&sets, &singles}) {
    for (auto& job : *group) {
      if (job.rows.empty()) continue;
      const auto& info = registry.info(job.agent->type, config.source);
      job.learner = info.learner;
      job.transfers = info.artifacts.transfers();
      job.options = job.agent->options;
      plan.jobs.push_back(std::move(job));
    }
  }
}

// The path an agent's option names for an artifact, or "" when unset.
std::string named_path(const AgentConfig& agent, const ArtifactSpec& spec) {
  const auto it = agent.options.find(spec.option);
  return it == agent.options.end() ? std::string() : it->second;
}

std::string field_of(const AgentConfig& agent, const ArtifactSpec& spec) {
  return "agents." + agent.name + ".options." + spec.option;
}

std::size_t artifact_at(Plan& plan, const std::string& kind, const std::string& path) {
  for (std::size_t i = 0; i < plan.artifacts.size(); ++i) {
    if (plan.artifacts[i].path == path) return i;
  }
  plan.artifacts.push_back(PlannedArtifact{kind, path, -1, {}});
  return plan.artifacts.size() - 1;
}

// Each producing job's artifacts; two jobs writing one file are an error.
void add_products(const agents::AgentRegistry& registry, Plan& plan) {
  const ExperimentConfig& config = *plan.config;
  for (std::size_t j = 0; j < plan.jobs.size(); ++j) {
    PlannedJob& job = plan.jobs[j];
    for (const auto& spec : registry.info(job.agent->type).artifacts.produces) {
      std::string path = named_path(*job.agent, spec);
      if (path.empty())
        path = default_artifact_path(config, *job.agent, job.seed, spec.file_suffix);
      const auto a = artifact_at(plan, spec.kind, path);
      if (plan.artifacts[a].producer >= 0) {
        const auto& first = plan.jobs[static_cast<std::size_t>(plan.artifacts[a].producer)];
        throw core::InputError(config.source, field_of(*job.agent, spec),
                               "two jobs write the " + spec.kind + " '" + path +
                                   "': " + first.label() + " and " + job.label() +
                                   "; give each producer and seed its own file (or leave '" +
                                   spec.option + "' unset: one file per agent and seed)");
      }
      plan.artifacts[a].producer = static_cast<std::ptrdiff_t>(j);
      job.produces.push_back(a);
      job.options[spec.option] = path;
    }
  }
}

// The producers that agent types in `config` declare for `kind`, for messages.
std::vector<std::string> producers_of(const agents::AgentRegistry& registry,
                                      const std::string& kind) {
  std::vector<std::string> names;
  for (const auto& info : registry.agents()) {
    for (const auto& spec : info.artifacts.produces) {
      if (spec.kind == kind) names.push_back(info.name);
    }
  }
  return names;
}

// The file a consumer reads when its option names none: the first producing agent's of
// the same kind and seed. Throws when no agent of the config produces that kind.
std::string default_source(const agents::AgentRegistry& registry, const ExperimentConfig& config,
                           const PlannedJob& job, const ArtifactSpec& wanted) {
  for (const auto& a : config.agents) {
    for (const auto& spec : registry.info(a.type).artifacts.produces) {
      if (spec.kind != wanted.kind) continue;
      const std::string named = named_path(a, spec);
      return named.empty() ? default_artifact_path(config, a, job.seed, spec.file_suffix) : named;
    }
  }
  const auto producers = producers_of(registry, wanted.kind);
  throw core::InputError(
      config.source, "agents." + job.agent->name,
      "agent '" + job.agent->type + "' reads a " + wanted.kind +
          " and no agent of this config produces one; add a producer (" +
          (producers.empty() ? std::string("none is registered") : core::join(producers)) +
          ") or name a file in its '" + wanted.option + "' option");
}

// Each consuming job's artifacts, and the job it waits for.
void add_consumers(const agents::AgentRegistry& registry, Plan& plan) {
  const ExperimentConfig& config = *plan.config;
  for (std::size_t j = 0; j < plan.jobs.size(); ++j) {
    PlannedJob& job = plan.jobs[j];
    for (const auto& spec : registry.info(job.agent->type).artifacts.consumes) {
      std::string path = named_path(*job.agent, spec);
      if (path.empty()) path = default_source(registry, config, job, spec);
      const auto a = artifact_at(plan, spec.kind, path);
      plan.artifacts[a].consumers.push_back(j);
      job.consumes.push_back(a);
      job.options[spec.option] = path;
    }
  }
}

// The jobs whose artifacts job `j` reads (itself excluded only if it reads its own).
std::vector<std::size_t> producers_read_by(const Plan& plan, std::size_t j) {
  std::vector<std::size_t> out;
  for (const auto a : plan.jobs[j].consumes) {
    const auto p = plan.artifacts[a].producer;
    if (p >= 0 && std::find(out.begin(), out.end(), static_cast<std::size_t>(p)) == out.end()) {
      out.push_back(static_cast<std::size_t>(p));
    }
  }
  return out;
}

// The jobs in an order where each comes after the jobs it reads from, otherwise in their
// current order; throws naming the jobs of a cycle when there is none.
std::vector<std::size_t> execution_order(const Plan& plan) {
  const std::size_t n = plan.jobs.size();
  std::vector<std::vector<std::size_t>> reads(n);
  for (std::size_t j = 0; j < n; ++j) reads[j] = producers_read_by(plan, j);
  std::vector<char> placed(n, 0);
  std::vector<std::size_t> order;
  while (order.size() < n) {
    std::size_t next = n;
    for (std::size_t j = 0; j < n && next == n; ++j) {
      const bool ready = !placed[j] && std::all_of(reads[j].begin(), reads[j].end(),
                                                   [&](std::size_t p) { return placed[p] != 0; });
      if (ready) next = j;
    }
    if (next == n) break;
    placed[next] = 1;
    order.push_back(next);
  }
  if (order.size() == n) return order;
  // Every job left waits for another job left: walk the waits until one repeats.
  std::size_t j =
      static_cast<std::size_t>(std::find(placed.begin(), placed.end(), 0) - placed.begin());
  std::vector<std::size_t> path;
  while (std::find(path.begin(), path.end(), j) == path.end()) {
    path.push_back(j);
    j = *std::find_if(reads[j].begin(), reads[j].end(), [&](std::size_t p) { return !placed[p]; });
  }
  std::string cycle;
  for (auto it = std::find(path.begin(), path.end(), j); it != path.end(); ++it) {
    cycle += plan.jobs[*it].label() + " -> ";
  }
  throw core::InputError(plan.config->source, "agents." + plan.jobs[j].agent->name,
                         "jobs wait for each other's artifacts: " + cycle + plan.jobs[j].label() +
                             "; no order can run them");
}

// The waits the runner executes (experiments/run/work_queue.h): a job reads the artifacts of at
// most one job, which reads none itself. Throws for any other plan.
void set_waits(Plan& plan) {
  for (std::size_t j = 0; j < plan.jobs.size(); ++j) {
    const auto reads = producers_read_by(plan, j);
    PlannedJob& job = plan.jobs[j];
    const auto problem = [&](const std::string& what) {
      throw core::InputError(plan.config->source, "agents." + job.agent->name,
                             job.label() + " " + what +
                                 "; the runner runs a job after at most "
                                 "one other, which waits for none");
    };
    if (reads.size() > 1) {
      problem("reads the artifacts of " + std::to_string(reads.size()) + " jobs");
    }
    if (reads.empty()) continue;
    if (!producers_read_by(plan, reads.front()).empty()) {
      problem("reads the artifact of " + plan.jobs[reads.front()].label() +
              ", which itself waits for another job");
    }
    job.waits_for = static_cast<std::ptrdiff_t>(reads.front());
  }
}

// `plan` with its jobs in `order` (old indices), indices into them renumbered.
Plan reordered(const Plan& plan, const std::vector<std::size_t>& order) {
  std::vector<std::ptrdiff_t> new_index(plan.jobs.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = static_cast<std::ptrdiff_t>(i);
  }
  const auto renumber = [&](std::ptrdiff_t old) {
    return old < 0 ? old : new_index[static_cast<std::size_t>(old)];
  };
  Plan out = plan;
  out.jobs.clear();
  for (const auto i : order) {
    out.jobs.push_back(plan.jobs[i]);
    out.jobs.back().waits_for = renumber(plan.jobs[i].waits_for);
  }
  for (auto& a : out.artifacts) {
    a.producer = renumber(a.producer);
    std::vector<std::size_t> consumers;
    for (const auto c : a.consumers) {
      if (new_index[c] >= 0) consumers.push_back(static_cast<std::size_t>(new_index[c]));
    }
    std::sort(consumers.begin(), consumers.end());
    a.consumers = consumers;
  }
  return out;
}

std::string budget_text(const agents::TrainBudget& b) {
  std::string s = std::to_string(b.max_steps) + " updates";
  if (b.max_samples != std::numeric_limits<std::int64_t>::max()) {
    s += ", " + std::to_string(b.max_samples) + " samples";
  }
  if (b.max_seconds != std::numeric_limits<double>::infinity()) {
    s += ", " + core::format_seconds(b.max_seconds);
  }
  return s;
}

std::vector<std::string> names_of(const std::vector<const WorkloadConfig*>& workloads) {
  std::vector<std::string> names;
  for (const auto* w : workloads) names.push_back(w->name);
  return names;
}

// One job's lines of the --dry-run listing.
void print_job(const Plan& plan, std::size_t j, const std::string& estimate, std::ostream& out) {
  const PlannedJob& job = plan.jobs[j];
  out << "  " << j + 1 << ". " << job.label();
  if (job.training_set) {
    out << ": trains on " << core::join(names_of(plan.training));
    if (!plan.validation.empty()) out << ", selects on " << core::join(names_of(plan.validation));
    out << "; " << job.rows.size() << (job.rows.size() == 1 ? " row" : " rows");
  }
  if (job.learner)
    out << (job.training_set ? "; " : ": ") << "budget " << budget_text(job.agent->budget);
  out << estimate << "\n";
  for (const auto a : job.produces) {
    out << "       writes " << plan.artifacts[a].kind << " " << plan.artifacts[a].path << "\n";
  }
  for (const auto a : job.consumes) {
    const auto& artifact = plan.artifacts[a];
    out << "       reads " << artifact.kind << " " << artifact.path
        << (artifact.producer >= 0 ? " (after job " + std::to_string(artifact.producer + 1) + ")"
                                   : std::string(" (an existing file)"))
        << "\n";
  }
}

}  // namespace

std::string PlannedJob::label() const {
  if (training_set) return agent->name + " (" + seed_text(seed) + ")";
  return rows.empty() ? agent->name : rows.front().key.text();
}

std::string default_artifact_path(const ExperimentConfig& config, const AgentConfig& agent,
                                  std::uint64_t seed, const std::string& suffix) {
  std::string stem = config.output;
  const std::string h5 = ".h5";
  if (stem.size() > h5.size() && stem.compare(stem.size() - h5.size(), h5.size(), h5) == 0) {
    stem.resize(stem.size() - h5.size());
  }
  return stem + "." + agent.name + ".seed" + std::to_string(seed) + suffix;
}

Plan build_plan(const ExperimentConfig& config, const agents::AgentRegistry& registry) {
  Plan plan;
  plan.config = &config;
  for (const auto& w : config.workloads) {
    if (w.pretrain_validation) {
      plan.validation.push_back(&w);
    } else if (!w.held_out) {
      plan.training.push_back(&w);
    }
  }
  add_jobs(config, registry, plan);
  add_products(registry, plan);
  add_consumers(registry, plan);
  plan = reordered(plan, execution_order(plan));
  set_waits(plan);
  return plan;
}

Plan without_done(const Plan& plan, const std::vector<ResultKey>& done) {
  const std::set<ResultKey> skip(done.begin(), done.end());
  Plan out = plan;
  std::vector<std::size_t> kept;
  for (std::size_t j = 0; j < out.jobs.size(); ++j) {
    auto& rows = out.jobs[j].rows;
    const auto before = rows.size();
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const PlannedRow& r) { return skip.count(r.key) > 0; }),
               rows.end());
    out.done_rows += static_cast<std::int64_t>(before - rows.size());
    if (!rows.empty()) kept.push_back(j);
  }
  return reordered(out, kept);  // a dropped job's artifact is read from its file
}

JobCost job_cost(const Plan& plan, const PlannedJob& job,
                 const std::map<std::string, double>& ops_of) {
  const auto ops = [&](const WorkloadConfig* w) {
    const auto it = ops_of.find(w->name);
    return it == ops_of.end() ? 0.0 : it->second;
  };
  if (job.training_set) {
    double nodes = 0;
    for (const auto* w : plan.training) nodes += ops(w);
    return JobCost{job.agent->name, nodes, true, job.agent->budget.max_steps};
  }
  return JobCost{job.agent->name, ops(job.rows.front().workload), job.learner,
                 job.learner ? job.agent->budget.max_steps : 0};
}

void print_plan(const Plan& plan, const std::map<std::string, double>& ops_of, std::ostream& out) {
  const ExperimentConfig& config = *plan.config;
  std::int64_t rows = 0;
  for (const auto& job : plan.jobs) rows += static_cast<std::int64_t>(job.rows.size());
  out << "plan of " << config.name << " (" << config.source << "): " << plan.jobs.size()
      << (plan.jobs.size() == 1 ? " job, " : " jobs, ") << rows << " result rows";
  if (plan.done_rows > 0) out << " (" << plan.done_rows << " more already in the file)";
  out << ", " << plan.artifacts.size() << (plan.artifacts.size() == 1 ? " artifact" : " artifacts")
      << "; jobs in the order they are taken:\n";
  const JobTimeModel prior;  // nothing has run: the cost model's prior
  double total_s = 0;
  for (std::size_t j = 0; j < plan.jobs.size(); ++j) {
    std::string estimate;
    if (!ops_of.empty()) {
      const double s = prior.expected_s(job_cost(plan, plan.jobs[j], ops_of));
      total_s += s;
      estimate = "; about " + core::format_seconds(s);
    }
    print_job(plan, j, estimate, out);
  }
  if (!ops_of.empty()) {
    out << "estimated time: " << core::format_seconds(total_s)
        << " of work (the job time model's prior; --jobs N divides it)\n";
  }
}

}  // namespace gopt::experiments
