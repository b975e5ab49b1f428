// Stream assignment and event scheduling (schedule.h): pure functions of a
// block and its memory plan.
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
// expects (Note [Stream-ordered reuse]). A device whose table leaves the
// stream and event entries NULL (the cpu: it has no streams) is one
// in-order stream: nothing here is asked of it.
//
// Note [Per-stream arena]
// The planner shares bytes between values whose lifetimes, in block order,
// do not overlap. Two branches traced one after the other would then share
// bytes, and every write of the second would wait for the first: no
// overlap at all. With several streams the executor hands the planner a
// may_share predicate (same_stream_sharing) letting only values of the
// same stream share bytes. The arena grows by at most the other streams'
// peaks; the waits left are the real data dependencies (and a write over
// bytes a consumer on another stream still reads).
#include "oar/ir/schedule.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace oar::ir {

namespace {

// Byte ranges of the arena and the value last placed in each.
class ArenaOccupancy {
 public:
  // Marks [begin, end) as holding `value`; appends the values it displaces.
  void occupy(int64_t begin, int64_t end, const Value* value, std::vector<const Value*>& displaced) {
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

const BufferAssignment& buffer_of(const MemoryPlan& plan, const Value* value) {
  auto it = plan.buffers.find(value);
  if (it == plan.buffers.end()) {
    throw Error(ErrorCode::internal, "schedule: the memory plan has no buffer for value %" +
                                         std::to_string(value->id()) + " of type " + value->type().str());
  }
  return it->second;
}

// The value whose memory `value` uses (itself unless an alias).
const Value* root_in(const MemoryPlan& plan, const Value* value) {
  for (size_t hops = 0; hops <= plan.buffers.size(); ++hops) {
    const BufferAssignment& b = buffer_of(plan, value);
    if (b.placement != Placement::alias) return value;
    value = b.alias_of;
  }
  throw Error(ErrorCode::internal, "schedule: the memory plan has an alias cycle");
}

}  // namespace

std::vector<int> assign_streams(const Block& block, int num_streams) {
  const int num = std::max(num_streams, 1);
  std::vector<int> stream_of(block.size(), -1);
  std::vector<int> last_on_stream(static_cast<size_t>(num), -1);
  std::unordered_map<const Value*, int> producer;  // the op that wrote the memory of a result
  auto producer_of = [&](const Value* v) {
    auto it = producer.find(v);
    return it == producer.end() ? -1 : it->second;
  };
  int i = -1;
  for (const auto& op : block.ops()) {
    ++i;
    size_t at = static_cast<size_t>(i);
    if (op->def().kind == OpKind::view) {
      int p = op->operands().empty() ? -1 : producer_of(op->operand(0));
      for (const Value* r : op->results()) producer[r] = p;
      stream_of[at] = p < 0 ? -1 : stream_of[static_cast<size_t>(p)];
      continue;
    }
    int stream = -1;
    for (const Value* v : op->operands()) {
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
        if (last_on_stream[static_cast<size_t>(t)] < last_on_stream[static_cast<size_t>(stream)]) stream = t;
      }
    }
    stream_of[at] = stream;
    last_on_stream[static_cast<size_t>(stream)] = i;
    for (const Value* r : op->results()) producer[r] = i;
  }
  return stream_of;
}

MayShare same_stream_sharing(const Block& block, const std::vector<int>& stream_of) {
  bool several = std::any_of(stream_of.begin(), stream_of.end(), [](int s) { return s > 0; });
  if (!several) return nullptr;
  auto index = std::make_shared<std::unordered_map<const Operation*, size_t>>();
  size_t i = 0;
  for (const auto& op : block.ops()) (*index)[op.get()] = i++;
  const std::vector<int>* streams = &stream_of;
  return [index, streams](const Value* a, const Value* b) {
    auto stream = [&](const Value* v) {
      auto it = v->producer() ? index->find(v->producer()) : index->end();
      return it == index->end() ? 0 : std::max((*streams)[it->second], 0);
    };
    return stream(a) == stream(b);
  };
}

Schedule schedule_block(const Block& block, const MemoryPlan& plan, const std::vector<int>& launched,
                        const std::vector<int>& stream_of, int num_streams) {
  const size_t n = launched.size();
  const int num = std::max(num_streams, 1);
  Schedule out;
  out.recorded.assign(n, false);
  out.reuse_after.assign(block.size(), {});
  std::vector<const Operation*> ops;
  ops.reserve(block.size());
  for (const auto& op : block.ops()) ops.push_back(op.get());
  for (size_t i = 0; i < n; ++i) {
    int at = launched[i];
    out.instructions.push_back({at, num == 1 ? 0 : std::max(stream_of.at(static_cast<size_t>(at)), 0), {}});
  }
  if (num == 1 || n == 0) return out;

  // The launch writing each root value's memory.
  std::unordered_map<const Value*, int> writer;
  for (size_t i = 0; i < n; ++i) {
    for (const Value* r : ops[static_cast<size_t>(launched[i])]->results()) writer[r] = static_cast<int>(i);
  }
  auto writer_of = [&](const Value* v) {
    auto it = writer.find(root_in(plan, v));
    return it == writer.end() ? -1 : it->second;
  };
  // known[s][t]: the latest launch on stream t that work queued next on s is ordered after.
  std::vector<std::vector<int>> known(static_cast<size_t>(num), std::vector<int>(static_cast<size_t>(num), -1));
  std::vector<std::vector<int>> known_at(n);
  std::unordered_map<const Value*, std::vector<int>> accessors;  // arena roots: writer and readers so far
  ArenaOccupancy occupancy;

  for (size_t i = 0; i < n; ++i) {
    Instruction& ins = out.instructions[i];
    const Operation& op = *ops[static_cast<size_t>(ins.op_index)];
    const int stream = ins.stream;
    std::vector<int> deps;
    for (const Value* v : op.operands()) {
      int p = writer_of(v);
      if (p >= 0) deps.push_back(p);
    }
    // Earlier readers and writers of the arena bytes this launch overwrites.
    for (const Value* v : op.operands()) {
      const Value* root = root_in(plan, v);
      if (buffer_of(plan, root).placement == Placement::arena) accessors[root].push_back(static_cast<int>(i));
    }
    std::vector<int>& reuse_after = out.reuse_after[static_cast<size_t>(ins.op_index)];
    for (const Value* r : op.results()) {
      const BufferAssignment& b = buffer_of(plan, r);
      if (b.placement != Placement::arena) continue;
      std::vector<const Value*> displaced;
      occupancy.occupy(b.offset, b.offset + b.bytes, r, displaced);
      for (const Value* old : displaced) {
        for (int a : accessors[old]) {
          deps.push_back(a);
          reuse_after.push_back(out.instructions[static_cast<size_t>(a)].op_index);
        }
      }
      accessors[r].push_back(static_cast<int>(i));
    }
    std::sort(reuse_after.begin(), reuse_after.end());
    reuse_after.erase(std::unique(reuse_after.begin(), reuse_after.end()), reuse_after.end());

    // Wait for the latest dependency on each other stream not yet ordered.
    std::vector<int> latest(static_cast<size_t>(num), -1);
    for (int d : deps) {
      if (d == static_cast<int>(i)) continue;
      size_t ds = static_cast<size_t>(out.instructions[static_cast<size_t>(d)].stream);
      latest[ds] = std::max(latest[ds], d);
    }
    std::vector<int>& k = known[static_cast<size_t>(stream)];
    for (int t = 0; t < num; ++t) {
      int d = latest[static_cast<size_t>(t)];
      if (t == stream || d <= k[static_cast<size_t>(t)]) continue;
      ins.wait_for.push_back(d);
      out.recorded[static_cast<size_t>(d)] = true;
      const std::vector<int>& kd = known_at[static_cast<size_t>(d)];
      for (int u = 0; u < num; ++u)
        k[static_cast<size_t>(u)] = std::max(k[static_cast<size_t>(u)], kd[static_cast<size_t>(u)]);
    }
    std::sort(ins.wait_for.begin(), ins.wait_for.end());
    k[static_cast<size_t>(stream)] = static_cast<int>(i);
    known_at[i] = k;
    out.streams_used = std::max(out.streams_used, stream + 1);
  }
  return out;
}

}  // namespace oar::ir
