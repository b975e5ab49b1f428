/* oar plugin ABI — the one header a device plugin includes.
 *
 * Pure C99. Stability rules (see plugin_api/CHANGELOG.md and ABI.md):
 *  - Every struct begins with `size_t struct_size`, set by the producer to the
 *    size it was compiled with (OAR_STRUCT_SIZE). The consumer reads only the
 *    fields that lie within it. Fields are only ever appended.
 *  - Version = major.minor. A host loads a plugin whose major equals its own;
 *    any minor is accepted (older minors have shorter tables).
 *  - A null function pointer means "not supported". Each entry says
 *    (required) or (optional) and what the host does instead.
 *  - Enums travel as int32_t so struct layouts never change.
 *  - Errors: a status code plus a message set through OarHostApi.set_error.
 *  - Zero devices is success.
 */
#ifndef OAR_PLUGIN_API_H
#define OAR_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OAR_ABI_VERSION_MAJOR 1
#define OAR_ABI_VERSION_MINOR 3

/** Size of a struct up to and including its last field. */
#define OAR_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/** Name of the one symbol a plugin exports. */
#define OAR_PLUGIN_INIT_SYMBOL "oar_plugin_init"

/* ------------------------------------------------------------------ */
/* Status codes                                                        */
/* ------------------------------------------------------------------ */

/** Result of every ABI call. */
typedef int32_t OarStatus;
enum {
  OAR_OK = 0,
  OAR_ERROR_INVALID_ARGUMENT = 1,
  OAR_ERROR_OUT_OF_MEMORY = 2,
  OAR_ERROR_UNSUPPORTED = 3,
  OAR_ERROR_DEVICE = 4,
  OAR_ERROR_TIMEOUT = 5,
  OAR_ERROR_INTERNAL = 6,
  OAR_ERROR_NO_DEVICE = 7 /* driver or hardware missing: not a failure of init */
};

/* ------------------------------------------------------------------ */
/* Data types                                                          */
/* ------------------------------------------------------------------ */

/** Element types, passed as int32_t. */
typedef int32_t OarDType;
enum {
  OAR_DTYPE_F32 = 0,
  OAR_DTYPE_F64 = 1,
  OAR_DTYPE_F16 = 2,
  OAR_DTYPE_BF16 = 3,
  OAR_DTYPE_I8 = 4,
  OAR_DTYPE_U8 = 5,
  OAR_DTYPE_I32 = 6,
  OAR_DTYPE_I64 = 7,
  OAR_DTYPE_BOOL = 8, /* one byte, 0 or 1 */
  OAR_DTYPE_C64 = 9,  /* 1.3: two f32 (real, imaginary) interleaved, 8 bytes */
  OAR_DTYPE_C128 = 10, /* 1.3: two f64 (real, imaginary) interleaved, 16 bytes */
  OAR_DTYPE_COUNT = 11
};

/** Maximum rank of a tensor view. */
#define OAR_MAX_NDIM 8

/* ------------------------------------------------------------------ */
/* Opaque handles                                                      */
/* ------------------------------------------------------------------ */

/** A plugin's stream; NULL means the device's default stream. */
typedef struct OarStream_st* OarStream_t;
/** A plugin's event. */
typedef struct OarEvent_st* OarEvent_t;
/** A plugin's communicator. */
typedef struct OarComm_st* OarComm_t;
/** Attributes of one kernel call; read through OarHostApi.attr_*. */
typedef struct OarAttrs_st* OarAttrs_t;
/** The host's key-value store, for collective rendezvous. */
typedef struct OarStore_st* OarStore_t;

/* ------------------------------------------------------------------ */
/* Tensor views and kernels                                            */
/* ------------------------------------------------------------------ */

/** A view of a tensor in device memory. Strides are in elements. */
typedef struct OarTensorView {
  size_t struct_size;
  void* data;              /* base pointer returned by the device's malloc */
  int64_t byte_offset;     /* first element = (char*)data + byte_offset */
  int32_t dtype;           /* OarDType */
  int32_t ndim;            /* 0 <= ndim <= OAR_MAX_NDIM */
  int64_t shape[OAR_MAX_NDIM];
  int64_t strides[OAR_MAX_NDIM];
} OarTensorView;

/** Everything one kernel launch receives. Valid only during the call: a
 *  kernel that runs later (on a stream worker) copies what it needs. */
