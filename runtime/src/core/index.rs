//! Indexes a model declares with `#[index(...)]`, which [`crate::sync`](fn@crate::sync) creates; the
//! derive checks at compile time that they serve the access patterns
//! ([`crate::access`]).

use bson::{doc, Bson, Document};

/// One key of an index, or one sort key of an access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexKey {
    /// Ascending (`1`).
    Asc,
    /// Descending (`-1`).
    Desc,
    /// A text index key (`"text"`).
    Text,
    /// A hashed key (`"hashed"`), for hashed shard keys.
    Hashed,
    /// A geospatial key (`"2dsphere"`).
    Sphere2d,
}

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

/// An index of a model's collection, as `#[index(...)]` declares it.
///
/// ```
/// use docshape::index::{Index, IndexKey};
/// use docshape::bson::doc;
///
/// const BY_AUTHOR: Index = Index {
///     name: "author_id_1_created_at_-1",
///     keys: &[("author_id", IndexKey::Asc), ("created_at", IndexKey::Desc)],
///     ..Index::DEFAULT
/// };
/// assert_eq!(BY_AUTHOR.key_document(), doc! { "author_id": 1, "created_at": -1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Index {
    /// The index's name: MongoDB's default (`author_id_1_created_at_-1`) unless
    /// `name = "..."` overrides it.
    pub name: &'static str,
    /// The keys, in order, by stored path.
    pub keys: &'static [(&'static str, IndexKey)],
    /// `unique: true`.
    pub unique: bool,
    /// `sparse: true`.
    pub sparse: bool,
    /// `expireAfterSeconds` of a TTL index.
    pub expire_after_secs: Option<u64>,
    /// A case-insensitive collation (`{locale, strength: 2}`); the locale, `"en"` unless set.
    pub case_insensitive: Option<&'static str>,
    /// `partialFilterExpression`, as extended JSON text.
    pub partial_filter: Option<&'static str>,
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
