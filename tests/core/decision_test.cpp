#include "core/decision.h"

#include <gtest/gtest.h>

#include "core/errors.h"

namespace gopt::core {
namespace {

TEST(DecisionTest, AbsentFieldsAreValidAndDefaultToDeviceZero) {
  Decision d;
  EXPECT_NO_THROW(validate_decision(d, 5, 2));
  EXPECT_EQ(d.device_of(3), 0);
}

TEST(DecisionTest, WrongLengthIsAnError) {
  Decision d;
  d.priority = std::vector<std::int32_t>{1, 2};
  try {
    validate_decision(d, 3, 2, "dec.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "dec.json: priority: expected one entry per op (3), found 2");
  }
}

TEST(DecisionTest, DeviceOutOfRangeNamesTheOp) {
  Decision d;
  d.placement = std::vector<DeviceId>{0, 1, 4};
  std::vector<std::string> names = {"a", "b", "c"};
  try {
    validate_decision(d, 3, 2, "dec.json", &names);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("op 2 ('c') is placed on device 4"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("[0, 2)"), std::string::npos) << e.what();
  }
  d.placement = std::vector<DeviceId>{0, -1, 1};
  EXPECT_THROW(validate_decision(d, 3, 2), InputError);
}

TEST(DecisionTest, NegativeFusionPriorityIsAnError) {
  Decision d;
  d.fusion = std::vector<std::int32_t>{0, -1};
  EXPECT_THROW(validate_decision(d, 2, 1), InputError);
}

}  // namespace
}  // namespace gopt::core
