//! Where a stream's chunk jobs run ([`Threads`]): the caller's pool, or a pool of a given size
//! shared by every stream of the process, built on first use.

use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// Where a stream's chunk jobs run.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum Threads {
    /// One worker per core, on a pool shared by every stream of the process (the default).
    #[default]
    Auto,
    /// `n` workers on a pool shared by every stream asking for `n`; 1 runs every job on the
    /// calling thread (no thread is started), 0 means [`Threads::Auto`].
    Count(usize),
    /// The caller's own pool.
    Pool(Arc<rayon::ThreadPool>),
}

impl PartialEq for Threads {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Threads::Auto, Threads::Auto) => true,
            (Threads::Count(a), Threads::Count(b)) => a == b,
            (Threads::Pool(a), Threads::Pool(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Threads {}

impl From<usize> for Threads {
    /// 0 is [`Threads::Auto`].
    fn from(n: usize) -> Self {
        if n == 0 {
            Threads::Auto
        } else {
            Threads::Count(n)
        }
    }
}

impl Threads {
    /// How many threads run jobs (1: the calling thread).
    pub fn count(&self) -> usize {
        match self {
            Threads::Pool(p) => p.current_num_threads(),
            Threads::Auto | Threads::Count(0) => available_threads(),
            Threads::Count(n) => *n,
        }
    }

    /// The pool to run on (built on first use when shared).
    pub(super) fn pool(&self) -> Result<Arc<rayon::ThreadPool>> {
        match self {
            Threads::Pool(p) => Ok(Arc::clone(p)),
            _ => shared_pool(self.count()),
        }
    }
}

/// Pools built so far, one per size; they live as long as the process, like rayon's global one.
static POOLS: Mutex<Vec<Arc<rayon::ThreadPool>>> = Mutex::new(Vec::new());

fn shared_pool(n: usize) -> Result<Arc<rayon::ThreadPool>> {
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(p) = pools.iter().find(|p| p.current_num_threads() == n) {
        return Ok(Arc::clone(p));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("zseal-worker-{i}"))
        .build()
        .map_err(|e| Error::InvalidOption(format!("cannot start {n} threads: {e}")))?;
    let pool = Arc::new(pool);
    pools.push(Arc::clone(&pool));
    Ok(pool)
}

/// True when a shared pool of `n` threads exists (tests: small streams must not build one).
#[cfg(test)]
pub(crate) fn shared_pool_exists(n: usize) -> bool {
    let pools = POOLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    pools.iter().any(|p| p.current_num_threads() == n)
}

/// Cores available to this process.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{cheap_passphrase, DecryptOptions, Decryptor, EncryptOptions};

    #[test]
    fn a_small_stream_starts_no_thread_and_a_large_one_shares_the_pool() {
        // 7 threads: a count no other test asks for, so the shared registry tells the truth.
        let pw = cheap_passphrase();
        let small = EncryptOptions::default().threads(7).chunk_size(1024);
        let sealed = crate::encrypt_to_vec(b"hello", &[&pw], &small).unwrap();
        let mut dec =
            Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default().threads(7)).unwrap();
        let mut out = Vec::new();
        dec.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello");
        assert!(!shared_pool_exists(7), "one chunk each way: no pool");
        let big = vec![7u8; 10 * 1024];
        let sealed = crate::encrypt_to_vec(&big, &[&pw], &small).unwrap();
        assert!(shared_pool_exists(7), "ten chunks: the shared pool of 7");
        let mut d1 =
            Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default().threads(1)).unwrap();
        let mut a = Vec::new();
        d1.copy_to(&mut a).unwrap();
        assert_eq!(a, big);
        assert_eq!(d1.stats().threads, 1, "the count asked for");
        let d7 = Decryptor::new(&sealed[..], &[&pw], &DecryptOptions::default().threads(7));
        assert_eq!(d7.unwrap().stats().threads, 7);
    }

    #[test]
    fn threads_compare_by_kind_count_and_pool_identity() {
        let pool = || {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .unwrap(),
            )
        };
        let (p, q) = (pool(), pool());
        assert_eq!(Threads::Auto, Threads::Auto);
        assert_eq!(Threads::from(0), Threads::Auto);
        assert_eq!(Threads::from(3), Threads::Count(3));
        assert_ne!(Threads::Count(3), Threads::Count(4));
        assert_ne!(Threads::Auto, Threads::Count(1));
        assert_eq!(Threads::Pool(Arc::clone(&p)), Threads::Pool(Arc::clone(&p)));
        assert_ne!(Threads::Pool(Arc::clone(&p)), Threads::Pool(q));
        assert_ne!(Threads::Pool(p), Threads::Count(1));
    }

    #[test]
    fn auto_is_one_thread_per_core() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(available_threads(), cores);
        assert_eq!(Threads::Auto.count(), cores);
        assert_eq!(Threads::Count(0).count(), cores);
    }

    #[test]
    fn a_callers_pool_runs_the_jobs_and_no_shared_pool_is_built() {
        // 11 threads: a count no other test asks for.
        let pw = cheap_passphrase();
        let mine = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(11)
                .build()
                .unwrap(),
        );
        let threads = Threads::Pool(Arc::clone(&mine));
        assert_eq!(threads.count(), 11);
        let big: Vec<u8> = (0..20 * 1024u32).map(|i| (i % 251) as u8).collect();
        let opts = EncryptOptions::default()
            .threads(threads.clone())
            .chunk_size(1024);
        let sealed = crate::encrypt_to_vec(&big, &[&pw], &opts).unwrap();
        let mut dec = Decryptor::new(
            &sealed[..],
            &[&pw],
            &DecryptOptions::default().threads(threads),
        )
        .unwrap();
        let mut out = Vec::new();
        dec.copy_to(&mut out).unwrap();
        assert_eq!(out, big);
        assert_eq!(dec.stats().threads, 11);
        assert!(
            !shared_pool_exists(11),
            "the caller's pool, not a shared one"
        );
    }
}
