//! What a field's type is stored as, as far as its spelling tells: the classifiers
//! every pattern uses to check a field's shape before the compiler sees it.

use syn::{GenericArgument, PathArguments, Type};

/// Whether `ty` is spelled as one of `names` alone (`f64`, not `a::f64` or `f64<T>`).
/// Read from the syntax: printing a type asks the compiler, once per call.
pub(crate) fn is_named(ty: &Type, names: &[&str]) -> bool {
    match ty {
        Type::Group(g) => is_named(&g.elem, names),
        Type::Path(p) if p.qself.is_none() => names.iter().any(|n| p.path.is_ident(n)),
        _ => false,
    }
}

/// Whether two types are spelled alike. Paths of plain segments and type arguments
/// (`String`, `Option<Vec<i64>>`, `bson::oid::ObjectId`) are compared from the syntax;
/// any other spelling is printed and compared as text, as the compiler prints it.
pub(crate) fn same_type(a: &Type, b: &Type) -> bool {
    let plain = |p: &syn::TypePath| {
        p.qself.is_none()
            && p.path.segments.iter().all(|s| match &s.arguments {
                PathArguments::None => true,
                PathArguments::AngleBracketed(args) => {
                    args.args.iter().all(|a| matches!(a, GenericArgument::Type(_)))
                }
                PathArguments::Parenthesized(_) => false,
            })
    };
    match (a, b) {
        (Type::Group(a), _) => same_type(&a.elem, b),
        (_, Type::Group(b)) => same_type(a, &b.elem),
        (Type::Path(x), Type::Path(y)) if plain(x) && plain(y) => {
            x.path.leading_colon.is_some() == y.path.leading_colon.is_some()
                && x.path.segments.len() == y.path.segments.len()
                && x.path.segments.iter().zip(&y.path.segments).all(|(s, t)| {
                    s.ident == t.ident
                        && match (&s.arguments, &t.arguments) {
                            (PathArguments::None, PathArguments::None) => true,
                            (PathArguments::AngleBracketed(u), PathArguments::AngleBracketed(v)) => {
                                u.args.len() == v.args.len()
                                    && u.args.iter().zip(&v.args).all(|pair| match pair {
                                        (GenericArgument::Type(u), GenericArgument::Type(v)) => {
                                            same_type(u, v)
                                        }
                                        _ => false,
                                    })
                            }
                            _ => false,
                        }
                })
        }
        (Type::Path(x), Type::Path(y)) if plain(x) != plain(y) => false,
        _ => quote::quote!(#a).to_string() == quote::quote!(#b).to_string(),
    }
}

/// What a field's type serializes as, as far as its spelling tells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    String,
    /// An integer type with the range serde can write.
    Int {
        name: String,
        min: i128,
        max: i128,
    },
    Float,
    Array,
    /// A type whose shape the spelling does not tell; the compiler checks it instead.
    Other,
}

/// The type inside `Option`, `Box`, `Rc`, `Arc`, `Cow` and references.
fn peel(ty: &Type) -> &Type {
    match ty {
        Type::Reference(r) => peel(&r.elem),
        Type::Paren(p) => peel(&p.elem),
        Type::Group(g) => peel(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return ty;
            };
            let wrapper = matches!(last.ident.to_string().as_str(), "Option" | "Box" | "Rc" | "Arc" | "Cow");
            match (&last.arguments, wrapper) {
                (PathArguments::AngleBracketed(args), true) => args
                    .args
                    .iter()
                    .find_map(|a| match a {
                        GenericArgument::Type(t) => Some(peel(t)),
                        _ => None,
                    })
                    .unwrap_or(ty),
                _ => ty,
            }
        }
        _ => ty,
    }
}

/// Whether the type is spelled `Option<...>`.
pub(crate) fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        Type::Group(g) => is_option(&g.elem),
        Type::Paren(p) => is_option(&p.elem),
        _ => false,
    }
}

