//===- Host.cpp - The C API without MLIR: Planner and loader ----*- C++ -*-===//
//
// overlap-c/Planner.h and overlap-c/Loader.h over planner::planFromJSON and
// exec::runSession.
//
//===----------------------------------------------------------------------===//

#include "overlap-c/Loader.h"
#include "overlap-c/Planner.h"
#include "overlap/Loader/StepRendezvous.h"

#include "overlap/Loader/Executor.h"
#include "overlap/Loader/RuntimeApi.h"
#include "overlap/Loader/Session.h"
#include "overlap/Planner/Json.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

static char *copy(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

int overlapPlanJSON(const char *request, char **result, char **error) {
  if (result)
    *result = nullptr;
  if (error)
    *error = nullptr;
  if (!request) {
    if (error)
      *error = copy("request: null");
    return 2;
  }
  llvm::Expected<std::string> plan = overlap::planner::planFromJSON(request);
  if (plan) {
    if (result)
      *result = copy(*plan);
    return 0;
  }
  int status = 1;
  std::string message;
  llvm::handleAllErrors(plan.takeError(), [&](const llvm::ErrorInfoBase &e) {
    if (e.convertToErrorCode() ==
        std::make_error_code(std::errc::invalid_argument))
      status = 2;
    message += (message.empty() ? "" : "\n") + e.message();
  });
  if (error)
    *error = copy(message);
  return status;
}

void overlapFree(void *pointer) { std::free(pointer); }

namespace {
using overlap::exec::RunOption;
using overlap::exec::SessionOptions;

// One row of OverlapRunOptions into the session: a number as it is, a
// string (NULL or "": the default) read as overlap-exec reads its flag.
template <typename T>
std::string fromC(SessionOptions &session, const RunOption &row, T &,
                  const char *text) {
  if (!text || !*text)
    return "";
  return overlap::exec::setRunOption(
      session, row, text, std::string("OverlapRunOptions.") + row.field);
}
template <typename T>
std::string fromC(SessionOptions &, const RunOption &, T &out, const T &in) {
  out = in;
  return "";
}

// A row's default in C: a number as it is, a string NULL.
template <typename T> void defaultC(const char *&out, const T &) {
  out = nullptr;
}
template <typename T> void defaultC(T &out, const T &in) { out = in; }
} // namespace

OverlapRunOptions overlapRunOptionsDefault(void) {
  SessionOptions defaults;
  OverlapRunOptions options;
  options.size = sizeof(OverlapRunOptions);
  options.program = nullptr;
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  defaultC(options.FIELD, defaults.FIELD);
#include "overlap/Loader/RunOptions.def"
  return options;
}

const char *overlapRunOptionsLayout(void) {
  static const std::string layout = [] {
    std::string fields;
    auto field = [&](const char *name, const char *flag, const char *kind,
                     size_t offset) {
      fields += std::string(fields.empty() ? "" : ", ") + "{\"field\": \"" +
                name + "\", \"flag\": \"" + flag + "\", \"kind\": \"" + kind +
                "\", \"offset\": " + std::to_string(offset) + "}";
    };
    field("size", "", "size", offsetof(OverlapRunOptions, size));
    field("program", "", "string", offsetof(OverlapRunOptions, program));
#define OVERLAP_RUN_KIND_PATH "string"
#define OVERLAP_RUN_KIND_CHOICE "string"
#define OVERLAP_RUN_KIND_RANKS_AS "string"
#define OVERLAP_RUN_KIND_SEED "string"
#define OVERLAP_RUN_KIND_INT "int"
#define OVERLAP_RUN_KIND_INT64 "int64"
#define OVERLAP_RUN_KIND_UINT64 "uint64"
#define OVERLAP_RUN_KIND_DOUBLE "double"
#define OVERLAP_RUN_KIND_BOOL "bool"
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  field(#FIELD, FLAG, OVERLAP_RUN_KIND_##KIND,                                 \
        offsetof(OverlapRunOptions, FIELD));
#include "overlap/Loader/RunOptions.def"
    return "{\"size\": " + std::to_string(sizeof(OverlapRunOptions)) +
           ", \"fields\": [" + fields + "]}";
  }();
  return layout.c_str();
}

/// The session `options` asks for; "" or why not (one line of the form
/// "overlap: error: ...\n").
static std::string sessionFromC(const OverlapRunOptions *options,
                                SessionOptions &session) {
  if (options && options->size != sizeof(OverlapRunOptions))
    return "overlap: error: OverlapRunOptions: size " +
           std::to_string(options->size) + ", but this library's is " +
           std::to_string(sizeof(OverlapRunOptions)) +
           " (start from overlapRunOptionsDefault(), built with this "
           "library's overlap-c/Loader.h)\n";
  if (!options || !options->program)
    return "overlap: error: no program library given\n";
  session.tool = "overlap";
  session.program = options->program;
  std::string error;
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  if (error.empty())                                                           \
    error = fromC(session, *overlap::exec::findRunOption(FLAG), session.FIELD, \
                  options->FIELD);
#include "overlap/Loader/RunOptions.def"
  if (error.empty())
    error = overlap::exec::checkRunOptions(session, [](const RunOption &row) {
      return std::string("OverlapRunOptions.") + row.field;
    });
  return error.empty() ? "" : "overlap: error: " + error + "\n";
}

struct OverlapOutputs {
  std::vector<std::string> names, types;
  std::vector<size_t> bytes;
  /// [rank][output]
  std::vector<std::vector<std::vector<char>>> data;
};

/// overlapRun and overlapRunInputs: `inputs` null for seeded inputs;
/// `loaded` not null: the program, already loaded (a step's), instead of
/// the library at options->program.
static int runWith(const OverlapRunOptions *options,
                   const overlap::run::GivenInputs *inputs,
                   const std::vector<std::vector<int64_t>> *shapes,
                   OverlapOutputs *outputs, char **report, char **messages,
                   overlap::exec::Library *loaded = nullptr) {
  std::string out, err;
  int status = 2;
  overlap::exec::SessionOptions session;
  err = sessionFromC(options, session);
  if (err.empty()) {
    session.inputs = inputs;
    session.programLibrary = loaded;
    if (shapes)
      session.inputShapes = *shapes;
    overlap::exec::SessionOutput output;
    if (report) // the report's checksums cost a pass over every output
      output.out = [&](const std::string &text) { out += text; };
    output.err = [&](const std::string &text) { err += text; };
    if (outputs)
      output.outputs =
          [&](const overlap::run::Signature &sig,
              const std::vector<std::vector<overlap::run::OutputView>> &all) {
            std::vector<const overlap::run::BufferSpec *> specs =
                overlap::run::outputSpecs(sig);
            for (const overlap::run::BufferSpec *spec : specs) {
              outputs->names.push_back(spec->name);
              outputs->types.push_back(spec->typeString());
              outputs->bytes.push_back(spec->numElements() * spec->elemBytes());
            }
            outputs->data.resize(all.size());
            for (size_t r = 0; r < all.size(); ++r) {
              outputs->data[r].resize(specs.size());
              for (size_t i = 0; i < specs.size(); ++i)
                overlap::run::copyContiguous(*specs[i], all[r][i],
                                             outputs->data[r][i]);
            }
          };
    status = overlap::exec::runSession(session, output);
  }
  if (report)
    *report = copy(out);
  if (messages)
    *messages = copy(err);
  return status;
}

int overlapRun(const OverlapRunOptions *options, char **report,
               char **messages) {
  return runWith(options, nullptr, nullptr, nullptr, report, messages);
}

/// Loads `program` into `lib`; on failure returns false with the message.
static bool loadProgram(const char *program, overlap::exec::Library &lib,
                        std::string &message) {
  if (!program) {
    message = "overlap: error: no program library given\n";
    return false;
  }
  // The runtime the program will bind to (a program's DT_NEEDED finds the
  // copy already loaded); a program may still load without it.
  std::string noRuntime;
  (void)overlap::exec::loadRuntime(noRuntime);
  if (!overlap::exec::loadLibrary(program, lib, message)) {
    message = "overlap: error: " + message + "\n";
    return false;
  }
  return true;
}

/// Loads `program`'s signature; on failure returns false with the message.
static bool loadSignature(const char *program, overlap::run::Signature &sig,
                          std::string &message) {
  overlap::exec::Library lib;
  if (!loadProgram(program, lib, message))
    return false;
  sig = lib.sig;
  return true;
}

int overlapProgramSignature(const char *program, char **signature,
                            char **messages) {
  if (signature)
    *signature = nullptr;
  if (messages)
    *messages = nullptr;
  overlap::run::Signature sig;
  std::string message;
  if (!loadSignature(program, sig, message)) {
    if (messages)
      *messages = copy(message);
    return 2;
  }
  if (signature)
    *signature = copy(overlap::run::formatSignature(sig));
  return 0;
}

int overlapRunInputs(const OverlapRunOptions *options,
                     const void *const *inputs, size_t numInputs,
                     OverlapOutputs **outputs, char **report, char **messages) {
  return overlapRunInputsShaped(options, inputs, numInputs, nullptr, 0, outputs,
                                report, messages);
}

int overlapRunInputsShaped(const OverlapRunOptions *options,
                           const void *const *inputs, size_t numInputs,
                           const int64_t *const *shapes, size_t numShapes,
                           OverlapOutputs **outputs, char **report,
                           char **messages) {
  if (outputs)
    *outputs = nullptr;
  // Loaded once: its signature counts the inputs, then the session runs it.
  overlap::exec::Library program;
  std::string message;
  auto fail = [&](const std::string &text) {
    if (report)
      *report = copy("");
    if (messages)
      *messages = copy(text);
    return 2;
  };
  if (!options)
    return fail("overlap: error: no options given\n");
  if (!loadProgram(options->program, program, message))
    return fail(message);
  const overlap::run::Signature &sig = program.sig;
  size_t ranks = options->ranks > 0
                     ? static_cast<size_t>(options->ranks)
                     : static_cast<size_t>(overlap::run::defaultRanks(sig));
  size_t args = sig.args.size();
  if (numInputs != ranks * args || (numInputs && !inputs))
    return fail("overlap: error: @" + sig.name + " on " +
                std::to_string(ranks) + " ranks takes " +
                std::to_string(ranks * args) + " inputs (" +
                std::to_string(args) + " per rank), but " +
                std::to_string(numInputs) + " were given\n");
  if ((shapes && numShapes != args) || (!shapes && numShapes))
    return fail("overlap: error: @" + sig.name + " takes " +
                std::to_string(args) + " arguments, but " +
                std::to_string(numShapes) + " shapes were given\n");
  std::vector<std::vector<int64_t>> argShapes(args);
  for (size_t a = 0; shapes && a < args; ++a)
    if (shapes[a])
      argShapes[a].assign(shapes[a], shapes[a] + sig.args[a].shape.size());
  overlap::run::GivenInputs given(ranks);
  for (size_t r = 0; r < ranks; ++r)
    given[r].assign(inputs + r * args, inputs + (r + 1) * args);
  auto result = std::make_unique<OverlapOutputs>();
  int status = runWith(options, &given, &argShapes, result.get(), report,
                       messages, &program);
  if (outputs && (status == 0 || status == 1) && !result->data.empty())
    *outputs = result.release();
  return status;
}

static bool inRange(const OverlapOutputs *o, int output) {
  return o && output >= 0 && static_cast<size_t>(output) < o->names.size();
}

int overlapOutputsRanks(const OverlapOutputs *o) {
  return o ? static_cast<int>(o->data.size()) : 0;
}
int overlapOutputsCount(const OverlapOutputs *o) {
  return o ? static_cast<int>(o->names.size()) : 0;
}
const char *overlapOutputsName(const OverlapOutputs *o, int output) {
  return inRange(o, output) ? o->names[output].c_str() : nullptr;
}
const char *overlapOutputsType(const OverlapOutputs *o, int output) {
  return inRange(o, output) ? o->types[output].c_str() : nullptr;
}
size_t overlapOutputsBytes(const OverlapOutputs *o, int output) {
  return inRange(o, output) ? o->bytes[output] : 0;
}
const void *overlapOutputsData(const OverlapOutputs *o, int rank, int output) {
  if (!inRange(o, output) || rank < 0 ||
      static_cast<size_t>(rank) >= o->data.size())
    return nullptr;
  return o->data[rank][output].data();
}
void overlapOutputsDestroy(OverlapOutputs *o) { delete o; }

struct OverlapStep {
  OverlapRunOptions options;
  std::string program;
  /// The program, loaded once for every step (its signature is static).
  overlap::exec::Library library;
  std::vector<size_t> argBytes, resultBytes;
  std::string name;
  std::unique_ptr<overlap::exec::StepRendezvous> rendezvous;
};

OverlapStep *overlapStepCreate(const OverlapRunOptions *options,
                               int64_t timeoutMs, char **messages) {
  if (messages)
    *messages = nullptr;
  auto fail = [&](const std::string &text) -> OverlapStep * {
    if (messages)
      *messages = copy(text);
    return nullptr;
  };
  if (!options || options->size != sizeof(OverlapRunOptions))
    return fail("overlap: error: overlapStepCreate: no options, or options "
                "of another layout (start from overlapRunOptionsDefault())\n");
  if (timeoutMs <= 0)
    return fail("overlap: error: overlapStepCreate: the timeout must be > 0 "
                "ms\n");
  auto step = std::make_unique<OverlapStep>();
  std::string message;
  if (!loadProgram(options->program, step->library, message))
    return fail(message);
  const overlap::run::Signature &sig = step->library.sig;
  for (const auto *list : {&sig.args, &sig.results})
    for (const overlap::run::BufferSpec &spec : *list)
      if (spec.isDynamic())
        return fail("overlap: error: overlapStepCreate: " + spec.name +
                    " of @" + sig.name + " has a dynamic shape (" +
                    spec.typeString() +
                    "): a layer's buffers have static shapes\n");
  // The caller's strings need not outlive this call: the step keeps the
  // program (loaded once) and runs every rank as a thread of this process,
  // once per step, with no reference and no .npz files.
  step->options = *options;
  step->program = options->program;
  step->options.program = step->program.c_str();
  OverlapRunOptions defaults = overlapRunOptionsDefault();
  step->options.reference = nullptr;
  step->options.inputsNpz = nullptr;
  step->options.outputsNpz = nullptr;
  step->options.backend = nullptr;
  step->options.refBackend = nullptr;
  step->options.chaos = nullptr;
  step->options.ranksAs = "threads";
  step->options.iterations = defaults.iterations;
  step->name = sig.name;
  for (const overlap::run::BufferSpec &spec : sig.args)
    step->argBytes.push_back(spec.numElements() * spec.elemBytes());
  for (const overlap::run::BufferSpec &spec : sig.results)
    step->resultBytes.push_back(spec.numElements() * spec.elemBytes());
  const int ranks =
      options->ranks > 0 ? options->ranks : overlap::run::defaultRanks(sig);
  OverlapStep *self = step.get();
  step->rendezvous = std::make_unique<overlap::exec::StepRendezvous>(
      ranks, timeoutMs,
      [self](const std::vector<std::vector<const void *>> &in,
             const std::vector<std::vector<void *>> &out, std::string &error) {
        auto outputs = std::make_unique<OverlapOutputs>();
        char *why = nullptr;
        int status = runWith(&self->options, &in, nullptr, outputs.get(),
                             /*report=*/nullptr, &why, &self->library);
        std::string text = why ? why : "";
        std::free(why);
        if (status != 0 || outputs->data.size() != out.size()) {
          error = "@" + self->name + " failed (status " +
                  std::to_string(status) + "): " + text;
          return false;
        }
        for (size_t r = 0; r < out.size(); ++r)
          for (size_t i = 0; i < self->resultBytes.size(); ++i) {
            if (outputs->bytes[i] != self->resultBytes[i] ||
                outputs->data[r][i].size() != self->resultBytes[i]) {
              error = "@" + self->name + ": result " + std::to_string(i) +
                      " has " + std::to_string(outputs->bytes[i]) +
                      " bytes, the signature says " +
                      std::to_string(self->resultBytes[i]);
              return false;
            }
            std::memcpy(out[r][i], outputs->data[r][i].data(),
                        self->resultBytes[i]);
          }
        return true;
      });
  return step.release();
}

namespace {
/// Why a step call's buffers do not fit its program ("" when they do):
/// their counts, or (when sizes are given) a buffer's size.
std::string misfit(const OverlapStep &step, const void *const *inputs,
                   const size_t *inputBytes, size_t numInputs,
                   void *const *outputs, const size_t *outputBytes,
                   size_t numOutputs) {
  if (numInputs != step.argBytes.size() ||
      numOutputs != step.resultBytes.size() || (numInputs && !inputs) ||
      (numOutputs && !outputs))
    return "@" + step.name + " takes " + std::to_string(step.argBytes.size()) +
           " inputs and " + std::to_string(step.resultBytes.size()) +
           " outputs per rank, but a call gave " + std::to_string(numInputs) +
           " and " + std::to_string(numOutputs);
  return overlap::run::bufferSizeMisfit(step.library.sig, inputBytes,
                                        outputBytes);
}
} // namespace

int overlapStepCall(OverlapStep *step, int rank, const void *const *inputs,
                    size_t numInputs, void *const *outputs, size_t numOutputs,
                    char **messages) {
  return overlapStepCallInRun(step, rank, overlap::exec::StepRendezvous::kNoRun,
                              inputs, nullptr, numInputs, outputs, nullptr,
                              numOutputs, messages);
}

int overlapStepCallInRun(OverlapStep *step, int rank, int64_t run,
                         const void *const *inputs, const size_t *inputBytes,
                         size_t numInputs, void *const *outputs,
                         const size_t *outputBytes, size_t numOutputs,
                         char **messages) {
  if (messages)
    *messages = nullptr;
  std::string error = step ? misfit(*step, inputs, inputBytes, numInputs,
                                    outputs, outputBytes, numOutputs)
                           : "no step (overlapStepCreate failed?)";
  if (error.empty() &&
      step->rendezvous->call(
          rank, run, std::vector<const void *>(inputs, inputs + numInputs),
          std::vector<void *>(outputs, outputs + numOutputs), error))
    return 0;
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return 2;
}

int64_t overlapStepLaunches(const OverlapStep *step) {
  return step ? step->rendezvous->launches() : 0;
}

int overlapStepRanks(const OverlapStep *step) {
  return step ? step->rendezvous->ranks() : 0;
}

void overlapStepDestroy(OverlapStep *step) { delete step; }

struct OverlapDeviceLayer {
  std::unique_ptr<overlap::exec::DeviceLayer> layer;
};

struct OverlapDeviceContext {
  std::shared_ptr<overlap::exec::DeviceContext> context;
};

namespace {
/// Device contexts made in this process (overlapDeviceContextsCreated).
std::atomic<int64_t> deviceContextsCreated{0};
} // namespace

int overlapCudaUniqueId(uint8_t *id, char **messages) {
  if (messages)
    *messages = nullptr;
  std::string error;
  bool noDevice = false;
  if (!id)
    error = "no id buffer";
  else if (overlap::exec::loadRuntime(error) &&
           overlap::exec::cudaUniqueId(id, noDevice, error))
    return 0;
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return noDevice ? 3 : 2;
}

OverlapDeviceContext *overlapDeviceContextCreate(const uint8_t *uniqueId,
                                                 int ranks, int rank,
                                                 int device,
                                                 int64_t waitTimeoutMs,
                                                 int64_t initTimeoutMs,
                                                 int *status, char **messages) {
  if (messages)
    *messages = nullptr;
  if (status)
    *status = 2;
  std::string error;
  bool noDevice = false;
  std::shared_ptr<overlap::exec::DeviceContext> context;
  if (overlap::exec::loadRuntime(error))
    context = overlap::exec::createDeviceContext(uniqueId, ranks, rank, device,
                                                 waitTimeoutMs, initTimeoutMs,
                                                 noDevice, error);
  if (context) {
    ++deviceContextsCreated;
    if (status)
      *status = 0;
    return new OverlapDeviceContext{std::move(context)};
  }
  if (status)
    *status = noDevice ? 3 : 2;
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return nullptr;
}

int overlapDeviceContextStatus(OverlapDeviceContext *context, char **messages) {
  if (messages)
    *messages = nullptr;
  std::string why = context ? context->context->failure()
                            : "no context (overlapDeviceContextCreate failed?)";
  if (why.empty())
    return 0;
  if (messages)
    *messages = copy("overlap: error: " + why + "\n");
  return context ? 1 : 2;
}

OverlapDeviceLayer *overlapDeviceLayerCreateOn(OverlapDeviceContext *context,
                                               const char *program, int *status,
                                               char **messages) {
  if (messages)
    *messages = nullptr;
  if (status)
    *status = 2;
  std::string error;
  std::unique_ptr<overlap::exec::DeviceLayer> layer;
  if (!context)
    error = "no context (overlapDeviceContextCreate failed?)";
  else if (!program)
    error = "no program library given";
  else
    layer =
        overlap::exec::createDeviceLayerOn(context->context, program, error);
  if (layer) {
    if (status)
      *status = 0;
    return new OverlapDeviceLayer{std::move(layer)};
  }
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return nullptr;
}

void overlapDeviceContextRelease(OverlapDeviceContext *context) {
  delete context;
}

int64_t overlapDeviceContextsCreated(void) { return deviceContextsCreated; }

OverlapDeviceLayer *
overlapDeviceLayerCreate(const char *program, const uint8_t *uniqueId,
                         int ranks, int rank, int device, int64_t waitTimeoutMs,
                         int64_t initTimeoutMs, int *status, char **messages) {
  if (messages)
    *messages = nullptr;
  if (status)
    *status = 2;
  std::string error;
  bool noDevice = false;
  std::unique_ptr<overlap::exec::DeviceLayer> layer;
  std::shared_ptr<overlap::exec::DeviceContext> context;
  if (!program)
    error = "no program library given";
  else if (overlap::exec::loadRuntime(error) &&
           (context = overlap::exec::createDeviceContext(
                uniqueId, ranks, rank, device, waitTimeoutMs, initTimeoutMs,
                noDevice, error))) {
    ++deviceContextsCreated;
    layer = overlap::exec::createDeviceLayerOn(context, program, error);
  }
  if (layer) {
    if (status)
      *status = 0;
    return new OverlapDeviceLayer{std::move(layer)};
  }
  if (status)
    *status = noDevice ? 3 : 2;
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return nullptr;
}

int overlapDeviceLayerCall(OverlapDeviceLayer *layer, void *stream,
                           const void *const *inputs, const size_t *inputBytes,
                           size_t numInputs, void *const *outputs,
                           const size_t *outputBytes, size_t numOutputs,
                           char **messages) {
  if (messages)
    *messages = nullptr;
  std::string error = "no layer (overlapDeviceLayerCreate failed?)";
  if (layer && layer->layer->call(stream, inputs, inputBytes, numInputs,
                                  outputs, outputBytes, numOutputs, error))
    return 0;
  if (messages)
    *messages = copy("overlap: error: " + error + "\n");
  return 2;
}

void overlapDeviceLayerDestroy(OverlapDeviceLayer *layer) { delete layer; }
