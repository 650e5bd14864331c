//! What differs between bson 2 and bson 3, in one place, so that the rest of the crate
//! reads the same under both features (`bson-2`, `bson-3`).
//!
//! bson 3 renamed the serde entry points (`to_document` became `serialize_to_document`,
//! ...) and has one error type for every operation where bson 2 had `ser::Error` and
//! `de::Error`. docshape's errors keep encoding and decoding apart (an
//! `Encode`/`Serialize` variant and a `Decode` one, each with its `From`), so under bson 3
//! [`SerError`] and [`DeError`] are two thin wrappers of `bson::error::Error`: the same
//! `?` lands in the same variant under either feature.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Implemented for the driver's `Document` alone: docshape's `bson` must be the
/// driver's, or the two would pass each other values of different crates.
#[diagnostic::on_unimplemented(
    message = "docshape uses bson 2 but the driver uses bson 3: something in this build enables \
               the `mongodb` feature `bson-3`; enable docshape's feature `bson-3` too",
    label = "docshape's `bson::Document` is not `mongodb::bson::Document`"
)]
trait DriversBson {}
impl DriversBson for mongodb::bson::Document {}

// The one build that can disagree: docshape's `bson-3` turns the driver's on, but the
// driver's can be turned on from elsewhere (the application's own `mongodb` dependency)
// while docshape stays on bson 2. Fails to compile there, with the message above.
const _: () = {
    fn same<T: DriversBson>() {}
    let _ = same::<Document>;
};

/// The error of writing a value as BSON: `bson::ser::Error` under bson 2.
#[cfg(not(feature = "bson-3"))]
pub type SerError = bson::ser::Error;
/// The error of reading a value from BSON: `bson::de::Error` under bson 2.
#[cfg(not(feature = "bson-3"))]
pub type DeError = bson::de::Error;

#[cfg(feature = "bson-3")]
pub use v3::{DeError, SerError};

#[cfg(feature = "bson-3")]
mod v3 {
    use std::fmt;

    macro_rules! wrapper {
        ($(#[$doc:meta])* $name:ident, $serde:ident) => {
            $(#[$doc])*
            #[derive(Clone, Debug)]
            pub struct $name(pub bson::error::Error);

            impl $name {
                /// bson 3's error.
                pub fn into_inner(self) -> bson::error::Error {
                    self.0
                }
            }

            impl fmt::Display for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fmt::Display::fmt(&self.0, f)
                }
            }

            // The wrapper adds no words of its own, so it shows the wrapped error's
            // cause rather than the wrapped error a second time.
            impl std::error::Error for $name {
                fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                    std::error::Error::source(&self.0)
                }
            }

            impl From<bson::error::Error> for $name {
                fn from(e: bson::error::Error) -> Self {
                    Self(e)
                }
            }

            impl From<$name> for bson::error::Error {
                fn from(e: $name) -> Self {
                    e.0
                }
            }

            impl serde::$serde::Error for $name {
                fn custom<T: fmt::Display>(msg: T) -> Self {
                    Self(<bson::error::Error as serde::$serde::Error>::custom(msg))
                }
            }
        };
    }

    wrapper!(
        /// The error of writing a value as BSON: bson 3's `bson::error::Error`, from
        /// serializing.
        SerError,
        ser
    );
    wrapper!(
        /// The error of reading a value from BSON: bson 3's `bson::error::Error`, from
        /// deserializing.
        DeError,
        de
    );
}

/// `value` as a BSON value.
pub fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<Bson, SerError> {
    #[cfg(not(feature = "bson-3"))]
    return bson::to_bson(value);
    #[cfg(feature = "bson-3")]
    return bson::serialize_to_bson(value).map_err(SerError);
}

/// `value` as a BSON document, literally: a map is a document whatever its keys, and
/// BSON's own types (`ObjectId`, `DateTime`, ...) stay themselves.
///
/// Written by bson's document serializer and read back, not by its value serializer
/// (`bson::to_document`), which reads every map shaped as extended JSON
/// (`{"$oid": ...}`, `{"$numberLong": "3"}`, `{"$regularExpression": ...}`) as the
/// value it spells: a `serde_json::Value` or `HashMap` field holding a caller's JSON
/// would be stored as another type than the one written, and no longer equal the same
/// value sent by a finder (which [`crate::access::literal()`] writes literally).
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Document, SerError> {
    let bytes = to_vec(&value)?;
    let raw = bson::RawDocumentBuf::from_bytes(bytes).map_err(|e| {
        <SerError as serde::ser::Error>::custom(format!("the serializer wrote malformed BSON: {e}"))
    })?;
    Document::try_from(raw.as_ref()).map_err(|e| {
        <SerError as serde::ser::Error>::custom(format!("the serializer wrote unreadable BSON: {e}"))
    })
}

