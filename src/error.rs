//! The crate's one error type, grouped by kind, and its `Result` alias.
//!
//! Every variant's message is written for people: it reaches JS as an `Error`'s message.
//! Errors are built with `Err(Error::...)` / `ok_or_else`; there is no `bail!`-style macro.
//!
//! The bottom layer: it imports nothing of the crate, so every layer can use it. Graph
//! values in errors (ops, dtypes) are held by name, as their messages print them.

use std::fmt;

/// Everything that can go wrong in webtensor, as a value: no path a user can reach panics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Operand shapes do not fit the operation.
    #[error("shape mismatch in {op}: {msg}")]
    Shape { op: &'static str, msg: String },
    /// An operand has a dtype the operation does not take.
    #[error("{op}: dtype {dtype} not accepted ({msg})")]
    DType {
        op: &'static str,
        /// The dtype refused, as its `Debug` form spells it (`F32`, `Q8_0`).
        dtype: String,
        msg: String,
    },
    /// A view, read or write reaches outside the memory it addresses.
    #[error("out of bounds: {0}")]
    OutOfBounds(String),
    /// A device (or every device, `device` then says "any device") cannot run an op.
    #[error("{op} ({dtype}) is not supported on {device}: {reason}")]
    Unsupported {
        /// The op refused, by name (`matmul`: `Op::name`).
        op: String,
        /// The dtype the refusal is about: the refused operand's when one is, else the node's;
        /// by name (`i32`: `DType::name`).
        dtype: &'static str,
        /// The device's name.
        device: String,
        /// Why, naming the node where that helps.
        reason: String,
    },
    /// A tensor's memory is in a buffer the device cannot address (another device's, or
    /// another kind of buffer).
    #[error("{device} cannot access tensor {tensor}: it is in a {buffer} buffer")]
    ForeignBuffer {
        /// The tensor's name.
        tensor: String,
        /// The device that was to read or write it.
        device: String,
        /// The buffer's kind (its buffer type's name), or whose buffer it is.
        buffer: String,
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
    /// A model file (GGUF file, BERT model, vocabulary) is malformed, truncated, inconsistent
    /// or of a kind webtensor does not support.
    #[error("{file}{}: {what}", at.as_ref().map(|a| format!(", {a}")).unwrap_or_default())]
    Model {
        /// Which file, or which loader's view of it.
        file: ModelFile,
        /// What is wrong.
        what: String,
        /// Where in the file, when one place is to blame.
        at: Option<At>,
    },
    /// Bad caller input that fits no other kind.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// The file an [`Error::Model`] is about, as the loader that found the fault sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFile {
    /// The GGUF container (header, metadata, tensor infos, data section).
    Gguf,
    /// A BERT model in a GGUF file (its `bert.*` keys and tensors).
    Bert,
    /// A WordPiece vocabulary.
    Vocabulary,
    /// A decoder language model in a GGUF file (its `{arch}.*` keys and tensors).
    Decoder,
}

impl fmt::Display for ModelFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Gguf => "GGUF file",
            Self::Bert => "BERT model",
            Self::Vocabulary => "vocabulary",
            Self::Decoder => "decoder model",
        })
    }
}

/// Where in a model file an [`Error::Model`] lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// A byte offset from the start of the file.
    Offset(usize),
    /// A metadata key.
    Key(String),
    /// A tensor, by name.
    Tensor(String),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Offset(o) => write!(f, "at byte {o}"),
            Self::Key(k) => write!(f, "key {k:?}"),
            Self::Tensor(t) => write!(f, "tensor {t:?}"),
        }
    }
}

impl Error {
    /// An [`Error::Model`] about `file` with no single place to blame.
    pub fn model(file: ModelFile, what: impl Into<String>) -> Self {
        Self::Model {
            file,
            what: what.into(),
            at: None,
        }
    }

    /// An [`Error::Model`] about `file` at `at`.
    pub fn model_at(file: ModelFile, at: At, what: impl Into<String>) -> Self {
        Self::Model {
            file,
            what: what.into(),
            at: Some(at),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_and_where() {
        let e = Error::model_at(
            ModelFile::Gguf,
            At::Tensor("blk.0.w".into()),
            "GGML type 15 is not supported",
        );
        assert_eq!(
            e.to_string(),
            "GGUF file, tensor \"blk.0.w\": GGML type 15 is not supported"
        );
        let e = Error::model(ModelFile::Vocabulary, "the special token [CLS] is missing");
        assert_eq!(
            e.to_string(),
            "vocabulary: the special token [CLS] is missing"
        );
        let e = Error::Unsupported {
            op: "matmul".into(),
            dtype: "i32",
            device: "WebGPU".into(),
            reason: "matmul of i32 weights".into(),
        };
        assert_eq!(
            e.to_string(),
            "matmul (i32) is not supported on WebGPU: matmul of i32 weights"
        );
    }
}
