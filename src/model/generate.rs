//! Text generation on a [`Decoder`]: a prompt's tokens prefilled (reusing the cache's
//! longest shared prefix, so a conversation's next turn runs only its new tokens), then one
//! sampled token a step ([`Sampler`]), streamed as text pieces that are whole UTF-8, until a
//! stop token, a stop string (matched across token boundaries: text that could begin one is
//! held back until it cannot), the token limit or the context's end. Each step completes
//! before the next starts, so a caller that stops pulling (an abort) leaves the model and its
//! cache consistent, ready for the next generation.

use std::rc::Rc;

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::model::decoder::Decoder;
use crate::model::sampler::{Sampler, SamplerOptions};
use crate::model::tokenizer::{StreamDecoder, Tokenizer};
use crate::runtime::Runtime;

/// How a generation runs.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// Most tokens generated (default 128).
    pub max_tokens: usize,
    /// How each token is picked.
    pub sampler: SamplerOptions,
    /// Tokens that end the generation (not emitted); `None`: the tokenizer's EOS and EOT.
    pub stop_tokens: Option<Vec<u32>>,
    /// Texts that end the generation where they first appear (not emitted).
    pub stop_strings: Vec<String>,
    /// Decode control tokens as their text (default false: they give no text).
    pub special: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_tokens: 128,
            sampler: SamplerOptions::default(),
            stop_tokens: None,
            stop_strings: Vec::new(),
            special: false,
        }
    }
}

/// Why a generation ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// [`GenerateOptions::max_tokens`] were generated.
    MaxTokens,
    /// A stop token was sampled.
    StopToken(u32),
    /// A stop string appeared in the text.
    StopString(String),
    /// The context is full.
    ContextFull,
    /// The caller ended it ([`Generation::abort`]: an aborted signal in the package).
    Aborted,
}

impl StopReason {
    /// A short name: `"length"`, `"stop"` (token or string), `"context"` or `"aborted"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::MaxTokens => "length",
            Self::StopToken(_) | Self::StopString(_) => "stop",
            Self::ContextFull => "context",
            Self::Aborted => "aborted",
        }
    }
}

/// Counts and timings of a generation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenerationStats {
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
    /// Of those, tokens already in the cache (not run again).
    pub reused_tokens: usize,
    /// Tokens generated (a stop token included).
    pub generated_tokens: usize,
    /// From the first pull to the first token sampled, ms.
    pub ttft_ms: f64,
    /// Prefill time, ms.
    pub prefill_ms: f64,
    /// Time of the decode steps, ms.
    pub decode_ms: f64,
    /// Decode steps run.
    pub decode_steps: usize,
}

impl GenerationStats {
    /// Prompt tokens run per second of prefill.
    pub fn prefill_tokens_per_s(&self) -> f64 {
        let run = self.prompt_tokens - self.reused_tokens;
        if self.prefill_ms > 0.0 {
            run as f64 * 1e3 / self.prefill_ms
        } else {
            0.0
        }
    }

    /// Decode steps per second.
    pub fn decode_tokens_per_s(&self) -> f64 {
        if self.decode_ms > 0.0 {
            self.decode_steps as f64 * 1e3 / self.decode_ms
        } else {
            0.0
        }
    }
}

/// Most stop strings one generation takes.
pub const MAX_STOP_STRINGS: usize = 64;

/// One generation in progress: pull its pieces with [`Generation::next`].
pub struct Generation {
    prompt: Option<Vec<u32>>,
    sampler: Sampler,
    stream: StreamDecoder<Rc<Tokenizer>>,
    stop_tokens: Vec<u32>,
    stop_strings: Vec<String>,
    max_tokens: usize,
    /// Logits of the next token, once the prompt ran.
    logits: Vec<f32>,
    /// The token sampled last, fed to the model at the next pull.
    pending: Option<u32>,
    generated: Vec<u32>,
    /// Decoded text not yet given out (it may begin a stop string).
    held: String,
    stop: Option<StopReason>,
    finished: bool,
    stats: GenerationStats,
    started: f64,
}

