//! webtensor: a tensor-graph runtime for the web.
//!
//! ggml's backend layer in Rust (registry → device → buffer type → buffer → backend), a CPU
//! backend with WASM SIMD128 kernels and a WebGPU backend with WGSL shaders behind the same
//! traits, compiled to WebAssembly for the browser and natively for tests and benchmarks.
//!
//! Layers, data flowing down: [`wasm`] (JS bindings, wasm32 only) → [`model`] → [`runtime`]
//! → [`graph`] / [`backend`] (the generic device API) → [`backends`] (the concrete devices);
//! the README's Layout has the whole map, which `tests/architecture.rs` checks.

pub mod backend;
pub mod backends;
// Matmul problems and the SIMD probe: the `bench` feature (the profiler is `backend::profile`).
#[cfg(feature = "bench")]
pub mod bench;
mod clock;
mod error;
pub mod graph;
pub mod model;
pub mod runtime;
mod sort;
// The op suite, scheduler checks and seeded RNG: unit tests, or the `testing` feature.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{At, DeviceFault, Error, ErrorCode, Field, ModelFault, ModelFile, Result};

/// A runtime on `choice`'s devices of this build: the composition root, the one place that
/// joins the concrete devices ([`backends::registry_for`], which asks for no GPU when the
/// choice is the CPU) to the [`runtime::Runtime`] that only sees them as devices.
pub async fn create_runtime(
    choice: runtime::DeviceChoice,
    cost_model: bool,
) -> Result<runtime::Runtime> {
    create_runtime_with(choice, cost_model, backends::DeviceOptions::default()).await
}

/// [`create_runtime`] with its devices planning by `opts` (benchmarks comparing kernel
/// selections or fusion in one run, tests forcing a kernel).
pub async fn create_runtime_with(
    choice: runtime::DeviceChoice,
    cost_model: bool,
    opts: backends::DeviceOptions,
) -> Result<runtime::Runtime> {
    let reg = backends::registry_with(choice.wants_gpu(), opts).await;
    runtime::Runtime::new(&reg, choice, cost_model).await
}

// The SIMD128 kernels are the point of the wasm build: never ship one without them
// (a RUSTFLAGS set by a script replaces .cargo/config.toml's `+simd128`).
#[cfg(all(target_arch = "wasm32", not(target_feature = "simd128")))]
compile_error!(
    "webtensor's wasm32 build needs `-C target-feature=+simd128` (see .cargo/config.toml)"
);
