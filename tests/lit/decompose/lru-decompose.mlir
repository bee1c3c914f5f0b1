// RUN: lruc-opt %s -split-input-file -lru-decompose | FileCheck %s

// Each model-level op becomes the primitive ops of docs/primitives.md, in
// @forward (eval mode) and in @forward_train (train mode, with a trailing
// dropout key argument and the new running statistics as extra results).

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[TOK:[a-z0-9]+]]: tensor<?x16xi32>, %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>)
// CHECK-NOT: attributes
// CHECK: %[[T:.*]] = lru.param "table"
// CHECK: %[[W:.*]] = lru.param "w"
// CHECK: %[[B:.*]] = lru.param "b"
// CHECK: %[[E:.*]] = lru.gather %[[T]], %[[TOK]] : (tensor<100x4xf32>, tensor<?x16xi32>) -> tensor<?x16x4xf32>
// CHECK: %[[XW:.*]] = lru.matmul nt %[[X]], %[[W]] : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
// CHECK: %[[BB:.*]] = lru.broadcast %[[B]] like %[[XW]] dims [2]
// CHECK: %[[Y:.*]] = lru.add %[[XW]], %[[BB]] : tensor<?x16x8xf32>
// CHECK: %[[Z:.*]] = lru.matmul nt %[[X]], %[[W]]
// CHECK-NEXT: return %[[E]], %[[Y]], %[[Z]]
// The train clone: same ops, one more argument, no state updates.
// CHECK-LABEL: func.func @forward_train(
// CHECK-SAME: %{{.*}}: tensor<?x16xi32>, %{{.*}}: tensor<?x16x4xf32>, %{{.*}}: tensor<2xi64> {lru.input = "dropout_key"})
// CHECK-SAME: -> (tensor<?x16x4xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>) attributes {lru.state_updates = []}
// CHECK: lru.gather
// CHECK-NOT: lru.embed
// CHECK-NOT: lru.linear
// CHECK: return
module {
  func.func @forward(%tok: tensor<?x16xi32>, %x: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>) {
    %t = lru.param "table" init(zeros) group(decay) : tensor<100x4xf32>
    %w = lru.param "w" init(zeros) group(decay) : tensor<8x4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<8xf32>
    %e = lru.embed %tok, %t : (tensor<?x16xi32>, tensor<100x4xf32>) -> tensor<?x16x4xf32>
    %y = lru.linear %x, %w, %b : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x16x8xf32>
    %z = lru.linear %x, %w : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
    return %e, %y, %z : tensor<?x16x4xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>
  }
}

// -----

// The LRU with gamma and lengths: gamma scales the B matrices; padded
// outputs are masked to 0.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[NU:.*]] = lru.param "nu"
// CHECK: %[[TH:.*]] = lru.param "th"
// CHECK: %[[G:.*]] = lru.param "g"
// CHECK: %[[BRE:.*]] = lru.param "bre"
// CHECK: %[[BIM:.*]] = lru.param "bim"
// CHECK: %[[CRE:.*]] = lru.param "cre"
// CHECK: %[[CIM:.*]] = lru.param "cim"
// CHECK: %[[D:.*]] = lru.param "d"
// CHECK: %[[ENU:.*]] = lru.exp %[[NU]] : tensor<8xf32>
// CHECK: %[[MAG:.*]] = lru.neg %[[ENU]] : tensor<8xf32>
// CHECK: %[[PH:.*]] = lru.exp %[[TH]] : tensor<8xf32>
// CHECK: %[[LOGL:.*]] = lru.complex %[[MAG]], %[[PH]] : tensor<8xf32> -> tensor<8xcomplex<f32>>
// CHECK: %[[LAMBDA:.*]] = lru.exp %[[LOGL]] : tensor<8xcomplex<f32>>
// CHECK: %[[EG:.*]] = lru.exp %[[G]] : tensor<8xf32>
// CHECK: %[[GB:.*]] = lru.broadcast %[[EG]] like %[[BRE]] dims [0] : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[SBRE:.*]] = lru.mul %[[BRE]], %[[GB]] : tensor<8x4xf32>
// CHECK: %[[SBIM:.*]] = lru.mul %[[BIM]], %[[GB]] : tensor<8x4xf32>
// B u as one product: the [8, 8] rows (B_re[n], B_im[n]) viewed as [16, 4]
// (rows alternate), its [.., 16] result viewed as complex [.., 8].
// CHECK: %[[BCAT:.*]] = lru.concat %[[SBRE]], %[[SBIM]] dim 1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
// CHECK: %[[BROWS:.*]] = lru.view %[[BCAT]] : tensor<8x8xf32> -> tensor<16x4xf32>
// CHECK: %[[UB:.*]] = lru.matmul nt %[[U]], %[[BROWS]] : (tensor<?x16x4xf32>, tensor<16x4xf32>) -> tensor<?x16x16xf32>
// CHECK: %[[IN:.*]] = lru.view %[[UB]] : tensor<?x16x16xf32> -> tensor<?x16x8xcomplex<f32>>
// CHECK: %[[XS:.*]] = lru.scan %[[LAMBDA]], %[[IN]] lengths %[[LEN]] : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>, tensor<?xi32>) -> tensor<?x16x8xcomplex<f32>>
// Re(C x) as one product: x's floats times conj(C)'s, rows (C_re, -C_im)
// interleaved.
// CHECK: %[[NCIM:.*]] = lru.neg %[[CIM]] : tensor<4x8xf32>
// CHECK: %[[CONJ:.*]] = lru.complex %[[CRE]], %[[NCIM]] : tensor<4x8xf32> -> tensor<4x8xcomplex<f32>>
// CHECK: %[[CW:.*]] = lru.view %[[CONJ]] : tensor<4x8xcomplex<f32>> -> tensor<4x16xf32>
// CHECK: %[[XF:.*]] = lru.view %[[XS]] : tensor<?x16x8xcomplex<f32>> -> tensor<?x16x16xf32>
// CHECK: %[[CX:.*]] = lru.matmul nt %[[XF]], %[[CW]] : (tensor<?x16x16xf32>, tensor<4x16xf32>) -> tensor<?x16x4xf32>
// CHECK: %[[DB:.*]] = lru.broadcast %[[D]] like %[[U]] dims [2]
// CHECK: %[[DU:.*]] = lru.mul %[[U]], %[[DB]]
// CHECK: %[[Y:.*]] = lru.add %[[CX]], %[[DU]]
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
// CHECK: %[[MB:.*]] = lru.broadcast %[[MASK]] like %[[Y]] dims [0, 1]
// CHECK: %[[OUT:.*]] = lru.mul %[[Y]], %[[MB]] : tensor<?x16x4xf32>
// CHECK-NEXT: return %[[OUT]]
// CHECK-LABEL: func.func @forward_train(
// CHECK: lru.scan
// CHECK-NOT: lru.recurrence
// CHECK: return
module {
  func.func @forward(%u: tensor<?x16x4xf32>, %len: tensor<?xi32>) -> tensor<?x16x4xf32> {
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<8xf32>
    %th = lru.param "th" init(zeros) group(recurrent) : tensor<8xf32>
    %g = lru.param "g" init(zeros) group(recurrent) : tensor<8xf32>
    %bre = lru.param "bre" init(zeros) group(recurrent) : tensor<8x4xf32>
    %bim = lru.param "bim" init(zeros) group(recurrent) : tensor<8x4xf32>
    %cre = lru.param "cre" init(zeros) group(decay) : tensor<4x8xf32>
    %cim = lru.param "cim" init(zeros) group(decay) : tensor<4x8xf32>
    %d = lru.param "d" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.recurrence %u, %nu, %th gamma %g B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
    return %y : tensor<?x16x4xf32>
  }
}

