// The compiler pass and the compiled groups (compiler_pass.h).
//
// Note [The compiler pass]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// For a program on the cpu: plan the groups (plan_fusion, Note [Fusion
// rules]); for each group cut its operations out as a sub-program (its
// inputs the values it reads from outside in operand order, its outputs
// the values used outside or returned), lower it (lower_group), generate
// C++ (emit_cpu) and compile it through the disk cache (compile_cpu). A
// group that compiles is replaced by one fusion_group operation whose
// attributes carry the sub-program's JSON, its key and its name (Note
// [Fusion groups] in core/src/ops/fusion_group.cpp); one that does not
// stays as it was, with a warning naming the group and the reason (a
// lowering refusal is only logged: the planner may propose groups the
// schedules do not take yet). A group of one operation the cpu plugin has
// a kernel for is left alone: there is nothing to fuse.
//
// Where the fusion_group goes: the planner never makes a group that
// reaches itself through outside operations, so the group can sit at the
// place of its last operation (every input is defined before its user in
// the group, hence before that place) once the outside operations between
// its first and last operation that read its results (directly or through
// each other) move after it, in their order. Nothing they read comes
// later: their operands are defined before them, or are the group's
// results, or are moved with them.
#include "oar_compiler/compiler_pass.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "dispatch/device_context.h"
#include "oar/ir/fusion_group.h"
#include "oar/ir/serialize.h"
#include "oar/ir/verifier.h"
#include "oar_compiler/fusion.h"
#include "oar_compiler/log.h"
#include "runtime/runtime_state.h"

