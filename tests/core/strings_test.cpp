#include "core/strings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>

namespace gopt::core {
namespace {

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("metis", "metsi"), 1u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(StringsTest, DidYouMeanOnlySuggestsCloseNames) {
  std::vector<std::string> names = {"single_device", "round_robin", "metis", "heft"};
  EXPECT_EQ(did_you_mean("metsi", names), " (did you mean 'metis'?)");
  EXPECT_EQ(did_you_mean("round_robbin", names), " (did you mean 'round_robin'?)");
  EXPECT_EQ(did_you_mean("transformer", names), "");
  EXPECT_EQ(join({"a", "b"}), "a, b");
}

// One grammar for every boolean and number a config, an agent option or --set gives
// (docs/config.md "Values").
TEST(StringsTest, BooleansHaveOneGrammar) {
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "1"}) {
    EXPECT_EQ(parse_bool(yes), std::optional<bool>(true)) << yes;
  }
  for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "0"}) {
    EXPECT_EQ(parse_bool(no), std::optional<bool>(false)) << no;
  }
  for (const char* neither : {"", "y", "n", "tRue", " true", "true ", "2", "-1", "yes please"}) {
    EXPECT_EQ(parse_bool(neither), std::nullopt) << "'" << neither << "'";
  }
}

TEST(StringsTest, IntegersAreDecimalAndFitIn64Bits) {
  EXPECT_EQ(parse_integer("42"), 42);
  EXPECT_EQ(parse_integer("+7"), 7);
  EXPECT_EQ(parse_integer("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_integer("9223372036854775807"), INT64_MAX);
  for (const char* bad :
       {"", "+", "-", " 1", "1 ", "1.0", "1e3", "0x10", "9223372036854775808", "many", "1_000"}) {
    EXPECT_EQ(parse_integer(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(StringsTest, NumbersAreFiniteDecimals) {
  EXPECT_EQ(parse_number("3e-4"), 3e-4);
  EXPECT_EQ(parse_number("0.0003"), 3e-4);
  EXPECT_EQ(parse_number("-2"), -2.0);
  EXPECT_EQ(parse_number(".5"), 0.5);
  EXPECT_EQ(parse_number("5."), 5.0);
  EXPECT_EQ(parse_number("+1E2"), 100.0);
  for (const char* bad : {"", ".", "e3", "1e", "1e+", " 1", "1 ", "0x10", "inf", "nan", ".inf",
                          "1e999", "1e-999", "1,5", "soon"}) {
    EXPECT_EQ(parse_number(bad), std::nullopt) << "'" << bad << "'";
  }
}

// What a writer prints reads back as the same double: six digits where they suffice, more
// where a neighbour one ulp away would otherwise print alike.
TEST(StringsTest, NumberTextReadsBackExactly) {
  EXPECT_EQ(number_text(3e-4), "0.0003");
  EXPECT_EQ(number_text(1e-5), "1e-05");
  EXPECT_EQ(number_text(64), "64");
  EXPECT_EQ(number_text(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(number_text(-HUGE_VAL), "-inf");
  EXPECT_EQ(number_text(std::nan("")), "nan");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 2000; ++i) {
    const double v = std::pow(10.0, exponent(rng)) * (i % 2 ? 1 : -1);
    const double next = std::nextafter(v, HUGE_VAL);
    EXPECT_EQ(parse_number(number_text(v)), v) << number_text(v);
    EXPECT_NE(number_text(v), number_text(next)) << v;
  }
  EXPECT_EQ(parse_number(number_text(std::numeric_limits<double>::max())),
            std::numeric_limits<double>::max());
  EXPECT_EQ(parse_number(number_text(std::numeric_limits<double>::min())),
            std::numeric_limits<double>::min());
}

}  // namespace
}  // namespace gopt::core