// -----

// Bidirectional, no gamma, no lengths: a second, reverse scan of the same
// input read out by C_rev; no mask.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>)
// CHECK: %[[BRE:.*]] = lru.param "bre"
// CHECK: %[[BIM:.*]] = lru.param "bim"
// CHECK: %[[RRE:.*]] = lru.param "rre"
// CHECK: %[[RIM:.*]] = lru.param "rim"
// CHECK: %[[LAMBDA:.*]] = lru.exp %{{.*}} : tensor<8xcomplex<f32>>
// CHECK-NOT: lru.mul
// CHECK: %[[BCAT:.*]] = lru.concat %[[BRE]], %[[BIM]] dim 1
// CHECK: %[[BROWS:.*]] = lru.view %[[BCAT]]
// CHECK: %[[UB:.*]] = lru.matmul nt %[[U]], %[[BROWS]]
// CHECK: %[[IN:.*]] = lru.view %[[UB]]
// CHECK: %[[FWD:.*]] = lru.scan %[[LAMBDA]], %[[IN]] : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
// CHECK: %[[YF:.*]] = lru.matmul nt
// CHECK: %[[REV:.*]] = lru.scan %[[LAMBDA]], %[[IN]] reverse : (tensor<8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
// CHECK: %[[NRIM:.*]] = lru.neg %[[RIM]]
// CHECK: %[[RCONJ:.*]] = lru.complex %[[RRE]], %[[NRIM]]
// CHECK: %[[RW:.*]] = lru.view %[[RCONJ]]
// CHECK: %[[RVF:.*]] = lru.view %[[REV]]
// CHECK: %[[YR:.*]] = lru.matmul nt %[[RVF]], %[[RW]]
// CHECK: %[[YS:.*]] = lru.add %[[YF]], %[[YR]]
// CHECK: %[[DU:.*]] = lru.mul %[[U]], %{{.*}}
// CHECK: %[[OUT:.*]] = lru.add %[[YS]], %[[DU]]
// CHECK-NOT: lru.length_mask
// CHECK: return %[[OUT]]
// CHECK-LABEL: func.func @forward_train(
// CHECK: lru.scan {{.*}} reverse
module {
  func.func @forward(%u: tensor<?x16x4xf32>) -> tensor<?x16x4xf32> {
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<8xf32>
    %th = lru.param "th" init(zeros) group(recurrent) : tensor<8xf32>
    %bre = lru.param "bre" init(zeros) group(recurrent) : tensor<8x4xf32>
    %bim = lru.param "bim" init(zeros) group(recurrent) : tensor<8x4xf32>
    %cre = lru.param "cre" init(zeros) group(decay) : tensor<4x8xf32>
    %cim = lru.param "cim" init(zeros) group(decay) : tensor<4x8xf32>
    %rre = lru.param "rre" init(zeros) group(decay) : tensor<4x8xf32>
    %rim = lru.param "rim" init(zeros) group(decay) : tensor<4x8xf32>
    %d = lru.param "d" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.recurrence %u, %nu, %th B(%bre, %bim) C(%cre, %cim) C_rev(%rre, %rim) D %d : (tensor<?x16x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
    return %y : tensor<?x16x4xf32>
  }
}

// -----

// The generalised LRU, plain (no lengths) and stable.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[GATE:.*]] = lru.param "U"
// CHECK: %[[NU:.*]] = lru.param "nu"
// CHECK: %[[TH:.*]] = lru.param "th"
// CHECK: %[[G:.*]] = lru.matmul nt %[[U]], %[[GATE]] : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
// CHECK: %[[ENU:.*]] = lru.exp %[[NU]] : tensor<8xf32>
// CHECK: %[[ENUB:.*]] = lru.broadcast %[[ENU]] like %[[G]] dims [2]
// CHECK: %[[A:.*]] = lru.sub %[[G]], %[[ENUB]] : tensor<?x16x8xf32>
// CHECK: %[[ETH:.*]] = lru.exp %[[TH]] : tensor<8xf32>
// CHECK: %[[PH:.*]] = lru.broadcast %[[ETH]] like %[[G]] dims [2]
// CHECK: %[[LOGL:.*]] = lru.complex %[[A]], %[[PH]] : tensor<?x16x8xf32> -> tensor<?x16x8xcomplex<f32>>
// CHECK: %[[LAMBDA:.*]] = lru.exp %[[LOGL]] : tensor<?x16x8xcomplex<f32>>
// CHECK: %[[IN:.*]] = lru.view %{{.*}} : tensor<?x16x16xf32> -> tensor<?x16x8xcomplex<f32>>
// CHECK: %[[H:.*]] = lru.scan %[[LAMBDA]], %[[IN]] : (tensor<?x16x8xcomplex<f32>>, tensor<?x16x8xcomplex<f32>>) -> tensor<?x16x8xcomplex<f32>>
// CHECK: lru.view %[[H]]
// CHECK: %[[Y1:.*]] = lru.add
// Stable: a = -softplus(exp(nu) - g).
// CHECK: %[[G2:.*]] = lru.matmul nt %[[U]], %[[GATE]]
// CHECK: %[[ENU2:.*]] = lru.broadcast %{{.*}} like %[[G2]] dims [2]
// CHECK: %[[ARG:.*]] = lru.sub %[[ENU2]], %[[G2]]
// CHECK: %[[SP:.*]] = lru.softplus %[[ARG]]
// CHECK: %[[A2:.*]] = lru.neg %[[SP]]
// CHECK: lru.complex %[[A2]],
// CHECK: lru.scan %{{.*}}, %{{.*}} lengths %[[LEN]] : (tensor<?x16x8xcomplex<f32>>
// CHECK-NOT: lru.div
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]]
// CHECK: lru.broadcast %[[MASK]]
// CHECK: %[[Y2:.*]] = lru.mul
// CHECK-NEXT: return %[[Y1]], %[[Y2]]
module {
  func.func @forward(%u: tensor<?x16x4xf32>, %len: tensor<?xi32>) -> (tensor<?x16x4xf32>, tensor<?x16x4xf32>) {
    %U = lru.param "U" init(zeros) group(recurrent) : tensor<8x4xf32>
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<8xf32>
    %th = lru.param "th" init(zeros) group(recurrent) : tensor<8xf32>
    %bre = lru.param "bre" init(zeros) group(recurrent) : tensor<8x4xf32>
    %bim = lru.param "bim" init(zeros) group(recurrent) : tensor<8x4xf32>
    %cre = lru.param "cre" init(zeros) group(decay) : tensor<4x8xf32>
    %cim = lru.param "cim" init(zeros) group(decay) : tensor<4x8xf32>
    %d = lru.param "d" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.generalized_recurrence plain %u, %nu, %th gate(%U) B(%bre, %bim) C(%cre, %cim) D %d : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
    %z = lru.generalized_recurrence stable %u, %nu, %th gate(%U) B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
    return %y, %z : tensor<?x16x4xf32>, tensor<?x16x4xf32>
  }
}

