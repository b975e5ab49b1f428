// The C++ inference API: a saved program and its parameters loaded onto a
// device, run by an Executor with inputs set by name.
#include "oar/ir/predictor.h"

#include <optional>

#include "oar/ir/serialize.h"
#include "oar/runtime.h"

namespace oar {

struct Predictor::Impl {
  std::string path;
  Device device;
  std::optional<ir::Executor> executor;
  // The inputs as the saved program declares them. The executor's program()
  // is the compilation of the last run's shapes, specialized to them when a
  // decomposition needs concrete sizes (Note [Decomposing per input
  // shapes]), so it cannot say which shapes the next run accepts.
  std::vector<std::string> input_names;
  std::vector<ir::TensorType> input_types;
  std::vector<Tensor> inputs;  // by program input index; undefined until set
  std::vector<Tensor> outputs;
  bool has_run = false;

  size_t input_position(const std::string& name) const {
    for (size_t i = 0; i < input_names.size(); ++i) {
      if (input_names[i] == name) return i;
    }
    std::string names;
    for (const std::string& n : input_names) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::invalid_argument,
                "predictor " + path + ": the program has no input '" + name +
                    "' (its inputs: " + (names.empty() ? "none" : names) + ")");
  }
};

Predictor::Predictor(const std::string& path, PredictorOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->device = options.device.empty() ? default_device() : parse_device(options.device);
  Runtime::global().check_device(impl_->device);
  ir::LoadedProgram loaded = ir::load(path, impl_->device);
  for (const ir::Value* v : loaded.program.inputs()) {
    impl_->input_names.push_back(v->name());
    impl_->input_types.push_back(v->type());
  }
  impl_->executor.emplace(loaded.program, impl_->device, options.executor);
  impl_->executor->set_parameters(loaded.params);
  impl_->inputs.resize(loaded.program.inputs().size());
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;

std::vector<std::string> Predictor::input_names() const { return impl_->input_names; }

std::vector<std::string> Predictor::output_names() const {
  std::vector<std::string> names;
  for (const ir::NamedValue& out : program().outputs()) names.push_back(out.name);
  return names;
}

std::string Predictor::input_type(const std::string& name) const {
  return impl_->input_types[impl_->input_position(name)].str();
}

void Predictor::set_input(const std::string& name, const Tensor& value) {
  size_t i = impl_->input_position(name);
  const ir::TensorType& type = impl_->input_types[i];
  OAR_CHECK_ARG(value.defined(), "predictor " + impl_->path + ": input '" + name +
                                     "' is set to an undefined tensor");
  if (value.dtype() != type.dtype || !type.matches(value.shape())) {
    std::string why = value.dtype() != type.dtype  ? "the dtype differs"
                      : value.dim() != type.rank() ? "the rank differs"
                                                   : "a static dim differs";
    throw Error(ErrorCode::invalid_argument, "predictor " + impl_->path + ": input '" + name +
                                                 "' expects " + type.str() + " but got " +
                                                 ir::type_of(value).str() + " (" + why + ")");
  }
  impl_->inputs[i] = value.device() == impl_->device ? value : value.to(impl_->device);
}

void Predictor::run() {
  std::string unset;
  int count = 0;
  for (size_t i = 0; i < impl_->inputs.size(); ++i) {
    if (impl_->inputs[i].defined()) continue;
    unset += (count++ ? ", '" : "'") + impl_->input_names[i] + "'";
  }
  if (count > 0) {
    throw Error(ErrorCode::invalid_argument,
                "predictor " + impl_->path + ": " + (count == 1 ? "input " : "inputs ") + unset +
                    (count == 1 ? " is" : " are") + " not set; call set_input before run");
  }
  impl_->outputs = impl_->executor->run(impl_->inputs);
  impl_->has_run = true;
}

Tensor Predictor::output(const std::string& name) const {
  const auto& outs = program().outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].name == name) return output(i);
  }
  std::string names;
  for (const auto& out : outs) names += (names.empty() ? "" : ", ") + out.name;
  throw Error(ErrorCode::invalid_argument,
              "predictor " + impl_->path + ": the program has no output '" + name +
                  "' (its outputs: " + (names.empty() ? "none" : names) + ")");
}

Tensor Predictor::output(size_t index) const {
  OAR_CHECK_ARG(impl_->has_run, "predictor " + impl_->path + ": no outputs yet; call run first");
  OAR_CHECK_ARG(index < impl_->outputs.size(),
                "predictor " + impl_->path + ": output index " + std::to_string(index) +
                    " is out of range (the program has " + std::to_string(impl_->outputs.size()) +
                    " outputs)");
  return impl_->outputs[index];
}

const ir::Program& Predictor::program() const { return impl_->executor->program(); }
const Device& Predictor::device() const { return impl_->device; }

}  // namespace oar
