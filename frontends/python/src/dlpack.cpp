// DLPack exchange (Debian libdlpack-dev, the legacy "dltensor" capsule of
// DLPack 0.6): Tensor.__dlpack__ / __dlpack_device__ export a cpu tensor's
// memory in place, and _C.from_dlpack wraps another library's tensor (numpy,
// PyTorch, ...) without copying. oar.from_numpy and oar.utils.dlpack are
// built on these two.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

#include "binding.h"
#include "oar/plugin_api.h"

namespace oar_py {
namespace {

// kDLBool is newer than the DLPack 0.6 header; numpy and PyTorch use code 6.
constexpr uint8_t kBoolCode = 6;

DLDataType dl_dtype(oar::DType dtype) {
  switch (dtype) {
    case oar::DType::f32: return {kDLFloat, 32, 1};
    case oar::DType::f64: return {kDLFloat, 64, 1};
    case oar::DType::f16: return {kDLFloat, 16, 1};
    case oar::DType::bf16: return {kDLBfloat, 16, 1};
    case oar::DType::i8: return {kDLInt, 8, 1};
    case oar::DType::u8: return {kDLUInt, 8, 1};
    case oar::DType::i32: return {kDLInt, 32, 1};
    case oar::DType::i64: return {kDLInt, 64, 1};
    case oar::DType::boolean: return {kBoolCode, 8, 1};
    case oar::DType::c64: return {kDLComplex, 64, 1};
    case oar::DType::c128: return {kDLComplex, 128, 1};
  }
  throw oar::Error(oar::ErrorCode::internal, "__dlpack__: unknown dtype");
}

oar::DType oar_dtype(DLDataType t) {
  auto is = [&](uint8_t code, uint8_t bits) { return t.code == code && t.bits == bits; };
  if (t.lanes == 1) {
    if (is(kDLFloat, 32)) return oar::DType::f32;
    if (is(kDLFloat, 64)) return oar::DType::f64;
    if (is(kDLFloat, 16)) return oar::DType::f16;
    if (is(kDLBfloat, 16)) return oar::DType::bf16;
    if (is(kDLInt, 8)) return oar::DType::i8;
    if (is(kDLUInt, 8)) return oar::DType::u8;
    if (is(kDLInt, 32)) return oar::DType::i32;
    if (is(kDLInt, 64)) return oar::DType::i64;
    if (is(kBoolCode, 8)) return oar::DType::boolean;
    if (is(kDLComplex, 64)) return oar::DType::c64;
    if (is(kDLComplex, 128)) return oar::DType::c128;
  }
  throw py::type_error("from_dlpack: the DLPack dtype (code " + std::to_string(t.code) + ", " +
                       std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) +
                       " lanes) has no oar dtype; supported: float16/32/64, bfloat16, int8/32/64, uint8, bool, complex64/128");
}

// What an exported DLManagedTensor points into: the tensor (its storage) and
// the shape and stride arrays.
struct Export {
  oar::Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); }

// A capsule nobody consumed still owns its tensor (the DLPack protocol).
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

py::capsule to_dlpack(const oar::Tensor& t) {
  if (t.is_symbolic()) {
    throw py::buffer_error("__dlpack__: a symbolic tensor of a to_static trace has no memory to share");
  }
  void* data = t.host_data();  // element 0; a strided view exports its strides (Note [Views])
  if (!data && t.numel() > 0) {
    throw py::buffer_error("__dlpack__: the tensor on " + t.device().str() +
                           " is on a device whose memory the host cannot address; only tensors of "
                           "host-addressable devices (cpu) can be shared; copy it with t.cpu() first");
  }
  auto* e = new Export{t, std::vector<int64_t>(t.shape().begin(), t.shape().end()), {}, {}};
  e->strides = std::vector<int64_t>(t.strides().begin(), t.strides().end());
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = data;
  dl.device = {kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(e->shape.size());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_export;
  return py::capsule(&e->managed, "dltensor", capsule_destructor);
}

oar::Tensor from_dlpack(py::capsule capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    throw py::value_error("from_dlpack: expected an unused DLPack capsule named 'dltensor' (a capsule is consumed once)");
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& dl = m->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    throw py::value_error("from_dlpack: the tensor is on DLPack device type " + std::to_string(dl.device.device_type) +
                          "; oar shares host (kDLCPU) memory only");
  }
  if (dl.ndim < 0 || dl.ndim > OAR_MAX_NDIM) {
    throw py::value_error("from_dlpack: the tensor has " + std::to_string(dl.ndim) + " dims; oar supports 0 to " +
                          std::to_string(OAR_MAX_NDIM));
  }
  oar::DType dtype = oar_dtype(dl.dtype);
  oar::Shape shape(dl.shape, dl.shape + dl.ndim);
  // A strided producer tensor (non-negative strides) becomes a strided oar
  // tensor over the span of memory it reaches (Note [Views] in
  // core/src/tensor/view.cpp).
  oar::Shape strides;
  bool row_major = true;
  int64_t extent = oar::shape_numel(shape) == 0 ? 0 : 1;  // elements the tensor reaches
  if (dl.strides) {
    int64_t expected = 1;
    for (int32_t i = dl.ndim - 1; i >= 0; --i) {
      if (dl.strides[i] < 0) {
        throw py::value_error("from_dlpack: the tensor of shape " + oar::shape_str(shape) + " has the negative stride " +
                              std::to_string(dl.strides[i]) + " in dim " + std::to_string(i) +
                              "; oar shares memory with non-negative strides only (copy it, e.g. "
                              "numpy.ascontiguousarray, or use oar.to_tensor)");
      }
      row_major = row_major && (shape[i] == 1 || dl.strides[i] == expected);
      expected *= shape[i];
    }
    strides.assign(dl.strides, dl.strides + dl.ndim);
    if (extent) {
      for (int32_t i = 0; i < dl.ndim; ++i) extent += (shape[i] - 1) * strides[i];
    }
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  oar::Device cpu = oar::parse_device("cpu");
  // From here the tensor owns the producer's memory: the capsule is marked
  // used, and `owner` calls the producer's deleter exactly once (also when
  // from_external refuses). The deleter may touch Python objects (numpy's
  // does) and the last tensor may die on any thread: it runs under the GIL.
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (!mt->deleter || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    mt->deleter(mt);
  });
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  if (row_major) return oar::Tensor::from_external(data, shape, dtype, cpu, std::move(owner));
  oar::Tensor span = oar::Tensor::from_external(data, {extent}, dtype, cpu, std::move(owner));
  auto impl = std::make_shared<oar::TensorImpl>(span.impl());
  impl->shape = shape;
  impl->strides = strides;
  return oar::Tensor(std::move(impl));
}

}  // namespace

void bind_dlpack(py::module_& m) {
  m.def("to_dlpack", &to_dlpack, py::arg("x"),
        "A DLPack capsule sharing a cpu tensor's memory, with its strides (the tensor stays alive while it is used).");
  m.def("from_dlpack", &from_dlpack, py::arg("capsule"),
        "A cpu tensor sharing the memory of a DLPack capsule's tensor, strides included (consumes the capsule).");
}

}  // namespace oar_py
