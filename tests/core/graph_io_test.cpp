#include "core/graph_io.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/errors.h"
#include "tests/support/random_dag.h"

namespace gopt::core {
namespace {

// Parses `text` expecting an InputError whose message contains every fragment.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  try {
    (void)parse_graph_json(text, "bad.json");
    FAIL() << "expected an error for: " << text;
  } catch (const InputError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("bad.json: ", 0), 0u) << message;
    for (const auto& f : fragments) {
      EXPECT_NE(message.find(f), std::string::npos) << "missing '" << f << "' in: " << message;
    }
  }
}

const char* kHeader = R"("format": "gopt-graph", "version": 1, "name": "t")";

std::string doc(const std::string& nodes, const std::string& edges = "[]") {
  return std::string("{") + kHeader + R"(, "nodes": )" + nodes + R"(, "edges": )" + edges + "}";
}

TEST(GraphIoTest, MinimalFileUsesDocumentedDefaults) {
  Graph g = parse_graph_json(doc(R"([{"name": "a", "op": "Placeholder", "shape": [2, 3]},
                                     {"name": "b", "op": "MatMul"}])",
                                 R"([{"src": "a", "dst": "b"}])"),
                             "min.json");
  ASSERT_EQ(g.num_nodes(), 2);
  const auto& a = g.node(0);
  EXPECT_EQ(a.kind, OpKind::kInput);
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.output_bytes, 24);
  EXPECT_EQ(a.bytes_written, 24);
  EXPECT_EQ(a.flops, 0);
  EXPECT_EQ(a.layer, -1);
  EXPECT_EQ(a.phase, Phase::kUnknown);
  const auto& b = g.node(1);
  EXPECT_EQ(b.kind, OpKind::kMatMul);
  EXPECT_EQ(b.bytes_read, 24);  // the edge's bytes default to the producer's output bytes
  EXPECT_EQ(b.output_bytes, 0);
}

TEST(GraphIoTest, EveryFieldRoundTrips) {
  GraphBuilder builder("full");
  builder.family("mlp").attr("batch", "64");
  auto x = builder.add("x", "IteratorGetNext").output({64, 784}).dtype(DType::kFloat16);
  auto w = builder.add("w", "VariableV2").output({784, 10}).param_bytes(31360).colocation("w");
  auto mm = builder.add("mm", "MatMul")
                .output({64, 10})
                .flops(2.0 * 64 * 784 * 10 + 0.5)
                .layer(3)
                .branch(1)
                .phase(Phase::kBackward)
                .colocation("w")
                .attr("transpose_b", "true")
                .bytes_read(1)
                .bytes_written(2)
                .output_bytes(3);
  auto odd = builder.add("odd", "Custom").kind(OpKind::kMatMul).output({2}).output({3, 3});
  auto sink = builder.add("sink", "NoOp");
  builder.connect(x, mm).connect(w, mm, 12345).connect(mm, odd).control(odd, sink);
  Graph g = std::move(builder).build();

  for (bool pretty : {false, true}) {
    std::string text = to_graph_json(g, pretty);
    Graph back = parse_graph_json(text, "rt.json");
    EXPECT_TRUE(same_graph(g, back)) << text;
    EXPECT_EQ(to_graph_json(back, pretty), text);
  }
}

