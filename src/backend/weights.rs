//! Weights stored once on a set of devices, outside any plan: read from a [`ByteSource`] a
//! chunk at a time into as few buffers per device as each device's size limit allows, and
//! shared by every graph (every shape of a model) that binds them. A weight read on a device
//! other than its home gets a copy there, made once and kept with the weight, never per run.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::{check_range, Buffer, BufferUsage, Device};
use crate::error::{At, Error, ModelFile, Result};
use crate::graph::{first_non_finite_scale, DType, Graph, Tensor, TensorId};

/// Bytes copied from a [`ByteSource`] to a device at a time.
const STORE_CHUNK: usize = 1 << 20;

/// Where bytes come from, read a piece at a time: a slice in memory, or (in the browser) a
/// JS array outside wasm memory, so that weights reach device buffers without a second full
/// copy of the file.
pub trait ByteSource {
    /// Total bytes.
    fn len(&self) -> usize;
    /// Whether there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `out.len()` bytes from `offset` into `out`.
    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()>;
}

impl<T: AsRef<[u8]>> ByteSource for T {
    fn len(&self) -> usize {
        self.as_ref().len()
    }
    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let bytes = self.as_ref();
        check_range("read", offset, out.len(), bytes.len())?;
        out.copy_from_slice(&bytes[offset..offset + out.len()]);
        Ok(())
    }
}

/// One weight to store: which device keeps it, its dtype and shape, where its bytes are.
#[derive(Clone, Debug)]
pub struct WeightSpec {
    /// The weight's name (its tensor's, in errors about its bytes).
    pub name: String,
    /// Index of the device (in the order of the devices given to [`store_weights`]).
    pub device: usize,
    /// Element type.
    pub dtype: DType,
    /// Shape, innermost first.
    pub ne: Vec<usize>,
    /// Its bytes in the source, in order: one range, or several for a weight made of the
    /// source's tensors joined along their outermost dim (a BERT layer's Q, K and V
    /// projections stored as one QKV weight).
    pub ranges: Vec<std::ops::Range<usize>>,
    /// Whether the graphs read it only as a matrix: a matmul's weight or a get_rows table
    /// (see [`matrix_only`]). A device may then keep it in a layout of its own for those
    /// ops ([`super::BufferType::packed_size`]), its only copy.
    pub matrix_only: bool,
}

/// The tensors (weights, for its callers) that `graph` reads only as a matmul's weight
/// (`src[0]`) or a get_rows table (their own bytes, never through a view), and reads at all:
/// one pass over the nodes.
pub fn matrix_only(graph: &Graph) -> HashSet<TensorId> {
    use crate::graph::Op;
    let (mut only, mut other) = (HashSet::new(), HashSet::new());
    for (_, t) in graph.iter() {
        for (i, &s) in t.src.iter().enumerate() {
            if i == 0 && matches!(t.op, Op::MatMul | Op::GetRows) {
                only.insert(s);
            } else {
                other.insert(s);
            }
        }
    }
    only.retain(|s| !other.contains(s));
    only
}

impl WeightSpec {
    /// Bytes the spec reads from the source.
    pub fn source_len(&self) -> usize {
        self.ranges.iter().map(|r| r.len()).sum()
    }
}

/// A copy of a stored weight on another device: allocated when a plan first needs it there,
/// filled from the weight's home once, before the first run that reads it.
pub struct WeightCopy {
    /// The copy's memory (the whole buffer).
    pub buffer: Rc<Buffer>,
    filled: Cell<bool>,
}

impl WeightCopy {
    /// Whether the bytes were copied in yet.
    pub fn is_filled(&self) -> bool {
        self.filled.get()
    }

    /// Marks the bytes as copied in.
    pub fn set_filled(&self) {
        self.filled.set(true)
    }
}

struct WeightData {
    owner: u64,
    device: usize,
    buffer: Rc<Buffer>,
    offset: usize,
    dtype: DType,
    ne: Vec<usize>,
    nbytes: usize,
    copies: RefCell<HashMap<usize, Rc<WeightCopy>>>,
}

/// A weight value stored once in a device buffer, shared by every graph that binds it, with
/// the copies made of it for other devices. Cloning shares it; freed when the last holder
/// drops it.
#[derive(Clone)]
pub struct StoredWeight(Rc<WeightData>);

