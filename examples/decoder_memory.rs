//! Heap held by a decoder on the CPU backend: after load, and after a prefill of N tokens
//! (counting global allocator), against the GGUF's file size.
//! `cargo run --release --example decoder_memory -- MODEL.gguf [N]`
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use pollster::block_on;
use webtensor::model::decoder::{Decoder, DecoderOptions};
use webtensor::runtime::DeviceChoice;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}
#[global_allocator]
static A: Counting = Counting;

fn mib(b: usize) -> String {
    format!("{:.2} MiB", b as f64 / (1 << 20) as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let n: usize = args.get(2).map_or(64, |s| s.parse().unwrap());
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let file = bytes.len();
    let base = LIVE.load(Ordering::Relaxed) - file;
    let mut dec = Decoder::load(&rt, &bytes, &DecoderOptions::default()).unwrap();
    drop(bytes);
    let loaded = LIVE.load(Ordering::Relaxed) - base;
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let prompt: Vec<u32> = (0..n as u32).map(|i| 10 + i * 7).collect();
    let t = std::time::Instant::now();
    let logits = block_on(dec.prefill(&rt, &prompt)).unwrap();
    let dt = t.elapsed().as_secs_f64();
    let after = LIVE.load(Ordering::Relaxed) - base;
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let _ = block_on(dec.step(&rt, 3)).unwrap();
    let after_step = LIVE.load(Ordering::Relaxed) - base;
    println!(
        "{path}: file {} | held after load {} ({:.2}x file) | after {n}-token prefill {} ({:.2}x file), peak during {} | after a step {} | prefill {:.1} ms, logits[0] {}",
        mib(file), mib(loaded), loaded as f64 / file as f64, mib(after), after as f64 / file as f64, mib(peak), mib(after_step), dt * 1e3, logits[0]
    );
}
