// gopt._gopt: the Python extension over gopt's graphs, hardware profiles, simulator, lower
// bounds, agents, runs and results files (docs/python.md). Arrays cross as NumPy arrays;
// gopt's InputError becomes gopt.InputError (a ValueError) with the same message. The
// package gopt (experiments/python/gopt/) re-exports it and adds the environment and the
// pandas readers; its stub file _gopt.pyi carries the type hints.
//
//   import gopt
//   g = gopt.load_graph("rnnlm_2")
//   hw = gopt.load_hardware("p100x2_pcie")
//   r = gopt.Simulator(g, hw).simulate(placement=numpy.zeros(g.num_ops, dtype=int))
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "agents/agent.h"
#include "agents/compute_threads.h"
#include "agents/cpu_numerics.h"
#include "agents/placement_utils.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/decision.h"
#include "core/errors.h"
#include "core/op_kind.h"
#include "core/strings.h"
#include "core/worker_pool.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "experiments/results/results_file.h"
#include "experiments/results/version.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/chrome_trace.h"
#include "simulator/lower_bounds.h"
#include "simulator/simulator.h"
#include "simulator/simulator_pool.h"

namespace py = pybind11;

namespace gopt::python {
namespace {

template <typename T>
py::array_t<T> to_array(const std::vector<T>& values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

template <typename To, typename From>
py::array_t<To> to_array_as(const std::vector<From>& values) {
  py::array_t<To> out(static_cast<py::ssize_t>(values.size()));
  auto* data = out.mutable_data();
  for (std::size_t i = 0; i < values.size(); ++i) data[i] = static_cast<To>(values[i]);
  return out;
}

// The suite's generators and the agents, registered once for the module's lifetime.
const datasets::WorkloadRegistry& workloads() {
  static const datasets::WorkloadRegistry registry = [] {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    return r;
  }();
  return registry;
}

const agents::AgentRegistry& agent_registry() {
  static const agents::AgentRegistry registry = [] {
    agents::AgentRegistry r;
    agents::register_builtin_agents(r);
    return r;
  }();
  return registry;
}

/// A compiled graph, shared by everything built over it.
struct Graph {
  std::shared_ptr<const core::CompiledGraph> graph;
};

/// A hardware profile with the cost model a run uses (which refers to the cluster).
struct Hardware {
  std::shared_ptr<const hardware::Cluster> cluster;
  std::shared_ptr<const hardware::CostModel> cost;
};

Hardware make_hardware(hardware::Cluster cluster) {
  Hardware h;
  h.cluster = std::make_shared<const hardware::Cluster>(std::move(cluster));
  h.cost = std::shared_ptr<const hardware::CostModel>(hardware::make_cost_model(*h.cluster));
  return h;
}

// An integer vector of one entry per op from a NumPy array (any integer dtype, or None).
std::optional<std::vector<std::int32_t>> per_op(const py::object& values, const char* field) {
  if (values.is_none()) return std::nullopt;
  py::array array = py::array::ensure(values);
  if (!array || array.ndim() != 1) {
    throw core::InputError("decision", field, "expected a one-dimensional array, one entry per op");
  }
  if (array.dtype().kind() != 'i' && array.dtype().kind() != 'u') {
    throw core::InputError(
        "decision", field,
        "expected integers, found an array of dtype " + std::string(py::str(array.dtype())));
  }
  auto as_int64 =
      py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  std::vector<std::int32_t> out(static_cast<std::size_t>(as_int64.size()));
  const auto* data = as_int64.data();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (data[i] < INT32_MIN || data[i] > INT32_MAX) {
      throw core::InputError("decision", std::string(field) + "[" + std::to_string(i) + "]",
                             "expected a 32-bit integer, found " + std::to_string(data[i]));
    }
    out[i] = static_cast<std::int32_t>(data[i]);
  }
  return out;
}

core::Decision make_decision(const py::object& placement, const py::object& priority,
                             const py::object& fusion) {
  core::Decision d;
  d.placement = per_op(placement, "placement");
  d.priority = per_op(priority, "priority");
  d.fusion = per_op(fusion, "fusion");
  return d;
}

/// One simulated step, copied out of the simulator.
struct Result {
  double step_time_s = 0;
  bool oom = false;
  int oom_device = -1;
  std::int64_t bytes_moved = 0;
  int num_transfers = 0;
  int num_kernels = 0;
  double lower_bound_critical_path_s = 0;
  double lower_bound_work_s = 0;
  std::vector<double> device_busy_s;
  std::vector<std::int64_t> device_peak_memory_bytes;
  std::optional<std::string> trace;
};

Result copy_result(const simulator::SimulationResult& r) {
  Result out;
  out.step_time_s = r.step_time_s;
  out.oom = r.oom;
  out.oom_device = r.oom_device;
  out.bytes_moved = r.bytes_moved;
  out.num_transfers = r.num_transfers;
  out.num_kernels = r.num_kernels;
  out.lower_bound_critical_path_s = r.lower_bound_critical_path_s;
  out.lower_bound_work_s = r.lower_bound_work_s;
  for (const auto& d : r.devices) {
    out.device_busy_s.push_back(d.busy_s);
    out.device_peak_memory_bytes.push_back(d.peak_memory_bytes);
  }
  return out;
}

/// A simulator of one graph on one hardware profile, reused across calls: op times are
/// asked from the cost model once. simulate_many runs on a simulator::SimulatorPool (one C++
/// Simulator per thread, each built on first use and kept).
class PySimulator {
 public:
  PySimulator(Graph graph, Hardware hardware)
      : graph_(std::move(graph)),
        hardware_(std::move(hardware)),
        pool_(*graph_.graph, *hardware_.cluster, *hardware_.cost) {}

