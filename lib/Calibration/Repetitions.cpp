//===- Repetitions.cpp - The order of a timed window's repetitions -------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Repetitions.h"

#include <algorithm>

using namespace overlap;
using namespace overlap::calibration;

std::vector<Repetition> calibration::repetitionPlan(int warmup, int iters,
                                                    bool gate) {
  std::vector<Repetition> plan;
  const int untimed = std::max(warmup, 1);
  for (int i = 0; i < untimed; ++i)
    plan.push_back({gate && i > 0, false});
  for (int i = 0; i < std::max(iters, 0); ++i)
    plan.push_back({gate, true});
  return plan;
}

void calibration::runRepetition(RepetitionSteps &steps, bool ranks,
                                Repetition repetition) {
  // Both streams idle, so the start event marks the start of the work.
  steps.synchronize();
  const bool gated = repetition.gated && steps.closeGate();
  // Behind the gate on the start stream: on the device it completes once
  // every rank's gate is open, i.e. every rank has enqueued its window.
  if (ranks)
    steps.barrier();
  steps.recordStart();
  steps.enqueue();
  steps.recordStop();
  if (gated)
    steps.openGate();
  steps.collect(repetition.timed);
}

void calibration::runRepetitions(RepetitionSteps &steps, bool ranks, int warmup,
                                 int iters) {
  for (Repetition repetition : repetitionPlan(warmup, iters, true))
    runRepetition(steps, ranks, repetition);
}
