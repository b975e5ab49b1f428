/// \file predictor.h
/// The C++ inference API: load a saved program with its parameters, set
/// inputs, run, read outputs; no Python involved. A Predictor is not shared
/// between threads, but separate predictors run concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "oar/device.h"
#include "oar/ir/executor.h"
#include "oar/tensor.h"

namespace oar {

struct PredictorOptions {
  /// Device to run on; empty: the default device.
  std::string device;
  ir::ExecutorOptions executor;
};

class Predictor {
 public:
  /// Loads `path`.json + `path`.safetensors (errors name the file).
  explicit Predictor(const std::string& path, PredictorOptions options = {});
  ~Predictor();
  Predictor(Predictor&&) noexcept;

  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  /// The declared type of an input ("f32[-1, 4]").
  std::string input_type(const std::string& name) const;

  /// Sets an input by name (copied to the predictor's device if needed);
  /// throws naming the input when unknown or of the wrong dtype/rank.
  void set_input(const std::string& name, const Tensor& value);
  /// Runs with the inputs set; throws naming any input not set.
  void run();
  /// An output of the last run, by name or index.
  Tensor output(const std::string& name) const;
  Tensor output(size_t index) const;

  /// The program as compiled for the device and the last run's input
  /// shapes; input_type() gives the saved program's declared types.
  const ir::Program& program() const;
  const Device& device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oar
