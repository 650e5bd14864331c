//! Rust names for stored ones: identifiers, type names, key paths and string
//! literals that nothing stored can break out of.

use super::escaped;
use super::source::KEYWORDS;

/// A name MongoDB can query and docshape accepts as a field.
pub(super) fn storable(name: &str) -> bool {
    !name.is_empty() && !name.contains('.') && !name.starts_with('$') && !name.contains('\0')
}

/// A snake_case Rust identifier for a stored name: the name itself when it is one.
pub(super) fn rust_ident(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if previous_lower && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            previous_lower = false;
        }
    }
    let trimmed = out.trim_matches('_');
    let mut ident = if trimmed.is_empty() { "field".to_owned() } else { trimmed.to_owned() };
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident = format!("f_{ident}");
    }
    if KEYWORDS.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// `order_items`, `order-items`, `orderItems` → `OrderItems`.
pub(super) fn pascal(name: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'C');
    }
    out
}

/// `Users` → `User`, `Addresses` → `Address`: the type of one element or document.
pub(super) fn singular(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("sses") {
        return format!("{stem}ss");
    }
    if let Some(stem) = name.strip_suffix("ies").filter(|s| s.len() > 1) {
        return format!("{stem}y");
    }
    match name.strip_suffix('s') {
        Some(stem) if stem.len() > 1 && !stem.ends_with('s') && !stem.ends_with('u') => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// A key's path in `keys(...)`: a bare identifier when it is one, else a string.
pub(super) fn key_path(path: &str) -> String {
    let plain = path.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && path.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&path);
    if plain {
        path.to_owned()
    } else {
        escaped(path)
    }
}

/// A raw string literal holding `text`, with enough `#`s.
pub(super) fn raw_string(text: &str) -> String {
    let mut hashes = 1;
    while text.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let h = "#".repeat(hashes);
    format!("r{h}\"{text}\"{h}")
}
