#include "core/graph_io.h"

#include <unistd.h>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/errors.h"
#include "core/json_parse.h"
#include "core/strings.h"

namespace gopt::core {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string type_name(const Json& j) {
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number_float()) return "a number";
  if (j.is_string()) return "a string '" + j.get_ref<const std::string&>() + "'";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_null()) return "null";
  if (j.is_array()) return "an array";
  return "an object";
}

// Reads fields of one JSON object, remembering which keys were asked for so that unknown
// keys can be reported. Every error names the source file and the object's location; the
// location text is only built when an error is reported (reading stays allocation-light).
class FieldReader {
 public:
  // `location` builds the object's location text, e.g. "nodes[3] ('a')".
  using LocationFn = std::string (*)(const Json& object, std::size_t index);

  FieldReader(const Json& object, const std::string& source, LocationFn location, std::size_t index)
      : object_(object), source_(source), location_(location), index_(index) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    std::string where = location_(object_, index_);
    throw InputError(source_, field.empty() ? where : where + "." + field, problem);
  }

  const Json* get(const char* field) {
    if (num_known_ < kMaxFields) known_[num_known_++] = field;
    auto it = object_.find(field);
    return it == object_.end() ? nullptr : &*it;
  }

  const Json& require(const char* field) {
    const Json* j = get(field);
    if (!j) fail("", std::string("missing required field '") + field + "'");
    return *j;
  }

  std::string string(const char* field, bool required) {
    const Json* j = required ? &require(field) : get(field);
    if (!j) return {};
    if (!j->is_string()) fail(field, "expected a string, found " + type_name(*j));
    return j->get<std::string>();
  }

  double number(const char* field, double fallback) {
    const Json* j = get(field);
    if (!j) return fallback;
    if (!j->is_number()) fail(field, "expected a number, found " + type_name(*j));
    return j->get<double>();
  }

  std::int64_t integer(const char* field, std::int64_t fallback, std::int64_t min) {
    const Json* j = get(field);
    if (!j) return fallback;
    return as_integer(*j, field, min);
  }

  // A size in bytes: absent (derived), or in [0, kMaxBytes].
  Bytes size(const char* field, Bytes fallback) {
    Bytes value = integer(field, fallback, 0);
    if (value != kDerivedBytes && value > kMaxBytes) {
      fail(field, "must be at most " + std::to_string(kMaxBytes) + " bytes (2^60), found " +
                      std::to_string(value));
    }
    return value;
  }

  std::int64_t as_integer(const Json& j, const char* field, std::int64_t min) const {
    return as_integer(
        j, [field] { return std::string(field); }, min);
  }

  // `field` is a callable producing the field's name, called only on error.
  template <typename FieldName>
  std::int64_t as_integer(const Json& j, FieldName field, std::int64_t min) const {
    std::int64_t value = 0;
    // is_number_integer() is true for unsigned numbers too: test unsigned first, or
    // 18446744073709551615 would read as -1.
    if (j.is_number_integer() && !j.is_number_unsigned()) {
      value = j.get<std::int64_t>();
    } else if (j.is_number_unsigned()) {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail(field(), "integer too large: " + std::to_string(u));
      }
      value = static_cast<std::int64_t>(u);
    } else if (j.is_number_float()) {
      double d = j.get<double>();
      if (!(std::floor(d) == d && std::fabs(d) < 9.2e18)) {
        fail(field(), "expected an integer, found " + j.dump());
      }
      value = static_cast<std::int64_t>(d);
    } else {
      fail(field(), "expected an integer, found " + type_name(j));
    }
    if (value < min) {
      fail(field(), "must be >= " + std::to_string(min) + ", found " + std::to_string(value));
    }
    return value;
  }

  bool boolean(const char* field, bool fallback) {
    const Json* j = get(field);
    if (!j) return fallback;
    if (!j->is_boolean()) fail(field, "expected true or false, found " + type_name(*j));
    return j->get<bool>();
  }

  std::map<std::string, std::string> string_map(const char* field) {
    std::map<std::string, std::string> out;
    const Json* j = get(field);
    if (!j) return out;
    if (!j->is_object()) fail(field, "expected an object of strings, found " + type_name(*j));
    for (auto it = j->begin(); it != j->end(); ++it) {
      if (!it.value().is_string()) {
        fail(std::string(field) + "." + it.key(),
             "expected a string, found " + type_name(it.value()));
      }
      out.emplace(it.key(), it.value().get<std::string>());
    }
    return out;
  }

  // Unknown keys are errors: a misspelt "flop" must not silently become 0 FLOPs.
  void reject_unknown(const char* hint) const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (!is_known(it.key())) {
        std::vector<std::string> names(known_.begin(), known_.begin() + num_known_);
        fail(it.key(), "unknown field" + did_you_mean(it.key(), names) +
                           "; expected one of: " + join(names) + hint);
      }
    }
  }

 private:
  static constexpr std::size_t kMaxFields = 24;

  bool is_known(const std::string& key) const {
    for (std::size_t i = 0; i < num_known_; ++i) {
      if (key == known_[i]) return true;
    }
    return false;
  }

  const Json& object_;
  const std::string& source_;
  LocationFn location_;
  std::size_t index_;
  std::array<const char*, kMaxFields> known_{};
  std::size_t num_known_ = 0;
};

