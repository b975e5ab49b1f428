// The static-mode executor: binding and launch. Compiling resolves every
// operation's kernel once, decomposing the composite ops the device has no
// kernel for (resolve.cpp); planning, per input shapes, asks the kernels
// whether they accept the shapes (Note [Kernel fall-through]), assigns
// streams, lays intermediates out in one arena (memory_planner.cpp, kept
// per stream by a may_share predicate) and schedules the events
// (schedule.cpp), then prebuilds each instruction's kernel views and
// context; a run then only patches the views of inputs, parameters and
// outputs and launches through the launch function eager mode uses
// (dispatch/kernel_launch.h).
//
// Note [Data-dependent shapes]
// A program holding a while that saves its iterations (program autodiff's
// forward of a loop, Note [VJP of while] in autodiff.cpp) has results whose
// shape is known only once the loop has run, so it cannot be planned ahead.
// Such a program is *interpreted*: each run goes operation by operation
// through the eager dispatcher on the executor's device (interpreter.h),
// with the same interface checks, parameters and updates. Its random ops
// draw from the device's generator rather than from the traced offsets.
// The backward of the loop takes the stacks as inputs, so it is planned
// (per stack shape) as usual.
//
// Note [Decomposing per input shapes]
// A decomposition that reads an example size (one written with x.shape()
// rather than the ops of Note [Shape from an operand]) fails on a program
// with dynamic dims. Such a program is compiled again for each new set of
// input shapes: its types specialized to them (specialize_types), then
// decomposed. program() is then the compilation of the last run's shapes.
// The first-party decompositions (relu, mean, the losses, the norms, ...)
// hold for every size of a dynamic dim, so a program made of them compiles
// once and per_shape stays false; this path remains for decompositions
// (plugin or user ops) that do not, and for a composite op whose kernels
// all decline the planned shapes (Note [Kernel fall-through]).
#include "oar/ir/executor.h"
#include "ops/op_util.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "dispatch/device_context.h"
#include "dist/dist_internal.h"
#include "oar/ir/control_flow.h"
#include "oar/ir/interpreter.h"
#include "oar/profiler.h"
#include "oar/ir/schedule.h"
#include "oar/ir/shape_inference.h"
#include "resolve.h"

namespace oar::ir {

struct Executor::Impl {
  // One launch: the prebuilt kernel call of an instruction.
  struct Launch {
    const Operation* op = nullptr;
    const KernelEntry* kernel = nullptr;
    std::vector<OarTensorView> views;  // inputs, then outputs
    OarKernelContext ctx{};
    OarEvent_t record = nullptr;    // recorded after the launch (another stream waits for it)
    std::vector<OarEvent_t> waits;  // waited for before the launch
    bool host = false;              // a host op (Note [Host ops]): op.host runs instead of a kernel
    bool regions = false;           // cond or while: the region runner runs it (Note [Control-flow ops])
    int stream = 0;                 // index of ctx.stream among the executor's streams
  };
  // A view whose memory changes from run to run (inputs, parameters, outputs).
  struct Patch {
    size_t launch;
    size_t view;
    const Value* root;
  };

  Program source;          // the caller's program (interface checks; recompiled per shapes)
  Program program;         // compiled: composite ops without kernels decomposed
  bool per_shape = false;  // Note [Decomposing per input shapes]
  bool interpreted = false;  // Note [Data-dependent shapes]
  // Composite ops decomposed because their kernels declined the planned shapes.
  std::set<std::string> forced;
  Device device;
  ExecutorOptions options;
  DeviceBackend* backend = nullptr;
  std::vector<const KernelEntry*> kernels;  // per block op of `program`; null for view ops
  // Random ops of `program` and their traced offsets (Note [Random ops in programs]).
  std::vector<std::pair<Operation*, int64_t>> random_ops;  // with the offset each drew when traced
  int64_t random_base = 0;   // the least traced offset
  uint64_t random_span = 0;  // offsets a run takes from the global generator (Note [Random ops in programs])
  std::unordered_map<const Value*, size_t> input_index;
  ParamMap params;

  std::vector<OarStream_t> streams;     // [0]: the compute stream (not owned); others owned
  OarEvent_t start_event = nullptr;     // owned
  std::vector<OarEvent_t> done_events;  // owned; per stream (index 0 unused)
  std::vector<OarEvent_t> event_pool;   // owned; handed to launches that others wait for

