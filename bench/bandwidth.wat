;; Streaming-read probe for bench/generate.html (assembled by scripts/bench-generate.sh with
;; wat2wasm into target/bench/bandwidth.wasm): sum(n, reps) adds the first n bytes of memory
;; (n a multiple of 64) as i32x4 lanes, 64 bytes per iteration into four accumulators, reps
;; times over; the result only keeps the loads alive.
(module
  (memory (export "mem") 4096)
  (func (export "sum") (param $n i32) (param $reps i32) (result i32)
    (local $p i32) (local $a v128) (local $b v128) (local $c v128) (local $d v128)
    (loop $rep
      (local.set $p (i32.const 0))
      (loop $l
        (local.set $a (i32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
        (local.set $b (i32x4.add (local.get $b) (v128.load offset=16 (local.get $p))))
        (local.set $c (i32x4.add (local.get $c) (v128.load offset=32 (local.get $p))))
        (local.set $d (i32x4.add (local.get $d) (v128.load offset=48 (local.get $p))))
        (br_if $l (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 64))) (local.get $n))))
      (br_if $rep (local.tee $reps (i32.sub (local.get $reps) (i32.const 1)))))
    (i32x4.extract_lane 0
      (i32x4.add (i32x4.add (local.get $a) (local.get $b)) (i32x4.add (local.get $c) (local.get $d))))))