  // Both release the GIL before they take the simulator's lock: a thread waiting for the
  // lock must not hold the GIL that the thread inside needs to return.
  Result simulate(const core::Decision& decision, bool trace) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!trace) return copy_result(pool_.primary().simulate(decision));
    simulator::ChromeTraceWriter writer;
    Result r = copy_result(pool_.primary().simulate(decision, &writer));
    r.trace = writer.to_json();
    return r;
  }

  // Every decision simulated, spread over `threads` threads (0: the usable cores), the GIL
  // released; the results are those of simulate() one by one, in order.
  std::vector<Result> simulate_many(const std::vector<core::Decision>& decisions, int threads) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    if (threads <= 0) threads = core::usable_cores();
    // Checked first, in order: the first bad decision is the one a serial run raises at.
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      core::validate_decision(decisions[i], graph_.graph->num_nodes(),
                              hardware_.cluster->num_devices(),
                              "decisions[" + std::to_string(i) + "]", &graph_.graph->node_names());
    }
    pool_.set_threads(std::max(1, std::min<int>(threads, static_cast<int>(decisions.size()))));
    std::vector<Result> out(decisions.size());
    pool_.simulate_each(decisions, [&](std::size_t i, const simulator::SimulationResult& r) {
      out[i] = copy_result(r);
    });
    return out;
  }

  double seconds_per_simulate(const core::Decision& decision, int repeats) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto start = std::chrono::steady_clock::now();
    double sum = 0;
    for (int i = 0; i < repeats; ++i) sum += pool_.primary().simulate(decision).step_time_s;
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
    volatile double keep = sum;  // the loop's results are used
    (void)keep;
    return wall.count() / std::max(1, repeats);
  }

  [[nodiscard]] double op_time_s(int op, int device) const {
    check_op(op);
    if (device < 0 || device >= hardware_.cluster->num_devices()) {
      throw core::InputError("op_time_s", "device",
                             "expected a device in [0, " +
                                 std::to_string(hardware_.cluster->num_devices()) + "), found " +
                                 std::to_string(device));
    }
    return pool_.primary().op_time(op, device);
  }

  const Graph& graph() const { return graph_; }
  const Hardware& hardware() const { return hardware_; }

 private:
  void check_op(int op) const {
    if (op < 0 || op >= graph_.graph->num_nodes()) {
      throw core::InputError("op_time_s", "op",
                             "expected an op in [0, " + std::to_string(graph_.graph->num_nodes()) +
                                 "), found " + std::to_string(op));
    }
  }

  Graph graph_;
  Hardware hardware_;
  std::mutex mutex_;  // one call at a time on pool_
  simulator::SimulatorPool pool_;
};

