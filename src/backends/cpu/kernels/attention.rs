//! Fused attention ([`Op::Attention`](crate::graph::Op::Attention)): `softmax(q·kᵀ * scale +
//! mask) · v` with an online softmax, one pass over K and V per block of query rows and no
//! score matrix in memory.
//!
//! Work is cut into blocks of up to [`BLOCK`] query rows that share a KV head (a query's
//! heads of one GQA group, or consecutive queries), so each K and V row (converted from f16
//! once) serves the whole block. Keys go by tiles of [`TILE`]: the block's scores for the
//! tile, one rescale of the running sums per row, then the values weighted in. A tile whose
//! mask is -inf for every row of the block is skipped (a causal mask's future).
//!
//! Threads share the blocks; when there are few blocks (a decode step: one query row per
//! head) the keys are also cut into ranges, each range's partial sums kept apart and
//! combined at the end in order, so two threads help even at batch 1. The cut depends on
//! the shape only: any thread count gives the same bits.

use super::elementwise::{exp_sum, scale_mask_max};
use super::simd::{exp_nonpos, f16_at, f16_row, F32x4};
use super::{aligned_f32, MIN_PAR_ELEMS};
use crate::backends::cpu::pool::Par;
use crate::backends::cpu::TensorView;
use crate::graph::DType;

/// Query rows per block: each K/V row loaded (and converted) serves this many.
const BLOCK: usize = 64;
/// Blocks of at most this many rows take one dot product per (row, key); larger ones
/// transpose the key tile once and run a GEMM-like loop. A decode step's block is its GQA
/// group (up to 8 query heads a KV head in llama-family models): there the transpose's
/// scalar moves (2 per key element) cost more than the dots' horizontal sums (32 × 128 on 8
/// KV heads, one query over 1024 to 4096 keys, 1 thread, Chromium: 1.2–1.25× faster than
/// with blocks of 2).
const DOT_ROWS: usize = 8;
/// Keys per tile: scores kept for this many at a time, per row of the block.
const TILE: usize = 32;
/// Keys per range at least, when the keys are cut over threads.
const MIN_SPLIT_KEYS: usize = 128;
/// With fewer blocks than this, the keys are cut too (up to this many items in all).
const SPLIT_UNITS: usize = 8;

/// A raw pointer that may cross to the pool's threads: every range writes its own part.
#[derive(Clone, Copy)]
struct Shared(*mut f32);
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// The pointer (a method, so closures capture the whole `Shared`).
    fn at(self, i: usize) -> *mut f32 {
        self.0.wrapping_add(i)
    }
}

/// The f32 row at `p` (f32 or f16 elements, packed), as f32: `p` itself when f32, else
/// converted into `buf` (four at a time).
///
/// # Safety
/// `p` readable for `buf.len()` elements of `dtype`.
#[inline(always)]
unsafe fn row_f32(p: *const u8, dtype: DType, buf: &mut [f32]) -> *const f32 {
    if dtype == DType::F32 {
        return p as *const f32;
    }
    unsafe { f16_row(p, buf) };
    buf.as_ptr()
}

/// Scores `s[r * TILE + j] = q_r · k_j` of the block's `n` rows (`q` rows `d` apart) and
/// `tile` key rows of `E` elements, `row_bytes` apart from `k`: one row by a dot with 4
/// accumulators; a GQA group's rows (up to [`DOT_ROWS`] a pass) with one accumulator each,
/// every key vector loaded and converted once for all of them. Out of line (one call a
/// tile): its eight row counts are code `run_block` need not hold.
///
/// # Safety
/// `q` readable for `n` rows of `d` f32, `s` writable for `n` rows of [`TILE`], `k` for
/// `tile` rows of `d` elements.
#[inline(never)]
unsafe fn key_scores<E: Elem>(
    q: *const f32,
    n: usize,
    k: *const u8,
    row_bytes: usize,
    tile: usize,
    d: usize,
    s: *mut f32,
) {
    let key = |j: usize| k.wrapping_add(j * row_bytes);
    unsafe {
        if n == 1 {
            for j in 0..tile {
                *s.add(j) = dot_e::<E>(q, key(j), d);
            }
            return;
        }
        let mut r = 0;
        while r < n {
            let (q, s) = (q.add(r * d), s.add(r * TILE));
            let c = (n - r).min(DOT_ROWS);
            let a = (q, k, row_bytes, tile, d, s);
            match c {
                1 => key_dots::<E, 1>(a),
                2 => key_dots::<E, 2>(a),
                3 => key_dots::<E, 3>(a),
                4 => key_dots::<E, 4>(a),
                5 => key_dots::<E, 5>(a),
                6 => key_dots::<E, 6>(a),
                7 => key_dots::<E, 7>(a),
                _ => key_dots::<E, 8>(a),
            }
            r += c;
        }
    }
}

