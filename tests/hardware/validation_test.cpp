// Validation statistics against numbers computed by hand.
#include "hardware/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/expect_error.h"

namespace gopt::hardware {
namespace {

// Expects `expr` to throw an InputError whose message contains `part`.
#define EXPECT_ERROR_CONTAINS(expr, part)                               \
  do {                                                                  \
    std::string what_ = gopt::testing::error_of([&] { (void)(expr); }); \
    EXPECT_TRUE(gopt::testing::contains(what_, part)) << what_;         \
  } while (false)

TEST(ValidationTest, SummaryMatchesHandComputedFixture) {
  // Graph a: measured 10, 20, 30 ms; simulated 11, 18, 33 ms: errors +10%, -10%, +10%,
  // the same order (tau 1). Graph b: measured 10, 20; simulated 25, 15: errors +150%, -25%,
  // reversed (tau -1).
  std::vector<ValidationCase> cases = {{"a", "single", 0.010, 0.011},
                                       {"a", "rr", 0.020, 0.018},
                                       {"a", "metis", 0.030, 0.033},
                                       {"b", "single", 0.010, 0.025},
                                       {"b", "rr", 0.020, 0.015}};
  ValidationSummary s = summarize_validation(cases);
  EXPECT_EQ(s.cases, 5);
  EXPECT_EQ(s.graphs, 2);
  EXPECT_NEAR(s.mape, (10 + 10 + 10 + 150 + 25) / 5.0, 1e-9);
  EXPECT_NEAR(s.mean_pct_error, (10 - 10 + 10 + 150 - 25) / 5.0, 1e-9);
  EXPECT_NEAR(s.max_abs_pct_error, 150, 1e-9);
  EXPECT_EQ(s.worst_case, "b / single");
  EXPECT_NEAR(s.mean_graph_kendall_tau, 0.0, 1e-12);  // (1 + -1) / 2
  // Over all five: measured 10 20 30 10 20, simulated 11 18 33 25 15. The ten pairs (i<j):
  //   12 C, 13 C, 14 tie in measured, 15 C, 23 C, 24 D, 25 tie in measured, 34 C, 35 C, 45 D
  // C = 6, D = 2, two ties in the measured times only: tau_b = (6 - 2) / sqrt(10 * 8).
  EXPECT_NEAR(s.kendall_tau, 4.0 / std::sqrt(10.0 * 8.0), 1e-12);
}

TEST(ValidationTest, KendallTauOfPerfectAndReversedOrders) {
  EXPECT_DOUBLE_EQ(kendall_tau_b({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau_b({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(kendall_tau_b({1}, {1}), 0.0);
}

TEST(ValidationTest, QuantilesInterpolateAndTheIqrIgnoresOneOutlier) {
  // numpy.percentile([4, 1, 3, 2], [25, 50, 75]) = 1.75, 2.5, 3.25.
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), median({4, 1, 3, 2}));
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1), 4);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
  // Nine steps of 10 ms and one of 50 ms: the range is 4x the median, the IQR 0.
  std::vector<double> steps(9, 0.010);
  steps.push_back(0.050);
  EXPECT_DOUBLE_EQ(relative_iqr(steps), 0);
  EXPECT_NEAR(relative_iqr({0.9, 1.0, 1.1, 1.2, 0.8}), 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(relative_iqr({}), 0);
  EXPECT_DOUBLE_EQ(relative_iqr({0, 0, 0}), 0);
}

TEST(ValidationTest, NonPositiveMeasurementIsAnInputError) {
  EXPECT_ERROR_CONTAINS(summarize_validation({{"g", "d", 0.0, 1.0}}), "cases[0].measured_s");
}

}  // namespace
}  // namespace gopt::hardware