// Decisions from a 2-D array (one row per decision) or a sequence of 1-D arrays.
std::vector<core::Decision> decisions_of(const py::object& placements, const py::object& priorities,
                                         const py::object& fusions) {
  auto rows = [](const py::object& values, const char* field) {
    std::vector<py::object> out;
    if (values.is_none()) return out;
    if (py::isinstance<py::array>(values)) {
      py::array a = values.cast<py::array>();
      if (a.ndim() != 2) {
        throw core::InputError("decisions", field,
                               "expected a two-dimensional array (one row per decision) or a "
                               "list of arrays");
      }
      for (py::ssize_t i = 0; i < a.shape(0); ++i) out.push_back(values[py::int_(i)]);
      return out;
    }
    for (const auto& item : values) out.push_back(py::reinterpret_borrow<py::object>(item));
    return out;
  };
  const auto p = rows(placements, "placements");
  const auto q = rows(priorities, "priorities");
  const auto f = rows(fusions, "fusions");
  const std::size_t n = std::max({p.size(), q.size(), f.size()});
  for (const auto& [list, field] :
       {std::pair{&p, "placements"}, std::pair{&q, "priorities"}, std::pair{&f, "fusions"}}) {
    if (!list->empty() && list->size() != n) {
      throw core::InputError("decisions", field,
                             "expected " + std::to_string(n) + " rows, one per decision, found " +
                                 std::to_string(list->size()));
    }
  }
  std::vector<core::Decision> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = make_decision(p.empty() ? py::none() : p[i], q.empty() ? py::none() : q[i],
                           f.empty() ? py::none() : f[i]);
  }
  return out;
}

/// gopt.Decision: what an agent decides, each field an int32 array of one entry per op or
/// None.
struct PyDecision {
  py::object placement = py::none();
  py::object priority = py::none();
  py::object fusion = py::none();
};

py::object decision_field(const std::optional<std::vector<std::int32_t>>& v) {
  if (!v) return py::none();
  return to_array(*v);
}

/// A decision as gopt.Decision: placement, priority and fusion as int32 arrays or None.
PyDecision to_py_decision(const core::Decision& d) {
  return PyDecision{decision_field(d.placement), decision_field(d.priority),
                    decision_field(d.fusion)};
}

// An ostream buffer that passes text through to another stream and keeps a copy.
class TeeBuffer : public std::streambuf {
 public:
  explicit TeeBuffer(std::ostream* through) : through_(through) {}
  [[nodiscard]] const std::string& text() const { return text_; }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    text_ += ch;
    if (through_ != nullptr) through_->put(ch);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    text_.append(s, static_cast<std::size_t>(n));
    if (through_ != nullptr) through_->write(s, n);
    return n;
  }
  int sync() override {
    if (through_ != nullptr) through_->flush();
    return 0;
  }

 private:
  std::ostream* through_;
  std::string text_;
};

}  // namespace
}  // namespace gopt::python