/// `s[r * TILE + j] = q_r · k_j` for `R` rows and the `tile` keys `row_bytes` apart from `k`
/// (the arguments in that order, with `d`): each vector of a key loaded once, one
/// accumulator a row.
///
/// # Safety
/// `q` readable for `R` rows of `d` f32, `k` for `tile` rows of `d` elements, `s` writable
/// for `R` rows of [`TILE`].
#[inline(always)]
unsafe fn key_dots<E: Elem, const R: usize>(
    (q, k, row_bytes, tile, d, s): (*const f32, *const u8, usize, usize, usize, *mut f32),
) {
    for j in 0..tile {
        let k = k.wrapping_add(j * row_bytes);
        let mut acc = [F32x4::splat(0.0); R];
        let mut e = 0;
        unsafe {
            while e + 4 <= d {
                let kv = E::load4(k.add(e * E::BYTES));
                for (r, a) in acc.iter_mut().enumerate() {
                    *a = a.mul_add(F32x4::load(q.add(r * d + e)), kv);
                }
                e += 4;
            }
            for (r, a) in acc.iter().enumerate() {
                let mut t = a.hsum();
                for i in e..d {
                    t += *q.add(r * d + i) * E::load1(k.add(i * E::BYTES));
                }
                *s.add(r * TILE + j) = t;
            }
        }
    }
}

/// `a · b` over `k` packed f32 `a` and `E` elements `b`, each vector of `b` converted as it
/// is loaded: a lone query row's score reads each key once, so converting the row into a
/// buffer first only adds a store and a load a vector. The same sum in the same order as
/// `gemm::dot_f32` of `a` and `b` converted.
///
/// # Safety
/// `a` readable for `k` f32, `b` for `k` elements.
#[inline(always)]
unsafe fn dot_e<E: Elem>(a: *const f32, b: *const u8, k: usize) -> f32 {
    let at = |i: usize| b.wrapping_add(i * E::BYTES);
    unsafe {
        let z = F32x4::splat(0.0);
        let (mut s0, mut s1, mut s2, mut s3) = (z, z, z, z);
        let mut i = 0;
        while i + 16 <= k {
            s0 = s0.mul_add(F32x4::load(a.add(i)), E::load4(at(i)));
            s1 = s1.mul_add(F32x4::load(a.add(i + 4)), E::load4(at(i + 4)));
            s2 = s2.mul_add(F32x4::load(a.add(i + 8)), E::load4(at(i + 8)));
            s3 = s3.mul_add(F32x4::load(a.add(i + 12)), E::load4(at(i + 12)));
            i += 16;
        }
        while i + 4 <= k {
            s0 = s0.mul_add(F32x4::load(a.add(i)), E::load4(at(i)));
            i += 4;
        }
        let mut s = ((s0 + s1) + (s2 + s3)).hsum();
        while i < k {
            s += *a.add(i) * E::load1(at(i));
            i += 1;
        }
        s
    }
}

/// Whether `v` is `dtype` (f32 or f16) with packed rows at element-aligned addresses.
fn packed_rows(v: &TensorView) -> bool {
    match v.dtype {
        DType::F32 => aligned_f32(v) && v.nb[0] == 4,
        DType::F16 => {
            v.nb[0] == 2
                && (v.ptr_at([0; 4]) as usize).is_multiple_of(2)
                && v.nb.iter().all(|n| n.is_multiple_of(2))
        }
        _ => false,
    }
}

