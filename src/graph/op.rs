//! The operations a graph node can hold, with their parameters, described in one place.

/// Element-wise functions of one operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// GELU, tanh approximation (ggml's `gelu`).
    Gelu,
    /// GELU, exact erf form (BERT's and ggml's `gelu_erf`).
    GeluErf,
    /// x * sigmoid(x).
    Silu,
    /// max(x, 0).
    Relu,
}

/// Element-wise functions of two operands; the second broadcasts onto the first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
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
    /// `src[0] op src[1]`, `src[1]` broadcast (repeated) to `src[0]`'s shape.
    Binary(BinaryOp),
    /// `src[0] * s`.
    Scale(f32),
    /// `src[0]` (weights, `[k, m]`) times `src[1]` (activations, `[k, n]`) → `[m, n]`, batched
    /// over dims 2 and 3 with `src[0]` broadcast (ggml's `mul_mat`).
    MatMul,
    /// Row softmax of `src[0] * scale + mask`, mask `src[1]` optional.
    SoftMax {
        /// Factor applied before the mask.
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
    /// RoPE of `src[0]` (`[head_dim, heads, tokens, batch]`) at I32 positions `src[1]` (`[tokens]`).
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
            Op::SoftMax { scale } => (scale, 0.0, 0),
            Op::Norm { eps } | Op::RmsNorm { eps } => (eps, 0.0, 0),
            Op::Unary(u) => (0.0, 0.0, u as usize),
            Op::Rope(p) => (p.freq_base, p.freq_scale, p.n_dims * 2 + p.mode as usize),
            Op::Concat { dim } => (0.0, 0.0, dim),
            Op::Leaf
            | Op::View
            | Op::GetRows
            | Op::Binary(_)
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
/// `ALL` (and so in the op suite's coverage check) by construction.
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

op_kinds! {
    /// [`Op::Leaf`].
    Leaf,
    /// [`Op::View`].
    View,
    /// [`Op::GetRows`].
    GetRows,
    /// [`Op::Binary`] with [`BinaryOp::Add`].
    Add,
    /// [`Op::Binary`] with [`BinaryOp::Sub`].
    Sub,
    /// [`Op::Binary`] with [`BinaryOp::Mul`].
    Mul,
    /// [`Op::Binary`] with [`BinaryOp::Div`].
    Div,
    /// [`Op::Scale`].
    Scale,
    /// [`Op::MatMul`].
    MatMul,
    /// [`Op::SoftMax`].
    SoftMax,
    /// [`Op::Norm`].
    Norm,
    /// [`Op::RmsNorm`].
    RmsNorm,
    /// [`Op::Unary`] with [`UnaryOp::Gelu`].
    Gelu,
    /// [`Op::Unary`] with [`UnaryOp::GeluErf`].
    GeluErf,
    /// [`Op::Unary`] with [`UnaryOp::Silu`].
    Silu,
    /// [`Op::Unary`] with [`UnaryOp::Relu`].
    Relu,
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
            Op::Binary(BinaryOp::Add) => OpKind::Add,
            Op::Binary(BinaryOp::Sub) => OpKind::Sub,
            Op::Binary(BinaryOp::Mul) => OpKind::Mul,
            Op::Binary(BinaryOp::Div) => OpKind::Div,
            Op::Scale(_) => OpKind::Scale,
            Op::MatMul => OpKind::MatMul,
            Op::SoftMax { .. } => OpKind::SoftMax,
            Op::Norm { .. } => OpKind::Norm,
            Op::RmsNorm { .. } => OpKind::RmsNorm,
            Op::Unary(UnaryOp::Gelu) => OpKind::Gelu,
            Op::Unary(UnaryOp::GeluErf) => OpKind::GeluErf,
            Op::Unary(UnaryOp::Silu) => OpKind::Silu,
            Op::Unary(UnaryOp::Relu) => OpKind::Relu,
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
