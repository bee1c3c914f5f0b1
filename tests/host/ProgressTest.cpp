//===- ProgressTest.cpp - The progress bar --------------------------------===//

#include "lruc/host/Progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

using namespace lruc::host;

std::string captured(std::FILE *file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;)
    text.push_back(char(c));
  return text;
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(59.4), "59s");
  EXPECT_EQ(formatDuration(245), "4:05");
  EXPECT_EQ(formatDuration(3723), "1:02:03");
  EXPECT_EQ(formatDuration(-1), "?");
  EXPECT_EQ(formatDuration(1.0 / 0.0), "?");
}

TEST(Progress, SmoothedStartsAtTheFirstValue) {
  Smoothed s(0.9);
  EXPECT_TRUE(s.empty());
  s.add(2.0);
  EXPECT_DOUBLE_EQ(s.value(), 2.0); // bias-corrected: not 0.2
  s.add(4.0);
  EXPECT_GT(s.value(), 2.0);
  EXPECT_LT(s.value(), 4.0);
}

TEST(Progress, LinesEveryNStepsWithoutATerminal) {
  std::FILE *file = std::tmpfile();
  Progress p(file, /*terminal=*/false, 10, 0, 4);
  for (int step = 1; step <= 10; ++step)
    p.step(step, 2.0, step % 2 ? 0.25 : 0.75, 1e-3, 0.01);
  p.print("step 10: val loss 1.0000, accuracy 50.00%");
  p.finish();
  std::string text = captured(file);
  std::fclose(file);
  // Steps 4, 8 and the last; no control characters.
  // The training accuracy smoothed like the loss: 25%, 75%, 25%, 75%
  // average to 50.25% with the later steps weighing more.
  EXPECT_NE(text.find("step 4/10  40% loss 2.0000 acc 50.25% lr 1.00e-03 "
                      "100.00 steps/s ETA"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step 8/10"), std::string::npos);
  EXPECT_NE(text.find("step 10/10 100%"), std::string::npos);
  EXPECT_EQ(text.find("step 5/10"), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_NE(text.find("accuracy 50.00%\n"), std::string::npos);
}

TEST(Progress, RedrawsInPlaceOnATerminal) {
  std::FILE *file = std::tmpfile();
  Progress p(file, /*terminal=*/true, 4, 0, 100);
  p.step(1, 2.0, 0.125, 1e-3, 0.5);
  p.setAccuracy(0.5);
  p.print("an evaluation");
  p.step(4, 1.0, 0.125, 1e-3, 0.5);
  p.finish();
  std::string text = captured(file);
  std::fclose(file);
  EXPECT_NE(text.find("\r\033[Kstep 1/4 [#####...............]  25%"),
            std::string::npos)
      << text;
  // The message clears the bar, takes a line, and the bar comes back.
  EXPECT_NE(text.find("\r\033[Kan evaluation\n\r\033[Kstep 1/4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step 4/4 [####################] 100%"),
            std::string::npos);
  EXPECT_NE(text.find("loss 2.0000 acc 12.50% lr"), std::string::npos)
      << text;
  EXPECT_NE(text.find("val 50.00%"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, RateCountsOnlyThisRunsSteps) {
  std::FILE *file = std::tmpfile();
  Progress p(file, false, 100, 50, 1000); // resumed at step 50
  p.step(51, 1.0, 0.5, 1e-3, 0.25);
  p.step(52, 1.0, 0.5, 1e-3, 0.25);
  EXPECT_DOUBLE_EQ(p.stepsPerSecond(), 4.0);
  std::fclose(file);
}

} // namespace
