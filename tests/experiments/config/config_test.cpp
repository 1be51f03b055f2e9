// Experiment configs: every kind of problem reported at once with file:line:column,
// unknown keys with did-you-mean, retired keys with their reason, planned agents, and --set
// overrides.
#include "experiments/config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "agents/registry.h"
#include "datasets/workload_registry.h"

namespace gopt::experiments {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() {
    agents::register_builtin_agents(agent_registry_);
    datasets::register_builtin_workloads(workload_registry_);
  }

  ExperimentConfig parse(const std::string& text, std::vector<std::string> overrides = {}) {
    return parse_config(text, "exp.yaml", GOPT_TEST_DATA_DIR,
                        ConfigLoadOptions()
                            .with_agent_registry(&agent_registry_)
                            .with_workload_registry(&workload_registry_)
                            .with_overrides(std::move(overrides)));
  }

  // The problems of a config that must fail to load.
  std::vector<ConfigProblem> problems(const std::string& text,
                                      std::vector<std::string> overrides = {}) {
    try {
      (void)parse(text, std::move(overrides));
    } catch (const ConfigError& e) {
      return e.problems();
    }
    ADD_FAILURE() << "config loaded without errors:\n" << text;
    return {};
  }

  agents::AgentRegistry agent_registry_;
  datasets::WorkloadRegistry workload_registry_;
};

const char* kGood = R"(name: demo
hardware: p100x4_pcie
seeds: [1, 2]
workloads:
  - transformer_xl_2
  - name: tiny
    graph: graphs/../../../datasets/graphs/mlp_tiny.json
  - graph: rnnlm_2
    set: {seq_len: 10}
agents:
  - single_device
  - name: hdp
    options: {learning_rate: 0.05}
    budget: {steps: 7, samples: 100}
  - go_multitask
)";

TEST_F(ConfigTest, LoadsAValidConfig) {
  auto c = parse(kGood);
  EXPECT_EQ(c.name, "demo");
  EXPECT_EQ(c.hardware, "p100x4_pcie");
  EXPECT_EQ(c.seeds, (std::vector<std::uint64_t>{1, 2}));
  ASSERT_EQ(c.workloads.size(), 3u);
  EXPECT_EQ(c.workloads[0].name, "transformer_xl_2");
  EXPECT_EQ(c.workloads[1].name, "tiny");
  EXPECT_TRUE(std::filesystem::exists(c.workloads[1].graph)) << c.workloads[1].graph;
  EXPECT_EQ(c.workloads[2].overrides.at("seq_len"), "10");
  ASSERT_EQ(c.agents.size(), 3u);
  EXPECT_EQ(c.agents[1].type, "hdp");
  EXPECT_EQ(c.agents[1].options.at("learning_rate"), "0.05");
  EXPECT_EQ(c.agents[1].budget.max_steps, 7);
  EXPECT_EQ(c.agents[1].budget.max_samples, 100);
  EXPECT_EQ(c.agents[2].type, "go_multitask");
  EXPECT_EQ(c.output, "results/demo.h5");
  EXPECT_NE(c.resolved_yaml.find("learning_rate"), std::string::npos);
}

TEST_F(ConfigTest, SeedAndRepeatsExpandToSeeds) {
  auto c = parse(R"(name: demo
hardware: p100x4_pcie
seed: 5
repeats: 3
workloads: [transformer_xl_2]
agents: [single_device]
)");
  EXPECT_EQ(c.seeds, (std::vector<std::uint64_t>{5, 6, 7}));
}

