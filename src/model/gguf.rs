//! GGUF (v2/v3) reading and writing: header, metadata of every value type (nested arrays
//! included), tensor infos and the aligned data section.
//!
//! The reader works on a byte slice (on the web a model arrives as bytes) and checks every
//! count, length and offset against the file size before it allocates or slices, so a
//! truncated, oversized or inconsistent file is an [`Error::Model`] naming where (byte offset,
//! key or tensor), never a panic or a huge allocation: every count is checked against the
//! bytes left in the file, and the parsed header (metadata values, keys, tensor infos) is
//! charged against [`MAX_HEADER_MEMORY`] before it is allocated. Tensor data is exposed as
//! slices of the input: ggml's block layouts are ours ([`DType`]), so weights load without
//! conversion. `tests/gguf_malformed.rs` holds the hostile files (llama.cpp's handcrafted
//! cases and more) and `fuzz/` a libFuzzer target.

use std::collections::HashSet;

use crate::error::{At, Error, ModelFile, Result};
use crate::graph::{DType, MAX_DIMS};

/// The four bytes every GGUF file starts with.
pub const MAGIC: &[u8; 4] = b"GGUF";
/// The version the writer produces.
pub const VERSION: u32 = 3;
/// Data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// The metadata key that sets the data alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// Arrays nest at most this deep (a guard against stack exhaustion on hostile files).
const MAX_ARRAY_DEPTH: usize = 8;
/// The most memory a parsed header may take (metadata values counted at their in-memory
/// size, keys, strings, tensor infos): a file's bytes can expand (a `u8` array element is
/// one byte in the file and a whole [`Value`] in memory), so this caps what a hostile file
/// can make the reader allocate. Real headers (vocabularies of a few 100k tokens) take tens
/// of MiB.
pub const MAX_HEADER_MEMORY: usize = 256 << 20;

fn bad(what: impl Into<String>) -> Error {
    Error::model(ModelFile::Gguf, what)
}

fn bad_at(at: At, what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Gguf, at, what)
}

/// The type tag of a metadata value (GGUF's `gguf_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `uint32`
    U32,
    /// `int32`
    I32,
    /// `float32`
    F32,
    /// `bool` (one byte, 0 or 1)
    Bool,
    /// length-prefixed UTF-8 string
    String,
    /// typed, length-prefixed array
    Array,
    /// `uint64`
    U64,
    /// `int64`
    I64,
    /// `float64`
    F64,
}

impl ValueType {
    fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    fn id(self) -> u32 {
        match self {
            Self::U8 => 0,
            Self::I8 => 1,
            Self::U16 => 2,
            Self::I16 => 3,
            Self::U32 => 4,
            Self::I32 => 5,
            Self::F32 => 6,
            Self::Bool => 7,
            Self::String => 8,
            Self::Array => 9,
            Self::U64 => 10,
            Self::I64 => 11,
            Self::F64 => 12,
        }
    }

    /// The fewest bytes one value of this type takes in a file (for count checks).
    fn min_bytes(self) -> usize {
        match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 | Self::String => 8,
            Self::Array => 12,
        }
    }
}

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `uint8`
    U8(u8),
    /// `int8`
    I8(i8),
    /// `uint16`
    U16(u16),
    /// `int16`
    I16(i16),
    /// `uint32`
    U32(u32),
    /// `int32`
    I32(i32),
    /// `float32`
    F32(f32),
    /// `bool`
    Bool(bool),
    /// string
    String(String),
    /// An array: its element type and the elements (all of that type).
    Array(ValueType, Vec<Value>),
    /// `uint64`
    U64(u64),
    /// `int64`
    I64(i64),
    /// `float64`
    F64(f64),
}

impl Value {
    /// This value's type tag.
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(..) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// The value as an integer, whatever its integer type.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::I8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::I16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::U64(v) => i64::try_from(v).ok(),
            Self::I64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a float (floats and integers).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value as a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// A string array's elements (an array of another type gives `None`).
    pub fn as_str_array(&self) -> Option<Vec<&str>> {
        match self {
            Self::Array(ValueType::String, items) => items.iter().map(Value::as_str).collect(),
            _ => None,
        }
    }
}

