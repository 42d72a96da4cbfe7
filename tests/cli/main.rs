//! The `zseal` command end to end: commands, records, tampering, the terminal, outputs and the
//! committed fixtures. One test binary with a module per subject.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod crypt4gh;
mod docs;
mod fixtures;
mod habits;
mod ls;
mod outputs;
mod records;
mod serve;
mod tamper;
mod terminal;
