// The `oar-run` command: runs a saved program (path.json + path.safetensors)
// on a device with inputs from safetensors files or generated ones, prints
// each output's type and a summary of its values, and writes the outputs
// to a safetensors file. The deployment path without Python.
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "oar/ir/predictor.h"
#include "oar/ir/printer.h"
#include "oar/ir/safetensors.h"
#include "oar/oar.h"

namespace {

constexpr const char* kUsage =
    "usage: oar-run <path> [--device TYPE[:INDEX]] [--inputs FILE.safetensors] [--input "
    "NAME=FILE.safetensors]...\n"
    "               [--shape NAME=D0,D1,...]... [--output FILE.safetensors] [--print-program] "
    "[--repeat N]\n"
    "               [--streams N]\n";

constexpr const char* kHelp =
    "Runs a program saved by oar::ir::save: <path>.json and <path>.safetensors.\n"
    "\n"
    "  --device TYPE[:INDEX]     device to run on (default: the default device)\n"
    "  --inputs FILE             safetensors file whose tensors are inputs, by input name\n"
    "  --input NAME=FILE         input NAME from FILE (its tensor NAME, or its only tensor)\n"
    "  --shape NAME=D0,D1,...    shape of a generated input (needed for dynamic dims)\n"
    "  --output FILE             write the outputs to FILE as safetensors, by output name\n"
    "  --print-program           print the program as compiled for the device and inputs\n"
    "  --repeat N                run N times and print the mean time per run\n"
    "  --streams N               streams the executor may spread independent ops over\n"
    "\n"
    "Inputs given no value are generated: floats uniform in [-1, 1) with a fixed\n"
    "seed (complex: real and imaginary parts each so), integers and bools zero.\n"
    "Complex outputs print their values as re+imj. Exit status: 0 on success, 1\n"
    "when the program cannot be loaded or run, 2 for bad usage.\n";

struct UsageError {
  std::string message;
};

struct Options {
  std::string path;
  std::string device;
  std::string inputs_file;
  std::vector<std::pair<std::string, std::string>> input_files;  // name, file
  std::map<std::string, oar::Shape> shapes;
  std::string output_file;
  bool print_program = false;
  int repeat = 1;
  int streams = 1;
};

// "name=value" split at the first '='.
std::pair<std::string, std::string> split_assignment(const std::string& flag,
                                                     const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError{flag + " expects NAME=VALUE but got '" + text + "'"};
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

int64_t parse_count(const std::string& flag, const std::string& text, int64_t min) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min) {
    throw UsageError{flag + " expects an integer >= " + std::to_string(min) + " but got '" + text +
                     "'"};
  }
  return v;
}

oar::Shape parse_shape(const std::string& flag, const std::string& text) {
  oar::Shape shape;
  std::stringstream ss(text);
  std::string dim;
  while (std::getline(ss, dim, ',')) shape.push_back(parse_count(flag, dim, 0));
  return shape;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
      return argv[++i];
    };
    if (arg == "--device") {
      o.device = value();
    } else if (arg == "--inputs") {
      o.inputs_file = value();
    } else if (arg == "--input") {
      o.input_files.push_back(split_assignment(arg, value()));
    } else if (arg == "--shape") {
      auto [name, dims] = split_assignment(arg, value());
      o.shapes[name] = parse_shape(arg, dims);
    } else if (arg == "--output") {
      o.output_file = value();
    } else if (arg == "--print-program") {
      o.print_program = true;
    } else if (arg == "--repeat") {
      o.repeat = static_cast<int>(parse_count(arg, value(), 1));
    } else if (arg == "--streams") {
      o.streams = static_cast<int>(parse_count(arg, value(), 1));
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError{"unknown option '" + arg + "'"};
    } else if (o.path.empty()) {
      o.path = arg;
    } else {
      throw UsageError{"more than one program path given ('" + o.path + "' and '" + arg + "')"};
    }
  }
  if (o.path.empty()) throw UsageError{"no program path given"};
  return o;
}

// "2,4", as --shape takes it.
std::string dims_text(const oar::Shape& shape) {
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) text += ',';
    text += std::to_string(shape[d]);
  }
  return text;
}

// Uniform values in [-1, 1) for a complex dtype: the real and imaginary parts
// are the interleaved pairs of one uniform real tensor of shape + [2].
oar::Tensor uniform_complex(const oar::Shape& shape, oar::DType dtype, const oar::Device& device,
                            uint64_t seed) {
  oar::Shape pairs = shape;
  pairs.push_back(2);
  oar::Tensor parts = oar::uniform(pairs, -1.0, 1.0, oar::real_dtype_for(dtype), device, seed);
  if (dtype == oar::DType::c64) {
    std::vector<float> v = parts.to_vector<float>();
    return oar::Tensor::from_host(v.data(), shape, dtype, device);
  }
  std::vector<double> v = parts.to_vector<double>();
  return oar::Tensor::from_host(v.data(), shape, dtype, device);
}

