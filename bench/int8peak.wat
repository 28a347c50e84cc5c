;; Int8 compute probe for bench/generate.html (assembled by scripts/bench-generate.sh with
;; wat2wasm --enable-relaxed-simd into target/bench/int8peak.wasm), the compute side of the
;; page's limits beside bench/bandwidth.wat: dot(iters) runs iters × 8 independent
;; i32x4.relaxed_dot_i8x16_i7x16_add_s (16 multiply-adds each) on registers, no memory; the
;; result only keeps the chains alive. Multiply-adds per second = 128 × iters / time.
(module
  (func (export "dot") (param $iters i32) (result i32)
    (local $x v128) (local $w v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (local $e v128) (local $f v128) (local $g v128) (local $h v128)
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
      (br_if $l (local.tee $iters (i32.sub (local.get $iters) (i32.const 1)))))
    (i32x4.extract_lane 0
      (i32x4.add
        (i32x4.add (i32x4.add (local.get $a) (local.get $b)) (i32x4.add (local.get $c) (local.get $d)))
        (i32x4.add (i32x4.add (local.get $e) (local.get $f)) (i32x4.add (local.get $g) (local.get $h)))))))
