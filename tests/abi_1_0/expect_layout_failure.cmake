# Copies the live ABI header with memcpy_h2d and memcpy_d2h of OarDeviceApi
# swapped (same type, so only the offsets change) and compiles
# core/src/runtime/abi_layout.cpp against it: the build must fail naming
# the moved field, else the pins would not catch an accidental reorder.
file(READ "${HEADER}" text)
set(h2d "  OarStatus (*memcpy_h2d)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes);\n")
set(d2h "  OarStatus (*memcpy_d2h)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes);\n")
string(FIND "${text}" "${h2d}${d2h}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${HEADER} no longer declares memcpy_h2d right before memcpy_d2h; update this test")
endif()
string(REPLACE "${h2d}${d2h}" "${d2h}${h2d}" swapped "${text}")
file(WRITE "${WORK}/oar/plugin_api.h" "${swapped}")
execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -I "${WORK}" "${SOURCE}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "abi_layout.cpp compiled against a header with two OarDeviceApi fields swapped")
endif()
if(NOT err MATCHES "OarDeviceApi.memcpy_h2d moved: ABI layouts are append-only")
  message(FATAL_ERROR "abi_layout.cpp failed, but not with the pin's message:\n${err}")
endif()
# And the unmodified header compiles.
get_filename_component(include_dir "${HEADER}" DIRECTORY)
get_filename_component(include_dir "${include_dir}" DIRECTORY)
execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -I "${include_dir}" "${SOURCE}"
  RESULT_VARIABLE status ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "abi_layout.cpp does not compile against the live header:\n${err}")
endif()
