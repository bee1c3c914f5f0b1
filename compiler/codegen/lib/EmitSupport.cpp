//===- EmitSupport.cpp - What the C++ and CUDA emitters share -------------===//

#include "EmitSupport.h"
#include "lruc/core/Random.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace lruc::emit {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool isComplex(Type type) {
  return isa<ComplexType>(cast<ShapedType>(type).getElementType());
}

std::string elementType(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  if (e.isF32())
    return "float";
  if (isa<ComplexType>(e))
    return "cfloat";
  if (e.isInteger(32))
    return "int32_t";
  if (e.isInteger(64))
    return "int64_t";
  return "";
}

std::string dimExpr(int64_t d) {
  return ShapedType::isDynamic(d) ? "B" : std::to_string(d);
}

std::string productExpr(ArrayRef<int64_t> dims) {
  if (dims.empty())
    return "1";
  std::string s;
  for (int64_t d : dims)
    s += (s.empty() ? "" : " * ") + dimExpr(d);
  return s;
}

IndexOrigin indexOrigin(Value indices) {
  if (auto padded = indices.getDefiningOp<lru::ZeroPaddingOp>())
    indices = padded.getX();
  IndexOrigin origin;
  origin.argument = dyn_cast<BlockArgument>(indices);
  if (BlockArgument arg = origin.argument)
    if (auto owner =
            dyn_cast<mlir::func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto tag = owner.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "lru.input"))
        origin.input = tag.str();
  auto type = cast<RankedTensorType>(indices.getType());
  if (type.getRank() == 2 && !type.isDynamicDim(1))
    origin.steps = type.getDimSize(1);
  return origin;
}

