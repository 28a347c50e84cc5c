//! `Tokenizer` for JS: the tokenizer a GGUF file names (`tokenizer.ggml.model`: `llama`
//! SentencePiece, `gpt2` byte-level BPE, `bert` WordPiece), its encode, decode and streaming
//! decoder. Thin wrapper over `crate::model::tokenizer::Tokenizer`.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Int32Array, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

use super::convert::JsErr;
use crate::error::ErrorCode;
use wasm_bindgen::JsCast;

use super::convert::{to_js_error, Options};
use crate::model::gguf::Gguf;
use crate::model::tokenizer::{StreamDecoder, Tokenizer as Tok};

#[wasm_bindgen(typescript_custom_section)]
const TS_TOKENIZER: &'static str = r#"
/** Options of `Tokenizer.encode`. */
export interface EncodeOptions {
  /** Add the BOS / EOS the file's metadata asks for (WordPiece: [CLS] / [SEP]); default true. */
  addSpecial?: boolean;
  /** Match control tokens written in the text (e.g. "<|eot_id|>") as one token each; default
   * false (user-defined tokens are matched always). */
  parseSpecial?: boolean;
}
/** Options of `Tokenizer.decode` and `Tokenizer.stream`. */
export interface DecodeOptions {
  /** Control tokens give their text (e.g. "<s>"); default false: they give nothing. */
  special?: boolean;
}
"#;

/// A tokenizer read from a GGUF file's metadata (a vocab-only GGUF is enough), exact against
/// llama.cpp's `llama_tokenize` / detokenizer.
#[wasm_bindgen]
pub struct Tokenizer {
    /// `None` once disposed.
    tok: RefCell<Option<Rc<Tok>>>,
    model: &'static str,
    len: usize,
}

#[wasm_bindgen]
impl Tokenizer {
    /// The tokenizer of GGUF bytes. Through the package, `Tokenizer.fromGguf(url)` fetches a
    /// URL first (js/engine.js, through the model cache). A malformed file, an unknown
    /// `tokenizer.ggml.model` or `tokenizer.ggml.pre`: an `Error` naming it.
    #[wasm_bindgen(js_name = fromGguf)]
    pub fn from_gguf(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] source: JsValue,
    ) -> Result<Tokenizer, JsErr> {
        let Some(a) = source.dyn_ref::<Uint8Array>() else {
            return Err(JsErr::invalid(if source.is_string() {
                "this build reads a Uint8Array of GGUF bytes: a URL is fetched by the package's \
                 Tokenizer.fromGguf (through its model cache)"
            } else {
                "source must be a URL string or a Uint8Array of GGUF bytes"
            }));
        };
        let bytes = a.to_vec();
        let g = Gguf::parse(&bytes).map_err(to_js_error)?;
        let tok = Tok::from_gguf(&g).map_err(to_js_error)?;
        let model = match tok {
            Tok::WordPiece(_) => "bert",
            Tok::SentencePiece(_) => "llama",
            Tok::Bpe(_) => "gpt2",
        };
        Ok(Tokenizer {
            len: tok.len(),
            model,
            tok: RefCell::new(Some(Rc::new(tok))),
        })
    }

    /// Token ids of `text`, as llama.cpp's `llama_tokenize(text, addSpecial, parseSpecial)`.
    pub fn encode(
        &self,
        text: &str,
        #[wasm_bindgen(unchecked_param_type = "EncodeOptions")] options: JsValue,
    ) -> Result<Vec<u32>, JsErr> {
        let tok = self.tok()?;
        let (add_special, parse_special) = {
            let o = Options::new(&options, &["addSpecial", "parseSpecial"])?;
            (o.flag("addSpecial", true)?, o.flag("parseSpecial", false)?)
        };
        Ok(tok.encode(text, add_special, parse_special))
    }

    /// The text of token ids (a `Uint32Array`, an `Int32Array` or an array of numbers): invalid
    /// UTF-8 becomes U+FFFD; an id outside the vocabulary is an `Error`.
    pub fn decode(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint32Array | Int32Array | number[]")] ids: JsValue,
        #[wasm_bindgen(unchecked_param_type = "DecodeOptions")] options: JsValue,
    ) -> Result<String, JsErr> {
        let tok = self.tok()?;
        let special = Options::new(&options, &["special"])?.flag("special", false)?;
        let ids = token_ids(&ids, self.len)?;
        Ok(tok.decode(&ids, special))
    }

    /// A streaming decoder: `push(id)` gives the text that id completes (bytes of a character
    /// split across tokens are held), `finish()` what is held (an incomplete character as
    /// U+FFFD). It keeps the vocabulary it needs: it works after `dispose()` of this.
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DecodeOptions")] options: JsValue,
    ) -> Result<TokenStream, JsErr> {
        let tok = self.tok()?;
        let special = Options::new(&options, &["special"])?.flag("special", false)?;
        Ok(TokenStream {
            len: self.len,
            dec: RefCell::new(Some(StreamDecoder::new(tok, special))),
        })
    }

    /// The text of one token as stored in the file (`undefined` outside the vocabulary).
    pub fn token(&self, id: u32) -> Result<Option<String>, JsErr> {
        Ok(self.tok()?.token(id).map(str::to_owned))
    }

    /// `tokenizer.ggml.model`: "llama" (SentencePiece), "gpt2" (byte-level BPE) or "bert"
    /// (WordPiece).
    #[wasm_bindgen(getter, unchecked_return_type = "'llama' | 'gpt2' | 'bert'")]
    pub fn model(&self) -> String {
        self.model.into()
    }

    /// The BPE pre-tokenizer's name (`tokenizer.ggml.pre`, "default" when absent); `undefined`
    /// for SentencePiece and WordPiece.
    #[wasm_bindgen(getter)]
    pub fn pre(&self) -> Option<String> {
        let tok = self.tok.borrow();
        tok.as_ref()?.pre_tokenizer().map(str::to_owned)
    }

    /// Number of tokens in the vocabulary.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        self.len
    }

    /// The BOS token id (WordPiece: [CLS]), or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn bos(&self) -> Option<u32> {
        self.specials().bos
    }

    /// The EOS token id (WordPiece: [SEP]), or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn eos(&self) -> Option<u32> {
        self.specials().eos
    }

    /// The end-of-turn token id, or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn eot(&self) -> Option<u32> {
        self.specials().eot
    }

    /// The padding token id, or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn pad(&self) -> Option<u32> {
        self.specials().pad
    }

    /// The unknown token id, or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn unk(&self) -> Option<u32> {
        self.specials().unk
    }

    /// Whether `encode` with `addSpecial` puts BOS first.
    #[wasm_bindgen(getter, js_name = addBos)]
    pub fn add_bos(&self) -> bool {
        self.tok
            .borrow()
            .as_ref()
            .is_some_and(|t| t.add_bos_eos().0)
    }

    /// Whether `encode` with `addSpecial` puts EOS last.
    #[wasm_bindgen(getter, js_name = addEos)]
    pub fn add_eos(&self) -> bool {
        self.tok
            .borrow()
            .as_ref()
            .is_some_and(|t| t.add_bos_eos().1)
    }

    /// Frees the vocabulary (streams made from it keep theirs); later calls fail with an
    /// `Error`.
    pub fn dispose(&self) {
        self.tok.borrow_mut().take();
    }

    fn tok(&self) -> Result<Rc<Tok>, JsErr> {
        self.tok
            .borrow()
            .clone()
            .ok_or_else(|| JsErr::with_code(ErrorCode::Disposed, "this Tokenizer was disposed"))
    }

    fn specials(&self) -> crate::model::tokenizer::Specials {
        self.tok
            .borrow()
            .as_ref()
            .map(|t| t.specials())
            .unwrap_or_default()
    }
}

