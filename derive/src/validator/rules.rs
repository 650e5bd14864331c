//! The validator's rules: `#[validate]` keys that fit the field's type and do not
//! contradict each other, stored names MongoDB can address, one field per stored
//! name. Every problem is pushed under the tokens that caused it.

use std::collections::HashMap;

use darling::ast::Style;
use darling::error::Accumulator;
use darling::Error;
use proc_macro2::Span;
use syn::spanned::Spanned;

use crate::ast::{Body, Container, Field, FieldReceiver};
use crate::attr::validate::{AllowedValue, Num, NumValue};
use crate::common::message::did_you_mean;
use crate::common::types::{classify, kind_of_bson_type, known_helper, Kind, BSON_TYPES};

fn err(span: Span, msg: impl std::fmt::Display) -> Error {
    Error::custom(msg).with_span(&span)
}

/// Rules for the whole type.
pub(crate) fn container(c: &Container, errors: &mut Accumulator) {
    for attr in c.attrs.iter().filter(|a| a.path().is_ident("validate")) {
        errors.push(err(attr.path().span(), "`#[validate]` goes on fields, not on the type"));
    }
    match &c.body {
        Body::Struct(style, fields) => {
            if c.serde.transparent || c.serde.into.is_some() {
                // The stored shape is another type's; the field list does not matter.
                fields.iter().for_each(|f| field(f, errors));
                return;
            }
            if let Some(tag) = &c.serde.tag {
                if *style == Style::Struct {
                    reserved_name(&tag.value(), tag.span(), "the tag key", errors);
                }
            }
            struct_fields(fields, c.serde.tag.as_ref().map(|t| t.value()), errors);
        }
        Body::Enum(variants) => {
            let stored: Vec<_> = variants.iter().filter(|v| !v.serde.skip).collect();
            if stored.is_empty() {
                errors.push(err(
                    c.ident.span(),
                    "this enum has no variant serde writes, so no value of it can be stored",
                ));
            }
            let internal =
                c.serde.tag.as_ref().filter(|_| c.serde.content.is_none() && c.serde.untagged.is_none());
            for v in variants {
                for attr in v.attrs.iter().filter(|a| a.path().is_ident("validate")) {
                    errors.push(err(attr.path().span(), "`#[validate]` goes on fields, not on variants"));
                }
                if v.style == Style::Struct {
                    struct_fields(
                        &v.fields,
                        internal.filter(|_| !v.serde.untagged).map(|t| t.value()),
                        errors,
                    );
                } else {
                    v.fields.iter().for_each(|f| field(f, errors));
                }
            }
        }
    }
}

/// A stored key must be addressable in queries and indexes.
fn reserved_name(name: &str, span: Span, what: &str, errors: &mut Accumulator) {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.starts_with('$') {
        Some("starts with `$`, which MongoDB reserves for operators")
    } else if name.contains('.') {
        Some("contains `.`, which MongoDB reads as a path into a sub-document, so queries and indexes cannot address it")
    } else if name.contains('\0') {
        Some("contains a NUL character, which BSON keys cannot hold")
    } else {
        None
    };
    if let Some(problem) = problem {
        errors.push(err(span, format!("{what} `{name}` {problem}; rename it")));
    }
}

fn struct_fields(fields: &[Field], tag: Option<String>, errors: &mut Accumulator) {
    // Stored name -> what already claims it.
    let mut seen: HashMap<String, &'static str> = HashMap::new();
    if let Some(tag) = tag {
        seen.insert(tag, "the enum's tag");
    }
    for f in fields {
        field(f, errors);
        if f.serde.skip || f.serde.flatten.is_some() {
            continue;
        }
        let Some(name) = &f.name else { continue };
        reserved_name(name, f.span, "the stored name", errors);
        if let Some(other) = seen.insert(name.clone(), "another field") {
            errors.push(err(
                f.span,
                format!("{other} is already stored as `{name}`: serde would write the key twice; rename one of them"),
            ));
        }
    }
}

