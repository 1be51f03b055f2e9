#include "hardware/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"
#include "core/strings.h"

namespace gopt::hardware {
namespace {

constexpr double kTiny = 1e-30;

struct KindModel {
  double alpha = 0;  // seconds per FLOP
  double beta = 0;   // seconds per byte
  bool has_compute = false;
  bool has_memory = false;
};

double weighted_slope(const std::vector<const OpSample*>& s, double launch, bool flops_term) {
  double num = 0, den = 0;
  for (const auto* p : s) {
    double x = flops_term ? p->flops : static_cast<double>(p->bytes);
    double w = 1.0 / (p->time_s * p->time_s);
    num += w * x * (p->time_s - launch);
    den += w * x * x;
  }
  return den > 0 ? std::max(num / den, kTiny) : 0;
}

// Two-piece fit of one kind for a given launch overhead; returns the weighted cost.
double fit_kind(const std::vector<const OpSample*>& s, double launch, KindModel& m) {
  m = KindModel{};
  bool any_flops = false, any_bytes = false;
  for (const auto* p : s) {
    any_flops = any_flops || p->flops > 0;
    any_bytes = any_bytes || p->bytes > 0;
  }
  m.alpha = any_flops ? weighted_slope(s, launch, true) : 0;
  m.beta = any_bytes ? weighted_slope(s, launch, false) : 0;
  if (any_flops && any_bytes) {
    std::vector<char> in_compute(s.size(), 0);
    // Start from the single-term fit that explains the data better, then alternate.
    for (int iter = 0; iter < 40; ++iter) {
      std::vector<const OpSample*> c, b;
      bool changed = false;
      for (std::size_t i = 0; i < s.size(); ++i) {
        char now = m.alpha * s[i]->flops >= m.beta * static_cast<double>(s[i]->bytes) ? 1 : 0;
        changed = changed || now != in_compute[i] || iter == 0;
        in_compute[i] = now;
        (now ? c : b).push_back(s[i]);
      }
      if (!changed) break;
      if (!c.empty()) m.alpha = weighted_slope(c, launch, true);
      if (!b.empty()) m.beta = weighted_slope(b, launch, false);
    }
  }
  double cost = 0;
  for (const auto* p : s) {
    double pred = launch + std::max(m.alpha * p->flops, m.beta * static_cast<double>(p->bytes));
    double r = (pred - p->time_s) / p->time_s;
    cost += r * r;
    if (m.alpha * p->flops >= m.beta * static_cast<double>(p->bytes)) {
      m.has_compute = m.has_compute || p->flops > 0;
    } else {
      m.has_memory = true;
    }
  }
  return cost;
}

// Pool-adjacent-violators: the non-decreasing sequence closest (least squares) to `y`. More
// work of one op type never takes less time; a measured dip is noise from a shared machine.
std::vector<double> monotone_fit(const std::vector<double>& y) {
  std::vector<double> value;
  std::vector<int> count;
  for (double v : y) {
    value.push_back(v);
    count.push_back(1);
    while (value.size() > 1 && value[value.size() - 2] > value.back()) {
      double merged =
          (value[value.size() - 2] * count[count.size() - 2] + value.back() * count.back()) /
          (count[count.size() - 2] + count.back());
      int n = count[count.size() - 2] + count.back();
      value.pop_back();
      count.pop_back();
      value.back() = merged;
      count.back() = n;
    }
  }
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i)
    out.insert(out.end(), static_cast<std::size_t>(count[i]), value[i]);
  return out;
}

using Groups = std::array<std::vector<const OpSample*>, core::kNumOpKinds>;

double total_cost(const Groups& g, double launch, std::array<KindModel, core::kNumOpKinds>& m) {
  double cost = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (!g[k].empty()) cost += fit_kind(g[k], launch, m[k]);
  }
  return cost;
}

void add_residual(FitResiduals& r, double rel) {
  ++r.samples;
  r.rms_rel_error += rel * rel;  // squared sum until finish()
  r.max_rel_error = std::max(r.max_rel_error, std::abs(rel));
}

