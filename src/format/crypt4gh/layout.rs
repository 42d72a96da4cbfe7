//! Where the segments are (docs/FORMAT.md §13.4): segment `i` starts at
//! `header_len + i·65,564`; every segment but the last is full; the file's length gives their
//! number and the stored plaintext's length. [`Layout::pieces`] turns a range of the output (after
//! the edit list, §13.5) into the segments it needs and what of each to keep.

use std::ops::Range;

use super::edit::{stored_ranges, EditList};
use super::{SEALED_SEGMENT_LEN, SEGMENT_LEN, SEGMENT_OVERHEAD};
use crate::error::{Error, Result};

const SEG: u64 = SEGMENT_LEN as u64;
const SEALED: u64 = SEALED_SEGMENT_LEN as u64;
const OVERHEAD: u64 = SEGMENT_OVERHEAD as u64;

/// The segments of a file whose header is `header_len` bytes and whose length is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    header_len: u64,
    data_len: u64,
}

/// One segment a range needs, and the part of its plaintext the range keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The segment's index.
    pub segment: u64,
    /// Plaintext bytes of the segment to drop before the kept part.
    pub skip: usize,
    /// Plaintext bytes to keep after them.
    pub take: usize,
}

/// Stored bytes of the data section for a plaintext of `plaintext_len` bytes: full segments, then
/// the rest plus 28 (nothing for an empty plaintext, §13.4).
pub fn sealed_data_len(plaintext_len: u64) -> u64 {
    let (full, rest) = (plaintext_len / SEG, plaintext_len % SEG);
    full * SEALED + if rest > 0 { rest + OVERHEAD } else { 0 }
}

impl Layout {
    /// The layout of a file of `file_len` bytes whose header is `header_len` bytes. Refuses a
    /// last piece of 28 bytes or fewer (cut inside a segment).
    pub fn new(header_len: u64, file_len: u64) -> Result<Layout> {
        let data_len = file_len.checked_sub(header_len).ok_or_else(|| {
            Error::Truncated(format!(
                "the crypt4gh file is {file_len} bytes, shorter than its {header_len}-byte header"
            ))
        })?;
        let last = data_len % SEALED;
        if last != 0 && last <= OVERHEAD {
            return Err(Error::Truncated(format!(
                "the crypt4gh data ends {last} bytes into segment {}, inside its nonce and MAC \
                 (cut inside a segment)",
                data_len / SEALED
            )));
        }
        Ok(Layout {
            header_len,
            data_len,
        })
    }

    /// The header's length: where segment 0 starts.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// Number of segments.
    pub fn segments(&self) -> u64 {
        self.data_len.div_ceil(SEALED)
    }

    /// Length of the stored plaintext (`N`, before any edit list): what the file's bytes say,
    /// not what was written (§13.10).
    pub fn stored_len(&self) -> u64 {
        self.data_len - self.segments() * OVERHEAD
    }

    /// The file bytes of segment `index`.
    pub fn segment_range(&self, index: u64) -> Range<u64> {
        let start = self.header_len + index * SEALED;
        start..(start + SEALED).min(self.header_len + self.data_len)
    }

    /// The file bytes that hold segments `segments` (one read for a range).
    pub fn file_range(&self, segments: Range<u64>) -> Range<u64> {
        match segments.is_empty() {
            true => self.header_len..self.header_len,
            false => {
                self.segment_range(segments.start).start..self.segment_range(segments.end - 1).end
            }
        }
    }

    /// The length of the output: the stored plaintext through `edit` (or all of it).
    pub fn output_len(&self, edit: Option<&EditList>) -> Result<u64> {
        match edit {
            Some(e) => e.output_len(self.stored_len()),
            None => Ok(self.stored_len()),
        }
    }

    /// The pieces of output range `out` (after `edit`), in output order: the segment, and what
    /// of its plaintext to keep. The part of `out` past the output's end is left out (the caller
    /// decides whether that is an error). A segment that two kept runs share appears in two
    /// consecutive pieces; a segment only skipped appears in none (it is never opened, §13.5).
    /// Lazy: a whole 100 GB file is 1.6 million pieces, made as the caller takes them.
    pub fn pieces(
        &self,
        edit: Option<&EditList>,
        out: Range<u64>,
    ) -> Result<impl Iterator<Item = Piece>> {
        let stored = match edit {
            Some(e) => stored_ranges(&e.kept_runs(self.stored_len())?, out),
            None => {
                let end = out.end.min(self.stored_len());
                std::iter::once(out.start.min(end)..end).collect()
            }
        };
        Ok(stored.into_iter().flat_map(pieces_of))
    }
}

