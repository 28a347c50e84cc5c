//! `SentenceEmbedder` for JS: load a BERT GGUF (URL with progress, or bytes), embed texts,
//! explain the placement, dispose. Thin wrapper over `crate::model::bert`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Float32Array, Object, Promise, Uint8Array};
use wasm_bindgen::prelude::*;

use super::convert::JsErr;
use crate::error::ErrorCode;
use wasm_bindgen::JsCast;

use super::convert::{set, to_js_error, Options, RUNTIME_OPTIONS};
use crate::runtime::{ByteSource, Runtime};

#[wasm_bindgen(typescript_custom_section)]
const TS_EMBEDDER: &'static str = r#"
/** Options of `SentenceEmbedder.load`. */
export interface EmbedderOptions extends RuntimeOptions {
  /** Called as the model arrives ("download", in bytes), the devices start ("devices", 0 then
   * 1) and the weights are copied to the devices that keep them ("weights", in bytes). */
  onProgress?: (stage: string, loaded: number, total: number) => void;
}
"#;

/// Sentence embeddings (all-MiniLM-L6-v2 and other BERT GGUFs) on WebGPU and/or the CPU.
#[wasm_bindgen]
pub struct SentenceEmbedder {
    rt: Rc<Runtime>,
    /// `None` once disposed: dropping the model frees its weights' device buffers (a run in
    /// flight keeps them until it ends).
    model: RefCell<Option<Rc<Model>>>,
    dim: usize,
    max_tokens: usize,
}

type Model = crate::model::bert::SentenceEmbedder;

#[wasm_bindgen]
impl SentenceEmbedder {
    /// Loads a model from a `Uint8Array` of GGUF bytes. Through the package,
    /// `await SentenceEmbedder.load("models/minilm-q8_0.gguf", { device: "auto", onProgress })`
    /// fetches a URL first (js/engine.js, through the model cache).
    pub async fn load(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | Blob")] source: JsValue,
        #[wasm_bindgen(unchecked_param_type = "EmbedderOptions")] options: JsValue,
    ) -> Result<SentenceEmbedder, JsErr> {
        let o = Options::new(&options, &[&RUNTIME_OPTIONS[..], &["onProgress"]].concat())?;
        let ((choice, cost_model), progress) = (o.runtime()?, o.function("onProgress")?);
        let report = |stage: &str, loaded: f64, total: f64| {
            if let Some(f) = &progress {
                let _ = f.call3(&JsValue::NULL, &stage.into(), &loaded.into(), &total.into());
            }
        };
        // A URL is fetched by the package's `load` (js/engine.js: through the model cache,
        // with progress), which hands this the bytes.
        let src = byte_source(&source, "SentenceEmbedder.load")?;
        report("devices", 0.0, 1.0);
        let rt = crate::create_runtime(choice, cost_model)
            .await
            .map_err(to_js_error)?;
        report("devices", 1.0, 1.0);
        // The file stays in JS memory; each weight is copied from it to its device buffer.
        let model = crate::model::bert::SentenceEmbedder::load_from(
            &rt,
            src.as_ref(),
            &mut |done, total| report("weights", done as f64, total as f64),
        )
        .map_err(to_js_error)?;
        Ok(SentenceEmbedder {
            rt: Rc::new(rt),
            dim: model.dim(),
            max_tokens: model.max_tokens(),
            model: RefCell::new(Some(Rc::new(model))),
        })
    }

    /// L2-normalized embeddings, one `Float32Array` per text.
    #[wasm_bindgen(unchecked_return_type = "Promise<Float32Array[]>")]
    pub fn embed(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] texts: JsValue,
    ) -> Promise {
        // Checked here (not by the glue's conversion) so that a bad argument is a coded error.
        let texts: Option<Vec<String>> = texts
            .dyn_ref::<Array>()
            .and_then(|a| a.iter().map(|v| v.as_string()).collect());
        let Some(texts) = texts else {
            return Promise::reject(&JsErr::invalid("texts must be an array of strings").into());
        };
        let (rt, model) = (self.rt.clone(), self.model());
        wasm_bindgen_futures::future_to_promise(async move {
            let model = model?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let embs = model
                .embed(&rt, &refs)
                .await
                .map_err(|e| JsValue::from(to_js_error(e)))?;
            let out = Array::new();
            for e in embs {
                out.push(&Float32Array::from(e.as_slice()));
            }
            Ok(out.into())
        })
    }

    /// Token ids of a text, as the model sees it (`[CLS] ... [SEP]`, truncated): what
    /// `Tokenizer.encode` gives with its defaults, cut to the model's context.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, JsErr> {
        let mut ids = self.model()?.encode(&[text]).map_err(to_js_error)?;
        Ok(ids.pop().unwrap_or_default())
    }

    /// Which device runs what for the last batch shape embedded.
    pub fn explain(&self) -> Result<String, JsErr> {
        self.model()?.explain(&self.rt).map_err(to_js_error)
    }

    /// Bytes copied between devices by every embed so far: `{ perRunBytes, perRunWeightBytes,
    /// oneTimeBytes }` (per run: activations crossing a device boundary, and weights when a
    /// plan had to copy them each run; once: weights copied to a second device and kept).
    #[wasm_bindgen(js_name = copyStats)]
    pub fn copy_stats(&self) -> Result<Object, JsErr> {
        copy_stats_object(self.rt.copy_stats())
    }

    /// Starts recording where this model's embeds spend their time, per device, op and shapes
    /// (clears its last profile; its own runtime's, so other models and runtimes are not
    /// affected). While it records, each node runs alone and is waited for, so embeds are
    /// slower.
    #[wasm_bindgen(js_name = profileStart)]
    pub fn profile_start(&self) -> Result<(), JsErr> {
        self.model()?;
        self.rt.profile_start();
        Ok(())
    }

    /// Stops recording; returns the profile as a table, most time first.
    #[wasm_bindgen(js_name = profileStop)]
    pub fn profile_stop(&self) -> String {
        self.rt.profile_stop()
    }

    /// Embedding size (384 for MiniLM).
    #[wasm_bindgen(getter)]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Tokens per text at most (longer texts are truncated).
    #[wasm_bindgen(getter, js_name = maxTokens)]
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Devices in use, in priority order.
    #[wasm_bindgen(getter)]
    pub fn devices(&self) -> Vec<String> {
        self.rt.device_names()
    }

    /// Why devices are missing (e.g. no WebGPU adapter).
    #[wasm_bindgen(getter)]
    pub fn notes(&self) -> Vec<String> {
        self.rt.notes().to_vec()
    }

    /// Frees device memory (the weights and every planned shape); later calls fail with an
    /// `Error`.
    pub fn dispose(&self) {
        self.model.borrow_mut().take();
        self.rt.clear();
    }

    /// The model, or an error once disposed.
    fn model(&self) -> Result<Rc<Model>, JsErr> {
        self.model.borrow().clone().ok_or_else(|| {
            JsErr::with_code(ErrorCode::Disposed, "this SentenceEmbedder was disposed")
        })
    }
}

