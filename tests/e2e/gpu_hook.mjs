// A page-side hook on the browser's WebGPU objects, for tests/e2e/device_loss.test.mjs and
// scripts/soak.mjs: installed before the page runs (playwright's addInitScript), it records
// every GPUDevice the page gets, counts queue submits, GPUBuffers made and destroyed (as the
// browser sees them: a buffer dropped without destroy() holds its memory until the garbage
// collector finalizes it), and can destroy a device right after its n-th next submit — the
// browser's own device loss (GPUDevice.destroy(): `lost` resolves, later work is dropped,
// mapAsync rejects), in the middle of whatever call made that submit. It touches nothing in
// the package: no test export ships in the production builds.
//
//   await page.addInitScript(installGpuHook);
//   // in the page: globalThis.__gpuHook.loseAfterSubmits(1); await model.embed([...]);

/** Runs in the page (serialized by addInitScript): installs `globalThis.__gpuHook`. */
export function installGpuHook() {
  const hook = {
    devices: [], submits: 0, created: 0, createdBytes: 0, destroyed: 0, destroyedBytes: 0, lost: [],
    armed: 0,
    /** Destroys the device of the `n`-th submit from now, right after that submit. */
    loseAfterSubmits(n) { hook.armed = n; },
    /** GPUBuffers made and not destroyed (still holding memory unless garbage-collected). */
    undestroyed() { return { count: hook.created - hook.destroyed, bytes: hook.createdBytes - hook.destroyedBytes }; },
  };
  globalThis.__gpuHook = hook;
  if (typeof GPUAdapter !== 'function') return;
  const requestDevice = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = async function (...args) {
    const device = await requestDevice.apply(this, args);
    hook.devices.push(device);
    device.lost.then((info) => hook.lost.push({ reason: info.reason, message: info.message }));
    return device;
  };
  const submit = GPUQueue.prototype.submit;
  GPUQueue.prototype.submit = function (...args) {
    const out = submit.apply(this, args);
    hook.submits++;
    if (hook.armed > 0 && --hook.armed === 0) hook.devices.find((d) => d.queue === this)?.destroy();
    return out;
  };
  const createBuffer = GPUDevice.prototype.createBuffer;
  GPUDevice.prototype.createBuffer = function (...args) {
    const buffer = createBuffer.apply(this, args);
    hook.created++;
    hook.createdBytes += buffer.size;
    return buffer;
  };
  const destroy = GPUBuffer.prototype.destroy;
  const destroyed = new WeakSet();
  GPUBuffer.prototype.destroy = function () {
    if (!destroyed.has(this)) {
      destroyed.add(this);
      hook.destroyed++;
      hook.destroyedBytes += this.size;
    }
    return destroy.call(this);
  };
}