impl Generation {
    /// A generation of `prompt` (token ids) on `dec`, checked before anything runs: the
    /// sampler's options, a prompt of 1 to the context's tokens, ids in the vocabulary, and
    /// a tokenizer to decode with.
    pub fn new(dec: &Decoder, prompt: Vec<u32>, opts: GenerateOptions) -> Result<Self> {
        let tok = dec.tokenizer_rc().ok_or_else(|| {
            Error::InvalidArgument("the model file has no tokenizer to generate text with".into())
        })?;
        if prompt.is_empty() {
            return Err(Error::InvalidArgument("the prompt has no tokens".into()));
        }
        if prompt.len() > dec.context() {
            return Err(Error::InvalidArgument(format!(
                "the prompt's {} tokens do not fit the context of {}",
                prompt.len(),
                dec.context()
            )));
        }
        let n_vocab = dec.config().n_vocab;
        if let Some(&bad) = prompt.iter().find(|&&t| t as usize >= n_vocab) {
            return Err(Error::InvalidArgument(format!(
                "token {bad} is outside the {n_vocab}-token vocabulary"
            )));
        }
        if opts.max_tokens == 0 || opts.max_tokens > dec.context() {
            return Err(Error::InvalidArgument(format!(
                "max_tokens must be 1 to the context's {}, got {}",
                dec.context(),
                opts.max_tokens
            )));
        }
        if opts.stop_strings.len() > MAX_STOP_STRINGS {
            return Err(Error::InvalidArgument(format!(
                "{} stop strings: at most {MAX_STOP_STRINGS} (each is matched at every piece)",
                opts.stop_strings.len()
            )));
        }
        if opts.stop_strings.iter().any(String::is_empty) {
            return Err(Error::InvalidArgument("a stop string is empty".into()));
        }
        let specials = tok.specials();
        let stop_tokens = opts
            .stop_tokens
            .clone()
            .unwrap_or_else(|| specials.eos.into_iter().chain(specials.eot).collect());
        let mut sampler = Sampler::new(opts.sampler.clone())?;
        for &t in &prompt {
            sampler.accept(t);
        }
        Ok(Self {
            stats: GenerationStats {
                prompt_tokens: prompt.len(),
                ..GenerationStats::default()
            },
            prompt: Some(prompt),
            sampler,
            stream: StreamDecoder::new(tok, opts.special),
            stop_tokens,
            stop_strings: opts.stop_strings,
            max_tokens: opts.max_tokens,
            logits: Vec::new(),
            pending: None,
            generated: Vec::new(),
            held: String::new(),
            stop: None,
            finished: false,
            started: 0.0,
        })
    }

    /// Ends it now, at the caller's request: later pulls give nothing and the stop reason
    /// is [`StopReason::Aborted`] (unless it had already ended). Text held back (a possible
    /// stop string's start, an incomplete character) is dropped; the model stays consistent
    /// (the token sampled last was never run, so the next prompt shares the cache up to it).
    pub fn abort(&mut self) {
        if !self.finished {
            self.stop.get_or_insert(StopReason::Aborted);
            self.finished = true;
            self.held.clear();
        }
    }

    /// The sampler's options (its seed among them).
    pub fn sampler_options(&self) -> &SamplerOptions {
        self.sampler.options()
    }

