//! Archives (FORMAT.md §15, issue 57): a container whose plaintext is a tar carries an index of
//! its members. This module holds the index ([`index`]: its bytes, §15.2) and its making from a
//! tar as the tar is read ([`scan`]); the frames that carry it, and `ls`, `cat`, `extract` and
//! `mount` over it, come next.

pub mod index;
pub mod scan;

pub use index::{Index, Member, MemberType};
pub use scan::{copy_member, index_tar};
