#include "core/units.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace gopt::core {
namespace {

std::string format_scaled(double value, double base, const std::array<const char*, 7>& units) {
  std::size_t i = 0;
  double v = value;
  while (std::fabs(v) >= base && i + 1 < units.size()) {
    v /= base;
    ++i;
  }
  char buf[64];
  if (i == 0 && v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[i]);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g %s", v, units[i]);
  }
  return buf;
}

}  // namespace

std::string format_bytes(double bytes) {
  return format_scaled(bytes, 1024.0, {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"});
}

std::string format_flops(double flops) {
  return format_scaled(flops, 1000.0,
                       {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"});
}

std::string format_seconds(double seconds) {
  char buf[64];
  const double a = std::fabs(seconds);
  if (a == 0.0) {
    return "0 s";
  } else if (a < 1e-6) {
    std::snprintf(buf, sizeof buf, "%.3g ns", seconds * 1e9);
  } else if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  } else if (a < 1.0) {
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  }
  return buf;
}

}  // namespace gopt::core