std::string quoted(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string countExpr(Value v) { return productExpr(tensorType(v).getShape()); }

std::string broadcastSourceIndex(lru::BroadcastOp op, StringRef flat,
                                 StringRef column) {
  // The sum over x's dims k of the element's coordinate in dims[k] times
  // x's stride of k.
  auto shape = tensorType(op.getResult()).getShape();
  int64_t last = int64_t(shape.size()) - 1;
  Coordinates to(column.empty() ? shape : shape.drop_back());
  Coordinates from(tensorType(op.getX()));
  std::string index;
  for (auto [k, d] : llvm::enumerate(op.getDims())) {
    std::string coordinate =
        !column.empty() && d == last ? column.str() : to.coordinate(d, flat);
    std::string stride = from.stride(int64_t(k));
    index += (index.empty() ? "" : " + ") + coordinate +
             (stride == "1" ? "" : " * " + stride);
  }
  return index.empty() ? "0" : index;
}

std::string floatLiteral(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.9g", v);
  os.flush();
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::vector<std::string> elementLiterals(DenseElementsAttr attr) {
  std::vector<std::string> values;
  Type e = attr.getElementType();
  size_t n = attr.isSplat() ? 1 : size_t(attr.getNumElements());
  if (e.isF32()) {
    auto all = attr.getValues<APFloat>();
    for (size_t i = 0; i < n; ++i)
      values.push_back(floatLiteral(all[i].convertToDouble()));
  } else if (isa<ComplexType>(e)) {
    auto all = attr.getValues<std::complex<APFloat>>();
    for (size_t i = 0; i < n; ++i) {
      std::complex<APFloat> c = all[i];
      values.push_back("cfloat(" + floatLiteral(c.real().convertToDouble()) +
                       ", " + floatLiteral(c.imag().convertToDouble()) + ")");
    }
  } else {
    auto all = attr.getValues<APInt>();
    for (size_t i = 0; i < n; ++i)
      values.push_back(std::to_string(all[i].getSExtValue()));
  }
  return values;
}

std::string splatLiteral(arith::ConstantOp op) {
  return elementLiterals(cast<DenseElementsAttr>(op.getValue()))[0];
}

std::string substitute(StringRef expr, ArrayRef<std::string> args) {
  std::string text = expr.str();
  for (auto [i, arg] : llvm::enumerate(args)) {
    std::string placeholder = "$" + std::to_string(i);
    for (size_t at = 0; (at = text.find(placeholder, at)) != std::string::npos;
         at += arg.size())
      text.replace(at, placeholder.size(), arg);
  }
  return text;
}

std::optional<std::string> scalarTemplate(Operation *op, StringRef math) {
  using namespace lru;
  std::string m = math.str() + "::";
  auto approximate = [](bool on) { return on ? "true" : "false"; };
  return llvm::TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case([](NegOp) { return "-$0"; })
      .Case([&](ExpOp) { return m + "exp($0)"; })
      .Case([&](LogOp) { return m + "log($0)"; })
      .Case([&](SigmoidOp) { return m + "sigmoid($0)"; })
      .Case([&](SoftplusOp) { return m + "softplus($0)"; })
      .Case([&](RsqrtOp) { return m + "rsqrt($0)"; })
      .Case([&](SqrtOp) { return m + "sqrt($0)"; })
      .Case([&](ConjOp) { return m + "conj($0)"; })
      .Case([](StepOp) { return "$0 > 0.0f ? 1.0f : 0.0f"; })
      // x != x only for NaN (the library is built without -ffast-math).
      .Case([](NotNanOp) { return "$0 != $0 ? 0.0f : 1.0f"; })
      .Case([](NanToZeroOp) { return "$0 != $0 ? 0.0f : $0"; })
      .Case([](ReluOp) { return "$0 > 0.0f ? $0 : 0.0f"; })
      .Case([&](TanhOp) { return m + "tanh($0)"; })
      .Case([&](GeluOp o) {
        return m + "gelu($0, " + approximate(o.getApproximate()) + ")";
      })
      .Case([&](GeluGradOp o) {
        return m + "geluGrad($0, " + approximate(o.getApproximate()) + ")";
      })
      .Case([](AddOp) { return "$0 + $1"; })
      .Case([](SubOp) { return "$0 - $1"; })
      .Case([](MulOp) { return "$0 * $1"; })
      .Case([](DivOp) { return "$0 / $1"; })
      .Case([&](MaxOp) { return m + "max($0, $1)"; })
      .Case([](MaskedOp) { return "$1 != 0.0f ? $0 : 0.0f"; })
      .Case([](ComplexOp) { return "cfloat($0, $1)"; })
      .Case([&](RealOp) { return m + "real($0)"; })
      .Case([&](ImagOp) { return m + "imag($0)"; })
      .Default([](Operation *) { return std::nullopt; });
}

FusedLayout FusedLayout::of(lru::FusedOp op) {
  FusedLayout layout;
  auto shape = op.getLoopType().getShape();
  layout.nested = shape.size() >= 2 && !ShapedType::isDynamic(shape.back());
  if (layout.nested) {
    layout.last = dimExpr(shape.back());
    layout.rows = productExpr(shape.drop_back());
  }
  layout.scan = op.getScan();
  if (layout.scan)
    layout.steps = dimExpr(shape[1]);
  layout.sums = op.hasReductions();
  if (layout.sums) {
    layout.chunkRows = op.getReductionChunkRows();
    layout.chunksPerExample = op.getReductionChunksPerExample();
    layout.rowsPerExample = op.getRowsPerExample();
    layout.chunks = std::to_string(layout.chunksPerExample);
    if (ShapedType::isDynamic(shape.front()))
      layout.chunks = "B * " + layout.chunks;
  }
  return layout;
}

std::string FusedLayout::firstRowOf(StringRef c) const {
  // Chunks never cross an example: chunk c is the (c % per)-th of example
  // c / per.
  std::string per = std::to_string(chunksPerExample);
  return "(" + c.str() + ") / " + per + " * " + std::to_string(rowsPerExample) +
         " + (" + c.str() + ") % " + per + " * " + std::to_string(chunkRows);
}

std::string FusedLayout::stopRowOf(StringRef c) const {
  std::string per = std::to_string(chunksPerExample),
              rows = std::to_string(rowsPerExample),
              end = "((" + c.str() + ") % " + per + " + 1) * " +
                    std::to_string(chunkRows);
  return "(" + c.str() + ") / " + per + " * " + rows + " + (" + end + " < " +
         rows + " ? " + end + " : " + rows + ")";
}

void FusedLayout::writeChunkRows(llvm::raw_ostream &k, StringRef c,
                                 StringRef indent) const {
  k << indent << "const int64_t first = " << firstRowOf(c) << ";\n"
    << indent << "const int64_t stop = " << stopRowOf(c) << ";\n";
}

FusedBody::FusedBody(lru::FusedOp op, StringRef math, unsigned &counter,
                     ComplexStores complexStores)
    : op(op), layout(FusedLayout::of(op)), math(math.str()), counter(counter),
      complexStores(complexStores) {}

void FusedBody::bindInput(BlockArgument arg, const std::string &array) {
  scalars[arg] = array + "[i]";
  arrays[arg] = array;
}

SmallVector<lru::DropoutMaskOp> FusedBody::dropouts() const {
  lru::FusedOp group = op; // MLIR's accessors are not const
  return llvm::to_vector(
      group.getBody().front().getOps<lru::DropoutMaskOp>());
}

unsigned FusedBody::dropoutIndex(lru::DropoutMaskOp dropout) const {
  SmallVector<lru::DropoutMaskOp> all = dropouts();
  return llvm::find(all, dropout) - all.begin();
}

std::string FusedBody::keepName(lru::DropoutMaskOp dropout) const {
  return "keep" + std::to_string(dropoutIndex(dropout));
}

std::string FusedBody::siteName(lru::DropoutMaskOp dropout) const {
  return "site" + std::to_string(dropoutIndex(dropout));
}

std::string FusedBody::keyAndSiteOf(lru::DropoutMaskOp dropout) const {
  return arrayOf(dropout.getKey()) + ", " + siteName(dropout);
}

std::string FusedBody::thresholdOf(lru::DropoutMaskOp dropout) {
  return std::to_string(
             core::dropoutThreshold(dropout.getRate().convertToDouble())) +
         "u";
}

std::string FusedBody::scaleOf(lru::DropoutMaskOp dropout) {
  std::string scale;
  // A hexadecimal literal: exact, whatever the float.
  llvm::raw_string_ostream(scale) << llvm::format(
      "%af", double(core::dropoutScale(dropout.getRate().convertToDouble())));
  return scale;
}

void FusedBody::writeConstants(llvm::raw_ostream &k) {
  for (Operation &inner : op.getBody().front().without_terminator()) {
    auto constant = dyn_cast<arith::ConstantOp>(inner);
    if (!constant)
      continue;
    std::string name = "c" + std::to_string(counter++);
    k << "  const " << elementType(constant.getType()) << " " << name << " = "
      << splatLiteral(constant) << ";\n";
    scalars[constant.getResult()] = name;
  }
}

LogicalResult FusedBody::writeElement(
    llvm::raw_ostream &k, llvm::function_ref<std::string(StringRef)> stateOf,
    llvm::function_ref<std::string(unsigned, StringRef)> sumOf,
    ArrayRef<std::string> outputs,
    llvm::function_ref<std::string(StringRef)> productOf,
    llvm::function_ref<std::string(llvm::raw_ostream &, StringRef)>
        scanInputOf,
    llvm::function_ref<std::string(lru::DropoutMaskOp)> keepOf) {
  Block &body = op.getBody().front();
  auto shape = op.getLoopType().getShape();
  lru::ScanOp scan = layout.scan;
  for (Operation &inner : body.without_terminator()) {
    if (isa<arith::ConstantOp>(inner))
      continue;
    if (auto reduce = dyn_cast<lru::ReduceSumOp>(inner)) {
      scalars[reduce.getResult()] = scalars.lookup(reduce.getX());
      continue; // added to its accumulator below
    }
    if (auto broadcast = dyn_cast<lru::BroadcastOp>(inner)) {
      // A contiguous broadcast reads its input at (i / inner) % count;
      // another at the element's coordinates in its mapped dims.
      std::string name = "t" + std::to_string(counter++);
      Value x = broadcast.getX();
      int64_t inner = broadcast.getInnerCount();
      std::string index;
      if (!broadcast.isContiguous())
        index = layout.nested ? broadcastSourceIndex(broadcast, "o", "j")
                              : broadcastSourceIndex(broadcast, "i");
      else if (broadcast.getDims().empty())
        index = "0";
      else if (layout.nested && inner == 1 && countExpr(x) == layout.last)
        index = "j";
      else if (layout.nested && inner == shape.back() &&
               countExpr(x) == layout.rows)
        index = "o";
      else
        index = "(i / " + std::to_string(inner) + ") % (" + countExpr(x) + ")";
      if (!arrays.count(x)) { // a splat constant, already a scalar
        scalars[broadcast.getResult()] = scalars.lookup(x);
        continue;
      }
      k << "    const " << elementType(x.getType()) << " " << name << " = "
        << arrays.lookup(x) << "[" << index << "];\n";
      scalars[broadcast.getResult()] = name;
      continue;
    }
    if (auto slice = dyn_cast<lru::SliceOp>(inner)) {
      // Along the last dim (the verifier's rule): the input's element at
      // the same row, the column moved by the offset.
      std::string name = "t" + std::to_string(counter++);
      int64_t width = tensorType(slice.getX()).getShape().back();
      int64_t size = slice.getType().getShape().back();
      std::string offset = std::to_string(slice.getOffsetAttr().getInt());
      std::string index =
          layout.nested
              ? "o * " + std::to_string(width) + " + " + offset + " + j"
              : "(i / " + std::to_string(size) + ") * " +
                    std::to_string(width) + " + " + offset + " + i % " +
                    std::to_string(size);
      k << "    const " << elementType(slice.getType()) << " " << name
        << " = " << arrays.lookup(slice.getX()) << "[" << index << "];\n";
      scalars[slice.getResult()] = name;
      continue;
    }
    if (auto shift = dyn_cast<lru::ShiftOp>(inner)) {
      // In a scan group (the verifier's rule): the input's previous step
      // (next, reversed), `init` at a sequence's first (last) real step,
      // zero past its length.
      if (!scan)
        return inner.emitOpError("outside a scan group has no element code");
      bool reverse = shift.getReverse();
      std::string name = "t" + std::to_string(counter++);
      std::string type = elementType(shift.getType());
      std::string init = shift.getInit() ? arrays.lookup(shift.getInit()) +
                                               "[s * " + layout.last + " + j]"
                                         : type + "(0.0f)";
      k << "    const " << type << " " << name << " = !real ? " << type
        << "(0.0f) : " << (reverse ? "t == length - 1" : "t == 0") << " ? "
        << init << " : " << arrays.lookup(shift.getX()) << "[i "
        << (reverse ? "+ " : "- ") << layout.last << "];\n";
      scalars[shift.getResult()] = name;
      continue;
    }
    if (scan && &inner == scan.getOperation()) {
      Value lambda = scan.getLambda();
      std::string l = tensorType(lambda).getRank() == 3
                          ? scalars.lookup(lambda)
                          : arrays.lookup(lambda) + "[j]";
      std::string name = "t" + std::to_string(counter++);
      std::string b = scalars.lookup(scan.getB());
      if (scanInputOf)
        b = scanInputOf(k, b);
      if (!stateOf)
        return success(); // only the scan's input was wanted
      if (isComplex(scan.getType())) {
        // x = lambda * x + b on the parts.
        std::string lv = name + "l", bv = name + "b", re = name + "re",
                    im = name + "im";
        std::string sr = stateOf("re"), si = stateOf("im");
        k << "    const cfloat " << lv << " = " << l << ", " << bv << " = " << b
          << ";\n"
          << "    const float " << re << " = " << lv << ".real() * " << sr
          << " - " << lv << ".imag() * " << si << " + " << bv << ".real();\n"
          << "    const float " << im << " = " << lv << ".real() * " << si
          << " + " << lv << ".imag() * " << sr << " + " << bv << ".imag();\n"
          << "    " << sr << " = real ? " << re << " : " << sr << ";\n"
          << "    " << si << " = real ? " << im << " : " << si << ";\n"
          << "    const cfloat " << name << " = real ? cfloat(" << re << ", "
          << im << ") : cfloat(0);\n";
        if (productOf) {
          std::string pr = productOf("re"), pi = productOf("im");
          k << "    const float " << name << "pr = " << lv << ".real() * "
            << pr << " - " << lv << ".imag() * " << pi << ";\n"
            << "    " << pi << " = real ? " << lv << ".real() * " << pi
            << " + " << lv << ".imag() * " << pr << " : " << pi << ";\n"
            << "    " << pr << " = real ? " << name << "pr : " << pr << ";\n";
        }
      } else {
        std::string next = name + "next", state = stateOf("");
        k << "    const float " << next << " = " << l << " * " << state << " + "
          << b << ";\n"
          << "    " << state << " = real ? " << next << " : " << state << ";\n"
          << "    const float " << name << " = real ? " << next << " : 0.0f;\n";
        if (productOf)
          k << "    " << productOf("") << " = real ? " << l << " * "
            << productOf("") << " : " << productOf("") << ";\n";
      }
      scalars[scan.getResult()] = name;
      continue;
    }
    if (auto dropout = dyn_cast<lru::DropoutMaskOp>(inner)) {
      // The dropout kernel's formula (x * dropoutScale(rate) in float), so
      // that a kept value is the interpreter's rounded to float. x is read
      // kept or not: a load under the decision would wait behind it (on a
      // GPU, a memory latency a row), and a dropped element's neighbours'
      // sectors are read anyway.
      if (!keepOf)
        return inner.emitOpError("has no keep decision in this loop");
      std::string x = "t" + std::to_string(counter++);
      std::string name = "t" + std::to_string(counter++);
      k << "    const float " << x << " = " << scalars.lookup(dropout.getX())
        << ";\n"
        << "    const float " << name << " = " << keepOf(dropout) << " ? " << x
        << " * " << scaleOf(dropout) << " : 0.0f;\n";
      scalars[dropout.getResult()] = name;
      continue;
    }
    std::optional<std::string> expr = scalarTemplate(&inner, math);
    if (!expr)
      return inner.emitOpError("has no scalar code generation");
    SmallVector<std::string> operands;
    for (Value operand : inner.getOperands())
      operands.push_back(scalars.lookup(operand));
    std::string name = "t" + std::to_string(counter++);
    k << "    const " << elementType(inner.getResult(0).getType()) << " "
      << name << " = " << substitute(*expr, operands) << ";\n";
    scalars[inner.getResult(0)] = name;
  }
  if (productOf)
    return success(); // the first pass of a chunked scan stores nothing
  auto yield = cast<lru::YieldOp>(body.getTerminator());
  for (auto [n, out, value] :
       llvm::enumerate(outputs, yield.getValues())) {
    std::string v = scalars.lookup(value);
    if (value.getDefiningOp<lru::ReduceSumOp>()) {
      unsigned output = unsigned(n);
      if (isComplex(value.getType()))
        k << "    " << sumOf(output, "re") << " += " << v << ".real();\n"
          << "    " << sumOf(output, "im") << " += " << v << ".imag();\n";
      else
        k << "    " << sumOf(output, "") << " += " << v << ";\n";
      continue;
    }
    if (complexStores == ComplexStores::Parts && isComplex(value.getType()))
      k << "    reinterpret_cast<float *>(" << out << " + i)[0] = " << v
        << ".real();\n"
        << "    reinterpret_cast<float *>(" << out << " + i)[1] = " << v
        << ".imag();\n";
    else
      k << "    " << out << "[i] = " << v << ";\n";
  }
  return success();
}

} // namespace lruc::emit
