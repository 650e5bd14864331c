//! The TTL decision of a key family: `ttl = "300s"` or `ttl = "none"` with its reason, and the staleness it bounds.

#[allow(unused_imports)]
use super::*;

/// The TTL decision as parsed.
pub(super) enum TtlDecision {
    After { seconds: u64, spelled: String },
    Never,
}

/// `"300s"`, `"5m"`, `"2h"`, `"30d"`, `"300"` (seconds), or `"none"`.
pub(super) fn parse_ttl(lit: &LitStr) -> darling::Result<TtlDecision> {
    let text = lit.value();
    if text.trim() == "none" {
        return Ok(TtlDecision::Never);
    }
    let seconds = parse_duration(lit).map_err(|_| {
        Error::custom(format!(
            "`{}` is not a TTL: write a number with `s`, `m`, `h` or `d`, like \"300s\" or \"30d\", or \"none\" with a reason",
            text.trim()
        ))
        .with_span(lit)
    })?;
    if seconds == 0 {
        return Err(Error::custom("a TTL of 0 deletes a key as soon as it is written; give a period, or `ttl = \"none\"` with a reason").with_span(lit));
    }
    // Redis refuses an expiry whose milliseconds overflow a 64-bit integer.
    if seconds > (i64::MAX / 1000) as u64 {
        return Err(Error::custom("this TTL is longer than Redis can hold").with_span(lit));
    }
    let trimmed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let spelled = if trimmed.bytes().all(|b| b.is_ascii_digit()) { format!("{trimmed}s") } else { trimmed };
    Ok(TtlDecision::After { seconds, spelled })
}

pub(super) fn check_ttl(
    recv: &KeyReceiver,
    attr_span: Span,
    name: &str,
    errors: &mut Accumulator,
) -> Option<TtlDecision> {
    let Some(lit) = &recv.ttl else {
        errors.push(
            Error::custom(rule(
                "key_ttl",
                format!("the key family `{name}` has no TTL decision, and every cache key has a TTL (patterns-en); write `ttl = \"300s\"` (or \"5m\", \"2h\", \"30d\"), add `sliding` to extend it on every read, or write `ttl = \"none\", reason = \"...\"` for keys that must never expire"),
            ))
            .with_span(&attr_span),
        );
        return None;
    };
    let ttl = errors.handle(parse_ttl(lit))?;
    let reason = recv.reason.as_ref().filter(|r| !r.value().trim().is_empty());
    match &ttl {
        TtlDecision::Never => {
            if reason.is_none() {
                errors.push(
                    Error::custom(rule(
                        "ttl_reason",
                        "`ttl = \"none\"` needs `reason = \"...\"`: say why these keys must never expire (a queue whose durable store is elsewhere, a running total)".to_owned(),
                    ))
                    .with_span(&recv.reason.as_ref().map_or(lit.span(), LitStr::span)),
                );
            }
            if recv.sliding.is_present() {
                errors.push(
                    Error::custom(
                        "`sliding` extends a TTL on every read; `ttl = \"none\"` has none to extend",
                    )
                    .with_span(&recv.sliding.span()),
                );
            }
            // From the text, so a pattern with other mistakes is still held to this rule.
            let pattern = recv.pattern.as_ref().map(LitStr::value).unwrap_or_default();
            if pattern.split(':').next() == Some("cache") {
                errors.push(
                    Error::custom(rule(
                        "cache_ttl",
                        "a family under `cache:` is a cache, and every cache key has a TTL (patterns-en); give it one, like `ttl = \"300s\"`, or move it out of `cache:` if it is not a cache".to_owned(),
                    ))
                    .with_span(lit),
                );
            }
        }
        TtlDecision::After { .. } => {
            if let Some(r) = &recv.reason {
                errors.push(
                    Error::custom("`reason` explains `ttl = \"none\"`; this family expires, so say what else matters in `note = \"...\"`")
                        .with_span(r),
                );
            }
        }
    }
    Some(ttl)
}

/// `staleness = "ttl" | "invalidated"`: whether docshape's writers may leave a cached
/// value stale up to the TTL. Only a family that expires can accept that.
pub(super) fn check_staleness(recv: &KeyReceiver, ttl: Option<&TtlDecision>, errors: &mut Accumulator) {
    let Some(lit) = &recv.staleness else { return };
    match lit.value().as_str() {
        "invalidated" => {}
        "ttl" => {
            if matches!(ttl, Some(TtlDecision::Never)) {
                errors.push(
                    Error::custom("`staleness = \"ttl\"` accepts cached values stale for up to the TTL, and this family never expires; give it a TTL, or leave `staleness` out so that writers must delete its keys")
                        .with_span(lit),
                );
            }
        }
        other => errors.push(
            Error::custom(format!("unknown staleness `{other}`: write `staleness = \"ttl\"` to accept cached values stale for up to the TTL after a write, or leave it out (`\"invalidated\"`, the default: docshape's writers delete the keys)"))
                .with_span(lit),
        ),
    }
}