void finish(FitResiduals& r) {
  r.rms_rel_error = r.samples > 0 ? std::sqrt(r.rms_rel_error / r.samples) : 0;
}

}  // namespace

RooflineFit fit_roofline(const std::vector<OpSample>& samples) {
  if (samples.empty()) {
    throw core::InputError("calibration", "samples", "no measurements to fit");
  }
  Groups groups;
  double min_time = samples.front().time_s;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (!(s.time_s > 0) || !std::isfinite(s.time_s)) {
      throw core::InputError("calibration", "samples[" + std::to_string(i) + "].time_s",
                             "expected a positive time, found " + std::to_string(s.time_s));
    }
    groups[static_cast<std::size_t>(s.kind)].push_back(&s);
    min_time = std::min(min_time, s.time_s);
  }
  // Golden-section search of the shared launch overhead in [0, shortest sample].
  std::array<KindModel, core::kNumOpKinds> models{};
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = 0, hi = min_time;
  double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo);
  double f1 = total_cost(groups, x1, models), f2 = total_cost(groups, x2, models);
  for (int iter = 0; iter < 60; ++iter) {
    if (f1 < f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - phi * (hi - lo);
      f1 = total_cost(groups, x1, models);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + phi * (hi - lo);
      f2 = total_cost(groups, x2, models);
    }
  }
  RooflineFit fit;
  fit.launch_overhead_s = 0.5 * (lo + hi);
  (void)total_cost(groups, fit.launch_overhead_s, models);

  double best_flops_rate = 0, best_byte_rate = 0;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (groups[k].empty()) continue;
    if (models[k].alpha > 0) best_flops_rate = std::max(best_flops_rate, 1.0 / models[k].alpha);
    if (models[k].beta > 0) best_byte_rate = std::max(best_byte_rate, 1.0 / models[k].beta);
  }
  fit.peak_flops_per_s = best_flops_rate > 0 ? best_flops_rate : 1.0;
  fit.memory_bandwidth_bytes_per_s = best_byte_rate > 0 ? best_byte_rate : 1.0;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    fit.compute_efficiency[k] = 1.0;
    fit.memory_efficiency[k] = 1.0;
    if (groups[k].empty()) continue;
    fit.fitted[k] = true;
    if (models[k].alpha > 0) {
      fit.compute_efficiency[k] =
          std::clamp(1.0 / (models[k].alpha * fit.peak_flops_per_s), 1e-9, 1.0);
    }
    if (models[k].beta > 0) {
      fit.memory_efficiency[k] =
          std::clamp(1.0 / (models[k].beta * fit.memory_bandwidth_bytes_per_s), 1e-9, 1.0);
    }
  }
  for (const auto& s : samples) {
    double rel = (predict(fit, s) - s.time_s) / s.time_s;
    add_residual(fit.residuals[static_cast<std::size_t>(s.kind)], rel);
    add_residual(fit.overall, rel);
  }
  for (auto& r : fit.residuals) finish(r);
  finish(fit.overall);
  return fit;
}

