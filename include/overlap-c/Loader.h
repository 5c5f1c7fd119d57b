/*===- overlap-c/Loader.h - Run compiled programs from C ----------*- C -*-===*\
|*                                                                            *|
|* Runs a shared library from overlap-compile (or overlapCompile) as          *|
|* overlap-exec does: seeded inputs on host ranks (threads) or one CUDA       *|
|* device, against a reference library when one is given. No MLIR.           *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_LOADER_H
#define OVERLAP_C_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "overlap-c/Export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The run options; overlapRunOptionsDefault() gives the defaults (the same
 *  as overlap-exec's). Their fields are the rows of
 *  overlap/Loader/RunOptions.def, the one declaration that overlap-exec's
 *  and overlap-run's flags, this struct and Python's overlap.run share;
 *  its comments say what each is and takes. A string NULL or "" keeps the
 *  default (ranksAs "auto"; chaos off; backend the program's target). Every
 *  value is checked before anything runs (status 2, naming the field). */
#define OVERLAP_RUN_OPTION_C_PATH const char *
#define OVERLAP_RUN_OPTION_C_CHOICE const char *
#define OVERLAP_RUN_OPTION_C_RANKS_AS const char *
#define OVERLAP_RUN_OPTION_C_INT int
#define OVERLAP_RUN_OPTION_C_INT64 int64_t
#define OVERLAP_RUN_OPTION_C_UINT64 uint64_t
#define OVERLAP_RUN_OPTION_C_SEED const char *
#define OVERLAP_RUN_OPTION_C_DOUBLE double
#define OVERLAP_RUN_OPTION_C_BOOL bool
typedef struct {
  /* sizeof(OverlapRunOptions), as overlapRunOptionsDefault() sets it:
   * options laid out by another version of this header are refused (status
   * 2, saying so), never misread. */
  size_t size;
  const char *program; /* the library to run */
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  OVERLAP_RUN_OPTION_C_##KIND FIELD;
#include "overlap/Loader/RunOptions.def"
} OverlapRunOptions;

/** The defaults of overlap-exec (seed 1, one iteration, exact). */
OVERLAP_C_API OverlapRunOptions overlapRunOptionsDefault(void);

/** The layout of OverlapRunOptions as this library was built with it: JSON
 *  {"size": N, "fields": [{"field", "flag" (overlap-exec's, "" for size and
 *  program), "kind" (size, string, int, int64, uint64, double, bool),
 *  "offset", "help"}, ...]} in field order: what a binding that mirrors the
 *  struct (Python's ctypes) builds its mirror from. Static storage; never
 *  NULL. */
OVERLAP_C_API const char *overlapRunOptionsLayout(void);

/** Runs as overlap-exec; returns its exit status (0 match, 1 mismatch, 2
 *  error, 3 no CUDA device) with its report in `*report` and its messages
 *  in `*messages` (free both with overlapFree from overlap-c/Planner.h). */
OVERLAP_C_API int overlapRun(const OverlapRunOptions *options, char **report,
                             char **messages);

/** The signature embedded in the library `program` (overlap-compile
 *  --emit=so), in its text form: lines "entry NAME", "target host", "grid
 *  NAME SIZE", "arg NAME 256x512xf32 [inout]", "result NAME TYPE". Returns
 *  0 with the text in `*signature`, or 2 with why not in `*messages` (free
 *  both with overlapFree). */
OVERLAP_C_API int overlapProgramSignature(const char *program, char **signature,
                                          char **messages);

/** Every output of every rank of one run: the entry's results, then its
 *  arguments (which a program may update in place), each a contiguous
 *  row-major buffer. */
typedef struct OverlapOutputs OverlapOutputs;

/** Runs `options->program` once with the caller's inputs instead of seeded
 *  ones: `inputs[rank * A + a]` is argument a of rank r (A arguments, as the
 *  signature lists them), a contiguous row-major buffer of the argument's
 *  type (f16 and bf16 as 16-bit patterns); `numInputs` must be ranks * A.
 *  The inputs are copied, never written. With `options->reference` both
 *  run with these inputs and are compared, as overlapRun does. Returns
 *  overlapRun's status; on 0 or 1 `*outputs` holds the program's outputs
 *  (destroy with overlapOutputsDestroy), otherwise it is NULL. `report`,
 *  `messages` and `outputs` may each be NULL (a NULL `report` is not made:
 *  its checksums read every output). */
OVERLAP_C_API int overlapRunInputs(const OverlapRunOptions *options,
                                   const void *const *inputs, size_t numInputs,
                                   OverlapOutputs **outputs, char **report,
                                   char **messages);

