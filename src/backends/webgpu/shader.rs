//! WGSL assembly. Each file in `shaders/` holds one piece: the shared prelude, the operand
//! snippets (`a` per source dtype, `b`, the output `d`), the shared entry points (element and
//! row kernels: bounds check, then the kernel's body) and each kernel's own code. A pipeline's
//! source is joined here from its `Recipe`, after a generated header: the constants shared
//! with Rust and the parameter structs, whose WGSL declarations come from the Rust
//! definitions below (one field list for both sides).

use crate::graph::{BinaryOp, DType, UnaryOp, ACT_NONE};

/// Invocations per 1-D workgroup (`WG`; SwiftShader allows at most 256).
pub(super) const WG: usize = 256;
/// Output tile edge of the matmul shader (`MATMUL_TILE`; its 16 x 16 threads of 4 x 4
/// outputs fix it at 64).
pub(super) const MATMUL_TILE: usize = 64;
/// Rows of `a` per workgroup of the matvec shader (`MATVEC_ROWS`).
pub(super) const MATVEC_ROWS: usize = 4;
/// Up to this many columns of `b`, matmul runs as matrix-vector products, all columns in one
/// workgroup (a 64x64 tile would leave most of its threads idle). The shader's `MATVEC_COLS`.
pub(super) const MATVEC_COLS: usize = 8;
/// Up to this many columns of `b`, matmul may run as the small-batch kernel (4 x 4 output
/// blocks per invocation, no workgroup memory) instead of the 64 x 64 tile (`SMALL_COLS`).
pub(super) const SMALL_COLS: usize = 32;
/// Invocations per workgroup of the small-batch matmul (`SMALL_WG`): small groups spread
/// few blocks over many compute units.
pub(super) const SMALL_WG: usize = 64;
/// Columns of `b` per workgroup of the row-parallel matmul (`ROWS_COLS`; more columns take
/// more workgroups along y).
pub(super) const ROWS_COLS: usize = 8;
/// Invocations per workgroup of the attention kernel (`ATT_WG`; shaders/attention.wgsl):
/// one workgroup per output row, keys in tiles of this many, and each thread owns up to 4
/// output elements (so `d_v <= 4 * ATT_WG`).
pub(super) const ATT_WG: usize = 64;
/// Largest head size of q and k the attention kernel takes (`ATT_MAX_D`: q's row is held in
/// workgroup memory).
pub(super) const ATT_MAX_D: usize = 256;
/// Largest head size of v the attention kernel takes (4 accumulators per thread).
pub(super) const ATT_MAX_DV: usize = 4 * ATT_WG;
/// Query rows per workgroup of the query-tiled attention (`ATT_TQ`; attention_tiled.wgsl).
pub(super) const ATT_TQ: usize = 16;
/// Keys per tile of the query-tiled attention (`ATT_TK`): each thread scores one key of a
/// tile against all `ATT_TQ` rows.
pub(super) const ATT_TK: usize = ATT_WG;
/// Largest head size (q, k and v) of the query-tiled attention (`ATT_TD`): each thread owns
/// two output elements a row, and q's rows sit in workgroup memory.
pub(super) const ATT_TD: usize = 2 * ATT_WG;
/// Workgroup memory the query-tiled attention declares: q's rows, a tile's scores, the
/// per-row factors, the per-thread partial maxima and sums (f32), and each row's query,
/// head and mask offset (3 u32): 12.5 KiB of WebGPU's guaranteed 16.
pub(super) const ATT_TILED_BYTES: usize =
    4 * (ATT_TQ * ATT_TD + ATT_TQ * ATT_TK + ATT_TQ + ATT_WG + 3 * ATT_TQ);
// Within WebGPU's guaranteed workgroup memory, so every adapter can run it.
const _: () = assert!(ATT_TILED_BYTES <= 16384);
/// `offs.w` flag: `b` shares `a`'s memory and is read through `a`'s binding (`SHARED_B`).
pub(super) const SHARED_B: u32 = 1;
/// `offs.w` flag: the output is written over `a`, through `a`'s binding (`IN_PLACE`).
pub(super) const IN_PLACE: u32 = 2;
/// `offs.w` flag: operand `c` shares `a`'s memory and is read through `a`'s binding
/// (`SHARED_C`; attention's v when q, k and v are views of one tensor).
pub(super) const SHARED_C: u32 = 4;

/// `e.w` flag of a fused epilogue: multiply by the vector at `e.x` (`EP_SCALE`).
pub(super) const EP_SCALE: u32 = 1;
/// `e.w` flag of a fused epilogue: add the vector at `e.y` (`EP_BIAS`).
pub(super) const EP_BIAS: u32 = 2;
/// `e.w` flag of a fused norm: its input is `a + b` (`EP_RESID`).
pub(super) const EP_RESID: u32 = 4;
/// `e.w` flag of a fused epilogue: the bias vector is read through binding 4 with the scale
/// vector (their bindings would share bytes), not through binding 5 (`EP_MERGED`).
pub(super) const EP_MERGED: u32 = 8;

/// `u.z` of the unary kernel (unary.wgsl): the act function of code `u.x` (`MAP_ACT`), a
/// scale by `f.x` (`MAP_SCALE`), or a clamp to `[f.y, f.z]` (`MAP_CLAMP`).
pub(super) const MAP_ACT: u32 = 0;
/// See [`MAP_ACT`].
pub(super) const MAP_SCALE: u32 = 1;
/// See [`MAP_ACT`].
pub(super) const MAP_CLAMP: u32 = 2;

/// The constants every op shader sees, by their WGSL names (with the op tables' codes,
/// [`op_table_wgsl`]).
const CONSTANTS: [(&str, u32); 22] = [
    ("WG", WG as u32),
    ("ATT_WG", ATT_WG as u32),
    ("ATT_MAX_D", ATT_MAX_D as u32),
    ("ATT_TQ", ATT_TQ as u32),
    ("ATT_TK", ATT_TK as u32),
    ("ATT_TD", ATT_TD as u32),
    ("MATMUL_TILE", MATMUL_TILE as u32),
    ("MATVEC_ROWS", MATVEC_ROWS as u32),
    ("MATVEC_COLS", MATVEC_COLS as u32),
    ("SMALL_COLS", SMALL_COLS as u32),
    ("SMALL_WG", SMALL_WG as u32),
    ("ROWS_COLS", ROWS_COLS as u32),
    ("SHARED_B", SHARED_B),
    ("IN_PLACE", IN_PLACE),
    ("SHARED_C", SHARED_C),
    ("EP_SCALE", EP_SCALE),
    ("EP_BIAS", EP_BIAS),
    ("EP_RESID", EP_RESID),
    ("EP_MERGED", EP_MERGED),
    ("MAP_ACT", MAP_ACT),
    ("MAP_SCALE", MAP_SCALE),
    ("MAP_CLAMP", MAP_CLAMP),
];

