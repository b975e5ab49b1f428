/// \file tensor.h
/// Tensor: a shared handle to device memory with a dtype, shape and strides.
#pragma once

#include <atomic>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oar/device.h"
#include "oar/dtype.h"
#include "oar/error.h"

namespace oar {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar shape []).
int64_t shape_numel(const Shape& shape);
/// "[2, 3]".
std::string shape_str(const Shape& shape);
/// Row-major strides, in elements.
Shape contiguous_strides(const Shape& shape);

/// The one check of a shape that is to describe a tensor of `dtype`
/// (Note [Checked shapes]): at most OAR_MAX_NDIM dims, none negative, and
/// an element count and byte size that fit int64 (checked multiplication).
/// Returns the byte size; throws oar::Error naming `op` and the shape.
uint64_t checked_shape_bytes(std::string_view op, const Shape& shape, DType dtype);

/// A block of device memory from the caching allocator; returned to it when
/// the last tensor using it goes away.
class CachingAllocator;

class Storage {
 public:
  Storage(Device device, void* data, uint64_t bytes, CachingAllocator* allocator)
      : device_(std::move(device)), data_(data), bytes_(bytes), allocator_(allocator) {}
  /// Memory oar did not allocate (a numpy array, a DLPack tensor): `owner`
  /// keeps it alive and is released with the storage.
  Storage(Device device, void* data, uint64_t bytes, std::shared_ptr<void> owner)
      : device_(std::move(device)), data_(data), bytes_(bytes), allocator_(nullptr), owner_(std::move(owner)) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  const Device& device() const { return device_; }
  void* data() const { return data_; }  ///< device pointer: not host-readable in general
  uint64_t bytes() const { return bytes_; }
  /// The version counter (Note [Version counter] in core/src/tensor/inplace.cpp):
  /// bumped by every in-place write into this memory.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Device device_;
  void* data_;  // owned: allocated from allocator_
  uint64_t bytes_;
  CachingAllocator* allocator_;  // not owned: the device's allocator, lives for the process; null for external memory
  std::shared_ptr<void> owner_;  // owned: keeps external memory alive (null for allocator memory)
  std::atomic<uint64_t> version_{0};
};

struct AutogradMeta;
/// Set on the symbolic tensors of a static-mode trace (oar/ir/trace.h).
struct SymbolicInfo;
/// Set on a distributed tensor (oar/dist_tensor.h): its mesh, placements
/// and this rank's local piece.
struct DistInfo;

/// The state behind a Tensor handle.
struct TensorImpl {
  std::shared_ptr<Storage> storage;      // null for a tensor of zero bytes
  int64_t byte_offset = 0;
  Shape shape;
  Shape strides;                         // in elements
  DType dtype = DType::f32;
  Device device;
  std::shared_ptr<AutogradMeta> autograd;  // null unless autograd is involved
  std::shared_ptr<SymbolicInfo> symbol;    // non-null for a symbolic tensor (no storage)
  std::shared_ptr<DistInfo> dist;          // non-null for a distributed tensor: shape is the GLOBAL
                                           // shape, storage is null, the data is dist->local
  const char* view_op = nullptr;           // not owned (an OpDef's name): the op whose eager view this is
  uint64_t history_version = 0;            // the storage's version when `autograd` got its history
                                           // (Note [Version counter] in core/src/tensor/inplace.cpp)
  std::shared_ptr<const std::string> overwritten;  // non-null: a saved tensor written in place after it
                                                   // was saved; every op refuses it with this sentence
};