  // Built per input shapes.
  bool planned = false;
  std::vector<Shape> planned_shapes;
  std::unordered_map<const Value*, Shape> shapes;
  MemoryPlan plan;
  Tensor arena;
  std::vector<Instruction> instructions;
  std::vector<Launch> launches;  // parallel to instructions
  std::vector<Patch> patches;
  std::vector<const Value*> fresh_values;  // Placement::output: allocated on every run
  std::unordered_map<const Value*, size_t> fresh_index;
  std::vector<const Value*> run_roots;  // roots whose tensor a run binds
  std::vector<Tensor> root_tensors;     // by value id, during a run
  int streams_used = 1;
  std::mutex mutex;  // held by every run and parameter binding (Note [Concurrent calls])

  Impl(const Program& caller, const Device& dev, ExecutorOptions opts)
      : source(caller.clone()), device(dev), options(opts) {
    backend = &backend_of(device);
    program = source.clone();
    if (has_data_dependent_shapes(source)) {
      interpreted = true;
      find_random_ops();
      input_index.clear();
      for (size_t i = 0; i < program.inputs().size(); ++i) input_index[program.inputs()[i]] = i;
      create_streams();
      return;
    }
    try {
      compile();
    } catch (const Error&) {
      if (!has_dynamic_dims(source)) throw;
      // Note [Decomposing per input shapes]: fail now only for what no
      // shapes can fix, a primitive without a kernel.
      per_shape = true;
      program = source.clone();
      for (const auto& op : program.block().ops()) {
        if (op->def().kind == OpKind::primitive && !op->def().host && !is_control_flow(*op) &&
            !kernel_for_dtypes(*backend, *op))
          throw no_kernel_error(*backend, *op, nullptr);
      }
      kernels.clear();
    }
    create_streams();
  }

  ~Impl() {
    if (backend->shut_down) return;
    const OarDeviceApi& api = backend->api;
    for (size_t s = 1; s < streams.size(); ++s) sync_stream(streams[s]);
    auto destroy = [&](OarEvent_t e) {
      if (e && api.event_destroy) api.event_destroy(api.impl, device.index, e);
    };
    destroy(start_event);
    for (OarEvent_t e : done_events) destroy(e);
    for (OarEvent_t e : event_pool) destroy(e);
    for (size_t s = 1; s < streams.size(); ++s) {
      if (api.stream_destroy) api.stream_destroy(api.impl, device.index, streams[s]);
    }
    host_clear_error();
  }

  static bool has_dynamic_dims(const Program& p) {
    for (const Value* v : p.inputs()) {
      if (!v->type().is_static()) return true;
    }
    return false;
  }

  // Decomposes what the device cannot run and resolves every kernel of `program`.
  void compile() {
    decompose_unsupported(program, *backend, forced);
    kernels = resolve_kernels(program, *backend);
    find_random_ops();
    input_index.clear();
    for (size_t i = 0; i < program.inputs().size(); ++i) input_index[program.inputs()[i]] = i;
  }

  // Compiles the source again for `input_shapes` (Note [Decomposing per
  // input shapes]); a program with dynamic dims becomes specialized to them.
  void recompile(const std::vector<Shape>& input_shapes) {
    program = source.clone();
    if (has_dynamic_dims(source)) {
      per_shape = true;
      specialize_types(program, input_shapes);
    }
    compile();
  }

  void check(OarStatus status, const char* what) const {
    if (status != OAR_OK) backend->check(status, what);
  }

  // Waits for one stream; a device without stream entries (the cpu: one
  // in-order stream, Note [Executor streams]) waits for the whole device.
  OarStatus sync_stream(OarStream_t stream) const {
    const OarDeviceApi& api = backend->api;
    return api.stream_synchronize ? api.stream_synchronize(api.impl, device.index, stream)
                                  : api.synchronize_device(api.impl, device.index);
  }

  void create_streams() {
    streams.push_back(backend->slot(device.index).stream);
    const OarDeviceApi& api = backend->api;
    bool has_events = api.stream_create && api.stream_destroy && api.event_create && api.event_destroy &&
                      api.event_record && api.stream_wait_event;
    if (options.num_streams <= 1 || !has_events) return;
    host_clear_error();
    check(api.event_create(api.impl, device.index, &start_event), "event_create");
    done_events.push_back(nullptr);
    for (int s = 1; s < options.num_streams; ++s) {
      OarStream_t stream = nullptr;
      check(api.stream_create(api.impl, device.index, &stream), "stream_create");
      streams.push_back(stream);
      OarEvent_t done = nullptr;
      check(api.event_create(api.impl, device.index, &done), "event_create");
      done_events.push_back(done);
    }
  }

