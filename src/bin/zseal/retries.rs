//! Retries said aloud (issue 55 §3): every request that the library or object_store retries is
//! an event (`tracing`, target `zseal::retry` or object_store's `object_store::client::retry`);
//! this subscriber prints each on stderr as it happens (what failed, which retry, the pause), so
//! that a transfer waiting on a store that answers 503 says so instead of looking frozen.

use std::fmt::Debug;

use tracing::field::{Field, Visit};
use tracing::metadata::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{span, Event, Level, Metadata, Subscriber};

/// Prints the retry events, and nothing else.
pub struct SayRetries;

/// Installs [`SayRetries`] for the process (once; a second call does nothing).
pub fn say_them() {
    let _ = tracing::subscriber::set_global_default(SayRetries);
}

fn is_retry(target: &str) -> bool {
    target == zseal::remote::RETRY_TARGET || target.starts_with("object_store::client::retry")
}

/// The event's `message` field, as text.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for SayRetries {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        match self.enabled(meta) {
            true => Interest::always(),
            false => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        *meta.level() <= Level::INFO && meta.is_event() && is_retry(meta.target())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::INFO)
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        match event.metadata().target() == zseal::remote::RETRY_TARGET {
            true => eprintln!("zseal: {}", m.0),
            false => eprintln!("zseal: a request to the store is retried: {}", m.0),
        }
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}
