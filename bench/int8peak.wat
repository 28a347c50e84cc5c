;; Int8 compute probe for bench/generate.html (assembled by scripts/bench-generate.sh with
;; wat2wasm --enable-relaxed-simd into target/bench/int8peak.wasm), the compute side of the
;; page's limits beside bench/bandwidth.wat, on registers, no memory; the results only keep
;; the chains alive. Two forms of relaxed SIMD's 8-bit dot, 16 multiply-adds an instruction:
;; dot(iters): iters × 12 independent chains of i32x4.relaxed_dot_i8x16_i7x16_add_s (12, not
;; 8: with AVX-VNNI `vpdpbusd` has a latency of about 5 cycles and 2 issue a cycle, so 8
;; chains measured latency, 98 against 116 G multiply-adds/s here); multiply-adds per second
;; = 192 × iters / time. dot16(iters): iters × 8 of the 16-bit form,
;; i16x8.relaxed_dot_i8x16_i7x16_s and an i16x8.add (the operand varied by one i8x16.add a
;; step, or the engine hoists the pure dots out of the loop): one x86 instruction where the
;; 32-bit form takes three (no AVX-VNNI), what the CPU kernels then use for small weights
;; (`simd::narrow_dots_faster`); 128 × iters / time. The page's int8 limit is the faster.
(module
  (func (export "dot") (param $iters i32) (result i32)
    (local $x v128) (local $w v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
    (local $i v128) (local $j v128) (local $k v128) (local $m v128)
    (local.set $x (i8x16.splat (local.get $iters)))
    (local.set $w (i8x16.splat (i32.const 3)))
    (loop $l
      (local.set $a (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $a)))
      (local.set $b (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $b)))
      (local.set $c (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $c)))
      (local.set $d (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $d)))
      (local.set $e (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $e)))
      (local.set $f (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $f)))
      (local.set $g (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $g)))
      (local.set $h (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $h)))
      (local.set $i (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $i)))
      (local.set $j (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $j)))
      (local.set $k (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $k)))
      (local.set $m (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $w) (local.get $m)))
      (br_if $l (local.tee $iters (i32.sub (local.get $iters) (i32.const 1)))))
    (i32x4.extract_lane 0
      (i32x4.add
        (i32x4.add
          (i32x4.add (i32x4.add (local.get $a) (local.get $b)) (i32x4.add (local.get $c) (local.get $d)))
          (i32x4.add (i32x4.add (local.get $e) (local.get $f)) (i32x4.add (local.get $g) (local.get $h))))
        (i32x4.add (i32x4.add (local.get $i) (local.get $j)) (i32x4.add (local.get $k) (local.get $m))))))
  (func (export "dot16") (param $iters i32) (result i32)
    (local $x v128) (local $w v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
    (local.set $x (i8x16.splat (local.get $iters)))
    (local.set $w (i8x16.splat (i32.const 3)))
    (loop $l
      ;; x changes every step, or the engine hoists the (pure) dots out of the loop.
      (local.set $x (i8x16.add (local.get $x) (local.get $w)))
      (local.set $a (i16x8.add (local.get $a) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $b (i16x8.add (local.get $b) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $c (i16x8.add (local.get $c) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $d (i16x8.add (local.get $d) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $e (i16x8.add (local.get $e) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $f (i16x8.add (local.get $f) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $g (i16x8.add (local.get $g) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (local.set $h (i16x8.add (local.get $h) (i16x8.dot_i8x16_i7x16_s (local.get $x) (local.get $w))))
      (br_if $l (local.tee $iters (i32.sub (local.get $iters) (i32.const 1)))))
    (i32x4.extract_lane 0
      (i16x8.add
        (i16x8.add (i16x8.add (local.get $a) (local.get $b)) (i16x8.add (local.get $c) (local.get $d)))
        (i16x8.add (i16x8.add (local.get $e) (local.get $f)) (i16x8.add (local.get $g) (local.get $h)))))))