  OarEvent_t pooled_event(size_t index) {
    while (event_pool.size() <= index) {
      OarEvent_t e = nullptr;
      host_clear_error();
      check(backend->api.event_create(backend->api.impl, device.index, &e), "event_create");
      event_pool.push_back(e);
    }
    return event_pool[index];
  }

  void synchronize_streams() {
    for (size_t s = 0; s < streams.size(); ++s) {
      host_clear_error();
      check(sync_stream(streams[s]), "stream_synchronize");
    }
  }

  // The value whose memory `value` uses (itself unless an alias).
  const Value* root_of(const Value* value) const {
    for (size_t hops = 0; hops <= plan.buffers.size(); ++hops) {
      const BufferAssignment& b = buffer(value);
      if (b.placement != Placement::alias) return value;
      value = b.alias_of;
    }
    throw Error(ErrorCode::internal, "executor: the memory plan has an alias cycle");
  }

  const BufferAssignment& buffer(const Value* value) const {
    auto it = plan.buffers.find(value);
    if (it == plan.buffers.end()) {
      throw Error(ErrorCode::internal, "executor: the memory plan has no buffer for value %" +
                                           std::to_string(value->id()) + " of type " +
                                           value->type().str());
    }
    return it->second;
  }

  void build(const std::vector<Shape>& input_shapes) {
    if (planned) synchronize_streams();  // the old arena may still be in use
    planned = false;
    if (per_shape) {
      forced.clear();
      recompile(input_shapes);
    }
    // Note [Kernel fall-through]: a composite op whose kernels all decline
    // these shapes is decomposed and the program laid out again.
    for (int attempt = 0;; ++attempt) {
      std::set<std::string> declined = lay_out(input_shapes);
      if (declined.empty()) break;
      size_t before = forced.size();
      forced.insert(declined.begin(), declined.end());
      if (forced.size() == before || attempt >= 16) {
        throw Error(ErrorCode::internal, "executor: decomposing " + *declined.begin() +
                                             " did not remove it from the program");
      }
      recompile(input_shapes);
    }
    planned_shapes = input_shapes;
    planned = true;
    if (options.print_schedule) std::cerr << schedule_text() << memory_summary(plan) << "\n";
  }

