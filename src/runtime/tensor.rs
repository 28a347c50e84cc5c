//! Tensors a run left on a device ([`DeviceTensor`]): read back on demand, or given to a later
//! run of the same runtime as an input without a trip through the host.

use std::cell::RefCell;
use std::rc::Rc;

use crate::backend::Buffer;
use crate::error::{Error, Result};
use crate::graph::{DType, MAX_DIMS};

/// An output kept on the device that computed it (`Runtime::run_values` with
/// `keep_on_device`): its own device memory, with its shape and dtype. Clones share it;
/// [`DeviceTensor::dispose`] frees it for all of them, and any later use is an error.
#[derive(Clone)]
pub struct DeviceTensor {
    inner: Rc<Inner>,
}

struct Inner {
    buffer: RefCell<Option<Rc<Buffer>>>,
    runtime: u64,
    device: String,
    name: String,
    dtype: DType,
    ne: [usize; MAX_DIMS],
}

impl DeviceTensor {
    pub(super) fn new(
        buffer: Rc<Buffer>,
        runtime: u64,
        device: String,
        name: String,
        dtype: DType,
        ne: [usize; MAX_DIMS],
    ) -> Self {
        Self {
            inner: Rc::new(Inner {
                buffer: RefCell::new(Some(buffer)),
                runtime,
                device,
                name,
                dtype,
                ne,
            }),
        }
    }

    /// The output's name in the graph that made it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its dtype.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// Its shape (innermost first, 4 dims, as the graph gives it).
    pub fn shape(&self) -> [usize; MAX_DIMS] {
        self.inner.ne
    }

    /// Name of the device holding it.
    pub fn device(&self) -> &str {
        &self.inner.device
    }

    /// Whether [`DeviceTensor::dispose`] was called.
    pub fn is_disposed(&self) -> bool {
        self.inner.buffer.borrow().is_none()
    }

    /// Frees its device memory (once all runs that read it are done with it); later uses fail.
    pub fn dispose(&self) {
        self.inner.buffer.borrow_mut().take();
    }

    /// Its memory, checked to belong to runtime `runtime` and not to be disposed.
    pub(super) fn buffer_for(&self, runtime: u64) -> Result<Rc<Buffer>> {
        if self.inner.runtime != runtime {
            return Err(Error::InvalidArgument(format!(
                "device tensor {} belongs to another runtime (its device memory is not this \
                 runtime's)",
                self.inner.name
            )));
        }
        self.buffer()
    }

    fn buffer(&self) -> Result<Rc<Buffer>> {
        self.inner.buffer.borrow().clone().ok_or_else(|| {
            Error::InvalidArgument(format!("device tensor {} was disposed", self.inner.name))
        })
    }

    /// Reads its bytes back to the host.
    pub async fn read(&self) -> Result<Vec<u8>> {
        let buffer = self.buffer()?;
        buffer.read(0, buffer.size()).await
    }
}

impl std::fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTensor")
            .field("name", &self.inner.name)
            .field("dtype", &self.inner.dtype)
            .field("shape", &self.inner.ne)
            .field("device", &self.inner.device)
            .field("disposed", &self.is_disposed())
            .finish()
    }
}