/// GGUF bytes held by JS (outside wasm memory), read a piece at a time.
pub(super) struct JsBytes(pub(super) Uint8Array);

impl ByteSource for JsBytes {
    fn len(&self) -> usize {
        self.0.length() as usize
    }
    fn read_into(&self, offset: usize, out: &mut [u8]) -> crate::error::Result<()> {
        crate::backend::check_range("read", offset, out.len(), self.len())?;
        let end = offset + out.len();
        self.0.subarray(offset as u32, end as u32).copy_to(out);
        Ok(())
    }
}

/// A `File` (or any `Blob`) read a slice at a time with `FileReaderSync` (workers only): the
/// file never has a whole copy in memory, in JS or in wasm; each weight's bytes go from the
/// file to their device buffer a chunk at a time.
struct JsBlob {
    blob: web_sys::Blob,
    reader: web_sys::FileReaderSync,
    len: usize,
}

impl ByteSource for JsBlob {
    fn len(&self) -> usize {
        self.len
    }
    fn read_into(&self, offset: usize, out: &mut [u8]) -> crate::error::Result<()> {
        crate::backend::check_range("read", offset, out.len(), self.len)?;
        let failed = |e: JsValue| {
            let why = e
                .dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
                .or_else(|| e.as_string())
                .unwrap_or_else(|| "no reason given".into());
            crate::error::Error::InvalidArgument(format!(
                "cannot read bytes {offset}..{} of the file: {why} (was it changed or removed?)",
                offset + out.len()
            ))
        };
        let slice = self
            .blob
            .slice_with_f64_and_f64(offset as f64, (offset + out.len()) as f64)
            .map_err(failed)?;
        let buf = self.reader.read_as_array_buffer(&slice).map_err(failed)?;
        let bytes = Uint8Array::new(&buf);
        if bytes.length() as usize != out.len() {
            return Err(failed(JsValue::from_str("the file is shorter than it was")));
        }
        bytes.copy_to(out);
        Ok(())
    }
}

/// Where a loader's GGUF bytes come from: a `Uint8Array` (kept in JS, read a piece at a time),
/// or a `File`/`Blob` read a slice at a time (in a worker: the package turns a Blob into bytes
/// first in the page's thread, where `FileReaderSync` does not exist). A URL is the package's
/// job (js/engine.js fetches it through the model cache).
pub(super) fn byte_source(source: &JsValue, call: &str) -> Result<Box<dyn ByteSource>, JsErr> {
    if let Some(a) = source.dyn_ref::<Uint8Array>() {
        return Ok(Box::new(JsBytes(a.clone())));
    }
    if let Some(blob) = source.dyn_ref::<web_sys::Blob>() {
        let reader = web_sys::FileReaderSync::new().map_err(|_| {
            JsErr::invalid(&format!(
                "{call} reads a File or Blob only in a worker (FileReaderSync): the package's \
                 {call} reads it in this thread"
            ))
        })?;
        let len = blob.size();
        if !(len >= 0.0 && len <= usize::MAX as f64) {
            return Err(JsErr::invalid(&format!(
                "the file's size {len} is out of range"
            )));
        }
        return Ok(Box::new(JsBlob {
            blob: blob.clone(),
            reader,
            len: len as usize,
        }));
    }
    if source.is_string() {
        return Err(JsErr::invalid(&format!(
            "this build loads GGUF bytes (a Uint8Array) or a File: a URL is fetched by the \
             package's {call} (through its model cache)"
        )));
    }
    Err(JsErr::invalid(
        "source must be a URL string, a Uint8Array or a File (Blob)",
    ))
}

/// `CopyStats` as a JS object.
pub(super) fn copy_stats_object(c: crate::runtime::CopyStats) -> Result<Object, JsErr> {
    let o = Object::new();
    set(&o, "perRunBytes", &(c.per_run_bytes as f64).into())?;
    set(
        &o,
        "perRunWeightBytes",
        &(c.per_run_weight_bytes as f64).into(),
    )?;
    set(&o, "oneTimeBytes", &(c.one_time_bytes as f64).into())?;
    Ok(o)
}
