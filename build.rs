//! The threaded wasm build (feature `threads`, built with `+atomics`): wasm-bindgen's thread
//! support needs the module's memory shared and imported (each Web Worker instantiates the
//! module on the page's memory) and the TLS symbols exported (each thread sets up its own
//! thread-locals). Current rustc no longer passes these to wasm-ld itself. Link arguments
//! here reach only this crate's final links (the cdylib and the test binaries), so adding
//! them rebuilds no dependency.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let threaded = std::env::var_os("CARGO_FEATURE_THREADS").is_some()
        && var("CARGO_CFG_TARGET_ARCH") == "wasm32"
        && var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|f| f == "atomics");
    if threaded {
        for arg in [
            "--shared-memory",
            "--import-memory",
            "--export=__wasm_init_tls",
            "--export=__tls_size",
            "--export=__tls_align",
            "--export=__tls_base",
        ] {
            println!("cargo:rustc-link-arg={arg}");
        }
    }
}
