//===- ScheduleTest.cpp - The GPU schedule's tables, run through fake ops -===//
//
// lruc::cuda::schedule::run against lruc_gpu_ops that record each call on
// host memory: where every operand lies in the workspace layout of
// Schedule.h, how grids are sized, batched GEMMs' strides, the host scalars'
// copies and what a kernel's status report becomes. The generated tables
// themselves are checked by tests/lit/cuda/embedded-source.test, and run
// against the CPU library on the simulated driver (cuda-device-simulated).
//
//===----------------------------------------------------------------------===//

#include "lruc/cuda/Schedule.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using namespace lruc::cuda::schedule;

/// The device prelude's Status.
struct Status {
  int32_t op, pad;
  int64_t index, value;
};

struct LaunchCall {
  int32_t kernel;
  int64_t blocks;
  int32_t threads, blockPerOutput;
  int64_t batch;
  void *status;
  int32_t op;
  std::vector<uint32_t> sites;
  std::vector<void *> operands;
};

struct GemmCall {
  int64_t m, n, k, lda, ldb, ldc, strideA, strideB, strideC, count;
  int32_t abType, cType;
  const void *a, *b;
  void *c;
};

struct CopyCall {
  void *dst;
  const void *src;
  size_t bytes;
  int32_t kind;
};

/// lruc_gpu_ops on host memory that records what the schedule asks.
struct Recorder {
  std::vector<LaunchCall> launches;
  std::vector<GemmCall> gemms;
  std::vector<CopyCall> copies;
  std::vector<const void *> deferred;
  int32_t launchOperands = 0;    ///< how many operand pointers a launch reads
  std::vector<int32_t> launchSites; ///< how many sites each launch reads
  int failLaunch = 0;            ///< the launch's return code
  Status report = {-1, 0, 0, 0}; ///< what the kernels "write"

  lruc_gpu_ops ops(bool defer = false) {
    lruc_gpu_ops o{};
    o.context = this;
    o.launch = [](void *c, int32_t kernel, int64_t blocks, int32_t threads,
                  int32_t blockPerOutput, void **args) {
      auto *r = static_cast<Recorder *>(c);
      LaunchCall call{kernel,
                      blocks,
                      threads,
                      blockPerOutput,
                      *static_cast<int64_t *>(args[0]),
                      *static_cast<void **>(args[1]),
                      *static_cast<int32_t *>(args[2]),
                      {},
                      {}};
      const int32_t sites = r->launchSites.at(r->launches.size());
      for (int32_t i = 0; i < sites; ++i)
        call.sites.push_back(*static_cast<uint32_t *>(args[3 + i]));
      for (int32_t i = 0; i < r->launchOperands; ++i)
        call.operands.push_back(*static_cast<void **>(args[3 + sites + i]));
      std::memcpy(call.status, &r->report, sizeof r->report);
      r->launches.push_back(call);
      return r->failLaunch;
    };
    o.gemm = [](void *c, int32_t transA, int32_t transB, int64_t m, int64_t n,
                int64_t k, int32_t abType, const void *a, int64_t lda,
                int64_t strideA, const void *b, int64_t ldb, int64_t strideB,
                int32_t cType, void *cc, int64_t ldc, int64_t strideC,
                int64_t count) {
      (void)transA, (void)transB;
      static_cast<Recorder *>(c)->gemms.push_back(
          {m, n, k, lda, ldb, ldc, strideA, strideB, strideC, count, abType,
           cType, a, b, cc});
      return 0;
    };
    o.copy = [](void *c, void *dst, const void *src, size_t bytes,
                int32_t kind) {
      static_cast<Recorder *>(c)->copies.push_back({dst, src, bytes, kind});
      std::memcpy(dst, src, bytes);
      return 0;
    };
    if (defer)
      o.defer_status = [](void *c, const void *status, size_t bytes) {
        EXPECT_EQ(bytes, sizeof(Status));
        static_cast<Recorder *>(c)->deferred.push_back(status);
        return 0;
      };
    return o;
  }
};

int64_t sizes(int32_t i, int64_t B) {
  switch (i) {
  case 0:
    return B * 100; // a launch's threads
  case 1:
    return B * 3; // a GEMM's rows
  case 2:
    return 4;
  case 3:
    return 0;
  }
  return -1;
}

const char *const kKernels[] = {"k0", "k1", "k2"};

const Report kReports[] = {{5, "lru.gather at m.lru:1:2"},
                           {8, "lru.gather at m.lru:3:4", "tokens_b", 4}};
