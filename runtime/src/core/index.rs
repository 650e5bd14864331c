//! Indexes a model declares with `#[index(...)]`, which [`crate::sync`](fn@crate::sync) creates; the
//! derive checks at compile time that they serve the access patterns
//! ([`crate::access`]).

pub use crate::core::descriptor::{Index, IndexKey};
use bson::{doc, Bson, Document};

impl IndexKey {
    /// The value the key has in an index's key document.
    pub fn to_bson(self) -> Bson {
        match self {
            Self::Asc => Bson::Int32(1),
            Self::Desc => Bson::Int32(-1),
            Self::Text => "text".into(),
            Self::Hashed => "hashed".into(),
            Self::Sphere2d => "2dsphere".into(),
        }
    }

    /// The suffix MongoDB gives the key in a default index name.
    pub fn name_part(self) -> &'static str {
        match self {
            Self::Asc => "1",
            Self::Desc => "-1",
            Self::Text => "text",
            Self::Hashed => "hashed",
            Self::Sphere2d => "2dsphere",
        }
    }
}

impl Index {
    /// An index with no keys and no options, to fill in with `..Index::DEFAULT`.
    pub const DEFAULT: Index = Index {
        name: "",
        keys: &[],
        unique: false,
        sparse: false,
        expire_after_secs: None,
        case_insensitive: None,
        partial_filter: None,
    };

    /// The `key` document: `{author_id: 1, created_at: -1}`.
    pub fn key_document(&self) -> Document {
        keys_document(self.keys)
    }

    /// The collation document of a case-insensitive index.
    pub fn collation(&self) -> Option<Document> {
        self.case_insensitive.map(|locale| doc! { "locale": locale, "strength": 2 })
    }

    /// The partial filter, parsed from its extended JSON.
    pub fn partial_filter_document(&self) -> Option<Document> {
        let text = self.partial_filter?;
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        match Bson::try_from(value).ok()? {
            Bson::Document(d) => Some(d),
            _ => None,
        }
    }

    /// The index as `createIndexes` receives it.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "key": self.key_document(), "name": self.name };
        if self.unique {
            d.insert("unique", true);
        }
        if self.sparse {
            d.insert("sparse", true);
        }
        if let Some(secs) = self.expire_after_secs {
            d.insert("expireAfterSeconds", i64::try_from(secs).unwrap_or(i64::MAX));
        }
        if let Some(c) = self.collation() {
            d.insert("collation", c);
        }
        if let Some(p) = self.partial_filter_document() {
            d.insert("partialFilterExpression", p);
        }
        d
    }
}

/// Keys with their directions as a document (`{author_id: 1, created_at: -1}`): an
/// index's `key`, a shard key, a sort. The one place such a document is written.
pub fn keys_document(keys: &[(&str, IndexKey)]) -> Document {
    keys.iter().map(|(path, key)| ((*path).to_owned(), key.to_bson())).collect()
}
