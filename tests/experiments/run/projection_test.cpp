// Projected run times (`gopt run --dry-run --costs`): measured job costs scaled to a plan's
// budgets, and the makespan of longest-first list scheduling with waits.
#include "experiments/run/projection.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::experiments {
namespace {

constexpr double kFixed = JobTimeModel::kLearnerFixedOps;

// A plan of jobs on their own workloads, built by hand (build_plan needs a registry).
struct HandPlan {
  std::vector<WorkloadConfig> workloads;
  std::vector<AgentConfig> agents;
  Plan plan;

  // Job j runs agent `agents[a]` on workload `workloads[w]`, seed 1.
  void add_job(std::size_t w, std::size_t a, bool learner, std::ptrdiff_t waits_for = -1) {
    PlannedJob job;
    job.agent = &agents[a];
    job.learner = learner;
    job.waits_for = waits_for;
    job.rows.push_back(
        PlannedRow{ResultKey{workloads[w].name, agents[a].name, 1}, 0, &workloads[w]});
    plan.jobs.push_back(job);
  }
};

WorkloadConfig workload(const std::string& name) {
  WorkloadConfig w;
  w.name = name;
  w.graph = name;
  return w;
}

RunResult measured(const std::string& workload, const std::string& agent, std::int64_t nodes,
                   std::size_t updates, double wall_s) {
  RunResult r;
  r.key = ResultKey{workload, agent, 1};
  r.num_nodes = nodes;
  r.learner = updates > 0;
  r.learning_curve.resize(updates);
  r.wall_s = wall_s;
  return r;
}

Plan jobs_taking(std::size_t n, std::vector<std::ptrdiff_t> waits = {}) {
  Plan plan;
  plan.jobs.resize(n);
  for (std::size_t j = 0; j < waits.size(); ++j) plan.jobs[j].waits_for = waits[j];
  return plan;
}

TEST(ProjectionTest, LongestFirstOnParallelWorkers) {
  const Plan plan = jobs_taking(3);
  // 3 on one worker, 2 then 2 on the other.
  EXPECT_DOUBLE_EQ(list_schedule_makespan(plan, {2, 3, 2}, 2), 4);
  EXPECT_DOUBLE_EQ(list_schedule_makespan(plan, {2, 3, 2}, 1), 7);
  EXPECT_DOUBLE_EQ(list_schedule_makespan(plan, {2, 3, 2}, 8), 3);
}

TEST(ProjectionTest, AConsumerStartsWhenItsProducerEnds) {
  // Job 0 (5 s) writes what job 1 (1 s) reads; job 2 takes 4 s. The second worker is free
  // at 4 s but job 1 is ready only at 5 s.
  const Plan plan = jobs_taking(3, {-1, 0, -1});
  EXPECT_DOUBLE_EQ(list_schedule_makespan(plan, {5, 1, 4}, 2), 6);
  EXPECT_DOUBLE_EQ(list_schedule_makespan(plan, {5, 1, 4}, 1), 10);
}

TEST(ProjectionTest, MeasuredCostsScaleWithUpdatesAndOps) {
  HandPlan h;
  h.workloads = {workload("a"), workload("b")};
  h.agents.resize(2);
  h.agents[0].name = "go_one";
  h.agents[0].budget.max_steps = 20;
  h.agents[1].name = "metis";
  h.add_job(0, 0, true);   // measured on a: twice its 10 updates
  h.add_job(1, 0, true);   // go_one measured on a only: its rate per unit of work
  h.add_job(1, 1, false);  // metis measured on b
  const std::vector<RunResult> results = {measured("a", "go_one", 100, 10, 10.0),
                                          measured("b", "metis", 200, 0, 0.5)};
  const Projection p = project_run(h.plan, results, 2);
  ASSERT_EQ(p.job_s.size(), 3U);
  EXPECT_DOUBLE_EQ(p.job_s[0], 20.0);
  EXPECT_DOUBLE_EQ(p.job_s[1], 10.0 / ((100 + kFixed) * 10) * ((200 + kFixed) * 20));
  EXPECT_DOUBLE_EQ(p.job_s[2], 0.5);
  EXPECT_DOUBLE_EQ(p.agent_s.at("go_one"), p.job_s[0] + p.job_s[1]);
  EXPECT_DOUBLE_EQ(p.work_s, p.job_s[0] + p.job_s[1] + p.job_s[2]);
  EXPECT_DOUBLE_EQ(p.makespan_s, p.job_s[1]);  // the longest job alone on one worker
  EXPECT_EQ(p.measured_jobs, 2U);
}

// A pretraining job writes one row per training graph, each timed as it is written, so
// their wall times differ in the last digits: they are still one job, counted once.
TEST(ProjectionTest, TheRowsOfATrainingSetJobAreOneJob) {
  HandPlan h;
  h.workloads = {workload("a"), workload("b")};
  h.plan.training = {&h.workloads[0], &h.workloads[1]};
  h.agents.resize(1);
  h.agents[0].name = "go_pretrain";
  h.agents[0].budget.max_steps = 20;
  PlannedJob job;
  job.agent = &h.agents[0];
  job.learner = true;
  job.training_set = true;
  for (auto& w : h.workloads)
    job.rows.push_back(PlannedRow{ResultKey{w.name, "go_pretrain", 1}, 0, &w});
  h.plan.jobs.push_back(job);
  const std::vector<RunResult> results = {measured("a", "go_pretrain", 100, 10, 700.1),
                                          measured("b", "go_pretrain", 300, 10, 700.2)};
  const Projection p = project_run(h.plan, results, 1);
  EXPECT_EQ(p.measured_jobs, 1U);
  ASSERT_EQ(p.job_s.size(), 1U);
  EXPECT_DOUBLE_EQ(p.job_s[0], 2 * 700.2);  // the same graphs, twice the updates
}

// A run resumed into a file that has no result for some workload yet (a long run stopped
// part way): that workload's op count comes from the plan's graphs, and the agent's rate
// from its other workloads.
TEST(ProjectionTest, AWorkloadWithoutResultsTakesItsOpCountFromThePlan) {
  HandPlan h;
  h.workloads = {workload("rnnlm_2"), workload("gnmt_8")};
  h.agents.resize(1);
  h.agents[0].name = "go_one";
  h.agents[0].budget.max_steps = 10;
  h.add_job(1, 0, true);  // go_one on gnmt_8
  const std::vector<RunResult> results = {measured("rnnlm_2", "go_one", 100, 10, 1.0)};
  const Projection small = project_run(h.plan, results, 1, "costs.h5", {{"gnmt_8", 1000.0}});
  const Projection large = project_run(h.plan, results, 1, "costs.h5", {{"gnmt_8", 4000.0}});
  ASSERT_EQ(small.job_s.size(), 1U);
  EXPECT_GT(small.job_s[0], 1.0);  // ten times rnnlm_2's ops, at its rate
  EXPECT_GT(large.job_s[0], small.job_s[0]);
  // The measured op count of a workload in the file is kept when the plan has it too.
  const Projection same =
      project_run(h.plan, results, 1, "costs.h5", {{"gnmt_8", 1000.0}, {"rnnlm_2", 5.0}});
  EXPECT_DOUBLE_EQ(same.job_s[0], small.job_s[0]);
}

TEST(ProjectionTest, AWorkloadWithoutMeasurementsIsAnErrorNamingTheFile) {
  HandPlan h;
  h.workloads = {workload("gnmt_8")};
  h.agents.resize(1);
  h.agents[0].name = "go_one";
  h.add_job(0, 0, true);
  try {
    (void)project_run(h.plan, {measured("rnnlm_2", "go_one", 100, 10, 1.0)}, 1, "costs.h5");
    FAIL() << "no error";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("costs.h5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gnmt_8"), std::string::npos) << e.what();
  }
}

// `gopt run CONFIG --dry-run --costs RESULTS.h5`: the projection follows the plan, from a
// file an earlier run wrote; --costs without --dry-run is a usage error.
TEST(ProjectionTest, DryRunProjectsFromAResultsFile) {
  const std::string gopt = GOPT_BINARY;
  const std::filesystem::path dir = gopt::testing::make_temp_dir("gopt_projection");
  const auto config = dir / "p.yaml";
  std::ofstream(config) << "name: p\nhardware: p100x2_pcie\nseeds: [1, 2]\n"
                           "workloads: [transformer_xl_2]\nagents: [single_device, metis]\n";
  const auto costs = dir / "costs.h5";
  auto r =
      gopt::testing::run_command(gopt + " run " + config.string() + " --out " + costs.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = gopt::testing::run_command(gopt + " run " + config.string() + " --dry-run --costs " +
                                 costs.string() + " --jobs 2 --ranks 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("projected from 4 measured jobs:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in 4 jobs; on 6 workers"), std::string::npos) << r.out;
  r = gopt::testing::run_command(gopt + " run " + config.string() + " --costs " + costs.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--costs requires --dry-run"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gopt::experiments
