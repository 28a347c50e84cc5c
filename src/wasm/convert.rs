//! Small conversions between Rust values and JS values.

use js_sys::{Float32Array, Function, Int32Array, Object, Reflect, Uint8Array};

use crate::error::{ErrorCode, Field};
use crate::graph::DType;
use crate::runtime::typed::{self, TypedVec};
use crate::runtime::DeviceChoice;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Sets `obj[key] = value`.
pub fn set(obj: &Object, key: &str, value: &JsValue) -> Result<(), JsErr> {
    Reflect::set(obj, &JsValue::from_str(key), value)
        .map(|_| ())
        .map_err(|_| JsErr::invalid(&format!("cannot set property {key}")))
}

/// An error thrown to JS: an `Error` named `WebtensorError` with its message, a stable `code`
/// (the crate's [`crate::error::ErrorCode`]s, `INVALID_ARGUMENT` for the bindings' own
/// argument checks) and the fields an app can act on ([`crate::Error::fields`]). The package's
/// `WebtensorError` class matches these (`instanceof`), here and across the worker.
pub struct JsErr(JsValue);

impl JsErr {
    /// An error of `code` with `message` and no fields.
    pub fn with_code(code: ErrorCode, message: &str) -> Self {
        let e = js_sys::Error::new(message);
        e.set_name("WebtensorError");
        let _ = Reflect::set(&e, &"code".into(), &code.as_str().into());
        Self(e.into())
    }

    /// Bad input to a binding (`INVALID_ARGUMENT`).
    pub fn invalid(message: &str) -> Self {
        Self::with_code(ErrorCode::InvalidArgument, message)
    }
}

impl From<crate::Error> for JsErr {
    fn from(e: crate::Error) -> Self {
        let out = Self::with_code(e.code(), &e.to_string());
        for (key, value) in e.fields() {
            let v = match value {
                Field::Str(s) => JsValue::from_str(&s),
                Field::Num(n) => JsValue::from_f64(n),
            };
            let _ = Reflect::set(&out.0, &key.into(), &v);
        }
        out
    }
}

impl From<JsErr> for JsValue {
    fn from(e: JsErr) -> Self {
        e.0
    }
}

/// A crate error as a JS `Error` with its message, code and fields ([`JsErr`]).
pub fn to_js_error(e: crate::Error) -> JsErr {
    e.into()
}

/// `obj[key]`, or `None` when it is missing, `undefined` or `null`.
pub fn prop(obj: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(obj, &key.into())
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// A JS value's message for a person: a string as it is, an `Error`'s `name: message` (never
/// its stack), anything else as JSON.
pub fn js_message(v: &JsValue) -> String {
    if let Some(s) = v.as_string() {
        return s;
    }
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        let (name, msg) = (String::from(e.name()), String::from(e.message()));
        return match name.as_str() {
            "" | "Error" => msg,
            _ => format!("{name}: {msg}"),
        };
    }
    if let Some(m) = prop(v, "message").and_then(|m| m.as_string()) {
        return m;
    }
    js_sys::JSON::stringify(v)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "an error that is not an Error".into())
}

/// A typed array's contents, copied out of JS (for [`crate::runtime::typed`]).
pub(super) fn js_typed(v: &JsValue, what: &str) -> Result<TypedVec, JsErr> {
    if let Some(a) = v.dyn_ref::<Float32Array>() {
        Ok(TypedVec::F32(a.to_vec()))
    } else if let Some(a) = v.dyn_ref::<Int32Array>() {
        Ok(TypedVec::I32(a.to_vec()))
    } else if let Some(a) = v.dyn_ref::<Uint8Array>() {
        Ok(TypedVec::U8(a.to_vec()))
    } else {
        Err(JsErr::invalid(&format!(
            "{what}: expected a Float32Array, Int32Array or Uint8Array"
        )))
    }
}

pub(super) fn bytes_to_typed(bytes: &[u8], dtype: DType) -> Result<JsValue, JsErr> {
    Ok(
        match typed::bytes_to_typed(bytes, dtype).map_err(to_js_error)? {
            TypedVec::F32(v) => Float32Array::from(v.as_slice()).into(),
            TypedVec::I32(v) => Int32Array::from(v.as_slice()).into(),
            TypedVec::U8(v) => Uint8Array::from(v.as_slice()).into(),
        },
    )
}

/// `typeof v`, for messages.
fn type_name(v: &JsValue) -> String {
    if v.is_null() {
        "null".into()
    } else if js_sys::Array::is_array(v) {
        "an array".into()
    } else {
        v.js_typeof().as_string().unwrap_or_default()
    }
}

/// The keys of a runtime's options (`Runtime.create`; the model loaders take them too):
/// `device` ("auto", "webgpu" or "cpu"; default "auto") and `costModel` (default true), read by
/// [`Options::runtime`].
pub const RUNTIME_OPTIONS: [&str; 2] = ["device", "costModel"];