namespace oar::compiler {

namespace {

std::atomic<int64_t> g_fused{0}, g_unfused{0};

struct GroupSlot {
  std::mutex mutex;  // held while the group compiles
  bool done = false;
  std::string program;  // the text it was compiled from (a key names one program)
  std::shared_ptr<const CompiledGroup> group;
  std::string why_not;
};

GroupSlot& group_slot(const std::string& key) {
  static std::mutex guard;
  static auto* slots = new std::map<std::string, std::unique_ptr<GroupSlot>>;  // never destroyed
  std::lock_guard lock(guard);
  auto& slot = (*slots)[key];
  if (!slot) slot = std::make_unique<GroupSlot>();
  return *slot;
}

std::shared_ptr<const CompiledGroup> compile_now(const std::string& key, const std::string& program_json,
                                                 const std::string& name, std::string* why_not) {
  std::shared_ptr<const ir::Program> sub;
  try {
    sub = ir::fusion_group_program(program_json, name);
  } catch (const std::exception& e) {
    *why_not = e.what();
    return nullptr;
  }
  std::string refusal;
  std::optional<Kernel> kernel;
  try {
    kernel = lower_group(*sub, &refusal);
  } catch (const std::exception& e) {
    refusal = std::string("lowering failed: ") + e.what();
  }
  if (!kernel) {
    *why_not = "it cannot be lowered: " + (refusal.empty() ? std::string("no reason given") : refusal);
    return nullptr;
  }
  auto group = std::make_shared<CompiledGroup>();
  group->name = name;
  group->key = key;
  const std::string symbol = "oar_group_" + key;
  std::string source;
  try {
    source = emit_cpu(*kernel, symbol);
  } catch (const std::exception& e) {
    *why_not = std::string("code generation failed: ") + e.what();
    return nullptr;
  }
  try {
    group->library = compile_cpu(source, symbol);
  } catch (const std::exception& e) {
    *why_not = e.what();
    return nullptr;
  }
  group->kernel = std::move(*kernel);
  group->fn = reinterpret_cast<CompiledGroup::Fn>(group->library.symbol());
  log("group " + name + ": " + (group->library.cache_hit() ? "loaded from the cache" : "compiled in " + std::to_string(group->library.compile_seconds()) + " s") + " (" + group->library.path() + ")");
  return group;
}

// The sub-program of `group` (Note [The compiler pass]); "" in *why_not or the reason.
ir::Program extract(const Group& group, const std::unordered_map<ir::Value*, ir::Value*>& renamed,
                    std::vector<ir::Value*>& inputs, std::string* why_not) {
  auto current = [&](ir::Value* v) {
    auto it = renamed.find(v);
    return it == renamed.end() ? v : it->second;
  };
  ir::Program sub;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  inputs.clear();
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    ir::Value* v = current(group.inputs[i]);
    inputs.push_back(v);
    map[v] = sub.add_input("in" + std::to_string(i), v->type());
  }
  for (ir::Operation* op : group.ops) {
    std::vector<ir::Value*> operands;
    for (ir::Value* v : op->operands()) {
      auto it = map.find(v);
      if (it == map.end()) {
        *why_not = "operation " + op->name() + " reads a value that is neither an input of the group nor made in it";
        return sub;
      }
      operands.push_back(it->second);
    }
    std::vector<ir::TensorType> types;
    for (const ir::Value* r : op->results()) types.push_back(r->type());
    ir::Operation* copy = sub.append(op->def(), std::move(operands), op->attrs(), types);
    for (size_t r = 0; r < op->results().size(); ++r) map[op->result(r)] = copy->result(r);
  }
  for (size_t i = 0; i < group.outputs.size(); ++i) {
    auto it = map.find(group.outputs[i]);
    if (it == map.end()) {
      *why_not = "output " + std::to_string(i) + " of the group is not made in it";
      return sub;
    }
    sub.add_output(it->second, "out" + std::to_string(i));
  }
  ir::verify(sub);
  return sub;
}

bool cpu_has_kernel(const Device& device, const ir::Operation& op) {
  try {
    return backend_of(device).has_kernel(op.def().id);
  } catch (const std::exception&) {
    return false;
  }
}

// Block positions of every top-level operation (recomputed per group: the
// replacements before it moved operations).
std::unordered_map<const ir::Operation*, size_t> positions(const ir::Block& block) {
  std::unordered_map<const ir::Operation*, size_t> out;
  size_t i = 0;
  for (const ir::Operation* op = block.front(); op; op = op->next()) out[op] = i++;
  return out;
}

// Replaces `group`'s operations by one fusion_group (Note [The compiler pass]).
void replace(ir::Program& program, Group& group, const std::vector<ir::Value*>& inputs, Attrs attrs,
             std::unordered_map<ir::Value*, ir::Value*>& renamed) {
  static const OpDef& fusion_group = OpRegistry::instance().get("fusion_group");
  ir::Block& block = program.block();
  auto pos = positions(block);
  std::sort(group.ops.begin(), group.ops.end(),
            [&](const ir::Operation* a, const ir::Operation* b) { return pos.at(a) < pos.at(b); });
  std::unordered_set<const ir::Operation*> members(group.ops.begin(), group.ops.end());
  ir::Operation* first = group.ops.front();
  ir::Operation* last = group.ops.back();
  std::unordered_set<const ir::Value*> tainted;
  for (const ir::Operation* op : group.ops)
    for (const ir::Value* r : op->results()) tainted.insert(r);
  std::vector<ir::Operation*> to_move;
  for (ir::Operation* op = first; op != last; op = op->next()) {
    if (members.count(op)) continue;
    bool reads = false;
    for (const ir::Value* v : op->operands()) reads = reads || tainted.count(v) > 0;
    if (!reads) continue;
    to_move.push_back(op);
    for (const ir::Value* r : op->results()) tainted.insert(r);
  }
  std::vector<ir::TensorType> types;
  for (const ir::Value* v : group.outputs) types.push_back(v->type());
  ir::Operation* fused = program.insert_before(last, fusion_group, inputs, std::move(attrs), types);
  for (ir::Operation* op : to_move) block.move_before(last, op, op->next());
  for (size_t i = 0; i < group.outputs.size(); ++i) {
    program.replace_all_uses(group.outputs[i], fused->result(i));
    renamed[group.outputs[i]] = fused->result(i);
  }
  for (auto it = group.ops.rbegin(); it != group.ops.rend(); ++it) block.erase(*it);
}

class CompilerPass final : public ir::Pass {
 public:
  explicit CompilerPass(const Device& device) : device_(device) {}
  std::string name() const override { return "compiler"; }