TimeCurves build_time_curves(const std::vector<OpSample>& samples, const RooflineFit& fit) {
  std::map<std::string, std::map<double, std::vector<double>>> by_type;
  std::array<std::map<double, std::vector<double>>, core::kNumOpKinds> by_kind;
  for (const auto& s : samples) {
    double w = predict(fit, s) - fit.launch_overhead_s;
    if (!(w > 0) || s.op_type.empty()) continue;
    by_type[s.op_type][w].push_back(s.time_s);
    by_kind[static_cast<std::size_t>(s.kind)][w].push_back(s.time_s);
  }
  auto curve_of = [](const std::map<double, std::vector<double>>& points) {
    TimeCurve c;
    for (const auto& [w, times] : points) {
      std::vector<double> t = times;
      std::sort(t.begin(), t.end());
      c.work.push_back(w);
      c.time_s.push_back(t[t.size() / 2]);
    }
    c.time_s = monotone_fit(c.time_s);
    return c;
  };
  TimeCurves curves;
  for (const auto& [type, points] : by_type) curves.op_types[type] = curve_of(points);
  for (std::size_t k = 0; k < by_kind.size(); ++k) {
    if (!by_kind[k].empty()) curves.kinds[k] = curve_of(by_kind[k]);
  }
  // Leave-one-out error of each op type's curve: how well it predicts a size it has not seen.
  for (const auto& [type, points] : by_type) {
    if (points.size() < 3) continue;
    std::vector<std::pair<double, double>> pts;
    for (const auto& [w, times] : points) pts.emplace_back(w, curve_of({{w, times}}).time_s[0]);
    for (std::size_t i = 1; i + 1 < pts.size(); ++i) {  // interior points: interpolation
      TimeCurve rest;
      for (std::size_t j = 0; j < pts.size(); ++j) {
        if (j == i) continue;
        rest.work.push_back(pts[j].first);
        rest.time_s.push_back(pts[j].second);
      }
      add_residual(curves.leave_one_out, (rest.at(pts[i].first) - pts[i].second) / pts[i].second);
    }
  }
  finish(curves.leave_one_out);
  return curves;
}

std::map<std::string, ShapeTable> build_shape_tables(const std::vector<OpSample>& samples) {
  std::map<std::string, std::map<std::pair<double, Bytes>, std::vector<double>>> by_type;
  for (const auto& s : samples) {
    if (s.op_type.empty() || !(s.time_s > 0)) continue;
    by_type[s.op_type][{s.flops, s.bytes}].push_back(s.time_s);
  }
  std::map<std::string, ShapeTable> tables;
  for (const auto& [type, shapes] : by_type) {
    ShapeTable& t = tables[type];
    for (const auto& [shape, times] : shapes) {
      std::vector<double> sorted = times;
      std::sort(sorted.begin(), sorted.end());
      t.flops.push_back(shape.first);
      t.bytes.push_back(shape.second);
      t.time_s.push_back(sorted[sorted.size() / 2]);
    }
  }
  return tables;
}

Seconds predict(const RooflineFit& fit, const OpSample& s) {
  auto k = static_cast<std::size_t>(s.kind);
  double compute = s.flops / (fit.peak_flops_per_s * fit.compute_efficiency[k]);
  double memory =
      static_cast<double>(s.bytes) / (fit.memory_bandwidth_bytes_per_s * fit.memory_efficiency[k]);
  return fit.launch_overhead_s + std::max(compute, memory);
}

ExecutorFit fit_executor_overhead(const std::vector<ExecutorSample>& samples) {
  // Weighted least squares of t = a + b * ops with weights 1 / t^2, a and b >= 0.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::map<int, int> lengths;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    double t = s.time_s - s.kernel_time_s;
    if (!(s.time_s > 0) || !(t > 0) || s.ops < 1) {
      throw core::InputError("calibration", "executor[" + std::to_string(i) + "]",
                             "expected a positive time above the kernels' and at least one op, "
                             "found " +
                                 std::to_string(s.time_s) + " s (kernels " +
                                 std::to_string(s.kernel_time_s) + " s) for " +
                                 std::to_string(s.ops) + " ops");
    }
    double w = 1.0 / (t * t);
    auto x = static_cast<double>(s.ops);
    sw += w;
    sx += w * x;
    sy += w * t;
    sxx += w * x * x;
    sxy += w * x * t;
    ++lengths[s.ops];
  }
  if (lengths.size() < 2) {
    throw core::InputError(
        "calibration", "executor",
        "expected chains of at least two lengths, found " + std::to_string(lengths.size()));
  }
  ExecutorFit fit;
  double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
  double intercept = (sy - slope * sx) / sw;
  if (intercept < 0) {
    // Through the origin: t = b * ops.
    slope = sxy / sxx;
    intercept = 0;
  }
  fit.per_op_s = std::max(0.0, slope);
  fit.per_step_s = intercept;
  for (const auto& s : samples) {
    double t = s.time_s - s.kernel_time_s;
    add_residual(fit.residuals, (fit.per_step_s + fit.per_op_s * s.ops - t) / t);
  }
  finish(fit.residuals);
  return fit;
}

