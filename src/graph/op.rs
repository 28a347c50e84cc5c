//! The operations a graph node can hold, with their parameters, described in one place.
//!
//! The element-wise functions are declared once each, in [`unary_op_table!`] and
//! [`binary_op_table!`]: a row names the variant, its builder method, its JS name and its
//! WGSL expression. From those rows come [`UnaryOp`] / [`BinaryOp`], their [`OpKind`]s, the
//! graph builder methods, the JS bindings (`src/wasm/runtime.rs`), the WebGPU op codes and the
//! WGSL functions computing them (`backends/webgpu/shader.rs`), and the op suite's cases
//! (`testing/cases.rs`). The scalar reference of each ([`UnaryOp::apply`],
//! [`BinaryOp::apply`]) and each device's fast kernel match every variant exhaustively, so a
//! row added here is a compile error until every device computes it.

/// The element-wise functions of one operand, one row each:
/// `Variant: builder_method / jsName, test domain lo..hi, "WGSL expression of x"`.
/// Calls `$m!` with the rows; see the module doc for what is generated from them.
#[macro_export]
macro_rules! unary_op_table {
    ($m:ident $(, $($pre:tt)*)?) => {
        $m! {
            $($($pre)*)?
            /// GELU, tanh approximation (ggml's `gelu`).
            Gelu: gelu / gelu, -6.0..6.0, "gelu_tanh(x)";
            /// GELU, exact erf form (BERT's and ggml's `gelu_erf`).
            GeluErf: gelu_erf / geluErf, -6.0..6.0, "gelu_erf(x)";
            /// x * sigmoid(x).
            Silu: silu / silu, -6.0..6.0, "x / (1.0 + exp(-x))";
            /// max(x, 0).
            Relu: relu / relu, -6.0..6.0, "max(x, 0.0)";
            /// tanh(x).
            Tanh: tanh / tanh, -6.0..6.0, "tanh_safe(x)";
            /// 1 / (1 + e^-x).
            Sigmoid: sigmoid / sigmoid, -6.0..6.0, "1.0 / (1.0 + exp(-x))";
            /// e^x.
            Exp: exp / exp, -6.0..6.0, "exp(x)";
            /// -x.
            Neg: neg / neg, -6.0..6.0, "-x";
            /// x².
            Sqr: sqr / sqr, -6.0..6.0, "x * x";
            /// √x (NaN below 0).
            Sqrt: sqrt / sqrt, 0.0..6.0, "sqrt(x)";
        }
    };
}

/// The element-wise functions of two operands (the second broadcast onto the first), one row
/// each: `Variant: builder_method / jsName, "WGSL expression of x and y"`. Calls `$m!` with
/// the rows, like [`unary_op_table!`].
#[macro_export]
macro_rules! binary_op_table {
    ($m:ident $(, $($pre:tt)*)?) => {
        $m! {
            $($($pre)*)?
            /// a + b
            Add: add / add, "x + y";
            /// a - b
            Sub: sub / sub, "x - y";
            /// a * b
            Mul: mul / mul, "x * y";
            /// a / b
            Div: div / div, "x / y";
        }
    };
}

