//! States ([`State`]): tensors kept on one device across runs, such as a decoder's KV cache.
//! A graph declares one with [`crate::graph::Graph::state`] (through [`Program::state`]);
//! the scheduler places every op touching it on its device and binds its memory into the
//! session, so a run reads it where it is and `set_rows` on it writes its rows in place:
//! nothing of a state is copied per run.
//!
//! [`Program::state`]: super::Program::state

use std::rc::Rc;

use crate::backend::{Buffer, BufferUsage};
use crate::error::{Error, Result};
use crate::graph::{contiguous_strides, DType, MAX_DIMS};

/// A tensor's memory on one device that outlives runs (zeroed when made). Clones share it.
#[derive(Clone)]
pub struct State {
    inner: Rc<Inner>,
}

struct Inner {
    buffer: Rc<Buffer>,
    runtime: u64,
    device: usize,
    device_name: String,
    name: String,
    dtype: DType,
    ne: [usize; MAX_DIMS],
    uid: u64,
}

impl State {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn alloc(
        bt: std::rc::Rc<dyn crate::backend::BufferType>,
        runtime: u64,
        device: usize,
        device_name: String,
        name: &str,
        dtype: DType,
        ne: &[usize],
        uid: u64,
    ) -> Result<Self> {
        if dtype.is_quantized() {
            return Err(Error::InvalidArgument(format!(
                "state {name}: states are f32, f16 or i32, not {}",
                dtype.name()
            )));
        }
        if ne.is_empty() || ne.len() > MAX_DIMS {
            return Err(Error::InvalidArgument(format!(
                "state {name}: expected 1 to 4 dims, got {}",
                ne.len()
            )));
        }
        let mut ne4 = [1; MAX_DIMS];
        ne4[..ne.len()].copy_from_slice(ne);
        let nb = contiguous_strides(dtype, ne4)?;
        let bytes = nb[3]
            .checked_mul(ne4[3])
            .ok_or_else(|| Error::InvalidArgument(format!("state {name} is too large")))?;
        if bytes > bt.max_size() {
            return Err(Error::AllocTooLarge {
                size: bytes,
                max: bt.max_size(),
                buffer_type: bt.name().to_string(),
            });
        }
        let buffer = bt.alloc(bytes)?;
        buffer.set_usage(BufferUsage::Compute);
        buffer.clear(0)?;
        Ok(Self {
            inner: Rc::new(Inner {
                buffer,
                runtime,
                device,
                device_name,
                name: name.to_string(),
                dtype,
                ne: ne4,
                uid,
            }),
        })
    }

    /// Its name (the graph leaf's, when a program binds it).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its dtype.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// Its shape (4 dims, innermost first).
    pub fn shape(&self) -> [usize; MAX_DIMS] {
        self.inner.ne
    }

    /// Its size in bytes.
    pub fn nbytes(&self) -> usize {
        self.inner.buffer.size()
    }

    /// Index of its device among the runtime's devices.
    pub fn device(&self) -> usize {
        self.inner.device
    }

    /// Name of its device.
    pub fn device_name(&self) -> &str {
        &self.inner.device_name
    }

    /// The same value for every clone (session cache keys).
    pub fn uid(&self) -> u64 {
        self.inner.uid
    }

    pub(super) fn owner(&self) -> u64 {
        self.inner.runtime
    }

    pub(crate) fn buffer(&self) -> &Rc<Buffer> {
        &self.inner.buffer
    }

    /// Reads its bytes (after every run enqueued before that writes it).
    pub async fn read(&self) -> Result<Vec<u8>> {
        self.inner.buffer.read(0, self.nbytes()).await
    }

    /// Overwrites its bytes from `offset` (raw values of its dtype).
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.inner.buffer.write(offset, bytes)
    }

    /// Sets every byte to 0.
    pub fn zero(&self) -> Result<()> {
        self.inner.buffer.clear(0)
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("name", &self.inner.name)
            .field("dtype", &self.inner.dtype)
            .field("shape", &self.inner.ne)
            .field("device", &self.inner.device_name)
            .finish()
    }
}
