//===- Passes.td - lruc transformation passes --------------*- tablegen -*-===//

#ifndef LRUC_TRANSFORMS_PASSES_TD
#define LRUC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposePass : Pass<"lru-decompose", "mlir::ModuleOp"> {
  let summary = "Decompose model-level lru ops into primitive ops";
  let description = [{
    Rewrites `@forward` in eval mode (BatchNorm with its running statistics,
    dropout as the identity) and adds `@forward_train`, a train-mode clone
    with a trailing `%key : tensor<2xi64> {lru.input = "dropout_key"}`
    argument (dropout becomes `lru.dropout_mask`) and, as extra trailing
    results, the new running statistics of every `lru.batch_norm` (mean then
    variance, in op order), named by the function attribute
    `lru.state_updates`. Both functions then hold only primitive ops
    (docs/primitives.md gives each decomposition). An op that cannot be
    decomposed is an error at its location.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def DeriveStepPass : Pass<"lru-derive-step", "mlir::ModuleOp"> {
  let summary = "Derive @step, one token at a time, from the model's @forward";
  let description = [{
    Clones the model-level `@forward` as `@step` with sequence length 1:
    the sequence inputs (`tokens`, `features`) get length 1, every op's
    result type is inferred again, and `@step` returns the predictions only
    (the loss and its labels or targets go). `-lru-decompose` then lowers
    `@step` in step mode: each recurrence carries its state from the
    previous step and mean pooling a running sum, as extra arguments and
    results of `@step` (docs/backend-cpu.md, "Step mode").

    A model that cannot run causally (a bidirectional recurrence, two
    input towers) gets no `@step`: the module attribute
    `lru.step_unavailable` says why and where, and the pass succeeds.
  }];
}

def FuseElementwisePass
    : Pass<"lru-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Group elementwise ops of one shape into lru.fused loops";
  let description = [{
    Forms `lru.fused` groups of elementwise primitive ops that share a
    shape, so that a backend runs each group as one loop and keeps its
    intermediate values out of memory. Broadcasts to consecutive dims (a
    bias, a per-row statistic, a scalar) join too: the loop reads their
    input directly. Groups grow in op order: an elementwise op joins the
    open group of its shape; an op outside the groups that reads a group's
    value closes that group (the group is placed before it), as does a
    member that reads a group of another shape. Splat constants are copied into the groups that use them.
    A group of one op stays as it is.

    A scan over `[B, L, N]` (static L and N) joins the open group of its
    shape like an elementwise op, one scan a group: the group then runs
    along time, its producers (the complex input, gamma, a per-step lambda)
    and consumers (Re, Im, ...) computed at each step, so the scan's input
    and states need not be stored. A later op that reads a closed group of
    its shape joins it when everything it reads is ready where the group is
    built (e.g. lru.im of the states after a matmul read lru.re).

    Before grouping, an `lru.neg` that a matmul reads moves to the
    matmul's product when elementwise ops alone read that (or it is a
    weight's small gradient): `matmul(-a, b)` becomes `-matmul(a, b)`, and
    the negation joins its readers' group instead of a negated copy of `a`
    being stored.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def RematerializePass : Pass<"lru-rematerialize", "mlir::func::FuncOp"> {
  let summary = "Compute cheap group results again where they are read instead of storing them";
  let description = [{
    After `-lru-fuse-elementwise`: a batch-sized result of an `lru.fused`
    group that is a short chain of elementwise ops and broadcasts (at most
    six, no scan, no sum) is computed again inside each later group that
    reads it per element, when that group already reads every full-size
    value the chain reads; the chain's smaller inputs (a parameter, the
    length mask, a scalar) become inputs of the reading group. Storing the
    result and reading it back cost a pass over memory each; the reading
    group's loop computes it from what it loads anyway. A result that no
    group reads any more leaves its group (and the ops only it needed):
    broadcast parameters and masks, the sigmoid's `s * (1 - s)`, never
    stored.

    A lone `lru.shift` (the previous states that the gradient of λ reads)
    read per element by groups holding a scan of its type over the same
    lengths moves into them: their loop walks time, so the previous (or
    next) step of the shifted input is a read of it; no shifted copy is
    stored.
  }];
}

def FuseMultiTensorPass
    : Pass<"lru-fuse-multi-tensor", "mlir::func::FuncOp"> {
  let summary = "Run the groups that compute the function's returned values as one kernel";
  let description = [{
    Gathers the `lru.fused` groups (after `-lru-fuse-elementwise`) whose
    results only the function returns and whose shapes are static — in
    `@train_step`, the optimizer's update of every parameter and its
    moments, one group per parameter shape; in `@forward_train`, the new
    running statistics — into one `lru.multi_tensor` at the place of the
    last of them, which a backend runs as one kernel over all their
    elements instead of one kernel per shape. Such groups never read each
    other's results (only the return does), and everything they read is
    defined before the last of them. Fewer than two such groups: nothing
    changes.
  }];
}

def FuseGemmEpiloguePass
    : Pass<"lru-fuse-gemm-epilogue", "mlir::func::FuncOp"> {
  let summary = "Run groups as the epilogues of the matmuls that feed them";
  let description = [{
    Marks each batch-sized `lru.fused` group without a scan that reads
    matmul results of its loop's type (`nt` or `nn`: a projection's rows,
    not a weight gradient) as `lru.epilogue`, after moving those matmuls to
    just before it (a matmul read by something between stays where it is,
    and is not part of the epilogue). A backend may then compute each part
    of the group's rows right after those rows of the matmuls, reading them
    from cache. Nothing else changes: every matmul result is still stored.
  }];
}

def GroupMatmulsPass : Pass<"lru-group-matmuls", "mlir::func::FuncOp"> {
  let summary = "Mark independent matmuls next to one another to run together";
  let description = [{
    Marks each `nt` or `nn` matmul that follows another such matmul (only
    `lru.param` ops and constants between) and does not read the result of
    any matmul of that run with `lru.together` (an epilogue's matmuls are
    left to their group). A backend may then compute a run's products at
    once: the CPU library hands them to its threads in one parallel region,
    which is what step mode's few-row products need (the LRU's B_re and
    B_im products). The memory plan keeps a run's operands alive until its
    last matmul.
  }];
}

def RecomputePass : Pass<"lru-recompute", "mlir::func::FuncOp"> {
  let summary = "Recompute elementwise values (and optionally scan states) for the backward pass instead of keeping them";
  let description = [{
    The decision of what the backward pass keeps and what it recomputes.
    A batch-sized result of a lone elementwise op or of an `lru.fused`
    group that is read early (the forward pass) and again much later (the
    backward pass) is stored in between; when it can be computed from
    values alive at the later reads anyway (for a group: the slice of its
    body that leads to it, from inputs still alive and from the group's
    other kept results; never through a scan), a copy just before the later
    reads computes it again, so the value's buffer is free in between. It costs one more elementwise pass over memory and shrinks the
    workspace (`lruc --stats`). "Much later": at least `min-gap` ops
    between the two groups of reads. Reads through an `lru.view` count
    where the view is read (a late one reads a view of the copy).

    With `states`, a scan's states too (the LRU's `x`, read by the forward
    pass's C product and again by the backward pass's C gradient and
    reverse scan): the copy runs the scan again, and its input product
    (`B u`, gone by then) is computed again from its operands first, one
    copy for the two scans of a bidirectional LRU. It costs one more
    matmul and scan per LRU and saves the states' buffer, the largest a
    layer keeps. With `states-where-smaller` (the default), only where that
    shrinks the function's workspace (the memory plan's, tried on copies
    of the function): none when recomputing all of them does not (a model
    of one LRU layer, whose states are alive at the backward pass's peak
    anyway), else all but those that can be kept without growing it.
  }];
  let options = [
    Option<"minGap", "min-gap", "unsigned", /*default=*/"16",
           "Fewest ops between the early and the late reads">,
    Option<"states", "states", "bool", /*default=*/"false",
           "Also recompute scans' states (and their input products)">,
    Option<"statesWhereSmaller", "states-where-smaller", "bool",
           /*default=*/"true",
           "Recompute states only where the workspace shrinks">,
  ];
}