const HostCopy kCopies[] = {{2, 64, 16}}; // args[2], 16 bytes
const Address kOperands[] = {
    // The launch: one of each region.
    {Workspace, 0, 8, 16},
    {Scalars, 0, 0, 64},
    {Params, 0, 0, 12},
    {State, 0, 0, 4},
    {Argument, 1, 0, 8},
    {Result, 0, 4, 0},
    // The GEMM: two products.
    {Workspace, 0, 8, 0},
    {Params, 0, 0, 0},
    {Workspace, 0, 16, 0},
    {Workspace, 0, 8, 0},
    {Params, 0, 0, 64},
    {Workspace, 0, 16, 32},
};
const uint32_t kSites[] = {3, 8};
const Launch kLaunches[] = {
    {1, 0, 0, 64, 2, 5, 0, 2, 0, 6},   // grid-stride, at most 2 blocks
    {2, 2, 1, 128, 0, 7, 2, 0, 0, 6},  // a block per output: 4 blocks
    {0, 3, 0, 256, 0, -1, 2, 0, 0, 6}, // nothing to do: not launched
};
const Gemm kGemms[] = {
    {0, 1, 1, 2, 2, 2, 2, 2, LRUC_GPU_F32, LRUC_GPU_F32, 2, 6}};
const Step kSteps[] = {
    {LaunchStep, 0}, {GemmStep, 0}, {LaunchStep, 1}, {LaunchStep, 2}};

constexpr int64_t kChainItems = 3;
const Function kFunction = {"f",     sizes,     {8, 32}, kChainItems, 128,
                            kCopies, 1,         kSteps,  4,           kLaunches,
                            kGemms,  kOperands, kSites,  kReports,    2};

TEST(GpuSchedule, ScanChainBytes) {
  EXPECT_EQ(scanChainBytes(0, 5), 0);
  // 64 bytes of counter, 6 flags in 256 bytes, a 256-byte carry each.
  EXPECT_EQ(scanChainBytes(3, 2), 64 + 256 + 6 * 256);
  EXPECT_EQ(scanChainBytes(1, 65), 64 + 512 + 65 * 256);
}

TEST(GpuSchedule, WorkspaceBytes) {
  const int64_t B = 2;
  EXPECT_EQ(workspaceBytes(kFunction, B),
            8 * B + 32 + kStatusBytes + scanChainBytes(kChainItems, B) + 128);
}

/// Runs kFunction at batch B on `recorder` over fresh memory.
struct Call {
  static constexpr int64_t B = 2;
  std::vector<char> workspace =
      std::vector<char>(size_t(workspaceBytes(kFunction, B)));
  float params[32] = {}, state[8] = {};
  char arg0[64] = {}, arg1[64] = {}, hostScalar[16] = {1, 2, 3};
  char result0[64] = {};
  const void *args[3] = {arg0, arg1, hostScalar};
  void *results[1] = {result0};
  std::string error;

  bool run(Recorder &recorder, bool defer = false) {
    recorder.launchOperands = 6;
    recorder.launchSites = {2, 0};
    const lruc_gpu_ops ops = recorder.ops(defer);
    return lruc::cuda::schedule::run(kFunction, kKernels, &ops,
                                     workspace.data(), B, params, state, args,
                                     results, error);
  }
  char *ws() { return workspace.data(); }
  char *status() { return ws() + 8 * B + 32; }
  char *scalars() {
    return status() + kStatusBytes + scanChainBytes(kChainItems, B);
  }
};

