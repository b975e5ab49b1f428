// oar._C.ir: static mode for the Python frontend (oar.jit). Thin wrappers of
// oar/ir: trace a Python callable into a Program, run the default pass
// pipeline, run a program with the Executor, the trace cache (TraceCache:
// keys, lookup, trace counts), save and load. Calling the user's function,
// flattening its arguments and Layer state are in Python (oar/jit.py).
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <tuple>

#include "binding.h"
#include "oar/ir/autodiff.h"
#include "oar/ir/compiled_function.h"
#include "oar/ir/dist_partition.h"
#include "oar/ir/executor.h"
#include "oar/ir/pass.h"
#include "oar/ir/printer.h"
#include "oar/ir/serialize.h"
#include "oar/ir/trace.h"

namespace oar_py {

namespace {

namespace ir = oar::ir;
using ProgramPtr = std::shared_ptr<ir::Program>;

oar::Device device_or_default(const std::optional<std::string>& device) {
  return optional_device(device).value_or(oar::default_device());
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// What a traced Python function returned: a Tensor or a list/tuple of them.
std::vector<oar::Tensor> tensors_of(const py::object& result) {
  if (py::isinstance<oar::Tensor>(result)) return {result.cast<oar::Tensor>()};
  if (!py::isinstance<py::list>(result) && !py::isinstance<py::tuple>(result)) {
    throw py::type_error("to_static: the function returned a " + type_name(result) +
                         "; expected a Tensor or a list/tuple of Tensors");
  }
  std::vector<oar::Tensor> out;
  for (const py::handle item : result) {
    if (!py::isinstance<oar::Tensor>(item)) {
      throw py::type_error("to_static: the function returned a " + type_name(result) +
                           " holding a " + type_name(item) +
                           "; expected a Tensor or a list/tuple of Tensors");
    }
    out.push_back(item.cast<oar::Tensor>());
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<ir::Value*>& values) {
  std::vector<std::string> out;
  for (const ir::Value* v : values) out.push_back(v->name());
  return out;
}

std::vector<std::string> names_of(const std::vector<ir::NamedValue>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.name);
  return out;
}

// The tracer of the to_static trace in progress on this thread.
ir::Tracer& current_tracer(const std::string& what) {
  auto* tracer = dynamic_cast<ir::Tracer*>(&oar::current_builder());
  if (tracer == nullptr) throw py::value_error(what + ": no to_static trace is in progress");
  return *tracer;
}

// A Python callable (list of Tensors) -> list of Tensors, traced into a region.
ir::Tracer::RegionFunction region_function(const py::function& fn) {
  return [&fn](const std::vector<oar::Tensor>& args) { return tensors_of(fn(py::cast(args))); };
}

// ir::trace's result with a shareable program.
struct PyTrace {
  ProgramPtr program;
  ir::ParamMap parameters;
  std::vector<ir::InputSpec> specs;
  bool specialized = false;
};

// An Executor (move-only) held by Python.
struct PyExecutor {
  std::unique_ptr<ir::Executor> executor;
};

// The pipeline of to_static: compiler None keeps the environment's choice
// (OAR_COMPILER, FLAGS_use_cinn); True (backend="CINN") turns the compiler
// on with every composite decomposed; False turns it off.
ir::PipelineOptions pipeline_options(std::optional<bool> compiler) {
  ir::PipelineOptions options;
  if (compiler) {
    options.compiler = *compiler;
    if (*compiler) options.decompose_composites = true;
  }
  return options;
}

// A CompiledFunction (differentiable program calls) held by Python.
struct PyCompiledFunction {
  std::unique_ptr<ir::CompiledFunction> function;
};

// A trace held by a TraceCache, as Python sees it (read-only).
struct PyCachedTrace {
  std::shared_ptr<const ir::CachedTrace> entry;
};

std::optional<PyCachedTrace> cached(std::shared_ptr<const ir::CachedTrace> entry) {
  if (!entry) return std::nullopt;
  return PyCachedTrace{std::move(entry)};
}


// ---- dist.to_static (H6): meshes and placements cross as _C.dist's tuples ----
using DistMeshTuple = std::tuple<std::vector<int64_t>, std::vector<int>, std::vector<std::string>>;
using DistPlacementTuple = std::tuple<int, int64_t, int>;  // kind (replicate, shard, partial), dim, reduce
using DistAttrTuple = std::tuple<DistMeshTuple, std::vector<DistPlacementTuple>>;

oar::DistAttr dist_attr_of(const DistAttrTuple& a) {
  const auto& [m, ps] = a;
  oar::DistAttr attr{oar::ProcessMesh(std::get<0>(m), std::get<1>(m), std::get<2>(m)), {}};
  for (const auto& [kind, dim, reduce] : ps) {
    if (kind < 0 || kind > 2 || reduce < 0 || reduce > 3)
      throw py::value_error("dist.to_static: placement (" + std::to_string(kind) + ", " + std::to_string(dim) + ", " +
                            std::to_string(reduce) + ") is not a placement");
    oar::Placement p;
    p.kind = static_cast<oar::Placement::Kind>(kind);
    p.dim = kind == 1 ? dim : -1;
    p.reduce = static_cast<oar::ReduceKind>(reduce);
    attr.placements.push_back(p);
  }
  return attr;
}

DistAttrTuple dist_attr_tuple(const oar::DistAttr& a) {
  std::vector<DistPlacementTuple> ps;
  for (const auto& p : a.placements) ps.emplace_back(static_cast<int>(p.kind), p.dim, static_cast<int>(p.reduce));
  return {{a.mesh.shape(), a.mesh.process_ids(), a.mesh.dim_names()}, ps};
}

std::vector<std::optional<oar::DistAttr>> dist_attrs_of(const std::vector<std::optional<DistAttrTuple>>& in) {
  std::vector<std::optional<oar::DistAttr>> out;
  for (const auto& a : in) out.push_back(a ? std::optional<oar::DistAttr>(dist_attr_of(*a)) : std::nullopt);
  return out;
}

}  // namespace

void bind_ir(py::module_& parent) {
  py::module_ m =
      parent.def_submodule("ir", "Static mode: programs, tracing, passes, executor, save/load.");

  py::class_<ir::InputSpec>(m, "InputSpec")
      .def(py::init([](std::vector<int64_t> shape, oar::DType dtype, std::string name) {
             return ir::InputSpec{std::move(shape), dtype, std::move(name)};
           }),
           py::arg("shape"), py::arg("dtype") = oar::DType::f32, py::arg("name") = "")
      .def_readonly("shape", &ir::InputSpec::shape)
      .def_readonly("dtype", &ir::InputSpec::dtype)
      .def_readonly("name", &ir::InputSpec::name)
      .def("__repr__", [](const ir::InputSpec& s) {
        return "InputSpec(" + ir::TensorType{s.dtype, s.shape}.str() +
               (s.name.empty() ? "" : ", " + s.name) + ")";
      });

  py::class_<ir::Program, ProgramPtr>(m, "Program")
      .def("__str__", [](const ir::Program& p) { return ir::to_string(p); })
      .def(
          "to_json", [](const ir::Program& p, int indent) { return ir::to_json(p, indent); },
          py::arg("indent") = 1)
      .def("clone", [](const ir::Program& p) { return std::make_shared<ir::Program>(p.clone()); })
      .def_property_readonly("input_names",
                             [](const ir::Program& p) { return names_of(p.inputs()); })
      .def_property_readonly("parameter_names",
                             [](const ir::Program& p) { return names_of(p.parameters()); })
      .def_property_readonly("output_names",
                             [](const ir::Program& p) { return names_of(p.outputs()); })
      .def_property_readonly("update_names",
                             [](const ir::Program& p) { return names_of(p.updates()); })
      .def_property_readonly(
          "input_specs",
          [](const ir::Program& p) {
            std::vector<ir::InputSpec> out;
            for (const ir::Value* v : p.inputs())
              out.push_back({v->type().dims, v->type().dtype, v->name()});
            return out;
          },
          "The inputs' declared shapes (-1: dynamic), dtypes and names.")
      .def(
          "_outputs_to_updates",
          [](ir::Program& p, const std::vector<std::string>& names) {
            // The last len(names) outputs become updates of those parameters
            // (buffers a Layer reassigned while it was traced).
            const auto& outputs = p.outputs();
            OAR_CHECK_ARG(names.size() <= outputs.size(),
                          "to_static: " + std::to_string(names.size()) +
                              " updates but the program has " + std::to_string(outputs.size()) +
                              " outputs");
            std::vector<ir::NamedValue> kept(
                outputs.begin(), outputs.end() - static_cast<std::ptrdiff_t>(names.size()));
            std::vector<ir::Value*> updated;
            for (size_t i = kept.size(); i < outputs.size(); ++i)
              updated.push_back(outputs[i].value);
            p.clear_outputs();
            for (const auto& o : kept) p.add_output(o.value, o.name);
            for (size_t i = 0; i < names.size(); ++i) p.add_update(names[i], updated[i]);
          },
          py::arg("names"));

  py::class_<PyTrace>(m, "Trace")
      .def_readonly("program", &PyTrace::program)
      .def_readonly("parameters", &PyTrace::parameters, "The captured parameter tensors, by name.")
      .def_readonly("specs", &PyTrace::specs, "The specs the trace accepts (after specialization).")
      .def_readonly("specialized", &PyTrace::specialized);

  m.def(
      "trace",
      [](py::function fn, const std::vector<ir::InputSpec>& specs, const ir::ParamMap& parameters,
         const std::optional<std::string>& device, const std::vector<oar::Shape>& examples) {
        // Called back from ir::trace on this thread, which holds the GIL.
        ir::TracedFunction traced = [&fn](const std::vector<oar::Tensor>& inputs) {
          return tensors_of(fn(py::cast(inputs)));
        };
        ir::Trace t = ir::trace(traced, specs, parameters, device_or_default(device), examples);
        return PyTrace{std::make_shared<ir::Program>(std::move(t.program)), std::move(t.parameters),
                       std::move(t.specs), t.specialized};
      },
      py::arg("fn"), py::arg("specs"), py::arg("parameters") = ir::ParamMap{},
      py::arg("device") = py::none(), py::arg("examples") = std::vector<oar::Shape>{},
      "Traces fn(list of symbolic Tensors) -> Tensor or list of Tensors into a Program.");

  m.def(
      "trace_cond",
      [](const oar::Tensor& pred, const py::function& then_fn, const py::function& else_fn,
         const std::string& where) {
        return current_tracer(where).trace_cond(pred, region_function(then_fn), region_function(else_fn), where);
      },
      py::arg("pred"), py::arg("then_fn"), py::arg("else_fn"), py::arg("where"),
      "Inside a trace: appends a cond whose regions are then_fn() and else_fn() (each a list of Tensors) traced; "
      "returns its results. `where` prefixes errors.");
  m.def(
      "trace_while",
      [](const py::function& cond_fn, const py::function& body_fn, const std::vector<oar::Tensor>& init,
         const std::string& where, bool save_iterations) {
        return current_tracer(where).trace_while(region_function(cond_fn), region_function(body_fn), init, where,
                                                 save_iterations);
      },
      py::arg("cond_fn"), py::arg("body_fn"), py::arg("init"), py::arg("where"), py::arg("save_iterations") = false,
      "Inside a trace: appends a while carrying init, its regions cond_fn(vars) -> [bool] and body_fn(vars) -> "
      "next vars traced; returns its results (then, with save_iterations, the stack of each carried value's "
      "values entering each iteration).");

  m.def(
      "default_pipeline",
      [](ir::Program& program, const std::optional<std::string>& device, bool print, std::optional<bool> compiler) {
        ir::PassManager pm = ir::default_pipeline(device_or_default(device), pipeline_options(compiler));
        pm.set_print_after_each(print);
        return pm.run(program);
      },
      py::arg("program"), py::arg("device") = py::none(), py::arg("print_after_each") = false,
      py::arg("compiler") = py::none(),
      "Runs constant folding, CSE and DCE in place, then the compiler plugin's passes when compiler is True "
      "(None: OAR_COMPILER / FLAGS_use_cinn decide); returns whether the program changed.");

  py::class_<PyExecutor>(m, "Executor")
      .def(py::init([](const ir::Program& program, const std::optional<std::string>& device,
                       int num_streams) {
             ir::ExecutorOptions options;
             options.num_streams = num_streams;
             return PyExecutor{
                 std::make_unique<ir::Executor>(program, device_or_default(device), options)};
           }),
           py::arg("program"), py::arg("device") = py::none(), py::arg("num_streams") = 1)
      .def(
          "set_parameters",
          [](PyExecutor& e, const ir::ParamMap& params) { e.executor->set_parameters(params); },
          py::arg("parameters"))
      .def("parameters", [](const PyExecutor& e) { return e.executor->parameters(); })
      .def(
          "run",
          [](PyExecutor& e, const std::vector<oar::Tensor>& inputs) {
            py::gil_scoped_release release;
            return e.executor->run(inputs);
          },
          py::arg("inputs"))
      .def_property_readonly(
          "program",
          [](const PyExecutor& e) {
            return std::make_shared<ir::Program>(e.executor->program().clone());
          },
          "The compiled program (after the device's decompositions).")
      .def_property_readonly(
          "device", [](const PyExecutor& e) { return device_string(e.executor->device()); })
      .def("schedule_str", [](const PyExecutor& e) { return e.executor->schedule_str(); });

  py::class_<PyCompiledFunction>(m, "CompiledFunction",
                                  "A program callable from eager code: its outputs are differentiable (the "
                                  "backward is the program's appended backward) when an input or parameter "
                                  "requires grad.")
      .def(py::init([](const ir::Program& program, const std::optional<std::string>& device, int num_streams) {
             ir::ExecutorOptions options;
             options.num_streams = num_streams;
             return PyCompiledFunction{
                 std::make_unique<ir::CompiledFunction>(program, device_or_default(device), options)};
           }),
           py::arg("program"), py::arg("device") = py::none(), py::arg("num_streams") = 1)
      .def(
          "__call__",
          [](PyCompiledFunction& f, const std::vector<oar::Tensor>& inputs, const ir::ParamMap& params) {
            py::gil_scoped_release release;
            return (*f.function)(inputs, params);
          },
          py::arg("inputs"), py::arg("parameters"))
      .def("parameters", [](const PyCompiledFunction& f) { return f.function->parameters(); })
      .def_property_readonly("backward_count", [](const PyCompiledFunction& f) { return f.function->backward_count(); })
      .def_property_readonly(
          "program",
          [](const PyCompiledFunction& f) {
            return std::make_shared<ir::Program>(f.function->forward().program().clone());
          },
          "The compiled forward program.");

  py::class_<PyCachedTrace>(m, "CachedTrace",
                            "One trace of a TraceCache: what it accepts and the CompiledFunction that runs it.")
      .def_property_readonly("id", [](const PyCachedTrace& t) { return t.entry->id; })
      .def_property_readonly("arguments", [](const PyCachedTrace& t) { return t.entry->key.arguments; })
      .def_property_readonly("program", [](const PyCachedTrace& t) { return t.entry->program; })
      .def_property_readonly("specs", [](const PyCachedTrace& t) { return t.entry->specs; })
      .def_property_readonly("updates", [](const PyCachedTrace& t) { return t.entry->updates; })
      .def_property_readonly("structure", [](const PyCachedTrace& t) { return t.entry->structure; })
      .def(
          "__call__",
          [](const PyCachedTrace& t, const std::vector<oar::Tensor>& inputs, const ir::ParamMap& params,
             bool strict_backward) {
            py::gil_scoped_release release;
            return (*t.entry->function)(inputs, params, strict_backward);
          },
          py::arg("inputs"), py::arg("parameters"), py::arg("strict_backward") = false)
      .def("parameters", [](const PyCachedTrace& t) { return t.entry->function->parameters(); });

  py::class_<ir::TraceCache>(m, "TraceCache",
                             "The traces of one to_static function (Note [Trace cache] in compiled_function.cpp).")
      .def(py::init<size_t>(), py::arg("capacity") = 8)
      .def(
          "lookup",
          [](ir::TraceCache& c, int64_t arguments, std::vector<bool> mode, const std::optional<std::string>& device,
             const std::vector<oar::Tensor>& inputs) {
            return cached(c.lookup({arguments, std::move(mode), device_or_default(device)}, inputs));
          },
          py::arg("arguments"), py::arg("mode"), py::arg("device"), py::arg("inputs"),
          "The trace for this key whose specs accept the inputs (made the most recently used), or None.")
      .def_static(
          "specs_for",
          [](const std::vector<ir::InputSpec>& declared, const std::vector<oar::Tensor>& inputs,
             const std::string& what) { return ir::TraceCache::specs_for(declared, inputs, what); },
          py::arg("declared"), py::arg("inputs"), py::arg("what"),
          "The specs a new trace uses: the declared ones when they accept the inputs, else the exact shapes.")
      .def(
          "insert",
          [](ir::TraceCache& c, int64_t arguments, std::vector<bool> mode, const std::optional<std::string>& device,
             std::vector<ir::InputSpec> specs, ProgramPtr program, std::vector<std::string> updates,
             std::string structure, std::optional<bool> compiler) {
            ir::CachedTrace t;
            t.key = {arguments, std::move(mode), device_or_default(device)};
            t.specs = std::move(specs);
            t.function = std::make_shared<ir::CompiledFunction>(*program, t.key.device, ir::ExecutorOptions{},
                                                                pipeline_options(compiler));
            t.program = std::move(program);
            t.updates = std::move(updates);
            t.structure = std::move(structure);
            return *cached(c.insert(std::move(t)));
          },
          py::arg("arguments"), py::arg("mode"), py::arg("device"), py::arg("specs"), py::arg("program"),
          py::arg("updates"), py::arg("structure"), py::arg("compiler") = py::none(),
          "Compiles a new trace and adds it as the most recently used (one more trace counted); its training "
          "programs go through default_pipeline with `compiler` (None: the environment decides).")
      .def_property_readonly("latest", [](const ir::TraceCache& c) { return cached(c.latest()); })
      .def("entries",
           [](const ir::TraceCache& c) {
             std::vector<PyCachedTrace> out;
             for (auto& e : c.entries()) out.push_back({e});
             return out;
           })
      .def_property_readonly("trace_count", &ir::TraceCache::trace_count)
      .def("__len__", &ir::TraceCache::size);

  m.def(
      "save",
      [](const ir::Program& program, const ir::ParamMap& params, const std::string& path) {
        py::gil_scoped_release release;
        ir::save(program, params, path);
      },
      py::arg("program"), py::arg("parameters"), py::arg("path"),
      "Writes path.json (the program) and path.safetensors (parameters and constants).");
  m.def(
      "load",
      [](const std::string& path, const std::optional<std::string>& device) {
        oar::Device d = device_or_default(device);
        ir::LoadedProgram loaded = [&] {
          py::gil_scoped_release release;
          return ir::load(path, d);
        }();
        return py::make_tuple(std::make_shared<ir::Program>(std::move(loaded.program)),
                              loaded.params);
      },
      py::arg("path"), py::arg("device") = py::none(),
      "Reads path.json and path.safetensors: (Program, parameters).");

  m.def(
      "dynamic_dims",
      [](const oar::Tensor& t) {
        std::vector<bool> out(t.shape().size(), false);
        auto* tracer = dynamic_cast<ir::Tracer*>(&oar::current_builder());
        if (!tracer || !t.is_symbolic()) return out;
        const ir::SymShape& shape = tracer->symbolic_shape(tracer->value_of(t));
        for (size_t d = 0; d < shape.size() && d < out.size(); ++d) out[d] = tracer->symbols().resolve(shape[d]) < 0;
        return out;
      },
      py::arg("tensor"), "While tracing: per dim of a symbolic tensor, whether it is dynamic (its size known when "
                         "the program runs).");

  m.def(
      "data_dependent_dims",
      [](const oar::Tensor& t) {
        std::vector<bool> out(t.shape().size(), false);
        auto* tracer = dynamic_cast<ir::Tracer*>(&oar::current_builder());
        if (!tracer || !t.is_symbolic() || !tracer->value_of(t)) return out;
        const ir::SymShape& shape = tracer->symbolic_shape(tracer->value_of(t));
        for (size_t d = 0; d < shape.size() && d < out.size(); ++d) out[d] = tracer->symbols().data_dependent(shape[d]);
        return out;
      },
      py::arg("tensor"), "While tracing: per dim of a symbolic tensor, whether its size depends on values "
                         "(nonzero's count), not on the input shapes.");

  m.def(
      "tape_gap",
      []() -> std::string {
        auto* tracer = dynamic_cast<ir::Tracer*>(&oar::current_builder());
        return tracer ? tracer->tape_gap() : std::string();
      },
      "While tracing: why the trace's autograd tape has a gap (oar.grad is refused), else ''.");

  m.def(
      "is_symbolic", [](const oar::Tensor& t) { return t.is_symbolic(); }, py::arg("tensor"),
      "True for a tensor of a trace in progress (a dtype and shape, no values).");

  // ---- dist.to_static (H6) ----
  m.def(
      "append_backward",
      [](ir::Program& program, size_t loss_output, const std::vector<std::string>& parameters) {
        // Appends d(outputs[loss_output]) / d(parameter) for each named
        // parameter and adds each gradient as an output "grad@<name>".
        OAR_CHECK_ARG(loss_output < program.outputs().size(),
                      "append_backward: the program has " + std::to_string(program.outputs().size()) +
                          " outputs; there is no output " + std::to_string(loss_output));
        std::vector<ir::Value*> wrt;
        for (const auto& name : parameters) {
          ir::Value* v = program.find(name);
          OAR_CHECK_ARG(v != nullptr, "append_backward: the program has no parameter '" + name + "'");
          wrt.push_back(v);
        }
        ir::BackwardOptions options;
        options.allow_unused = true;
        std::vector<ir::Value*> grads =
            ir::append_backward(program, {program.outputs()[loss_output].value}, wrt, {}, options);
        // The forward ends with the op computing the loss (composite ops
        // without a VJP were decomposed in place): the pipeline schedules
        // split the partitioned program there.
        size_t forward_ops = 0, index = 0;
        for (const auto& op : program.block().ops()) {
          ++index;
          for (const ir::Value* r : op->results()) {
            if (r == program.outputs()[loss_output].value) forward_ops = index;
          }
        }
        std::vector<std::string> added;
        for (size_t i = 0; i < grads.size(); ++i) {
          if (grads[i] == nullptr) continue;  // the loss does not depend on it
          program.add_output(grads[i], "grad@" + parameters[i]);
          added.push_back(parameters[i]);
        }
        return py::make_tuple(added, forward_ops);
      },
      py::arg("program"), py::arg("loss_output"), py::arg("parameters"),
      "Appends the gradients of output loss_output w.r.t. the named parameters as outputs; returns (the names "
      "of the parameters that got one, the number of operations before the backward).");
  m.def(
      "dist_partition",
      [](const ir::Program& dense, int rank, const std::vector<std::optional<DistAttrTuple>>& inputs,
         const std::map<std::string, DistAttrTuple>& parameters,
         const std::vector<std::optional<DistAttrTuple>>& outputs, const std::optional<std::string>& device,
         const std::map<size_t, DistAttrTuple>& marks, bool join_meshes, std::optional<size_t> forward_ops) {
        ir::PartitionSpec spec;
        spec.forward_ops = forward_ops;
        for (const auto& [index, a] : marks) spec.marks.emplace(index, dist_attr_of(a));
        spec.join_meshes = join_meshes;
        spec.rank = rank;
        spec.inputs = dist_attrs_of(inputs);
        for (const auto& [name, a] : parameters) spec.parameters.emplace(name, dist_attr_of(a));
        spec.outputs = dist_attrs_of(outputs);
        ir::Partition part = ir::partition(dense, spec, device_or_default(device));
        std::vector<std::optional<DistAttrTuple>> attrs;
        for (const auto& a : part.outputs)
          attrs.push_back(a ? std::optional<DistAttrTuple>(dist_attr_tuple(*a)) : std::nullopt);
        auto shared = [](std::optional<ir::Program>& p) -> py::object {
          if (!p) return py::none();
          return py::cast(std::make_shared<ir::Program>(std::move(*p)));
        };
        return py::make_tuple(std::make_shared<ir::Program>(std::move(part.program)), attrs, part.output_shapes,
                              shared(part.forward), shared(part.backward));
      },
      py::arg("program"), py::arg("rank"), py::arg("inputs"), py::arg("parameters"), py::arg("outputs"),
      py::arg("device") = py::none(), py::arg("marks") = std::map<size_t, DistAttrTuple>{},
      py::arg("join_meshes") = false, py::arg("forward_ops") = py::none(),
      "Rank `rank`'s program of a dense program (Note [Distributed programs]): (Program, output placements, "
      "output global shapes, forward part, backward part); the parts are None unless forward_ops is given.");
}

}  // namespace oar_py