/// Rules for one field and its `#[validate]`.
fn field(f: &Field, errors: &mut Accumulator) {
    let r = &f.recv;
    for attr in
        r.attrs.iter().filter(|a| ["model", "embedded", "access"].iter().any(|n| a.path().is_ident(n)))
    {
        let name = attr.path().get_ident().map(|i| i.to_string()).unwrap_or_default();
        errors.push(err(attr.path().span(), format!("`#[{name}]` goes on the type, not on a field")));
    }
    let Some(vspan) = r.validate_span() else {
        if let (Some(with), None) = (&f.serde.with, &r.bson_type) {
            if known_helper(&with.value()).is_none() && !f.serde.skip {
                errors.push(err(
                    with.span(),
                    format!(
                        "docshape cannot see what `{}` writes, so it cannot describe this field; state the stored type with `#[validate(bson_type = \"...\")]`",
                        with.value()
                    ),
                ));
            }
        }
        return;
    };
    if f.serde.skip {
        errors.push(err(
            vspan,
            "`#[validate]` on a field serde never writes (`skip`): there is nothing stored to validate",
        ));
        return;
    }
    if f.serde.flatten.is_some() {
        errors.push(err(
            vspan,
            "`#[validate]` on a `flatten` field: put the constraints on the flattened type's own fields",
        ));
        return;
    }
    if let (Some(with), None) = (&f.serde.with, &r.bson_type) {
        if known_helper(&with.value()).is_none() {
            errors.push(err(
                with.span(),
                format!(
                    "docshape cannot see what `{}` writes; state the stored type with `#[validate(bson_type = \"...\")]`",
                    with.value()
                ),
            ));
        }
    }

    let mut kind = classify(&r.ty);
    if let Some(bt) = &r.bson_type {
        let name = bt.value();
        if !BSON_TYPES.contains(&name.as_str()) {
            let hint =
                did_you_mean(&name, BSON_TYPES).map(|s| format!("; did you mean `{s}`?")).unwrap_or_default();
            errors.push(err(bt.span(), format!("`{name}` is not a BSON type alias{hint}")));
        }
        kind = kind_of_bson_type(&name);
    } else if let Some(helper) = f.serde.with.as_ref().and_then(|w| known_helper(&w.value())) {
        kind = kind_of_bson_type(helper);
    }
    let ty_name = {
        let t = &r.ty;
        quote::quote!(#t).to_string().replace(' ', "")
    };

    // Each key applies to one kind of value; say which, and suggest the sibling.
    let wrong_kind = |key: &str, span: Span, wants: &str, errors: &mut Accumulator, hint: Option<&str>| {
        let hint = hint.map(|h| format!("; for this type use {h}")).unwrap_or_default();
        errors.push(err(
            span,
            format!("`{key}` applies to {wants}, but `{ty_name}` is not stored as one{hint}"),
        ));
    };
    let is_number = matches!(kind, Kind::Int { .. } | Kind::Float);
    let string_keys = [
        ("min_length", r.min_length.as_ref().map(|v| v.span())),
        ("max_length", r.max_length.as_ref().map(|v| v.span())),
        ("pattern", r.pattern.as_ref().map(|v| v.span())),
    ];
    for (key, span) in string_keys {
        let Some(span) = span else { continue };
        let hint = match (&kind, key) {
            (Kind::Array, "min_length") => {
                Some("`min_items` (the array's length) or `items(min_length = N)` (each string's)")
            }
            (Kind::Array, "max_length") => {
                Some("`max_items` (the array's length) or `items(max_length = N)` (each string's)")
            }
            (Kind::Array, "pattern") => Some("`items(pattern = \"...\")` (each string's)"),
            (Kind::Int { .. } | Kind::Float, "min_length") => Some("`minimum`"),
            (Kind::Int { .. } | Kind::Float, "max_length") => Some("`maximum`"),
            _ => None,
        };
        if is_number || kind == Kind::Array {
            wrong_kind(key, span, "strings", errors, hint);
        }
    }
    let num_keys = [
        ("minimum", r.minimum.as_ref()),
        ("maximum", r.maximum.as_ref()),
        ("exclusive_minimum", r.exclusive_minimum.as_ref()),
        ("exclusive_maximum", r.exclusive_maximum.as_ref()),
    ];
    for (key, n) in num_keys {
        let Some(n) = n else { continue };
        let hint = match (&kind, key.contains("min")) {
            (Kind::String, true) => Some("`min_length`"),
            (Kind::String, false) => Some("`max_length`"),
            (Kind::Array, true) => Some("`min_items`"),
            (Kind::Array, false) => Some("`max_items`"),
            _ => None,
        };
        if matches!(kind, Kind::String | Kind::Array) {
            wrong_kind(key, n.span, "numbers", errors, hint);
        }
    }
    let array_keys = [
        ("min_items", r.min_items.as_ref().map(|v| v.span())),
        ("max_items", r.max_items.as_ref().map(|v| v.span())),
        ("unique_items", r.unique_items.is_present().then(|| r.unique_items.span())),
    ];
    for (key, span) in array_keys {
        let Some(span) = span else { continue };
        let hint = match (&kind, key) {
            (Kind::String, "min_items") => Some("`min_length`"),
            (Kind::String, "max_items") => Some("`max_length`"),
            _ => None,
        };
        if matches!(kind, Kind::String | Kind::Int { .. } | Kind::Float) {
            wrong_kind(key, span, "arrays", errors, hint);
        }
    }

    // `items(...)`: string rules for each item of an array of strings.
    if let Some(items) = &r.items {
        let element = crate::common::types::element(&r.ty).0.map(|t| classify(&t));
        if kind != Kind::Array {
            errors.push(err(
                items.span(),
                format!("`items(...)` constrains each item of an array, but `{ty_name}` is not stored as one; put the keys directly in `#[validate(...)]`"),
            ));
        } else if !matches!(element, Some(Kind::String)) {
            errors.push(err(
                items.span(),
                format!("`items(...)` takes string rules (`min_length`, `max_length`, `pattern`), but the items of `{ty_name}` are not strings; constrain the item type's own fields instead"),
            ));
        } else if items.min_length.is_none() && items.max_length.is_none() && items.pattern.is_none() {
            errors.push(err(
                items.span(),
                "`items()` is empty: give it `max_length = N`, `min_length = N` or `pattern = \"...\"`",
            ));
        }
        if let (Some(min), Some(max)) = (&items.min_length, &items.max_length) {
            if **min > **max {
                errors.push(err(min.span(), format!("contradictory bounds: `items(min_length = {})` is greater than `items(max_length = {})`, so no item can be stored", **min, **max)));
            }
        }
        if let Some(p) = &items.pattern {
            if let Err(e) = check_regex(&p.value()) {
                errors.push(err(p.span(), e));
            }
        }
    }

    // Contradictions: a range no value can satisfy.
    if let (Some(min), Some(max)) = (&r.min_length, &r.max_length) {
        if **min > **max {
            errors.push(err(min.span(), format!("contradictory bounds: `min_length = {}` is greater than `max_length = {}`, so no string can be stored", **min, **max)));
        }
    }
    if let (Some(min), Some(max)) = (&r.min_items, &r.max_items) {
        if **min > **max {
            errors.push(err(min.span(), format!("contradictory bounds: `min_items = {}` is greater than `max_items = {}`, so no array can be stored", **min, **max)));
        }
    }
    for (a, b) in [("minimum", "exclusive_minimum"), ("maximum", "exclusive_maximum")] {
        let pick = |k: &str| match k {
            "minimum" => r.minimum.as_ref(),
            "maximum" => r.maximum.as_ref(),
            "exclusive_minimum" => r.exclusive_minimum.as_ref(),
            _ => r.exclusive_maximum.as_ref(),
        };
        if let (Some(_), Some(second)) = (pick(a), pick(b)) {
            errors.push(err(second.span, format!("`{a}` and `{b}` both bound the same side; keep one")));
        }
    }
    let lower = r.minimum.as_ref().map(|n| (n, false)).or(r.exclusive_minimum.as_ref().map(|n| (n, true)));
    let upper = r.maximum.as_ref().map(|n| (n, false)).or(r.exclusive_maximum.as_ref().map(|n| (n, true)));
    if let (Some((lo, lo_ex)), Some((hi, hi_ex))) = (lower, upper) {
        let (l, h) = (lo.value.as_f64(), hi.value.as_f64());
        if l > h || (l == h && (lo_ex || hi_ex)) {
            errors.push(err(
                lo.span,
                format!(
                    "contradictory bounds: no number lies between the lower bound {} and the upper bound {}",
                    lo.value, hi.value
                ),
            ));
        }
    }
    if let Kind::Int { name, min, max } = &kind {
        let outside = |n: &Num| match n.value {
            NumValue::Int(i) => i128::from(i),
            NumValue::Float(f) => f as i128,
        };
        if let Some((lo, _)) = lower {
            if outside(lo) > *max {
                errors.push(err(
                    lo.span,
                    format!("no `{name}` can be {} or more: its largest value is {max}", lo.value),
                ));
            }
        }
        if let Some((hi, _)) = upper {
            if outside(hi) < *min {
                errors.push(err(
                    hi.span,
                    format!("no `{name}` can be {} or less: its smallest value is {min}", hi.value),
                ));
            }
        }
    }

    if let Some(pattern) = &r.pattern {
        if let Err(message) = check_regex(&pattern.value()) {
            errors.push(err(
                pattern.span(),
                format!("this pattern does not parse as a regular expression: {message}"),
            ));
        }
    }

    if let Some(allowed) = &r.allowed {
        if allowed.values.is_empty() {
            errors.push(err(allowed.span, "`allowed = []` admits no value, so nothing could be stored"));
        }
        for value in &allowed.values {
            allowed_value(value, &kind, r, errors);
        }
    }
}

/// An allowed value must have the field's type and meet its other constraints, or it
/// could never be stored.
fn allowed_value(value: &AllowedValue, kind: &Kind, r: &FieldReceiver, errors: &mut Accumulator) {
    match (value, kind) {
        (AllowedValue::Str(s, span), Kind::String) => {
            let len = s.chars().count() as u64;
            if r.min_length.as_ref().is_some_and(|m| len < **m)
                || r.max_length.as_ref().is_some_and(|m| len > **m)
            {
                errors.push(err(*span, format!("allowed value \"{s}\" breaks this field's length bounds, so it could never be stored")));
            }
        }
        (AllowedValue::Num(n), Kind::Int { .. } | Kind::Float) => {
            let v = n.value.as_f64();
            let below = r.minimum.as_ref().is_some_and(|m| v < m.value.as_f64())
                || r.exclusive_minimum.as_ref().is_some_and(|m| v <= m.value.as_f64());
            let above = r.maximum.as_ref().is_some_and(|m| v > m.value.as_f64())
                || r.exclusive_maximum.as_ref().is_some_and(|m| v >= m.value.as_f64());
            if below || above {
                errors.push(err(
                    n.span,
                    format!(
                        "allowed value {} is outside this field's bounds, so it could never be stored",
                        n.value
                    ),
                ));
            }
            if matches!(kind, Kind::Int { .. }) && matches!(n.value, NumValue::Float(_)) {
                errors.push(err(n.span, "allowed value is a float, but this field stores integers"));
            }
        }
        (AllowedValue::Bool(..), Kind::Other) | (_, Kind::Other) => {}
        (value, kind) => {
            let want = match kind {
                Kind::String => "strings",
                Kind::Int { .. } | Kind::Float => "numbers",
                _ => "values of the field's type",
            };
            errors.push(err(
                value.span(),
                format!("this allowed value is not of the field's type: the field stores {want}"),
            ));
        }
    }
}

/// MongoDB evaluates `pattern` with PCRE. regex-syntax parses the shared syntax; the
/// PCRE-only constructs it refuses (look-around, backreferences) are accepted here.
pub(crate) fn check_regex(pattern: &str) -> Result<(), String> {
    use regex_syntax::ast::ErrorKind;
    match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Ok(_) => Ok(()),
        Err(e) => match e.kind() {
            ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference => Ok(()),
            kind => Err(format!("{kind} (at byte {})", e.span().start.offset)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_check_accepts_pcre_lookaround_and_refuses_garbage() {
        assert!(check_regex(r"^[a-z]+@[a-z]+\.[a-z]{2,}$").is_ok());
        assert!(check_regex(r"^(?=.*\d)\w+$").is_ok());
        assert!(check_regex(r"([a-z]").is_err());
        assert!(check_regex(r"a{3,1}").is_err());
    }
}