/// What `ty` is stored as, from its spelling.
pub(crate) fn classify(ty: &Type) -> Kind {
    match peel(ty) {
        Type::Array(_) | Type::Slice(_) => Kind::Array,
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Kind::Other;
            };
            let name = last.ident.to_string();
            let int = |min: i128, max: i128| Kind::Int { name: name.clone(), min, max };
            match name.as_str() {
                "String" | "str" | "char" => Kind::String,
                "i8" => int(i8::MIN.into(), i8::MAX.into()),
                "i16" => int(i16::MIN.into(), i16::MAX.into()),
                "i32" => int(i32::MIN.into(), i32::MAX.into()),
                "i64" | "isize" => int(i64::MIN.into(), i64::MAX.into()),
                "u8" => int(0, u8::MAX.into()),
                "u16" => int(0, u16::MAX.into()),
                "u32" => int(0, u32::MAX.into()),
                // bson refuses to serialize u64 values above i64::MAX.
                "u64" | "usize" => int(0, i64::MAX.into()),
                "f32" | "f64" | "Decimal128" => Kind::Float,
                "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => Kind::Array,
                _ => Kind::Other,
            }
        }
        _ => Kind::Other,
    }
}

/// What a `bsonType` alias stores, for the checks that depend on the kind.
pub(crate) fn kind_of_bson_type(name: &str) -> Kind {
    match name {
        "string" => Kind::String,
        "int" => Kind::Int { name: "int".into(), min: i32::MIN.into(), max: i32::MAX.into() },
        "long" => Kind::Int { name: "long".into(), min: i64::MIN.into(), max: i64::MAX.into() },
        "double" | "decimal" | "number" => Kind::Float,
        "array" => Kind::Array,
        _ => Kind::Other,
    }
}

/// The `bsonType` aliases MongoDB accepts.
pub(crate) const BSON_TYPES: &[&str] = &[
    "double",
    "string",
    "object",
    "array",
    "binData",
    "objectId",
    "bool",
    "date",
    "null",
    "regex",
    "javascript",
    "int",
    "timestamp",
    "long",
    "decimal",
    "minKey",
    "maxKey",
    "number",
];

/// The `bsonType` written by the `bson` crate's serde helpers, by function or module name.
pub(crate) fn known_helper(path: &str) -> Option<&'static str> {
    let last = path.rsplit("::").next()?.trim();
    let last = last.strip_prefix("serialize_").unwrap_or(last);
    let last = last.strip_suffix("_optional").unwrap_or(last);
    Some(match last {
        "chrono_datetime_as_bson_datetime"
        | "rfc3339_string_as_bson_datetime"
        | "time_0_3_offsetdatetime_as_bson_datetime" => "date",
        "hex_string_as_object_id" => "objectId",
        "bson_datetime_as_rfc3339_string" | "object_id_as_hex_string" | "uuid_1_as_string" => "string",
        "uuid_1_as_binary"
        | "uuid_1_as_java_legacy_binary"
        | "uuid_1_as_python_legacy_binary"
        | "uuid_1_as_c_sharp_legacy_binary"
        | "uuid_as_binary" => "binData",
        "u32_as_f64" | "u64_as_f64" => "double",
        "u32_as_i32" | "u64_as_i32" => "int",
        "u32_as_i64" | "u64_as_i64" => "long",
        "timestamp_as_u32" => "long",
        _ => return None,
    })
}