/// A tensor: a cheap, shared handle (copying a Tensor shares its data, like
/// torch.Tensor or paddle.Tensor). Tensors made by kernels are contiguous;
/// in eager mode transpose, slice, broadcast_to, diagonal and reshape return
/// views sharing their input's storage with their own strides and byte
/// offset (Note [Views] in core/src/tensor/view.cpp).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /// Copies shape_numel(shape) host elements of `dtype` to a new tensor on `device`.
  static Tensor from_host(const void* data, const Shape& shape, DType dtype, const Device& device);
  /// A tensor from a host vector, on `device` (default: the default device).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, const Device& device);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  /// A contiguous tensor over `bytes` of existing host memory at `data`,
  /// shared, not copied: `owner` keeps the memory alive while any tensor uses
  /// it. `device` must be host-addressable (OAR_DEVICE_HOST_ADDRESSABLE, e.g.
  /// cpu) and `data` aligned to the dtype's size; throws oar::Error otherwise.
  static Tensor from_external(void* data, const Shape& shape, DType dtype, const Device& device,
                              std::shared_ptr<void> owner);
  /// An uninitialized contiguous tensor.
  static Tensor empty(const Shape& shape, DType dtype, const Device& device);

  bool defined() const { return impl_ != nullptr; }
  /// True for a symbolic tensor of a static-mode trace: it has a dtype and
  /// an example shape but no values.
  bool is_symbolic() const { return impl_ && impl_->symbol != nullptr; }
  DType dtype() const { return impl().dtype; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t numel() const { return shape_numel(impl().shape); }
  const Device& device() const { return impl().device; }
  /// True when the elements lie in row-major order without gaps (the
  /// strides of size-1 dims are ignored, as are those of an empty tensor);
  /// the data may still start at a byte offset into the storage.
  bool is_contiguous() const;
  /// Offset of element 0 from the start of the storage, in bytes.
  int64_t byte_offset() const { return impl().byte_offset; }
  /// True for an eager view made by transpose, slice, broadcast_to,
  /// diagonal or reshape (or a view of one) (Note [Views]).
  bool is_view() const { return impl().view_op != nullptr; }
  /// The name of the op that made this view ("" when not a view).
  std::string_view view_op() const { return impl().view_op ? impl().view_op : ""; }

  /// Waits for pending work on this tensor's device and copies its elements
  /// to `dst` (numel * dtype_size bytes).
  void copy_to_host(void* dst) const;
  /// The host address of element 0 when the host can read this tensor's
  /// memory in place (a device flagged OAR_DEVICE_HOST_ADDRESSABLE such as
  /// `cpu`), after waiting for pending work on its device; nullptr otherwise
  /// (and for a tensor of zero bytes). Element i of a strided view lies at
  /// sum(i_d * strides()[d]) elements from it. The pointer is valid while a
  /// Tensor sharing the storage lives.
  void* host_data() const;
  /// Elements as a host vector; T must match dtype() exactly.
  template <typename T>
  std::vector<T> to_vector() const;
  /// The value of a one-element tensor converted to double (an error for a
  /// complex dtype: use item_complex).
  double item() const;
  /// The value of a one-element tensor of any dtype as a complex number
  /// (imaginary part 0 for a real dtype).
  std::complex<double> item_complex() const;
  /// A copy on another device (staged through host memory when the plugins
  /// offer no direct path). Same device: returns *this.
  Tensor to(const Device& device) const;
  /// A contiguous tensor with the same values: this one if already so, else
  /// the eager `copy` op of this view (recorded for autograd).
  Tensor contiguous() const;
  /// The version counter of the storage: the number of in-place writes
  /// into it so far (0 for a tensor of zero bytes).
  uint64_t version() const;
  /// Writes `src`, broadcast to this tensor's shape and cast to its dtype,
  /// into this tensor's own memory through its strides: every tensor
  /// sharing the storage (views, detach()) sees the values. Bumps the
  /// storage's version; not recorded for autograd (Note [In-place writes]
  /// in core/src/tensor/inplace.cpp).
  void assign_(const Tensor& src) const;
  /// "Tensor(shape=[2], dtype=float32, device=cpu:0, values=[1, 2])".
  std::string str(int64_t max_values = 16) const;

  // ---- autograd (see autograd.h) ----
  /// True when gradients flow to this tensor (Paddle: not stop_gradient).
  bool requires_grad() const;
  /// Marks a leaf as requiring grad; returns *this. Throws on a non-leaf.
  Tensor& set_requires_grad(bool requires_grad = true);
  /// True unless the tensor was produced by a recorded op.
  bool is_leaf() const;
  /// Gradient accumulated by backward() into a leaf (undefined if none).
  Tensor grad() const;
  /// Resets the accumulated gradient.
  void clear_grad();
  /// Backpropagates from this tensor: a scalar, or any shape with `grad`.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false, bool create_graph = false) const;
  /// A tensor sharing the data with no autograd history.
  Tensor detach() const;
  /// Calls `hook` with the gradient computed for this tensor; a defined
  /// result replaces the gradient.
  void register_hook(std::function<Tensor(const Tensor&)> hook);
  /// Name of the op that produced this tensor ("" for a leaf).
  std::string grad_fn_name() const;

  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace oar
