//! ListObjectsV2's selection over a bucket's sorted keys: prefix, start-after, delimiter
//! (common prefixes), continuation and max-keys, as S3 answers them. Pure: the keys come in,
//! the page goes out.

/// One entry of a page: an object's key, or a common prefix (keys rolled up at a delimiter).
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    /// An object, by its index in the keys given.
    Object(usize),
    /// A common prefix, ending with the delimiter.
    Prefix(String),
}

/// What a listing asks for.
#[derive(Default)]
pub struct Query<'a> {
    /// Only keys that start with this.
    pub prefix: &'a str,
    /// Roll keys up at the first delimiter after the prefix.
    pub delimiter: Option<&'a str>,
    /// Only keys after this (S3's StartAfter, and V1's Marker).
    pub start_after: Option<&'a str>,
    /// Only entries after this one (the NextContinuationToken of the previous page).
    pub token: Option<&'a str>,
    /// At most this many entries (objects and prefixes together).
    pub max_keys: usize,
}

/// A page: its entries in order, and the token of the next page when it is cut short.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    /// Objects and common prefixes, sorted as S3 sorts them.
    pub entries: Vec<Entry>,
    /// Set when more entries follow: the last entry's key or prefix.
    pub next: Option<String>,
}

/// The page `q` selects from `keys` (sorted).
pub fn select(keys: &[&str], q: &Query) -> Page {
    let mut entries: Vec<(String, Entry)> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let Some(rest) = key.strip_prefix(q.prefix) else {
            continue;
        };
        if q.start_after.is_some_and(|s| *key <= s) {
            continue;
        }
        let rolled = q
            .delimiter
            .filter(|d| !d.is_empty())
            .and_then(|d| rest.find(d).map(|at| &key[..q.prefix.len() + at + d.len()]));
        match rolled {
            Some(p) if entries.last().is_some_and(|(name, _)| name == p) => {}
            Some(p) => entries.push((p.to_string(), Entry::Prefix(p.to_string()))),
            None => entries.push((key.to_string(), Entry::Object(i))),
        }
    }
    if let Some(t) = q.token {
        entries.retain(|(name, _)| name.as_str() > t);
    }
    let more = entries.len() > q.max_keys;
    entries.truncate(q.max_keys);
    let next = match more {
        true => entries.last().map(|(name, _)| name.clone()),
        false => None,
    };
    Page {
        entries: entries.into_iter().map(|(_, e)| e).collect(),
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&str; 6] = ["a-1", "a/b/c", "a/b/d", "a/e", "b", "c/f"];

    fn names(page: &Page) -> Vec<String> {
        page.entries
            .iter()
            .map(|e| match e {
                Entry::Object(i) => KEYS[*i].to_string(),
                Entry::Prefix(p) => p.clone(),
            })
            .collect()
    }

    #[test]
    fn a_delimiter_rolls_keys_up_into_common_prefixes() {
        let q = Query {
            delimiter: Some("/"),
            max_keys: 1000,
            ..Query::default()
        };
        let page = select(&KEYS, &q);
        assert_eq!(names(&page), ["a-1", "a/", "b", "c/"]);
        assert_eq!(page.next, None);
        let q = Query {
            prefix: "a/",
            delimiter: Some("/"),
            max_keys: 1000,
            ..Query::default()
        };
        assert_eq!(names(&select(&KEYS, &q)), ["a/b/", "a/e"]);
    }

    #[test]
    fn continuation_walks_every_entry_once() {
        let mut token = None;
        let mut seen = Vec::new();
        loop {
            let q = Query {
                delimiter: Some("/"),
                token: token.as_deref(),
                max_keys: 1,
                ..Query::default()
            };
            let page = select(&KEYS, &q);
            seen.extend(names(&page));
            match page.next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        assert_eq!(seen, ["a-1", "a/", "b", "c/"]);
    }

    #[test]
    fn prefix_and_start_after_filter_keys() {
        let q = Query {
            prefix: "a/",
            start_after: Some("a/b/c"),
            max_keys: 1000,
            ..Query::default()
        };
        assert_eq!(names(&select(&KEYS, &q)), ["a/b/d", "a/e"]);
        let none = Query {
            max_keys: 0,
            ..Query::default()
        };
        assert_eq!(select(&KEYS, &none).entries, []);
    }
}
