// The few CUDA driver API entry points the GPU runner uses, opened with
// dlopen("libcuda.so.1") so that the runner builds and starts on machines
// without the driver (it then reports "no CUDA device" and exits).
//
// Only the C ABI of the driver is declared here (opaque handles, int result
// codes), with the versioned symbol names cuda.h maps to (cuMemAlloc ->
// cuMemAlloc_v2, ...), so no CUDA header is needed to build it.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <string>

namespace oar::compiler::tools {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

/// CU_DEVICE_ATTRIBUTE_* values used by the runner (cuda.h's enum).
enum : int {
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrMultiprocessorCount = 16,
};

/// The driver's entry points; `load` fills them or says why not.
struct CudaDriver {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);

  /// Opens libcuda.so.1 (or `OAR_LIBCUDA`) and resolves every entry point;
  /// false with `*why_not` when the library or a symbol is missing.
  bool load(std::string* why_not) {
    const char* env = std::getenv("OAR_LIBCUDA");
    const char* name = env && *env ? env : "libcuda.so.1";
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *why_not = std::string("the CUDA driver library ") + name + " could not be opened: " + dlerror();
      return false;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* sym) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, sym));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + sym;
    };
    get(Init, "cuInit");
    get(DriverGetVersion, "cuDriverGetVersion");
    get(GetErrorString, "cuGetErrorString");
    get(DeviceGetCount, "cuDeviceGetCount");
    get(DeviceGet, "cuDeviceGet");
    get(DeviceGetName, "cuDeviceGetName");
    get(DeviceGetAttribute, "cuDeviceGetAttribute");
    get(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(CtxSetCurrent, "cuCtxSetCurrent");
    get(CtxSynchronize, "cuCtxSynchronize");
    get(MemAlloc, "cuMemAlloc_v2");
    get(MemFree, "cuMemFree_v2");
    get(MemcpyHtoD, "cuMemcpyHtoD_v2");
    get(MemcpyDtoH, "cuMemcpyDtoH_v2");
    get(MemcpyDtoD, "cuMemcpyDtoD_v2");
    get(ModuleLoadDataEx, "cuModuleLoadDataEx");
    get(ModuleGetFunction, "cuModuleGetFunction");
    get(ModuleUnload, "cuModuleUnload");
    get(LaunchKernel, "cuLaunchKernel");
    get(EventCreate, "cuEventCreate");
    get(EventRecord, "cuEventRecord");
    get(EventSynchronize, "cuEventSynchronize");
    get(EventElapsedTime, "cuEventElapsedTime");
    get(EventDestroy, "cuEventDestroy_v2");
    if (!missing.empty()) {
      *why_not = std::string(name) + " lacks the driver entry points " + missing;
      return false;
    }
    return true;
  }

  /// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2)" for a failed call.
  std::string describe(const char* what, CUresult rc) const {
    const char* text = nullptr;
    if (GetErrorString) GetErrorString(rc, &text);
    return std::string(what) + ": " + (text ? text : "unknown error") + " (" + std::to_string(rc) + ")";
  }
};

}  // namespace oar::compiler::tools