/// Bytes of a tensor of `dtype` and shape `ne`, overflow-checked; `Err` says what is wrong.
fn tensor_nbytes(dtype: DType, ne: &[usize]) -> std::result::Result<usize, String> {
    let n0 = *ne.first().unwrap_or(&1);
    if !n0.is_multiple_of(dtype.block_size()) {
        return Err(format!(
            "{dtype} rows must be a multiple of {} elements, got {n0}",
            dtype.block_size()
        ));
    }
    (n0 / dtype.block_size())
        .checked_mul(dtype.block_bytes())
        .and_then(|row| {
            ne.iter()
                .skip(1)
                .try_fold(row, |acc, &n| acc.checked_mul(n))
        })
        .ok_or_else(|| format!("shape {ne:?} of {dtype} overflows"))
}

/// One tensor's description: name, dtype, shape (innermost first) and where its data is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its shape, `n_dims` long (1 to 4), innermost first.
    pub ne: Vec<usize>,
    /// Byte offset of its data from the start of the data section.
    pub offset: usize,
    /// Bytes of its data.
    pub nbytes: usize,
}

/// A parsed GGUF file borrowing its bytes (or, from [`Gguf::parse_header`], only its header:
/// tensor infos checked against the file size, the data left where it is and nothing borrowed).
#[derive(Clone, Debug)]
pub struct Gguf<'a> {
    version: u32,
    alignment: usize,
    metadata: Vec<(String, Value)>,
    tensors: Vec<TensorInfo>,
    data_offset: usize,
    data: &'a [u8],
}

/// A bounds-checked little-endian reader over the first `bytes.len()` of a `file_len`-byte file.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    file_len: usize,
    /// Set when a read ran past `bytes` but not past the file: more of the file is needed.
    short: bool,
    /// Bytes of [`MAX_HEADER_MEMORY`] not yet charged.
    budget: usize,
}

impl<'a> Cursor<'a> {
    /// Bytes left in the file (not only in the part at hand).
    fn remaining(&self) -> usize {
        self.file_len - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(bad_at(
                At::Offset(self.pos),
                format!(
                    "truncated: {what} needs {n} bytes, the file has {}",
                    self.file_len
                ),
            ));
        }
        if n > self.bytes.len() - self.pos {
            self.short = true;
            return Err(bad_at(
                At::Offset(self.pos),
                format!(
                    "the header goes on past the first {} bytes",
                    self.bytes.len()
                ),
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count or length that must fit in the rest of the file at `min_each` bytes apiece,
    /// its `mem_each` bytes apiece in memory charged to the header's budget.
    fn count(&mut self, what: &str, min_each: usize, mem_each: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.u64(what)?;
        let fits = usize::try_from(n).ok().filter(|&n| {
            n.checked_mul(min_each)
                .is_some_and(|b| b <= self.remaining())
        });
        let n = fits.ok_or_else(|| {
            let signed = match n as i64 {
                s if s < 0 => format!(" ({s} as a signed count)"),
                _ => String::new(),
            };
            bad_at(
                At::Offset(at),
                format!(
                    "{what} {n}{signed} cannot fit in the {} bytes that follow",
                    self.remaining()
                ),
            )
        })?;
        self.charge(n.saturating_mul(mem_each), at, what)?;
        Ok(n)
    }

    /// Takes `bytes` of the header's memory budget (for something read at `at`).
    fn charge(&mut self, bytes: usize, at: usize, what: &str) -> Result<()> {
        self.budget = self.budget.checked_sub(bytes).ok_or_else(|| {
            bad_at(
                At::Offset(at),
                format!(
                    "{what}: the header would take more than {} MiB of memory",
                    MAX_HEADER_MEMORY >> 20
                ),
            )
        })?;
        Ok(())
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let len = self.count(what, 1, 1)?;
        let at = self.pos;
        let raw = self.take(len, what)?;
        String::from_utf8(raw.to_vec()).map_err(|_| bad_at(At::Offset(at), "a string is not UTF-8"))
    }

    fn value(&mut self, ty: ValueType, depth: usize) -> Result<Value> {
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>("u8")?[0]),
            ValueType::I8 => Value::I8(self.array::<1>("i8")?[0] as i8),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array("u16")?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array("i16")?)),
            ValueType::U32 => Value::U32(self.u32("u32")?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array("i32")?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array("f32")?)),
            ValueType::U64 => Value::U64(self.u64("u64")?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array("i64")?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array("f64")?)),
            ValueType::Bool => match self.array::<1>("bool")?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    return Err(bad_at(
                        At::Offset(self.pos - 1),
                        format!("bool value {b} (0 or 1 expected)"),
                    ))
                }
            },
            ValueType::String => Value::String(self.string("string length")?),
            ValueType::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(bad_at(
                        At::Offset(self.pos),
                        format!("arrays nested deeper than {MAX_ARRAY_DEPTH}"),
                    ));
                }
                let at = self.pos;
                let elem = value_type(self.u32("array type")?, At::Offset(at))?;
                let n = self.count(
                    "array length",
                    elem.min_bytes(),
                    std::mem::size_of::<Value>(),
                )?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(elem, depth + 1)?);
                }
                Value::Array(elem, items)
            }
        })
    }
}

