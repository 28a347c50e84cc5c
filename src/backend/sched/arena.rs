//! Offset allocation inside one arena: best-fit over a free list that merges neighbours,
//! growing the arena when nothing fits (after ggml-alloc's dynamic allocator).

/// Offsets handed out inside a growing arena.
#[derive(Debug)]
pub struct Arena {
    align: usize,
    free: Vec<(usize, usize)>,
    end: usize,
}

impl Arena {
    /// An empty arena whose offsets and sizes are multiples of `align`.
    pub fn new(align: usize) -> Self {
        Self {
            align: align.max(1),
            free: Vec::new(),
            end: 0,
        }
    }

    fn round(&self, size: usize) -> usize {
        size.max(1).div_ceil(self.align) * self.align
    }

    /// Reserves `size` bytes and returns their offset.
    pub fn alloc(&mut self, size: usize) -> usize {
        let size = self.round(size);
        let best = (0..self.free.len())
            .filter(|&i| self.free[i].1 >= size)
            .min_by_key(|&i| self.free[i].1);
        if let Some(i) = best {
            let (off, len) = self.free[i];
            if len == size {
                self.free.remove(i);
            } else {
                self.free[i] = (off + size, len - size);
            }
            return off;
        }
        // Nothing fits: extend a free block at the end, or append.
        if let Some(&(off, len)) = self.free.last() {
            if off + len == self.end {
                self.free.pop();
                self.end = off + size;
                return off;
            }
        }
        let off = self.end;
        self.end += size;
        off
    }

    /// Returns `size` bytes at `off` (as given by `alloc`).
    pub fn free(&mut self, off: usize, size: usize) {
        let size = self.round(size);
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, size));
        if i + 1 < self.free.len() && off + size == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == off {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }

    /// Bytes the arena needs at its largest.
    pub fn size(&self) -> usize {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_blocks_and_merges_neighbours() {
        let mut a = Arena::new(16);
        let x = a.alloc(32);
        let y = a.alloc(16);
        let z = a.alloc(48);
        assert_eq!((x, y, z), (0, 32, 48));
        a.free(x, 32);
        a.free(y, 16);
        assert_eq!(a.alloc(40), 0, "merged 0..48 is reused");
        assert_eq!(a.size(), 96);
        a.free(z, 48);
        assert_eq!(a.alloc(64), 48, "the free block at the end grows");
        assert_eq!(a.size(), 112);
    }
}
