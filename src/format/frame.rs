//! Frames (FORMAT.md §3), the final frame (§3.2), the index (§4) and the footer (§5).

use super::{END_MAGIC, MAX_CHUNKS};
use crate::error::{Error, Result};

/// `kind || body_len`.
pub const FRAME_HEADER_LEN: usize = 5;
/// Plaintext of the final frame.
pub const FINAL_PLAIN_LEN: usize = 80;
/// Body of the final frame (plaintext + tag).
pub const FINAL_BODY_LEN: usize = FINAL_PLAIN_LEN + crate::crypto::aead::TAG_LEN;
/// Whole final frame.
pub const FINAL_FRAME_LEN: usize = FRAME_HEADER_LEN + FINAL_BODY_LEN;
/// Footer.
pub const FOOTER_LEN: usize = 16;

/// The kind byte of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A chunk compressed by the file's codec.
    Compressed,
    /// A chunk stored as is.
    Raw,
    /// The final frame.
    Final,
    /// A chunk of a padded file (its plaintext says whether it is compressed).
    Padded,
    /// Zeros that bring a padded file to its size class.
    Padding,
    /// An SSH signature of the plaintext (FORMAT.md §12.2).
    Signature,
    /// The id of the piece whose frames follow, in clear (FORMAT.md §14.3).
    Marker,
    /// The id of the end key, in clear, after the last piece (FORMAT.md §14.3).
    EndMarker,
}

impl FrameKind {
    /// The byte on disk.
    pub fn byte(self) -> u8 {
        match self {
            FrameKind::Compressed => 0,
            FrameKind::Raw => 1,
            FrameKind::Final => 2,
            FrameKind::Padded => 3,
            FrameKind::Padding => 4,
            FrameKind::Signature => 5,
            FrameKind::Marker => 6,
            FrameKind::EndMarker => 7,
        }
    }

    /// Parses the byte on disk.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(FrameKind::Compressed),
            1 => Some(FrameKind::Raw),
            2 => Some(FrameKind::Final),
            3 => Some(FrameKind::Padded),
            4 => Some(FrameKind::Padding),
            5 => Some(FrameKind::Signature),
            6 => Some(FrameKind::Marker),
            7 => Some(FrameKind::EndMarker),
            _ => None,
        }
    }
}

impl FrameKind {
    /// True for the kinds a file with (`padded`) or without padding, signed or not, pieced or
    /// not, may hold (§3.3, §12.2, §14.3).
    pub fn allowed(self, padded: bool, signed: bool, pieced: bool) -> bool {
        match self {
            FrameKind::Final => true,
            FrameKind::Compressed | FrameKind::Raw => !padded,
            FrameKind::Padded | FrameKind::Padding => padded,
            FrameKind::Signature => signed,
            FrameKind::Marker | FrameKind::EndMarker => pieced,
        }
    }

    /// The kinds of a header's flags.
    pub fn allowed_in(self, header: &super::Header) -> bool {
        self.allowed(header.padded, header.signed, header.pieced)
    }

    /// True for the frames that hold plaintext: not the signature and padding frames after
    /// them, nor the final frame.
    pub fn is_data(self) -> bool {
        matches!(
            self,
            FrameKind::Compressed | FrameKind::Raw | FrameKind::Padded
        )
    }
}

/// The body lengths §3 allows for a frame of `kind` in a file of `chunk_size` chunks: a data
/// frame holds at least one byte and at most a chunk, plus the tag; in a padded file (§3.3) up to
/// [`PAD_HEADER_LEN`] more.
pub fn body_len_bounds(kind: FrameKind, chunk_size: usize) -> std::ops::RangeInclusive<usize> {
    use crate::crypto::aead::TAG_LEN;
    match kind {
        FrameKind::Final => FINAL_BODY_LEN..=FINAL_BODY_LEN,
        FrameKind::Compressed | FrameKind::Raw => TAG_LEN + 1..=chunk_size + TAG_LEN,
        FrameKind::Padded => TAG_LEN + PAD_HEADER_LEN + 1..=chunk_size + PAD_HEADER_LEN + TAG_LEN,
        FrameKind::Padding => TAG_LEN + 1..=chunk_size + PAD_HEADER_LEN + TAG_LEN,
        FrameKind::Signature => {
            TAG_LEN + SIG_HEADER_LEN + 1..=TAG_LEN + SIG_HEADER_LEN + MAX_SIG_LEN
        }
        FrameKind::Marker | FrameKind::EndMarker => {
            super::piece::MARKER_BODY_LEN..=super::piece::MARKER_BODY_LEN
        }
    }
}

