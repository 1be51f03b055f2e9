#include "hardware/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "core/errors.h"
#include "core/graph_io.h"
#include "core/strings.h"
#include "core/yaml_values.h"

#ifndef GOPT_PROFILE_DIR
#error "GOPT_PROFILE_DIR must be defined by the build"
#endif

namespace gopt::hardware {
namespace {

// Reads fields of a YAML document in the one grammar of configs (core/yaml_values.h,
// docs/config.md "Values"): every error is an InputError located as a config problem is,
// "file:line:column" with the field path ("device_types.p100.compute_streams") and what was
// expected and found ("expected an integer in [1, 64], found '1e3'").
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& field,
                         const std::string& problem) const {
    throw core::InputError(core::yaml_where(source_, node), field, problem);
  }

  YAML::Node require(const YAML::Node& parent, const std::string& parent_field,
                     const std::string& key) const {
    YAML::Node child = parent[key];
    if (!child.IsDefined() || child.IsNull()) {
      fail(parent, join(parent_field, key), "missing required key '" + key + "'");
    }
    return child;
  }

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

  void expect_map(const YAML::Node& node, const std::string& field) const {
    if (!node.IsMap()) {
      fail(node, field,
           "expected a mapping (key: value lines), found " + core::yaml_describe(node));
    }
  }
  void expect_sequence(const YAML::Node& node, const std::string& field) const {
    if (!node.IsSequence())
      fail(node, field, "expected a list, found " + core::yaml_describe(node));
  }

  std::string string(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar())
      fail(node, field, "expected a string, found " + core::yaml_describe(node));
    return node.Scalar();
  }

  /// A number (core::parse_number) for which `ok` holds; `expected` says which.
  template <typename Ok>
  double number(const YAML::Node& node, const std::string& field, const std::string& expected,
                Ok ok) const {
    auto value = core::yaml_number(node);
    if (!value || !ok(*value)) {
      fail(node, field, "expected " + expected + ", found " + core::yaml_describe(node));
    }
    return *value;
  }

  double positive(const YAML::Node& node, const std::string& field) const {
    return number(node, field, "a positive number", [](double v) { return v > 0; });
  }

  double non_negative(const YAML::Node& node, const std::string& field) const {
    return number(node, field, "a number >= 0", [](double v) { return v >= 0; });
  }

  double fraction(const YAML::Node& node, const std::string& field) const {
    return number(node, field, "a fraction in (0, 1]", [](double v) { return v > 0 && v <= 1; });
  }

  /// An integer (core::parse_integer: "1e3" and "1.0" are not integers) in
  /// [min_value, max_value]; `expected` says which.
  std::int64_t integer(const YAML::Node& node, const std::string& field, std::int64_t min_value,
                       const std::string& expected,
                       std::int64_t max_value = std::numeric_limits<std::int64_t>::max()) const {
    auto value = core::yaml_integer(node);
    if (!value || *value < min_value || *value > max_value) {
      fail(node, field, "expected " + expected + ", found " + core::yaml_describe(node));
    }
    return *value;
  }

  bool boolean(const YAML::Node& node, const std::string& field) const {
    auto value = core::yaml_bool(node);
    if (!value) {
      fail(node, field,
           "expected " + std::string(core::kBoolText) + ", found " + core::yaml_describe(node));
    }
    return *value;
  }

  std::string optional_string(const YAML::Node& parent, const std::string& parent_field,
                              const std::string& key) const {
    YAML::Node child = parent[key];
    if (!child.IsDefined() || child.IsNull()) return "";
    return string(child, join(parent_field, key));
  }

  void check_keys(const YAML::Node& map, const std::string& field,
                  const std::vector<std::string>& allowed) const {
    for (const auto& item : map) {
      std::string key =
          item.first.IsScalar() ? item.first.Scalar() : core::yaml_describe(item.first);
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      fail(item.first, join(field, key),
           "unknown key '" + key + "'" + core::did_you_mean(key, allowed) +
               "; expected one of: " + core::join(allowed));
    }
  }

  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  std::string source_;
};

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

