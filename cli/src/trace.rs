//! Spans and events of the tools, under docshape's own target, `docshape`, so that one
//! filter (`docshape=debug`) selects the runtime's and the tools' alike, and none is
//! recorded unless the program installs a subscriber. The same style as the runtime's:
//! a span per operation that talks to the server, counts as numbers, never documents.

use std::future::Future;

/// A span with the target `docshape`, at `INFO`: `span!("check.workload", collection = name)`.
macro_rules! span {
    ($name:literal $(, $($field:tt)*)?) => {
        ::tracing::info_span!(target: "docshape", $name $(, $($field)*)?)
    };
}

/// An event with the target `docshape`: `event!(INFO, findings = n, "checked the workload")`.
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
