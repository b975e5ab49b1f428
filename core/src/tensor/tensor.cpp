// Tensor: creation from host data, copies between host and devices, printing.
#include "oar/tensor.h"

#include <algorithm>
#include <array>
#include <complex>
#include <cmath>
#include <cstring>
#include <sstream>

#include "dispatch/device_context.h"
#include "oar/builder.h"
#include "oar/dist_tensor.h"
#include "oar/op.h"
#include "oar/plugin_util.h"
#include "oar/runtime.h"
#include "tensor/view.h"

namespace oar {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Only a tensor with no elements (a 0 dim beside huge ones) can overflow
    // here; its strides are never used, so they saturate (UB before: UBSan).
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s)) s = INT64_MAX;
  }
  return strides;
}

// Note [Checked shapes]
// A shape becomes memory only through sizes computed from it, so a shape
// whose element count or byte size wraps around (zeros([1 << 62]) as f32 is
// 2^64 bytes, i.e. 0) would allocate too little and let kernels write out
// of bounds, and a rank above OAR_MAX_NDIM does not fit OarTensorView.
// checked_shape_bytes is the one place that checks: allocate_tensor calls
// it for every tensor, and infer_meta (op_registry.cpp) for every output of
// every meta rule, so eager ops, traces, the verifier and the executor's
// shape inference refuse such a shape at the op that produced it. A shape
// with a zero dim has no elements, whatever its other dims.
uint64_t checked_shape_bytes(std::string_view op, const Shape& shape, DType dtype) {
  auto what = [&] { return std::string(op) + ": the shape " + shape_str(shape) + " of " + std::string(dtype_name(dtype)); };
  OAR_CHECK_ARG(shape.size() <= OAR_MAX_NDIM, what() + " has " + std::to_string(shape.size()) +
                                                  " dims; at most " + std::to_string(OAR_MAX_NDIM) +
                                                  " are supported");
  bool empty = false;
  for (int64_t d : shape) {
    OAR_CHECK_ARG(d >= 0, what() + " has the negative dim " + std::to_string(d));
    empty = empty || d == 0;
  }
  if (empty) return 0;
  int64_t numel = 1;
  int64_t bytes = 0;
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
  overflow = overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(dtype)), &bytes);
  OAR_CHECK_ARG(!overflow, what() + " has more elements or bytes than fit in 64 bits (at most 2^63 - 1)");
  return static_cast<uint64_t>(bytes);
}

Storage::~Storage() {
  if (allocator_) allocator_->release(data_);
}

DeviceBackend& backend_of(const Device& device) { return Runtime::global().state().backend(device); }

Tensor allocate_tensor(const Shape& shape, DType dtype, const Device& device) {
  uint64_t bytes = checked_shape_bytes("tensor", shape, dtype);
  DeviceBackend& backend = backend_of(device);
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->device = device;
  if (bytes > 0) {
    CachingAllocator* allocator = backend.slot(device.index).allocator.get();
    void* data = allocator->allocate(bytes);
    impl->storage = std::make_shared<Storage>(device, data, bytes, allocator);
  }
  return Tensor(std::move(impl));
}

void sync_compute_stream(DeviceBackend& backend, int device) {
  host_clear_error();
  backend.check(backend.api.stream_synchronize(backend.api.impl, device, backend.slot(device).stream),
                "stream_synchronize");
}

OarTensorView make_view(const Tensor& t, int ndim) {
  const TensorImpl& impl = t.impl();
  int own = static_cast<int>(impl.shape.size());
  if (ndim < own) ndim = own;
  OarTensorView v{};
  v.struct_size = sizeof v;
  v.data = impl.storage ? impl.storage->data() : nullptr;
  v.byte_offset = impl.byte_offset;
  v.dtype = static_cast<int32_t>(impl.dtype);
  v.ndim = ndim;
  int pad = ndim - own;
  int64_t stride = shape_numel(impl.shape);
  for (int i = 0; i < pad; ++i) {
    v.shape[i] = 1;
    v.strides[i] = std::max<int64_t>(stride, 1);
  }
  for (int i = 0; i < own; ++i) {
    v.shape[pad + i] = impl.shape[static_cast<size_t>(i)];
    v.strides[pad + i] = impl.strides[static_cast<size_t>(i)];
  }
  return v;
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error(ErrorCode::invalid_argument, "tensor: this tensor is undefined (default-constructed)");
  return *impl_;
}

