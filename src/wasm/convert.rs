//! Small conversions between Rust values and JS values.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

/// Sets `obj[key] = value`.
pub fn set(obj: &Object, key: &str, value: &JsValue) -> Result<(), JsError> {
    Reflect::set(obj, &JsValue::from_str(key), value)
        .map(|_| ())
        .map_err(|_| JsError::new(&format!("cannot set property {key}")))
}

/// A crate error as a JS `Error` with its message.
pub fn to_js_error(e: crate::Error) -> JsError {
    JsError::new(&e.to_string())
}
