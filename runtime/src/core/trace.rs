//! The one way docshape talks to `tracing`: every span and event has the target
//! `docshape`, so that a filter such as `docshape=debug` selects them all, and none is
//! recorded unless the application installs a subscriber.
//!
//! Style, for any code that adds one:
//! - a span per operation that talks to the server, named `<area>` or
//!   `<area>.<operation>` (`sync`, `paginate.fetch`, `copies.drain`), at `INFO`, with
//!   what identifies the work as fields (`collection`, `pattern`, `worker`);
//! - events inside it for what happened, at `DEBUG` for each step (`claimed`, `page`),
//!   `INFO` for a summary at the end or progress of a long run, `WARN` for contention
//!   that made a call give up or retry; counts and durations as numbers (`items`,
//!   `lag_ms`), never whole documents or caller values (they may be private);
//! - an async operation runs its body in its span with [`in_span`], so every event of
//!   the driver's futures inside it, too, is attributed to it.
//!
//! The span names and fields are listed in the guide (`docshape::guide::tracing`).

use std::future::Future;

/// A span with the target `docshape`, at `INFO`: `span!("sync", collection = name)`.
macro_rules! span {
    ($name:literal $(, $($field:tt)*)?) => {
        ::tracing::info_span!(target: "docshape", $name $(, $($field)*)?)
    };
}

/// An event with the target `docshape`: `event!(DEBUG, items = n, "page")`.
macro_rules! event {
    ($level:ident, $($rest:tt)+) => {
        ::tracing::event!(target: "docshape", ::tracing::Level::$level, $($rest)+)
    };
}

pub(crate) use {event, span};

/// Runs `work` inside `span` (entered at every poll, as `tracing::Instrument` does).
pub(crate) async fn in_span<F: Future>(span: tracing::Span, work: F) -> F::Output {
    tracing::Instrument::instrument(work, span).await
}

/// A duration as whole milliseconds, the unit of every `*_ms` field.
pub(crate) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