bool Tensor::is_contiguous() const {
  const TensorImpl& im = impl();
  if (std::find(im.shape.begin(), im.shape.end(), 0) != im.shape.end()) return true;
  int64_t expected = 1;
  for (size_t d = im.shape.size(); d-- > 0;) {
    if (im.shape[d] == 1) continue;
    if (im.strides[d] != expected) return false;
    expected *= im.shape[d];
  }
  return true;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  return allocate_tensor(shape, dtype, device);
}

Tensor Tensor::from_host(const void* data, const Shape& shape, DType dtype, const Device& device) {
  Tensor t = allocate_tensor(shape, dtype, device);
  uint64_t bytes = static_cast<uint64_t>(t.numel()) * dtype_size(dtype);
  if (bytes == 0) return t;
  DeviceBackend& b = backend_of(device);
  OarStream_t stream = b.slot(device.index).stream;
  void* dst = static_cast<char*>(t.impl().storage->data());
  host_clear_error();
  if (b.api.memcpy_h2d_async) {
    b.check(b.api.memcpy_h2d_async(b.api.impl, device.index, dst, data, bytes, stream), "memcpy_h2d_async");
    sync_compute_stream(b, device.index);  // `data` must outlive the copy
  } else {
    sync_compute_stream(b, device.index);  // the block may still be read by queued kernels
    b.check(b.api.memcpy_h2d(b.api.impl, device.index, dst, data, bytes), "memcpy_h2d");
  }
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, const Device& device) {
  OAR_CHECK_ARG(static_cast<int64_t>(values.size()) == shape_numel(shape),
            "from_vector: " + std::to_string(values.size()) + " values do not fill shape " + shape_str(shape) +
                " (" + std::to_string(shape_numel(shape)) + " elements)");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_host(bytes.data(), shape, DType::boolean, device);
  } else {
    return from_host(values.data(), shape, dtype_of<T>(), device);
  }
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  return from_vector(values, shape, oar::default_device());
}

void Tensor::copy_to_host(void* dst) const {
  const TensorImpl& im = impl();
  OAR_CHECK_ARG(!im.dist, "tensor: this is a distributed tensor (global shape " + shape_str(im.shape) +
                             ") with no storage of its own; read this rank's piece with dist::local_value or the "
                             "whole value with dist::unshard");
  OAR_CHECK_ARG(!im.symbol, "tensor: this is a symbolic tensor of a to_static trace (shape " + shape_str(im.shape) +
                                ", " + std::string(dtype_name(im.dtype)) +
                                "); its values are not known while tracing, so they cannot be read or copied");
  uint64_t bytes = static_cast<uint64_t>(numel()) * dtype_size(im.dtype);
  if (bytes == 0) return;
  if (!is_contiguous()) {
    materialize_contiguous(*this).copy_to_host(dst);
    return;
  }
  DeviceBackend& b = backend_of(im.device);
  const void* src = static_cast<const char*>(im.storage->data()) + im.byte_offset;
  host_clear_error();
  if (b.api.memcpy_d2h_async) {
    b.check(b.api.memcpy_d2h_async(b.api.impl, im.device.index, dst, src, bytes, b.slot(im.device.index).stream),
            "memcpy_d2h_async");
    sync_compute_stream(b, im.device.index);
  } else {
    sync_compute_stream(b, im.device.index);
    b.check(b.api.memcpy_d2h(b.api.impl, im.device.index, dst, src, bytes), "memcpy_d2h");
  }
}

