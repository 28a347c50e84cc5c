//! wasm tests that run in a browser: headless Chromium (started with --enable-unsafe-webgpu
//! through webdriver.json: WebGPU on SwiftShader), headless Firefox ESR (webdriver.json's
//! `moz:firefoxOptions` prefs turn WebGPU on: wgpu over Mesa's lavapipe) and WebKitGTK's
//! MiniBrowser (scripts/test.sh runs all three). WebGPU is required in Chromium and Firefox;
//! WebKitGTK has none (no `navigator.gpu`), so there the WebGPU tests say so and return, and
//! the rest (CPU, JS surface) run as everywhere.
//! Built as the threaded build (`--features threads`, +atomics, build-std: scripts/test.sh
//! does both, in Chromium), every test runs with a 2-thread pool on the page's main thread
//! (the test runner serves the page cross-origin isolated).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The browser engine running the page, from its user agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Chromium,
    Firefox,
    /// WebKitGTK's MiniBrowser (Safari's engine): its user agent names neither of the others.
    WebKit,
}

/// A property of `navigator` (undefined when absent).
fn navigator(key: &str) -> wasm_bindgen::JsValue {
    let global = js_sys::global();
    js_sys::Reflect::get(&global, &"navigator".into())
        .and_then(|n| js_sys::Reflect::get(&n, &key.into()))
        .unwrap_or(wasm_bindgen::JsValue::UNDEFINED)
}

fn engine() -> Engine {
    let ua = navigator("userAgent").as_string().unwrap_or_default();
    if ua.contains("Firefox/") {
        Engine::Firefox
    } else if ua.contains("Chrome/") || ua.contains("Chromium/") {
        Engine::Chromium
    } else {
        Engine::WebKit
    }
}

/// Whether this page must have a WebGPU device: Chromium and Firefox must (their flags and
/// prefs turn it on); WebKitGTK has no `navigator.gpu`, and should it gain one, it must too.
fn webgpu_expected() -> bool {
    engine() != Engine::WebKit || !navigator("gpu").is_undefined()
}

/// For the WebGPU-only tests: false (after saying so) where the engine has no WebGPU.
fn has_webgpu(test: &str) -> bool {
    let expected = webgpu_expected();
    if !expected {
        web_sys::console::log_1(
            &format!(
                "{test}: {:?} has no WebGPU (no navigator.gpu): nothing to run",
                engine()
            )
            .into(),
        );
    }
    expected
}

