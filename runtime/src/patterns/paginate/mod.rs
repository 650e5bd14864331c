//! Keyset pagination for `#[access(..., paginate)]` patterns, with opaque cursor
//! tokens.
//!
//! patterns-en: "Offsets (skip) degrade linearly and break when rows shift — never for
//! feeds." A page is one `find` that continues from the previous page's boundary item,
//! using the pattern's sort keys with `_id` appended to break ties; no `skip` anywhere.
//! So documents inserted or deleted between requests never make a document that existed
//! throughout appear twice or go missing.
//!
//! Cursor tokens are URL-safe strings holding the boundary item's sort values with
//! their BSON types, bound to their database, collection, access pattern and equality
//! values and, with a [`CursorKey`], signed so clients cannot forge positions. They are
//! not encrypted: anyone holding one can decode the boundary item's sort values (an
//! item the client was just sent). Decoding never panics: anything malformed is a
//! [`CursorError`].
//!
//! A document whose sort value is missing or of another BSON type than the walk's (one
//! written around the validator) would be skipped by a plain keyset comparison, which
//! only matches values of the same type. Every page's `find` therefore also matches
//! such documents, and a page that meets one fails with [`PageError::MissingSortValue`]
//! or [`PageError::SortType`]: a walk to its end returns every matching document
//! exactly once or fails, never silently less.
//!
//! Two halves: [`token`](self#tokens) (the cursor format: scope, encoding, signature)
//! and the page (the paginator, its one `find` per page, and what it reports).

mod page;
mod token;

pub use page::{Page, PageError, Paginator, DEFAULT_PAGE_SIZE};
pub use token::{decode_token, encode_token, sort_keys, CursorError, CursorKey, PreparedScope, Scope};