/// One block's running state per row: max, sum of weights, weighted values.
struct Scratch {
    q: Vec<f32>,
    k: Vec<f32>,
    kt: Vec<f32>,
    vt: Vec<f32>,
    s: Vec<f32>,
    acc: Vec<f32>,
    m: [f32; BLOCK],
    l: [f32; BLOCK],
}

impl Default for Scratch {
    fn default() -> Self {
        Self {
            q: Vec::new(),
            k: Vec::new(),
            kt: Vec::new(),
            vt: Vec::new(),
            s: Vec::new(),
            acc: Vec::new(),
            m: [f32::NEG_INFINITY; BLOCK],
            l: [0f32; BLOCK],
        }
    }
}

impl Scratch {
    /// Sized for blocks of up to `block_rows` rows, head sizes `d` (keys) and `d_v` (values):
    /// the transposed key tile only for blocks of more than [`DOT_ROWS`] rows.
    fn fit(&mut self, block_rows: usize, d: usize, d_v: usize) {
        let kt = if block_rows > DOT_ROWS { d * TILE } else { 0 };
        for (v, n) in [
            (&mut self.q, block_rows * d),
            (&mut self.k, d),
            (&mut self.kt, kt),
            (&mut self.vt, TILE * d_v),
            (&mut self.s, block_rows * TILE),
            (&mut self.acc, block_rows * d_v),
        ] {
            v.resize(n, 0.0);
        }
    }
}

