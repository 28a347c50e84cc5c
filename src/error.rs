//! The crate's one error type, grouped by kind, and its `Result` alias.

use crate::graph::DType;

/// Everything that can go wrong in webtensor, as a value: no path a user can reach panics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Operand shapes do not fit the operation.
    #[error("shape mismatch in {op}: {msg}")]
    Shape { op: &'static str, msg: String },
    /// An operand has a dtype the operation does not take.
    #[error("{op}: dtype {dtype:?} not accepted ({msg})")]
    DType {
        op: &'static str,
        dtype: DType,
        msg: String,
    },
    /// A view, read or write reaches outside the memory it addresses.
    #[error("out of bounds: {0}")]
    OutOfBounds(String),
    /// A device cannot run this op/dtype combination.
    #[error("unsupported on {device}: {op} ({reason})")]
    Unsupported {
        device: String,
        op: String,
        reason: String,
    },
    /// An allocation larger than the buffer type (or the device) allows.
    #[error("allocation of {size} bytes exceeds the limit of {max} bytes on {buffer_type}")]
    AllocTooLarge {
        size: usize,
        max: usize,
        buffer_type: String,
    },
    /// A graph is malformed (unknown tensor id, cycle, missing input value, ...).
    #[error("invalid graph: {0}")]
    Graph(String),
    /// A device failed or was lost; later calls on it fail with this too.
    #[error("device error on {device}: {msg}")]
    Device { device: String, msg: String },
    /// No device of the requested kind or name exists.
    #[error("no such device: {0}")]
    NoDevice(String),
    /// A file (GGUF model, vocabulary, ...) is malformed: truncated, inconsistent or unsupported.
    #[error("invalid {format} file: {msg}")]
    Format { format: &'static str, msg: String },
    /// Bad caller input that fits no other kind.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Returns early with an error: `bail!(Error::Graph(format!(...)))`.
#[macro_export]
macro_rules! bail {
    ($e:expr) => {
        return Err($e)
    };
}
