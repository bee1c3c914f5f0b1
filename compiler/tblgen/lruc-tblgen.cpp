//===- lruc-tblgen.cpp - TableGen backends of lruc ------------------------===//
//
//   lruc-tblgen -gen-lru-derivatives LRUDerivatives.td -I ... -o X.cpp.inc
//
// Turns the derivative rules of LRUDerivatives.td into external models of
// AutodiffOpInterface, one per op, and a function that attaches them all. A
// rule lists one dag per operand of the op, in ODS order:
//
//   def : Derivative<LRU_MulOp, [(Mul $dy, (Conj $rhs)), (Mul $dy, (Conj $lhs))]>;
//
// A dag's operator is an AdjointFn naming an AdjointBuilder method; its
// arguments are nested dags, `$dy` (the result's adjoint), `$result`, an
// operand or attribute of the op by its ODS name, or a string holding a C++
// literal. `(NoAdjoint)` marks an operand without one.
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Operator.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"
#include "llvm/TableGen/TableGenBackend.h"

using namespace llvm;

namespace {

enum class Action { GenDerivatives };

cl::opt<Action> action(
    cl::desc("Action to perform:"),
    cl::values(clEnumValN(Action::GenDerivatives, "gen-lru-derivatives",
                          "Generate AutodiffOpInterface external models")));

/// The C++ expression for one argument of a rule's dag.
std::string emitArg(const Init *arg, StringRef name,
                    const mlir::tblgen::Operator &op, const Record *rule);

std::string emitDag(const DagInit *dag, const mlir::tblgen::Operator &op,
                    const Record *rule) {
  const Record *fn = dag->getOperatorAsDef(rule->getLoc());
  if (!fn->isSubClassOf("AdjointFn"))
    PrintFatalError(rule->getLoc(), "'" + fn->getName() +
                                        "' is not an AdjointFn");
  std::string call = ("ab." + fn->getValueAsString("method") + "(").str();
  for (unsigned i = 0, e = dag->getNumArgs(); i != e; ++i) {
    if (i)
      call += ", ";
    call += emitArg(dag->getArg(i), dag->getArgNameStr(i), op, rule);
  }
  return call + ")";
}

std::string emitArg(const Init *arg, StringRef name,
                    const mlir::tblgen::Operator &op, const Record *rule) {
  if (auto *dag = dyn_cast<DagInit>(arg))
    return emitDag(dag, op, rule);
  if (auto *literal = dyn_cast<StringInit>(arg))
    return literal->getValue().str();
  if (!isa<UnsetInit>(arg) || name.empty())
    PrintFatalError(rule->getLoc(), "a rule argument must be a dag, a "
                                    "\"literal\" or a $name");
  if (name == "dy")
    return "dy";
  if (name == "result")
    return "operation->getResult(0)";
  for (int i = 0, e = op.getNumArgs(); i != e; ++i)
    if (op.getArgName(i) == name)
      return "op." + op.getGetterName(name) + "()";
  PrintFatalError(rule->getLoc(), "'" + op.getOperationName() +
                                      "' has no operand or attribute '" +
                                      name + "'");
}

bool emitDerivatives(raw_ostream &os, RecordKeeper &records) {
  emitSourceFileHeader("AutodiffOpInterface models of lru ops", os);
  std::vector<std::string> registrations;
  os << "namespace {\n";
  for (const Record *rule : records.getAllDerivedDefinitions("Derivative")) {
    mlir::tblgen::Operator op(rule->getValueAsDef("op"));
    if (op.getNumVariableLengthOperands() != 0)
      PrintFatalError(rule->getLoc(), "rules for ops with optional or "
                                      "variadic operands are written in C++");
    const ListInit *adjoints = rule->getValueAsListInit("adjoints");
    if (int(adjoints->size()) != op.getNumOperands())
      PrintFatalError(rule->getLoc(),
                      formatv("'{0}' has {1} operands but the rule gives {2} "
                              "adjoints",
                              op.getOperationName(), op.getNumOperands(),
                              adjoints->size()));
    std::string model = (op.getCppClassName() + "Derivative").str();
    std::string cppOp = op.getQualCppClassName();
    os << formatv("struct {0}\n    : public ::lru::AutodiffOpInterface::"
                  "ExternalModel<{0}, {1}> {{\n",
                  model, cppOp);
    os << "  ::mlir::LogicalResult\n  buildAdjoints(::mlir::Operation "
          "*operation, ::lru::AdjointBuilder &ab,\n"
          "                ::mlir::ValueRange resultAdjoints,\n"
          "                ::llvm::SmallVectorImpl<::mlir::Value> "
          "&operandAdjoints) const {\n";
    os << formatv("    auto op = ::llvm::cast<{0}>(operation);\n", cppOp);
    os << "    (void)op;\n";
    os << "    operandAdjoints.assign(operation->getNumOperands(), "
          "::mlir::Value());\n";
    os << "    ::mlir::Value dy = resultAdjoints[0];\n";
    os << "    if (!dy)\n      return ::mlir::success();\n";
    for (unsigned i = 0; i < adjoints->size(); ++i) {
      auto *dag = dyn_cast<DagInit>(adjoints->getElement(i));
      if (!dag)
        PrintFatalError(rule->getLoc(), "each adjoint must be a dag");
      if (dag->getOperatorAsDef(rule->getLoc())->getName() == "NoAdjoint")
        continue;
      os << formatv("    operandAdjoints[{0}] = {1};\n", i,
                    emitDag(dag, op, rule));
    }
    os << "    return ::mlir::success();\n  }\n};\n\n";
    registrations.push_back(formatv("  {0}::attachInterface<{1}>(context);\n",
                                    cppOp, model)
                                .str());
  }
  os << "} // namespace\n\n";
  os << "static void registerGeneratedDerivatives(::mlir::MLIRContext "
        "&context) {\n";
  for (const std::string &line : registrations)
    os << line;
  os << "}\n";
  return false;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::ParseCommandLineOptions(argc, argv);
  return TableGenMain(argv[0], [](raw_ostream &os, RecordKeeper &records) {
    switch (action) {
    case Action::GenDerivatives:
      return emitDerivatives(os, records);
    }
    return true;
  });
}
