#include "agents/registry.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace gopt::agents