impl std::fmt::Debug for StoredWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredWeight")
            .field("device", &self.0.device)
            .field("offset", &self.0.offset)
            .field("dtype", &self.0.dtype)
            .field("ne", &self.0.ne)
            .field("copies", &self.0.copies.borrow().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl StoredWeight {
    /// Index of the device keeping it.
    pub fn device(&self) -> usize {
        self.0.device
    }

    /// The id of whoever stored it (a runtime), given to [`store_weights`].
    pub fn owner(&self) -> u64 {
        self.0.owner
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// Shape, innermost first.
    pub fn ne(&self) -> &[usize] {
        &self.0.ne
    }

    /// Its bytes.
    pub fn nbytes(&self) -> usize {
        self.0.nbytes
    }

    /// Its memory on its home device: buffer and offset.
    pub fn memory(&self) -> (&Rc<Buffer>, usize) {
        (&self.0.buffer, self.0.offset)
    }

    /// The same identity for the same stored value (for cache keys).
    pub fn id(&self) -> usize {
        Rc::as_ptr(&self.0) as usize
    }

    /// Its copy on device `d` (index among the owner's devices, which is `device`), allocated
    /// when missing; the caller fills it once ([`WeightCopy::is_filled`]).
    pub fn copy_on(&self, d: usize, device: &Rc<dyn Device>) -> Result<Rc<WeightCopy>> {
        if let Some(c) = self.0.copies.borrow().get(&d) {
            return Ok(c.clone());
        }
        let bt = device.buffer_type();
        let t = weight_tensor(self.0.dtype, &self.0.ne)?;
        let buffer = bt.alloc(bt.alloc_size(&t))?;
        buffer.set_usage(BufferUsage::Weights);
        let c = Rc::new(WeightCopy {
            buffer,
            filled: Cell::new(false),
        });
        self.0.copies.borrow_mut().insert(d, c.clone());
        Ok(c)
    }
}

/// The tensor a weight of `dtype` and shape `ne` is (the graph builder's checks included).
fn weight_tensor(dtype: DType, ne: &[usize]) -> Result<Tensor> {
    let mut g = Graph::new();
    let id = g.weight("weight", dtype, ne)?;
    Ok(g.tensor(id).clone())
}

/// Refuses weights that cannot fit a device whose memory is known (the CPU's in wasm: the
/// module's 4 GiB), before anything is allocated or read: the error gives both sizes.
fn check_room(devices: &[Rc<dyn Device>], sizes: &[Vec<usize>]) -> Result<()> {
    use super::sched::explain::human_bytes;
    for (dev, sizes) in devices.iter().zip(sizes) {
        let need: usize = sizes.iter().sum();
        let mem = dev.memory();
        if mem.total > 0 && need > mem.free {
            return Err(Error::Device {
                device: dev.name().to_string(),
                msg: format!(
                    "the weights need {} there, more than its {} free (of {}): choose a \
                     smaller model or quantization, or another device",
                    human_bytes(need),
                    human_bytes(mem.free),
                    human_bytes(mem.total)
                ),
                fault: crate::error::DeviceFault::OutOfMemory,
            });
        }
    }
    Ok(())
}

/// Stores weights on `devices[spec.device]`, reading `src` a chunk at a time (never a second
/// full copy of it), packed into as few buffers per device as the device's size limit allows.
/// `owner` marks them (a runtime's id); `progress(done, total)` is called in bytes.
pub fn store_weights(
    devices: &[Rc<dyn Device>],
    owner: u64,
    specs: &[WeightSpec],
    src: &dyn ByteSource,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<StoredWeight>> {
    // (buffer index, offset, bytes, the tensor when stored packed) per spec; per device, the sizes
    // of its buffers.
    let mut placed = Vec::with_capacity(specs.len());
    let mut sizes: Vec<Vec<usize>> = vec![Vec::new(); devices.len()];
    for (i, s) in specs.iter().enumerate() {
        let dev = devices
            .get(s.device)
            .ok_or_else(|| Error::NoDevice(format!("weight {i} is for device {}", s.device)))?;
        let t = &weight_tensor(s.dtype, &s.ne)?;
        if s.source_len() != t.nbytes() || s.ranges.iter().any(|r| r.end > src.len()) {
            return Err(Error::InvalidArgument(format!(
                "weight {i} ({:?} {:?}) needs {} bytes, its ranges {:?} hold {} of a \
                 {}-byte source",
                s.dtype,
                s.ne,
                t.nbytes(),
                s.ranges,
                s.source_len(),
                src.len()
            )));
        }
        let bt = dev.buffer_type();
        let (align, max) = (bt.alignment().max(1), bt.max_size());
        let packed = s.matrix_only.then(|| bt.packed_size(t)).flatten();
        let size = packed.unwrap_or_else(|| bt.alloc_size(t));
        if size > max {
            return Err(Error::AllocTooLarge {
                size,
                max,
                buffer_type: bt.name().to_string(),
            });
        }
        let bufs = &mut sizes[s.device];
        let fits = |used: usize| used.next_multiple_of(align) + size <= max;
        if !bufs.last().is_some_and(|&u| fits(u)) {
            bufs.push(0);
        }
        let last = bufs.len() - 1;
        let off = bufs[last].next_multiple_of(align);
        bufs[last] = off + size;
        placed.push((last, off, t.nbytes(), packed.is_some().then(|| t.clone())));
    }
    check_room(devices, &sizes)?;
    let mut buffers: Vec<Vec<Rc<Buffer>>> = Vec::with_capacity(devices.len());
    for (dev, sizes) in devices.iter().zip(&sizes) {
        let mut bufs = Vec::with_capacity(sizes.len());
        for &size in sizes {
            let b = dev.buffer_type().alloc(size)?;
            b.set_usage(BufferUsage::Weights);
            bufs.push(b);
        }
        buffers.push(bufs);
    }
    let total: usize = specs.iter().map(WeightSpec::source_len).sum();
    let mut done = 0;
    let mut stage = Vec::new();
    let mut out = Vec::with_capacity(specs.len());
    for (s, (b, off, nbytes, packed)) in specs.iter().zip(placed) {
        let buffer = buffers[s.device][b].clone();
        if let Some(t) = &packed {
            buffer.store_packed(off, t)?;
        }
        let bb = s.dtype.block_bytes();
        for range in &s.ranges {
            if range.len() % bb != 0 {
                return Err(Error::InvalidArgument(format!(
                    "weight {}: a range of {} bytes is not whole {} blocks",
                    s.name,
                    range.len(),
                    s.dtype
                )));
            }
        }
        // Chunks of whole blocks, so each block's scales are checked where they are read;
        // of whole rows for a weight stored packed (packed as they arrive). A chunk may
        // join the ends of two ranges.
        let unit = match &packed {
            Some(_) => s.dtype.row_bytes(s.ne[0])?,
            None => bb,
        };
        let chunk = (STORE_CHUNK / unit * unit).max(unit);
        stage.resize(chunk.min(s.source_len()), 0);
        let (mut to, mut filled) = (off, 0);
        let mut flush = |bytes: &[u8], to: &mut usize| -> Result<()> {
            if let Some((i, v)) = first_non_finite_scale(s.dtype, bytes) {
                let block = (*to - off + i * bb) / bb;
                return Err(Error::model_at(
                    ModelFile::Gguf,
                    At::Tensor(s.name.clone()),
                    format!("block {block} has a non-finite scale ({v}); the weights are corrupt"),
                ));
            }
            buffer.write(*to, bytes)?;
            *to += bytes.len();
            done += bytes.len();
            progress(done, total);
            Ok(())
        };
        for range in &s.ranges {
            let mut at = range.start;
            while at < range.end {
                let n = (range.end - at).min(stage.len() - filled);
                src.read_into(at, &mut stage[filled..filled + n])?;
                (at, filled) = (at + n, filled + n);
                if filled == stage.len() {
                    flush(&stage[..filled], &mut to)?;
                    filled = 0;
                }
            }
        }
        if filled > 0 {
            flush(&stage[..filled], &mut to)?;
        }
        out.push(StoredWeight(Rc::new(WeightData {
            owner,
            device: s.device,
            buffer,
            offset: off,
            dtype: s.dtype,
            ne: s.ne.clone(),
            nbytes,
            copies: RefCell::new(HashMap::new()),
        })));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the weights read as a matmul's weight or a get_rows table, and read at all.
    #[test]
    fn matrix_only_picks_weights_read_only_as_matrices() {
        let mut g = Graph::new();
        let w = |g: &mut Graph, n: &str| g.weight(n, DType::F32, &[4, 4]).unwrap();
        let (mm, both, table, unused) = (
            w(&mut g, "mm"),
            w(&mut g, "both"),
            w(&mut g, "t"),
            w(&mut g, "u"),
        );
        let x = g.input("x", DType::F32, &[4, 2]).unwrap();
        let idx = g.input("idx", DType::I32, &[2]).unwrap();
        let y = g.matmul(mm, x).unwrap();
        let z = g.matmul(both, y).unwrap();
        let s = g.add(both, both).unwrap();
        let e = g.get_rows(table, idx).unwrap();
        for o in [z, s, e] {
            g.set_output(o).unwrap();
        }
        let only = matrix_only(&g);
        assert!(only.contains(&mm) && only.contains(&table));
        assert!(!only.contains(&both) && !only.contains(&unused) && !only.contains(&x));
    }
}
