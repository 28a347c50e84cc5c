//! The token sampler against hand-computed reference sets and distributions: greedy, top-k,
//! top-p, min-p, the penalties' formulas, seeded reproducibility, a chi-square check of the
//! draw, and errors for bad options and logits. Natively and on wasm32 (Node), where the
//! golden seeded run checks that the random sequence is the same on every platform.

use webtensor::model::sampler::{Sampler, SamplerOptions};
use webtensor::Error;

/// Temperature 1 and every cut and penalty off: the plain softmax draw.
fn plain() -> SamplerOptions {
    SamplerOptions {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        repeat_penalty: 1.0,
        presence_penalty: 0.0,
        frequency_penalty: 0.0,
        penalty_last_n: 64,
        seed: 1,
    }
}

/// The ids of the last sample's candidate set, in the sampler's order.
fn kept(opts: SamplerOptions, logits: &[f32]) -> Vec<u32> {
    let mut s = Sampler::new(opts).unwrap();
    let id = s.sample(logits).unwrap();
    let ids: Vec<u32> = s.last_candidates().iter().map(|c| c.0).collect();
    assert!(
        ids.contains(&id),
        "drew {id} outside its candidates {ids:?}"
    );
    ids
}

/// Probabilities 0.2, 0.1, 0.05, 0.5, 0.15 for ids 0..5: sorted, ids 3, 0, 4, 1, 2 with
/// cumulative sums 0.5, 0.7, 0.85, 0.95, 1.0.
fn vector_b() -> Vec<f32> {
    [0.2f32, 0.1, 0.05, 0.5, 0.15]
        .iter()
        .map(|p| p.ln())
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn greedy_is_argmax_first_on_ties() {
    let mut s = Sampler::new(SamplerOptions::greedy()).unwrap();
    assert_eq!(s.sample(&[1.0, 5.0, 5.0, 2.0]).unwrap(), 1);
    assert_eq!(s.sample(&[-3.0, -1.0, -2.0]).unwrap(), 1);
    assert_eq!(s.sample(&[7.0]).unwrap(), 0);
    assert_eq!(s.sample(&[f32::NAN, 0.5, f32::NAN, 0.5]).unwrap(), 1);
    assert_eq!(s.last_candidates(), &[(1, 1.0)]);
}

/// Greedy without penalties takes a one-pass path over the logits (eight lanes, then the
/// first id holding the maximum); with a penalty that changes nothing yet (no token
/// accepted) it goes through the candidate list. Both pick the same id on long vectors with
/// ties far apart, NaN, infinities and signed zeros.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn greedy_fast_path_picks_what_the_candidate_list_picks() {
    let general = SamplerOptions {
        repeat_penalty: 1.1,
        ..SamplerOptions::greedy()
    };
    let mut x = 0x2545_f491_u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for case in 0..40 {
        let n = 1 + (next() % 3000) as usize;
        let mut logits: Vec<f32> = (0..n)
            .map(|_| (next() % 2001) as f32 / 100.0 - 10.0)
            .collect();
        // Ties at two random places, specials sprinkled.
        let (a, b) = ((next() as usize) % n, (next() as usize) % n);
        let top = if case % 5 == 0 { f32::INFINITY } else { 20.5 };
        logits[a] = top;
        logits[b] = top;
        for _ in 0..n / 50 {
            let i = (next() as usize) % n;
            if logits[i] != top {
                logits[i] = [f32::NAN, f32::NEG_INFINITY, -0.0, 0.0][(next() % 4) as usize];
            }
        }
        if case % 7 == 0 {
            // Nothing above -inf but signed zeros: the first zero either way.
            for l in logits.iter_mut() {
                if l.is_finite() && *l != 0.0 {
                    *l = f32::NEG_INFINITY;
                }
            }
            let i = (next() as usize) % n;
            logits[i] = if case % 2 == 0 { -0.0 } else { 0.0 };
        }
        let fast = Sampler::new(SamplerOptions::greedy())
            .unwrap()
            .sample(&logits);
        let slow = Sampler::new(general.clone()).unwrap().sample(&logits);
        match (fast, slow) {
            (Ok(f), Ok(s)) => assert_eq!(f, s, "case {case}: n {n}, ties at {a} and {b}"),
            (f, s) => panic!("case {case}: {f:?} vs {s:?}"),
        }
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn temperature_zero_ignores_cuts_and_seed() {
    let logits = [0.3, 2.0, -1.0, 2.0, 1.9, 0.0];
    for (top_k, top_p, min_p, seed) in [
        (0, 1.0, 0.0, 0),
        (1, 0.1, 0.9, 5),
        (2, 0.5, 0.5, 99),
        (100, 0.99, 0.01, u64::MAX),
    ] {
        let mut s = Sampler::new(SamplerOptions {
            temperature: 0.0,
            top_k,
            top_p,
            min_p,
            seed,
            ..SamplerOptions::default()
        })
        .unwrap();
        for _ in 0..5 {
            assert_eq!(s.sample(&logits).unwrap(), 1);
        }
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn top_p_keeps_the_prefix_that_first_reaches_p() {
    let b = vector_b();
    let top_p = |p: f32| SamplerOptions {
        top_p: p,
        ..plain()
    };
    assert_eq!(kept(top_p(0.4), &b), [3]);
    // The token that crosses p is kept.
    assert_eq!(kept(top_p(0.6), &b), [3, 0]);
    assert_eq!(kept(top_p(0.69), &b), [3, 0]);
    assert_eq!(kept(top_p(0.71), &b), [3, 0, 4]);
    assert_eq!(kept(top_p(0.8), &b), [3, 0, 4]);
    assert_eq!(kept(top_p(0.9), &b), [3, 0, 4, 1]);
    assert_eq!(kept(top_p(0.99), &b), [3, 0, 4, 1, 2]);
    assert_eq!(kept(top_p(1.0), &b), [3, 0, 4, 1, 2]);

    // Exact boundary: four equal logits are 0.25 each, exactly; 0.25 + 0.25 reaches 0.5.
    let flat = [0.0f32; 4];
    assert_eq!(kept(top_p(0.5), &flat), [0, 1]);
    assert_eq!(kept(top_p(0.25), &flat), [0]);
    assert_eq!(kept(top_p(0.26), &flat), [0, 1]);
    assert_eq!(kept(top_p(0.51), &flat), [0, 1, 2]);

    // The kept set's probabilities are renormalized: 0.5 / 0.7 and 0.2 / 0.7.
    let mut s = Sampler::new(top_p(0.6)).unwrap();
    s.sample(&b).unwrap();
    let c = s.last_candidates();
    assert!(
        (c[0].1 - 0.5 / 0.7).abs() < 1e-6 && (c[1].1 - 0.2 / 0.7).abs() < 1e-6,
        "{c:?}"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn top_p_runs_after_top_k_on_renormalized_probabilities() {
    // Top-3 of vector_b: 0.5, 0.2, 0.15 renormalized to 0.588, 0.235, 0.176, cumulative
    // 0.588, 0.824: p = 0.8 stops at 2 (over the whole vocabulary it would keep 3).
    let opts = SamplerOptions {
        top_k: 3,
        top_p: 0.8,
        ..plain()
    };
    assert_eq!(kept(opts, &vector_b()), [3, 0]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn top_k_keeps_exactly_k_lower_ids_first_on_ties() {
    let logits = [1.0, 3.0, 2.0, 3.0, 0.0, 2.0];
    let top_k = |k: usize| SamplerOptions {
        top_k: k,
        ..plain()
    };
    assert_eq!(kept(top_k(1), &logits), [1]);
    assert_eq!(kept(top_k(2), &logits), [1, 3]);
    // Ties at the cut (ids 2 and 5 at logit 2.0): the lower id is kept.
    assert_eq!(kept(top_k(3), &logits), [1, 3, 2]);
    assert_eq!(kept(top_k(4), &logits), [1, 3, 2, 5]);
    assert_eq!(kept(top_k(6), &logits), [1, 3, 2, 5, 0, 4]);
    assert_eq!(kept(top_k(1000), &logits), [1, 3, 2, 5, 0, 4]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn top_k_on_a_large_vocabulary_matches_a_full_sort() {
    // 150k pseudo-random logits (an LCG; only the values matter) with repeats.
    let n = 150_000;
    let mut x: u64 = 12345;
    let logits: Vec<f32> = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 40) % 20_000) as f32 / 1000.0 - 10.0
        })
        .collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| {
        logits[b as usize]
            .total_cmp(&logits[a as usize])
            .then(a.cmp(&b))
    });
    let opts = SamplerOptions {
        top_k: 40,
        ..plain()
    };
    assert_eq!(kept(opts, &logits), order[..40]);
    // The defaults (top-k 40, top-p 0.95, min-p 0.05) keep a prefix of that order.
    let with_defaults = kept(SamplerOptions::default(), &logits);
    assert!(!with_defaults.is_empty() && with_defaults[..] == order[..with_defaults.len()]);
    // No top-k: the whole vocabulary is sorted and top-p cuts it.
    let opts = SamplerOptions {
        top_p: 0.5,
        ..plain()
    };
    let cut = kept(opts, &logits);
    assert!(cut.len() > 1 && cut.len() < n && cut[..] == order[..cut.len()]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn min_p_keeps_those_at_least_min_p_times_the_max() {
    // vector_b: p_max = 0.5; ratios 0.4 (id 0), 0.3 (id 4), 0.2 (id 1), 0.1 (id 2).
    let b = vector_b();
    let min_p = |p: f32| SamplerOptions {
        min_p: p,
        ..plain()
    };
    assert_eq!(kept(min_p(0.5), &b), [3]);
    assert_eq!(kept(min_p(0.39), &b), [3, 0]);
    assert_eq!(kept(min_p(0.25), &b), [3, 0, 4]);
    assert_eq!(kept(min_p(0.201), &b), [3, 0, 4]);
    assert_eq!(kept(min_p(0.199), &b), [3, 0, 4, 1]);
    assert_eq!(kept(min_p(0.05), &b), [3, 0, 4, 1, 2]);
    // The max always stays.
    assert_eq!(kept(min_p(0.999), &[0.0, 0.0, -1.0]), [0, 1]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn penalties_match_llama_cpp_formulas() {
    let opts = SamplerOptions {
        repeat_penalty: 1.5,
        presence_penalty: 0.3,
        frequency_penalty: 0.2,
        penalty_last_n: 4,
        ..plain()
    };
    let mut s = Sampler::new(opts).unwrap();
    // The window keeps the last 4: [2, 7, 2, 1] (5 has left it); 9 is outside the logits.
    for id in [5, 2, 9, 2, 7, 2, 1] {
        s.accept(id);
    }
    let mut l = [1.0f32, -2.0, 3.0, 0.5, 0.0, 4.0, -1.0, 0.0];
    s.apply_penalties(&mut l);
    let want = [
        1.0,
        -2.0 * 1.5 - (0.2 + 0.3),      // id 1: once, negative: multiplied
        3.0 / 1.5 - (2.0 * 0.2 + 0.3), // id 2: twice, positive: divided
        0.5,
        0.0,
        4.0, // id 5: left the window
        -1.0,
        0.0 * 1.5 - (0.2 + 0.3), // id 7: once, zero: multiplied
    ];
    for (i, (g, w)) in l.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-6, "id {i}: {g} != {w}");
    }

    // The draw sees the penalized logits: its probabilities are their softmax.
    s.sample(&[1.0, -2.0, 3.0, 0.5, 0.0, 4.0, -1.0, 0.0])
        .unwrap();
    let m = want.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let z: f32 = want.iter().map(|w| (w - m).exp()).sum();
    for &(id, p) in s.last_candidates() {
        let expect = (want[id as usize] - m).exp() / z;
        assert!((p - expect).abs() < 1e-6, "id {id}: {p} != {expect}");
    }

    // reset() forgets the window.
    s.reset();
    let mut l2 = [1.0f32, -2.0, 3.0];
    s.apply_penalties(&mut l2);
    assert_eq!(l2, [1.0, -2.0, 3.0]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn penalties_steer_greedy_and_window_zero_turns_them_off() {
    let logits = [2.0, 1.5, 0.0];
    for (last_n, want) in [(8, 1), (0, 0)] {
        let mut s = Sampler::new(SamplerOptions {
            repeat_penalty: 2.0,
            penalty_last_n: last_n,
            ..SamplerOptions::greedy()
        })
        .unwrap();
        s.accept(0);
        // 2.0 / 2 = 1.0 < 1.5 when the window holds token 0.
        assert_eq!(s.sample(&logits).unwrap(), want, "penalty_last_n {last_n}");
    }
    // Presence penalty alone, and a negative one (encourages repeats).
    let mut s = Sampler::new(SamplerOptions {
        presence_penalty: -1.0,
        ..SamplerOptions::greedy()
    })
    .unwrap();
    s.accept(2);
    assert_eq!(s.sample(&logits).unwrap(), 0);
    s.accept(2);
    let mut l = logits;
    s.apply_penalties(&mut l);
    assert_eq!(l, [2.0, 1.5, 1.0]);
}

fn run(opts: SamplerOptions, steps: usize) -> Vec<u32> {
    let mut s = Sampler::new(opts).unwrap();
    (0..steps)
        .map(|step| {
            // Logits that change each step, over 50 tokens.
            let logits: Vec<f32> = (0..50)
                .map(|i| ((i * 7 + step * 3) % 11) as f32 * 0.4 - (i as f32) * 0.01)
                .collect();
            let id = s.sample(&logits).unwrap();
            s.accept(id);
            id
        })
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn seeded_runs_are_identical_and_seeds_differ() {
    let opts = |seed| SamplerOptions {
        seed,
        repeat_penalty: 1.1,
        ..SamplerOptions::default()
    };
    let a = run(opts(42), 200);
    let b = run(opts(42), 200);
    assert_eq!(a, b);
    let c = run(opts(43), 200);
    assert_ne!(a, c);
    // The run is not degenerate: it visits several tokens.
    let mut distinct = a.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() > 5, "{distinct:?}");

    // A golden prefix: the same seed gives these tokens on every platform (wasm32 included).
    assert_eq!(a[..16], GOLDEN_SEED_42);
}

const GOLDEN_SEED_42: [u32; 16] = [3, 4, 46, 20, 13, 2, 19, 9, 37, 32, 19, 3, 40, 24, 25, 7];

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reset_restarts_the_sequence() {
    let logits: Vec<f32> = (0..20).map(|i| (i % 5) as f32 * 0.3).collect();
    let mut s = Sampler::new(SamplerOptions {
        seed: 7,
        presence_penalty: 0.5,
        ..plain()
    })
    .unwrap();
    let draw = |s: &mut Sampler| -> Vec<u32> {
        (0..200)
            .map(|_| {
                let id = s.sample(&logits).unwrap();
                s.accept(id);
                id
            })
            .collect()
    };
    let first = draw(&mut s);
    let second = draw(&mut s);
    assert_ne!(first, second);
    s.reset();
    assert_eq!(draw(&mut s), first);
}

/// Chi-square statistic of `draws` draws against softmax(logits / t).
fn chi_square(logits: &[f32], t: f32, draws: usize, seed: u64) -> f64 {
    let mut s = Sampler::new(SamplerOptions {
        temperature: t,
        seed,
        ..plain()
    })
    .unwrap();
    let mut counts = vec![0usize; logits.len()];
    for _ in 0..draws {
        counts[s.sample(logits).unwrap() as usize] += 1;
    }
    let m = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let w: Vec<f64> = logits
        .iter()
        .map(|&l| ((l as f64 - m) / t as f64).exp())
        .collect();
    let z: f64 = w.iter().sum();
    counts
        .iter()
        .zip(&w)
        .map(|(&c, &w)| {
            let e = draws as f64 * w / z;
            (c as f64 - e).powi(2) / e
        })
        .sum()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn draws_match_softmax_chi_square() {
    // 5 tokens: 4 degrees of freedom, whose survival function is e^(-x/2) (1 + x/2):
    // P(chi2 > 34) = e^-17 * 18 = 7.5e-7, so a correct sampler fails each check with
    // probability < 1e-6 (per seed). The smallest expected count here is > 500.
    let logits = [1.0f32, 0.2, -0.5, 2.0, 0.0];
    for (t, seed) in [(1.0, 3), (1.0, 4), (0.7, 5)] {
        let x = chi_square(&logits, t, 20_000, seed);
        assert!(x < 34.0, "temperature {t}, seed {seed}: chi2 = {x}");
    }
    // And it can fail: the same draws against a different distribution (t = 1 vs 0.7) are far
    // outside the bound.
    let mut s = Sampler::new(SamplerOptions { seed: 3, ..plain() }).unwrap();
    let mut counts = [0usize; 5];
    for _ in 0..20_000 {
        counts[s.sample(&logits).unwrap() as usize] += 1;
    }
    let w: Vec<f64> = logits.iter().map(|&l| (l as f64 / 0.7).exp()).collect();
    let z: f64 = w.iter().sum();
    let wrong: f64 = counts
        .iter()
        .zip(&w)
        .map(|(&c, &w)| {
            let e = 20_000.0 * w / z;
            (c as f64 - e).powi(2) / e
        })
        .sum();
    assert!(wrong > 34.0, "{wrong}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bad_options_are_errors() {
    let cases: Vec<(&str, SamplerOptions)> = vec![
        (
            "temperature",
            SamplerOptions {
                temperature: -0.1,
                ..plain()
            },
        ),
        (
            "temperature",
            SamplerOptions {
                temperature: f32::NAN,
                ..plain()
            },
        ),
        (
            "temperature",
            SamplerOptions {
                temperature: f32::INFINITY,
                ..plain()
            },
        ),
        (
            "top_p",
            SamplerOptions {
                top_p: 0.0,
                ..plain()
            },
        ),
        (
            "top_p",
            SamplerOptions {
                top_p: 1.01,
                ..plain()
            },
        ),
        (
            "top_p",
            SamplerOptions {
                top_p: f32::NAN,
                ..plain()
            },
        ),
        (
            "min_p",
            SamplerOptions {
                min_p: -0.01,
                ..plain()
            },
        ),
        (
            "min_p",
            SamplerOptions {
                min_p: 1.0,
                ..plain()
            },
        ),
        (
            "min_p",
            SamplerOptions {
                min_p: f32::NAN,
                ..plain()
            },
        ),
        (
            "repeat_penalty",
            SamplerOptions {
                repeat_penalty: 0.0,
                ..plain()
            },
        ),
        (
            "repeat_penalty",
            SamplerOptions {
                repeat_penalty: -1.0,
                ..plain()
            },
        ),
        (
            "repeat_penalty",
            SamplerOptions {
                repeat_penalty: f32::NAN,
                ..plain()
            },
        ),
        (
            "presence_penalty",
            SamplerOptions {
                presence_penalty: f32::NAN,
                ..plain()
            },
        ),
        (
            "frequency_penalty",
            SamplerOptions {
                frequency_penalty: f32::INFINITY,
                ..plain()
            },
        ),
    ];
    for (name, opts) in cases {
        assert!(opts.validate().is_err(), "{opts:?}");
        match Sampler::new(opts.clone()) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains(name), "{msg}"),
            other => panic!("{opts:?}: {other:?}"),
        }
    }
    assert!(SamplerOptions::default().validate().is_ok());
    assert!(SamplerOptions::greedy().validate().is_ok());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn defaults_are_llama_cpp_s() {
    let d = SamplerOptions::default();
    assert_eq!(
        (d.temperature, d.top_k, d.top_p, d.min_p, d.penalty_last_n),
        (0.8, 40, 0.95, 0.05, 64)
    );
    assert_eq!(
        (d.repeat_penalty, d.presence_penalty, d.frequency_penalty),
        (1.0, 0.0, 0.0)
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bad_logits_are_errors_not_panics() {
    for opts in [SamplerOptions::default(), SamplerOptions::greedy(), plain()] {
        let mut s = Sampler::new(opts).unwrap();
        for logits in [
            vec![],
            vec![f32::NAN; 5],
            vec![f32::NEG_INFINITY; 3],
            vec![f32::NAN, f32::NEG_INFINITY],
        ] {
            match s.sample(&logits) {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("{logits:?}: {other:?}"),
            }
            assert!(s.last_candidates().is_empty());
        }
        // NaN is -inf: the one number is drawn.
        assert_eq!(
            s.sample(&[f32::NAN, f32::NEG_INFINITY, -50.0, f32::NAN])
                .unwrap(),
            2
        );
        // +inf wins without NaN probabilities.
        assert_eq!(s.sample(&[0.0, f32::INFINITY, 3.0]).unwrap(), 1);
        assert!(s.last_candidates().iter().all(|c| c.1.is_finite()));
        // Huge penalties cannot make a NaN either.
        s.accept(0);
        assert!(s.sample(&[f32::MAX, -f32::MAX]).is_ok());
    }
}