  // Plans memory and streams, builds the launches and schedules them.
  // Returns the composite ops whose kernels all declined their shapes
  // (nothing is launchable then); throws for such a primitive.
  std::set<std::string> lay_out(const std::vector<Shape>& input_shapes) {
    const Block& block = program.block();
    shapes = infer_shapes(program, input_shapes);
    std::vector<int> stream_of = assign_streams(block, static_cast<int>(streams.size()));
    plan = plan_memory(program, shapes, 64, same_stream_sharing(block, stream_of));
    arena = Tensor();
    if (plan.arena_bytes > 0) arena = allocate_tensor({plan.arena_bytes}, DType::u8, device);

    instructions.clear();
    launches.clear();
    patches.clear();
    fresh_values.clear();
    run_roots.clear();
    root_tensors.assign(program.values().size(), Tensor());
    std::unordered_set<const Value*> roots_seen;
    auto need_root = [&](const Value* root) {
      if (roots_seen.insert(root).second) run_roots.push_back(root);
    };

    // A view of `value` for a kernel: arena memory is fixed now, the rest is
    // patched on every run (NULL data until then).
    auto add_view = [&](Launch& launch, size_t launch_index, const Value* value, int ndim) {
      OarTensorView view = contiguous_view(shapes.at(value), value->type().dtype, ndim);
      const Value* root = root_of(value);
      const BufferAssignment& b = buffer(root);
      if (b.placement == Placement::arena) {
        view.data = arena.defined() ? arena.impl().storage->data() : nullptr;
        view.byte_offset = b.offset;
      } else {
        patches.push_back({launch_index, launch.views.size(), root});
        need_root(root);
      }
      launch.views.push_back(view);
    };

    std::set<std::string> declined;
    std::vector<int> launched;
    int i = -1;
    for (const auto& op_ptr : block.ops()) {
      ++i;
      const Operation& op = *op_ptr;
      const bool host = op.def().host != nullptr;  // Note [Host ops]: run on every rank, even when empty
      const bool regions = is_control_flow(op);    // Note [Control-flow ops]: runs its regions
      if (!host && !regions && !kernels[static_cast<size_t>(i)]) {  // view ops: aliases, no kernel
        if (buffer(op.result(0)).placement != Placement::alias) {
          throw Error(ErrorCode::internal,
                      "executor: the memory plan does not alias the result of view op " + op.name() +
                          " (block position " + std::to_string(i) + ")");
        }
        continue;
      }
      bool any_elements = false;
      for (const Value* r : op.results()) any_elements = any_elements || shape_numel(shapes.at(r)) > 0;
      if (!any_elements && !host && !regions) continue;
      size_t index = launches.size();
      Launch launch;
      launch.op = &op;
      int rank = op.def().layout == InputLayout::broadcast ? static_cast<int>(shapes.at(op.result(0)).size()) : -1;
      for (const Value* v : op.operands()) add_view(launch, index, v, rank);
      for (const Value* v : op.results()) add_view(launch, index, v, -1);
      if (regions) {
        // The values its regions read get views too, so their memory is bound.
        for (const Value* v : captured_values(op)) add_view(launch, index, v, -1);
        launch.regions = true;
        launches.push_back(std::move(launch));
        launched.push_back(i);
        continue;
      }
      if (host) {
        launch.host = true;
        launches.push_back(std::move(launch));
        launched.push_back(i);
        continue;
      }
      // Ask the kernels about this problem once (data may be NULL).
      OarKernelContext problem = context_of(op, launch.views, streams[0]);
      launch.kernel = select_kernel(*backend, op.def().id, operand_dtypes(op), result_dtypes(op), &problem);
      if (!launch.kernel) {
        if (!op.def().decompose) throw no_kernel_error(*backend, op, &problem);
        declined.insert(op.name());
      }
      launches.push_back(std::move(launch));
      launched.push_back(i);
    }
    if (!declined.empty()) return declined;
    for (const auto& [value, b] : plan.buffers) {
      if (b.placement == Placement::output) fresh_values.push_back(value);
    }
    // Deterministic allocation order (the map's order is not).
    std::sort(fresh_values.begin(), fresh_values.end(),
              [](const Value* a, const Value* b) { return a->id() < b->id(); });
    fresh_index.clear();
    for (size_t k = 0; k < fresh_values.size(); ++k) fresh_index[fresh_values[k]] = k;
    for (const NamedValue& out : program.outputs()) need_root(root_of(out.value));
    for (const NamedValue& up : program.updates()) need_root(root_of(up.value));

    // Note [Executor streams]
    Schedule sched = schedule_block(block, plan, launched, stream_of, static_cast<int>(streams.size()));
    instructions = std::move(sched.instructions);
    streams_used = sched.streams_used;
    if (streams.size() > 1 && !launched.empty()) plan.reuse_after = std::move(sched.reuse_after);
    size_t next_event = 0;
    for (size_t k = 0; k < launches.size(); ++k) {
      Launch& l = launches[k];
      l.ctx = context_of(*l.op, l.views, streams[static_cast<size_t>(instructions[k].stream)]);
      l.stream = instructions[k].stream;
      l.record = sched.recorded[k] ? pooled_event(next_event++) : nullptr;
    }
    for (size_t k = 0; k < launches.size(); ++k) {
      for (int d : instructions[k].wait_for) launches[k].waits.push_back(launches[static_cast<size_t>(d)].record);
    }
    return {};
  }

  OarKernelContext context_of(const Operation& op, std::vector<OarTensorView>& views, OarStream_t stream) const {
    return kernel_context(*backend, device.index, stream, views.data(), op.operands().size(),
                          op.results().size(), op.attrs(), op.name().c_str());
  }

