//! Files that go beside a file: the detached signature of a crypt4gh file (FORMAT.md §13.9),
//! `NAME.sig` beside a local file or beside an object in its bucket, found and read the same
//! way by the command line (`decrypt`/`verify --signer`) and the Python package (`signers=`).

use std::io::{self, Read};

use crate::crypto::sign::Signature;
use crate::error::{Error, Result};
use crate::io::named;

/// The most a detached signature may hold: an SSHSIG is a few hundred bytes.
const SIGNATURE_MAX: u64 = 1 << 20;

/// `NAME.sig`: where `encrypt --format crypt4gh --sign` puts the signature of the file `name`
/// (a path, or an object's URL: `s3://b/x.c4gh` gives `s3://b/x.c4gh.sig`; a URL's query or
/// fragment stays after the name it follows).
pub fn signature_beside(name: &str) -> String {
    let cut = match crate::io::is_url(name) {
        true => name.find(['?', '#']).unwrap_or(name.len()),
        false => name.len(),
    };
    format!("{}.sig{}", &name[..cut], &name[cut..])
}

/// The detached signature at `name` (a path, or an object's URL read with the environment's
/// credentials), armored as `ssh-keygen -Y sign` writes it. A file or object that cannot be
/// read is named; one that does not parse is the caller's to name.
pub fn read_signature(name: &str) -> Result<Signature> {
    let pem = read_small(name, SIGNATURE_MAX)?;
    let pem = String::from_utf8_lossy(&pem);
    Signature::from_pem(&pem)
}

/// The whole of the small file or object `name`, refused past `limit` bytes.
fn read_small(name: &str, limit: u64) -> Result<Vec<u8>> {
    let mut r = open(name)?;
    let mut buf = Vec::new();
    (&mut r).take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(Error::InvalidOption(format!(
            "{name} holds more than {limit} bytes: it is not a signature (give the .sig file)"
        )));
    }
    Ok(buf)
}

/// The file or object `name`, to be read in order.
fn open(name: &str) -> io::Result<Box<dyn Read>> {
    if crate::io::is_url(name) {
        return open_object(name);
    }
    let f = std::fs::File::open(name).map_err(|e| named(&e, "read", name))?;
    Ok(Box::new(f))
}

#[cfg(feature = "remote")]
fn open_object(url: &str) -> io::Result<Box<dyn Read>> {
    let remote = crate::remote::Remote::from_env(url)?;
    Ok(Box::new(remote.reader(crate::io::ReadMode::Sequential)?))
}

#[cfg(not(feature = "remote"))]
fn open_object(url: &str) -> io::Result<Box<dyn Read>> {
    Err(io::Error::other(format!(
        "{url}: this zseal was built without object storage (cargo feature `remote`)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_goes_beside_a_path_or_an_object() {
        assert_eq!(signature_beside("d/x.c4gh"), "d/x.c4gh.sig");
        assert_eq!(signature_beside("s3://b/x.c4gh"), "s3://b/x.c4gh.sig");
        assert_eq!(
            signature_beside("https://h/x.c4gh?v=1"),
            "https://h/x.c4gh.sig?v=1"
        );
        assert_eq!(signature_beside("odd?name"), "odd?name.sig");
    }

    #[test]
    fn a_missing_or_oversized_signature_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("x.sig").display().to_string();
        let e = read_signature(&missing).unwrap_err().to_string();
        assert!(e.contains("cannot read") && e.contains("x.sig"), "{e}");
        let big = dir.path().join("big.sig");
        std::fs::write(&big, vec![b'a'; (SIGNATURE_MAX + 1) as usize]).unwrap();
        let e = read_signature(&big.display().to_string()).unwrap_err();
        assert!(e.to_string().contains("not a signature"), "{e}");
    }
}
