//===- Init.cpp - The initial values of model parameters ------------------===//

#include "lruc/core/Init.h"

#include "lruc/core/Random.h"

#include <cmath>

namespace lruc::core {

namespace {

constexpr double kPi = 3.14159265358979323846;

double roundToFloat(double x) { return double(float(x)); }

/// The two open-interval uniforms of element `index` of the stream `nameHash`.
std::pair<double, double> uniforms(uint64_t seed, uint32_t nameHash,
                                   uint64_t index) {
  PhiloxKey key = {uint32_t(seed), uint32_t(seed >> 32)};
  PhiloxCounter counter = {uint32_t(index), uint32_t(index >> 32), nameHash,
                           kInitTag};
  PhiloxCounter out = philox4x32(counter, key);
  return {uniformOpen(out[0]), uniformOpen(out[1])};
}

double drawn(const InitSpec &spec, double u1, double u2) {
  switch (spec.kind) {
  case InitKind::Normal:
    return spec.std * std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
  case InitKind::Uniform:
    return spec.low + (spec.high - spec.low) * u1;
  case InitKind::LruNu: {
    double r2 = u1 * (spec.rMax * spec.rMax - spec.rMin * spec.rMin) +
                spec.rMin * spec.rMin;
    if (r2 > 0)
      return std::log(-0.5 * std::log(r2));
    // r_max below about 1e-154 squares to 0 in double: the same logarithm
    // with r_max² taken out, finite for every r_max > 0.
    double q = spec.rMin / spec.rMax;
    return std::log(-0.5 * (2 * std::log(spec.rMax) +
                            std::log(u1 * (1 - q * q) + q * q)));
  }
  case InitKind::LruTheta:
    return std::log(spec.maxPhase * u1);
  default: // not drawn
    return 0;
  }
}

} // namespace

bool initParameter(const InitSpec &spec, std::string_view name, uint64_t seed,
                   std::vector<double> &values,
                   const std::vector<double> *nuValues) {
  switch (spec.kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    values.assign(values.size(), spec.kind == InitKind::Ones ? 1.0 : 0.0);
    return true;
  case InitKind::LruGamma:
    if (!nuValues || nuValues->size() != values.size())
      return false;
    for (size_t i = 0; i < values.size(); ++i) {
      double magnitude = std::exp(-std::exp((*nuValues)[i]));
      values[i] = roundToFloat(std::log(std::sqrt(1 - magnitude * magnitude)));
    }
    return true;
  case InitKind::Normal:
  case InitKind::Uniform:
  case InitKind::LruNu:
  case InitKind::LruTheta: {
    uint32_t nameHash = fnv1a32(name);
    for (size_t i = 0; i < values.size(); ++i) {
      auto [u1, u2] = uniforms(seed, nameHash, i);
      values[i] = roundToFloat(drawn(spec, u1, u2));
    }
    return true;
  }
  }
  return false;
}

std::optional<InitError> initParameters(const std::vector<ParameterDecl> &decls,
                                        uint64_t seed,
                                        ParameterValues &values) {
  values.clear();
  std::map<std::string_view, const ParameterDecl *> byName;
  for (const ParameterDecl &decl : decls) {
    if (!byName.emplace(decl.name, &decl).second)
      return InitError{decl.name, "is declared twice"};
    values[decl.name].resize(decl.numElements);
  }
  // A gamma derives from a nu that is not a gamma: two passes suffice.
  for (bool gammas : {false, true}) {
    for (const ParameterDecl &decl : decls) {
      if ((decl.init.kind == InitKind::LruGamma) != gammas)
        continue;
      const std::vector<double> *nu = nullptr;
      if (gammas) {
        auto source = byName.find(decl.init.nu);
        if (source == byName.end() ||
            source->second->init.kind == InitKind::LruGamma)
          return InitError{decl.name, "derives from '" + decl.init.nu +
                                          "', which is not a nu parameter"};
        nu = &values.find(decl.init.nu)->second;
        if (nu->size() != decl.numElements)
          return InitError{decl.name,
                           "derives from '" + decl.init.nu + "', which has " +
                               std::to_string(nu->size()) + " elements, not " +
                               std::to_string(decl.numElements)};
      }
      initParameter(decl.init, decl.name, seed, values[decl.name], nu);
    }
  }
  return std::nullopt;
}

} // namespace lruc::core
