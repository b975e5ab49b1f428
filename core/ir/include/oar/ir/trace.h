/// \file trace.h
/// Capture: a Tracer is the Builder of static mode (Note [Builder]): while
/// installed, every op call appends an operation to a program and returns
/// a symbolic tensor (no storage; dtype and an example shape, so code that
/// reads shapes keeps working). to_static traces a C++ callable into a
/// Program and runs it with the executor, re-tracing for shapes outside
/// what it captured.
///
/// Note [Dynamic dims]
/// Meta rules work on concrete shapes. A symbolic tensor carries two
/// shapes: the example shape (the shapes of the call being traced, which
/// code that reads x.shape() sees) and its symbolic shape (Note [Symbolic
/// dims] in shape_inference.h), where each dynamic dim is a symbol. Each
/// op's meta rule runs on the examples and, through the tracer's
/// SymbolTable, on the symbols; result dims that are symbols are dynamic.
/// When the symbolic rule rejects what the example accepts (a reshape to a
/// shape computed from x.shape(), say) the trace is *specialized*: its
/// dynamic dims are fixed to the example's, and other shapes re-trace.
/// Ops that take their shape from an operand (full_like,
/// broadcast_to_like, sum_to_like, shape, numel) keep decompositions and
/// VJPs free of example sizes, so training programs stay dynamic.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "oar/builder.h"
#include "oar/device.h"
#include "oar/ir/executor.h"
#include "oar/ir/pass.h"
#include "oar/ir/program.h"
#include "oar/ir/shape_inference.h"
#include "oar/runtime.h"

namespace oar {

/// What a symbolic tensor's TensorImpl::symbol holds.
struct SymbolicInfo {
  ir::Value* value = nullptr;
  const void* owner = nullptr;  ///< the Tracer that made it
  ir::SymShape shape;           ///< symbolic shape (Note [Dynamic dims])
};

}  // namespace oar

namespace oar::ir {

/// The static-mode Builder.
class Tracer final : public Builder {
 public:
  static constexpr size_t kAppend = std::numeric_limits<size_t>::max();

  /// Appends to `program` (or inserts from block position `insert_at`);
  /// `symbols` holds the symbols of the values passed to symbolic().
  Tracer(Program& program, const Device& device, size_t insert_at = kAppend, SymbolTable symbols = {});

  /// A symbolic tensor standing for `value`. `shape` defaults to the
  /// value's type with a new symbol per dynamic dim; `example` to the
  /// type's dims, or sample A of the symbols when the type is dynamic.
  Tensor symbolic(Value* value, const Shape& example = {}, const SymShape& shape = {});
  /// The tracer's symbols (Note [Symbolic dims]).
  SymbolTable& symbols() { return symbols_; }
  /// The symbolic shape of a value this tracer made or captured.
  const SymShape& symbolic_shape(const Value* value) const;
  /// The value of a symbolic tensor made by this tracer, or nullptr.
  Value* value_of(const Tensor& t) const;
  /// The value standing for any tensor: symbolic ones map to their value;
  /// concrete ones are captured once, as the parameter of that name when
  /// registered with name_parameter, else as a constant.
  Value* capture(const Tensor& t);
  /// Registers the name under which a concrete tensor is captured as a
  /// parameter.
  void name_parameter(const Tensor& t, const std::string& name);
  /// The concrete tensors captured as parameters, by name.
  const ParamMap& captured_parameters() const { return captured_params_; }

  /// True when a dynamic dim had to be fixed (Note [Dynamic dims]).
  bool specialized() const { return specialized_; }
  /// Block position of the next inserted operation.
  size_t cursor() const { return cursor_; }
  /// The example shape of a value this tracer made or was given.
  const Shape& example_shape(const Value* value) const;

  std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                            const Device* device) override;
  void note_size_read(const Tensor& x, int64_t dim) override;

