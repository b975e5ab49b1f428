// oar._C.Tensor and oar._C.dtype: the handle, host <-> numpy copies and the
// autograd state. Operators and Paddle-style methods are attached in Python
// (oar/tensor.py).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>

#include "binding.h"
#include "oar/builder.h"

namespace oar_py {

namespace {

// numpy dtype of an oar dtype; bfloat16 has none (numpy() converts it to float32).
py::dtype numpy_dtype(oar::DType dtype) {
  switch (dtype) {
    case oar::DType::f32: return py::dtype::of<float>();
    case oar::DType::f64: return py::dtype::of<double>();
    case oar::DType::f16: return py::dtype("float16");
    case oar::DType::bf16: return py::dtype("uint16");  // raw bits
    case oar::DType::i8: return py::dtype::of<int8_t>();
    case oar::DType::u8: return py::dtype::of<uint8_t>();
    case oar::DType::i32: return py::dtype::of<int32_t>();
    case oar::DType::i64: return py::dtype::of<int64_t>();
    case oar::DType::boolean: return py::dtype::of<bool>();
    case oar::DType::c64: return py::dtype("complex64");
    case oar::DType::c128: return py::dtype("complex128");
  }
  throw oar::Error(oar::ErrorCode::internal, "numpy: unknown dtype");
}

oar::DType dtype_of_numpy(const py::dtype& dt) {
  char kind = dt.kind();
  auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return oar::DType::f32;
  if (kind == 'f' && size == 8) return oar::DType::f64;
  if (kind == 'f' && size == 2) return oar::DType::f16;
  if (kind == 'i' && size == 1) return oar::DType::i8;
  if (kind == 'u' && size == 1) return oar::DType::u8;
  if (kind == 'i' && size == 4) return oar::DType::i32;
  if (kind == 'i' && size == 8) return oar::DType::i64;
  if (kind == 'b') return oar::DType::boolean;
  if (kind == 'c' && size == 8) return oar::DType::c64;
  if (kind == 'c' && size == 16) return oar::DType::c128;
  throw py::type_error("to_tensor: numpy dtype " + py::str(dt).cast<std::string>() +
                       " has no oar dtype (supported: float16/32/64, int8, uint8, int32, int64, bool, "
                       "complex64, complex128)");
}

oar::Shape shape_of(const py::array& a) {
  oar::Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(a.shape(i));
  return s;
}

// Note [numpy views]: numpy() of a tensor on a host-addressable device
// (cpu) is a view of the tensor's memory, as PyTorch's numpy() is: writes
// through either are seen by both, and the array keeps the storage alive (a
// capsule owns a Tensor handle). A strided view (Note [Views] in
// core/src/tensor/view.cpp) becomes an array with the same strides (in
// bytes); one with a broadcast (stride-0) dim is read-only, as
// numpy.broadcast_to's is. Elsewhere (the mock, a GPU) and for bfloat16
// (numpy has no bfloat16; it becomes float32) it is a contiguous copy.
// to_tensor(ndarray) copies, as Paddle's does.
py::array to_numpy(const oar::Tensor& t) {
  oar::Tensor src = t.dtype() == oar::DType::bf16 ? oar::cast(t.detach(), oar::DType::f32) : t;
  std::vector<py::ssize_t> shape(src.shape().begin(), src.shape().end());
  if (src.dtype() == t.dtype()) {
    if (void* data = src.host_data()) {
      py::capsule owner(new oar::Tensor(src), [](void* p) { delete static_cast<oar::Tensor*>(p); });
      std::vector<py::ssize_t> strides;
      bool broadcast = false;
      for (size_t d = 0; d < shape.size(); ++d) {
        strides.push_back(static_cast<py::ssize_t>(src.strides()[d] * static_cast<int64_t>(oar::dtype_size(src.dtype()))));
        broadcast = broadcast || (src.strides()[d] == 0 && shape[d] > 1);
      }
      py::array view(numpy_dtype(src.dtype()), shape, strides, data, owner);
      if (broadcast) view.attr("setflags")(py::arg("write") = false);
      return view;
    }
  }
  py::array out(numpy_dtype(src.dtype()), shape);
  src.copy_to_host(out.mutable_data());
  return out;
}

oar::Tensor from_numpy(const py::array& input, std::optional<oar::DType> dtype,
                       const std::optional<std::string>& device) {
  auto arr = py::array::ensure(input, py::array::c_style);
  if (!arr) throw py::type_error("to_tensor: cannot convert the input to a contiguous array");
  oar::DType src = dtype_of_numpy(arr.dtype());
  oar::Device dev = optional_device(device).value_or(oar::default_device());
  oar::Tensor t = oar::Tensor::from_host(arr.data(), shape_of(arr), src, dev);
  if (dtype && *dtype != src) t = oar::cast(t, *dtype);
  return t;
}

// Holds a Python callable; drops it under the GIL (hooks may outlive frames).
struct PyCallable {
  explicit PyCallable(py::function f) : fn(new py::function(std::move(f))) {}
  std::shared_ptr<py::function> fn_ptr() const {
    return {fn, [](py::function* p) {
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire gil;
        delete p;
      }
    }};
  }
  py::function* fn;
};

}  // namespace