/// The WGSL name of a unary op's code (`ACT_GELU_ERF`).
fn act_const(op: UnaryOp) -> String {
    format!("ACT_{}", op.method().to_uppercase())
}

/// The WGSL name of a binary op's code (`BIN_ADD`).
fn bin_const(op: BinaryOp) -> String {
    format!("BIN_{}", format!("{op:?}").to_uppercase())
}

/// The op tables' codes as WGSL constants (`ACT_NONE`, `ACT_GELU`, ..., `BIN_ADD`, ...), in
/// every shader's header.
fn op_table_wgsl() -> String {
    let mut s = format!("const ACT_NONE: u32 = {ACT_NONE}u;\n");
    for &op in UnaryOp::ALL {
        s.push_str(&format!("const {}: u32 = {}u;\n", act_const(op), op.code()));
    }
    for &op in BinaryOp::ALL {
        s.push_str(&format!("const {}: u32 = {}u;\n", bin_const(op), op.code()));
    }
    s
}

/// `fn {signature} {{ switch op {{ ... }} }}`: one `case` returning each expression, and a
/// default that is unreachable (Rust passes only the tables' codes) and NaN if it were not,
/// so a stale code is loud (from a runtime value: WGSL rejects NaN constants).
fn switch_fn(signature: &str, cases: impl Iterator<Item = (String, &'static str)>) -> String {
    let mut s = format!("fn {signature} {{\n    switch op {{\n");
    for (code, expr) in cases {
        s.push_str(&format!("        case {code}: {{ return {expr}; }}\n"));
    }
    s.push_str("        default: { return bitcast<f32>(0x7fc00000u | (op & 0u)); }\n    }\n}\n");
    s
}

/// `act(x, op)`: the unary op of code `op` (`ACT_NONE`: `x`), one case per table row, after
/// the helpers its expressions call (act.wgsl).
fn act_wgsl() -> String {
    let none = std::iter::once(("ACT_NONE".to_string(), "x"));
    let ops = UnaryOp::ALL.iter().map(|&op| (act_const(op), op.wgsl()));
    String::from(wgsl::ACT) + &switch_fn("act(x: f32, op: u32) -> f32", none.chain(ops))
}

/// `binary_op(x, y, op)`: the binary op of code `op`, one case per table row.
fn binary_wgsl() -> String {
    let ops = BinaryOp::ALL.iter().map(|&op| (bin_const(op), op.wgsl()));
    switch_fn("binary_op(x: f32, y: f32, op: u32) -> f32", ops)
}

/// The shape of the register-tiled matmul (`Kernel::MatMulReg`, shaders/matmul_reg.wgsl): a
/// `tm` x `tn` output tile per workgroup of (`tm / rm`) x (`tn / rn`) threads, each an `rm` x
/// `rn` register block, k in steps of `tk` through workgroup memory. Chosen per adapter by
/// [`RegTile::for_limits`]; part of the pipeline key, its fields become the shader's constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct RegTile {
    pub tm: u32,
    pub tn: u32,
    pub tk: u32,
    pub rm: u32,
    pub rn: u32,
}

/// What [`RegTile::for_limits`] reads of the adapter's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TileLimits {
    pub invocations: u32,
    pub size_x: u32,
    pub size_y: u32,
    pub storage_bytes: u32,
}

impl From<&wgpu::Limits> for TileLimits {
    fn from(l: &wgpu::Limits) -> Self {
        Self {
            invocations: l.max_compute_invocations_per_workgroup,
            size_x: l.max_compute_workgroup_size_x,
            size_y: l.max_compute_workgroup_size_y,
            storage_bytes: l.max_compute_workgroup_storage_size,
        }
    }
}

/// Register-tile shapes, best first: 8 x 8 blocks (64 products per 16 values read from
/// workgroup memory) on the largest tile whose k step fits, then smaller tiles and blocks.
/// Every shape keeps its thread count `tm / rm * tn / rn` a divisor of the tile's slots of 4
/// consecutive k (`tk / 4 * tm` and `tk / 4 * tn`) and a multiple of `tk / 4`, as the
/// shader's loads assume.
const REG_TILES: [RegTile; 6] = [
    RegTile::new(128, 128, 32, 8, 8),
    RegTile::new(128, 128, 16, 8, 8),
    RegTile::new(128, 64, 16, 8, 4),
    RegTile::new(64, 64, 16, 4, 4),
    RegTile::new(64, 64, 16, 8, 8),
    RegTile::new(32, 32, 16, 4, 4),
];

impl RegTile {
    const fn new(tm: u32, tn: u32, tk: u32, rm: u32, rn: u32) -> Self {
        Self { tm, tn, tk, rm, rn }
    }

    /// Threads along m and n (the workgroup's x and y sizes).
    pub fn threads(&self) -> (u32, u32) {
        (self.tm / self.rm, self.tn / self.rn)
    }

    /// Bytes of workgroup memory: a `tk` x `tm` and a `tk` x `tn` tile, each row one vec4
    /// longer (the shader's padding).
    pub fn storage_bytes(&self) -> u32 {
        self.tk * (self.tm + 4 + self.tn + 4) * 4
    }

    /// The first shape of [`REG_TILES`] the limits allow, `None` if none does.
    pub fn for_limits(l: TileLimits) -> Option<Self> {
        REG_TILES.into_iter().find(|t| {
            let (x, y) = t.threads();
            x * y <= l.invocations
                && x <= l.size_x
                && y <= l.size_y
                && t.storage_bytes() <= l.storage_bytes
        })
    }

    /// The shader's constants.
    fn wgsl(&self) -> String {
        let (x, y) = self.threads();
        [
            ("TM", self.tm),
            ("TN", self.tn),
            ("TK", self.tk),
            ("RM", self.rm),
            ("RN", self.rn),
            ("NX", x),
            ("NY", y),
        ]
        .iter()
        .map(|(name, v)| format!("const {name}: u32 = {v}u;\n"))
        .collect()
    }
}

/// A Rust type a shader reads from a uniform, with its WGSL name, size and alignment.
pub(super) trait WgslType {
    const WGSL: &'static str;
    const SIZE: usize;
    const ALIGN: usize;
}

impl WgslType for u32 {
    const WGSL: &'static str = "u32";
    const SIZE: usize = 4;
    const ALIGN: usize = 4;
}

impl WgslType for [u32; 4] {
    const WGSL: &'static str = "vec4<u32>";
    const SIZE: usize = 16;
    const ALIGN: usize = 16;
}

impl WgslType for [f32; 4] {
    const WGSL: &'static str = "vec4<f32>";
    const SIZE: usize = 16;
    const ALIGN: usize = 16;
}