TEST(GraphIoTest, RandomDagRoundTripsThroughAFile) {
  Graph g = testing::random_dag(testing::RandomDagOptions().with_nodes(2000));
  auto path = std::filesystem::temp_directory_path() / "gopt_graph_io_test.json";
  write_graph_file(g, path);
  Graph back = read_graph_file(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(same_graph(g, back));
}

TEST(GraphIoTest, InvalidJsonNamesLineAndColumn) {
  expect_error("{\n  \"format\": \"gopt-graph\",\n  \"version\": 1,,\n}",
               {"line 3", "invalid JSON"});
  expect_error("", {"invalid JSON"});
}

// Found by fuzzing (issue #32; the inputs are in tests/fuzz/corpus/graph_json/regression-*).
TEST(GraphIoTest, UnrepresentableNumbersAreInputErrorsNamingTheField) {
  // 1e400 ended as an internal error (exit 3) from inside nlohmann-json.
  expect_error(doc(R"([{"name": "x", "op": "MatMul", "flops": 1e400}])"),
               {"nodes[0] ('x').flops", "number overflow", "line 1"});
  expect_error(doc(R"([{"name": "x", "op": "MatMul", "flops": 1e31}])"),
               {"nodes[0] ('x').flops", "<= 1e30"});
  expect_error(doc(R"([{"name": "x", "op": "Relu", "param_bytes": 18446744073709551615}])"),
               {"param_bytes", "integer too large"});
}

TEST(GraphIoTest, ALoneSurrogateIsRejectedNamingTheNodeAndField) {
  expect_error(doc(R"([{"name": "a", "op": "Relu"}, {"name": "b\udfff", "op": "Relu"}])"),
               {"nodes[1].name", "surrogate", "valid as half of a pair"});
  expect_error(doc(R"([{"name": "a", "op": "Relu\udfff"}])"), {"nodes[0] ('a').op", "surrogate"});
  // A surrogate pair is a character like any other.
  Graph g = parse_graph_json(doc(R"([{"name": "\ud83d\ude00", "op": "Relu"}])"), "pair.json");
  EXPECT_EQ(g.node(0).name, "\xF0\x9F\x98\x80");
}

TEST(GraphIoTest, SizesThatWouldOverflowAreInputErrorsNamingNodeAndField) {
  // The product of the dimensions wrapped around before: 'ok', then negative bytes_moved.
  expect_error(doc(R"([{"name": "x", "op": "Placeholder", "shape": [2147483648, 2147483647]}])"),
               {"node 'x'", "shapes[0]", "2^60"});
  expect_error(doc(R"([{"name": "x", "op": "Placeholder", "shape": [0, 9223372036854775807]},
              {"name": "y", "op": "Placeholder", "shapes": [[4], [3037000500, 3037000500]]}])"),
               {"node 'y'", "shapes[1]"});
  expect_error(doc(R"([{"name": "x", "op": "Relu", "output_bytes": 1152921504606846977}])"),
               {"nodes[0] ('x').output_bytes", "at most 1152921504606846976"});
  // Every field's total over the graph is bounded too: two outputs of 2^60 bytes.
  expect_error(doc(R"([{"name": "a", "op": "Const", "output_bytes": 1152921504606846976},
                       {"name": "b", "op": "Const", "output_bytes": 1152921504606846976}])"),
               {"node 'b'", "output_bytes", "total"});
  // At the limit is fine, and a zero dimension makes any other dimension harmless.
  Graph g =
      parse_graph_json(doc(R"([{"name": "a", "op": "Const", "shape": [0, 9223372036854775807]},
              {"name": "b", "op": "Const", "dtype": "int8", "shape": [1073741824, 1073741824]}])"),
                       "limit.json");
  EXPECT_EQ(g.node(0).output_bytes, 0);
  EXPECT_EQ(g.node(1).output_bytes, kMaxBytes);
}

TEST(GraphIoTest, WrongTopLevel) {
  expect_error("[1, 2]", {"expected a JSON object"});
  expect_error(R"({"version": 1, "name": "t", "nodes": []})", {"missing required field 'format'"});
  expect_error(R"({"format": "onnx", "version": 1, "name": "t", "nodes": []})",
               {"format", "gopt graph file"});
  expect_error(R"({"format": "gopt-graph", "version": 2, "name": "t", "nodes": []})",
               {"version", "unsupported format version 2"});
  expect_error(R"({"format": "gopt-graph", "version": 1, "nodes": []})",
               {"missing required field 'name'"});
  expect_error(std::string("{") + kHeader + R"(, "nodes": {}})", {"nodes", "expected an array"});
  expect_error(std::string("{") + kHeader + R"(, "nodes": [], "extra": 1})",
               {"extra", "unknown field"});
}