typedef struct OarKernelContext {
  size_t struct_size;
  int32_t device;               /* device index */
  OarStream_t stream;           /* stream to run on (NULL: default) */
  int32_t num_inputs;
  const OarTensorView* inputs;
  int32_t num_outputs;
  const OarTensorView* outputs; /* allocated by the host, shapes from the meta rule */
  OarAttrs_t attrs;             /* read with OarHostApi.attr_* */
  const char* op_name;
  /* --- 1.1 --- */
  const char* device_type;      /* the device type the kernel runs for */
} OarKernelContext;

/** A kernel. Returns OAR_OK or reports an error through set_error. */
typedef OarStatus (*OarKernelFn)(const OarKernelContext* ctx);

/** Kernel flags. */
enum {
  OAR_KERNEL_STRIDED = 1 << 0, /* accepts non-contiguous inputs; else the host
                                  passes contiguous views */
  OAR_KERNEL_INPLACE = 1 << 1, /* output may alias input 0 */
  OAR_KERNEL_STRIDED_OUTPUT = 1 << 2 /* writes through the output view's own
                                        strides and byte offset (an in-place
                                        write into a strided view: `copy`);
                                        else the host never passes it a
                                        non-contiguous output */
};

/** Dtype pattern accepted in a kernel signature besides concrete dtypes. */
enum {
  OAR_DTYPE_ANY = -1,       /* any dtype */
  OAR_DTYPE_ANY_FLOAT = -2  /* f32, f64, f16, bf16 (real floats only, never complex) */
};

/** A kernel registered for (device type, op name). `input_dtypes` and
 *  `output_dtypes` hold concrete OarDType values or the OAR_DTYPE_ANY*
 *  patterns; a null array accepts any dtype. A plugin may register kernels
 *  for a device type another plugin provides (a kernel-only plugin) when it
 *  declares `priority` (1.1); the host logs who overrides whom. */
typedef struct OarKernelDesc {
  size_t struct_size;
  int32_t num_input_dtypes;
  const int32_t* input_dtypes;
  int32_t num_output_dtypes;
  const int32_t* output_dtypes;
  uint32_t flags;             /* OAR_KERNEL_* */
  OarKernelFn fn;             /* (required) */
  /* --- 1.1 --- */
  /** Order among implementations of one op on one device type: higher is
   *  tried first; at equal priority the device owner's kernel comes first.
   *  Required (the field must be present) for a kernel registered for a
   *  device type another plugin provides; the owner's kernels may omit it
   *  (a 1.0 descriptor counts as priority 0). */
  int32_t priority;
  /** Optional (NULL: accepts every problem its dtypes match). Called with
   *  the launch's context before `fn` (data pointers may be NULL when the
   *  host asks ahead of time, e.g. while building a static program); returns
   *  nonzero when the kernel handles this problem (shapes, strides,
   *  attributes). When it returns 0 the host tries the next implementation
   *  in priority order, then the op's decomposition, then reports an error
   *  naming the op, device and shapes. Must not launch work or set errors. */
  int32_t (*accepts)(const OarKernelContext* ctx);
} OarKernelDesc;

/* ------------------------------------------------------------------ */
/* Device properties and memory stats                                  */
/* ------------------------------------------------------------------ */

/** Device property flags. */
enum {
  OAR_DEVICE_HOST_ADDRESSABLE = 1 << 0, /* host may read device pointers */
  OAR_DEVICE_SUPPORTS_BF16 = 1 << 1,
  OAR_DEVICE_SUPPORTS_F16 = 1 << 2,
  OAR_DEVICE_SUPPORTS_FP8 = 1 << 3
};

/** Properties of one device. */
typedef struct OarDeviceProperties {
  size_t struct_size;
  char name[128];
  char isa[64];              /* compute capability or ISA string */
  uint64_t total_memory;     /* bytes */
  uint64_t free_memory;      /* bytes */
  int32_t compute_units;
  uint32_t flags;            /* OAR_DEVICE_* */
} OarDeviceProperties;

/** Memory usage of one device, as the plugin sees it. */
typedef struct OarMemoryStats {
  size_t struct_size;
  uint64_t used;
  uint64_t free;
  uint64_t total;
} OarMemoryStats;

/* ------------------------------------------------------------------ */
/* Collectives                                                         */
/* ------------------------------------------------------------------ */

/** Reduction of a collective, passed as int32_t. */
typedef int32_t OarReduceOp;
enum {
  OAR_REDUCE_SUM = 0,
  OAR_REDUCE_PROD = 1,
  OAR_REDUCE_MAX = 2,
  OAR_REDUCE_MIN = 3
};

/* ------------------------------------------------------------------ */
/* The device table a plugin registers                                 */
/* ------------------------------------------------------------------ */

