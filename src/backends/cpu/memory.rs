//! The CPU device's memory. In wasm it is the module's linear memory, at most 4 GiB in
//! wasm32, which the CPU's buffers share with everything else the module allocates: the
//! buffers' live bytes are counted here, so `Device::memory` can say what is free (a disposed
//! model's buffers count as free again, though the linear memory never shrinks), and a model
//! too large for it is refused with the sizes before anything is allocated. The rest of the
//! heap (tens of MiB: graphs, plans, a tokenizer) is not counted, so a model within that of
//! the limit passes this check and may still fail its allocation, with a clean error too.
//! (A counting global allocator would see it all, but a library must not take the global
//! allocator from its users.) Natively the CPU's memory stays unknown: the OS manages it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes in live CPU buffers.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// A CPU buffer of `n` bytes was allocated.
pub(super) fn allocated(n: usize) {
    LIVE.fetch_add(n, Ordering::Relaxed);
}

/// A CPU buffer of `n` bytes was freed.
pub(super) fn freed(n: usize) {
    LIVE.fetch_sub(n, Ordering::Relaxed);
}

/// The CPU device's memory: in wasm, wasm32's 4 GiB less the live CPU buffers; natively
/// unknown (0).
pub(crate) fn device_memory() -> crate::backend::DeviceMemory {
    if cfg!(target_arch = "wasm32") {
        // 65536 pages of 64 KiB, less one byte in a 32-bit usize.
        let total = usize::MAX;
        crate::backend::DeviceMemory {
            free: total.saturating_sub(LIVE.load(Ordering::Relaxed)),
            total,
        }
    } else {
        crate::backend::DeviceMemory::default()
    }
}