/// The pieces of one range of the stored plaintext.
fn pieces_of(stored: Range<u64>) -> impl Iterator<Item = Piece> {
    let segments = match stored.is_empty() {
        true => 0..0,
        false => stored.start / SEG..(stored.end - 1) / SEG + 1,
    };
    segments.map(move |i| {
        let (seg_start, seg_end) = (i * SEG, (i + 1) * SEG);
        let (lo, hi) = (stored.start.max(seg_start), stored.end.min(seg_end));
        Piece {
            segment: i,
            skip: (lo - seg_start) as usize,
            take: (hi - lo) as usize,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FORMAT.md §13.6: 200,000 bytes, one recipient (a 124-byte header).
    #[test]
    fn the_worked_example_of_format_md() {
        assert_eq!(sealed_data_len(200_000), 200_112);
        let l = Layout::new(124, 200_236).unwrap();
        assert_eq!((l.segments(), l.stored_len()), (4, 200_000));
        assert_eq!(l.segment_range(1), 65_688..131_252);
        assert_eq!(l.segment_range(3), 196_816..200_236);
        let p = l
            .pieces(None, 131_000..140_000)
            .unwrap()
            .collect::<Vec<_>>();
        assert_eq!(
            p,
            vec![
                Piece {
                    segment: 1,
                    skip: 65_464,
                    take: 72
                },
                Piece {
                    segment: 2,
                    skip: 0,
                    take: 8_928
                },
            ]
        );
        assert_eq!(l.file_range(1..3), 65_688..196_816);
        // Cut at a segment boundary: a shorter valid file. Inside a nonce and MAC: refused.
        assert_eq!(Layout::new(124, 196_816).unwrap().stored_len(), 196_608);
        let e = Layout::new(124, 196_830).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Truncated);
        assert!(Layout::new(124, 196_850).is_ok()); // its MAC fails when opened
        assert_eq!(Layout::new(124, 124).unwrap().segments(), 0);
        assert!(Layout::new(124, 123).is_err());
    }

    #[test]
    fn lengths_at_segment_boundaries() {
        for p in [0, 1, SEG - 1, SEG, SEG + 1, 3 * SEG, 3 * SEG + 7] {
            let l = Layout::new(16, 16 + sealed_data_len(p)).unwrap();
            assert_eq!(l.stored_len(), p, "{p}");
            assert_eq!(l.segments(), p.div_ceil(SEG), "{p}");
            let whole: Vec<_> = l.pieces(None, 0..p).unwrap().collect();
            assert_eq!(whole.iter().map(|x| x.take as u64).sum::<u64>(), p);
        }
    }

    /// The reference's `rearrange --range 70000-80001` (FORMAT.md §13.5): one segment kept,
    /// the list [4464, 10000].
    #[test]
    fn pieces_through_an_edit_list() {
        let l = Layout::new(216, 216 + SEALED).unwrap();
        let e = EditList::new(vec![4464, 10_000]).unwrap();
        assert_eq!(l.output_len(Some(&e)).unwrap(), 10_000);
        assert_eq!(
            l.pieces(Some(&e), 0..10_000).unwrap().collect::<Vec<_>>(),
            vec![Piece {
                segment: 0,
                skip: 4464,
                take: 10_000
            }]
        );
        // Two runs in two segments, and a range across them.
        let l = Layout::new(16, 16 + 3 * SEALED).unwrap();
        let e = EditList::new(vec![100, 50, SEG + 10, 20]).unwrap(); // 100..150, 65696..65716
        assert_eq!(
            l.pieces(Some(&e), 40..60).unwrap().collect::<Vec<_>>(),
            vec![
                Piece {
                    segment: 0,
                    skip: 140,
                    take: 10
                },
                Piece {
                    segment: 1,
                    skip: 160,
                    take: 10
                },
            ]
        );
        let past = EditList::new(vec![0, 3 * SEG + 1]).unwrap();
        assert!(l.pieces(Some(&past), 0..1).is_err());
    }
}
