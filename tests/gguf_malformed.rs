//! Hostile GGUF files: every case llama.cpp's `tests/test-gguf.cpp` handcrafts, and more.
//! Each malformed file must give an `Error::Model` about the GGUF file that names what is
//! wrong and where (byte offset, key or tensor), never a panic; the reader's allocations are
//! counted and must stay under `gguf::MAX_HEADER_MEMORY` and linear in the file size. Well
//! formed files (written by our writer, or by hand the way llama.cpp's test writes them)
//! read back equal from bytes, from a `ByteSource` a prefix at a time, and at a non-zero
//! offset in memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use webtensor::graph::DType;
use webtensor::model::gguf::{
    Gguf, GgufWriter, Value, ValueType, ALIGNMENT_KEY, MAGIC, MAX_HEADER_MEMORY,
};
use webtensor::runtime::ByteSource;
use webtensor::testing::Rng;
use webtensor::{At, Error, ModelFile};

/// Counts, per thread, the largest single allocation and the bytes allocated in all.
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static TOTAL: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread-locals may be gone while a thread shuts down.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    let _ = TOTAL.try_with(|t| t.set(t.get().saturating_add(size)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f`, returning its result and (largest allocation, bytes allocated in all).
fn counted<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    LARGEST.with(|l| l.set(0));
    TOTAL.with(|t| t.set(0));
    let r = f();
    (r, LARGEST.with(Cell::get), TOTAL.with(Cell::get))
}

// ---------------------------------------------------------------- a file, byte by byte

/// A GGUF file written field by field (any field may be wrong).
#[derive(Clone, Default)]
struct F(Vec<u8>);

impl F {
    fn header(version: u32, n_tensors: u64, n_kv: u64) -> Self {
        let mut f = F(MAGIC.to_vec());
        f.u32(version).u64(n_tensors).u64(n_kv);
        f
    }
    /// A v3 header.
    fn v3(n_tensors: u64, n_kv: u64) -> Self {
        Self::header(3, n_tensors, n_kv)
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).raw(s.as_bytes())
    }
    /// A key and its type tag (the value follows).
    fn key(&mut self, k: &str, ty: u32) -> &mut Self {
        self.str(k).u32(ty)
    }
    /// A tensor info.
    fn tensor(&mut self, name: &str, ne: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.str(name).u32(ne.len() as u32);
        for &d in ne {
            self.u64(d);
        }
        self.u32(ty).u64(offset)
    }
    /// Zeros up to a multiple of `a`.
    fn pad(&mut self, a: usize) -> &mut Self {
        self.0.resize(self.0.len().next_multiple_of(a), 0);
        self
    }
    /// `n` data bytes (byte i is i % 256, as llama.cpp writes them).
    fn data(&mut self, n: usize) -> &mut Self {
        self.0.extend((0..n).map(|i| i as u8));
        self
    }
    fn done(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

const F32: u32 = 0;
const I32: u32 = 26;
const Q8_0: u32 = 8;
/// ggml's K-quant type ids and super-block bytes (256 values each).
const K_QUANTS: [(u32, &str, usize); 5] = [
    (10, "q2_k", 84),
    (11, "q3_k", 110),
    (12, "q4_k", 144),
    (13, "q5_k", 176),
    (14, "q6_k", 210),
];
const T_U8: u32 = 0;
const T_I32: u32 = 5;
const T_U32: u32 = 4;
const T_BOOL: u32 = 7;
const T_STRING: u32 = 8;
const T_ARRAY: u32 = 9;
const T_U64: u32 = 10;

/// Where an error must point.
#[derive(Debug)]
enum Where {
    Offset(usize),
    Key(&'static str),
    Tensor(&'static str),
    /// The file as a whole.
    File,
}

/// What a case must give.
enum Expect {
    /// An `Error::Model` about the GGUF file at `Where` whose message contains the text.
    Err(Where, &'static str),
    /// A parse (then checked by the function).
    Ok(fn(&Gguf)),
}

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
}

fn err(name: &'static str, bytes: Vec<u8>, at: Where, what: &'static str) -> Case {
    Case {
        name,
        bytes,
        expect: Expect::Err(at, what),
    }
}

fn ok(name: &'static str, bytes: Vec<u8>, check: fn(&Gguf)) -> Case {
    Case {
        name,
        bytes,
        expect: Expect::Ok(check),
    }
}

/// llama.cpp's "random" key/values: every scalar type, strings, and arrays of each type.
fn random_kvs(f: &mut F, rng: &mut Rng, n: usize) {
    for i in 0..n {
        let key = format!("my_key_{i}");
        match rng.below(5) {
            0 => {
                f.key(&key, T_STRING).str(&"x".repeat(rng.below(64)));
            }
            1 => {
                f.key(&key, T_ARRAY).u32(T_STRING).u64(3);
                for s in ["", "ab", "ünï"] {
                    f.str(s);
                }
            }
            2 => {
                let n = rng.below(16) as u64;
                f.key(&key, T_ARRAY).u32(T_I32).u64(n);
                for j in 0..n {
                    f.u32(j as u32);
                }
            }
            3 => {
                f.key(&key, T_U64).u64(rng.next_u32().into());
            }
            _ => {
                f.key(&key, T_BOOL).raw(&[rng.below(2) as u8]);
            }
        }
    }
}

/// `n` tensors packed at `offset_align` (as llama.cpp lays them out), `general.alignment`
/// `align`, with their data (`short` bytes less than the last tensor needs, when not 0).
fn tensors(n: usize, align: usize, offset_align: usize, short: usize) -> Vec<u8> {
    let mut f = F::v3(n as u64, u64::from(align != 32));
    if align != 32 {
        f.key(ALIGNMENT_KEY, T_U32).u32(align as u32);
    }
    let (mut off, mut end) = (0usize, 0usize);
    for i in 0..n {
        let (ty, ne, bytes) = match i % 3 {
            0 => (F32, vec![3 + i as u64, 2], (3 + i) * 2 * 4),
            1 => (Q8_0, vec![64], 68),
            _ => (I32, vec![5, 1, 2], 40),
        };
        f.tensor(&format!("my_tensor_{i}"), &ne, ty, off as u64);
        end = off + bytes;
        off = end.next_multiple_of(offset_align);
    }
    f.pad(align);
    f.data(if short > 0 { end - short } else { off });
    f.done()
}

fn check_tensors(g: &Gguf) {
    assert!(!g.tensors().is_empty());
    for t in g.tensors() {
        assert_eq!(t.offset % g.alignment(), 0);
        let d = g.tensor_data(t).unwrap();
        assert_eq!(d.len(), t.nbytes);
        // Byte j of the data section is j % 256.
        for (j, &b) in d.iter().enumerate() {
            assert_eq!(b, ((t.offset + j) % 256) as u8, "{} byte {j}", t.name);
        }
    }
}

/// Every case, malformed or not.
fn cases() -> Vec<Case> {
    let mut rng = Rng::new(42);
    let h24 = 24; // bytes of magic, version and both counts
    let mut c = vec![
        // ---- header (test-gguf.cpp HEADER_*)
        err("empty file", vec![], Where::Offset(0), "truncated: magic"),
        err("3 bytes", b"GGU".to_vec(), Where::Offset(0), "truncated"),
        err(
            "bad magic",
            {
                let mut f = F(b"FUGG".to_vec());
                f.u32(3).u64(0).u64(0).pad(32);
                f.done()
            },
            Where::Offset(0),
            "bad magic",
        ),
        err(
            "version 0",
            F::header(0, 0, 0).pad(32).done(),
            Where::Offset(4),
            "version 0",
        ),
        err(
            "version 1",
            F::header(1, 0, 0).pad(32).done(),
            Where::Offset(4),
            "version 1",
        ),
        err(
            "future version",
            F::header(4, 0, 0).pad(32).done(),
            Where::Offset(4),
            "version 4",
        ),
        err(
            "version u32::MAX",
            F::header(u32::MAX, 0, 0).done(),
            Where::Offset(4),
            "version 4294967295",
        ),
        err(
            "n_tensors -1",
            F::v3(u64::MAX, 0).pad(32).done(),
            Where::Offset(8),
            "-1 as a signed",
        ),
        err(
            "n_tensors i64::MIN",
            F::v3(1 << 63, 0).pad(32).done(),
            Where::Offset(8),
            "tensor count",
        ),
        err(
            "n_tensors 2^40",
            F::v3(1 << 40, 0).pad(32).done(),
            Where::Offset(8),
            "tensor count",
        ),
        err(
            "n_tensors one too many",
            F::v3(1, 0).pad(32).done(),
            Where::Offset(8),
            "tensor count 1",
        ),
        err(
            "n_kv -1",
            F::v3(0, u64::MAX).pad(32).done(),
            Where::Offset(16),
            "metadata count",
        ),
        err(
            "n_kv 2^62",
            F::v3(0, 1 << 62).pad(32).done(),
            Where::Offset(16),
            "metadata count",
        ),
        err(
            "n_kv i64::MAX",
            F::v3(0, i64::MAX as u64).pad(32).done(),
            Where::Offset(16),
            "metadata count",
        ),
        err(
            "truncated count",
            F::v3(0, 0).done()[..20].to_vec(),
            Where::Offset(16),
            "truncated",
        ),
        ok("empty header", F::v3(0, 0).pad(32).done(), |g| {
            assert_eq!(
                (g.version(), g.tensors().len(), g.metadata().len()),
                (3, 0, 0)
            );
        }),
        ok("version 2", F::header(2, 0, 0).done(), |g| {
            assert_eq!(g.version(), 2)
        }),
        // ---- key/values (KV_*)
        err(
            "key length -1",
            F::v3(0, 1).u64(u64::MAX).raw(&[0; 32]).done(),
            Where::Offset(h24),
            "key length",
        ),
        err(
            "key length past the end",
            F::v3(0, 1).u64(100).raw(b"k").u32(T_U8).raw(&[1]).done(),
            Where::Offset(h24),
            "key length 100",
        ),
        err(
            "empty key",
            F::v3(0, 1).key("", T_U8).raw(&[1]).done(),
            Where::Offset(h24),
            "key is empty",
        ),
        err(
            "key not UTF-8",
            F::v3(0, 1)
                .u64(2)
                .raw(&[0xff, 0xfe])
                .u32(T_U8)
                .raw(&[1])
                .done(),
            Where::Offset(h24 + 8),
            "not UTF-8",
        ),
        err(
            "bad value type",
            F::v3(0, 1).key("k", 13).raw(&[0; 8]).done(),
            Where::Key("k"),
            "value type 13",
        ),
        err(
            "value type -1",
            F::v3(0, 1).key("k", u32::MAX).raw(&[0; 8]).done(),
            Where::Key("k"),
            "value type 4294967295",
        ),
        err(
            "duplicate key",
            F::v3(0, 2)
                .key("k", T_U8)
                .raw(&[1])
                .key("k", T_U8)
                .raw(&[2])
                .done(),
            Where::Key("k"),
            "appears twice",
        ),
        err(
            "alignment of type i32",
            F::v3(0, 1).key(ALIGNMENT_KEY, T_I32).u32(32).done(),
            Where::Key(ALIGNMENT_KEY),
            "u32 power of two",
        ),
        err(
            "alignment of type u64",
            F::v3(0, 1).key(ALIGNMENT_KEY, T_U64).u64(32).done(),
            Where::Key(ALIGNMENT_KEY),
            "u32 power of two",
        ),
        err(
            "alignment 0",
            F::v3(0, 1).key(ALIGNMENT_KEY, T_U32).u32(0).done(),
            Where::Key(ALIGNMENT_KEY),
            "power of two, got U32(0)",
        ),
        err(
            "alignment 13",
            F::v3(0, 1).key(ALIGNMENT_KEY, T_U32).u32(13).done(),
            Where::Key(ALIGNMENT_KEY),
            "power of two, got U32(13)",
        ),
        err(
            "alignment 2^31 + 1",
            F::v3(0, 1)
                .key(ALIGNMENT_KEY, T_U32)
                .u32((1 << 31) + 1)
                .done(),
            Where::Key(ALIGNMENT_KEY),
            "power of two",
        ),
        err(
            "bool 2",
            F::v3(0, 1).key("k", T_BOOL).raw(&[2]).done(),
            Where::Offset(h24 + 8 + 1 + 4),
            "bool value 2",
        ),
        err(
            "string length -1",
            F::v3(0, 1).key("k", T_STRING).u64(u64::MAX).done(),
            Where::Offset(h24 + 13),
            "string length",
        ),
        err(
            "string past the end",
            F::v3(0, 1).key("k", T_STRING).u64(9).raw(b"abc").done(),
            Where::Offset(h24 + 13),
            "string length 9",
        ),
        err(
            "array length -1",
            F::v3(0, 1).key("k", T_ARRAY).u32(T_U8).u64(u64::MAX).done(),
            Where::Offset(h24 + 17),
            "array length",
        ),
        err(
            "array of strings, length 2^62",
            F::v3(0, 1)
                .key("k", T_ARRAY)
                .u32(T_STRING)
                .u64(1 << 62)
                .raw(&[0; 64])
                .done(),
            Where::Offset(h24 + 17),
            "array length",
        ),
        err(
            "array of bad type",
            F::v3(0, 1).key("k", T_ARRAY).u32(13).u64(0).done(),
            Where::Offset(h24 + 13),
            "value type 13",
        ),
        err(
            "arrays nested 100 deep",
            {
                let mut f = F::v3(0, 1);
                f.key("k", T_ARRAY);
                for _ in 0..100 {
                    f.u32(T_ARRAY).u64(1);
                }
                f.raw(&[0; 64]).done()
            },
            Where::Offset(h24 + 13 + 8 * 12),
            "nested deeper than 8",
        ),
        err(
            "u8 array past the memory cap",
            {
                // One byte apiece in the file, a whole `Value` in memory.
                let n = MAX_HEADER_MEMORY / std::mem::size_of::<Value>() + 1;
                let mut f = F::v3(0, 1);
                f.key("k", T_ARRAY).u32(T_U8).u64(n as u64).raw(&vec![7; n]);
                f.done()
            },
            Where::Offset(h24 + 17),
            "MiB of memory",
        ),
        ok(
            "random key/values",
            {
                let mut f = F::v3(0, 100);
                random_kvs(&mut f, &mut rng, 100);
                f.done()
            },
            |g| {
                assert_eq!(g.metadata().len(), 100);
                assert_eq!(g.alignment(), 32);
            },
        ),
        // ---- tensor infos (TENSORS_*)
        err(
            "tensor name length -1",
            F::v3(1, 0).u64(u64::MAX).raw(&[0; 40]).done(),
            Where::Offset(h24),
            "tensor name length",
        ),
        ok(
            "long tensor name (ggml caps names at 63 bytes, webtensor does not)",
            {
                let name = "my_tensor_with_a_very_long_name_which_is_longer_than_what_is_allowed_for_ggml_tensors";
                F::v3(1, 0)
                    .tensor(name, &[8], F32, 0)
                    .pad(32)
                    .data(32)
                    .done()
            },
            |g| assert_eq!(g.tensors()[0].name.len(), 85),
        ),
        err(
            "n_dims 0",
            F::v3(1, 0)
                .tensor("t", &[], F32, 0)
                .raw(&[0; 40])
                .pad(32)
                .done(),
            Where::Tensor("t"),
            "0 dims",
        ),
        err(
            "n_dims 5",
            F::v3(1, 0)
                .tensor("t", &[1; 5], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "5 dims",
        ),
        err(
            "n_dims u32::MAX",
            F::v3(1, 0).str("t").u32(u32::MAX).raw(&[0; 64]).done(),
            Where::Tensor("t"),
            "4294967295 dims",
        ),
        err(
            "dims -1 (bad shape)",
            F::v3(1, 0)
                .tensor("t", &[u64::MAX; 2], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "dim 0 is negative (-1)",
        ),
        err(
            "dim i64::MIN",
            F::v3(1, 0)
                .tensor("t", &[4, 1 << 63], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "dim 1 is negative",
        ),
        err(
            "zero dim",
            F::v3(1, 0)
                .tensor("t", &[8, 0], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "dim 1 is 0",
        ),
        err(
            "element count overflows (ne too big)",
            F::v3(1, 0)
                .tensor("t", &[4 * i32::MAX as u64; 2], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "overflows",
        ),
        err(
            "4 dims of 2^16: 2^64 elements",
            F::v3(1, 0)
                .tensor("t", &[1 << 16; 4], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "overflows",
        ),
        err(
            "byte size overflows (nbytes too big)",
            F::v3(1, 0)
                .tensor("t", &[1 << 31, 1 << 31, 2], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "overflows",
        ),
        err(
            "q8_0 byte size overflows",
            F::v3(1, 0)
                .tensor("t", &[(1 << 62) - 32, 4], Q8_0, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "overflows",
        ),
        err(
            "unknown tensor type",
            F::v3(1, 0).tensor("t", &[8], 15, 0).pad(32).data(32).done(),
            Where::Tensor("t"),
            "GGML type 15",
        ),
        err(
            "tensor type -1",
            F::v3(1, 0)
                .tensor("t", &[8], u32::MAX, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "GGML type 4294967295",
        ),
        err(
            "q8_0 row not whole blocks",
            F::v3(1, 0)
                .tensor("t", &[33], Q8_0, 0)
                .pad(32)
                .data(64)
                .done(),
            Where::Tensor("t"),
            "multiple of 32",
        ),
        err(
            "offset -1 (bad offset)",
            F::v3(1, 0)
                .tensor("t", &[8], F32, u64::MAX)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "not a multiple of the alignment",
        ),
        err(
            "offset misaligned",
            F::v3(1, 0)
                .tensor("t", &[8], F32, 8)
                .pad(32)
                .data(64)
                .done(),
            Where::Tensor("t"),
            "offset 8 is not a multiple",
        ),
        err(
            "offset past the end",
            F::v3(1, 0)
                .tensor("t", &[8], F32, 1 << 20)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "truncated",
        ),
        err(
            "offset near 2^63",
            F::v3(1, 0)
                .tensor("t", &[8], F32, (1 << 63) - 32)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "truncated",
        ),
        err(
            "offset near 2^64",
            F::v3(1, 0)
                .tensor("t", &[8], F32, u64::MAX - 31)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("t"),
            "truncated",
        ),
        err(
            "overlapping tensors",
            F::v3(2, 0)
                .tensor("a", &[16], F32, 0)
                .tensor("b", &[16], F32, 32)
                .pad(32)
                .data(96)
                .done(),
            Where::Tensor("a"),
            "overlaps tensor \"b\"",
        ),
        err(
            "same offset",
            F::v3(2, 0)
                .tensor("a", &[8], F32, 0)
                .tensor("b", &[8], F32, 0)
                .pad(32)
                .data(32)
                .done(),
            Where::Tensor("a"),
            "overlaps",
        ),
        err(
            "duplicate tensor names",
            F::v3(2, 0)
                .tensor("t", &[8], F32, 0)
                .tensor("t", &[8], F32, 32)
                .pad(32)
                .data(64)
                .done(),
            Where::Tensor("t"),
            "appears twice",
        ),
        err(
            "tensor name not UTF-8",
            F::v3(1, 0)
                .u64(1)
                .raw(&[0x80])
                .u32(1)
                .u64(8)
                .u32(F32)
                .u64(0)
                .pad(32)
                .data(32)
                .done(),
            Where::Offset(h24 + 8),
            "not UTF-8",
        ),
        err(
            "tensors, alignment 13",
            {
                let mut f = F::v3(1, 1);
                f.key(ALIGNMENT_KEY, T_U32)
                    .u32(13)
                    .tensor("t", &[8], F32, 0);
                f.pad(32).data(32).done()
            },
            Where::Key(ALIGNMENT_KEY),
            "power of two",
        ),
        err(
            "offsets laid out at alignment 1 (inconsistent alignment)",
            tensors(4, 32, 1, 0),
            Where::Tensor("my_tensor_1"),
            "not a multiple of the alignment 32",
        ),
        ok("tensors", tensors(9, 32, 32, 0), check_tensors),
        ok("tensors, custom alignment 1", tensors(9, 1, 1, 0), |g| {
            assert_eq!(g.alignment(), 1);
            check_tensors(g);
        }),
        ok(
            "tensors, custom alignment 256",
            tensors(5, 256, 256, 0),
            |g| {
                assert_eq!(g.alignment(), 256);
                check_tensors(g);
            },
        ),
        // ---- K-quants: rows of whole 256-value super-blocks, every super-block present
        err(
            "q2_k row of 128 (half a super-block)",
            F::v3(1, 0)
                .tensor("t", &[128, 2], 10, 0)
                .pad(32)
                .data(256)
                .done(),
            Where::Tensor("t"),
            "multiple of 256",
        ),
        err(
            "q4_k row of 288 (not whole super-blocks)",
            F::v3(1, 0)
                .tensor("t", &[288], 12, 0)
                .pad(32)
                .data(512)
                .done(),
            Where::Tensor("t"),
            "multiple of 256",
        ),
        err(
            "q6_k row of 32 (a Q8_0 block, not a super-block)",
            F::v3(1, 0)
                .tensor("t", &[32, 4], 14, 0)
                .pad(32)
                .data(1024)
                .done(),
            Where::Tensor("t"),
            "multiple of 256",
        ),
        err(
            "q5_k last super-block one byte short",
            F::v3(1, 0)
                .tensor("t", &[256, 3], 13, 0)
                .pad(32)
                .data(3 * 176 - 1)
                .done(),
            Where::Tensor("t"),
            "truncated",
        ),
        err(
            "q3_k second tensor's super-block cut",
            {
                let mut f = F::v3(2, 0);
                f.tensor("a", &[256], 11, 0).tensor("b", &[512], 11, 128);
                f.pad(32).data(128 + 110).done()
            },
            Where::Tensor("b"),
            "truncated",
        ),
        err(
            "q2_k byte size overflows",
            F::v3(1, 0)
                .tensor("t", &[1 << 40, 1 << 30], 10, 0)
                .pad(32)
                .data(84)
                .done(),
            Where::Tensor("t"),
            "overflows",
        ),
        ok(
            "every K-quant, whole super-blocks",
            {
                let mut f = F::v3(5, 0);
                let mut off = 0u64;
                for (i, (ty, _, bytes)) in K_QUANTS.iter().enumerate() {
                    f.tensor(&format!("k{i}"), &[512, 3], *ty, off);
                    off = (off + 6 * *bytes as u64).next_multiple_of(32);
                }
                f.pad(32).data(off as usize).done()
            },
            |g| {
                for (t, (_, name, bytes)) in g.tensors().iter().zip(K_QUANTS) {
                    assert_eq!(t.dtype.name(), name);
                    assert_eq!(t.nbytes, 6 * bytes, "{}", t.name);
                    assert_eq!(g.tensor_data(t).unwrap().len(), 6 * bytes);
                }
                check_tensors(g);
            },
        ),
        // ---- data section (DATA_*)
        err(
            "data one byte short",
            tensors(3, 32, 32, 1),
            Where::Tensor("my_tensor_2"),
            "truncated",
        ),
        err(
            "no data section",
            F::v3(1, 0).tensor("t", &[8], F32, 0).done(),
            Where::File,
            "data section starts at",
        ),
        err(
            "data section past the padding",
            F::v3(1, 0).tensor("t", &[8], F32, 0).raw(&[0; 3]).done(),
            Where::File,
            "data section starts at",
        ),
        err(
            "tensor sizes near 2^63 (mem size overflow)",
            {
                let big = 0x7FFF_FFFF_FFFF_FFC0u64;
                let mut f = F::v3(2, 0);
                f.tensor("a", &[big / 4], I32, 0)
                    .tensor("b", &[big / 4], I32, big);
                f.pad(32).data(32).done()
            },
            Where::Tensor("a"),
            "truncated",
        ),
        err(
            "tensor sizes near 2^64",
            {
                let mut f = F::v3(2, 0);
                f.tensor("a", &[(1 << 62) - 8], F32, 0).tensor(
                    "b",
                    &[(1 << 62) - 8],
                    F32,
                    (1 << 63) - 32,
                );
                f.pad(32).data(32).done()
            },
            Where::Tensor("a"),
            "truncated",
        ),
        err(
            "data, alignment 13",
            {
                let mut f = F::v3(1, 1);
                f.key(ALIGNMENT_KEY, T_U32)
                    .u32(13)
                    .tensor("t", &[8], F32, 0);
                f.pad(13).data(32).done()
            },
            Where::Key(ALIGNMENT_KEY),
            "power of two",
        ),
    ];
    // Random kvs and tensors together, as llama.cpp's DATA_SUCCESS.
    let mut f = F::v3(3, 20);
    random_kvs(&mut f, &mut rng, 20);
    let mut off = 0;
    for i in 0..3u64 {
        f.tensor(&format!("t{i}"), &[8 * (i + 1), 2], F32, off);
        off += 64 * (i + 1);
    }
    f.pad(32).data(off as usize);
    c.push(ok("random key/values and tensors", f.done(), |g| {
        assert_eq!((g.metadata().len(), g.tensors().len()), (20, 3));
        check_tensors(g);
    }));
    c
}

fn check_where(at: &Option<At>, want: &Where) -> bool {
    match (at, want) {
        (None, Where::File) => true,
        (Some(At::Offset(o)), Where::Offset(w)) => o == w,
        (Some(At::Key(k)), Where::Key(w)) => k == w,
        (Some(At::Tensor(t)), Where::Tensor(w)) => t == w,
        _ => false,
    }
}

#[test]
fn malformed_files_are_errors_that_say_what_and_where() {
    let cases = cases();
    let (mut n_err, mut n_ok) = (0, 0);
    let mut failures = vec![];
    for case in &cases {
        let len = case.bytes.len();
        let (r, largest, total) = counted(|| Gguf::parse(&case.bytes));
        // Allocations: under the stated cap, and linear in the file (a header's values take
        // a few times their bytes in memory; a `u8` array element at most 32 times).
        if largest > MAX_HEADER_MEMORY || total > 64 * len + (64 << 10) {
            failures.push(format!(
                "{}: allocated {total} bytes (largest {largest}) for a {len}-byte file",
                case.name
            ));
        }
        match (&case.expect, r) {
            (Expect::Ok(check), Ok(g)) => {
                check(&g);
                n_ok += 1;
            }
            (Expect::Err(want_at, want), Err(e)) => {
                let msg = e.to_string();
                match &e {
                    Error::Model {
                        file: ModelFile::Gguf,
                        at,
                        what,
                        ..
                    } if what.contains(want) && check_where(at, want_at) => n_err += 1,
                    _ => failures.push(format!(
                        "{}: want {want:?} at {want_at:?}, got {msg:?} ({e:?})",
                        case.name
                    )),
                }
            }
            (Expect::Ok(_), Err(e)) => failures.push(format!("{}: {e}", case.name)),
            (Expect::Err(_, want), Ok(_)) => {
                failures.push(format!("{}: parsed, want an error {want:?}", case.name))
            }
        }
    }
    println!(
        "{} GGUF cases: {n_err} malformed files gave the expected error, {n_ok} files parsed",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n_err >= 60, "only {n_err} malformed cases");
}

/// Each case, also parsed from every prefix of its header (as the loader reads a file it
/// does not hold whole): `None` until the header is in, then the same answer as the whole.
#[test]
fn malformed_files_give_the_same_answer_from_prefixes() {
    for case in cases().iter().filter(|c| c.bytes.len() < 1 << 16) {
        let len = case.bytes.len();
        let whole = Gguf::parse_header(&case.bytes, len).map(|g| g.map(|g| g.tensors().to_vec()));
        for n in 0..=len {
            let (r, largest, _) = counted(|| Gguf::parse_header(&case.bytes[..n], len));
            assert!(largest <= MAX_HEADER_MEMORY, "{}", case.name);
            match (r, &whole) {
                (Ok(None), _) => {}
                (Ok(Some(g)), Ok(Some(w))) => assert_eq!(g.tensors(), &w[..], "{}", case.name),
                (Err(e), Err(w)) => assert_eq!(e.to_string(), w.to_string(), "{}", case.name),
                (r, w) => panic!("{} from {n} bytes: {r:?}, whole: {w:?}", case.name),
            }
        }
    }
}

// ---------------------------------------------------------------- round trips

/// A file of every value type and dtype, written by our writer.
/// A tensor as written: name, dtype, shape, data.
type Written = (String, DType, Vec<usize>, Vec<u8>);

fn written(seed: u64) -> (GgufWriter, Vec<Written>) {
    let mut rng = Rng::new(seed);
    let mut w = GgufWriter::new();
    w.set("general.architecture", Value::String("test".into()))
        .unwrap();
    for (i, v) in [
        Value::U8(1),
        Value::I8(-1),
        Value::U16(2),
        Value::I16(-2),
        Value::U32(3),
        Value::I32(-3),
        Value::F32(0.5),
        Value::Bool(false),
        Value::U64(u64::MAX),
        Value::I64(i64::MIN),
        Value::F64(f64::MIN_POSITIVE),
        Value::String("ünï".into()),
        Value::Array(ValueType::F32, vec![Value::F32(1.0), Value::F32(-0.0)]),
        Value::Array(
            ValueType::Array,
            vec![Value::Array(
                ValueType::String,
                vec![Value::String("x".into())],
            )],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        w.set(&format!("k.{i}"), v).unwrap();
    }
    let mut tensors = vec![];
    for i in 0..12 {
        let (dtype, ne): (DType, Vec<usize>) = match i % 6 {
            0 => (DType::F32, vec![1 + rng.below(9), 1 + rng.below(3)]),
            1 => (DType::F16, vec![1 + rng.below(9)]),
            2 => (DType::Q8_0, vec![32 * (1 + rng.below(3)), 1 + rng.below(2)]),
            3 => (DType::Q4_0, vec![32, 1, 1 + rng.below(2)]),
            4 => (
                DType::K_QUANTS[rng.below(5)],
                vec![256 * (1 + rng.below(2)), 1 + rng.below(2)],
            ),
            _ => (DType::I32, vec![1 + rng.below(5), 1, 1, 2]),
        };
        let rows: usize = ne[1..].iter().product();
        let n = ne[0] / dtype.block_size() * dtype.block_bytes() * rows;
        let data: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
        let name = format!("blk.{i}.w");
        w.add_tensor(&name, dtype, &ne, data.clone()).unwrap();
        tensors.push((name, dtype, ne, data));
    }
    (w, tensors)
}

/// A `ByteSource` that serves only what is asked for (as a JS array does) and counts reads.
struct Source<'a>(&'a [u8], Cell<usize>);

impl ByteSource for Source<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn read_into(&self, offset: usize, out: &mut [u8]) -> webtensor::Result<()> {
        self.1.set(self.1.get() + out.len());
        self.0.read_into(offset, out)
    }
}

/// Reads a file the way the model loader does: a growing prefix until the header parses,
/// then each tensor's bytes from its range.
fn read_via_source(src: &dyn ByteSource) -> (Gguf<'static>, Vec<Vec<u8>>) {
    let mut n = 64.min(src.len());
    let g = loop {
        let mut prefix = vec![0; n];
        src.read_into(0, &mut prefix).unwrap();
        match Gguf::parse_header(&prefix, src.len()).unwrap() {
            Some(g) => break g,
            None => n = (n * 4).min(src.len()),
        }
    };
    let data = g
        .tensors()
        .iter()
        .map(|t| {
            let r = g.tensor_range(t);
            let mut out = vec![0; r.len()];
            src.read_into(r.start, &mut out).unwrap();
            out
        })
        .collect();
    (g, data)
}

#[test]
fn written_files_read_back_equal_from_bytes_a_source_and_any_offset() {
    for seed in 0..8 {
        let (w, tensors) = written(seed);
        let bytes = w.to_bytes();
        let check = |g: &Gguf, data: &[Vec<u8>], how: &str| {
            assert_eq!(g.version(), 3, "{how}");
            assert_eq!(g.metadata().len(), 15, "{how}");
            assert_eq!(g.get("k.8"), Some(&Value::U64(u64::MAX)), "{how}");
            assert_eq!(g.get_str("k.11").unwrap(), "ünï", "{how}");
            assert_eq!(g.tensors().len(), tensors.len(), "{how}");
            for ((t, d), (name, dtype, ne, want)) in g.tensors().iter().zip(data).zip(&tensors) {
                assert_eq!((&t.name, t.dtype, &t.ne), (name, *dtype, ne), "{how}");
                assert_eq!(d, want, "{how}: {name}");
            }
        };
        // From bytes.
        let g = Gguf::parse(&bytes).unwrap();
        let data: Vec<Vec<u8>> = g
            .tensors()
            .iter()
            .map(|t| g.tensor_data(t).unwrap().to_vec())
            .collect();
        check(&g, &data, "bytes");
        // Written again: the same bytes.
        let mut w2 = GgufWriter::new();
        for (k, v) in g.metadata() {
            w2.set(k, v.clone()).unwrap();
        }
        for (t, d) in g.tensors().iter().zip(&data) {
            w2.add_tensor(&t.name, t.dtype, &t.ne, d.clone()).unwrap();
        }
        assert_eq!(w2.to_bytes(), bytes);
        // From a source a prefix at a time: reads only the header's prefix and the tensors.
        let src = Source(&bytes, Cell::new(0));
        let (g, data) = read_via_source(&src);
        check(&g, &data, "source");
        let tensor_bytes: usize = tensors.iter().map(|t| t.3.len()).sum();
        assert!(src.1.get() < 2 * bytes.len() + tensor_bytes);
        // At a non-zero offset in memory (the slice not aligned to anything).
        for pad in [1, 3, 17, 4096 + 5] {
            let mut buf = vec![0xAA; pad];
            buf.extend_from_slice(&bytes);
            let g = Gguf::parse(&buf[pad..]).unwrap();
            let data: Vec<Vec<u8>> = g
                .tensors()
                .iter()
                .map(|t| g.tensor_data(t).unwrap().to_vec())
                .collect();
            check(&g, &data, &format!("offset {pad}"));
        }
    }
}

/// Quantized tensors whose block scales (`d`, or a K-quant's `dmin`) are NaN or ±Inf parse
/// (the reader checks layout, not values) but are refused when their weights are loaded, with
/// an `Error::Model` naming the tensor and the block: such a block dequantizes to NaN or Inf
/// everywhere, a wrong answer much later otherwise. Every quantized dtype, every scale field,
/// a bad block first, in the middle and last; a sound file of the same tensors loads.
#[test]
fn non_finite_block_scales_are_errors_naming_the_tensor_at_load() {
    use std::rc::Rc;
    use webtensor::backend::{store_weights, Device, WeightSpec};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::graph::{row_from_f32, QK_K};

    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    // (dtype, byte offsets of its f16 scales within a block)
    let types: [(DType, &[usize]); 10] = [
        (DType::Q8_0, &[0]),
        (DType::Q4_0, &[0]),
        (DType::Q4_1, &[0, 2]),
        (DType::Q5_1, &[0, 2]),
        (DType::IQ4_NL, &[0]),
        (DType::Q2_K, &[80, 82]),
        (DType::Q3_K, &[108]),
        (DType::Q4_K, &[0, 2]),
        (DType::Q5_K, &[0, 2]),
        (DType::Q6_K, &[208]),
    ];
    let (n0, rows) = (2 * QK_K, 3);
    let values: Vec<f32> = (0..n0 * rows).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut n_err = 0;
    for (dtype, offsets) in types {
        let bb = dtype.block_bytes();
        let mut data = vec![0u8; dtype.row_bytes(n0).unwrap() * rows];
        row_from_f32(dtype, &values, &mut data).unwrap();
        let blocks = data.len() / bb;
        let file = |data: &[u8]| {
            let mut w = GgufWriter::new();
            w.add_tensor("a.weight", DType::F32, &[4], vec![0; 16])
                .unwrap();
            w.add_tensor("blk.0.w", dtype, &[n0, rows], data.to_vec())
                .unwrap();
            w.to_bytes()
        };
        let load = |bytes: &[u8]| {
            let g = Gguf::parse(bytes).unwrap();
            let specs: Vec<WeightSpec> = g
                .tensors()
                .iter()
                .map(|t| WeightSpec {
                    name: t.name.clone(),
                    device: 0,
                    dtype: t.dtype,
                    ne: t.ne.clone(),
                    ranges: vec![g.tensor_range(t)],
                    matrix_only: t.ne.len() == 2,
                })
                .collect();
            store_weights(
                std::slice::from_ref(&cpu),
                1,
                &specs,
                &bytes,
                &mut |_, _| {},
            )
            .map(|_| ())
        };
        load(&file(&data)).unwrap_or_else(|e| panic!("{dtype:?}: the sound file: {e}"));
        for &o in offsets {
            for block in [0, blocks / 2, blocks - 1] {
                for bad in [half::f16::NAN, half::f16::INFINITY, half::f16::NEG_INFINITY] {
                    let mut d = data.clone();
                    d[block * bb + o..block * bb + o + 2].copy_from_slice(&bad.to_le_bytes());
                    let bytes = file(&d);
                    Gguf::parse(&bytes).expect("the reader checks layout, not values");
                    let e = load(&bytes).expect_err("a non-finite scale must not load");
                    let what = format!("block {block} has a non-finite scale");
                    match &e {
                        Error::Model {
                            file: ModelFile::Gguf,
                            at: Some(At::Tensor(t)),
                            what: w,
                            ..
                        } if t == "blk.0.w" && w.contains(&what) => n_err += 1,
                        _ => panic!("{dtype:?} scale at {o}, block {block}, {bad}: {e:?}"),
                    }
                }
            }
        }
    }
    println!("{n_err} corrupt-scale files refused at load, naming the tensor and block");
    assert_eq!(n_err, 3 * 3 * (1 + 1 + 2 + 2 + 1 + 2 + 1 + 2 + 2 + 1));
}
