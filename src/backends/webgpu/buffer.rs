//! WebGPU buffers: storage buffers honouring the device's limits, byte-exact writes and
//! memsets (4-byte-aligned middles through `queue.writeBuffer`, edge bytes through a tiny
//! patch shader), device-side copies, and async readback.

use std::rc::Rc;

use super::context::{Ctx, GpuBuffer};
use super::shader::{self, Kernel, PatchParams, Variant};
use crate::backend::{Buffer, BufferImpl, BufferType, LocalBoxFuture};
use crate::error::Result;
use crate::graph::DType;

/// The WebGPU buffer type's name.
pub const WEBGPU_BUFFER_TYPE: &str = "WebGPU";

/// Allocates storage buffers on one WebGPU device.
pub struct WebGpuBufferType {
    ctx: Rc<Ctx>,
}

impl WebGpuBufferType {
    pub(super) fn new(ctx: Rc<Ctx>) -> Self {
        Self { ctx }
    }
}

impl BufferType for WebGpuBufferType {
    fn name(&self) -> &str {
        WEBGPU_BUFFER_TYPE
    }
    fn alignment(&self) -> usize {
        self.ctx.storage_align()
    }
    fn max_size(&self) -> usize {
        // Rounded down to 16 because the real buffer is rounded up to 16.
        let max = self.ctx.limits.max_buffer_size.min(isize::MAX as u64) & !15;
        usize::try_from(max).unwrap_or(isize::MAX as usize & !15)
    }
    fn alloc_impl(&self, size: usize) -> Result<Box<dyn BufferImpl>> {
        Ok(Box::new(WebGpuBuffer::new(self.ctx.clone(), size)?))
    }
}

/// One storage buffer (WebGPU's [`BufferImpl`]). Its real size is the requested size rounded
/// up to 16 (at least 16), so zero-sized buffers are valid and every 4-byte word a tensor
/// touches exists, also in a binding read as vec4s (which spans whole 16-byte units).
pub struct WebGpuBuffer {
    ctx: Rc<Ctx>,
    /// Destroyed when this buffer is dropped (see [`GpuBuffer`]).
    buf: GpuBuffer,
}

/// Smallest multiple of 4 at or above `x`.
fn up4(x: usize) -> usize {
    x.div_ceil(4) * 4
}

impl WebGpuBuffer {
    fn new(ctx: Rc<Ctx>, size: usize) -> Result<Self> {
        let real = size.div_ceil(16).max(1) as u64 * 16;
        let buf = ctx.scoped(|| {
            ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor"),
                size: real,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        Ok(Self { ctx, buf })
    }

    /// Whether this buffer belongs to the device of `ctx`.
    pub(super) fn is_on(&self, ctx: &Ctx) -> bool {
        std::ptr::eq(&*self.ctx, ctx)
    }

    /// The wgpu buffer (for the backend's bind groups).
    pub(super) fn raw(&self) -> &wgpu::Buffer {
        &self.buf
    }

    /// Bytes the wgpu buffer really has (`size` rounded up to 16, at least 16).
    pub(super) fn real_size(&self) -> usize {
        self.buf.size() as usize
    }

    /// Writes `data` at `offset` (in range), byte-exact.
    fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = offset + data.len();
        let head_end = up4(offset).min(end);
        let tail_start = (end & !3).max(head_end);
        self.ctx.scoped(|| {
            if tail_start > head_end {
                self.ctx.queue.write_buffer(
                    &self.buf,
                    head_end as u64,
                    &data[head_end - offset..tail_start - offset],
                );
            }
        })?;
        if head_end > offset {
            self.patch(offset, &data[..head_end - offset])?;
        }
        if end > tail_start {
            self.patch(tail_start, &data[tail_start - offset..])?;
        }
        Ok(())
    }

    /// Writes 1 to 3 bytes inside one 4-byte word, through the patch shader.
    fn patch(&self, offset: usize, bytes: &[u8]) -> Result<()> {
        let word = offset / 4;
        let (mut mask, mut value) = (0u32, 0u32);
        for (k, &b) in bytes.iter().enumerate() {
            let shift = 8 * ((offset + k) % 4);
            mask |= 0xff << shift;
            value |= (b as u32) << shift;
        }
        // Bind from the aligned start holding the word, so huge buffers stay bindable.
        let align = self.ctx.storage_align();
        let base = (word * 4) / align * align;
        let rel = (word * 4 - base) / 4;
        let key = ((Kernel::Patch, DType::I32), Variant::Plain);
        let pipeline = self.ctx.pipeline(key, || shader::source(key))?;
        self.ctx.scoped(|| {
            let params = PatchParams {
                word: rel as u32,
                mask,
                value,
                pad: 0,
            };
            let uniform = self.ctx.create_buffer(&wgpu::BufferDescriptor {
                label: Some("webtensor patch"),
                size: std::mem::size_of::<PatchParams>() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.ctx
                .queue
                .write_buffer(&uniform, 0, bytemuck::bytes_of(&params));
            let bind = self.ctx.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: uniform.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &self.buf,
                            offset: base as u64,
                            size: wgpu::BufferSize::new((rel as u64 + 1) * 4),
                        }),
                    },
                ],
            });
            let mut enc = self
                .ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                pass.set_pipeline(&pipeline.pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(1, 1, 1);
            }
            self.ctx.submit(enc.finish());
        })
    }
}

impl BufferImpl for WebGpuBuffer {
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.write_bytes(offset, data)
    }
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>> {
        Box::pin(async move {
            let start = offset & !3;
            let end = up4(offset + len);
            let words = self
                .ctx
                .read_buffer(&self.buf, start as u64, (end - start) as u64)
                .await?;
            Ok(words[offset - start..offset - start + len].to_vec())
        })
    }
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        let (start, end) = (up4(offset), (offset + len) & !3);
        if value == 0 && end > start {
            // Zeros need no host copy: clear the aligned middle on the device.
            self.ctx.scoped(|| {
                let mut enc = self
                    .ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
                enc.clear_buffer(&self.buf, start as u64, Some((end - start) as u64));
                self.ctx.submit(enc.finish());
            })?;
            self.write_bytes(offset, &vec![0; start - offset])?;
            return self.write_bytes(end, &vec![0; offset + len - end]);
        }
        // Chunked so a large clear never needs a host copy of the whole buffer.
        const CHUNK: usize = 1 << 22;
        let fill = vec![value; len.min(CHUNK)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            self.write_bytes(offset + done, &fill[..n])?;
            done += n;
        }
        Ok(())
    }
    fn copy_from(&self, src: &Buffer, src_off: usize, dst_off: usize, len: usize) -> Result<bool> {
        let Some(src) = src.downcast::<WebGpuBuffer>() else {
            return Ok(false);
        };
        // Same-buffer copies are invalid in WebGPU; other devices' buffers are not ours.
        if std::ptr::eq(src, self) || !Rc::ptr_eq(&src.ctx, &self.ctx) {
            return Ok(false);
        }
        // copyBufferToBuffer is 4-byte granular; other copies go through the host.
        if !src_off.is_multiple_of(4) || !dst_off.is_multiple_of(4) || !len.is_multiple_of(4) {
            return Ok(false);
        }
        self.ctx.scoped(|| {
            let mut enc = self
                .ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            enc.copy_buffer_to_buffer(
                &src.buf,
                src_off as u64,
                &self.buf,
                dst_off as u64,
                len as u64,
            );
            self.ctx.submit(enc.finish());
        })?;
        Ok(true)
    }
    fn check(&self) -> Result<()> {
        self.ctx.check()
    }
}
