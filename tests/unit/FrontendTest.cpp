//===- FrontendTest.cpp - Unit tests of the .lru front end ----------------===//

#include "lruc/frontend/Frontend.h"
#include "lruc/frontend/Tasks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace {

using namespace lruc;

/// Parses `text`; returns the model (if any) and the diagnostics printed.
struct Parsed {
  std::optional<ast::Model> model;
  std::string diagnostics;
  unsigned errors = 0;
};

Parsed parse(const std::string &text, const ConstantOverrides &overrides = {},
             unsigned maxErrors = 20) {
  SourceFile source{"t.lru", text};
  std::ostringstream os;
  DiagnosticEngine diags(source, os, maxErrors);
  Parsed result;
  FrontendOptions options;
  options.overrides = overrides;
  result.model = parseModel(source, options, diags);
  result.diagnostics = os.str();
  result.errors = diags.errorCount();
  return result;
}

const char *kSmall = R"(let H = 8
model small {
  input tokens(vocab: 16, length: 32)
  encoder embedding(H)
  block x2 {
    norm batch
    lru(state: 2 * H, r_max: 0.99)
  }
  head linear(3)
  loss cross_entropy
}
)";

TEST(NearestWord, FindsCloseMisspellings) {
  EXPECT_EQ(nearestWord("glue", {"lru", "glu", "gelu"}), "glu");
  EXPECT_EQ(nearestWord("embeding", {"embedding", "linear"}), "embedding");
  EXPECT_EQ(nearestWord("r_mx", {"r_min", "r_max", "state"}), "r_max");
}

TEST(NearestWord, RejectsUnrelatedWords) {
  EXPECT_EQ(nearestWord("banana", {"lru", "glu", "gelu"}), "");
  EXPECT_EQ(nearestWord("x", {}), "");
}

TEST(Frontend, EvaluatesConstantsAndExpressions) {
  Parsed p = parse(kSmall);
  ASSERT_TRUE(p.model) << p.diagnostics;
  ASSERT_EQ(p.model->blocks.size(), 1u);
  EXPECT_EQ(p.model->blocks[0].repeat, 2);
  const auto &lru = std::get<ast::LRULayer>(p.model->blocks[0].layers[0].kind);
  EXPECT_EQ(lru.state, 16);
  EXPECT_DOUBLE_EQ(lru.rMax, 0.99);
  EXPECT_DOUBLE_EQ(lru.rMin, 0.0);
  EXPECT_DOUBLE_EQ(lru.maxPhase, 2 * M_PI);
  EXPECT_TRUE(lru.gammaNorm);
}

TEST(Frontend, OverridesReplaceConstantsAndTheirUses) {
  Parsed p = parse(kSmall, {{"H", 4}});
  ASSERT_TRUE(p.model) << p.diagnostics;
  EXPECT_EQ(p.model->encoder.width, 4);
  EXPECT_EQ(std::get<ast::LRULayer>(p.model->blocks[0].layers[0].kind).state, 8);
}

TEST(Frontend, UnknownOverrideIsAnError) {
  Parsed p = parse(kSmall, {{"W", 4}});
  EXPECT_FALSE(p.model);
  EXPECT_NE(p.diagnostics.find("-D W: the file defines no constant 'W'"),
            std::string::npos)
      << p.diagnostics;
}

TEST(Frontend, IgnoreTrainSkipsTheTrainSection) {
  std::string text = std::string(kSmall) + "train {\n  data cifar\n}\n";
  EXPECT_FALSE(parse(text).model); // cifar needs features, and steps are missing
  SourceFile source{"t.lru", text};
  std::ostringstream os;
  DiagnosticEngine diags(source, os);
  FrontendOptions options;
  options.ignoreTrain = true;
  auto model = parseModel(source, options, diags);
  ASSERT_TRUE(model) << os.str();
  EXPECT_FALSE(model->train);
}

TEST(Frontend, RecordsSourceLocations) {
  Parsed p = parse(kSmall);
  ASSERT_TRUE(p.model);
  EXPECT_EQ(p.model->loc.line, 2u);
  EXPECT_EQ(p.model->encoder.loc.line, 4u);
  EXPECT_EQ(p.model->encoder.loc.col, 11u);
  EXPECT_EQ(p.model->blocks[0].layers[0].loc.line, 7u);
  EXPECT_EQ(p.model->blocks[0].layers[0].loc.col, 5u);
}

TEST(Frontend, ArgumentsMaySpanLines) {
  std::string text = kSmall;
  text.replace(text.find("r_max: 0.99)"), 12, "\n      r_max: 0.99, # ring\n    )");
  Parsed p = parse(text);
  ASSERT_TRUE(p.model) << p.diagnostics;
  EXPECT_DOUBLE_EQ(
      std::get<ast::LRULayer>(p.model->blocks[0].layers[0].kind).rMax, 0.99);
}

TEST(Diagnostics, PrintsLocationSourceLineAndCaret) {
  Parsed p = parse("model m {\n\tinput tokens(vocab: 0, length: 4)\n}\n");
  EXPECT_FALSE(p.model);
  // The caret line repeats the tab so the caret lines up in any tab width.
  EXPECT_NE(p.diagnostics.find("t.lru:2:22: error: vocab must be at least 1, "
                               "got 0\n  \tinput tokens(vocab: 0, length: 4)\n"
                               "  \t" + std::string(20, ' ') + "^\n"),
            std::string::npos)
      << p.diagnostics;
}

TEST(Diagnostics, StopsAtTheErrorCap) {
  std::string text;
  for (int i = 0; i < 10; ++i)
    text += "bogus\n";
  Parsed p = parse(text, {}, 3);
  EXPECT_EQ(p.errors, 3u);
  EXPECT_NE(p.diagnostics.find("too many errors (3), stopping here"),
            std::string::npos);
}

TEST(Diagnostics, ReportsEveryErrorInOneRun) {
  Parsed p = parse("model m {\n  input tokens(vocab: 4, length: 0)\n"
                   "  encoder embedding(0)\n  head linear(0)\n"
                   "  loss cross_entropy\n}\n");
  EXPECT_EQ(p.errors, 3u) << p.diagnostics;
}

TEST(Frontend, RejectsNonTextAndDeepNesting) {
  EXPECT_FALSE(parse(std::string("model m {\0}", 11)).model);
  Parsed p = parse("let A = " + std::string(200, '(') + "1" +
                   std::string(200, ')') + "\n");
  EXPECT_NE(p.diagnostics.find("nesting deeper than"), std::string::npos);
}

TEST(Tasks, TableIsConsistent) {
  for (const TaskInfo &task : allTasks()) {
    EXPECT_EQ(findTask(task.name), &task);
    if (task.fromFiles)
      continue; // sizes and classes come from the files
    EXPECT_GT(task.length, 0);
    EXPECT_GE(task.classes, 2);
    if (task.input == ast::InputKind::Features)
      EXPECT_GT(task.channels, 0) << task.name;
    else
      EXPECT_GT(task.vocab, 0) << task.name;
  }
  EXPECT_EQ(findTask("imagenet"), nullptr);
  ASSERT_NE(findTask("tensors"), nullptr);
  EXPECT_TRUE(findTask("tensors")->fromFiles);
}

} // namespace
