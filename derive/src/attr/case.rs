//! serde's `rename_all` rules, applied exactly as serde applies them, so that every
//! name docshape writes into a validator is the name serde stores.

use syn::LitStr;

/// One of serde's `rename_all` rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

const RULES: &[(&str, RenameRule)] = &[
    ("lowercase", RenameRule::Lower),
    ("UPPERCASE", RenameRule::Upper),
    ("PascalCase", RenameRule::Pascal),
    ("camelCase", RenameRule::Camel),
    ("snake_case", RenameRule::Snake),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ("kebab-case", RenameRule::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebab),
];

impl RenameRule {
    pub(crate) fn from_lit(lit: &LitStr) -> syn::Result<Self> {
        let value = lit.value();
        RULES.iter().find(|(name, _)| *name == value).map(|(_, r)| *r).ok_or_else(|| {
            let names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
            syn::Error::new(
                lit.span(),
                format!("unknown rename rule `{value}`; serde accepts {}", names.join(", ")),
            )
        })
    }

    /// A variant name, written in PascalCase in Rust.
    pub(crate) fn apply_to_variant(self, variant: &str) -> String {
        match self {
            Self::Pascal => variant.to_owned(),
            Self::Lower => variant.to_ascii_lowercase(),
            Self::Upper => variant.to_ascii_uppercase(),
            Self::Camel => {
                let mut chars = variant.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            Self::Snake => {
                let mut snake = String::new();
                for (i, ch) in variant.char_indices() {
                    if i > 0 && ch.is_uppercase() {
                        snake.push('_');
                    }
                    snake.push(ch.to_ascii_lowercase());
                }
                snake
            }
            Self::ScreamingSnake => Self::Snake.apply_to_variant(variant).to_ascii_uppercase(),
            Self::Kebab => Self::Snake.apply_to_variant(variant).replace('_', "-"),
            Self::ScreamingKebab => Self::ScreamingSnake.apply_to_variant(variant).replace('_', "-"),
        }
    }

    /// A field name, written in snake_case in Rust.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            Self::Lower | Self::Snake => field.to_owned(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            Self::Camel => {
                let pascal = Self::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            Self::Kebab => field.replace('_', "-"),
            Self::ScreamingKebab => Self::ScreamingSnake.apply_to_field(field).replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;

    #[test]
    fn matches_serde_on_fields_and_variants() {
        let fields = [
            (Lower, "very_tasty"),
            (Upper, "VERY_TASTY"),
            (Pascal, "VeryTasty"),
            (Camel, "veryTasty"),
            (Snake, "very_tasty"),
            (ScreamingSnake, "VERY_TASTY"),
            (Kebab, "very-tasty"),
            (ScreamingKebab, "VERY-TASTY"),
        ];
        for (rule, expected) in fields {
            assert_eq!(rule.apply_to_field("very_tasty"), expected, "{rule:?}");
        }
        let variants = [
            (Lower, "verytasty"),
            (Upper, "VERYTASTY"),
            (Pascal, "VeryTasty"),
            (Camel, "veryTasty"),
            (Snake, "very_tasty"),
            (ScreamingSnake, "VERY_TASTY"),
            (Kebab, "very-tasty"),
            (ScreamingKebab, "VERY-TASTY"),
        ];
        for (rule, expected) in variants {
            assert_eq!(rule.apply_to_variant("VeryTasty"), expected, "{rule:?}");
        }
    }
}