std::string top_location(const Json&, std::size_t) { return ""; }

std::string node_location(const Json& j, std::size_t index) {
  std::string location = "nodes[" + std::to_string(index) + "]";
  if (auto it = j.find("name"); it != j.end() && it->is_string()) {
    location += " ('" + it->get<std::string>() + "')";
  }
  return location;
}

std::string edge_location(const Json&, std::size_t index) {
  return "edges[" + std::to_string(index) + "]";
}

Shape read_shape(FieldReader& r, const Json& j, const std::string& field) {
  if (!j.is_array()) r.fail(field, "expected an array of dimensions, found " + type_name(j));
  Shape shape;
  shape.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    shape.push_back(r.as_integer(
        j[i], [&field, i] { return field + "[" + std::to_string(i) + "]"; }, 0));
  }
  return shape;
}

NodeAttrs read_node(const Json& j, std::size_t index, const std::string& source) {
  if (!j.is_object()) {
    throw InputError(source, node_location(j, index),
                     "expected a node object, found " + type_name(j));
  }
  FieldReader r(j, source, node_location, index);
  NodeAttrs n;
  n.name = r.string("name", true);
  if (n.name.empty()) r.fail("name", "a node name must not be empty");
  n.op_type = r.string("op", true);
  std::string kind = r.string("kind", false);
  if (kind.empty()) {
    n.kind = classify_op_type(n.op_type);
  } else if (auto k = op_kind_from_string(kind)) {
    n.kind = *k;
  } else {
    r.fail("kind", "unknown op kind '" + kind + "'; expected one of: " + join(op_kind_names()));
  }
  const Json* shape = r.get("shape");
  const Json* shapes = r.get("shapes");
  if (shape && shapes) r.fail("shape", "give either 'shape' or 'shapes', not both");
  if (shape) n.output_shapes.push_back(read_shape(r, *shape, "shape"));
  if (shapes) {
    if (!shapes->is_array())
      r.fail("shapes", "expected an array of shapes, found " + type_name(*shapes));
    for (std::size_t i = 0; i < shapes->size(); ++i) {
      n.output_shapes.push_back(read_shape(r, (*shapes)[i], "shapes[" + std::to_string(i) + "]"));
    }
  }
  std::string dtype = r.string("dtype", false);
  if (!dtype.empty()) {
    auto d = dtype_from_string(dtype);
    if (!d)
      r.fail("dtype", "unknown dtype '" + dtype + "'; expected one of: " + join(dtype_names()));
    n.dtype = *d;
  }
  n.flops = r.number("flops", 0.0);
  if (!std::isfinite(n.flops) || n.flops < 0 || n.flops > kMaxFlops) {
    r.fail("flops", "must be a finite number >= 0 and <= 1e30, found " + std::to_string(n.flops));
  }
  n.bytes_read = r.size("bytes_read", kDerivedBytes);
  n.bytes_written = r.size("bytes_written", kDerivedBytes);
  n.output_bytes = r.size("output_bytes", kDerivedBytes);
  n.param_bytes = r.size("param_bytes", 0);
  n.layer = static_cast<std::int32_t>(r.integer("layer", -1, -1));
  n.branch = static_cast<std::int32_t>(r.integer("branch", -1, -1));
  std::string phase = r.string("phase", false);
  if (!phase.empty()) {
    auto p = phase_from_string(phase);
    if (!p)
      r.fail("phase", "unknown phase '" + phase + "'; expected one of: " + join(phase_names()));
    n.phase = *p;
  }
  n.colocation_group = r.string("colocation", false);
  n.attrs = r.string_map("attrs");
  r.reject_unknown(" (put custom data under 'attrs')");
  return n;
}

}  // namespace

