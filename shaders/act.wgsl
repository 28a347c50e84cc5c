// Activations shared by the unary kernel and the fused epilogue: act(x, op) with op 0 none,
// 1 gelu (tanh), 2 gelu (erf), 3 silu, 4 relu (the unary kernel's u.x codes).

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit, as the CPU reference).
fn erf_approx(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * exp(-z * z + poly);
    return select(r - 1.0, 1.0 - r, x >= 0.0);
}

fn gelu_tanh(x: f32) -> f32 {
    // tanh saturates long before |u| = 15; clamping avoids exp overflow in some tanh lowerings.
    let u = clamp(0.7978846 * x * (1.0 + 0.044715 * x * x), -15.0, 15.0);
    return 0.5 * x * (1.0 + tanh(u));
}

fn act(x: f32, op: u32) -> f32 {
    switch op {
        case 0u: { return x; }
        case 1u: { return gelu_tanh(x); }
        case 2u: { return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752)); }
        case 3u: { return x / (1.0 + exp(-x)); }
        default: { return max(x, 0.0); }
    }
}
