//! Where a key argument names an AWS KMS key (`-r`/`-i arn:aws:kms:…`, FORMAT.md §1.1): the
//! one test of the ARN's shape, and the seams to `remote::kms`, which makes the calls (the one
//! upward import of `crypto`: KMS needs the object stores' credentials and HTTP client; a build
//! without the `remote` feature refuses the ARN, saying so).

use super::recipients::{AgeIdentity, Unwraps, KMS_TAG};
use crate::error::Result;
#[cfg(not(feature = "remote"))]
use {super::recipients::short, crate::error::Error};

/// True when `s` names a KMS key (`arn:PARTITION:kms:…`), before its fields are checked.
pub fn is_kms_arn(s: &str) -> bool {
    let mut parts = s.trim().split(':');
    parts.next() == Some("arn") && parts.nth(1) == Some("kms")
}

/// An AWS KMS key ARN as a recipient (`remote::kms`, which holds the one upward import of this
/// module: the KMS calls need the object stores' credentials and HTTP client).
#[cfg(feature = "remote")]
pub(super) fn kms_recipient(s: &str) -> Result<Box<dyn age::Recipient + Send + Sync>> {
    Ok(Box::new(crate::remote::kms::KmsRecipient::parse(s)?))
}

#[cfg(not(feature = "remote"))]
pub(super) fn kms_recipient(s: &str) -> Result<Box<dyn age::Recipient + Send + Sync>> {
    Err(no_kms(s))
}

#[cfg(not(feature = "remote"))]
pub(super) fn no_kms(s: &str) -> Error {
    Error::InvalidOption(format!(
        "'{}' is an AWS KMS key, and this build of zseal has no AWS support (the `remote` \
         feature)",
        short(s)
    ))
}

/// True when an identity "file" is an AWS KMS key ARN (`-i arn:aws:kms:…`) and no file of
/// that name exists.
pub(super) fn names_kms_key(p: &std::path::Path) -> bool {
    p.to_str().is_some_and(is_kms_arn) && !p.exists()
}

/// An AWS KMS key ARN as an identity; its stanzas name the key ARN (an alias names nothing
/// until KMS resolves it).
#[cfg(feature = "remote")]
pub(super) fn kms_identity(p: &std::path::Path) -> Result<AgeIdentity> {
    let text = p.to_string_lossy();
    let id = crate::remote::kms::KmsIdentity::parse(&text)?;
    let names = id.key_arn().map(|arn| super::StanzaRecipient {
        kind: KMS_TAG.into(),
        key_tag: arn.into(),
    });
    Ok(AgeIdentity {
        inner: Unwraps::Age(Box::new(id)),
        names,
        x25519: Default::default(),
    })
}

#[cfg(not(feature = "remote"))]
pub(super) fn kms_identity(p: &std::path::Path) -> Result<AgeIdentity> {
    Err(no_kms(&p.to_string_lossy()))
}
