//! `Schema` for the standard library's types (and `chrono`'s, with its feature), and the markers the derive's `#[validate]` checks rely on: one impl each, written by macros.

#[allow(unused_imports)]
use super::*;

macro_rules! scalar {
    ($($ty:ty => $schema:expr;)*) => {$(
        impl Schema for $ty {
            fn schema() -> Document {
                $schema
            }
        }
    )*};
}

scalar! {
    bool => bson_type("bool");
    i8 => doc! { "bsonType": "int", "minimum": i8::MIN as i32, "maximum": i8::MAX as i32 };
    i16 => doc! { "bsonType": "int", "minimum": i16::MIN as i32, "maximum": i16::MAX as i32 };
    i32 => bson_type("int");
    i64 => bson_type("long");
    isize => bson_type("long");
    u8 => doc! { "bsonType": "int", "minimum": 0_i32, "maximum": u8::MAX as i32 };
    u16 => doc! { "bsonType": "int", "minimum": 0_i32, "maximum": u16::MAX as i32 };
    u32 => doc! { "bsonType": "long", "minimum": 0_i64, "maximum": u32::MAX as i64 };
    u64 => doc! { "bsonType": "long", "minimum": 0_i64 };
    usize => doc! { "bsonType": "long", "minimum": 0_i64 };
    f32 => bson_type("double");
    f64 => bson_type("double");
    char => doc! { "bsonType": "string", "minLength": 1_i32, "maxLength": 1_i32 };
    String => bson_type("string");
    str => bson_type("string");
    () => bson_type("null");
    bson::oid::ObjectId => bson_type("objectId");
    bson::DateTime => bson_type("date");
    bson::Decimal128 => bson_type("decimal");
    bson::Binary => bson_type("binData");
    bson::Uuid => bson_type("binData");
    bson::Timestamp => bson_type("timestamp");
    bson::Regex => bson_type("regex");
    bson::Bson => Document::new();
    serde_json::Value => Document::new();
}

// A document, whatever keys it holds.
impl Schema for bson::Document {
    fn schema() -> Document {
        bson_type("object")
    }
    const DOCUMENT: bool = true;
}

impl Schema for bson::RawDocumentBuf {
    fn schema() -> Document {
        bson_type("object")
    }
    const DOCUMENT: bool = true;
}

impl<T: Schema> Schema for Option<T> {
    const DOCUMENT: bool = T::DOCUMENT;
    fn schema() -> Document {
        nullable(T::schema())
    }
    fn schema_some() -> Document {
        T::schema()
    }
}

macro_rules! transparent {
    ($($ty:ty),*) => {$(
        impl<T: Schema + ?Sized> Schema for $ty {
            const DOCUMENT: bool = T::DOCUMENT;
            fn schema() -> Document {
                T::schema()
            }
            fn schema_some() -> Document {
                T::schema_some()
            }
        }
    )*};
}
transparent!(Box<T>, Rc<T>, Arc<T>, &T, &mut T);

impl<T: Schema + ToOwned + ?Sized> Schema for Cow<'_, T> {
    const DOCUMENT: bool = T::DOCUMENT;
    fn schema() -> Document {
        T::schema()
    }
}

macro_rules! sequence {
    ($($ty:ty),*) => {$(
        impl<T: Schema> Schema for $ty {
            fn schema() -> Document {
                array_of(T::schema())
            }
        }
    )*};
}
sequence!(Vec<T>, VecDeque<T>, [T]);

impl<T: Schema, const N: usize> Schema for [T; N] {
    fn schema() -> Document {
        let mut s = array_of(T::schema());
        s.insert("minItems", N as i64);
        s.insert("maxItems", N as i64);
        s
    }
}

impl<T: Schema, S> Schema for HashSet<T, S> {
    fn schema() -> Document {
        let mut s = array_of(T::schema());
        s.insert("uniqueItems", true);
        s
    }
}

impl<T: Schema> Schema for BTreeSet<T> {
    fn schema() -> Document {
        let mut s = array_of(T::schema());
        s.insert("uniqueItems", true);
        s
    }
}

// BSON keys are strings whatever `K` is: serde writes every map key as one.
impl<K, V: Schema, S> Schema for HashMap<K, V, S> {
    fn schema() -> Document {
        map_of(V::schema())
    }
}

impl<K, V: Schema> Schema for BTreeMap<K, V> {
    fn schema() -> Document {
        map_of(V::schema())
    }
}

macro_rules! tuples {
    ($(($($t:ident),+))*) => {$(
        impl<$($t: Schema),+> Schema for ($($t,)+) {
            fn schema() -> Document {
                tuple(vec![$($t::schema()),+])
            }
        }
    )*};
}
tuples! { (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, F) }

#[cfg(feature = "chrono")]
mod chrono_impls {
    use super::*;

    // chrono's own `Serialize` writes strings (RFC 3339 and ISO 8601). To store a BSON
    // date instead, use a `bson::DateTime` field or `#[validate(bson_type = "date")]`
    // with the `bson` serde helper that writes one.
    impl<Tz: chrono::TimeZone> Schema for chrono::DateTime<Tz> {
        fn schema() -> Document {
            bson_type("string")
        }
    }
    scalar! {
        chrono::NaiveDate => bson_type("string");
        chrono::NaiveDateTime => bson_type("string");
        chrono::NaiveTime => bson_type("string");
    }
}

macro_rules! marker {
    ($tr:ident: $($ty:ty),*) => {$( impl $tr for $ty {} )*};
}
marker!(StringLike: String, str, char);
marker!(NumberLike: i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, bson::Decimal128);
impl<T: StringLike + ToOwned + ?Sized> StringLike for Cow<'_, T> {}
impl<T> ArrayLike for Vec<T> {}
impl<T> ArrayLike for VecDeque<T> {}
impl<T> ArrayLike for [T] {}
impl<T, const N: usize> ArrayLike for [T; N] {}
impl<T, S> ArrayLike for HashSet<T, S> {}
impl<T> ArrayLike for BTreeSet<T> {}

macro_rules! marker_through {
    ($($tr:ident),*) => {$(
        impl<T: $tr> $tr for Option<T> {}
        impl<T: $tr + ?Sized> $tr for Box<T> {}
        impl<T: $tr + ?Sized> $tr for Rc<T> {}
        impl<T: $tr + ?Sized> $tr for Arc<T> {}
        impl<T: $tr + ?Sized> $tr for &T {}
    )*};
}
marker_through!(StringLike, NumberLike, ArrayLike);