/// The value type of tag `id` read at `at`.
fn value_type(id: u32, at: At) -> Result<ValueType> {
    ValueType::from_id(id).ok_or_else(|| bad_at(at, format!("unknown metadata value type {id}")))
}

impl<'a> Gguf<'a> {
    /// Parses a whole GGUF file (versions 2 and 3, little-endian).
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        Self::parse_prefix(bytes, bytes.len())?
            .ok_or_else(|| bad("the header does not fit in the file"))
    }

    /// Parses the header of a `file_len`-byte GGUF file from its first bytes, `prefix`: every
    /// tensor is checked to lie inside the file; nothing is borrowed, so read tensors from
    /// elsewhere at [`Gguf::tensor_range`] ([`Gguf::tensor_data`] has no bytes at hand).
    /// `Ok(None)` when the header goes on past `prefix` (read more and try again).
    pub fn parse_header(prefix: &[u8], file_len: usize) -> Result<Option<Gguf<'static>>> {
        Ok(Gguf::parse_prefix(prefix, file_len)?.map(|g| Gguf { data: &[], ..g }))
    }

    /// [`Gguf::parse_header`] that also borrows whatever data `prefix` holds.
    fn parse_prefix(prefix: &'a [u8], file_len: usize) -> Result<Option<Self>> {
        if prefix.len() > file_len {
            return Err(Error::InvalidArgument(format!(
                "{} bytes read from a {file_len}-byte file",
                prefix.len()
            )));
        }
        let mut c = Cursor {
            bytes: prefix,
            pos: 0,
            file_len,
            short: false,
            budget: MAX_HEADER_MEMORY,
        };
        match Self::parse_cursor(&mut c) {
            Err(_) if c.short => Ok(None),
            r => r.map(Some),
        }
    }

    fn parse_cursor(c: &mut Cursor<'a>) -> Result<Self> {
        let (bytes, file_len) = (c.bytes, c.file_len);
        if &c.array::<4>("magic")? != MAGIC {
            return Err(bad_at(At::Offset(0), "not a GGUF file (bad magic)"));
        }
        let version = c.u32("version")?;
        if version != 2 && version != 3 {
            return Err(Error::unsupported_model(
                ModelFile::Gguf,
                Some(At::Offset(MAGIC.len())),
                format!("version {version} is not supported (2 and 3 are)"),
            ));
        }
        // Each tensor info takes at least 8 (name) + 4 + 8 (one dim) + 4 + 8 bytes; in memory
        // its info and its name's entry in the duplicate check.
        let tensor_mem = std::mem::size_of::<TensorInfo>() + 2 * std::mem::size_of::<String>();
        let n_tensors = c.count("tensor count", 32, tensor_mem)?;
        // Each key/value takes at least 8 (key) + 4 (type) + 1 bytes.
        let kv_mem = std::mem::size_of::<(String, Value)>() + 2 * std::mem::size_of::<String>();
        let n_kv = c.count("metadata count", 13, kv_mem)?;
        let mut metadata: Vec<(String, Value)> = Vec::with_capacity(n_kv);
        let mut keys = HashSet::with_capacity(n_kv);
        for _ in 0..n_kv {
            let at = c.pos;
            let key = c.string("key length")?;
            if key.is_empty() {
                return Err(bad_at(At::Offset(at), "a metadata key is empty"));
            }
            let ty = value_type(c.u32("value type")?, At::Key(key.clone()))?;
            let value = c.value(ty, 0)?;
            if !keys.insert(key.clone()) {
                return Err(bad_at(At::Key(key), "appears twice"));
            }
            metadata.push((key, value));
        }
        let alignment = match metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY) {
            None => DEFAULT_ALIGNMENT,
            Some((_, Value::U32(a))) if a.is_power_of_two() => *a as usize,
            Some((_, v)) => {
                return Err(bad_at(
                    At::Key(ALIGNMENT_KEY.into()),
                    format!("must be a u32 power of two, got {v:?}"),
                ))
            }
        };
        let mut tensors = Vec::with_capacity(n_tensors);
        let mut names = HashSet::with_capacity(n_tensors);
        for _ in 0..n_tensors {
            let name = c.string("tensor name length")?;
            let n_dims = c.u32("tensor dims")? as usize;
            if n_dims == 0 || n_dims > MAX_DIMS {
                return Err(bad_at(
                    At::Tensor(name),
                    format!("{n_dims} dims (1 to {MAX_DIMS} supported)"),
                ));
            }
            let mut ne = Vec::with_capacity(n_dims);
            for i in 0..n_dims {
                let d = c.u64("tensor dim")?;
                let bad_dim = |what: String| bad_at(At::Tensor(name.clone()), what);
                if (d as i64) < 0 {
                    return Err(bad_dim(format!("dim {i} is negative ({})", d as i64)));
                }
                if d == 0 {
                    return Err(bad_dim(format!("dim {i} is 0")));
                }
                let d =
                    usize::try_from(d).map_err(|_| bad_dim(format!("dim {i} ({d}) overflows")))?;
                ne.push(d);
            }
            let type_id = c.u32("tensor type")?;
            let dtype = DType::from_ggml(type_id).ok_or_else(|| {
                let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
                Error::unsupported_model(
                    ModelFile::Gguf,
                    Some(At::Tensor(name.clone())),
                    format!(
                        "GGML type {type_id} is not supported ({} are)",
                        names.join(", ")
                    ),
                )
            })?;
            let nbytes =
                tensor_nbytes(dtype, &ne).map_err(|e| bad_at(At::Tensor(name.clone()), e))?;
            let offset = c.u64("tensor offset")?;
            let offset = usize::try_from(offset)
                .ok()
                .filter(|o| o % alignment == 0)
                .ok_or_else(|| {
                    bad_at(
                        At::Tensor(name.clone()),
                        format!("offset {offset} is not a multiple of the alignment {alignment}"),
                    )
                })?;
            if !names.insert(name.clone()) {
                return Err(bad_at(At::Tensor(name), "appears twice"));
            }
            tensors.push(TensorInfo {
                name,
                dtype,
                ne,
                offset,
                nbytes,
            });
        }
        let data_offset = c
            .pos
            .checked_next_multiple_of(alignment)
            .ok_or_else(|| bad("data offset overflows"))?;
        let data_len = match file_len.checked_sub(data_offset) {
            Some(n) => n,
            None if tensors.is_empty() => 0,
            None => {
                return Err(bad(format!(
                    "truncated: data section starts at {data_offset}, the file has {file_len} bytes"
                )))
            }
        };
        let data = bytes.get(data_offset..).unwrap_or(&[]);
        let mut spans: Vec<(usize, usize, &str)> = Vec::with_capacity(tensors.len());
        for t in &tensors {
            let end = t.offset.checked_add(t.nbytes).filter(|&e| e <= data_len);
            let end = end.ok_or_else(|| {
                bad_at(
                    At::Tensor(t.name.clone()),
                    format!(
                        "truncated: needs bytes {}..{}+{} of a {data_len}-byte data section",
                        t.offset, t.offset, t.nbytes
                    ),
                )
            })?;
            spans.push((t.offset, end, &t.name));
        }
        crate::sort::by_key(&mut spans, |s| crate::sort::key2(s.0 as u64, s.1 as u64));
        for w in spans.windows(2) {
            if w[0].1 > w[1].0 {
                return Err(bad_at(
                    At::Tensor(w[0].2.into()),
                    format!("overlaps tensor {:?}", w[1].2),
                ));
            }
        }
        Ok(Self {
            version,
            alignment,
            metadata,
            tensors,
            data_offset,
            data,
        })
    }

    /// The file's GGUF version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The data alignment in bytes.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Byte offset of the data section in the file.
    pub fn data_offset(&self) -> usize {
        self.data_offset
    }

    /// All metadata, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    /// The value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn require(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| bad_at(At::Key(key.into()), "missing"))
    }

    /// An integer key as `usize` (any integer type; negative values are an error).
    pub fn get_usize(&self, key: &str) -> Result<usize> {
        let v = self.require(key)?;
        v.as_i64()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| {
                bad_at(
                    At::Key(key.into()),
                    format!("must be a non-negative integer, got {v:?}"),
                )
            })
    }

    /// A float key (floats or integers).
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        let v = self.require(key)?;
        v.as_f64()
            .map(|f| f as f32)
            .ok_or_else(|| bad_at(At::Key(key.into()), format!("must be a number, got {v:?}")))
    }

    /// A string key.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| {
            bad_at(
                At::Key(key.into()),
                format!("must be a string, got {:?}", v.value_type()),
            )
        })
    }

    /// A string-array key.
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>> {
        let v = self.require(key)?;
        v.as_str_array()
            .ok_or_else(|| bad_at(At::Key(key.into()), "must be an array of strings"))
    }

    /// All tensor infos, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The info of a tensor by name.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// A tensor's data (its bytes in ggml layout), borrowed from the file.
    pub fn tensor_data(&self, t: &TensorInfo) -> Result<&'a [u8]> {
        t.offset
            .checked_add(t.nbytes)
            .and_then(|end| self.data.get(t.offset..end))
            .ok_or_else(|| {
                bad_at(
                    At::Tensor(t.name.clone()),
                    "its data is not in the bytes at hand",
                )
            })
    }

    /// Where a tensor's data lies in the file (checked against the file size when parsed).
    pub fn tensor_range(&self, t: &TensorInfo) -> std::ops::Range<usize> {
        let start = self.data_offset + t.offset;
        start..start + t.nbytes
    }
}

