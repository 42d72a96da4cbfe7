//! age files: age's conformance vectors (CCTV), interoperability with the real `age` and `rage`,
//! and the age writer. One test binary with a module per subject.

#[path = "../common/mod.rs"]
mod common;

mod cctv;
mod interop;
mod plugin;
mod pq;
mod sign;
mod signed;
mod write;