/// The body lengths an index entry may list (§4) in a file of `chunk_size` chunks, padded or
/// not, signed or not, pieced or not: those of every kind of frame but the final one that the
/// file may hold.
pub fn listed_bounds(
    chunk_size: usize,
    padded: bool,
    signed: bool,
    pieced: bool,
) -> std::ops::RangeInclusive<usize> {
    use FrameKind::*;
    let (lo, hi) = [
        Compressed, Raw, Padded, Padding, Signature, Marker, EndMarker,
    ]
    .into_iter()
    .filter(|k| k.allowed(padded, signed, pieced))
    .map(|k| body_len_bounds(k, chunk_size))
    .fold((usize::MAX, 0), |(lo, hi), b| {
        (lo.min(*b.start()), hi.max(*b.end()))
    });
    lo..=hi
}

/// `sig_len` before the SSHSIG blob of a signature frame (§12.2).
pub const SIG_HEADER_LEN: usize = 4;
/// The longest SSHSIG blob a signature frame holds (an RSA key of 16,384 bits signs in 2 KiB).
pub const MAX_SIG_LEN: usize = 16384;

/// The AEAD plaintext of a signature frame: `sig_len || sshsig` (§12.2).
pub fn signature_plaintext(blob: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(SIG_HEADER_LEN + blob.len());
    p.extend_from_slice(&(blob.len() as u32).to_le_bytes());
    p.extend_from_slice(blob);
    p
}

/// The SSHSIG blob of a signature frame's plaintext, whose `sig_len` must account for every
/// byte after it (§12.2).
pub fn signature_blob(plain: &[u8]) -> Result<&[u8]> {
    let (len, blob) = plain
        .split_first_chunk::<SIG_HEADER_LEN>()
        .ok_or_else(|| Error::Damaged("a signature frame too short for its length".into()))?;
    if u32::from_le_bytes(*len) as usize != blob.len() || blob.is_empty() {
        return Err(Error::Damaged(format!(
            "a signature frame's length field says {} bytes, its frame holds {}",
            u32::from_le_bytes(*len),
            blob.len()
        )));
    }
    Ok(blob)
}

/// `stored || content_len` before the content of a padded chunk (§3.3).
pub const PAD_HEADER_LEN: usize = 5;

/// Padmé (§3.3): `len` rounded up so that only its top O(log log len) bits vary.
pub fn padme(len: u64) -> u64 {
    if len < 2 {
        return len;
    }
    let e = u64::from(len.ilog2());
    let s = u64::from(e.ilog2()) + 1;
    let mask = (1u64 << (e - s)) - 1;
    (len + mask) & !mask
}

/// The padded plaintext length of a chunk whose `stored || content_len || content` takes `x`
/// bytes, in a file of `chunk_size` chunks (§3.3).
pub fn pad_class(x: usize, chunk_size: usize) -> usize {
    (padme(x as u64) as usize).min(chunk_size + PAD_HEADER_LEN)
}

/// `kind || body_len`, which is also the frame's AAD.
pub fn frame_header(kind: FrameKind, body_len: u32) -> [u8; FRAME_HEADER_LEN] {
    let l = body_len.to_le_bytes();
    [kind.byte(), l[0], l[1], l[2], l[3]]
}

/// Splits a frame header into kind and body length.
pub fn parse_frame_header(h: &[u8; FRAME_HEADER_LEN]) -> (Option<FrameKind>, u32) {
    (
        FrameKind::from_byte(h[0]),
        u32::from_le_bytes([h[1], h[2], h[3], h[4]]),
    )
}

/// The plaintext of the final frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinalFrame {
    /// Total plaintext length `P`.
    pub plaintext_len: u64,
    /// Number of data frames `n`.
    pub chunk_count: u64,
    /// BLAKE3 of the index bytes.
    pub index_digest: [u8; 32],
    /// Whole-plaintext digest, left-aligned, zero-padded.
    pub digest: [u8; 32],
}

impl FinalFrame {
    /// Encodes the 80-byte plaintext.
    pub fn encode(&self) -> [u8; FINAL_PLAIN_LEN] {
        let mut b = [0u8; FINAL_PLAIN_LEN];
        b[0..8].copy_from_slice(&self.plaintext_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.chunk_count.to_le_bytes());
        b[16..48].copy_from_slice(&self.index_digest);
        b[48..80].copy_from_slice(&self.digest);
        b
    }

