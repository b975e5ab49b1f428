// The static-mode executor. Compiling resolves every operation's kernel
// once (decomposing the composite ops the device has no kernel for);
// planning, per input shapes, lays intermediates out in one arena and
// prebuilds each instruction's kernel views and context; a run then only
// patches the views of inputs, parameters and outputs and launches.
//
// Note [Executor streams]
// Stream 0 is the device's compute stream (the one eager mode and tensor
// reads use); extra streams are created when asked for and the device has
// events. Each kernel goes to the stream of an operand's producer when that
// producer is the latest op there (a chain stays on one stream), else to the
// least recently used stream (independent branches spread out). A kernel
// waits, through events, for the producers of its operands on other streams
// and for every earlier op on other streams that read or wrote the arena
// bytes it overwrites (found by walking the arena's occupancy, so a write
// over a dead value's bytes is ordered too; these are the plan's
// reuse_after). A run is fenced: the side streams first wait for stream 0,
// and stream 0 finally waits for every side stream, so inputs, outputs and
// freed blocks stay stream-ordered on stream 0 as the caching allocator
// expects (Note [Stream-ordered reuse]).
//
// Note [Per-stream arena]
// The planner shares bytes between values whose lifetimes, in block order,
// do not overlap. Two branches traced one after the other would then share
// bytes, and every write of the second would wait for the first: no
// overlap at all. With several streams the executor lays the arena out
// again with the planner's greedy-by-size rule, letting only values of the
// same stream share bytes. The arena grows by at most the other streams'
// peaks; the waits left are the real data dependencies (and a write over
// bytes a consumer on another stream still reads).
//
// Note [Decomposing per input shapes]
// A decomposition that reads an example size (one written with x.shape()
// rather than the ops of Note [Shape from an operand]) fails on a program
// with dynamic dims. Such a program is compiled again for each new set of
// input shapes: its types specialized to them (specialize_types), then
// decomposed. program() is then the compilation of the last run's shapes.
// SHAPE-GENERIC PROGRAMS DO NOT GET HERE: the first-party decompositions
// (relu, mean, the losses, the norms, ...) hold for every size of a
// dynamic dim, so compile() succeeds once and per_shape stays false; this
// path remains only for decompositions (plugin or user ops) that do not.
#include "oar/ir/executor.h"
#include "ops/op_util.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "dispatch/device_context.h"
#include "oar/ir/pass.h"
#include "oar/ir/shape_inference.h"

namespace oar::ir {

namespace {

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::string out;
  for (size_t i = 0; i < dtypes.size(); ++i)
    out += (i ? ", " : "") + std::string(dtype_name(dtypes[i]));
  return out;
}

std::vector<DType> operand_dtypes(const Operation& op) {
  std::vector<DType> out;
  for (const Value* v : op.operands()) out.push_back(v->type().dtype);
  return out;
}

std::vector<DType> result_dtypes(const Operation& op) {
  std::vector<DType> out;
  for (const Value* v : op.results()) out.push_back(v->type().dtype);
  return out;
}

const KernelEntry* find_kernel(const DeviceBackend& backend, const Operation& op) {
  std::vector<DType> in = operand_dtypes(op), out = result_dtypes(op);
  return backend.find_kernel(op.def().id, in, out);
}

// A kernel view of a contiguous tensor of `shape` (data filled in later);
// `ndim` above the rank pads leading 1s exactly like make_view.
OarTensorView contiguous_view(const Shape& shape, DType dtype, int ndim) {
  int own = static_cast<int>(shape.size());
  if (ndim < own) ndim = own;
  OarTensorView v{};
  v.struct_size = sizeof v;
  v.dtype = static_cast<int32_t>(dtype);
  v.ndim = ndim;
  int pad = ndim - own;
  Shape strides = contiguous_strides(shape);
  for (int i = 0; i < pad; ++i) {
    v.shape[i] = 1;
    v.strides[i] = std::max<int64_t>(shape_numel(shape), 1);
  }
  for (int i = 0; i < own; ++i) {
    v.shape[pad + i] = shape[static_cast<size_t>(i)];
    v.strides[pad + i] = strides[static_cast<size_t>(i)];
  }
  return v;
}

// Byte ranges of the arena and the value last placed in each.
class ArenaOccupancy {
 public:
  // Marks [begin, end) as holding `value`; appends the values it displaces.
  void occupy(int64_t begin, int64_t end, const Value* value,
              std::vector<const Value*>& displaced) {
    if (begin >= end) return;
    split(begin);
    split(end);
    for (auto it = segments_.lower_bound(begin); it != segments_.end() && it->first < end;) {
      displaced.push_back(it->second.value);
      it = segments_.erase(it);
    }
    segments_[begin] = {end, value};
  }

