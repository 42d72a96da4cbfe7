//! The library's behaviour through its public API: round trips, properties, padding, ranges,
//! records, rekey, tampering, test vectors, AEAD peers, recipients, insertions, crypt4gh and the fast
//! paths. One test binary with a module per subject (as ripgrep's tests/tests.rs), so that a
//! clean build links a few binaries instead of one per file.

#[path = "../common/mod.rs"]
mod common;

mod aead_peer;
mod archive;
mod crypt4gh;
mod fast_paths;
mod insertions;
mod padding;
mod pieces;
mod properties;
mod range;
mod recipients;
mod records;
mod rekey;
mod roundtrip;
mod split;
mod tamper;
mod transfer;
mod vectors;