Tensor Tensor::from_external(void* data, const Shape& shape, DType dtype, const Device& device,
                             std::shared_ptr<void> owner) {
  uint64_t bytes = checked_shape_bytes("from_external", shape, dtype);
  DeviceBackend& b = backend_of(device);
  OAR_CHECK_ARG(b.host_addressable(device.index),
                "from_external: device " + device.str() +
                    " cannot use host memory in place (it is not host-addressable); copy the data with from_host");
  OAR_CHECK_ARG(bytes == 0 || data != nullptr, "from_external: the data pointer is null for a shape " + shape_str(shape));
  OAR_CHECK_ARG(reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) == 0,
                "from_external: the data of a " + std::string(dtype_name(dtype)) + " tensor must be aligned to " +
                    std::to_string(dtype_size(dtype)) + " bytes");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->device = device;
  if (bytes > 0) impl->storage = std::make_shared<Storage>(device, data, bytes, std::move(owner));
  return Tensor(std::move(impl));
}

void* Tensor::host_data() const {
  const TensorImpl& im = impl();
  if (im.symbol || im.dist || !im.storage || numel() == 0) return nullptr;
  DeviceBackend& b = backend_of(im.device);
  if (!b.host_addressable(im.device.index)) return nullptr;
  sync_compute_stream(b, im.device.index);
  return static_cast<char*>(im.storage->data()) + im.byte_offset;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  DType want = dtype_of<T>();
  OAR_CHECK_ARG(dtype() == want, "to_vector: the tensor has dtype " + std::string(dtype_name(dtype())) +
                                 " but " + std::string(dtype_name(want)) + " was requested; cast it first");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(numel()));
    copy_to_host(bytes.data());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(out.data());
    return out;
  }
}

#define OAR_INSTANTIATE(T)                                                                   \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&, const Device&); \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&);               \
  template std::vector<T> Tensor::to_vector<T>() const;
OAR_INSTANTIATE(float)
OAR_INSTANTIATE(double)
OAR_INSTANTIATE(int8_t)
OAR_INSTANTIATE(uint8_t)
OAR_INSTANTIATE(int32_t)
OAR_INSTANTIATE(int64_t)
OAR_INSTANTIATE(bool)
OAR_INSTANTIATE(std::complex<float>)
OAR_INSTANTIATE(std::complex<double>)
#undef OAR_INSTANTIATE

namespace {
// Host element i of raw bytes as double (a complex element: its real part).
double element_as_double(const std::vector<uint8_t>& raw, DType dtype, size_t i) {
  const uint8_t* p = raw.data() + i * dtype_size(dtype);
  auto read = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  };
  switch (dtype) {
    case DType::f32: return read(float{});
    case DType::f64: return read(double{});
    case DType::f16: { uint16_t h; std::memcpy(&h, p, 2); return oar_f16_to_f32(h); }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); return oar_bf16_to_f32(h); }
    case DType::i8: return read(int8_t{});
    case DType::u8: return read(uint8_t{});
    case DType::i32: return read(int32_t{});
    case DType::i64: return read(int64_t{});
    case DType::boolean: return *p ? 1.0 : 0.0;
    case DType::c64: return read(float{});    // the real part (the first of the pair)
    case DType::c128: return read(double{});  // the real part
  }
  return 0.0;
}