/** One device type's function table. Every function takes the `impl`
 *  pointer the plugin put in the table as its first argument. */
typedef struct OarDeviceApi {
  size_t struct_size;
  const char* device_type;     /* "cpu", "mock", "cuda", ... (required) */
  const char* plugin_version;  /* free-form, e.g. "0.1.0" */
  int32_t priority;            /* higher wins the default; cpu uses 0 */
  void* impl;                  /* plugin's own state, passed back */

  /* --- device --- */
  /** Number of devices; 0 is valid (required). */
  OarStatus (*device_count)(void* impl, int32_t* count);
  /** Fill properties of one device (required). */
  OarStatus (*device_properties)(void* impl, int32_t device, OarDeviceProperties* props);
  /** Make `device` current for the calling thread (optional: no-op). */
  OarStatus (*set_device)(void* impl, int32_t device);
  /** Wait for all work on a device (required). */
  OarStatus (*synchronize_device)(void* impl, int32_t device);

  /* --- memory --- */
  /** Allocate device memory; OAR_ERROR_OUT_OF_MEMORY past capacity (required). */
  OarStatus (*malloc)(void* impl, int32_t device, uint64_t bytes, uint64_t alignment, void** ptr);
  /** Free device memory; waits for no stream (host orders it) (required). */
  OarStatus (*free)(void* impl, int32_t device, void* ptr);
  /** Synchronous copies; they also wait for the default stream (required). */
  OarStatus (*memcpy_h2d)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes);
  OarStatus (*memcpy_d2h)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes);
  OarStatus (*memcpy_d2d)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes);
  /** Copies ordered on a stream (optional: the host synchronizes the stream
   *  and uses the synchronous copy). Host memory must stay valid until the
   *  stream reaches the copy. */
  OarStatus (*memcpy_h2d_async)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes, OarStream_t stream);
  OarStatus (*memcpy_d2h_async)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes, OarStream_t stream);
  OarStatus (*memcpy_d2d_async)(void* impl, int32_t device, void* dst, const void* src, uint64_t bytes, OarStream_t stream);
  /** Copy between two devices of this type (optional: the host stages
   *  through host memory). */
  OarStatus (*memcpy_peer)(void* impl, int32_t dst_device, void* dst, int32_t src_device, const void* src, uint64_t bytes);
  /** Fill bytes on a stream (optional: the host copies a filled host buffer). */
  OarStatus (*memset_async)(void* impl, int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream_t stream);
  /** Memory usage (optional: the host reports its own allocator stats only). */
  OarStatus (*memory_stats)(void* impl, int32_t device, OarMemoryStats* stats);

  /* --- streams and events --- */
  /** Streams (optional as a group: without them everything runs on the
   *  default stream, NULL, in order; a device with no real streams, like
   *  cpu, leaves them NULL instead of advertising no-ops). */
  OarStatus (*stream_create)(void* impl, int32_t device, OarStream_t* stream);
  OarStatus (*stream_destroy)(void* impl, int32_t device, OarStream_t stream);
  /** Wait for all work on a stream (required; NULL = default stream). */
  OarStatus (*stream_synchronize)(void* impl, int32_t device, OarStream_t stream);
  /** Set *done to 1 when all work on the stream has finished, else 0
   *  (optional: the host synchronizes the stream instead). */
  OarStatus (*stream_query)(void* impl, int32_t device, OarStream_t stream, int32_t* done);
  /** Events (optional as a group: the host synchronizes streams instead;
   *  a device without streams has nothing to wait for and leaves them
   *  NULL). */
  OarStatus (*event_create)(void* impl, int32_t device, OarEvent_t* event);
  OarStatus (*event_destroy)(void* impl, int32_t device, OarEvent_t event);
  OarStatus (*event_record)(void* impl, int32_t device, OarEvent_t event, OarStream_t stream);
  OarStatus (*event_synchronize)(void* impl, int32_t device, OarEvent_t event);
  OarStatus (*event_query)(void* impl, int32_t device, OarEvent_t event, int32_t* done);
  /** Make `stream` wait for `event` without blocking the host (optional:
   *  the host synchronizes the event). */
  OarStatus (*stream_wait_event)(void* impl, int32_t device, OarStream_t stream, OarEvent_t event);

  /* --- collectives (all optional: without them the device has none) --- */
  /** Bytes of a communicator's unique id. */
  OarStatus (*comm_unique_id_size)(void* impl, uint64_t* size);
  /** Fill a new unique id (on rank 0; the host shares it through its store). */
  OarStatus (*comm_unique_id)(void* impl, void* id, uint64_t size);
  /** Create this rank's communicator on `device`. `store` is the host's
   *  key-value store the plugin may use for its own rendezvous; timeout_ms
   *  bounds every later collective on this comm. */
  OarStatus (*comm_init)(void* impl, const void* unique_id, uint64_t id_size, int32_t nranks,
                         int32_t rank, int32_t device, OarStore_t store, int64_t timeout_ms,
                         OarComm_t* comm);
  OarStatus (*comm_destroy)(void* impl, OarComm_t comm);
  /** Abort pending collectives (optional). */
  OarStatus (*comm_abort)(void* impl, OarComm_t comm);
  OarStatus (*all_reduce)(void* impl, const void* send, void* recv, uint64_t count, int32_t dtype,
                          int32_t reduce_op, OarComm_t comm, OarStream_t stream);
  /** recv holds nranks * count elements, rank-major. */
  OarStatus (*all_gather)(void* impl, const void* send, void* recv, uint64_t count, int32_t dtype,
                          OarComm_t comm, OarStream_t stream);
  /** send holds nranks * recv_count elements; rank r keeps block r reduced. */
  OarStatus (*reduce_scatter)(void* impl, const void* send, void* recv, uint64_t recv_count,
                              int32_t dtype, int32_t reduce_op, OarComm_t comm, OarStream_t stream);
  OarStatus (*broadcast)(void* impl, void* buffer, uint64_t count, int32_t dtype, int32_t root,
                         OarComm_t comm, OarStream_t stream);
  OarStatus (*send)(void* impl, const void* buffer, uint64_t count, int32_t dtype, int32_t peer,
                    OarComm_t comm, OarStream_t stream);
  OarStatus (*recv)(void* impl, void* buffer, uint64_t count, int32_t dtype, int32_t peer,
                    OarComm_t comm, OarStream_t stream);
  /** send and recv hold nranks * count elements, rank-major. */
  OarStatus (*all_to_all)(void* impl, const void* send, void* recv, uint64_t count, int32_t dtype,
                          OarComm_t comm, OarStream_t stream);
  OarStatus (*barrier)(void* impl, OarComm_t comm, OarStream_t stream);
  OarStatus (*group_start)(void* impl);
  OarStatus (*group_end)(void* impl);

  /* --- lifetime --- */
  /** Called once before the host unloads the plugin (optional). */
  void (*shutdown)(void* impl);

  /* --- 1.2: collectives --- */
  /** Reduce every rank's `send` (count elements) into root's `recv`; `recv`
   *  is not touched on the other ranks (optional: the host runs all_reduce
   *  into a scratch buffer and keeps it on root). */
  OarStatus (*reduce)(void* impl, const void* send, void* recv, uint64_t count, int32_t dtype,
                      int32_t reduce_op, int32_t root, OarComm_t comm, OarStream_t stream);
  /** Root's `send` holds nranks * count elements, rank-major; every rank
   *  receives block `rank` into `recv` (count elements). `send` is read only
   *  on root (optional: the host broadcasts and slices). */
  OarStatus (*scatter)(void* impl, const void* send, void* recv, uint64_t count, int32_t dtype,
                       int32_t root, OarComm_t comm, OarStream_t stream);
  /** Uneven all_to_all. Arrays of nranks entries, in elements:
   *  send_counts[r] elements from send + send_offsets[r] go to rank r, and
   *  recv_counts[r] elements from rank r land at recv + recv_offsets[r]
   *  (optional: the host uses send/recv pairs). */
  OarStatus (*all_to_allv)(void* impl, const void* send, const uint64_t* send_counts,
                           const uint64_t* send_offsets, void* recv, const uint64_t* recv_counts,
                           const uint64_t* recv_offsets, int32_t dtype, OarComm_t comm,
                           OarStream_t stream);
} OarDeviceApi;