core::OpKind parse_kind(const Reader& r, const YAML::Node& key, const std::string& field) {
  auto kind = core::op_kind_from_string(key.Scalar());
  if (!kind) {
    r.fail(key, field,
           "unknown op kind '" + key.Scalar() +
               "'; expected 'default' or one of: " + join_names(core::op_kind_names()));
  }
  return *kind;
}

void parse_efficiency(const Reader& r, const YAML::Node& node, const std::string& field,
                      std::array<double, core::kNumOpKinds>& out) {
  r.expect_map(node, field);
  if (auto def = node["default"]; def.IsDefined()) {
    out.fill(r.fraction(def, field + ".default"));
  }
  for (const auto& item : node) {
    std::string key = item.first.Scalar();
    if (key == "default") continue;
    core::OpKind kind = parse_kind(r, item.first, field + "." + key);
    out[static_cast<std::size_t>(kind)] = r.fraction(item.second, field + "." + key);
  }
}

DeviceSpec parse_device_type(const Reader& r, const std::string& type_name, const YAML::Node& node,
                             const std::string& field) {
  r.expect_map(node, field);
  r.check_keys(node, field,
               {"peak_flops_per_s", "memory_bandwidth_bytes_per_s", "memory_capacity_bytes",
                "launch_overhead_s", "executor_overhead_s", "compute_streams", "copy_engine",
                "efficiency", "no_kernel_kinds", "source", "description", "time_curves",
                "shape_tables", "fused_loop_ratio"});
  DeviceSpec spec("", type_name);
  auto peaks = r.require(node, field, "peak_flops_per_s");
  r.expect_map(peaks, field + ".peak_flops_per_s");
  for (const auto& item : peaks) {
    std::string key = item.first.Scalar();
    std::string f = field + ".peak_flops_per_s." + key;
    auto dtype = core::dtype_from_string(key);
    if (!dtype) {
      r.fail(item.first, f,
             "unknown dtype '" + key + "'; expected one of: " + join_names(core::dtype_names()));
    }
    spec.peak_flops(*dtype, r.positive(item.second, f));
  }
  spec.memory_bandwidth(r.positive(r.require(node, field, "memory_bandwidth_bytes_per_s"),
                                   field + ".memory_bandwidth_bytes_per_s"));
  spec.memory_capacity(r.integer(r.require(node, field, "memory_capacity_bytes"),
                                 field + ".memory_capacity_bytes", 1,
                                 "a positive integer (bytes)"));
  spec.launch_overhead(
      r.non_negative(r.require(node, field, "launch_overhead_s"), field + ".launch_overhead_s"));
  if (auto overhead = node["executor_overhead_s"]; overhead.IsDefined()) {
    spec.executor_overhead(r.non_negative(overhead, field + ".executor_overhead_s"));
  }
  if (auto streams = node["compute_streams"]; streams.IsDefined()) {
    spec.streams(static_cast<int>(
        r.integer(streams, field + ".compute_streams", 1, "an integer in [1, 64]", 64)));
  }
  if (auto copy = node["copy_engine"]; copy.IsDefined()) {
    spec.copy_engine(r.boolean(copy, field + ".copy_engine"));
  }
  if (auto eff = node["efficiency"]; eff.IsDefined()) {
    std::string f = field + ".efficiency";
    r.expect_map(eff, f);
    r.check_keys(eff, f, {"compute", "memory"});
    if (auto c = eff["compute"]; c.IsDefined())
      parse_efficiency(r, c, f + ".compute", spec.compute_efficiency);
    if (auto m = eff["memory"]; m.IsDefined())
      parse_efficiency(r, m, f + ".memory", spec.memory_efficiency);
  }
  if (auto kinds = node["no_kernel_kinds"]; kinds.IsDefined()) {
    std::string f = field + ".no_kernel_kinds";
    r.expect_sequence(kinds, f);
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      std::string fi = f + "[" + std::to_string(i) + "]";
      r.string(kinds[i], fi);
      spec.without_kernel(parse_kind(r, kinds[i], fi));
    }
  }
  if (auto curves = node["time_curves"]; curves.IsDefined()) {
    std::string f = field + ".time_curves";
    r.expect_map(curves, f);
    for (const auto& item : curves) {
      std::string key = item.first.Scalar();
      std::string fk = f + "." + key;
      r.expect_map(item.second, fk);
      r.check_keys(item.second, fk, {"work", "time_s"});
      TimeCurve curve;
      auto work = r.require(item.second, fk, "work");
      auto time = r.require(item.second, fk, "time_s");
      r.expect_sequence(work, fk + ".work");
      r.expect_sequence(time, fk + ".time_s");
      if (work.size() != time.size() || work.size() == 0) {
        r.fail(item.second, fk,
               "expected work and time_s of the same non-zero length, found " +
                   std::to_string(work.size()) + " and " + std::to_string(time.size()));
      }
      for (std::size_t i = 0; i < work.size(); ++i) {
        std::string fi = "[" + std::to_string(i) + "]";
        curve.work.push_back(r.positive(work[i], fk + ".work" + fi));
        curve.time_s.push_back(r.non_negative(time[i], fk + ".time_s" + fi));
        if (i > 0 && !(curve.work[i] > curve.work[i - 1])) {
          r.fail(work[i], fk + ".work" + fi, "expected strictly increasing work");
        }
      }
      if (key.rfind("kind:", 0) == 0) {
        auto kind = core::op_kind_from_string(key.substr(5));
        if (!kind) {
          r.fail(item.first, fk,
                 "unknown op kind '" + key.substr(5) +
                     "' after 'kind:'; expected one of: " + join_names(core::op_kind_names()));
        }
        spec.kind_curves[static_cast<std::size_t>(*kind)] = std::move(curve);
      } else {
        spec.op_type_curves[key] = std::move(curve);
      }
    }
  }
  if (auto tables = node["shape_tables"]; tables.IsDefined()) {
    std::string f = field + ".shape_tables";
    r.expect_map(tables, f);
    for (const auto& item : tables) {
      std::string key = item.first.Scalar();
      std::string fk = f + "." + key;
      r.expect_map(item.second, fk);
      r.check_keys(item.second, fk, {"flops", "bytes", "time_s"});
      auto flops = r.require(item.second, fk, "flops");
      auto bytes = r.require(item.second, fk, "bytes");
      auto time = r.require(item.second, fk, "time_s");
      r.expect_sequence(flops, fk + ".flops");
      r.expect_sequence(bytes, fk + ".bytes");
      r.expect_sequence(time, fk + ".time_s");
      if (flops.size() != time.size() || bytes.size() != time.size() || time.size() == 0) {
        r.fail(item.second, fk,
               "expected flops, bytes and time_s of the same non-zero length, found " +
                   std::to_string(flops.size()) + ", " + std::to_string(bytes.size()) + " and " +
                   std::to_string(time.size()));
      }
      ShapeTable table;
      for (std::size_t i = 0; i < time.size(); ++i) {
        std::string fi = "[" + std::to_string(i) + "]";
        table.flops.push_back(r.non_negative(flops[i], fk + ".flops" + fi));
        table.bytes.push_back(
            r.integer(bytes[i], fk + ".bytes" + fi, 0, "an integer >= 0 (bytes)"));
        table.time_s.push_back(r.positive(time[i], fk + ".time_s" + fi));
      }
      spec.op_type_shapes[key] = std::move(table);
    }
  }
  if (auto fused = node["fused_loop_ratio"]; fused.IsDefined()) {
    std::string f = field + ".fused_loop_ratio";
    r.expect_map(fused, f);
    r.check_keys(fused, f, {"bytes", "ratio"});
    auto bytes = r.require(fused, f, "bytes");
    auto ratio = r.require(fused, f, "ratio");
    r.expect_sequence(bytes, f + ".bytes");
    r.expect_sequence(ratio, f + ".ratio");
    if (bytes.size() != ratio.size() || bytes.size() == 0) {
      r.fail(fused, f,
             "expected bytes and ratio of the same non-zero length, found " +
                 std::to_string(bytes.size()) + " and " + std::to_string(ratio.size()));
    }
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      std::string fi = "[" + std::to_string(i) + "]";
      spec.fused_loop_ratio.bytes.push_back(
          r.integer(bytes[i], f + ".bytes" + fi, 1, "an integer >= 1 (bytes)"));
      spec.fused_loop_ratio.ratio.push_back(r.positive(ratio[i], f + ".ratio" + fi));
      if (i > 0 && !(spec.fused_loop_ratio.bytes[i] > spec.fused_loop_ratio.bytes[i - 1])) {
        r.fail(bytes[i], f + ".bytes" + fi, "expected strictly increasing bytes");
      }
    }
  }
  spec.source = r.optional_string(node, field, "source");
  return spec;
}

