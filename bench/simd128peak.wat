;; SIMD128 compute probe for bench/generate.html (assembled by scripts/bench-generate.sh with
;; wat2wasm into target/bench/simd128peak.wasm): the limits of engines without relaxed SIMD
;; (WebKit), where bench/int8peak.wat does not compile and the CPU kernels run their SIMD128
;; build. On registers, no memory; the results only keep the chains alive; the operand
;; changes every step (one add), or the engine hoists the pure products out of the loop.
;; dot(iters): iters × 8 independent chains of i32x4.dot_i16x8_s and an i32x4.add (8
;; multiply-adds an instruction: what the SIMD128 build's int8 panels take after widening
;; their bytes, `simd::ActSlice`); 64 × iters / time. fma(iters): iters × 8 chains of
;; f32x4.mul and f32x4.add (4 multiply-adds a pair: the f32 kernels' SIMD128 step, no fused
;; multiply-add in SIMD128); 32 × iters / time.
(module
  (func (export "dot") (param $iters i32) (result i32)
    (local $x v128) (local $w v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
    (local.set $x (i16x8.splat (local.get $iters)))
    (local.set $w (i16x8.splat (i32.const 3)))
    (loop $l
      (local.set $x (i16x8.add (local.get $x) (local.get $w)))
      (local.set $a (i32x4.add (local.get $a) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $b (i32x4.add (local.get $b) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $c (i32x4.add (local.get $c) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $d (i32x4.add (local.get $d) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $e (i32x4.add (local.get $e) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $f (i32x4.add (local.get $f) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $g (i32x4.add (local.get $g) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (local.set $h (i32x4.add (local.get $h) (i32x4.dot_i16x8_s (local.get $x) (local.get $w))))
      (br_if $l (local.tee $iters (i32.sub (local.get $iters) (i32.const 1)))))
    (i32x4.extract_lane 0
      (i32x4.add
        (i32x4.add (i32x4.add (local.get $a) (local.get $b)) (i32x4.add (local.get $c) (local.get $d)))
        (i32x4.add (i32x4.add (local.get $e) (local.get $f)) (i32x4.add (local.get $g) (local.get $h))))))
  (func (export "fma") (param $iters i32) (result i32)
    (local $x v128) (local $w v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
    (local.set $x (f32x4.splat (f32.convert_i32_s (local.get $iters))))
    (local.set $w (f32x4.splat (f32.const 1.0e-7)))
    (loop $l
      (local.set $x (f32x4.add (local.get $x) (local.get $w)))
      (local.set $a (f32x4.add (local.get $a) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $b (f32x4.add (local.get $b) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $c (f32x4.add (local.get $c) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $d (f32x4.add (local.get $d) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $e (f32x4.add (local.get $e) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $f (f32x4.add (local.get $f) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $g (f32x4.add (local.get $g) (f32x4.mul (local.get $x) (local.get $w))))
      (local.set $h (f32x4.add (local.get $h) (f32x4.mul (local.get $x) (local.get $w))))
      (br_if $l (local.tee $iters (i32.sub (local.get $iters) (i32.const 1)))))
    (i32.trunc_sat_f32_s (f32x4.extract_lane 0
      (f32x4.add
        (f32x4.add (f32x4.add (local.get $a) (local.get $b)) (f32x4.add (local.get $c) (local.get $d)))
        (f32x4.add (f32x4.add (local.get $e) (local.get $f)) (f32x4.add (local.get $g) (local.get $h))))))))
