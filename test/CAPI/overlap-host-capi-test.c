/*===- overlap-host-capi-test.c - The loader's C API, from C --------------===*\
|*                                                                            *|
|* libOverlapHostCAPI.so (overlap-c/Loader.h, no MLIR) from a C program: the  *|
|* output accessors with NULL and out-of-range arguments, overlapRunInputs    *|
|* with the wrong number of inputs, and a run of argv[1] (examples/mlp.mlir   *|
|* compiled) on inputs whose result is exact. host-capi.test checks the       *|
|* output. With --run, overlapRun on many programs in one process: the        *|
|* hostile ones of issue 25 (host-capi-hostile.test).                         *|
\*===----------------------------------------------------------------------===*/

#include "overlap-c/Loader.h"
#include "overlap-c/Planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);       \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Every accessor is NULL-safe: a NULL handle, a rank or an output out of
   range gives 0 or NULL, and destroying NULL does nothing. */
static void checkAccessors(const OverlapOutputs *o, int ranks, int count) {
  EXPECT(overlapOutputsRanks(o) == ranks);
  EXPECT(overlapOutputsCount(o) == count);
  EXPECT(overlapOutputsName(o, -1) == NULL);
  EXPECT(overlapOutputsName(o, count) == NULL);
  EXPECT(overlapOutputsType(o, -1) == NULL);
  EXPECT(overlapOutputsType(o, count) == NULL);
  EXPECT(overlapOutputsBytes(o, -1) == 0);
  EXPECT(overlapOutputsBytes(o, count) == 0);
  EXPECT(overlapOutputsData(o, 0, -1) == NULL);
  EXPECT(overlapOutputsData(o, 0, count) == NULL);
  EXPECT(overlapOutputsData(o, -1, 0) == NULL);
  EXPECT(overlapOutputsData(o, ranks, 0) == NULL);
}

/* Writes the bytes of `from` over `to` in place (same inode, as a compiler
   or cp rewrites its output), so that a loader that kept `to` mapped, or
   kept the handle of its first dlopen, would see the change. */
static int copyOver(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  FILE *out = in ? fopen(to, "wb") : NULL;
  char buffer[1 << 16];
  size_t n;
  int ok = in && out;
  while (ok && (n = fread(buffer, 1, sizeof(buffer), in)) > 0)
    ok = fwrite(buffer, 1, n, out) == n;
  if (in)
    fclose(in);
  if (out && fclose(out) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "cannot copy %s to %s\n", from, to);
  return ok;
}

static void printFirstLine(const char *prefix, const char *text) {
  size_t n = text ? strcspn(text, "\n") : 0;
  printf("%s%.*s\n", prefix, (int)n, text ? text : "");
}

/* --run [--as PATH] PROGRAM...: overlapRun (the defaults of overlap-exec)
   on each program in turn in this one process, each first copied over PATH
   when --as is given (a program rebuilt at the same path while the process
   lives). Prints the status, the report but its timing line, and the first
   line of the messages. Exit status 0 unless a copy failed: what each run
   gave is for FileCheck. */