def MarkStepConstantsPass
    : Pass<"lru-mark-step-constants", "mlir::func::FuncOp"> {
  let summary = "Mark the ops of @step that read only parameters";
  let description = [{
    In `@step`, marks each top-level op (a fused group, a lone op) that
    has no side effects, has static-shaped results and reads only
    parameters, constants and other marked ops with the unit attribute
    `lru.step_constant`: BatchNorm's scale from its running variance, the
    LRU's λ and γ from their logarithms. Their values change only when the
    parameters do, so a backend may keep them from one token to the next
    (the CPU library does: docs/backend-cpu.md). Other functions are left
    alone: they run once per batch, where these ops cost nothing.
  }];
}

def FuseStepConstantsPass
    : Pass<"lru-fuse-step-constants", "mlir::func::FuncOp"> {
  let summary = "Run @step's groups of parameters alone as one kernel";
  let description = [{
    After `-lru-mark-step-constants`: in `@step`, gathers the marked
    `lru.fused` groups without a scan or a sum that read only parameters
    and constants (each layer's BatchNorm scale, each LRU's λ and γ) into
    one `lru.multi_tensor`, itself marked, before the first of them, the
    parameters they read moved ahead of it. On a GPU a token is a few
    dozen launches of little work each, and these were two a layer; the CPU
    library keeps their values between tokens either way. Fewer than two
    such groups: nothing changes.
  }];
}

def UpdateInPlacePass : Pass<"lru-update-in-place", "mlir::func::FuncOp"> {
  let summary = "Write a training function's updated blocks over the old values";
  let description = [{
    A result tagged like an argument (`{lru.param = NAME}`, `lru.adam_m`,
    `lru.adam_v`, `lru.gradient`, `lru.state`: the argument's new value,
    which the ABI writes where the argument was read) that an
    `lru.multi_tensor` computes as the function's last op (every op that
    may fail has run: a failed call leaves the caller's blocks as they
    were), reading that argument only elementwise at the index it writes
    and with nothing else reading it there or after:
    the multi_tensor gets `lru.in_place` (per result, the function result
    it is written into, or -1). Such a result gets no workspace buffer
    (`-lru-plan-memory`); a backend writes it into the caller's result and
    copies nothing at the end. AdamW's update of parameters and moments,
    and the gradient sums of `@accumulate_gradients`.
  }];
}

def PlanMemoryPass : Pass<"lru-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Give every stored value a slot of one workspace (the kernel-level IR)";
  let description = [{
    Plans the function's buffers (lruc/MemoryPlan.h: values whose lifetimes
    do not overlap share a slot) and writes the plan into the IR, which is
    then what a backend emits, one kernel per top-level op: each op with
    stored results gets `lru.buffers` (the slot of each result, -1 for one
    that is not stored); the function gets `lru.slot_offsets` (each slot's
    byte offset in the workspace as pairs: bytes per example, fixed bytes)
    and `lru.workspace` (its size, the same pair). `lruc --emit=kernel`
    prints it.
  }];
}

#endif // LRUC_TRANSFORMS_PASSES_TD
