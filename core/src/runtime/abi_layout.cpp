// Compile-time pins of the plugin ABI's struct layouts (x86-64 and other
// LP64 targets). Note [Pinned ABI layouts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Plugins built against an older header must keep working (ABI.md, rule 2:
// fields are only appended). Nothing in C stops an edit from reordering or
// retyping a field, and such an edit compiles, loads and corrupts memory at
// run time. So every field of every struct of ABI 1.0 is pinned here to the
// byte offset it has in the frozen 1.0 header (tests/abi_1_0/oar/
// plugin_api.h), and each struct's 1.0 size to OAR_STRUCT_SIZE up to its
// 1.0 last field: a reorder, a retyped field or an insertion before the end
// fails to build the core. The numbers were printed by a C program compiled
// against the frozen header (offsetof/sizeof per field).
//
// Fields appended in 1.1 are pinned in the second part, and every struct's
// real last field is checked against sizeof, so OAR_STRUCT_SIZE(T, last)
// as producers write it is the whole struct. A new minor appends its own
// part; the 1.0 part never changes.
#include <cstddef>

#include "oar/plugin_api.h"

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))

#define OAR_PIN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field " moved: ABI layouts are append-only")
#define OAR_PIN_SIZE_1_0(type, last_field, bytes)             \
  static_assert(OAR_STRUCT_SIZE(type, last_field) == (bytes), \
                #type " up to its 1.0 last field " #last_field " changed size: ABI layouts are append-only")
#define OAR_PIN_LAST(type, last_field)                        \
  static_assert(OAR_STRUCT_SIZE(type, last_field) == sizeof(type), \
                #type ": " #last_field " is not its last field (update OAR_STRUCT_SIZE users)")

// ---- ABI 1.0 (frozen) ----

// OarTensorView: 160 bytes in 1.0, last field strides.
OAR_PIN_SIZE_1_0(OarTensorView, strides, 160);
OAR_PIN(OarTensorView, struct_size, 0);
OAR_PIN(OarTensorView, data, 8);
OAR_PIN(OarTensorView, byte_offset, 16);
OAR_PIN(OarTensorView, dtype, 24);
OAR_PIN(OarTensorView, ndim, 28);
OAR_PIN(OarTensorView, shape, 32);
OAR_PIN(OarTensorView, strides, 96);

// OarKernelContext: 72 bytes in 1.0, last field op_name.
OAR_PIN_SIZE_1_0(OarKernelContext, op_name, 72);
OAR_PIN(OarKernelContext, struct_size, 0);
OAR_PIN(OarKernelContext, device, 8);
OAR_PIN(OarKernelContext, stream, 16);
OAR_PIN(OarKernelContext, num_inputs, 24);
OAR_PIN(OarKernelContext, inputs, 32);
OAR_PIN(OarKernelContext, num_outputs, 40);
OAR_PIN(OarKernelContext, outputs, 48);
OAR_PIN(OarKernelContext, attrs, 56);
OAR_PIN(OarKernelContext, op_name, 64);

// OarKernelDesc: 56 bytes in 1.0, last field fn.
OAR_PIN_SIZE_1_0(OarKernelDesc, fn, 56);
OAR_PIN(OarKernelDesc, struct_size, 0);
OAR_PIN(OarKernelDesc, num_input_dtypes, 8);
OAR_PIN(OarKernelDesc, input_dtypes, 16);
OAR_PIN(OarKernelDesc, num_output_dtypes, 24);
OAR_PIN(OarKernelDesc, output_dtypes, 32);
OAR_PIN(OarKernelDesc, flags, 40);
OAR_PIN(OarKernelDesc, fn, 48);

// OarDeviceProperties: 224 bytes in 1.0, last field flags.
OAR_PIN_SIZE_1_0(OarDeviceProperties, flags, 224);
OAR_PIN(OarDeviceProperties, struct_size, 0);
OAR_PIN(OarDeviceProperties, name, 8);
OAR_PIN(OarDeviceProperties, isa, 136);
OAR_PIN(OarDeviceProperties, total_memory, 200);
OAR_PIN(OarDeviceProperties, free_memory, 208);
OAR_PIN(OarDeviceProperties, compute_units, 216);
OAR_PIN(OarDeviceProperties, flags, 220);

// OarMemoryStats: 32 bytes in 1.0, last field total.
OAR_PIN_SIZE_1_0(OarMemoryStats, total, 32);
OAR_PIN(OarMemoryStats, struct_size, 0);
OAR_PIN(OarMemoryStats, used, 8);
OAR_PIN(OarMemoryStats, free, 16);
OAR_PIN(OarMemoryStats, total, 24);

// OarDeviceApi: 368 bytes in 1.0, last field shutdown.
OAR_PIN_SIZE_1_0(OarDeviceApi, shutdown, 368);
OAR_PIN(OarDeviceApi, struct_size, 0);
OAR_PIN(OarDeviceApi, device_type, 8);
OAR_PIN(OarDeviceApi, plugin_version, 16);
OAR_PIN(OarDeviceApi, priority, 24);
OAR_PIN(OarDeviceApi, impl, 32);
OAR_PIN(OarDeviceApi, device_count, 40);
OAR_PIN(OarDeviceApi, device_properties, 48);
OAR_PIN(OarDeviceApi, set_device, 56);
OAR_PIN(OarDeviceApi, synchronize_device, 64);
OAR_PIN(OarDeviceApi, malloc, 72);
OAR_PIN(OarDeviceApi, free, 80);
OAR_PIN(OarDeviceApi, memcpy_h2d, 88);
OAR_PIN(OarDeviceApi, memcpy_d2h, 96);
OAR_PIN(OarDeviceApi, memcpy_d2d, 104);
OAR_PIN(OarDeviceApi, memcpy_h2d_async, 112);
OAR_PIN(OarDeviceApi, memcpy_d2h_async, 120);
OAR_PIN(OarDeviceApi, memcpy_d2d_async, 128);
OAR_PIN(OarDeviceApi, memcpy_peer, 136);
OAR_PIN(OarDeviceApi, memset_async, 144);
OAR_PIN(OarDeviceApi, memory_stats, 152);
OAR_PIN(OarDeviceApi, stream_create, 160);
OAR_PIN(OarDeviceApi, stream_destroy, 168);
OAR_PIN(OarDeviceApi, stream_synchronize, 176);
OAR_PIN(OarDeviceApi, stream_query, 184);
OAR_PIN(OarDeviceApi, event_create, 192);
OAR_PIN(OarDeviceApi, event_destroy, 200);
OAR_PIN(OarDeviceApi, event_record, 208);
OAR_PIN(OarDeviceApi, event_synchronize, 216);
OAR_PIN(OarDeviceApi, event_query, 224);
OAR_PIN(OarDeviceApi, stream_wait_event, 232);
OAR_PIN(OarDeviceApi, comm_unique_id_size, 240);
OAR_PIN(OarDeviceApi, comm_unique_id, 248);
OAR_PIN(OarDeviceApi, comm_init, 256);
OAR_PIN(OarDeviceApi, comm_destroy, 264);
OAR_PIN(OarDeviceApi, comm_abort, 272);
OAR_PIN(OarDeviceApi, all_reduce, 280);
OAR_PIN(OarDeviceApi, all_gather, 288);
OAR_PIN(OarDeviceApi, reduce_scatter, 296);
OAR_PIN(OarDeviceApi, broadcast, 304);
OAR_PIN(OarDeviceApi, send, 312);
OAR_PIN(OarDeviceApi, recv, 320);
OAR_PIN(OarDeviceApi, all_to_all, 328);
OAR_PIN(OarDeviceApi, barrier, 336);
OAR_PIN(OarDeviceApi, group_start, 344);
OAR_PIN(OarDeviceApi, group_end, 352);
OAR_PIN(OarDeviceApi, shutdown, 360);

// OarHostApi: 160 bytes in 1.0, last field get_option.
OAR_PIN_SIZE_1_0(OarHostApi, get_option, 160);
OAR_PIN(OarHostApi, struct_size, 0);
OAR_PIN(OarHostApi, abi_major, 8);
OAR_PIN(OarHostApi, abi_minor, 12);
OAR_PIN(OarHostApi, host, 16);
OAR_PIN(OarHostApi, register_device, 24);
OAR_PIN(OarHostApi, register_kernel, 32);
OAR_PIN(OarHostApi, log, 40);
OAR_PIN(OarHostApi, set_error, 48);
OAR_PIN(OarHostApi, attr_kind, 56);
OAR_PIN(OarHostApi, attr_int, 64);
OAR_PIN(OarHostApi, attr_float, 72);
OAR_PIN(OarHostApi, attr_bool, 80);
OAR_PIN(OarHostApi, attr_string, 88);
OAR_PIN(OarHostApi, attr_int_array, 96);
OAR_PIN(OarHostApi, attr_float_array, 104);
OAR_PIN(OarHostApi, store_set, 112);
OAR_PIN(OarHostApi, store_get, 120);
OAR_PIN(OarHostApi, store_add, 128);
OAR_PIN(OarHostApi, store_wait, 136);
OAR_PIN(OarHostApi, store_free, 144);
OAR_PIN(OarHostApi, get_option, 152);

// OarPluginInfo: 24 bytes in 1.0, last field name.
OAR_PIN_SIZE_1_0(OarPluginInfo, name, 24);
OAR_PIN(OarPluginInfo, struct_size, 0);
OAR_PIN(OarPluginInfo, abi_major, 8);
OAR_PIN(OarPluginInfo, abi_minor, 12);
OAR_PIN(OarPluginInfo, name, 16);
// ---- ABI 1.1 (appended fields) ----

OAR_PIN(OarKernelContext, device_type, 72);
OAR_PIN(OarKernelDesc, priority, 56);
OAR_PIN(OarKernelDesc, accepts, 64);
OAR_PIN(OarHostApi, scratch_alloc, 160);
OAR_PIN(OarHostApi, scratch_free, 168);

// ---- ABI 1.2 (appended fields) ----

OAR_PIN(OarDeviceApi, reduce, 368);
OAR_PIN(OarDeviceApi, scatter, 376);
OAR_PIN(OarDeviceApi, all_to_allv, 384);

// ---- the current last field of every struct ----

OAR_PIN_LAST(OarTensorView, strides);
OAR_PIN_LAST(OarKernelContext, device_type);
OAR_PIN_LAST(OarKernelDesc, accepts);
OAR_PIN_LAST(OarDeviceProperties, flags);
OAR_PIN_LAST(OarMemoryStats, total);
OAR_PIN_LAST(OarDeviceApi, all_to_allv);
OAR_PIN_LAST(OarHostApi, scratch_free);
OAR_PIN_LAST(OarPluginInfo, name);

// The first four fields of OarHostApi never move (a plugin reads abi_major
// before anything else): pinned above, restated for the reader.
static_assert(offsetof(OarHostApi, abi_major) == sizeof(size_t), "OarHostApi.abi_major must follow struct_size");

#undef OAR_PIN
#undef OAR_PIN_SIZE_1_0
#undef OAR_PIN_LAST

#endif  // LP64