Graph parse_graph_json(std::string_view text, const std::string& source) {
  Json doc = parse_json_document(text, source);
  if (!doc.is_object()) {
    throw InputError(source, "",
                     "expected a JSON object at the top level, found " + type_name(doc));
  }
  FieldReader top(doc, source, top_location, 0);
  auto fail_top = [&](const std::string& field, const std::string& problem) {
    throw InputError(source, field, problem);
  };
  const Json& format = top.require("format");
  if (!format.is_string() || format.get<std::string>() != kGraphFormatName) {
    fail_top("format", "expected \"" + std::string(kGraphFormatName) + "\", found " +
                           type_name(format) + " (is this a gopt graph file?)");
  }
  const Json& version = top.require("version");
  if (!version.is_number_integer() || version.get<std::int64_t>() != kGraphFormatVersion) {
    fail_top("version", "unsupported format version " + version.dump() +
                            "; this gopt reads version " + std::to_string(kGraphFormatVersion));
  }
  Graph graph(top.string("name", true));
  graph.set_family(top.string("family", false));
  graph.mutable_attrs() = top.string_map("attrs");

  const Json& nodes = top.require("nodes");
  if (!nodes.is_array()) fail_top("nodes", "expected an array of nodes, found " + type_name(nodes));
  // Names index into the document's own strings, which outlive the loop over edges.
  std::unordered_map<std::string_view, NodeId> ids;
  ids.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeAttrs attrs = read_node(nodes[i], i, source);
    const auto& name = nodes[i]["name"].get_ref<const std::string&>();
    auto [first, inserted] = ids.emplace(name, static_cast<NodeId>(i));
    if (!inserted) {
      throw GraphError(source, "nodes[" + std::to_string(i) + "]",
                       "duplicate node name '" + attrs.name + "' (first defined at nodes[" +
                           std::to_string(first->second) + "])",
                       {attrs.name});
    }
    graph.add_node(std::move(attrs));
  }
  auto find = [&ids](const std::string& name) -> std::optional<NodeId> {
    auto it = ids.find(name);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  };

  if (const Json* edges = top.get("edges")) {
    if (!edges->is_array())
      fail_top("edges", "expected an array of edges, found " + type_name(*edges));
    for (std::size_t i = 0; i < edges->size(); ++i) {
      const Json& e = (*edges)[i];
      if (!e.is_object()) {
        fail_top(edge_location(e, i), "expected an edge object, found " + type_name(e));
      }
      FieldReader r(e, source, edge_location, i);
      std::string src = r.string("src", true);
      std::string dst = r.string("dst", true);
      EdgeAttrs attrs;
      attrs.control = r.boolean("control", false);
      attrs.bytes = r.size("bytes", kDerivedBytes);
      r.reject_unknown("");
      auto s = find(src);
      if (!s) r.fail("src", "unknown node '" + src + "'");
      auto d = find(dst);
      if (!d) r.fail("dst", "unknown node '" + dst + "'");
      if (*s == *d) {
        throw GraphError(source, edge_location(e, i),
                         "edge from node '" + src + "' to itself is a cycle", {src, src});
      }
      graph.add_edge(*s, *d, attrs);
    }
  }
  top.reject_unknown("");
  graph.validate(source);
  graph.complete(source);
  return graph;
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    bool exists = std::filesystem::exists(path, ec);
    throw InputError(path.string(), "",
                     exists ? "cannot open the file for reading" : "no such file");
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path.string(), "", "error while reading the file");
  return std::move(buffer).str();
}

