//! Token sampling for text generation: picks the next token id from a step's logits.
//!
//! Owns the sampling chain (repetition / presence / frequency penalties over a window of
//! recent tokens, top-k, top-p, min-p, temperature, then a categorical draw) and its
//! deterministic random sequence. It follows llama.cpp's default chain
//! (`common/sampling.cpp`, `src/llama-sampler.cpp`): the same order, the same formulas and
//! the same defaults (`common_params_sampling`), so runs are comparable with llama.cpp's. It
//! knows nothing of models or devices: logits come in as a slice, a token id goes out. Stop
//! tokens and the maximum number of tokens belong to the generation loop that calls it.
//!
//! Reproducibility: the random sequence is a xoshiro256** generator seeded by splitmix64,
//! integer-only state, so the same seed gives the same draws on every platform (wasm32
//! included); each non-greedy [`Sampler::sample`] takes exactly one draw (53 bits, a uniform
//! `f64` in `[0, 1)`), the categorical is a cumulative sum in `f64` over the candidates
//! sorted by logit (ties: the lower id first).

use std::collections::{HashMap, VecDeque};

use crate::error::{Error, Result};

/// The sampling chain's settings. [`Default`] gives llama.cpp's defaults
/// (`common_params_sampling`), except the seed: llama.cpp's default seed means "random",
/// here it is `0` so that a run is reproducible unless a seed is chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplerOptions {
    /// Divides the logits before the draw; `0` samples greedily (the argmax of the penalized
    /// logits, the lowest id on ties; top-k, top-p and min-p are then skipped, as they never
    /// remove the argmax). Default `0.8` (llama.cpp's `temp`).
    pub temperature: f32,
    /// Keeps the `top_k` most likely tokens (ties at the cut: the lower ids); `0` = off.
    /// Default `40`.
    pub top_k: usize,
    /// Keeps the smallest prefix of the tokens sorted by probability whose cumulative
    /// probability reaches `top_p` (the token that crosses it included); `1.0` = off. Default
    /// `0.95`.
    pub top_p: f32,
    /// Keeps the tokens whose probability is at least `min_p` times the largest one; `0.0` =
    /// off. Default `0.05`.
    pub min_p: f32,
    /// Repetition penalty for tokens in the window: a positive logit is divided by it, a
    /// negative (or zero) one multiplied; `1.0` = off. Default `1.0`.
    pub repeat_penalty: f32,
    /// Subtracted from the logit of every token that occurs in the window; `0.0` = off.
    /// Default `0.0`.
    pub presence_penalty: f32,
    /// Subtracted from a token's logit once per occurrence in the window; `0.0` = off.
    /// Default `0.0`.
    pub frequency_penalty: f32,
    /// How many of the most recently accepted tokens the penalties look at; `0` turns the
    /// penalties off. Default `64`.
    pub penalty_last_n: usize,
    /// Seeds the random sequence: the same seed and inputs give the same tokens. Default `0`.
    pub seed: u64,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            penalty_last_n: 64,
            seed: 0,
        }
    }
}

impl SamplerOptions {
    /// Greedy decoding: temperature `0`, no cuts, no penalties.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            ..Self::default()
        }
    }

    /// Checks the options: a NaN or infinite value, a negative temperature, `top_p` outside
    /// `(0, 1]`, `min_p` outside `[0, 1)` or `repeat_penalty <= 0` is an
    /// [`Error::InvalidArgument`] naming the option and its value.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &str, v: f32, want: &str| {
            Err(Error::InvalidArgument(format!(
                "sampler option {name} = {v}: must be {want}"
            )))
        };
        if !self.temperature.is_finite() || self.temperature < 0.0 {
            return bad("temperature", self.temperature, "finite and >= 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", self.top_p, "in (0, 1]");
        }
        if !(self.min_p >= 0.0 && self.min_p < 1.0) {
            return bad("min_p", self.min_p, "in [0, 1)");
        }
        if !self.repeat_penalty.is_finite() || self.repeat_penalty <= 0.0 {
            return bad("repeat_penalty", self.repeat_penalty, "finite and > 0");
        }
        if !self.presence_penalty.is_finite() {
            return bad("presence_penalty", self.presence_penalty, "finite");
        }
        if !self.frequency_penalty.is_finite() {
            return bad("frequency_penalty", self.frequency_penalty, "finite");
        }
        Ok(())
    }

    fn penalties_off(&self) -> bool {
        self.penalty_last_n == 0
            || (self.repeat_penalty == 1.0
                && self.presence_penalty == 0.0
                && self.frequency_penalty == 0.0)
    }
}