  /// Code traced into a region: the region's arguments in (symbolic
  /// tensors), the values its yield returns out.
  using RegionFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& args)>;
  /// Appends a cond on the one-element bool `pred` whose regions are
  /// `then_fn` and `else_fn` traced (Note [Tracing control flow]); returns
  /// its results. Branches giving different counts, dtypes or shapes are an
  /// error naming `where` and both types.
  std::vector<Tensor> trace_cond(const Tensor& pred, const RegionFunction& then_fn, const RegionFunction& else_fn,
                                 const std::string& where);
  /// Appends a while carrying `init`: `cond_fn` (one one-element bool) and
  /// `body_fn` (the next carried values) traced on the region arguments.
  /// A body changing a carried dtype or shape is an error naming `where`.
  /// With `save_iterations` the while also returns, per carried value, the
  /// stack of its values entering each iteration (a dynamic leading dim):
  /// the results, then the stacks (a list collected in a loop, in dy2static).
  /// A region function that throws leaves no while behind.
  std::vector<Tensor> trace_while(const RegionFunction& cond_fn, const RegionFunction& body_fn,
                                  const std::vector<Tensor>& init, const std::string& where,
                                  bool save_iterations = false);

  /// Non-empty once an input requiring grad reached an op inside a traced
  /// cond or while: the autograd tape of the trace (oar::grad inside
  /// to_static) has a gap there, so a grad call during this trace is refused
  /// with this reason (program autodiff, which sees regions, is unaffected).
  const std::string& tape_gap() const { return tape_gap_; }

 private:
  // An op on small constants only, run eagerly (Note [Folding while tracing]).
  bool foldable(const OpDef& op, std::span<const Tensor> inputs) const;
  // Adds an operation where tracing is: the innermost region being traced,
  // else the top-level block at cursor_.
  Operation* emit(const OpDef& op, std::vector<Value*> operands, const Attrs& attrs,
                  const std::vector<TensorType>& types);
  // Traces the regions of `op`; dims set in `grown` are loop-varying (Note [Growing loop values]).
  // Returns no results when the body changed a carried dim not in `grown` yet (added to it): the
  // caller traces the loop again.
  std::vector<Tensor> trace_while_regions(Operation* op, const std::vector<Value*>& carried,
                                          std::vector<std::vector<bool>>& grown,
                                          const RegionFunction& cond_fn, const RegionFunction& body_fn,
                                          const std::vector<Tensor>& init, const std::string& where,
                                          bool save_iterations);
  // Traces fn(args) into `region` and ends it with a yield of the results.
  std::vector<Tensor> trace_region(Block& region, const RegionFunction& fn, const std::vector<Tensor>& args);

  std::vector<Block*> regions_;  // not owned: the regions being traced, innermost last
  std::string tape_gap_;          // see tape_gap()
  Program& program_;
  Device device_;
  size_t cursor_;
  bool specialized_ = false;
  SymbolTable symbols_;
  std::unordered_map<const Value*, Shape> examples_;
  std::unordered_map<const Value*, SymShape> shapes_;
  std::unordered_map<const TensorImpl*, Value*> captured_;
  std::unordered_map<const TensorImpl*, std::string> param_names_;
  std::vector<Tensor> keep_alive_;  // captured tensors (their impl pointers key captured_)
  ParamMap captured_params_;
  int next_constant_ = 0;
};

/// The declared shape and dtype of a to_static input; -1 dims are dynamic.
struct InputSpec {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  std::string name;  ///< "" names it x<index>
};

/// The traced callable: tensors in, tensors out.
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// One trace: the program and whether it was specialized.
struct Trace {
  Program program;
  ParamMap parameters;  ///< the captured parameters, by name
  std::vector<InputSpec> specs;  ///< what it accepts (after specialization)
  bool specialized = false;
};

/// Traces `fn` once into a program. Dynamic dims trace with `examples`
/// (one shape per input; default: each -1 dim becomes 2). Named
/// `parameters` are captured as parameters; other concrete tensors the
/// function uses become constants.
Trace trace(const TracedFunction& fn, const std::vector<InputSpec>& specs, const ParamMap& parameters = {},
            const Device& device = default_device(), const std::vector<Shape>& examples = {});

struct StaticOptions {
  ParamMap parameters;         ///< tensors to capture as named parameters
  bool optimize = true;        ///< run the default pass pipeline
  PipelineOptions pipeline;    ///< what it runs (the compiler: OAR_COMPILER / FLAGS_use_cinn by default)
  bool print_ir_after_each_pass = false;
  size_t max_traces = 8;       ///< bounded cache: the least recently used trace is evicted
  ExecutorOptions executor;
};

/// A function compiled to static mode (to_static's result).
class StaticFunction {
 public:
  StaticFunction(TracedFunction fn, std::vector<InputSpec> specs, StaticOptions options);
  ~StaticFunction();
  StaticFunction(StaticFunction&&) noexcept;

  /// Runs the trace whose specs accept the inputs' shapes and dtypes; traces
  /// (logging at debug level) when none does. With grad mode on and an
  /// input or parameter requiring grad, the outputs are differentiable:
  /// the backward is the program's appended backward (CompiledFunction).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  /// Replaces a parameter's tensor for later calls.
  void set_parameter(const std::string& name, const Tensor& value);
  /// Traces held now (at most max_traces) and traces made so far.
  size_t cached_traces() const;
  size_t trace_count() const;
  /// The program of the most recently used trace (throws before any call).
  const Program& program() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

StaticFunction to_static(TracedFunction fn, std::vector<InputSpec> specs, StaticOptions options = {});

}  // namespace oar::ir
