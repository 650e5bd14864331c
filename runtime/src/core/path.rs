//! Stored paths at the type level, so that a model's derive can check the segments of
//! `address.city` that live in another type (`Address`), defined anywhere, and still
//! fail to compile when one does not exist.

use std::marker::PhantomData;

/// One character of a field name.
pub struct Ch<const C: char>;
/// A field name, spelled as a list of [`Ch`].
pub struct Cons<H, T>(PhantomData<(H, T)>);
/// The end of a field name.
pub struct Nil;

/// A type with a stored field called `Name` (a [`Cons`] list of characters), generated
/// by `#[derive(Model)]` and `#[derive(Embedded)]`.
#[diagnostic::on_unimplemented(
    message = "this path does not exist: `{Self}` has no stored field with the name of this segment",
    label = "no such stored field",
    note = "paths use stored names (after serde's renames) of types that derive `Embedded` or `Model`"
)]
pub trait HasField<Name> {
    /// The type the next segment is looked up in (array elements for arrays).
    type Value: ?Sized;
    /// Whether the field holds an array.
    const ARRAY: bool;
    /// Whether the field can be null or missing.
    const NULLABLE: bool;
    /// Whether the field holds a binary float.
    const FLOAT: bool;
    /// The field's own type, as declared (`Open` where it cannot be named).
    type Stored: ?Sized;
    /// The type an equality filter on this field takes: the field's own type when its
    /// `Serialize` is what is stored, `Bson` otherwise (a `serialize_with`, a field that
    /// cannot be named); either way the value is compared with `$eq`.
    type Param;
}

/// A value whose keys are not known at compile time (a map, a `Document`, an enum):
/// any segment may follow.
pub struct Open;

impl<N> HasField<N> for Open {
    type Value = Open;
    type Stored = Open;
    type Param = bson::Bson;
    const ARRAY: bool = false;
    const NULLABLE: bool = false;
    const FLOAT: bool = false;
}