/// xoshiro256** seeded by splitmix64: integer state only, the same sequence everywhere.
#[derive(Clone, Debug)]
struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        // splitmix64 never yields four zeros in a row, so the state is never all zero.
        Self {
            s: [next(), next(), next(), next()],
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform `f64` in `[0, 1)` from the top 53 bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Logit descending, then id ascending: a total order (no NaN reaches it).
fn by_logit_desc(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// Softmax weights `exp((l - max) / t)` in `f64`; the maximum itself weighs exactly 1 (so a
/// `+inf` maximum gives 1 to itself and 0 to the rest rather than NaN).
fn weights(cands: &[(u32, f32)], max: f32, t: f64, out: &mut Vec<f64>) {
    out.clear();
    out.extend(cands.iter().map(|&(_, l)| {
        if l == max {
            1.0
        } else {
            ((l as f64 - max as f64) / t).exp()
        }
    }));
}

/// The sampling chain with its state: the penalties' window and the random sequence.
#[derive(Clone, Debug)]
pub struct Sampler {
    opts: SamplerOptions,
    rng: Rng,
    /// The last `penalty_last_n` accepted tokens, oldest first.
    window: VecDeque<u32>,
    /// How often each token occurs in `window`.
    counts: HashMap<u32, u32>,
    /// The candidates the last sample drew from, with their probabilities.
    last: Vec<(u32, f32)>,
    /// Scratch: the candidate list and the weights.
    cands: Vec<(u32, f32)>,
    w: Vec<f64>,
}

impl Sampler {
    /// A sampler with `opts`, after [`SamplerOptions::validate`].
    pub fn new(opts: SamplerOptions) -> Result<Self> {
        opts.validate()?;
        Ok(Self {
            rng: Rng::new(opts.seed),
            opts,
            window: VecDeque::new(),
            counts: HashMap::new(),
            last: Vec::new(),
            cands: Vec::new(),
            w: Vec::new(),
        })
    }

    /// The options this sampler runs with.
    pub fn options(&self) -> &SamplerOptions {
        &self.opts
    }

    /// Applies the repetition, presence and frequency penalties of the accepted window to
    /// `logits` in place, as llama.cpp does: for each token with `count > 0` occurrences in
    /// the window, `l = l <= 0 ? l * repeat : l / repeat`, then
    /// `l -= count * frequency + presence`. Ids outside `logits` are skipped.
    pub fn apply_penalties(&self, logits: &mut [f32]) {
        if self.opts.penalties_off() {
            return;
        }
        for (&id, &count) in &self.counts {
            if let Some(l) = logits.get_mut(id as usize) {
                *l = self.penalize(*l, count);
            }
        }
    }

    fn penalize(&self, l: f32, count: u32) -> f32 {
        let o = &self.opts;
        let l = if l <= 0.0 {
            l * o.repeat_penalty
        } else {
            l / o.repeat_penalty
        };
        l - (count as f32 * o.frequency_penalty + o.presence_penalty)
    }

    /// Greedy without penalties: [`first_max`] (what `sample`'s general path picks, without
    /// its candidate list: a decode step's 151936 logits in 47 us natively, against 137 us).
    fn greedy(&mut self, logits: &[f32]) -> Result<u32> {
        self.last.clear();
        let id = first_max(logits).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "sampler: none of the {} logits is a number above -inf",
                logits.len()
            ))
        })?;
        self.last.push((id, 1.0));
        Ok(id)
    }

    /// Picks the next token from `logits` (one per vocabulary id, any length >= 1): the
    /// penalties from the accepted history, then top-k, top-p, min-p (on the penalized
    /// logits, before temperature, as in llama.cpp's chain), temperature, and a draw. NaN
    /// logits count as `-inf`; when no logit is left finite or `+inf` (all `-inf`/NaN, or an
    /// empty slice) it is an [`Error::InvalidArgument`]. Temperature `0` takes the argmax
    /// (the lowest id on ties) and no draw. The token is not accepted: call
    /// [`Sampler::accept`] with whatever token is fed next.
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32> {
        if logits.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "sampler: {} logits exceed the u32 id range",
                logits.len()
            )));
        }
        if self.opts.temperature == 0.0 && self.opts.penalties_off() {
            return self.greedy(logits);
        }
        let mut cands = std::mem::take(&mut self.cands);
        cands.clear();
        cands.extend(
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| (i as u32, if l.is_nan() { f32::NEG_INFINITY } else { l })),
        );
        if !self.opts.penalties_off() {
            for (&id, &count) in &self.counts {
                if let Some(c) = cands.get_mut(id as usize) {
                    c.1 = self.penalize(c.1, count);
                }
            }
        }
        // -inf can never be drawn; dropping it here also finds the all -inf/NaN case.
        cands.retain(|c| c.1 > f32::NEG_INFINITY);
        if cands.is_empty() {
            self.cands = cands;
            self.last.clear();
            return Err(Error::InvalidArgument(format!(
                "sampler: none of the {} logits is a number above -inf",
                logits.len()
            )));
        }

        let o = &self.opts;
        if o.temperature == 0.0 {
            // The first maximum in id order (cands is in id order here).
            let mut best = cands[0];
            for &c in &cands[1..] {
                if c.1 > best.1 {
                    best = c;
                }
            }
            self.last.clear();
            self.last.push((best.0, 1.0));
            self.cands = cands;
            return Ok(best.0);
        }

        // top-k: partial selection, then sort only the k kept.
        if o.top_k > 0 && o.top_k < cands.len() {
            cands.select_nth_unstable_by(o.top_k - 1, by_logit_desc);
            cands.truncate(o.top_k);
        }
        cands.sort_unstable_by(by_logit_desc);

        // top-p: softmax (temperature 1) over what is left; keep up to the first that reaches p.
        if o.top_p < 1.0 {
            weights(&cands, cands[0].1, 1.0, &mut self.w);
            let sum: f64 = self.w.iter().sum();
            let p = o.top_p as f64;
            let mut cum = 0.0;
            let mut keep = cands.len();
            for (i, &w) in self.w.iter().enumerate() {
                cum += w / sum;
                if cum >= p {
                    keep = i + 1;
                    break;
                }
            }
            cands.truncate(keep);
        }

        // min-p: p_i >= min_p * p_max, in logits: l_i >= l_max + ln(min_p).
        if o.min_p > 0.0 {
            let min_logit = cands[0].1 as f64 + (o.min_p as f64).ln();
            let keep = cands
                .iter()
                .position(|c| (c.1 as f64) < min_logit)
                .unwrap_or(cands.len())
                .max(1);
            cands.truncate(keep);
        }

        // temperature and the draw.
        weights(&cands, cands[0].1, o.temperature as f64, &mut self.w);
        let sum: f64 = self.w.iter().sum();
        let target = self.rng.next_f64() * sum;
        let mut cum = 0.0;
        // Fallback for rounding (target within an ulp of sum): the last token of weight > 0.
        let mut pick = self.w.iter().rposition(|&w| w > 0.0).unwrap_or(0);
        for (i, &w) in self.w.iter().enumerate() {
            cum += w;
            if cum > target {
                pick = i;
                break;
            }
        }
        self.last.clear();
        self.last.extend(
            cands
                .iter()
                .zip(&self.w)
                .map(|(&(id, _), &w)| (id, (w / sum) as f32)),
        );
        let id = cands[pick].0;
        self.cands = cands;
        Ok(id)
    }

    /// Records a token that was generated or fed (the penalties' window keeps the last
    /// `penalty_last_n`).
    pub fn accept(&mut self, id: u32) {
        let n = self.opts.penalty_last_n;
        if n == 0 {
            return;
        }
        if self.window.len() >= n {
            if let Some(old) = self.window.pop_front() {
                if let Some(c) = self.counts.get_mut(&old) {
                    *c -= 1;
                    if *c == 0 {
                        self.counts.remove(&old);
                    }
                }
            }
        }
        self.window.push_back(id);
        *self.counts.entry(id).or_insert(0) += 1;
    }

    /// Forgets the history and restarts the random sequence from the seed.
    pub fn reset(&mut self) {
        self.window.clear();
        self.counts.clear();
        self.last.clear();
        self.rng = Rng::new(self.opts.seed);
    }

    /// The candidate set and probabilities the last sample drew from (sorted by probability,
    /// descending; ties by id), for tests and UIs. After a greedy sample: the argmax alone with
    /// probability 1; after an error: empty.
    pub fn last_candidates(&self) -> &[(u32, f32)] {
        &self.last
    }
}