/** overlapRunInputs for an entry whose arguments have dynamic sizes ("?"
 *  in its signature): `shapes[a]` points at argument a's sizes (as many as
 *  its rank, the same on every rank; NULL for an argument of static
 *  shape), `numShapes` is the number of arguments (or 0 with `shapes`
 *  NULL: overlapRunInputs). The outputs then have the sizes the run
 *  returned (overlapOutputsType). */
OVERLAP_C_API int overlapRunInputsShaped(
    const OverlapRunOptions *options, const void *const *inputs,
    size_t numInputs, const int64_t *const *shapes, size_t numShapes,
    OverlapOutputs **outputs, char **report, char **messages);

/** The accessors are NULL-safe: a NULL `outputs`, or a rank or output out
 *  of range, gives 0 or NULL. */
OVERLAP_C_API int overlapOutputsRanks(const OverlapOutputs *outputs);
/** Outputs per rank. */
OVERLAP_C_API int overlapOutputsCount(const OverlapOutputs *outputs);
/** "result0", "arg1": the name in the signature. */
OVERLAP_C_API const char *overlapOutputsName(const OverlapOutputs *outputs,
                                             int output);
/** "256x32xf32" ("f32" for a scalar). */
OVERLAP_C_API const char *overlapOutputsType(const OverlapOutputs *outputs,
                                             int output);
OVERLAP_C_API size_t overlapOutputsBytes(const OverlapOutputs *outputs,
                                         int output);
OVERLAP_C_API const void *overlapOutputsData(const OverlapOutputs *outputs,
                                             int rank, int output);
OVERLAP_C_API void overlapOutputsDestroy(OverlapOutputs *outputs);

/** A compiled layer that a framework calls once per device and step (JAX:
 *  one XLA FFI call per device of the mesh, each on its own thread): rank
 *  r's k-th overlapStepCall is step k; the last call of a step runs the
 *  program once on every rank (host backend, overlapRunInputs) with every
 *  call's inputs and writes every call's results. lib/Loader/
 *  StepRendezvous.cpp; docs/jax.md, "Calling Overlap from JAX". */
typedef struct OverlapStep OverlapStep;

/** Loads `options->program`'s signature and makes its rendezvous; a rank
 *  missing from a step fails it after `timeoutMs` (> 0). NULL with why in
 *  `*messages` (free with overlapFree; `messages` may be NULL). */
OVERLAP_C_API OverlapStep *overlapStepCreate(const OverlapRunOptions *options,
                                             int64_t timeoutMs,
                                             char **messages);

/** Rank `rank`'s call of the next step: `inputs[a]` is its argument a (as
 *  overlapRunInputs takes them), `outputs[i]` where its result i is written
 *  (a contiguous buffer of the result's type and size). Blocks until the
 *  step ran. Returns 0, or 2 with why in `*messages` (the program failed,
 *  a rank did not come, wrong counts). NULL-safe (2). */
OVERLAP_C_API int overlapStepCall(OverlapStep *step, int rank,
                                  const void *const *inputs, size_t numInputs,
                                  void *const *outputs, size_t numOutputs,
                                  char **messages);

/** overlapStepCall within the framework's execution `run` (XLA's RunId:
 *  the same on every device of one execution): rank r's k-th call of
 *  execution `run` is step k of it, so a device whose execution stopped
 *  early is in step again in the next one (with overlapStepCall, counted
 *  over the layer's life, it stayed behind and every later step failed).
 *  `inputBytes[a]` / `outputBytes[i]`, when not NULL, are the sizes of the
 *  caller's buffers: one that differs from its argument's or result's size
 *  is refused (2) before anything reads or writes it. */
OVERLAP_C_API int overlapStepCallInRun(OverlapStep *step, int rank, int64_t run,
                                       const void *const *inputs,
                                       const size_t *inputBytes,
                                       size_t numInputs, void *const *outputs,
                                       const size_t *outputBytes,
                                       size_t numOutputs, char **messages);

/** Steps launched so far (0 for NULL). */
OVERLAP_C_API int64_t overlapStepLaunches(const OverlapStep *step);
/** Ranks of the step's program (0 for NULL). */
OVERLAP_C_API int overlapStepRanks(const OverlapStep *step);
/** No call may be in flight. NULL-safe. */
OVERLAP_C_API void overlapStepDestroy(OverlapStep *step);

/** A --target=cuda program that a framework calls on its own device buffers
 *  and stream, one rank per process and GPU (overlap.jax.jit on GPUs). Each
 *  call is stream-ordered on the caller's stream (copies with
 *  cudaMemcpyAsync on it, events between it and the context's streams);
 *  the host waits for the context's streams inside the call. Not yet run
 *  on a GPU (docs/jax.md, "Calling Overlap from JAX";
 *  test/Integration/device-layer-streams.test is the GPU check). */