PYBIND11_MODULE(_gopt, m) {
  using namespace gopt;
  using namespace gopt::python;
  m.doc() = "gopt's graphs, hardware profiles, simulator, bounds, agents and results (C++).";

  // OpenBLAS's kernels for this CPU, as the gopt executable picks them, so that an agent
  // run from Python computes as `gopt` does (agents/cpu_numerics.h).
  (void)agents::select_cpu_kernels();

  static py::exception<core::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<core::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const core::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const core::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  input_error.attr("__doc__") =
      "Bad input (a graph, profile, decision, option or file), with gopt's message naming "
      "the source, the field and what was expected.";

  m.attr("__version__") = std::string(experiments::version());
  m.attr("git_revision") = std::string(experiments::git_revision());
  {
    std::vector<std::string> kinds;
    for (int k = 0; k < core::kNumOpKinds; ++k) {
      kinds.emplace_back(core::to_string(static_cast<core::OpKind>(k)));
    }
    m.attr("OP_KINDS") = kinds;
  }

  py::class_<Graph>(m, "Graph", "A computation graph (immutable), ops indexed 0..num_ops-1.")
      .def_property_readonly("name", [](const Graph& g) { return g.graph->name(); })
      .def_property_readonly("family", [](const Graph& g) { return g.graph->family(); })
      .def_property_readonly("num_ops", [](const Graph& g) { return g.graph->num_nodes(); })
      .def_property_readonly("num_edges", [](const Graph& g) { return g.graph->num_edges(); })
      .def_property_readonly("op_names", [](const Graph& g) { return g.graph->node_names(); })
      .def_property_readonly("op_types", [](const Graph& g) { return g.graph->op_types(); })
      .def_property_readonly(
          "op_kinds", [](const Graph& g) { return to_array_as<std::int32_t>(g.graph->kind()); },
          "Each op's kind as an index into OP_KINDS (int32).")
      .def_property_readonly(
          "flops", [](const Graph& g) { return to_array_as<double>(g.graph->flops()); },
          "Floating-point operations per op (float64).")
      .def_property_readonly(
          "bytes_read",
          [](const Graph& g) { return to_array_as<std::int64_t>(g.graph->bytes_read()); })
      .def_property_readonly(
          "bytes_written",
          [](const Graph& g) { return to_array_as<std::int64_t>(g.graph->bytes_written()); })
      .def_property_readonly(
          "output_bytes",
          [](const Graph& g) { return to_array_as<std::int64_t>(g.graph->output_bytes()); },
          "Bytes of each op's output tensor (int64).")
      .def_property_readonly(
          "param_bytes",
          [](const Graph& g) { return to_array_as<std::int64_t>(g.graph->param_bytes()); },
          "Bytes of the parameters each op keeps resident (int64).")
      .def_property_readonly(
          "layer", [](const Graph& g) { return to_array(g.graph->layer()); },
          "Each op's layer (int32, -1 when the graph gives none).")
      .def_property_readonly(
          "colocation", [](const Graph& g) { return to_array(g.graph->colocation()); },
          "Each op's colocation group, an index into colocation_groups (int32, -1: none).")
      .def_property_readonly("colocation_groups",
                             [](const Graph& g) { return g.graph->colocation_groups(); })
      .def_property_readonly(
          "edges",
          [](const Graph& g) {
            const auto& cg = *g.graph;
            py::array_t<std::int32_t> out(
                {static_cast<py::ssize_t>(cg.num_edges()), py::ssize_t{2}});
            auto view = out.mutable_unchecked<2>();
            for (core::EdgeIndex e = 0; e < cg.num_edges(); ++e) {
              view(e, 0) = cg.edge_source(e);
              view(e, 1) = cg.out_target(e);
            }
            return out;
          },
          "Edges as an (num_edges, 2) int32 array of (source op, target op).")
      .def_property_readonly(
          "edge_bytes",
          [](const Graph& g) {
            const auto& cg = *g.graph;
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(cg.num_edges()));
            for (core::EdgeIndex e = 0; e < cg.num_edges(); ++e) {
              out.mutable_at(e) = cg.edge_bytes(e);
            }
            return out;
          },
          "Bytes each edge carries (int64; 0 for control edges).")
      .def_property_readonly("edge_is_control",
                             [](const Graph& g) {
                               const auto& cg = *g.graph;
                               py::array_t<bool> out(static_cast<py::ssize_t>(cg.num_edges()));
                               for (core::EdgeIndex e = 0; e < cg.num_edges(); ++e) {
                                 out.mutable_at(e) = cg.edge_is_control(e);
                               }
                               return out;
                             })
      .def_property_readonly("topological_order",
                             [](const Graph& g) { return to_array(g.graph->topological_order()); })
      .def("__repr__", [](const Graph& g) {
        return "<gopt.Graph '" + g.graph->name() + "': " + std::to_string(g.graph->num_nodes()) +
               " ops, " + std::to_string(g.graph->num_edges()) + " edges>";
      });

  m.def(
      "load_graph",
      [](const std::filesystem::path& name_or_path, const std::map<std::string, std::string>& set,
         std::int64_t onnx_batch, bool onnx_training) {
        datasets::LoadOptions options;
        options.overrides = set;
        options.onnx_batch = onnx_batch;
        options.onnx_training = onnx_training;
        core::Graph g;
        {
          py::gil_scoped_release release;
          g = datasets::load_graph(name_or_path.string(), workloads(), options);
        }
        return Graph{std::make_shared<const core::CompiledGraph>(core::CompiledGraph::compile(g))};
      },
      py::arg("name_or_path"), py::arg("set") = std::map<std::string, std::string>{},
      py::arg("onnx_batch") = 0, py::arg("onnx_training") = false,
      "A suite workload by name (hyperparameters in `set`), a gopt graph JSON file, or an ONNX "
      "model (`onnx_batch` for its dynamic batch dimension, `onnx_training` to add gradient "
      "and update ops).");
  m.def(
      "list_workloads", [] { return workloads().names(); }, "The suite's workload names.");

  py::class_<Hardware>(m, "Hardware", "A cluster from a hardware profile, with its cost model.")
      .def_property_readonly("name", [](const Hardware& h) { return h.cluster->name(); })
      .def_property_readonly("num_devices",
                             [](const Hardware& h) { return h.cluster->num_devices(); })
      .def_property_readonly("device_names",
                             [](const Hardware& h) {
                               std::vector<std::string> names;
                               for (core::DeviceId d = 0; d < h.cluster->num_devices(); ++d) {
                                 names.push_back(h.cluster->device(d).name);
                               }
                               return names;
                             })
      .def_property_readonly(
          "compute_streams",
          [](const Hardware& h) {
            std::vector<std::int32_t> streams;
            for (core::DeviceId d = 0; d < h.cluster->num_devices(); ++d) {
              streams.push_back(h.cluster->device(d).compute_streams);
            }
            return to_array(streams);
          },
          "Kernels each device may run at once (int32), so busy time can reach this many "
          "times the step time.")
      .def_property_readonly("memory_capacity_bytes",
                             [](const Hardware& h) {
                               std::vector<std::int64_t> bytes;
                               for (core::DeviceId d = 0; d < h.cluster->num_devices(); ++d) {
                                 bytes.push_back(h.cluster->device(d).memory_capacity_bytes);
                               }
                               return to_array(bytes);
                             })
      .def("__repr__", [](const Hardware& h) {
        return "<gopt.Hardware '" + h.cluster->name() +
               "': " + std::to_string(h.cluster->num_devices()) + " devices>";
      });
  m.def(
      "load_hardware",
      [](const std::string& name_or_path) {
        return make_hardware(hardware::load_profile(name_or_path));
      },
      py::arg("name_or_path"), "A shipped hardware profile by name, or a profile YAML file.");
  m.def(
      "list_hardware", [] { return hardware::list_profiles(); },
      "The shipped hardware profiles' names.");

  py::class_<PyDecision>(m, "Decision",
                         "A decision: placement (device per op), priority (higher runs first "
                         "among ready ops) and fusion (group per op), each an int32 array of "
                         "one entry per op, or None.")
      .def(py::init([](py::object placement, py::object priority, py::object fusion) {
             return PyDecision{std::move(placement), std::move(priority), std::move(fusion)};
           }),
           py::arg("placement") = py::none(), py::arg("priority") = py::none(),
           py::arg("fusion") = py::none())
      .def_readwrite("placement", &PyDecision::placement)
      .def_readwrite("priority", &PyDecision::priority)
      .def_readwrite("fusion", &PyDecision::fusion)
      .def("__repr__", [](const PyDecision& d) {
        auto part = [](const char* name, const py::object& v) {
          return std::string(name) + (v.is_none() ? "=None" : "=[...]");
        };
        return "<gopt.Decision " + part("placement", d.placement) + " " +
               part("priority", d.priority) + " " + part("fusion", d.fusion) + ">";
      });

  py::class_<Result>(m, "SimulationResult", "One simulated training step.")
      .def_readonly("step_time_s", &Result::step_time_s)
      .def_readonly("oom", &Result::oom)
      .def_readonly("oom_device", &Result::oom_device, "The first device out of memory, -1: none.")
      .def_readonly("bytes_moved", &Result::bytes_moved)
      .def_readonly("num_transfers", &Result::num_transfers)
      .def_readonly("num_kernels", &Result::num_kernels)
      .def_readonly("lower_bound_critical_path_s", &Result::lower_bound_critical_path_s)
      .def_readonly("lower_bound_work_s", &Result::lower_bound_work_s)
      .def_property_readonly("device_busy_s",
                             [](const Result& r) { return to_array(r.device_busy_s); })
      .def_property_readonly("device_peak_memory_bytes",
                             [](const Result& r) { return to_array(r.device_peak_memory_bytes); })
      .def_readonly("trace", &Result::trace, "Chrome trace-event JSON when asked for, else None.")
      .def("__repr__", [](const Result& r) {
        return "<gopt.SimulationResult step_time_s=" + core::number_text(r.step_time_s) +
               (r.oom ? " oom" : "") + ">";
      });

  py::class_<PySimulator>(m, "Simulator",
                          "Simulates decisions of one graph on one hardware profile; reuse it: "
                          "op times are computed once.")
      .def(py::init<Graph, Hardware>(), py::arg("graph"), py::arg("hardware"))
      .def(
          "simulate",
          [](PySimulator& s, const PyDecision& d, bool trace) {
            return s.simulate(make_decision(d.placement, d.priority, d.fusion), trace);
          },
          py::arg("decision"), py::arg("trace") = false, "One step under a gopt.Decision.")
      .def(
          "simulate",
          [](PySimulator& s, const py::object& placement, const py::object& priority,
             const py::object& fusion,
             bool trace) { return s.simulate(make_decision(placement, priority, fusion), trace); },
          py::arg("placement") = py::none(), py::arg("priority") = py::none(),
          py::arg("fusion") = py::none(), py::arg("trace") = false,
          "One step under a decision: placement (device per op; None: every op on device 0), "
          "priority (higher runs first among ready ops; None: topological order) and fusion "
          "(group per op; None: unfused).")
      .def(
          "simulate_many",
          [](PySimulator& s, const py::object& placements, const py::object& priorities,
             const py::object& fusions, int threads) {
            return s.simulate_many(decisions_of(placements, priorities, fusions), threads);
          },
          py::arg("placements"), py::arg("priorities") = py::none(),
          py::arg("fusions") = py::none(), py::arg("threads") = 0,
          "Many decisions (rows of 2-D arrays or lists of arrays) on `threads` threads (0: the "
          "cores this process may use) with the GIL released; the same results, in order, as "
          "simulate() one by one, whatever the thread count.")
      .def(
          "_seconds_per_simulate",
          [](PySimulator& s, const PyDecision& d, int repeats) {
            return s.seconds_per_simulate(make_decision(d.placement, d.priority, d.fusion),
                                          repeats);
          },
          py::arg("decision"), py::arg("repeats"),
          "For tests/bench/python_bench.py: the mean wall seconds of one simulation of "
          "`decision` over `repeats` runs in a C++ loop, the cost a Python call adds left out.")
      .def("op_time_s", &PySimulator::op_time_s, py::arg("op"), py::arg("device"),
           "The cost model's time of one op on one device, seconds.")
      .def_property_readonly("graph", &PySimulator::graph)
      .def_property_readonly("hardware", &PySimulator::hardware);

  m.def(
      "lower_bounds",
      [](const Graph& g, const Hardware& h) {
        const auto b = simulator::compute_lower_bounds(*g.graph, *h.cluster, *h.cost);
        py::dict out;
        out["critical_path_s"] = b.critical_path_s;
        out["work_s"] = b.work_s;
        out["single_device_s"] = b.single_device_s;
        out["split_s"] = b.split_s;
        out["colocation_s"] = b.colocation_s;
        out["communication_path_s"] = b.communication_path_s;
        out["fill_drain_s"] = b.fill_drain_s;
        out["best_s"] = b.best_s();
        return out;
      },
      py::arg("graph"), py::arg("hardware"),
      "Every lower bound on the step time of any unfused decision (simulator/lower_bounds.h); "
      "best_s is the tightest.");

  m.def(
      "apply_colocation",
      [](const Graph& g, const py::object& placement) {
        auto devices = per_op(placement, "placement");
        if (!devices || static_cast<core::NodeId>(devices->size()) != g.graph->num_nodes()) {
          throw core::InputError(
              "apply_colocation", "placement",
              "expected one device per op (" + std::to_string(g.graph->num_nodes()) + ")");
        }
        agents::apply_colocation(*g.graph, *devices);
        return to_array(*devices);
      },
      py::arg("graph"), py::arg("placement"),
      "The placement with every op of a colocation group on the device of the group's "
      "lowest-index op, as gopt's agents place them; ops without a group keep theirs.");

  m.def(
      "agents", [] { return agent_registry().names(); }, "Every registered agent's name.");
  m.def(
      "agent_options",
      [](const std::string& name) {
        const auto& info = agent_registry().info(name, "");
        py::list out;
        for (const auto& spec : info.options) {
          py::dict o;
          o["name"] = spec.name;
          o["type"] = agents::option_type_name(spec.type);
          o["default"] = spec.default_value;
          o["range"] = agents::option_range_text(spec);
          o["choices"] = spec.choices;
          o["description"] = spec.description;
          out.append(o);
        }
        return out;
      },
      py::arg("name"), "An agent's options as `gopt agents NAME` lists them.");
  m.def(
      "agent_description",
      [](const std::string& name) { return agent_registry().info(name, "").description; },
      py::arg("name"));

  m.def(
      "propose",
      [](const std::string& name, const Graph& g, const Hardware& h,
         const std::map<std::string, std::string>& options, std::uint64_t seed,
         std::int64_t steps) {
        core::Decision decision;
        {
          py::gil_scoped_release release;
          // In a thread of its own on one LibTorch thread, as `gopt simulate --agent` runs,
          // so that a learner's result is the executable's and the caller's threads stay.
          std::exception_ptr failure;
          std::thread worker([&] {
            try {
              agents::limit_compute_threads(1);
              auto agent = agent_registry().create(name, options, "");
              agents::Problem problem{*g.graph, *h.cluster, *h.cost, seed};
              if (agent->is_learner()) {
                agents::Environment env(problem);
                agent->train(env, agents::TrainBudget().with_max_steps(steps), nullptr);
              }
              decision = agent->propose(problem);
            } catch (...) {
              failure = std::current_exception();
            }
          });
          worker.join();
          if (failure) std::rethrow_exception(failure);
        }
        return to_py_decision(decision);
      },
      py::arg("agent"), py::arg("graph"), py::arg("hardware"),
      py::arg("options") = std::map<std::string, std::string>{}, py::arg("seed") = 1,
      py::arg("steps") = 100,
      "The decision agent `agent` proposes (a learner trained first for `steps` updates), as "
      "`gopt simulate --agent NAME --option k=v --seed S --steps N` computes it.");

  m.def(
      "run_cli",
      [](const std::vector<std::string>& args) {
        std::vector<const char*> argv{"gopt"};
        for (const auto& a : args) argv.push_back(a.c_str());
        std::ostringstream out;
        TeeBuffer err_buffer(&std::cerr);
        std::ostream err(&err_buffer);
        int code = 0;
        {
          py::gil_scoped_release release;
          code = experiments::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
        }
        err.flush();
        return py::make_tuple(code, out.str(), err_buffer.text());
      },
      py::arg("args"),
      "Runs the gopt command line in this process (`args` without the program name): returns "
      "(exit status, standard output, standard error); the error text also goes to stderr.");

  m.def(
      "read_results_columns",
      [](const std::filesystem::path& path) {
        experiments::ResultsFile file;
        {
          py::gil_scoped_release release;
          file = experiments::read_results_file(path);
        }
        py::dict results;
        std::vector<std::string> workload, agent, agent_type, graph, hw, op_times;
        std::vector<std::int64_t> seed, num_nodes, bytes_moved, samples;
        std::vector<std::int32_t> num_devices, oom_device;
        std::vector<double> step, lb, lbcp, lbw, wall, measured;
        std::vector<bool> oom, learner, held_out;
        std::vector<std::string> options;
        py::dict curves;
        std::vector<std::string> c_workload, c_agent;
        std::vector<std::int64_t> c_seed, c_step, c_samples;
        std::vector<double> c_best, c_mean, c_wall;
        for (const auto& r : file.results) {
          workload.push_back(r.key.workload);
          agent.push_back(r.key.agent);
          seed.push_back(r.key.seed);
          agent_type.push_back(r.agent_type);
          learner.push_back(r.learner);
          held_out.push_back(r.held_out);
          graph.push_back(r.graph);
          hw.push_back(r.hardware);
          num_nodes.push_back(r.num_nodes);
          num_devices.push_back(r.num_devices);
          step.push_back(r.best_step_time_s);
          oom.push_back(r.oom);
          oom_device.push_back(r.oom_device);
          lbcp.push_back(r.lower_bound_critical_path_s);
          lbw.push_back(r.lower_bound_work_s);
          lb.push_back(r.lower_bound_s > 0
                           ? r.lower_bound_s
                           : std::max(r.lower_bound_critical_path_s, r.lower_bound_work_s));
          bytes_moved.push_back(r.bytes_moved);
          wall.push_back(r.wall_s);
          samples.push_back(r.samples);
          measured.push_back(r.measured_step_time_s);
          op_times.push_back(r.op_times);
          std::string o;
          for (const auto& [k, v] : r.options) o += (o.empty() ? "" : ", ") + k + "=" + v;
          options.push_back(o);
          for (const auto& p : r.learning_curve) {
            c_workload.push_back(r.key.workload);
            c_agent.push_back(r.key.agent);
            c_seed.push_back(r.key.seed);
            c_step.push_back(p.step);
            c_samples.push_back(p.samples);
            c_best.push_back(p.best_step_time_s);
            c_mean.push_back(p.mean_step_time_s);
            c_wall.push_back(p.wall_s);
          }
        }
        results["workload"] = workload;
        results["agent"] = agent;
        results["seed"] = to_array(seed);
        results["agent_type"] = agent_type;
        results["learner"] = learner;
        results["held_out"] = held_out;
        results["graph"] = graph;
        results["hardware"] = hw;
        results["num_nodes"] = to_array(num_nodes);
        results["num_devices"] = to_array(num_devices);
        results["best_step_time_s"] = to_array(step);
        results["oom"] = oom;
        results["oom_device"] = to_array(oom_device);
        results["lower_bound_s"] = to_array(lb);
        results["lower_bound_critical_path_s"] = to_array(lbcp);
        results["lower_bound_work_s"] = to_array(lbw);
        results["bytes_moved"] = to_array(bytes_moved);
        results["wall_s"] = to_array(wall);
        results["samples"] = to_array(samples);
        results["measured_step_time_s"] = to_array(measured);
        results["op_times"] = op_times;
        results["options"] = options;
        curves["workload"] = c_workload;
        curves["agent"] = c_agent;
        curves["seed"] = to_array(c_seed);
        curves["step"] = to_array(c_step);
        curves["samples"] = to_array(c_samples);
        curves["best_step_time_s"] = to_array(c_best);
        curves["mean_step_time_s"] = to_array(c_mean);
        curves["wall_s"] = to_array(c_wall);
        py::dict metadata;
        metadata["experiment"] = file.metadata.experiment;
        metadata["table"] = file.metadata.table;
        metadata["config_source"] = file.metadata.config_source;
        metadata["config"] = file.metadata.config_yaml;
        metadata["start_time"] = file.metadata.start_time;
        metadata["git_revision"] = file.metadata.provenance.git_revision;
        metadata["cpu_numerics"] = file.metadata.provenance.cpu_numerics;
        return py::make_tuple(results, curves, metadata);
      },
      py::arg("path"),
      "A results file read by gopt's own reader (the one `gopt table` uses), as columns: "
      "(results, learning curves, metadata).");
  m.def(
      "result_decision",
      [](const std::filesystem::path& path, const std::string& workload, const std::string& agent,
         std::uint64_t seed) {
        const auto file = experiments::read_results_file(path);
        for (const auto& r : file.results) {
          if (r.key.workload == workload && r.key.agent == agent && r.key.seed == seed) {
            return to_py_decision(r.decision);
          }
        }
        throw core::InputError(path.string(), workload + ":" + agent + ":" + std::to_string(seed),
                               "no such result in the file");
      },
      py::arg("path"), py::arg("workload"), py::arg("agent"), py::arg("seed"),
      "The decision of one result of a results file.");
}
