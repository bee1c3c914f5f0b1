//===- Init.h - The initial values of model parameters ----------*- C++ -*-===//
//
// The one definition of a parameter's initial value (the `init` of
// `lru.param`, docs/dialect.md), shared by the reference interpreter and the
// generated backends, so that a model starts from the same numbers
// everywhere.
//
// Element i of the parameter `name` under seed s draws from Philox4x32-10
// with key {s lo32, s hi32} and counter {i lo32, i hi32, fnv1a32(name),
// kInitTag}: u1 = uniformOpen(word 0), u2 = uniformOpen(word 1). Parameters
// with different names are independent streams, and a parameter's values do
// not depend on which other parameters exist. Values are rounded to float
// (models train in fp32) and stored as double.
//
//   zeros, ones
//   normal{std}              std · sqrt(-2 ln u1) · cos(2π u2)   (Box-Muller)
//   uniform{low, high}       low + (high - low) · u1
//   lru_nu{r_min, r_max}     log(-½ log(u1 (r_max² - r_min²) + r_min²)),
//                            so |λ| = exp(-exp(nu)) is uniform on the ring
//   lru_theta{max_phase}     log(max_phase · u1) (u1 of theta's own stream)
//   lru_gamma{nu, theta}     log(sqrt(1 - |λ|²)), |λ| = exp(-exp(nu_i)) of
//                            the (float-rounded) values of the param `nu`;
//                            theta does not enter |λ| and is not read.
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_CORE_INIT_H
#define LRUC_CORE_INIT_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lruc::core {

/// The last counter word of every init draw ("INIT"), which keeps init
/// streams apart from dropout streams (whose last word is the step).
inline constexpr uint32_t kInitTag = 0x494E4954;

/// Mirrors the dialect's InitKind.
enum class InitKind { Zeros, Ones, Normal, Uniform, LruNu, LruTheta, LruGamma };

/// How one parameter is initialised; only the fields of its kind are read.
struct InitSpec {
  InitKind kind = InitKind::Zeros;
  double std = 1;            ///< normal
  double low = 0, high = 1;  ///< uniform
  double rMin = 0, rMax = 1; ///< lru_nu
  double maxPhase = 0;       ///< lru_theta
  std::string nu, theta;     ///< lru_gamma: the params it derives from
};

/// Fills `values` (already sized to the parameter's element count) with the
/// initial value of parameter `name`. For lru_gamma, `nuValues` are the
/// values of the param `spec.nu`; returns false (and leaves `values`) when
/// they are missing or of another size. Always true for other kinds.
bool initParameter(const InitSpec &spec, std::string_view name, uint64_t seed,
                   std::vector<double> &values,
                   const std::vector<double> *nuValues = nullptr);

struct ParameterDecl {
  std::string name;
  InitSpec init;
  size_t numElements = 0;
};

struct InitError {
  std::string param; ///< the parameter that could not be initialised
  std::string message;
};

using ParameterValues = std::map<std::string, std::vector<double>, std::less<>>;

/// Initialises every declared parameter into `values`, each lru_gamma after
/// the nu param it derives from. Fails on a name declared twice, or an
/// lru_gamma whose nu param is missing or of another size.
std::optional<InitError> initParameters(const std::vector<ParameterDecl> &decls,
                                        uint64_t seed, ParameterValues &values);

} // namespace lruc::core

#endif // LRUC_CORE_INIT_H