struct LinkType {
  BytesPerSecond bandwidth = 0;
  Seconds latency = 0;
  std::string source;
};

LinkType parse_link_numbers(const Reader& r, const YAML::Node& node, const std::string& field,
                            const LinkType* base) {
  LinkType t = base ? *base : LinkType{};
  auto bw = node["bandwidth_bytes_per_s"];
  if (bw.IsDefined()) {
    t.bandwidth = r.positive(bw, field + ".bandwidth_bytes_per_s");
  } else if (!base) {
    r.require(node, field, "bandwidth_bytes_per_s");
  }
  auto lat = node["latency_s"];
  if (lat.IsDefined()) {
    t.latency = r.non_negative(lat, field + ".latency_s");
  } else if (!base) {
    r.require(node, field, "latency_s");
  }
  if (auto s = node["source"]; s.IsDefined()) t.source = r.string(s, field + ".source");
  return t;
}

}  // namespace

std::filesystem::path default_profile_dir() { return std::filesystem::path(GOPT_PROFILE_DIR); }

std::vector<std::string> list_profiles(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path resolve_profile_path(const std::string& name_or_path,
                                           const std::filesystem::path& dir) {
  std::filesystem::path as_path(name_or_path);
  auto ext = as_path.extension().string();
  bool looks_like_path =
      name_or_path.find('/') != std::string::npos || ext == ".yaml" || ext == ".yml";
  std::error_code ec;
  if (looks_like_path || std::filesystem::is_regular_file(as_path, ec)) {
    if (!std::filesystem::is_regular_file(as_path, ec)) {
      throw core::InputError(name_or_path, "", "no such hardware profile file");
    }
    return as_path;
  }
  auto candidate = dir / (name_or_path + ".yaml");
  if (!std::filesystem::is_regular_file(candidate, ec)) {
    throw core::InputError("", "--hardware",
                           "unknown hardware profile '" + name_or_path + "'" +
                               core::did_you_mean(name_or_path, list_profiles(dir)) +
                               "; available in " + dir.string() + ": " +
                               join_names(list_profiles(dir)) +
                               " (or give a path to a .yaml file)");
  }
  return candidate;
}

ClusterSpec parse_profile_yaml(std::string_view text, const std::string& source) {
  Reader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw core::InputError(core::yaml_where(source, e.mark), "", "not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) r.fail(root, "", "expected a mapping at the top level of a hardware profile");
  r.check_keys(
      root, "",
      {"format", "version", "name", "description", "provenance", "compute_dtype", "device_types",
       "devices", "switches", "link_types", "links", "routes", "minor_version"});
  auto format = r.require(root, "", "format");
  if (r.string(format, "format") != kProfileFormatName) {
    r.fail(format, "format",
           "expected '" + std::string(kProfileFormatName) + "', found '" + format.Scalar() + "'");
  }
  auto version = r.require(root, "", "version");
  if (r.integer(version, "version", std::numeric_limits<std::int64_t>::min(), "an integer") !=
      kProfileFormatVersion) {
    r.fail(version, "version",
           "this build reads version " + std::to_string(kProfileFormatVersion) + ", found " +
               core::yaml_describe(version));
  }

  // A minor version only adds optional fields; a file of a newer one may hold fields this
  // build does not know, so it is refused by name rather than by its first unknown key.
  if (const YAML::Node minor = root["minor_version"]; minor.IsDefined() && !minor.IsNull()) {
    const auto value =
        r.integer(minor, "minor_version", std::numeric_limits<std::int64_t>::min(), "an integer");
    if (value < 0 || value > kProfileFormatMinorVersion) {
      r.fail(minor, "minor_version",
             "profile format " + std::to_string(kProfileFormatVersion) + "." + minor.Scalar() +
                 " is not one this build reads (" + std::to_string(kProfileFormatVersion) +
                 ".0 to " + std::to_string(kProfileFormatVersion) + "." +
                 std::to_string(kProfileFormatMinorVersion) + "); update gopt");
    }
  }

  ClusterSpec spec;
  spec.name = r.string(r.require(root, "", "name"), "name");
  spec.description = r.optional_string(root, "", "description");

  auto prov = r.require(root, "", "provenance");
  r.expect_map(prov, "provenance");
  r.check_keys(prov, "provenance", {"kind", "date", "machine", "sources", "notes"});
  spec.provenance.kind = r.string(r.require(prov, "provenance", "kind"), "provenance.kind");
  if (spec.provenance.kind != "datasheet" && spec.provenance.kind != "measured" &&
      spec.provenance.kind != "estimate") {
    r.fail(prov["kind"], "provenance.kind",
           "expected 'datasheet', 'measured' or 'estimate', found '" + spec.provenance.kind + "'");
  }
  spec.provenance.date = r.string(r.require(prov, "provenance", "date"), "provenance.date");
  spec.provenance.machine = r.optional_string(prov, "provenance", "machine");
  spec.provenance.notes = r.optional_string(prov, "provenance", "notes");
  auto sources = r.require(prov, "provenance", "sources");
  r.expect_sequence(sources, "provenance.sources");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    spec.provenance.sources.push_back(
        r.string(sources[i], "provenance.sources[" + std::to_string(i) + "]"));
  }
  if (spec.provenance.sources.empty()) {
    r.fail(sources, "provenance.sources", "expected at least one source");
  }

  if (auto dt = root["compute_dtype"]; dt.IsDefined()) {
    auto dtype = core::dtype_from_string(r.string(dt, "compute_dtype"));
    if (!dtype) {
      r.fail(dt, "compute_dtype",
             "unknown dtype '" + dt.Scalar() +
                 "'; expected one of: " + join_names(core::dtype_names()));
    }
    spec.compute_dtype = *dtype;
  }

  // Device types, then devices.
  std::unordered_map<std::string, DeviceSpec> types;
  auto device_types = r.require(root, "", "device_types");
  r.expect_map(device_types, "device_types");
  for (const auto& item : device_types) {
    std::string name = item.first.Scalar();
    types.emplace(name, parse_device_type(r, name, item.second, "device_types." + name));
  }
  std::set<std::string> node_names;
  auto devices = r.require(root, "", "devices");
  r.expect_sequence(devices, "devices");
  if (devices.size() == 0) r.fail(devices, "devices", "expected at least one device");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::string f = "devices[" + std::to_string(i) + "]";
    const auto& node = devices[i];
    r.expect_map(node, f);
    r.check_keys(node, f, {"name", "type"});
    auto name_node = r.require(node, f, "name");
    std::string name = r.string(name_node, f + ".name");
    auto type_node = r.require(node, f, "type");
    std::string type = r.string(type_node, f + ".type");
    auto it = types.find(type);
    if (it == types.end()) {
      std::vector<std::string> known;
      for (const auto& [k, v] : types) known.push_back(k);
      std::sort(known.begin(), known.end());
      r.fail(type_node, f + ".type",
             "unknown device type '" + type + "'; defined in device_types: " + join_names(known));
    }
    if (!node_names.insert(name).second)
      r.fail(name_node, f + ".name", "duplicate name '" + name + "'");
    DeviceSpec d = it->second;
    d.name = name;
    spec.devices.push_back(std::move(d));
  }

  if (auto switches = root["switches"]; switches.IsDefined()) {
    r.expect_sequence(switches, "switches");
    for (std::size_t i = 0; i < switches.size(); ++i) {
      std::string f = "switches[" + std::to_string(i) + "]";
      const auto& node = switches[i];
      r.expect_map(node, f);
      r.check_keys(node, f, {"name", "description"});
      auto name_node = r.require(node, f, "name");
      std::string name = r.string(name_node, f + ".name");
      if (!node_names.insert(name).second)
        r.fail(name_node, f + ".name", "duplicate name '" + name + "'");
      spec.switches.push_back(name);
    }
  }

  std::unordered_map<std::string, LinkType> link_types;
  if (auto lt = root["link_types"]; lt.IsDefined()) {
    r.expect_map(lt, "link_types");
    for (const auto& item : lt) {
      std::string name = item.first.Scalar();
      std::string f = "link_types." + name;
      r.expect_map(item.second, f);
      r.check_keys(item.second, f, {"bandwidth_bytes_per_s", "latency_s", "source", "description"});
      link_types.emplace(name, parse_link_numbers(r, item.second, f, nullptr));
    }
  }
  auto links = r.require(root, "", "links");
  r.expect_sequence(links, "links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    std::string f = "links[" + std::to_string(i) + "]";
    const auto& node = links[i];
    r.expect_map(node, f);
    r.check_keys(node, f,
                 {"a", "b", "type", "name", "bandwidth_bytes_per_s", "latency_s", "source"});
    auto a_node = r.require(node, f, "a");
    auto b_node = r.require(node, f, "b");
    LinkSpec link(r.string(a_node, f + ".a"), r.string(b_node, f + ".b"));
    for (auto [end, end_node, key] :
         {std::tuple{&link.a, &a_node, "a"}, std::tuple{&link.b, &b_node, "b"}}) {
      if (!node_names.count(*end)) {
        r.fail(*end_node, f + "." + key, "unknown device or switch '" + *end + "'");
      }
    }
    const LinkType* base = nullptr;
    if (auto type_node = node["type"]; type_node.IsDefined()) {
      link.type = r.string(type_node, f + ".type");
      auto it = link_types.find(link.type);
      if (it == link_types.end()) {
        r.fail(type_node, f + ".type", "unknown link type '" + link.type + "'");
      }
      base = &it->second;
    }
    LinkType numbers = parse_link_numbers(r, node, f, base);
    link.bandwidth(numbers.bandwidth).latency(numbers.latency);
    link.source = numbers.source;
    if (auto n = node["name"]; n.IsDefined()) link.with_name(r.string(n, f + ".name"));
    spec.links.push_back(std::move(link));
  }

  if (auto routes = root["routes"]; routes.IsDefined()) {
    r.expect_sequence(routes, "routes");
    for (std::size_t i = 0; i < routes.size(); ++i) {
      std::string f = "routes[" + std::to_string(i) + "]";
      const auto& node = routes[i];
      r.expect_map(node, f);
      r.check_keys(node, f, {"from", "to", "via"});
      RouteSpec route;
      auto from = r.require(node, f, "from");
      auto to = r.require(node, f, "to");
      route.from = r.string(from, f + ".from");
      route.to = r.string(to, f + ".to");
      bool from_is_device = false;
      bool to_is_device = false;
      for (const auto& d : spec.devices) {
        from_is_device = from_is_device || d.name == route.from;
        to_is_device = to_is_device || d.name == route.to;
      }
      if (!from_is_device) r.fail(from, f + ".from", "unknown device '" + route.from + "'");
      if (!to_is_device) r.fail(to, f + ".to", "unknown device '" + route.to + "'");
      if (auto via = node["via"]; via.IsDefined()) {
        r.expect_sequence(via, f + ".via");
        for (std::size_t k = 0; k < via.size(); ++k) {
          std::string fk = f + ".via[" + std::to_string(k) + "]";
          std::string name = r.string(via[k], fk);
          if (!node_names.count(name))
            r.fail(via[k], fk, "unknown device or switch '" + name + "'");
          route.via.push_back(name);
        }
      }
      spec.routes.push_back(std::move(route));
    }
  }
  return spec;
}