/// `value` as the bytes of a BSON document.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, SerError> {
    #[cfg(not(feature = "bson-3"))]
    return bson::to_vec(value);
    #[cfg(feature = "bson-3")]
    return bson::serialize_to_vec(value).map_err(SerError);
}

/// A `T` read from a BSON value.
pub fn from_bson<T: DeserializeOwned>(value: Bson) -> Result<T, DeError> {
    #[cfg(not(feature = "bson-3"))]
    return bson::from_bson(value);
    #[cfg(feature = "bson-3")]
    return bson::deserialize_from_bson(value).map_err(DeError);
}

/// A `T` read from a BSON document.
pub fn from_document<T: DeserializeOwned>(document: Document) -> Result<T, DeError> {
    #[cfg(not(feature = "bson-3"))]
    return bson::from_document(document);
    #[cfg(feature = "bson-3")]
    return bson::deserialize_from_document(document).map_err(DeError);
}

/// A `T` read from the bytes of a BSON document.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DeError> {
    #[cfg(not(feature = "bson-3"))]
    return bson::from_slice(bytes);
    #[cfg(feature = "bson-3")]
    return bson::deserialize_from_slice(bytes).map_err(DeError);
}

/// Appends `key: value` to a raw document. bson 3 takes the key as a C string; docshape's
/// keys are its own literals, none with a NUL.
pub fn append(document: &mut RawDocumentBuf, key: &'static str, value: bson::RawBson) {
    #[cfg(not(feature = "bson-3"))]
    document.append(key, value);
    #[cfg(feature = "bson-3")]
    document.append(<&bson::raw::CStr>::try_from(key).expect("a key without NUL"), value);
}

/// Appends `key: value` to a raw document, for any key; `false` (nothing appended) for
/// a key bson 3 cannot write (one holding a NUL).
pub fn try_append(document: &mut RawDocumentBuf, key: &str, value: bson::RawBson) -> bool {
    #[cfg(not(feature = "bson-3"))]
    {
        document.append(key, value);
        true
    }
    #[cfg(feature = "bson-3")]
    match <&bson::raw::CStr>::try_from(key) {
        Ok(key) => {
            document.append(key, value);
            true
        }
        Err(_) => false,
    }
}

/// The key of a raw document's element as text (bson 3 gives a C string).
#[cfg(not(feature = "bson-3"))]
pub fn key_str(key: &str) -> &str {
    key
}

/// The key of a raw document's element as text (bson 3 gives a C string).
#[cfg(feature = "bson-3")]
pub fn key_str(key: &bson::raw::CStr) -> &str {
    key.as_str()
}

/// A raw value as an owned [`Bson`], or `None` when its bytes are malformed.
pub fn raw_to_bson(value: RawBsonRef<'_>) -> Option<Bson> {
    #[cfg(not(feature = "bson-3"))]
    return Bson::try_from(value.to_raw_bson()).ok();
    #[cfg(feature = "bson-3")]
    return Bson::try_from(bson::RawBson::from(value)).ok();
}

#[cfg(test)]
mod tests {
    use bson::{doc, oid::ObjectId, Bson, DateTime};

    #[test]
    fn a_document_is_written_literally_and_keeps_bsons_own_types() {
        // What a caller's JSON or map may hold: each extended-JSON shape stays the
        // document it is (the value serializer made an ObjectId, a number, a date, a
        // regex and code of them).
        let shapes = serde_json::json!({
            "oid": { "$oid": "000000000000000000000000" },
            "long": { "$numberLong": "3" },
            "date": { "$date": { "$numberLong": "0" } },
            "regex": { "$regularExpression": { "pattern": ".*", "options": "" } },
            "code": { "$code": "true" },
            "min": { "$minKey": 1 },
        });
        let written = super::to_document(&shapes).unwrap();
        for (key, value) in &written {
            assert!(matches!(value, Bson::Document(_)), "{key}: {value:?}");
        }
        assert_eq!(written.get_document("long").unwrap(), &doc! { "$numberLong": "3" });
        // BSON's own types are written as themselves.
        let typed = doc! {
            "oid": ObjectId::from_bytes([1; 12]),
            "at": DateTime::from_millis(5),
            "n": 3_i64,
            "nested": { "x": [1_i32, 2_i32] },
        };
        assert_eq!(super::to_document(&typed).unwrap(), typed);
        // A value that is no document is refused, as before.
        assert!(super::to_document(&3_i32).is_err());
    }
}
