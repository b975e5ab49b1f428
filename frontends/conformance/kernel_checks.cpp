// Kernel and gradient checks: every op of op_specs() runs on the device under
// test and on the reference with the same host inputs; results must agree in
// shape, dtype and values (per-dtype tolerance). One check row per op and
// dtype; a dtype the plugin does not register is skipped, a primitive with no
// kernel at all is listed as missing, a composite without a fused kernel runs
// (and is checked) decomposed.
#include <cmath>
#include <set>

#include "op_specs.h"
#include "runtime/runtime_state.h"

namespace oar_conformance {
namespace {

using oar::DType;
using oar::Tensor;

enum class Coverage { native, decomposed, missing, view };

Coverage coverage_of(const oar::OpDef& op, const std::set<std::string>& native) {
  if (op.kind == oar::OpKind::view || op.host) return Coverage::view;  // host ops (collectives): no device kernel
  if (native.count(op.name)) return Coverage::native;
  return op.kind == oar::OpKind::composite ? Coverage::decomposed : Coverage::missing;
}

bool is_missing_kernel(const oar::Error& e) {
  return e.code() == oar::ErrorCode::unsupported &&
         std::string(e.what()).find("has no kernel") != std::string::npos;
}

// Empty when equal; else a sentence naming the first bad element.
std::string compare(const HostArray& got, const HostArray& want, double tol, int* mismatches) {
  if (got.dtype != want.dtype)
    return "dtype is " + short_dtype(got.dtype) + " but the reference gives " +
           short_dtype(want.dtype);
  if (got.shape != want.shape)
    return "shape is " + oar::shape_str(got.shape) + " but the reference gives " +
           oar::shape_str(want.shape);
  std::string first;
  int bad = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    double g = got.values[i], w = want.values[i];
    bool ok =
        (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= tol + tol * std::fabs(w);
    if (ok) continue;
    if (bad++ == 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "element %zu is %.9g but the reference gives %.9g (tolerance %.1e)", i, g, w,
                    tol);
      first = buf;
    }
  }
  if (mismatches) *mismatches = bad;
  if (bad > 1)
    first += "; " + std::to_string(bad) + " of " + std::to_string(want.values.size()) +
             " elements differ";
  return first;
}

std::vector<Tensor> upload_all(const std::vector<HostArray>& in, const oar::Device& d) {
  std::vector<Tensor> out;
  for (const auto& a : in) out.push_back(upload(a, d));
  return out;
}

/// Outcome of one case on one device.
struct Run {
  bool ok = false;
  bool missing_kernel = false;
  std::string error;
  std::vector<HostArray> outputs;  // the result, or the gradients
};

Run run_forward(const OpCase& c, const oar::Device& d) {
  Run r;
  try {
    Tensor y = c.run(upload_all(c.inputs, d), d);
    r.outputs.push_back(download(y));
    r.ok = true;
  } catch (const oar::Error& e) {
    r.missing_kernel = is_missing_kernel(e);
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// Gradients of every floating input for grad_output `g` (host array).
Run run_backward(const OpCase& c, const oar::Device& d, uint32_t seed) {
  Run r;
  try {
    std::vector<Tensor> in = upload_all(c.inputs, d), leaves;
    for (auto& t : in)
      if (oar::is_floating(t.dtype())) leaves.push_back(t.set_requires_grad(true));
    if (leaves.empty()) return r;
    Tensor y = c.run(in, d);
    // The same random cotangent on both devices.
    const size_t parts = oar::is_complex(y.dtype()) ? 2 : 1;  // complex: (re, im) pairs
    HostArray g{y.dtype(), y.shape(), std::vector<double>(parts * static_cast<size_t>(y.numel()))};
    uint32_t x = seed * 747796405u + 1;
    for (auto& v : g.values)
      x = x * 1664525u + 1013904223u, v = static_cast<double>(x >> 8) / 16777216.0 * 2 - 1;
    auto grads = oar::grad({y}, leaves, {upload(g, d)}, false, std::nullopt, true);
    for (const auto& gt : grads)
      r.outputs.push_back(gt.defined() ? download(gt) : HostArray{DType::f32, {-1}, {}});
    r.ok = true;
  } catch (const oar::Error& e) {
    r.missing_kernel = is_missing_kernel(e);
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

struct Counts {
  int run = 0, failed = 0, missing = 0, ref_failed = 0;
  std::string first_failure, first_case, missing_reason, ref_reason;
};

void add_row(Suite& suite, const std::string& name, const Counts& n, const std::string& how,
             double tol, DType dt) {
  CheckResult r{.name = name};
  r.cases = n.run;
  r.failed_cases = n.failed;
  r.extra = {{"tolerance", tol}, {"dtype", short_dtype(dt)}, {"path", how}};
  if (n.failed) {
    r.result = Result::fail;
    r.failed_case = n.first_case;
    r.detail =
        how + ": case " + n.first_case.substr(n.first_case.find('/') + 1) + " " + n.first_failure;
  } else if (n.run == 0 && n.missing) {
    r.result = Result::skip;
    r.detail = (how == "native" ? std::string("dtype not registered: ")
                                : how + " needs a missing kernel: ") +
               n.missing_reason;
  } else if (n.run == 0) {
    r.result = Result::skip;
    r.detail =
        n.ref_failed ? "the reference could not run it: " + n.ref_reason : "no case selected";
  } else {
    r.detail = how + ": " + std::to_string(n.run) + " cases match the reference";
    if (n.missing)
      r.detail += " (" + std::to_string(n.missing) + " skipped: " + n.missing_reason + ")";
  }
  suite.add(r);
}

std::set<std::string> native_ops(const Devices& d) {
  auto v = oar::Runtime::global().kernel_ops(d.dut.type);
  return {v.begin(), v.end()};
}

// Runs `body(spec, dtype, how)` for every selected (op, dtype) row.
template <typename Body>
void for_each_row(Suite& suite, const Devices& devices, const std::string& prefix, bool listing,
                  Body body) {
  const auto& registry = oar::OpRegistry::instance();
  std::set<std::string> native = native_ops(devices), with_spec;
  for (const auto& spec : op_specs()) {
    with_spec.insert(spec.op);
    const oar::OpDef* op = registry.find(spec.op);
    if (!op) continue;
    Coverage cov = coverage_of(*op, native);
    if (cov == Coverage::missing) {
      if (listing && suite.selected(prefix + spec.op))
        suite.add({.name = prefix + spec.op,
                   .result = Result::skip,
                   .detail = "missing: '" + devices.dut.type + "' has no kernel for this primitive",
                   .extra = {{"missing", true}}});
      continue;
    }
    for (DType dt : spec.dtypes) {
      if (suite.tier() == Tier::smoke && dt != spec.dtypes.front()) continue;
      body(spec, *op, dt, cov == Coverage::native ? "native" : "decomposed");
    }
  }
  if (!listing) return;
  for (const oar::OpDef* op : registry.all()) {
    if (op->kind == oar::OpKind::view || op->host || with_spec.count(op->name) ||
        !suite.selected(prefix + op->name))
      continue;
    // Backward kernels (conv2d_grad_input, ...) run inside grad.<forward>.*.
    size_t g = op->name.find("_grad");
    bool backward = g != std::string::npos && with_spec.count(op->name.substr(0, g));
    if (coverage_of(*op, native) == Coverage::missing) {
      suite.add({.name = prefix + op->name,
                 .result = Result::skip,
                 .detail = "missing: '" + devices.dut.type + "' has no kernel for this primitive",
                 .extra = {{"missing", true}}});
      continue;
    }
    if (backward) {
      suite.add(
          {.name = prefix + op->name,
           .result = Result::info,
           .detail = "native backward kernel: checked by grad." + op->name.substr(0, g) + ".*"});
      continue;
    }
    suite.add({.name = prefix + op->name,
               .result = Result::skip,
               .detail = std::string(coverage_of(*op, native) == Coverage::native ? "native"
                                                                                  : "not native") +
                         "; this version of the suite has no cases for it"});
  }
}

}  // namespace

void run_kernel_checks(Suite& suite, const Devices& devices) {
  // Coverage: what runs natively, decomposed, or not at all.
  std::set<std::string> native = native_ops(devices);
  nlohmann::json cov = {{"native", nlohmann::json::array()},
                        {"decomposed", nlohmann::json::array()},
                        {"missing", nlohmann::json::array()}};
  for (const oar::OpDef* op : oar::OpRegistry::instance().all()) {
    Coverage c = coverage_of(*op, native);
    if (c != Coverage::view)
      cov[c == Coverage::native       ? "native"
          : c == Coverage::decomposed ? "decomposed"
                                      : "missing"]
          .push_back(op->name);
  }
  suite.meta()["coverage"] = cov;
  if (suite.selected("ops.coverage")) {
    std::string missing;
    for (const auto& m : cov["missing"])
      missing += (missing.empty() ? "" : " ") + m.get<std::string>();
    suite.add({.name = "ops.coverage",
               .result = Result::info,
               .detail = std::to_string(cov["native"].size()) + " native, " +
                         std::to_string(cov["decomposed"].size()) + " run decomposed, " +
                         std::to_string(cov["missing"].size()) + " missing" +
                         (missing.empty() ? std::string() : ": " + missing),
               .extra = cov});
  }
  if (!devices.has_reference) return;

  for_each_row(suite, devices, "kernel.", true,
               [&](const OpSpec& spec, const oar::OpDef&, DType dt, const std::string& how) {
                 std::string name = "kernel." + spec.op + "." + short_dtype(dt);
                 uint32_t seed = 1;
                 for (char ch : name) seed = seed * 31 + static_cast<unsigned char>(ch);
                 std::vector<OpCase> cases = spec.cases(dt, suite.tier(), seed);
                 double tol = tolerance(dt) * spec.tol_scale;
                 Counts n;
                 bool any_selected = false;
                 for (size_t i = 0; i < cases.size(); ++i) {
                   if (!suite.case_selected(name, static_cast<int>(i))) continue;
                   any_selected = true;
                   std::string id = name + "/" + std::to_string(i);
                   suite.set_current(id);
                   Run ref = run_forward(cases[i], devices.reference);
                   if (!ref.ok) {
                     if (!n.ref_failed++) n.ref_reason = ref.error;
                     continue;
                   }
                   Run got = run_forward(cases[i], devices.dut);
                   if (!got.ok && got.missing_kernel) {
                     if (!n.missing++) n.missing_reason = got.error;
                     continue;
                   }
                   ++n.run;
                   std::string diff = got.ok ? compare(got.outputs[0], ref.outputs[0], tol, nullptr)
                                             : "failed: " + got.error;
                   if (!diff.empty() && !n.failed++) {
                     n.first_case = id;
                     n.first_failure = "(" + cases[i].label + "): " + diff;
                   }
                 }
                 if (any_selected) add_row(suite, name, n, how, tol, dt);
               });
  suite.set_current("");
}

void run_grad_checks(Suite& suite, const Devices& devices) {
  if (!devices.has_reference || suite.tier() == Tier::smoke) return;
  for_each_row(
      suite, devices, "grad.", false,
      [&](const OpSpec& spec, const oar::OpDef& op, DType dt, const std::string& how) {
        if (!op.differentiable || (dt != DType::f32 && dt != DType::f64)) return;
        std::string name = "grad." + spec.op + "." + short_dtype(dt);
        uint32_t seed = 1;
        for (char ch : "kernel." + spec.op + "." + short_dtype(dt))
          seed = seed * 31 + static_cast<unsigned char>(ch);
        std::vector<OpCase> cases = spec.cases(dt, suite.tier(), seed);
        size_t limit =
            suite.tier() == Tier::full ? cases.size() : std::min<size_t>(cases.size(), 4);
        double tol = tolerance(dt) * 10 * spec.tol_scale;
        Counts n;
        bool any_selected = false;
        for (size_t i = 0; i < limit; ++i) {
          if (!cases[i].differentiable || !suite.case_selected(name, static_cast<int>(i))) continue;
          any_selected = true;
          std::string id = name + "/" + std::to_string(i);
          suite.set_current(id);
          Run ref = run_backward(cases[i], devices.reference, static_cast<uint32_t>(i) + 1);
          if (!ref.ok) {
            if (!n.ref_failed++) n.ref_reason = ref.error.empty() ? "no floating input" : ref.error;
            continue;
          }
          Run got = run_backward(cases[i], devices.dut, static_cast<uint32_t>(i) + 1);
          if (!got.ok && got.missing_kernel) {
            if (!n.missing++) n.missing_reason = got.error;
            continue;
          }
          ++n.run;
          std::string diff = got.ok ? "" : "failed: " + got.error;
          for (size_t k = 0; diff.empty() && k < ref.outputs.size(); ++k) {
            diff = compare(got.outputs[k], ref.outputs[k], tol, nullptr);
            if (!diff.empty()) diff = "gradient of input " + std::to_string(k) + ": " + diff;
          }
          if (!diff.empty() && !n.failed++) {
            n.first_case = id;
            n.first_failure = "(" + cases[i].label + "): " + diff;
          }
        }
        if (!any_selected) return;
        // A backward that needs kernels the device lacks is listed, not failed.
        add_row(suite, name, n, how == "native" ? "backward" : "backward (decomposed)", tol, dt);
      });
  suite.set_current("");
}

}  // namespace oar_conformance
