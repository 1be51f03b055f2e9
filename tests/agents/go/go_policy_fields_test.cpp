// The one description of GoPolicyOptions's members (kGoPolicyMembers, agents/go/go_model.h):
// the checkpoint's options text records every saved member and reads it back, in the text
// format checkpoints have always had; files of an earlier minor version fill what it added;
// and the registry's policy options are generated from the same table (issue #57).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "agents/go/go_checkpoint.h"
#include "agents/go/go_model.h"
#include "agents/go/go_registration.h"
#include "agents/registry.h"
#include "core/errors.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"

namespace gopt::agents::go {
namespace {

// Member `m` of `options` as a number (bools 0/1).
double value_of(GoPolicyOptions options, const GoPolicyMember& m) {
  return std::visit([&](auto accessor) { return static_cast<double>(options.*accessor); },
                    m.access);
}

// `options` with member `m` changed: a bool negated, a number plus one.
GoPolicyOptions changed(GoPolicyOptions options, const GoPolicyMember& m) {
  std::visit(
      [&](auto accessor) {
        auto& member = options.*accessor;
        if constexpr (std::is_same_v<std::remove_reference_t<decltype(member)>, bool>) {
          member = !member;
        } else {
          member = member + 1;
        }
      },
      m.access);
  return options;
}

std::vector<GoPolicyMember> saved_members() {
  std::vector<GoPolicyMember> saved;
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (m.saved) saved.push_back(m);
  }
  return saved;
}

// The options text of the defaults, as every checkpoint since version 2.1 records it: keys
// in order, bools as 0/1. A change here would make files written before it read otherwise.
TEST(GoPolicyFieldsTest, TheOptionsTextIsTheFormatCheckpointsHave) {
  EXPECT_EQ(policy_options_text(GoPolicyOptions()),
            "attention_layers=2;features=" + std::to_string(kNumericFeatures) +
                ";fuse=0;fusion_levels=4;heads=2;hidden=64;kind_embedding=16;max_devices=8;"
                "modulation=1;place=1;priority_levels=8;refine_passes=1;sage_layers=2;"
                "schedule=0;segment_length=64;task_layers=0;unit_decisions=0;unit_gate=0");
  // Exactly the saved members and the features; the initialisation scale and training's
  // blend are not the trained network's.
  std::set<std::string> saved;
  for (const auto& m : saved_members()) saved.insert(m.name);
  EXPECT_EQ(saved, (std::set<std::string>{"hidden", "kind_embedding", "sage_layers",
                                          "attention_layers", "heads", "segment_length",
                                          "max_devices", "refine_passes", "modulation", "place",
                                          "schedule", "fuse", "task_layers", "priority_levels",
                                          "fusion_levels", "unit_decisions", "unit_gate"}));
}

// Each saved member, changed from its default, changes the text and reads back changed; and
// all of them changed at once read back as written.
TEST(GoPolicyFieldsTest, EverySavedMemberRoundTripsChanged) {
  const GoPolicyOptions defaults;
  const std::string default_text = policy_options_text(defaults);
  GoPolicyOptions all = defaults;
  for (const auto& m : saved_members()) {
    const GoPolicyOptions one = changed(defaults, m);
    ASSERT_NE(value_of(one, m), value_of(defaults, m)) << m.name;
    const std::string text = policy_options_text(one);
    EXPECT_NE(text, default_text) << m.name;
    const GoPolicyOptions read =
        parse_policy_options(text, kCheckpointVersion, "a.ckpt", kCheckpointMinorVersion);
    EXPECT_EQ(value_of(read, m), value_of(one, m)) << m.name;
    EXPECT_EQ(policy_options_text(read), text) << m.name;
    all = changed(all, m);
  }
  const GoPolicyOptions read = parse_policy_options(policy_options_text(all), kCheckpointVersion,
                                                    "a.ckpt", kCheckpointMinorVersion);
  for (const auto& m : saved_members()) EXPECT_EQ(value_of(read, m), value_of(all, m)) << m.name;
}

// unit_gate came with version 2.1: a 2.0 text (or a file that records no minor version)
// without it had no gate; from 2.1 on it is required.
TEST(GoPolicyFieldsTest, AVersion2Minor0TextWithoutUnitGateReadsNoGate) {
  std::string text = policy_options_text(GoPolicyOptions().with_hidden(32));
  const std::string gate = ";unit_gate=0";
  ASSERT_NE(text.find(gate), std::string::npos);
  text.erase(text.find(gate), gate.size());

  const GoPolicyOptions read = parse_policy_options(text, 2, "old.ckpt", 0);
  EXPECT_FALSE(read.unit_gate);
  EXPECT_EQ(read.hidden, 32);
  EXPECT_FALSE(parse_policy_options(text, 2, "old.ckpt").unit_gate);  // minor 0 by default

  const auto message =
      gopt::testing::error_of([&] { (void)parse_policy_options(text, 2, "new.ckpt", 1); });
  EXPECT_TRUE(gopt::testing::contains(message, "new.ckpt")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "does not record 'unit_gate'")) << message;
}