 private:
  struct Segment {
    int64_t end;
    const Value* value;
  };
  void split(int64_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first < at && it->second.end > at) {
      segments_[at] = {it->second.end, it->second.value};
      it->second.end = at;
    }
  }
  std::map<int64_t, Segment> segments_;  // begin -> segment
};

}  // namespace

struct Executor::Impl {
  // One launch: the prebuilt kernel call of an instruction.
  struct Launch {
    const Operation* op = nullptr;
    const KernelEntry* kernel = nullptr;
    std::vector<OarTensorView> views;  // inputs, then outputs
    OarKernelContext ctx{};
    OarEvent_t record = nullptr;    // recorded after the launch (another stream waits for it)
    std::vector<OarEvent_t> waits;  // waited for before the launch
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
  Device device;
  ExecutorOptions options;
  DeviceBackend* backend = nullptr;
  std::vector<const KernelEntry*> kernels;  // per block op of `program`; null for view ops
  // Random ops of `program` and their traced offsets (Note [Random ops in programs]).
  std::vector<std::pair<Operation*, int64_t>> random_ops;
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
    try {
      compile();
    } catch (const Error&) {
      if (!has_dynamic_dims(source)) throw;
      // Note [Decomposing per input shapes]: fail now only for what no
      // shapes can fix, a primitive without a kernel.
      per_shape = true;
      program = source.clone();
      for (const auto& op : program.block().ops()) {
        if (op->def().kind == OpKind::primitive && !find_kernel(*backend, *op))
          throw no_kernel_error(*op);
      }
      kernels.clear();
    }
    create_streams();
  }

