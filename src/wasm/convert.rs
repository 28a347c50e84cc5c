//! Small conversions between Rust values and JS values.

use js_sys::{Object, Reflect};

use crate::runtime::DeviceChoice;
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

/// `obj[key]`, or `None` when it is missing, `undefined` or `null`.
pub fn prop(obj: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(obj, &key.into())
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// `{ devices = "auto", costModel = true }` of `RuntimeOptions`.
pub fn runtime_options(options: &JsValue) -> Result<(DeviceChoice, bool), JsError> {
    let devices = prop(options, "devices")
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "auto".into());
    let choice: DeviceChoice = devices.parse().map_err(to_js_error)?;
    let cost_model = prop(options, "costModel")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    Ok((choice, cost_model))
}