// Seeds are jobs: a count past 10000 is refused, not allocated (32147483648 ran the process
// out of memory; fuzz_experiment_yaml, tests/fuzz/corpus/experiment_yaml/regression-*).
TEST_F(ConfigTest, RepeatsAreBoundedAndSeedsStayRepresentable) {
  const std::string rest = "workloads: [transformer_xl_2]\nagents: [single_device]\n";
  auto p = problems("name: demo\nhardware: p100x4_pcie\nrepeats: 32147483648\n" + rest);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].field, "repeats");
  EXPECT_EQ(p[0].message, "expected a positive integer up to 10000, found '32147483648'");
  p = problems("name: demo\nhardware: p100x4_pcie\nseed: 9223372036854775807\nrepeats: 2\n" + rest);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].field, "seed");
  EXPECT_EQ(p[0].message, "seed + repeats must stay below 2^63");
  auto c = parse("name: demo\nhardware: p100x4_pcie\nrepeats: 10000\n" + rest);
  EXPECT_EQ(c.seeds.size(), 10000u);
}

TEST_F(ConfigTest, ReportsEveryProblemAtOnceWithLineAndColumn) {
  auto p = problems(R"(name: demo
hardwre: p100x4_pcie
seeds: [1, -2]
workloads:
  - transformer_xl_3
  - graph: rnnlm_2
    set: {seq_lenn: 10}
agents:
  - name: hdp
    options: {learning_rat: 0.1, groups: many}
    budget: {steps: 0, sconds: 5}
  - metiss
  - name: metis
    budget: {steps: 5}
)");
  std::vector<std::string> texts;
  for (const auto& x : p) texts.push_back(x.text());
  auto has = [&](const std::string& needle) {
    for (const auto& t : texts) {
      if (t.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  std::string all;
  for (const auto& t : texts) all += t + "\n";
  EXPECT_TRUE(has("exp.yaml:2:1: hardwre: unknown key 'hardwre' (did you mean 'hardware'?)"))
      << all;
  EXPECT_TRUE(has("exp.yaml:1:1: hardware: missing required key 'hardware'")) << all;
  EXPECT_TRUE(has("exp.yaml:3:12: seeds[1]: expected a non-negative integer, found '-2'")) << all;
  EXPECT_TRUE(
      has("exp.yaml:5:5: workloads[0]: expected a suite workload name or a graph file, "
          "found 'transformer_xl_3'"))
      << all;
  EXPECT_TRUE(has("(did you mean 'transformer_xl_2'?")) << all;
  EXPECT_TRUE(
      has("exp.yaml:7:11: workloads[1].set.seq_lenn: workload 'rnnlm_2' has no "
          "hyperparameter 'seq_lenn' (did you mean 'seq_len'?)"))
      << all;
  EXPECT_TRUE(
      has("exp.yaml:10:15: agents[0].options.learning_rat: agent 'hdp' has no option "
          "'learning_rat' (did you mean 'learning_rate'?)"))
      << all;
  EXPECT_TRUE(has("agents[0].options.groups: expected an integer, found 'many'")) << all;
  EXPECT_TRUE(
      has("exp.yaml:11:21: agents[0].budget.steps: expected a positive integer (policy "
          "updates), found '0'"))
      << all;
  EXPECT_TRUE(has("agents[0].budget.sconds: unknown key 'sconds' (did you mean 'seconds'?)"))
      << all;
  EXPECT_TRUE(has("exp.yaml:12:5: agents[1].name: unknown agent 'metiss' (did you mean 'metis'?)"))
      << all;
  EXPECT_TRUE(has("; available: ")) << all;
  EXPECT_TRUE(has("agents[2].budget: agent 'metis' does not learn")) << all;
  EXPECT_EQ(p.size(), 11u) << all;
}

TEST_F(ConfigTest, MessageListsProblemsOnePerLine) {
  try {
    (void)parse("name: demo\nworkloads: 3\n");
    FAIL();
  } catch (const ConfigError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("exp.yaml: 3 problems in the config:\n  exp.yaml:"), std::string::npos)
        << what;
    EXPECT_NE(what.find("workloads: expected a non-empty list of workloads"), std::string::npos)
        << what;
    EXPECT_NE(what.find("found '3'"), std::string::npos) << what;
  }
}

TEST_F(ConfigTest, WrongTypesSayWhatWasFound) {
  auto p = problems(R"(name: [a, b]
hardware: {name: x}
seeds: 3
workloads: [transformer_xl_2]
agents:
  - {name: hdp, budget: {steps: 5, seconds: soon}}
  - {name: random, options: {seed: 1.5}}
table: placment
)");
  std::string all;
  for (const auto& x : p) all += x.text() + "\n";
  EXPECT_NE(all.find("exp.yaml:1:7: name: expected a string, found a list"), std::string::npos)
      << all;
  EXPECT_NE(all.find("exp.yaml:2:11: hardware: expected a string, found a mapping"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("seeds: expected a non-empty list of non-negative integers, found '3'"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("budget.seconds: expected a positive number of seconds, found 'soon'"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("options.seed: expected an integer, found '1.5'"), std::string::npos) << all;
  EXPECT_NE(all.find("table: expected one of placement, generalization, multitask, validation, "
                     "found 'placment' (did you mean 'placement'?)"),
            std::string::npos)
      << all;
}

// Issue #32: these crashed (heads: 0, SIGFPE) or ran for ever; each is now a problem found
// when the config loads, before any job starts, naming the option and its range.
TEST_F(ConfigTest, AgentOptionsOutsideTheirRangesStopTheConfig) {
  auto p = problems(R"(name: demo
hardware: p100x2_pcie
seeds: [1]
workloads: [rnnlm_2]
agents:
  - {name: go_one, options: {heads: 0, sage_layers: 100000, attention_layers: 100000}}
  - {name: go_x, agent: go_one, options: {refine_passes: 100000, ppo_epochs: 100000}}
  - {name: hdp, options: {samples_per_step: 2147483648, device_embedding: 100000}}
  - {name: go_y, agent: go_one, options: {hidden: 64, heads: 3}}
)");
  std::string all;
  for (const auto& x : p) all += x.text() + "\n";
  for (const char* expected :
       {"agents[0].options.heads: expected an integer in [1, 64], found '0'",
        "agents[0].options.sage_layers: expected an integer in [1, 16], found '100000'",
        "agents[0].options.attention_layers: expected an integer in [1, 16], found '100000'",
        "agents[1].options.refine_passes: expected an integer in [1, 16], found '100000'",
        "agents[1].options.ppo_epochs: expected an integer in [1, 100], found '100000'",
        "agents[2].options.samples_per_step: expected an integer in [1, 4096], found "
        "'2147483648'",
        "agents[2].options.device_embedding: expected an integer in [1, 1024], found '100000'",
        "agents[3].options.heads: expected a divisor of hidden (64), found '3'"}) {
    EXPECT_NE(all.find(expected), std::string::npos) << "missing: " << expected << "\n" << all;
  }
  // --set values are checked the same way.
  auto s = problems(kGood, {"agents.hdp.options.lr_decay_steps=0"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].field, "agents[1].options.lr_decay_steps");
  EXPECT_EQ(s[0].message, "expected an integer in [1, 1000000000], found '0'");
}

TEST_F(ConfigTest, DuplicateLabelsAndMissingFiles) {
  auto p = problems(R"(name: demo
hardware: no_such_profile
workloads:
  - transformer_xl_2
  - transformer_xl_2
  - graph: missing/graph.json
agents:
  - hdp
  - hdp
)");
  std::string all;
  for (const auto& x : p) all += x.text() + "\n";
  EXPECT_NE(all.find("exp.yaml:2:11: hardware:"), std::string::npos) << all;
  EXPECT_NE(all.find("p100x4_pcie"), std::string::npos) << all;  // lists the profiles
  EXPECT_NE(all.find("workloads[1].name: workload name 'transformer_xl_2' is used twice"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("exp.yaml:6:12: workloads[2].graph:"), std::string::npos) << all;
  EXPECT_NE(all.find("agents[1].name: agent name 'hdp' is used twice"), std::string::npos) << all;
}

// Validation graphs (go_pretrain's model selection): a workload is one or held out, never
// both, and only a config with a go_pretrain agent may have them.
TEST_F(ConfigTest, ValidationWorkloads) {
  auto good = parse(R"(name: demo
hardware: p100x4_pcie
workloads:
  - transformer_xl_2
  - {graph: wavenet_2, pretrain_validation: true}
  - {graph: wavenet_4, held_out: true}
agents: [go_pretrain, go_zero_shot]
)");
  ASSERT_EQ(good.workloads.size(), 3u);
  EXPECT_FALSE(good.workloads[0].pretrain_validation);
  EXPECT_TRUE(good.workloads[1].pretrain_validation);
  EXPECT_FALSE(good.workloads[1].held_out);

  std::string all;
  for (const auto& x : problems(R"(name: demo
hardware: p100x4_pcie
workloads:
  - transformer_xl_2
  - {graph: wavenet_2, pretrain_validation: true, held_out: true}
  - {graph: wavenet_4, pretrain_validation: yes please}
agents: [hdp]
)")) {
    all += x.text() + "\n";
  }
  EXPECT_NE(all.find("exp.yaml:5:45: workloads[1].pretrain_validation: a workload is a held-out "
                     "graph or a validation graph, not both"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("workloads[2].pretrain_validation:"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:5:45: workloads[1].pretrain_validation: only go_pretrain uses "
                     "validation graphs, and this config has no go_pretrain agent"),
            std::string::npos)
      << all;
}

TEST_F(ConfigTest, NotYamlNamesTheLine) {
  auto p = problems("name: demo\nagents: [a, b\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].where.rfind("exp.yaml:", 0), 0u) << p[0].text();
  EXPECT_NE(p[0].message.find("not valid YAML"), std::string::npos) << p[0].text();
}

TEST(OverrideTest, ParsesPathAndValue) {
  auto o = parse_override("agents.hdp.budget.steps=20");
  EXPECT_EQ(o.path, (std::vector<std::string>{"agents", "hdp", "budget", "steps"}));
  EXPECT_EQ(o.value, "20");
  auto list = parse_override("seeds=[1, 2]");
  EXPECT_EQ(list.path, (std::vector<std::string>{"seeds"}));
  EXPECT_EQ(list.value, "[1, 2]");
  auto eq = parse_override("description=a=b");
  EXPECT_EQ(eq.value, "a=b");
  EXPECT_EQ(parse_override("output=").value, "");
}

TEST(OverrideTest, RejectsMalformedArguments) {
  auto message = [](const std::string& arg) {
    try {
      (void)parse_override(arg);
    } catch (const core::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("seeds"),
            "--set: seeds: expected path.to.key=value (e.g. agents.hdp.budget.steps=20), found "
            "no '='");
  EXPECT_EQ(message("=3"), "--set: =3: expected a key path before '=', found none");
  EXPECT_EQ(message("agents..steps=3"),
            "--set: agents..steps=3: empty component in key path 'agents..steps' (expected a.b.c)");
}

TEST_F(ConfigTest, OverridesApplyByPathIndexAndName) {
  auto c = parse(kGood, {"seeds=[7]", "agents.hdp.budget.steps=3", "agents.0.name=round_robin",
                         "workloads.tiny.name=mlp", "output=out/x.h5",
                         "agents.go_multitask.budget={steps: 2}"});
  EXPECT_EQ(c.seeds, (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(c.agents[0].type, "round_robin");
  EXPECT_EQ(c.agents[1].budget.max_steps, 3);
  EXPECT_EQ(c.agents[1].budget.max_samples, 100);  // untouched
  EXPECT_EQ(c.agents[2].budget.max_steps, 2);      // `- go_multitask` expanded to a mapping
  EXPECT_EQ(c.workloads[1].name, "mlp");
  EXPECT_EQ(c.output, "out/x.h5");
  EXPECT_NE(c.resolved_yaml.find("out/x.h5"), std::string::npos);
}

TEST_F(ConfigTest, OverriddenValuesAreReportedAsSetArguments) {
  auto p = problems(kGood, {"agents.hdp.budget.steps=zero", "agents.hdp.budgt.steps=1"});
  std::string all;
  for (const auto& x : p) all += x.text() + "\n";
  EXPECT_NE(all.find("--set agents.hdp.budget.steps=zero: agents[1].budget.steps: expected a "
                     "positive integer"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("--set agents.hdp.budgt.steps=1: agents[1].budgt: unknown key 'budgt' (did "
                     "you mean 'budget'?)"),
            std::string::npos)
      << all;
}

TEST_F(ConfigTest, BadOverridePathsAreErrors) {
  auto p = problems(kGood, {"agents.hpd.budget.steps=3", "agents.9.name=x", "name.x=1"});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].text(),
            "--set agents.hpd.budget.steps=3: 'agents' has no entry named 'hpd' (did you mean "
            "'hdp'?); entries: single_device, hdp, go_multitask");
  EXPECT_EQ(p[1].text(), "--set agents.9.name=x: 'agents' has 3 entries, found index 9");
  EXPECT_EQ(p[2].text(), "--set name.x=1: 'name' is a single value, cannot set 'x' below it");
}

// Issue #29: `validation:` was accepted and then skipped by `gopt run`; now it is an error
// at its key, saying where measurements are made.
TEST_F(ConfigTest, ValidationSectionIsRejectedWithWhereToMeasure) {
  auto p = problems(R"(name: demo
hardware: p100x2_pcie
workloads: [wavenet_2]
agents: [single_device]
validation:
  backends: [cpu, cuda]
  repeats: 3
)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].where, "exp.yaml:5:1");
  EXPECT_EQ(p[0].field, "validation");
  EXPECT_NE(p[0].message.find("gopt validate --profile PROFILE.yaml --backend cpu|cuda"),
            std::string::npos)
      << p[0].message;
  // Not listed as a key configs take.
  auto typo = problems(kGood + std::string("validaton: {}\n"));
  ASSERT_EQ(typo.size(), 1u);
  EXPECT_EQ(typo[0].message.find("validation"), std::string::npos) << typo[0].message;
}

// `onnx:` on a graph that is not an ONNX file was loaded without it, silently.
TEST_F(ConfigTest, OnnxSettingsOnAnotherGraphAreRejected) {
  auto p = problems(R"(name: demo
hardware: p100x2_pcie
workloads:
  - {graph: wavenet_2, onnx: {batch: 8}}
  - {graph: graphs/../../../datasets/graphs/mlp_tiny.json, onnx: {training: true}}
agents: [single_device]
)");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].text(),
            "exp.yaml:4:24: workloads[0].onnx: 'onnx' applies to .onnx files only, and "
            "'wavenet_2' is not one");
  EXPECT_EQ(p[1].where, "exp.yaml:5:60");
  EXPECT_EQ(p[1].field, "workloads[1].onnx");
}

// Issue #29: one grammar for booleans everywhere in a config (core::parse_bool): the
// top-level keys take what agent options take, and both reject the same texts.
TEST_F(ConfigTest, BooleansHaveOneGrammarInKeysAndAgentOptions) {
  auto c = parse(R"(name: demo
hardware: p100x4_pcie
workloads:
  - transformer_xl_2
  - {graph: wavenet_2, pretrain_validation: on}
  - {graph: wavenet_4, held_out: True}
agents:
  - {name: go_pretrain, options: {modulation: yes, evaluate_greedy: 0}}
  - go_zero_shot
)");
  EXPECT_TRUE(c.workloads[1].pretrain_validation);
  EXPECT_TRUE(c.workloads[2].held_out);
  EXPECT_EQ(c.agents[0].options.at("modulation"), "yes");
  auto p = problems(R"(name: demo
hardware: p100x4_pcie
workloads:
  - {graph: wavenet_4, held_out: tRue}
agents:
  - {name: go_one, options: {modulation: tRue}}
)");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].text(),
            "exp.yaml:4:34: workloads[0].held_out: expected true or false (also yes/no, on/off, "
            "1/0), found 'tRue'");
  EXPECT_EQ(p[1].text(),
            "exp.yaml:6:42: agents[0].options.modulation: expected true or false (also yes/no, "
            "on/off, 1/0), found 'tRue'");
}

// Every agent option is checked when the config loads, rules between options included,
// each problem at the option's line and column: none waits for its job to start.
TEST_F(ConfigTest, AgentOptionRulesStopTheConfigAtTheOption) {
  auto p = problems(R"(name: demo
hardware: p100x4_pcie
workloads: [rnnlm_2]
agents:
  - {name: go_multitask, options: {priority_levels: 1, default_placement: metis}}
  - name: annealing
    options:
      initial_temperature: 0.01
      final_temperature: 0.02
  - {name: go_one, options: {samples_per_step: 4, unit_samples: 8}}
  - {name: tf_default, options: {placement: single_devise}}
)");
  std::string all;
  for (const auto& x : p) all += x.text() + "\n";
  for (const char* expected :
       {"exp.yaml:5:53: agents[0].options.priority_levels: expected an integer in [2, 1024], "
        "found '1'",
        "exp.yaml:5:75: agents[0].options.default_placement: expected one of human_expert, "
        "single_device, found 'metis'",
        "exp.yaml:9:26: agents[1].options.final_temperature: expected at most "
        "initial_temperature (0.01), found '0.02'",
        "exp.yaml:10:65: agents[2].options.unit_samples: expected at most samples_per_step (4), "
        "found '8'",
        "agents[3].options.placement: expected one of human_expert, single_device, found "
        "'single_devise' (did you mean 'single_device'?)"}) {
    EXPECT_NE(all.find(expected), std::string::npos) << "missing: " << expected << "\n" << all;
  }
  EXPECT_EQ(p.size(), 5u) << all;
}

// Options that depend on the cluster are checked against the config's hardware when it
// loads, not when the job meets the cluster.
TEST_F(ConfigTest, AgentOptionsAreCheckedAgainstTheCluster) {
  auto p = problems(R"(name: demo
hardware: p100x2_pcie
workloads: [rnnlm_2]
agents:
  - {name: single_device, options: {device: 2}}
  - {name: go_one, options: {max_devices: 1}}
  - {name: fine, agent: single_device, options: {device: 1}}
)");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].text(),
            "exp.yaml:5:45: agents[0].options.device: expected a device of the cluster's 2 (0 "
            "to 1), found '2'");
  EXPECT_EQ(p[1].text(),
            "exp.yaml:6:43: agents[1].options.max_devices: expected at least the cluster's 2 "
            "devices, found '1'");
}

// A list option takes a YAML list of names as well as comma-separated text.
TEST_F(ConfigTest, ListOptionsTakeAYamlList) {
  auto c = parse(R"(name: demo
hardware: p100x4_pcie
workloads: [rnnlm_2]
agents:
  - {name: annealing, options: {starts: [metis, heft], tasks: "placement, fusion"}}
)");
  EXPECT_EQ(c.agents[0].options.at("starts"), "metis,heft");
  EXPECT_EQ(c.agents[0].options.at("tasks"), "placement, fusion");
  auto p = problems(R"(name: demo
hardware: p100x4_pcie
workloads: [rnnlm_2]
agents:
  - {name: annealing, options: {starts: [metis, hdp]}}
)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].field, "agents[0].options.starts");
  EXPECT_NE(p[0].message.find("found 'metis,hdp'"), std::string::npos) << p[0].message;
}

}  // namespace
}  // namespace gopt::experiments
