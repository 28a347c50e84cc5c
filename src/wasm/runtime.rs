//! `Runtime` and `Graph` for JS: thin wrappers over `crate::runtime` (typed arrays ↔ bytes,
//! names ↔ ids, Promises).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::convert::JsErr;
use crate::error::ErrorCode;
use wasm_bindgen::JsCast;

use super::convert::{bytes_to_typed, js_typed, set, to_js_error, Options, RUNTIME_OPTIONS};
use crate::graph::{DType, RopeMode, RopeParams, TensorId};
use crate::runtime::typed;
use crate::runtime::{DeviceTensor, Program, Value};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Options of `Runtime.create`. */
export interface RuntimeOptions {
  /** "auto" (default): the GPU if any, CPU for the rest; "webgpu": fail without WebGPU; "cpu". */
  device?: "auto" | "webgpu" | "cpu";
  /** Place ops with measured device costs (default true). */
  costModel?: boolean;
}
/** Input values by input name: typed arrays, tensors a run of the same runtime kept on
 * its device, or `State`s for the graph's state leaves of those names. */
export type Inputs = Record<string, Float32Array | Int32Array | Uint8Array | GpuTensor | State>;
/** Options of `Runtime.createState`. */
export interface StateOptions {
  /** One of the runtime's `devices` (default: the first). */
  device?: string;
  /** Its name in `explain()` (default "state"). */
  name?: string;
}
/** Output values by output name (`GpuTensor`s with `keepOnDevice`). */
export type Outputs = Record<string, Float32Array | Int32Array | Uint8Array | GpuTensor>;
/** Options of `Runtime.run`. */
export interface RunOptions {
  /** Leave each output on the device that computed it, as a `GpuTensor` (default false). */
  keepOnDevice?: boolean;
}
"#;

fn parse_dtype(s: &str) -> Result<DType, JsErr> {
    DType::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        JsErr::invalid(&format!("unknown dtype {s:?} ({})", names.join(", ")))
    })
}

/// A tensor graph built from JS. Tensors are numbers (ids); every builder checks shapes and
/// dtypes and throws an `Error` saying what is wrong.
#[wasm_bindgen(js_name = Graph)]
pub struct JsGraph {
    p: Rc<RefCell<Program>>,
}

impl JsGraph {
    fn with(
        &self,
        f: impl FnOnce(&mut crate::graph::Graph) -> crate::Result<TensorId>,
    ) -> Result<u32, JsErr> {
        let mut p = self.p.borrow_mut();
        f(p.graph_mut()).map(|id| id.0 as u32).map_err(to_js_error)
    }
}

fn id(x: u32) -> TensorId {
    TensorId(x as usize)
}

