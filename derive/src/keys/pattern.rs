//! A key pattern (`cache:product:{id}`): its segments, and its placeholders against the struct's fields.

#[allow(unused_imports)]
use super::*;

/// A segment of a well-formed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Literal(String),
    Placeholder(String),
    Shards(u32, u32),
}

/// Characters a literal segment cannot hold, and why.
pub(super) fn literal_char_problem(c: char) -> Option<&'static str> {
    Some(match c {
        '*' | '?' | '[' | ']' | '\\' => {
            "a glob character of `SCAN MATCH`, so the family's scan would match other keys"
        }
        '%' => "the escape character of placeholder values, so a value could forge it",
        '|' | '`' => "a character that breaks the Markdown catalog",
        c if c.is_whitespace() || c.is_control() => {
            "whitespace or a control character, which `redis-cli` and logs mangle"
        }
        c if !c.is_ascii() => "not ASCII: keys are printable ASCII (placeholder values are escaped to it)",
        _ => return None,
    })
}

pub(super) fn is_field_name(s: &str) -> bool {
    syn::parse::Parser::parse_str(Ident::parse_any, s).is_ok()
}

/// The most shards a counter may have: `sum` reads them all in one `MGET`.
pub(crate) const MAX_SHARDS: u64 = 1024;

/// Splits a pattern into segments, or says everything wrong with it.
pub(crate) fn parse_pattern(pattern: &str) -> Result<Vec<Seg>, Vec<String>> {
    if pattern.is_empty() {
        return Err(vec!["the key pattern is empty; write one like \"cache:product:{id}\"".to_owned()]);
    }
    let mut problems = Vec::new();
    let mut segments = Vec::new();
    let parts: Vec<&str> = pattern.split(':').collect();
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            let place = if i == 0 {
                "the pattern starts with `:`"
            } else if i == parts.len() - 1 {
                "the pattern ends with `:`"
            } else {
                "`::` leaves a segment empty"
            };
            problems.push(format!("{place}; every segment between `:`s has text or a placeholder"));
            continue;
        }
        if !part.contains(['{', '}']) {
            match part.chars().find_map(|c| literal_char_problem(c).map(|p| (c, p))) {
                Some((c, why)) => problems.push(format!("`{}` in `{part}` is {why}", c.escape_debug())),
                None => segments.push(Seg::Literal((*part).to_owned())),
            }
            continue;
        }
        let inner = part.strip_prefix('{').and_then(|p| p.strip_suffix('}'));
        match inner {
            Some(inner) if !inner.contains(['{', '}']) => {
                if let Some((a, b)) = inner.split_once("..") {
                    let b = b.strip_prefix('=').unwrap_or(b);
                    match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                        (Ok(first), Ok(last)) if first > last => problems.push(format!(
                            "`{part}`: the shard range is empty; write it low to high, like `{{0..15}}`"
                        )),
                        (Ok(first), Ok(last)) if u64::from(last - first) + 1 > MAX_SHARDS => problems.push(format!(
                            "`{part}` has {} shards; at most {MAX_SHARDS}, as `sum` reads them all in one `MGET`",
                            u64::from(last - first) + 1
                        )),
                        (Ok(first), Ok(last)) if first == last => problems.push(format!(
                            "`{part}` is one shard: a sharded counter spreads over two or more, like `{{0..15}}`"
                        )),
                        (Ok(first), Ok(last)) => segments.push(Seg::Shards(first, last)),
                        _ => problems.push(format!(
                            "`{part}` is not a shard range: write two numbers, like `{{0..15}}` (both included)"
                        )),
                    }
                } else if inner.is_empty() {
                    problems.push("`{}` names no field; write the field, like `{id}`".to_owned());
                } else if is_field_name(inner) {
                    // `{r#type}` and `{type}` both name the field `r#type`.
                    segments.push(Seg::Placeholder(inner.trim_start_matches("r#").to_owned()));
                } else {
                    problems.push(format!("`{part}`: `{inner}` is not a field name"));
                }
            }
            _ => {
                let (opens, closes) = (part.matches('{').count(), part.matches('}').count());
                let balanced = opens == closes && {
                    let mut depth = 0i32;
                    part.chars().all(|c| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        (0..=1).contains(&depth)
                    })
                };
                if !balanced {
                    problems.push(format!("`{part}` has unbalanced braces; a placeholder is `{{field}}`"));
                } else if part.contains("}{") {
                    problems.push(format!(
                        "`{part}` has two placeholders with no separator, so a key could not be split back into their values; put `:` between them"
                    ));
                } else {
                    let fixed = part.replace('{', ":{").replace('}', "}:");
                    let fixed = fixed.trim_matches(':');
                    problems.push(format!(
                        "`{part}`: a placeholder fills a whole segment between `:`s, so a key splits back into its values unambiguously; write `{fixed}`"
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(segments)
    } else {
        Err(problems)
    }
}

pub(super) fn check_placeholders(
    segments: &[Seg],
    lit: &LitStr,
    fields: &[&KeyField],
    kind: Option<Kind>,
    errors: &mut Accumulator,
) {
    let names: Vec<String> =
        fields.iter().filter_map(|f| f.ident.as_ref().map(|i| i.unraw().to_string())).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut seen: Vec<&str> = Vec::new();
    let mut shard_ranges = 0;
    for seg in segments {
        match seg {
            Seg::Placeholder(p) => {
                if seen.contains(&p.as_str()) {
                    errors.push(
                        Error::custom(format!(
                            "`{{{p}}}` appears twice in the pattern; a field fills one placeholder"
                        ))
                        .with_span(lit),
                    );
                }
                seen.push(p);
                if !names.contains(p) {
                    let hint = if names.is_empty() {
                        "; the struct has no fields".to_owned()
                    } else {
                        did_you_mean(p, &name_refs).map_or_else(
                            || format!("; the fields are {}", names.join(", ")),
                            |n| format!("; did you mean `{{{n}}}`?"),
                        )
                    };
                    errors.push(
                        Error::custom(format!("placeholder `{{{p}}}` names no field of the struct{hint}"))
                            .with_span(lit),
                    );
                }
            }
            Seg::Shards(..) => shard_ranges += 1,
            Seg::Literal(_) => {}
        }
    }
    for f in fields {
        let Some(ident) = &f.ident else { continue };
        let n = ident.unraw().to_string();
        if !seen.contains(&n.as_str()) {
            errors.push(
                Error::custom(format!(
                    "field `{n}` is not in the key pattern `{}`: a key is built from the pattern's placeholders, so parsing a key could not give this field back; add `{{{n}}}` to the pattern, or keep the field out of the key type",
                    lit.value()
                ))
                .with_span(ident),
            );
        }
    }
    match (kind, shard_ranges) {
        (Some(Kind::ShardedCounter), 0) => errors.push(
            Error::custom("a sharded counter's pattern has a shard range segment, like \"counter:orders:{0..15}\"")
                .with_span(lit),
        ),
        (Some(Kind::ShardedCounter), 1) | (_, 0) => {}
        (Some(Kind::ShardedCounter), _) => {
            errors.push(Error::custom("a sharded counter has one shard range; this pattern has several").with_span(lit))
        }
        (_, _) => errors.push(
            Error::custom("a shard range like `{0..15}` belongs to `kind = sharded_counter`; name a field instead, like `{id}`")
                .with_span(lit),
        ),
    }
}
