// Shared helpers of the C++ tests.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "oar/oar.h"

namespace oar_test {

/// The devices every op test runs on: the mock reference and the cpu plugin.
inline std::vector<oar::Device> test_devices() { return {{"cpu", 0}, {"mock", 0}}; }

/// Elements of a float tensor (any float dtype) as doubles.
inline std::vector<double> values(const oar::Tensor& t) {
  oar::Tensor d = oar::cast(t, oar::DType::f64);
  return d.to_vector<double>();
}

/// Checks |a - b| <= atol + rtol * |b| elementwise, with a message naming the index.
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double atol = 1e-5,
                        double rtol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = (std::isnan(got[i]) && std::isnan(want[i])) || std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(ok);
  }
}

inline void check_close(const oar::Tensor& got, const std::vector<double>& want, double atol = 1e-5,
                        double rtol = 1e-5) {
  check_close(values(got), want, atol, rtol);
}

/// Runs `fn` and returns the oar::Error message it throws ("" if none).
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const oar::Error& e) {
    return e.what();
  }
  return "";
}

/// Runs a shell command and returns its combined stdout and stderr.
inline std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) out += buf;
  pclose(pipe);
  return out;
}

}  // namespace oar_test