#[wasm_bindgen(js_class = Graph)]
impl JsGraph {
    /// An empty graph.
    #[wasm_bindgen(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> JsGraph {
        JsGraph {
            p: Rc::new(RefCell::new(Program::new())),
        }
    }

    /// An input given on each run; `shape` is innermost-first (ggml order), 1 to 4 dims.
    pub fn input(&self, name: &str, dtype: &str, shape: Vec<usize>) -> Result<u32, JsErr> {
        let dt = parse_dtype(dtype)?;
        self.with(|g| g.input(name, dt, &shape))
    }

    /// A weight (constant) with its values: a Float32Array (converted, or quantized for
    /// q8_0/q4_0 and f16), an Int32Array for i32, or a Uint8Array of raw bytes in `dtype`.
    pub fn weight(
        &self,
        name: &str,
        dtype: &str,
        shape: Vec<usize>,
        data: JsValue,
    ) -> Result<u32, JsErr> {
        let dt = parse_dtype(dtype)?;
        let data = js_typed(&data, name)?;
        let mut p = self.p.borrow_mut();
        typed::add_weight(&mut p, name, dt, &shape, data.as_typed())
            .map(|id| id.0 as u32)
            .map_err(to_js_error)
    }

    /// A state leaf: memory kept across runs on one device, given to each run as the input
    /// named `name` (a `State` from `runtime.createState` of this dtype and shape). Every op
    /// may read it; `setRows` on it writes those rows in place.
    pub fn state(&self, name: &str, dtype: &str, shape: Vec<usize>) -> Result<u32, JsErr> {
        let dt = parse_dtype(dtype)?;
        self.with(|g| g.state(name, dt, &shape))
    }

    /// Marks `t` as an output of runs.
    pub fn output(&self, t: u32) -> Result<(), JsErr> {
        self.p
            .borrow_mut()
            .graph_mut()
            .set_output(id(t))
            .map_err(to_js_error)
    }

    /// Names `t` (outputs are returned by name).
    #[wasm_bindgen(js_name = setName)]
    pub fn set_name(&self, t: u32, name: &str) -> Result<(), JsErr> {
        self.p
            .borrow_mut()
            .graph_mut()
            .set_name(id(t), name)
            .map_err(to_js_error)
    }

    /// Shape of `t` (innermost first, 4 dims).
    pub fn shape(&self, t: u32) -> Result<Vec<usize>, JsErr> {
        let p = self.p.borrow();
        p.graph()
            .get(id(t))
            .map(|t| t.ne.to_vec())
            .map_err(to_js_error)
    }

    /// Number of tensors in the graph.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.p.borrow().graph().len()
    }

    /// a * s.
    pub fn scale(&self, a: u32, s: f32) -> Result<u32, JsErr> {
        self.with(|g| g.scale(id(a), s))
    }
    /// w [k, m] × x [k, n] → [m, n] (ggml's mul_mat).
    pub fn matmul(&self, w: u32, x: u32) -> Result<u32, JsErr> {
        self.with(|g| g.matmul(id(w), id(x)))
    }
    /// Row softmax of a * scale + mask (mask optional).
    pub fn softmax(&self, a: u32, mask: Option<u32>, scale: Option<f32>) -> Result<u32, JsErr> {
        self.with(|g| g.softmax(id(a), mask.map(id), scale.unwrap_or(1.0)))
    }
    /// Fused attention: softmax(q·kᵀ * scale + mask) · v per head (q f32 [d, n_q, heads,
    /// batch]; k, v f32 or f16 [d, n_kv, kv_heads, batch]; mask optional); result [d_v,
    /// heads, n_q, batch]. `scale` defaults to 1/sqrt(d).
    pub fn attention(
        &self,
        q: u32,
        k: u32,
        v: u32,
        mask: Option<u32>,
        scale: Option<f32>,
    ) -> Result<u32, JsErr> {
        self.with(|g| {
            let d = g.get(id(q))?.ne[0];
            let scale = scale.unwrap_or(1.0 / (d.max(1) as f32).sqrt());
            g.attention(id(q), id(k), id(v), mask.map(id), scale)
        })
    }
    /// Layer norm over rows (no affine).
    pub fn norm(&self, a: u32, eps: f32) -> Result<u32, JsErr> {
        self.with(|g| g.norm(id(a), eps))
    }
    /// RMS norm over rows (no affine).
    #[wasm_bindgen(js_name = rmsNorm)]
    pub fn rms_norm(&self, a: u32, eps: f32) -> Result<u32, JsErr> {
        self.with(|g| g.rms_norm(id(a), eps))
    }
    /// min(max(a, min), max), element-wise.
    pub fn clamp(&self, a: u32, min: f32, max: f32) -> Result<u32, JsErr> {
        self.with(|g| g.clamp(id(a), min, max))
    }
    /// `dst` with row `idx[j]` replaced by row `j` of `rows` (f32), per batch: i32 `idx`
    /// `[n, c2, c3]` repeated over the batch dims (ggml's set_rows, the KV-cache write). A new
    /// tensor of dst's dtype (f32 or f16) and shape; the last of two rows aimed at one wins.
    #[wasm_bindgen(js_name = setRows)]
    pub fn set_rows(&self, dst: u32, rows: u32, idx: u32) -> Result<u32, JsErr> {
        self.with(|g| g.set_rows(id(dst), id(rows), id(idx)))
    }
    /// RoPE of a [headDim, heads, tokens] at i32 positions; mode "normal" or "neox";
    /// `factors` (optional): f32 [nDims / 2], each pair's frequency divided by its factor
    /// (Llama 3's `rope_freqs.weight`). Positional, as ggml's rope_ext.
    #[allow(clippy::too_many_arguments)]
    pub fn rope(
        &self,
        a: u32,
        pos: u32,
        n_dims: usize,
        mode: &str,
        freq_base: f32,
        freq_scale: f32,
        factors: Option<u32>,
    ) -> Result<u32, JsErr> {
        let mode = match mode {
            "normal" => RopeMode::Normal,
            "neox" => RopeMode::NeoX,
            _ => {
                return Err(JsErr::invalid(&format!(
                    "rope mode must be \"normal\" or \"neox\", got {mode:?}"
                )))
            }
        };
        self.with(|g| {
            g.rope(
                id(a),
                id(pos),
                factors.map(id),
                RopeParams {
                    n_dims,
                    mode,
                    freq_base,
                    freq_scale,
                },
            )
        })
    }
    /// a converted to dtype (contiguous).
    pub fn cpy(&self, a: u32, dtype: &str) -> Result<u32, JsErr> {
        let dt = parse_dtype(dtype)?;
        self.with(|g| g.cpy(id(a), dt))
    }
    /// A contiguous copy of a.
    pub fn cont(&self, a: u32) -> Result<u32, JsErr> {
        self.with(|g| g.cont(id(a)))
    }
    /// a and b joined along dim.
    pub fn concat(&self, a: u32, b: u32, dim: usize) -> Result<u32, JsErr> {
        self.with(|g| g.concat(id(a), id(b), dim))
    }
    /// Row sums.
    #[wasm_bindgen(js_name = sumRows)]
    pub fn sum_rows(&self, a: u32) -> Result<u32, JsErr> {
        self.with(|g| g.sum_rows(id(a)))
    }
    /// Row means.
    pub fn mean(&self, a: u32) -> Result<u32, JsErr> {
        self.with(|g| g.mean(id(a)))
    }
    /// Row argmax (i32).
    pub fn argmax(&self, a: u32) -> Result<u32, JsErr> {
        self.with(|g| g.argmax(id(a)))
    }
    /// Rows of a picked by i32 indices.
    #[wasm_bindgen(js_name = getRows)]
    pub fn get_rows(&self, a: u32, idx: u32) -> Result<u32, JsErr> {
        self.with(|g| g.get_rows(id(a), id(idx)))
    }
    /// a (contiguous) with a new shape.
    pub fn reshape(&self, a: u32, shape: Vec<usize>) -> Result<u32, JsErr> {
        self.with(|g| g.reshape(id(a), &shape))
    }
    /// A view: shape, byte strides and byte offset into a.
    pub fn view(
        &self,
        a: u32,
        shape: Vec<usize>,
        strides: Vec<usize>,
        offset: usize,
    ) -> Result<u32, JsErr> {
        self.with(|g| g.view(id(a), &shape, &strides, offset))
    }
    /// Dims moved: dim i of a becomes dim axes[i].
    pub fn permute(&self, a: u32, axes: Vec<usize>) -> Result<u32, JsErr> {
        let axes: [usize; 4] = axes
            .try_into()
            .map_err(|_| JsErr::invalid("permute takes 4 axes"))?;
        self.with(|g| g.permute(id(a), axes))
    }
    /// Dims 0 and 1 swapped.
    pub fn transpose(&self, a: u32) -> Result<u32, JsErr> {
        self.with(|g| g.transpose(id(a)))
    }
}

