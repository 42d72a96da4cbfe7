//! The S3 gateway's object-store backend: a prefix of a store under which objects are named by
//! key (`s3://bucket/prefix/BUCKET/KEY`, docs/GATEWAY.md).

use std::io;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;

use object_store::DynObjectStore;

use super::{build_store, invalid, scheme_of, Built, Object, Remote, Scheme, TransferOptions};

/// A prefix of a store (`s3://bucket/prefix`, the prefix possibly empty) under which objects
/// are named by key: the S3 gateway's backend. Every object shares the one store (its client,
/// credentials and retry policy).
#[derive(Clone)]
pub(crate) struct StoreRoot {
    base: Object,
    /// The URL up to the prefix, ending in `/`.
    url: String,
}

impl StoreRoot {
    /// Parses `url` (`s3://`, `gs://` or `az://`, with or without a prefix) and builds its store
    /// from the environment, as [`Remote::new`] does.
    pub(crate) fn new(url: &str, opts: TransferOptions) -> io::Result<StoreRoot> {
        let parsed =
            url::Url::parse(url).map_err(|e| invalid(format!("{url} is not a valid URL: {e}")))?;
        let scheme = match scheme_of(&parsed) {
            Some(Scheme::Http) | None => {
                return Err(invalid(format!(
                    "{url}: the gateway stores objects in s3://, gs:// or az:// URLs or a \
                     local directory, not '{}://'",
                    parsed.scheme()
                )))
            }
            Some(scheme) => scheme,
        };
        let Built {
            store,
            path,
            multipart,
            own,
        } = build_store(scheme, &parsed, url, &opts, &[])?;
        let url = format!("{}/", url.trim_end_matches('/'));
        Ok(StoreRoot {
            base: Object {
                store,
                path,
                url: url.clone(),
                scheme,
                opts: opts.bounded(),
                multipart,
                own,
            },
            url,
        })
    }

    /// The store's path of `name` (a relative path, `/`-separated) below the prefix.
    pub(crate) fn path(&self, name: &str) -> ObjectPath {
        let prefix = self.base.path.as_ref();
        match prefix.is_empty() {
            true => ObjectPath::from(name),
            false => ObjectPath::from(format!("{prefix}/{name}")),
        }
    }

    /// `name` relative to the prefix, for a path the store listed under it.
    pub(crate) fn relative<'a>(&self, path: &'a ObjectPath) -> Option<&'a str> {
        let prefix = self.base.path.as_ref();
        match prefix.is_empty() {
            true => Some(path.as_ref()),
            false => path.as_ref().strip_prefix(prefix)?.strip_prefix('/'),
        }
    }

    /// The store itself, for listings, small objects and deletions.
    pub(crate) fn store(&self) -> &Arc<DynObjectStore> {
        &self.base.store
    }

    /// The object `name` below the prefix, to read or write as any URL's.
    pub(crate) fn object(&self, name: &str) -> Remote {
        let mut obj = self.base.clone();
        obj.path = self.path(name);
        obj.url = format!("{}{name}", self.url);
        Remote {
            inner: Arc::new(obj),
        }
    }
}