  ~Impl() {
    if (backend->shut_down) return;
    const OarDeviceApi& api = backend->api;
    for (size_t s = 1; s < streams.size(); ++s)
      api.stream_synchronize(api.impl, device.index, streams[s]);
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

  Error no_kernel_error(const Operation& op) const {
    return Error(ErrorCode::unsupported,
                 op.name() + ": device type '" + device.type + "' has no kernel for dtypes (" +
                     dtype_list(operand_dtypes(op)) + ") -> (" + dtype_list(result_dtypes(op)) +
                     ")" +
                     (backend->has_kernel(op.def().id) ? "; it has kernels for other dtypes" : ""));
  }

  // Decomposes what the device cannot run and resolves every kernel of `program`.
  void compile() {
    decompose_unsupported();
    kernels.clear();
    for (const auto& op : program.block().ops()) {
      const KernelEntry* kernel = nullptr;
      if (op->def().kind != OpKind::view) {
        kernel = find_kernel(*backend, *op);
        if (!kernel) throw no_kernel_error(*op);
      }
      kernels.push_back(kernel);
    }
    random_ops.clear();
    for (const auto& op : program.block().ops()) {
      if (op->def().random && op->attrs().has("seed") && op->attrs().has("offset")) {
        random_ops.emplace_back(op.get(), op->attrs().get_int("offset"));
      }
    }
    input_index.clear();
    for (size_t i = 0; i < program.inputs().size(); ++i) input_index[program.inputs()[i]] = i;
  }

  // Composite ops without a kernel for their dtypes run their decomposition
  // (which may hold composite ops of its own: repeat).
  void decompose_unsupported() {
    std::set<std::string> names;
    for (int round = 0; round < 16; ++round) {
      size_t before = names.size();
      for (const auto& op : program.block().ops()) {
        if (op->def().kind == OpKind::composite && !find_kernel(*backend, *op))
          names.insert(op->name());
      }
      if (names.size() == before) return;
      PassManager manager;
      manager.add(make_decomposition_pass(names));
      manager.run(program);
    }
  }

  void check(OarStatus status, const char* what) const {
    if (status != OAR_OK) backend->check(status, what);
  }

  void create_streams() {
    streams.push_back(backend->slot(device.index).stream);
    const OarDeviceApi& api = backend->api;
    bool has_events =
        api.stream_create && api.event_create && api.event_record && api.stream_wait_event;
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
      check(backend->api.stream_synchronize(backend->api.impl, device.index, streams[s]),
            "stream_synchronize");
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
      program = source.clone();
      specialize_types(program, input_shapes);
      compile();
    }
    shapes = infer_shapes(program, input_shapes);
    plan = plan_memory(program, shapes);
    if (streams.size() > 1) separate_streams_in_arena();
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
    // patched on every run.
    auto add_view = [&](Launch& launch, size_t launch_index, const Value* value, int ndim) {
      const Shape& shape = shapes.at(value);
      OarTensorView view = contiguous_view(shape, value->type().dtype, ndim);
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

    for (size_t i = 0; i < program.block().size(); ++i) {
      const Operation& op = program.block().op(i);
      if (!kernels[i]) {  // view ops: aliases, no kernel
        if (buffer(op.result(0)).placement != Placement::alias) {
          throw Error(ErrorCode::internal,
                      "executor: the memory plan does not alias the result of view op " +
                          op.name() + " (block position " + std::to_string(i) + ")");
        }
        continue;
      }
      bool any_elements = false;
      for (const Value* r : op.results())
        any_elements = any_elements || shape_numel(shapes.at(r)) > 0;
      if (!any_elements) continue;
      size_t index = launches.size();
      Launch launch;
      launch.op = &op;
      launch.kernel = kernels[i];
      int rank = op.def().layout == InputLayout::broadcast
                     ? static_cast<int>(shapes.at(op.result(0)).size())
                     : -1;
      for (const Value* v : op.operands()) add_view(launch, index, v, rank);
      for (const Value* v : op.results()) add_view(launch, index, v, -1);
      launches.push_back(std::move(launch));
      instructions.push_back({static_cast<int>(i), 0, {}});
    }
    for (const auto& [value, b] : plan.buffers) {
      if (b.placement == Placement::output) fresh_values.push_back(value);
    }
    // Deterministic allocation order (the map's order is not).
    std::sort(fresh_values.begin(), fresh_values.end(),
              [](const Value* a, const Value* b) { return a->id() < b->id(); });
    fresh_index.clear();
    for (size_t i = 0; i < fresh_values.size(); ++i) fresh_index[fresh_values[i]] = i;
    for (const NamedValue& out : program.outputs()) need_root(root_of(out.value));
    for (const NamedValue& up : program.updates()) need_root(root_of(up.value));

    schedule();
    for (size_t i = 0; i < launches.size(); ++i) {
      Launch& l = launches[i];
      const Operation& op = *l.op;
      l.ctx.struct_size = sizeof l.ctx;
      l.ctx.device = device.index;
      l.ctx.stream = streams[static_cast<size_t>(instructions[i].stream)];
      l.ctx.num_inputs = static_cast<int32_t>(op.operands().size());
      l.ctx.inputs = l.views.data();
      l.ctx.num_outputs = static_cast<int32_t>(op.results().size());
      l.ctx.outputs = l.views.data() + op.operands().size();
      l.ctx.attrs = attrs_handle(op.attrs());
      l.ctx.op_name = op.name().c_str();
    }
    planned_shapes = input_shapes;
    planned = true;
    if (options.print_schedule) std::cerr << schedule_text() << memory_summary(plan) << "\n";
  }

  // The stream of each block op (Note [Executor streams]); a view op takes
  // its operand's (-1 for a view of an input, parameter or constant).
  std::vector<int> assign_streams() const {
    const Block& block = program.block();
    int num = static_cast<int>(streams.size());
    std::vector<int> stream_of(block.size(), -1);
    std::vector<int> last_on_stream(static_cast<size_t>(num), -1);
    std::unordered_map<const Value*, int> producer;  // the op that wrote the memory of a result
    auto producer_of = [&](const Value* v) {
      auto it = producer.find(v);
      return it == producer.end() ? -1 : it->second;
    };
    for (size_t i = 0; i < block.size(); ++i) {
      const Operation& op = block.op(i);
      if (op.def().kind == OpKind::view) {
        int p = op.operands().empty() ? -1 : producer_of(op.operand(0));
        for (const Value* r : op.results()) producer[r] = p;
        stream_of[i] = p < 0 ? -1 : stream_of[static_cast<size_t>(p)];
        continue;
      }
      int stream = -1;
      for (const Value* v : op.operands()) {
        int p = producer_of(v);
        if (p < 0) continue;
        int ps = stream_of[static_cast<size_t>(p)];
        if (last_on_stream[static_cast<size_t>(ps)] == p) {
          stream = ps;
          break;
        }
      }
      if (stream < 0) {  // the least recently used stream
        stream = 0;
        for (int t = 1; t < num; ++t) {
          if (last_on_stream[static_cast<size_t>(t)] < last_on_stream[static_cast<size_t>(stream)])
            stream = t;
        }
      }
      stream_of[i] = stream;
      last_on_stream[static_cast<size_t>(stream)] = static_cast<int>(i);
      for (const Value* r : op.results()) producer[r] = static_cast<int>(i);
    }
    return stream_of;
  }

  // Note [Per-stream arena]
  void separate_streams_in_arena() {
    std::vector<int> stream_of = assign_streams();
    struct Buffer {
      const Value* value;
      int64_t size;
      int start, end, stream;
      int64_t offset = 0;
    };
    constexpr int64_t kAlignment = 64;
    std::vector<Buffer> buffers;
    std::unordered_map<const Value*, size_t> index;
    const Block& block = program.block();
    for (size_t i = 0; i < block.size(); ++i) {
      for (const Value* r : block.op(i).results()) {
        const BufferAssignment& b = buffer(r);
        if (b.placement != Placement::arena || b.bytes == 0) continue;
        index[r] = buffers.size();
        int64_t size = (b.bytes + kAlignment - 1) / kAlignment * kAlignment;
        buffers.push_back(
            {r, size, static_cast<int>(i), static_cast<int>(i), std::max(stream_of[i], 0)});
      }
    }
    for (size_t i = 0; i < block.size(); ++i) {
      for (const Value* v : block.op(i).operands()) {
        auto it = index.find(root_of(v));
        if (it != index.end())
          buffers[it->second].end = std::max(buffers[it->second].end, static_cast<int>(i));
      }
    }
    // Largest first, each into the tightest gap among the buffers it may not share bytes with.
    std::vector<Buffer*> order;
    for (Buffer& b : buffers) order.push_back(&b);
    std::stable_sort(order.begin(), order.end(), [](const Buffer* a, const Buffer* b) {
      return a->size != b->size ? a->size > b->size : a->start < b->start;
    });
    std::vector<const Buffer*> placed, conflicts;
    plan.arena_bytes = 0;
    for (Buffer* b : order) {
      conflicts.clear();
      for (const Buffer* p : placed) {
        if (p->stream != b->stream || (p->start <= b->end && b->start <= p->end))
          conflicts.push_back(p);
      }
      std::sort(conflicts.begin(), conflicts.end(),
                [](const Buffer* x, const Buffer* y) { return x->offset < y->offset; });
      int64_t top = 0, best = -1, best_gap = 0;
      for (const Buffer* p : conflicts) {
        int64_t gap = p->offset - top;
        if (gap >= b->size && (best < 0 || gap < best_gap)) best = top, best_gap = gap;
        top = std::max(top, p->offset + p->size);
      }
      b->offset = best >= 0 ? best : top;
      placed.push_back(b);
      plan.buffers.at(b->value).offset = b->offset;
      plan.arena_bytes = std::max(plan.arena_bytes, b->offset + b->size);
    }
  }

  // Note [Executor streams].
  void schedule() {
    size_t n = launches.size();
    int num = static_cast<int>(streams.size());
    streams_used = 1;
    if (num == 1 || n == 0) return;

    // The launch writing each root value's memory.
    std::unordered_map<const Value*, int> writer;
    for (size_t i = 0; i < n; ++i) {
      for (const Value* r : launches[i].op->results()) writer[r] = static_cast<int>(i);
    }
    auto writer_of = [&](const Value* v) {
      auto it = writer.find(root_of(v));
      return it == writer.end() ? -1 : it->second;
    };

    std::vector<int> stream_of_op = assign_streams();
    // The arena was laid out again (separate_streams_in_arena): so is reuse_after.
    plan.reuse_after.assign(program.block().size(), {});
    // known[s][t]: the latest launch on stream t that work queued next on s is ordered after.
    std::vector<std::vector<int>> known(static_cast<size_t>(num),
                                        std::vector<int>(static_cast<size_t>(num), -1));
    std::vector<std::vector<int>> known_at(n);
    std::unordered_map<const Value*, std::vector<int>>
        accessors;  // arena roots: writer and readers so far
    ArenaOccupancy occupancy;
    std::vector<bool> waited_on(n, false);

    for (size_t i = 0; i < n; ++i) {
      const Operation& op = *launches[i].op;
      std::vector<int> deps;
      int stream = stream_of_op[static_cast<size_t>(instructions[i].op_index)];
      for (const Value* v : op.operands()) {
        int p = writer_of(v);
        if (p >= 0) deps.push_back(p);
      }
      // Earlier readers and writers of the arena bytes this launch overwrites.
      for (const Value* v : op.operands()) {
        const Value* root = root_of(v);
        if (buffer(root).placement == Placement::arena)
          accessors[root].push_back(static_cast<int>(i));
      }
      for (const Value* r : op.results()) {
        const BufferAssignment& b = buffer(r);
        if (b.placement != Placement::arena) continue;
        std::vector<const Value*> displaced;
        occupancy.occupy(b.offset, b.offset + b.bytes, r, displaced);
        std::vector<int>& reuse_after =
            plan.reuse_after[static_cast<size_t>(instructions[i].op_index)];
        for (const Value* old : displaced) {
          for (int a : accessors[old]) {
            deps.push_back(a);
            reuse_after.push_back(instructions[static_cast<size_t>(a)].op_index);
          }
        }
        std::sort(reuse_after.begin(), reuse_after.end());
        reuse_after.erase(std::unique(reuse_after.begin(), reuse_after.end()), reuse_after.end());
        accessors[r].push_back(static_cast<int>(i));
      }

      // Wait for the latest dependency on each other stream not yet ordered.
      std::vector<int> latest(static_cast<size_t>(num), -1);
      for (int d : deps) {
        if (d == static_cast<int>(i)) continue;
        size_t ds = static_cast<size_t>(instructions[static_cast<size_t>(d)].stream);
        latest[ds] = std::max(latest[ds], d);
      }
      std::vector<int>& k = known[static_cast<size_t>(stream)];
      for (int t = 0; t < num; ++t) {
        int d = latest[static_cast<size_t>(t)];
        if (t == stream || d <= k[static_cast<size_t>(t)]) continue;
        instructions[i].wait_for.push_back(d);
        waited_on[static_cast<size_t>(d)] = true;
        const std::vector<int>& kd = known_at[static_cast<size_t>(d)];
        for (int u = 0; u < num; ++u)
          k[static_cast<size_t>(u)] =
              std::max(k[static_cast<size_t>(u)], kd[static_cast<size_t>(u)]);
      }
      std::sort(instructions[i].wait_for.begin(), instructions[i].wait_for.end());
      k[static_cast<size_t>(stream)] = static_cast<int>(i);
      known_at[i] = k;
      instructions[i].stream = stream;
      streams_used = std::max(streams_used, stream + 1);
    }

    size_t next_event = 0;
    for (size_t i = 0; i < n; ++i) {
      if (waited_on[i]) launches[i].record = pooled_event(next_event++);
    }
    for (size_t i = 0; i < n; ++i) {
      for (int d : instructions[i].wait_for)
        launches[i].waits.push_back(launches[static_cast<size_t>(d)].record);
    }
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

  void launch(Launch& l) {
    const OarDeviceApi& api = backend->api;
    for (OarEvent_t e : l.waits) {
      host_clear_error();
      check(api.stream_wait_event(api.impl, device.index, l.ctx.stream, e), "stream_wait_event");
    }
    host_clear_error();
    OarStatus status = l.kernel->fn(&l.ctx);
    if (status != OAR_OK) {
      std::string message = host_take_error();
      throw Error(static_cast<ErrorCode>(status),
                  message.empty() ? l.op->name() + ": the " + device.type +
                                        " kernel failed with status " + std::to_string(status)
                                  : message);
    }
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
  // offset) it drew while tracing. Like an eager call, each run draws anew:
  // the run's (seed, offset) from the global generator replaces the seed and
  // shifts every traced offset by offset << 32, so ops stay distinct within
  // a run and runs differ. A caller that recomputes a run (the backward of
  // CompiledFunction) passes the same state to get the same numbers.
  void reseed(std::pair<uint64_t, uint64_t> state) {
    for (auto& [op, traced] : random_ops) {
      Attrs& attrs = op->mutable_attrs();
      attrs.set("seed", static_cast<int64_t>(state.first));
      attrs.set("offset", static_cast<int64_t>(static_cast<uint64_t>(traced) + (state.second << 32)));
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
    if (!random_ops.empty()) reseed(random_state ? *random_state : next_random_state());
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

    bool fenced = false;
    try {
      fence(true);
      fenced = true;
      for (Launch& l : launches) launch(l);
      fence(false);
    } catch (...) {
      // Leave no queued work reading memory the caller may free.
      const OarDeviceApi& api = backend->api;
      for (size_t s = 0; s < streams.size() && fenced; ++s)
        api.stream_synchronize(api.impl, device.index, streams[s]);
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
