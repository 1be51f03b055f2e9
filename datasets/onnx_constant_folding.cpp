#include "datasets/onnx_constant_folding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

namespace gopt::datasets::onnx_folding {
namespace {

using core::Shape;
using T = onnx::TensorProto_DataType;

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Elements of the dims [first, last) of a shape, saturating at INT64_MAX (dims come from
// files).
std::int64_t count(Shape::const_iterator first, Shape::const_iterator last) {
  std::int64_t n = 1;
  for (; first != last; ++first) {
    const std::int64_t d = *first;
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      return std::numeric_limits<std::int64_t>::max();
    }
    n *= d;
  }
  return n;
}

std::int64_t count(const Shape& s) { return count(s.begin(), s.end()); }

bool is_floating(std::int32_t t) {
  return t == T::TensorProto_DataType_FLOAT || t == T::TensorProto_DataType_DOUBLE;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t int_attr(const onnx::NodeProto& n, const char* name, std::int64_t fallback) {
  const auto* a = attr(n, name);
  return a == nullptr ? fallback : a->i();
}

std::optional<std::vector<std::int64_t>> ints_attr(const onnx::NodeProto& n, const char* name) {
  const auto* a = attr(n, name);
  if (a == nullptr) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Calls f(output multi-index, output linear index) for every element of `shape`.
void for_each_index(const Shape& shape, const std::function<void(const Shape&, std::size_t)>& f) {
  std::int64_t n = count(shape);
  Shape idx(shape.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    f(idx, static_cast<std::size_t>(i));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// For numpy broadcasting of `in` to `out`: the input's linear index for each output index.
std::vector<std::size_t> broadcast_map(const Shape& in, const Shape& out, const char* field) {
  if (in.size() > out.size()) {
    throw FoldError(field, "shape " + shape_text(in) + " does not broadcast to " + shape_text(out));
  }
  std::size_t offset = out.size() - in.size();
  auto st = strides_of(in);
  std::vector<std::size_t> map(static_cast<std::size_t>(count(out)));
  for_each_index(out, [&](const Shape& idx, std::size_t i) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < in.size(); ++d) {
      std::int64_t dim = in[d];
      if (dim != 1 && dim != out[offset + d]) {
        throw FoldError(field,
                        "shape " + shape_text(in) + " does not broadcast to " + shape_text(out));
      }
      k += (dim == 1 ? 0 : idx[offset + d]) * st[d];
    }
    map[i] = static_cast<std::size_t>(k);
  });
  return map;
}

// An output tensor of `type` filled by index from `source` (gather-style data movement).
KnownTensor gather_from(const KnownTensor& source, const OutputType& type,
                        const std::vector<std::size_t>& map) {
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = *type.shape;
  if (source.floating()) {
    out.reals.reserve(map.size());
    for (auto k : map) out.reals.push_back(source.reals[k]);
  } else {
    out.ints.reserve(map.size());
    for (auto k : map) out.ints.push_back(source.ints[k]);
  }
  return out;
}

// Thrown when a value cannot be represented in the output (a float to integer cast of NaN
// or of a huge value): the output is then left unfolded, not an error, since the value may
// never reach a shape.
struct NotFoldable {};

// Doubles of at most this magnitude convert to int64 exactly enough and without overflow.
constexpr double kInt64Range = 9.2e18;

// Stores a value computed as double or int64 into `out` (its type decides).
void push(KnownTensor& out, double real, std::int64_t integer, bool computed_as_real) {
  if (out.floating()) {
    out.reals.push_back(computed_as_real ? real : static_cast<double>(integer));
  } else if (computed_as_real) {
    if (!std::isfinite(real) || std::abs(real) > kInt64Range) throw NotFoldable{};
    out.ints.push_back(static_cast<std::int64_t>(real));
  } else {
    out.ints.push_back(integer);
  }
}

// An int64 overflow leaves the value unfolded (the runtime would wrap around).
std::int64_t checked(bool overflow, std::int64_t value) {
  if (overflow) throw NotFoldable{};
  return value;
}

using RealFn = std::function<double(const std::vector<double>&)>;
using IntFn = std::function<std::int64_t(const std::vector<std::int64_t>&)>;

// Elementwise op over broadcast inputs. `real` is used when an input is floating (null:
// the op is integer-only), `integer` otherwise.
KnownTensor elementwise(const std::vector<const KnownTensor*>& in, const OutputType& type,
                        const RealFn& real, const IntFn& integer) {
  bool floating = std::any_of(in.begin(), in.end(), [](auto* t) { return t->floating(); });
  std::vector<std::vector<std::size_t>> maps;
  for (std::size_t k = 0; k < in.size(); ++k) {
    std::string field = "input " + std::to_string(k);
    maps.push_back(broadcast_map(in[k]->shape, *type.shape, field.c_str()));
  }
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = *type.shape;
  std::size_t n = static_cast<std::size_t>(count(out.shape));
  std::vector<double> rs(in.size());
  std::vector<std::int64_t> is(in.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (floating && real) {
      for (std::size_t k = 0; k < in.size(); ++k) rs[k] = in[k]->real(maps[k][i]);
      push(out, real(rs), 0, true);
    } else {
      for (std::size_t k = 0; k < in.size(); ++k) is[k] = in[k]->integer(maps[k][i]);
      push(out, 0, integer(is), false);
    }
  }
  return out;
}

std::optional<KnownTensor> fold_binary(const std::string& op, const onnx::NodeProto& n,
                                       const std::vector<const KnownTensor*>& in,
                                       const OutputType& type) {
  auto add = [](const std::vector<std::int64_t>& v) {
    std::int64_t r = 0;
    bool overflow = __builtin_add_overflow(v[0], v[1], &r);
    return checked(overflow, r);
  };
  auto sub = [](const std::vector<std::int64_t>& v) {
    std::int64_t r = 0;
    bool overflow = __builtin_sub_overflow(v[0], v[1], &r);
    return checked(overflow, r);
  };
  auto mul = [](const std::vector<std::int64_t>& v) {
    std::int64_t r = 0;
    bool overflow = __builtin_mul_overflow(v[0], v[1], &r);
    return checked(overflow, r);
  };
  auto nonzero_divisor = [](std::int64_t b) {
    if (b == 0) throw FoldError("input 'B'", "integer division by zero");
  };
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  if (op == "Add") {
    return elementwise(
        in, type, [](auto& v) { return v[0] + v[1]; }, add);
  }
  if (op == "Sub") {
    return elementwise(
        in, type, [](auto& v) { return v[0] - v[1]; }, sub);
  }
  if (op == "Mul") {
    return elementwise(
        in, type, [](auto& v) { return v[0] * v[1]; }, mul);
  }
  if (op == "Div") {
    return elementwise(
        in, type, [](auto& v) { return v[0] / v[1]; },
        [&](const std::vector<std::int64_t>& v) {
          nonzero_divisor(v[1]);
          if (v[0] == kMin && v[1] == -1) throw NotFoldable{};
          return v[0] / v[1];
        });  // ONNX integer division truncates
  }
  if (op == "Mod") {
    bool c_style = int_attr(n, "fmod", 0) != 0;
    return elementwise(
        in, type, [](auto& v) { return std::fmod(v[0], v[1]); },
        [&](const std::vector<std::int64_t>& v) {
          nonzero_divisor(v[1]);
          if (v[1] == -1) return std::int64_t{0};
          std::int64_t r = v[0] % v[1];
          if (!c_style && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];  // sign of the divisor
          return r;
        });
  }
  if (op == "Pow") {
    return elementwise(
        in, type, [](auto& v) { return std::pow(v[0], v[1]); },
        [](const std::vector<std::int64_t>& v) {
          double p = std::pow(static_cast<double>(v[0]), static_cast<double>(v[1]));
          if (!std::isfinite(p) || std::abs(p) > kInt64Range) throw NotFoldable{};
          return static_cast<std::int64_t>(p);
        });
  }
  auto compare = [&](auto cmp) {
    return elementwise(
        in, type, [&](auto& v) { return cmp(v[0], v[1]) ? 1.0 : 0.0; },
        [&](const std::vector<std::int64_t>& v) -> std::int64_t {
          return cmp(v[0], v[1]) ? 1 : 0;
        });
  };
  if (op == "Equal") return compare([](auto a, auto b) { return a == b; });
  if (op == "Less") return compare([](auto a, auto b) { return a < b; });
  if (op == "Greater") return compare([](auto a, auto b) { return a > b; });
  if (op == "LessOrEqual") return compare([](auto a, auto b) { return a <= b; });
  if (op == "GreaterOrEqual") return compare([](auto a, auto b) { return a >= b; });
  if (op == "And") return compare([](auto a, auto b) { return a != 0 && b != 0; });
  if (op == "Or") return compare([](auto a, auto b) { return a != 0 || b != 0; });
  if (op == "Xor") return compare([](auto a, auto b) { return (a != 0) != (b != 0); });
  return std::nullopt;
}

std::optional<KnownTensor> fold_unary(const std::string& op, const KnownTensor& x,
                                      const OutputType& type) {
  std::vector<const KnownTensor*> in{&x};
  auto real_only = [&](double (*f)(double)) {
    return elementwise(
        in, type, [f](auto& v) { return f(v[0]); },
        [](const std::vector<std::int64_t>& v) { return v[0]; });  // identity on integers
  };
  if (op == "Neg") {
    return elementwise(
        in, type, [](auto& v) { return -v[0]; },
        [](const std::vector<std::int64_t>& v) {
          if (v[0] == std::numeric_limits<std::int64_t>::min()) throw NotFoldable{};
          return -v[0];
        });
  }
  if (op == "Abs") {
    return elementwise(
        in, type, [](auto& v) { return std::abs(v[0]); },
        [](const std::vector<std::int64_t>& v) {
          if (v[0] == std::numeric_limits<std::int64_t>::min()) throw NotFoldable{};
          return std::abs(v[0]);
        });
  }
  if (op == "Not") {
    return elementwise(in, type, nullptr, [](const std::vector<std::int64_t>& v) -> std::int64_t {
      return v[0] == 0 ? 1 : 0;
    });
  }
  if (op == "Sign") {
    return elementwise(
        in, type, [](auto& v) { return v[0] > 0 ? 1.0 : (v[0] < 0 ? -1.0 : 0.0); },
        [](const std::vector<std::int64_t>& v) -> std::int64_t {
          return v[0] > 0 ? 1 : (v[0] < 0 ? -1 : 0);
        });
  }
  if (op == "Floor") return real_only([](double v) { return std::floor(v); });
  if (op == "Ceil") return real_only([](double v) { return std::ceil(v); });
  if (op == "Round") return real_only([](double v) { return std::nearbyint(v); });
  if (op == "Sqrt") return real_only([](double v) { return std::sqrt(v); });
  if (op == "Reciprocal") return real_only([](double v) { return 1.0 / v; });
  return std::nullopt;
}

KnownTensor fold_cast(const KnownTensor& x, const OutputType& type) {
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = x.shape;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (out.elem_type == T::TensorProto_DataType_BOOL) {
      push(out, 0, (x.floating() ? x.reals[i] != 0 : x.ints[i] != 0) ? 1 : 0, false);
    } else if (x.floating() && !out.floating()) {
      push(out, std::trunc(x.reals[i]), 0, true);  // float to integer truncates
    } else {
      push(out, x.real(i), x.floating() ? 0 : x.ints[i], x.floating());
    }
  }
  return out;
}

// Normalises a possibly negative axis of a rank-`rank` tensor.
std::int64_t axis_of(std::int64_t axis, std::size_t rank, const char* field) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw FoldError(field, "axis " + std::to_string(axis) + " is outside [" + std::to_string(-r) +
                               ", " + std::to_string(r) + ")");
  }
  return axis < 0 ? axis + r : axis;
}

KnownTensor fold_shape(const onnx::NodeProto& n, const Shape& x, const OutputType& type) {
  auto rank = static_cast<std::int64_t>(x.size());
  auto clamp = [&](std::int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<std::int64_t>(v, 0, rank);
  };
  std::int64_t start = clamp(int_attr(n, "start", 0));
  std::int64_t end = clamp(int_attr(n, "end", rank));
  KnownTensor out;
  out.elem_type = type.elem_type;
  for (std::int64_t d = start; d < end; ++d) out.ints.push_back(x[static_cast<std::size_t>(d)]);
  out.shape = {static_cast<std::int64_t>(out.ints.size())};
  return out;
}

KnownTensor fold_gather(const onnx::NodeProto& n, const KnownTensor& data,
                        const KnownTensor& indices, const OutputType& type) {
  std::int64_t axis = axis_of(int_attr(n, "axis", 0), data.shape.size(), "attribute 'axis'");
  std::int64_t dim = data.shape[static_cast<std::size_t>(axis)];
  auto st = strides_of(data.shape);
  std::size_t q = indices.shape.size();
  auto ist = strides_of(indices.shape);
  std::vector<std::size_t> map;
  for_each_index(*type.shape, [&](const Shape& idx, std::size_t) {
    // Output index: data dims before axis, then the index dims, then data dims after axis.
    Shape index_pos(idx.begin() + axis, idx.begin() + axis + static_cast<std::int64_t>(q));
    std::int64_t lin = 0;
    for (std::size_t d = 0; d < q; ++d) lin += index_pos[d] * ist[d];
    std::int64_t i = indices.ints[static_cast<std::size_t>(lin)];
    if (i < -dim || i >= dim) {
      throw FoldError("input 'indices'", "index " + std::to_string(i) + " is outside [" +
                                             std::to_string(-dim) + ", " + std::to_string(dim) +
                                             ") for axis " + std::to_string(axis) +
                                             " of data with shape " + shape_text(data.shape));
    }
    if (i < 0) i += dim;
    std::int64_t k = 0;
    for (std::int64_t d = 0; d < axis; ++d) {
      k += idx[static_cast<std::size_t>(d)] * st[static_cast<std::size_t>(d)];
    }
    k += i * st[static_cast<std::size_t>(axis)];
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < data.shape.size(); ++d) {
      k += idx[d - 1 + q] * st[d];
    }
    map.push_back(static_cast<std::size_t>(k));
  });
  return gather_from(data, type, map);
}

