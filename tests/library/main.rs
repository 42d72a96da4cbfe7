//! The library's behaviour through its public API: round trips, properties, padding, ranges,
//! records, rekey, tampering, test vectors, AEAD peers, recipients, insertions and the fast
//! paths. One test binary with a module per subject (as ripgrep's tests/tests.rs), so that a
//! clean build links a few binaries instead of one per file.

#[path = "../common/mod.rs"]
mod common;

mod roundtrip;
mod properties;
mod padding;
mod range;
mod records;
mod rekey;
mod tamper;
mod vectors;
mod aead_peer;
mod recipients;
mod insertions;
mod fast_paths;