/// Defines a `#[repr(C)]` Pod struct a shader reads as a uniform, and its WGSL declaration
/// (`wgsl()`) from the same field list; the field docs become WGSL comments. A compile-time
/// check keeps every field where WGSL's layout rules put it.
macro_rules! uniform_struct {
    (
        $(#[doc = $doc:literal])*
        pub(super) struct $name:ident {
            $( $(#[doc = $fdoc:literal])* pub $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[doc = $doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
        pub(super) struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
        }

        // With every field at a multiple of its WGSL alignment and the size a multiple of
        // each, WGSL lays the struct out exactly as repr(C) does (no padding anywhere).
        const _: () = {
            $(
                assert!(
                    std::mem::offset_of!($name, $field) % <$ty as WgslType>::ALIGN == 0,
                    concat!(stringify!($name), ".", stringify!($field), " is not WGSL-aligned"),
                );
                assert!(
                    std::mem::size_of::<$ty>() == <$ty as WgslType>::SIZE,
                    concat!(stringify!($name), ".", stringify!($field), " differs in size"),
                );
                assert!(
                    std::mem::size_of::<$name>() % <$ty as WgslType>::ALIGN == 0,
                    concat!(stringify!($name), " needs trailing padding in WGSL"),
                );
            )*
        };

        impl $name {
            /// Field names and byte offsets, to check against the WGSL layout.
            #[cfg(all(test, not(target_arch = "wasm32")))]
            const LAYOUT: &'static [(&'static str, usize)] =
                &[$( (stringify!($field), std::mem::offset_of!($name, $field)) ),*];

            /// The WGSL declaration of this struct.
            pub fn wgsl() -> String {
                // One concat of static pieces: little code in the wasm build.
                [
                    concat!("struct ", stringify!($name), " {\n"),
                    $(
                        $( concat!("    //", $fdoc, "\n"), )*
                        concat!("    ", stringify!($field), ": "),
                        <$ty as WgslType>::WGSL,
                        ",\n",
                    )*
                    "}\n",
                ]
                .concat()
            }
        }
    };
}

uniform_struct! {
    /// The parameter block every op shader reads (`p`). Offsets and strides are in storage
    /// units of their tensor (see `ops::unit`).
    pub(super) struct Params {
        /// Shape of the output d.
        pub d_ne: [u32; 4],
        /// Strides of d.
        pub d_nb: [u32; 4],
        /// Shape of operand a.
        pub a_ne: [u32; 4],
        /// Strides of a.
        pub a_nb: [u32; 4],
        /// Shape of operand b.
        pub b_ne: [u32; 4],
        /// Strides of b.
        pub b_nb: [u32; 4],
        /// Offsets of d, a, b inside their bindings; w: SHARED_B | IN_PLACE | SHARED_C flags.
        pub offs: [u32; 4],
        /// Op-specific integers (each kernel file says which); u.y: the work item count.
        pub u: [u32; 4],
        /// Op-specific floats.
        pub f: [f32; 4],
        /// Fused epilogue (fuse.rs): x, y: offsets of the scale and bias vectors in bindings
        /// 4 and 5; z: activation (act.wgsl); w: EP_SCALE | EP_BIAS | EP_RESID | EP_MERGED.
        /// The shaders read x, y and the last two flags; the rest is compiled in
        /// (`Variant::Fused`). Kernels with a third operand (binding 4) find its offset in x.
        pub e: [u32; 4],
        /// Strides of operand c (binding 4), for kernels that read it as a tensor
        /// (attention's v).
        pub c_nb: [u32; 4],
        /// Shape of operand m (binding 5; attention's mask).
        pub m_ne: [u32; 4],
        /// Strides of m.
        pub m_nb: [u32; 4],
    }
}

uniform_struct! {
    /// The patch shader's parameters (`q`): d[word] = (d[word] & !mask) | (value & mask).
    pub(super) struct PatchParams {
        /// Word index inside the binding.
        pub word: u32,
        /// Bits to replace.
        pub mask: u32,
        /// Their new values.
        pub value: u32,
        /// Padding to 16 bytes.
        pub pad: u32,
    }
}

/// Byte size of [`Params`].
pub(super) const PARAMS_SIZE: usize = std::mem::size_of::<Params>();

/// The shader files (as build.rs leaves them: no comments, no indentation).
mod wgsl {
    macro_rules! shader {
        ($file:literal) => {
            include_str!(concat!(env!("OUT_DIR"), "/shaders/", $file))
        };
    }
    pub const PRELUDE: &str = shader!("prelude.wgsl");
    pub const ENTRY_ELEMENT: &str = shader!("entry_element.wgsl");
    pub const ENTRY_ROW: &str = shader!("entry_row.wgsl");
    pub const ROW_REDUCE: &str = shader!("row_reduce.wgsl");
    pub const ROW_REDUCE_ONE: &str = shader!("row_reduce_one.wgsl");
    pub const A_F32: &str = shader!("a_f32.wgsl");
    pub const A_F32X4: &str = shader!("a_f32x4.wgsl");
    pub const A_PACKED: &str = shader!("a_packed.wgsl");
    pub const A_F16: &str = shader!("a_f16.wgsl");
    pub const A_Q8_0: &str = shader!("a_q8_0.wgsl");
    pub const A_Q4_0: &str = shader!("a_q4_0.wgsl");
    pub const A_Q5_0: &str = shader!("a_q5_0.wgsl");
    pub const A_Q5_1: &str = shader!("a_q5_1.wgsl");
    pub const A_Q4_1: &str = shader!("a_q4_1.wgsl");
    pub const A_IQ4_NL: &str = shader!("a_iq4_nl.wgsl");
    pub const A_BLOCK_TAIL: &str = shader!("a_block_tail.wgsl");
    pub const A_KQUANT: &str = shader!("a_kquant.wgsl");
    pub const A_Q2_K: &str = shader!("a_q2_k.wgsl");
    pub const A_Q3_K: &str = shader!("a_q3_k.wgsl");
    pub const A_Q4_K: &str = shader!("a_q4_k.wgsl");
    pub const A_Q5_K: &str = shader!("a_q5_k.wgsl");
    pub const A_Q6_K: &str = shader!("a_q6_k.wgsl");
    pub const B: &str = shader!("b.wgsl");
    pub const B_F32X4: &str = shader!("b_f32x4.wgsl");
    pub const D: &str = shader!("d.wgsl");
    pub const D_IN_PLACE: &str = shader!("d_in_place.wgsl");
    pub const DOT_PLAIN: &str = shader!("dot_plain.wgsl");
    pub const DOT_Q8_0: &str = shader!("dot_q8_0.wgsl");
    pub const DOT_Q4_0: &str = shader!("dot_q4_0.wgsl");
    pub const DOT_Q5_0: &str = shader!("dot_q5_0.wgsl");
    pub const DOT_Q5_1: &str = shader!("dot_q5_1.wgsl");
    pub const DOT_Q4_1: &str = shader!("dot_q4_1.wgsl");
    pub const DOT_IQ4_NL: &str = shader!("dot_iq4_nl.wgsl");
    pub const DOT_KQUANT: &str = shader!("dot_kquant.wgsl");
    pub const BINARY: &str = shader!("binary.wgsl");
    pub const UNARY: &str = shader!("unary.wgsl");
    pub const ACT: &str = shader!("act.wgsl");
    pub const EPILOGUE: &str = shader!("epilogue.wgsl");
    pub const EPILOGUE_NONE: &str = shader!("epilogue_none.wgsl");
    pub const SOFTMAX: &str = shader!("softmax.wgsl");
    pub const NORM: &str = shader!("norm.wgsl");
    pub const SUM_ROWS: &str = shader!("sum_rows.wgsl");
    pub const ARGMAX: &str = shader!("argmax.wgsl");
    pub const ROPE: &str = shader!("rope.wgsl");
    pub const ROPE_FACTORS: &str = shader!("rope_factors.wgsl");
    pub const ROPE_NO_FACTORS: &str = shader!("rope_no_factors.wgsl");
    pub const CPY: &str = shader!("cpy.wgsl");
    pub const CPY_F16: &str = shader!("cpy_f16.wgsl");
    pub const COPY_U32: &str = shader!("copy_u32.wgsl");
    pub const COPY_BYTES: &str = shader!("copy_bytes.wgsl");
    pub const GET_ROWS: &str = shader!("get_rows.wgsl");
    pub const SET_ROWS: &str = shader!("set_rows.wgsl");
    pub const SCATTER_ROW: &str = shader!("scatter_row.wgsl");
    pub const SET_ROWS_SCATTER: &str = shader!("set_rows_scatter.wgsl");
    pub const SET_ROWS_SCATTER_F16: &str = shader!("set_rows_scatter_f16.wgsl");
    pub const MATMUL: &str = shader!("matmul.wgsl");
    pub const MATVEC: &str = shader!("matvec.wgsl");
    pub const MATMUL_SMALL: &str = shader!("matmul_small.wgsl");
    pub const MATMUL_REG: &str = shader!("matmul_reg.wgsl");
    pub const MATMUL_ROWS: &str = shader!("matmul_rows.wgsl");
    pub const QUANTIZE: &str = shader!("quantize.wgsl");
    pub const PATCH: &str = shader!("patch.wgsl");
    pub const ATTENTION: &str = shader!("attention.wgsl");
    pub const ATTENTION_KV: &str = shader!("attention_kv.wgsl");
    pub const ATTENTION_TILED: &str = shader!("attention_tiled.wgsl");
    pub const ATTENTION_QK: &str = shader!("attention_qk.wgsl");
    pub const ATTENTION_QK_F16: &str = shader!("attention_qk_f16.wgsl");
    pub const ATTENTION_MAX: &str = shader!("attention_max.wgsl");
    pub const ATTENTION_MAX_SUBGROUP: &str = shader!("attention_max_subgroup.wgsl");
    pub const ATTENTION_COMBINE: &str = shader!("attention_combine.wgsl");
}

/// How an op shader is put together around its kernel file.
struct Recipe {
    /// The kernel file.
    body: &'static str,
    /// The shared entry point calling the body (`fn element` / `fn row`), or `None` when the
    /// body declares its own `main`.
    entry: Option<&'static str>,
    /// WGSL element type of the output `d` (binding 2).
    d: &'static str,
    /// WGSL element type of operand `b` (binding 3), if the kernel reads one.
    b: Option<&'static str>,
    /// Whether it writes over `a` (`d_put` / `d_read`).
    in_place: InPlace,
    /// Snippets the body calls, before it (beside the shared ones every recipe gets).
    helpers: &'static [&'static str],
    /// Uses the row reductions `wg_sum` / `wg_max` / `wg_argmax` (row_reduce.wgsl, or
    /// row_reduce_one.wgsl for one thread per row).
    reductions: bool,
    /// Sends its results through `epilogue` / `store_d`, so nodes after it can be fused
    /// into it ([`Variant::Fused`]).
    epilogue: bool,
    /// Uses f16 types (`shader-f16`): the module starts with `enable f16;`.
    f16: bool,
}

