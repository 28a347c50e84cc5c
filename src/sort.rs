//! One sort for the crate's cold paths (a load, a plan, a profile, a calibration).
//!
//! Every `sort_by_key` / `sort_unstable` call compiles its own copy of the standard library's
//! sort for its element and closure types: 5–15 KB of wasm each, about 75 KB for a dozen
//! call sites. [`by_key`] sorts `(key, index)` pairs instead, one type for every caller, and
//! then moves the items into that order: the sort is compiled once, and what each caller
//! adds is the small permutation loop. Ties keep their order (the index breaks them), so it
//! is a stable sort. Hot paths that sort per step (the sampler's candidates) keep their own.

/// A sort key: two unsigned numbers compared in turn. Build one with [`key`], [`key2`],
/// [`f64_key`] or [`desc`].
pub(crate) type Key = (u64, u64);

/// The key of one unsigned number.
pub(crate) fn key(k: u64) -> Key {
    (k, 0)
}

/// The key of two numbers, the first compared first.
pub(crate) fn key2(a: u64, b: u64) -> Key {
    (a, b)
}

/// An `f64`'s key, in `f64::total_cmp`'s order (−NaN < −∞ < … < −0 < +0 < … < +∞ < NaN).
pub(crate) fn f64_key(x: f64) -> Key {
    let bits = x.to_bits();
    key(if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    })
}

/// The same key in the opposite order.
pub(crate) fn desc(k: Key) -> Key {
    (!k.0, !k.1)
}

/// Sorts `items` by `key` (stably: equal keys keep their order).
pub(crate) fn by_key<T>(items: &mut [T], mut key: impl FnMut(&T) -> Key) {
    let mut order: Vec<(Key, usize)> = items.iter().enumerate().map(|(i, x)| (key(x), i)).collect();
    sort_pairs(&mut order);
    // Position j takes the item now at order[j].1: follow each cycle of that permutation,
    // swapping, and mark a position done by setting its source to usize::MAX.
    for start in 0..order.len() {
        let mut j = start;
        loop {
            let from = std::mem::replace(&mut order[j].1, usize::MAX);
            if from == usize::MAX || from == start {
                break;
            }
            items.swap(j, from);
            j = from;
        }
    }
}

/// Sorts a handful of items (a few devices, their names) by insertion: quadratic, and a few dozen
/// bytes of code where the standard sort is kilobytes.
pub(crate) fn few<T: Ord>(v: &mut [T]) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && v[j - 1] > v[j] {
            v.swap(j - 1, j);
            j -= 1;
        }
    }
}

// The one instantiation of the standard sort (not inlined into each caller's copy of `by_key`).
#[inline(never)]
fn sort_pairs(v: &mut [(Key, usize)]) {
    v.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn sorts_stably_as_the_standard_sort() {
        let mut rng = Rng::new(7);
        for n in [0, 1, 2, 3, 10, 100, 1000] {
            let items: Vec<(u32, u32)> = (0..n).map(|i| (rng.next_u32() % 7, i)).collect();
            let mut want = items.clone();
            want.sort_by_key(|x| x.0);
            let mut got = items.clone();
            by_key(&mut got, |x| key(x.0 as u64));
            assert_eq!(got, want, "n={n}");
            // descending, still stable
            let mut want = items.clone();
            want.sort_by_key(|x| std::cmp::Reverse(x.0));
            let mut got = items;
            by_key(&mut got, |x| desc(key(x.0 as u64)));
            assert_eq!(got, want, "n={n} desc");
        }
    }

    #[test]
    fn f64_keys_follow_total_cmp() {
        let xs = [
            f64::NAN,
            1.5,
            -0.0,
            0.0,
            f64::NEG_INFINITY,
            -2.0,
            f64::INFINITY,
            -f64::NAN,
            1e-300,
            -1e-300,
        ];
        let mut want = xs.to_vec();
        want.sort_by(f64::total_cmp);
        let mut got = xs.to_vec();
        by_key(&mut got, |&x| f64_key(x));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
    }

    #[test]
    fn two_part_keys_and_few() {
        let mut v = vec![(3u64, 1u64), (1, 9), (3, 0), (1, 2)];
        by_key(&mut v, |&(a, b)| key2(a, b));
        assert_eq!(v, [(1, 2), (1, 9), (3, 0), (3, 1)]);
        let mut u = vec![5, 1, 5, 3, 1];
        few(&mut u);
        assert_eq!(u, [1, 1, 3, 5, 5]);
        let mut s = vec!["b", "c", "a", "b"];
        few(&mut s);
        assert_eq!(s, ["a", "b", "b", "c"]);
    }
}
