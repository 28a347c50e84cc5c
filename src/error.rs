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
    /// A device failed, was lost or ran out of memory; after a loss or a failure later calls
    /// on it fail with this too (out of memory leaves it usable).
    #[error("device error on {device}: {msg}")]
    Device {
        device: String,
        msg: String,
        /// What kind of failure.
        fault: DeviceFault,
    },
    /// No device of the requested kind or name exists.
    #[error("no such device: {0}")]
    NoDevice(String),
    /// A model file (GGUF file, BERT model, vocabulary) is malformed, truncated, inconsistent
    /// or of a kind webtensor does not support.
    #[error("{file}{}: {what}", at.as_ref().map(|a| format!(", {a}")).unwrap_or_default())]
    Model {
        /// Which file, or which loader's view of it.
        file: ModelFile,
        /// Whether the file is malformed, or well-formed but asks for what webtensor lacks.
        fault: ModelFault,
        /// What is wrong.
        what: String,
        /// Where in the file, when one place is to blame.
        at: Option<At>,
    },
    /// Bad caller input that fits no other kind.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// What went wrong on a device ([`Error::Device`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceFault {
    /// The device was lost or destroyed (a GPU reset, the tab in the background, `destroy()`).
    Lost,
    /// Not enough memory on the device (it stays usable: a smaller request may succeed).
    OutOfMemory,
    /// Any other failure (an internal error of the device or its thread pool).
    Failed,
}

/// Why a model file is refused ([`Error::Model`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFault {
    /// Malformed, truncated or inconsistent.
    Malformed,
    /// Well-formed, but of a kind webtensor does not run (an architecture, tokenizer, RoPE
    /// scaling, tensor type or format version).
    Unsupported,
}

/// A stable, machine-readable name for an [`Error`]'s kind: what an app branches on (JS
/// errors carry it as `code`). The strings never change once released; new kinds get new
/// codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Bad caller input: shapes, dtypes, a malformed graph, an out-of-range read or write, a
    /// tensor of another runtime, an unknown option.
    InvalidArgument,
    /// An op (with these dtypes) that a device, or every device, cannot run.
    UnsupportedOp,
    /// A well-formed model file webtensor does not run (see [`ModelFault::Unsupported`]).
    UnsupportedModel,
    /// A malformed, truncated or inconsistent model file.
    BadModelFile,
    /// An allocation larger than a device or buffer type allows, or a device out of memory.
    OutOfMemory,
    /// The device was lost; make a new runtime (or use another device).
    DeviceLost,
    /// Any other device failure.
    DeviceError,
    /// No device of the requested kind or name.
    NoDevice,
    /// (Bindings only: no [`Error`] has it.) The object was disposed.
    Disposed,
    /// (Bindings only: no [`Error`] has it.) The object is running another call.
    Busy,
}

impl ErrorCode {
    /// Every code, for tables and tests.
    pub const ALL: [ErrorCode; 10] = [
        Self::InvalidArgument,
        Self::UnsupportedOp,
        Self::UnsupportedModel,
        Self::BadModelFile,
        Self::OutOfMemory,
        Self::DeviceLost,
        Self::DeviceError,
        Self::NoDevice,
        Self::Disposed,
        Self::Busy,
    ];

    /// The code as JS sees it (`INVALID_ARGUMENT`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::UnsupportedOp => "UNSUPPORTED_OP",
            Self::UnsupportedModel => "UNSUPPORTED_MODEL",
            Self::BadModelFile => "BAD_MODEL_FILE",
            Self::OutOfMemory => "OUT_OF_MEMORY",
            Self::DeviceLost => "DEVICE_LOST",
            Self::DeviceError => "DEVICE_ERROR",
            Self::NoDevice => "NO_DEVICE",
            Self::Disposed => "DISPOSED",
            Self::Busy => "BUSY",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// An [`Error::Model`] about a malformed `file` with no single place to blame.
    pub fn model(file: ModelFile, what: impl Into<String>) -> Self {
        Self::Model {
            file,
            fault: ModelFault::Malformed,
            what: what.into(),
            at: None,
        }
    }

    /// An [`Error::Model`] about a malformed `file` at `at`.
    pub fn model_at(file: ModelFile, at: At, what: impl Into<String>) -> Self {
        Self::Model {
            file,
            fault: ModelFault::Malformed,
            what: what.into(),
            at: Some(at),
        }
    }

    /// An [`Error::Model`] about a well-formed `file` that asks, at `at`, for what webtensor
    /// does not run.
    pub fn unsupported_model(file: ModelFile, at: Option<At>, what: impl Into<String>) -> Self {
        Self::Model {
            file,
            fault: ModelFault::Unsupported,
            what: what.into(),
            at,
        }
    }

    /// An [`Error::Device`] on `device` of kind `fault`.
    pub fn device(device: impl Into<String>, fault: DeviceFault, msg: impl Into<String>) -> Self {
        Self::Device {
            device: device.into(),
            msg: msg.into(),
            fault,
        }
    }