KnownTensor fold_concat(const onnx::NodeProto& n, const std::vector<const KnownTensor*>& in,
                        const OutputType& type) {
  const Shape& out_shape = *type.shape;
  std::int64_t axis = axis_of(int_attr(n, "axis", 0), out_shape.size(), "attribute 'axis'");
  std::int64_t outer = count(out_shape.begin(), out_shape.begin() + axis);
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = out_shape;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const KnownTensor* t : in) {
      if (t->shape.size() != out_shape.size()) {
        throw FoldError("inputs", "an input of shape " + shape_text(t->shape) +
                                      " has another rank than the output " + shape_text(out_shape));
      }
      std::int64_t block = count(t->shape.begin() + axis, t->shape.end());
      for (std::int64_t j = 0; j < block; ++j) {
        auto k = static_cast<std::size_t>(o * block + j);
        push(out, t->floating() ? t->reals[k] : 0, t->floating() ? 0 : t->ints[k], t->floating());
      }
    }
  }
  return out;
}

// Slice's per-axis start and step for the output index (ONNX clamping rules).
KnownTensor fold_slice(const onnx::NodeProto& n, std::int64_t opset,
                       const std::vector<const KnownTensor*>& in, const OutputType& type) {
  const KnownTensor& data = *in[0];
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = ints_attr(n, "starts").value_or(std::vector<std::int64_t>{});
    ends = ints_attr(n, "ends").value_or(std::vector<std::int64_t>{});
    axes = ints_attr(n, "axes").value_or(std::vector<std::int64_t>{});
  } else {
    starts = in[1]->ints;
    ends = in[2]->ints;
    if (in.size() > 3 && in[3] != nullptr) axes = in[3]->ints;
    if (in.size() > 4 && in[4] != nullptr) steps = in[4]->ints;
  }
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  std::size_t rank = data.shape.size();
  std::vector<std::int64_t> first(rank, 0), step(rank, 1);
  if (axes.size() != starts.size() || ends.size() != starts.size() ||
      steps.size() != starts.size()) {
    throw FoldError("inputs", "starts, ends, axes and steps have " + std::to_string(starts.size()) +
                                  ", " + std::to_string(ends.size()) + ", " +
                                  std::to_string(axes.size()) + " and " +
                                  std::to_string(steps.size()) + " values; expected as many");
  }
  for (std::size_t i = 0; i < starts.size(); ++i) {
    auto a = static_cast<std::size_t>(axis_of(axes[i], rank, "input 'axes'"));
    std::int64_t dim = data.shape[a];
    std::int64_t s = steps[i];
    if (s == 0) throw FoldError("input 'steps'", "a step is 0");
    std::int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    b = s > 0 ? std::clamp<std::int64_t>(b, 0, dim) : std::clamp<std::int64_t>(b, 0, dim - 1);
    first[a] = b;
    step[a] = s;
  }
  auto st = strides_of(data.shape);
  std::vector<std::size_t> map;
  for_each_index(*type.shape, [&](const Shape& idx, std::size_t) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < rank; ++d) k += (first[d] + idx[d] * step[d]) * st[d];
    map.push_back(static_cast<std::size_t>(k));
  });
  return gather_from(data, type, map);
}