    /// Why it ended (`None` while it runs).
    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop.as_ref()
    }

    /// Its counts and timings so far.
    pub fn stats(&self) -> &GenerationStats {
        &self.stats
    }

    /// The tokens generated so far (a stop token included).
    pub fn tokens(&self) -> &[u32] {
        &self.generated
    }

    /// The next piece of text (never empty), or `None` once the generation ended. Runs the
    /// prompt on the first call, then one decode step per token.
    pub async fn next(&mut self, rt: &Runtime, dec: &mut Decoder) -> Result<Option<String>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if self.stop.is_some() {
                self.finished = true;
                let mut rest = std::mem::take(&mut self.held);
                if !matches!(self.stop, Some(StopReason::StopString(_))) {
                    rest.push_str(&self.stream.finish());
                }
                if rest.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(rest));
            }
            if let Some(prompt) = self.prompt.take() {
                self.run_prompt(rt, dec, prompt).await?;
            } else if let Some(t) = self.pending.take() {
                if dec.len() >= dec.context() {
                    self.stop = Some(StopReason::ContextFull);
                    continue;
                }
                let t0 = now_ms();
                self.logits = dec.step(rt, t).await?;
                self.stats.decode_ms += now_ms() - t0;
                self.stats.decode_steps += 1;
            }
            let t = self.sampler.sample(&self.logits)?;
            self.sampler.accept(t);
            if self.generated.is_empty() {
                self.stats.ttft_ms = now_ms() - self.started;
            }
            self.generated.push(t);
            self.stats.generated_tokens += 1;
            if self.stop_tokens.contains(&t) {
                self.stop = Some(StopReason::StopToken(t));
                continue;
            }
            self.pending = Some(t);
            let piece = self.stream.push(t);
            if self.generated.len() >= self.max_tokens {
                self.stop = Some(StopReason::MaxTokens);
            }
            if let Some(out) = self.give(piece) {
                return Ok(Some(out));
            }
        }
    }

    /// Runs the prompt after the longest prefix of it the cache already holds (at least its
    /// last token runs again: its logits are the first sample's).
    async fn run_prompt(
        &mut self,
        rt: &Runtime,
        dec: &mut Decoder,
        prompt: Vec<u32>,
    ) -> Result<()> {
        self.started = now_ms();
        let shared = dec
            .tokens()
            .iter()
            .zip(&prompt)
            .take_while(|(a, b)| a == b)
            .count()
            .min(prompt.len() - 1);
        dec.truncate(shared);
        self.stats.reused_tokens = shared;
        let t0 = now_ms();
        self.logits = dec.prefill(rt, &prompt[shared..]).await?;
        self.stats.prefill_ms = now_ms() - t0;
        Ok(())
    }

    /// Adds a decoded piece to the held text; returns what can be given out now: everything
    /// before a stop string that appeared (which ends the generation), else all but the
    /// longest tail that begins some stop string.
    fn give(&mut self, piece: String) -> Option<String> {
        self.held.push_str(&piece);
        if self.held.is_empty() {
            return None;
        }
        if let Some((at, s)) = self
            .stop_strings
            .iter()
            .filter_map(|s| self.held.find(s.as_str()).map(|at| (at, s)))
            .min_by_key(|&(at, _)| at)
        {
            let s = s.clone();
            self.held.truncate(at);
            self.stop = Some(StopReason::StopString(s));
            return None; // given out when the stop is handled, at the next turn of the loop
        }
        let keep = self
            .stop_strings
            .iter()
            .map(|s| longest_prefix_tail(&self.held, s))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        if cut == 0 {
            return None;
        }
        let rest = self.held.split_off(cut);
        Some(std::mem::replace(&mut self.held, rest))
    }
}

/// Bytes of the longest tail of `text` that is a proper prefix of `stop` (on char bounds).
fn longest_prefix_tail(text: &str, stop: &str) -> usize {
    (1..stop.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop.is_char_boundary(n)
                && stop.as_bytes()[..n] == text.as_bytes()[text.len() - n..]
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::longest_prefix_tail;

    #[test]
    fn held_back_tails_are_prefixes_of_stop_strings() {
        assert_eq!(longest_prefix_tail("hello wor", "world"), 3);
        assert_eq!(longest_prefix_tail("hello", "world"), 0);
        assert_eq!(longest_prefix_tail("ab<", "</s>"), 1);
        assert_eq!(longest_prefix_tail("ab</s", "</s>"), 3);
        assert_eq!(longest_prefix_tail("", "x"), 0);
        assert_eq!(longest_prefix_tail("é", "éa"), 2);
    }
}