  bool run(ir::Program& program) override {
    if (device_.type != "cpu") {
      log("no code generation for device type '" + device_.type + "' yet: program left as it is");
      return false;
    }
    std::vector<Group> groups = plan_fusion(program.block(), FusionOptions{}, log_stream());
    std::unordered_map<ir::Value*, ir::Value*> renamed;
    bool changed = false;
    for (Group& group : groups) {
      if (group.ops.empty() || group.outputs.empty()) continue;
      if (group.ops.size() == 1 && cpu_has_kernel(device_, *group.ops[0])) {
        log("group " + group.name + ": one " + group.ops[0]->name() + ", which the cpu plugin implements; left alone");
        continue;
      }
      std::string why;
      std::vector<ir::Value*> inputs;
      ir::Program sub;
      try {
        sub = extract(group, renamed, inputs, &why);
      } catch (const std::exception& e) {
        why = e.what();
      }
      std::string json, key;
      std::shared_ptr<const CompiledGroup> compiled;
      if (why.empty()) {
        json = ir::to_json(sub, -1);
        key = group_key(json);
        compiled = compiled_group(key, json, group.name, &why);
      }
      if (!compiled) {
        ++g_unfused;
        report_unfused(group.name, key, why);
        continue;
      }
      replace(program, group, inputs, Attrs{{"program", json}, {"key", key}, {"name", group.name}}, renamed);
      ++g_fused;
      changed = true;
      log("group " + group.name + ": " + std::to_string(group.ops.size()) + " operations -> fusion_group " + key);
    }
    return changed;
  }

 private:
  // A lowering refusal is logged (the planner proposes, the schedules
  // decide); any other failure warns once per group.
  static void report_unfused(const std::string& name, const std::string& key, const std::string& why) {
    if (why.rfind("it cannot be lowered", 0) == 0) {
      log("group " + name + " runs unfused: " + why);
      return;
    }
    static std::mutex mutex;
    static auto* warned = new std::unordered_set<std::string>;
    std::lock_guard lock(mutex);
    if (warned->insert(key.empty() ? name : key).second) warn("group " + name + " runs unfused: " + why);
  }

  Device device_;
};

}  // namespace

std::string group_key(const std::string& program_json, const std::string& target) {
  return hex_hash128("oar fusion_group\ntarget " + target + "\n" + program_json);
}

std::shared_ptr<const CompiledGroup> compiled_group(const std::string& key, const std::string& program_json,
                                                    const std::string& name, std::string* why_not) {
  for (const std::string& k : {key, group_key(program_json)}) {
    GroupSlot& slot = group_slot(k);
    std::lock_guard lock(slot.mutex);
    if (!slot.done) {
      slot.group = compile_now(k, program_json, name, &slot.why_not);
      slot.program = program_json;
      slot.done = true;
    } else if (slot.program != program_json) {
      continue;  // a stale or edited `key` attribute: the program's own hash decides
    }
    if (!slot.group && why_not) *why_not = slot.why_not;
    return slot.group;
  }
  if (why_not) *why_not = "two programs have the same key " + key;
  return nullptr;
}

std::shared_ptr<const CompiledGroup> known_group(const std::string& key, const char* program, bool* known,
                                                 std::string* why_not) {
  GroupSlot& slot = group_slot(key);
  std::lock_guard lock(slot.mutex);
  *known = slot.done && slot.program == program;
  if (*known && !slot.group && why_not) *why_not = slot.why_not;
  return *known ? slot.group : nullptr;
}

PassStats pass_stats() { return {g_fused.load(), g_unfused.load()}; }

std::unique_ptr<ir::Pass> make_compiler_pass(const Device& device) { return std::make_unique<CompilerPass>(device); }

}  // namespace oar::compiler
