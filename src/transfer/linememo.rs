//! Line counts per block of a regular file, recorded by the `-l` size count (which reads the
//! whole file before the transfer starts), kept in the input's
//! [`InputSpec`](super::input::InputSpec) and reused by [`super::Path::FileLines`], so a
//! cached file is not counted twice.
//!
//! A record is used only while the file's [`FileVersion`] (device, inode, size, mtime,
//! ctime) is unchanged; the engine checks it before every chunk and counts the bytes itself
//! as soon as it differs. Blocks only partly covered by a chunk are counted from the file.
//!
//! Must not: grow without bound (at most [`MAX_BLOCKS`] counts per file).

use crate::sys::FileVersion;

/// Most blocks per file (64 KiB of counts).
const MAX_BLOCKS: u64 = 16 << 10;
/// Smallest block.
const MIN_BLOCK: u64 = 64 << 10;
/// Files at least this long (from the starting offset) are recorded.
pub(super) const MIN_LEN: u64 = 4 << 20;
/// Separator counts of `[start, version.size)` in blocks aligned to multiples of `block`.
#[derive(Debug, Clone)]
pub(super) struct Memo {
    /// The file version that was counted.
    pub(super) version: FileVersion,
    /// The separator counted.
    pub(super) sep: u8,
    /// First offset counted.
    pub(super) start: u64,
    /// Block size (a power of two).
    pub(super) block: u64,
    /// Count per block; block `i` is `[i * block, (i + 1) * block)` cut to `[start, size)`,
    /// numbered from the block holding `start`.
    pub(super) counts: Vec<u32>,
}

impl Memo {
    /// An empty record for counting `[start, version.size)`.
    pub(super) fn new(version: FileVersion, sep: u8, start: u64) -> Memo {
        let len = version.size.saturating_sub(start);
        let block = (len / MAX_BLOCKS + 1).next_power_of_two().max(MIN_BLOCK);
        Memo {
            version,
            sep,
            start,
            block,
            counts: Vec::new(),
        }
    }

    /// The byte range of the next block to count, or None when all are counted.
    pub(super) fn next_block(&self) -> Option<(u64, u64)> {
        let first = self.start / self.block;
        let i = first + self.counts.len() as u64;
        let lo = (i * self.block).max(self.start);
        let hi = ((i + 1) * self.block).min(self.version.size);
        (lo < hi).then_some((lo, hi))
    }

    /// True if the record counts this version of the file, for `sep`, from at most `pos`.
    pub(super) fn fits(&self, version: &FileVersion, sep: u8, pos: u64) -> bool {
        self.version == *version && self.sep == sep && self.start <= pos
    }

    /// `len` shortened so that `pos + len` ends on a block boundary when that is possible,
    /// so later chunks use whole blocks.
    pub(super) fn aligned_len(&self, pos: u64, len: u64) -> u64 {
        let end = pos + len;
        if end >= self.version.size {
            return len;
        }
        let aligned = end - end % self.block;
        if aligned > pos {
            aligned - pos
        } else {
            len
        }
    }

    /// Separators in `[pos, end)`: whole recorded blocks from the record, the rest through
    /// `count(lo, hi)`.
    pub(super) fn lines(&self, pos: u64, end: u64, mut count: impl FnMut(u64, u64) -> u64) -> u64 {
        let first = self.start / self.block;
        let mut at = pos;
        let mut lines = 0;
        while at < end {
            let i = at / self.block;
            let lo = (i * self.block).max(self.start);
            let hi = ((i + 1) * self.block).min(self.version.size);
            let recorded = i >= first && lo < hi && ((i - first) as usize) < self.counts.len();
            if !recorded {
                // Outside the record (before start is impossible; past the size it can be).
                lines += count(at, end);
                break;
            }
            let piece_end = hi.min(end);
            if at == lo && piece_end == hi {
                lines += u64::from(self.counts[(i - first) as usize]);
            } else {
                lines += count(at, piece_end);
            }
            at = piece_end;
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(size: u64) -> FileVersion {
        FileVersion {
            dev: 1,
            ino: 2,
            size,
            mtime_ns: 3,
            ctime_ns: 4,
        }
    }

    /// A record over `data`, counting newlines.
    fn memo_of(data: &[u8], start: u64) -> Memo {
        let mut m = Memo::new(version(data.len() as u64), b'\n', start);
        while let Some((lo, hi)) = m.next_block() {
            let n = data[lo as usize..hi as usize]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            m.counts.push(n as u32);
        }
        m
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| {
                if i % 7 == 0 || i % 13 == 0 {
                    b'\n'
                } else {
                    b'x'
                }
            })
            .collect()
    }

    #[test]
    fn any_range_is_counted_exactly_from_blocks_and_pieces() {
        let d = data((5 << 20) + 12_345);
        let direct = |lo: u64, hi: u64| {
            d[lo as usize..hi as usize]
                .iter()
                .filter(|&&b| b == b'\n')
                .count() as u64
        };
        for start in [0u64, 1, 65_535, 65_536, 1_000_003] {
            let m = memo_of(&d, start);
            assert_eq!(m.block, MIN_BLOCK);
            let size = d.len() as u64;
            for (pos, len) in [
                (start, 1u64),
                (start, 65_536),
                (start, size - start),
                (start + 65_537, 3 << 20),
                (size - 1, 1),
                (size - 70_000, 70_000),
            ] {
                let mut pieces = 0;
                let got = m.lines(pos, pos + len, |lo, hi| {
                    pieces += hi - lo;
                    direct(lo, hi)
                });
                assert_eq!(
                    got,
                    direct(pos, pos + len),
                    "start {start} pos {pos} len {len}"
                );
                assert!(pieces <= 2 * MIN_BLOCK, "{pieces} bytes counted by hand");
            }
        }
    }

    #[test]
    fn aligned_lengths_end_on_block_boundaries() {
        let m = memo_of(&data(10 << 20), 100);
        assert_eq!(m.aligned_len(100, 1 << 20), (1 << 20) - 100);
        assert_eq!(m.aligned_len(1 << 20, 1 << 20), 1 << 20);
        assert_eq!(m.aligned_len(10, 20), 20, "no boundary inside: unchanged");
        assert_eq!(
            m.aligned_len((10 << 20) - 5, 1 << 20),
            1 << 20,
            "past the end"
        );
    }

    #[test]
    fn big_files_get_bigger_blocks_and_bounded_counts() {
        let m = Memo::new(version(100 << 30), b'\n', 0);
        assert!(m.block.is_power_of_two());
        assert!((100u64 << 30).div_ceil(m.block) <= MAX_BLOCKS);
    }

    #[test]
    fn records_fit_only_the_same_version_separator_and_start() {
        let mut v = version(1 << 30);
        v.ino = 777;
        let memo = Memo::new(v, b'\n', 10);
        let mut other = v;
        other.mtime_ns += 1;
        assert!(!memo.fits(&other, b'\n', 10));
        assert!(!memo.fits(&v, 0, 10));
        assert!(!memo.fits(&v, b'\n', 9));
        assert!(memo.fits(&v, b'\n', 10));
        assert!(memo.fits(&v, b'\n', 11));
    }
}