// A generated input: uniform floats in [-1, 1) with a per-input seed, zeros otherwise.
oar::Tensor generate_input(const oar::Predictor& predictor, size_t index, const Options& o,
                           std::string& how) {
  const oar::ir::Value* v = predictor.program().inputs()[index];
  const oar::ir::TensorType& type = v->type();
  oar::Shape shape = type.dims;
  auto given = o.shapes.find(v->name());
  if (given != o.shapes.end()) {
    shape = given->second;
    OAR_CHECK_ARG(type.matches(shape), "--shape " + v->name() + "=" + dims_text(shape) +
                                           " does not match the input's type " + type.str());
  } else if (!type.is_static()) {
    oar::Shape example = shape;
    for (int64_t& d : example) d = d < 0 ? 2 : d;
    throw oar::Error(oar::ErrorCode::invalid_argument,
                     "input '" + v->name() + "' has dynamic dims (" + type.str() +
                         ") and no value; give its shape, e.g. --shape " + v->name() + "=" +
                         dims_text(example));
  }
  const oar::Device& device = predictor.device();
  uint64_t seed = 1 + index;
  if (oar::is_floating(type.dtype)) {
    how = "generated: uniform in [-1, 1), seed " + std::to_string(seed);
    return oar::uniform(shape, -1.0, 1.0, type.dtype, device, seed);
  }
  if (oar::is_complex(type.dtype)) {
    how = "generated: real and imaginary parts uniform in [-1, 1), seed " + std::to_string(seed);
    return uniform_complex(shape, type.dtype, device, seed);
  }
  how = "generated: zeros";
  return oar::zeros(shape, type.dtype, device);
}

void put(std::ostream& os, double x) { os << x; }
// A complex number as numpy prints it: "1.5-2j" (a negative zero as "+0j").
void put(std::ostream& os, const std::complex<double>& z) {
  os << z.real() << (z.imag() < 0 ? "-" : "+") << std::abs(z.imag()) << "j";
}

// "first [0.25, -1, 3.5] of 6, sum 7.75" (complex: "first [1+2j, ...], sum 3-1j").
template <typename T>
std::string summary_of(const std::vector<T>& v) {
  std::ostringstream os;
  os.precision(6);
  T sum = 0;
  for (const T& x : v) sum += x;
  os << "first [";
  for (size_t i = 0; i < v.size() && i < 6; ++i) {
    os << (i ? ", " : "");
    put(os, v[i]);
  }
  os << "]" << (v.size() > 6 ? " of " + std::to_string(v.size()) : "") << ", sum ";
  put(os, sum);
  return os.str();
}

std::string summary(const oar::Tensor& t) {
  if (oar::is_complex(t.dtype()))
    return summary_of(oar::cast(t, oar::DType::c128).to_vector<std::complex<double>>());
  return summary_of(oar::cast(t, oar::DType::f64).to_vector<double>());
}

int run(const Options& o) {
  oar::PredictorOptions options;
  options.device = o.device;
  options.executor.num_streams = o.streams;
  oar::Predictor predictor(o.path, options);
  std::cout << "program " << o.path << " on " << predictor.device().str() << "\n";

  std::map<std::string, std::pair<oar::Tensor, std::string>> given;  // name -> tensor, where from
  std::vector<std::string> names = predictor.input_names();
  auto is_input = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (!o.inputs_file.empty()) {
    for (auto& [name, t] : oar::ir::load_safetensors(o.inputs_file, predictor.device())) {
      if (is_input(name)) {
        given[name] = {t, o.inputs_file};
      } else {
        std::cerr << "oar-run: note: " << o.inputs_file << " holds tensor '" << name
                  << "', which is no input of the program; it is ignored\n";
      }
    }
  }
  for (const auto& [name, file] : o.input_files) {
    std::map<std::string, oar::Tensor> tensors =
        oar::ir::load_safetensors(file, predictor.device());
    auto it = tensors.find(name);
    if (it == tensors.end() && tensors.size() == 1) it = tensors.begin();
    if (it == tensors.end()) {
      std::string held;
      for (const auto& [n, t] : tensors) held += (held.empty() ? "" : ", ") + n;
      throw oar::Error(oar::ErrorCode::invalid_argument,
                       file + " has no tensor '" + name + "' and holds " +
                           std::to_string(tensors.size()) + " tensors (" + held +
                           "), so which one is meant is unclear");
    }
    given[name] = {it->second, file};
  }
  for (const auto& [name, entry] : given) predictor.set_input(name, entry.first);
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = given.find(names[i]);
    std::string how = it != given.end() ? "from " + it->second.second : "";
    oar::Tensor t = it != given.end() ? it->second.first : generate_input(predictor, i, o, how);
    if (it == given.end()) predictor.set_input(names[i], t);
    std::cout << "input " << names[i] << ": " << oar::ir::type_of(t).str() << " (" << how << ")\n";
  }

  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < o.repeat; ++r) predictor.run();
  oar::Runtime::global().synchronize(predictor.device());
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (o.repeat > 1)
    std::cout << "ran " << o.repeat << " times: " << ms / o.repeat << " ms per run\n";
  // After a run: decompositions that need concrete shapes are done by then.
  if (o.print_program) std::cout << oar::ir::to_string(predictor.program());

  std::map<std::string, oar::Tensor> outputs;
  std::vector<std::string> out_names = predictor.output_names();
  for (size_t i = 0; i < out_names.size(); ++i) {
    oar::Tensor t = predictor.output(i);
    std::cout << "output " << out_names[i] << ": " << oar::ir::type_of(t).str() << " " << summary(t)
              << "\n";
    outputs[out_names[i]] = t;
  }
  if (!o.output_file.empty()) {
    oar::ir::save_safetensors(o.output_file, outputs);
    std::cout << "wrote " << outputs.size()
              << (outputs.size() == 1 ? " output to " : " outputs to ") << o.output_file << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage << "\n" << kHelp;
      return 0;
    }
  }
  Options options;
  try {
    options = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "oar-run: " << e.message << "\n" << kUsage;
    return 2;
  }
  try {
    return run(options);
  } catch (const oar::Error& e) {
    std::cerr << "oar-run: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "oar-run: " << e.what() << "\n";
    return 1;
  }
}