typedef struct OverlapDeviceLayer OverlapDeviceLayer;

/** Rank 0's NCCL unique id (128 bytes) for overlapDeviceLayerCreate, to be
 *  sent to the other ranks by the framework (jax.distributed's key-value
 *  store). Returns 0, or 3 without a CUDA device or backend, 2 otherwise,
 *  with why in `*messages`. */
OVERLAP_C_API int overlapCudaUniqueId(uint8_t *id, char **messages);

/** A rank's CUDA context that device layers share: its streams, its NCCL
 *  communicator (one per process and mesh: the NCCL id is exchanged once)
 *  and its runtime caches. overlap.jax.jit makes one per process, mesh
 *  and wait bound and makes every layer, input shape and backward on it
 *  (overlapDeviceLayerCreateOn). Each layer holds a reference, as the
 *  handle does until overlapDeviceContextRelease; the context is destroyed
 *  with the last. The calls of its layers run one at a time (from any
 *  thread), each ending with the context's streams drained, so their
 *  programs never interleave on its streams. */
typedef struct OverlapDeviceContext OverlapDeviceContext;

/** Makes rank `rank` of `ranks` on CUDA device `device`, NCCL from
 *  `uniqueId` (NULL when `ranks` is 1). Collective over the ranks.
 *  `waitTimeoutMs` bounds each wait of a layer's call (0: the runtime's
 *  default, 10 s), `initTimeoutMs` NCCL's init (0: $OVERLAP_INIT_TIMEOUT_MS,
 *  else unbounded; at the bound the creation fails naming the rank and the
 *  bound). NULL with the status (2, or 3 without a device) in `*status`
 *  and why in `*messages` (each may be NULL). */
OVERLAP_C_API OverlapDeviceContext *
overlapDeviceContextCreate(const uint8_t *uniqueId, int ranks, int rank,
                           int device, int64_t waitTimeoutMs,
                           int64_t initTimeoutMs, int *status, char **messages);

/** 0 while the context is usable; 1 once it failed (a wait past its bound,
 *  a failed collective or call of any layer on it: a failed context stays
 *  failed), with its first error in `*messages`; 2 for NULL. */
OVERLAP_C_API int overlapDeviceContextStatus(OverlapDeviceContext *context,
                                             char **messages);

/** Loads `program` as a layer on `context` (not collective: the program's
 *  own resources only, its input buffers on the device). A failed context
 *  is refused with its error. NULL with the status (2) in `*status` and
 *  why in `*messages`. */
OVERLAP_C_API OverlapDeviceLayer *
overlapDeviceLayerCreateOn(OverlapDeviceContext *context, const char *program,
                           int *status, char **messages);

/** Drops the handle's reference: the context lives on while a layer made
 *  on it does. NULL-safe. */
OVERLAP_C_API void overlapDeviceContextRelease(OverlapDeviceContext *context);

/** Device contexts made by this process so far (overlapDeviceContextCreate
 *  and overlapDeviceLayerCreate), for tests and reports. */
OVERLAP_C_API int64_t overlapDeviceContextsCreated(void);

/** Loads `program` with a context of its own (overlapDeviceContextCreate's
 *  arguments, then overlapDeviceLayerCreateOn). NULL with the status (2,
 *  or 3 without a device) in `*status` and why in `*messages` (each may be
 *  NULL). */
OVERLAP_C_API OverlapDeviceLayer *
overlapDeviceLayerCreate(const char *program, const uint8_t *uniqueId,
                         int ranks, int rank, int device, int64_t waitTimeoutMs,
                         int64_t initTimeoutMs, int *status, char **messages);

/** One call on the caller's `stream` (a cudaStream_t): `inputs[a]` device
 *  pointers of the arguments (never written), `outputs[i]` where result i
 *  goes; `inputBytes` / `outputBytes`, when not NULL, their sizes (a buffer
 *  of another size than its argument's or result's is refused before any
 *  copy). Returns 0, or 2 with why in `*messages`. NULL-safe (2). */
OVERLAP_C_API int overlapDeviceLayerCall(
    OverlapDeviceLayer *layer, void *stream, const void *const *inputs,
    const size_t *inputBytes, size_t numInputs, void *const *outputs,
    const size_t *outputBytes, size_t numOutputs, char **messages);

/** NULL-safe. */
OVERLAP_C_API void overlapDeviceLayerDestroy(OverlapDeviceLayer *layer);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_LOADER_H */