    /// This error's stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Shape { .. }
            | Self::DType { .. }
            | Self::OutOfBounds(_)
            | Self::ForeignBuffer { .. }
            | Self::Graph(_)
            | Self::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Self::Unsupported { .. } => ErrorCode::UnsupportedOp,
            Self::AllocTooLarge { .. } => ErrorCode::OutOfMemory,
            Self::Device { fault, .. } => match fault {
                DeviceFault::Lost => ErrorCode::DeviceLost,
                DeviceFault::OutOfMemory => ErrorCode::OutOfMemory,
                DeviceFault::Failed => ErrorCode::DeviceError,
            },
            Self::NoDevice(_) => ErrorCode::NoDevice,
            Self::Model { fault, .. } => match fault {
                ModelFault::Malformed => ErrorCode::BadModelFile,
                ModelFault::Unsupported => ErrorCode::UnsupportedModel,
            },
        }
    }

    /// The structured fields an app can act on, by name (`op`, `dtype`, `device`, `tensor`,
    /// `key`, `offset`, `file`, `size`, `max`): what JS errors carry beside `code`.
    pub fn fields(&self) -> Vec<(&'static str, Field)> {
        let s = |v: &str| Field::Str(v.to_string());
        match self {
            Self::Shape { op, .. } => vec![("op", s(op))],
            Self::DType { op, dtype, .. } => vec![("op", s(op)), ("dtype", s(dtype))],
            Self::Unsupported {
                op, dtype, device, ..
            } => vec![("op", s(op)), ("dtype", s(dtype)), ("device", s(device))],
            Self::ForeignBuffer { tensor, device, .. } => {
                vec![("tensor", s(tensor)), ("device", s(device))]
            }
            Self::AllocTooLarge { size, max, .. } => {
                vec![
                    ("size", Field::Num(*size as f64)),
                    ("max", Field::Num(*max as f64)),
                ]
            }
            Self::Device { device, .. } => vec![("device", s(device))],
            Self::NoDevice(name) => vec![("device", s(name))],
            Self::Model { file, at, .. } => {
                let mut v = vec![("file", s(&file.to_string()))];
                match at {
                    Some(At::Key(k)) => v.push(("key", s(k))),
                    Some(At::Tensor(t)) => v.push(("tensor", s(t))),
                    Some(At::Offset(o)) => v.push(("offset", Field::Num(*o as f64))),
                    None => {}
                }
                v
            }
            Self::OutOfBounds(_) | Self::Graph(_) | Self::InvalidArgument(_) => Vec::new(),
        }
    }
}

/// A value of [`Error::fields`].
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    /// A name (an op's, a dtype's, a device's, a tensor's, a key).
    Str(String),
    /// A number (bytes, an offset).
    Num(f64),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_the_kind() {
        let cases = [
            (Error::Graph("x".into()), "INVALID_ARGUMENT"),
            (
                Error::AllocTooLarge {
                    size: 9,
                    max: 8,
                    buffer_type: "CPU".into(),
                },
                "OUT_OF_MEMORY",
            ),
            (
                Error::device("WebGPU", DeviceFault::Lost, "device lost"),
                "DEVICE_LOST",
            ),
            (
                Error::device("WebGPU", DeviceFault::OutOfMemory, "out of memory"),
                "OUT_OF_MEMORY",
            ),
            (
                Error::device("CPU", DeviceFault::Failed, "x"),
                "DEVICE_ERROR",
            ),
            (Error::model(ModelFile::Gguf, "truncated"), "BAD_MODEL_FILE"),
            (
                Error::unsupported_model(
                    ModelFile::Decoder,
                    Some(At::Key("general.architecture".into())),
                    "architecture \"gemma3\" is not supported",
                ),
                "UNSUPPORTED_MODEL",
            ),
            (Error::NoDevice("tpu".into()), "NO_DEVICE"),
        ];
        for (e, code) in cases {
            assert_eq!(e.code().as_str(), code, "{e}");
        }
        let e = Error::unsupported_model(
            ModelFile::Decoder,
            Some(At::Key("general.architecture".into())),
            "x",
        );
        assert_eq!(
            e.fields(),
            [
                ("file", Field::Str("decoder model".into())),
                ("key", Field::Str("general.architecture".into()))
            ]
        );
        // The message is the malformed kind's: only the code tells them apart.
        assert_eq!(
            e.to_string(),
            "decoder model, key \"general.architecture\": x"
        );
    }

    /// Every code is SCREAMING_SNAKE_CASE, unique, and listed by the package's `ERROR_CODES`
    /// (js/errors.js) and its `ErrorCode` type (js/index.d.ts).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn codes_are_the_package_s() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let js = std::fs::read_to_string(format!("{dir}/js/errors.js")).expect("js/errors.js");
        let dts = std::fs::read_to_string(format!("{dir}/js/index.d.ts")).expect("index.d.ts");
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(
                s.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'),
                "{s}"
            );
            assert!(js.contains(&format!("'{s}'")), "js/errors.js lacks {s}");
            assert!(dts.contains(&format!("| '{s}'")), "js/index.d.ts lacks {s}");
        }
    }

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