/// Whether a kernel computes into its first operand's memory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InPlace {
    /// Never: its output has bindings of its own.
    No,
    /// Where the output is `a`'s memory (IN_PLACE), or into `d`.
    May,
    /// Only: it writes some of the output's elements (a state write's rows), the others
    /// being `a`'s.
    Only,
}

/// A compute shader: an op family with its output variant. With the dtype of source `a`
/// (which picks the snippet `a_get` reads it through) it keys the pipeline cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kernel {
    Binary,
    Unary,
    SetRows,
    /// set_rows over a state, in place: one invocation per row element written.
    SetRowsScatter,
    /// The same over an f16 state: one invocation per pair of elements (a u32 word).
    SetRowsScatterF16,
    SoftMax(RowThreads),
    Norm(RowThreads),
    SumRows(RowThreads),
    Argmax(RowThreads),
    /// RoPE; `factors`: each pair's frequency divided by its factor (binding 4).
    Rope {
        factors: bool,
    },
    /// Converting copy to f32.
    Cpy,
    /// Converting copy to f16.
    CpyF16,
    /// Converting copy to q8_0 / q4_0.
    Quantize,
    /// Bit-exact 32-bit copy and concat.
    CopyU32,
    /// Byte copy of packed rows (quantized cont).
    CopyBytes,
    GetRows,
    /// Register-tiled matmul.
    MatMul,
    /// Matrix-vector products (few columns).
    MatVec,
    /// Small-batch matmul: 4 x 4 output blocks per invocation, no workgroup memory.
    MatMulSmall,
    /// Register-tiled matmul of the given shape (from the adapter's limits).
    MatMulReg(RegTile),
    /// Row-parallel matmul for few columns: threads per row from k, a workgroup reduction.
    MatMulRows,
    /// Fused attention: one workgroup per output row, an online softmax over key tiles
    /// (k as `a`, q as `b`, v at binding 4, the mask at binding 5), in the variant the
    /// adapter's features allow.
    Attention(AttShader),
    /// Fused attention tiled over queries: a workgroup per 16 rows of the heads sharing a KV
    /// head, each K/V tile read once for all of them (same operands as `Attention`; prompts,
    /// and grouped-query decode steps on a software adapter).
    AttentionTiled,
    /// The merge of an attention whose keys were split (`ops::KvSplit`): the splits' partial
    /// results (`a`, a scratch buffer) into the output, one invocation per element.
    AttentionCombine,
    /// Byte patch of one word (buffer writes).
    Patch,
}

/// The optional features a fused attention's shader uses (shaders/attention.wgsl), chosen
/// per adapter and node in `plan_attention`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct AttShader {
    /// `shader-f16` over an f16 K/V: q held in workgroup memory as f16, the arithmetic
    /// still f32 (attention_qk_f16.wgsl).
    pub f16: bool,
    /// Subgroup operations for each key tile's maximum (attention_max_subgroup.wgsl).
    pub subgroups: bool,
}