// -----

// Normalized: h is divided by the real scan of exp(a) over ones; padded
// steps divide by 1.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[U:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[G:.*]] = lru.matmul nt %[[U]], %{{.*}} : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
// CHECK: %[[A:.*]] = lru.neg %{{.*}} : tensor<?x16x8xf32>
// CHECK: %[[H:.*]] = lru.scan %{{.*}}, %{{.*}} lengths %[[LEN]] : (tensor<?x16x8xcomplex<f32>>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ONES:.*]] = lru.broadcast %[[ONE]] like %[[G]] dims [] : (tensor<f32>, tensor<?x16x8xf32>) -> tensor<?x16x8xf32>
// CHECK: %[[DECAY:.*]] = lru.exp %[[A]] : tensor<?x16x8xf32>
// CHECK: %[[N:.*]] = lru.scan %[[DECAY]], %[[ONES]] lengths %[[LEN]] : (tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?xi32>) -> tensor<?x16x8xf32>
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
// CHECK: %[[MB:.*]] = lru.broadcast %[[MASK]] like %[[G]] dims [0, 1]
// CHECK: %[[PAD:.*]] = lru.sub %[[ONES]], %[[MB]]
// CHECK: %[[N1:.*]] = lru.add %[[N]], %[[PAD]]
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[ZEROS:.*]] = lru.broadcast %[[ZERO]] like %[[G]] dims []
// CHECK: %[[NC:.*]] = lru.complex %[[N1]], %[[ZEROS]]
// CHECK: %[[HN:.*]] = lru.div %[[H]], %[[NC]] : tensor<?x16x8xcomplex<f32>>
// CHECK: %[[HF:.*]] = lru.view %[[HN]] : tensor<?x16x8xcomplex<f32>> -> tensor<?x16x16xf32>
// CHECK: lru.matmul nt %[[HF]]
// CHECK: return
module {
  func.func @forward(%u: tensor<?x16x4xf32>, %len: tensor<?xi32>) -> tensor<?x16x4xf32> {
    %U = lru.param "U" init(zeros) group(recurrent) : tensor<8x4xf32>
    %nu = lru.param "nu" init(zeros) group(recurrent) : tensor<8xf32>
    %th = lru.param "th" init(zeros) group(recurrent) : tensor<8xf32>
    %bre = lru.param "bre" init(zeros) group(recurrent) : tensor<8x4xf32>
    %bim = lru.param "bim" init(zeros) group(recurrent) : tensor<8x4xf32>
    %cre = lru.param "cre" init(zeros) group(decay) : tensor<4x8xf32>
    %cim = lru.param "cim" init(zeros) group(decay) : tensor<4x8xf32>
    %d = lru.param "d" init(zeros) group(decay) : tensor<4xf32>
    %z = lru.generalized_recurrence normalized %u, %nu, %th gate(%U) B(%bre, %bim) C(%cre, %cim) D %d lengths %len : (tensor<?x16x4xf32>, tensor<8x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
    return %z : tensor<?x16x4xf32>
  }
}

// -----

// GLU, full and half. Over sequences the full GLU's two products are one,
// its weight [2H, H] alternating rows of W_g and W_v (their [H, 2H]
// concatenation viewed), its result read as complex(gate, value) pairs.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>)
// CHECK: %[[WG:.*]] = lru.param "wg"
// CHECK: %[[BG:.*]] = lru.param "bg"
// CHECK: %[[WV:.*]] = lru.param "wv"
// CHECK: %[[BV:.*]] = lru.param "bv"
// CHECK: %[[CAT:.*]] = lru.concat %[[WG]], %[[WV]] dim 1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
// CHECK: %[[W:.*]] = lru.view %[[CAT]] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: %[[XW:.*]] = lru.matmul nt %[[X]], %[[W]] : (tensor<?x16x4xf32>, tensor<8x4xf32>) -> tensor<?x16x8xf32>
// CHECK: %[[PAIRS:.*]] = lru.view %[[XW]] : tensor<?x16x8xf32> -> tensor<?x16x4xcomplex<f32>>
// CHECK: %[[XG:.*]] = lru.re %[[PAIRS]]
// CHECK: %[[XV:.*]] = lru.im %[[PAIRS]]
// CHECK: %[[BGB:.*]] = lru.broadcast %[[BG]] like %[[XG]] dims [2]
// CHECK: %[[PRE:.*]] = lru.add %[[XG]], %[[BGB]]
// CHECK: %[[BVB:.*]] = lru.broadcast %[[BV]] like %[[XV]] dims [2]
// CHECK: %[[VAL:.*]] = lru.add %[[XV]], %[[BVB]]
// CHECK: %[[GATE:.*]] = lru.sigmoid %[[PRE]] : tensor<?x16x4xf32>
// CHECK: %[[FULL:.*]] = lru.mul %[[VAL]], %[[GATE]]
// CHECK: %[[XG2:.*]] = lru.matmul nt %[[X]], %[[WG]]
// CHECK: %[[PRE2:.*]] = lru.add %[[XG2]], %{{.*}}
// CHECK: %[[GATE2:.*]] = lru.sigmoid %[[PRE2]]
// CHECK: %[[HALF:.*]] = lru.mul %[[X]], %[[GATE2]]
// CHECK-NEXT: return %[[FULL]], %[[HALF]]
module {
  func.func @forward(%x: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<?x16x4xf32>) {
    %wg = lru.param "wg" init(zeros) group(decay) : tensor<4x4xf32>
    %bg = lru.param "bg" init(zeros) group(decay) : tensor<4xf32>
    %wv = lru.param "wv" init(zeros) group(decay) : tensor<4x4xf32>
    %bv = lru.param "bv" init(zeros) group(decay) : tensor<4xf32>
    %f = lru.glu %x gate(%wg, %bg) value(%wv, %bv) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
    %h = lru.glu %x gate(%wg, %bg) : (tensor<?x16x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
    return %f, %h : tensor<?x16x4xf32>, tensor<?x16x4xf32>
  }
}

// -----

// Dropout: the identity in eval mode; in train mode a dropout_mask keyed by
// the new argument (rate 0 stays the identity).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>)
// CHECK-NOT: lru.dropout
// CHECK: %[[R:.*]] = lru.relu %[[X]]
// CHECK-NEXT: return %[[R]], %[[R]]
// CHECK-LABEL: func.func @forward_train(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[KEY:[a-z0-9]+]]: tensor<2xi64> {lru.input = "dropout_key"})
// CHECK: %[[D:.*]] = lru.dropout_mask %[[X]], %[[KEY]] rate 2.500000e-01 site 3 : tensor<?x16x4xf32>, tensor<2xi64>
// CHECK: %[[R:.*]] = lru.relu %[[D]]
// CHECK-NOT: lru.dropout
// CHECK: return %[[R]], %[[R]]
module {
  func.func @forward(%x: tensor<?x16x4xf32>) -> (tensor<?x16x4xf32>, tensor<?x16x4xf32>) {
    %d = lru.dropout %x rate 2.500000e-01 site 3 : tensor<?x16x4xf32>
    %r = lru.relu %d : tensor<?x16x4xf32>
    %z = lru.dropout %r rate 0.000000e+00 site 4 : tensor<?x16x4xf32>
    return %z, %r : tensor<?x16x4xf32>, tensor<?x16x4xf32>
  }
}

// -----

// BatchNorm over real steps [B, L, H] with lengths, and over a pooled
// [B, H] input without.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[P:[a-z0-9]+]]: tensor<?x4xf32>)
// CHECK-SAME: -> (tensor<?x16x4xf32>, tensor<?x4xf32>) {
// CHECK: %[[S:.*]] = lru.param "norm.scale"
// CHECK: %[[B:.*]] = lru.param "norm.bias"
// CHECK: %[[M:.*]] = lru.param "norm.running_mean"
// CHECK: %[[V:.*]] = lru.param "norm.running_var"
// Eval: the running statistics.
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
// CHECK: %[[W:.*]] = lru.broadcast %[[MASK]] like %[[X]] dims [0, 1]
// CHECK: %[[MB:.*]] = lru.broadcast %[[M]] like %[[X]] dims [2]
// CHECK: %[[XC:.*]] = lru.sub %[[X]], %[[MB]]
// CHECK: %[[EPS:.*]] = arith.constant dense<9.99999974E-6> : tensor<4xf32>
// CHECK: %[[VE:.*]] = lru.add %[[V]], %[[EPS]]
// CHECK: %[[INV:.*]] = lru.rsqrt %[[VE]]
// CHECK: %[[F:.*]] = lru.mul %[[S]], %[[INV]] : tensor<4xf32>
// CHECK: %[[FB:.*]] = lru.broadcast %[[F]] like %[[X]] dims [2]
// CHECK: %[[XN:.*]] = lru.mul %[[XC]], %[[FB]]
// CHECK: %[[BB:.*]] = lru.broadcast %[[B]] like %[[X]] dims [2]
// CHECK: %[[Y0:.*]] = lru.add %[[XN]], %[[BB]]
// CHECK: %[[Y:.*]] = lru.mul %[[Y0]], %[[W]]
// CHECK: lru.broadcast %{{.*}} like %[[P]] dims [1]
// CHECK: %[[Z:.*]] = lru.add %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT: return %[[Y]], %[[Z]]
// Train: batch statistics over real steps; the new running statistics are
// extra results, named in op order.
// CHECK-LABEL: func.func @forward_train(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[P:[a-z0-9]+]]: tensor<?x4xf32>, %{{.*}}: tensor<2xi64> {lru.input = "dropout_key"})
// CHECK-SAME: -> (tensor<?x16x4xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME: attributes {lru.state_updates = ["norm.running_mean", "norm.running_var", "pnorm.running_mean", "pnorm.running_var"]}
// CHECK: %[[S:.*]] = lru.param "norm.scale"
// CHECK: %[[M:.*]] = lru.param "norm.running_mean"
// CHECK: %[[V:.*]] = lru.param "norm.running_var"
// CHECK: %[[M2:.*]] = lru.param "pnorm.running_mean"
// CHECK: %[[V2:.*]] = lru.param "pnorm.running_var"
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]]
// CHECK: %[[W:.*]] = lru.broadcast %[[MASK]] like %[[X]] dims [0, 1]
// CHECK: %[[XW:.*]] = lru.mul %[[X]], %[[W]]
// CHECK: %[[SUM:.*]] = lru.reduce_sum %[[XW]] dims [0, 1] : tensor<?x16x4xf32> -> tensor<4xf32>
// CHECK: %[[N:.*]] = lru.reduce_sum %[[MASK]] dims [0, 1] : tensor<?x16xf32> -> tensor<f32>
// CHECK: %[[NB:.*]] = lru.broadcast %[[N]] like %[[SUM]] dims [] : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[MEAN:.*]] = lru.div %[[SUM]], %[[NB]]
// CHECK: %[[MEANB:.*]] = lru.broadcast %[[MEAN]] like %[[X]] dims [2]
// CHECK: %[[XC:.*]] = lru.sub %[[X]], %[[MEANB]]
// The variance's centring: the mean a constant to the derivative passes
// (the variance's derivative in it is 0).
// CHECK: %[[MEANC:.*]] = lru.stop_gradient %[[MEAN]] : tensor<4xf32>
// CHECK: %[[MEANCB:.*]] = lru.broadcast %[[MEANC]] like %[[X]] dims [2]
// CHECK: %[[XCV:.*]] = lru.sub %[[X]], %[[MEANCB]]
// CHECK: %[[DEV:.*]] = lru.mul %[[XCV]], %[[W]]
// CHECK: %[[SQ:.*]] = lru.mul %[[DEV]], %[[DEV]]
// CHECK: %[[SQS:.*]] = lru.reduce_sum %[[SQ]] dims [0, 1]
// CHECK: %[[VAR:.*]] = lru.div %[[SQS]], %[[NB]]
// CHECK: %[[KEEP:.*]] = arith.constant dense<7.500000e-01> : tensor<4xf32>
// CHECK: %[[TAKE:.*]] = arith.constant dense<2.500000e-01> : tensor<4xf32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[VN:.*]] = lru.mul %[[VAR]], %[[NB]]
// CHECK: %[[NM1:.*]] = lru.sub %[[NB]], %[[ONE]]
// CHECK: %[[DEN:.*]] = lru.max %[[NM1]], %[[ONE]]
// CHECK: %[[UNB:.*]] = lru.div %[[VN]], %[[DEN]]
// CHECK: %[[OM:.*]] = lru.mul %[[KEEP]], %[[M]]
// CHECK: %[[TM:.*]] = lru.mul %[[TAKE]], %[[MEAN]]
// CHECK: %[[NEWM:.*]] = lru.add %[[OM]], %[[TM]] : tensor<4xf32>
// CHECK: %[[OV:.*]] = lru.mul %[[KEEP]], %[[V]]
// CHECK: %[[TV:.*]] = lru.mul %[[TAKE]], %[[UNB]]
// CHECK: %[[NEWV:.*]] = lru.add %[[OV]], %[[TV]] : tensor<4xf32>
// CHECK: %[[EPS:.*]] = arith.constant dense<9.99999974E-6> : tensor<4xf32>
// CHECK: %[[VE:.*]] = lru.add %[[VAR]], %[[EPS]]
// CHECK: %[[INV:.*]] = lru.rsqrt %[[VE]]
// CHECK: %[[F:.*]] = lru.mul %[[S]], %[[INV]]
// CHECK: %[[FB:.*]] = lru.broadcast %[[F]] like %[[X]] dims [2]
// CHECK: %[[XN:.*]] = lru.mul %[[XC]], %[[FB]]
// CHECK: %[[Y0:.*]] = lru.add %[[XN]], %{{.*}}
// CHECK: %[[Y:.*]] = lru.mul %[[Y0]], %[[W]]
// Pooled, no lengths: the count is the sum of ones over the dynamic batch.
// CHECK: %[[PSUM:.*]] = lru.reduce_sum %[[P]] dims [0] : tensor<?x4xf32> -> tensor<4xf32>
// CHECK: %[[C1:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ONES:.*]] = lru.broadcast %[[C1]] like %[[P]] dims []
// CHECK: %[[PN:.*]] = lru.reduce_sum %[[ONES]] dims [0] : tensor<?x4xf32> -> tensor<4xf32>
// CHECK: %[[PMEAN:.*]] = lru.div %[[PSUM]], %[[PN]]
// CHECK: %[[PMB:.*]] = lru.broadcast %[[PMEAN]] like %[[P]] dims [1]
// CHECK: %[[PC:.*]] = lru.sub %[[P]], %[[PMB]]
// CHECK: %[[PMC:.*]] = lru.stop_gradient %[[PMEAN]]
// CHECK: %[[PMCB:.*]] = lru.broadcast %[[PMC]] like %[[P]] dims [1]
// CHECK: %[[PCV:.*]] = lru.sub %[[P]], %[[PMCB]]
// CHECK: %[[PSQ:.*]] = lru.mul %[[PCV]], %[[PCV]]
// CHECK: %[[PKEEP:.*]] = arith.constant dense<0.899999976> : tensor<4xf32>
// CHECK: %[[NEWM2:.*]] = lru.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: %[[NEWV2:.*]] = lru.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK: %[[Z:.*]] = lru.add %{{.*}} : tensor<?x4xf32>
// CHECK-NEXT: return %[[Y]], %[[Z]], %[[NEWM]], %[[NEWV]], %[[NEWM2]], %[[NEWV2]]
module {
  func.func @forward(%x: tensor<?x16x4xf32>, %len: tensor<?xi32>, %p: tensor<?x4xf32>) -> (tensor<?x16x4xf32>, tensor<?x4xf32>) {
    %s = lru.param "norm.scale" init(ones) group(decay) : tensor<4xf32>
    %b = lru.param "norm.bias" init(zeros) group(decay) : tensor<4xf32>
    %m = lru.param "norm.running_mean" init(zeros) group(state) : tensor<4xf32>
    %v = lru.param "norm.running_var" init(ones) group(state) : tensor<4xf32>
    %m2 = lru.param "pnorm.running_mean" init(zeros) group(state) : tensor<4xf32>
    %v2 = lru.param "pnorm.running_var" init(ones) group(state) : tensor<4xf32>
    %y = lru.batch_norm %x, %s, %b running(%m, %v) lengths %len {momentum = 2.500000e-01 : f64} : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?xi32>) -> tensor<?x16x4xf32>
    %z = lru.batch_norm %p, %s, %b running(%m2, %v2) : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    return %y, %z : tensor<?x16x4xf32>, tensor<?x4xf32>
  }
}

