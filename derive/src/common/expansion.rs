//! What one pattern adds to the generated code. The driver places each part, so the
//! generated code keeps one order whatever the pattern modules look like.

use proc_macro2::TokenStream;

/// A pattern's share of the generated code.
#[derive(Default)]
pub(crate) struct Expansion {
    /// Items inside `impl Model` (constants and functions).
    pub model: TokenStream,
    /// Rows of `Model::RELATIONS`, the design-decision table.
    pub relations: Vec<TokenStream>,
    /// Entries of `Model::NESTED`: the relations inside the fields' embedded types.
    pub nested: Vec<TokenStream>,
    /// Entries of `Model::COPIES`.
    pub copies: Vec<TokenStream>,
    /// Items beside the impls: the pattern's trait impls, methods and compile-time checks.
    pub items: TokenStream,
    /// On a polymorphic model, per variant (its discriminator value), the rows and
    /// the copies of its fields: they reach `Model::NESTED` in that variant's entry
    /// (`relation::variant_entries`).
    pub variants: Vec<(String, VariantPart)>,
}

/// The rows and copies of one variant's fields.
#[derive(Default)]
pub(crate) struct VariantPart {
    /// Its rows of the design-decision table.
    pub relations: Vec<TokenStream>,
    /// Its copies, as an embedded type's (no collection; paths relative to it).
    pub copies: Vec<TokenStream>,
}

impl Expansion {
    /// An expansion that only adds items beside the impls.
    pub(crate) fn items(items: TokenStream) -> Self {
        Self { items, ..Self::default() }
    }
}

/// In the list of generated items an expansion stands for its `items`; its other
/// parts go inside `impl Model` through `model::expand`.
impl quote::ToTokens for Expansion {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.items.to_tokens(tokens);
    }
}