    /// Decodes the 80-byte plaintext (already authenticated).
    pub fn decode(b: &[u8]) -> Result<Self> {
        if b.len() != FINAL_PLAIN_LEN {
            return Err(Error::Damaged("final frame of the wrong size".into()));
        }
        let u64_at = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let mut index_digest = [0u8; 32];
        index_digest.copy_from_slice(&b[16..48]);
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&b[48..80]);
        Ok(FinalFrame {
            plaintext_len: u64_at(0),
            chunk_count: u64_at(8),
            index_digest,
            digest,
        })
    }
}

/// Encodes the footer.
pub fn footer(chunk_count: u64) -> [u8; FOOTER_LEN] {
    let mut f = [0u8; FOOTER_LEN];
    f[..8].copy_from_slice(&chunk_count.to_le_bytes());
    f[8..].copy_from_slice(&END_MAGIC);
    f
}

/// How many bytes before a container file's end [`footer_at_end`] looks at.
pub const END_SEARCH_LEN: usize = 4096;

/// Bytes of the end magic that may differ for a wrong end magic to count as damage rather
/// than the end of a file cut short: a cut end shows 6 of the 8 bytes in place by chance with
/// probability about 2^-44.
const MAGIC_FLIPS: usize = 2;

/// The chunk count the footer at the end of `tail` claims (not yet authenticated), where `tail`
/// is the last bytes of a container file read for random access (FORMAT.md §6): at least
/// [`FOOTER_LEN`] and at most [`END_SEARCH_LEN`] of them, after the header. Where the file
/// does not end with the end magic, the error says what it most likely is:
/// - extended ([`Error::TrailingData`]): the end magic is in `tail`, with bytes after it;
/// - damaged: the last 8 bytes are the end magic with at most [`MAGIC_FLIPS`] bytes changed;
/// - cut short ([`Error::Truncated`], "fetch it again"): anything else, as a cut file's end is
///   frame, index or part of the footer's bytes. (A footer with the end magic whose contents
///   do not fit the file is damage, found by the caller.)
pub fn footer_at_end(tail: &[u8]) -> Result<u64> {
    let Some((_, footer)) = tail.split_last_chunk::<FOOTER_LEN>() else {
        return Err(Error::Truncated("before the footer".into()));
    };
    let magic = &footer[8..];
    if magic == END_MAGIC {
        return parse_footer(footer);
    }
    if tail.windows(END_MAGIC.len()).any(|w| w == END_MAGIC) {
        return Err(Error::TrailingData);
    }
    let changed = magic
        .iter()
        .zip(END_MAGIC)
        .filter(|(a, b)| **a != *b)
        .count();
    if changed <= MAGIC_FLIPS {
        return Err(Error::Damaged("the footer's end magic is wrong".into()));
    }
    Err(Error::Truncated(
        "it ends before the footer that closes a container".into(),
    ))
}