static int runEach(int argc, char **argv) {
  const char *as = NULL;
  int i = 0;
  if (i + 1 < argc && strcmp(argv[i], "--as") == 0) {
    as = argv[i + 1];
    i += 2;
  }
  for (; i < argc; ++i) {
    const char *program = argv[i];
    if (as) {
      if (!copyOver(argv[i], as))
        return 2;
      program = as;
    }
    const char *name = strrchr(argv[i], '/');
    OverlapRunOptions options = overlapRunOptionsDefault();
    options.program = program;
    char *report = NULL, *messages = NULL;
    int status = overlapRun(&options, &report, &messages);
    printf("%s: status %d\n", name ? name + 1 : argv[i], status);
    for (const char *line = report; line && *line;) {
      size_t n = strcspn(line, "\n");
      if (strncmp(line, "host run:", 9) != 0)
        printf("  report: %.*s\n", (int)n, line);
      line += n + (line[n] == '\n');
    }
    printFirstLine("  messages: ", messages);
    overlapFree(report);
    overlapFree(messages);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--run") == 0)
    return runEach(argc - 2, argv + 2);
  if (argc != 2) {
    fprintf(stderr, "usage: overlap-host-capi-test MLP.so\n"
                    "       overlap-host-capi-test --run [--as PATH] "
                    "PROGRAM...\n");
    return 2;
  }
  checkAccessors(NULL, 0, 0);
  EXPECT(overlapOutputsName(NULL, 0) == NULL);
  EXPECT(overlapOutputsType(NULL, 0) == NULL);
  EXPECT(overlapOutputsBytes(NULL, 0) == 0);
  EXPECT(overlapOutputsData(NULL, 0, 0) == NULL);
  overlapOutputsDestroy(NULL);
  printf("null accessors: checked\n");

  /* No options: 2 and a message, never a handle. */
  OverlapOutputs *outputs = (OverlapOutputs *)&failures; /* not NULL */
  char *report = NULL, *messages = NULL;
  int status = overlapRunInputs(NULL, NULL, 0, &outputs, &report, &messages);
  EXPECT(outputs == NULL);
  printf("no options: status %d: %s", status, messages ? messages : "(null)\n");
  overlapFree(report);
  overlapFree(messages);

  /* The MLP takes 3 arguments on each of its grid's 4 ranks: 12 inputs. */
  OverlapRunOptions options = overlapRunOptionsDefault();
  options.program = argv[1];
  enum { Ranks = 4, Args = 3 };
  static float x[256 * 512], w1[512 * 512], w2[512 * 512];
  /* Powers of two: every product and sum is exact, so the result is
     4 ranks x 512 x (512 x 1/8 x 1/8) x 1/8 = 2048 in every element. */
  for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); ++i)
    x[i] = 0.125f;
  for (size_t i = 0; i < sizeof(w1) / sizeof(w1[0]); ++i)
    w1[i] = w2[i] = 0.125f;
  const void *inputs[Ranks * Args];
  for (int r = 0; r < Ranks; ++r) {
    inputs[r * Args + 0] = x;
    inputs[r * Args + 1] = w1;
    inputs[r * Args + 2] = w2;
  }
  outputs = (OverlapOutputs *)&failures;
  status = overlapRunInputs(&options, inputs, Ranks * Args - 1, &outputs,
                            &report, &messages);
  EXPECT(outputs == NULL);
  EXPECT(report && report[0] == '\0');
  printf("11 inputs: status %d: %s", status, messages ? messages : "(null)\n");
  overlapFree(report);
  overlapFree(messages);

  /* Options of another header's layout are refused, not misread. */
  OverlapRunOptions other = options;
  other.size = 4;
  report = messages = NULL;
  status = overlapRun(&other, &report, &messages);
  printf("other layout: status %d: %s", status,
         messages ? messages : "(null)\n");
  overlapFree(report);
  overlapFree(messages);
  /* Inputs counted but not given. */
  status = overlapRunInputs(&options, NULL, Ranks * Args, NULL, NULL, NULL);
  printf("null inputs: status %d\n", status);

  status = overlapRunInputs(&options, inputs, Ranks * Args, &outputs, &report,
                            &messages);
  printf("run: status %d\n", status);
  if (status != 0 || !outputs) {
    fprintf(stderr, "%s%s", report ? report : "", messages ? messages : "");
    return 1;
  }
  printf("report with checksums: %s\n",
         report && strstr(report, "fnv1a") ? "yes" : "no");
  overlapFree(report);
  overlapFree(messages);
  /* No report asked for (none is made): the same outputs. */
  OverlapOutputs *unreported = NULL;
  status = overlapRunInputs(&options, inputs, Ranks * Args, &unreported, NULL,
                            NULL);
  const float *first = (const float *)overlapOutputsData(unreported, 0, 0);
  printf("run without a report: status %d, result0[0] %g\n", status,
         first ? (double)first[0] : -1.0);
  overlapOutputsDestroy(unreported);
  int count = overlapOutputsCount(outputs);
  checkAccessors(outputs, Ranks, count);
  for (int i = 0; i < count; ++i)
    printf("output %d: %s %s %zu bytes\n", i, overlapOutputsName(outputs, i),
           overlapOutputsType(outputs, i), overlapOutputsBytes(outputs, i));
  int exact = 0;
  for (int r = 0; r < Ranks; ++r) {
    const float *y = (const float *)overlapOutputsData(outputs, r, 0);
    size_t n = overlapOutputsBytes(outputs, 0) / sizeof(float);
    for (size_t i = 0; y && i < n; ++i)
      exact += y[i] == 2048.0f;
  }
  printf("result0 == 2048: %d of %d elements\n", exact, Ranks * 256 * 512);
  overlapOutputsDestroy(outputs);
  printf("failures: %d\n", failures);
  return failures ? 1 : 0;
}