/// Builds a GGUF v3 file: metadata in insertion order, tensors packed at the alignment.
#[derive(Clone, Debug, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, Value)>,
    tensors: Vec<(TensorInfo, Vec<u8>)>,
}

fn check_value(key: &str, v: &Value) -> Result<()> {
    if let Value::Array(elem, items) = v {
        if let Some(bad_item) = items.iter().find(|i| i.value_type() != *elem) {
            return Err(Error::InvalidArgument(format!(
                "metadata {key}: array of {elem:?} holds a {:?}",
                bad_item.value_type()
            )));
        }
        for i in items {
            check_value(key, i)?;
        }
    }
    Ok(())
}

impl GgufWriter {
    /// An empty file.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a metadata key (replacing an earlier value of it).
    pub fn set(&mut self, key: &str, value: Value) -> Result<()> {
        check_value(key, &value)?;
        if key == ALIGNMENT_KEY && !matches!(value, Value::U32(a) if a.is_power_of_two()) {
            return Err(Error::InvalidArgument(format!(
                "{ALIGNMENT_KEY} must be a u32 power of two"
            )));
        }
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.metadata.push((key.to_string(), value)),
        }
        Ok(())
    }

    /// Adds a tensor with its data in ggml layout (`bytes` must match dtype and shape).
    pub fn add_tensor(
        &mut self,
        name: &str,
        dtype: DType,
        ne: &[usize],
        bytes: Vec<u8>,
    ) -> Result<()> {
        if ne.is_empty() || ne.len() > MAX_DIMS {
            return Err(Error::InvalidArgument(format!(
                "tensor {name}: {} dims (1 to {MAX_DIMS})",
                ne.len()
            )));
        }
        if self.tensors.iter().any(|(t, _)| t.name == name) {
            return Err(Error::InvalidArgument(format!("tensor {name} added twice")));
        }
        let nbytes = tensor_nbytes(dtype, ne)
            .map_err(|e| Error::InvalidArgument(format!("tensor {name}: {e}")))?;
        if bytes.len() != nbytes {
            return Err(Error::InvalidArgument(format!(
                "tensor {name} ({dtype:?} {ne:?}) needs {nbytes} bytes, got {}",
                bytes.len()
            )));
        }
        let info = TensorInfo {
            name: name.to_string(),
            dtype,
            ne: ne.to_vec(),
            offset: 0,
            nbytes,
        };
        self.tensors.push((info, bytes));
        Ok(())
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let alignment = match self.metadata.iter().find(|(k, _)| k == ALIGNMENT_KEY) {
            Some((_, Value::U32(a))) => *a as usize,
            _ => DEFAULT_ALIGNMENT,
        };
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            write_str(&mut out, k);
            out.extend_from_slice(&v.value_type().id().to_le_bytes());
            write_value(&mut out, v);
        }
        let mut offset = 0usize;
        for (t, _) in &self.tensors {
            write_str(&mut out, &t.name);
            out.extend_from_slice(&(t.ne.len() as u32).to_le_bytes());
            for &d in &t.ne {
                out.extend_from_slice(&(d as u64).to_le_bytes());
            }
            out.extend_from_slice(&t.dtype.ggml_id().to_le_bytes());
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            offset = (offset + t.nbytes).next_multiple_of(alignment);
        }
        // No tensors, no data section to align: a file may name any power-of-two
        // alignment (up to 2^31) without the writer padding to it.
        if !self.tensors.is_empty() {
            out.resize(out.len().next_multiple_of(alignment), 0);
        }
        for (_, bytes) in &self.tensors {
            out.extend_from_slice(bytes);
            out.resize(out.len().next_multiple_of(alignment), 0);
        }
        out
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => write_str(out, s),
        Value::Array(elem, items) => {
            out.extend_from_slice(&elem.id().to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for i in items {
                write_value(out, i);
            }
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    fn sample() -> GgufWriter {
        let mut w = GgufWriter::new();
        w.set("general.architecture", Value::String("test".into()))
            .unwrap();
        let scalars = [
            Value::U8(7),
            Value::I8(-7),
            Value::U16(700),
            Value::I16(-700),
            Value::U32(70_000),
            Value::I32(-70_000),
            Value::F32(1.5),
            Value::Bool(true),
            Value::U64(1 << 40),
            Value::I64(-(1 << 40)),
            Value::F64(-2.25),
        ];
        for (i, v) in scalars.into_iter().enumerate() {
            w.set(&format!("k.{i}"), v).unwrap();
        }
        let strs = ["a", "", "ünï"].map(|s| Value::String(s.into())).to_vec();
        w.set("k.strs", Value::Array(ValueType::String, strs))
            .unwrap();
        let inner = |n: i32| Value::Array(ValueType::I32, (0..n).map(Value::I32).collect());
        w.set(
            "k.nested",
            Value::Array(ValueType::Array, vec![inner(0), inner(3)]),
        )
        .unwrap();
        let f: Vec<u8> = (0..12).flat_map(|i| (i as f32).to_le_bytes()).collect();
        w.add_tensor("t.f32", DType::F32, &[3, 4], f).unwrap();
        w.add_tensor("t.q8", DType::Q8_0, &[64], vec![1; 68])
            .unwrap();
        w.add_tensor("t.q4", DType::Q4_0, &[32, 1], vec![2; 18])
            .unwrap();
        // Last, and a whole multiple of the alignment: the file ends with real data.
        w.add_tensor("t.f16", DType::F16, &[16, 2], vec![3; 64])
            .unwrap();
        w
    }

    #[test]
    fn round_trip() {
        let w = sample();
        let bytes = w.to_bytes();
        let g = Gguf::parse(&bytes).unwrap();
        assert_eq!(g.version(), 3);
        assert_eq!(g.alignment(), 32);
        assert_eq!(g.data_offset() % 32, 0);
        assert_eq!(g.metadata(), &w.metadata[..]);
        assert_eq!(g.get_str("general.architecture").unwrap(), "test");
        assert_eq!(g.get_usize("k.4").unwrap(), 70_000);
        assert!(g.get_usize("k.5").is_err());
        assert_eq!(g.get_f32("k.6").unwrap(), 1.5);
        assert_eq!(g.get_str_array("k.strs").unwrap(), ["a", "", "ünï"]);
        assert!(g.get_str("nope").is_err());
        assert_eq!(g.tensors().len(), 4);
        for (t, data) in &w.tensors {
            let got = g.tensor(&t.name).unwrap();
            assert_eq!((got.dtype, &got.ne), (t.dtype, &t.ne));
            assert_eq!(got.offset % 32, 0);
            assert_eq!(g.tensor_data(got).unwrap(), &data[..]);
        }
        // Parsing and writing again gives the same bytes.
        let mut w2 = GgufWriter::new();
        for (k, v) in g.metadata() {
            w2.set(k, v.clone()).unwrap();
        }
        for t in g.tensors() {
            let d = g.tensor_data(t).unwrap().to_vec();
            w2.add_tensor(&t.name, t.dtype, &t.ne, d).unwrap();
        }
        assert_eq!(w2.to_bytes(), bytes);
    }

    #[test]
    fn a_huge_alignment_without_tensors_writes_no_padding() {
        // Found by the fuzzer: a 1 GiB alignment in a file with no tensors parses (no
        // data section), and rewriting it must not pad the header to 1 GiB.
        let mut w = GgufWriter::new();
        w.set(ALIGNMENT_KEY, Value::U32(1 << 30)).unwrap();
        let bytes = w.to_bytes();
        assert!(bytes.len() < 100, "{} bytes", bytes.len());
        let g = Gguf::parse(&bytes).unwrap();
        assert_eq!(g.alignment(), 1 << 30);
        assert!(g.tensors().is_empty());
    }

    #[test]
    fn custom_alignment() {
        let mut w = sample();
        w.set(ALIGNMENT_KEY, Value::U32(64)).unwrap();
        assert!(w.set(ALIGNMENT_KEY, Value::U32(48)).is_err());
        let bytes = w.to_bytes();
        let g = Gguf::parse(&bytes).unwrap();
        assert_eq!(g.alignment(), 64);
        assert!(g.tensors().iter().all(|t| t.offset % 64 == 0));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().to_bytes();
        for n in 0..bytes.len() {
            assert!(
                Gguf::parse(&bytes[..n]).is_err(),
                "prefix of {n} bytes parsed"
            );
        }
    }

    /// From any prefix: `None` until the header is in it, then the same header as the whole
    /// file gives, never borrowing data; a prefix longer than the file is an error.
    #[test]
    fn headers_parse_from_prefixes() {
        let bytes = sample().to_bytes();
        let whole = Gguf::parse(&bytes).unwrap();
        let mut first = None;
        for n in 0..=bytes.len() {
            match Gguf::parse_header(&bytes[..n], bytes.len()).unwrap() {
                None => assert!(first.is_none(), "None after a header parsed at {first:?}"),
                Some(g) => {
                    first.get_or_insert(n);
                    assert_eq!(g.tensors(), whole.tensors());
                    assert_eq!(g.metadata(), whole.metadata());
                    assert_eq!(g.data_offset(), whole.data_offset());
                    let t = &g.tensors()[0];
                    assert!(g.tensor_data(t).is_err(), "header-only parse borrowed data");
                    assert_eq!(g.tensor_range(t).len(), t.nbytes);
                }
            }
        }
        assert!(first.is_some_and(|n| n < bytes.len()));
        assert!(Gguf::parse_header(&bytes, bytes.len() - 1).is_err());
    }

    #[test]
    fn corrupted_bytes_never_panic() {
        let bytes = sample().to_bytes();
        let mut rng = Rng::new(7);
        for _ in 0..3000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.next_u32() as u8;
            }
            let _ = Gguf::parse(&b);
        }
    }

    fn header(n_tensors: u64, n_kv: u64) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&n_tensors.to_le_bytes());
        b.extend_from_slice(&n_kv.to_le_bytes());
        b
    }

    fn err_of(b: &[u8]) -> String {
        Gguf::parse(b).unwrap_err().to_string()
    }

    #[test]
    fn bad_magic_and_version() {
        let mut b = sample().to_bytes();
        b[0] = b'X';
        assert!(err_of(&b).contains("bad magic"));
        let mut b = sample().to_bytes();
        b[4] = 9;
        assert!(err_of(&b).contains("version 9"));
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        assert!(err_of(&header(u64::MAX, 0)).contains("tensor count"));
        assert!(err_of(&header(0, 1 << 60)).contains("metadata count"));
        // A string array claiming 2^62 elements.
        let mut b = header(0, 1);
        write_str(&mut b, "k");
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(err_of(&b).contains("array length"));
        // A key claiming a u64::MAX length.
        let mut b = header(0, 1);
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&[0; 16]);
        assert!(err_of(&b).contains("key length"));
    }

    #[test]
    fn inconsistent_files_are_errors() {
        let tensor = |ne: &[u64], ty: u32, off: u64| {
            let mut b = header(1, 0);
            write_str(&mut b, "t");
            b.extend_from_slice(&(ne.len() as u32).to_le_bytes());
            for d in ne {
                b.extend_from_slice(&d.to_le_bytes());
            }
            b.extend_from_slice(&ty.to_le_bytes());
            b.extend_from_slice(&off.to_le_bytes());
            b.resize(b.len().next_multiple_of(32) + 64, 0);
            b
        };
        assert!(Gguf::parse(&tensor(&[16], 0, 0)).is_ok());
        assert!(err_of(&tensor(&[16], 0, 8)).contains("not a multiple"));
        assert!(err_of(&tensor(&[17], 0, 32)).contains("truncated"));
        assert!(err_of(&tensor(&[1 << 40, 1 << 40], 0, 0)).contains("overflows"));
        assert!(err_of(&tensor(&[33], 8, 0)).contains("multiple of 32"));
        assert!(err_of(&tensor(&[16], 15, 0)).contains("tensor \"t\": GGML type 15"));
        // The error names where it is, as a value too.
        match Gguf::parse(&tensor(&[16], 0, 8)) {
            Err(Error::Model {
                file: ModelFile::Gguf,
                at: Some(At::Tensor(t)),
                ..
            }) => assert_eq!(t, "t"),
            r => panic!("{r:?}"),
        }
        match Gguf::parse(&header(u64::MAX, 0)) {
            Err(Error::Model {
                at: Some(At::Offset(8)),
                ..
            }) => {}
            r => panic!("{r:?}"),
        }
        assert!(err_of(&tensor(&[1, 1, 1, 1, 1], 0, 0)).contains("5 dims"));
        // Overlapping tensors.
        let mut w = GgufWriter::new();
        w.add_tensor("a", DType::F32, &[16], vec![0; 64]).unwrap();
        w.add_tensor("b", DType::F32, &[16], vec![0; 64]).unwrap();
        let mut b = w.to_bytes();
        let name_b = [&1u64.to_le_bytes()[..], b"b"].concat();
        let at = b.windows(9).position(|x| x == name_b).unwrap() + 9 + 4 + 8 + 4;
        b[at..at + 8].copy_from_slice(&32u64.to_le_bytes());
        assert!(err_of(&b).contains("overlap"));
        // Bad alignment value, bad bool, unknown value type.
        let mut b = header(0, 1);
        write_str(&mut b, ALIGNMENT_KEY);
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&24u32.to_le_bytes());
        assert!(err_of(&b).contains("power of two"));
        let mut b = header(0, 1);
        write_str(&mut b, "k");
        b.extend_from_slice(&7u32.to_le_bytes());
        b.push(2);
        assert!(err_of(&b).contains("bool value 2"));
        let mut b = header(0, 1);
        write_str(&mut b, "k");
        b.extend_from_slice(&13u32.to_le_bytes());
        b.extend_from_slice(&[0; 8]);
        assert!(err_of(&b).contains("value type 13"));
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let mut b = header(0, 1);
        write_str(&mut b, "k");
        b.extend_from_slice(&9u32.to_le_bytes());
        for _ in 0..100 {
            b.extend_from_slice(&9u32.to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
        }
        b.extend_from_slice(&[0; 64]);
        assert!(err_of(&b).contains("nested"));
    }

    #[test]
    fn writer_checks_its_input() {
        let mut w = GgufWriter::new();
        assert!(w.add_tensor("t", DType::F32, &[4], vec![0; 15]).is_err());
        assert!(w.add_tensor("t", DType::Q8_0, &[16], vec![0; 17]).is_err());
        let mixed = Value::Array(ValueType::U8, vec![Value::U8(1), Value::I8(1)]);
        assert!(w.set("k", mixed).is_err());
    }
}