/// `Tokenizer.stream()`'s decoder: one id at a time in, complete UTF-8 out.
#[wasm_bindgen]
pub struct TokenStream {
    dec: RefCell<Option<StreamDecoder<Rc<Tok>>>>,
    len: usize,
}

#[wasm_bindgen]
impl TokenStream {
    /// The text `id` completes (often "", while a character is incomplete).
    pub fn push(&self, id: JsValue) -> Result<String, JsErr> {
        let id = token_id(&id, self.len)?;
        let mut dec = self.dec.borrow_mut();
        let dec = dec.as_mut().ok_or_else(|| {
            JsErr::with_code(ErrorCode::Disposed, "this TokenStream was disposed")
        })?;
        Ok(dec.push(id))
    }

    /// What is held at the end (an incomplete character becomes U+FFFD); the stream can go on.
    pub fn finish(&self) -> Result<String, JsErr> {
        let mut dec = self.dec.borrow_mut();
        let dec = dec.as_mut().ok_or_else(|| {
            JsErr::with_code(ErrorCode::Disposed, "this TokenStream was disposed")
        })?;
        Ok(dec.finish())
    }

    /// Frees it; later calls fail with an `Error`.
    pub fn dispose(&self) {
        self.dec.borrow_mut().take();
    }
}

/// One token id: an integer in `0..len`.
fn token_id(v: &JsValue, len: usize) -> Result<u32, JsErr> {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x >= 0.0 && x < len as f64 => Ok(x as u32),
        Some(x) => Err(JsErr::invalid(&format!(
            "token id {x} is not in the vocabulary (0..{len})"
        ))),
        None => Err(JsErr::invalid(&format!(
            "a token id must be a number, got {}",
            v.js_typeof().as_string().unwrap_or_default()
        ))),
    }
}

/// Token ids from a `Uint32Array`, an `Int32Array` or an array of numbers, each checked.
fn token_ids(v: &JsValue, len: usize) -> Result<Vec<u32>, JsErr> {
    let check = |ids: Vec<u32>| match ids.iter().find(|&&id| id as usize >= len) {
        Some(id) => Err(JsErr::invalid(&format!(
            "token id {id} is not in the vocabulary (0..{len})"
        ))),
        None => Ok(ids),
    };
    if let Some(a) = v.dyn_ref::<Uint32Array>() {
        return check(a.to_vec());
    }
    if let Some(a) = v.dyn_ref::<Int32Array>() {
        let ids = a.to_vec();
        if let Some(id) = ids.iter().find(|&&id| id < 0) {
            return Err(JsErr::invalid(&format!(
                "token id {id} is not in the vocabulary (0..{len})"
            )));
        }
        return check(ids.into_iter().map(|id| id as u32).collect());
    }
    if Array::is_array(v) {
        return Array::from(v)
            .iter()
            .map(|x| token_id(&x, len))
            .collect::<Result<Vec<_>, _>>();
    }
    Err(JsErr::invalid(
        "ids must be a Uint32Array, an Int32Array or an array of numbers",
    ))
}
