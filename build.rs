//! The WGSL files the WebGPU device embeds, without their comments and indentation
//! (`shaders/*.wgsl` → `$OUT_DIR/shaders/`; src/backends/webgpu/shader.rs includes them): 82
//! KB of text in every build, 42 KB without (WGSL has no string literals, so `//` always
//! starts a comment).
//!
//! The threaded wasm build (feature `threads`, built with `+atomics`): wasm-bindgen's thread
//! support needs the module's memory shared and imported (each Web Worker instantiates the
//! module on the page's memory) and the TLS symbols exported (each thread sets up its own
//! thread-locals). Current rustc no longer passes these to wasm-ld itself. Link arguments
//! here reach only this crate's final links (the cdylib and the test binaries), so adding
//! them rebuilds no dependency.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(e) = strip_shaders() {
        panic!("build.rs: stripping shaders/*.wgsl: {e}");
    }
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

/// Writes each `shaders/*.wgsl` to `$OUT_DIR/shaders/` with comments, indentation and blank
/// lines dropped.
fn strip_shaders() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=shaders");
    let out =
        std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("shaders");
    std::fs::create_dir_all(&out)?;
    for entry in std::fs::read_dir("shaders")? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "wgsl") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let mut code = String::with_capacity(text.len());
        for line in text.lines() {
            let line = line.split("//").next().unwrap_or("").trim();
            if !line.is_empty() {
                code.push_str(line);
                code.push('\n');
            }
        }
        if let Some(name) = path.file_name() {
            std::fs::write(out.join(name), code)?;
        }
    }
    Ok(())
}
