/// \file compiled_function.h
/// A program callable from eager code, with gradients: the bridge that lets
/// a to_static function train (Paddle's run_program); and the trace cache a
/// to_static function keeps (TraceCache), which the Python frontend's
/// oar.jit.to_static is a thin layer over.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "oar/ir/executor.h"
#include "oar/ir/pass.h"
#include "oar/ir/trace.h"

namespace oar::ir {

/// Runs a program's forward with an Executor and, when autograd records
/// (grad mode on and an input or a parameter requiring grad), runs a
/// training forward that also returns the values the backward needs, and
/// records one tape node ("to_static") whose backward runs the program's
/// appended backward (append_backward: the same VJP rules as eager mode)
/// on them (Note [Training programs] in compiled_function.cpp). The pair
/// is compiled once per set of differentiated inputs and input shapes.
/// Gradients of gradients through it (create_graph) are an error naming
/// it; call the function eagerly for those.
class CompiledFunction {
 public:
  /// `pipeline`: what default_pipeline runs on the training forward and
  /// backward programs it builds (the compiler, when on, fuses them too).
  CompiledFunction(const Program& program, const Device& device, ExecutorOptions options = {},
                   PipelineOptions pipeline = {});
  ~CompiledFunction();
  CompiledFunction(CompiledFunction&&) noexcept;

  /// Outputs of the program on `inputs` with `params` bound by name
  /// (parameters the program does not use are ignored).
  /// With `strict_backward`, a call that would need a backward the program
  /// cannot have (program autodiff refused it) throws before running, rather
  /// than when the backward runs (to_static(full_graph=False) then runs the
  /// function eagerly).
  std::vector<Tensor> operator()(std::span<const Tensor> inputs, const ParamMap& params,
                                 bool strict_backward = false);

  /// The inference forward executor.
  const Executor& forward() const;
  /// The parameters of the executor that ran last (updated values after a
  /// run of a program with updates).
  const ParamMap& parameters() const;
  /// Training forward/backward pairs compiled so far.
  size_t backward_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// True when `spec` accepts `t`: the same dtype and rank, and every dim
/// equal or dynamic (-1) in the spec.
bool spec_accepts(const InputSpec& spec, const Tensor& t);
/// True when there are as many specs as tensors and each accepts its tensor.
bool specs_accept(std::span<const InputSpec> specs, std::span<const Tensor> inputs);

/// What a trace is found by besides its input specs (Note [Trace cache] in
/// compiled_function.cpp).
struct TraceKey {
  /// The frontend's id of the call's other arguments: the values fixed in
  /// the trace (Python numbers, strings, ...) and where the tensors go.
  int64_t arguments = 0;
  /// Per sublayer of a Layer: whether it is in training mode (empty for a
  /// plain function). Each mode has its own trace.
  std::vector<bool> mode;
  /// The device the trace runs on.
  Device device;
  /// Equal arguments id, modes and device.
  bool operator==(const TraceKey&) const = default;
};

/// One trace held by a TraceCache: what it accepts and what runs it.
struct CachedTrace {
  TraceKey key;
  std::vector<InputSpec> specs;               ///< what it accepts (after specialization)
  std::shared_ptr<Program> program;           ///< the optimized trace (not changed once cached)
  std::shared_ptr<CompiledFunction> function;  ///< runs it (differentiable)
  std::vector<std::string> updates;           ///< parameters the program reassigns
  std::string structure;                      ///< how outputs return: "tensor", "list" or "tuple"
  uint64_t id = 0;                            ///< unique within its cache, set by insert
};

/// The bounded cache of traces of one to_static function: lookup by key and
/// input specs (most recently used first), the specs a new trace uses, and
/// the count of traces made. Not synchronized: one caller at a time (the
/// Python frontend calls it holding the GIL).
class TraceCache {
 public:
  /// Keeps at most `capacity` traces (at least one); the least recently
  /// used is dropped.
  explicit TraceCache(size_t capacity = 8);

  /// The trace with `key` whose specs accept `inputs`, made the most
  /// recently used; null when none does (a miss: trace, then insert).
  std::shared_ptr<const CachedTrace> lookup(const TraceKey& key, std::span<const Tensor> inputs);

  /// The specs a new trace for `inputs` uses: `declared` when they accept
  /// the inputs (dynamic dims stay dynamic), else exactly the inputs' shapes
  /// and dtypes (with the declared names). `what` names the function in the
  /// error for a count mismatch.
  static std::vector<InputSpec> specs_for(const std::vector<InputSpec>& declared, std::span<const Tensor> inputs,
                                          const std::string& what);

  /// Adds a new trace as the most recently used (counting one trace) and
  /// drops the least recently used beyond the capacity. Returns it with its
  /// id set.
  std::shared_ptr<const CachedTrace> insert(CachedTrace entry);

  /// The most recently used trace (null when empty).
  std::shared_ptr<const CachedTrace> latest() const;
  /// The traces held, most recently used first.
  std::vector<std::shared_ptr<const CachedTrace>> entries() const;
  /// Traces held now (at most the capacity).
  size_t size() const { return entries_.size(); }
  /// Traces inserted so far (every cache miss traces once).
  size_t trace_count() const { return traces_; }
  /// The most traces held at once.
  size_t capacity() const { return capacity_; }

 private:
  std::list<std::shared_ptr<const CachedTrace>> entries_;  // owned; most recently used first
  size_t capacity_;
  size_t traces_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace oar::ir
