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
//! A page's `find` is built by the row's one command builder
//! ([`crate::access::command`]), with the row's view as its projection when the row
//! declares `fields(...)`, and its filter bounds only the row's index keys: a first
//! page bounds each sort key to the BSON type the model stores there, later pages
//! compare with the cursor. A document whose sort value is missing, an array or of
//! another type (written around the validator) cannot be placed by any cursor: pages
//! leave it out, and [`Paginator::unplaced`] lists such documents of a feed, so none is
//! lost silently and none blocks the feed's readers ([`Page::unplaced`] and
//! [`PageError::NoPosition`] report the ones a page meets).
//!
//! The module has two halves: `token` (the cursor format: scope, encoding, signature)
//! and `page` (the paginator, its one `find` per page, and what it reports).

mod page;
mod token;

pub use page::{Page, PageError, Paginator, Unplaced, DEFAULT_PAGE_SIZE};
pub use token::{decode_token, encode_token, sort_keys, CursorError, CursorKey, PreparedScope, Scope};