std::vector<OpSample> without_executor_overhead(std::vector<OpSample> samples, Seconds per_op_s) {
  for (auto& s : samples) {
    Seconds executor = per_op_s * (1 + std::max(0, s.extra_executor_ops));
    s.time_s = std::max(s.time_s - executor, 0.05 * s.time_s);
  }
  return samples;
}

LinkFit fit_link(const std::vector<CopySample>& samples) {
  // Weighted least squares of t = a + c * bytes with weights 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::map<Bytes, int> sizes;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    if (!(s.time_s > 0)) {
      throw core::InputError("calibration", "copies[" + std::to_string(i) + "].time_s",
                             "expected a positive time, found " + std::to_string(s.time_s));
    }
    double w = 1.0 / (s.time_s * s.time_s);
    auto x = static_cast<double>(s.bytes);
    sw += w;
    sx += w * x;
    sy += w * s.time_s;
    sxx += w * x * x;
    sxy += w * x * s.time_s;
    ++sizes[s.bytes];
  }
  if (sizes.size() < 2) {
    throw core::InputError(
        "calibration", "copies",
        "expected copies of at least two sizes, found " + std::to_string(sizes.size()));
  }
  double det = sw * sxx - sx * sx;
  double slope = (sw * sxy - sx * sy) / det;
  double intercept = (sy - slope * sx) / sw;
  LinkFit fit;
  if (slope > 0) {
    fit.latency_s = std::max(0.0, intercept);
    fit.bandwidth_bytes_per_s = 1.0 / slope;
  } else {
    // Times that do not grow with size (noise swamped the copies): the smallest copies'
    // median time is the latency and the largest copies' median rate the bandwidth.
    auto median_at = [&](Bytes b) {
      std::vector<double> t;
      for (const auto& c : samples) {
        if (c.bytes == b) t.push_back(c.time_s);
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    Bytes largest = sizes.rbegin()->first;
    fit.latency_s = median_at(sizes.begin()->first);
    fit.bandwidth_bytes_per_s = static_cast<double>(largest) / median_at(largest);
    fit.degenerate = true;
  }
  for (const auto& s : samples) {
    double pred = fit.latency_s + static_cast<double>(s.bytes) / fit.bandwidth_bytes_per_s;
    add_residual(fit.residuals, (pred - s.time_s) / s.time_s);
  }
  finish(fit.residuals);
  return fit;
}

FusedLoopRatio fit_fused_loop_ratio(const std::vector<FusionSample>& samples,
                                    Seconds executor_overhead_s) {
  if (samples.empty()) {
    throw core::InputError("fused-loop samples", "", "no fused-loop measurements to fit");
  }
  std::map<Bytes, std::vector<double>> log_ratios;
  for (const auto& s : samples) {
    const Seconds fused = s.fused_s - executor_overhead_s * (1 + s.inputs);
    const Seconds unfused = s.unfused_s - executor_overhead_s * (s.members + s.inputs);
    if (!(fused > 0) || !(unfused > 0)) {
      throw core::InputError("fused-loop samples", s.mix,
                             "a fused-loop time is not above its executor overhead (fused " +
                                 std::to_string(s.fused_s) + " s, unfused " +
                                 std::to_string(s.unfused_s) + " s)");
    }
    log_ratios[s.bytes_written].push_back(std::log(fused / unfused));
  }
  FusedLoopRatio r;
  for (const auto& [bytes, logs] : log_ratios) {
    double mean = 0;
    for (double l : logs) mean += l;
    r.bytes.push_back(bytes);
    r.ratio.push_back(std::exp(mean / static_cast<double>(logs.size())));
  }
  return r;
}

}  // namespace gopt::hardware
