// Helpers of the unary ops' WGSL expressions (graph/op.rs's table). shader.rs appends the
// generated `act(x, op)`, one case per table row (codes ACT_*, ACT_NONE: x), for the unary
// kernel and the fused epilogue.

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

// tanh saturates long before |x| = 15; clamping avoids exp overflow in some tanh lowerings.
fn tanh_safe(x: f32) -> f32 {
    return tanh(clamp(x, -15.0, 15.0));
}

fn gelu_tanh(x: f32) -> f32 {
    return 0.5 * x * (1.0 + tanh_safe(0.7978846 * x * (1.0 + 0.044715 * x * x)));
}

fn gelu_erf(x: f32) -> f32 {
    return 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
}
