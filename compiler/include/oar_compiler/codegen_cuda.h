/// \file codegen_cuda.h
/// CUDA C for a loop-IR Kernel (loop_ir.h), compiled to PTX through NVRTC
/// (nvrtc.h), and the launch geometry a host picks for given dim values.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "oar_compiler/loop_ir.h"

namespace oar::compiler {

/// CUDA C source (no #include: NVRTC needs no toolkit header) defining
///   extern "C" __global__ void <symbol>(T0* b0, ..., Tn* bn, long long d0, ..., long long dm)
/// with the kernel's inputs then outputs as typed pointers (f32 float,
/// f64 double, f16/bf16 unsigned short bits, bool unsigned char, ints their
/// C type) and the dim symbol values after them. Note [CUDA schedules] in
/// codegen_cuda.cpp: elementwise kernels are grid-stride loops over tiles
/// of cuda_vector_width() elements of the innermost dim; row_reduce kernels
/// give each block a row (grid-stride over rows) with warp-shuffle plus
/// shared-memory reductions; col_reduce kernels give each thread a column.
/// Contiguous loads and stores of aligned tiles are vector accesses (16
/// bytes); f16/bf16 are converted by bits and everything accumulates in f32
/// (f64 for f64). The DimChecks are not in the kernel: the host calls
/// cuda_check_dims() before launching. Throws oar::Error naming the kernel
/// when it holds an op the CUDA backend cannot express.
std::string emit_cuda(const Kernel& kernel, const std::string& symbol);

/// Elements per vector tile of the kernel's innermost loop: 16 bytes over
/// the smallest buffer element (f32: 4, bf16: 8, f64: 2), at most 8.
int cuda_vector_width(const Kernel& kernel);

/// Launch geometry for one call.
struct CudaLaunch {
  unsigned grid = 0;   ///< blocks (x); 0: nothing to do, do not launch
  unsigned block = 0;  ///< threads per block (x), a multiple of 32
};

/// The grid and block for the kernel at these dim values (size buckets
/// chosen here at run time: a row_reduce block has 32..512 threads by row
/// length, an elementwise grid covers the tiles up to a cap, the loops
/// stride over the rest), so a new size never needs a new compile.
CudaLaunch cuda_launch_config(const Kernel& kernel, std::span<const int64_t> dims);

/// kKernelOk when every DimCheck holds at these dim values, else
/// kKernelShapeMismatch (run the group unfused).
int cuda_check_dims(const Kernel& kernel, std::span<const int64_t> dims);

}  // namespace oar::compiler