fn last_segment(ty: &Type) -> Option<(&syn::Ident, Option<&Type>)> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let first_arg = match &last.arguments {
                PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                }),
                _ => None,
            };
            Some((&last.ident, first_arg))
        }
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// The value a path continues into: through `Option`, `Box` and friends, and into the
/// elements of arrays. `None` when the value is open (a map, a document) and any key
/// may follow.
pub(crate) fn element(ty: &Type) -> (Option<Type>, bool) {
    let mut ty = ty.clone();
    let mut array = false;
    loop {
        if let Type::Array(a) = &ty {
            array = true;
            ty = (*a.elem).clone();
            continue;
        }
        if let Type::Slice(s) = &ty {
            array = true;
            ty = (*s.elem).clone();
            continue;
        }
        if let Type::Reference(r) = &ty {
            ty = (*r.elem).clone();
            continue;
        }
        let Some((ident, arg)) = last_segment(&ty) else { return (Some(ty), array) };
        match (ident.to_string().as_str(), arg) {
            ("Option" | "Box" | "Rc" | "Arc" | "Cow", Some(inner)) => ty = inner.clone(),
            ("Vec" | "VecDeque" | "HashSet" | "BTreeSet", Some(inner)) => {
                array = true;
                ty = inner.clone();
            }
            ("HashMap" | "BTreeMap" | "Document" | "Bson" | "Value" | "RawDocumentBuf", _) => {
                return (None, array)
            }
            _ => return (Some(ty), array),
        }
    }
}

/// `Ref<T>` (the last segment `Ref` with one type argument, inside `Option`s and
/// arrays): `T`.
pub(crate) fn ref_target(ty: &Type) -> Option<Type> {
    let (element, _) = element(ty);
    match element? {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if last.ident != "Ref" {
                return None;
            }
            match &last.arguments {
                PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
                    GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// Types whose spelling says they are not sub-documents.
pub(crate) fn plain_scalar(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else { return false };
    matches!(
        last.ident.to_string().as_str(),
        "String"
            | "str"
            | "char"
            | "bool"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "usize"
            | "f32"
            | "f64"
            | "ObjectId"
            | "DateTime"
            | "Decimal128"
            | "Uuid"
            | "Binary"
            | "Timestamp"
            | "Regex"
            | "Bson"
            | "Value"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_sees_through_wrappers() {
        let ty: Type = syn::parse_quote!(Option<Box<String>>);
        assert_eq!(classify(&ty), Kind::String);
        let ty: Type = syn::parse_quote!(Option<Vec<u8>>);
        assert_eq!(classify(&ty), Kind::Array);
        let ty: Type = syn::parse_quote!(u8);
        assert!(matches!(classify(&ty), Kind::Int { max: 255, .. }));
        let ty: Type = syn::parse_quote!(my::Thing);
        assert_eq!(classify(&ty), Kind::Other);
    }

    #[test]
    fn types_spelled_alike_are_the_same_whether_read_or_printed() {
        let pairs: [(Type, Type, bool); 9] = [
            (syn::parse_quote!(String), syn::parse_quote!(String), true),
            (syn::parse_quote!(Option<Vec<i64>>), syn::parse_quote!(Option<Vec<i64>>), true),
            (syn::parse_quote!(bson::oid::ObjectId), syn::parse_quote!(bson::oid::ObjectId), true),
            (syn::parse_quote!(ObjectId), syn::parse_quote!(bson::oid::ObjectId), false),
            (syn::parse_quote!(Option<i64>), syn::parse_quote!(Option<i32>), false),
            (syn::parse_quote!(::std::string::String), syn::parse_quote!(std::string::String), false),
            (syn::parse_quote!(Vec<[u8; 4]>), syn::parse_quote!(Vec<[u8; 4]>), true),
            (syn::parse_quote!(&'static str), syn::parse_quote!(&'static str), true),
            (syn::parse_quote!(Cow<'static, str>), syn::parse_quote!(Cow<'static, String>), false),
        ];
        for (a, b, same) in &pairs {
            assert_eq!(same_type(a, b), *same, "{} / {}", quote::quote!(#a), quote::quote!(#b));
            // The same answer as comparing the printed types.
            let printed = quote::quote!(#a).to_string() == quote::quote!(#b).to_string();
            assert_eq!(printed, *same, "{} / {}", quote::quote!(#a), quote::quote!(#b));
        }
        assert!(is_named(&syn::parse_quote!(f64), &["f64", "f32"]));
        assert!(!is_named(&syn::parse_quote!(my::f64), &["f64"]));
        assert!(!is_named(&syn::parse_quote!(Option<f64>), &["f64"]));
    }
}