impl Kernel {
    /// A row kernel's threads per row.
    pub(super) fn row_threads(self) -> Option<RowThreads> {
        match self {
            Kernel::SoftMax(t) | Kernel::Norm(t) | Kernel::SumRows(t) | Kernel::Argmax(t) => {
                Some(t)
            }
            _ => None,
        }
    }
}

/// Threads sharing one row of a row kernel (softmax, norms, row sums, argmax): a power of two
/// from 1 to `WG`, compiled into its shader as `TPR`; a workgroup runs `WG / TPR` rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct RowThreads(u32);

impl RowThreads {
    /// One thread per row: no workgroup memory, no barriers.
    pub(super) const ONE: Self = Self(1);
    /// One workgroup per row.
    pub(super) const ALL: Self = Self(WG as u32);

    /// For rows of `n` elements (`forced`, `ops::WebGpuOptions::row_threads`, overrides it:
    /// rounded up to a power of two, 1 to `WG`). On a software adapter
    /// one thread per row: it runs a barrier by switching between all of a workgroup's
    /// invocations, so the 20 of a softmax or norm over 256 threads cost far more than a
    /// serial row (SwiftShader in Chromium, MiniLM f32 at 32 tokens: the attention softmax,
    /// 384 rows of 32, took 230 ms a call with 256 threads a row). On a GPU about one element
    /// per thread, from a warp to `WG` (short rows no longer leave most of a 256-thread
    /// workgroup idle).
    pub(super) fn for_rows(n: usize, software: bool, forced: Option<u32>) -> Self {
        if let Some(t) = forced {
            return Self(t.clamp(1, WG as u32).next_power_of_two());
        }
        if software {
            Self::ONE
        } else {
            Self((n.min(WG).next_power_of_two() as u32).clamp(32, Self::ALL.0))
        }
    }

    pub(super) fn get(self) -> u32 {
        self.0
    }

    /// Workgroups for `rows` rows.
    pub(super) fn groups(self, rows: usize) -> usize {
        rows.div_ceil(WG / self.0 as usize)
    }
}

/// Pipeline cache key: the kernel and the dtype of source `a`.
pub(super) type PipelineKey = (Kernel, DType);

/// Which variant of a kernel's shader a pipeline runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Variant {
    /// The kernel alone (`epilogue_none.wgsl`).
    Plain,
    /// With the fused epilogue (`epilogue.wgsl`, bindings 4 and 5), for kernels that take
    /// one: `ops` (EP_SCALE | EP_BIAS) and activation `act` (act.wgsl) are compiled in as
    /// constants, so the store holds only what the chain does (a software adapter's compiler
    /// then keeps the matmul's accumulators in registers).
    Fused { ops: u32, act: u32 },
}

/// Pipeline cache key: the kernel, the dtype of source `a` and the variant.
pub(super) type ShaderKey = (PipelineKey, Variant);

/// The recipe of an op shader; `None` for the standalone patch shader.
fn recipe(kernel: Kernel) -> Option<Recipe> {
    let r = |body, entry, d, b| Recipe {
        body,
        entry,
        d,
        b,
        in_place: InPlace::No,
        helpers: &[],
        reductions: false,
        epilogue: false,
        f16: false,
    };
    let element = Some(wgsl::ENTRY_ELEMENT);
    let row = Some(wgsl::ENTRY_ROW);
    Some(match kernel {
        Kernel::Binary => Recipe {
            in_place: InPlace::May,
            ..r(wgsl::BINARY, element, "f32", Some("f32"))
        },
        Kernel::Unary => Recipe {
            in_place: InPlace::May,
            ..r(wgsl::UNARY, element, "f32", None)
        },
        Kernel::SoftMax(_) => Recipe {
            in_place: InPlace::May,
            reductions: true,
            ..r(wgsl::SOFTMAX, row, "f32", Some("f32"))
        },
        // b: the residual added before a fused norm (a dummy otherwise).
        Kernel::Norm(_) => Recipe {
            in_place: InPlace::May,
            reductions: true,
            epilogue: true,
            ..r(wgsl::NORM, row, "f32", Some("f32"))
        },
        Kernel::SumRows(_) => Recipe {
            reductions: true,
            ..r(wgsl::SUM_ROWS, row, "f32", None)
        },
        Kernel::Argmax(_) => Recipe {
            reductions: true,
            ..r(wgsl::ARGMAX, row, "i32", None)
        },
        // c (binding 4, with factors): f32 frequency factors, declared in rope_factors.wgsl.
        Kernel::Rope { factors } => Recipe {
            in_place: InPlace::May,
            helpers: if factors {
                &[wgsl::ROPE_FACTORS]
            } else {
                &[wgsl::ROPE_NO_FACTORS]
            },
            ..r(wgsl::ROPE, element, "f32", Some("i32"))
        },
        Kernel::Cpy => r(wgsl::CPY, element, "f32", None),
        Kernel::CpyF16 => r(wgsl::CPY_F16, element, "u32", None),
        Kernel::Quantize => r(wgsl::QUANTIZE, element, "u32", None),
        Kernel::CopyU32 => r(wgsl::COPY_U32, element, "u32", Some("u32")),
        Kernel::CopyBytes => r(wgsl::COPY_BYTES, element, "u32", None),
        Kernel::GetRows => r(wgsl::GET_ROWS, element, "f32", Some("i32")),
        // c (binding 4): the i32 row indices, declared in set_rows.wgsl.
        Kernel::SetRows => Recipe {
            in_place: InPlace::May,
            ..r(wgsl::SET_ROWS, element, "f32", Some("f32"))
        },
        // c (binding 4): the i32 row indices, declared in scatter_row.wgsl.
        Kernel::SetRowsScatter => Recipe {
            in_place: InPlace::Only,
            helpers: &[wgsl::SCATTER_ROW],
            ..r(wgsl::SET_ROWS_SCATTER, element, "f32", Some("f32"))
        },
        // Into a's u32 words (two halves each).
        Kernel::SetRowsScatterF16 => Recipe {
            in_place: InPlace::Only,
            helpers: &[wgsl::SCATTER_ROW],
            ..r(wgsl::SET_ROWS_SCATTER_F16, element, "u32", Some("f32"))
        },
        Kernel::MatMul => Recipe {
            epilogue: true,
            ..r(wgsl::MATMUL, None, "f32", Some("f32"))
        },
        Kernel::MatVec => Recipe {
            epilogue: true,
            ..r(wgsl::MATVEC, None, "f32", Some("f32"))
        },
        Kernel::MatMulSmall => Recipe {
            epilogue: true,
            ..r(wgsl::MATMUL_SMALL, None, "f32", Some("f32"))
        },
        Kernel::MatMulReg(_) => Recipe {
            epilogue: true,
            ..r(wgsl::MATMUL_REG, None, "f32", Some("f32"))
        },
        Kernel::MatMulRows => Recipe {
            epilogue: true,
            ..r(wgsl::MATMUL_ROWS, None, "f32", Some("f32"))
        },
        // k is a, q is b; v (binding 4) and the mask (binding 5) are declared in
        // attention.wgsl, which has its own entry point.
        Kernel::Attention(v) => Recipe {
            helpers: match (v.f16, v.subgroups) {
                (false, false) => &[wgsl::ATTENTION_KV, wgsl::ATTENTION_QK, wgsl::ATTENTION_MAX],
                (true, false) => &[
                    wgsl::ATTENTION_KV,
                    wgsl::ATTENTION_QK_F16,
                    wgsl::ATTENTION_MAX,
                ],
                (false, true) => &[
                    wgsl::ATTENTION_KV,
                    wgsl::ATTENTION_QK,
                    wgsl::ATTENTION_MAX_SUBGROUP,
                ],
                (true, true) => &[
                    wgsl::ATTENTION_KV,
                    wgsl::ATTENTION_QK_F16,
                    wgsl::ATTENTION_MAX_SUBGROUP,
                ],
            },
            f16: v.f16,
            ..r(wgsl::ATTENTION, None, "f32", Some("f32"))
        },
        // The same operands; its own entry point.
        Kernel::AttentionTiled => Recipe {
            helpers: &[wgsl::ATTENTION_KV],
            ..r(wgsl::ATTENTION_TILED, None, "f32", Some("f32"))
        },
        // The split attention's partial results as `a` (f32).
        Kernel::AttentionCombine => r(wgsl::ATTENTION_COMBINE, element, "f32", None),
        Kernel::Patch => return None,
    })
}

