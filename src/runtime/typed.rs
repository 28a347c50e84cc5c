//! JS typed arrays ↔ tensor bytes: the conversions behind the JS API's weights, inputs and
//! outputs, in plain Rust so that native tests and the `convert` fuzz target reach them (the
//! bindings only move the arrays' contents in and out of wasm memory).

use super::Program;
use crate::error::{Error, Result};
use crate::graph::{row_to_f32, DType, TensorId};

/// The contents of a typed array given for a tensor.
#[derive(Clone, Copy, Debug)]
pub enum Typed<'a> {
    /// A `Float32Array`.
    F32(&'a [f32]),
    /// An `Int32Array`.
    I32(&'a [i32]),
    /// A `Uint8Array`: raw bytes in the tensor's dtype.
    U8(&'a [u8]),
}

/// The contents of a typed array made for a tensor's value.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedVec {
    /// For f32 and f16 tensors.
    F32(Vec<f32>),
    /// For i32 tensors.
    I32(Vec<i32>),
    /// For quantized tensors: their raw bytes.
    U8(Vec<u8>),
}

impl TypedVec {
    /// Its contents, borrowed.
    pub fn as_typed(&self) -> Typed<'_> {
        match self {
            Self::F32(v) => Typed::F32(v),
            Self::I32(v) => Typed::I32(v),
            Self::U8(v) => Typed::U8(v),
        }
    }
}

/// The bytes of a `dtype` tensor from a typed array given for it (`what` names the tensor in
/// errors): a `Float32Array` for f32, an `Int32Array` for i32, raw bytes for any dtype. The
/// length is checked where the bytes are used (a weight's or an input's size).
pub fn typed_to_bytes(v: Typed, dtype: DType, what: &str) -> Result<Vec<u8>> {
    match v {
        Typed::F32(a) if dtype == DType::F32 => {
            Ok(a.iter().flat_map(|x| x.to_le_bytes()).collect())
        }
        Typed::F32(_) => Err(Error::InvalidArgument(format!(
            "{what} is {}: give a Uint8Array of raw bytes",
            dtype.name()
        ))),
        Typed::I32(a) if dtype == DType::I32 => {
            Ok(a.iter().flat_map(|x| x.to_le_bytes()).collect())
        }
        Typed::I32(_) => Err(Error::InvalidArgument(format!(
            "{what} is {}, not i32",
            dtype.name()
        ))),
        Typed::U8(a) => Ok(a.to_vec()),
    }
}

/// Adds a weight to `p` from a typed array: a `Float32Array` is converted (or quantized) to
/// `dtype`, an `Int32Array` is i32 values, a `Uint8Array` raw bytes of `dtype`.
pub fn add_weight(
    p: &mut Program,
    name: &str,
    dtype: DType,
    ne: &[usize],
    v: Typed,
) -> Result<TensorId> {
    match v {
        Typed::F32(a) => p.weight_f32(name, dtype, ne, a),
        _ => p.weight_bytes(name, dtype, ne, typed_to_bytes(v, dtype, name)?),
    }
}

/// A `dtype` tensor's bytes (a run's output) as the typed array JS gets: f32 values for f32
/// and f16, i32 for i32, the raw bytes of quantized dtypes.
pub fn bytes_to_typed(bytes: &[u8], dtype: DType) -> Result<TypedVec> {
    let whole = match dtype {
        DType::F32 | DType::I32 => bytes.len().is_multiple_of(4),
        DType::F16 => bytes.len().is_multiple_of(2),
        // The quantized dtypes.
        _ => true,
    };
    if !whole {
        return Err(Error::InvalidArgument(format!(
            "{} bytes are not whole {} values",
            bytes.len(),
            dtype.name()
        )));
    }
    Ok(match dtype {
        DType::F32 | DType::F16 => {
            let mut v = vec![0f32; bytes.len() / dtype.block_bytes()];
            row_to_f32(dtype, bytes, &mut v);
            TypedVec::F32(v)
        }
        DType::I32 => TypedVec::I32(
            bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        // The quantized dtypes.
        _ => TypedVec::U8(bytes.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_arrays_convert_or_say_why_not() {
        let f = [1.5f32, -2.0];
        let b = typed_to_bytes(Typed::F32(&f), DType::F32, "x").unwrap();
        assert_eq!(
            bytes_to_typed(&b, DType::F32).unwrap(),
            TypedVec::F32(f.to_vec())
        );
        let i = [7i32, -1];
        let b = typed_to_bytes(Typed::I32(&i), DType::I32, "x").unwrap();
        assert_eq!(
            bytes_to_typed(&b, DType::I32).unwrap(),
            TypedVec::I32(i.to_vec())
        );
        let e = typed_to_bytes(Typed::F32(&f), DType::Q8_0, "w").unwrap_err();
        assert!(
            e.to_string().contains("w is q8_0: give a Uint8Array"),
            "{e}"
        );
        let e = typed_to_bytes(Typed::I32(&i), DType::F32, "x").unwrap_err();
        assert!(e.to_string().contains("x is f32, not i32"), "{e}");
        assert_eq!(
            typed_to_bytes(Typed::U8(&[1, 2, 3]), DType::F16, "x").unwrap(),
            [1, 2, 3]
        );
        assert!(bytes_to_typed(&[0; 3], DType::F32).is_err());
        assert!(bytes_to_typed(&[0; 3], DType::F16).is_err());
        let h = bytes_to_typed(&half::f16::from_f32(0.5).to_le_bytes(), DType::F16).unwrap();
        assert_eq!(h, TypedVec::F32(vec![0.5]));
        // Weights: any typed array of any length is an error or the weight.
        let mut p = Program::new();
        assert!(add_weight(&mut p, "a", DType::Q8_0, &[32], Typed::F32(&[0.25; 32])).is_ok());
        assert!(add_weight(&mut p, "b", DType::Q8_0, &[32], Typed::F32(&[0.25; 31])).is_err());
        assert!(add_weight(&mut p, "c", DType::Q8_0, &[32], Typed::U8(&[0; 34])).is_ok());
        assert!(add_weight(&mut p, "d", DType::I32, &[2], Typed::F32(&f)).is_err());
        assert!(add_weight(&mut p, "e", DType::I32, &[2], Typed::I32(&i)).is_ok());
        assert!(add_weight(&mut p, "f", DType::F32, &[3], Typed::I32(&i)).is_err());
        // K-quants: raw bytes load, and f32 values are quantized (ggml's reference
        // quantizer); rows that are not whole super-blocks are an error.
        assert!(add_weight(&mut p, "g", DType::Q4_K, &[256], Typed::F32(&[0.5; 256])).is_ok());
        assert!(add_weight(&mut p, "g2", DType::Q4_K, &[32], Typed::F32(&[0.5; 32])).is_err());
        assert!(add_weight(&mut p, "h", DType::Q6_K, &[256, 2], Typed::U8(&[0; 420])).is_ok());
        let out = bytes_to_typed(&[7; 84], DType::Q2_K).unwrap();
        assert_eq!(out, TypedVec::U8(vec![7; 84]));
    }
}
