//! The facts every check and expansion reads, found once, in named phases:
//!
//! 1. **shape** and **fields** ([`Facts::model`], [`Facts::embedded`]): the type as
//!    serde stores it, its `#[model(...)]` keys, and for an internally tagged enum its
//!    variants read as structs ([`Shape`]);
//! 2. what patterns give one another, found by the driver from their parsed values and
//!    handed on as plain data ([`Links`]): the indexes (the bucket's and the time
//!    series' added to the declared ones), the bounds a validator learns, the fields a
//!    pattern keeps, the version stamp, and the copies an access row's foreign path
//!    resolves to.
//!
//! No check or expansion edits another pattern's parsed value: what crosses from one
//! pattern to another crosses here.

use crate::ast::{container, Body, Container, EmbeddedReceiver, ModelAttrs, ModelReceiver};
use crate::common::bounds::{self, Bound};
use crate::common::fields::{Kept, Lookup};
use crate::polymorphic;
use syn::Ident;

/// The three shapes a derived type can have; one pipeline serves them all, each
/// pattern running where its shape can hold it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Shape {
    /// `#[derive(Model)]` on a struct with named fields.
    Struct,
    /// `#[derive(Model)]` on an internally tagged enum: one document shape per variant.
    Polymorphic,
    /// `#[derive(Embedded)]`: a sub-document type with no collection of its own.
    Embedded,
}

/// What the patterns found that another reads, as plain data (phase 2).
#[derive(Default)]
pub(crate) struct Links<'a> {
    /// Bounds the validator learns (a bucket's `max`, an outlier's, `#[embed(max = N)]`).
    pub bounds: Vec<Bound>,
    /// Fields a pattern maintains (an outlier's flag, a bucket's count and range).
    pub kept: Vec<Kept<'a>>,
    /// The version stamp: field, version, and whether older versions are read too.
    pub stamp: Option<(String, i64, bool)>,
    /// The copies an access row's path of another collection resolves to; `None` where
    /// rows are not resolved against copies (a polymorphic model's copies are its
    /// variants').
    pub lookups: Option<Vec<Lookup>>,
}

/// What every pattern reads: the type as stored and the derive's own options.
pub(crate) struct Facts {
    pub container: Container,
    /// `#[model(...)]`; `None` under `#[derive(Embedded)]`.
    pub model: Option<ModelAttrs>,
    /// The variants read as structs, for a Model that is an internally tagged enum.
    pub polymorphic: Option<polymorphic::Polymorphic>,
}

impl Facts {
    /// `#[derive(Model)]`'s context; serde's attribute problems are pushed.
    pub(crate) fn model(recv: ModelReceiver, errors: &mut darling::error::Accumulator) -> Self {
        let strict = recv.strict.is_present();
        let model = ModelAttrs {
            collection: recv.collection,
            validation_level: recv.validation_level,
            validation_action: recv.validation_action,
            max_indexes: recv.max_indexes,
            shard_key: recv.shard_key,
            allow: recv.allow,
            version: recv.version,
            migrate: recv.migrate,
            timeseries: recv.timeseries,
            tenant: recv.tenant,
            soft_delete: recv.soft_delete,
            transactions: recv.transactions,
        };
        let container = container(recv.ident, recv.vis, recv.generics, recv.data, recv.attrs, strict, errors);
        let polymorphic = polymorphic::read(&container);
        Self { container, model: Some(model), polymorphic }
    }

    /// `#[derive(Embedded)]`'s context; serde's attribute problems are pushed.
    pub(crate) fn embedded(recv: EmbeddedReceiver, errors: &mut darling::error::Accumulator) -> Self {
        let strict = recv.strict.is_present();
        let container = container(recv.ident, recv.vis, recv.generics, recv.data, recv.attrs, strict, errors);
        Self { container, model: None, polymorphic: None }
    }

    /// The container an index or a row is checked against: the model's own for a
    /// struct; for a polymorphic model, the variant stored as `variant`, or the fields
    /// every variant shares.
    pub(crate) fn container_for(&self, variant: Option<&str>) -> &Container {
        match &self.polymorphic {
            Some(p) => p.container(variant),
            None => &self.container,
        }
    }

    /// The type's shape.
    pub(crate) fn shape(&self) -> Shape {
        match (&self.model, &self.polymorphic) {
            (None, _) => Shape::Embedded,
            (Some(_), Some(_)) => Shape::Polymorphic,
            (Some(_), None) => Shape::Struct,
        }
    }

    /// Whether the type is a `Model` (stored in a collection of its own).
    pub(crate) fn is_model(&self) -> bool {
        self.model.is_some()
    }

    // Phase: bounds.

    /// The same context with the bounds in the fields' validators, as if written in
    /// `#[validate]`.
    pub(crate) fn bounded(&self, bounds: &[Bound]) -> Facts {
        let cx = self;
        let mut container = cx.container.clone();
        bounds::apply(&mut container, bounds);
        Facts { container, model: cx.model.clone(), polymorphic: cx.polymorphic.clone() }
    }

    /// A polymorphic model's context with each variant's bounds in that variant's fields
    /// only (the enum's and its struct-like view's), as if written in `#[validate]`.
    pub(crate) fn bounded_variants(&self, bounds: &[(Ident, Vec<Bound>)]) -> Facts {
        let cx = self;
        let mut container = cx.container.clone();
        let mut polymorphic = cx.polymorphic.clone();
        for (ident, bounds) in bounds.iter().filter(|(_, b)| !b.is_empty()) {
            if let Body::Enum(variants) = &mut container.body {
                if let Some(v) = variants.iter_mut().find(|v| v.ident == *ident) {
                    bounds::apply_fields(&mut v.fields, bounds);
                }
            }
            if let Some(v) =
                polymorphic.as_mut().and_then(|p| p.variants.iter_mut().find(|v| v.ident == *ident))
            {
                bounds::apply(&mut v.container, bounds);
            }
        }
        Facts { container, model: cx.model.clone(), polymorphic }
    }
}