/// Whether a kernel can compute into its first operand's memory (`d_put` in its shader).
pub(super) fn in_place_kernel(kernel: Kernel) -> bool {
    recipe(kernel).is_some_and(|r| r.in_place != InPlace::No)
}

/// Whether a kernel computes only into its first operand's memory (it writes some of the
/// output's elements, the others being `a`'s).
pub(super) fn in_place_only(kernel: Kernel) -> bool {
    recipe(kernel).is_some_and(|r| r.in_place == InPlace::Only)
}

/// Whether a kernel has an epilogue that nodes after it can be fused into.
pub(super) fn takes_epilogue(kernel: Kernel) -> bool {
    recipe(kernel).is_some_and(|r| r.epilogue)
}

/// WGSL source for a pipeline: the header (constants, `Params`, operand element types), the
/// prelude, the snippets reading `a` (per dtype) and `b` and writing `d`, the helpers the
/// kernel uses (the epilogue of `variant`), its body and its entry point.
pub(super) fn source(((kernel, dtype), variant): ShaderKey) -> String {
    let Some(r) = recipe(kernel) else {
        return PatchParams::wgsl() + wgsl::PATCH;
    };
    // The kernels loading 4 elements at once (a_vec4, b_vec4) bind f32 operands as vec4s.
    let x4 = matches!(kernel, Kernel::MatMulReg(_) | Kernel::MatMulRows);
    let a: &[&str] = match (kernel, dtype) {
        (Kernel::CopyU32 | Kernel::CopyBytes, _) | (_, DType::I32) => &[wgsl::A_PACKED],
        (_, DType::F16) => &[wgsl::A_PACKED, wgsl::A_F16],
        // 32-element blocks: the type's a_at, then the readers built on it.
        (_, DType::Q8_0) => &[wgsl::A_PACKED, wgsl::A_Q8_0, wgsl::A_BLOCK_TAIL],
        (_, DType::Q4_0) => &[wgsl::A_PACKED, wgsl::A_Q4_0, wgsl::A_BLOCK_TAIL],
        (_, DType::Q5_0) => &[wgsl::A_PACKED, wgsl::A_Q5_0, wgsl::A_BLOCK_TAIL],
        (_, DType::Q5_1) => &[wgsl::A_PACKED, wgsl::A_Q5_1, wgsl::A_BLOCK_TAIL],
        (_, DType::Q4_1) => &[wgsl::A_PACKED, wgsl::A_Q4_1, wgsl::A_BLOCK_TAIL],
        (_, DType::IQ4_NL) => &[wgsl::A_PACKED, wgsl::A_IQ4_NL, wgsl::A_BLOCK_TAIL],
        // K-quants: the shared super-block reader, then the type's bit planes and scales.
        (_, DType::Q2_K) => &[wgsl::A_PACKED, wgsl::A_KQUANT, wgsl::A_Q2_K],
        (_, DType::Q3_K) => &[wgsl::A_PACKED, wgsl::A_KQUANT, wgsl::A_Q3_K],
        (_, DType::Q4_K) => &[wgsl::A_PACKED, wgsl::A_KQUANT, wgsl::A_Q4_K],
        (_, DType::Q5_K) => &[wgsl::A_PACKED, wgsl::A_KQUANT, wgsl::A_Q5_K],
        (_, DType::Q6_K) => &[wgsl::A_PACKED, wgsl::A_KQUANT, wgsl::A_Q6_K],
        (_, DType::F32) if x4 => &[wgsl::A_F32X4],
        (_, DType::F32) => &[wgsl::A_F32],
    };
    let mut s = String::with_capacity(8192);
    // Extensions come first. Subgroup operations need no directive in naga (wgpu's native
    // SUBGROUP feature, which enables them, is not offered through a browser's WebGPU).
    if r.f16 {
        s.push_str("enable f16;\n");
    }
    for (name, value) in CONSTANTS {
        s.push_str(&format!("const {name}: u32 = {value}u;\n"));
    }
    s.push_str(&op_table_wgsl());
    s.push_str(&Params::wgsl());
    s.push_str(&format!("alias DT = {};\n", r.d));
    s.push_str(wgsl::PRELUDE);
    a.iter().for_each(|snippet| s.push_str(snippet));
    s.push_str(wgsl::D);
    match r.b {
        Some(_) if x4 => s.push_str(wgsl::B_F32X4),
        Some(bt) => {
            s.push_str(&format!("alias BT = {bt};\n"));
            s.push_str(wgsl::B);
        }
        None => {}
    }
    if let Kernel::MatMulReg(tile) = kernel {
        s.push_str(&tile.wgsl());
    }
    if r.in_place != InPlace::No {
        s.push_str(wgsl::D_IN_PLACE);
    }
    if let Some(tpr) = kernel.row_threads() {
        s.push_str(&format!("const TPR: u32 = {}u;\n", tpr.get()));
    }
    if r.reductions {
        // One thread per row reduces nothing: no workgroup memory, no barrier in the module.
        let one = kernel.row_threads().is_some_and(|t| t.get() == 1);
        s.push_str(if one {
            wgsl::ROW_REDUCE_ONE
        } else {
            wgsl::ROW_REDUCE
        });
    }
    let fused = match variant {
        Variant::Fused { ops, act } if r.epilogue => Some((ops, act)),
        _ => None,
    };
    if kernel == Kernel::Unary || fused.is_some() {
        s.push_str(&act_wgsl());
    }
    if kernel == Kernel::Binary {
        s.push_str(&binary_wgsl());
    }
    if let Some((ops, act)) = fused {
        s.push_str(&format!(
            "const EP_OPS: u32 = {ops}u;\nconst EP_ACT: u32 = {act}u;\n"
        ));
        s.push_str(wgsl::EPILOGUE);
    } else if r.epilogue {
        s.push_str(wgsl::EPILOGUE_NONE);
    }
    if let Kernel::Attention(_) | Kernel::AttentionTiled = kernel {
        s.push_str(&format!("const C_F16: bool = {};\n", dtype == DType::F16));
    }
    if kernel == Kernel::MatVec {
        s.push_str(match dtype {
            DType::Q8_0 => wgsl::DOT_Q8_0,
            DType::Q4_0 => wgsl::DOT_Q4_0,
            DType::Q5_0 => wgsl::DOT_Q5_0,
            DType::Q5_1 => wgsl::DOT_Q5_1,
            DType::Q4_1 => wgsl::DOT_Q4_1,
            DType::IQ4_NL => wgsl::DOT_IQ4_NL,
            DType::Q2_K | DType::Q3_K | DType::Q4_K | DType::Q5_K | DType::Q6_K => wgsl::DOT_KQUANT,
            DType::F32 | DType::F16 | DType::I32 => wgsl::DOT_PLAIN,
        });
    }
    r.helpers.iter().for_each(|h| s.push_str(h));
    s.push_str(r.body);
    if let Some(entry) = r.entry {
        s.push_str(entry);
    }
    s
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// Every kernel; the match makes a new variant a compile error here until it is listed.
    fn all_kernels() -> Vec<Kernel> {
        let mut all = vec![
            Kernel::Binary,
            Kernel::Unary,
            Kernel::SetRows,
            Kernel::SetRowsScatter,
            Kernel::SetRowsScatterF16,
            Kernel::Rope { factors: false },
            Kernel::Rope { factors: true },
            Kernel::Cpy,
            Kernel::CpyF16,
            Kernel::Quantize,
            Kernel::CopyU32,
            Kernel::CopyBytes,
            Kernel::GetRows,
            Kernel::MatMul,
            Kernel::MatVec,
            Kernel::MatMulSmall,
            Kernel::MatMulRows,
            Kernel::AttentionTiled,
            Kernel::AttentionCombine,
            Kernel::Patch,
        ];
        all.extend(REG_TILES.map(Kernel::MatMulReg));
        for f16 in [false, true] {
            for subgroups in [false, true] {
                all.push(Kernel::Attention(AttShader { f16, subgroups }));
            }
        }
        // Row kernels with one thread a row, a warp's worth, and a workgroup.
        for tpr in [
            RowThreads::ONE,
            RowThreads::for_rows(32, false, None),
            RowThreads::ALL,
        ] {
            all.extend([
                Kernel::SoftMax(tpr),
                Kernel::Norm(tpr),
                Kernel::SumRows(tpr),
                Kernel::Argmax(tpr),
            ]);
        }
        for &k in &all {
            match k {
                Kernel::Binary
                | Kernel::Unary
                | Kernel::SetRows
                | Kernel::SetRowsScatter
                | Kernel::SetRowsScatterF16
                | Kernel::SoftMax(_)
                | Kernel::Norm(_)
                | Kernel::SumRows(_)
                | Kernel::Argmax(_)
                | Kernel::Rope { .. }
                | Kernel::Cpy
                | Kernel::CpyF16
                | Kernel::Quantize
                | Kernel::CopyU32
                | Kernel::CopyBytes
                | Kernel::GetRows
                | Kernel::MatMul
                | Kernel::MatVec
                | Kernel::MatMulSmall
                | Kernel::MatMulReg(_)
                | Kernel::MatMulRows
                | Kernel::Attention(_)
                | Kernel::AttentionTiled
                | Kernel::AttentionCombine
                | Kernel::Patch => {}
            }
        }
        all
    }

    /// The pipeline keys `ops::plan` can ask for (and a few more): the copies that convert,
    /// matmul and get_rows take every float or quantized `a`; the byte and word copies and
    /// the patch key on I32; the rest (in-place and row kernels) read f32.
    fn all_keys() -> Vec<ShaderKey> {
        let mut keys = Vec::new();
        for k in all_kernels() {
            let dtypes: &[DType] = match k {
                Kernel::CopyU32 | Kernel::CopyBytes | Kernel::Patch => &[DType::I32],
                Kernel::Cpy
                | Kernel::CpyF16
                | Kernel::Quantize
                | Kernel::GetRows
                | Kernel::MatMul
                | Kernel::MatVec
                | Kernel::MatMulSmall
                | Kernel::MatMulReg(_)
                | Kernel::MatMulRows => &[
                    DType::F32,
                    DType::F16,
                    DType::Q8_0,
                    DType::Q4_0,
                    DType::Q2_K,
                    DType::Q3_K,
                    DType::Q4_K,
                    DType::Q5_K,
                    DType::Q6_K,
                ],
                // f32 or f16 K/V; the shader-f16 variant over f16 only.
                Kernel::Attention(v) if v.f16 => &[DType::F16],
                Kernel::Attention(_) | Kernel::AttentionTiled => &[DType::F32, DType::F16],
                Kernel::SetRowsScatterF16 => &[DType::F16],
                _ => &[DType::F32],
            };
            keys.extend(dtypes.iter().map(|&dt| ((k, dt), Variant::Plain)));
            if takes_epilogue(k) {
                let fused = Variant::Fused {
                    ops: EP_SCALE | EP_BIAS,
                    act: UnaryOp::GeluErf.code(),
                };
                keys.extend(dtypes.iter().map(|&dt| ((k, dt), fused)));
            }
        }
        keys
    }

    fn parse(key: ShaderKey) -> naga::Module {
        let src = source(key);
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{key:?}: {}", e.emit_to_string(&src)));
        // unpack2x16float: part of WebGPU, optional only on GLES (wgpu enables it there);
        // f16 and subgroup operations: the attention variants for shader-f16 and SUBGROUP.
        let caps = naga::valid::Capabilities::default()
            | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32
            | naga::valid::Capabilities::SHADER_FLOAT16
            | naga::valid::Capabilities::SUBGROUP;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
            .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
            .subgroup_operations(naga::valid::SubgroupOperationSet::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{key:?}: {}", e.emit_to_string(&src)));
        module
    }

    #[test]
    fn every_shader_parses_and_validates() {
        let keys = all_keys();
        // The matmul kernels (3, the row-parallel one and one per register tile) and 4 other
        // kernels on 9 dtypes (f32, f16, q8_0, q4_0 and the 5 K-quants), 3 on i32, on f32 6
        // (set_rows' scatter and rope with frequency factors among them) and 4 row kernels at 3 row widths; fused: every
        // matmul kernel on 9 dtypes, norm at 3 row widths; attention on f32 and f16, with
        // and without subgroups, its shader-f16 variants on f16, its query-tiled kernel on
        // f32 and f16, and its split's merge on f32; the f16 state write on f16.
        let matmuls = 4 + REG_TILES.len();
        assert_eq!(
            keys.len(),
            (matmuls + 4) * 9 + 3 + 6 + 4 * 3 + matmuls * 9 + 3 + 6 + 2 + 1 + 1
        );
        for key in keys {
            let module = parse(key);
            assert_eq!(module.entry_points.len(), 1, "{key:?}: one entry point");
            assert_eq!(module.entry_points[0].name, "main");
        }
    }

    /// The query-tiled attention's workgroup memory is what the planner checks against the
    /// adapter's limit (`ATT_TILED_BYTES`), and within WebGPU's guaranteed 16 KiB.
    #[test]
    fn tiled_attention_declares_the_workgroup_memory_planned() {
        for dtype in [DType::F32, DType::F16] {
            let module = parse(((Kernel::AttentionTiled, dtype), Variant::Plain));
            let bytes: u32 = module
                .global_variables
                .iter()
                .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
                .map(|(_, v)| module.types[v.ty].inner.size(module.to_ctx()))
                .sum();
            assert_eq!(bytes as usize, ATT_TILED_BYTES);
        }
    }

    /// The pipelines are made without naga's loop bounding (`Ctx::pipeline`): that is sound
    /// while every loop is a `for` (no `loop` or `while` statement) whose step the comment
    /// there accounts for.
    #[test]
    fn shaders_loop_only_in_for_statements() {
        for key in all_keys() {
            let src = source(key);
            for line in src.lines() {
                let code = line.split("//").next().unwrap_or_default();
                let words = || code.split(|c: char| !c.is_alphanumeric() && c != '_');
                assert!(
                    !words().any(|w| w == "loop" || w == "while"),
                    "{key:?}: `{}` (see Ctx::pipeline on loop bounding)",
                    line.trim()
                );
            }
        }
    }

    /// Limits of a desktop GPU (Vulkan on an NVIDIA card), of a device with WebGPU's default
    /// (downlevel) limits, of Mesa lavapipe, and ones too small for any shape.
    #[test]
    fn register_tiles_follow_the_limits() {
        let lim = |invocations, size_x, size_y, storage_bytes| TileLimits {
            invocations,
            size_x,
            size_y,
            storage_bytes,
        };
        let desktop = RegTile::for_limits(lim(1024, 1024, 1024, 49152));
        assert_eq!(desktop, Some(RegTile::new(128, 128, 32, 8, 8)));
        let webgpu_default = TileLimits::from(&wgpu::Limits::default());
        assert_eq!(webgpu_default, lim(256, 256, 256, 16384));
        let web = RegTile::for_limits(webgpu_default);
        assert_eq!(web, Some(RegTile::new(128, 64, 16, 8, 4)));
        let lavapipe = RegTile::for_limits(lim(1024, 1024, 1024, 32768));
        assert_eq!(lavapipe, Some(RegTile::new(128, 128, 16, 8, 8)));
        let downlevel = TileLimits::from(&wgpu::Limits::downlevel_defaults());
        assert_eq!(
            RegTile::for_limits(downlevel),
            Some(RegTile::new(128, 64, 16, 8, 4))
        );
        let narrow = RegTile::for_limits(lim(128, 128, 128, 16384));
        assert_eq!(narrow, Some(RegTile::new(64, 64, 16, 8, 8)));
        let tiny = RegTile::for_limits(lim(64, 64, 64, 8192));
        assert_eq!(tiny, Some(RegTile::new(32, 32, 16, 4, 4)));
        assert_eq!(RegTile::for_limits(lim(32, 32, 32, 65536)), None);
        assert_eq!(RegTile::for_limits(lim(1024, 1024, 1024, 2048)), None);
    }

    /// Every shape meets what the shader's loads assume.
    #[test]
    fn every_register_tile_fits_its_shader() {
        for t in REG_TILES {
            let (x, y) = t.threads();
            let threads = x * y;
            assert_eq!(t.rm % 4, 0, "{t:?}");
            assert_eq!(t.rn % 4, 0, "{t:?}");
            assert_eq!(t.tm % t.rm, 0, "{t:?}");
            assert_eq!(t.tn % t.rn, 0, "{t:?}");
            assert_eq!(t.tk % 4, 0, "{t:?}");
            assert_eq!(threads % (t.tk / 4), 0, "{t:?}");
            assert_eq!((t.tk / 4 * t.tm) % threads, 0, "{t:?}");
            assert_eq!((t.tk / 4 * t.tn) % threads, 0, "{t:?}");
            let module = parse(((Kernel::MatMulReg(t), DType::F32), Variant::Plain));
            assert_eq!(module.entry_points[0].workgroup_size, [x, y, 1], "{t:?}");
        }
    }

    /// Byte offsets and size of struct `name` as naga lays it out.
    fn wgsl_layout(module: &naga::Module, name: &str) -> (Vec<(String, usize)>, usize) {
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no struct {name}"))
            .1;
        match &ty.inner {
            naga::TypeInner::Struct { members, span } => (
                members
                    .iter()
                    .map(|m| (m.name.clone().unwrap_or_default(), m.offset as usize))
                    .collect(),
                *span as usize,
            ),
            other => panic!("{name} is {other:?}"),
        }
    }

    fn rust_layout(layout: &[(&str, usize)]) -> Vec<(String, usize)> {
        layout.iter().map(|&(n, o)| (n.to_string(), o)).collect()
    }

    #[test]
    fn generated_structs_match_the_rust_layout() {
        let module = parse(((Kernel::Binary, DType::F32), Variant::Plain));
        let (fields, size) = wgsl_layout(&module, "Params");
        assert_eq!(fields, rust_layout(Params::LAYOUT));
        assert_eq!(size, PARAMS_SIZE);
        assert_eq!(fields.len(), 13);

        let module = parse(((Kernel::Patch, DType::I32), Variant::Plain));
        let (fields, size) = wgsl_layout(&module, "PatchParams");
        assert_eq!(fields, rust_layout(PatchParams::LAYOUT));
        assert_eq!(size, std::mem::size_of::<PatchParams>());
        assert_eq!(fields.len(), 4);
    }

    #[test]
    fn shared_constants_reach_the_shaders() {
        let fused = Variant::Fused {
            ops: EP_BIAS,
            act: 1,
        };
        let module = parse(((Kernel::MatVec, DType::Q8_0), fused));
        for (name, value) in CONSTANTS {
            let (_, c) = module
                .constants
                .iter()
                .find(|(_, c)| c.name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("no constant {name}"));
            match module.global_expressions[c.init] {
                naga::Expression::Literal(naga::Literal::U32(v)) => assert_eq!(v, value, "{name}"),
                ref e => panic!("{name} = {e:?}"),
            }
        }
        let wg = module.entry_points[0].workgroup_size;
        assert_eq!(wg, [WG as u32, 1, 1]);
    }
}