/// Decodes the footer and returns the chunk count it claims (not yet authenticated).
pub fn parse_footer(f: &[u8; FOOTER_LEN]) -> Result<u64> {
    if f[8..] != END_MAGIC {
        return Err(Error::Damaged("the footer's end magic is wrong".into()));
    }
    let mut w = [0u8; 8];
    w.copy_from_slice(&f[..8]);
    let n = u64::from_le_bytes(w);
    if n > MAX_CHUNKS {
        return Err(Error::Damaged(format!(
            "the footer claims {n} chunks, over the limit"
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body lengths of FORMAT.md §3 written out for a 4 KiB chunk: data frames hold 1 to
    /// 4,096 bytes plus the 16-byte tag; a padded chunk adds its 5-byte header (and holds at
    /// least one content byte); a padding frame holds 1 to 4,101 bytes plus the tag; the final
    /// frame is 96 bytes (its 80-byte plaintext and the tag).
    #[test]
    fn body_lengths_are_those_of_the_spec() {
        let c = 4096;
        for kind in [FrameKind::Compressed, FrameKind::Raw] {
            assert_eq!(body_len_bounds(kind, c), 17..=4112, "{kind:?}");
        }
        assert_eq!(body_len_bounds(FrameKind::Padded, c), 22..=4117);
        assert_eq!(body_len_bounds(FrameKind::Padding, c), 17..=4117);
        assert_eq!(body_len_bounds(FrameKind::Final, c), 96..=96);
        // What an index may list: a chunk's frame, padding up to C + 21, a signature up to its
        // own bound even where that is longer than a chunk.
        assert_eq!(listed_bounds(c, false, false, false), 17..=4112);
        assert_eq!(listed_bounds(c, true, false, false), 17..=4117);
        assert_eq!(listed_bounds(c, false, true, false), 17..=16404);
        assert_eq!(
            listed_bounds(1 << 20, true, true, false),
            17..=(1 << 20) + 21
        );
        // Markers (§14.3) list 16 bytes, under any data frame's shortest.
        assert_eq!(listed_bounds(c, false, false, true), 16..=4112);
        assert_eq!(body_len_bounds(FrameKind::Marker, c), 16..=16);
        assert_eq!(body_len_bounds(FrameKind::EndMarker, c), 16..=16);
    }

    /// The footer's chunk count is refused only past the format's limit of 2^32 - 1.
    #[test]
    fn footer_counts_stop_at_the_chunk_limit() {
        assert_eq!(parse_footer(&footer(MAX_CHUNKS)).unwrap(), MAX_CHUNKS);
        assert_eq!(parse_footer(&footer(0)).unwrap(), 0);
        assert!(parse_footer(&footer(MAX_CHUNKS + 1)).is_err());
        let mut bad = footer(3);
        bad[FOOTER_LEN - 1] ^= 1;
        assert!(parse_footer(&bad).is_err(), "end magic");
    }

    /// Issue 48, point 6: a file cut anywhere in its frames, index or footer is "truncated"
    /// (a cut copy is to be fetched again), not "damaged"; a flipped magic byte is damage, and
    /// bytes after the footer are an extended file.
    #[test]
    fn the_end_of_a_cut_file_is_told_from_damage() {
        // Frame bytes, then a 3-entry index and the footer.
        let frames: Vec<u8> = (0..3000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let file = [&frames[..], &[17, 0, 0, 0].repeat(3), &footer(3)].concat();
        let tail = |f: &[u8]| f[f.len().saturating_sub(END_SEARCH_LEN)..].to_vec();
        assert_eq!(footer_at_end(&tail(&file)).unwrap(), 3);
        for cut in [1, 5, 8, 9, 15, 16, 20, 28, 100, 2000] {
            let e = footer_at_end(&tail(&file[..file.len() - cut])).unwrap_err();
            assert!(matches!(e, Error::Truncated(_)), "cut {cut}: {e}");
            assert!(e.to_string().contains("fetch it again"), "{e}");
        }
        for at in [8, 9, 15] {
            let mut bad = file.clone();
            let i = bad.len() - FOOTER_LEN + at;
            bad[i] ^= 0x20;
            let e = footer_at_end(&tail(&bad)).unwrap_err();
            assert!(e.to_string().contains("end magic is wrong"), "{at}: {e}");
        }
        for extra in [&b"\n"[..], &[0; 512]] {
            let longer = [&file[..], extra].concat();
            let e = footer_at_end(&tail(&longer)).unwrap_err();
            assert!(matches!(e, Error::TrailingData), "{e}");
        }
        assert!(matches!(
            footer_at_end(&file[..10]),
            Err(Error::Truncated(_))
        ));
    }

    /// Padmé's values from its paper's definition, worked by hand: 2^E..2^(E+1) is cut into
    /// 2^S classes.
    #[test]
    fn padme_classes() {
        for (l, want) in [
            (0, 0),
            (1, 1),
            (2, 2),
            (7, 7),
            (9, 10),
            (100, 104),
            (1000, 1024),
            (1025, 1088),
            (4 << 20, 4 << 20),
            ((4 << 20) + 1, (4 << 20) + (1 << 17)),
            (100_000_000_000, 100_931_731_456),
        ] {
            assert_eq!(padme(l), want, "padme({l})");
        }
        // At most 12 % above, never below; idempotent.
        for l in (2..200_000u64).step_by(7) {
            let p = padme(l);
            assert!(p >= l && (p - l) * 100 <= l * 12, "{l} -> {p}");
            assert_eq!(padme(p), p);
        }
        assert_eq!(
            pad_class((4 << 20) + 5, 4 << 20),
            (4 << 20) + 5,
            "raw chunks are capped"
        );
        assert_eq!(pad_class(1000, 4 << 20), 1024);
    }
}
