//===- ErrorOf.h - The message a host call fails with -----------*- C++ -*-===//
//
// (Apart from TestUtil.h, which tests outside the host runtime include too.)
//
//===----------------------------------------------------------------------===//
#ifndef LRUC_TESTS_HOST_ERROROF_H
#define LRUC_TESTS_HOST_ERROROF_H

#include "lruc/host/Error.h"

#include <functional>
#include <string>

namespace lruc::host::testing {

/// What `f` throws as a HostError, or "(no error)".
inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const HostError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace lruc::host::testing

#endif // LRUC_TESTS_HOST_ERROROF_H
