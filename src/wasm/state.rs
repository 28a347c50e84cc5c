//! `State` for JS: memory on one device that outlives runs (`runtime.createState`), bound to a
//! graph's state leaf (`graph.state(name, dtype, shape)`) by passing it among a run's inputs
//! under that name. A thin wrapper over `crate::runtime::State`.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::convert::JsErr;
use crate::error::ErrorCode;

use super::convert::to_js_error;
use crate::runtime::State;

thread_local! {
    /// Every live `State` by id: how a run's input is recognised as one (wasm-bindgen cannot
    /// borrow an exported struct back from a plain `JsValue`).
    static STATES: RefCell<HashMap<u32, State>> = RefCell::new(HashMap::new());
    static NEXT_STATE: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

/// The property holding a `State`'s id.
const STATE_ID: &str = "__webtensorState";

/// Memory on one device kept across runs (a running sum, a KV cache), zeroed when made:
/// `runtime.createState(dtype, shape, { device, name })`. Give it as the input named after
/// a graph's state leaf; ops on it run on its device and `setRows` on it writes in place.
/// `read()` its values, `zero()` it, `dispose()` it (later uses throw).
#[wasm_bindgen(js_name = State)]
pub struct JsState {
    id: u32,
    disposed: std::cell::Cell<bool>,
}

impl JsState {
    pub(super) fn register(s: State) -> JsState {
        let id = NEXT_STATE.with(|n| {
            let id = n.get();
            n.set(id.wrapping_add(1).max(1));
            id
        });
        STATES.with(|m| m.borrow_mut().insert(id, s));
        JsState {
            id,
            disposed: Default::default(),
        }
    }

    /// The state behind `value` when it is a `State`; an error when it was disposed.
    pub(super) fn lookup(value: &JsValue) -> Result<Option<State>, JsErr> {
        if !value.is_object() {
            return Ok(None);
        }
        let Some(id) = super::convert::prop(value, STATE_ID).and_then(|v| v.as_f64()) else {
            return Ok(None);
        };
        STATES
            .with(|m| m.borrow().get(&(id as u32)).cloned())
            .map(Some)
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this State was disposed"))
    }

    fn live(&self) -> Result<State, JsErr> {
        STATES
            .with(|m| m.borrow().get(&self.id).cloned())
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this State was disposed"))
    }
}

impl Drop for JsState {
    fn drop(&mut self) {
        STATES.with(|m| m.borrow_mut().remove(&self.id));
    }
}

#[wasm_bindgen(js_class = State)]
impl JsState {
    /// Identifies the object as a State (internal).
    #[wasm_bindgen(getter, js_name = __webtensorState)]
    pub fn state_id(&self) -> u32 {
        self.id
    }

    /// Its values: a Float32Array (f32, f16) or Int32Array (i32). Rejects after `dispose()`.
    pub fn read(&self) -> Promise {
        let s = self.live();
        wasm_bindgen_futures::future_to_promise(async move {
            let s = s.map_err(JsValue::from)?;
            let bytes = s.read().await.map_err(|e| JsValue::from(to_js_error(e)))?;
            super::convert::bytes_to_typed(&bytes, s.dtype()).map_err(JsValue::from)
        })
    }

    /// Sets every value to 0.
    pub fn zero(&self) -> Result<(), JsErr> {
        self.live()?.zero().map_err(to_js_error)
    }

    /// Frees it (once no cached plan binds it); later uses throw.
    pub fn dispose(&self) {
        self.disposed.set(true);
        STATES.with(|m| m.borrow_mut().remove(&self.id));
    }

    /// Whether `dispose()` was called.
    #[wasm_bindgen(getter)]
    pub fn disposed(&self) -> bool {
        self.disposed.get()
    }

    /// Its name (the graph's state leaf it was made for, or "state").
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> Result<String, JsErr> {
        Ok(self.live()?.name().to_string())
    }

    /// Its dtype name ("f32", "f16", "i32").
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> Result<String, JsErr> {
        Ok(self.live()?.dtype().name().to_string())
    }

    /// Its shape (innermost first, 4 dims).
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Result<Vec<usize>, JsErr> {
        Ok(self.live()?.shape().to_vec())
    }

    /// Name of the device holding it.
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> Result<String, JsErr> {
        Ok(self.live()?.device_name().to_string())
    }
}