TEST(GraphIoTest, NodeErrorsNameTheNodeAndField) {
  expect_error(doc(R"([{"op": "Relu"}])"), {"nodes[0]", "missing required field 'name'"});
  expect_error(doc(R"([{"name": "a"}])"), {"nodes[0] ('a')", "missing required field 'op'"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "flops": "many"}])"),
               {"nodes[0] ('a').flops", "expected a number, found a string 'many'"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "param_bytes": -4}])"),
               {"('a').param_bytes", "must be >= 0, found -4"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "flops": -1.5}])"), {"('a').flops", ">= 0"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "output_bytes": 1.5}])"),
               {"output_bytes", "expected an integer, found 1.5"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "shape": [4, -1]}])"),
               {"shape[1]", "must be >= 0, found -1"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "dtype": "float128"}])"),
               {"dtype", "unknown dtype 'float128'", "float32"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "kind": "magic"}])"),
               {"kind", "unknown op kind 'magic'", "matmul"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "phase": "sideways"}])"),
               {"phase", "unknown phase"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "flop": 3}])"),
               {"('a').flop", "unknown field (did you mean 'flops'?)", "attrs"});
  expect_error(doc(R"([{"name": "a", "op": "Relu", "attrs": {"k": 1}}])"),
               {"attrs.k", "expected a string"});
  expect_error(doc(R"([{"name": "a", "op": "Relu"}, {"name": "a", "op": "Tanh"}])"),
               {"nodes[1]", "duplicate node name 'a'", "nodes[0]"});
  expect_error(doc(R"([3])"), {"nodes[0]", "expected a node object"});
}

TEST(GraphIoTest, EdgeErrorsNameTheEdge) {
  const std::string nodes = R"([{"name": "a", "op": "Relu"}, {"name": "b", "op": "Relu"}])";
  expect_error(doc(nodes, R"([{"src": "a", "dst": "c"}])"), {"edges[0].dst", "unknown node 'c'"});
  expect_error(doc(nodes, R"([{"src": "z", "dst": "b"}])"), {"edges[0].src", "unknown node 'z'"});
  expect_error(doc(nodes, R"([{"src": "a"}])"), {"edges[0]", "missing required field 'dst'"});
  expect_error(doc(nodes, R"([{"src": "a", "dst": "b", "bytes": -1}])"),
               {"edges[0].bytes", ">= 0"});
  expect_error(doc(nodes, R"([{"src": "a", "dst": "b", "control": "yes"}])"),
               {"edges[0].control", "expected true or false"});
  expect_error(doc(nodes, R"([{"src": "a", "dst": "a"}])"), {"edges[0]", "cycle"});
}

TEST(GraphIoTest, CycleNamesItsNodes) {
  const std::string nodes = R"([{"name": "in", "op": "Const"}, {"name": "x", "op": "Relu"},
                                {"name": "y", "op": "Relu"}, {"name": "z", "op": "Relu"}])";
  expect_error(doc(nodes, R"([{"src": "in", "dst": "x"}, {"src": "x", "dst": "y"},
                              {"src": "y", "dst": "z"}, {"src": "z", "dst": "x"}])"),
               {"contains a cycle", "'x' -> 'y' -> 'z' -> 'x'"});
}

TEST(GraphIoTest, MissingFileIsAnInputError) {
  try {
    (void)read_graph_file("/nonexistent/graph.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/graph.json: no such file");
  }
}

TEST(GraphIoTest, ShippedFixturesLoad) {
  Graph g = read_graph_file(std::string(GOPT_SOURCE_DIR) + "/datasets/graphs/mlp_tiny.json");
  EXPECT_GT(g.num_nodes(), 10);
  EXPECT_THROW((void)read_graph_file(std::string(GOPT_TEST_DATA_DIR) + "/graphs/cycle.json"),
               GraphError);
}

}  // namespace
}  // namespace gopt::core