// A policy that reads other features says the file's version and what this build needs.
TEST(GoPolicyFieldsTest, AFeaturesMismatchNamesTheFilesVersion) {
  std::string text = policy_options_text(GoPolicyOptions());
  const std::string features = "features=" + std::to_string(kNumericFeatures);
  text.replace(text.find(features), features.size(), "features=20");
  const auto message =
      gopt::testing::error_of([&] { (void)parse_policy_options(text, 2, "a.ckpt", 1); });
  EXPECT_TRUE(gopt::testing::contains(message, "reads 20 features")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "version 2.1")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "needs " + features)) << message;
}

// Checkpoints record the current minor version; a later minor of the current version is
// refused, naming the file.
TEST(GoPolicyFieldsTest, CheckpointsRecordTheMinorVersionAndRefuseLaterOnes) {
  const std::string dir = gopt::testing::make_temp_dir("gopt_go_policy_fields");
  TrainedPolicy trained;
  trained.policy = GoPolicy(GoPolicyOptions()
                                .with_hidden(8)
                                .with_kind_embedding(4)
                                .with_sage_layers(1)
                                .with_attention_layers(1)
                                .with_heads(1)
                                .with_segment_length(4)
                                .with_max_devices(2)
                                .with_unit_gate(true));
  trained.make_optimizer(1e-3);
  const std::string path = dir + "/current.ckpt";
  save_checkpoint(path, trained);
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  c10::IValue minor;
  archive.read("minor_version", minor);
  EXPECT_EQ(minor.toInt(), kCheckpointMinorVersion);
  EXPECT_TRUE(load_checkpoint(path, 1e-3).policy->options.unit_gate);

  torch::serialize::OutputArchive later;
  later.write("format", c10::IValue(std::string(kCheckpointFormat)));
  later.write("version", c10::IValue(kCheckpointVersion));
  later.write("minor_version", c10::IValue(kCheckpointMinorVersion + 1));
  later.write("options", c10::IValue(policy_options_text(trained.policy->options)));
  later.write("steps", c10::IValue(std::int64_t{0}));
  const std::string later_path = dir + "/later.ckpt";
  later.save_to(later_path);
  const auto message = gopt::testing::error_of([&] { (void)load_checkpoint(later_path, 1e-3); });
  EXPECT_TRUE(gopt::testing::contains(message, later_path)) << message;
  EXPECT_TRUE(gopt::testing::contains(
      message, "version " + std::to_string(kCheckpointVersion) + "." +
                   std::to_string(kCheckpointMinorVersion + 1) + " is not one this build reads"))
      << message;
}

// The registry's policy options come from the table: go_one lists every member that is an
// option of the agents that build a policy, first and in the table's order, with the
// defaults of GoPolicyOptions; the multi-task agents add the head widths; members that are
// no option are listed by no GO agent. The rules between them still hold.
TEST(GoPolicyFieldsTest, TheRegistryListsThePolicyOptions) {
  AgentRegistry r;
  register_builtin_agents(r);
  const auto& one = r.info("go_one").options;
  std::size_t at = 0;
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (m.option != GoPolicyOption::kPolicy) continue;
    ASSERT_LT(at, one.size());
    EXPECT_EQ(one[at].name, m.name);
    EXPECT_EQ(one[at].description, m.help);
    ++at;
  }
  EXPECT_EQ(at, 12u);
  auto listed = [](const std::vector<OptionSpec>& options, const std::string& name) {
    for (const auto& o : options) {
      if (o.name == name) return &o;
    }
    return static_cast<const OptionSpec*>(nullptr);
  };
  const OptionSpec* hidden = listed(one, "hidden");
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(hidden->default_value, "64");
  EXPECT_EQ(hidden->type, OptionType::kInt);
  EXPECT_EQ(hidden->min_value, 1);
  EXPECT_EQ(hidden->max_value, 4096);
  EXPECT_EQ(listed(one, "modulation")->default_value, "true");
  EXPECT_EQ(listed(one, "unit_gate")->default_value, "false");
  EXPECT_EQ(listed(one, "head_init_scale")->default_value, "3");
  EXPECT_EQ(listed(one, "priority_levels"), nullptr);

  const auto& multitask = r.info("go_multitask").options;
  ASSERT_NE(listed(multitask, "priority_levels"), nullptr);
  EXPECT_EQ(listed(multitask, "priority_levels")->default_value, "8");
  EXPECT_EQ(listed(multitask, "fusion_levels")->min_value, 2);
  for (const GoPolicyMember& m : kGoPolicyMembers) {
    if (m.option != GoPolicyOption::kNone) continue;
    for (const AgentInfo& agent : r.agents()) {
      if (agent.name.rfind("go_", 0) == 0) {
        EXPECT_EQ(listed(agent.options, m.name), nullptr) << agent.name << " " << m.name;
      }
    }
  }
  EXPECT_TRUE(go_agent_defaults("go_multitask").policy.task_layers);

  EXPECT_THROW((void)r.create("go_one", {{"hidden", "10"}, {"heads", "3"}}), core::InputError);
  EXPECT_THROW((void)r.create("go_one", {{"unit_gate", "true"}, {"unit_decisions", "true"}}),
               core::InputError);
}

}  // namespace
}  // namespace gopt::agents::go