  // The tensor of a root value during a run.
  Tensor bind_root(const Value* root, std::span<const Tensor> inputs,
                   const std::vector<Tensor>& fresh) {
    const BufferAssignment& b = buffer(root);
    if (b.placement == Placement::output) return fresh[fresh_index.at(root)];
    switch (root->kind()) {
      case ValueKind::input:
        return inputs[input_index.at(root)];
      case ValueKind::parameter:
        return params.at(root->name());
      case ValueKind::constant:
        return program.constant_value(root);
      case ValueKind::result:
      case ValueKind::argument:  // region values never reach the executor's block
        break;
    }
    throw Error(ErrorCode::internal, "executor: result %" + std::to_string(root->id()) +
                                         " has no memory outside the arena in the plan");
  }

  // A tensor of `value`'s shape on its root's memory.
  Tensor tensor_of(const Value* value) const {
    const Tensor& root = root_tensors[static_cast<size_t>(root_of(value)->id())];
    const Shape& shape = shapes.at(value);
    if (root.shape() == shape) return root;
    auto impl = std::make_shared<TensorImpl>(root.impl());
    impl->autograd = nullptr;
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    return Tensor(std::move(impl));
  }

  void check_inputs(std::span<const Tensor> inputs, std::vector<Tensor>& prepared) const {
    const auto& declared = source.inputs();
    if (inputs.size() != declared.size()) {
      std::string names;
      for (size_t i = 0; i < declared.size(); ++i) names += (i ? ", " : "") + declared[i]->name();
      throw Error(ErrorCode::invalid_argument,
                  "executor: the program takes " + std::to_string(declared.size()) +
                      (declared.size() == 1 ? " input (" : " inputs (") + names + ") but " +
                      std::to_string(inputs.size()) + " were given");
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = declared[i];
      const Tensor& t = inputs[i];
      if (!t.defined()) {
        throw Error(ErrorCode::invalid_argument,
                    "executor: input '" + v->name() + "' (" + v->type().str() + ") is undefined");
      }
      if (t.is_symbolic()) {
        throw Error(
            ErrorCode::invalid_argument,
            "executor: input '" + v->name() + "' is a symbolic tensor of a trace, not a value");
      }
      if (t.dtype() != v->type().dtype || !v->type().matches(t.shape())) {
        std::string why = t.dtype() != v->type().dtype  ? "the dtype differs"
                          : t.dim() != v->type().rank() ? "the rank differs"
                                                        : "a static dim differs";
        throw Error(ErrorCode::invalid_argument, "executor: input '" + v->name() + "' expects " +
                                                     v->type().str() + " but got " +
                                                     type_of(t).str() + " (" + why + ")");
      }
      Tensor on_device = t.device() == device ? t : t.to(device);
      prepared.push_back(on_device.is_contiguous() ? on_device : on_device.contiguous());
    }
    for (const Value* p : source.parameters()) {
      if (!params.count(p->name())) {
        throw Error(ErrorCode::invalid_argument, "executor: parameter '" + p->name() + "' (" +
                                                     p->type().str() +
                                                     ") is not bound; call set_parameters first");
      }
    }
  }

  // A tensor of `value` on its planned memory during a run (arena or bound root).
  Tensor planned_tensor(const Value* value) const {
    const Value* root = root_of(value);
    if (buffer(root).placement != Placement::arena) return tensor_of(value);
    if (!arena.defined()) return Tensor::empty(shapes.at(value), value->type().dtype, device);  // no bytes
    auto impl = std::make_shared<TensorImpl>(arena.impl());
    impl->autograd = nullptr;
    impl->dtype = value->type().dtype;
    impl->shape = shapes.at(value);
    impl->strides = contiguous_strides(impl->shape);
    impl->byte_offset += buffer(root).offset;
    return Tensor(std::move(impl));
  }

  // Note [Host ops] (core/src/dist/collective_ops.cpp): the work queued
  // before is finished, op.host runs on the planned operands, and its
  // outputs are copied into the planned results.
  void launch_host(Launch& l) {
    synchronize_streams();
    const Operation& op = *l.op;
    std::vector<Tensor> operands;
    for (const Value* v : op.operands()) operands.push_back(planned_tensor(v));
    std::vector<TensorMeta> metas;
    for (const Value* r : op.results()) metas.push_back({r->type().dtype, shapes.at(r)});
    std::vector<Tensor> results = dist::run_host_op(op.def(), operands, op.attrs(), metas);
    store_results(op, results);
  }

