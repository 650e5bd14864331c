//! An access pattern's load estimate (see [`Load`]).

/// Whether a rate counts reads or writes (`r/s` or `w/s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateKind {
    /// `r`: the operation reads.
    Read,
    /// `w`: the operation writes.
    Write,
}

/// A declared frequency, `freq = "30 r/min"`, normalised to calls per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Calls per second (`30 r/min` is 0.5).
    pub per_second: f64,
    /// Reads or writes.
    pub kind: RateKind,
}

/// The most documents one call of a pattern reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocsPerCall {
    /// At most one: the equality filter names `_id` or every key of a unique index.
    One,
    /// A paginated page: `page_size` items (the paginator's default) and one more that
    /// tells whether another page follows.
    Page {
        /// Items per page.
        page_size: u32,
    },
    /// Nothing bounds it: a filter that is not unique, a range, or no filter.
    Unbounded,
}

impl DocsPerCall {
    /// The bound, or `None` when unbounded.
    pub const fn max(&self) -> Option<u64> {
        match self {
            Self::One => Some(1),
            Self::Page { page_size } => Some(*page_size as u64 + 1),
            Self::Unbounded => None,
        }
    }
}

/// An access pattern's load estimate.
///
/// An access pattern's load, estimated before any data exists: its declared rate
/// (`freq = "500 r/s"`), the documents one call reads at most, and the most bytes one
/// of those documents takes, so that a service charging or limiting per document read
/// (or a network link) can be sized from the table.
///
/// Documents per call are bounded when the equality filter names `_id` or every key of
/// a unique index (one document), or when the pattern is paginated (one page: the page
/// size plus the one document that tells whether another page follows). Bytes per
/// document come from the model's [`MaxBsonSize`](crate::size::MaxBsonSize): bounded
/// when every field is (strings with `max_length`, arrays with `max_items`, ...). Where
/// either is unbounded, so is everything computed from it; the table says why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// The declared rate; `None` without `freq`.
    pub rate: Option<Rate>,
    /// The most documents one call reads.
    pub docs_per_call: DocsPerCall,
    /// The most BSON bytes one document read takes; `None` when the type does not bound it.
    pub doc_bytes: Option<usize>,
    /// When `doc_bytes` is `None`: which field leaves it unbounded (the path to it and
    /// the attribute that bounds it).
    pub doc_unsized: crate::core::size::Unsized,
}

impl Load {
    /// A row's load without a declared rate: at most `docs_per_call` documents of the
    /// model's size ([`MaxBsonSize`](crate::size::MaxBsonSize)). What the derive writes
    /// for each row, in place of a struct literal naming every field: fewer tokens in
    /// every model's generated code.
    #[doc(hidden)]
    pub const fn of(
        docs_per_call: DocsPerCall,
        doc_bytes: Option<usize>,
        doc_unsized: crate::core::size::Unsized,
    ) -> Self {
        Self { rate: None, docs_per_call, doc_bytes, doc_unsized }
    }

    /// This load at the declared `rate`: how the derive completes [`Load::of`] for a
    /// row with `freq` (a call is one statement in each model's MIR, where struct update
    /// syntax copies every field).
    #[doc(hidden)]
    pub const fn with_rate(mut self, rate: Option<Rate>) -> Self {
        self.rate = rate;
        self
    }

    /// As [`Load::of`], for a row on one variant of a polymorphic model: the documents
    /// are of that variant's size.
    #[doc(hidden)]
    pub const fn variant(docs_per_call: DocsPerCall, size: crate::core::size::VariantSize) -> Self {
        Self::of(docs_per_call, size.size, size.why)
    }

    /// The most bytes one call reads, when both documents and their size are bounded.
    pub fn bytes_per_call(&self) -> Option<u64> {
        let docs = self.docs_per_call.max()?;
        let bytes = u64::try_from(self.doc_bytes?).ok()?;
        docs.checked_mul(bytes)
    }

    /// Documents per second at the declared rate: `None` without a rate, and
    /// `Some(None)` when one call's documents are unbounded.
    pub fn docs_per_second(&self) -> Option<Option<f64>> {
        let rate = self.rate?;
        Some(self.docs_per_call.max().map(|d| d as f64 * rate.per_second))
    }

    /// Bytes per second at the declared rate, as [`Load::docs_per_second`].
    pub fn bytes_per_second(&self) -> Option<Option<f64>> {
        let rate = self.rate?;
        Some(self.bytes_per_call().map(|b| b as f64 * rate.per_second))
    }
}

/// A number of documents or calls per second, short: `500`, `0.5`, `12,500`.
pub(crate) fn count(n: f64) -> String {
    if n >= 1000.0 {
        let whole = n.round() as u64;
        let digits = whole.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        let text = format!("{n:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A number of bytes, in binary units: `312 B`, `4.5 KiB`, `10.3 MiB`.
pub(crate) fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{} B", value.round() as u64)
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_multiply_what_is_bounded() {
        let load = Load {
            rate: Some(Rate { per_second: 500.0, kind: RateKind::Read }),
            docs_per_call: DocsPerCall::Page { page_size: 20 },
            doc_bytes: Some(1000),
            doc_unsized: crate::core::size::Unsized::Known,
        };
        assert_eq!(load.bytes_per_call(), Some(21_000));
        assert_eq!(load.docs_per_second(), Some(Some(10_500.0)));
        assert_eq!(load.bytes_per_second(), Some(Some(10_500_000.0)));
        let unbounded = Load { docs_per_call: DocsPerCall::Unbounded, ..load };
        assert_eq!(unbounded.docs_per_second(), Some(None));
        assert_eq!(unbounded.bytes_per_call(), None);
        let no_rate = Load { rate: None, ..load };
        assert_eq!(no_rate.docs_per_second(), None);
        let unsized_doc = Load { doc_bytes: None, ..load };
        assert_eq!(unsized_doc.docs_per_second(), Some(Some(10_500.0)));
        assert_eq!(unsized_doc.bytes_per_second(), Some(None));
    }

    #[test]
    fn numbers_read_short() {
        assert_eq!(count(500.0), "500");
        assert_eq!(count(0.5), "0.5");
        assert_eq!(count(1.0 / 3.0), "0.33");
        assert_eq!(count(10.5), "10.5");
        assert_eq!(count(511.0), "511");
        assert_eq!(count(12_500.0), "12,500");
        assert_eq!(count(1_234_567.0), "1,234,567");
        assert_eq!(bytes(312.0), "312 B");
        assert_eq!(bytes(4608.0), "4.5 KiB");
        assert_eq!(bytes(10.0 * 1024.0 * 1024.0), "10.0 MiB");
    }
}