/// Starts the 2-thread pool once (threaded build); nothing in the single-thread builds.
async fn pool() {
    #[cfg(target_feature = "atomics")]
    {
        thread_local!(static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        if !STARTED.get() {
            STARTED.set(true);
            webtensor::wasm::init_thread_pool(2.0, None, None)
                .await
                .unwrap_or_else(|e| panic!("{:?}", wasm_bindgen::JsValue::from(e)));
        }
    }
}

/// The pool's workers take work in the threaded build (2 threads on the main thread of the
/// page); the single-thread builds run it all on one.
#[wasm_bindgen_test]
async fn the_cpu_thread_pool_runs_its_threads() {
    pool().await;
    // On a loaded machine a worker may wake too late for one round: up to 10 rounds (a pool
    // whose workers never run fails them all).
    let (mut sum, mut used) = (0, 0);
    for _ in 0..10 {
        let (s, u) = webtensor::backends::threads::pool_probe(256);
        (sum, used) = (s, used.max(u));
        if used >= 2 || !cfg!(target_feature = "atomics") {
            break;
        }
    }
    assert_ne!(sum, 0);
    if cfg!(target_feature = "atomics") {
        assert_eq!(webtensor::backends::threads::count(), 2);
        assert!(used >= 2, "the probe ran on {used} thread(s)");
    } else {
        assert_eq!((webtensor::backends::threads::count(), used), (1, 1));
    }
    web_sys::console::log_1(
        &format!(
            "{} build: {} thread(s), the probe ran on {used}",
            webtensor::backends::threads::build_name(),
            webtensor::backends::threads::count()
        )
        .into(),
    );
}

#[wasm_bindgen_test]
async fn every_listed_device_adds_vectors() {
    pool().await;
    let reg = webtensor::backends::registry().await;
    for r in reg.backend_regs() {
        if let Some(reason) = r.unavailable_reason() {
            web_sys::console::log_1(&format!("{}: not available: {reason}", r.name()).into());
        }
    }
    let devices = reg.devices();
    assert!(!devices.is_empty());
    for d in devices {
        let out = webtensor::model::smoke::vector_add(
            d.clone(),
            &[1.0, 2.0, 3.0, 4.0],
            &[10.0, 20.0, 30.0, 40.0],
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", d.name()));
        assert_eq!(out, vec![11.0, 22.0, 33.0, 44.0], "{}", d.name());
        web_sys::console::log_1(&format!("{} ({}): ok", d.name(), d.description()).into());
    }
}

/// Says which engine ran the suite and what WebGPU adapter it offers (the browser's own
/// `GPUAdapter.info` and `features`, which wgpu's `AdapterInfo` leaves nearly empty on the
/// web), and that Chromium and Firefox offer one.
#[wasm_bindgen_test]
async fn engine_and_webgpu_adapter() {
    use js_sys::{Function, Promise, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    let get = |o: &JsValue, k: &str| Reflect::get(o, &k.into()).unwrap_or(JsValue::UNDEFINED);
    let mut line = format!(
        "engine: {:?} ({})",
        engine(),
        navigator("userAgent").as_string().unwrap_or_default()
    );
    let gpu = navigator("gpu");
    let adapter = if gpu.is_undefined() {
        JsValue::NULL
    } else {
        let request: Function = get(&gpu, "requestAdapter").dyn_into().unwrap();
        let promise: Promise = request.call0(&gpu).unwrap().dyn_into().unwrap();
        wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .unwrap_or(JsValue::NULL)
    };
    if adapter.is_null() || adapter.is_undefined() {
        line += if gpu.is_undefined() {
            "; no navigator.gpu"
        } else {
            "; requestAdapter() gave no adapter"
        };
    } else {
        let info = get(&adapter, "info");
        let text = |k: &str| get(&info, k).as_string().unwrap_or_default();
        let has: Function = get(&get(&adapter, "features"), "has").dyn_into().unwrap();
        let f16 = has
            .call1(&get(&adapter, "features"), &"shader-f16".into())
            .unwrap()
            .is_truthy();
        line += &format!(
            "; WebGPU adapter: vendor {:?}, architecture {:?}, device {:?}, description {:?}, \
             fallback {:?}, shader-f16 {f16}",
            text("vendor"),
            text("architecture"),
            text("device"),
            text("description"),
            get(&info, "isFallbackAdapter").as_bool(),
        );
    }
    web_sys::console::log_1(&line.into());
    if webgpu_expected() {
        assert!(
            !adapter.is_null() && !adapter.is_undefined(),
            "{:?}: no WebGPU adapter",
            engine()
        );
    }
}

/// One GPU adapter and device per page: later registries (listDevices(), each runtime, each
/// model) share it instead of requesting another.
#[wasm_bindgen_test]
async fn registries_share_one_webgpu_device() {
    if !has_webgpu("registries_share_one_webgpu_device") {
        return;
    }
    pool().await;
    let gpu = |reg: &webtensor::backend::Registry| {
        reg.devices().into_iter().find(|d| d.name() == "WebGPU")
    };
    let a = gpu(&webtensor::backends::registry().await).expect("WebGPU");
    let b = gpu(&webtensor::backends::registry().await).expect("WebGPU again");
    assert!(std::rc::Rc::ptr_eq(&a, &b), "a second GPU device was made");
}

/// The WebGPU device; Chromium runs with `--enable-unsafe-webgpu` and Firefox with WebGPU
/// enabled, so having none fails there.
async fn webgpu() -> std::rc::Rc<dyn webtensor::backend::Device> {
    webgpu_with(webtensor::backends::webgpu::WebGpuOptions::default()).await
}

/// The page's WebGPU device planning with `opts`.
async fn webgpu_with(
    opts: webtensor::backends::webgpu::WebGpuOptions,
) -> std::rc::Rc<dyn webtensor::backend::Device> {
    let reg = webtensor::backends::registry_with(
        true,
        webtensor::backends::DeviceOptions { webgpu: opts },
    )
    .await;
    reg.by_name("WebGPU").unwrap_or_else(|e| {
        let why: Vec<String> = reg
            .backend_regs()
            .iter()
            .filter_map(|r| r.unavailable_reason())
            .collect();
        panic!(
            "WebGPU is required in {:?}: {e} ({})",
            engine(),
            why.join("; ")
        )
    })
}

/// The op conformance suite on every device (CPU SIMD128 kernels, WebGPU on SwiftShader)
/// against the CPU scalar reference.
#[wasm_bindgen_test]
async fn op_suite_on_every_device() {
    pool().await;
    use webtensor::testing::{run_suite_on_registry, SuiteOptions};
    let reg = webtensor::backends::registry().await;
    let opts = SuiteOptions {
        filter: None,
        require_webgpu: webgpu_expected(),
    };
    let report = run_suite_on_registry(&reg, &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    web_sys::console::log_1(&format!("{report}").into());
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

/// The matmul cases with each WebGPU matmul kernel forced on every shape, on SwiftShader. Of
/// the K-quants, Q3_K (blocks at 2 mod 4 bytes), Q4_K and Q6_K (Q4_K_M's pair): all five
/// forced over every K-quant took 542 s here on a loaded machine; Q2_K and Q5_K run every
/// kernel natively (tests/webgpu.rs, the same WGSL) and the default kernels in this browser
/// (the op suite above). The test command runs it in the single-thread Chromium build only.
#[wasm_bindgen_test]
async fn every_matmul_kernel_passes() {
    if !has_webgpu("every_matmul_kernel_passes") {
        return;
    }
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::backends::webgpu::{MatmulKernels, WebGpuOptions};
    let types = ["f32", "f16", "q8_0", "q4_0", "q3_k", "q4_k", "q6_k"];
    for sel in [
        MatmulKernels::Tiled,
        MatmulKernels::Small,
        MatmulKernels::Base,
        MatmulKernels::Reg,
        MatmulKernels::Rows,
    ] {
        let gpu = webgpu_with(WebGpuOptions {
            matmul_kernels: sel,
            ..WebGpuOptions::default()
        })
        .await;
        let mut passed = 0;
        for t in types {
            let report = webtensor::testing::run_suite(
                gpu.clone(),
                std::rc::Rc::new(CpuDevice::new(KernelSet::Reference)),
                Some(&format!("matmul_{t}")),
            )
            .await;
            if let Err(e) = report.check() {
                panic!("{sel:?} {t}: {e}");
            }
            passed += report.passed;
        }
        assert!(passed >= 60, "{sel:?}: {passed} cases passed");
    }
}

/// The row-kernel cases with the GPU's row widths (a warp, a workgroup) on SwiftShader, which
/// otherwise runs one thread a row.
#[wasm_bindgen_test]
async fn row_kernels_pass_at_gpu_row_widths() {
    if !has_webgpu("row_kernels_pass_at_gpu_row_widths") {
        return;
    }
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::backends::webgpu::WebGpuOptions;
    for t in [32, 256] {
        let gpu = webgpu_with(WebGpuOptions {
            row_threads: Some(t),
            ..WebGpuOptions::default()
        })
        .await;
        for filter in ["softmax", "norm", "argmax"] {
            let report = webtensor::testing::run_suite(
                gpu.clone(),
                std::rc::Rc::new(CpuDevice::new(KernelSet::Reference)),
                Some(filter),
            )
            .await;
            assert!(report.passed >= 4, "{t} threads a row, {filter}: {report}");
            if let Err(e) = report.check() {
                panic!("{t} threads a row, {filter}: {e}");
            }
        }
    }
}

/// The attention cases with the keys split into runs (what a GPU gets for few query rows;
/// SwiftShader otherwise never splits), merged by a second dispatch, with and without the
/// adapter's shader-f16 (Firefox on lavapipe has it, so the op suite there runs the f16
/// variant over an f16 cache and this runs the other; SwiftShader has not): the WGSL of each
/// in this browser's compiler.
#[wasm_bindgen_test]
async fn attention_passes_with_split_keys() {
    if !has_webgpu("attention_passes_with_split_keys") {
        return;
    }
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::backends::webgpu::WebGpuOptions;
    for (splits, shader_f16) in [(3, true), (16, true), (1, false), (3, false)] {
        let gpu = webgpu_with(WebGpuOptions {
            kv_splits: Some(splits),
            shader_f16,
            ..WebGpuOptions::default()
        })
        .await;
        let report = webtensor::testing::run_suite(
            gpu,
            std::rc::Rc::new(CpuDevice::new(KernelSet::Reference)),
            Some("attention"),
        )
        .await;
        let what = format!("{splits} runs, shader-f16 {shader_f16}");
        assert!(report.passed >= 10, "{what}: {report}");
        if let Err(e) = report.check() {
            panic!("{what}: {e}");
        }
    }
}

/// Random graphs scheduled over WebGPU (some ops turned off) and the CPU equal the reference.
#[wasm_bindgen_test]
async fn scheduler_splits_between_webgpu_and_cpu() {
    if !has_webgpu("scheduler_splits_between_webgpu_and_cpu") {
        return;
    }
    pool().await;
    use webtensor::backend::{Device, DeviceKind, RestrictedDevice};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::testing::sched::{check_scheduled, random_graph};
    let gpu = webgpu().await;
    let mut multi = 0;
    for seed in 1..=12u64 {
        let (g, denied) = random_graph(seed);
        let restricted: std::rc::Rc<dyn Device> = std::rc::Rc::new(RestrictedDevice::new(
            gpu.clone(),
            "WebGPU",
            DeviceKind::Gpu,
            denied,
        ));
        let cpu: std::rc::Rc<dyn Device> = std::rc::Rc::new(CpuDevice::new(KernelSet::Fast));
        let plan = check_scheduled(&g, vec![restricted, cpu], None, seed, 1e-5)
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        multi += usize::from(plan.splits.len() > 1);
    }
    assert!(multi >= 4, "{multi} mixed-device graphs");
}

/// `run(..., { keepOnDevice: true })` through the JS surface: the outputs are `GpuTensor`s
/// that feed later runs, `read()` back, and throw once disposed, on another runtime, or with
/// the wrong shape.
#[wasm_bindgen_test]
async fn gpu_tensors_feed_later_runs() {
    if !has_webgpu("gpu_tensors_feed_later_runs") {
        return;
    }
    use js_sys::{Float32Array, Function, Object, Promise, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use webtensor::wasm::runtime::{JsGraph, JsRuntime};

    let obj = |pairs: &[(&str, JsValue)]| -> JsValue {
        let o = Object::new();
        for (k, v) in pairs {
            Reflect::set(&o, &(*k).into(), v).unwrap();
        }
        o.into()
    };
    let get = |o: &JsValue, k: &str| Reflect::get(o, &k.into()).unwrap();
    let call = |o: &JsValue, method: &str| -> JsValue {
        let f: Function = get(o, method).dyn_into().unwrap();
        f.call0(o).unwrap()
    };
    let message = |e: JsValue| get(&e, "message").as_string().unwrap_or_default();
    let runtime = || async {
        let opts = obj(&[("device", "webgpu".into()), ("costModel", false.into())]);
        JsRuntime::create(opts)
            .await
            .unwrap_or_else(|_| panic!("a WebGPU runtime"))
    };
    let rt = runtime().await;
    let double = JsGraph::new();
    let x = double.input("x", "f32", vec![8, 4]).ok().unwrap();
    let y = double.scale(x, 2.0).ok().unwrap();
    double.set_name(y, "y").ok().unwrap();
    double.output(y).ok().unwrap();
    let step = JsGraph::new();
    let h = step.input("h", "f32", vec![8, 4]).ok().unwrap();
    let r = step.relu(h).ok().unwrap();
    let z = step.add(r, h).ok().unwrap();
    step.set_name(z, "z").ok().unwrap();
    step.output(z).ok().unwrap();

    let xs: Vec<f32> = (0..32).map(|i| i as f32 - 10.0).collect();
    let keep = || obj(&[("keepOnDevice", true.into())]);
    let out = JsFuture::from(rt.run(
        &double,
        obj(&[("x", Float32Array::from(xs.as_slice()).into())]),
        keep(),
    ))
    .await
    .unwrap();
    let gy = get(&out, "y");
    assert_eq!(get(&gy, "device").as_string().as_deref(), Some("WebGPU"));
    let out = JsFuture::from(rt.run(&step, obj(&[("h", gy.clone())]), keep()))
        .await
        .unwrap();
    let gz = get(&out, "z");
    let out = JsFuture::from(rt.run(&step, obj(&[("h", gz.clone())]), JsValue::UNDEFINED))
        .await
        .unwrap();
    let f = |v: f32| v.max(0.0) + v;
    let want: Vec<f32> = xs.iter().map(|&v| f(f(2.0 * v))).collect();
    assert_eq!(
        get(&out, "z").dyn_into::<Float32Array>().unwrap().to_vec(),
        want
    );
    let read: Promise = call(&gy, "read").dyn_into().unwrap();
    let ys = JsFuture::from(read).await.unwrap();
    let want_y: Vec<f32> = xs.iter().map(|&v| 2.0 * v).collect();
    assert_eq!(ys.dyn_into::<Float32Array>().unwrap().to_vec(), want_y);

    // Wrong shape.
    let other = JsGraph::new();
    let a = other.input("a", "f32", vec![4, 8]).ok().unwrap();
    let b = other.scale(a, 1.0).ok().unwrap();
    other.output(b).ok().unwrap();
    let e = JsFuture::from(rt.run(&other, obj(&[("a", gy.clone())]), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert!(message(e).contains("device tensor given"));
    // Another runtime's.
    let rt2 = runtime().await;
    let e = JsFuture::from(rt2.run(&step, obj(&[("h", gz.clone())]), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert!(message(e).contains("another runtime"));
    // Disposed.
    call(&gy, "dispose");
    assert_eq!(get(&gy, "disposed").as_bool(), Some(true));
    let e = JsFuture::from(rt.run(&step, obj(&[("h", gy.clone())]), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert!(message(e).contains("disposed"));
    let read: Promise = call(&gy, "read").dyn_into().unwrap();
    assert!(JsFuture::from(read).await.is_err());
}

/// A WebGPU device that answers the self-check wrong is dropped with the reason, and a runtime
/// over its registry uses the CPU and shows why (`notes`, `explain()`).
#[wasm_bindgen_test]
async fn a_device_failing_its_self_check_is_dropped() {
    if !has_webgpu("a_device_failing_its_self_check_is_dropped") {
        return;
    }
    use webtensor::backend::{BackendReg, Registry};
    use webtensor::backends::cpu::{CpuReg, KernelSet};
    use webtensor::backends::webgpu::WebGpuReg;
    use webtensor::runtime::{DeviceChoice, Program, Runtime};
    let gpu = WebGpuReg::with_failing_self_check().await;
    let why = gpu
        .unavailable_reason()
        .expect("the sabotaged device is dropped");
    assert!(why.contains("self-check"), "{why}");
    let mut reg = Registry::new();
    reg.register(std::rc::Rc::new(CpuReg::new(KernelSet::Fast)));
    reg.register(std::rc::Rc::new(gpu));
    let rt = Runtime::new(&reg, DeviceChoice::Auto, false).await.unwrap();
    assert_eq!(rt.device_names(), ["CPU"]);
    let mut p = Program::new();
    let x = p
        .graph_mut()
        .input("x", webtensor::graph::DType::F32, &[4])
        .unwrap();
    let y = p.graph_mut().relu(x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let plan = rt.explain(&p).unwrap();
    assert!(
        plan.contains("not used: WebGPU: ") && plan.contains("self-check"),
        "{plan}"
    );
}

/// States through the JS surface: `runtime.createState`, `graph.state`, the State given as
/// the input of its name: a running sum over runs on each device (WebGPU on SwiftShader, and
/// the CPU), read back, zeroed, and errors for a wrong shape and a disposed State.
#[wasm_bindgen_test]
async fn states_keep_a_running_sum() {
    use js_sys::{Float32Array, Function, Int32Array, Object, Promise, Reflect};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use webtensor::wasm::runtime::{JsGraph, JsRuntime};

    pool().await;
    let obj = |pairs: &[(&str, JsValue)]| -> JsValue {
        let o = Object::new();
        for (k, v) in pairs {
            Reflect::set(&o, &(*k).into(), v).unwrap();
        }
        o.into()
    };
    let get = |o: &JsValue, k: &str| Reflect::get(o, &k.into()).unwrap();
    let message = |e: JsValue| get(&e, "message").as_string().unwrap_or_default();
    let devices: &[&str] = if webgpu_expected() {
        &["WebGPU", "CPU"]
    } else {
        &["CPU"]
    };
    // "webgpu" fails without WebGPU; "cpu" where the engine has none.
    let choice = if webgpu_expected() { "webgpu" } else { "cpu" };
    for &device in devices {
        let opts = obj(&[("device", choice.into()), ("costModel", false.into())]);
        let rt = JsRuntime::create(opts)
            .await
            .unwrap_or_else(|_| panic!("a {choice} runtime"));
        let g = JsGraph::new();
        let s = g.state("sum", "f32", vec![4, 1]).ok().unwrap();
        let x = g.input("x", "f32", vec![4, 1]).ok().unwrap();
        let row = g.input("row", "i32", vec![1]).ok().unwrap();
        let y = g.add(s, x).ok().unwrap();
        let w = g.set_rows(s, y, row).ok().unwrap();
        let out = g.scale(w, 1.0).ok().unwrap();
        g.set_name(out, "total").ok().unwrap();
        g.output(out).ok().unwrap();
        let state: JsValue = rt
            .create_state(
                "f32",
                vec![4, 1],
                obj(&[("device", device.into()), ("name", "sum".into())]),
            )
            .ok()
            .unwrap()
            .into();
        assert_eq!(get(&state, "device").as_string().as_deref(), Some(device));
        let mut want = [0.0f32; 4];
        for step in 1..=3 {
            let xs = [step as f32, 1.0, -2.0, 0.5];
            for (w, v) in want.iter_mut().zip(xs) {
                *w += v;
            }
            let inputs = obj(&[
                ("x", Float32Array::from(xs.as_slice()).into()),
                ("row", Int32Array::from([0i32].as_slice()).into()),
                ("sum", state.clone()),
            ]);
            let outs = JsFuture::from(rt.run(&g, inputs, JsValue::UNDEFINED))
                .await
                .unwrap_or_else(|e| panic!("{device}: {}", message(e)));
            let total = get(&outs, "total").dyn_into::<Float32Array>().unwrap();
            assert_eq!(total.to_vec(), want, "{device} step {step}");
        }
        let read: Promise = get(&state, "read")
            .dyn_into::<Function>()
            .unwrap()
            .call0(&state)
            .unwrap()
            .dyn_into()
            .unwrap();
        let values = JsFuture::from(read).await.unwrap();
        assert_eq!(values.dyn_into::<Float32Array>().unwrap().to_vec(), want);
        let plan = rt.explain(&g);
        // Unbound (no inputs here): explain names the missing binding.
        assert!(plan.is_err());
        // A State of the wrong shape, then a disposed one.
        let small: JsValue = rt
            .create_state("f32", vec![2], JsValue::UNDEFINED)
            .ok()
            .unwrap()
            .into();
        let bad = obj(&[
            ("x", Float32Array::from([0.0f32; 4].as_slice()).into()),
            ("row", Int32Array::from([0i32].as_slice()).into()),
            ("sum", small),
        ]);
        let e = JsFuture::from(rt.run(&g, bad, JsValue::UNDEFINED))
            .await
            .unwrap_err();
        assert!(
            message(e).contains("but the State given is f32"),
            "{device}"
        );
        get(&state, "dispose")
            .dyn_into::<Function>()
            .unwrap()
            .call0(&state)
            .unwrap();
        let gone = obj(&[
            ("x", Float32Array::from([0.0f32; 4].as_slice()).into()),
            ("row", Int32Array::from([0i32].as_slice()).into()),
            ("sum", state.clone()),
        ]);
        let e = JsFuture::from(rt.run(&g, gone, JsValue::UNDEFINED))
            .await
            .unwrap_err();
        assert!(message(e).contains("this State was disposed"), "{device}");
    }
}
