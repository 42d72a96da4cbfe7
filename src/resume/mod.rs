//! Jobs that survive a broken connection or a killed process (issue 47 §2, docs/OBJECTS.md
//! "Resuming"): the journals they keep (`journal`), and downloads into a partial file
//! (`download`).

pub mod download;
pub mod journal;
