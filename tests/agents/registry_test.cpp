#include "agents/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "agents/option_fields.h"
#include "core/errors.h"
#include "tests/support/expect_error.h"

namespace gopt::agents {
namespace {

using gopt::testing::error_of;

AgentRegistry builtin() {
  AgentRegistry r;
  register_builtin_agents(r);
  return r;
}

TEST(RegistryTest, CreatesBuiltinAgentsByName) {
  auto r = builtin();
  for (const char* name : {"single_device", "round_robin", "random", "hdp"}) {
    ASSERT_TRUE(r.contains(name)) << name;
    auto agent = r.create(name);
    EXPECT_EQ(agent->name(), name);
  }
  EXPECT_TRUE(r.create("hdp")->is_learner());
  EXPECT_FALSE(r.create("random")->is_learner());
}

TEST(RegistryTest, UnknownAgentListsValidNamesWithASuggestion) {
  auto r = builtin();
  auto message = error_of([&] { (void)r.create("round_robbin", {}, "exp.yaml"); });
  EXPECT_NE(message.find("exp.yaml"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown agent (did you mean 'round_robin'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("single_device"), std::string::npos) << message;
}

// Issue #32: every numeric option has a documented, finite range (shown by `gopt agents`)
// that holds its default; values outside it are errors naming the option.
TEST(RegistryTest, EveryNumericOptionHasAFiniteRangeHoldingItsDefault) {
  auto r = builtin();
  for (const auto& a : r.agents()) {
    for (const auto& o : a.options) {
      if (o.type != OptionType::kInt && o.type != OptionType::kDouble) continue;
      EXPECT_TRUE(std::isfinite(o.min_value) && std::isfinite(o.max_value))
          << a.name << "." << o.name << " has no finite range";
      EXPECT_EQ(option_value_problem(o, o.default_value), "") << a.name << "." << o.name;
      EXPECT_FALSE(option_range_text(o).empty()) << a.name << "." << o.name;
    }
  }
}

TEST(RegistryTest, OptionsOutsideTheirRangesAreErrors) {
  auto r = builtin();
  auto heads = error_of([&] { (void)r.create("go_one", {{"heads", "0"}}, "exp.yaml"); });
  EXPECT_EQ(heads, "exp.yaml: agents.go_one.heads: expected an integer in [1, 64], found '0'");
  auto divisor = error_of([&] { (void)r.create("go_one", {{"heads", "3"}}, "exp.yaml"); });
  EXPECT_EQ(divisor, "exp.yaml: agents.go_one.heads: expected a divisor of hidden (64), found '3'");
  auto samples = error_of([&] {
    (void)r.create("hdp", {{"samples_per_step", "2147483648"}}, "exp.yaml");
  });
  EXPECT_NE(samples.find("[1, 4096]"), std::string::npos) << samples;
  auto huge = error_of([&] { (void)r.create("random", {{"seed", "99999999999999999999"}}); });
  EXPECT_NE(huge.find("expected an integer"), std::string::npos) << huge;
  EXPECT_NO_THROW((void)r.create("random", {{"seed", "-9223372036854775808"}}));
  EXPECT_NO_THROW((void)r.create("hdp", {{"samples_per_step", "4096"}}));
}

TEST(RegistryTest, UnknownOptionAndBadValueAreErrors) {
  auto r = builtin();
  auto unknown = error_of([&] { (void)r.create("hdp", {{"learnin_rate", "0.1"}}); });
  EXPECT_NE(unknown.find("agents.hdp.learnin_rate"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean 'learning_rate'"), std::string::npos) << unknown;
  auto bad = error_of([&] { (void)r.create("hdp", {{"groups", "many"}}); });
  EXPECT_NE(bad.find("expected an integer, found 'many'"), std::string::npos) << bad;
  auto none = error_of([&] { (void)r.create("round_robin", {{"x", "1"}}); });
  EXPECT_NE(none.find("takes no options"), std::string::npos) << none;
}

TEST(RegistryTest, OptionsFallBackToDefaults) {
  AgentOptions o("a",
                 {{"n", OptionType::kInt, "3", ""},
                  {"x", OptionType::kDouble, "0.5", ""},
                  {"b", OptionType::kBool, "false", ""}},
                 {{"x", "2.5"}});
  EXPECT_EQ(o.get_int("n"), 3);
  EXPECT_DOUBLE_EQ(o.get_double("x"), 2.5);
  EXPECT_FALSE(o.get_bool("b"));
}

// Issue #29: one description of an options struct's fields gives the option list, with the
// struct's defaults, and reads checked options back into the struct.
struct ToyOptions {
  std::int64_t layers = 2;
  double rate = 3e-4;
  bool fast = true;
  std::string file;
  enum class Mode { kA, kB } mode = Mode::kB;
  std::vector<std::string> names = {"x", "y"};
  std::uint64_t seed = 7;
};

OptionFields<ToyOptions> toy_fields() {
  using T = ToyOptions;
  return OptionFields<T>()
      .integer("layers", &T::layers, "layers", 1, 16)
      .number("rate", &T::rate, "rate", 0, 10)
      .flag("fast", &T::fast, "fast")
      .text("file", &T::file, "file")
      .choice("mode", &T::mode, "mode",
              std::vector<std::pair<std::string, T::Mode>>{{"a", T::Mode::kA}, {"b", T::Mode::kB}})
      .names("names", &T::names, "names", {"x", "y", "z"})
      .seed(&T::seed)
      .rule("rate", [](const T& t) -> std::string {
        return t.rate * static_cast<double>(t.layers) <= 1 ? "" : "expected rate x layers <= 1";
      });
}

TEST(OptionFieldsTest, SpecsCarryTheStructsDefaultsAndReadBackIntoIt) {
  const auto fields = toy_fields();
  const auto specs = fields.specs(ToyOptions());
  ASSERT_EQ(specs.size(), 7u);
  EXPECT_EQ(specs[0].default_value, "2");
  EXPECT_EQ(specs[1].default_value, "0.0003");
  EXPECT_EQ(specs[2].default_value, "true");
  EXPECT_EQ(specs[3].default_value, "");
  EXPECT_EQ(specs[4].default_value, "b");
  EXPECT_EQ(specs[4].choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(specs[5].default_value, "x,y");
  EXPECT_EQ(specs[5].type, OptionType::kList);
  EXPECT_EQ(specs[6].default_value, "7");
  // Nothing given: the struct's defaults exactly.
  const ToyOptions d = fields.read(AgentOptions("toy", specs, {}), ToyOptions());
  EXPECT_EQ(d.layers, 2);
  EXPECT_EQ(d.rate, 3e-4);
  EXPECT_TRUE(d.fast);
  EXPECT_EQ(d.mode, ToyOptions::Mode::kB);
  EXPECT_EQ(d.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(d.seed, 7u);
  // Given values, in any spelling of the one grammar.
  const ToyOptions g = fields.read(AgentOptions("toy", specs,
                                                {{"layers", "+3"},
                                                 {"rate", "1e-2"},
                                                 {"fast", "Off"},
                                                 {"file", "f.ckpt"},
                                                 {"mode", "a"},
                                                 {"names", "z, x"},
                                                 {"seed", "-1"}}),
                                   ToyOptions());
  EXPECT_EQ(g.layers, 3);
  EXPECT_EQ(g.rate, 1e-2);
  EXPECT_FALSE(g.fast);
  EXPECT_EQ(g.file, "f.ckpt");
  EXPECT_EQ(g.mode, ToyOptions::Mode::kA);
  EXPECT_EQ(g.names, (std::vector<std::string>{"z", "x"}));
  EXPECT_EQ(g.seed, ~std::uint64_t{0});
  // A rule is reported on its option, with the value given.
  auto broken = error_of([&] {
    (void)fields.read(AgentOptions("toy", specs, {{"rate", "0.5"}, {"layers", "4"}}, "exp.yaml"),
                      ToyOptions());
  });
  EXPECT_EQ(broken, "exp.yaml: agents.toy.rate: expected rate x layers <= 1, found '0.5'");
  // Choices and lists are checked with the types.
  EXPECT_EQ(error_of([&] {
              (void)AgentOptions("toy", specs, {{"mode", "zzz"}});
            }),
            "agents.toy.mode: expected one of a, b, found 'zzz'");
  EXPECT_EQ(error_of([&] {
              (void)AgentOptions("toy", specs, {{"names", "x,w"}});
            }),
            "agents.toy.names: expected a comma-separated list of x, y, z, found 'x,w'");
  EXPECT_NE(error_of([&] { (void)AgentOptions("toy", specs, {{"names", " , "}}); }), "");
}

// The default a listing shows is the value that runs: numbers print as the shortest text
// that reads back exactly.
TEST(OptionFieldsTest, DefaultNumbersReadBackExactly) {
  for (double v : {3e-4, 0.1, 1.0 / 3.0, 100.0, -3.0, 1e-5, 0.96}) {
    EXPECT_EQ(core::parse_number(option_number_text(v)), v) << option_number_text(v);
  }
  EXPECT_EQ(option_number_text(3e-4), "0.0003");
  EXPECT_EQ(option_number_text(1e-5), "1e-05");
}

// One boolean grammar for every agent option: what core::parse_bool reads.
TEST(RegistryTest, BooleanOptionsTakeTheOneGrammar) {
  auto r = builtin();
  for (const char* yes : {"true", "True", "TRUE", "yes", "on", "1"}) {
    EXPECT_NO_THROW((void)r.create("tf_default", {{"fusion", yes}})) << yes;
  }
  auto bad = error_of([&] { (void)r.create("tf_default", {{"fusion", "tRue"}}, "exp.yaml"); });
  EXPECT_EQ(bad,
            "exp.yaml: agents.tf_default.fusion: expected true or false (also yes/no, on/off, "
            "1/0), found 'tRue'");
  auto hex = error_of([&] { (void)r.create("hdp", {{"learning_rate", "0x1p-3"}}); });
  EXPECT_NE(hex.find("expected a number, found '0x1p-3'"), std::string::npos) << hex;
}

// Values the agents once clamped or rejected only when a job started are range or rule
// problems now, found by the same check a config load runs (AgentInfo::check_options).
TEST(RegistryTest, NothingIsClampedOrLeftForTheJob) {
  auto r = builtin();
  struct Case {
    const char* agent;
    std::map<std::string, std::string> options;
    const char* message;
  };
  const Case cases[] = {
      {"go_multitask", {{"priority_levels", "1"}}, "expected an integer in [2, 1024], found '1'"},
      {"go_multitask", {{"fusion_levels", "1"}}, "expected an integer in [2, 1024], found '1'"},
      {"go_multitask", {{"fusion_prior", "-2"}}, "expected a number in [0, 100], found '-2'"},
      {"go_placement",
       {{"default_placement", "metis"}},
       "expected one of human_expert, single_device, found 'metis'"},
      {"go_one", {{"unit_samples", "20"}}, "expected at most samples_per_step (16), found '20'"},
      {"annealing", {{"oom_factor", "0.5"}}, "expected a number in [1, 1000000], found '0.5'"},
      {"annealing",
       {{"final_temperature", "0.1"}},
       "expected at most initial_temperature (0.05), found '0.1'"},
      {"annealing", {{"tasks", "placement,pruning"}}, "found 'placement,pruning'"},
      {"annealing", {{"starts", "hdp"}}, "found 'hdp'"},
      {"tf_default", {{"placement", "metis"}}, "expected one of human_expert, single_device"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.agent);
    const auto& info = r.info(c.agent);
    auto at_load = error_of(
        [&] { info.check_options(AgentOptions(c.agent, info.options, c.options, "exp.yaml")); });
    EXPECT_NE(at_load.find(c.message), std::string::npos) << at_load;
    EXPECT_EQ(error_of([&] { (void)r.create(c.agent, c.options, "exp.yaml"); }), at_load);
  }
}

// docs/agents.md "Option ranges" is the table the registry generates (`gopt agents
// --ranges`), so the docs cannot drift from the ranges that are checked.
TEST(RegistryTest, DocsRangeTableIsTheRegistrys) {
  std::ifstream in(std::string(GOPT_SOURCE_DIR) + "/docs/agents.md");
  ASSERT_TRUE(in) << "docs/agents.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string table = option_range_table(builtin());
  EXPECT_NE(text.str().find(table), std::string::npos)
      << "docs/agents.md \"Option ranges\" differs from `gopt agents --ranges`:\n"
      << table;
}

}  // namespace
}  // namespace gopt::agents