/// Devices plus a scheduler: runs graphs, splitting them between WebGPU and the CPU.
/// The JS methods of the unary ops, one per row of `graph::op`'s table.
macro_rules! js_unary_methods {
    ($($(#[doc = $doc:literal])* $var:ident: $method:ident / $js:ident, $lo:literal..$hi:literal, $wgsl:literal;)*) => {
        #[wasm_bindgen(js_class = Graph)]
        impl JsGraph {
            $(
                $(#[doc = $doc])*
                #[wasm_bindgen(js_name = $js)]
                pub fn $method(&self, a: u32) -> Result<u32, JsErr> {
                    self.with(|g| g.unary(crate::graph::UnaryOp::$var, id(a)))
                }
            )*
        }
    };
}
crate::unary_op_table!(js_unary_methods);

/// The JS methods of the binary ops (`b` broadcast onto `a`), one per row of the table.
macro_rules! js_binary_methods {
    ($($(#[doc = $doc:literal])* $var:ident: $method:ident / $js:ident, $wgsl:literal;)*) => {
        #[wasm_bindgen(js_class = Graph)]
        impl JsGraph {
            $(
                $(#[doc = $doc])*
                #[doc = " (b broadcast)."]
                #[wasm_bindgen(js_name = $js)]
                pub fn $method(&self, a: u32, b: u32) -> Result<u32, JsErr> {
                    self.with(|g| g.binary(crate::graph::BinaryOp::$var, id(a), id(b)))
                }
            )*
        }
    };
}
crate::binary_op_table!(js_binary_methods);

#[wasm_bindgen(js_name = Runtime)]
pub struct JsRuntime {
    rt: Rc<crate::runtime::Runtime>,
    /// Set by `dispose`: later calls fail with an `Error`.
    disposed: std::cell::Cell<bool>,
}

impl JsRuntime {
    /// The runtime, or an error once disposed.
    fn live(&self) -> Result<&Rc<crate::runtime::Runtime>, JsErr> {
        match self.disposed.get() {
            true => Err(JsErr::with_code(
                ErrorCode::Disposed,
                "this Runtime was disposed",
            )),
            false => Ok(&self.rt),
        }
    }
}

#[wasm_bindgen(js_class = Runtime)]
impl JsRuntime {
    /// Creates a runtime: `await Runtime.create({ device: "auto", costModel: true })`.
    pub async fn create(
        #[wasm_bindgen(unchecked_param_type = "RuntimeOptions")] options: JsValue,
    ) -> Result<JsRuntime, JsErr> {
        let (choice, cost_model) = Options::new(&options, &RUNTIME_OPTIONS)?.runtime()?;
        let rt = crate::create_runtime(choice, cost_model)
            .await
            .map_err(to_js_error)?;
        Ok(JsRuntime {
            rt: Rc::new(rt),
            disposed: Default::default(),
        })
    }

    /// Names of the devices in use, in priority order.
    #[wasm_bindgen(getter)]
    pub fn devices(&self) -> Vec<String> {
        self.rt.device_names()
    }

    /// Why devices are missing (e.g. "WebGPU: navigator.gpu is undefined").
    #[wasm_bindgen(getter)]
    pub fn notes(&self) -> Vec<String> {
        self.rt.notes().to_vec()
    }

    /// Runs `graph` with `inputs` ({name: typed array or GpuTensor}); resolves to
    /// {outputName: typed array}, or {outputName: GpuTensor} with `{ keepOnDevice: true }`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Outputs>")]
    pub fn run(
        &self,
        graph: &JsGraph,
        #[wasm_bindgen(unchecked_param_type = "Inputs")] inputs: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        let rt = self.live().cloned();
        let mut program = graph.p.borrow().clone();
        let parsed = parse_inputs(&mut program, &inputs);
        let keep = super::convert::prop(&options, "keepOnDevice")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        wasm_bindgen_futures::future_to_promise(async move {
            let rt = rt.map_err(JsValue::from)?;
            let inputs = parsed.map_err(JsValue::from)?;
            let outs = rt
                .run_values(&program, &inputs, keep)
                .await
                .map_err(|e| JsValue::from(to_js_error(e)))?;
            let o = Object::new();
            for (name, dtype, value) in outs {
                let v = match value {
                    Value::Bytes(bytes) => bytes_to_typed(&bytes, dtype)?,
                    Value::Device(t) => JsGpuTensor::register(t).into(),
                };
                set(&o, &name, &v).map_err(JsValue::from)?;
            }
            Ok(o.into())
        })
    }

    /// A state on one of the runtime's devices: `dtype` ("f32", "f16", "i32") values of
    /// `shape` (innermost first), zeroed. `options`: `{ device, name }`, `device` one of
    /// `devices` (default: the first, the GPU when the runtime has one).
    #[wasm_bindgen(js_name = createState)]
    pub fn create_state(
        &self,
        dtype: &str,
        shape: Vec<usize>,
        #[wasm_bindgen(unchecked_optional_param_type = "StateOptions")] options: JsValue,
    ) -> Result<super::state::JsState, JsErr> {
        let rt = self.live()?;
        let dt = parse_dtype(dtype)?;
        let name = super::convert::prop(&options, "name")
            .and_then(|v| v.as_string())
            .unwrap_or_else(|| "state".to_string());
        let names = rt.device_names();
        let device = match super::convert::prop(&options, "device") {
            None => 0,
            Some(v) => {
                let want = v
                    .as_string()
                    .ok_or_else(|| JsErr::invalid("options.device must be a device name"))?;
                names
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(&want))
                    .ok_or_else(|| {
                        JsErr::invalid(&format!(
                            "device {want:?} is not one of this runtime's ({})",
                            names.join(", ")
                        ))
                    })?
            }
        };
        let s = rt
            .create_state(&name, dt, &shape, device)
            .map_err(to_js_error)?;
        Ok(super::state::JsState::register(s))
    }

    /// Bytes copied between devices by every run so far: `{ perRunBytes, perRunWeightBytes,
    /// oneTimeBytes }`.
    #[wasm_bindgen(js_name = copyStats)]
    pub fn copy_stats(&self) -> Result<js_sys::Object, JsErr> {
        super::model::copy_stats_object(self.live()?.copy_stats())
    }

    /// The placement of `graph`: splits, which node runs where and why, copies, memory.
    pub fn explain(&self, graph: &JsGraph) -> Result<String, JsErr> {
        let program = graph.p.borrow();
        self.live()?.explain(&program).map_err(to_js_error)
    }

    /// Starts recording where this runtime's runs spend their time, per device, op and shapes
    /// (clears its last profile); other runtimes are not affected. While it records, each
    /// node runs alone and is waited for, so runs are slower.
    #[wasm_bindgen(js_name = profileStart)]
    pub fn profile_start(&self) -> Result<(), JsErr> {
        self.live()?.profile_start();
        Ok(())
    }

    /// Stops recording; returns this runtime's profile as a table, most time first.
    #[wasm_bindgen(js_name = profileStop)]
    pub fn profile_stop(&self) -> String {
        self.rt.profile_stop()
    }

    /// Frees the device memory of every graph run so far (they are re-planned on next run).
    pub fn clear(&self) {
        self.rt.clear()
    }

    /// Frees the device memory of every graph run so far; later calls fail with an `Error`
    /// (a run in flight finishes).
    pub fn dispose(&self) {
        self.disposed.set(true);
        self.rt.clear()
    }
}

/// A run's inputs by name: typed arrays and GpuTensors as values; States bound to the
/// graph's state leaves of their names (into `p`, this run's copy of the program).
fn parse_inputs(p: &mut Program, inputs: &JsValue) -> Result<HashMap<String, Value>, JsErr> {
    let mut out = HashMap::new();
    if inputs.is_undefined() || inputs.is_null() {
        return Ok(out);
    }
    let obj: &Object = inputs
        .dyn_ref()
        .ok_or_else(|| JsErr::invalid("inputs must be an object of typed arrays"))?;
    for key in Object::keys(obj).iter() {
        let name = key.as_string().unwrap_or_default();
        let value = Reflect::get(obj, &key).map_err(|_| JsErr::invalid("cannot read inputs"))?;
        if let Some(t) = JsGpuTensor::lookup(&value)? {
            out.insert(name, Value::Device(t));
            continue;
        }
        if let Some(s) = super::state::JsState::lookup(&value)? {
            p.bind_state(&name, &s).map_err(to_js_error)?;
            continue;
        }
        let dtype = p
            .graph()
            .iter()
            .find(|(_, t)| t.name == name && t.role == crate::graph::Role::Input)
            .map(|(_, t)| t.dtype)
            .ok_or_else(|| JsErr::invalid(&format!("the graph has no input named {name:?}")))?;
        let value = js_typed(&value, &name)?;
        let bytes = typed::typed_to_bytes(value.as_typed(), dtype, &name).map_err(to_js_error)?;
        out.insert(name.clone(), Value::Bytes(bytes));
    }
    Ok(out)
}

thread_local! {
    /// Every live `GpuTensor` by id: how an input object is recognised as one (wasm-bindgen
    /// cannot borrow an exported struct back from a plain `JsValue`).
    static GPU_TENSORS: RefCell<HashMap<u32, DeviceTensor>> = RefCell::new(HashMap::new());
    static NEXT_GPU_TENSOR: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

/// The property holding a `GpuTensor`'s id.
const GPU_TENSOR_ID: &str = "__webtensorGpuTensor";

/// A tensor a run left on its device (`run(graph, inputs, { keepOnDevice: true })`): pass it
/// as an input to a later run of the same runtime (it stays on the device), `read()` it, and
/// `dispose()` it to free its device memory. Any use after `dispose()` throws.
#[wasm_bindgen(js_name = GpuTensor)]
pub struct JsGpuTensor {
    id: u32,
    t: DeviceTensor,
}

impl JsGpuTensor {
    fn register(t: DeviceTensor) -> JsGpuTensor {
        let id = NEXT_GPU_TENSOR.with(|n| {
            let id = n.get();
            n.set(id.wrapping_add(1).max(1));
            id
        });
        GPU_TENSORS.with(|m| m.borrow_mut().insert(id, t.clone()));
        JsGpuTensor { id, t }
    }

    /// The tensor behind `value` when it is a `GpuTensor` (a disposed one included).
    fn lookup(value: &JsValue) -> Result<Option<DeviceTensor>, JsErr> {
        if !value.is_object() {
            return Ok(None);
        }
        let Some(id) = super::convert::prop(value, GPU_TENSOR_ID).and_then(|v| v.as_f64()) else {
            return Ok(None);
        };
        GPU_TENSORS
            .with(|m| m.borrow().get(&(id as u32)).cloned())
            .map(Some)
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this GpuTensor was disposed"))
    }
}

impl Drop for JsGpuTensor {
    fn drop(&mut self) {
        GPU_TENSORS.with(|m| m.borrow_mut().remove(&self.id));
    }
}

#[wasm_bindgen(js_class = GpuTensor)]
impl JsGpuTensor {
    /// Identifies the object as a GpuTensor (internal).
    #[wasm_bindgen(getter, js_name = __webtensorGpuTensor)]
    pub fn tensor_id(&self) -> u32 {
        self.id
    }

    /// Its values, read back: a Float32Array (f32, f16), Int32Array (i32) or Uint8Array (raw
    /// quantized bytes). Rejects after `dispose()`.
    pub fn read(&self) -> Promise {
        let t = self.t.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let bytes = t.read().await.map_err(|e| JsValue::from(to_js_error(e)))?;
            bytes_to_typed(&bytes, t.dtype()).map_err(JsValue::from)
        })
    }

    /// Frees its device memory; later uses throw.
    pub fn dispose(&self) {
        self.t.dispose();
    }

    /// Whether `dispose()` was called.
    #[wasm_bindgen(getter)]
    pub fn disposed(&self) -> bool {
        self.t.is_disposed()
    }

    /// Its dtype name ("f32", "i32", ...).
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.t.dtype().name().to_string()
    }

    /// Its shape (innermost first, 4 dims).
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Vec<usize> {
        self.t.shape().to_vec()
    }

    /// Name of the device holding it.
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> String {
        self.t.device().to_string()
    }
}
