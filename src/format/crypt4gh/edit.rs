//! Edit lists (docs/FORMAT.md §13.5; spec "Edit List", `ApplyEditList`; ref `lib.py`
//! `body_decrypt_parts`): lengths that alternately skip and keep bytes of the stored plaintext,
//! starting with a skip. An odd count ends with a skip and keeps the rest; an even count drops
//! what follows its last keep. zseal refuses a list that runs past the end of the data.

use std::ops::Range;

use super::MAX_EDIT_LENGTHS;
use crate::error::{Error, Result};

/// A data edit list: the lengths as the packet stores them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditList {
    lengths: Vec<u64>,
}

impl EditList {
    /// The list of `lengths` (skip, keep, skip, …); at most [`MAX_EDIT_LENGTHS`].
    pub fn new(lengths: Vec<u64>) -> Result<EditList> {
        if lengths.len() > MAX_EDIT_LENGTHS as usize {
            return Err(Error::Limit(format!(
                "a crypt4gh edit list of {} lengths (at most {MAX_EDIT_LENGTHS})",
                lengths.len()
            )));
        }
        Ok(EditList { lengths })
    }

    /// The lengths, skip first.
    pub fn lengths(&self) -> &[u64] {
        &self.lengths
    }

    /// The kept runs of a stored plaintext of `stored_len` bytes, in order, as ranges of it
    /// (empty runs left out). Refuses a list that runs past `stored_len` (§13.5): a keep that
    /// ends past it, or a final skip that does.
    pub fn kept_runs(&self, stored_len: u64) -> Result<Vec<Range<u64>>> {
        let past = || {
            Error::Damaged(format!(
                "the crypt4gh edit list runs past the end of the data ({stored_len} bytes of \
                 plaintext are stored): the file was cut short, or the list was written for \
                 more data than the file holds"
            ))
        };
        if self.lengths.is_empty() {
            return Ok(std::iter::once(0..stored_len).collect());
        }
        let mut runs = Vec::with_capacity(self.lengths.len() / 2 + 1);
        let mut pos = 0u64;
        for pair in self.lengths.chunks(2) {
            pos = pos
                .checked_add(pair[0])
                .filter(|&p| p <= stored_len)
                .ok_or_else(past)?;
            let end = match pair.get(1) {
                Some(&keep) => pos
                    .checked_add(keep)
                    .filter(|&e| e <= stored_len)
                    .ok_or_else(past)?,
                None => stored_len,
            };
            if end > pos {
                runs.push(pos..end);
            }
            pos = end;
        }
        Ok(runs)
    }

    /// How many bytes the list keeps of a stored plaintext of `stored_len` bytes.
    pub fn output_len(&self, stored_len: u64) -> Result<u64> {
        Ok(self
            .kept_runs(stored_len)?
            .iter()
            .map(|r| r.end - r.start)
            .sum())
    }
}

/// The stored ranges that make up `out` (a range of the edited output), given the kept `runs`:
/// each run is mapped in turn, so the result is in output order. Parts of `out` past the
/// output's end are left out.
pub fn stored_ranges(runs: &[Range<u64>], out: Range<u64>) -> Vec<Range<u64>> {
    let mut result = Vec::new();
    let mut run_start = 0u64; // the output offset where the current run begins
    for run in runs {
        let len = run.end - run.start;
        let (lo, hi) = (out.start.max(run_start), out.end.min(run_start + len));
        if lo < hi {
            result.push(run.start + (lo - run_start)..run.start + (hi - run_start));
        }
        run_start += len;
        if run_start >= out.end {
            break;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(lengths: &[u64], stored: u64) -> Result<Vec<Range<u64>>> {
        EditList::new(lengths.to_vec()).unwrap().kept_runs(stored)
    }

    /// The spec's own example (ERR2436651, "Edit List" § Example): six lengths over 438,840
    /// stored bytes, the last keep ending exactly at the end.
    #[test]
    fn the_spec_example_keeps_three_runs() {
        let got = runs(&[0, 7853, 71721, 307_929, 51299, 38], 438_840).unwrap();
        assert_eq!(got, vec![0..7853, 79574..387_503, 438_802..438_840]);
        let list = EditList::new(vec![0, 7853, 71721, 307_929, 51299, 38]).unwrap();
        assert_eq!(list.output_len(438_840).unwrap(), 7853 + 307_929 + 38);
        // One byte less of data and the last keep runs past the end.
        assert!(runs(&[0, 7853, 71721, 307_929, 51299, 38], 438_839).is_err());
    }

    #[test]
    fn odd_counts_keep_the_rest_and_even_counts_drop_it() {
        assert_eq!(runs(&[10], 100).unwrap(), vec![10..100]);
        assert_eq!(runs(&[10, 5, 20], 100).unwrap(), vec![10..15, 35..100]);
        assert_eq!(runs(&[10, 5], 100).unwrap(), vec![10..15]);
        assert_eq!(runs(&[100], 100).unwrap(), vec![]);
        assert_eq!(runs(&[], 100).unwrap(), vec![0..100]);
        assert_eq!(runs(&[0, 0, 0], 7).unwrap(), vec![0..7]);
    }

    #[test]
    fn lists_past_the_end_or_overflowing_are_refused() {
        for (lengths, stored) in [
            (&[101][..], 100),
            (&[4464, 10_000][..], 14_463),
            (&[u64::MAX, 1][..], 100),
            (&[1, u64::MAX][..], 100),
            (&[50, 10, 41][..], 100),
        ] {
            let e = runs(lengths, stored).unwrap_err().to_string();
            assert!(e.contains("past the end of the data"), "{lengths:?}: {e}");
        }
        assert!(EditList::new(vec![0; MAX_EDIT_LENGTHS as usize + 1]).is_err());
    }

    #[test]
    fn output_ranges_map_run_by_run_to_stored_ranges() {
        let r = runs(&[10, 5, 20, 30], 100).unwrap(); // runs 10..15 and 35..65
        assert_eq!(stored_ranges(&r, 0..35), vec![10..15, 35..65]);
        assert_eq!(stored_ranges(&r, 3..7), vec![13..15, 35..37]);
        assert_eq!(stored_ranges(&r, 5..6), vec![35..36]);
        assert_eq!(stored_ranges(&r, 30..99), vec![60..65]);
        assert_eq!(stored_ranges(&r, 35..40), vec![]);
    }
}