TEST(GpuSchedule, RunsTheStepsInOrderOnTheLayout) {
  Recorder recorder;
  Call call;
  ASSERT_TRUE(call.run(recorder)) << call.error;

  // The status block reset, the host scalar copied, the status read back.
  ASSERT_EQ(recorder.copies.size(), 3u);
  EXPECT_EQ(recorder.copies[0].dst, call.status());
  EXPECT_EQ(recorder.copies[0].kind, LRUC_COPY_HOST_TO_DEVICE);
  EXPECT_EQ(recorder.copies[1].dst, call.scalars() + 64);
  EXPECT_EQ(recorder.copies[1].src, call.hostScalar);
  EXPECT_EQ(recorder.copies[1].bytes, 16u);
  EXPECT_EQ(recorder.copies[2].src, call.status());
  EXPECT_EQ(recorder.copies[2].kind, LRUC_COPY_DEVICE_TO_HOST);

  // Two launches (the third has no work), each operand where it lies.
  ASSERT_EQ(recorder.launches.size(), 2u);
  const LaunchCall &grid = recorder.launches[0];
  EXPECT_EQ(grid.kernel, 1);
  EXPECT_EQ(grid.blocks, 2); // 200 threads in 4 blocks, capped at 2
  EXPECT_EQ(grid.threads, 64);
  EXPECT_EQ(grid.blockPerOutput, 0);
  EXPECT_EQ(grid.batch, Call::B);
  EXPECT_EQ(grid.status, call.status());
  EXPECT_EQ(grid.op, 5);
  EXPECT_EQ(grid.sites, (std::vector<uint32_t>{3, 8}));
  std::vector<void *> expected = {call.ws() + 8 * Call::B + 16,
                                  call.scalars() + 64,
                                  reinterpret_cast<char *>(call.params) + 12,
                                  reinterpret_cast<char *>(call.state) + 4,
                                  call.arg1 + 8,
                                  call.result0 + 4 * Call::B};
  EXPECT_EQ(grid.operands, expected);
  const LaunchCall &perOutput = recorder.launches[1];
  EXPECT_EQ(perOutput.kernel, 2);
  EXPECT_EQ(perOutput.blocks, 4);
  EXPECT_EQ(perOutput.blockPerOutput, 1);
  EXPECT_EQ(perOutput.op, 7);
  EXPECT_TRUE(perOutput.sites.empty());

  // One call of two products: the second's operands as strides.
  ASSERT_EQ(recorder.gemms.size(), 1u);
  const GemmCall &g = recorder.gemms[0];
  EXPECT_EQ(g.m, 3 * Call::B);
  EXPECT_EQ(g.n, 4);
  EXPECT_EQ(g.k, 4);
  EXPECT_EQ(g.count, 2);
  EXPECT_EQ(g.a, call.ws() + 8 * Call::B);
  EXPECT_EQ(g.strideA, 0);
  EXPECT_EQ(g.b, call.params);
  EXPECT_EQ(g.strideB, 16); // 64 bytes of fp32
  EXPECT_EQ(g.c, call.ws() + 16 * Call::B);
  EXPECT_EQ(g.strideC, 8);
}

TEST(GpuSchedule, AReportIsAnErrorNamingTheOp) {
  Recorder recorder;
  recorder.report = {5, 0, 7, 9};
  Call call;
  EXPECT_FALSE(call.run(recorder));
  EXPECT_EQ(call.error,
            "bad input in @f, lru.gather at m.lru:1:2: entry 7 is 9, out of "
            "range");
  // An op the tables do not list.
  recorder = Recorder();
  recorder.report = {6, 0, 1, 2};
  EXPECT_FALSE(call.run(recorder));
  EXPECT_EQ(call.error, "bad input in @f, an op: entry 1 is 2, out of range");
  // Indices that are a model input [B, 4]: entry 9 is example 2, step 1.
  recorder = Recorder();
  recorder.report = {8, 0, 9, -1};
  EXPECT_FALSE(call.run(recorder));
  EXPECT_EQ(call.error, "bad input in @f, lru.gather at m.lru:3:4: "
                        "tokens_b[2, 1] is -1, out of range");
}

TEST(GpuSchedule, DeferredStatusIsHandedOver) {
  Recorder recorder;
  recorder.report = {5, 0, 7, 9};
  Call call;
  ASSERT_TRUE(call.run(recorder, /*defer=*/true)) << call.error;
  ASSERT_EQ(recorder.deferred.size(), 1u);
  EXPECT_EQ(recorder.deferred[0], call.status());
  // Two copies only: nothing read back.
  EXPECT_EQ(recorder.copies.size(), 2u);
  std::string error;
  EXPECT_FALSE(statusSays(kFunction, call.status(), error));
  EXPECT_EQ(error,
            "bad input in @f, lru.gather at m.lru:1:2: entry 7 is 9, out of "
            "range");
  const Status none = {-1, 0, 0, 0};
  EXPECT_TRUE(statusSays(kFunction, &none, error));
}

TEST(GpuSchedule, AFailedLaunchStopsTheCall) {
  Recorder recorder;
  recorder.failLaunch = 3;
  Call call;
  EXPECT_FALSE(call.run(recorder));
  EXPECT_EQ(call.error, "GPU launch failed (3): k1");
  EXPECT_EQ(recorder.launches.size(), 1u);
  EXPECT_TRUE(recorder.gemms.empty());
}

} // namespace