  // Note [Control-flow ops]: the work queued before is finished, the
  // region runner runs the op on its planned operands and the values its
  // regions read, and its results are copied into the planned results.
  void launch_regions(Launch& l) {
    synchronize_streams();
    const Operation& op = *l.op;
    std::vector<Tensor> operands;
    for (const Value* v : op.operands()) operands.push_back(planned_tensor(v));
    std::vector<Tensor> results =
        run_control_flow(op, operands, [&](const Value* v) { return planned_tensor(v); }, device);
    for (size_t k = 0; k < results.size(); ++k) {
      if (results[k].shape() != shapes.at(op.result(k))) {
        throw Error(ErrorCode::invalid_argument,
                    "executor: " + op.name() + " gave result " + std::to_string(k) + " of shape " +
                        shape_str(results[k].shape()) + " where the plan has " +
                        shape_str(shapes.at(op.result(k))));
      }
    }
    store_results(op, results);
  }

  // Copies the results of a host or control-flow op into its planned results.
  void store_results(const Operation& op, const std::vector<Tensor>& results) {
    const OarDeviceApi& api = backend->api;
    for (size_t k = 0; k < results.size(); ++k) {
      Tensor src = results[k].device() == device ? results[k] : results[k].to(device);
      if (!src.is_contiguous()) src = src.contiguous();
      Tensor dst = planned_tensor(op.result(k));
      uint64_t bytes = static_cast<uint64_t>(dst.numel()) * dtype_size(dst.dtype());
      if (bytes == 0) continue;
      auto* to = static_cast<char*>(dst.impl().storage->data()) + dst.byte_offset();
      auto* from = static_cast<const char*>(src.impl().storage->data()) + src.byte_offset();
      if (to == from) continue;
      synchronize_streams();  // the host function's own kernels
      host_clear_error();
      check(api.memcpy_d2d(api.impl, device.index, to, from, bytes), "memcpy_d2d");
    }
  }

  void launch(Launch& l) {
    const OarDeviceApi& api = backend->api;
    profiler::RecordEvent traced;  // Note [Trace recorder]
    if (profiler::recording()) traced.begin(l.op->name(), "Operator", device.str(), l.stream);
    if (l.host || l.regions) {
      if (l.host)
        launch_host(l);
      else
        launch_regions(l);
      if (l.record) {
        host_clear_error();
        check(api.event_record(api.impl, device.index, l.record, l.ctx.stream), "event_record");
      }
      return;
    }
    for (OarEvent_t e : l.waits) {
      host_clear_error();
      check(api.stream_wait_event(api.impl, device.index, l.ctx.stream, e), "stream_wait_event");
    }
    launch_kernel(*backend, *l.kernel, l.ctx, l.stream);
    if (l.record) {
      host_clear_error();
      check(api.event_record(api.impl, device.index, l.record, l.ctx.stream), "event_record");
    }
  }

  // Side streams wait for stream 0 (at the start) or stream 0 for them (at the end).
  void fence(bool at_start) {
    if (streams_used <= 1) return;
    const OarDeviceApi& api = backend->api;
    host_clear_error();
    if (at_start) {
      check(api.event_record(api.impl, device.index, start_event, streams[0]), "event_record");
      for (int s = 1; s < streams_used; ++s) {
        check(api.stream_wait_event(api.impl, device.index, streams[static_cast<size_t>(s)],
                                    start_event),
              "stream_wait_event");
      }
      return;
    }
    for (int s = 1; s < streams_used; ++s) {
      OarEvent_t done = done_events[static_cast<size_t>(s)];
      check(api.event_record(api.impl, device.index, done, streams[static_cast<size_t>(s)]),
            "event_record");
      check(api.stream_wait_event(api.impl, device.index, streams[0], done), "stream_wait_event");
    }
  }

