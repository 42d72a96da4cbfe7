//! Which object keys the gateway accepts, and where an accepted key lives under `ROOT`
//! (docs/GATEWAY.md, "Access"). Every path the gateway touches is built here, from a bucket name
//! and a key checked segment by segment, so that nothing lands outside `ROOT`.

use std::path::{Path, PathBuf};

/// The directory of a bucket that holds the gateway's own files (never an object, never listed).
pub const OWN_DIR: &str = ".zseal-gateway";

/// S3's limit on a key's length, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// Why a key is refused: the S3 error code (`InvalidArgument`, `KeyTooLongError`) and the rule.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    /// The S3 error code to answer with.
    pub code: &'static str,
    /// What is wrong and what to do, for the client's message.
    pub message: String,
}

fn refused(message: impl Into<String>) -> Refused {
    Refused {
        code: "InvalidArgument",
        message: message.into(),
    }
}

/// The segments of `key` (split at `/`), or why it is refused: empty, over 1,024 bytes, with a
/// NUL, absolute, with an empty, `.` or `..` segment, ending with `/`, or inside the gateway's
/// own directory.
pub fn key_segments(key: &str) -> Result<Vec<&str>, Refused> {
    if key.is_empty() {
        return Err(refused("the object key is empty"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(Refused {
            code: "KeyTooLongError",
            message: format!(
                "the object key is {} bytes; keys are at most {MAX_KEY_LEN} bytes",
                key.len()
            ),
        });
    }
    if key.contains('\0') {
        return Err(refused("the object key holds a NUL byte"));
    }
    if key.starts_with('/') {
        return Err(refused(
            "the object key starts with '/' (an absolute path): drop the leading '/'",
        ));
    }
    if key.ends_with('/') {
        return Err(refused(
            "the object key ends with '/' (a folder marker): this gateway stores files only",
        ));
    }
    let segments: Vec<&str> = key.split('/').collect();
    for s in &segments {
        if s.is_empty() || *s == "." || *s == ".." {
            return Err(refused(format!(
                "the object key has a segment {s:?} ('.', '..' and '//' are refused: they would name another path)"
            )));
        }
    }
    if segments[0] == OWN_DIR {
        return Err(refused(format!(
            "keys under {OWN_DIR}/ are the gateway's own files: choose another name"
        )));
    }
    Ok(segments)
}

/// The ETag of an empty folder marker: the MD5 of no bytes, as S3 answers for it.
pub const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

/// For a PUT of a folder marker (an empty body under a key ending with `/`), the folder's key
/// without that `/`; such a PUT stores nothing.
pub fn folder_marker(key: &str, content_length: Option<i64>) -> Option<&str> {
    let folder = key.strip_suffix('/')?;
    (content_length == Some(0) && !folder.is_empty()).then_some(folder)
}

/// The directory of `bucket` under `root`. s3s has checked the name against S3's rules (3–63 of
/// `a-z 0-9 . -`, starting with a letter or digit), so it is one plain path segment; checked again
/// here so that this module alone guarantees the path stays under `root`.
pub fn bucket_dir(root: &Path, bucket: &str) -> Result<PathBuf, Refused> {
    if !s3s::path::check_bucket_name(bucket) || bucket.starts_with('.') || bucket.contains('/') {
        return Err(Refused {
            code: "InvalidBucketName",
            message: format!("{bucket:?} is not a valid bucket name (3 to 63 of a-z 0-9 . -)"),
        });
    }
    Ok(root.join(bucket))
}

/// The file of object `key` in `bucket`, and the key's segments.
pub fn object_path(root: &Path, bucket: &str, key: &str) -> Result<PathBuf, Refused> {
    let mut path = bucket_dir(root, bucket)?;
    for s in key_segments(key)? {
        path.push(s);
    }
    Ok(path)
}

/// The metadata file of object `key` (docs/GATEWAY.md: `ROOT/B/.zseal-gateway/meta/K`).
pub fn meta_path(root: &Path, bucket: &str, key: &str) -> Result<PathBuf, Refused> {
    let mut path = bucket_dir(root, bucket)?;
    path.push(OWN_DIR);
    path.push("meta");
    for s in key_segments(key)? {
        path.push(s);
    }
    Ok(path)
}

/// One of the gateway's own directories of `bucket`: `tmp` or `uploads`.
pub fn own_dir(root: &Path, bucket: &str, which: &str) -> Result<PathBuf, Refused> {
    let mut path = bucket_dir(root, bucket)?;
    path.push(OWN_DIR);
    path.push(which);
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(key: &str) -> &'static str {
        key_segments(key).map(|_| "ok").unwrap_or_else(|r| r.code)
    }

    #[test]
    fn ordinary_keys_are_their_segments() {
        assert_eq!(key_segments("a/b.c/d").unwrap(), vec!["a", "b.c", "d"]);
        assert_eq!(key_segments("..a/b..").unwrap(), vec!["..a", "b.."]);
        let path = object_path(Path::new("/r"), "bkt", "x/y").unwrap();
        assert_eq!(path, Path::new("/r/bkt/x/y"));
        let meta = meta_path(Path::new("/r"), "bkt", "x/y").unwrap();
        assert_eq!(meta, Path::new("/r/bkt/.zseal-gateway/meta/x/y"));
    }

    #[test]
    fn keys_that_would_leave_the_bucket_are_refused() {
        for key in [
            "../x",
            "a/../../x",
            "a/./b",
            "/etc/passwd",
            "a//b",
            "a/",
            "",
            "a\0b",
        ] {
            assert_eq!(code(key), "InvalidArgument", "{key:?}");
        }
        assert_eq!(code(".zseal-gateway/meta/x"), "InvalidArgument");
        assert_eq!(code("x/.zseal-gateway"), "ok");
    }

    #[test]
    fn only_empty_puts_under_a_trailing_slash_are_folder_markers() {
        assert_eq!(folder_marker("a/b/", Some(0)), Some("a/b"));
        assert_eq!(folder_marker("a/b/", Some(1)), None);
        assert_eq!(folder_marker("a/b/", None), None);
        assert_eq!(folder_marker("a/b", Some(0)), None);
        assert_eq!(folder_marker("/", Some(0)), None);
        // The folder's own key is then checked as any key ("../" is refused).
        assert!(key_segments(folder_marker("../", Some(0)).unwrap()).is_err());
    }

    #[test]
    fn keys_over_1024_bytes_are_refused() {
        assert_eq!(code(&"k".repeat(MAX_KEY_LEN)), "ok");
        assert_eq!(code(&"k".repeat(MAX_KEY_LEN + 1)), "KeyTooLongError");
    }

    #[test]
    fn bucket_names_are_one_segment() {
        assert!(bucket_dir(Path::new("/r"), "good-name").is_ok());
        for b in ["..", ".hidden", "a/b", "UPPER", "x"] {
            assert!(bucket_dir(Path::new("/r"), b).is_err(), "{b:?}");
        }
    }
}