KnownTensor fold_tile(const KnownTensor& x, const OutputType& type) {
  auto st = strides_of(x.shape);
  std::vector<std::size_t> map;
  for_each_index(*type.shape, [&](const Shape& idx, std::size_t) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < x.shape.size(); ++d) k += (idx[d] % x.shape[d]) * st[d];
    map.push_back(static_cast<std::size_t>(k));
  });
  return gather_from(x, type, map);
}

KnownTensor fold_transpose(const onnx::NodeProto& n, const KnownTensor& x, const OutputType& type) {
  std::size_t rank = x.shape.size();
  std::vector<std::int64_t> perm = ints_attr(n, "perm").value_or(std::vector<std::int64_t>{});
  if (perm.empty()) {
    for (std::size_t d = rank; d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
  }
  auto st = strides_of(x.shape);
  std::vector<std::size_t> map;
  for_each_index(*type.shape, [&](const Shape& idx, std::size_t) {
    std::int64_t k = 0;
    for (std::size_t d = 0; d < rank; ++d) k += idx[d] * st[static_cast<std::size_t>(perm[d])];
    map.push_back(static_cast<std::size_t>(k));
  });
  return gather_from(x, type, map);
}

KnownTensor filled(const OutputType& type, double real, std::int64_t integer) {
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = *type.shape;
  auto n = static_cast<std::size_t>(count(out.shape));
  if (out.floating()) {
    out.reals.assign(n, real);
  } else {
    out.ints.assign(n, integer);
  }
  return out;
}

KnownTensor fold_range(const std::vector<const KnownTensor*>& in, const OutputType& type) {
  KnownTensor out;
  out.elem_type = type.elem_type;
  out.shape = *type.shape;
  auto n = static_cast<std::size_t>(count(out.shape));
  for (std::size_t i = 0; i < n; ++i) {
    auto step = static_cast<double>(i);
    push(out, in[0]->real(0) + step * in[2]->real(0),
         in[0]->floating() ? 0 : in[0]->ints[0] + static_cast<std::int64_t>(i) * in[2]->ints[0],
         in[0]->floating());
  }
  return out;
}

std::optional<KnownTensor> fold_constant(const onnx::NodeProto& n, const OutputType& type) {
  for (const auto& a : n.attribute()) {
    KnownTensor t;
    if (a.name() == "value") return read_tensor(a.t());
    if (a.name() == "value_int" || a.name() == "value_ints") {
      t.elem_type = T::TensorProto_DataType_INT64;
      if (a.name() == "value_int") {
        t.ints = {a.i()};
      } else {
        t.ints.assign(a.ints().begin(), a.ints().end());
        t.shape = {static_cast<std::int64_t>(t.ints.size())};
      }
      return t;
    }
    if (a.name() == "value_float" || a.name() == "value_floats") {
      t.elem_type = T::TensorProto_DataType_FLOAT;
      if (a.name() == "value_float") {
        t.reals = {a.f()};
      } else {
        t.reals.assign(a.floats().begin(), a.floats().end());
        t.shape = {static_cast<std::int64_t>(t.reals.size())};
      }
      return t;
    }
  }
  (void)type;
  return std::nullopt;
}

std::optional<KnownTensor> fold_one(const onnx::NodeProto& n, std::int64_t opset,
                                    const std::vector<const KnownTensor*>& in,
                                    const std::vector<const Shape*>& in_shapes,
                                    const OutputType& type) {
  const std::string& op = n.op_type();
  auto have = [&](std::size_t i) { return i < in.size() && in[i] != nullptr; };
  auto all_inputs = [&]() {
    return !in.empty() && std::all_of(in.begin(), in.end(), [](auto* t) { return t != nullptr; });
  };
  if (op == "Constant") return fold_constant(n, type);
  if (op == "Shape") {
    if (in_shapes.empty() || in_shapes[0] == nullptr) return std::nullopt;
    return fold_shape(n, *in_shapes[0], type);
  }
  if (op == "Size") {
    if (in_shapes.empty() || in_shapes[0] == nullptr) return std::nullopt;
    KnownTensor t;
    t.elem_type = type.elem_type;
    t.ints = {count(*in_shapes[0])};
    return t;
  }
  if (op == "ConstantOfShape") {
    if (!have(0)) return std::nullopt;
    const auto* value = attr(n, "value");
    if (value == nullptr) return filled(type, 0.0, 0);
    auto v = read_tensor(value->t());
    if (!v || v->size() != 1) throw FoldError("attribute 'value'", "expected one element");
    return filled(type, v->real(0), v->floating() ? 0 : v->ints[0]);
  }
  // Index-like inputs must be integers (a float there is an invalid model; leave it to
  // the runtime rather than read it as indices).
  auto integral = [&](std::size_t from) {
    for (std::size_t i = from; i < in.size(); ++i) {
      if (in[i] != nullptr && in[i]->floating()) return false;
    }
    return true;
  };
  if ((op == "Gather" || op == "Slice" || op == "Tile") && !integral(1)) return std::nullopt;
  if (op == "Range" && all_inputs() &&
      !(in[0]->floating() == in[1]->floating() && in[0]->floating() == in[2]->floating())) {
    return std::nullopt;
  }
  if (!all_inputs()) {
    // Ops with optional inputs that need only some of them.
    bool slice_ok = op == "Slice" && (opset < 10 ? have(0) : have(0) && have(1) && have(2)) &&
                    (in.size() <= 3 || in[3] != nullptr || n.input(3).empty()) &&
                    (in.size() <= 4 || in[4] != nullptr || n.input(4).empty());
    bool squeeze_ok = (op == "Squeeze" || op == "Unsqueeze") && have(0);
    if (!slice_ok && !squeeze_ok) return std::nullopt;
  }
  if (op == "Identity" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Flatten") {
    KnownTensor t = *in[0];
    t.shape = *type.shape;
    return t;
  }
  if (op == "Cast" || op == "CastLike") return fold_cast(*in[0], type);
  if (op == "Gather") return fold_gather(n, *in[0], *in[1], type);
  if (op == "Concat") return fold_concat(n, in, type);
  if (op == "Slice") return fold_slice(n, opset, in, type);
  if (op == "Expand")
    return gather_from(*in[0], type, broadcast_map(in[0]->shape, *type.shape, "input 'input'"));
  if (op == "Tile") return fold_tile(*in[0], type);
  if (op == "Transpose") return fold_transpose(n, *in[0], type);
  if (op == "Range") return fold_range(in, type);
  if (op == "Where") {
    return elementwise(
        in, type, [](auto& v) { return v[0] != 0 ? v[1] : v[2]; },
        [](const std::vector<std::int64_t>& v) { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (op == "Max" || op == "Min" || op == "Sum") {
    auto pick = [&op](auto& v) {
      auto r = v[0];
      for (std::size_t k = 1; k < v.size(); ++k) {
        r = op == "Max" ? std::max(r, v[k]) : op == "Min" ? std::min(r, v[k]) : r + v[k];
      }
      return r;
    };
    return elementwise(
        in, type, [&](const std::vector<double>& v) { return pick(v); },
        [&](const std::vector<std::int64_t>& v) { return pick(v); });
  }
  if (in.size() == 2) return fold_binary(op, n, in, type);
  if (in.size() == 1) return fold_unary(op, *in[0], type);
  return std::nullopt;
}

}  // namespace

bool KnownTensor::floating() const { return is_floating(elem_type); }

double KnownTensor::real(std::size_t i) const {
  return floating() ? reals[i] : static_cast<double>(ints[i]);
}

std::int64_t KnownTensor::integer(std::size_t i) const {
  return floating() ? static_cast<std::int64_t>(reals[i]) : ints[i];
}

bool foldable_type(std::int32_t t) {
  switch (t) {
    case T::TensorProto_DataType_FLOAT:
    case T::TensorProto_DataType_DOUBLE:
    case T::TensorProto_DataType_INT64:
    case T::TensorProto_DataType_INT32:
    case T::TensorProto_DataType_INT16:
    case T::TensorProto_DataType_INT8:
    case T::TensorProto_DataType_UINT8:
    case T::TensorProto_DataType_UINT16:
    case T::TensorProto_DataType_UINT32:
    case T::TensorProto_DataType_BOOL:
      return true;
    default:
      return false;
  }
}

std::optional<KnownTensor> read_tensor(const onnx::TensorProto& t) {
  if (!foldable_type(t.data_type()) ||
      t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    return std::nullopt;
  }
  KnownTensor out;
  out.elem_type = t.data_type();
  out.shape.assign(t.dims().begin(), t.dims().end());
  std::int64_t n = count(out.shape);
  if (n < 0 || n > kMaxFoldedElements) return std::nullopt;
  auto expect = [&](std::int64_t found) {
    if (found != n) {
      throw FoldError("", "the tensor holds " + std::to_string(found) + " values but its dims " +
                              shape_text(out.shape) + " need " + std::to_string(n));
    }
  };
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    std::size_t width = 0;
    switch (t.data_type()) {
      case T::TensorProto_DataType_DOUBLE:
      case T::TensorProto_DataType_INT64:
        width = 8;
        break;
      case T::TensorProto_DataType_FLOAT:
      case T::TensorProto_DataType_INT32:
      case T::TensorProto_DataType_UINT32:
        width = 4;
        break;
      case T::TensorProto_DataType_INT16:
      case T::TensorProto_DataType_UINT16:
        width = 2;
        break;
      default:
        width = 1;
    }
    expect(static_cast<std::int64_t>(raw.size() / width));
    if (raw.size() % width != 0) expect(-1);
    for (std::size_t i = 0; i < raw.size(); i += width) {
      const char* p = raw.data() + i;  // little-endian, as ONNX stores raw data
      switch (t.data_type()) {
        case T::TensorProto_DataType_FLOAT: {
          float v = 0;
          std::memcpy(&v, p, 4);
          out.reals.push_back(v);
          break;
        }
        case T::TensorProto_DataType_DOUBLE: {
          double v = 0;
          std::memcpy(&v, p, 8);
          out.reals.push_back(v);
          break;
        }
        case T::TensorProto_DataType_INT64: {
          std::int64_t v = 0;
          std::memcpy(&v, p, 8);
          out.ints.push_back(v);
          break;
        }
        case T::TensorProto_DataType_INT32: {
          std::int32_t v = 0;
          std::memcpy(&v, p, 4);
          out.ints.push_back(v);
          break;
        }
        case T::TensorProto_DataType_UINT32: {
          std::uint32_t v = 0;
          std::memcpy(&v, p, 4);
          out.ints.push_back(v);
          break;
        }
        case T::TensorProto_DataType_INT16: {
          std::int16_t v = 0;
          std::memcpy(&v, p, 2);
          out.ints.push_back(v);
          break;
        }
        case T::TensorProto_DataType_UINT16: {
          std::uint16_t v = 0;
          std::memcpy(&v, p, 2);
          out.ints.push_back(v);
          break;
        }
        case T::TensorProto_DataType_INT8:
          out.ints.push_back(static_cast<std::int8_t>(*p));
          break;
        default:  // UINT8, BOOL
          out.ints.push_back(static_cast<std::uint8_t>(*p));
      }
    }
    return out;
  }
  switch (t.data_type()) {
    case T::TensorProto_DataType_FLOAT:
      expect(t.float_data_size());
      out.reals.assign(t.float_data().begin(), t.float_data().end());
      break;
    case T::TensorProto_DataType_DOUBLE:
      expect(t.double_data_size());
      out.reals.assign(t.double_data().begin(), t.double_data().end());
      break;
    case T::TensorProto_DataType_INT64:
      expect(t.int64_data_size());
      out.ints.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case T::TensorProto_DataType_UINT32:
      expect(t.uint64_data_size());
      out.ints.assign(t.uint64_data().begin(), t.uint64_data().end());
      break;
    default:
      expect(t.int32_data_size());
      out.ints.assign(t.int32_data().begin(), t.int32_data().end());
  }
  return out;
}

onnx::TensorProto to_proto(const KnownTensor& t) {
  onnx::TensorProto p;
  p.set_data_type(t.elem_type);
  for (auto d : t.shape) p.add_dims(d);
  switch (t.elem_type) {
    case T::TensorProto_DataType_FLOAT:
      for (double v : t.reals) p.add_float_data(static_cast<float>(v));
      break;
    case T::TensorProto_DataType_DOUBLE:
      for (double v : t.reals) p.add_double_data(v);
      break;
    case T::TensorProto_DataType_INT64:
      for (auto v : t.ints) p.add_int64_data(v);
      break;
    case T::TensorProto_DataType_UINT32:
      for (auto v : t.ints) p.add_uint64_data(static_cast<std::uint64_t>(v));
      break;
    default:
      for (auto v : t.ints) p.add_int32_data(static_cast<std::int32_t>(v));
  }
  return p;
}

std::vector<std::optional<KnownTensor>> fold_node(const onnx::NodeProto& node, std::int64_t opset,
                                                  const std::vector<const KnownTensor*>& inputs,
                                                  const std::vector<const Shape*>& input_shapes,
                                                  const std::vector<OutputType>& outputs) {
  std::vector<std::optional<KnownTensor>> result(outputs.size());
  // Single-output ops only; the output must be small, of a tracked type, with a known shape.
  if (outputs.size() != 1 || !outputs[0].shape || !foldable_type(outputs[0].elem_type)) {
    return result;
  }
  std::int64_t n = count(*outputs[0].shape);
  if (n < 0 || n > kMaxFoldedElements) return result;
  std::optional<KnownTensor> folded;
  try {
    folded = fold_one(node, opset, inputs, input_shapes, outputs[0]);
  } catch (const NotFoldable&) {
    return result;
  }
  if (folded) {
    if (static_cast<std::int64_t>(folded->size()) != n || folded->shape != *outputs[0].shape) {
      throw FoldError("", "folding gives " + std::to_string(folded->size()) + " values of shape " +
                              shape_text(folded->shape) + " but the inferred output shape is " +
                              shape_text(*outputs[0].shape));
    }
    result[0] = std::move(folded);
  }
  return result;
}

}  // namespace gopt::datasets::onnx_folding