Cluster load_profile(const std::string& name_or_path, const std::filesystem::path& dir) {
  auto path = resolve_profile_path(name_or_path, dir);
  std::string text = core::read_text_file(path);
  return Cluster::build(parse_profile_yaml(text, path.string()), path.string());
}

namespace {

// Every number reads back as exactly the double written (core::number_text), so a curve's
// distinct work values stay strictly increasing in the file.
std::string num(double v) {
  std::string s = core::number_text(v);
  // YAML reads "1e-05" as a string in some loaders; keep a mantissa dot for safety.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

}  // namespace

std::string profile_yaml(const ClusterSpec& spec) {
  std::ostringstream y;
  y << "# gopt hardware profile. Format: docs/hardware-profiles.md.\n";
  y << "format: " << kProfileFormatName << "\nversion: " << kProfileFormatVersion
    << "\nminor_version: " << kProfileFormatMinorVersion << "\n";
  y << "name: " << quoted(spec.name) << "\n";
  if (!spec.description.empty()) y << "description: " << quoted(spec.description) << "\n";
  const auto& p = spec.provenance;
  y << "provenance:\n  kind: " << quoted(p.kind) << "\n  date: " << quoted(p.date)
    << "\n  machine: " << quoted(p.machine) << "\n  sources:\n";
  for (const auto& s : p.sources) y << "    - " << quoted(s) << "\n";
  if (!p.notes.empty()) y << "  notes: " << quoted(p.notes) << "\n";
  y << "compute_dtype: " << core::to_string(spec.compute_dtype) << "\n";
  y << "device_types:\n";
  std::vector<std::string> written;
  for (const auto& d : spec.devices) {
    if (std::find(written.begin(), written.end(), d.type) != written.end()) continue;
    written.push_back(d.type);
    y << "  " << d.type << ":\n    peak_flops_per_s: {";
    bool first = true;
    for (int t = 0; t < kNumDTypes; ++t) {
      if (!(d.peak_flops_per_s[static_cast<std::size_t>(t)] > 0)) continue;
      y << (first ? "" : ", ") << core::to_string(static_cast<core::DType>(t)) << ": "
        << num(d.peak_flops_per_s[static_cast<std::size_t>(t)]);
      first = false;
    }
    y << "}\n    memory_bandwidth_bytes_per_s: " << num(d.memory_bandwidth_bytes_per_s) << "\n";
    y << "    memory_capacity_bytes: " << d.memory_capacity_bytes << "\n";
    y << "    launch_overhead_s: " << num(d.launch_overhead_s) << "\n";
    if (d.executor_overhead_s > 0) {
      y << "    executor_overhead_s: " << num(d.executor_overhead_s) << "\n";
    }
    y << "    compute_streams: " << d.compute_streams << "\n";
    if (!d.has_copy_engine) y << "    copy_engine: false\n";
    std::vector<std::string> none;
    for (int k = 0; k < core::kNumOpKinds; ++k) {
      if (d.no_kernel[static_cast<std::size_t>(k)]) {
        none.emplace_back(core::to_string(static_cast<core::OpKind>(k)));
      }
    }
    y << "    no_kernel_kinds: [";
    for (std::size_t i = 0; i < none.size(); ++i) y << (i ? ", " : "") << none[i];
    y << "]\n    efficiency:\n";
    for (int pass = 0; pass < 2; ++pass) {
      const auto& e = pass == 0 ? d.compute_efficiency : d.memory_efficiency;
      y << (pass == 0 ? "      compute: {" : "      memory: {");
      for (int k = 0; k < core::kNumOpKinds; ++k) {
        y << (k ? ", " : "") << core::to_string(static_cast<core::OpKind>(k)) << ": "
          << num(e[static_cast<std::size_t>(k)]);
      }
      y << "}\n";
    }
    auto curve = [&](const std::string& key, const TimeCurve& c) {
      y << "      " << quoted(key) << ": {work: [";
      for (std::size_t i = 0; i < c.work.size(); ++i) y << (i ? ", " : "") << num(c.work[i]);
      y << "], time_s: [";
      for (std::size_t i = 0; i < c.time_s.size(); ++i) y << (i ? ", " : "") << num(c.time_s[i]);
      y << "]}\n";
    };
    bool any_kind = std::any_of(d.kind_curves.begin(), d.kind_curves.end(),
                                [](const TimeCurve& c) { return !c.empty(); });
    if (!d.op_type_curves.empty() || any_kind) {
      y << "    time_curves:\n";
      for (const auto& [type, c] : d.op_type_curves) curve(type, c);
      for (int k = 0; k < core::kNumOpKinds; ++k) {
        const auto& c = d.kind_curves[static_cast<std::size_t>(k)];
        if (!c.empty())
          curve("kind:" + std::string(core::to_string(static_cast<core::OpKind>(k))), c);
      }
    }
    if (!d.op_type_shapes.empty()) {
      y << "    shape_tables:\n";
      for (const auto& [type, t] : d.op_type_shapes) {
        y << "      " << quoted(type) << ": {flops: [";
        for (std::size_t i = 0; i < t.flops.size(); ++i) y << (i ? ", " : "") << num(t.flops[i]);
        y << "], bytes: [";
        for (std::size_t i = 0; i < t.bytes.size(); ++i) y << (i ? ", " : "") << t.bytes[i];
        y << "], time_s: [";
        for (std::size_t i = 0; i < t.time_s.size(); ++i) y << (i ? ", " : "") << num(t.time_s[i]);
        y << "]}\n";
      }
    }
    if (!d.fused_loop_ratio.empty()) {
      const auto& fr = d.fused_loop_ratio;
      y << "    fused_loop_ratio: {bytes: [";
      for (std::size_t i = 0; i < fr.bytes.size(); ++i) y << (i ? ", " : "") << fr.bytes[i];
      y << "], ratio: [";
      for (std::size_t i = 0; i < fr.ratio.size(); ++i) y << (i ? ", " : "") << num(fr.ratio[i]);
      y << "]}\n";
    }
    if (!d.source.empty()) y << "    source: " << quoted(d.source) << "\n";
  }
  y << "devices:\n";
  for (const auto& d : spec.devices) {
    y << "  - {name: " << quoted(d.name) << ", type: " << quoted(d.type) << "}\n";
  }
  if (!spec.switches.empty()) {
    y << "switches:\n";
    for (const auto& s : spec.switches) y << "  - {name: " << quoted(s) << "}\n";
  }
  y << "links:" << (spec.links.empty() ? " []" : "") << "\n";
  for (const auto& l : spec.links) {
    y << "  - {a: " << quoted(l.a) << ", b: " << quoted(l.b)
      << ", bandwidth_bytes_per_s: " << num(l.bandwidth_bytes_per_s)
      << ", latency_s: " << num(l.latency_s);
    if (!l.name.empty()) y << ", name: " << quoted(l.name);
    if (!l.source.empty()) y << ", source: " << quoted(l.source);
    y << "}\n";
  }
  if (!spec.routes.empty()) {
    y << "routes:\n";
    for (const auto& r : spec.routes) {
      y << "  - {from: " << quoted(r.from) << ", to: " << quoted(r.to) << ", via: [";
      for (std::size_t i = 0; i < r.via.size(); ++i) y << (i ? ", " : "") << quoted(r.via[i]);
      y << "]}\n";
    }
  }
  return y.str();
}

}  // namespace gopt::hardware