/// Options renamed since an earlier release, old name → new (CHANGELOG.md): a call with the
/// old name is told the new one.
const RENAMED: &[(&str, &str)] = &[("devices", "device")];

/// The `Error` for option `key`, not one of `known`.
fn unknown_option(key: &str, known: &[&str]) -> JsErr {
    let renamed = RENAMED
        .iter()
        .find(|(old, new)| *old == key && known.contains(new));
    JsErr::invalid(&match renamed {
        Some((_, new)) => format!("option {key:?} is now {new:?}"),
        None => format!(
            "unknown option {key:?} (the options are {})",
            known.join(", ")
        ),
    })
}

/// A strict options object, the one reader of every binding's options: `undefined` or `null`
/// for the object means every default, as `undefined` for an option does; any other value
/// that is not a plain object, an unknown key, or a value of the wrong type (`null` included)
/// is an `Error` naming it.
pub struct Options<'a>(&'a JsValue);

impl<'a> Options<'a> {
    /// `options`, checked to be an object whose keys are all `known`.
    pub fn new(options: &'a JsValue, known: &[&str]) -> Result<Self, JsErr> {
        if options.is_undefined() || options.is_null() {
            return Ok(Self(options));
        }
        if !options.is_object() || options.is_function() || js_sys::Array::is_array(options) {
            return Err(JsErr::invalid(&format!(
                "options must be an object, got {}",
                type_name(options)
            )));
        }
        for k in Object::keys(options.unchecked_ref::<Object>()).iter() {
            let k = k.as_string().unwrap_or_default();
            if !known.contains(&k.as_str()) {
                return Err(unknown_option(&k, known));
            }
        }
        Ok(Self(options))
    }

    /// The option's value, unless it is missing or `undefined` (`null` is a value, which
    /// every typed reader below refuses).
    pub fn value(&self, key: &str) -> Result<Option<JsValue>, JsErr> {
        if self.0.is_undefined() || self.0.is_null() {
            return Ok(None);
        }
        let v = Reflect::get(self.0, &JsValue::from_str(key)).map_err(|e| {
            JsErr::invalid(&format!("cannot read option {key}: {}", js_message(&e)))
        })?;
        Ok((!v.is_undefined()).then_some(v))
    }

    /// The `Error` for option `key` whose value `v` is not `want`.
    pub fn wrong(key: &str, want: &str, v: &JsValue) -> JsErr {
        JsErr::invalid(&format!(
            "option {key} must be {want}, got {}",
            type_name(v)
        ))
    }

    /// A finite number.
    pub fn number(&self, key: &str) -> Result<Option<f64>, JsErr> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(Self::wrong(key, "a finite number", &v)),
            },
        }
    }

    /// A whole number from 0.
    pub fn count(&self, key: &str) -> Result<Option<usize>, JsErr> {
        match self.number(key)? {
            None => Ok(None),
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64 => Ok(Some(x as usize)),
            Some(x) => Err(JsErr::invalid(&format!(
                "option {key} must be a whole number from 0, got {x}"
            ))),
        }
    }

    /// A boolean (`default` when missing).
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, JsErr> {
        match self.value(key)? {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| Self::wrong(key, "a boolean", &v)),
        }
    }

    /// One of `choices` (a string naming it), its value; the message of a wrong one lists
    /// the names (`option kvType must be "f32" or "f16", got "f8"`).
    pub fn choice<T: Copy>(&self, key: &str, choices: &[(&str, T)]) -> Result<Option<T>, JsErr> {
        let Some(v) = self.value(key)? else {
            return Ok(None);
        };
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
        let want = match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "nothing".into(),
        };
        let Some(s) = v.as_string() else {
            return Err(Self::wrong(key, &want, &v));
        };
        match choices.iter().find(|(n, _)| *n == s) {
            Some(&(_, t)) => Ok(Some(t)),
            None => Err(JsErr::invalid(&format!(
                "option {key} must be {want}, got {s:?}"
            ))),
        }
    }

    /// A function.
    pub fn function(&self, key: &str) -> Result<Option<Function>, JsErr> {
        match self.value(key)? {
            None => Ok(None),
            Some(v) => v
                .dyn_into::<Function>()
                .map(Some)
                .map_err(|v| Self::wrong(key, "a function", &v)),
        }
    }

    /// The runtime's options ([`RUNTIME_OPTIONS`]): the device asked for and whether the
    /// cost model places ops.
    pub fn runtime(&self) -> Result<(DeviceChoice, bool), JsErr> {
        let choice = self
            .choice("device", &DeviceChoice::NAMES)?
            .unwrap_or(DeviceChoice::Auto);
        Ok((choice, self.flag("costModel", true)?))
    }
}