thread_local! {
    /// Each thread's [`Scratch`], reused by every call.
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Fused attention; `false` when a layout does not fit (the reference runs instead).
#[allow(clippy::too_many_arguments)]
pub fn attention(
    par: Par,
    dst: &TensorView,
    q: &TensorView,
    k: &TensorView,
    v: &TensorView,
    mask: Option<&TensorView>,
    scale: f32,
) -> bool {
    let dst_ok = aligned_f32(dst) && dst.nb[0] == 4;
    let q_ok = aligned_f32(q) && q.nb[0] == 4;
    let mask_ok = mask.is_none_or(|m| aligned_f32(m) && m.nb[0] == 4);
    if !(dst_ok && q_ok && mask_ok && packed_rows(k) && packed_rows(v) && k.dtype == v.dtype) {
        return false;
    }
    let [d, n_q, heads, batch] = q.ne;
    let (n_kv, kv_heads) = (k.ne[1], k.ne[2]);
    let d_v = v.ne[0];
    let group = heads / kv_heads;
    let kv_group = batch / k.ne[3];
    // Rows of one (batch, KV head): `group * n_q`, query-major (a query's heads together).
    let rows = group * n_q;
    let blocks = rows.div_ceil(BLOCK);
    let units = batch * kv_heads * blocks;
    // Keys cut into `splits` ranges when there are fewer than SPLIT_UNITS blocks. The cut
    // depends on the shape alone, never on the thread count, so every thread count gives
    // the same bits.
    let splits = if units < SPLIT_UNITS {
        SPLIT_UNITS
            .div_ceil(units)
            .min(n_kv / MIN_SPLIT_KEYS)
            .max(1)
    } else {
        1
    };
    let items = units * splits;
    let per_item = BLOCK.min(rows) * n_kv.div_ceil(splits) * (d + d_v);
    let min_items = MIN_PAR_ELEMS.div_ceil(per_item.max(1));
    // Rows a block holds at most (a decode step's: the GQA group, often 1).
    let block_rows = BLOCK.min(rows);
    // Partial results of split ranges: per item and row, max, sum and d_v weighted values.
    let stride = 2 + d_v;
    let mut partial = vec![
        0f32;
        if splits > 1 {
            items * block_rows * stride
        } else {
            0
        }
    ];
    let out = Shared(partial.as_mut_ptr());
    let row_of = |unit: usize, r: usize| {
        let blk = unit % blocks;
        let kh = (unit / blocks) % kv_heads;
        let b = unit / (blocks * kv_heads);
        let row = blk * BLOCK + r;
        (b, kh * group + row % group, row / group)
    };
    let run_items = |w: &mut Scratch, range: std::ops::Range<usize>| {
        for item in range {
            let (unit, split) = (item / splits, item % splits);
            let blk = unit % blocks;
            let n_rows = BLOCK.min(rows - blk * BLOCK);
            let (b, h0, _) = row_of(unit, 0);
            let (kh, kb) = (h0 / group, b / kv_group);
            let per = n_kv.div_ceil(splits);
            let keys = (split * per).min(n_kv)..((split + 1) * per).min(n_kv);
            let masks: [Option<*const f32>; BLOCK] = std::array::from_fn(|r| {
                let (b, h, i) = row_of(unit, r.min(n_rows - 1));
                mask.map(|m| m.ptr_at([0, i % m.ne[1], h % m.ne[2], b % m.ne[3]]) as *const f32)
            });
            for r in 0..n_rows {
                let (b, h, i) = row_of(unit, r);
                let p = q.ptr_at([0, i, h, b]) as *const f32;
                // In range: row `i` of head `h` of q, d packed f32.
                unsafe { std::ptr::copy_nonoverlapping(p, w.q.as_mut_ptr().add(r * d), d) };
            }
            w.m = [f32::NEG_INFINITY; BLOCK];
            w.l = [0.0; BLOCK];
            w.acc[..n_rows * d_v].fill(0.0);
            // SAFETY: every pointer below is inside its view (indices within `ne`).
            unsafe { run_block(w, k, v, kh, kb, keys, n_rows, &masks, d, d_v, scale) };
            if splits == 1 {
                for r in 0..n_rows {
                    let (b, h, i) = row_of(unit, r);
                    write_row(dst, [h, i, b], &w.acc[r * d_v..(r + 1) * d_v], w.l[r]);
                }
            } else {
                for r in 0..n_rows {
                    // This item's slot: `block_rows * stride` floats, its own.
                    let p = out.at((item * block_rows + r) * stride);
                    unsafe {
                        *p = w.m[r];
                        *p.add(1) = w.l[r];
                        std::ptr::copy_nonoverlapping(w.acc.as_ptr().add(r * d_v), p.add(2), d_v);
                    }
                }
            }
        }
    };
    par.for_ranges(items, min_items, 1, |range| {
        // Each thread's scratch, kept between calls (a node's pieces allocated theirs anew).
        SCRATCH.with(|cell| {
            let mut cached = cell.borrow_mut();
            let w = cached.get_or_insert_with(Scratch::default);
            w.fit(block_rows, d, d_v);
            run_items(w, range);
        })
    });
    if splits > 1 {
        // Combine each row's ranges: rescale each to the largest max and add.
        let mut acc = vec![0f32; d_v];
        for unit in 0..units {
            let blk = unit % blocks;
            for r in 0..BLOCK.min(rows - blk * BLOCK) {
                let part = |s: usize| {
                    &partial[((unit * splits + s) * block_rows + r) * stride..][..stride]
                };
                let m = (0..splits).fold(f32::NEG_INFINITY, |a, s| a.max(part(s)[0]));
                let mut l = 0.0;
                acc.fill(0.0);
                if m > f32::NEG_INFINITY {
                    for s in 0..splits {
                        let p = part(s);
                        let c = exp1(p[0] - m);
                        l += p[1] * c;
                        for (a, &x) in acc.iter_mut().zip(&p[2..]) {
                            *a += x * c;
                        }
                    }
                }
                let (b, h, i) = row_of(unit, r);
                write_row(dst, [h, i, b], &acc, l);
            }
        }
    }
    true
}

/// Writes `acc / l` (zeros when `l` is 0: every key masked) to dst's row `(h, i, b)`.
#[inline(always)]
fn write_row(dst: &TensorView, [h, i, b]: [usize; 3], acc: &[f32], l: f32) {
    let o = dst.ptr_at([0, h, i, b]) as *mut f32;
    let inv = if l > 0.0 { 1.0 / l } else { 0.0 };
    for (e, a) in acc.iter().enumerate() {
        // In range: dst's rows are `acc.len()` (d_v) packed f32.
        unsafe { *o.add(e) = a * inv };
    }
}

/// Runs keys `keys` of KV head `kh` (batch `kb`) over the block's `n_rows` query rows in
/// `w.q`, updating `w.m`, `w.l` and `w.acc` (not normalized).
///
/// Scores: with few rows, one dot product per (row, key); with more, the tile's keys
/// transposed once (`w.kt`, d × [`TILE`]) so each row's scores are [`TILE`] / 4 vector
/// accumulators fed by one broadcast query element per step, GEMM-like. Values: the tile's
/// rows (converted once) added into each row's sums four vectors of `d_v` at a time.
///
/// # Safety
/// `kh < k.ne[2]`, `kb < k.ne[3]`, `keys` within `k.ne[1]`; each mask pointer readable for
/// `k.ne[1]` f32.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn run_block(
    w: &mut Scratch,
    k: &TensorView,
    v: &TensorView,
    kh: usize,
    kb: usize,
    keys: std::ops::Range<usize>,
    n_rows: usize,
    masks: &[Option<*const f32>; BLOCK],
    d: usize,
    d_v: usize,
    scale: f32,
) {
    let transposed = n_rows > DOT_ROWS;
    let mut j0 = keys.start;
    while j0 < keys.end {
        let tile = TILE.min(keys.end - j0);
        // A tile masked to -inf for every row adds nothing.
        let skip = masks[..n_rows].iter().all(|m| {
            m.is_some_and(|m| (0..tile).all(|j| unsafe { *m.add(j0 + j) } == f32::NEG_INFINITY))
        });
        if skip {
            j0 += tile;
            continue;
        }
        // Scores: s[r][j] = q_r · k_j.
        if transposed {
            for j in 0..tile {
                let kp = unsafe { row_f32(k.ptr_at([0, j0 + j, kh, kb]), k.dtype, &mut w.k) };
                for e in 0..d {
                    w.kt[e * TILE + j] = unsafe { *kp.add(e) };
                }
            }
            for e in 0..d {
                w.kt[e * TILE + tile..(e + 1) * TILE].fill(0.0);
            }
            // Rows in pairs: each key vector loaded serves two rows.
            let (q, kt, sp) = (w.q.as_ptr(), w.kt.as_ptr(), w.s.as_mut_ptr());
            let mut r = 0;
            unsafe {
                while r + 2 <= n_rows {
                    scores_rows::<2>(q.add(r * d), kt, d, sp.add(r * TILE));
                    r += 2;
                }
                if r < n_rows {
                    scores_rows::<1>(q.add(r * d), kt, d, sp.add(r * TILE));
                }
            }
        } else {
            // Each key read (and converted) once, where the cache holds it, for every row.
            let (q, sp, k0) = (w.q.as_ptr(), w.s.as_mut_ptr(), k.ptr_at([0, j0, kh, kb]));
            unsafe {
                if k.dtype == DType::F16 {
                    key_scores::<F16s>(q, n_rows, k0, k.nb[1], tile, d, sp);
                } else {
                    key_scores::<F32s>(q, n_rows, k0, k.nb[1], tile, d, sp);
                }
            }
        }
        // Online softmax: scale and mask, new max, rescale what was summed, tile weights.
        for (r, mask) in masks.iter().enumerate().take(n_rows) {
            let s = &mut w.s[r * TILE..r * TILE + tile];
            let sp = s.as_mut_ptr();
            let tile_max = unsafe { scale_mask_max(sp, sp, tile, scale, mask.map(|m| m.add(j0))) };
            let m_new = w.m[r].max(tile_max);
            if m_new == f32::NEG_INFINITY {
                // Every key so far masked: weights 0.
                s.fill(0.0);
                continue;
            }
            let c = exp1(w.m[r] - m_new);
            w.m[r] = m_new;
            if c != 1.0 {
                w.l[r] *= c;
                let vc = F32x4::splat(c);
                let acc = &mut w.acc[r * d_v..(r + 1) * d_v];
                let mut e = 0;
                while e + 4 <= d_v {
                    unsafe {
                        let p = acc.as_mut_ptr().add(e);
                        (F32x4::load(p) * vc).store(p);
                    }
                    e += 4;
                }
                for x in &mut acc[e..] {
                    *x *= c;
                }
            }
            w.l[r] += unsafe { exp_sum(s.as_mut_ptr(), tile, m_new) };
        }
        // Values: acc_r += s[r][j] * v_j, read where the cache holds them (f32, or a lone
        // row's f16 converted as loaded), else the tile's f16 rows converted once first.
        let (acc, sp) = (w.acc.as_mut_ptr(), w.s.as_ptr());
        let v0 = v.ptr_at([0, j0, kh, kb]);
        // (values, their row stride, whether they are f16: a lone row's are read as stored)
        let (v_rows, row_bytes, f16_values) = if v.dtype == DType::F16 && n_rows > 1 {
            for j in 0..tile {
                let vp = v.ptr_at([0, j0 + j, kh, kb]);
                unsafe { f16_row(vp, &mut w.vt[j * d_v..(j + 1) * d_v]) };
            }
            (w.vt.as_ptr() as *const u8, 4 * d_v, false)
        } else {
            (v0 as *const u8, v.nb[1], v.dtype == DType::F16)
        };
        let mut r = 0;
        unsafe {
            while r + 2 <= n_rows {
                weigh_values::<2, F32s>(
                    acc.add(r * d_v),
                    sp.add(r * TILE),
                    v_rows,
                    row_bytes,
                    tile,
                    d_v,
                );
                r += 2;
            }
            if r < n_rows {
                if f16_values {
                    weigh_values::<1, F16s>(
                        acc.add(r * d_v),
                        sp.add(r * TILE),
                        v_rows,
                        row_bytes,
                        tile,
                        d_v,
                    );
                } else {
                    weigh_values::<1, F32s>(
                        acc.add(r * d_v),
                        sp.add(r * TILE),
                        v_rows,
                        row_bytes,
                        tile,
                        d_v,
                    );
                }
            }
        }
        j0 += tile;
    }
}