// Host element i of raw bytes as a complex number (imaginary 0 for reals).
std::complex<double> element_as_complex(const std::vector<uint8_t>& raw, DType dtype, size_t i) {
  const uint8_t* p = raw.data() + i * dtype_size(dtype);
  if (dtype == DType::c64) {
    std::complex<float> v;
    std::memcpy(&v, p, sizeof v);
    return {v.real(), v.imag()};
  }
  if (dtype == DType::c128) {
    std::complex<double> v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  return {element_as_double(raw, dtype, i), 0.0};
}

std::vector<uint8_t> host_bytes(const Tensor& t) {
  std::vector<uint8_t> raw(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.copy_to_host(raw.data());
  return raw;
}
}  // namespace

double Tensor::item() const {
  OAR_CHECK_ARG(!is_complex(dtype()), "item: the tensor has dtype " + std::string(dtype_name(dtype())) +
                                          "; a complex value needs item_complex() (or real() first)");
  OAR_CHECK_ARG(numel() == 1, "item: the tensor has shape " + shape_str(shape()) + " (" +
                              std::to_string(numel()) + " elements); item() needs exactly one");
  return element_as_double(host_bytes(*this), dtype(), 0);
}

std::complex<double> Tensor::item_complex() const {
  OAR_CHECK_ARG(numel() == 1, "item_complex: the tensor has shape " + shape_str(shape()) + " (" +
                                  std::to_string(numel()) + " elements); it needs exactly one");
  return element_as_complex(host_bytes(*this), dtype(), 0);
}

Tensor Tensor::to(const Device& device) const {
  const TensorImpl& im = impl();
  if (device == im.device) return *this;
  OAR_CHECK_ARG(!im.dist, "to: a distributed tensor moves with dist::reshard, not to()");
  OAR_CHECK_ARG(!im.symbol, "tensor: this is a symbolic tensor of a to_static trace (shape " + shape_str(im.shape) +
                                ", " + std::string(dtype_name(im.dtype)) +
                                "); its values are not known while tracing, so they cannot be read or copied");
  Runtime::global().check_device(device);
  Tensor src = is_contiguous() ? *this : materialize_contiguous(*this);
  uint64_t bytes = static_cast<uint64_t>(numel()) * dtype_size(im.dtype);
  DeviceBackend& from = backend_of(im.device);
  DeviceBackend& to = backend_of(device);
  if (&from == &to && from.api.memcpy_peer && bytes > 0) {
    Tensor dst = allocate_tensor(im.shape, im.dtype, device);
    sync_compute_stream(from, im.device.index);
    sync_compute_stream(to, device.index);  // the new block may still be read by queued kernels
    host_clear_error();
    from.check(from.api.memcpy_peer(from.api.impl, device.index, dst.impl().storage->data(), im.device.index,
                                    static_cast<const char*>(src.impl().storage->data()) + src.impl().byte_offset,
                                    bytes),
               "memcpy_peer");
    return dst;
  }
  std::vector<uint8_t> staging(bytes);
  src.copy_to_host(staging.data());
  return from_host(staging.data(), im.shape, im.dtype, device);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  // The copy op, so that gradients flow through it (eager even while a
  // to_static trace runs: this tensor has values).
  static const OpDef& copy = OpRegistry::instance().get("copy");
  std::array<Tensor, 1> in{*this};
  return EagerBuilder::instance().apply(copy, in, Attrs{}, nullptr).at(0);
}

std::string Tensor::str(int64_t max_values) const {
  if (!defined()) return "Tensor(undefined)";
  if (impl().dist) {  // oar/dist_tensor.h: the global shape, this rank's piece
    return "Tensor(shape=" + shape_str(shape()) + ", " + impl().dist->attr.str() +
           ", local=" + impl().dist->local.str(max_values) + ")";
  }
  std::ostringstream out;
  out << "Tensor(shape=" << shape_str(shape()) << ", dtype=" << dtype_name(dtype()) << ", device=" << device().str()
      << ", values=[";
  auto raw = host_bytes(*this);
  int64_t n = std::min(numel(), max_values);
  for (int64_t i = 0; i < n; ++i) {
    out << (i ? ", " : "");
    if (is_complex(dtype())) {  // 1+2j, 1-0.5j (Python's spelling)
      std::complex<double> v = element_as_complex(raw, dtype(), static_cast<size_t>(i));
      out << v.real() << (std::signbit(v.imag()) ? "-" : "+") << std::abs(v.imag()) << "j";
    } else {
      out << element_as_double(raw, dtype(), static_cast<size_t>(i));
    }
  }
  if (numel() > n) out << ", ...";
  out << "])";
  return out.str();
}

}  // namespace oar