/// The id of the first maximum of `v`, NaN and -inf never chosen; `None` when no value is
/// above -inf. The maximum in 8 independent lanes (`f32::max` passes over NaN), then the
/// first id holding it: two vectorizable passes, where one compare-and-keep loop is a chain
/// of dependent, mispredicted branches (3x slower over a 151936-word vocabulary).
pub fn first_max(v: &[f32]) -> Option<u32> {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let chunks = v.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (m, &l) in lanes.iter_mut().zip(c) {
            *m = m.max(l);
        }
    }
    let top = rest
        .iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, &l| m.max(l));
    if top > f32::NEG_INFINITY {
        v.iter().position(|&l| l == top).map(|i| i as u32)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_matches_reference_xoshiro256starstar() {
        // splitmix64 from 0: its first output is 0xE220A8397B1DCDAF (the reference value).
        let r = Rng::new(0);
        assert_eq!(r.s[0], 0xE220_A839_7B1D_CDAF);
        // xoshiro256** from the state {1, 2, 3, 4}: the reference implementation's outputs.
        let mut r = Rng { s: [1, 2, 3, 4] };
        let want: [u64; 10] = [
            11520,
            0,
            1509978240,
            1215971899390074240,
            1216172134540287360,
            607988272756665600,
            16172922978634559625,
            8476171486693032832,
            10595114339597558777,
            2904607092377533576,
        ];
        for w in want {
            assert_eq!(r.next_u64(), w);
        }
        // next_f64 is in [0, 1).
        let mut r = Rng::new(7);
        for _ in 0..10_000 {
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn window_counts_track_the_last_n() {
        let mut s = Sampler::new(SamplerOptions {
            penalty_last_n: 3,
            repeat_penalty: 2.0,
            ..SamplerOptions::default()
        })
        .unwrap();
        for id in [1, 2, 1, 3, 3] {
            s.accept(id);
        }
        // The window is [1, 3, 3].
        assert_eq!(s.window, VecDeque::from([1, 3, 3]));
        assert_eq!(s.counts.get(&1), Some(&1));
        assert_eq!(s.counts.get(&2), None);
        assert_eq!(s.counts.get(&3), Some(&2));
    }
}