// -----

// BatchNorm without lengths on a static shape: the count is a constant.
// CHECK-LABEL: func.func @forward_train(
// CHECK: %[[SUM:.*]] = lru.reduce_sum %{{.*}} dims [0, 1] : tensor<2x16x4xf32> -> tensor<4xf32>
// CHECK: %[[N:.*]] = arith.constant dense<3.200000e+01> : tensor<4xf32>
// CHECK: lru.div %[[SUM]], %[[N]]
module {
  func.func @forward(%x: tensor<2x16x4xf32>) -> tensor<2x16x4xf32> {
    %s = lru.param "s" init(ones) group(decay) : tensor<4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<4xf32>
    %m = lru.param "m" init(zeros) group(state) : tensor<4xf32>
    %v = lru.param "v" init(ones) group(state) : tensor<4xf32>
    %y = lru.batch_norm %x, %s, %b running(%m, %v) : (tensor<2x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x16x4xf32>
    return %y : tensor<2x16x4xf32>
  }
}

// -----

// LayerNorm over the last dim.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>)
// CHECK: %[[S:.*]] = lru.param "s"
// CHECK: %[[B:.*]] = lru.param "b"
// CHECK: %[[SUM:.*]] = lru.reduce_sum %[[X]] dims [2] : tensor<?x16x4xf32> -> tensor<?x16xf32>
// CHECK: %[[Q:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[QB:.*]] = lru.broadcast %[[Q]] like %[[SUM]] dims []
// CHECK: %[[MEAN:.*]] = lru.mul %[[SUM]], %[[QB]] : tensor<?x16xf32>
// CHECK: %[[MB:.*]] = lru.broadcast %[[MEAN]] like %[[X]] dims [0, 1]
// CHECK: %[[XC:.*]] = lru.sub %[[X]], %[[MB]]
// CHECK: %[[MC:.*]] = lru.stop_gradient %[[MEAN]] : tensor<?x16xf32>
// CHECK: %[[MCB:.*]] = lru.broadcast %[[MC]] like %[[X]] dims [0, 1]
// CHECK: %[[XCV:.*]] = lru.sub %[[X]], %[[MCB]]
// CHECK: %[[SQ:.*]] = lru.mul %[[XCV]], %[[XCV]]
// CHECK: %[[SQS:.*]] = lru.reduce_sum %[[SQ]] dims [2]
// CHECK: %[[VAR:.*]] = lru.mul %[[SQS]], %[[QB]]
// CHECK: %[[EPS:.*]] = arith.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[EPSB:.*]] = lru.broadcast %[[EPS]] like %[[VAR]] dims []
// CHECK: %[[VE:.*]] = lru.add %[[VAR]], %[[EPSB]]
// CHECK: %[[INV:.*]] = lru.rsqrt %[[VE]] : tensor<?x16xf32>
// CHECK: %[[INVB:.*]] = lru.broadcast %[[INV]] like %[[X]] dims [0, 1]
// CHECK: %[[XN:.*]] = lru.mul %[[XC]], %[[INVB]]
// CHECK: %[[SB:.*]] = lru.broadcast %[[S]] like %[[X]] dims [2]
// CHECK: %[[XS:.*]] = lru.mul %[[XN]], %[[SB]]
// CHECK: %[[BB:.*]] = lru.broadcast %[[B]] like %[[X]] dims [2]
// CHECK: %[[Y:.*]] = lru.add %[[XS]], %[[BB]]
// CHECK-NEXT: return %[[Y]]
module {
  func.func @forward(%x: tensor<?x16x4xf32>) -> tensor<?x16x4xf32> {
    %s = lru.param "s" init(ones) group(decay) : tensor<4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<4xf32>
    %y = lru.layer_norm %x, %s, %b {epsilon = 1.000000e-03 : f64} : (tensor<?x16x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x16x4xf32>
    return %y : tensor<?x16x4xf32>
  }
}

// -----

// Pooling: the mean over real steps, and the last real step.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x16x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
// CHECK: %[[MB:.*]] = lru.broadcast %[[MASK]] like %[[X]] dims [0, 1]
// CHECK: %[[XM:.*]] = lru.mul %[[X]], %[[MB]]
// CHECK: %[[SUM:.*]] = lru.reduce_sum %[[XM]] dims [1] : tensor<?x16x4xf32> -> tensor<?x4xf32>
// CHECK: %[[N:.*]] = lru.reduce_sum %[[MASK]] dims [1] : tensor<?x16xf32> -> tensor<?xf32>
// CHECK: %[[NB:.*]] = lru.broadcast %[[N]] like %[[SUM]] dims [0]
// CHECK: %[[MEAN:.*]] = lru.div %[[SUM]], %[[NB]] : tensor<?x4xf32>
// CHECK: %[[LAST:.*]] = lru.length_mask last %[[LEN]] : tensor<?xi32> -> tensor<?x16xf32>
// CHECK: %[[LB:.*]] = lru.broadcast %[[LAST]] like %[[X]] dims [0, 1]
// CHECK: %[[XL:.*]] = lru.mul %[[X]], %[[LB]]
// CHECK: %[[PICK:.*]] = lru.reduce_sum %[[XL]] dims [1] : tensor<?x16x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: return %[[MEAN]], %[[PICK]]
module {
  func.func @forward(%x: tensor<?x16x4xf32>, %len: tensor<?xi32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
    %m = lru.pool mean %x, %len : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %l = lru.pool last %x, %len : (tensor<?x16x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    return %m, %l : tensor<?x4xf32>, tensor<?x4xf32>
  }
}

// -----

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<?x4xf32>, %[[B:[a-z0-9]+]]: tensor<?x4xf32>)
// CHECK: %[[P:.*]] = lru.mul %[[A]], %[[B]] : tensor<?x4xf32>
// CHECK: %[[D:.*]] = lru.sub %[[A]], %[[B]] : tensor<?x4xf32>
// CHECK: %[[C:.*]] = lru.concat %[[A]], %[[B]], %[[P]], %[[D]] dim 1 : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x16xf32>
// CHECK-NEXT: return %[[C]]
module {
  func.func @forward(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x16xf32> {
    %c = lru.retrieval_combine %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x16xf32>
    return %c : tensor<?x16xf32>
  }
}

// -----

// Cross entropy: pooled (mean over the dynamic batch), per step with
// lengths (mean over the real steps whose label is not negative, those
// that are scored; 0 when none is) and per step without.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[Z:[a-z0-9]+]]: tensor<?x10xf32>, %[[K:[a-z0-9]+]]: tensor<?xi32>, %[[Z3:[a-z0-9]+]]: tensor<?x16x10xf32>, %[[K3:[a-z0-9]+]]: tensor<?x16xi32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[ROWS:.*]] = lru.softmax_cross_entropy %[[Z]], %[[K]] : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
// CHECK: %[[SUM:.*]] = lru.reduce_sum %[[ROWS]] dims [0] : tensor<?xf32> -> tensor<f32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ONES:.*]] = lru.broadcast %[[ONE]] like %[[ROWS]] dims [] : (tensor<f32>, tensor<?xf32>) -> tensor<?xf32>
// CHECK: %[[N:.*]] = lru.reduce_sum %[[ONES]] dims [0] : tensor<?xf32> -> tensor<f32>
// CHECK: %[[L1:.*]] = lru.div %[[SUM]], %[[N]] : tensor<f32>
// CHECK: %[[STEPS:.*]] = lru.softmax_cross_entropy %[[Z3]], %[[K3]] {ignore_negative} : (tensor<?x16x10xf32>, tensor<?x16xi32>) -> tensor<?x16xf32>
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]] scored %[[K3]] : tensor<?xi32>, tensor<?x16xi32> -> tensor<?x16xf32>
// CHECK: %[[SN:.*]] = lru.reduce_sum %[[MASK]] dims [0, 1] : tensor<?x16xf32> -> tensor<f32>
// CHECK: %[[ATLEAST1:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SCORED:.*]] = lru.max %[[SN]], %[[ATLEAST1]] : tensor<f32>
// CHECK: %[[SM:.*]] = lru.mul %[[STEPS]], %[[MASK]] : tensor<?x16xf32>
// CHECK: %[[SSUM:.*]] = lru.reduce_sum %[[SM]] dims [0, 1] : tensor<?x16xf32> -> tensor<f32>
// CHECK: %[[L2:.*]] = lru.div %[[SSUM]], %[[SCORED]] : tensor<f32>
// CHECK: %[[ALL:.*]] = lru.softmax_cross_entropy %[[Z3]], %[[K3]] :
// CHECK: %[[ASUM:.*]] = lru.reduce_sum %[[ALL]] dims [0, 1]
// CHECK: lru.broadcast %{{.*}} like %[[ALL]] dims []
// CHECK: %[[AN:.*]] = lru.reduce_sum %{{.*}} dims [0, 1]
// CHECK: %[[L3:.*]] = lru.div %[[ASUM]], %[[AN]]
// CHECK-NEXT: return %[[L1]], %[[L2]], %[[L3]]
module {
  func.func @forward(%z: tensor<?x10xf32>, %k: tensor<?xi32>, %z3: tensor<?x16x10xf32>, %k3: tensor<?x16xi32>, %len: tensor<?xi32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
    %a = lru.cross_entropy %z, %k : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
    %b = lru.cross_entropy %z3, %k3 lengths %len : (tensor<?x16x10xf32>, tensor<?x16xi32>, tensor<?xi32>) -> tensor<f32>
    %c = lru.cross_entropy %z3, %k3 : (tensor<?x16x10xf32>, tensor<?x16xi32>) -> tensor<f32>
    return %a, %b, %c : tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// -----

// MSE: over the targets that are not NaN (a NaN target is a value not
// scored; replaced by 0, as NaN * 0 is NaN), and of those over the elements
// of real steps (the mask times the broadcast length mask); at least 1 in
// the divisor (a batch of no scored value: loss 0).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<8x10xf32>, %[[T:[a-z0-9]+]]: tensor<8x10xf32>, %[[P3:[a-z0-9]+]]: tensor<?x16x3xf32>, %[[T3:[a-z0-9]+]]: tensor<?x16x3xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK: %[[S:.*]] = lru.not_nan %[[T]] : tensor<8x10xf32>
// CHECK: %[[T0:.*]] = lru.nan_to_zero %[[T]] : tensor<8x10xf32>
// CHECK: %[[D:.*]] = lru.sub %[[P]], %[[T0]] : tensor<8x10xf32>
// CHECK: %[[SQ:.*]] = lru.mul %[[D]], %[[D]]
// CHECK: %[[SQS:.*]] = lru.mul %[[SQ]], %[[S]]
// CHECK: %[[SUM:.*]] = lru.reduce_sum %[[SQS]] dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
// CHECK: %[[N:.*]] = lru.reduce_sum %[[S]] dims [0, 1] : tensor<8x10xf32> -> tensor<f32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[NMAX:.*]] = lru.max %[[N]], %[[ONE]]
// CHECK: %[[L1:.*]] = lru.div %[[SUM]], %[[NMAX]]
// CHECK: %[[S3:.*]] = lru.not_nan %[[T3]] : tensor<?x16x3xf32>
// CHECK: %[[MASK:.*]] = lru.length_mask prefix %[[LEN]]
// CHECK: %[[W:.*]] = lru.broadcast %[[MASK]] like %[[T3]] dims [0, 1]
// CHECK: %[[SW:.*]] = lru.mul %[[S3]], %[[W]]
// CHECK: %[[T30:.*]] = lru.nan_to_zero %[[T3]]
// CHECK: %[[D3:.*]] = lru.sub %[[P3]], %[[T30]] : tensor<?x16x3xf32>
// CHECK: %[[SQ3:.*]] = lru.mul %[[D3]], %[[D3]]
// CHECK: %[[SQW:.*]] = lru.mul %[[SQ3]], %[[SW]]
// CHECK: %[[SUM3:.*]] = lru.reduce_sum %[[SQW]] dims [0, 1, 2] : tensor<?x16x3xf32> -> tensor<f32>
// CHECK: %[[N3:.*]] = lru.reduce_sum %[[SW]] dims [0, 1, 2] : tensor<?x16x3xf32> -> tensor<f32>
// CHECK: %[[N3MAX:.*]] = lru.max %[[N3]], %{{.*}}
// CHECK: %[[L2:.*]] = lru.div %[[SUM3]], %[[N3MAX]]
// CHECK-NEXT: return %[[L1]], %[[L2]]
module {
  func.func @forward(%p: tensor<8x10xf32>, %t: tensor<8x10xf32>, %p3: tensor<?x16x3xf32>, %t3: tensor<?x16x3xf32>, %len: tensor<?xi32>) -> (tensor<f32>, tensor<f32>) {
    %a = lru.mse %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
    %b = lru.mse %p3, %t3 lengths %len : (tensor<?x16x3xf32>, tensor<?x16x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %a, %b : tensor<f32>, tensor<f32>
  }
}

// -----

// The mean absolute error |d| = relu(d) + relu(-d) and the Huber loss
// m^2 / 2 + delta relu(|d| - delta) with m = |d| - relu(|d| - delta), both
// over the targets that are not NaN.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<8x10xf32>, %[[T:[a-z0-9]+]]: tensor<8x10xf32>)
// CHECK: %[[S:.*]] = lru.not_nan %[[T]]
// CHECK: %[[T0:.*]] = lru.nan_to_zero %[[T]]
// CHECK: %[[D:.*]] = lru.sub %[[P]], %[[T0]]
// CHECK: %[[POS:.*]] = lru.relu %[[D]]
// CHECK: %[[ND:.*]] = lru.neg %[[D]]
// CHECK: %[[NEG:.*]] = lru.relu %[[ND]]
// CHECK: %[[ABS:.*]] = lru.add %[[POS]], %[[NEG]]
// CHECK: %[[AS:.*]] = lru.mul %[[ABS]], %[[S]]
// CHECK: %[[L1:.*]] = lru.div
// CHECK: %[[DELTA:.*]] = arith.constant dense<2.500000e-01> : tensor<8x10xf32>
// CHECK: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<8x10xf32>
// CHECK: %[[HABS:.*]] = lru.add
// CHECK: %[[EXCESS:.*]] = lru.sub %[[HABS]], %[[DELTA]]
// CHECK: %[[OVER:.*]] = lru.relu %[[EXCESS]]
// CHECK: %[[M:.*]] = lru.sub %[[HABS]], %[[OVER]]
// CHECK: %[[MM:.*]] = lru.mul %[[M]], %[[M]]
// CHECK: %[[QUAD:.*]] = lru.mul %[[HALF]], %[[MM]]
// CHECK: %[[LIN:.*]] = lru.mul %[[DELTA]], %[[OVER]]
// CHECK: %[[H:.*]] = lru.add %[[QUAD]], %[[LIN]]
// CHECK: lru.mul %[[H]], %{{.*}}
// CHECK: %[[L2:.*]] = lru.div
// CHECK-NEXT: return %[[L1]], %[[L2]]
module {
  func.func @forward(%p: tensor<8x10xf32>, %t: tensor<8x10xf32>) -> (tensor<f32>, tensor<f32>) {
    %a = lru.l1_loss %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
    %b = lru.huber_loss %p, %t {delta = 0.25 : f32} : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
    return %a, %b : tensor<f32>, tensor<f32>
  }
}

// -----

// Primitive ops and lru.add/relu/tanh/gelu are left as they are.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x4xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>)
// CHECK-NEXT: %[[W:.*]] = lru.param "w"
// CHECK-NEXT: %[[M:.*]] = lru.matmul nt %[[X]], %[[W]]
// CHECK-NEXT: %[[A:.*]] = lru.add %[[M]], %[[X]]
// CHECK-NEXT: %[[R:.*]] = lru.relu %[[A]]
// CHECK-NEXT: %[[T:.*]] = lru.tanh %[[R]]
// CHECK-NEXT: %[[G:.*]] = lru.gelu %[[T]] approximate
// CHECK-NEXT: %[[S:.*]] = lru.reduce_sum %[[G]] dims [0, 1]
// CHECK-NEXT: %[[C:.*]] = arith.constant
// CHECK-NEXT: %[[L:.*]] = lru.div %[[S]], %[[C]]
// CHECK-NEXT: %[[K:.*]] = lru.length_mask prefix %[[LEN]]
// CHECK-NEXT: return %[[L]], %[[K]]
// CHECK-LABEL: func.func @forward_train(
// CHECK-SAME: %{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<2xi64> {lru.input = "dropout_key"})
// CHECK-SAME: attributes {lru.state_updates = []}
// CHECK-NEXT: lru.param "w"
// CHECK-NEXT: lru.matmul
// CHECK-NEXT: lru.add
// CHECK-NEXT: lru.relu
// CHECK-NEXT: lru.tanh
// CHECK-NEXT: lru.gelu
// CHECK-NEXT: lru.reduce_sum
// CHECK-NEXT: arith.constant
// CHECK-NEXT: lru.div
// CHECK-NEXT: lru.length_mask
// CHECK-NEXT: return
module {
  func.func @forward(%x: tensor<?x4xf32>, %len: tensor<?xi32>) -> (tensor<f32>, tensor<?x8xf32>) {
    %w = lru.param "w" init(zeros) group(decay) : tensor<4x4xf32>
    %m = lru.matmul nt %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %a = lru.add %m, %x : tensor<?x4xf32>
    %r = lru.relu %a : tensor<?x4xf32>
    %t = lru.tanh %r : tensor<?x4xf32>
    %g = lru.gelu %t approximate : tensor<?x4xf32>
    %s = lru.reduce_sum %g dims [0, 1] : tensor<?x4xf32> -> tensor<f32>
    %c = arith.constant dense<4.0> : tensor<f32>
    %l = lru.div %s, %c : tensor<f32>
    %k = lru.length_mask prefix %len : tensor<?xi32> -> tensor<?x8xf32>
    return %l, %k : tensor<f32>, tensor<?x8xf32>
  }
}

// -----

// Every new op keeps the location of the model op it came from; other
// functions in the module are left alone.
// RUN: lruc-opt %s -split-input-file -lru-decompose -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// LOC-LABEL: func.func @helper(
// LOC: lru.linear
// LOC-LABEL: func.func @forward(
// LOC: lru.matmul nt {{.*}} loc(#[[LIN:loc[0-9]*]])
// LOC: lru.broadcast {{.*}} loc(#[[LIN]])
// LOC: lru.add {{.*}} loc(#[[LIN]])
// LOC: lru.softmax_cross_entropy {{.*}} loc(#[[CE:loc[0-9]*]])
// LOC: lru.reduce_sum {{.*}} loc(#[[CE]])
// LOC: arith.constant {{.*}} loc(#[[CE]])
// LOC: lru.div {{.*}} loc(#[[CE]])
// LOC-LABEL: func.func @forward_train(
// LOC: lru.matmul nt {{.*}} loc(#[[LIN]])
// LOC-DAG: #[[LIN]] = loc("model.lru":4:3)
// LOC-DAG: #[[CE]] = loc("model.lru":9:3)
module {
  func.func @helper(%x: tensor<?x4xf32>, %w: tensor<2x4xf32>) -> tensor<?x2xf32> {
    %y = lru.linear %x, %w : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }
  func.func @forward(%x: tensor<?x4xf32>, %k: tensor<?xi32>) -> tensor<f32> {
    %w = lru.param "w" init(zeros) group(decay) : tensor<2x4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<2xf32>
    %y = lru.linear %x, %w, %b : (tensor<?x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<?x2xf32> loc("model.lru":4:3)
    %l = lru.cross_entropy %y, %k : (tensor<?x2xf32>, tensor<?xi32>) -> tensor<f32> loc("model.lru":9:3)
    return %l : tensor<f32>
  }
}

// -----

// One BatchNorm applied twice (a shared encoder): the second update of each
// running statistic reads the first's result, and each is returned once.
// CHECK-LABEL: func.func @forward_train(%arg0: tensor<2x16x4xf32>, %arg1: tensor<2x16x4xf32>
// CHECK-SAME: lru.state_updates = ["m", "v"]
// CHECK: %[[M:.*]] = lru.param "m"
// CHECK: %[[V:.*]] = lru.param "v"
// CHECK: %[[OLDM1:.*]] = lru.mul %{{.*}}, %[[M]] : tensor<4xf32>
// CHECK: %[[NEWM1:.*]] = lru.add %[[OLDM1]], %{{.*}} : tensor<4xf32>
// CHECK: %[[OLDV1:.*]] = lru.mul %{{.*}}, %[[V]] : tensor<4xf32>
// CHECK: %[[NEWV1:.*]] = lru.add %[[OLDV1]], %{{.*}} : tensor<4xf32>
// CHECK: %[[OLDM2:.*]] = lru.mul %{{.*}}, %[[NEWM1]] : tensor<4xf32>
// CHECK: %[[NEWM2:.*]] = lru.add %[[OLDM2]], %{{.*}} : tensor<4xf32>
// CHECK: %[[OLDV2:.*]] = lru.mul %{{.*}}, %[[NEWV1]] : tensor<4xf32>
// CHECK: %[[NEWV2:.*]] = lru.add %[[OLDV2]], %{{.*}} : tensor<4xf32>
// CHECK: return %{{.*}}, %[[NEWM2]], %[[NEWV2]] : tensor<f32>, tensor<4xf32>, tensor<4xf32>
module {
  func.func @forward(%x: tensor<2x16x4xf32>, %w: tensor<2x16x4xf32>) -> tensor<f32> {
    %s = lru.param "s" init(ones) group(decay) : tensor<4xf32>
    %b = lru.param "b" init(zeros) group(decay) : tensor<4xf32>
    %m = lru.param "m" init(zeros) group(state) : tensor<4xf32>
    %v = lru.param "v" init(ones) group(state) : tensor<4xf32>
    %y = lru.batch_norm %x, %s, %b running(%m, %v) : (tensor<2x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x16x4xf32>
    %z = lru.batch_norm %w, %s, %b running(%m, %v) : (tensor<2x16x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x16x4xf32>
    %sum = lru.add %y, %z : tensor<2x16x4xf32>
    %loss = lru.reduce_sum %sum dims [0, 1, 2] : tensor<2x16x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