Graph read_graph_file(const std::filesystem::path& path) {
  return parse_graph_json(read_text_file(path), path.string());
}

std::string to_graph_json(const Graph& graph, bool pretty) {
  OrderedJson doc;
  doc["format"] = kGraphFormatName;
  doc["version"] = kGraphFormatVersion;
  doc["name"] = graph.name();
  if (!graph.family().empty()) doc["family"] = graph.family();
  if (!graph.attrs().empty()) doc["attrs"] = graph.attrs();

  // The bytes a reader would derive for what is written, to leave out defaults.
  std::vector<Bytes> in_bytes(static_cast<std::size_t>(graph.num_nodes()), 0);
  OrderedJson edges = OrderedJson::array();
  graph.for_each_edge([&](NodeId s, NodeId d, const EdgeAttrs& e) {
    OrderedJson j;
    j["src"] = graph.node(s).name;
    j["dst"] = graph.node(d).name;
    Bytes derived = e.control ? 0 : graph.node(s).output_bytes;
    if (e.bytes != derived) j["bytes"] = e.bytes;
    if (e.control) j["control"] = true;
    in_bytes[static_cast<std::size_t>(d)] += e.bytes;
    edges.push_back(std::move(j));
  });

  OrderedJson nodes = OrderedJson::array();
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    const NodeAttrs& n = graph.node(v);
    OrderedJson j;
    j["name"] = n.name;
    j["op"] = n.op_type;
    if (n.kind != classify_op_type(n.op_type)) j["kind"] = to_string(n.kind);
    if (n.output_shapes.size() == 1) {
      j["shape"] = n.output_shapes.front();
    } else if (!n.output_shapes.empty()) {
      j["shapes"] = n.output_shapes;
    }
    if (n.dtype != DType::kFloat32) j["dtype"] = to_string(n.dtype);
    if (n.flops != 0) j["flops"] = n.flops;
    Bytes derived_output = 0;
    for (const auto& shape : n.output_shapes) {
      derived_output += num_elements(shape) * dtype_size_bytes(n.dtype);
    }
    if (n.output_bytes != derived_output) j["output_bytes"] = n.output_bytes;
    if (n.bytes_read != in_bytes[static_cast<std::size_t>(v)]) j["bytes_read"] = n.bytes_read;
    if (n.bytes_written != n.output_bytes) j["bytes_written"] = n.bytes_written;
    if (n.param_bytes != 0) j["param_bytes"] = n.param_bytes;
    if (n.layer != -1) j["layer"] = n.layer;
    if (n.branch != -1) j["branch"] = n.branch;
    if (n.phase != Phase::kUnknown) j["phase"] = to_string(n.phase);
    if (!n.colocation_group.empty()) j["colocation"] = n.colocation_group;
    if (!n.attrs.empty()) j["attrs"] = n.attrs;
    nodes.push_back(std::move(j));
  }
  doc["nodes"] = std::move(nodes);
  doc["edges"] = std::move(edges);
  std::string text = pretty ? doc.dump(1) : doc.dump();
  text += '\n';
  return text;
}

void write_text_file_atomic(const std::filesystem::path& path, std::string_view text) {
  auto tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path.string(), "", "cannot open the file for writing");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(path.string(), "", "error while writing the file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(path.string(), "", "cannot move the written file into place: " + ec.message());
  }
}

void check_can_write(const std::filesystem::path& path, const std::string& option) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(option, path.string(), "expected a file to write, found a directory");
  }
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(option, path.string(), "the directory " + dir.string() + " does not exist");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(option, path.string(),
                     "cannot write to the directory " + dir.string() + ": " + std::strerror(errno));
  }
}

void write_graph_file(const Graph& graph, const std::filesystem::path& path, bool pretty) {
  write_text_file_atomic(path, to_graph_json(graph, pretty));
}

}  // namespace gopt::core