namespace {

// Paddle's a + b and a * b: on two bool tensors they are logical or / and
// (bool - bool stays an error, as in Paddle); otherwise the core ops.
oar::Tensor paddle_add(const oar::Tensor& a, const oar::Tensor& b) {
  const bool both_bool = a.dtype() == oar::DType::boolean && b.dtype() == oar::DType::boolean;
  return both_bool ? oar::logical_or(a, b) : oar::add(a, b);
}

oar::Tensor paddle_multiply(const oar::Tensor& a, const oar::Tensor& b) {
  const bool both_bool = a.dtype() == oar::DType::boolean && b.dtype() == oar::DType::boolean;
  return both_bool ? oar::logical_and(a, b) : oar::multiply(a, b);
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::enum_<oar::DType>(m, "dtype")
      .value("float32", oar::DType::f32)
      .value("float64", oar::DType::f64)
      .value("float16", oar::DType::f16)
      .value("bfloat16", oar::DType::bf16)
      .value("int8", oar::DType::i8)
      .value("uint8", oar::DType::u8)
      .value("int32", oar::DType::i32)
      .value("int64", oar::DType::i64)
      .value("bool", oar::DType::boolean)
      .value("complex64", oar::DType::c64)
      .value("complex128", oar::DType::c128)
      .def("__repr__", [](oar::DType d) { return "oar." + std::string(oar::dtype_name(d)); })
      .def("__str__", [](oar::DType d) { return "oar." + std::string(oar::dtype_name(d)); })
      .def_property_readonly("name", [](oar::DType d) { return std::string(oar::dtype_name(d)); })
      .def_property_readonly("itemsize", [](oar::DType d) { return oar::dtype_size(d); })
      .def_property_readonly("is_floating_point", [](oar::DType d) { return oar::is_floating(d); })
      .def_property_readonly("is_integer", [](oar::DType d) { return oar::is_integer(d); })
      .def_property_readonly("is_complex", [](oar::DType d) { return oar::is_complex(d); });
  m.def("complex_dtype_for", &oar::complex_dtype_for);
  m.def("real_dtype_for", &oar::real_dtype_for);
  m.def("parse_dtype", [](const std::string& s) { return oar::parse_dtype(s); });
  m.def("promote_types", &oar::promote_types);

  py::class_<oar::Tensor> t(m, "Tensor", py::dynamic_attr());
  t.def(py::init<>())
      .def(py::init([](const oar::Tensor& other) { return other; }), py::arg("other"),
           "A handle sharing `other`'s data and autograd state.")
      .def_property_readonly("_defined", &oar::Tensor::defined)
      .def_property_readonly("dtype", &oar::Tensor::dtype)
      .def_property_readonly("shape", [](const oar::Tensor& x) { return std::vector<int64_t>(x.shape()); })
      .def_property_readonly("ndim", &oar::Tensor::dim)
      .def("dim", &oar::Tensor::dim)
      .def("numel", &oar::Tensor::numel)
      .def_property_readonly("size", &oar::Tensor::numel)
      .def_property_readonly("_device", [](const oar::Tensor& x) { return device_string(x.device()); })
      .def("is_contiguous", &oar::Tensor::is_contiguous)
      .def_property_readonly("strides", [](const oar::Tensor& x) { return std::vector<int64_t>(x.strides()); },
                             "Strides in elements (a view's own: Note [Views]).")
      .def_property_readonly("_byte_offset", &oar::Tensor::byte_offset)
      .def_property_readonly("_view_op", [](const oar::Tensor& x) { return std::string(x.view_op()); },
                             "The op whose eager view this tensor is (transpose, slice, broadcast_to, diagonal, reshape), or ''.")
      .def("numpy", &to_numpy, "The values as a numpy array: a view on cpu, else a copy (bfloat16 becomes float32; Note [numpy views]).")
      .def("_raw_bytes", [](const oar::Tensor& x) {
        std::string buf(static_cast<size_t>(x.numel()) * oar::dtype_size(x.dtype()), '\0');
        x.copy_to_host(buf.data());
        return py::bytes(buf);
      })
      .def("_item", &oar::Tensor::item)
      .def("_to", [](const oar::Tensor& x, const std::string& device) { return x.to(oar::parse_device(device)); })
      .def("contiguous", &oar::Tensor::contiguous)
      .def("_str", &oar::Tensor::str, py::arg("max_values") = 16)
      // ---- autograd ----
      .def_property("stop_gradient", [](const oar::Tensor& x) { return !x.requires_grad(); },
                    [](oar::Tensor& x, bool stop) {
                      if (stop && !x.is_leaf()) {
                        // Paddle allows cutting a non-leaf: it becomes a leaf.
                        x = x.detach();
                        return;
                      }
                      x.set_requires_grad(!stop);
                    })
      .def_property_readonly("is_leaf", &oar::Tensor::is_leaf)
      .def_property_readonly("grad", [](const oar::Tensor& x) -> std::optional<oar::Tensor> {
        oar::Tensor g = x.grad();
        if (!g.defined()) return std::nullopt;
        return g;
      })
      .def_property_readonly("_grad_fn_name", &oar::Tensor::grad_fn_name)
      .def("_set_grad", [](oar::Tensor& x, const std::optional<oar::Tensor>& g) {
        auto& meta = x.impl().autograd;
        OAR_CHECK_ARG(meta != nullptr, "grad: the tensor does not require grad");
        meta->grad = g ? *g : oar::Tensor();
      })
      .def("clear_grad", &oar::Tensor::clear_grad)
      // Paddle's backward(): without grad_tensor a tensor of any shape is
      // seeded with ones (the C++ Tensor::backward asks for one explicitly).
      .def("backward", [](const oar::Tensor& x, const std::optional<oar::Tensor>& grad, bool retain_graph,
                          bool create_graph) {
             oar::Tensor seed = grad ? *grad : (x.numel() == 1 ? oar::Tensor() : oar::ones_like(x));
             x.backward(seed, retain_graph, create_graph);
           },
           py::arg("grad_tensor") = py::none(), py::arg("retain_graph") = false, py::arg("create_graph") = false)
      // A traced tensor records stop_gradient (Note [detach in a trace] in core/src/ops/elementwise.cpp).
      .def("detach", [](const oar::Tensor& x) {
        // A trace records it for every tensor: a captured parameter is not symbolic.
        if (!x.is_symbolic() && &oar::current_builder() == &oar::EagerBuilder::instance()) return x.detach();
        std::array<oar::Tensor, 1> in{x};
        return oar::apply1(oar::OpRegistry::instance().get("stop_gradient"), in).detach();
      })
      .def("_register_hook", [](oar::Tensor& x, py::function fn) {
        auto holder = PyCallable(std::move(fn)).fn_ptr();
        x.register_hook([holder](const oar::Tensor& g) -> oar::Tensor {
          py::gil_scoped_acquire gil;
          py::object r = (*holder)(g);
          if (r.is_none()) return oar::Tensor();
          return r.cast<oar::Tensor>();
        });
      })
      // Note [Rebinding]: optimizer steps and set_value make this handle
      // point at a new TensorImpl (_set_data_); tensors saved by recorded
      // ops keep the old one, so pending backwards stay correct. Other
      // handles sharing the old data do not see the update. The in-place
      // methods and __setitem__ write into the tensor's memory instead
      // (_assign_, Note [In-place writes] in core/src/tensor/inplace.cpp)
      // and rebind only the autograd history (_with_history).
      .def("_assign_", [](const oar::Tensor& x, const oar::Tensor& src) { x.assign_(src); }, py::arg("src"),
           "Writes `src` (broadcast, cast) into this tensor's memory: its views and its base see it.")
      .def_property_readonly("inplace_version", &oar::Tensor::version,
                             "How many in-place writes went into this tensor's memory (Note [Version counter]).")
      .def("_with_history", [](const oar::Tensor& x, const oar::Tensor& history) { return oar::with_history(x, history); },
           "This tensor's memory with the autograd history of `history`.")
      .def("_shares_storage", [](const oar::Tensor& a, const oar::Tensor& b) {
        return a.impl().storage != nullptr && a.impl().storage == b.impl().storage;
      })
      .def("_view_base", [](const oar::Tensor& x) -> std::optional<oar::Tensor> {
        oar::Tensor base = oar::view_base(x);
        if (!base.defined()) return std::nullopt;
        return base;
      }, "The tensor with history this one is a recorded view of, or None (Note [In-place writes]).")
      .def("_set_history_", [](const oar::Tensor& x, const oar::Tensor& history) {
        x.impl().autograd = history.impl().autograd;
        x.impl().history_version = x.version();
      }, "Gives every handle of this tensor the autograd history of `history` (a base rebased by a write through its view).")
      .def_property_readonly("_history_current", [](const oar::Tensor& x) {
        return x.is_leaf() || x.version() == x.impl().history_version;
      }, "False when this non-leaf's memory was written since its history was recorded (Note [Version counter]).")
      .def_property_readonly("_is_view_of_grad_leaf", [](const oar::Tensor& x) { return oar::is_view_of_grad_leaf(x); })
      .def("_rebind_", [](oar::Tensor& x, const oar::Tensor& src) { x = src; },
           "Makes this handle the tensor `src` (data and autograd history).")
      .def("_set_data_", [](oar::Tensor& x, const oar::Tensor& src) {
        auto impl = std::make_shared<oar::TensorImpl>(src.impl());
        impl->autograd = x.defined() ? x.impl().autograd : nullptr;
        x = oar::Tensor(std::move(impl));
      }, "Makes this handle hold `src`'s data, keeping its own autograd state (grad, hooks).")
      .def("_same_data", [](const oar::Tensor& a, const oar::Tensor& b) {
        return a.impl().storage == b.impl().storage && a.impl().byte_offset == b.impl().byte_offset;
      });

  // Note [Fast operators]: `a + b` on two tensors is the Python frontend's
  // hottest call, so Tensor op Tensor goes straight to the core op here (the
  // core applies the same dtype promotion as oar.add); any other operand
  // (numbers, arrays, an integer true division) goes to the Python function
  // that oar registers with _set_operator_fallback, which holds Paddle's
  // scalar rules.
  static auto* fallbacks = new std::map<std::string, py::object>();
  m.def("_set_operator_fallback", [](const std::string& name, py::object fn) { (*fallbacks)[name] = std::move(fn); },
        py::arg("name"), py::arg("fn"));
  auto fallback = [](const char* name) {
    return [name](py::object a, py::object b) -> py::object {
      auto it = fallbacks->find(name);
      if (it == fallbacks->end()) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
      return it->second(a, b);
    };
  };
#define OAR_FAST_BINARY(pyname, expr)                                                                       \
  t.def(pyname, [](const oar::Tensor& a, const oar::Tensor& b) { return expr; }, py::is_operator()); \
  t.def(pyname, fallback(pyname), py::is_operator());
  OAR_FAST_BINARY("__add__", paddle_add(a, b))
  OAR_FAST_BINARY("__sub__", oar::subtract(a, b))
  OAR_FAST_BINARY("__mul__", paddle_multiply(a, b))
#undef OAR_FAST_BINARY
  t.def("__truediv__", [](const oar::Tensor& a, const oar::Tensor& b) -> py::object {
    if (oar::is_floating(a.dtype()) && oar::is_floating(b.dtype())) return py::cast(oar::divide(a, b));
    return (*fallbacks)["__truediv__"](a, b);
  }, py::is_operator());
  t.def("__truediv__", fallback("__truediv__"), py::is_operator());
  // The same fast path for the functions oar.add/subtract/multiply(x, y, name=None).
  auto fallback3 = [](const char* name) {
    return [name](py::object x, py::object y, py::object) -> py::object { return (*fallbacks)[name](x, y); };
  };
#define OAR_FAST_FUNCTION(pyname, expr)                                                                       \
  m.def("_fast_" pyname, [](const oar::Tensor& a, const oar::Tensor& b, py::object) { return expr; }, py::arg("x"), \
        py::arg("y"), py::arg("name") = py::none());                                                          \
  m.def("_fast_" pyname, fallback3(pyname), py::arg("x"), py::arg("y"), py::arg("name") = py::none());
  OAR_FAST_FUNCTION("add", paddle_add(a, b))
  OAR_FAST_FUNCTION("subtract", oar::subtract(a, b))
  OAR_FAST_FUNCTION("multiply", paddle_multiply(a, b))
#undef OAR_FAST_FUNCTION

  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("dtype") = py::none(), py::arg("device") = py::none());
  m.def("from_bytes", [](const py::bytes& data, const std::vector<int64_t>& shape, oar::DType dtype,
                         const std::optional<std::string>& device) {
    std::string_view view = data;
    uint64_t bytes = oar::checked_shape_bytes("from_bytes", shape, dtype);
    OAR_CHECK_ARG(view.size() == bytes, "from_bytes: " + std::to_string(view.size()) + " bytes for shape " +
                                            oar::shape_str(shape) + " of " + std::string(oar::dtype_name(dtype)) +
                                            " which needs " + std::to_string(bytes));
    return oar::Tensor::from_host(view.data(), shape, dtype,
                                  optional_device(device).value_or(oar::default_device()));
  }, py::arg("data"), py::arg("shape"), py::arg("dtype"), py::arg("device") = py::none());
}

}  // namespace oar_py
