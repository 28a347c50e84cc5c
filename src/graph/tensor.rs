//! Tensor metadata: shape, byte strides, dtype, and where its memory comes from.

use super::{DType, Op};
use crate::error::{Error, Result};

/// Maximum number of dimensions.
pub const MAX_DIMS: usize = 4;

/// Index of a tensor in its [`super::Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub usize);

/// Where a tensor's data comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Provided by the caller on each run.
    Input,
    /// Provided once (model parameters); lives in a weights buffer.
    Weight,
    /// Computed by the graph.
    Compute,
    /// Kept on one device across runs (a decoder's KV cache, a running sum): bound to a
    /// runtime's state memory, read by any op and written in place by `set_rows` on it
    /// ([`super::Graph::state`]).
    State,
}

/// One tensor of a graph: metadata only, no data.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Name for messages and `explain()`.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Elements per dimension, innermost first (ggml's `ne`).
    pub ne: [usize; MAX_DIMS],
    /// Bytes between consecutive indices per dimension (ggml's `nb`; `nb[0]` is the block size).
    pub nb: [usize; MAX_DIMS],
    /// The computation that produces it.
    pub op: Op,
    /// Operands.
    pub src: Vec<super::TensorId>,
    /// For views: the tensor that owns the memory (never itself a view).
    pub view_of: Option<TensorId>,
    /// For views: byte offset into the owner's memory.
    pub view_offset: usize,
    /// Where the data comes from.
    pub role: Role,
    /// Whether the caller reads it after a run (its memory is never reused).
    pub is_output: bool,
}

/// Contiguous strides for `ne` of `dtype`.
pub fn contiguous_strides(dtype: DType, ne: [usize; MAX_DIMS]) -> Result<[usize; MAX_DIMS]> {
    let row = dtype.row_bytes(ne[0])?;
    let overflow = || Error::InvalidArgument(format!("tensor {ne:?} of {dtype:?} is too large"));
    // The element count too (a quantized tensor has more elements than bytes).
    ne.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(overflow)?;
    let nb2 = row.checked_mul(ne[1]).ok_or_else(overflow)?;
    let nb3 = nb2.checked_mul(ne[2]).ok_or_else(overflow)?;
    nb3.checked_mul(ne[3]).ok_or_else(overflow)?;
    Ok([dtype.block_bytes(), row, nb2, nb3])
}

impl Tensor {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.ne.iter().product()
    }

    /// Number of rows (all dims but the first).
    pub fn nrows(&self) -> usize {
        self.ne[1] * self.ne[2] * self.ne[3]
    }

    /// Bytes spanned from the first to one past the last element (ggml's `nbytes`).
    pub fn nbytes(&self) -> usize {
        if self.ne.contains(&0) {
            return 0;
        }
        let bs = self.dtype.block_size();
        let first = if bs == 1 {
            self.dtype.block_bytes()
        } else {
            self.ne[0] / bs * self.nb[0]
        };
        // Saturating: a view's strides come from the caller, and a span past usize::MAX is
        // simply too large for any memory (the view builder checks it against its owner).
        (if bs == 1 { 0 } else { 1 }..MAX_DIMS)
            .map(|i| (self.ne[i] - 1).saturating_mul(self.nb[i]))
            .fold(first, usize::saturating_add)
    }

    /// Whether elements are packed in order with no gaps (dims of size 1 are ignored).
    pub fn is_contiguous(&self) -> bool {
        match contiguous_strides(self.dtype, self.ne) {
            Ok(nb) => (0..MAX_DIMS).all(|i| self.ne[i] == 1 || self.nb[i] == nb[i]),
            Err(_) => false,
        }
    }

    /// Whether each row is packed (`nb[0]` is one element/block), rows may have gaps.
    pub fn rows_contiguous(&self) -> bool {
        self.nb[0] == self.dtype.block_bytes()
    }

    /// Whether this tensor shares another's memory.
    pub fn is_view(&self) -> bool {
        self.view_of.is_some()
    }

    /// `[a, b, c, d]` shape trimmed of trailing 1s, for messages.
    pub fn shape_str(&self) -> String {
        let n = (1..MAX_DIMS)
            .rev()
            .find(|&i| self.ne[i] != 1)
            .map_or(1, |i| i + 1);
        format!("{:?}", &self.ne[..n])
    }
}