  // Note [Random ops in programs]
  // A traced random op (uniform, normal, dropout's mask) holds the (seed,
  // offset) it drew while tracing (the trace gives the generator its
  // offsets back, so tracing draws nothing). Like eager calls, each run
  // draws anew: it takes as many offsets from the global generator as the
  // trace drew (random_span), and op i uses the run's first offset plus its
  // place among the traced ones, so a run right after paddle.seed(s) draws
  // the numbers the same calls draw eagerly, and runs differ. Random ops in
  // regions (a cond's branch, a while's body) are reseeded too; a while
  // body's op draws the same numbers in every iteration of one run. A
  // caller that recomputes a run passes the same state to get the same
  // numbers.
  void find_random_ops() {
    random_ops.clear();
    std::function<void(const Block&)> walk = [&](const Block& block) {
      for (const auto& op : block.ops()) {
        if (op->def().random && op->attrs().has("seed") && op->attrs().has("offset")) {
          random_ops.emplace_back(op.get(), op->attrs().get_int("offset"));
        }
        for (size_t r = 0; r < op->num_regions(); ++r) walk(op->region(r));
      }
    };
    walk(program.block());
    random_base = 0;
    random_span = 0;
    if (random_ops.empty()) return;
    int64_t lo = random_ops.front().second, hi = lo;
    for (const auto& [op, traced] : random_ops) {
      lo = std::min(lo, traced);
      hi = std::max(hi, traced);
    }
    random_base = lo;
    random_span = static_cast<uint64_t>(hi - lo) + 1;
  }

  void reseed(std::pair<uint64_t, uint64_t> state) {
    for (auto& [op, traced] : random_ops) {
      Attrs& attrs = op->mutable_attrs();
      attrs.set("seed", static_cast<int64_t>(state.first));
      attrs.set("offset", static_cast<int64_t>(state.second + static_cast<uint64_t>(traced - random_base)));
    }
  }

  // A whole state dict may hold tensors passes removed from the program
  // (dead code): those are skipped; bind_parameter names an unknown one.
  void bind_parameters(const ParamMap& given) {
    for (const auto& [name, value] : given) {
      const Value* p = source.find(name);
      if (p && p->kind() == ValueKind::parameter) bind_parameter(name, value);
    }
  }

  void bind_parameter(const std::string& name, const Tensor& value) {
    const Value* p = source.find(name);
    if (!p || p->kind() != ValueKind::parameter) {
      std::string known;
      for (const Value* q : source.parameters()) known += (known.empty() ? "" : ", ") + q->name();
      throw Error(ErrorCode::invalid_argument,
                  "executor: the program has no parameter '" + name +
                      "' (its parameters: " + (known.empty() ? "none" : known) + ")");
    }
    OAR_CHECK_ARG(value.defined(), "executor: parameter '" + name + "' is bound to an undefined tensor");
    if (value.dtype() != p->type().dtype || !p->type().matches(value.shape())) {
      throw Error(ErrorCode::invalid_argument, "executor: parameter '" + name + "' expects " +
                                                   p->type().str() + " but got " + type_of(value).str());
    }
    Tensor t = value.device() == device ? value : value.to(device);
    params[name] = t.is_contiguous() ? t : t.contiguous();
  }

  std::vector<Tensor> run(std::span<const Tensor> given, std::optional<std::pair<uint64_t, uint64_t>> random_state) {
    std::vector<Tensor> inputs;
    check_inputs(given, inputs);
    if (!random_ops.empty()) reseed(random_state ? *random_state : next_random_state(random_span));
    if (interpreted) return run_interpreted(inputs);
    std::vector<Shape> input_shapes;
    for (const Tensor& t : inputs) input_shapes.push_back(t.shape());
    if (!planned || input_shapes != planned_shapes) build(input_shapes);

    std::vector<Tensor> fresh;
    fresh.reserve(fresh_values.size());
    for (const Value* v : fresh_values)
      fresh.push_back(allocate_tensor(shapes.at(v), v->type().dtype, device));
    for (const Value* root : run_roots)
      root_tensors[static_cast<size_t>(root->id())] = bind_root(root, inputs, fresh);
    for (const Patch& p : patches) {
      const TensorImpl& impl = root_tensors[static_cast<size_t>(p.root->id())].impl();
      OarTensorView& view = launches[p.launch].views[p.view];
      view.data = impl.storage ? impl.storage->data() : nullptr;
      view.byte_offset = impl.byte_offset;
    }

    profiler::RecordEvent traced;  // Note [Trace recorder]
    if (profiler::recording()) traced.begin("program", "Program", device.str());
    bool fenced = false;
    try {
      fence(true);
      fenced = true;
      for (Launch& l : launches) launch(l);
      fence(false);
    } catch (...) {
      // Leave no queued work reading memory the caller may free.
      for (size_t s = 0; s < streams.size() && fenced; ++s) sync_stream(streams[s]);
      host_clear_error();
      std::fill(root_tensors.begin(), root_tensors.end(), Tensor());
      throw;
    }

    std::vector<Tensor> outputs;
    for (const NamedValue& out : program.outputs()) outputs.push_back(tensor_of(out.value));
    std::vector<std::pair<std::string, Tensor>> updated;
    for (const NamedValue& up : program.updates())
      updated.emplace_back(up.name, tensor_of(up.value));
    for (auto& [name, t] : updated) params[name] = std::move(t);
    for (const Value* root : run_roots) root_tensors[static_cast<size_t>(root->id())] = Tensor();
    return outputs;
  }

