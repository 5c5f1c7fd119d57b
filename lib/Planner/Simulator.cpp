//===- Simulator.cpp - Two-stream pipeline timeline ------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Simulator.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <limits>

using namespace llvm;
using namespace overlap::planner;

const SimTask &SimResult::task(Stream stream, size_t tile) const {
  size_t n = numTiles();
  assert(tile < n && "tile out of range");
  return tasks[(stream == Stream::Compute ? 0 : n) + tile];
}

double overlap::planner::pipelineMakespan(ArrayRef<double> producerUs,
                                          ArrayRef<double> consumerUs,
                                          double cP, double cC) {
  assert(producerUs.size() == consumerUs.size() && "one task per tile each");
  PipelineState s;
  for (size_t i = 0; i < producerUs.size(); ++i)
    s = pipelineStep(s, producerUs[i], consumerUs[i], cP, cC);
  return s.timeUs + s.backlogUs;
}

SimResult overlap::planner::simulate(const PipelineSpec &spec) {
  assert(spec.computeUs.size() == spec.commUs.size() &&
         "one task per tile on each stream");
  const size_t n = spec.computeUs.size();
  bool commFirst = spec.order == PipelineOrder::CommThenCompute;
  ArrayRef<double> prodWork = commFirst ? spec.commUs : spec.computeUs;
  ArrayRef<double> consWork = commFirst ? spec.computeUs : spec.commUs;
  double cP = commFirst ? spec.commContention : spec.computeContention;
  double cC = commFirst ? spec.computeContention : spec.commContention;

  std::vector<double> prodStart(n), prodEnd(n), consStart(n), consEnd(n);
  // Event-driven: at each step at most one producer and one consumer task
  // are active; advance to the earliest completion.
  double t = 0;
  size_t pi = 0, ci = 0; // next task to finish on each stream
  bool pActive = false, cActive = false;
  double pRem = 0, cRem = 0; // remaining uncontended work
  while (ci < n) {
    if (!pActive && pi < n) {
      pActive = true;
      pRem = prodWork[pi];
      prodStart[pi] = t;
    }
    if (!cActive && ci < pi) {
      cActive = true;
      cRem = consWork[ci];
      consStart[ci] = t;
    }
    // Zero-length tasks finish where they start (so does a nan one: the
    // loop must end whatever it is given; finishPlan refuses such plans).
    if (pActive && !(pRem > 0)) {
      prodEnd[pi++] = t;
      pActive = false;
      continue;
    }
    if (cActive && !(cRem > 0)) {
      consEnd[ci++] = t;
      cActive = false;
      continue;
    }
    bool both = pActive && cActive;
    double sp = both ? cP : 1.0; // time per unit of work
    double sc = both ? cC : 1.0;
    double tp = pActive ? pRem * sp : std::numeric_limits<double>::infinity();
    double tc = cActive ? cRem * sc : std::numeric_limits<double>::infinity();
    assert((pActive || cActive) && "a consumer always has a producer");
    double dt = std::min(tp, tc);
    t += dt;
    if (pActive)
      pRem = tp <= dt ? 0 : pRem - dt / sp;
    if (cActive)
      cRem = tc <= dt ? 0 : cRem - dt / sc;
    if (pActive && pRem == 0) {
      prodEnd[pi++] = t;
      pActive = false;
    }
    if (cActive && cRem == 0) {
      consEnd[ci++] = t;
      cActive = false;
    }
  }

  SimResult r;
  r.order = spec.order;
  r.tasks.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    SimTask &comp = r.tasks[i];
    SimTask &comm = r.tasks[n + i];
    comp.stream = Stream::Compute;
    comm.stream = Stream::Comm;
    comp.tile = comm.tile = i;
    comp.workUs = spec.computeUs[i];
    comm.workUs = spec.commUs[i];
    SimTask &prod = commFirst ? comm : comp;
    SimTask &cons = commFirst ? comp : comm;
    prod.startUs = prodStart[i];
    prod.endUs = prodEnd[i];
    cons.startUs = consStart[i];
    cons.endUs = consEnd[i];
    r.computeWorkUs += spec.computeUs[i];
    r.commWorkUs += spec.commUs[i];
  }
  r.makespanUs = n ? consEnd[n - 1] : 0.0;
  return r;
}

std::string overlap::planner::toChromeTrace(const SimResult &result,
                                            ArrayRef<int64_t> tileRows,
                                            StringRef title) {
  std::string out;
  raw_string_ostream os(out);
  json::OStream j(os, 1);
  auto meta = [&](StringRef name, int tid, StringRef value) {
    j.object([&] {
      j.attribute("name", name);
      j.attribute("ph", "M");
      j.attribute("pid", 1);
      j.attribute("tid", tid);
      j.attributeObject("args", [&] { j.attribute("name", value); });
    });
  };
  j.object([&] {
    j.attributeArray("traceEvents", [&] {
      meta("process_name", 0, title);
      meta("thread_name", 1, "compute");
      meta("thread_name", 2, "comm");
      for (const SimTask &t : result.tasks) {
        bool compute = t.stream == Stream::Compute;
        std::string name =
            formatv("{0} {1}", compute ? "gemm" : "comm", t.tile);
        if (t.tile < tileRows.size())
          name += formatv(" ({0} rows)", tileRows[t.tile]).str();
        j.object([&] {
          j.attribute("name", name);
          j.attribute("cat", compute ? "compute" : "comm");
          j.attribute("ph", "X");
          j.attribute("pid", 1);
          j.attribute("tid", compute ? 1 : 2);
          j.attribute("ts", t.startUs);
          j.attribute("dur", t.endUs - t.startUs);
          j.attributeObject("args", [&] {
            j.attribute("tile", static_cast<int64_t>(t.tile));
            if (t.tile < tileRows.size())
              j.attribute("rows", tileRows[t.tile]);
            j.attribute("work_us", t.workUs);
          });
        });
      }
    });
  });
  os << "\n";
  return out;
}
