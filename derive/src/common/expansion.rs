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
