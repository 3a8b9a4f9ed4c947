//===- CpuPasses.td - Kiln's CPU code generation passes ---*- tablegen -*-===//
//
// The passes only the CPU pipeline runs: kernel formation (1x1 and
// depthwise convolutions rewritten, weights packed, kernels tiled and
// fused), register tiles, vector rows, outlining into thread-pool tasks.
// Included by Passes.td: one generated Passes.h.inc for all passes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_CPUPASSES_TD
#define KILN_LOWERING_CPUPASSES_TD

include "mlir/Pass/PassBase.td"

def KilnApproximateMath : Pass<"kiln-approximate-math", "::mlir::func::FuncOp"> {
  let summary = "replaces f32 transcendental math ops by polynomial approximations";
  let description = [{
    `math.erf`, `math.tanh`, `math.exp`, `math.log`... on f32 become
    polynomials in arith ops (a few ulp), so they vectorize and the artifact
    needs no libm vector routines. Erf is Kiln's own rational, x P(x^2) /
    Q(x^2) where |x| < 3.92 and +-1 beyond (5.4e-7 at most,
    scripts/fit-erf.py); the others upstream's. Other types keep their
    math ops for math-to-llvm / math-to-libm.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def KilnOutlineKernels : Pass<"kiln-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "makes every top-level loop nest a kernel function; big parallel ones tasks";
  let description = [{
    Each loop nest at the top level of a function, or of a branch of an
    `scf.if` there (a model's If, a dynamic batch's choice of image
    chains), becomes a kernel
    `func.func private @<fn>_kernel<N>(memrefs...)` called in its place, or,
    when it is an `scf.parallel` with enough work, a task split along its
    first dimension: the body goes into `@<fn>_task<N>(%begin, %end,
    memrefs...)` and the loop becomes a call to the declaration
    `@__kiln_parallel_<N>(%trip_count, memrefs...)`, which kiln-emit-entry
    defines on top of the runtime's `parallel_for`. Memref views and
    constants used by the body are recomputed inside, so only identity-layout
    buffers cross the boundary (bare pointers).

    Kernel arguments are distinct root buffers that are live together (the
    memory plan never overlaps those; the runtime refuses overlapping
    inputs and outputs), so they are marked `llvm.noalias`: LLVM vectorizes
    without runtime alias checks even though intermediates share one arena.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"2000000",
           "parallel loops doing less work (operations times vector lanes, stores "
           "8 times: 2M is about 15 us of one core) run serially: below that, moving "
           "the activations between cores costs more than the second core "
           "saves (ResNet-style at batch 1: 0.15 ms split, 0.095 ms serial)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def KilnFormKernels : Pass<"kiln-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "forms kernels: tiles each root op and fuses its producer group into the tile";
  let description = [{
    Runs after elementwise fusion on linalg on tensors. From the end of the
    function up, each linalg op not yet in a kernel is a root; its group is
    the linalg producers all of whose users are in the group and whose
    slice shrinks with the tile (every tiled loop reaches the operand they
    feed as a plain dimension; a broadcast or a window would make them be
    recomputed per tile). The root is tiled by 1 along its parallel loops
    but the innermost, in an `scf.forall`, and the group is fused into the
    tile: softmax, layer-norm and a matmul with its epilogue become one loop
    nest each. Linear layers whose weights together pass `max-shared-bytes`
    stay apart (every tile streams all of each one's weights).
  }];
  let options = [
    Option<"convVectorBits", "conv-vector-bits", "unsigned", /*default=*/"0",
           "vector register width the CPU's convolutions are register-tiled for "
           "(kiln-vectorize-conv) and matmuls (kiln-vectorize-matmul): their output "
           "channels, or rows, are tiled by the register block instead of 1; 0 tiles "
           "them by 1">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "8-bit products run on AMX tiles (kiln-vectorize-matmul's amx): their rows "
           "in blocks for those">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", /*default=*/"4194304",
           "most bytes of matmul operands that every tile reads whole (linear layers' "
           "weights) one kernel may hold: a matmul whose weights would pass it, with "
           "those of the matmuls already in the group, is a kernel of its own">,
    Option<"columnBlockBytes", "column-block-bytes", "int64_t", /*default=*/"1048576",
           "a register-tiled matmul whose B operand has more bytes is tiled by blocks of "
           "its columns (each tile reads its panel of B once) instead of by rows (each "
           "reads all of B); so is one image's product with constant A within L1 and B "
           "wider than A is tall (a 1x1 convolution's pixels split among the threads); "
           "0: always by rows">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect"];
}

def KilnVectorizeConv : Pass<"kiln-vectorize-conv", "::mlir::func::FuncOp"> {
  let summary = "register-tiles 2-D NCHW convolutions on memrefs into vector FMAs";
  let description = [{
    Each static f32 `linalg.conv_2d_nchw_fchw` on memrefs with unit
    dilation and column stride 1 or 2 becomes loops over images, output
    rows, blocks of output channels and chunks of output columns; a block's
    accumulators (channels x column vectors) stay in vector registers over
    the reduction (c, kh; kw unrolled), each input vector feeding one FMA
    per channel of the block. The last chunk of a row is masked.
    A channels-last `linalg.depthwise_conv_2d_nhwc_hwc` keeps groups of
    pixels of one channel vector in registers instead, each tap's weight
    vector shared by the group's FMAs, its epilogue (bias) applied to them.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnPointwiseConvAsMatmul : Pass<"kiln-pointwise-conv-as-matmul", "::mlir::func::FuncOp"> {
  let summary = "CPU: 1x1 convolutions as matrix products over the flattened pixels";
  let description = [{
    On linalg on tensors, right after the lowering from Kiln: an f32
    `linalg.conv_2d_nchw_fchw` with a 1x1 kernel becomes
    out[n, f, p] += w[f, c] * x[n, c, p] on the [N, C, H*W] view of its
    image (every s-th pixel of every s-th row copied first for a stride s),
    expanded back to [N, F, H, W]. A strided convolution with a larger
    kernel (and 16 channels or more) does the same over its im2col
    columns, [N, C*KH*KW, OH*OW], copied from the image first, and so
    does one of stride 1 whose output rows fill at most half a vector
    register. The elementwise ops reading it as they
    write (batch-norm, residual add, ReLU) are collapsed onto the product's
    shape too, so kernel formation keeps them in its kernel, and so on down
    the chain. kiln-vectorize-matmul register-tiles the product over the
    pixels: rows of 7 or 14 pixels no longer cap the convolution's tile.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"256",
           "the CPU's vector register width: a stride-1 convolution whose output rows "
           "fill at most half a register takes the im2col route too">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnFoldChannelScales : Pass<"kiln-fold-channel-scales", "::mlir::func::FuncOp"> {
  let summary = "CPU: a per-channel scale of one image folded into the 1x1 product reading it";
  let description = [{
    After kiln-pointwise-conv-as-matmul: where a product
    out[n, f, p] += w[f, c] * x'[n, c, p] over one image (n = 1, static)
    reads x' = x * s, s a function of the channel only (a
    squeeze-and-excitation gate), it reads x and w[f, c] * s[c] instead:
    F x C multiplies replace a pass of C x H x W over the image. Only when
    F < H * W, where the weights are the smaller side.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnForallToParallel : Pass<"kiln-forall-to-parallel", "::mlir::func::FuncOp"> {
  let summary = "scf.forall to scf.parallel, keeping the loop's attributes";
  let description = [{
    As upstream's scf-forall-to-parallel, but the discardable attributes of
    each scf.forall (kiln.spread) stay on the scf.parallel it becomes,
    for kiln-outline-kernels.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def KilnCollapseReductionLoops : Pass<"kiln-collapse-reduction-loops", "::mlir::func::FuncOp"> {
  let summary = "CPU: a reduction over several trailing loops as one loop";
  let description = [{
    On linalg on tensors, before kernel formation: a `linalg.generic`
    whose trailing loops are all reductions, read in order as the trailing
    dimensions of every operand that reads them (a global average pool's
    height and width, an SE block's mean), reduces over one collapsed loop
    instead, so kiln-vectorize-elementwise reduces each row in vector
    accumulators. Over two loops it lowered to scalar loops, one dependent
    add after another.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def KilnDepthwiseConv : Pass<"kiln-depthwise-conv", "::mlir::func::FuncOp"> {
  let summary = "CPU: grouped convolutions of one channel per group as depthwise ones on NCHW";
  let description = [{
    On linalg on tensors, right after the lowering from Kiln: a
    `linalg.conv_2d_ngchw_gfchw` whose groups have one input and one
    output channel each becomes `linalg.depthwise_conv_2d_nchw_chw` on the
    4-D views of its operands, which kiln-vectorize-conv register-tiles
    and kernel formation fuses with its epilogue.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def KilnImplicitPadding : Pass<"kiln-implicit-padding", "::mlir::ModuleOp"> {
  let summary = "CPU: convolutions and pools read the image a pad was made of, not the padded copy";
  let description = [{
    On buffers, before memory planning: a bufferized `tensor.pad` (a fill
    of a new buffer, a copy of the image into a window of it) whose every
    reader is a register-tiled NCHW convolution (of `kiln-vectorize-conv`)
    or a pool `kiln-vectorize-pool` takes (through a window starting at
    the row's first column, after a reshape adding unit dimensions), and
    whose value adds nothing to them (0 to convolutions and sums, -inf to
    maxima), goes away: each reader is emitted here, reading the image,
    with input rows outside it a constant row of the pad's value and
    columns outside it shifted in or masked in the chunks at the row's
    ends; a channels-last depthwise convolution's tile skips the rows
    outside the image and drops the taps outside it at the row's ends.
    The image's deallocation moves after the last reader.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnImageChains : Pass<"kiln-image-chains", "::mlir::func::FuncOp"> {
  let summary = "CPU: consecutive kernels over a batch's images run image by image";
  let description = [{
    On buffers, after kiln-implicit-padding and before memory planning:
    a run of top-level `scf.parallel` kernels whose first loop goes over
    the same `min-images` or more images, each of which uses the buffers
    of @main (besides globals) only through views of the image of that
    loop, becomes one parallel loop over the images holding the kernels,
    their remaining loops, in order. A thread then runs the kernels one
    image after the other and reads what the last one wrote from its
    caches instead of memory. Kernels whose weights are more than a
    quarter of the bytes an image reads and writes stay out (each image
    reads them again). The views, constants and allocations between the
    kernels move before the loop, the deallocations after it; memory
    planning then keeps every buffer of the run live through all of it.
    A buffer only the run uses becomes one image's, allocated in each
    iteration.

    Under a dynamic batch (loops to `memref.dim` of @main's buffers, the
    same batch through reshapes and allocation sizes) the count is known
    at run time: an `scf.if` runs the chain for `min-images` images or
    more and the kernels as they were otherwise (they keep the batch's
    buffers). A batch whose declared maximum (`kiln.input_dim_max`) is
    below `min-images` takes no chain.
  }];
  let options = [
    Option<"minImages", "min-images", "int64_t", /*default=*/"4",
           "the fewest images a run goes over (fewer leave threads idle)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def KilnPadCopies : Pass<"kiln-pad-copies", "::mlir::func::FuncOp"> {
  let summary = "CPU: a bufferized pad written row by row, each element once";
  let description = [{
    On buffers: a fill of a whole buffer by a constant followed by a copy
    of an image into a unit-stride window of it (a `tensor.pad`,
    bufferized) becomes one parallel loop over the buffer's rows: a row
    of the image gets its border elements filled and the image's row
    copied between them, any other row is filled.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

def KilnWinogradConv : Pass<"kiln-winograd-conv", "::mlir::func::FuncOp"> {
  let summary = "CPU: wide 3x3 convolutions as Winograd F(4x4, 3x3) or F(2x2, 3x3) transforms and products";
  let description = [{
    On linalg on tensors, before kernel formation: a
    `linalg.conv_2d_nchw_fchw` with a 3x3 constant f32 filter, unit
    strides and dilations, at least `min-channels` input and output
    channels and static sizes but the batch becomes an input transform (a
    generic marked `kiln.winograd = "input"`: [t^2, C, N, TY, TX] from the
    t x t input tiles, t = m + 2, or the products' packed panels), a
    batched product of the filter transformed now ([t^2, F, C]) with it
    over the tiles, and an output transform (marked "output") writing the
    m x m output blocks, adding to the convolution's accumulator unless
    that is a zero fill. m is the side (up to `output-tile`) with the
    fewest multiplications whose tiles fill two panels of the vector's
    lanes: F(4x4, 3x3) takes 36 per 4x4 outputs and channel pair,
    F(2x2, 3x3) 16 per 2x2, the direct convolution 9 per output. An
    output height or width not a multiple of m takes one more tile of
    zeros (onto a zero fill only).
  }];
  let options = [
    Option<"minChannels", "min-channels", "int64_t", /*default=*/"128",
           "least input and output channels taken (0: none)">,
    Option<"outputTile", "output-tile", "int64_t", /*default=*/"4",
           "the largest output tile side m of F(m x m, 3x3) taken: 2 or 4">,
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU: the panels' lanes of a static batch's tiles">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::affine::AffineDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def KilnWidenInt8Rows : Pass<"kiln-widen-int8-rows", "::mlir::func::FuncOp"> {
  let summary = "AVX2: an 8-bit product's A stored as i16, its pairs broadcast whole";
  let description = [{
    On linalg on tensors, after kiln-pack-matmul-weights: an 8-bit product
    (`out + zext(a) * sext(w)` in i32) whose B is packed in pairs of k
    ([N/P, K/2, P, 2], AVX2's vpmaddwd layout) and whose A is i8 reads A
    zero-extended to i16 instead, so the tile broadcasts a row's pair
    a[k], a[k+1] with one 32-bit load rather than shuffling it out of a
    word of bytes at every step. Where A is made by an elementwise op
    whose every user is such a product, that op yields the i16 itself;
    otherwise an elementwise zero-extension is added. The products' sums
    are unchanged.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def KilnSplitMaskedStores : Pass<"kiln-split-masked-stores", "::mlir::func::FuncOp"> {
  let summary = "CPU without AVX-512: masked stores of constant masks as plain stores";
  let description = [{
    Each `vector.maskedstore` of a 1-D mask known at compile time
    (`vector.constant_mask`, a constant `vector.create_mask`, a dense
    constant) becomes plain `vector.store`s of the set lanes, each run of
    them in power-of-two pieces. AVX2's masked store (VMASKMOVPS) is
    microcode on AMD cores before Zen 4; plain stores of the lanes in the
    mask touch nothing else, so it stays safe where threads write
    neighbouring lanes. Masks known only at run time are left.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect"];
}

def KilnVectorizePool : Pass<"kiln-vectorize-pool", "::mlir::func::FuncOp"> {
  let summary = "CPU: max and sum pools on buffers as vectors of an output row";
  let description = [{
    On buffers: a `linalg.pooling_nchw_max` or `_sum` with static f32 rows
    (the batch may be dynamic), unit dilations and a column stride of 1 or
    2 becomes a parallel loop over (image, channel, output row) updating a
    vector of the row's outputs per window tap; with a stride of 2 a tap's
    inputs are the even lanes of two contiguous vectors. The rows' ends
    are masked.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"];
}

def KilnVectorizeWinograd : Pass<"kiln-vectorize-winograd", "::mlir::func::FuncOp"> {
  let summary = "CPU: Winograd transforms on buffers as vectors of tiles";
  let description = [{
    On buffers: the generics kiln-winograd-conv marks become parallel
    loops over (channel, image, tile row) whose body computes a vector of
    tiles along the row at once: the input tiles' columns read as two
    contiguous vectors deinterleaved into even and odd ones, all 16
    transformed values stored; the output's 2x2 blocks from the 16
    products, interleaved back into two output rows.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"];
}

def KilnPackConvWeights : Pass<"kiln-pack-conv-weights", "::mlir::func::FuncOp"> {
  let summary = "CPU: a convolution's constant weights packed into panels of output channels";
  let description = [{
    On linalg on tensors, before kernel formation: a
    `linalg.conv_2d_nchw_fchw` with unit dilation, static f32 operands,
    constant weights W [F, C, KH, KW] and F a multiple of the vector's
    lanes P becomes a `linalg.generic` over (n, f, oh, ow, c, kh, kw)
    reading W packed at compile time as [F/P, C, KH, KW, P] through
    (f floordiv P, c, kh, kw, f mod P). kiln-vectorize-conv then keeps
    vectors of output channels times a run of output pixels in registers:
    a weight load per channel vector and a broadcast input element per
    pixel, so no lane is padding at any image width or stride. The same
    products summed in the same order.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2; below 128: no packing)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect"];
}

def KilnPackMatmulWeights : Pass<"kiln-pack-matmul-weights", "::mlir::func::FuncOp"> {
  let summary = "CPU: a linear layer's constant weights packed into panels one vector wide";
  let description = [{
    On linalg on tensors, before kernel formation: a contraction
    C(..m.., n) += A(..m.., k) * W(k, n) with W an f32 constant [K, N], N a
    multiple of the vector's lanes P and more than one vector (or 4 vectors
    or more, the last panel zero-padded), reads W packed at compile time as
    [ceil(N/P), K, P], through the map
    (n floordiv P, k, n mod P). kiln-vectorize-matmul then loads each
    column vector's panel front to back (contiguous over k) instead of a
    vector from a row N apart per k step. A B known only at run time (a
    training step's weights, dY in X^T dY) is packed the same way by a
    `linalg.transpose` of its [K, N/P, P] view, when C has at least 64
    rows to reuse it. Nothing else changes: the same products summed in
    the same order. With `int8`, an 8-bit product (kiln.matmul_integer's
    `out + zext(a) * sext(w)` in i32) with constant int8 weights [K, N], K
    a multiple of 4, reads them as [ceil(N/P), K/G, P, G] at (n floordiv
    P, k floordiv G, n mod P, k mod G): each column's G consecutive k side
    by side, G = 4 on AVX-512 (a 32-bit lane's bytes, as AVX512-VNNI's
    vpdpbusd takes them), 2 on AVX2 (a pair that vpmovsxbw widens into a
    32-bit lane's two i16, as vpmaddwd takes them), 4 there too for
    vpmaddubsw where no pair of the weights can pass i16 against A's bytes
    (7-bit weights: exact) and with `int8-saturate` (its saturated pairs,
    `kiln compile --int8-arith=saturate`). Then a constant A [M, K]
    (a 1x1 convolution's weights) of a product whose B is packed is
    packed by rows, [M/4, K, 4] at (m floordiv 4, k, m mod 4): a register
    block's rows side by side at each k, one stream. Where B is not
    packed, an A whose rows are a multiple of `row-alias-bytes` apart (4
    KiB: all in one L1 set) is stored 16 floats longer a row and read
    through an extract_slice, so a block's row broadcasts do not evict
    each other. A 1x1 convolution's images as B are packed per image
    where the output channels are 4x the input's or more, where the pixels
    are no whole number of vectors, and where the image is past
    `column-block-bytes` (kernel formation then tiles by columns and packs
    each tile's panel in its own stack buffer).
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2; 0: no packing)">,
    Option<"rowAliasBytes", "row-alias-bytes", "int64_t", /*default=*/"4096",
           "constant A rows a multiple of this many bytes apart get padded (0: never)">,
    Option<"int8", "int8", "bool", /*default=*/"false",
           "8-bit products' constant weights packed for the integer tile: [N/P, K/G, P, G], "
           "G = 4 (AVX512-VNNI) or 2 (AVX2)">,
    Option<"int8Saturate", "int8-saturate", "bool", /*default=*/"false",
           "with 256-bit vectors, 8-bit weights packed in fours (G = 4) for vpmaddubsw's "
           "saturating pairs (--int8-arith=saturate), not in pairs">,
    Option<"columnBlockBytes", "column-block-bytes", "int64_t", /*default=*/"0",
           "kiln-form-kernels' option: a 1x1 convolution's image past it is packed "
           "whatever its channels (each column tile packs its own panel; 0: never)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def KilnVectorizeMatmul : Pass<"kiln-vectorize-matmul", "::mlir::func::FuncOp"> {
  let summary = "register-tiles matmuls with a row-major [K, N] right operand into vector FMAs";
  let description = [{
    Each static f32 contraction on memrefs C(..m.., n) += A(..m.., k) *
    B(k, n) (a linear layer, in any loop order; batch loops indexing B
    before k and n too: attention's probabilities times values) becomes
    loops over the batch and outer m dimensions, blocks of rows and chunks
    of columns whose accumulators
    (rows x column vectors) stay in vector registers over k: per k step, one
    load per column vector of B, one broadcast of A per row, rows x vectors
    FMAs. The last column chunk is masked, leftover rows form a smaller
    block. An 8-bit product whose B kiln-pack-matmul-weights packed for
    VNNI takes 4 k per step: per column vector its panel's 64 bytes, per
    row A's 4 bytes broadcast as one 32-bit word, and `vpdpbusd`
    (`llvm.x86.avx512.vpdpbusd.512`) into i32 accumulators; with 256-bit
    vectors (AVX2, B in fours: 7-bit weights, or --int8-arith=saturate)
    32 bytes a panel, `vpmaddubsw` then `vpmaddwd` by ones and an add; B
    in pairs of k (AVX2's exact tile), `vpmaddwd` on A's i16 pairs and B's
    sign-extended ones. With `amx`,
    such a product (rows, k and n static, 7 rows or more, A's rows a
    static stride apart) runs on AMX tiles instead (`amx.tile_muli`, tdpbusd): per 16
    rows, two 16 x 16 accumulator tiles over k in steps of 64, B's packed
    panels loaded as they are, the accumulators through a stack buffer
    into the same epilogue.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2)">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "8-bit products on AMX tiles (the CPU has AMX-INT8)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::amx::AMXDialect"];
}

def KilnTileTransposes : Pass<"kiln-tile-transposes", "::mlir::func::FuncOp"> {
  let summary = "CPU: elementwise ops reading an input across their rows, in 32x32 tiles";
  let description = [{
    On linalg on buffers, before the loops are made: a top-level
    elementwise op (a transpose, or one with a transposed input) whose
    innermost loop strides through an input contiguous along another loop
    is tiled 32 x 32 along those two loops (the others by 1) into an
    `scf.parallel` over the tiles, the outer loop kiln-outline-kernels
    splits over the thread pool. Both sides of a tile stay in L1 and its
    strided reads stop missing the TLB element by element. Ops under 32
    along either loop are left alone. An f32 transposing copy with both
    loops at least 8 that fits in L1, or whose pass along an output row
    does (an attention head's K^T), moves in 8 x 8 blocks instead: eight
    rows loaded as vectors, transposed in registers (`vector.transpose`,
    lowered to one shuffle), stored as eight rows; the last block of a
    loop that is no multiple of 8 with masked loads and stores.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect"];
}

def KilnVectorizeElementwise : Pass<"kiln-vectorize-elementwise", "::mlir::func::FuncOp"> {
  let summary = "runs elementwise ops and row reductions on memrefs along their innermost loop in vectors";
  let description = [{
    A linalg.generic (or fill, copy, map) on static memrefs, all loops
    parallel, whose operands are each either contiguous along the innermost
    loop or don't depend on it, becomes loops over the other dimensions and
    rows of vectors as wide as the register (`vector-bits` over the widest
    element type), the last one of a row masked: contiguous operands are
    loaded as vectors, the others read once and broadcast, the body applied
    lane-wise. Rows under 4 or over 64 elements of strided views (LLVM
    vectorizes those along the row) and ops reading some operand across its
    rows (transposes) are left alone. A reduction along the innermost loop
    (a sum, product, maximum or minimum of an elementwise term: layer-norm's
    statistics, softmax's max and sum) of rows of 16 or more runs into four
    independent vector accumulators, combined once per row: the order of
    the float operations changes, their result only by rounding.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "vector register width of the target CPU (512 AVX-512, 256 AVX2)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def KilnInterchangeLoops : Pass<"kiln-interchange-loops", "::mlir::func::FuncOp"> {
  let summary = "orders contraction loops so the innermost one runs along contiguous memory";
  let description = [{
    A linalg op with reductions whose innermost parallel loop indexes every
    operand it touches in that operand's last dimension, with unit stride
    (a matmul's n, a convolution's ow), gets its reductions moved just above
    that loop: `(m, n, k)` becomes `(m, k, n)`, so the loops the CPU
    lowering emits end in a contiguous axpy instead of a strided dot
    product. Named ops are generalized first.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // KILN_LOWERING_CPUPASSES_TD