/* ------------------------------------------------------------------ */
/* The host table handed to a plugin                                   */
/* ------------------------------------------------------------------ */

/** Log levels. */
enum { OAR_LOG_DEBUG = 0, OAR_LOG_INFO = 1, OAR_LOG_WARNING = 2, OAR_LOG_ERROR = 3 };

/** Attribute kinds, as returned by attr_kind. */
enum {
  OAR_ATTR_MISSING = 0,
  OAR_ATTR_INT = 1,
  OAR_ATTR_FLOAT = 2,
  OAR_ATTR_BOOL = 3,
  OAR_ATTR_STRING = 4,
  OAR_ATTR_INT_ARRAY = 5,
  OAR_ATTR_FLOAT_ARRAY = 6
};

/** Functions the host gives every plugin. Valid until shutdown. */
typedef struct OarHostApi {
  size_t struct_size;
  int32_t abi_major;
  int32_t abi_minor;
  void* host;  /* host's own state, passed back as first argument */

  /** Register one device type; the host copies the table (required). */
  OarStatus (*register_device)(void* host, const OarDeviceApi* device);
  /** Register a kernel for (device type, op name) (required). The host
   *  copies the descriptor and its dtype arrays. */
  OarStatus (*register_kernel)(void* host, const char* device_type, const char* op_name,
                               const OarKernelDesc* kernel);
  /** Log one line. */
  void (*log)(void* host, int32_t level, const char* message);
  /** Set the error being returned by the calling thread: its code and
   *  message. When the call then returns a non-OK status, the user's
   *  exception carries this code (if it is a failure code; else the
   *  returned status) and this message; a call that returns OAR_OK drops
   *  it (since 1.1; 1.0 hosts kept only the returned status). */
  void (*set_error)(void* host, OarStatus code, const char* message);

  /** Attribute access inside a kernel. Each returns OAR_OK, or
   *  OAR_ERROR_INVALID_ARGUMENT when the name is missing or of another kind.
   *  Array pointers stay valid for the duration of the kernel call. */
  int32_t (*attr_kind)(OarAttrs_t attrs, const char* name);
  OarStatus (*attr_int)(OarAttrs_t attrs, const char* name, int64_t* value);
  OarStatus (*attr_float)(OarAttrs_t attrs, const char* name, double* value);
  OarStatus (*attr_bool)(OarAttrs_t attrs, const char* name, int32_t* value);
  OarStatus (*attr_string)(OarAttrs_t attrs, const char* name, const char** value);
  OarStatus (*attr_int_array)(OarAttrs_t attrs, const char* name, const int64_t** values,
                              int64_t* count);
  OarStatus (*attr_float_array)(OarAttrs_t attrs, const char* name, const double** values,
                                int64_t* count);

  /** Key-value store for rendezvous. `get` waits up to timeout_ms for the
   *  key; the value buffer is allocated by the host and freed with
   *  store_free. `add` adds to an integer counter and returns the new value. */
  OarStatus (*store_set)(OarStore_t store, const char* key, const void* value, uint64_t size);
  OarStatus (*store_get)(OarStore_t store, const char* key, int64_t timeout_ms, void** value,
                         uint64_t* size);
  OarStatus (*store_add)(OarStore_t store, const char* key, int64_t delta, int64_t* result);
  OarStatus (*store_wait)(OarStore_t store, const char* key, int64_t timeout_ms);
  void (*store_free)(void* value);

  /** Read an environment-style option the host was configured with (the
   *  process environment by default); NULL when unset. */
  const char* (*get_option)(void* host, const char* name);

  /* --- 1.1 --- */
  /** Kernel scratch memory from the host's caching allocator for the
   *  launch's device (ctx->device_type, ctx->device), ordered on
   *  ctx->stream. Valid from inside a kernel call; the kernel frees it with
   *  scratch_free before returning or, for work queued on the stream, the
   *  host reuses it only after the stream reaches this point. Returns NULL
   *  and sets the error when it cannot: OAR_ERROR_OUT_OF_MEMORY when the
   *  device is full (a kernel passing that on raises out-of-memory whatever
   *  status it returns), OAR_ERROR_INVALID_ARGUMENT outside a kernel call. */
  void* (*scratch_alloc)(void* host, const OarKernelContext* ctx, uint64_t bytes);
  void (*scratch_free)(void* host, const OarKernelContext* ctx, void* ptr);
} OarHostApi;

/** Information a plugin returns from init. */
typedef struct OarPluginInfo {
  size_t struct_size;
  int32_t abi_major; /* OAR_ABI_VERSION_MAJOR the plugin was built with */
  int32_t abi_minor;
  const char* name;  /* e.g. "oar-mock" */
} OarPluginInfo;

/** The entry point: `oar_plugin_init`. The plugin fills `info` (its
 *  struct_size set by the host), then registers its devices and kernels
 *  through `host`. Return OAR_OK even when no hardware is present.
 *  Registrations are transactional: the host keeps them only when init
 *  returns OAR_OK and info->abi_major equals the host's major. The first
 *  four fields of OarHostApi never move, so a plugin may check
 *  host->abi_major before touching anything else. */
typedef OarStatus (*OarPluginInitFn)(const OarHostApi* host, OarPluginInfo* info);

#if defined(_WIN32)
#define OAR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define OAR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* OAR_PLUGIN_API_H */
