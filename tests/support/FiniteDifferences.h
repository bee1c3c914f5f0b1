//===- FiniteDifferences.h - Gradients against central differences -*- C++ -*-===//
//
// The one finite-difference check the gradient tests share: perturb elements
// of a tensor by ±h, recompute the loss in fp64, and compare the central
// difference with the derived gradient.
//
//===----------------------------------------------------------------------===//

#ifndef LRUC_TESTS_FINITEDIFFERENCES_H
#define LRUC_TESTS_FINITEDIFFERENCES_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace lruc::testing {

/// Checks `gradient` (d loss / d values) at about `samples` elements spread
/// over `values` (every element when there are fewer): the relative error
/// against a central difference with step `h` must be below `tolerance`,
/// relative to the larger of the two (and at least 1e-3, so that gradients
/// that vanish are compared absolutely). `values` is restored.
inline void expectMatchesFiniteDifferences(
    const std::function<double()> &loss, std::vector<double> &values,
    const std::vector<double> &gradient, size_t samples,
    const std::string &what, double h = 1e-5, double tolerance = 1e-6) {
  ASSERT_EQ(values.size(), gradient.size()) << what;
  size_t stride = std::max<size_t>(1, values.size() / samples);
  for (size_t k = 0; k < values.size(); k += stride) {
    double saved = values[k];
    values[k] = saved + h;
    double up = loss();
    values[k] = saved - h;
    double down = loss();
    values[k] = saved;
    double fd = (up - down) / (2 * h);
    double g = gradient[k];
    double scale = std::max({std::abs(fd), std::abs(g), 1e-3});
    EXPECT_LT(std::abs(fd - g) / scale, tolerance)
        << "d loss / d " << what << "[" << k << "]: autodiff " << g
        << ", finite difference " << fd;
  }
}

} // namespace lruc::testing

#endif // LRUC_TESTS_FINITEDIFFERENCES_H