/// What both tables generate for their enum: the enum, `ALL`, `kind`, `method`, `wgsl` and
/// `code` (the table position plus `$first_code`).
macro_rules! op_enum {
    ($(#[$edoc:meta])* $enum:ident, $first_code:literal,
     $($(#[$doc:meta])* $var:ident: $method:ident / $js:ident, $wgsl:literal;)*) => {
        $(#[$edoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $enum {
            $($(#[$doc])* $var,)*
        }

        impl $enum {
            /// Every op of the table, in table order.
            pub const ALL: &'static [$enum] = &[$($enum::$var,)*];

            /// Its kind.
            pub fn kind(self) -> OpKind {
                match self {
                    $($enum::$var => OpKind::$var,)*
                }
            }

            /// The graph builder method's name (`gelu_erf`).
            pub fn method(self) -> &'static str {
                match self {
                    $($enum::$var => stringify!($method),)*
                }
            }

            /// Its WGSL expression (of `x`, and `y` for a binary op; f32).
            pub fn wgsl(self) -> &'static str {
                match self {
                    $($enum::$var => $wgsl,)*
                }
            }

            /// Its op code on devices that take one (WebGPU): its table position plus
            #[doc = concat!(stringify!($first_code), ".")]
            pub fn code(self) -> u32 {
                self as u32 + $first_code
            }
        }
    };
}

macro_rules! define_unary_op {
    ($($(#[$doc:meta])* $var:ident: $method:ident / $js:ident, $lo:literal..$hi:literal, $wgsl:literal;)*) => {
        op_enum! {
            /// Element-wise functions of one operand ([`unary_op_table!`]). Code 0 is no
            /// function ([`ACT_NONE`]).
            UnaryOp, 1,
            $($(#[$doc])* $var: $method / $js, $wgsl;)*
        }

        impl UnaryOp {
            /// Where the op suite draws its inputs from (`[lo, hi)`).
            pub fn test_domain(self) -> (f32, f32) {
                match self {
                    $(UnaryOp::$var => ($lo, $hi),)*
                }
            }
        }

        impl super::Graph {
            $(
                $(#[$doc])*
                pub fn $method(&mut self, a: super::TensorId) -> crate::error::Result<super::TensorId> {
                    self.unary(UnaryOp::$var, a)
                }
            )*
        }
    };
}

macro_rules! define_binary_op {
    ($($(#[$doc:meta])* $var:ident: $method:ident / $js:ident, $wgsl:literal;)*) => {
        op_enum! {
            /// Element-wise functions of two operands; the second broadcasts onto the first
            /// ([`binary_op_table!`]).
            BinaryOp, 0,
            $($(#[$doc])* $var: $method / $js, $wgsl;)*
        }

        impl super::Graph {
            $(
                #[doc = concat!("`", stringify!($method), "` of `a` and `b` (broadcasting `b`).")]
                pub fn $method(&mut self, a: super::TensorId, b: super::TensorId) -> crate::error::Result<super::TensorId> {
                    self.binary(BinaryOp::$var, a, b)
                }
            )*
        }
    };
}

unary_op_table!(define_unary_op);
binary_op_table!(define_binary_op);

/// The code of "no function" among [`UnaryOp::code`]s (a plain store in a fused epilogue).
pub const ACT_NONE: u32 = 0;

impl UnaryOp {
    /// The scalar reference: what every device's kernel is checked against.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            UnaryOp::Gelu => gelu_tanh(x),
            UnaryOp::GeluErf => gelu_erf(x),
            UnaryOp::Silu => x / (1.0 + (-x).exp()),
            UnaryOp::Relu => x.max(0.0),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Neg => -x,
            UnaryOp::Sqr => x * x,
            UnaryOp::Sqrt => x.sqrt(),
        }
    }
}

impl BinaryOp {
    /// The scalar reference: what every device's kernel is checked against.
    pub fn apply(self, x: f32, y: f32) -> f32 {
        match self {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
        }
    }
}

fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + 0.044715 * x * x)).tanh())
}

fn gelu_erf(x: f32) -> f32 {
    (0.5 * x as f64 * (1.0 + erf(x as f64 / std::f64::consts::SQRT_2))) as f32
}

/// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit), in f64.
pub fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - r
    } else {
        r - 1.0
    }
}

/// Which element pairs RoPE rotates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RopeMode {
    /// Adjacent pairs (x[2i], x[2i+1]) (LLaMA in GGUF layout).
    Normal,
    /// Split halves (x[i], x[i + n_dims/2]) (GPT-NeoX, most HF checkpoints).
    NeoX,
}

/// Rotary position embedding parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeParams {
    /// Leading elements of each row that are rotated (even, at most ne0); the rest pass through.
    pub n_dims: usize,
    /// Pair layout.
    pub mode: RopeMode,
    /// Base of the frequencies (10000 in most models).
    pub freq_base: f32,
    /// Position scale (linear RoPE scaling; 1.0 for none).
    pub freq_scale: f32,
}

/// What a node computes. `src` order is documented per variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// No computation: an input or a weight whose data comes from outside.
    Leaf,
    /// No computation: a reshape/view/permute/transpose sharing its source's memory.
    View,
    /// `src[0]` rows picked by the I32 indices `src[1]` (embedding lookup); result f32.
    GetRows,
    /// `src[0]` (f32 or f16) with rows replaced: row `j` of `src[1]` (f32) is written at row
    /// `src[2][j]` (I32 indices), per batch (ggml's `set_rows`, the KV-cache write); the
    /// last `j` naming a row wins.
    SetRows,
    /// `src[0] op src[1]`, `src[1]` broadcast (repeated) to `src[0]`'s shape.
    Binary(BinaryOp),
    /// `src[0] * s`.
    Scale(f32),
    /// `src[0]` limited to `[min, max]`.
    Clamp {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// `src[0]` (weights, `[k, m]`) times `src[1]` (activations, `[k, n]`) → `[m, n]`, batched
    /// over dims 2 and 3 with `src[0]` broadcast (ggml's `mul_mat`).
    MatMul,
    /// Row softmax of `src[0] * scale + mask`, mask `src[1]` optional.
    SoftMax {
        /// Factor applied before the mask.
        scale: f32,
    },
    /// Scaled dot-product attention (ggml's `flash_attn_ext`): queries `src[0]` f32 `[d,
    /// n_q, heads, batch]`, keys `src[1]` and values `src[2]` (f32 or f16, the same dtype)
    /// `[d, n_kv, kv_heads, batch]` and `[d_v, n_kv, kv_heads, batch]`, head `h` reading KV
    /// head `h / (heads / kv_heads)` (grouped-query attention); `src[3]`, optional, an f32
    /// additive mask `[n_kv, n_q, ..]` repeated over heads and batch as [`Op::SoftMax`]'s.
    /// Result f32 `[d_v, heads, n_q, batch]`: each query's heads side by side, so a reshape
    /// to `[d_v * heads, n_q, batch]` feeds the output projection with no copy. A row whose
    /// every key is masked with -inf is zero.
    Attention {
        /// Factor applied to `q·k` before the mask (usually `1 / sqrt(d)`).
        scale: f32,
    },
    /// Layer norm over rows, without affine (ggml's `norm`).
    Norm {
        /// Added to the variance.
        eps: f32,
    },
    /// RMS norm over rows, without affine.
    RmsNorm {
        /// Added to the mean square.
        eps: f32,
    },
    /// Element-wise function.
    Unary(UnaryOp),
    /// RoPE of `src[0]` (`[head_dim, heads, tokens, batch]`) at I32 positions `src[1]`
    /// (`[tokens]`), with each pair's frequency divided by f32 `src[2][i]` (`[n_dims / 2]`)
    /// where a third operand is given (llama.cpp's `rope_ext` freq_factors: Llama 3's
    /// `rope_freqs.weight`).
    Rope(RopeParams),
    /// Copy `src[0]` into this node's dtype and contiguous layout (convert, quantize, `cont`).
    Cpy,
    /// `src[0]` and `src[1]` joined along `dim`.
    Concat {
        /// The dimension joined along.
        dim: usize,
    },
    /// Sum of each row → `[1, ne1, ne2, ne3]`.
    SumRows,
    /// Mean of each row → `[1, ne1, ne2, ne3]`.
    Mean,
    /// Index of each row's maximum (first on ties) → I32 `[1, ne1, ne2, ne3]`.
    Argmax,
}

impl Op {
    /// Feeds the op and its parameters (f32s by their bits) into `h`.
    pub fn hash_into(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        self.kind().hash(h);
        let (a, b, n): (f32, f32, usize) = match *self {
            Op::Scale(s) => (s, 0.0, 0),
            Op::Clamp { min, max } => (min, max, 0),
            Op::SoftMax { scale } | Op::Attention { scale } => (scale, 0.0, 0),
            Op::Norm { eps } | Op::RmsNorm { eps } => (eps, 0.0, 0),
            Op::Rope(p) => (p.freq_base, p.freq_scale, p.n_dims * 2 + p.mode as usize),
            Op::Concat { dim } => (0.0, 0.0, dim),
            // The kind says which function.
            Op::Unary(_) | Op::Binary(_) => (0.0, 0.0, 0),
            Op::Leaf
            | Op::View
            | Op::GetRows
            | Op::SetRows
            | Op::MatMul
            | Op::Cpy
            | Op::SumRows
            | Op::Mean
            | Op::Argmax => (0.0, 0.0, 0),
        };
        a.to_bits().hash(h);
        b.to_bits().hash(h);
        n.hash(h);
    }
}

/// Defines [`OpKind`] and [`OpKind::ALL`] from one list, so a kind added to the enum is in
/// `ALL` (and so in the op suite's coverage check) by construction. The unary and binary
/// kinds come from their tables (`kinds_of_tables`).
macro_rules! op_kinds {
    ($($(#[$doc:meta])* $kind:ident,)*) => {
        /// Fieldless twin of [`Op`]: for tables, coverage checks and pipeline keys.
        /// [`Op::kind`] matches every `Op` exhaustively, so a new op needs a kind here.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum OpKind {
            $($(#[$doc])* $kind,)*
        }

        impl OpKind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [OpKind] = &[$(OpKind::$kind,)*];
        }
    };
}

/// Step 1 of [`OpKind`]: the unary table's variants, then the binary table's.
macro_rules! kinds_of_tables {
    ($($(#[$doc:meta])* $var:ident: $method:ident / $js:ident, $lo:literal..$hi:literal, $wgsl:literal;)*) => {
        binary_op_table!(kinds_of_tables_2, [$($var)*]);
    };
}

/// Step 2 of [`OpKind`]: the fixed kinds and both tables' variants.
macro_rules! kinds_of_tables_2 {
    ([$($u:ident)*] $($(#[$doc:meta])* $var:ident: $method:ident / $js:ident, $wgsl:literal;)*) => {
        op_kinds! {
            /// [`Op::Leaf`].
            Leaf,
            /// [`Op::View`].
            View,
            /// [`Op::GetRows`].
            GetRows,
            /// [`Op::SetRows`].
            SetRows,
            $(
                #[doc = concat!("[`Op::Binary`] with [`BinaryOp::", stringify!($var), "`].")]
                $var,
            )*
            /// [`Op::Scale`].
            Scale,
            /// [`Op::Clamp`].
            Clamp,
            /// [`Op::MatMul`].
            MatMul,
            /// [`Op::SoftMax`].
            SoftMax,
            /// [`Op::Attention`].
            Attention,
            /// [`Op::Norm`].
            Norm,
            /// [`Op::RmsNorm`].
            RmsNorm,
            $(
                #[doc = concat!("[`Op::Unary`] with [`UnaryOp::", stringify!($u), "`].")]
                $u,
            )*
            /// [`Op::Rope`].
            Rope,
            /// [`Op::Cpy`].
            Cpy,
            /// [`Op::Concat`].
            Concat,
            /// [`Op::SumRows`].
            SumRows,
            /// [`Op::Mean`].
            Mean,
            /// [`Op::Argmax`].
            Argmax,
        }
    };
}

unary_op_table!(kinds_of_tables);

impl OpKind {
    /// Whether nodes of this kind compute something (all but `Leaf` and `View`): the kinds
    /// the op suite must cover.
    pub fn is_compute(self) -> bool {
        !matches!(self, OpKind::Leaf | OpKind::View)
    }

    /// Every kind that computes something, in declaration order.
    pub fn compute() -> impl Iterator<Item = OpKind> {
        OpKind::ALL.iter().copied().filter(|k| k.is_compute())
    }
}

impl std::fmt::Display for OpKind {
    /// Lower-case name (`matmul`, `rmsnorm`), as in messages and `explain()`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format!("{self:?}").to_lowercase())
    }
}

impl Op {
    /// The op's kind.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Leaf => OpKind::Leaf,
            Op::View => OpKind::View,
            Op::GetRows => OpKind::GetRows,
            Op::SetRows => OpKind::SetRows,
            Op::Binary(b) => b.kind(),
            Op::Scale(_) => OpKind::Scale,
            Op::Clamp { .. } => OpKind::Clamp,
            Op::MatMul => OpKind::MatMul,
            Op::SoftMax { .. } => OpKind::SoftMax,
            Op::Attention { .. } => OpKind::Attention,
            Op::Norm { .. } => OpKind::Norm,
            Op::RmsNorm { .. } => OpKind::RmsNorm,
            Op::Unary(u) => u.kind(),
            Op::Rope(_) => OpKind::Rope,
            Op::Cpy => OpKind::Cpy,
            Op::Concat { .. } => OpKind::Concat,
            Op::SumRows => OpKind::SumRows,
            Op::Mean => OpKind::Mean,
            Op::Argmax => OpKind::Argmax,
        }
    }

    /// Whether the node computes nothing (its memory is provided or shared).
    pub fn is_noop(&self) -> bool {
        matches!(self, Op::Leaf | Op::View)
    }

    /// Lower-case name for messages and `explain()`.
    pub fn name(&self) -> String {
        self.kind().to_string()
    }
}