/// `e^x` for one `x <= 0` by the vector [`exp_nonpos`] (the tiles' weights use it too): a
/// tile's rescale takes one per row, where libm's `exp` costs as much as a row's weights.
#[inline(always)]
fn exp1(x: f32) -> f32 {
    let mut o = [0f32; 4];
    unsafe { exp_nonpos(F32x4::splat(x)).store(o.as_mut_ptr()) };
    o[0]
}

/// `s_r[j] = q_r · kt[.., j]` for `R` rows (`q` rows `d` apart, `s` rows [`TILE`] apart) and
/// the [`TILE`] keys of a transposed tile (`kt[e * TILE + j]`): each half of the keys in
/// `R` × `TILE / 8` vector accumulators, one broadcast query element per row and step, so
/// each key vector loaded serves `R` rows. Every score is the same sum in the same order
/// whatever `R`.
///
/// # Safety
/// `q` readable for `R * d` f32, `kt` for `d * TILE`, `s` writable for `R` rows of `TILE`.
#[inline(always)]
unsafe fn scores_rows<const R: usize>(q: *const f32, kt: *const f32, d: usize, s: *mut f32) {
    const V: usize = TILE / 8;
    for half in 0..2 {
        let mut acc = [[F32x4::splat(0.0); V]; R];
        for e in 0..d {
            let row = unsafe { kt.add(e * TILE + half * TILE / 2) };
            let kv: [F32x4; V] = std::array::from_fn(|i| unsafe { F32x4::load(row.add(4 * i)) });
            for (r, a) in acc.iter_mut().enumerate() {
                let qe = F32x4::splat(unsafe { *q.add(r * d + e) });
                for (a, &k) in a.iter_mut().zip(&kv) {
                    *a = a.mul_add(qe, k);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            for (i, a) in a.iter().enumerate() {
                unsafe { a.store(s.add(r * TILE + half * TILE / 2 + 4 * i)) };
            }
        }
    }
}

/// `acc_r[e] += Σ_j p_r[j] * v_j[e]` over `tile` value rows `v_j` of `E` elements,
/// `row_bytes` apart from `v`, for `R` rows (`acc` rows `d_v` apart, `p` rows [`TILE`]
/// apart): 16 of `d_v` at a time in `R` × 4 vector accumulators, each value vector loaded
/// serving `R` rows; the rest of `d_v` row by row. Every sum is the same in the same order
/// whatever `R` and wherever the values are read (converted once or as loaded).
///
/// # Safety
/// `acc` writable for `R` rows of `d_v` f32, `p` readable for `R` rows of `tile`, `v` for
/// `tile` rows of `d_v` elements, `row_bytes` apart.
#[inline(always)]
unsafe fn weigh_values<const R: usize, E: Elem>(
    acc: *mut f32,
    p: *const f32,
    v: *const u8,
    row_bytes: usize,
    tile: usize,
    d_v: usize,
) {
    let at = |j: usize, e: usize| v.wrapping_add(j * row_bytes + e * E::BYTES);
    let mut e = 0;
    unsafe {
        while e + 16 <= d_v {
            let mut a: [[F32x4; 4]; R] = std::array::from_fn(|r| {
                std::array::from_fn(|i| F32x4::load(acc.add(r * d_v + e + 4 * i)))
            });
            for j in 0..tile {
                let vv: [F32x4; 4] = std::array::from_fn(|i| E::load4(at(j, e + 4 * i)));
                for (r, a) in a.iter_mut().enumerate() {
                    let pj = F32x4::splat(*p.add(r * TILE + j));
                    for (x, &v) in a.iter_mut().zip(&vv) {
                        *x = x.mul_add(pj, v);
                    }
                }
            }
            for (r, a) in a.iter().enumerate() {
                for (i, x) in a.iter().enumerate() {
                    x.store(acc.add(r * d_v + e + 4 * i));
                }
            }
            e += 16;
        }
        for r in 0..R {
            let (acc, p) = (acc.add(r * d_v), p.add(r * TILE));
            let mut e = e;
            while e + 4 <= d_v {
                let mut a = F32x4::load(acc.add(e));
                for j in 0..tile {
                    a = a.mul_add(F32x4::splat(*p.add(j)), E::load4(at(j, e)));
                }
                a.store(acc.add(e));
                e += 4;
            }
            while e < d_v {
                let mut a = *acc.add(e);
                for j in 0..tile {
                    a += *p.add(j) * E::load1(at(j, e));
                }
                *acc.add(e) = a;
                e += 1;
            }
        }
    }
}

/// Packed elements the value loop reads as f32: the cache's own (f32 or f16, converted as
/// loaded) or a tile converted once.
trait Elem {
    const BYTES: usize;
    /// Four elements at `p` as f32.
    ///
    /// # Safety
    /// `p` readable for `4 * BYTES` bytes (f32: 4-byte aligned).
    unsafe fn load4(p: *const u8) -> F32x4;
    /// One element at `p` as f32.
    ///
    /// # Safety
    /// As [`Elem::load4`], one element.
    unsafe fn load1(p: *const u8) -> f32;
}

/// f32 elements.
struct F32s;
/// Little-endian f16 elements.
struct F16s;

impl Elem for F32s {
    const BYTES: usize = 4;
    #[inline(always)]
    unsafe fn load4(p: *const u8) -> F32x4 {
        unsafe { F32x4::load(p as *const f32) }
    }
    #[inline(always)]
    unsafe fn load1(p: *const u8) -> f32 {
        unsafe { *(p as *const f32) }
    }
}

impl Elem for F16s {
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load4(p: *const u8) -> F32x4 {
        unsafe { F32x4::load_f16(p) }
    }
    #[inline(always)]
    unsafe fn load1(p: *const u8) -> f32 {
        unsafe { f16_at(p) }
    }
}
