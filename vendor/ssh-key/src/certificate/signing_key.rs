//! Certificate signing key trait.

use crate::{public, Signature};
use signature::Signer;

#[cfg(doc)]
use super::Builder;