  // Note [Data-dependent shapes]: outputs, then the updates applied to the parameters.
  std::vector<Tensor> run_interpreted(const std::vector<Tensor>& inputs) {
    std::vector<Tensor> all = interpret(program, inputs, params, &device);
    const size_t num_outputs = program.outputs().size();
    for (size_t u = 0; u < program.updates().size(); ++u) {
      Tensor t = all.at(num_outputs + u);
      params[program.updates()[u].name] = t.is_contiguous() ? t : t.contiguous();
    }
    all.resize(num_outputs);
    return all;
  }

  // Names as the printer writes them: interface values by name, results
  // numbered densely in order of definition.
  std::unordered_map<const Value*, std::string> value_names() const {
    std::unordered_map<const Value*, std::string> names;
    for (const Value* v : program.inputs()) names[v] = "%" + v->name();
    for (const Value* v : program.parameters()) names[v] = "%" + v->name();
    for (const Value* v : program.constants()) names[v] = "%" + v->name();
    int next = 0;
    for (const auto& op : program.block().ops()) {
      for (const Value* r : op->results()) names[r] = std::string("%") += std::to_string(next++);
    }
    return names;
  }

  std::string schedule_text() const {
    auto names = value_names();
    auto list = [&](const std::vector<Value*>& values) {
      std::string out;
      for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + names[values[i]];
      return out;
    };
    std::ostringstream os;
    os << "schedule: " << instructions.size() << " instructions on " << streams_used
       << (streams_used == 1 ? " stream\n" : " streams\n");
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& ins = instructions[i];
      const Operation& op = program.block().op(static_cast<size_t>(ins.op_index));
      os << "  #" << i << " [stream " << ins.stream << "] " << list(op.results()) << " = "
         << op.name() << "(" << list(op.operands()) << ")";
      if (!ins.wait_for.empty()) {
        os << " after";
        for (int w : ins.wait_for) os << " #" << w;
      }
      os << "\n";
    }
    return os.str();
  }
};

Executor::Executor(const Program& program, const Device& device, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(program, device, options)) {}
Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

void Executor::set_parameters(const ParamMap& params) {
  std::lock_guard lock(impl_->mutex);
  impl_->bind_parameters(params);
}

void Executor::set_parameter(const std::string& name, const Tensor& value) {
  std::lock_guard lock(impl_->mutex);
  impl_->bind_parameter(name, value);
}

const ParamMap& Executor::parameters() const { return impl_->params; }

std::vector<Tensor> Executor::run(std::span<const Tensor> inputs) {
  std::lock_guard lock(impl_->mutex);
  return impl_->run(inputs, std::nullopt);
}
std::vector<Tensor> Executor::run(std::span<const Tensor> inputs, std::pair<uint64_t, uint64_t> random_state) {
  std::lock_guard lock(impl_->mutex);
  return impl_->run(inputs, random_state);
}
std::vector<Tensor> Executor::run_with(std::span<const Tensor> inputs, const ParamMap& params) {
  std::lock_guard lock(impl_->mutex);
  impl_->bind_parameters(params);
  return impl_->run(inputs, std::nullopt);
}
std::vector<Tensor> Executor::run_with(std::span<const Tensor> inputs, const ParamMap& params,
                                       std::pair<uint64_t, uint64_t> random_state) {
  std::lock_guard lock(impl_->mutex);
  impl_->bind_parameters(params);
  return impl_->run(inputs, random_state);
}

const Program& Executor::program() const { return impl_->program; }
const Device& Executor::device() const { return impl_->device; }
const MemoryPlan& Executor::memory_plan() const { return impl_->plan; }
const std::vector<Instruction>& Executor::instructions() const { return impl_->instructions; }
int Executor::num_streams() const { return impl_->streams_used; }
std::string Executor::schedule_str() const { return impl_->schedule_text(); }

}  // namespace oar::ir
